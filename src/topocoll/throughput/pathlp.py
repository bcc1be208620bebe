"""The path-based all-to-all LP with a hop bound, solved by column generation.

Pair ``(x, y)`` may route over paths of at most ``dist(x, y) + max_hops`` links (``max_hops``
extra hops over its shortest distance; ``None``: any path). Variables ``g_p >= 0`` per path
(share of the pair's unit demand) and the congestion ``z``:

    minimise z
    sum_{p through e} g_p <= z c_e              for every link e
    sum_{p of (x, y)} g_p = 1                   for every ordered pair x != y

and ``lambda = 1 / z``. Enumerating every allowed path explodes on symmetric graphs (the number
of shortest paths in a torus grows exponentially with the distance), so paths are *generated*:
start from one shortest path per pair, solve, read link lengths ``l`` from the duals of the
capacity rows, and add for each pair its shortest ``l``-path within its hop bound when that is
shorter than every path it has (a Bellman-Ford over hop counts; Dijkstra when unbounded). When
no pair gains, the restricted optimum is the optimum over *all* allowed paths; the weak-duality
certificate ``sum_e c_e l_e / sum dist_l^{hop-bounded}`` says so, and bounds ``lambda`` at every
round. The reported ``lambda`` is recomputed from the routes (``min_e c_e / load_e``), so it is
exactly feasible for them.

>>> from topocoll.topology import topology
>>> r = path_throughput(topology("ring:6", bandwidth=1.0), max_hops=0)
>>> round(r.lam, 6), r.status_name, r.longest_path          # 8/N^2 with shortest paths only
(0.222222, 'SUCCESS', 3)
"""

import math
import time

import numpy as np
import scipy.sparse as sp
from scipy.sparse import csgraph

from ..limits import require_memory
from ..results import Status
from ..topology.metrics import distance_matrix
from ..units import whole_number
from .dual import positive_lengths, hop_shortest_paths, link_ids, tree_paths
from .frontdoor import (SolveLog, bounds_or_disconnected, deadline_after, failed_result,
                        require_alltoall_topology, result_fields, run_rounds, time_left)
from .linklp import link_throughput, link_utilization
from .lp import solve_lp
from .result import AlltoallResult, PathSet
from .schedule import alltoall_schedule, pipelined_alltoall_schedule

__all__ = ["path_throughput", "hop_frontier", "hop_limits"]


def hop_limits(topology, max_hops):
    """Per-pair hop bound ``dist + max_hops`` (N x N int64), or ``None`` when unbounded."""
    if max_hops is None:
        return None
    max_hops = whole_number(max_hops, "max_hops (extra hops over the shortest distance)", 0)
    dist = distance_matrix(topology).astype(np.int64)
    # a simple path has at most N-1 links: a larger bound changes nothing
    return np.minimum(dist + int(max_hops), topology.num_nodes - 1)


def _dijkstra_paths(topology, lengths, xs, ys):
    """Shortest ``l``-paths of the pairs ``(xs, ys)`` as (dist matrix, ptr, edges)."""
    psrc, pdst, _, _ = topology.pairs
    n = topology.num_nodes
    w = positive_lengths(lengths)
    graph = sp.csr_matrix((w, (psrc, pdst)), shape=(n, n))
    dist, pred = csgraph.dijkstra(graph, directed=True, return_predecessors=True)
    ptr, edges = tree_paths(pred, link_ids(topology), xs, ys)
    return dist, ptr, edges


def _shortest(topology, lengths, limits, xs, ys):
    if limits is None:
        return _dijkstra_paths(topology, lengths, xs, ys)
    return hop_shortest_paths(topology, lengths, limits, pairs=(xs, ys))


def _master(num_e, cap_scaled, pair, ptr, edges, num_pairs):
    """The restricted master LP over the given paths: columns paths then z."""
    num_p = pair.size
    hops = np.diff(ptr)
    col = np.repeat(np.arange(num_p), hops)
    rows = np.concatenate([edges, num_e + pair, np.arange(num_e)])
    cols = np.concatenate([col, np.arange(num_p), np.full(num_e, num_p)])
    vals = np.concatenate([np.ones(edges.size), np.ones(num_p), -cap_scaled])
    matrix = sp.csc_matrix((vals, (rows, cols)), shape=(num_e + num_pairs, num_p + 1))
    row_lower = np.concatenate([np.full(num_e, -np.inf), np.ones(num_pairs)])
    row_upper = np.concatenate([np.zeros(num_e), np.ones(num_pairs)])
    cost = np.zeros(num_p + 1)
    cost[-1] = 1.0
    return cost, matrix, row_lower, row_upper


