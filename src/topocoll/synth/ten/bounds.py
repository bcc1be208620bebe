"""Lower bounds on any schedule of a TEN problem in the link model: the capacity bound of nodes
and pairs, the release-time and pair-forwarding refinements, and the streaming bound of a
chunk's farthest holder (docs/math.md section 5)."""


import numpy as np

from ...errors import NotStronglyConnectedError
from ...topology.paths import distances
from .cutbound import pair_cut_bound, pair_forward_bound
from .releasebound import release_time_bound

__all__ = ["chunk_lower_bound", "bounds_of", "stream_bound"]


def chunk_lower_bound(problem, release=None):
    """A lower bound (seconds) on any schedule of ``problem``'s chunks in the link model.

    The largest of: for every node, the time its in-links (out-links for what it must send)
    need to carry the chunks it must receive (send), each link carrying one chunk per chunk
    time; the same for every pair of adjacent nodes and the links crossing into (out of) the
    pair (:func:`~topocoll.synth.ten.cutbound.pair_cut_bound`); the least chunk-time path
    from the nearest holder of a chunk to a node that wants it; and, with ``release``, the
    node terms with each chunk released on a link only once it can be at the sender
    (:func:`~topocoll.synth.ten.releasebound.release_time_bound`) and the pair terms with a
    chunk that enters one node of the pair late also entering the other
    (:func:`~topocoll.synth.ten.cutbound.pair_forward_bound`); without these two, the
    *capacity bound* of ``meta["capacity_lower_bound"]``. ``release`` defaults to links of
    mixed chunk times (on uniform meshes, tori and hypercubes it never raised the bound, and
    it costs up to 0.2 s on 128 nodes).
    """
    if release is None:
        release = _mixed_costs(problem)
    capacity = _capacity_bound(problem)
    return _refined(problem, capacity) if release else capacity


def _refined(problem, capacity, pairs=None):
    """The release-time and pair-forwarding terms of :func:`chunk_lower_bound`, at least
    ``capacity`` (``pairs`` as in :func:`_capacity_bound`)."""
    if not problem.topology.num_links or not (problem.post & ~problem.pre).any():
        return capacity
    t, cost, pre, post = problem.topology, problem.link_cost, problem.pre, problem.post
    bound = pair_forward_bound(t, cost, pre, post, capacity, pairs=pairs)
    return release_time_bound(t, cost, pre, post, bound)


def _mixed_costs(problem):
    cost = problem.link_cost
    return bool(cost.size) and float(cost.max()) > float(cost.min()) * (1 + 1e-9)


def bounds_of(problem, symmetric=False):
    """``(capacity bound, chunk bound)`` of :func:`chunk_lower_bound`, computed once;
    ``symmetric``: the network has a translation symmetry under which the problem is
    invariant (an all-gather), so node 0 and its pairs stand for all (the same values)."""
    pairs = _node0_pairs(problem.topology) if symmetric else None
    capacity = _capacity_bound(problem, pairs)
    return capacity, _refined(problem, capacity, pairs) if _mixed_costs(problem) else capacity


def _capacity_bound(problem, pairs=None):
    """The capacity terms of :func:`chunk_lower_bound`. ``pairs``: on a network with a
    translation symmetry, node 0 and its adjacent pairs stand for all nodes and pairs
    (:func:`_node0_pairs`); only node 0's terms are computed then."""
    t = problem.topology
    n = t.num_nodes
    cost = problem.link_cost
    pre, post = problem.pre, problem.post
    if pairs is None:
        recv = (post & ~pre).sum(axis=0)
        # what a node must send: chunks it alone holds at the start that someone else wants
        sole = pre & (pre.sum(axis=1) == 1)[:, None] & (post & ~pre).any(axis=1)[:, None]
        send = sole.sum(axis=0)
    else:                   # node 0's demands only
        recv, send = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
        recv[0] = int((post[:, 0] & ~pre[:, 0]).sum())
        mine = np.flatnonzero(pre[:, 0])
        send[0] = int(((pre[mine].sum(axis=1) == 1) & (post[mine] & ~pre[mine]).any(axis=1)).sum())
    bound = max(stream_bound(t.dst, cost, recv, n), stream_bound(t.src, cost, send, n),
                pair_cut_bound(t, cost, pre, post, stream_bound, pairs=pairs))
    if t.num_links and (post & ~pre).any() and _far_above(t, cost, pre, post, bound):
        bound = max(bound, _farthest(t, cost, pre, post, node0=pairs is not None))
    return float(bound)


