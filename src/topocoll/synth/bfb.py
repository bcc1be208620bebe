"""BFB (breadth-first broadcast) schedules (docs/math.md section 2; Zhao et al., "Efficient
Direct-Connect Topologies for Collective Communications", NSDI 2025, section 6).

In step t every node v receives, from its in-neighbours, the shards of the nodes at distance t
from it; the shard of u may come from any in-neighbour w at distance t-1 from u. How much of each
shard each w sends is chosen, for every (v, t) independently, to minimise the most loaded in-link
of v relative to its bandwidth: a small linear program.

Sources of one (v, t) problem that can use exactly the same senders are interchangeable, so they
are merged into one group whose demand is their count; sources with a single possible sender need
no decision at all. The remaining problems of a step are stacked into one block-diagonal linear
program (minimising the sum of the per-problem maxima, which are independent) and solved with
HiGHS' dual simplex through ``highspy`` (:mod:`topocoll.highs`; :data:`LP_OPTIONS`), so that
a schedule pays no ``scipy.optimize`` import. Where a solution splits shards, whole shards
replace them in every step where they cost the same: a maximum flow (:func:`_bipartite_flow`)
looks for whole senders within the step's fractional bottleneck.

On a topology with a translation group (:mod:`topocoll.topology.symmetry`) only node 0's
problems are solved: the distances they need, from every origin to node 0 and to its
in-neighbours, come from one breadth-first search towards each of those nodes, never from the
``N x N`` matrix, so the work and memory grow like N times the degree. With ``symmetric=True``
the result stays in that form, a :class:`~topocoll.schedule.symmetric.SymmetricSchedule` of
node 0's receptions (torus:128x128 and hypercube:14 in seconds); otherwise node 0's transfers
are translated to every node.

>>> from topocoll.topology import topology
>>> s = bfb_allgather(topology("ring:8"))
>>> s.num_steps, s.num_transfers
(4, 64)
"""

import os

import numpy as np

from ..collectives import COPY
from ..errors import NotStronglyConnectedError, UnsupportedError
from ..schedule.cost import step_costs
from ..schedule.model import Schedule, TRANSFER_DTYPE
from ..schedule.symmetric import SymmetricSchedule
from ..schedule.transforms import (concatenate, concatenate_symmetric, reverse,
                                   reverse_symmetric)
from ..topology.metrics import distance_matrix, require_strongly_connected
from ..topology.paths import hop_distances
from ..topology.symmetry import translation_group
from ..units import parse_size

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


def _origin_distances(topology, origins, src, dst):
    """Distances ``D[origins[i], column[j]]`` (int64, -1 where unreachable) for the nodes
    ``column`` (sorted) that are ends of the given pairs.

    Only these columns are needed. When they are few (one receiver under translation symmetry:
    node 0 and its in-neighbours) they come from breadth-first searches towards them on the
    transposed graph, O(columns x links), instead of the ``N x N`` matrix; with few origins
    (a broadcast) from searches out of the origins; otherwise from the cached matrix."""
    n = topology.num_nodes
    column = np.unique(np.r_[src, dst]).astype(np.int64)
    if column.size == n and origins.size * 4 >= n:
        return np.asarray(distance_matrix(topology)[origins], dtype=np.int64), column
    if column.size <= origins.size:   # numpy on small graphs, scipy's searches on large ones
        rows = hop_distances(topology, column, transpose=True).T[origins]
    else:
        rows = hop_distances(topology, np.asarray(origins, dtype=np.int64))[:, column]
    out = np.full(rows.shape, -1, dtype=np.int64)
    finite = np.isfinite(rows)
    out[finite] = rows[finite].astype(np.int64)
    return out, column


def _segments(keys):
    """Start index of every run of equal consecutive keys."""
    return np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]]) if keys.size else keys


