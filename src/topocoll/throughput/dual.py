"""Dual certificates and (hop-bounded) shortest paths under link lengths.

Weak duality for uniform all-to-all: for any lengths ``l_e >= 0`` on the links,

    lambda * sum_{x != y} dist_l(x, y)  <=  sum_e flow_e * l_e  <=  sum_e c_e l_e,

because each pair's ``lambda`` bytes/s travel at least ``dist_l(x, y)``. So
``sum_e c_e l_e / sum dist_l`` bounds ``lambda`` from above, for *any* lengths; the LP duals are
the lengths that make it tight. For the path LP, ``dist_l`` is over the allowed paths
(at most ``hop_limit[x, y]`` links).

>>> from topocoll.topology import topology
>>> t = topology("ring:6", bandwidth=1.0)
>>> round(certificate(t, np.ones(12)), 6)   # uniform lengths: the distance bound 12/54
0.222222
"""

import numpy as np
import scipy.sparse as sp
from scipy.sparse import csgraph

from ..errors import TopologyError

__all__ = ["certificate", "pair_distances", "hop_shortest_paths", "tree_paths",
           "link_ids", "shortest_path_trees", "in_links", "positive_lengths"]


def positive_lengths(lengths):
    """Lengths made strictly positive (scipy drops zero-weight edges of sparse graphs)."""
    lengths = np.maximum(np.asarray(lengths, dtype=np.float64), 0.0)
    top = float(lengths.max()) if lengths.size else 0.0
    return lengths + (1e-12 * top if top > 0 else 1.0)


def shortest_path_trees(psrc, pdst, n, lengths):
    """All-sources Dijkstra under ``lengths`` (positive, one per pair-link ``psrc -> pdst``
    of ``n`` nodes): distances and predecessors, N x N each."""
    graph = sp.csr_matrix((lengths, (psrc, pdst)), shape=(n, n))
    return csgraph.dijkstra(graph, directed=True, return_predecessors=True)


def pair_distances(topology, lengths, hop_limit=None):
    """All-pairs ``dist_l`` (N x N) under ``lengths`` on ``topology.pairs``; with ``hop_limit``
    (an N x N int array) only paths of at most ``hop_limit[x, y]`` links count."""
    if hop_limit is not None:
        return hop_shortest_paths(topology, lengths, hop_limit, paths=False)[0]
    psrc, pdst, _, _ = topology.pairs
    n = topology.num_nodes
    graph = sp.csr_matrix((positive_lengths(lengths), (psrc, pdst)), shape=(n, n))
    return csgraph.dijkstra(graph, directed=True)


def certificate(topology, lengths, hop_limit=None):
    """The upper bound ``sum_e c_e l_e / sum_{x != y} dist_l(x, y)`` on ``lambda`` for lengths
    ``l`` on ``topology.pairs`` (bytes/s per pair); ``inf`` if some pair is unreachable."""
    _, _, cap, _ = topology.pairs
    lengths = positive_lengths(lengths)
    dist = pair_distances(topology, lengths, hop_limit)
    total = float(dist.sum())
    if not np.isfinite(total) or total <= 0:
        return float("inf")
    return float(cap @ lengths) / total


def hop_shortest_paths(topology, lengths, hop_limit, *, paths=True, pairs=None):
    """Shortest ``l``-paths of at most ``hop_limit[x, y]`` links, for all sources at once.

    A Bellman-Ford over hop counts, vectorised over sources: level ``h`` holds the least length
    of a walk of at most ``h`` links. Updates are strict, so ties keep the path with fewer
    links, and with positive lengths the walks found are simple paths.

    Parameters
    ----------
    lengths : array of float
        One per entry of ``topology.pairs`` (made strictly positive).
    hop_limit : (N, N) int array
    paths : bool
        Also reconstruct the paths of ``pairs``.
    pairs : (xs, ys) arrays, optional
        Pairs whose paths to reconstruct (default: every ordered pair x != y).

    Returns
    -------
    dist : (N, N) array
        ``dist[x, y]`` at the pair's own hop limit (inf where no path is that short; with
        ``paths``, such a pair among ``pairs`` raises ``TopologyError``).
    ptr, edges : arrays or None
        CSR layout: pair ``i``'s path is ``edges[ptr[i]:ptr[i+1]]`` (pair-link indices).
    """
    psrc, pdst, _, _ = topology.pairs
    n = topology.num_nodes
    hop_limit = np.asarray(hop_limit, dtype=np.int64)
    out, preds = _hop_levels(psrc, pdst, n, positive_lengths(lengths), hop_limit, paths)
    if not paths:
        return out, None, None
    if pairs is None:
        xs, ys = np.nonzero(~np.eye(n, dtype=bool))
    else:
        xs, ys = (np.asarray(a, dtype=np.int64) for a in pairs)
    ptr, edges = _trace_paths(psrc, preds, hop_limit, xs, ys)
    return out, ptr, edges


