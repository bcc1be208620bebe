"""Graph metrics of a Topology, from the shortest-path rows of :mod:`.paths`.

>>> from topocoll.topology import topology
>>> t = topology("torus:4x6")
>>> diameter(t), moore_depth(24, 4), degree_summary(t)["regular"]
(5, 3, True)
"""

import numpy as np

from ..errors import NotStronglyConnectedError, TopologyError
from ..limits import require_memory
from .paths import hop_distances
from .symmetry import translation_group

__all__ = ["distance_matrix", "diameter", "is_strongly_connected", "unreachable_pair",
           "require_strongly_connected", "degree_summary", "moore_depth", "eccentricity",
           "distance_sum"]

UNREACHABLE = -1
BLOCK_BYTES = 32 << 20   # csgraph's float64 rows per block of sources


def _rows(topology, sources, *, transpose=False):
    """Hop distances from each of ``sources`` (rows, int32, -1 where unreachable); with
    ``transpose`` the distances *to* them (:func:`~topocoll.topology.paths.hop_distances`:
    numpy on small graphs, scipy's Dijkstra on large ones)."""
    dist = hop_distances(topology, np.asarray(sources, dtype=np.int64), transpose=transpose)
    out = np.full(dist.shape, UNREACHABLE, dtype=np.int32)
    finite = np.isfinite(dist)
    out[finite] = dist[finite].astype(np.int32)
    return out


def row_blocks(topology):
    """``(start, rows)`` for consecutive blocks of sources: all-pairs distances in memory that
    grows with N, not N^2 (the cached matrix is used when it exists)."""
    n = topology.num_nodes
    cached = topology._cache.get("distance_matrix")
    if cached is not None:
        yield 0, cached
        return
    step = max(1, BLOCK_BYTES // (8 * max(n, 1)))
    # csgraph's float64 rows, their int32 copy and the search's own arrays: three blocks
    require_memory(3 * 8 * min(step, n) * n, f"shortest-path rows of {topology.name} "
                   f"({min(step, n)} sources at a time)")
    for start in range(0, n, step):
        yield start, _rows(topology, range(start, min(n, start + step)))


def distance_matrix(topology):
    """Directed hop distances ``D[u, v]`` as an int32 array, ``-1`` where ``v`` is unreachable.

    Cached on the topology: BFB, the cost model and the verifier's reports all ask for it. It
    takes ``4 N^2`` bytes, which is checked against the memory limit first
    (:mod:`topocoll.limits`); the diameter, eccentricities and connectivity do not need it.
    """
    def compute():
        n = topology.num_nodes
        require_memory(4 * n * n + BLOCK_BYTES,
                       f"the all-pairs distance matrix of {topology.name} ({n} nodes)")
        out = np.empty((n, n), dtype=np.int32)
        for start, rows in row_blocks(topology):
            out[start:start + rows.shape[0]] = rows
        out.flags.writeable = False
        return out
    return topology._cached("distance_matrix", compute)


def unreachable_pair(topology):
    """One ordered pair ``(u, v)`` such that ``v`` cannot be reached from ``u``, or ``None``.

    Two breadth-first searches, not all pairs: from node 0 (then ``u = 0``) and, if node 0
    reaches every node, towards node 0 (then ``v = 0``).
    """
    if topology.num_nodes == 1:
        return None
    missed = np.flatnonzero(_rows(topology, [0])[0] == UNREACHABLE)
    if missed.size:
        return 0, int(missed[0])
    missed = np.flatnonzero(_rows(topology, [0], transpose=True)[0] == UNREACHABLE)
    return (int(missed[0]), 0) if missed.size else None


def is_strongly_connected(topology):
    """True if every node can reach every other node."""
    return unreachable_pair(topology) is None


def require_strongly_connected(topology, what="this operation"):
    """Raise :class:`NotStronglyConnectedError` naming an unreachable pair, if there is one."""
    pair = unreachable_pair(topology)
    if pair is not None:
        raise NotStronglyConnectedError(
            f"{what} needs a strongly connected topology, but in {topology.name} node {pair[1]} "
            f"cannot be reached from node {pair[0]}", pair=pair)


def diameter(topology, *, progress=None):
    """Largest directed hop distance; raises if the topology is not strongly connected.

    One breadth-first search when the topology is invariant under a translation group (every
    node then sees the same distances), else one per node in blocks: memory grows with N.
    ``progress(done, total)`` is called after each block.
    """
    require_strongly_connected(topology, "the diameter")
    return topology._cached("diameter", lambda: _diameter(topology, progress))


def _diameter(topology, progress):
    if "distance_matrix" not in topology._cache and translation_group(topology) is not None:
        return int(_rows(topology, [0]).max())
    n = topology.num_nodes
    best = 0
    for start, rows in row_blocks(topology):
        best = max(best, int(rows.max()))
        if progress is not None:
            progress(start + rows.shape[0], n)
    return best


def eccentricity(topology, node, *, direction="out"):
    """Largest distance from ``node`` (``"out"``) or to ``node`` (``"in"``): one search."""
    require_strongly_connected(topology, "the eccentricity")
    return int(_rows(topology, [node], transpose=direction != "out").max())


def distance_sum(topology):
    """Sum of ``dist(u, v)`` over all ordered pairs (strongly connected topologies), in
    memory that grows with N; ``N`` times one row's sum under a translation group."""
    require_strongly_connected(topology, "the distance sum")
    if "distance_matrix" not in topology._cache and translation_group(topology) is not None:
        return float(topology.num_nodes) * float(_rows(topology, [0]).sum(dtype=np.float64))
    return float(sum(rows.sum(dtype=np.float64) for _, rows in row_blocks(topology)))


def degree_summary(topology):
    """Out- and in-degree ranges (distinct neighbours), and whether the graph is regular."""
    out_deg = topology.out_degree()
    in_deg = topology.in_degree()
    return {
        "out_min": int(out_deg.min()), "out_max": int(out_deg.max()),
        "in_min": int(in_deg.min()), "in_max": int(in_deg.max()),
        "regular": bool(out_deg.min() == out_deg.max() == in_deg.min() == in_deg.max()),
    }


def moore_depth(num_nodes, degree):
    """Smallest ``k`` with ``1 + d + d^2 + ... + d^k >= N``: the Moore bound on steps.

    >>> moore_depth(64, 4), moore_depth(64, 1), moore_depth(1, 3)
    (3, 63, 0)
    """
    num_nodes, degree = int(num_nodes), int(degree)
    if num_nodes < 1:
        raise TopologyError(f"the Moore depth needs N >= 1, got {num_nodes}")
    if degree < 1:
        if num_nodes == 1:
            return 0
        raise TopologyError(f"the Moore depth needs degree >= 1 for N > 1, got {degree}")
    if degree == 1:
        return num_nodes - 1
    reach, layer, depth = 1, 1, 0
    while reach < num_nodes:
        layer *= degree
        reach += layer
        depth += 1
    return depth