def _require_path_memory(topology):
    """Refuse a path LP whose pairs and paths would not fit in memory."""
    n = topology.num_nodes
    degree = max(2, int(topology.out_degree().max()))
    hops = 1 + math.ceil(math.log(max(n, 2)) / math.log(degree))
    require_memory(n * n * (64 + 48 * hops), f"the all-to-all path LP of {topology.name} "
                   f"({n} nodes: {n * (n - 1)} pairs with their paths)")


def _first_routes(topology, seed, xs, ys):
    """First routes ``(ptr, edges)``: one shortest path per pair, ties broken at random
    (seeded) to spread load."""
    rng = np.random.default_rng(seed)
    first = 1.0 + rng.uniform(0.0, 0.5 / topology.num_nodes, size=topology.pairs[0].size)
    hop_first = distance_matrix(topology).astype(np.int64)
    _, ptr, edges = hop_shortest_paths(topology, first, hop_first, pairs=(xs, ys))
    return ptr, edges


def _dual_prices(topology, sol, cols, limits, pairs, cap_s):
    """Price a master's duals: ``(lengths, have, d_pair, bound)``, the link lengths, each
    pair's shortest current path and shortest path under them, and the dual bound."""
    pair, ptr, edges = cols
    xs, ys = pairs
    num_e = cap_s.size
    lengths = np.abs(sol.row_dual[:num_e])
    if not np.any(lengths > 0):
        lengths = np.ones(num_e)   # no duals: price with hop counts
    lengths = positive_lengths(lengths)
    plen = np.add.reduceat(lengths[edges], ptr[:-1]) if edges.size else np.zeros(pair.size)
    have = np.full(xs.size, np.inf)
    np.minimum.at(have, pair, plen)
    dist = (_shortest(topology, lengths, limits, xs[:0], ys[:0])[0] if limits is None
            else hop_shortest_paths(topology, lengths, limits, paths=False)[0])
    d_pair = dist[xs, ys]
    bound = float(cap_s @ lengths) / float(d_pair.sum())
    return lengths, have, d_pair, bound


def append_paths(cols, gain, nptr, nedges):
    """Append new paths (``nptr``, ``nedges``) of the pairs ``gain`` to the columns
    ``(pair, ptr, edges)``."""
    pair, ptr, edges = cols
    return (np.concatenate([pair, gain]), np.concatenate([ptr, ptr[-1] + nptr[1:]]),
            np.concatenate([edges, nedges]))


def _vertex_resolve(sol, master, threads, left):
    """Re-solve an interior-point ``master`` LP with crossover; return ``(solution,
    seconds)``, the vertex solution if it was found, else ``sol``."""
    again = solve_lp(*master, maximize=False, solver="ipm", crossover=True, threads=threads,
                     time_limit=left)
    return (again if again.ok else sol), again.seconds


def _path_result(topology, sol, columns, dual_bound, best_lengths, *, out_of_time, time_limit,
                 common):
    """The :class:`AlltoallResult` of :func:`path_throughput`'s last master solution
    (``columns``: ``(xs, ys, pair, ptr, edges, cap)``)."""
    xs, ys, pair, ptr, edges, cap = columns
    g = np.maximum(sol.x[:-1], 0.0)
    total = np.bincount(pair, weights=g, minlength=xs.size)
    paths, load, lam = routes(xs, ys, pair, ptr, edges, g / total[pair], cap, least=1e-9)
    util, link_load, gap, status, _ = route_summary(topology, paths, load, lam, dual_bound,
                                                    common["tolerance"], out_of_time)
    max_hops, rounds = common["max_hops"], common["rounds"]
    hop_text = "any path" if max_hops is None else f"paths of at most dist + {max_hops} links"
    stopped = f"time limit of {time_limit:g} s reached: " if out_of_time else ""
    message = (f"{stopped}lambda {lam:.6g} B/s per pair over {hop_text}, certified within "
               f"{max(gap, 0.0):.2g} (dual bound {dual_bound:.6g}); {rounds} rounds, "
               f"{len(paths)} paths")
    return AlltoallResult(
        lam=lam, status=status, message=message, dual_bound=dual_bound, utilization=util,
        link_load=link_load, lengths=best_lengths, paths=paths, **common)


