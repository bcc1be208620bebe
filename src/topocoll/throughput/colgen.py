"""The all-to-all LP at scale: path column generation seeded by multiplicative weights.

The path LP (see :mod:`~topocoll.throughput.pathlp`, no hop bound) has one row per ordered
pair, ``N (N-1)`` of them, and the link LP as many conservation rows: at 512 nodes either is a
quarter-million-row LP that the interior point takes minutes to half an hour on. But a vertex
optimum splits at most ``|E|`` pairs over more than one path (each split needs a binding
capacity row in the basis), so almost every pair travels on a single path, and the LP need only
hold the few pairs whose route is in doubt:

1. :func:`~topocoll.throughput.mwu.mwu_lengths` finds near-optimal dual lengths in a hundred
   all-sources Dijkstra sweeps and ninety refining ones at smaller steps, and the trees of the
   last steps of both phases.
2. Every pair starts on its shortest path under the best lengths. A pair that another kept
   tree routes differently, on a path at most ``1 + slack`` times as long under the best
   lengths, keeps the trees' paths as alternatives: it is *free*. All other pairs are
   *fixed*: their load is a constant.
3. The master LP (``minimise z``: per link, free paths' load ``<= z c_e -`` fixed load; per
   free pair, its shares sum to 1) has ``|E|`` rows plus one per free pair.
4. Its capacity duals are link lengths; one all-sources Dijkstra gives the weak-duality bound
   ``sum_e c_e l_e / sum dist_l``. Pricing is at the midpoint of these lengths and the best
   so far: a pair whose shortest path there is shorter than all of its own paths gains that
   path (and becomes free), at most ``max_new`` pairs a round; the loop stops when the best
   bound seen (the multiplicative weights' included) is within ``tolerance`` of the routes'
   ``lambda``.

``lambda`` is recomputed from the routes (``min_e c_e / load_e``), so it is exactly feasible,
and the bound is recomputed from lengths, not read from a solver. Measured on random regular
graphs (``benchmarks/alltoall.py``): 512 nodes of degree 4 in about 15 s against 35 min for
the whole link LP, 1024 nodes in about 4 minutes.

>>> from topocoll.topology import topology
>>> r = colgen_throughput(topology("ring:8", bandwidth=1.0), bounds=False)
>>> round(r.lam, 6), r.status_name, r.method               # 8/N^2
(0.125, 'SUCCESS', 'colgen')
"""

import math
import time

import numpy as np
import scipy.sparse as sp

from ..errors import InputTypeError
from ..limits import require_memory
from ..units import whole_number
from .dual import positive_lengths, link_ids, shortest_path_trees, tree_paths
from .frontdoor import (SolveLog, bounds_or_disconnected, deadline_after, failed_result,
                        require_alltoall_topology, result_fields, run_rounds, time_left)
from .lp import solve_lp
from .mwu import DEFAULT_REFINE, DEFAULT_STEPS, mwu_lengths
from .pathlp import append_paths, route_summary, routes
from .result import AlltoallResult

__all__ = ["colgen_throughput", "DEFAULT_TOLERANCE"]

#: Relative gap at which :func:`colgen_throughput` stops unless asked for less.
DEFAULT_TOLERANCE = 1e-4
#: A pair is free if a tree routes it at most this much longer than its shortest path under
#: the best lengths, on another path (at 1024 nodes of degree 4: 18% of the pairs free, the
#: first master 9e-5 from the optimum; 0.001 left 9% free but 0.3 from it).
DEFAULT_SLACK = 0.01
#: Paths a pair starts with at most.
DEFAULT_MAX_PATHS = 9
#: Pairs that gain a path in one round at most.
DEFAULT_MAX_NEW = 30_000
#: ``vertex=True``: the crossover re-solve may take this many times the last master's solve.
VERTEX_SECONDS_FACTOR = 3.0


