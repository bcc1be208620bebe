"""The link-based multicommodity-flow LP for uniform all-to-all, grouped by source.

Commodity ``s`` is everything node ``s`` sends: the same rate to each of the other N-1
nodes. It is solved in its min-congestion form: every pair sends one unit, variables
``f[s, e] >= 0`` (flow of commodity s on pair-link e) and the congestion ``z``:

    minimise z
    sum_s f[s, e] <= z c_e                                for every link e
    in_s(v) - out_s(v) = 1                                for every s and every v != s

and ``lambda = 1 / z`` (the conservation row at the source is implied by the others and left
out).

Column generation keeps the LP small: the first round allows commodity s only on the links of
its hop-shortest-path DAG (``dist(s, v) = dist(s, u) + 1`` for link u -> v), which on expanders
is about half of them. Its optimum is feasible for the whole LP, and the dual lengths certify
how far it is from the whole LP's optimum (:func:`~topocoll.throughput.dual.certificate`).
When the gap exceeds the tolerance, the whole LP is solved (or, with ``max_rounds > 1``, the
columns of negative reduced cost join and the restricted LP is solved again); the result is
optimal when the certificate closes. That is ``N |E| + 1`` columns and ``N (N-1) + |E|`` rows instead of ``N^2 |E|`` columns
for pairwise commodities. The equivalent form "maximise lambda with demand lambda" puts lambda
into all ``N (N-1)`` conservation rows, a dense column that slows the interior point about
1.6x; here ``z`` touches only the ``|E|`` capacity rows. Capacities are scaled to at most 1 for
the solver and scaled back.

>>> from topocoll.topology import topology
>>> r = link_throughput(topology("ring:6", bandwidth=1.0))
>>> round(r.lam, 6), r.status_name, round(r.gap, 6)    # 8/(N^2 - 0) for even N: 8/36
(0.222222, 'SUCCESS', 0.0)
"""

import time

import numpy as np
import scipy.sparse as sp

from ..limits import require_memory
from ..results import Status
from ..topology.metrics import distance_matrix
from .dual import certificate
from .frontdoor import (SolveLog, bounds_or_disconnected, deadline_after, disconnected_result,
                        failed_result, out_of_time, require_alltoall_topology, result_fields,
                        time_left)
from .lp import solve_lp
from .result import AlltoallResult

__all__ = ["link_throughput", "link_lp", "link_utilization", "disconnected_result",
           "shortest_path_columns", "RESTRICT_COLUMNS", "require_alltoall_topology"]


#: ``restrict="auto"`` starts from the shortest-path DAGs when the whole LP has this many
#: columns (N x pairs) or more. Measured: 64-node 8-regular (32k columns) 1.2 s restricted
#: against 2.2 s whole; 64-node 4-regular (16k) needs the whole LP, 1.3 s, plus 0.3-0.6 s for
#: a restricted round that does not close the gap.
RESTRICT_COLUMNS = 20_000


def shortest_path_columns(topology):
    """``allowed[s, e]``: link e = u -> v is on a hop-shortest path from s
    (``dist(s, v) = dist(s, u) + 1``)."""
    psrc, pdst, _, _ = topology.pairs
    hops = distance_matrix(topology)
    return hops[:, pdst] == hops[:, psrc] + 1


