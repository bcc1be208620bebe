"""Studies over many schedules: :func:`~.compare.compare` puts schedules side by side under
the same network settings; :func:`~.survey.survey` is its preset for the main topologies of
one size; :func:`~.training.simulate_iteration` overlaps a training iteration's compute with its
gradient allreduces, for the profiles of :mod:`.models` (ResNet-50, BERT-large, GPT-2 medium,
ViT-B/16) or of files (:mod:`.profiles`: ASTRA-sim text workloads, JSON)."""
