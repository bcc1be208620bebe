"""Time-expanded-network (TEN) synthesis of every collective (docs/math.md section 5; Won et
al., "TACOS: Topology-Aware Collective Algorithm Synthesizer for Distributed Training", MICRO
2024).

The TEN model shared by the greedy matcher (:mod:`topocoll.synth.ten.greedy`) and the ILP
(:mod:`topocoll.synth.ten.ilp`):

* every shard is cut into ``C`` chunks (``--chunks``), so an allgather on N nodes has ``N*C``
  chunks of ``M/(N*C)`` bytes; chunk ``c`` is bytes ``[(c % C)/C, (c % C + 1)/C)`` of shard
  ``c // C``;
* the *precondition* ``pre[c, n]`` / *postcondition* ``post[c, n]`` say which node holds chunk
  ``c`` at the start / must hold it at the end (from :mod:`topocoll.collectives`);
* every link's chunk time ``latency + chunk_bytes / bandwidth`` is discretized by a factor ``f``
  into ``ceil(cost / f)`` TEN slots (paper section IV-C); on uniform links ``f`` is the chunk
  time and every link takes one slot;
* a send of chunk ``c`` on link ``l`` starting at slot ``t`` becomes a transfer in step
  ``t + 1``; it arrives at slot ``t + link_steps[l]``.

Allgather, broadcast, scatter, gather and alltoall are synthesized natively; reduce-scatter and
reduce are the allgather / broadcast synthesized on the transposed topology and run backwards
(:func:`topocoll.schedule.transforms.reverse`); allreduce is reduce-scatter then allgather
(:func:`~topocoll.schedule.transforms.concatenate`). Time a schedule with the independent
link-model simulator (:func:`topocoll.schedule.linkmodel.simulate`), never by the synthesizer's
own claim: the synthesizer does not import it.

>>> s = synthesize("mesh:3x3", "allgather", size="1GiB", seed=0)
>>> s.meta["makespan_slots"], s.meta["chunk_lower_bound_slots"]
(4, 4)
>>> from topocoll.schedule import verify
>>> verify(synthesize("ring:6", "allreduce", chunks=2)).valid
True
"""

import math
import time

import numpy as np

from ... import defaults
from ...collectives import collective as _collective
from ...errors import UnsupportedError
from ...schedule.model import transfer_array
from ...schedule import symmetric as symmetric_form
from ...schedule.forms import FORMS, check_form
from ...schedule.symmetric import SYMMETRIC_COLLECTIVES
from ...schedule.transforms import concatenate, reverse
from ...topology.symmetry import translation_group
from .bounds import bounds_of
from .cayley import symmetric_representatives, translation_servers
from .options import ten_options
from .problem import (REVERSED, check_symmetric_work, check_work, events_to_compact,
                      events_to_schedule, prepare_topology, ten_problem)
from .search import GREEDY_DISCRETIZATION, GreedyRequest, greedy_search, run_ilp

__all__ = ["synthesize", "FORMS"]


#: The clock that splits an allreduce's time limit (tests replace it).
clock = time.monotonic


