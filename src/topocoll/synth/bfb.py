"""BFB (breadth-first broadcast) schedules (MATH.md section 2, seed 002 section 6).

In step t every node v receives, from its in-neighbours, the shards of the nodes at distance t
from it; the shard of u may come from any in-neighbour w at distance t-1 from u. How much of each
shard each w sends is chosen, for every (v, t) independently, to minimise the most loaded in-link
of v relative to its bandwidth: a small linear program.

Sources of one (v, t) problem that can use exactly the same senders are interchangeable, so they
are merged into one group whose demand is their count; sources with a single possible sender need
no decision at all. The remaining problems of a step are stacked into one block-diagonal linear
program (minimising the sum of the per-problem maxima, which are independent) and solved with
HiGHS.

>>> from topocoll.topology import topology
>>> s = bfb_allgather(topology("ring:8"))
>>> s.num_steps, s.num_transfers
(4, 64)
"""

import numpy as np
import scipy.sparse as sp

from ..collectives import COPY
from ..errors import NotStronglyConnectedError, UnsupportedError
from ..schedule.model import Schedule, TRANSFER_DTYPE
from ..schedule.transforms import concatenate, reverse
from ..topology.metrics import distance_matrix, require_strongly_connected

__all__ = ["bfb_allgather", "bfb_reduce_scatter", "bfb_allreduce", "bfb_broadcast", "bfb_reduce",
           "bfb_schedule", "BFB_COLLECTIVES"]

BFB_COLLECTIVES = ("allgather", "reduce_scatter", "allreduce", "broadcast", "reduce")

_LP_BATCH = 10_000    # free variables per HiGHS call (small LPs solve faster in sum)
_CANDIDATE_CELLS = 1 << 22
_DROP = 1e-12         # relative share below which a sender is not used


def _candidates(dist_o, psrc, pdst):
    """All (shard, pair) with dist(origin, dst) = dist(origin, src) + 1, i.e. the pair may carry
    the shard in step dist(origin, dst). Returns (shard, pair, step) arrays."""
    num_shards = dist_o.shape[0]
    chunk = max(1, _CANDIDATE_CELLS // max(num_shards, 1))
    shards, pairs, steps = [], [], []
    for start in range(0, psrc.size, chunk):
        ps = slice(start, start + chunk)
        dv = dist_o[:, pdst[ps]]
        dw = dist_o[:, psrc[ps]]
        s, p = np.nonzero((dv == dw + 1) & (dw >= 0))
        shards.append(s)
        pairs.append(p + start)
        steps.append(dv[s, p])
    return (np.concatenate(shards).astype(np.int64), np.concatenate(pairs).astype(np.int64),
            np.concatenate(steps).astype(np.int64))


def _segments(keys):
    """Start index of every run of equal consecutive keys."""
    return np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]]) if keys.size else keys


def _solve_free_groups(block, demand, cand_group, cand_pair, cand_block, cap, fixed_load,
                       progress=None):
    """Shares ``y`` for the candidates of groups with several possible senders.

    ``block[g]`` is the (v, t) problem of group g, ``demand[g]`` its number of sources;
    candidate j lets group ``cand_group[j]`` use pair ``cand_pair[j]``; ``cap`` the pairs'
    relative capacities; ``fixed_load[(block, pair)]`` loads already placed by single-sender groups.
    """
    y = np.zeros(cand_group.size)
    if cand_group.size == 0:
        return y
    order_blocks = np.unique(block)
    # batch whole blocks so that each LP stays moderate
    cands_per_block = np.bincount(np.searchsorted(order_blocks, cand_block),
                                  minlength=order_blocks.size)
    batch_of_block = np.cumsum(cands_per_block) // _LP_BATCH
    batch_of_cand = batch_of_block[np.searchsorted(order_blocks, cand_block)]
    batches = np.unique(batch_of_cand)
    for i, b in enumerate(batches):
        sel = np.flatnonzero(batch_of_cand == b)
        y[sel] = _solve_lp(cand_group[sel], cand_pair[sel], cand_block[sel], demand, cap,
                           fixed_load)
        if progress:
            progress(i + 1, batches.size)
    return y