def link_lp(topology, allowed=None):
    """The LP as ``(cost, matrix, row_lower, row_upper, col_upper, scale, columns)``
    (capacities divided by ``scale``); one column per ``(s, e)`` of ``allowed`` (an N x E bool
    mask, default all) in the order of ``columns = flatnonzero(allowed)`` (``s * E + e``), then
    ``z``; rows ``e`` then ``(s, v != s)``."""
    psrc, pdst, cap, _ = topology.pairs
    n, num_e = topology.num_nodes, psrc.size
    scale = float(cap.max())
    if allowed is None:
        flat = np.arange(n * num_e, dtype=np.int64)
    else:
        flat = np.flatnonzero(allowed).astype(np.int64)
    m = flat.size
    cols = np.arange(m, dtype=np.int64)
    s_of, e_of = flat // num_e, flat % num_e
    head, tail = pdst[e_of], psrc[e_of]

    def cons_row(s, v):  # row of (s, v), v != s
        return num_e + s * (n - 1) + np.where(v < s, v, v - 1)

    into = head != s_of
    outof = tail != s_of
    rows = np.concatenate([e_of, cons_row(s_of[into], head[into]),
                           cons_row(s_of[outof], tail[outof]), np.arange(num_e)])
    cidx = np.concatenate([cols, cols[into], cols[outof], np.full(num_e, m)])
    vals = np.concatenate([np.ones(cols.size), np.ones(int(into.sum())),
                           -np.ones(int(outof.sum())), -cap / scale])
    num_rows = num_e + n * (n - 1)
    matrix = sp.csc_matrix((vals, (rows, cidx)), shape=(num_rows, m + 1))
    row_lower = np.concatenate([np.full(num_e, -np.inf), np.ones(n * (n - 1))])
    row_upper = np.concatenate([np.zeros(num_e), np.ones(n * (n - 1))])
    # flow of commodity s back into s is useless; pin it to zero (presolve drops the columns)
    col_upper = np.full(m + 1, np.inf)
    col_upper[:-1][head == s_of] = 0.0
    cost = np.zeros(m + 1)
    cost[-1] = 1.0
    return cost, matrix, row_lower, row_upper, col_upper, scale, flat


def link_utilization(topology, pair_load):
    """Per-link utilization and load (bytes/s) from the load on each entry of ``pairs``;
    parallel links share their pair's load in proportion to bandwidth."""
    _, _, cap, _ = topology.pairs
    util_pair = pair_load / cap
    idx = topology.pair_index(topology.src, topology.dst)
    util = util_pair[idx]
    return util, util * topology.bandwidth


def _flows(topology, x, columns, lam):
    """Per-source flows (``N x E``, bytes/s) of an LP solution ``x`` over ``columns`` at rate
    ``lam``, and the per-link utilization and load they give."""
    n, num_e = topology.num_nodes, topology.pairs[0].size
    flows = np.zeros(n * num_e)
    flows[columns] = np.maximum(x[:-1], 0.0) * lam
    flows = flows.reshape(n, num_e)
    util, load = link_utilization(topology, flows.sum(axis=0))
    return flows, util, load


def _link_result(topology, sol, certified, columns, *, solver, log, bnd, tolerance, keep_flows):
    """The :class:`AlltoallResult` of :func:`link_throughput`'s last LP solution.

    ``certified`` is ``(lam, bound, gap, lengths)``, ``log`` the :class:`SolveLog` of the call.
    """
    lam, bound, gap, lengths = certified
    rounds, iterations = log.rounds, log.iterations
    n, num_e = topology.num_nodes, topology.pairs[0].size
    flows, util, load = _flows(topology, sol.x, columns, lam)
    status = Status.SUCCESS if gap <= tolerance else Status.NOT_PROVEN
    used = sol.solver or solver
    if columns.size < n * num_e:
        how = f"shortest-path columns ({columns.size} of {n * num_e})"
    elif rounds > 1:
        how = f"the whole LP after {rounds - 1} restricted round{'s' if rounds > 2 else ''}"
    else:
        how = "the whole LP"
    message = (f"lambda {lam:.6g} B/s per pair, certified within {max(gap, 0.0):.2g} "
               f"(dual bound {bound:.6g}); HiGHS {used} on {how}: {sol.status}, "
               f"{iterations} iterations")
    return AlltoallResult(
        lam=lam, status=status, message=message, dual_bound=bound, utilization=util,
        link_load=load, lengths=lengths, flows=flows if keep_flows else None,
        **result_fields(topology, "link", None, bnd, solver=used, iterations=iterations,
                        rounds=rounds, build_seconds=log.build_seconds,
                        solve_seconds=log.solve_seconds, tolerance=tolerance))


def _solve_columns(topology, allowed, log, *, solver, crossover, left, threads):
    """Build and solve the link LP over the columns ``allowed`` (``None``: all), counting the
    work in ``log``; return ``(solution, scale, columns)``."""
    t0 = time.perf_counter()
    cost, matrix, row_lower, row_upper, col_upper, scale, columns = link_lp(topology, allowed)
    log.build_seconds += time.perf_counter() - t0
    # auto: PDLP only suits the restricted rounds (large and well conditioned); on the
    # whole LP of a sparse graph it can take 10x the interior point's time
    use = "ipm" if solver == "auto" and allowed is None else solver
    sol = solve_lp(cost, matrix, row_lower, row_upper, col_upper=col_upper, maximize=False,
                   solver=use, crossover=crossover, time_limit=left, threads=threads)
    log.add(sol)
    return sol, scale, columns