def _tree_sums(pred, eid, weights, dtype):
    """Per (source, node): the sum of ``weights`` over the tree path (N x N of ``dtype``)."""
    n = pred.shape[0]
    out = np.zeros((n, n), dtype=dtype)
    done = pred < 0
    rows, nodes = np.nonzero(~done)
    while rows.size:                     # a node is ready once its predecessor is
        p = pred[rows, nodes]
        ready = done[rows, p]
        r, v, q = rows[ready], nodes[ready], p[ready]
        out[r, v] = out[r, q] + weights[eid[q, v]]
        done[r, v] = True
        rows, nodes = rows[~ready], nodes[~ready]
    return out


def _candidates(run, eid, xs, ys, slack, most):
    """Every pair's path in the best lengths' tree and, for the pairs that some other kept
    tree routes differently on a path at most ``1 + slack`` times as long under the best
    lengths, the distinct paths of all kept trees, at most ``most`` a pair (newest trees
    first): ``(pair, ptr, edges)``.

    The filter picks pairs, not paths. Pairs whose other routes are all much longer stay
    fixed (at 1024 nodes of degree 4 this halves the free pairs); a free pair keeps its long
    routes too: on hypercubes and tori, where every shortest route ties, a master of shortest
    routes alone has every link saturated in every optimum, and the interior point took over
    10 minutes on ``hypercube:8`` instead of 15 s. The filter needs settled lengths: with the
    main phase's best lengths, which can be many steps old, it cut pairs the optimum needs,
    and at 512 nodes the first master's gap grew from 4e-5 to 0.24."""
    rng = np.random.default_rng(0)
    tag = rng.integers(1, np.iinfo(np.int64).max, size=eid.max() + 1, dtype=np.int64)
    tag = tag.astype(np.uint64)
    trees = run.trees[::-1]              # best lengths' tree first
    first = trees[0]
    limit = _tree_sums(first, eid, run.lengths, np.float64)[xs, ys] * (1.0 + slack)
    hashes = [_tree_sums(first, eid, tag, np.uint64)[xs, ys]]
    free = np.zeros(xs.size, dtype=bool)
    for pred in trees[1:]:
        h = _tree_sums(pred, eid, tag, np.uint64)[xs, ys]
        near = _tree_sums(pred, eid, run.lengths, np.float64)[xs, ys] <= limit
        free |= near & (h != hashes[0])
        hashes.append(h)
    ptr, edges = tree_paths(first, eid, xs, ys)
    pair_parts, hop_parts, edge_parts = [np.arange(xs.size)], [np.diff(ptr)], [edges]
    count = np.ones(xs.size, dtype=np.int64)
    for i in range(1, len(trees)):
        new = free & (count < most)
        for old in hashes[:i]:
            new &= hashes[i] != old
        count += new
        sel = np.flatnonzero(new)
        if sel.size:
            p, e = tree_paths(trees[i], eid, xs[sel], ys[sel])
            pair_parts.append(sel)
            hop_parts.append(np.diff(p))
            edge_parts.append(e)
    hops = np.concatenate(hop_parts)
    return (np.concatenate(pair_parts), np.concatenate([[0], np.cumsum(hops)]),
            np.concatenate(edge_parts))


def _master(num_e, cap_s, pair, ptr, edges, num_pairs):
    """The master LP over the free pairs' paths: ``cost, matrix, lower, upper`` and the
    indices of the free paths (the fixed pairs' load is in the capacity rows' bounds)."""
    hops = np.diff(ptr)
    count = np.bincount(pair, minlength=num_pairs)
    free = np.flatnonzero(count[pair] > 1)
    seg_free = np.repeat(count[pair] > 1, hops)
    fixed_load = np.bincount(edges[~seg_free], minlength=num_e).astype(np.float64)
    free_pairs, row_of = np.unique(pair[free], return_inverse=True)
    num_f, num_p = free_pairs.size, free.size
    col = np.repeat(np.arange(num_p), hops[free])
    rows = np.concatenate([edges[seg_free], num_e + row_of, np.arange(num_e)])
    cols = np.concatenate([col, np.arange(num_p), np.full(num_e, num_p)])
    vals = np.concatenate([np.ones(col.size), np.ones(num_p), -cap_s])
    matrix = sp.csc_matrix((vals, (rows, cols)), shape=(num_e + num_f, num_p + 1))
    lower = np.concatenate([np.full(num_e, -np.inf), np.ones(num_f)])
    upper = np.concatenate([-fixed_load, np.ones(num_f)])
    cost = np.zeros(num_p + 1)
    cost[-1] = 1.0
    return cost, matrix, lower, upper, free