def _link_costs(topology, size):
    """Per pair: time per shard (``coef``) and fixed time (``const``), both scaled so that the
    largest ``coef`` is 1. Without a size only bandwidth counts (LP (3) of Zhao et al.); with
    a buffer size M the link latency is added (LP (13), appendix D.3)."""
    _, _, pbw, plat = topology.pairs
    if pbw.size == 0:
        return pbw, pbw
    coef = 1.0 / pbw
    if size is None:
        const = np.zeros(pbw.size)
    else:
        coef = coef * (size / topology.num_nodes)
        const = plat.astype(float)
    scale = coef.max()
    return coef / scale, const / scale


def _solve_free_groups(block, demand, cand_group, cand_pair, cand_block, *, cost, fixed_load,
                       progress=None, workers=1):
    """Shares ``y`` for the candidates of groups with several possible senders.

    ``block[g]`` is the (v, t) problem of group g, ``demand[g]`` its number of sources;
    candidate j lets group ``cand_group[j]`` use pair ``cand_pair[j]``; ``cost`` the pairs'
    ``(coef, const)``; ``fixed_load[(block, pair)]`` loads already placed by single-sender groups.
    """
    num_pairs = cost[0].size
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
    jobs = []
    for b in batches:
        sel = np.flatnonzero(batch_of_cand == b)
        keys = np.unique(cand_block[sel] * num_pairs + cand_pair[sel])
        fixed = {k: fixed_load[k] for k in keys.tolist() if k in fixed_load}
        jobs.append((sel, (cand_group[sel], cand_pair[sel], cand_block[sel], demand, cost, fixed)))
    if workers > 1 and len(jobs) >= 4:
        results = _parallel_map(_solve_lp_args, [args for _, args in jobs], workers, progress)
    else:
        results = []
        for i, (_, args) in enumerate(jobs):
            results.append(_solve_lp_args(args))
            if progress:
                progress(i + 1, len(jobs))
    for (sel, _), res in zip(jobs, results):
        y[sel] = res
    return y


def _parallel_map(func, items, workers, progress):
    """``[func(x) for x in items]`` on ``workers`` processes, in order, with progress."""
    import concurrent.futures as cf
    import multiprocessing as mp

    ctx = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else None
    with cf.ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
        futures = [pool.submit(func, item) for item in items]
        for i, fut in enumerate(cf.as_completed(futures)):
            if progress:
                progress(i + 1, len(futures))
        return [f.result() for f in futures]


def _solve_lp_args(args):
    *head, fixed_load = args
    return _solve_lp(*head, fixed_load=fixed_load)