def _certify(topology, sol, scale):
    """``(lam, bound, gap, lengths)`` of a solved link LP: its rate, the certificate of the
    capacity rows' duals and the gap between them."""
    num_e = topology.pairs[0].size
    lam = scale / float(sol.x[-1])
    # Lengths from the capacity rows' duals (all of one sign; any lengths >= 0 certify).
    lengths = np.abs(sol.row_dual[:num_e])
    if not np.any(lengths > 0):
        lengths = np.ones(num_e)  # no dual: fall back to the distance bound
    bound = certificate(topology, lengths)
    gap = bound / lam - 1 if lam > 0 else float("inf")
    return lam, bound, gap, lengths


def _next_columns(topology, sol, allowed, rounds, max_rounds):
    """The columns of the next round after a restricted LP that left a gap: ``allowed`` with
    the priced ones added, or ``None`` (the whole LP) when pricing is over or adds nearly
    everything."""
    new = _priced_columns(topology, sol.row_dual) & ~allowed
    if rounds >= max_rounds or not new.any():
        return None                          # the fallback: the whole LP
    allowed |= new
    if allowed.mean() > 0.8:                 # nearly everything: skip to the whole LP
        return None
    return allowed


def link_throughput(topology, *, solver="auto", crossover=False, time_limit=None, bounds=True,
                    tolerance=1e-6, threads=None, keep_flows=True, restrict="auto", max_rounds=1,
                    progress=None):
    """Solve the link LP; return an :class:`AlltoallResult` (``method="link"``).

    Parameters
    ----------
    topology : Topology
    solver : {"auto", "ipm", "pdlp", "simplex", "choose"}
        HiGHS solver; ``auto`` (default) takes the interior point for small LPs and PDLP for
        large ones (never the default dual simplex: it crawls on these degenerate LPs).
    crossover : bool
        Crossover to a vertex after the interior point.
    time_limit : float, optional
        Seconds for the whole call: every solve gets what is left, and when it runs out the
        best flow found so far is returned with status 1 (``LIMIT``) and its certified gap
        (status 5, ``FAILED``, if no flow was found in time).
    bounds : bool
        Also compute the topology bounds (``result.bounds``).
    tolerance : float
        ``status`` is 0 (``SUCCESS``) when the certified gap is at most this; column generation
        stops there.
    keep_flows : bool
        Keep the per-source flows (``N x E`` floats) in ``result.flows``.
    restrict : bool or "auto"
        Start from the shortest-path DAGs (see the module notes); ``False`` solves the whole
        LP at once; ``auto`` (default) restricts LPs of at least :data:`RESTRICT_COLUMNS`
        columns (below that a wasted restricted round costs more than it can save).
    max_rounds : int
        Restricted rounds before falling back to the whole LP. Each round re-solves from
        scratch, so the default goes to the whole LP as soon as the shortest-path round is
        not optimal (on 4-regular random graphs pricing rounds cost more than they save).
    progress : callable, optional
        ``progress(done, total)`` after each solve (``total`` is ``max_rounds + 1``).
    """
    require_alltoall_topology(topology)
    deadline = deadline_after(time_limit)
    n, num_e = topology.num_nodes, topology.pairs[0].size
    require_memory(link_lp_bytes(n, num_e), f"the all-to-all link LP of {topology.name} "
                   f"({n} nodes, {num_e} links: {n * num_e} flow variables)")
    bnd, early = bounds_or_disconnected(topology, "link", None, bounds)
    if early is not None:
        return early
    if restrict == "auto":
        restrict = n * num_e >= RESTRICT_COLUMNS
    allowed = shortest_path_columns(topology) if restrict else None
    log, total, best = SolveLog(), max_rounds + 1, None
    ending = dict(bnd=bnd, tolerance=tolerance, keep_flows=keep_flows)
    while True:
        left = time_left(deadline)
        if left is not None and left <= 0:
            return _out_of_time(topology, best, time_limit, log, **ending)
        log.rounds += 1
        sol, scale, columns = _solve_columns(topology, allowed, log, solver=solver,
                                             crossover=crossover, left=left, threads=threads)
        if progress:
            progress(min(log.rounds, total), total)
        if not sol.ok or not sol.x[-1] > 0:
            if out_of_time(deadline):
                return _out_of_time(topology, best, time_limit, log, **ending)
            if allowed is not None:          # a restricted LP that failed: try the whole one
                allowed = None
                continue
            return failed_result(
                topology, f"HiGHS ({sol.solver or solver}) ended with status {sol.status}",
                **result_fields(topology, "link", None, bnd, solver=sol.solver or solver,
                                iterations=log.iterations, build_seconds=log.build_seconds,
                                solve_seconds=log.solve_seconds, tolerance=tolerance))
        lam, bound, gap, lengths = certified = _certify(topology, sol, scale)
        if best is None or lam > best[0]:    # a restricted optimum is a feasible flow
            best = (lam, bound, lengths, sol.x, columns)
        if gap <= tolerance or allowed is None:
            break
        allowed = _next_columns(topology, sol, allowed, log.rounds, max_rounds)
    return _link_result(topology, sol, certified, columns, solver=solver, log=log, **ending)


