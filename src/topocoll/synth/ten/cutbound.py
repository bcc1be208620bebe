"""The pair-cut term of the chunk lower bound (docs/math.md section 5).

For a set S of nodes, every chunk some node of S needs and no node of S holds at the start must
cross into S at least once, over a link from outside S, each link carrying one chunk per chunk
time; likewise every chunk held only inside S and wanted outside must leave S. With S one node
this is the ingress (egress) term of :func:`~topocoll.synth.ten.chunk_lower_bound`; with S the
two ends of a cable it can be much larger on links of mixed speeds: two nodes joined by a fast
cable whose other cables are slow share the slow links' few chunks (a 4x4 mesh with random
25/50/100 GiB/s cables: 16 slots where each node alone needs 12).

>>> from topocoll.synth.ten import ten_problem
>>> from topocoll.synth.ten.bounds import stream_bound
>>> from topocoll.topology import Topology
>>> ring = Topology(4, [0, 1, 1, 2, 2, 3, 3, 0], [1, 0, 2, 1, 3, 2, 0, 3],
...                 [4.0, 4.0, 1.0, 1.0, 4.0, 4.0, 1.0, 1.0], 0.0)   # 0=1-2=3-0: = fast
>>> p = ten_problem(ring, "allgather", size=8.0, chunks=2)     # 1-byte chunks
>>> p.link_cost.tolist()[:3]
[0.25, 0.25, 1.0]
>>> round(stream_bound(ring.dst, p.link_cost, (p.post & ~p.pre).sum(axis=0), 4), 2)
1.25
>>> pair_cut_bound(ring, p.link_cost, p.pre, p.post, stream_bound)   # 4 chunks, 2 slow links
2.0
"""

import numpy as np

__all__ = ["pair_cut_bound", "pair_forward_bound", "MAX_STEPS"]

_BLOCK = 2**22          # chunk x pair booleans per block


def pair_cut_bound(topology, cost, pre, post, stream_bound, pairs=None):
    """Largest cut time over the pairs of adjacent nodes (seconds; 0.0 without pairs).

    ``stream_bound(ends, cost, demand, count)``: the least time at which the entries with
    ``ends == i`` carry ``demand[i]`` chunks, maxed over ``i`` (the single-node bound's
    helper, shared so that both terms snap alike). ``pairs``: arrays ``(pu, pv)`` of the
    adjacent pairs to look at (default all; on a network with a translation symmetry the
    pairs of node 0 stand for all).
    """
    t, n = topology, topology.num_nodes
    pu, pv = _adjacent_pairs(t) if pairs is None else pairs
    if pu.size == 0:
        return 0.0
    recv, send = pair_demands(pu, pv, pre, post)
    best = 0.0
    for ends, links, demand in ((t.dst, _crossing(t.dst, t.src, pu, pv, n), recv),
                                (t.src, _crossing(t.src, t.dst, pu, pv, n), send)):
        entry_pair, entry_link = links
        if entry_link.size and np.any(demand > 0):
            best = max(best, stream_bound(entry_pair, cost[entry_link], demand, pu.size))
    return float(best)


def _adjacent_pairs(topology):
    """The pairs ``u < v`` joined by a link (either way): arrays ``(pu, pv)``."""
    n = topology.num_nodes
    a = np.minimum(topology.src, topology.dst).astype(np.int64)
    b = np.maximum(topology.src, topology.dst).astype(np.int64)
    key = np.unique((a * n + b)[a != b])
    return key // n, key % n


def _crossing(inside, outside, pu, pv, n):
    """``(pair, link)`` entries: links whose ``inside`` end is in the pair, ``outside`` not."""
    nodes = np.r_[pu, pv]
    other = np.r_[pv, pu]
    pair = np.r_[np.arange(pu.size), np.arange(pu.size)]
    order = np.argsort(nodes, kind="stable")
    nodes, other, pair = nodes[order], other[order], pair[order]
    start = np.searchsorted(nodes, np.arange(n))
    count = np.searchsorted(nodes, np.arange(n), side="right") - start
    per_link = count[inside]
    link = np.repeat(np.arange(inside.size), per_link)
    offset = np.arange(link.size) - np.repeat(np.cumsum(per_link) - per_link, per_link)
    at = start[inside][link] + offset
    keep = other[at] != outside[link]
    return pair[at][keep], link[keep]