def _gains(lengths, dist, cols, pairs, *, most):
    """Pairs whose shortest path under ``lengths`` beats all of their paths, at most ``most``
    of them (those that gain most). ``cols``: the paths ``(pair, ptr, edges)``; ``pairs``:
    ``(xs, ys, num_pairs)``."""
    pair, ptr, edges = cols
    xs, ys, num_pairs = pairs
    plen = np.add.reduceat(lengths[edges], ptr[:-1]) if edges.size else np.zeros(0)
    have = np.full(num_pairs, np.inf)
    np.minimum.at(have, pair, plen)
    gain = have - dist[xs, ys]
    pick = np.flatnonzero(gain > have * 1e-9)
    if pick.size <= most:
        return pick
    return np.sort(pick[np.argpartition(-gain[pick], most - 1)[:most]])


def _shares(pair, free, x, num_pairs):
    """Per path, its share of its pair (fixed pairs' single paths: 1)."""
    share = np.ones(pair.size)
    g = np.maximum(x[:-1], 0.0)
    total = np.bincount(pair[free], weights=g, minlength=num_pairs)[pair[free]]
    share[free] = np.divide(g, total, out=np.zeros_like(g), where=total > 0)
    return share


def _colgen_args(topology, mwu_steps, keep, max_new, max_paths, mwu_refine, slack, max_rounds):
    """Check :func:`colgen_throughput`'s arguments and memory need; return the whole numbers
    ``(mwu_steps, keep, max_new, max_paths, mwu_refine, max_rounds)``."""
    require_alltoall_topology(topology)
    mwu_steps = whole_number(mwu_steps, "mwu_steps")
    keep = whole_number(keep, "keep")
    max_new = whole_number(max_new, "max_new")
    max_paths = whole_number(max_paths, "max_paths")
    mwu_refine = whole_number(mwu_refine, "mwu_refine", 0)
    if not 0 <= float(slack) < np.inf:
        raise InputTypeError(f"slack must be a finite number >= 0, got {slack!r}")
    max_rounds = whole_number(max_rounds, "max_rounds")
    n = topology.num_nodes
    degree = max(2, int(topology.out_degree().max()))
    hops_est = 1 + math.ceil(math.log(max(n, 2)) / math.log(degree))
    require_memory(n * n * (48 + 4 * (2 * keep + 1) + 16 * (2 + hops_est)),
                   f"the all-to-all column generation on {topology.name} ({n} nodes: "
                   f"{n * (n - 1)} pairs with their paths)")
    return mwu_steps, keep, max_new, max_paths, mwu_refine, max_rounds


