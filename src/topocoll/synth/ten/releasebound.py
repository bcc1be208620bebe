"""The release-time term of the chunk lower bound (docs/math.md section 5).

The capacity terms of :func:`~topocoll.synth.ten.chunk_lower_bound` let every in-link of a
node carry a new chunk from time 0. But a chunk can only leave a sender once it is there: an
in-link ``u -> v`` can carry chunk ``c`` no earlier than ``r = d(holders of c, u)``, the least
chunk-time path to ``u`` that avoids ``v`` (the first copy of ``c`` to reach ``v`` comes along
such a path). Its transfers are sequential, so of the chunks it carries, those with release
``>= r`` end by ``T`` only if they number at most ``floor((T - r) / cost)``. For a node ``v``
and a horizon ``T`` these limits, one per in-link and release level, bound a flow from the
chunks ``v`` must receive to its in-links; ``v`` can receive them all by ``T`` only if the
maximum flow carries every chunk. The term is the least such ``T`` over candidate ends
``r + m * cost``, maxed over the nodes; the same on the reversed network bounds what a node
alone holds and must send out (released at the far end, by its distance to a node that wants
it).

On a 6x6 torus whose rows are 4x faster than its columns the chunks of the other rows reach a
node's row only after one column-link time, so the row links idle before it: the term is 16
slots where the capacity terms give 15, and the ILP proves 16 optimal.

>>> import numpy as np
>>> from topocoll.topology import Topology
>>> line = Topology(3, [0, 1, 1, 2], [1, 0, 2, 1], 1.0, 0.0)     # 0 - 1 - 2, 1 s a chunk
>>> pre, post = np.eye(3, dtype=bool), np.ones((3, 3), dtype=bool)
>>> release_time_bound(line, np.ones(4), pre, post)     # node 0 gets chunk 2 at 2 s
2.0
"""

import numpy as np

__all__ = ["release_time_bound", "RELEASE_WORK", "MAX_STEPS"]

#: Most nodes x links x chunks for which the term is computed (above it the capacity terms
#: alone bound: a 16x16 torus is 2**26, a 32x32 mesh 2**32).
RELEASE_WORK = 2**24
#: Candidate horizons tried per node above the bound so far; the term stops there (every
#: horizon tried was infeasible, so it is still a bound).
MAX_STEPS = 512
_TOL = 1e-9


def release_time_bound(topology, cost, pre, post, floor=0.0):
    """Largest release-time bound (seconds) of the nodes, ingress and egress; at least
    ``floor``. Returns ``floor`` above :data:`RELEASE_WORK`.

    Parameters
    ----------
    topology : Topology
    cost : float array (L,)
        Seconds a chunk occupies each link.
    pre, post : bool arrays (num_chunks, num_nodes)
    floor : float
        A bound already known (the search starts there).
    """
    t = topology
    n, k = t.num_nodes, pre.shape[0]
    if n * t.num_links * k > RELEASE_WORK or t.num_links == 0:
        return float(floor)
    src, dst = t.src.astype(np.int64), t.dst.astype(np.int64)
    bound = _ingress(n, src, dst, cost, pre, post & ~pre, float(floor))
    # egress: a chunk only one node holds and someone else wants, released (on the reversed
    # network) at the wanting node farthest from the holder
    want = post & ~pre
    sole = (pre.sum(axis=1) == 1) & want.any(axis=1)
    if sole.any():
        owner = np.argmax(pre[sole], axis=1)
        far = _farthest(n, src, dst, cost, owner, want[sole])
        rpre = np.zeros((int(sole.sum()), n), dtype=bool)
        rpre[np.arange(owner.size), far] = True
        rneed = np.zeros_like(rpre)
        rneed[np.arange(owner.size), owner] = True
        bound = _ingress(n, dst, src, cost, rpre, rneed, bound)
    return float(bound)


def _farthest(n, src, dst, cost, owner, want):
    """Per chunk: the node of ``want`` farthest from ``owner`` (chunk-time distance)."""
    from scipy.sparse import csgraph  # imported when first needed (start-up time)

    dist = csgraph.dijkstra(_graph(n, src, dst, cost), directed=True,
                            indices=np.unique(owner))
    row = np.searchsorted(np.unique(owner), owner)
    return np.argmax(np.where(want, dist[row], -np.inf), axis=1)


def _graph(n, src, dst, cost):
    """Sparse chunk-time graph (the fastest of parallel links)."""
    from scipy.sparse import csr_matrix  # imported when first needed (start-up time)

    order = np.argsort(-cost, kind="stable")
    w = np.zeros((n, n))
    w[src[order], dst[order]] = cost[order]
    return csr_matrix(w)