def pair_demands(pu, pv, pre, post):
    """Per pair: chunks it must receive, chunks it must send (held only inside, wanted out).

    Counted on bitsets (one row of chunk bits per node of the pairs): a chunk is held only
    inside the pair if its holders number exactly those of the pair that hold it, and wanted
    outside if more nodes want it than those of the pair that do.
    """
    nodes, inv = np.unique(np.r_[pu, pv], return_inverse=True)
    iu, iv = inv[:pu.size], inv[pu.size:]
    want = post & ~pre
    holders = pre.sum(axis=1)
    wanted = want.sum(axis=1)
    held_by, in_post = _node_bits(pre[:, nodes]), _node_bits(post[:, nodes])
    wanted_by = _node_bits(want[:, nodes])
    one, two = _chunk_bits(holders == 1), _chunk_bits(holders == 2)
    some, two_plus, three_plus = (_chunk_bits(wanted >= m) for m in (1, 2, 3))
    recv = np.zeros(pu.size, dtype=np.int64)
    send = np.zeros(pu.size, dtype=np.int64)
    step = max(1, _BLOCK // max(64 * held_by.shape[1], 1))
    for lo in range(0, pu.size, step):
        u, v = iu[lo:lo + step], iv[lo:lo + step]
        hu, hv = held_by[u], held_by[v]
        recv[lo:lo + step] = _popcount((in_post[u] | in_post[v]) & ~(hu | hv))
        only = ((hu ^ hv) & one) | (hu & hv & two)
        wu, wv = wanted_by[u], wanted_by[v]
        out = (~(wu | wv) & some) | ((wu ^ wv) & two_plus) | (wu & wv & three_plus)
        send[lo:lo + step] = _popcount(only & out)
    return recv, send


def _node_bits(mask):
    """``(k, n)`` booleans -> ``(n, words)`` uint64: node ``x``'s chunks as bits."""
    k, n = mask.shape
    words = max(1, (k + 63) // 64)
    out = np.zeros((n, words * 8), dtype=np.uint8)
    out[:, :(k + 7) // 8] = np.packbits(mask, axis=0, bitorder="little").T
    return out.view(np.uint64)


def _chunk_bits(flags):
    """``(k,)`` booleans -> ``(words,)`` uint64."""
    return _node_bits(np.asarray(flags, dtype=bool)[:, None])[0]


def _popcount(bits):
    return np.bitwise_count(bits).sum(axis=1, dtype=np.int64)


#: Candidate horizons tried per pair above the bound so far by :func:`pair_forward_bound`;
#: the term stops there (every horizon tried was infeasible, so it is still a bound).
MAX_STEPS = 512
_TOL = 1e-9


def pair_forward_bound(topology, cost, pre, post, floor=0.0, pairs=None):
    """The pair term with forwarding inside the pair (seconds; at least ``floor``).

    For adjacent nodes u and v, a chunk both need and neither holds reaches v through u only
    if it enters u (over a link from outside the pair) by ``T - a``, ``a`` the chunk time of
    the fastest link u -> v; else it must enter both. With ``E_u(x)`` the transfers u's links
    from outside can end by x (``sum floor(x / cost)``), ``n_b`` the chunks both need and
    ``n_u``, ``n_v`` those only one needs, T is feasible only if some ``x_u <= E_u(T - a)``,
    ``x_v <= E_v(T - b)`` chunks forwarded one way or the other leave the rest entering both:
    ``lo_u = max(0, n_b + n_v - E_v(T))``, ``lo_v = max(0, n_b + n_u - E_u(T))`` with
    ``lo_u <= E_u(T - a)``, ``lo_v <= E_v(T - b)`` and ``lo_u + lo_v <= n_b``. (The cut
    term's ``E_u(T) + E_v(T) >= n_b + n_u + n_v`` follows.) The least T over the candidate
    ends ``m * cost`` and ``m * cost + a`` is searched upward from ``floor``. ``pairs`` as
    in :func:`pair_cut_bound`.
    """
    t = topology
    src, dst = t.src.astype(np.int64), t.dst.astype(np.int64)
    cost = np.asarray(cost, dtype=float)
    need = post & ~pre
    best = float(floor)
    for u, v in zip(*(side.tolist() for side in
                      (_adjacent_pairs(t) if pairs is None else pairs))):
        into = need[:, u] | need[:, v]
        fresh = into & ~pre[:, u] & ~pre[:, v]
        both = int((fresh & need[:, u] & need[:, v]).sum())
        if both == 0:
            continue
        only_u = int((fresh & need[:, u] & ~need[:, v]).sum())
        only_v = int((fresh & need[:, v] & ~need[:, u]).sum())
        cu = cost[(dst == u) & (src != v) & (src != u)]
        cv = cost[(dst == v) & (src != u) & (src != v)]
        fu = _fastest(cost, src, dst, u, v)              # u -> v
        fv = _fastest(cost, src, dst, v, u)
        best = _pair_horizon(cu, cv, fu, fv, both, only_u, only_v, best)
    return best


def _fastest(cost, src, dst, u, v):
    c = cost[(src == u) & (dst == v)]
    return float(c.min()) if c.size else np.inf


def _ends(costs, x):
    """Transfers the links of ``costs`` can end by ``x``."""
    if x < 0 or not costs.size:
        return 0
    return int(np.floor(x / costs + _TOL).sum())


def _pair_ok(cu, cv, fu, fv, both, only_u, only_v, horizon):
    lo_u = max(0, both + only_v - _ends(cv, horizon))
    lo_v = max(0, both + only_u - _ends(cu, horizon))
    return lo_u <= _ends(cu, horizon - fu) and lo_v <= _ends(cv, horizon - fv) and \
        lo_u + lo_v <= both


def _pair_horizon(cu, cv, fu, fv, both, only_u, only_v, start):
    """Least candidate horizon at or above ``start`` at which the pair is feasible (or the
    last one tried after :data:`MAX_STEPS`)."""
    t = start
    if _pair_ok(cu, cv, fu, fv, both, only_u, only_v, t):
        return t
    shifts = np.array([0.0] * 2 + [s for s in (fu, fv) if np.isfinite(s)])
    links = np.r_[cu, cv]
    if not links.size:
        return t
    for _ in range(MAX_STEPS):
        # next end of some link's m-th transfer, plain or plus a forwarding time
        base = t - shifts[:, None]
        nxt = (np.floor(np.maximum(base, 0) / links[None, :] + _TOL) + 1) * links[None, :] \
            + shifts[:, None]
        nxt = nxt[nxt > t * (1 + 1e-12)]
        if nxt.size == 0:
            return t
        t = float(nxt.min())
        if _pair_ok(cu, cv, fu, fv, both, only_u, only_v, t):
            return t
    return t