def _price(arrays, lengths, dist_pred, best, *, lam, cols, pairs, max_new):
    """One pricing step of :func:`colgen_throughput`: the pairs that gain a new path.

    Prices at the midpoint of the best lengths and the master's: a restricted master's duals
    overshoot (priced alone, at 512 nodes they freed 190k of 262k pairs in one round, and the
    next master took minutes). ``lam`` is the target the bound must reach to stop (``lam``
    times ``1 + tolerance``). Returns ``(gain, pred, (best_bound, best_lengths))``; ``gain``
    is None when the improved bound closes the gap.
    """
    psrc, pdst, n, cap_s = arrays
    dist, pred = dist_pred
    best_bound, best_lengths = best
    center = best_lengths / float(cap_s @ best_lengths)
    smooth = 0.5 * (center + lengths)
    sdist, spred = shortest_path_trees(psrc, pdst, n, smooth)
    bound = 1.0 / float(sdist.sum())
    if bound < best_bound:
        best_bound, best_lengths = bound, smooth
        if best_bound <= lam:
            return None, pred, (best_bound, best_lengths)
    gain = _gains(smooth, sdist, cols, pairs, most=max_new)
    if gain.size:
        pred = spred
    else:
        gain = _gains(lengths, dist, cols, pairs, most=max_new)
    return gain, pred, (best_bound, best_lengths)


def _vertex_shares(master, last_seconds, left, threads, share, pairs):
    """Re-solve the last master with crossover; return ``(share, seconds)``.

    Crossover is sometimes far slower than the interior point on these degenerate masters
    (over 7 minutes after a 10 s solve at 256 nodes of degree 4): it gets
    VERTEX_SECONDS_FACTOR times the last solve (at least 30 s), else the interior shares stay.
    """
    pair, num_pairs = pairs
    cost, matrix, lower, upper, free = master
    limit = max(30.0, VERTEX_SECONDS_FACTOR * last_seconds)
    again = solve_lp(cost, matrix, lower, upper, maximize=False, solver="ipm",
                     crossover=True, time_limit=limit if left is None else min(left, limit),
                     threads=threads)
    if again.ok:
        share = _shares(pair, free, again.x, num_pairs)
    return share, again.seconds


def _master_lam(share, ptr, edges, cap_s):
    """The (scaled) ``lambda`` of a master's path shares."""
    load = np.bincount(edges, weights=np.repeat(share, np.diff(ptr)), minlength=cap_s.size)
    return float(np.min(cap_s[load > 0] / load[load > 0]))


def _dual_lengths(sol, psrc, pdst, n, cap_s):
    """Normalised link lengths from a master's duals: ``(lengths, dist, pred, bound)``."""
    lengths = positive_lengths(np.abs(sol.row_dual[:psrc.size]))
    lengths /= float(cap_s @ lengths)
    dist, pred = shortest_path_trees(psrc, pdst, n, lengths)
    return lengths, dist, pred, 1.0 / float(dist.sum())


def _routes_result(topology, columns, dual_bound, steps, *, out_of_time, time_limit,
                   solve_seconds, common):
    """The :class:`AlltoallResult` of :func:`colgen_throughput`'s final path shares
    (``columns``: ``(xs, ys, pair, ptr, edges, share, cap)``)."""
    paths, load, lam = routes(*columns)
    util, link_load, gap, status, split = route_summary(topology, paths, load, lam, dual_bound,
                                                        common["tolerance"], out_of_time)
    stopped = f"time limit of {time_limit:g} s reached: " if out_of_time else ""
    rounds, num_pairs = common["rounds"], columns[0].size
    message = (f"{stopped}lambda {lam:.6g} B/s per pair, certified within {max(gap, 0.0):.2g} "
               f"(dual bound {dual_bound:.6g}); {steps} multiplicative-weights steps, "
               f"{rounds} master LP{'s' if rounds != 1 else ''}, {split} of {num_pairs} "
               f"pairs split over {len(paths)} paths")
    return AlltoallResult(lam=lam, status=status, message=message, dual_bound=dual_bound,
                          utilization=util, link_load=link_load, paths=paths,
                          solve_seconds=solve_seconds, **common)


