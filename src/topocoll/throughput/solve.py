"""The entry point of the throughput LPs: :func:`throughput` picks the symmetric, link, path,
balancing or column-generation solver."""

import time

from ..errors import ResourceLimitError, UnsupportedError
from ..results import Status
from ..topology import Topology, topology as _topology
from ..topology.cuts import throughput_bounds
from ..topology.metrics import unreachable_pair
from .balance import balanced_throughput, worth_balancing
from .colgen import DEFAULT_TOLERANCE as COLGEN_TOLERANCE, colgen_throughput
from .linklp import link_throughput
from .pathlp import path_throughput
from .symmetric import symmetric_throughput

__all__ = ["throughput", "alltoall_routes", "METHODS", "COLGEN_COLUMNS"]

#: The LP formulations.
METHODS = ("symmetric", "link", "path", "colgen", "balance")
#: Without a symmetry, the default is the column generation from this many link-LP columns
#: (N x links) on: 128-node 4-regular random graphs (65k columns) take 6 s by column
#: generation against about 20 s for the whole link LP, while on 64 nodes (16-32k) the whole
#: LP is as fast and exact to 1e-9.
COLGEN_COLUMNS = 60_000


def throughput(topology, *, max_hops=None, method=None, bandwidth=None, solver="auto",
               bounds=True, tolerance=None, time_limit=None, seed=0, threads=None,
               progress=None):
    """Uniform all-to-all throughput ``lambda`` of a topology, with bounds and a certificate.

    Parameters
    ----------
    topology : Topology or str
        A topology or a spec (``"torus:4x4"``) or file.
    max_hops : int, optional
        Hop bound of the path LP: every pair uses paths of at most ``dist(x, y) + max_hops``
        links (0: shortest paths only). Implies ``method="path"``.
    method : {"symmetric", "link", "path", "colgen", "balance"}, optional
        ``"symmetric"`` (the default without ``max_hops`` on topologies with a translation
        symmetry: tori, rings, circulants, hypercubes, Hamming and complete graphs): one
        source's flow under the group, exact and certified like the others, in seconds at
        thousands of nodes. ``"link"`` (the default otherwise below :data:`COLGEN_COLUMNS`
        link-LP columns): link-based multicommodity flow grouped by source. ``"colgen"`` (the
        default from there on, after ``"balance"``): path column generation seeded by
        multiplicative weights, with routes
        (:func:`~topocoll.throughput.colgen.colgen_throughput`). ``"balance"``: shortest paths
        balanced to the distance bound
        (:func:`~topocoll.throughput.balance.balanced_throughput`), optimal in seconds where
        that bound is tight (random regular graphs of degree 8) and status 2
        (``NOT_PROVEN``) elsewhere; by default it is tried first wherever the column
        generation would run and :func:`~topocoll.throughput.balance.worth_balancing` does
        not rule it out, and the column generation takes over when it does not reach the
        bound. ``"path"``: the path LP with a hop bound (gives routes for schedules).
    bandwidth : float or str, optional
        Replace every link's bandwidth (``1`` for link units).
    solver : str
        HiGHS solver: ``"auto"`` (default: interior point for small LPs, PDLP for large
        ones), ``"ipm"`` or ``"pdlp"``.
    bounds : bool
        Compute the topology bounds into ``result.bounds`` (skip them in tight loops).
    tolerance : float, optional
        Relative gap to the dual certificate under which ``status`` is 0 (``SUCCESS``); the
        column generation stops there. Default ``1e-4`` for ``colgen`` and ``balance``,
        ``1e-6`` for the others (which reach about 1e-9 anyway).
    time_limit : float, optional
        Seconds for the solver.
    seed : int
        Tie-breaking in the path LP's first routes.
    progress : callable, optional
        ``progress(done, total)``.

    Returns
    -------
    AlltoallResult
        ``lam``, ``time(size)``, ``status``, ``message``, ``utilization`` (per link),
        ``bounds``, ``dual_bound``; a topology that is not strongly connected gives
        ``lam == 0.0`` and status 4 (``INFEASIBLE``) (no exception: a rewiring loop may meet
        one).
    """
    if not isinstance(topology, Topology):
        topology = _topology(topology)
    if bandwidth is not None:
        from ..units import parse_bandwidth

        topology = topology.with_links(bandwidth=parse_bandwidth(bandwidth))
    auto = method is None
    group = None
    if method is None:
        method, group = _default_method(topology, max_hops)
    if method not in METHODS:
        raise UnsupportedError(f"unknown method {method!r}; choose {', '.join(METHODS)}")
    if method != "path" and max_hops is not None:
        raise UnsupportedError(f"the {method} LP has no hop bound; use method='path' with "
                               "max_hops")
    if tolerance is None:
        tolerance = COLGEN_TOLERANCE if method in ("colgen", "balance") else 1e-6
    if method == "symmetric":
        return symmetric_throughput(topology, group, solver=solver, time_limit=time_limit,
                                    bounds=bounds, tolerance=tolerance, threads=threads,
                                    progress=progress)
    if method == "balance":
        return balanced_throughput(topology, tolerance=tolerance, time_limit=time_limit,
                                   bounds=bounds, seed=seed, progress=progress)
    if method == "colgen" and auto and unreachable_pair(topology) is None:
        began = time.perf_counter()
        res = None
        try:
            if worth_balancing(topology, tolerance):
                # the bounds once, for whichever answers (the column generation computes its own)
                res = balanced_throughput(topology, tolerance=tolerance, time_limit=time_limit,
                                          bounds=False, seed=seed, progress=progress)
        except ResourceLimitError:      # its sampled paths need more than the column generation
            pass
        if res is not None and res.status == Status.SUCCESS:
            if bounds:
                res.bounds = throughput_bounds(topology)
            return res
        if time_limit is not None:
            time_limit = max(float(time_limit) - (time.perf_counter() - began), 1e-3)
    if method == "colgen":
        return colgen_throughput(topology, tolerance=tolerance, solver="ipm" if solver == "auto"
                                 else solver, time_limit=time_limit, bounds=bounds,
                                 threads=threads, progress=progress)
    if method == "link":
        return link_throughput(topology, solver=solver, time_limit=time_limit, bounds=bounds,
                               tolerance=tolerance, threads=threads, progress=progress)
    return path_throughput(topology, max_hops=max_hops, solver=solver, tolerance=tolerance,
                           time_limit=time_limit, bounds=bounds, seed=seed, threads=threads,
                           progress=progress)


def _default_method(topology, max_hops):
    """``(method, group)``: the method :func:`throughput` picks when none is given, and the
    translation group it found (``None`` if it did not look or found none)."""
    group = None
    if max_hops is None:
        from ..topology.symmetry import translation_group

        group = translation_group(topology) if not topology.switches else None
    if max_hops is not None:
        return "path", group
    if group:
        return "symmetric", group
    columns = topology.num_nodes * topology.pairs[0].size
    return ("colgen" if columns >= COLGEN_COLUMNS else "link"), group


def alltoall_routes(topology, *, time_limit=None, threads=None, progress=None):
    """The optimal all-to-all flow as routes (``result.paths``), for schedules: the path LP
    without a hop bound below :data:`COLGEN_COLUMNS` link-LP columns, the column generation
    from there on; both end at a vertex optimum (few paths per pair, simple shares)."""
    if not isinstance(topology, Topology):
        topology = _topology(topology)
    if topology.num_nodes * topology.pairs[0].size >= COLGEN_COLUMNS:
        return colgen_throughput(topology, bounds=False, time_limit=time_limit,
                                 threads=threads, vertex=True, progress=progress)
    return path_throughput(topology, bounds=False, time_limit=time_limit, threads=threads,
                           progress=progress)
