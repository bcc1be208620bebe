"""All-to-all throughput of a translation-symmetric topology from one source's flow.

On a Cayley graph of an abelian group (tori, rings, circulants, hypercubes, Hamming and complete
graphs; :func:`~topocoll.topology.symmetry.translation_group` finds and verifies the group) the
uniform multicommodity flow LP has an optimum that the translations ``x -> x + g`` leave
unchanged: average any optimum over the group. Such a flow is fixed by what source 0 sends,
and the load it puts on a link ``u -> v`` is the sum of source 0's flow over the link's *orbit*,
the N links ``u + g -> v + g`` of the same label ``v - u`` (each translation moves a link to a
different one). So the LP shrinks to one commodity and one capacity row per orbit:

    minimise z
    sum_{e in O} f[e] <= z c_O                     for every orbit O of links
    in(v) - out(v) = 1                             for every v != 0

with ``lambda = 1 / z``: ``|E| + 1`` columns instead of ``N |E| + 1``.

The certificate stays independent of the solver: orbit lengths ``l_O`` (the capacity rows'
duals; any lengths >= 0 do) give the bound ``sum_e c_e l_e / sum_{x != y} dist_l(x, y)``
(docs/math.md section 6), and with translation-invariant lengths ``dist_l(x, y) =
dist_l(0, y - x)``, so one shortest-path tree from node 0 evaluates it: ``sum_O c_O l_O /
sum_t dist_l(0, t)``. The primal side is checked too: the returned flow is mapped to every
source by the group and its link loads are recomputed from scratch.

>>> from topocoll.topology import topology
>>> r = symmetric_throughput(topology("torus:6x6", bandwidth=1.0))
>>> round(r.lam * 6 * 36, 6), r.status_name, r.method       # closed form 8 / (k k^2)
(8.0, 'SUCCESS', 'symmetric')
"""

import time

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import dijkstra

from ..errors import UnsupportedError
from ..results import Status
from ..topology.symmetry import translation_group
from . import lp as _lp
from .frontdoor import (bounds_or_disconnected, failed_result, require_alltoall_topology,
                        result_fields)
from .linklp import link_utilization
from .lp import solve_lp
from .result import AlltoallResult

__all__ = ["symmetric_throughput", "orbits", "symmetric_certificate"]


def orbits(topology, group):
    """``(label index per pair-link, number of orbits)``: links ``u -> v`` and ``u' -> v'`` are
    in one orbit when ``v - u == v' - u'`` in the group."""
    psrc, pdst, _, _ = topology.pairs
    labels = group.subtract(pdst, psrc)
    uniq, index = np.unique(labels, return_inverse=True)
    return index, uniq.size


def symmetric_certificate(topology, lengths):
    """The dual bound on ``lambda`` for translation-invariant ``lengths`` (one per pair-link):
    ``sum_e c_e l_e / (N sum_t dist_l(0, t))``; ``inf`` if a node is unreachable."""
    psrc, pdst, cap, _ = topology.pairs
    n = topology.num_nodes
    lengths = np.maximum(np.asarray(lengths, dtype=float), 0.0)
    positive = lengths[lengths > 0]
    floor = (positive.min() if positive.size else 1.0) * 1e-12
    lengths = np.maximum(lengths, floor)           # zero lengths still cost a hop, barely
    graph = sp.csr_matrix((lengths, (psrc, pdst)), shape=(n, n))
    dist = dijkstra(graph, directed=True, indices=0)
    total = float(dist[1:].sum())
    if not np.isfinite(total) or total <= 0:
        return float("inf")
    return float(cap @ lengths) / (n * total)


