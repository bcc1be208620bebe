"""TACOS's TACCL-like baseline: TEN synthesis that ignores link contention (Won et al.,
TACOS, MICRO 2024, section VII-C: "we modified our Tacos-ILP to ignore network congestion").

TACOS-ILP (:mod:`.ilp`) lets a TEN link carry one chunk per slot. Drop that row and nothing
ties the chunks together: every chunk independently floods the time-expanded network, and the
ILP's optimum is reached when every chunk reaches every node that needs it at its earliest
arrival slot (its distance from the chunk's holders, in slots); the makespan is the largest such
distance, and no schedule of the uncapacitated model does better (TACOS notes that without the
congestion constraint the problem is polynomially solvable). :func:`uncongested_events` returns
that optimum directly, without a solver: per chunk the earliest-arrival tree of the TEN, each
node fed by its lowest-numbered link that delivers at the earliest slot, pruned to the branches
that lead to a node needing the chunk.

The schedule is then an ordinary topocoll schedule: several chunks may cross one link in one
step, and the step and link models charge the link for all of them. ``meta["uncongested_time"]``
is what the uncapacitated model claims (``makespan_slots * time_step``); the link model's time
(:func:`~topocoll.schedule.linkmodel.simulate`) is what the network gives, and the gap between
the two is what modelling congestion buys (TACOS's Fig. 19 and Table I).

Collectives as :func:`~topocoll.synth.ten.synthesize` makes them: reduce-scatter and reduce
reversed from the all-gather and broadcast on the transposed topology, all-reduce the two
phases in sequence.

>>> from topocoll.schedule import verify
>>> s = uncongested_synthesize("ring:6", "allgather")
>>> s.algorithm, s.meta["makespan_slots"], verify(s).valid
('tacclike', 3, True)
"""

import numpy as np

from ... import defaults
from ...collectives import collective as _collective
from ...errors import UnsupportedError
from ...schedule.transforms import concatenate, reverse
from .greedy import EVENT_DTYPE
from .ilp_bounds import INF, check_reachable, earliest
from .problem import REVERSED, events_to_schedule, prepare_topology, ten_problem

__all__ = ["uncongested_events", "uncongested_synthesize"]


def uncongested_events(num_nodes, src, dst, steps, pre, post):
    """The optimum of the TEN ILP without link capacities: per chunk the earliest-arrival
    tree to the nodes that need it (see the module).

    Parameters
    ----------
    num_nodes : int
    src, dst, steps : int arrays, one entry per link
        The links and their lengths in slots.
    pre, post : bool arrays (num_chunks, num_nodes)
        Who holds each chunk at slot 0; who must hold it at the end.

    Returns
    -------
    events : numpy.ndarray
        ``EVENT_DTYPE`` rows ``(chunk, link, start)`` sorted by start (ties by chunk, link).
    makespan : int
        The last arrival slot: the largest distance from a chunk's holders to a node that
        needs it, the least makespan of any schedule when links are uncapacitated.

    Examples
    --------
    >>> src = np.array([0, 1, 2, 3]); dst = (src + 1) % 4        # uniring:4
    >>> pre = np.eye(4, dtype=bool); post = np.ones((4, 4), dtype=bool)
    >>> ev, span = uncongested_events(4, src, dst, np.ones(4, int), pre, post)
    >>> span, len(ev), ev[:4].tolist()
    (3, 12, [(0, 0, 0), (1, 1, 0), (2, 2, 0), (3, 3, 0)])
    """
    src, dst = np.asarray(src, np.int64), np.asarray(dst, np.int64)
    steps = np.asarray(steps, np.int64)
    pre, post = np.asarray(pre, bool), np.asarray(post, bool)
    need = post & ~pre
    first = earliest(np.where(pre, 0, INF), src, dst, steps)
    check_reachable(first, need)
    num_chunks, num_links = pre.shape[0], src.size
    # the lowest-numbered link delivering each (chunk, node) at its earliest slot
    held = first[:, src]
    tight = (held < INF) & (held + steps == first[:, dst]) & ~pre[:, dst]
    parent = np.full((num_chunks, num_nodes), num_links, dtype=np.int64)
    for link in range(num_links - 1, -1, -1):
        col = tight[:, link]
        parent[col, dst[link]] = link
    # keep the branches that lead to a node needing the chunk
    keep = need.copy()
    for _ in range(num_nodes):
        c, n = np.nonzero(keep & (parent < num_links))
        up = np.zeros_like(keep)
        up[c, src[parent[c, n]]] = True
        grown = keep | (up & ~pre)
        if np.array_equal(grown, keep):
            break
        keep = grown
    c, n = np.nonzero(keep & ~pre)
    link = parent[c, n]
    events = np.empty(c.size, dtype=EVENT_DTYPE)
    events["chunk"], events["link"] = c, link
    events["start"] = first[c, n] - steps[link]
    events = events[np.lexsort((events["link"], events["chunk"], events["start"]))]
    makespan = int(first[need].max()) if need.any() else 0
    return events, makespan