def path_throughput(topology, *, max_hops=None, solver="auto", tolerance=1e-6, max_rounds=100,
                    time_limit=None, bounds=True, seed=0, threads=None, vertex=True,
                    progress=None):
    """Maximum uniform all-to-all throughput over paths of at most ``dist + max_hops`` links.

    Parameters
    ----------
    topology : Topology
    max_hops : int or None
        Extra hops allowed over each pair's shortest distance (0: shortest paths only);
        ``None``: any path (then ``lambda`` equals the link LP's).
    solver : str
        HiGHS solver for the restricted master LPs; ``"auto"`` (default) is the interior
        point, whose duals (with a crossover when they stall) drive the path pricing.
    tolerance : float
        Stop when the certified relative gap is at most this.
    max_rounds : int
        Column-generation rounds at most (status 2, ``NOT_PROVEN``, if the gap is still open).
    time_limit : float, optional
        Wall-clock seconds for the whole column generation.
    seed : int
        Tie-breaking among the first shortest paths.
    vertex : bool
        Re-solve the last master LP with crossover to a vertex: an interior-point optimum
        spreads each pair over every optimal path, a vertex uses few paths with simple
        (often small-denominator rational) shares, which whole chunks can match exactly.
    progress : callable, optional
        ``progress(round, max_rounds)`` after each round.

    Returns
    -------
    AlltoallResult
        ``method="path"``, with ``paths`` (routes and shares).
    """
    require_alltoall_topology(topology)
    deadline = deadline_after(time_limit)
    solver = "ipm" if solver == "auto" else solver
    _require_path_memory(topology)
    limits = hop_limits(topology, max_hops)
    bnd, early = bounds_or_disconnected(topology, "path", max_hops, bounds)
    if early is not None:
        return early
    start = time.perf_counter()
    cap = topology.pairs[2]
    scale = float(cap.max())
    xs, ys = np.nonzero(~np.eye(topology.num_nodes, dtype=bool))
    ptr, edges = _first_routes(topology, seed, xs, ys)
    gen = _PathColumns(topology, limits, (xs, ys), cap / scale, (np.arange(xs.size), ptr, edges),
                       solver=solver, threads=threads, tolerance=tolerance,
                       max_rounds=max_rounds, progress=progress)
    log = SolveLog(build_seconds=time.perf_counter() - start)
    run_rounds(gen, log, deadline=deadline, max_rounds=max_rounds)
    # the last complete master's flow is feasible; the round limit may also stop the rounds
    # after a round added paths that no master has seen yet
    if gen.good is not None and (gen.out_of_time or gen.cols is not gen.good[1]):
        gen.sol, gen.cols = gen.good
    left = time_left(deadline)
    sol = gen.sol
    if sol is not None and sol.ok and vertex and solver == "ipm" and not gen.exact_duals and \
            not gen.out_of_time and (left is None or left > 0):
        sol, seconds = _vertex_resolve(sol, gen.master, threads, left)
        log.solve_seconds += seconds
    common = result_fields(topology, "path", max_hops, bnd, solver=solver,
                           iterations=log.iterations, rounds=log.rounds,
                           build_seconds=log.build_seconds, solve_seconds=log.solve_seconds,
                           tolerance=tolerance)
    if sol is None or not sol.ok:
        status_text = (f"the time limit of {time_limit:g} s ran out first" if gen.out_of_time
                       else log.status)
        return failed_result(topology, f"HiGHS ({solver}) ended with status {status_text}",
                             **common)
    return _path_result(topology, sol, (xs, ys, *gen.cols, cap), gen.best_bound * scale,
                        gen.best_lengths, out_of_time=gen.out_of_time, time_limit=time_limit,
                        common=common)