def _ingress(n, src, dst, cost, pre, need, bound):
    """Raise ``bound`` to every node's least feasible horizon (``need``: chunks to receive).

    Nodes whose problems are alike up to the order of chunks and links (all of them on a
    torus) share one answer: a node feasible at the bound so far needs no search."""
    from scipy.sparse import csgraph  # imported when first needed (start-up time)

    groups, group_of = np.unique(pre, axis=0, return_inverse=True)
    group_of = group_of.ravel()
    back = _graph(n, dst, src, cost)            # transposed: distances *to* the senders
    row_of = np.repeat(np.arange(n), np.diff(back.indptr))
    unit = float(cost.min()) * 1e-9
    known = {}
    for v in np.flatnonzero(need.any(axis=0)):
        links = np.flatnonzero((dst == v) & (src != v))
        if links.size == 0:
            continue
        chunks = np.flatnonzero(need[:, v])
        # release of each holder set at each sender by paths avoiding v
        cut = back.copy()
        cut.data[(row_of == v) | (cut.indices == v)] = np.inf
        dist = csgraph.dijkstra(cut, directed=True, indices=src[links])
        rel = np.where(groups[:, None, :], dist[None, :, :], np.inf).min(axis=2)
        release, c = rel[group_of[chunks]], cost[links]
        if chunks.size == 1:
            bound = max(bound, float((release[0] + c).min()))
            continue
        key = _canonical(release, c, unit)
        got = known.get(key)
        if got is not None and (got[0] == "eq" or got[1] <= bound):
            bound = max(bound, got[1])
            continue
        if _feasible(release, c, bound):
            known[key] = ("le", bound)
            continue
        bound = _node_horizon(release, c, bound)
        known[key] = ("eq", bound)
    return bound


def _canonical(release, cost, unit):
    """Bytes that are equal for two nodes whose (releases, link costs) differ only by the
    order of the chunks and the links (rounded to ``unit`` seconds)."""
    q = np.where(np.isfinite(release), np.round(release / unit), -1.0)
    cq = np.round(cost / unit)
    cols = sorted(range(cost.size), key=lambda j: (cq[j], np.sort(q[:, j]).tobytes()))
    m = q[:, cols]
    m = m[np.lexsort(m.T[::-1])]
    return cq[cols].tobytes() + m.tobytes()


def _node_horizon(release, cost, start):
    """Least candidate horizon above ``start`` at which the chunks can arrive, ``start``
    infeasible (or the last one tried after :data:`MAX_STEPS`)."""
    t = start
    fin = np.isfinite(release)
    r, c = release[fin], np.broadcast_to(cost, release.shape)[fin]
    for _ in range(MAX_STEPS):
        nxt = r + (np.maximum(np.floor((t - r) / c + _TOL), 0) + 1) * c
        nxt = nxt[nxt > t * (1 + 1e-12)]
        if nxt.size == 0:
            return t
        t = float(nxt.min())
        if _feasible(release, cost, t):
            return t
    return t


def _feasible(release, cost, horizon):
    """Max flow: chunk -> (link, release level) -> lower levels of the link -> sink, a level
    ``r`` passing at most ``floor((horizon - r) / cost)`` chunks."""
    from scipy.sparse import csgraph, csr_matrix  # imported when first needed (start-up time)

    k = release.shape[0]
    ok = release + cost[None, :] <= horizon * (1 + _TOL)
    if not ok.any(axis=1).all():
        return False
    heads, tails, caps = [np.zeros(k, np.int64)], [1 + np.arange(k)], [np.ones(k, np.int64)]
    node = 1 + k
    chain = []
    for j in np.flatnonzero(ok.any(axis=0)):
        r = release[ok[:, j], j]
        levels, inv = np.unique(r, return_inverse=True)     # ascending
        ids = node + np.arange(levels.size)
        heads.append(1 + np.flatnonzero(ok[:, j]))
        tails.append(ids[inv.ravel()])
        caps.append(np.ones(r.size, np.int64))
        chain.append((ids, np.floor((horizon - levels) / cost[j] + _TOL).astype(np.int64)))
        node += levels.size
    sink = node
    for ids, cap in chain:
        heads.append(ids)
        tails.append(np.r_[sink, ids[:-1]])    # a level drains into the next lower one
        caps.append(cap)
    head, tail, cap = (np.concatenate(x) for x in (heads, tails, caps))
    order = np.argsort(head, kind="stable")
    indptr = np.r_[0, np.cumsum(np.bincount(head, minlength=sink + 1))].astype(np.int32)
    g = csr_matrix((cap[order].astype(np.int32), tail[order].astype(np.int32), indptr),
                   shape=(sink + 1, sink + 1))
    return csgraph.maximum_flow(g, 0, sink).flow_value >= k
