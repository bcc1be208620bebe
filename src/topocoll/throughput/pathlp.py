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

from ..errors import InputTypeError, TopologyError
from ..limits import require_memory
from ..results import Status
from ..topology.cuts import throughput_bounds
from ..topology.metrics import distance_matrix, unreachable_pair
from . import lp as _lp
from .lp import solve_lp
from .dual import positive_lengths, hop_shortest_paths, link_ids, tree_paths
from .linklp import (disconnected_result, link_throughput, link_utilization,
                     require_alltoall_topology)
from .result import AlltoallResult, PathSet
from .schedule import alltoall_schedule, pipelined_alltoall_schedule

__all__ = ["path_throughput", "hop_frontier", "hop_limits"]


def hop_limits(topology, max_hops):
    """Per-pair hop bound ``dist + max_hops`` (N x N int64), or ``None`` when unbounded."""
    if max_hops is None:
        return None
    if isinstance(max_hops, bool) or not isinstance(max_hops, (int, np.integer)):
        raise InputTypeError(f"max_hops must be a whole number of extra hops, got {max_hops!r}")
    if max_hops < 0:
        raise TopologyError(f"max_hops (extra hops over the shortest distance) must be >= 0, "
                            f"got {max_hops}")
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


def _failed_result(topology, message, common):
    """The failed :class:`AlltoallResult` when no master LP was solved in full."""
    zeros = np.zeros(topology.num_links)
    return AlltoallResult(lam=0.0, status=Status.FAILED, message=message,
                          dual_bound=float("inf"), utilization=zeros, link_load=zeros, **common)


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
    deadline = None if time_limit is None else _lp.clock() + float(time_limit)
    solver = "ipm" if solver == "auto" else solver
    _require_path_memory(topology)
    limits = hop_limits(topology, max_hops)
    bnd = throughput_bounds(topology) if bounds else {}
    if unreachable_pair(topology) is not None:
        return disconnected_result(topology, "path", max_hops, bnd)
    start = time.perf_counter()
    n = topology.num_nodes
    cap = topology.pairs[2]
    num_e = cap.size
    scale = float(cap.max())
    cap_s = cap / scale
    xs, ys = np.nonzero(~np.eye(n, dtype=bool))
    num_pairs = xs.size
    ptr, edges = _first_routes(topology, seed, xs, ys)
    pair = np.arange(num_pairs)
    build = time.perf_counter() - start
    solve_seconds, iterations, status_text, rounds, sol = 0.0, 0, "", 0, None
    best_bound, best_lengths = np.inf, None
    # exact_duals: crossover for vertex duals once interior duals stall
    exact_duals, fresh, out_of_time = False, True, False
    good = None           # the last master solved in full: (sol, pair, ptr, edges)
    for rounds in range(1, max_rounds + 1):
        left = None if deadline is None else deadline - _lp.clock()
        if left is not None and left <= 0:
            out_of_time = True
            break
        if fresh:
            cost, matrix, row_lower, row_upper = _master(num_e, cap_s, pair, ptr, edges,
                                                         num_pairs)
        sol = solve_lp(cost, matrix, row_lower, row_upper, maximize=False, solver=solver,
                       threads=threads, crossover=exact_duals, time_limit=left)
        solve_seconds += sol.seconds
        iterations += sol.iterations
        status_text = sol.status
        if not sol.ok:
            out_of_time = deadline is not None and _lp.clock() >= deadline
            break
        good = (sol, pair, ptr, edges)
        lengths, have, d_pair, bound = _dual_prices(topology, sol, (pair, ptr, edges), limits,
                                                    (xs, ys), cap_s)
        if bound < best_bound:
            best_bound, best_lengths = bound, lengths
        lam_now = 1.0 / sol.x[-1] if sol.x[-1] > 0 else 0.0
        if progress:
            progress(rounds, max_rounds)
        if lam_now > 0 and best_bound <= lam_now * (1 + tolerance):
            break
        gain = np.flatnonzero(d_pair < have * (1 - 1e-9))
        if gain.size == 0:
            # With exact duals no improving path means optimal and a tight certificate; an
            # interior point's approximate duals can stall short of it: retry at a vertex.
            if exact_duals or solver != "ipm":
                break
            exact_duals, fresh = True, False
            continue
        fresh = True
        _, nptr, nedges = _shortest(topology, lengths, limits, xs[gain], ys[gain])
        pair, ptr, edges = append_paths((pair, ptr, edges), gain, nptr, nedges)
    if out_of_time and good is not None:   # the last complete master's flow is feasible
        sol, pair, ptr, edges = good
    left = None if deadline is None else deadline - _lp.clock()
    if sol is not None and sol.ok and vertex and solver == "ipm" and not exact_duals and \
            not out_of_time and (left is None or left > 0):
        sol, seconds = _vertex_resolve(sol, (cost, matrix, row_lower, row_upper), threads, left)
        solve_seconds += seconds
    common = dict(method="path", max_hops=max_hops, num_nodes=n, topology=topology.name,
                  bounds=bnd, solver=solver, iterations=iterations, rounds=rounds,
                  build_seconds=build, solve_seconds=solve_seconds, tolerance=tolerance)
    if sol is None or not sol.ok:
        if out_of_time:
            status_text = f"the time limit of {time_limit:g} s ran out first"
        return _failed_result(topology, f"HiGHS ({solver}) ended with status {status_text}",
                              common)
    return _path_result(topology, sol, (xs, ys, pair, ptr, edges, cap), best_bound * scale,
                        best_lengths, out_of_time=out_of_time, time_limit=time_limit,
                        common=common)


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
