"""BFB's solutions as transfers (docs/math.md section 2): the shares of every (node, step)
problem as byte ranges of the shards (:func:`intervals`), or rounded to whole ``1/chunks`` of a
shard (:func:`round_to_chunks`, appendix D.2 of Zhao et al., NSDI 2025) or to whole shards
within each step's fractional bottleneck (:func:`round_to_bottleneck`); the roundings are
maximum flows (:func:`bipartite_flow`).
"""

import numpy as np

from ..collectives import COPY
from ..errors import UnsupportedError
from ..schedule.model import TRANSFER_DTYPE
from .bfb_lp import highs_solve

__all__ = ["piece_maker", "intervals", "chunked_intervals", "round_to_chunks",
           "round_to_bottleneck", "bipartite_flow", "segments", "FLOW_LP_EDGES"]


def segments(keys):
    """Start index of every run of equal consecutive keys."""
    return np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]]) if keys.size else keys


def piece_maker(share, demand, cand_group, cand_pair, group_of_unit, *, group_block, pbw,
                units):
    """``pieces(chunks=None, *, bounded=False)`` of :func:`~.bfb.bfb_broadcasts`'s solution."""

    def pieces(chunks=None, *, bounded=False):
        """The solution as transfers: fractional, or in whole ``1/chunks`` of a shard; with
        ``bounded``, whole shards within each step's fractional bottleneck and the steps
        where they do not fit (see :func:`chunked_intervals`)."""
        if bounded:
            return chunked_intervals(share, cand_group, cand_pair, group_of_unit, group_block,
                                     chunks=1, pbw=pbw, **units)
        if chunks is not None:
            return chunked_intervals(share, cand_group, cand_pair, group_of_unit, group_block,
                                     chunks=chunks, **units)
        return intervals(share, demand, cand_group, cand_pair, group_of_unit, **units)
    return pieces


def intervals(share, demand, cand_group, cand_pair, group_of_unit, *, psrc, u_step, u_v,
              u_shard):
    """Turn per-group shares into byte ranges and expand them to every unit of the group."""
    keep = share > 0
    cand_group, cand_pair, share = cand_group[keep], cand_pair[keep], share[keep]
    # running sums within each group, position by position, so lo of a piece is exactly hi of
    # the previous one and the last hi is exactly 1
    starts = segments(cand_group)
    rank = np.arange(cand_group.size) - np.repeat(starts, np.diff(np.r_[starts, cand_group.size]))
    hi = np.zeros(share.size)
    lo = np.zeros(share.size)
    for r in range(int(rank.max(initial=-1)) + 1):
        at = np.flatnonzero(rank == r)
        if r:
            lo[at] = hi[at - 1]
        hi[at] = lo[at] + share[at]
    last = np.r_[starts[1:] - 1, cand_group.size - 1] if starts.size else starts
    hi[last] = 1.0
    # expand: each unit takes its group's pieces
    per_group = np.bincount(cand_group, minlength=demand.size)
    first_of_group = np.r_[0, np.cumsum(per_group)[:-1]]
    units = np.arange(group_of_unit.size)
    count = per_group[group_of_unit]
    unit_rep = np.repeat(units, count)
    piece = np.repeat(first_of_group[group_of_unit], count) + (
        np.arange(unit_rep.size) - np.repeat(np.cumsum(count) - count, count))
    out = np.empty(unit_rep.size, dtype=TRANSFER_DTYPE)
    out["step"] = u_step[unit_rep]
    out["src"] = psrc[cand_pair[piece]]
    out["dst"] = u_v[unit_rep]
    out["shard"] = u_shard[unit_rep]
    out["lo"] = lo[piece]
    out["hi"] = hi[piece]
    out["op"] = COPY
    return out  # units are in (step, receiver, shard) order already


