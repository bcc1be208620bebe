"""All-to-all on shortest paths balanced to the distance bound: the optimum in seconds where
the distance bound is tight.

With unit lengths on every link the certificate of :mod:`~topocoll.throughput.dual` is the
*distance bound* ``lambda <= sum_e c_e / sum_{x != y} dist(x, y)``. It is reached exactly when
every pair can travel on shortest paths only with every link loaded in proportion to its
bandwidth. On many topologies it is: vertex- and edge-transitive ones (tori, hypercubes,
complete and complete bipartite graphs) and, measured, random regular graphs of degree 8 from
about 64 nodes on and some of degree 6. There the optimum needs no LP: any *balanced*
shortest-path routing is optimal, and the unit lengths certify it for free.

Finding one is a feasibility problem with one equation per link. Each pair's shares over its
shortest paths (a sample of them, :func:`shortest_path_sample`) must sum to 1 and the link
loads ``B f`` must equal the targets ``t_e = c_e sum dist / sum c``. From even shares,
*affine scaling* steps move the shares by the least weighted change ``d`` that removes the
load residual ``r = t - B f``:

    minimise sum_p d_p^2 / f_p^2   subject to   B d = r,   sum_{p of a pair} d_p = 0,

whose solution is ``d_p = f_p^2 (g_p - mean_pair g)`` with ``g = B^T nu`` and ``nu`` solving
a system in *link* space, ``B W B^T nu = r`` with the pairs' means projected out. That system
has one row per link, whatever the number of pairs, and conjugate gradients solve it in a few
dozen products with ``B``. The step is cut to stay inside ``f > 0``; weighting by ``f^2``
makes it a relative change, so shares near zero barely move and the steps lengthen as the
residual shrinks. A full step removes the residual to rounding: at 1024 nodes of degree 8
(a million pairs, 2.3 million paths) three steps take the gap from 0.27 to 2e-10 in about
15 s, where the column generation took nine and a half minutes.

Where the distance bound is not tight the steps shrink and the gap stalls: two steps in a row
that cut it by less than a fifth end the attempt (status 2, ``NOT_PROVEN``, with the valid
flow reached so far), and :func:`~topocoll.throughput.solve.throughput` falls back to the
column generation. A link that no pair can reroute, loaded off its target, ends it at once.

>>> from topocoll.topology import topology
>>> r = balanced_throughput(topology("torus:4x4", bandwidth=1.0), bounds=False)
>>> round(r.lam, 6), r.status_name, r.method           # 8/k^3
(0.125, 'SUCCESS', 'balance')
"""

import time

import numpy as np
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator, cg

from ..errors import InputTypeError
from ..limits import require_memory
from ..results import Status
from ..topology.cuts import distance_bound
from ..topology.metrics import distance_matrix
from ..units import whole_number
from .dual import in_links
from .frontdoor import bounds_or_disconnected, require_alltoall_topology
from .mwu import mwu_lengths
from .pathlp import route_summary, routes, take_paths
from .result import AlltoallResult

__all__ = ["balanced_throughput", "shortest_path_sample", "default_samples", "worth_balancing"]

#: Random shortest paths drawn per pair by default (distinct ones are kept): about
#: ``DRAWS_PER_LINK`` per link in all, but no fewer than ``MIN_SAMPLES`` and no more than
#: ``MAX_SAMPLES`` a pair. Small graphs need more draws a pair: a link is shared by fewer
#: pairs, so fewer routes can even it out (64 nodes of degree 6 stalled at a gap of 3e-2 with
#: 8 draws a pair and balanced with 32); at 1024 nodes of degree 8 eight give 2.3 million
#: paths and balance in three steps.
DRAWS_PER_LINK = 1000
MIN_SAMPLES, MAX_SAMPLES = 8, 64
#: :func:`worth_balancing`: the most links all sampled paths may hold together.
MAX_AUTO_PATH_LINKS = 64_000_000
#: :func:`worth_balancing`: multiplicative-weights steps of the probe.
PROBE_STEPS = 4
#: Affine-scaling steps at most.
DEFAULT_MAX_STEPS = 30
#: A step that leaves more than this fraction of the gap is a stall; two in a row end the try.
STALL = 0.8
#: Conjugate-gradient iterations per step at most (20-30 where the bound is tight).
MAX_CG = 300
#: Shares stay this fraction of the way from zero on a step.
STEP_BACK = 0.95