def synthesize(topology, collective, *, method="greedy", chunks=1, size=defaults.SYNTHESIS_SIZE,
               root=None, seed=0, restarts=None, workers=None, unwind_degree=None,
               fail_links=None, fail_nodes=None, time_step=None, time_limit=None,
               node_limit=None, max_solves=None, window=None, repair=None, symmetric=None,
               form="auto", progress=None):
    """Synthesize a schedule of any collective on any topology through the TEN.

    Every keyword but ``root``, ``form`` and ``progress`` is an option of the one table
    :data:`~topocoll.synth.ten.options.TEN_OPTIONS` (``generate(..., "ten")`` and ``topocoll
    synth`` read it too) and is checked there: a bad value raises ``UnsupportedError`` naming
    it, and digit strings, sizes and times read as from the command line.

    Parameters
    ----------
    topology : Topology or str
        The network; switch nodes are unwound first (``unwind_degree``), failed links and
        nodes are removed before that.
    collective : str
        Any of the eight collectives.
    method : {"greedy", "ilp"}
        Greedy link-chunk matching, or the ILP (small cases).
    chunks : int
        Chunks per shard C.
    size : float or str
        Buffer size M (default 1 GiB); sets the chunk times and so the discretization.
    root : int, optional
        Root of a rooted collective (default 0).
    seed : int
        Seeds the greedy's tie-breaking; same seed, same schedule.
    restarts : int, optional
        Best of at most this many greedy runs (seeds derived from ``seed``); the runs stop
        early when one reaches the chunk lower bound. Default :func:`auto_restarts`: one on
        uniform links, up to :data:`AUTO_RESTARTS` on mixed links. On mixed links the runs
        alternate the two chunk-choice rules of :data:`~topocoll.synth.ten.greedy.RULES`.
    workers : int, optional
        Processes for the restarts (default: one per core, at most ``restarts``; one when
        ``restarts`` is automatic); the result does not depend on it.
    unwind_degree : int, optional
        Degree k of switch unwinding (default: every endpoint of a switch reaches every other).
    fail_links : str or list of (u, v), optional
        Cables to remove before synthesis (``"0-1,2-3"``; ``"0>1"`` for one direction).
    fail_nodes : str or list of int, optional
        Nodes to remove (the survivors are renumbered, see ``meta["nodes_kept"]``).
    time_step : float or str, optional
        The discretization factor f (default: automatic, see :func:`discretize`).
    time_limit : float, optional
        ILP: wall-clock seconds for the whole call before early termination (default: none;
        an allreduce gives half to its reduce-scatter and the rest to its allgather).
    node_limit, max_solves : int, optional
        ILP: branch-and-bound nodes per model and models at most; limits that do not depend
        on the machine's speed (see :func:`~topocoll.synth.ten.ilp.ilp_events`).
    window : int, optional
        ILP: time clustering window in slots.
    repair : bool, optional
        Greedy: repair the best run's last slots with small ILPs (:mod:`.repair`) when it is
        above the chunk bound, and try the coarser discretization of
        :data:`GREEDY_DISCRETIZATIONS`. Default: on mixed links, up to :data:`REPAIR_WORK`
        chunks x links. The repair's work is bounded by counts, so the result is the same on
        any machine.
    symmetric : bool, optional
        Greedy, all-gather (and so reduce-scatter and all-reduce): on a network with a
        translation symmetry (a torus, also with one bandwidth per dimension), first try the
        translation of one node's schedule to every node (:mod:`.cayley`), kept if within
        :data:`AT_BOUND` of the chunk bound, else the faster of it and the greedy's. Default:
        on mixed links.
    form : {"auto", "explicit", "symmetric"}
        ``"symmetric"``: an all-gather, reduce-scatter or all-reduce on a network with a
        translation symmetry (speeds included) as a
        :class:`~topocoll.schedule.symmetric.SymmetricSchedule`, the translated schedule of
        :mod:`.cayley` held as its rows into node 0 (N times fewer than the explicit
        transfers; ``restarts`` caps its tries); ``"auto"`` (default) makes it only where the
        explicit form would hold more than
        :data:`~topocoll.schedule.symmetric.EXPLICIT_TRANSFER_LIMIT` transfers.
    progress : callable, optional
        ``progress(done, total)``.

    Returns
    -------
    Schedule or SymmetricSchedule
        With ``meta``: ``method``, ``seed``, ``chunks``, ``size``, ``time_step``,
        ``makespan_slots``, ``ten_time`` (slots x f), ``chunk_lower_bound`` (seconds),
        ``capacity_lower_bound`` (the bound without its release-time term) and, for
        the greedy, ``restarts`` (as given, None for automatic), ``restart_makespans`` (the
        runs made, of the discretization kept), ``best_seed``, ``best_rule`` and ``repair``
        (None when off, else the ILP window solves made and the time steps tried), and
        ``symmetric`` (None if not tried, else its ``tries``, replayed ``time`` and whether it
        was ``kept``; when kept at the bound no greedy run is made and ``restart_makespans``
        is empty).

    Examples
    --------
    >>> s = synthesize("ring:4", "reduce", root=2, chunks=2)
    >>> s.collective.name, s.root, s.meta["method"]
    ('reduce', 2, 'greedy')
    """
    o = ten_options(method=method, chunks=chunks, size=size, seed=seed, restarts=restarts,
                    workers=workers, unwind_degree=unwind_degree, fail_links=fail_links,
                    fail_nodes=fail_nodes, time_step=time_step, time_limit=time_limit,
                    node_limit=node_limit, max_solves=max_solves, window=window, repair=repair,
                    symmetric=symmetric)
    topo = prepare_topology(topology, o["unwind_degree"], o["fail_links"], o["fail_nodes"])
    coll = _collective(collective)
    root = _checked_root(coll, root, topo)
    method, chunks, restarts = o["method"], o["chunks"], o["restarts"]
    form = _resolve_form(form, topo, coll, chunks, method, o["symmetric"])
    if form != "symmetric":
        check_work(topo, coll, chunks, method, restarts, compact=form == "compact")
    else:
        check_symmetric_work(topo, coll, chunks, restarts)
    opts = dict(method=method, chunks=chunks, size=o["size"], seed=o["seed"], restarts=restarts,
                workers=o["workers"], time_step=o["time_step"], window=o["window"],
                progress=progress, repair=o["repair"], symmetric=o["symmetric"], form=form,
                limits={name: o[name] for name in ("time_limit", "node_limit", "max_solves")})
    if coll.name == "allreduce":
        return _allreduce(topo, opts, o["time_limit"], form)
    return synthesize_one(topo, coll, root, **opts)