def _solve_lp(cg, cp, cb, demand, cap, fixed_load):
    from scipy.optimize import linprog  # heavy import, only needed when a problem has choices

    nv = cg.size
    groups, g_row = np.unique(cg, return_inverse=True)
    blocks, b_col = np.unique(cb, return_inverse=True)
    row_keys, r_row = np.unique(cb * cap.size + cp, return_inverse=True)
    nu = blocks.size
    cols = np.arange(nv)
    a_eq = sp.csr_matrix((np.ones(nv), (g_row, cols)), shape=(groups.size, nv + nu))
    b_eq = demand[groups].astype(float)
    row_block = np.searchsorted(blocks, row_keys // cap.size)
    row_pair = row_keys % cap.size
    a_ub = sp.csr_matrix(
        (np.r_[np.ones(nv), -cap[row_pair]],
         (np.r_[r_row, np.arange(row_keys.size)], np.r_[cols, nv + row_block])),
        shape=(row_keys.size, nv + nu))
    b_ub = -np.array([fixed_load.get(int(k), 0.0) for k in row_keys])
    cost = np.r_[np.zeros(nv), np.ones(nu)]
    res = linprog(cost, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=b_eq, bounds=(0, None),
                  method="highs-ds", options={"primal_feasibility_tolerance": 1e-10,
                                              "dual_feasibility_tolerance": 1e-10})
    if res.status != 0:  # the problems are always feasible; anything else is a solver failure
        raise UnsupportedError(f"BFB: HiGHS could not solve a load-balancing problem "
                               f"({res.message})")
    return res.x[:nv]


def _bfb_broadcasts(topology, origins, *, progress=None):
    """Transfers in which shard s spreads breadth-first from node ``origins[s]`` to every node.

    ``progress(done, total)`` is called after each batch of load-balancing problems."""
    n = topology.num_nodes
    dist = distance_matrix(topology)
    dist_o = np.asarray(dist[origins], dtype=np.int64)
    if np.any(dist_o < 0):
        s, v = np.argwhere(dist_o < 0)[0]
        raise NotStronglyConnectedError(
            f"BFB needs every node reachable, but in {topology.name} node {v} cannot be reached "
            f"from node {origins[s]}", pair=(int(origins[s]), int(v)))
    psrc, pdst, pbw, _ = topology.pairs
    cap = pbw / pbw.max() if pbw.size else pbw
    # position of each pair among the in-pairs of its destination (for sender-set masks)
    by_dst = np.lexsort((psrc, pdst))
    inpos = np.empty(pdst.size, dtype=np.int64)
    starts_dst = _segments(pdst[by_dst])
    inpos[by_dst] = np.arange(pdst.size) - np.repeat(starts_dst, np.diff(np.r_[starts_dst,
                                                                               pdst.size]))
    shard, pair, step = _candidates(dist_o, psrc, pdst)
    v = pdst[pair]
    order = np.lexsort((inpos[pair], shard, v, step))
    shard, pair, step, v = shard[order], pair[order], step[order], v[order]
    # a unit is one shard arriving at one node: (step, v, shard)
    unit_key_change = np.r_[True, (step[1:] != step[:-1]) | (v[1:] != v[:-1]) |
                            (shard[1:] != shard[:-1])]
    unit_start = np.flatnonzero(unit_key_change)
    unit_of = np.cumsum(unit_key_change) - 1
    num_units = unit_start.size
    senders = np.diff(np.r_[unit_start, shard.size])
    # group interchangeable units: same (step, v) and the same set of possible senders
    if int(inpos.max(initial=0)) < 63:
        bits = np.left_shift(np.int64(1), inpos[pair])
        mask = np.add.reduceat(bits, unit_start) if num_units else bits
    else:
        mask = np.arange(num_units, dtype=np.int64)  # no merging above 63 in-neighbours
    u_step, u_v = step[unit_start], v[unit_start]
    g_order = np.lexsort((mask, u_v, u_step))
    g_change = np.r_[True, (u_step[g_order][1:] != u_step[g_order][:-1]) |
                     (u_v[g_order][1:] != u_v[g_order][:-1]) |
                     (mask[g_order][1:] != mask[g_order][:-1])]
    group_of_unit = np.empty(num_units, dtype=np.int64)
    group_of_unit[g_order] = np.cumsum(g_change) - 1
    rep_unit = g_order[g_change]
    demand = np.bincount(group_of_unit).astype(float)
    block_key = u_step * n + u_v
    group_block = block_key[rep_unit]
    # candidates of each group, taken from its representative unit
    rep_first = unit_start[rep_unit]
    rep_len = senders[rep_unit]
    cand_group = np.repeat(np.arange(rep_unit.size), rep_len)
    cand_index = np.repeat(rep_first, rep_len) + (np.arange(cand_group.size) -
                                                 np.repeat(np.cumsum(rep_len) - rep_len, rep_len))
    cand_pair = pair[cand_index]
    cand_block = group_block[cand_group]
    single = rep_len[cand_group] == 1
    y = np.where(single, demand[cand_group], 0.0)
    fixed_keys = cand_block[single] * cap.size + cand_pair[single]
    fk, fk_inv = np.unique(fixed_keys, return_inverse=True)
    fixed_sum = np.bincount(fk_inv, weights=demand[cand_group[single]], minlength=fk.size)
    fixed_load = dict(zip(fk.tolist(), fixed_sum.tolist()))
    free = ~single
    y[free] = _solve_free_groups(group_block, demand, cand_group[free], cand_pair[free],
                                 cand_block[free], cap, fixed_load, progress)
    return _intervals(y, demand, cand_group, cand_pair, group_of_unit, psrc, u_step, u_v,
                      shard[unit_start])


def _intervals(y, demand, cand_group, cand_pair, group_of_unit, psrc, u_step, u_v, u_shard):
    """Turn per-group shares into byte ranges and expand them to every unit of the group."""
    share = np.clip(y, 0.0, None) / demand[cand_group]
    share[share < _DROP] = 0.0
    total = np.bincount(cand_group, weights=share, minlength=demand.size)
    share = share / total[cand_group]
    keep = share > 0
    cand_group, cand_pair, share = cand_group[keep], cand_pair[keep], share[keep]
    # running sums within each group, position by position, so lo of a piece is exactly hi of
    # the previous one and the last hi is exactly 1
    starts = _segments(cand_group)
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
    order = np.lexsort((out["lo"], out["shard"], out["dst"], out["src"], out["step"]))
    return out[order]


def bfb_allgather(topology, *, progress=None):
    """BFB allgather on a strongly connected topology; ``steps`` equals the diameter."""
    require_strongly_connected(topology, "BFB allgather")
    n = topology.num_nodes
    transfers = _bfb_broadcasts(topology, np.arange(n), progress=progress)
    return Schedule(topology, "allgather", transfers, algorithm="bfb")


def bfb_reduce_scatter(topology, *, progress=None):
    """BFB reduce-scatter: the BFB allgather of the transposed topology, reversed in time."""
    require_strongly_connected(topology, "BFB reduce-scatter")
    ag = bfb_allgather(topology.transpose(), progress=progress)
    return reverse(ag, "reduce_scatter", topology, algorithm="bfb")


def bfb_allreduce(topology, *, progress=None):
    """BFB allreduce: BFB reduce-scatter, then BFB allgather."""
    rs = bfb_reduce_scatter(topology, progress=progress)
    if topology.is_bidirectional() and _same_links(topology):
        ag = reverse(rs, "allgather", topology, algorithm="bfb")
    else:
        ag = bfb_allgather(topology, progress=progress)
    return concatenate(rs, ag, "allreduce", algorithm="bfb")


def _same_links(topology):
    """True if u -> v and v -> u always have the same bandwidth, so G^T = G as a network."""
    psrc, pdst, pbw, plat = topology.pairs
    back = topology.pair_index(pdst, psrc)
    return bool(np.all(back >= 0) and np.allclose(pbw[back], pbw, rtol=0, atol=0)
                and np.array_equal(plat[back], plat))


def bfb_broadcast(topology, root, *, progress=None):
    """BFB broadcast from ``root``: the root's buffer spreads breadth-first, balanced per step."""
    transfers = _bfb_broadcasts(topology, np.array([root]), progress=progress)
    return Schedule(topology, "broadcast", transfers, root=root, algorithm="bfb")


def bfb_reduce(topology, root, *, progress=None):
    """BFB reduce to ``root``: the BFB broadcast on the transposed topology, reversed."""
    bc = bfb_broadcast(topology.transpose(), root, progress=progress)
    return reverse(bc, "reduce", topology, algorithm="bfb")


def bfb_schedule(topology, collective, *, root=None, progress=None):
    """BFB schedule for ``collective`` (one of :data:`BFB_COLLECTIVES`)."""
    name = collective if isinstance(collective, str) else collective.name
    if name == "allgather":
        return bfb_allgather(topology, progress=progress)
    if name == "reduce_scatter":
        return bfb_reduce_scatter(topology, progress=progress)
    if name == "allreduce":
        return bfb_allreduce(topology, progress=progress)
    if name == "broadcast":
        return bfb_broadcast(topology, root, progress=progress)
    if name == "reduce":
        return bfb_reduce(topology, root, progress=progress)
    raise UnsupportedError(f"algorithm bfb makes {', '.join(BFB_COLLECTIVES)}; "
                           f"not {name}")