def _hop_levels(psrc, pdst, n, lengths, hop_limit, keep_preds):
    """The Bellman-Ford of :func:`hop_shortest_paths` over hop counts 1 .. ``hop_limit.max()``
    (``lengths`` positive): ``dist`` (N x N, each pair at its own hop limit) and, with
    ``keep_preds``, per level ``h`` the (source, node) -> pair-link array of the walks' last
    links (-1 where level ``h`` did not improve on level ``h - 1``)."""
    top = int(hop_limit.max()) if hop_limit.size else 0
    table = in_links(pdst, n, fill=psrc.size)   # padded with a dummy edge of infinite length
    src_ext = np.append(psrc, 0)
    len_ext = np.append(lengths, np.inf)
    table_src, table_len = src_ext[table], len_ext[table]
    level = np.full((n, n), np.inf)
    np.fill_diagonal(level, 0.0)
    out = np.where(hop_limit <= 0, level, np.inf)
    preds = []
    for h in range(1, top + 1):
        cand = level[:, table_src] + table_len[None, :, :]      # (source, node, in-edge)
        k = np.argmin(cand, axis=2)
        val = np.take_along_axis(cand, k[:, :, None], axis=2)[:, :, 0]
        upd = val < level
        level = np.where(upd, val, level)
        if keep_preds:
            pred = np.where(upd, table[np.arange(n)[None, :], k], -1).astype(np.int32)
            preds.append(pred)
        at = hop_limit == h
        out[at] = level[at]
    out[hop_limit > top] = level[hop_limit > top]
    return out, preds


def _trace_paths(psrc, preds, hop_limit, xs, ys):
    """The paths of the pairs ``(xs[i], ys[i])`` walked back from ``ys`` through the levels'
    predecessors ``preds`` (:func:`_hop_levels`), in the CSR layout of
    :func:`hop_shortest_paths`: ``(ptr, edges)``."""
    top = len(preds)                            # one level per hop count 1 .. top
    cur = ys.copy()
    h = np.minimum(hop_limit[xs, ys], top)
    idx = np.arange(xs.size)
    rec_pair, rec_edge, rec_iter = [], [], []
    it = 0
    active = (cur != xs) & (h > 0)
    while np.any(active):
        a = np.flatnonzero(active)
        e = _preds_at(preds, h[a] - 1, xs[a], cur[a])
        moved = e >= 0
        rec_pair.append(idx[a[moved]])
        rec_edge.append(e[moved])
        rec_iter.append(np.full(int(moved.sum()), it))
        cur[a[moved]] = psrc[e[moved]]
        h[a] -= 1
        it += 1
        active = (cur != xs) & (h > 0)
    if np.any(cur != xs):
        bad = int(np.flatnonzero(cur != xs)[0])
        raise TopologyError(f"no path of at most {hop_limit[xs[bad], ys[bad]]} links from "
                            f"{xs[bad]} to {ys[bad]}: a hop limit below the pair's distance")
    rp = np.concatenate(rec_pair) if rec_pair else np.zeros(0, np.int64)
    re = np.concatenate(rec_edge) if rec_edge else np.zeros(0, np.int64)
    ri = np.concatenate(rec_iter) if rec_iter else np.zeros(0, np.int64)
    order = np.lexsort((-ri, rp))   # per pair, last recorded (the first link) first
    counts = np.bincount(rp, minlength=xs.size)
    ptr = np.concatenate([[0], np.cumsum(counts)])
    return ptr, re[order].astype(np.int64)


def in_links(pdst, n, fill=-1):
    """``table[v]``: the pair-links into node ``v`` (their indices into ``pdst``), padded with
    ``fill`` to the largest in-degree (an ``n x max_indegree`` int64 array)."""
    indeg = np.bincount(pdst, minlength=n)
    order = np.argsort(pdst, kind="stable")
    slot = np.arange(pdst.size) - np.repeat(np.cumsum(indeg) - indeg, indeg)
    table = np.full((n, max(int(indeg.max()), 1)), fill, dtype=np.int64)
    table[pdst[order], slot] = order
    return table


def _preds_at(preds, levels, xs, nodes):
    """``preds[levels[i]][xs[i], nodes[i]]`` for arrays of queries."""
    out = np.empty(xs.size, dtype=np.int64)
    for lv in np.unique(levels):
        sel = levels == lv
        out[sel] = preds[lv][xs[sel], nodes[sel]]
    return out


def link_ids(topology):
    """``eid[u, v]``: the pair-link of ``u -> v`` (N x N, -1 where there is none)."""
    psrc, pdst, _, _ = topology.pairs
    n = topology.num_nodes
    eid = np.full((n, n), -1, dtype=np.int64)
    eid[psrc, pdst] = np.arange(psrc.size)
    return eid


def tree_paths(pred, eid, xs, ys):
    """The paths of pairs ``(xs[i], ys[i])`` in shortest-path trees ``pred`` (N x N
    predecessors, row = source, as ``csgraph.dijkstra`` returns them) as CSR ``(ptr, edges)``
    of pair-links, source side first; ``eid[u, v]`` is the pair-link of ``u -> v``."""
    cur = np.asarray(ys, dtype=np.int64).copy()
    xs = np.asarray(xs, dtype=np.int64)
    idx = np.arange(xs.size)
    rec_pair, rec_edge, rec_it = [], [], []
    it = 0
    active = np.flatnonzero(cur != xs)
    while active.size:
        prev = pred[xs[active], cur[active]].astype(np.int64)
        rec_pair.append(idx[active])
        rec_edge.append(eid[prev, cur[active]])
        rec_it.append(np.full(active.size, it))
        cur[active] = prev
        it += 1
        active = active[cur[active] != xs[active]]
    rp = np.concatenate(rec_pair) if rec_pair else np.zeros(0, np.int64)
    re = np.concatenate(rec_edge) if rec_edge else np.zeros(0, np.int64)
    ri = np.concatenate(rec_it) if rec_it else np.zeros(0, np.int64)
    order = np.lexsort((-ri, rp))     # per pair, the link out of the source first
    ptr = np.concatenate([[0], np.cumsum(np.bincount(rp, minlength=xs.size))])
    return ptr.astype(np.int64), re[order].astype(np.int64)