def round_to_chunks(unit, link, share, chunks):
    """Whole chunk counts per (unit, link) candidate: every unit gets exactly ``chunks``, every
    count is the floor or ceiling of ``share * chunks``, and every link's load is at most the
    ceiling of its fractional load, so each link carries less than one chunk more than the
    fractional optimum (appendix D.2). Such a rounding exists by flow integrality; a max-flow
    (scipy's: the rounding, and so the cost, depends on which maximum flow) finds it."""
    want = share * chunks
    count = np.floor(want + 1e-9).astype(np.int64)
    frac = want - count
    deficit = chunks - np.bincount(unit, weights=count, minlength=unit.max(initial=-1) + 1)
    deficit = np.rint(deficit).astype(np.int64)
    links, link_id = np.unique(link, return_inverse=True)
    room = np.ceil(np.bincount(link_id, weights=want) - 1e-9).astype(np.int64) - np.bincount(
        link_id, weights=count, minlength=links.size).astype(np.int64)
    open_ = np.flatnonzero(frac > 1e-9)
    if deficit.sum() == 0:
        return count
    # only units still short of chunks and links with room take part in the flow
    short, unit_node = np.unique(unit[open_], return_inverse=True)
    busy, link_node = np.unique(link_id[open_], return_inverse=True)
    flow = bipartite_flow(unit_node, short.size + link_node,
                          np.r_[deficit[short], np.maximum(room[busy], 0)], method="dinic")
    if flow.sum() != deficit.sum():  # cannot happen for a feasible fractional solution
        raise UnsupportedError("BFB: rounding to chunks failed")
    count[open_] += flow
    return count


def round_to_bottleneck(unit, link, share, *, step, bandwidth):
    """Whole shards per (unit, link) candidate (0 or 1; ``step`` and ``bandwidth`` per
    candidate): the count is the floor or ceiling of the share, and no link carries more than
    its step's busiest link allows relative to bandwidth (the fractional bottleneck), nor more
    than the ceiling of its fractional load. A unit that finds no such sender gets 0 in all.

    A rounding that meets the bottleneck, if any exists, costs what the fractional solution
    costs in that step; a maximum flow finds one wherever one exists."""
    count = np.floor(share + 1e-9).astype(np.int64)
    deficit = 1 - np.rint(np.bincount(unit, weights=count)).astype(np.int64)
    links, first, link_id = np.unique(link, return_index=True, return_inverse=True)
    load = np.bincount(link_id, weights=share, minlength=links.size)
    link_bw = bandwidth[first]
    steps, step_id = np.unique(step[first], return_inverse=True)
    worst = np.zeros(steps.size)
    np.maximum.at(worst, step_id, load / link_bw)
    bottleneck = np.floor(worst[step_id] * link_bw * (1 + 1e-12) + 1e-9)
    cap = np.minimum(np.ceil(load - 1e-9), bottleneck)
    room = cap.astype(np.int64) - np.bincount(link_id, weights=count,
                                              minlength=links.size).astype(np.int64)
    open_ = np.flatnonzero(share - count > 1e-9)
    if deficit.sum() == 0:
        return count
    short, unit_node = np.unique(unit[open_], return_inverse=True)
    busy, link_node = np.unique(link_id[open_], return_inverse=True)
    count[open_] += bipartite_flow(unit_node, short.size + link_node,
                                   np.r_[deficit[short], np.maximum(room[busy], 0)])
    return count


#: Up to this many edges :func:`bipartite_flow` asks HiGHS (loaded already for the LPs) by
#: default; above it scipy's maximum flow, far quicker on large networks (mesh:16x16: 88k
#: edges in 0.03 s against 1 s), whose import (0.15 s) no longer matters there.
FLOW_LP_EDGES = 5_000