def _checked_root(coll, root, topo):
    """The root of a rooted collective (default 0); a root given to an unrooted one refused."""
    if not coll.rooted:
        if root is not None:
            raise UnsupportedError(f"{coll.name} takes no root")
        return None
    root = 0 if root is None else root
    if isinstance(root, bool) or not isinstance(root, (int, np.integer)) or \
            not 0 <= root < topo.num_nodes:
        raise UnsupportedError(f"root must be a node 0..{topo.num_nodes - 1}, got {root!r}")
    return int(root)


def _allreduce(topo, opts, time_limit, form):
    """Reduce-scatter then allgather, one time limit for the whole call: half for the first
    phase, what is left for the second."""
    started = clock()
    first = dict(opts, limits=dict(opts["limits"], time_limit=None if time_limit is None
                                   else time_limit / 2))
    rs = synthesize_one(topo, _collective("reduce_scatter"), None, **first)
    if time_limit is not None:
        left = max(time_limit - (clock() - started), 1e-3)
        opts = dict(opts, limits=dict(opts["limits"], time_limit=left))
    ag = synthesize_one(topo, _collective("allgather"), None, **opts)
    out = concatenate(rs, ag, "allreduce", algorithm=rs.algorithm)
    meta = dict(ag.meta)
    for key in ("makespan_slots", "ten_time"):
        meta[key] = rs.meta[key] + ag.meta[key]
    # The link model lets one shard's allgather start while others are still being
    # reduced, so only the larger phase bound bounds it (the sum bounds phase-by-phase).
    for key in ("chunk_lower_bound", "chunk_lower_bound_slots", "capacity_lower_bound"):
        meta[key] = max(rs.meta[key], ag.meta[key])
    meta["two_phase_lower_bound"] = rs.meta["chunk_lower_bound"] + ag.meta["chunk_lower_bound"]
    meta["phases"] = {"reduce_scatter": _phase(rs.meta), "allgather": _phase(ag.meta)}
    return out.replace(meta=meta)


def _phase(meta):
    return {k: meta[k] for k in ("makespan_slots", "ten_time", "chunk_lower_bound")}


def synthesize_one(topo, coll, root, *, method, chunks, size, seed, restarts, workers, time_step,
               limits, window, progress, repair, symmetric, form="explicit"):
    if coll.name in REVERSED:
        base = _collective(REVERSED[coll.name])
        fwd = synthesize_one(topo.transpose(), base, root, method=method, chunks=chunks, size=size,
                         seed=seed, restarts=restarts, workers=workers, time_step=time_step,
                         limits=limits, window=window, progress=progress, repair=repair,
                         symmetric=symmetric, form=form)
        out = reverse(fwd, coll, topo)          # symmetric stays symmetric
        meta = dict(fwd.meta)
        meta["reversed_from"] = base.name
        return out.replace(meta=meta)
    if form == "symmetric":
        return _symmetric_allgather(topo, chunks=chunks, size=size, seed=seed, tries=restarts,
                                    time_step=time_step, progress=progress)
    if method == "greedy":
        req = GreedyRequest(topo=topo, coll=coll, root=root, chunks=chunks, size=size,
                            time_step=time_step, seed=seed, restarts=restarts, workers=workers,
                            progress=progress)
        problem, capacity, bound, events, makespan, info = greedy_search(
            req, repair=repair, symmetric=symmetric)
    else:
        problem = ten_problem(topo, coll, chunks=chunks, size=size, root=root,
                              time_step=time_step)
        capacity, bound = bounds_of(problem)
        events, makespan, info = run_ilp(problem, seed, limits, window, progress)
    bound_slots = int(math.ceil(bound / problem.time_step - 1e-9))
    meta = {"method": method, "seed": int(seed),
            "restarts": None if restarts is None else int(restarts),
            "chunks": int(chunks), "size": float(size), "time_step": problem.time_step,
            "makespan_slots": int(makespan), "ten_time": makespan * problem.time_step,
            "chunk_lower_bound": bound,
            "chunk_lower_bound_slots": bound_slots,
            "capacity_lower_bound": capacity,
            "discretization_error": float((problem.link_steps * problem.time_step
                                           / problem.link_cost).max() - 1.0)
            if problem.link_cost.size else 0.0,
            **info, **{k: v for k, v in topo.meta.items() if k in _TOPO_FACTS}}
    if form == "compact":
        return events_to_compact(problem, events, algorithm=f"ten-{method}",
                                 meta=meta)
    return events_to_schedule(problem, events, algorithm=f"ten-{method}", meta=meta)


_TOPO_FACTS = ("unwound_switches", "unwind_degree", "nodes_kept", "failed_links",
               "failed_nodes")




