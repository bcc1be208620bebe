"""The topology finder: the best direct-connect topology and allreduce schedule for a cluster
(N nodes of degree d, latency alpha, by default 100 Gbps per link, i.e. B = d x 100 Gbps per
node in the cost model; or a node bandwidth B, the paper's convention) and a workload (Zhao et
al., "Efficient Direct-Connect Topologies for Collective Communications", NSDI 2025, section 5.4).

* :func:`find`: search, choose for the workload, build, verify and evaluate the choice;
  returns a :class:`FindResult` (``success``, ``status``, ``message``, ``frontier``, ``best``,
  ``predicted_time``, ``evaluated_time``, ``lower_bound``, ``ratio``, ``schedule``).
* :func:`find_range`: Pareto frontiers for many N (predictions only).
* :func:`partition_fabric`, :class:`FabricResult`: one fabric cut into per-job subclusters,
  each with the finder's pick for its size, and their union topology.
* :func:`optimize`, :class:`OptimizeResult`: better bases for the best candidates' expansion
  recipes (Cayley digraphs, degree-preserving rewiring), confirmed by verified schedules.
* :class:`Search`, :class:`Candidate`, :func:`pareto_frontier`, :func:`predict`: the search.
* :class:`Workload`, :func:`bucket_layers`, :func:`load_workload`: what the allreduces are.
* :class:`BaseDatabase`, :func:`catalogue`: the measured base topologies.
* :class:`Cache`, :func:`cache_dir`: the SQLite results cache.
* :func:`build_allreduce`, :func:`plot_frontier`, :func:`genkautz_cost`, :func:`bfb_cost`.

>>> import topocoll.finder as tf
>>> r = tf.find(64, 4, "1MiB", cache=False, evaluate=False)
>>> r.status_name, r.best.nodes, r.best.degree <= 4
('NOT_PROVEN', 64, True)
"""

from ..lazy import lazy_attributes
# eager: ``optimize`` names a function and its submodule; importing the submodule binds it here
# first, so that a later ``import topocoll.finder.optimize`` cannot shadow the function
from .optimize import OptimizeResult, optimize
# eager for the same reason: ``sweep`` is a function and its submodule
from .sweep import SweepResult, sweep

# Public names -> the module that defines them, imported on first use (PEP 562).
_LAZY = {
    ".bases": ("BaseDatabase", "BaseEntry", "catalogue", "compute_base"),
    ".bfbcost": ("bfb_cost", "genkautz_cost"),
    ".build": ("build_allreduce", "priced"),
    ".cache": ("ALGORITHM_VERSION", "Cache", "cache_dir"),
    ".core": ("FindResult", "as_workload", "find", "find_range", "frontier"),
    ".fabric": ("FabricJob", "FabricResult", "partition_fabric"),
    ".plot": ("plot_frontier", "plot_sweep_ratio", "plot_sweep_families"),
    "..synth.expansions": ("predict",),
    ".search": ("Candidate", "Search", "pareto_frontier"),
    ".workload": ("Workload", "bucket_layers", "load_workload"),
}

__all__ = ["find", "find_range", "frontier", "FindResult", "as_workload", "Search",
           "Candidate", "pareto_frontier", "predict", "Workload", "bucket_layers",
           "load_workload", "BaseDatabase", "BaseEntry", "catalogue", "compute_base", "Cache",
           "cache_dir", "ALGORITHM_VERSION", "build_allreduce", "priced", "plot_frontier",
           "bfb_cost", "genkautz_cost", "optimize", "OptimizeResult", "sweep", "SweepResult",
           "plot_sweep_ratio", "plot_sweep_families", "partition_fabric", "FabricResult",
           "FabricJob"]


__getattr__, __dir__ = lazy_attributes(__name__, _LAZY, __all__)