def _far_above(t, cost, pre, post, bound):
    """False if the distance term of :func:`_farthest` cannot exceed ``bound``: every path
    from a holder to a node that wants the chunk is at most the way from the holder to node 0
    and on from node 0 (two Dijkstra runs instead of one per holder)."""
    graph = _cost_graph(t, cost)
    to0 = _dijkstra(graph, [0], transpose=True)[0]
    from0 = _dijkstra(graph, [0])[0]
    holders = pre.any(axis=1) & (post & ~pre).any(axis=1)
    upper = float(to0[pre[holders].any(axis=0)].max()) + \
        float(from0[(post & ~pre).any(axis=0)].max())
    return not upper <= bound


#: Holders whose distances one Dijkstra call computes at a time.
_SOURCES = 256


def _cost_graph(t, cost):
    """Chunk-time graph of the links for :func:`_dijkstra`: ``(n, src, dst, cost)`` (parallel
    links: the fastest counts)."""
    return t.num_nodes, t.src, t.dst, cost


def _dijkstra(graph, indices, *, transpose=False, min_only=False):
    """Least chunk times from ``indices`` (to them with ``transpose``): scipy's Dijkstra's
    values, from numpy on small networks (:func:`topocoll.topology.paths.distances`)."""
    n, src, dst, cost = graph
    return distances(n, src, dst, indices, weight=cost, transpose=transpose, min_only=min_only)


def _farthest(t, cost, pre, post, node0=False):
    """The least chunk time from the nearest holder of a chunk to a node that wants it,
    maxed over the chunks and nodes (``node0``: node 0's chunks stand for all)."""
    rows = np.flatnonzero(pre[:, 0]) if node0 else np.arange(pre.shape[0])
    pre, post = pre[rows], post[rows]
    need = post & ~pre
    keep = need.any(axis=1)
    pre, post, need = pre[keep], post[keep], need[keep]
    rows = np.arange(pre.shape[0])
    graph = _cost_graph(t, cost)
    count = pre[rows].sum(axis=1)
    far = 0.0
    single = rows[count == 1]
    if single.size:                 # one holder each: Dijkstra from the holders, in blocks
        holder = pre[single].argmax(axis=1)
        nodes, inv = np.unique(holder, return_inverse=True)
        for lo in range(0, nodes.size, _SOURCES):
            d = _dijkstra(graph, nodes[lo:lo + _SOURCES])
            sel = np.flatnonzero((inv >= lo) & (inv < lo + _SOURCES))
            for b in range(0, sel.size, _SOURCES):
                part = sel[b:b + _SOURCES]
                far = max(far, float(np.where(need[single[part]], d[inv[part] - lo],
                                              -np.inf).max()))
    multi = rows[count > 1]
    if multi.size:                  # distinct holder sets are few in practice
        keys = np.packbits(pre[multi], axis=1)
        _, first, inv = np.unique(keys, axis=0, return_index=True, return_inverse=True)
        for i, c in enumerate(multi[first]):
            d = _dijkstra(graph, np.flatnonzero(pre[c]), min_only=True)
            far = max(far, float(d[need[multi[inv.ravel() == i]].any(axis=0)].max()))
    if not np.isfinite(far):
        raise NotStronglyConnectedError("some node cannot be reached by a chunk it needs")
    return far


def _node0_pairs(t):
    """The adjacent pairs ``(0, x)`` of node 0, as :func:`~.cutbound.pair_cut_bound` takes
    them: on a network with a translation symmetry every adjacent pair is a translate of one
    of these."""
    x = np.unique(np.r_[t.dst[t.src == 0], t.src[t.dst == 0]].astype(np.int64))
    x = x[x != 0]
    return np.zeros(x.size, dtype=np.int64), x


def stream_bound(ends, cost, demand, n):
    """Least T with sum over a node's links of floor(T / cost) >= demand, maxed over nodes."""
    if not np.any(demand > 0):
        return 0.0
    nodes = np.flatnonzero(demand > 0)
    lo = np.zeros(n)
    hi = np.full(n, np.inf)
    rate = np.bincount(ends, weights=1.0 / cost, minlength=n)
    if np.any(rate[nodes] == 0):
        raise NotStronglyConnectedError(f"node {int(nodes[rate[nodes] == 0][0])} has no link "
                                        "to carry its chunks")
    hi[nodes] = (demand[nodes] + 1) / rate[nodes] + cost.max()
    for _ in range(80):
        mid = (lo + hi) / 2
        got = np.bincount(ends, weights=np.floor(mid[ends] / cost), minlength=n)
        ok = got >= demand
        hi = np.where(ok, mid, hi)
        lo = np.where(ok, lo, mid)
    # snap to the completion time of the last chunk actually needed
    snapped = np.zeros(n)
    np.maximum.at(snapped, ends, np.floor(hi[ends] / cost * (1 + 1e-12)) * cost)
    return float(snapped[nodes].max())