def symmetric_throughput(topology, group=None, *, solver="auto", time_limit=None, bounds=True,
                         tolerance=1e-6, threads=None, progress=None):
    """Uniform all-to-all ``lambda`` of a translation-symmetric topology (module docstring).

    Parameters
    ----------
    topology : Topology
    group : TranslationGroup, optional
        A verified translation group; found with
        :func:`~topocoll.topology.symmetry.translation_group` by default.

    Other parameters are those of :func:`~topocoll.throughput.link_throughput`.

    Returns
    -------
    AlltoallResult
        ``method="symmetric"``; ``lengths`` are per pair-link (equal on every orbit), and
        ``flows`` holds source 0's flow only (shape ``(1, E)``): the others are its
        translations.

    Raises
    ------
    UnsupportedError
        If the topology has no translation symmetry.
    """
    require_alltoall_topology(topology)
    if group is None:
        group = translation_group(topology)
    if group is None:
        raise UnsupportedError(f"{topology.name} has no translation symmetry; use the link or "
                               "path LP")
    bnd, early = bounds_or_disconnected(topology, "symmetric", None, bounds)
    if early is not None:
        return early
    orbit, num_o = orbits(topology, group)
    cap = topology.pairs[2]
    cap_o = np.zeros(num_o)
    cap_o[orbit] = cap                                 # equal on an orbit (the group checks it)
    t0 = time.perf_counter()
    cost, matrix, row_lower, row_upper, col_upper = _orbit_lp(topology, orbit,
                                                              cap_o / float(cap.max()))
    build = time.perf_counter() - t0
    started = _lp.clock()
    sol = solve_lp(cost, matrix, row_lower, row_upper, col_upper=col_upper, maximize=False,
                   solver="ipm" if solver == "auto" else solver,
                   time_limit=None if time_limit is None else float(time_limit),
                   threads=threads)
    if progress:
        progress(1, 1)
    if not sol.ok or not sol.x[-1] > 0:
        out_of_time = time_limit is not None and _lp.clock() - started >= time_limit
        return failed_result(
            topology, (f"time limit of {time_limit:g} s reached before any flow was found"
                       if out_of_time else
                       f"HiGHS ({sol.solver or solver}) ended with status {sol.status}"),
            **result_fields(topology, "symmetric", None, bnd, solver=sol.solver or solver,
                            iterations=sol.iterations, build_seconds=build,
                            solve_seconds=sol.seconds, tolerance=tolerance))
    return _symmetric_result(topology, group, sol, (orbit, cap_o), solver=solver, bnd=bnd,
                             build=build, tolerance=tolerance)


def _orbit_lp(topology, orbit, cap_o_scaled):
    """The one-source LP (module docstring) as ``(cost, matrix, row_lower, row_upper,
    col_upper)``: columns the pair-links then ``z``; rows the orbits then the nodes ``v != 0``
    (capacities ``cap_o_scaled``, one per orbit, scaled to at most 1)."""
    n = topology.num_nodes
    psrc, pdst, _, _ = topology.pairs
    num_e, num_o = psrc.size, cap_o_scaled.size
    cols = np.arange(num_e)
    into, outof = pdst != 0, psrc != 0
    rows = np.concatenate([orbit, num_o + pdst[into] - 1, num_o + psrc[outof] - 1,
                           np.arange(num_o)])
    cidx = np.concatenate([cols, cols[into], cols[outof], np.full(num_o, num_e)])
    vals = np.concatenate([np.ones(num_e), np.ones(int(into.sum())),
                           -np.ones(int(outof.sum())), -cap_o_scaled])
    matrix = sp.csc_matrix((vals, (rows, cidx)), shape=(num_o + n - 1, num_e + 1))
    row_lower = np.concatenate([np.full(num_o, -np.inf), np.ones(n - 1)])
    row_upper = np.concatenate([np.zeros(num_o), np.ones(n - 1)])
    col_upper = np.full(num_e + 1, np.inf)
    col_upper[:-1][pdst == 0] = 0.0                    # flow back into the source is useless
    cost = np.zeros(num_e + 1)
    cost[-1] = 1.0
    return cost, matrix, row_lower, row_upper, col_upper


def _symmetric_result(topology, group, sol, orbits_cap, *, solver, bnd, build, tolerance):
    """The :class:`AlltoallResult` of a solved one-source LP (``orbits_cap``: each pair-link's
    orbit and each orbit's capacity), its ``lambda`` and certificate recomputed."""
    orbit, cap_o = orbits_cap
    num_o, num_e = cap_o.size, orbit.size
    flow = np.maximum(sol.x[:-1], 0.0)
    # primal, recomputed: unit demands routed by source 0's flow translated to every source
    # put sum_{e in O} f[e] on every link of orbit O; lambda is the worst orbit's headroom
    load_o = np.bincount(orbit, weights=flow, minlength=num_o)
    lam = float(np.min(cap_o[load_o > 0] / load_o[load_o > 0]))
    lengths = np.abs(sol.row_dual[:num_o])[orbit]
    if not np.any(lengths > 0):
        lengths = np.ones(num_e)
    bound = symmetric_certificate(topology, lengths)
    gap = bound / lam - 1
    util, load = link_utilization(topology, load_o[orbit] * lam)
    status = Status.SUCCESS if gap <= tolerance else Status.NOT_PROVEN
    used = sol.solver or solver
    message = (f"lambda {lam:.6g} B/s per pair, certified within {max(gap, 0.0):.2g} (dual "
               f"bound {bound:.6g}); HiGHS {used} on one source's flow under the translation "
               f"group Z_{'xZ_'.join(map(str, group.dims))} ({num_e + 1} columns, {num_o} "
               f"orbits): {sol.status}, {sol.iterations} iterations")
    return AlltoallResult(
        lam=lam, status=status, message=message, dual_bound=bound, utilization=util,
        link_load=load, lengths=lengths, flows=(flow * lam)[None, :],
        **result_fields(topology, "symmetric", None, bnd, solver=used,
                        iterations=sol.iterations, rounds=1, build_seconds=build,
                        solve_seconds=sol.seconds, tolerance=tolerance))
