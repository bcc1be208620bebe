"""Studies over many schedules: :func:`~.compare.compare` puts schedules side by side under
the same network settings; :func:`~.survey.survey` is its preset for the main topologies of
one size; :func:`~.loop.simulate_training` runs training iterations -- compute layer by layer,
collectives on the network, each layer's next forward waiting for its gradient -- for the
workloads of :mod:`.workloads` (built-in models' FLOPs model, :mod:`.models`; torch
measurements, :mod:`.measure`; ASTRA-sim text workloads and JSON profiles), with the prices of
:mod:`.prices` and :mod:`.allreduce_costs`; :func:`~.trainsim.train_sim` is the train-sim job
(ours next to the bound and the baselines), :func:`~.trainsim_sizes.train_sim_sizes` the same at
several cluster sizes as batch tasks; :func:`~.training.simulate_iteration` is the
one-iteration, allreduce-only form on a ready-time profile (:mod:`.gradient_profile`)."""

from ..lazy import lazy_attributes

# ``compare`` and ``survey`` are the names of their modules too (topocoll.studies.compare.compare,
# as README.md has it), so they are not names here: once the module is imported, the package's
# attribute is the module, whatever this table says (topocoll.compare is the function).
# Public names -> the submodule that defines them. A submodule is imported when one of its
# names is first used (PEP 562), so a job loads only the modules it needs (start-up time).
_LAZY = {
    ".allreduce_costs": ("AllreduceCost", "LinkModelCost", "lower_bound_cost", "schedule_cost",
                         "baseline_cost", "baseline_closed_form", "CLOSED_FORM",
                         "priced_network", "node_bandwidth_of", "BASELINES"),
    ".compare": ("CompareResult", "ComparisonRow", "plot_comparison", "fastest"),
    ".gradient_profile": ("Profile", "ProfileLayer"),
    ".loop": ("simulate_training", "TrainingResult", "Run", "LOOP_POLICIES", "plot_training"),
    ".layer_timing": ("TORCH_MODELS", "measure_model", "measure_module"),
    ".models": ("MODELS", "model_profile", "model_workload"),
    ".profiles": ("load_profile", "parse_astra"),
    ".regression": ("CostModelFit", "fit_cost_model", "schedule_row", "run_rows", "load_runs"),
    ".resolve": ("resolve_profile", "resolve_workload"),
    ".survey": ("default_specs",),
    ".multitenant": ("run_tenants", "TenantsRun"),
    ".training": ("simulate_iteration", "IterationResult", "Allreduce", "plot_iteration",
                  "POLICIES"),
    ".trainsim": ("train_sim", "TrainSimResult"),
    ".trainsim_sizes": ("train_sim_sizes", "TrainSimSizesResult"),
    ".workloads": ("TrainingWorkload", "WorkloadLayer", "load_training_workload"),
}

__all__ = [name for names in _LAZY.values() for name in names]

__getattr__, __dir__ = lazy_attributes(__name__, _LAZY, __all__)
