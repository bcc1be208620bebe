"""Studies over many schedules: :func:`~.compare.compare` puts schedules side by side under
the same network settings; :func:`~.survey.survey` is its preset for the main topologies of
one size."""