def worth_balancing(topology, tolerance=1e-4):
    """Whether :func:`balanced_throughput` may reach the distance bound, by two cheap tests
    (``False`` is certain only for the second):

    * the sampled paths would hold at most :data:`MAX_AUTO_PATH_LINKS` links in all (graphs
      of large diameter, such as a 32x32 mesh with 176 million, are not tried: there an
      attempt took 10 minutes and 7 GB before it failed);
    * :data:`PROBE_STEPS` multiplicative-weights steps
      (:func:`~topocoll.throughput.mwu.mwu_lengths`, step size 1) do not find lengths whose certificate is below the distance
      bound by more than ``tolerance``: such lengths prove the bound is not the optimum (on a
      24x24 mesh 6% below it, on Slim Fly 1.6%, in about a second).

    >>> from topocoll.topology import topology
    >>> worth_balancing(topology("torus:4x4")), worth_balancing(topology("mesh:6x6"))
    (True, False)
    """
    dist = distance_matrix(topology)
    if int(dist.sum()) * default_samples(topology) > MAX_AUTO_PATH_LINKS:
        return False
    probe = mwu_lengths(topology, steps=PROBE_STEPS, eps=1.0, keep=1)
    return probe.bound * (1.0 + float(tolerance)) >= distance_bound(topology)