def colgen_throughput(topology, *, tolerance=DEFAULT_TOLERANCE, mwu_steps=DEFAULT_STEPS,
                      mwu_refine=DEFAULT_REFINE, keep=8, slack=DEFAULT_SLACK,
                      max_paths=DEFAULT_MAX_PATHS, max_new=DEFAULT_MAX_NEW, max_rounds=50,
                      solver="ipm", time_limit=None, bounds=True, threads=None, vertex=False,
                      progress=None):
    """Uniform all-to-all ``lambda`` by path column generation seeded by multiplicative weights.

    Parameters
    ----------
    topology : Topology
        Without switches; a topology that is not strongly connected gives ``lam == 0`` and
        status 4 (``INFEASIBLE``).
    tolerance : float
        Stop when the certified relative gap ``dual_bound / lam - 1`` is at most this
        (default ``1e-4``).
    mwu_steps : int
        Multiplicative-weights steps before the first master LP.
    mwu_refine : int
        Refining steps after them, at smaller step sizes (0: none; see
        :func:`~topocoll.throughput.mwu.mwu_lengths`).
    keep : int
        Trees of the last steps of each phase whose paths seed the free pairs.
    slack : float
        A pair keeps the trees' other paths as alternatives only if one of them is at most
        ``1 + slack`` times as long as its shortest path under the best lengths.
    max_paths : int
        Paths a pair starts with at most (its first and the alternatives of the newest trees).
    max_new : int
        Pairs that gain a path in one round at most (those that gain most).
    vertex : bool
        Re-solve the last master LP with crossover to a vertex: the interior point spreads
        pairs thinly over many paths (tiny shares become tiny transfers, each paying a link
        latency, in a schedule), a vertex splits at most ``|E|`` pairs. For routes that become
        schedules (:func:`~topocoll.throughput.solve.alltoall_routes` sets it). The re-solve
        gets 3x the last master's time (at least 30 s); if crossover needs longer, the
        interior-point shares stay.
    max_rounds : int
        Master LPs at most (status 2, ``NOT_PROVEN``, if the gap is still open).
    solver : {"ipm", "pdlp", "simplex", "auto"}
        HiGHS solver of the master LPs.
    time_limit : float, optional
        Seconds for the master LPs and pricing (the multiplicative weights run first, in full);
        when it runs out the last master's routes are returned with status 1 (``LIMIT``).
    bounds : bool
        Also compute the topology bounds.
    progress : callable, optional
        ``progress(done, total)``: the weights' steps, then the rounds.

    Returns
    -------
    AlltoallResult
        ``method="colgen"``, with ``paths`` (routes and shares) and ``lengths`` (the
        certificate's).
    """
    mwu_steps, keep, max_new, max_paths, mwu_refine, max_rounds = _colgen_args(
        topology, mwu_steps, keep, max_new, max_paths, mwu_refine, slack, max_rounds)
    bnd, early = bounds_or_disconnected(topology, "colgen", None, bounds)
    if early is not None:
        return early
    began = time.perf_counter()
    cap = topology.pairs[2]
    scale = float(cap.max())
    eid = link_ids(topology)
    xs, ys = np.nonzero(~np.eye(topology.num_nodes, dtype=bool))
    total = mwu_steps + mwu_refine + max_rounds
    report = (lambda done, _: progress(done, total)) if progress else None
    run = mwu_lengths(topology, steps=mwu_steps, refine=mwu_refine, keep=keep, progress=report)
    gen = _Colgen(topology, eid, (xs, ys), cap / scale,
                  _candidates(run, eid, xs, ys, float(slack), max_paths),
                  best=(run.bound / scale, run.lengths), solver=solver, threads=threads,
                  tolerance=tolerance, max_new=max_new,
                  progress=(lambda r: progress(mwu_steps + mwu_refine + r, total))
                  if progress else None)
    deadline = deadline_after(time_limit)
    log = SolveLog(build_seconds=time.perf_counter() - began)
    run_rounds(gen, log, deadline=deadline, max_rounds=max_rounds)
    common = result_fields(topology, "colgen", None, bnd, lengths=gen.best_lengths,
                           solver=solver, iterations=log.iterations, rounds=log.rounds,
                           build_seconds=log.build_seconds, tolerance=tolerance)
    if gen.good is None:
        why = (f"the time limit of {time_limit:g} s ran out first" if gen.out_of_time
               else f"HiGHS ({solver}) ended with status {log.status}")
        return failed_result(topology, f"column generation found no flow: {why}",
                             dual_bound=gen.best_bound * scale,
                             solve_seconds=log.solve_seconds, **common)
    _, pair, ptr, edges, share = gen.good
    left = time_left(deadline)
    if vertex and not gen.crossover and (left is None or left > 0):
        share, seconds = _vertex_shares(gen.master, gen.last_seconds, left, threads, share,
                                        (pair, xs.size))
        log.solve_seconds += seconds
    return _routes_result(topology, (xs, ys, pair, ptr, edges, share, cap),
                          gen.best_bound * scale, run.steps, out_of_time=gen.out_of_time,
                          time_limit=time_limit, solve_seconds=log.solve_seconds, common=common)


