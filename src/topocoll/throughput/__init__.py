"""All-to-all: throughput LPs (one source's flow under a translation group, link-based,
hop-bounded path-based, shortest paths balanced to the distance bound, and path column
generation seeded by multiplicative weights), bounds, and hop-by-hop schedules (docs/math.md
section 6).

``lambda`` is the rate in bytes/s that every ordered pair ``(x, y)``, ``x != y``, sustains at
once; an all-to-all of a per-node buffer of M bytes (M/N bytes per pair) then takes
``(M/N) / lambda``.

>>> from topocoll.topology import topology
>>> res = throughput(topology("hypercube:3", bandwidth=1.0))
>>> round(res.lam, 6), res.status_name, round(res.time(8), 6)        # 2/N; (8/8)/0.25
(0.25, 'SUCCESS', 4.0)
>>> res.bounds["distance"], res.bounds["bisection"]
(0.25, 0.25)
>>> r2 = throughput("complete:4", max_hops=0, bandwidth=1.0)
>>> r2.method, round(r2.lam, 6), r2.longest_path
('path', 1.0, 1)
"""

from ..lazy import lazy_attributes
# eager: ``rewire`` names a function and its submodule; importing the submodule binds it here
# first, so that a later ``import topocoll.throughput.rewire`` cannot shadow the function
from .rewire import (OBJECTIVES, RewireResult, RewireStep, alltoall_objective, distance_objective,
                     rewire)

# Public names -> the submodule that defines them, imported on first use (PEP 562).
_LAZY = {
    ".balance": ("balanced_throughput", "shortest_path_sample"),
    ".colgen": ("colgen_throughput",),
    ".dual": ("certificate", "hop_shortest_paths", "pair_distances"),
    ".linklp": ("link_lp", "link_throughput"),
    ".mwu": ("MwuRun", "mwu_lengths"),
    ".pathlp": ("hop_frontier", "hop_limits", "path_throughput"),
    ".result": ("AlltoallResult", "PathSet"),
    ".schedule": ("Quantized", "alltoall_schedule", "quantize_paths", "rational_chunks"),
    ".solve": ("METHODS", "alltoall_routes", "throughput"),
    ".steplp": ("step_lp", "StepLpResult"),
    ".topology_ilp": ("DesignResult", "design_topology", "iterative_design"),
    ".symmetric": ("symmetric_certificate", "symmetric_throughput"),
    ".valiant": ("ValiantResult", "shortest_path_loads", "valiant_throughput"),
}

__all__ = ["throughput", "alltoall_routes", "AlltoallResult", "PathSet", "link_throughput",
           "path_throughput", "colgen_throughput", "balanced_throughput",
           "shortest_path_sample", "mwu_lengths", "MwuRun",
           "symmetric_throughput", "symmetric_certificate",
           "hop_frontier", "link_lp", "hop_limits", "alltoall_schedule", "quantize_paths",
           "Quantized", "rational_chunks", "certificate", "pair_distances",
           "hop_shortest_paths", "METHODS", "rewire", "RewireResult", "RewireStep",
           "distance_objective", "alltoall_objective", "OBJECTIVES", "step_lp", "StepLpResult",
           "design_topology", "iterative_design", "DesignResult",
           "valiant_throughput", "shortest_path_loads", "ValiantResult"]


__getattr__, __dir__ = lazy_attributes(__name__, _LAZY, __all__)