def bipartite_flow(left, right, capacity, *, method="auto"):
    """A maximum flow from a source through unit-capacity edges ``left[e] -> right[e]`` to a
    sink, node i passing at most ``capacity[i]`` (the left nodes numbered first, from 0, then
    the right ones, every left node with an edge): 0 or 1 per edge.

    ``method`` "lp" solves it as a linear program with HiGHS' dual simplex (its matrix, the
    incidence matrix of a bipartite graph, is totally unimodular, so the optimal vertex is
    integral); "dinic" with scipy's :func:`~scipy.sparse.csgraph.maximum_flow`; "auto" the
    first up to :data:`FLOW_LP_EDGES` edges. Every maximum flow has the same value; which
    one comes back depends on the method.

    >>> left, right = np.array([0, 0, 1]), np.array([2, 3, 2])
    >>> [bipartite_flow(left, right, np.ones(4, int), method=m).tolist() for m in ("lp", "dinic")]
    [[0, 1, 1], [0, 1, 1]]
    """
    if method == "dinic" or (method == "auto" and left.size > FLOW_LP_EDGES):
        return _dinic_flow(left, right, capacity)
    edges = left.size
    index = np.empty(2 * edges, dtype=np.int32)
    index[0::2], index[1::2] = left, right
    x = highs_solve(np.ones(edges), (np.arange(0, 2 * edges + 1, 2), index, np.ones(2 * edges)),
                    np.zeros(capacity.size), capacity.astype(float),
                    col_upper=np.ones(edges), maximize=True)
    flow = np.rint(x).astype(np.int64)
    if np.abs(x - flow).max(initial=0.0) > 1e-6:   # a vertex of a TU system is integral
        raise UnsupportedError("BFB: the whole-shard flow came back fractional")
    return flow


def _dinic_flow(left, right, capacity):
    """:func:`bipartite_flow` by scipy's maximum flow: source 0, the nodes from 1, sink last."""
    import scipy.sparse as sp  # imported when first needed (start-up time)
    from scipy.sparse.csgraph import maximum_flow

    num_left = int(left.max(initial=-1)) + 1
    sink = 1 + capacity.size
    rows = np.r_[np.zeros(num_left, dtype=np.int64), 1 + left,
                 1 + np.arange(num_left, capacity.size)]
    cols = np.r_[1 + np.arange(num_left), 1 + right, np.full(capacity.size - num_left, sink)]
    caps = np.r_[capacity[:num_left], np.ones(left.size, dtype=np.int64), capacity[num_left:]]
    graph = sp.csr_matrix((caps.astype(np.int32), (rows, cols)), shape=(sink + 1, sink + 1))
    result = maximum_flow(graph, 0, sink)
    return np.maximum(np.asarray(result.flow[1 + left, 1 + right]).ravel(), 0).astype(np.int64)


def chunked_intervals(share, cand_group, cand_pair, group_of_unit, group_block, *, psrc,
                      u_step, u_v, u_shard, chunks, pbw=None):
    """Like :func:`intervals`, but every piece is a whole number of ``1/chunks`` of a shard.

    With ``pbw`` (the pairs' bandwidths; ``chunks`` 1): whole shards, no link loaded beyond
    its step's fractional bottleneck (:func:`round_to_bottleneck`); returns the transfers and
    the steps where some shard found no sender within it (those transfers are incomplete)."""
    per_group = np.bincount(cand_group, minlength=group_block.size)
    first_of_group = np.r_[0, np.cumsum(per_group)[:-1]]
    count = per_group[group_of_unit]
    unit = np.repeat(np.arange(group_of_unit.size), count)
    cand = np.repeat(first_of_group[group_of_unit], count) + (
        np.arange(unit.size) - np.repeat(np.cumsum(count) - count, count))
    link = group_block[group_of_unit[unit]] * psrc.size + cand_pair[cand]
    if pbw is None:
        pieces = round_to_chunks(unit, link, share[cand], chunks)
    else:
        pieces = round_to_bottleneck(unit, link, share[cand], step=u_step[unit],
                                     bandwidth=pbw[cand_pair[cand]])
        short = np.bincount(unit, weights=pieces, minlength=group_of_unit.size) < 1
    keep = pieces > 0
    unit, cand, pieces = unit[keep], cand[keep], pieces[keep]
    ends = np.cumsum(pieces)
    starts = segments(unit)
    base = np.repeat(ends[starts] - pieces[starts], np.diff(np.r_[starts, unit.size]))
    hi_count = ends - base
    out = np.empty(unit.size, dtype=TRANSFER_DTYPE)
    out["step"] = u_step[unit]
    out["src"] = psrc[cand_pair[cand]]
    out["dst"] = u_v[unit]
    out["shard"] = u_shard[unit]
    out["lo"] = (hi_count - pieces) / chunks
    out["hi"] = hi_count / chunks
    out["op"] = COPY
    return out if pbw is None else (out, np.unique(u_step[short]))