class _Colgen:
    """:func:`colgen_throughput`'s column generation (rounds run by :func:`run_rounds`): the
    paths so far ``cols`` (``pair, ptr, edges``), the best certificate, the last master solved
    (``good``: its ``lambda`` and routes, ``master``: its LP, ``last_seconds``: its solve),
    whether the masters are solved to a vertex, and whether the time ran out."""

    def __init__(self, topology, eid, pairs, cap_s, cols, *, best, solver, threads, tolerance,
                 max_new, progress):
        self.topology, self.eid, self.pairs, self.cap_s = topology, eid, pairs, cap_s
        self.cols = cols
        self.best_bound, self.best_lengths = best
        self.solver, self.threads, self.tolerance = solver, threads, tolerance
        self.max_new, self.progress = max_new, progress
        self.good = self.master = None
        self.last_seconds = 0.0
        self.crossover = self.out_of_time = False
        self.current = None

    def solve(self, left):
        """Solve the master LP over the current paths with ``left`` seconds."""
        pair, ptr, edges = self.cols
        self.current = _master(self.cap_s.size, self.cap_s, pair, ptr, edges, self.pairs[0].size)
        cost, matrix, lower, upper, _ = self.current
        return solve_lp(cost, matrix, lower, upper, maximize=False, solver=self.solver,
                        crossover=self.crossover, time_limit=left, threads=self.threads)

    def advance(self, sol, rounds):
        """Take a solved master's routes and bound; add the paths that gain. Returns whether
        to go on."""
        pair, ptr, edges = self.cols
        share = _shares(pair, self.current[4], sol.x, self.pairs[0].size)
        lam = _master_lam(share, ptr, edges, self.cap_s)
        self.good = (lam, pair, ptr, edges, share)
        self.master, self.last_seconds = self.current, sol.seconds
        psrc, pdst, _, _ = self.topology.pairs
        n = self.topology.num_nodes
        lengths, dist, pred, bound = _dual_lengths(sol, psrc, pdst, n, self.cap_s)
        if bound < self.best_bound:
            self.best_bound, self.best_lengths = bound, lengths
        if self.progress:
            self.progress(rounds)
        if self.best_bound <= lam * (1.0 + self.tolerance):
            return False
        xs, ys = self.pairs
        gain, pred, (self.best_bound, self.best_lengths) = _price(
            (psrc, pdst, n, self.cap_s), lengths, (dist, pred),
            (self.best_bound, self.best_lengths), lam=lam * (1.0 + self.tolerance),
            cols=self.cols, pairs=(xs, ys, xs.size), max_new=self.max_new)
        if gain is None:
            return False
        if gain.size == 0:
            # interior-point duals can stall short of the bound: retry once at a vertex
            if self.crossover or self.solver not in ("ipm", "auto"):
                return False
            self.crossover = True
            return True
        nptr, nedges = tree_paths(pred, self.eid, xs[gain], ys[gain])
        self.cols = append_paths(self.cols, gain, nptr, nedges)
        return True
