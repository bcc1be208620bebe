"""Studies over many schedules: :func:`~.compare.compare` puts schedules side by side under
the same network settings; :func:`~.survey.survey` is its preset for the main topologies of
one size; :func:`~.loop.simulate_training` runs training iterations -- compute layer by layer,
collectives on the network, each layer's next forward waiting for its gradient -- for the
workloads of :mod:`.workloads` (built-in models' FLOPs model, :mod:`.models`; torch
measurements, :mod:`.measure`; ASTRA-sim text workloads and JSON profiles), with the prices of
:mod:`.prices`; :func:`~.training.simulate_iteration` is its one-iteration, allreduce-only
form."""