def uncongested_synthesize(topology, collective, *, root=None, progress=None, chunks=1,
                           size=defaults.SYNTHESIS_SIZE, time_step=None, unwind_degree=None):
    """TACOS's TACCL-like schedule of ``collective``: TEN synthesis with uncapacitated links
    (see the module), as an ordinary schedule to be priced with congestion.

    Parameters
    ----------
    topology : Topology or str
        Any topology; switches are unwound first (``unwind_degree``, as
        :func:`~topocoll.synth.ten.synthesize` takes it).
    collective : str
        Any collective :func:`~topocoll.synth.ten.synthesize` makes.
    root : int, optional
        The root of a rooted collective (default 0).
    chunks, size, time_step :
        As for :func:`~topocoll.synth.ten.synthesize`: chunks per shard, the buffer size that
        sets the chunk times, the TEN slot length.

    Returns
    -------
    Schedule
        Algorithm ``"tacclike"``; meta ``makespan_slots``, ``time_step`` and
        ``uncongested_time`` (what the congestion-free model claims; an allreduce sums its
        phases), ``congestion`` False.

    Examples
    --------
    >>> from topocoll.schedule import simulate
    >>> s = uncongested_synthesize("mesh:3x3", "allreduce", size="9MB")
    >>> s.meta["makespan_slots"], simulate(s, "9MB").time > s.meta["uncongested_time"]
    (8, True)
    """
    topo = prepare_topology(topology, unwind_degree)
    coll = _collective(collective)
    if coll.rooted:
        root = 0 if root is None else root
        if isinstance(root, bool) or not isinstance(root, (int, np.integer)) or \
                not 0 <= root < topo.num_nodes:
            raise UnsupportedError(f"root must be a node 0..{topo.num_nodes - 1}, got {root!r}")
    elif root is not None:
        raise UnsupportedError(f"{coll.name} takes no root")
    opts = dict(chunks=chunks, size=size, time_step=time_step)
    if coll.name != "allreduce":
        return _one(topo, coll, root, opts)
    rs = _one(topo, _collective("reduce_scatter"), None, opts)
    ag = _one(topo, _collective("allgather"), None, opts)
    meta = dict(ag.meta)
    for key in ("makespan_slots", "uncongested_time"):
        meta[key] = rs.meta[key] + ag.meta[key]
    return concatenate(rs, ag, "allreduce", algorithm="tacclike").replace(meta=meta)


def _one(topo, coll, root, opts):
    """One phase: native, or reversed from its non-combining twin on the transpose."""
    if coll.name in REVERSED:
        fwd = _one(topo.transpose(), _collective(REVERSED[coll.name]), root, opts)
        return reverse(fwd, coll, topo).replace(meta=dict(fwd.meta,
                                                          reversed_from=fwd.collective.name))
    problem = ten_problem(topo, coll, root=root, **opts)
    events, makespan = uncongested_events(*problem.arrays())
    meta = {"congestion": False, "chunks": int(problem.chunks), "size": problem.size,
            "time_step": problem.time_step, "makespan_slots": makespan,
            "uncongested_time": makespan * problem.time_step}
    return events_to_schedule(problem, events, algorithm="tacclike", meta=meta)