def _resolve_form(form, topo, coll, chunks, method, symmetric):
    """``"explicit"``, ``"symmetric"`` or ``"compact"``: what ``form`` asks for on ``topo``,
    refused in one line where that form cannot be made."""
    if check_form(form) == "explicit":
        return form
    if form == "compact":
        if not _copies_only(coll):
            raise UnsupportedError(f"form='compact' holds collectives that only copy; not "
                                   f"{coll.name}")
        return form
    n = topo.num_nodes
    explicit = chunks * n * (n - 1) * (2 if coll.name == "allreduce" else 1)
    if coll.name not in SYMMETRIC_COLLECTIVES:
        if form == "symmetric":
            raise UnsupportedError(f"form='symmetric' holds {', '.join(SYMMETRIC_COLLECTIVES)}; "
                                   f"not {coll.name}")
        # one transfer at least for each (chunk, node) pair the chunk must reach
        reach = (n - 1) if coll.end_target(n, 0) is None else 1
        return _compact_or_explicit(chunks * coll.num_shards(n) * reach, coll)
    if form == "auto":
        # read at call time: the limit is the schedule package's setting
        if explicit <= symmetric_form.EXPLICIT_TRANSFER_LIMIT:
            return "explicit"
        if method != "greedy" or symmetric is False or translation_group(topo) is None:
            return _compact_or_explicit(explicit, coll)
        return "symmetric"
    if method != "greedy":
        raise UnsupportedError("form='symmetric' is made by method='greedy' only")
    if symmetric is False:
        raise UnsupportedError("symmetric=False contradicts form='symmetric' (the symmetric form "
                               "is the translated schedule)")
    if translation_group(topo) is None:
        raise UnsupportedError(f"form='symmetric' needs a translation symmetry; {topo.name} has "
                               "none (tori, hypercubes, rings, circulants have one)")
    return "symmetric"


def _compact_or_explicit(transfers, coll):
    """What ``form="auto"`` makes without a symmetric form: the compact one for a collective
    that only copies where the explicit one would hold more than
    :data:`~topocoll.schedule.symmetric.EXPLICIT_TRANSFER_LIMIT` transfers (at least
    ``transfers``, one per node and shard it must reach)."""
    if transfers > symmetric_form.EXPLICIT_TRANSFER_LIMIT and _copies_only(coll):
        return "compact"
    return "explicit"


def _copies_only(coll):
    """True if the greedy makes ``coll`` of copies alone: what a compact schedule holds (the
    reversed collectives are made from copies, then reduce)."""
    return not coll.combining and coll.name not in REVERSED


def _symmetric_allgather(topo, *, chunks, size, seed, tries, time_step, progress):
    """The translated all-gather of :mod:`.cayley` on ``topo`` as a
    :class:`~topocoll.schedule.symmetric.SymmetricSchedule` (its rows into node 0), with the
    meta of :func:`synthesize`; the bound from node 0 and its pairs (:func:`bounds_of`)."""
    from ...schedule.symmetric import SymmetricSchedule
    problem = ten_problem(topo, "allgather", chunks=chunks, size=size, time_step=time_step,
                          discretization=GREEDY_DISCRETIZATION)
    servers = translation_servers(topo, problem.link_cost)
    if servers is None:
        raise UnsupportedError(f"form='symmetric': the links of {topo.name} are not invariant "
                               "under its translations (parallel links of one label differ)")
    capacity, bound = bounds_of(problem, symmetric=True)
    rows = symmetric_representatives(topo, problem.link_cost, problem.link_steps, chunks, bound,
                                     seed=seed, tries=tries, servers=servers)
    c = int(chunks)
    transfers = transfer_array(rows.start + 1, rows.src, 0, rows.shard, rows.part / c,
                               (rows.part + 1) / c)
    f = problem.time_step
    meta = {"method": "greedy", "seed": int(seed),
            "restarts": None if tries is None else int(tries),
            "chunks": c, "size": float(size), "time_step": f,
            "makespan_slots": rows.makespan, "ten_time": rows.makespan * f,
            "chunk_lower_bound": bound,
            "chunk_lower_bound_slots": int(math.ceil(bound / f - 1e-9)),
            "capacity_lower_bound": capacity,
            "discretization_error": float((problem.link_steps * f / problem.link_cost).max() - 1.0),
            "restart_makespans": [], "best_restart": None, "best_seed": None, "best_rule": None,
            "repair": None, "symmetric": {"tries": rows.tries, "time": rows.time, "kept": True},
            "form": "symmetric",
            **{k: v for k, v in topo.meta.items() if k in _TOPO_FACTS}}
    if progress is not None:
        progress(1, 1)
    return SymmetricSchedule(topo, "allgather", rows.group, transfers, algorithm="ten-greedy",
                             meta=meta)
