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

from .balance import balanced_throughput, shortest_path_sample
from .colgen import colgen_throughput
from .dual import certificate, hop_shortest_paths, pair_distances
from .linklp import link_lp, link_throughput
from .pathlp import hop_frontier, hop_limits, path_throughput
from .result import AlltoallResult, PathSet
from .rewire import (OBJECTIVES, RewireResult, RewireStep, alltoall_objective, distance_objective,
                     rewire)
from .schedule import Quantized, alltoall_schedule, quantize_paths, rational_chunks
from .mwu import MwuRun, mwu_lengths
from .solve import METHODS, alltoall_routes, throughput
from .symmetric import symmetric_certificate, symmetric_throughput

__all__ = ["throughput", "alltoall_routes", "AlltoallResult", "PathSet", "link_throughput",
           "path_throughput", "colgen_throughput", "balanced_throughput",
           "shortest_path_sample", "mwu_lengths", "MwuRun",
           "symmetric_throughput", "symmetric_certificate",
           "hop_frontier", "link_lp", "hop_limits", "alltoall_schedule", "quantize_paths",
           "Quantized", "rational_chunks", "certificate", "pair_distances",
           "hop_shortest_paths", "METHODS", "rewire", "RewireResult", "RewireStep",
           "distance_objective", "alltoall_objective", "OBJECTIVES"]