class _PathColumns:
    """:func:`path_throughput`'s column generation (rounds run by :func:`run_rounds`): the
    paths so far ``cols`` (``pair, ptr, edges``), the last master LP and its solution, the last
    master solved in full (``good``: its solution and paths), the best certificate, whether
    the masters are solved to a vertex for exact duals, and whether the time ran out."""

    def __init__(self, topology, limits, pairs, cap_s, cols, *, solver, threads, tolerance,
                 max_rounds, progress):
        self.topology, self.limits, self.pairs, self.cap_s = topology, limits, pairs, cap_s
        self.cols = cols
        self.solver, self.threads, self.tolerance = solver, threads, tolerance
        self.max_rounds, self.progress = max_rounds, progress
        self.master = self.sol = self.good = None
        self.best_bound, self.best_lengths = np.inf, None
        self.exact_duals = self.out_of_time = False
        self.fresh = True     # False: re-solve the last master (with crossover), not a new one

    def solve(self, left):
        """Solve the master LP over the current paths with ``left`` seconds."""
        if self.fresh:
            pair, ptr, edges = self.cols
            self.master = _master(self.cap_s.size, self.cap_s, pair, ptr, edges,
                                  self.pairs[0].size)
        self.sol = solve_lp(*self.master, maximize=False, solver=self.solver,
                            threads=self.threads, crossover=self.exact_duals,
                            time_limit=left)
        return self.sol

    def advance(self, sol, rounds):
        """Price a solved master; add the paths that gain. Returns whether to go on."""
        self.good = (sol, self.cols)
        lengths, have, d_pair, bound = _dual_prices(self.topology, sol, self.cols, self.limits,
                                                    self.pairs, self.cap_s)
        if bound < self.best_bound:
            self.best_bound, self.best_lengths = bound, lengths
        lam_now = 1.0 / sol.x[-1] if sol.x[-1] > 0 else 0.0
        if self.progress:
            self.progress(rounds, self.max_rounds)
        if lam_now > 0 and self.best_bound <= lam_now * (1 + self.tolerance):
            return False
        gain = np.flatnonzero(d_pair < have * (1 - 1e-9))
        if gain.size == 0:
            # With exact duals no improving path means optimal and a tight certificate; an
            # interior point's approximate duals can stall short of it: retry at a vertex.
            if self.exact_duals or self.solver != "ipm":
                return False
            self.exact_duals, self.fresh = True, False
            return True
        self.fresh = True
        xs, ys = self.pairs
        _, nptr, nedges = _shortest(self.topology, lengths, self.limits, xs[gain], ys[gain])
        self.cols = append_paths(self.cols, gain, nptr, nedges)
        return True


def routes(xs, ys, pair, ptr, edges, share, cap, *, least=1e-12):
    """Paths ``edges[ptr[p]:ptr[p+1]]`` of pairs ``(xs[pair[p]], ys[pair[p]])`` with their shares
    as a :class:`PathSet`: the paths above ``least`` kept, shares renormalised per pair, sorted
    by source then destination; also the load per pair-link (in units of one pair's demand)
    and ``lambda = min_e c_e / load_e`` (so exactly feasible for the routes)."""
    keep = share > least
    hops = np.diff(ptr)
    num_pairs = xs.size
    kept = share[keep] / np.bincount(pair[keep], weights=share[keep],
                                     minlength=num_pairs)[pair[keep]]
    paths = PathSet(src=xs[pair[keep]], dst=ys[pair[keep]],
                    ptr=np.concatenate([[0], np.cumsum(hops[keep])]),
                    edges=edges[np.repeat(keep, hops)], share=kept)
    paths = _reorder(paths, np.lexsort((paths.dst, paths.src)))
    load = np.bincount(paths.edges, weights=np.repeat(paths.share, paths.hops),
                       minlength=cap.size)
    used = load > 0
    return paths, load, float(np.min(cap[used] / load[used]))


def route_summary(topology, paths, load, lam, dual_bound, tolerance, out_of_time):
    """What a result of routes reports: per-link utilization and load (B/s), the certified gap,
    the status (``SUCCESS`` within ``tolerance``, else ``LIMIT`` or ``NOT_PROVEN``) and how many
    pairs are split over more than one path."""
    util, link_load = link_utilization(topology, load * lam)
    gap = dual_bound / lam - 1.0
    status = (Status.SUCCESS if gap <= tolerance else
              Status.LIMIT if out_of_time else Status.NOT_PROVEN)
    split = int(np.count_nonzero(np.bincount(paths.src * topology.num_nodes + paths.dst) > 1))
    return util, link_load, gap, status, split