#: Bytes per nonzero of the link LP that HiGHS' interior point needs, measured on tori,
#: hypercubes and random regular graphs (about 110-130; the margin covers the factorization).
_BYTES_PER_NONZERO = 160


def link_lp_bytes(num_nodes, num_links):
    """Estimated peak memory of the whole link LP (its matrix and HiGHS' work on it)."""
    columns = num_nodes * num_links
    return _BYTES_PER_NONZERO * 3 * columns + 100 * (num_nodes * num_nodes + num_links)


def _out_of_time(topology, best, time_limit, log, *, bnd, tolerance, keep_flows):
    """The result when the time limit ran out: the best flow so far (status LIMIT), or none.
    ``log``: the :class:`SolveLog` of the call."""
    fields = result_fields(topology, "link", None, bnd, iterations=log.iterations,
                           rounds=log.rounds, build_seconds=log.build_seconds,
                           solve_seconds=log.solve_seconds, tolerance=tolerance)
    if best is None:
        rounds = log.rounds
        return failed_result(
            topology, f"time limit of {time_limit:g} s reached before any flow was found "
                      f"({rounds} LP solve{'s' if rounds != 1 else ''} started)", **fields)
    lam, bound, lengths, x, columns = best
    flows, util, load = _flows(topology, x, columns, lam)
    gap = bound / lam - 1
    return AlltoallResult(
        lam=lam, status=Status.LIMIT,
        message=f"time limit of {time_limit:g} s reached: lambda {lam:.6g} B/s per pair from "
                f"the best LP so far, certified within {max(gap, 0.0):.2g} (dual bound "
                f"{bound:.6g})",
        dual_bound=bound, utilization=util, link_load=load, lengths=lengths,
        flows=flows if keep_flows else None, **fields)


def _priced_columns(topology, row_dual, rel_tol=1e-6):
    """``(s, e)`` whose reduced cost at the duals ``row_dual`` of :func:`link_lp`'s rows is
    negative: the columns that can improve the restricted LP (column generation's pricing)."""
    psrc, pdst, _, _ = topology.pairs
    n, num_e = topology.num_nodes, psrc.size
    y_cap = row_dual[:num_e]
    y = np.zeros((n, n))                                   # y[s, v]: row (s, v), 0 at v = s
    off = ~np.eye(n, dtype=bool)
    y[off] = row_dual[num_e:]                              # rows (s, v != s) in row-major order
    # column (s, e = u -> v): +1 in capacity row e, +1 in row (s, v), -1 in row (s, u)
    reduced = -(y_cap[None, :] + y[:, pdst] - y[:, psrc])
    scale = float(np.abs(y_cap).max()) or 1.0
    new = reduced < -rel_tol * scale
    new[np.arange(n)[:, None] == pdst[None, :]] = False   # flow back into its source
    return new
