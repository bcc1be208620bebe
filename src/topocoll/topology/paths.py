"""Shortest-path distances on small graphs without scipy (start-up time).

The everyday jobs on small topologies (``synth``, ``schedule``, ``evaluate`` on at most a few
hundred nodes) need a handful of shortest-path rows; importing :mod:`scipy.sparse.csgraph` for
them costs more than the rest of the job. :func:`distances` computes them with a Bellman-Ford
iteration vectorised over the sources in numpy, and hands larger problems to scipy's compiled
Dijkstra, whose import is then worth paying for.

Both give the same float64 values, not merely close ones: with non-negative weights every
relaxation ``d[u] + w`` is a monotone function of ``d[u]``, so the values that any exact
method reaches are the largest solution of ``d[v] = min(d[v], min_u (d[u] + w(u, v)))`` in
floating point (each is the rounded sum along some path, and none exceeds any path's rounded
sum). Parallel links are fine (the cheaper counts), and unweighted distances are the hop counts
as floats. Unreachable nodes get ``inf``.

>>> import numpy as np
>>> src, dst = np.array([0, 1, 2, 0]), np.array([1, 2, 0, 2])
>>> distances(3, src, dst, [0]).tolist()
[[0.0, 1.0, 1.0]]
>>> distances(3, src, dst, [1], weight=[1.0, 2.5, 1.0, 9.0], transpose=True).tolist()
[[1.0, 0.0, 2.0]]
"""

import sys

import numpy as np

__all__ = ["distances", "hop_distances", "BUDGET", "LOADED_BUDGET"]

#: Element updates (sources x links x rounds) the numpy iteration may spend before the problem
#: goes to scipy's Dijkstra instead: about 0.2 s of numpy (some 5 to 50 ns each), against 0.3 s
#: or more to import ``scipy.sparse.csgraph``; on problems this large scipy's Dijkstra itself is
#: 25 to 300 times faster (benchmarks/paths.py). Either way the values are the same.
BUDGET = 5_000_000
#: The budget once ``scipy.sparse.csgraph`` is loaded anyway (its import is then free).
LOADED_BUDGET = 50_000


def distances(num_nodes, src, dst, sources, *, weight=None, transpose=False, min_only=False,
              budget=None):
    """Shortest-path distances (float64, ``inf`` where unreachable) from each node of
    ``sources`` along the links ``src[i] -> dst[i]`` of non-negative ``weight`` (hop counts
    without it); with ``transpose`` the distances *to* each source. Returns a
    ``(len(sources), num_nodes)`` array, or with ``min_only`` the distance from the nearest
    source (one row of ``num_nodes``, the minimum of those rows, found in one search).
    ``budget``: the numpy work allowed before scipy takes over (:data:`BUDGET`, or
    :data:`LOADED_BUDGET` once scipy's graph module is loaded); with many sources, one search
    from the first tells how many rounds they take, and too many go to scipy at once."""
    n = int(num_nodes)
    src = np.asarray(src, dtype=np.int64).ravel()
    dst = np.asarray(dst, dtype=np.int64).ravel()
    if transpose:
        src, dst = dst, src
    w = np.ones(src.size) if weight is None else np.asarray(weight, dtype=np.float64).ravel()
    sources = np.asarray(sources, dtype=np.int64).ravel()
    if np.any(w < 0):
        raise ValueError("shortest-path distances need non-negative link weights")
    if budget is None:
        budget = LOADED_BUDGET if "scipy.sparse.csgraph" in sys.modules else BUDGET
    out = None
    if min_only or sources.size <= 1 or _rounds(n, src, dst, w, sources, budget) * \
            sources.size * src.size <= budget:
        out = _relax(n, src, dst, w, sources, budget, min_only)[0]
    if out is None:
        out = scipy_distances(n, src, dst, w, sources, weight is None, min_only)
    return out


def hop_distances(topology, sources, *, transpose=False):
    """Directed hop distances (float64, ``inf`` where unreachable) of a Topology from each of
    ``sources`` (to them with ``transpose``): :func:`distances` over its distinct pairs.

    >>> from topocoll.topology import topology
    >>> hop_distances(topology("uniring:5"), [0]).tolist()
    [[0.0, 1.0, 2.0, 3.0, 4.0]]
    """
    psrc, pdst, _, _ = topology.pairs
    return distances(topology.num_nodes, psrc, pdst, sources, transpose=transpose)


def _rounds(n, src, dst, w, sources, budget):
    """Rounds the search from the first source takes (a guess at the others')."""
    rounds = _relax(n, src, dst, w, sources[:1], budget)[1]
    return rounds if rounds is not None else budget + 1


def _relax(n, src, dst, w, sources, budget, min_only=False):
    """Bellman-Ford rounds over all links for all sources at once (``min_only``: from all of
    them together): ``(distances, rounds)``, or ``(None, None)`` once the rounds would pass
    ``budget`` element updates (the caller then asks scipy)."""
    k = 1 if min_only else sources.size
    dist = np.full((k, n), np.inf)
    dist[np.zeros(sources.size, dtype=np.int64) if min_only else np.arange(k), sources] = 0.0
    if k == 0 or src.size == 0:
        return (dist[0] if min_only else dist), 0
    order = np.argsort(dst, kind="stable")
    src, dst, w = src[order], dst[order], w[order]
    heads = np.flatnonzero(np.r_[True, dst[1:] != dst[:-1]])
    targets = dst[heads]
    spent = rounds = 0
    while True:
        spent += k * src.size   # one round: every link relaxed for every source
        rounds += 1
        if spent > budget:
            return None, None
        best = np.minimum.reduceat(dist[:, src] + w, heads, axis=1)
        now = dist[:, targets]
        better = best < now
        if not better.any():
            return (dist[0] if min_only else dist), rounds
        dist[:, targets] = np.where(better, best, now)


def scipy_distances(n, src, dst, w, sources, unweighted, min_only=False):
    """The same distances from scipy's Dijkstra (parallel links: the cheapest counts)."""
    from scipy.sparse import csr_matrix   # imported only for large problems (start-up time)
    from scipy.sparse.csgraph import dijkstra

    key = src * n + dst
    order = np.lexsort((w, key))
    first = order[np.r_[True, key[order][1:] != key[order][:-1]]] if key.size else order
    graph = csr_matrix((w[first], (src[first], dst[first])), shape=(n, n))
    return dijkstra(graph, directed=True, indices=sources, unweighted=unweighted,
                    min_only=min_only)