def take_paths(ptr, edges, order):
    """The CSR paths ``edges[ptr[p]:ptr[p+1]]`` for ``p`` in ``order``, as a new ``(ptr,
    edges)``."""
    hops = np.diff(ptr)[order]
    new_ptr = np.concatenate([[0], np.cumsum(hops)])
    pos = np.repeat(ptr[:-1][order] - new_ptr[:-1], hops) + np.arange(int(new_ptr[-1]))
    return new_ptr, edges[pos]


def _reorder(paths, order):
    ptr, edges = take_paths(paths.ptr, paths.edges, order)
    return PathSet(src=paths.src[order], dst=paths.dst[order], ptr=ptr, edges=edges,
                   share=paths.share[order])


def hop_frontier(topology, *, max_extra=None, tolerance=1e-6, solver="auto", size=None,
                    progress=None):
    """Throughput against the hop bound: the path LP for ``max_hops = 0, 1, 2, ...`` until it
    reaches the link LP's ``lambda`` (or ``max_extra``). Returns a list of dicts with
    ``max_hops``, ``lambda``, ``longest_path``, ``mean_hops`` (share-weighted) and
    ``fraction`` (of the unbounded optimum); the last entry is the unbounded optimum
    (``max_hops`` ``None``).

    With ``size`` (bytes per node), every bounded point also gets the time of the faster of the
    two schedules its routes give, the lockstep one (:func:`~topocoll.throughput.
    alltoall_schedule`) and the pipelined one (:func:`~topocoll.throughput.schedule.
    pipelined_alltoall_schedule`), verified and priced in the step model with the topology's
    latencies: ``schedule`` (which), ``schedule_time``, ``schedule_steps``, ``T_L`` and
    ``T_B``; the fastest point is marked ``best``. Short paths pay fewer latencies, long ones
    reach more throughput: small messages pick a small L.

    >>> from topocoll.topology import topology
    >>> [(p["max_hops"], round(p["lambda"], 4))
    ...  for p in hop_frontier(topology("genkautz:12,2", bandwidth=1.0))]
    [(0, 0.0667), (1, 0.0698), (None, 0.0698)]
    """
    best = link_throughput(topology, bounds=False, solver=solver, keep_flows=False)
    if not best.success:
        return []
    out, results = [], []
    limit = max_extra if max_extra is not None else topology.num_nodes - 1
    for extra in range(0, limit + 1):
        r = path_throughput(topology, max_hops=extra, bounds=False, solver=solver,
                            tolerance=tolerance)
        out.append(_point(r, best.lam))
        results.append(r)
        if progress:
            progress(extra + 1, limit + 1)
        if r.lam >= best.lam * (1 - 10 * tolerance):
            break
    out.append({"max_hops": None, "lambda": best.lam, "longest_path": None,
                "mean_hops": None, "fraction": 1.0})
    if size is not None:
        _schedule_times(topology, out, results, size)
    return out


def _schedule_times(topology, points, results, size):
    from ..schedule.cost import evaluate
    timed = []
    for point, r in zip(points, results):
        # the lockstep schedule (few steps: small messages) and the pipelined one (near the
        # LP: large messages); the faster one at this size counts
        options = [("lockstep", alltoall_schedule(r, topology))]
        if int(r.paths.hops.max()) > 1:
            options.append(("pipelined", pipelined_alltoall_schedule(r, topology)))
        evs = [(evaluate(s, size), kind) for kind, s in options]
        ev, kind = min(evs, key=lambda item: item[0].time)
        point.update({"schedule_time": ev.time, "schedule_steps": ev.steps, "T_L": ev.T_L,
                      "T_B": ev.T_B, "schedule": kind, "best": False})
        timed.append(point)
    if timed:
        min(timed, key=lambda p: p["schedule_time"])["best"] = True


def _point(r, best):
    p = r.paths
    mean = float(np.sum(p.share * p.hops) / (r.num_nodes * (r.num_nodes - 1)))
    return {"max_hops": r.max_hops, "lambda": r.lam, "longest_path": r.longest_path,
            "mean_hops": mean, "fraction": r.lam / best if best > 0 else float("nan")}
