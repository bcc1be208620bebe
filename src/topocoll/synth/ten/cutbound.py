"""The pair-cut term of the chunk lower bound (docs/math.md section 5).

For a set S of nodes, every chunk some node of S needs and no node of S holds at the start must
cross into S at least once, over a link from outside S, each link carrying one chunk per chunk
time; likewise every chunk held only inside S and wanted outside must leave S. With S one node
this is the ingress (egress) term of :func:`~topocoll.synth.ten.chunk_lower_bound`; with S the
two ends of a cable it can be much larger on links of mixed speeds: two nodes joined by a fast
cable whose other cables are slow share the slow links' few chunks (a 4x4 mesh with random
25/50/100 GiB/s cables: 16 slots where each node alone needs 12).

>>> from topocoll.synth.ten import ten_problem
>>> from topocoll.synth.ten.synthesis import _stream_bound
>>> from topocoll.topology import Topology
>>> ring = Topology(4, [0, 1, 1, 2, 2, 3, 3, 0], [1, 0, 2, 1, 3, 2, 0, 3],
...                 [4.0, 4.0, 1.0, 1.0, 4.0, 4.0, 1.0, 1.0], 0.0)   # 0=1-2=3-0: = fast
>>> p = ten_problem(ring, "allgather", size=8.0, chunks=2)     # 1-byte chunks
>>> p.link_cost.tolist()[:3]
[0.25, 0.25, 1.0]
>>> round(_stream_bound(ring.dst, p.link_cost, (p.post & ~p.pre).sum(axis=0), 4), 2)
1.25
>>> pair_cut_bound(ring, p.link_cost, p.pre, p.post, _stream_bound)   # 4 chunks, 2 slow links
2.0
"""

import numpy as np

__all__ = ["pair_cut_bound"]

_BLOCK = 2**22          # chunk x pair booleans per block


def pair_cut_bound(topology, cost, pre, post, stream_bound):
    """Largest cut time over the pairs of adjacent nodes (seconds; 0.0 without pairs).

    ``stream_bound(ends, cost, demand, count)``: the least time at which the entries with
    ``ends == i`` carry ``demand[i]`` chunks, maxed over ``i`` (the single-node bound's
    helper, shared so that both terms snap alike).
    """
    t = topology
    n = t.num_nodes
    a, b = np.minimum(t.src, t.dst), np.maximum(t.src, t.dst)
    key = np.unique((a * n + b)[a != b])
    if key.size == 0:
        return 0.0
    pu, pv = key // n, key % n
    recv, send = _demands(pu, pv, pre, post)
    best = 0.0
    for ends, links, demand in ((t.dst, _crossing(t.dst, t.src, pu, pv, n), recv),
                                (t.src, _crossing(t.src, t.dst, pu, pv, n), send)):
        entry_pair, entry_link = links
        if entry_link.size and np.any(demand > 0):
            best = max(best, stream_bound(entry_pair, cost[entry_link], demand, key.size))
    return float(best)


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


def _demands(pu, pv, pre, post):
    """Per pair: chunks it must receive, chunks it must send (held only inside, wanted out)."""
    k = pre.shape[0]
    want = post & ~pre
    holders = pre.sum(axis=1)
    wanted = want.sum(axis=1)
    recv = np.zeros(pu.size, dtype=np.int64)
    send = np.zeros(pu.size, dtype=np.int64)
    step = max(1, _BLOCK // max(k, 1))
    for lo in range(0, pu.size, step):
        u, v = pu[lo:lo + step], pv[lo:lo + step]
        held = pre[:, u] | pre[:, v]
        recv[lo:lo + step] = ((post[:, u] | post[:, v]) & ~held).sum(axis=0)
        only = held & (holders[:, None] == pre[:, u].astype(np.int64) + pre[:, v])
        out = wanted[:, None] - want[:, u] - want[:, v] > 0
        send[lo:lo + step] = (only & out).sum(axis=0)
    return recv, send