def default_samples(topology):
    """Draws a pair for :func:`shortest_path_sample` (see :data:`DRAWS_PER_LINK`).

    >>> from topocoll.topology import topology
    >>> default_samples(topology("randomregular:1024,8")), default_samples(topology("ring:8"))
    (8, 64)
    """
    n = topology.num_nodes
    want = -(-DRAWS_PER_LINK * topology.pairs[0].size // max(n * (n - 1), 1))
    return int(min(max(want, MIN_SAMPLES), MAX_SAMPLES))


def shortest_path_sample(topology, samples=MIN_SAMPLES, *, seed=0):
    """Up to ``samples`` distinct random shortest (fewest-link) paths for every ordered pair.

    Each draw walks back from the destination, choosing among the in-neighbours one link
    closer to the source uniformly at random (all pairs at once); repeated paths are dropped.

    Parameters
    ----------
    topology : Topology
        Strongly connected, without switches.
    samples : int
        Draws per pair.
    seed : int

    Returns
    -------
    pair, ptr, edges : numpy.ndarray
        Path ``p`` belongs to pair ``pair[p]`` (index into the row-major ordered pairs
        ``x != y``) and runs over the pair-links ``edges[ptr[p]:ptr[p+1]]``, source side first;
        paths are sorted by pair.

    Examples
    --------
    >>> from topocoll.topology import topology
    >>> pair, ptr, edges = shortest_path_sample(topology("hypercube:3"), samples=20)
    >>> int(np.bincount(pair).max())          # opposite corners: 3! shortest paths
    6
    """
    samples = whole_number(samples, "samples")
    psrc, pdst, _, _ = topology.pairs
    n = topology.num_nodes
    dist = distance_matrix(topology)
    into = in_links(pdst, n)
    src_of = np.append(psrc, 0)[into]                  # the padding (-1) reads a dummy node
    xs, ys = np.nonzero(~np.eye(n, dtype=bool))
    hops = dist[xs, ys].astype(np.int64)
    ptr = np.concatenate([[0], np.cumsum(hops)])
    rng = np.random.default_rng(seed)
    tag = rng.integers(1, np.iinfo(np.int64).max, size=psrc.size, dtype=np.int64).astype(np.uint64)
    hashes = np.empty((xs.size, samples), dtype=np.uint64)
    kept_pairs, kept_ptrs, kept_edges = [], [], []
    for k in range(samples):
        edges = np.empty(int(ptr[-1]), dtype=np.int64)
        cur, left = ys.copy(), hops.copy()
        active = np.arange(xs.size)
        while active.size:
            link = into[cur[active]]
            ok = (link >= 0) & (dist[xs[active, None], src_of[cur[active]]]
                                == (left[active] - 1)[:, None])
            pick = link[np.arange(active.size),
                        np.argmax(np.where(ok, rng.random(link.shape), -1.0), axis=1)]
            left[active] -= 1
            edges[ptr[active] + left[active]] = pick
            cur[active] = psrc[pick]
            active = active[left[active] > 0]
        hashes[:, k] = np.add.reduceat(tag[edges], ptr[:-1]) if edges.size else 0
        # only paths this pair has not drawn before are kept (peak memory: one draw)
        fresh = np.flatnonzero(np.all(hashes[:, :k] != hashes[:, k:k + 1], axis=1))
        kept_pairs.append(fresh)
        fresh_ptr, fresh_edges = take_paths(ptr, edges, fresh)
        kept_ptrs.append(fresh_ptr)
        kept_edges.append(fresh_edges)
    # all draws' paths in one CSR, then sorted by pair (stable: by draw within a pair)
    pair = np.concatenate(kept_pairs)
    offsets = np.cumsum([0] + [e.size for e in kept_edges[:-1]])
    all_ptr = np.concatenate([p[:-1] + o for p, o in zip(kept_ptrs, offsets)]
                             + [[sum(e.size for e in kept_edges)]])
    order = np.argsort(pair, kind="stable")
    out_ptr, out_edges = take_paths(all_ptr, np.concatenate(kept_edges), order)
    return pair[order], out_ptr, out_edges


def _balance(matrix, fixed_load, target, pair_of, f, *, tolerance, max_steps, deadline,
             progress):
    """Affine-scaling steps on the free paths' shares ``f`` (modified in place) towards loads
    equal to ``target``: ``(steps, cg_iterations, reason)``, ``reason`` empty on success."""
    num_e = target.size
    mt = matrix.T.tocsr()
    num_groups = int(pair_of.max()) + 1 if pair_of.size else 0
    stuck = np.asarray(matrix.sum(axis=1)).ravel() == 0
    off = stuck & (np.abs(fixed_load - target) > tolerance * target)
    if np.any(off):
        return 0, 0, (f"{int(off.sum())} links carry only pairs with one shortest path and "
                      f"are loaded off their share")
    last_gap = None
    stalls = steps = iterations = 0
    for steps in range(max_steps + 1):
        load = fixed_load + matrix @ f
        r = target - load
        gap = float(np.max(load / target)) - 1.0
        if progress:
            progress(steps, max_steps)
        if gap <= tolerance:
            return steps, iterations, ""
        if steps == max_steps:
            break
        if deadline is not None and time.perf_counter() >= deadline:
            return steps, iterations, "the time limit ran out"
        if last_gap is not None:
            stalls = stalls + 1 if gap > STALL * last_gap else 0
            if stalls >= 2:
                return steps, iterations, (f"the shortest paths do not balance: the gap stalls "
                                           f"at {gap:.2g}")
        last_gap = gap
        w = f * f
        wsum = np.bincount(pair_of, weights=w, minlength=num_groups)
        wsum[wsum <= 0] = 1.0

        def reduced(g, w=w, wsum=wsum):
            mean = np.bincount(pair_of, weights=w * g, minlength=num_groups) / wsum
            return w * (g - mean[pair_of])

        diag = matrix @ w
        scale = np.where(diag > 0, 1.0 / np.where(diag > 0, diag, 1.0), 0.0)
        op = LinearOperator((num_e, num_e), dtype=np.float64,
                            matvec=lambda v: matrix @ reduced(mt @ v))
        pre = LinearOperator((num_e, num_e), dtype=np.float64, matvec=lambda v: v * scale)
        count = [0]
        nu, _ = cg(op, r - r.mean(), rtol=1e-9, maxiter=MAX_CG, M=pre,
                   callback=lambda _: count.__setitem__(0, count[0] + 1))
        iterations += count[0]
        d = reduced(mt @ nu)
        down = d < 0
        room = float(np.min(-f[down] / d[down])) if np.any(down) else np.inf
        f += min(1.0, STEP_BACK * room) * d
    return steps, iterations, f"{max_steps} steps left a gap of {gap:.2g}"


def _free_paths(pair, ptr, edges, num_pairs, num_e):
    """The balancing problem of sampled paths: ``(share, free, fixed_load, matrix, group)``,
    even shares, which paths are free (their pair has more than one), the load of the fixed
    ones per link, the free paths' link incidence (links x free paths) and each free path's
    pair among the free pairs."""
    hops = np.diff(ptr)
    count = np.bincount(pair, minlength=num_pairs)
    share = 1.0 / count[pair]
    free = count[pair] > 1
    seg_free = np.repeat(free, hops)
    fixed_load = np.bincount(edges[~seg_free], minlength=num_e).astype(np.float64)
    free_idx = np.flatnonzero(free)
    col = np.repeat(np.arange(free_idx.size), hops[free])
    matrix = sp.csr_matrix((np.ones(col.size), (edges[seg_free], col)),
                           shape=(num_e, free_idx.size))
    _, group = np.unique(pair[free], return_inverse=True)
    return share, free, fixed_load, matrix, group


def balanced_throughput(topology, *, tolerance=1e-4, samples=None,
                        max_steps=DEFAULT_MAX_STEPS, seed=0, time_limit=None, bounds=True,
                        progress=None):
    """Uniform all-to-all ``lambda`` by balancing shortest paths to the distance bound.

    Optimal and certified (by unit lengths) where the distance bound is tight; elsewhere a
    valid flow below it with status 2 (``NOT_PROVEN``). See the module docstring.

    Parameters
    ----------
    topology : Topology
        Without switches; a topology that is not strongly connected gives ``lam == 0`` and
        status 4 (``INFEASIBLE``).
    tolerance : float
        Success when ``distance_bound / lam - 1`` is at most this (default ``1e-4``; the steps
        go on to about ``tolerance / 100``, which usually costs nothing: the last step is
        exact).
    samples : int, optional
        Random shortest paths drawn per pair (:func:`shortest_path_sample`; default
        :func:`default_samples`, 8 to 64 by size).
    max_steps : int
        Affine-scaling steps at most.
    seed : int
        The paths' draws.
    time_limit : float, optional
        Seconds; when they run out, the flow so far with status 1 (``LIMIT``).
    bounds : bool
        Also compute the topology bounds.
    progress : callable, optional
        ``progress(done, total)`` per step.

    Returns
    -------
    AlltoallResult
        ``method="balance"``, ``max_hops=None`` (the certificate bounds every routing),
        ``lengths`` all ones, ``paths`` the balanced shortest paths.
    """
    require_alltoall_topology(topology)
    if not 0 < float(tolerance) < 1:
        raise InputTypeError(f"tolerance must be a number in (0, 1), got {tolerance!r}")
    if samples is not None:
        samples = whole_number(samples, "samples")
    max_steps = whole_number(max_steps, "max_steps", 0)
    began = time.perf_counter()
    deadline = None if time_limit is None else began + float(time_limit)
    n = topology.num_nodes
    bnd, early = bounds_or_disconnected(topology, "balance", None, bounds)
    if early is not None:
        return early
    psrc, _, cap, _ = topology.pairs
    num_e = psrc.size
    total_hops = int(distance_matrix(topology).sum())
    if samples is None:
        samples = default_samples(topology)
    require_memory(total_hops * (16 * samples + 24) + 8 * n * n * (samples + 2),
                   f"the balanced shortest paths of {topology.name} ({n} nodes, "
                   f"{samples} draws a pair)")
    pair, ptr, edges = shortest_path_sample(topology, samples, seed=seed)
    num_pairs = n * (n - 1)
    share, free, fixed_load, matrix, group = _free_paths(pair, ptr, edges, num_pairs, num_e)
    target = cap * (total_hops / float(cap.sum()))
    build = time.perf_counter() - began
    f = share[free].copy()
    steps, iterations, reason = _balance(matrix, fixed_load, target, group.astype(np.int64), f,
                                         tolerance=float(tolerance) / 100, max_steps=max_steps,
                                         deadline=deadline, progress=progress)
    share[free] = np.maximum(f, 0.0)
    xs, ys = np.nonzero(~np.eye(n, dtype=bool))
    paths, load, lam = routes(xs, ys, pair, ptr, edges, share, cap)
    lengths = np.ones(num_e)
    dual_bound = distance_bound(topology)   # the certificate of unit lengths
    out_of_time = deadline is not None and time.perf_counter() >= deadline
    util, link_load, gap, status, split = route_summary(topology, paths, load, lam, dual_bound,
                                                        tolerance, out_of_time)
    why = "" if status == Status.SUCCESS else f"; not at the distance bound: {reason}"
    message = (f"lambda {lam:.6g} B/s per pair, within {max(gap, 0.0):.2g} of the distance "
               f"bound {dual_bound:.6g}; {steps} balancing step{'s' if steps != 1 else ''} "
               f"({iterations} conjugate-gradient iterations), {split} of {num_pairs} pairs "
               f"split over {len(paths)} shortest paths{why}")
    return AlltoallResult(
        lam=lam, status=status, message=message, method="balance", max_hops=None, num_nodes=n,
        topology=topology.name, dual_bound=dual_bound, utilization=util, link_load=link_load,
        bounds=bnd, lengths=lengths, paths=paths, solver="cg", iterations=iterations,
        rounds=steps, build_seconds=build, solve_seconds=time.perf_counter() - began - build,
        tolerance=tolerance)
