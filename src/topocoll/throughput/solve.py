"""The entry point of the throughput LPs: :func:`throughput` picks the symmetric, link or path
LP."""

from ..errors import UnsupportedError
from ..topology import Topology, topology as _topology
from .linklp import link_throughput
from .pathlp import path_throughput
from .symmetric import symmetric_throughput

__all__ = ["throughput", "METHODS"]

#: The LP formulations.
METHODS = ("symmetric", "link", "path")


def throughput(topology, *, max_hops=None, method=None, bandwidth=None, solver="auto",
               bounds=True, tolerance=1e-6, time_limit=None, seed=0, threads=None,
               progress=None):
    """Uniform all-to-all throughput ``lambda`` of a topology, with bounds and a certificate.

    Parameters
    ----------
    topology : Topology or str
        A topology or a spec (``"torus:4x4"``) or file.
    max_hops : int, optional
        Hop bound of the path LP: every pair uses paths of at most ``dist(x, y) + max_hops``
        links (0: shortest paths only). Implies ``method="path"``.
    method : {"symmetric", "link", "path"}, optional
        ``"symmetric"`` (the default without ``max_hops`` on topologies with a translation
        symmetry: tori, rings, circulants, hypercubes, Hamming and complete graphs): one
        source's flow under the group, exact and certified like the others, in seconds at
        thousands of nodes. ``"link"`` (the default otherwise): link-based multicommodity flow
        grouped by source. ``"path"``: path LP by column generation (gives routes for
        schedules).
    bandwidth : float or str, optional
        Replace every link's bandwidth (``1`` for link units).
    solver : str
        HiGHS solver: ``"auto"`` (default: interior point for small LPs, PDLP for large
        ones), ``"ipm"`` or ``"pdlp"``.
    bounds : bool
        Compute the topology bounds into ``result.bounds`` (skip them in tight loops).
    tolerance : float
        Relative gap to the dual certificate under which ``status`` is 0 (``SUCCESS``).
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
    group = None
    if method is None:
        if max_hops is None:
            from ..topology.symmetry import translation_group

            group = translation_group(topology) if not topology.switches else None
        method = "path" if max_hops is not None else ("symmetric" if group else "link")
    if method not in METHODS:
        raise UnsupportedError(f"unknown method {method!r}; choose symmetric, link or path")
    if method == "symmetric":
        if max_hops is not None:
            raise UnsupportedError("the symmetric LP has no hop bound; use method='path' with "
                                   "max_hops")
        return symmetric_throughput(topology, group, solver=solver, time_limit=time_limit,
                                    bounds=bounds, tolerance=tolerance, threads=threads,
                                    progress=progress)
    if method == "link":
        if max_hops is not None:
            raise UnsupportedError("the link LP has no hop bound; use method='path' with "
                                   "max_hops")
        return link_throughput(topology, solver=solver, time_limit=time_limit, bounds=bounds,
                               tolerance=tolerance, threads=threads, progress=progress)
    return path_throughput(topology, max_hops=max_hops, solver=solver, tolerance=tolerance,
                           time_limit=time_limit, bounds=bounds, seed=seed, threads=threads,
                           progress=progress)