#: HiGHS options of every BFB load-balancing LP: the dual simplex (a vertex, as
#: ``scipy.optimize.linprog(method="highs-ds")`` gave before), tight tolerances so that equal
#: loads compare equal, one thread and a fixed seed so that a schedule never depends on the
#: machine or on what ran before in the process.
LP_OPTIONS = {"solver": "simplex", "simplex_strategy": 1,   # 1: dual
              "presolve": "on", "parallel": "off",
              "primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}
_LP_SEED = 0


def _solve_lp(cg, cp, cb, demand, cost, *, fixed_load):
    """One block-diagonal LP for a batch of (v, t) problems: for each problem minimise U with
    ``coef[p] * load[p] + const[p] <= U`` on its in-links. A link that carries nothing but whose
    latency alone sets U is dropped and the problem solved again (appendix D.3)."""
    coef, const = cost
    num_pairs = coef.size
    nv = cg.size
    groups, g_row = np.unique(cg, return_inverse=True)
    blocks = np.unique(cb)
    row_keys, r_row = np.unique(cb * num_pairs + cp, return_inverse=True)
    row_block = np.searchsorted(blocks, row_keys // num_pairs)
    row_pair = row_keys % num_pairs
    fixed = np.array([fixed_load.get(int(k), 0.0) for k in row_keys])
    b_ub = -(coef[row_pair] * fixed + const[row_pair])
    x = _run_highs(_LpShape(nv=nv, nu=blocks.size, r_row=r_row, g_row=g_row,
                            row_block=row_block), coef[row_pair][r_row], b_ub,
                   demand[groups].astype(float))
    y = x[:nv]
    if np.any(const > 0):
        load = np.bincount(r_row, weights=y, minlength=row_keys.size) + fixed
        bound = x[nv:][row_block]
        idle = (load <= 1e-12) & (const[row_pair] > 0) & \
            (const[row_pair] >= bound - 1e-9 * np.maximum(bound, 1e-300))
        if np.any(idle):
            keep = ~idle[r_row]
            y = np.zeros(nv)
            y[keep] = _solve_lp(cg[keep], cp[keep], cb[keep], demand, cost,
                                fixed_load=fixed_load)
    return y


class _LpShape:
    """Where the nonzeros of one BFB LP sit: ``nv`` share columns (column j in load row
    ``r_row[j]`` and demand row ``g_row[j]``), then ``nu`` bound columns (column b is -1 in
    every load row r with ``row_block[r] == b``)."""

    def __init__(self, *, nv, nu, r_row, g_row, row_block):
        self.nv, self.nu = nv, nu
        self.r_row, self.g_row, self.row_block = r_row, g_row, row_block


def _run_highs(shape, share_coef, b_ub, b_eq):
    """Minimise the sum of the bound columns subject to ``load rows <= b_ub`` and
    ``demand rows == b_eq``, all columns nonnegative; the primal solution.

    The rows are the load rows then the demand rows, the matrix column-wise with its row
    indices sorted, as ``scipy.optimize.linprog`` handed it to HiGHS before."""
    nv, nu = shape.nv, shape.nu
    num_ub = b_ub.size
    # share column j: (load row, coef), (demand row, 1), already in row order
    index = np.empty(2 * nv + num_ub, dtype=np.int32)
    value = np.empty(2 * nv + num_ub)
    index[0:2 * nv:2] = shape.r_row
    index[1:2 * nv:2] = num_ub + shape.g_row
    value[0:2 * nv:2] = share_coef
    value[1:2 * nv:2] = 1.0
    index[2 * nv:] = np.argsort(shape.row_block, kind="stable")   # each bound column's rows
    value[2 * nv:] = -1.0
    start = np.r_[np.arange(0, 2 * nv + 1, 2),
                  2 * nv + np.cumsum(np.bincount(shape.row_block, minlength=nu))]
    return _highs_solve(np.r_[np.zeros(nv), np.ones(nu)], (start, index, value),
                        np.r_[np.full(num_ub, -np.inf), b_eq], np.r_[b_ub, b_eq])


def _highs_solve(cost, columns, row_lower, row_upper, *, col_upper=None, maximize=False):
    """Optimise ``cost @ x`` s.t. ``row_lower <= A @ x <= row_upper``, ``0 <= x <= col_upper``
    with HiGHS' dual simplex (:data:`LP_OPTIONS`): an optimal vertex, or an error.

    ``columns`` is ``A`` column-wise: (start, row index, value) arrays."""
    import highspy

    from ..highs import column_model, solver

    lp = column_model(cost, columns, row_lower, row_upper, col_upper=col_upper,
                      maximize=maximize)
    h = solver(seed=_LP_SEED, **LP_OPTIONS)
    h.passModel(lp)
    h.run()
    status = h.getModelStatus()
    if status != highspy.HighsModelStatus.kOptimal:   # always feasible: a solver failure
        raise UnsupportedError(f"BFB: HiGHS could not solve a load-balancing or whole-shard "
                               f"problem ({h.modelStatusToString(status)})")
    return np.asarray(h.getSolution().col_value, dtype=np.float64)


def _bfb_broadcasts(topology, origins, *, receivers=None, progress=None, workers=1, size=None):
    """Solve the BFB problems in which shard s spreads breadth-first from node ``origins[s]``
    to every node (or only those of ``receivers``). Returns ``pieces(chunks=None, *,
    bounded=False)`` (:func:`_piece_maker`), which turns the solution into transfers ordered by
    step, receiver and shard.

    ``progress(done, total)`` is called after each batch of load-balancing problems."""
    n = topology.num_nodes
    psrc, pdst, pbw, _ = topology.pairs
    into = np.arange(pdst.size) if receivers is None else np.flatnonzero(np.isin(pdst, receivers))
    dist_o, column = _origin_distances(topology, origins, psrc[into], pdst[into])
    if np.any(dist_o < 0):
        s, v = np.argwhere(dist_o < 0)[0]
        raise NotStronglyConnectedError(
            f"BFB needs every node reachable, but in {topology.name} node {column[v]} cannot be "
            f"reached from node {origins[s]}", pair=(int(origins[s]), int(column[v])))
    cost = _link_costs(topology, size)
    # position of each pair among the in-pairs of its destination (for sender-set masks)
    by_dst = np.lexsort((psrc, pdst))
    inpos = np.empty(pdst.size, dtype=np.int64)
    starts_dst = _segments(pdst[by_dst])
    inpos[by_dst] = np.arange(pdst.size) - np.repeat(starts_dst, np.diff(np.r_[starts_dst,
                                                                               pdst.size]))
    ends = np.searchsorted(column, np.r_[psrc[into], pdst[into]])
    shard, pair, step = _candidates(dist_o, ends[:into.size], ends[into.size:])
    pair = into[pair]
    v = pdst[pair]
    order = np.lexsort((inpos[pair], shard, v, step))
    shard, pair, step, v = shard[order], pair[order], step[order], v[order]
    # a unit is one shard arriving at one node: (step, v, shard)
    unit_key_change = np.r_[True, (step[1:] != step[:-1]) | (v[1:] != v[:-1]) |
                            (shard[1:] != shard[:-1])]
    unit_start = np.flatnonzero(unit_key_change)
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
    fixed_keys = cand_block[single] * psrc.size + cand_pair[single]
    fk, fk_inv = np.unique(fixed_keys, return_inverse=True)
    fixed_sum = np.bincount(fk_inv, weights=demand[cand_group[single]], minlength=fk.size)
    fixed_load = dict(zip(fk.tolist(), fixed_sum.tolist()))
    free = ~single
    y[free] = _solve_free_groups(group_block, demand, cand_group[free], cand_pair[free],
                                 cand_block[free], cost=cost, fixed_load=fixed_load,
                                 progress=progress, workers=workers)
    share = np.clip(y, 0.0, None) / demand[cand_group]
    share[share < _DROP] = 0.0
    share = share / np.bincount(cand_group, weights=share, minlength=demand.size)[cand_group]
    units = {"psrc": psrc, "u_step": u_step, "u_v": u_v, "u_shard": shard[unit_start]}
    return _piece_maker(share, demand, cand_group, cand_pair, group_of_unit,
                        group_block=group_block, pbw=pbw, units=units)


def _piece_maker(share, demand, cand_group, cand_pair, group_of_unit, *, group_block, pbw,
                 units):
    """``pieces(chunks=None, *, bounded=False)`` of :func:`_bfb_broadcasts`'s solution."""

    def pieces(chunks=None, *, bounded=False):
        """The solution as transfers: fractional, or in whole ``1/chunks`` of a shard; with
        ``bounded``, whole shards within each step's fractional bottleneck and the steps
        where they do not fit (see :func:`_chunked_intervals`)."""
        if bounded:
            return _chunked_intervals(share, cand_group, cand_pair, group_of_unit, group_block,
                                      chunks=1, pbw=pbw, **units)
        if chunks is not None:
            return _chunked_intervals(share, cand_group, cand_pair, group_of_unit, group_block,
                                      chunks=chunks, **units)
        return _intervals(share, demand, cand_group, cand_pair, group_of_unit, **units)
    return pieces


def _intervals(share, demand, cand_group, cand_pair, group_of_unit, *, psrc, u_step, u_v,
               u_shard):
    """Turn per-group shares into byte ranges and expand them to every unit of the group."""
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
    return out  # units are in (step, receiver, shard) order already


def _round_to_chunks(unit, link, share, chunks):
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
    flow = _bipartite_flow(unit_node, short.size + link_node,
                           np.r_[deficit[short], np.maximum(room[busy], 0)], method="dinic")
    if flow.sum() != deficit.sum():  # cannot happen for a feasible fractional solution
        raise UnsupportedError("BFB: rounding to chunks failed")
    count[open_] += flow
    return count


def _round_to_bottleneck(unit, link, share, *, step, bandwidth):
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
    count[open_] += _bipartite_flow(unit_node, short.size + link_node,
                                    np.r_[deficit[short], np.maximum(room[busy], 0)])
    return count


#: Up to this many edges :func:`_bipartite_flow` asks HiGHS (loaded already for the LPs) by
#: default; above it scipy's maximum flow, far quicker on large networks (mesh:16x16: 88k
#: edges in 0.03 s against 1 s), whose import (0.15 s) no longer matters there.
FLOW_LP_EDGES = 5_000


def _bipartite_flow(left, right, capacity, *, method="auto"):
    """A maximum flow from a source through unit-capacity edges ``left[e] -> right[e]`` to a
    sink, node i passing at most ``capacity[i]`` (the left nodes numbered first, from 0, then
    the right ones, every left node with an edge): 0 or 1 per edge.

    ``method`` "lp" solves it as a linear program with HiGHS' dual simplex (its matrix, the
    incidence matrix of a bipartite graph, is totally unimodular, so the optimal vertex is
    integral); "dinic" with scipy's :func:`~scipy.sparse.csgraph.maximum_flow`; "auto" the
    first up to :data:`FLOW_LP_EDGES` edges. Every maximum flow has the same value; which
    one comes back depends on the method.

    >>> left, right = np.array([0, 0, 1]), np.array([2, 3, 2])
    >>> [_bipartite_flow(left, right, np.ones(4, int), method=m).tolist() for m in ("lp", "dinic")]
    [[0, 1, 1], [0, 1, 1]]
    """
    if method == "dinic" or (method == "auto" and left.size > FLOW_LP_EDGES):
        return _dinic_flow(left, right, capacity)
    edges = left.size
    index = np.empty(2 * edges, dtype=np.int32)
    index[0::2], index[1::2] = left, right
    x = _highs_solve(np.ones(edges), (np.arange(0, 2 * edges + 1, 2), index, np.ones(2 * edges)),
                     np.zeros(capacity.size), capacity.astype(float),
                     col_upper=np.ones(edges), maximize=True)
    flow = np.rint(x).astype(np.int64)
    if np.abs(x - flow).max(initial=0.0) > 1e-6:   # a vertex of a TU system is integral
        raise UnsupportedError("BFB: the whole-shard flow came back fractional")
    return flow


def _dinic_flow(left, right, capacity):
    """:func:`_bipartite_flow` by scipy's maximum flow: source 0, the nodes from 1, sink last."""
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


def _chunked_intervals(share, cand_group, cand_pair, group_of_unit, group_block, *, psrc,
                       u_step, u_v, u_shard, chunks, pbw=None):
    """Like :func:`_intervals`, but every piece is a whole number of ``1/chunks`` of a shard.

    With ``pbw`` (the pairs' bandwidths; ``chunks`` 1): whole shards, no link loaded beyond
    its step's fractional bottleneck (:func:`_round_to_bottleneck`); returns the transfers and
    the steps where some shard found no sender within it (those transfers are incomplete)."""
    per_group = np.bincount(cand_group, minlength=group_block.size)
    first_of_group = np.r_[0, np.cumsum(per_group)[:-1]]
    count = per_group[group_of_unit]
    unit = np.repeat(np.arange(group_of_unit.size), count)
    cand = np.repeat(first_of_group[group_of_unit], count) + (
        np.arange(unit.size) - np.repeat(np.cumsum(count) - count, count))
    link = group_block[group_of_unit[unit]] * psrc.size + cand_pair[cand]
    if pbw is None:
        pieces = _round_to_chunks(unit, link, share[cand], chunks)
    else:
        pieces = _round_to_bottleneck(unit, link, share[cand], step=u_step[unit],
                                      bandwidth=pbw[cand_pair[cand]])
        short = np.bincount(unit, weights=pieces, minlength=group_of_unit.size) < 1
    keep = pieces > 0
    unit, cand, pieces = unit[keep], cand[keep], pieces[keep]
    ends = np.cumsum(pieces)
    starts = _segments(unit)
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


def _workers(workers):
    if workers is None:
        return max(1, min(os.cpu_count() or 1, 8))
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise UnsupportedError(f"workers must be a positive integer, got {workers!r}")
    return workers


def _translate(t0, group, n):
    """Map node 0's transfers to every node v by the translation x -> x + v."""
    t0 = t0[np.argsort(t0["step"], kind="stable")]
    v = np.tile(np.arange(n, dtype=np.int64), t0.size)
    out = np.empty(t0.size * n, dtype=TRANSFER_DTYPE)
    for name in ("step", "lo", "hi", "op"):
        out[name] = np.repeat(t0[name], n)
    out["dst"] = v
    out["src"] = group.add(np.repeat(t0["src"].astype(np.int64), n), v)
    out["shard"] = group.add(np.repeat(t0["shard"], n), v)
    return out


def _check_options(size, chunks):
    if size is not None:
        size = parse_size(size, what="size")
    if chunks is not None and (isinstance(chunks, bool) or not isinstance(chunks, (int, np.integer))
                               or chunks < 1):
        raise UnsupportedError(f"chunks must be a positive integer, got {chunks!r}")
    return size, (None if chunks is None else int(chunks))


def bfb_allgather(topology, *, progress=None, symmetry=True, workers=None, size=None,
                  chunks=None, symmetric=False):
    """BFB allgather on a strongly connected topology; ``steps`` equals the diameter.

    Parameters
    ----------
    topology : Topology
    symmetry : bool
        Exploit translation symmetry (tori, hypercubes, circulants, Hamming graphs, ...: see
        :mod:`topocoll.topology.symmetry`): solve the problems of node 0 and map them to every
        node. Otherwise problems are solved in batches on ``workers`` processes.
    workers : int, optional
        Processes for the load-balancing problems (default: every core).
    size : float or str, optional
        Buffer size M. When given, each link's latency joins its load in the per-(node, step)
        problems (the heterogeneous LP of Zhao et al.), and links whose latency alone would set the
        step time are left unused.
    chunks : int, optional
        Cut every shard into this many equal chunks: every transfer moves whole chunks. The
        bandwidth cost against the fractional optimum is in ``meta["chunk_loss"]`` (relative),
        with its bound ``meta["chunk_loss_bound"]``.
    progress : callable, optional
        ``progress(done, total)`` over batches of problems.
    symmetric : bool
        Return a :class:`~topocoll.schedule.symmetric.SymmetricSchedule`: node 0's receptions
        only (the orbit representatives), in O(N) time and memory, the explicit schedule never
        built (it expands to exactly the explicit one). Needs ``symmetry`` and a translation
        group; ``generate(..., form="symmetric")`` asks for it.

    >>> from topocoll.topology import topology
    >>> s = bfb_allgather(topology("torus:128x128"), symmetric=True)
    >>> s.form, s.num_steps, s.num_transfers
    ('symmetric', 128, 271564800)
    """
    require_strongly_connected(topology, "BFB allgather")
    size, chunks = _check_options(size, chunks)
    group = _group(topology, symmetry, _check_symmetric(symmetric))
    local, meta = _allgather_transfers(topology, group, progress=progress, workers=workers,
                                       size=size, chunks=chunks)
    if symmetric:
        return SymmetricSchedule(topology, "allgather", group, local, algorithm="bfb", meta=meta)
    transfers = local if group is None else _translate(local, group, topology.num_nodes)
    return Schedule(topology, "allgather", transfers, algorithm="bfb", meta=meta)


def _check_symmetric(symmetric):
    if not isinstance(symmetric, (bool, np.bool_)):
        raise UnsupportedError(f"BFB: symmetric must be True or False, got {symmetric!r}")
    return bool(symmetric)


def _group(topology, symmetry, symmetric):
    """The translation group BFB uses (None: solve every node's problems)."""
    if symmetric and not symmetry:
        raise UnsupportedError("BFB: the symmetric form needs symmetry (symmetry=False given)")
    group = translation_group(topology) if symmetry else None
    if symmetric and group is None:
        raise UnsupportedError(f"BFB: {topology.name} has no translation group, so no "
                               "symmetric form (tori, hypercubes, circulants, Hamming graphs "
                               "have one)")
    return group


def _allgather_transfers(topology, group, *, progress, workers, size, chunks):
    """BFB allgather transfers and meta: every node's, or with a translation ``group`` only the
    orbit representatives (node 0's receptions, in step order), which cost O(N) to find."""
    n = topology.num_nodes
    options = {"size": size, "progress": progress}
    if group is None:
        options.update(workers=_workers(workers))
    else:
        options.update(receivers=np.array([0]))
    pieces = _bfb_broadcasts(topology, np.arange(n), **options)
    local = pieces(None)
    beta = _betas(topology, local)
    meta = {"symmetry": list(group.dims) if group is not None else None}
    if chunks is not None:
        rounded = pieces(chunks)
        fractional, whole_chunks = beta.sum(), _betas(topology, rounded).sum()
        _, _, pbw, _ = topology.pairs
        meta.update(chunks=chunks, chunk_loss=float(whole_chunks / fractional - 1),
                    chunk_loss_bound=float(beta.size / (n * chunks * pbw.min()) / fractional))
        local = rounded
    elif _has_split_shards(local):
        # some shards are split: in every step where whole shards do as well (each link's
        # optimal load is a whole number of shards, as in most steps on tori and hypercubes),
        # take them: the same cost in fewer transfers
        whole, short = pieces(bounded=True)
        steps = np.unique(local["step"])
        whole_steps, whole_beta = _step_betas(topology, whole)
        fits = np.isclose(whole_beta, beta[np.searchsorted(steps, whole_steps)], rtol=1e-12,
                          atol=0)
        same = np.setdiff1d(whole_steps[fits], short)
        local = np.concatenate([whole[np.isin(whole["step"], same)],
                                local[~np.isin(local["step"], same)]])
        local = local[np.argsort(local["step"], kind="stable")]
    if size is not None:
        meta["size"] = size
    return local, meta


def _has_split_shards(t):
    """True if some (step, receiver, shard) has several pieces (rows are grouped by those)."""
    same = (t["step"][1:] == t["step"][:-1]) & (t["dst"][1:] == t["dst"][:-1]) & \
        (t["shard"][1:] == t["shard"][:-1])
    return bool(same.any())


def _betas(topology, transfers):
    """Per-step bandwidth time of some transfers (all of a step's busiest link's, when the
    transfers are one node's under symmetry)."""
    return _step_betas(topology, transfers)[1]


def _step_betas(topology, transfers):
    """(steps, bandwidth times) of the non-empty steps (see :func:`_betas`)."""
    steps, _, beta = step_costs(Schedule(topology, "allgather", transfers))
    return steps, beta


def bfb_reduce_scatter(topology, **options):
    """BFB reduce-scatter: the BFB allgather of the transposed topology, reversed in time.

    Takes the options of :func:`bfb_allgather`."""
    require_strongly_connected(topology, "BFB reduce-scatter")
    ag = bfb_allgather(topology.transpose(), **options)
    return _reverse(ag, "reduce_scatter", topology)


def _reverse(schedule, collective, topology):
    """Reverse in time, keeping the form (a symmetric schedule's representatives are reversed
    and translated back to ``dst == 0``)."""
    if isinstance(schedule, SymmetricSchedule):
        return reverse_symmetric(schedule, collective, topology, algorithm="bfb")
    return reverse(schedule, collective, topology, algorithm="bfb")


def bfb_allreduce(topology, **options):
    """BFB allreduce: BFB reduce-scatter, then BFB allgather (options of
    :func:`bfb_allgather`)."""
    rs = bfb_reduce_scatter(topology, **options)
    if topology.is_bidirectional() and _same_links(topology):
        ag = _reverse(rs, "allgather", topology)
    else:
        ag = bfb_allgather(topology, **options)
    if isinstance(rs, SymmetricSchedule):
        return concatenate_symmetric(rs, ag, "allreduce", algorithm="bfb")
    return concatenate(rs, ag, "allreduce", algorithm="bfb")


def _same_links(topology):
    """True if u -> v and v -> u always have the same bandwidth, so G^T = G as a network."""
    psrc, pdst, pbw, plat = topology.pairs
    back = topology.pair_index(pdst, psrc)
    return bool(np.all(back >= 0) and np.allclose(pbw[back], pbw, rtol=0, atol=0)
                and np.array_equal(plat[back], plat))


def bfb_broadcast(topology, root, *, progress=None, size=None, chunks=None):
    """BFB broadcast from ``root``: the root's buffer spreads breadth-first, balanced per step."""
    size, chunks = _check_options(size, chunks)
    transfers = _bfb_broadcasts(topology, np.array([root]), progress=progress, size=size)(chunks)
    return Schedule(topology, "broadcast", transfers, root=root, algorithm="bfb")


def bfb_reduce(topology, root, **options):
    """BFB reduce to ``root``: the BFB broadcast on the transposed topology, reversed."""
    bc = bfb_broadcast(topology.transpose(), root, **options)
    return reverse(bc, "reduce", topology, algorithm="bfb")


_MAKERS = {"allgather": bfb_allgather, "reduce_scatter": bfb_reduce_scatter,
           "allreduce": bfb_allreduce}


def bfb_schedule(topology, collective, *, root=None, progress=None, symmetry=True, workers=None,
                 size=None, chunks=None, symmetric=False):
    """BFB schedule for ``collective`` (one of :data:`BFB_COLLECTIVES`); options as in
    :func:`bfb_allgather` (``symmetric=True`` for allgather, reduce-scatter and allreduce
    only: the hook of ``generate(..., form="symmetric")``)."""
    name = collective if isinstance(collective, str) else collective.name
    options = {"progress": progress, "symmetry": symmetry, "workers": workers, "size": size,
               "chunks": chunks, "symmetric": _check_symmetric(symmetric)}
    if name in _MAKERS:
        return _MAKERS[name](topology, **options)
    if symmetric:
        raise UnsupportedError(f"BFB {name} has one root, so no symmetric form")
    rooted = {"progress": progress, "size": size, "chunks": chunks}  # one root: no symmetry
    if name == "broadcast":
        return bfb_broadcast(topology, root, **rooted)
    if name == "reduce":
        return bfb_reduce(topology, root, **rooted)
    raise UnsupportedError(f"algorithm bfb makes {', '.join(BFB_COLLECTIVES)}; "
                           f"not {name}")
