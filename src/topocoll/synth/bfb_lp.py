"""BFB's load-balancing linear programs (docs/math.md section 2): for every (node, step)
problem, how much of each source group each possible sender carries so that the most loaded
in-link is least loaded relative to its bandwidth (LP (3) of Zhao et al., NSDI 2025; with a
buffer size, LP (13) of appendix D.3, where link latencies count too).

The problems of a step are stacked into block-diagonal LPs of at most :data:`LP_BATCH` share
columns and solved by HiGHS' dual simplex through ``highspy`` (:func:`highs_solve`, also the
solver of :mod:`.bfb_rounding`'s small whole-shard flows), optionally on worker processes.
"""

import numpy as np

from ..errors import UnsupportedError

__all__ = ["link_costs", "solve_free_groups", "highs_solve", "LP_OPTIONS", "LP_BATCH"]

LP_BATCH = 10_000    # free variables per HiGHS call (small LPs solve faster in sum)


def link_costs(topology, size):
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


def solve_free_groups(block, demand, cand_group, cand_pair, cand_block, *, cost, fixed_load,
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
    batch_of_block = np.cumsum(cands_per_block) // LP_BATCH
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

    from ..batch import open_pool

    with open_pool(workers) as pool:
        futures = [pool.submit(func, item) for item in items]
        for i, _ in enumerate(cf.as_completed(futures)):
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
    return highs_solve(np.r_[np.zeros(nv), np.ones(nu)], (start, index, value),
                       np.r_[np.full(num_ub, -np.inf), b_eq], np.r_[b_ub, b_eq])


def highs_solve(cost, columns, row_lower, row_upper, *, col_upper=None, maximize=False):
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
