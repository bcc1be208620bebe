"""The TEN model of a collective on a topology: chunks, their pre- and postconditions, the
discretization of link times into slots, the checks of what a synthesis may cost, and events
turned into schedules (docs/math.md section 5; the model is described in
:mod:`topocoll.synth.ten.synthesis`)."""

from dataclasses import dataclass, field

import numpy as np

from ... import defaults
from ...collectives import collective as _collective
from ...errors import UnsupportedError
from ...limits import require_memory
from ...schedule.model import TRANSFER_DTYPE, Schedule, transfer_array
from ...topology import topology as _topology
from ...topology.model import Topology
from ...units import parse_size, parse_time
from ..options import int_option
from .greedy import GreedyResult

__all__ = ["TenProblem", "ten_problem", "chunk_conditions", "discretize",
           "events_to_schedule", "events_to_compact", "event_array", "prepare_topology",
           "check_chunks", "check_work", "check_symmetric_work", "METHODS",
           "TEN_COLLECTIVES", "REVERSED", "MAX_SLOTS_PER_LINK", "MAX_RESTARTS",
           "MAX_ILP_CHUNK_LINKS", "REL_ERROR", "MAX_RESOLUTION"]


#: Synthesis methods.
METHODS = ("greedy", "ilp")


#: Collectives the TEN synthesizer makes (all eight).
TEN_COLLECTIVES = ("allgather", "reduce_scatter", "allreduce", "broadcast", "reduce", "scatter",
                   "gather", "alltoall")


#: Combining collectives and the non-combining collective they are the reversal of.
REVERSED = {"reduce_scatter": "allgather", "reduce": "broadcast"}


REL_ERROR = 0.05     # auto discretization: accept a rounding error of 5% per link


#: Most TEN slots one link transfer may take: a finer time step is refused (step numbers are
#: 32-bit in the schedule format, and a makespan spans many link transfers).
MAX_SLOTS_PER_LINK = 2**16


MAX_RESOLUTION = 8


# The integer checks of the TEN options (synth/ten/options.py, above this module, holds the
# table; chunk_conditions and prepare_topology are called without it too).
_AT_LEAST_ONE = int_option(1)


def chunk_conditions(collective, num_nodes, chunks=1, root=None):
    """Pre- and postcondition ``(pre, post)`` of a non-combining collective with C chunks.

    Both are boolean arrays ``(num_shards * chunks, num_nodes)``.

    >>> pre, post = chunk_conditions("scatter", 3, chunks=2, root=0)
    >>> bool(pre[:, 0].all()), post.sum(axis=1).tolist()
    (True, [1, 1, 1, 1, 1, 1])
    """
    coll = _collective(collective)
    if coll.combining:
        raise UnsupportedError(f"{coll.name} combines; its TEN problem is the one of "
                               f"{REVERSED.get(coll.name, 'reduce_scatter + allgather')}")
    check_chunks(chunks)
    n = int(num_nodes)
    shards = coll.num_shards(n)
    owner = coll.start_owner(n, root)
    target = coll.end_target(n, root)
    k = shards * chunks
    shard_of = np.arange(k) // chunks
    pre = np.zeros((k, n), dtype=bool)
    pre[np.arange(k), owner[shard_of]] = True
    if target is None:
        post = np.ones((k, n), dtype=bool)
    else:
        post = np.zeros((k, n), dtype=bool)
        post[np.arange(k), target[shard_of]] = True
    return pre, post


#: Most restarts of the greedy one call may ask for (each is a full greedy run).
MAX_RESTARTS = 10_000


#: Most chunk-link pairs the ILP may model per time slot: beyond it the model alone outgrows
#: any machine this runs on (the greedy, method="greedy", has no such limit).
MAX_ILP_CHUNK_LINKS = 1 << 18


#: Bytes of greedy state per chunk and node (holdings, arrival times, conditions).
_BYTES_PER_CHUNK_NODE = 24


#: The same where every node wants every chunk (all-gather, broadcast and their reversals):
#: there is also the send that brings each (event and transfer row; measured: the 64x64 mesh
#: all-gather, 16.8 million pairs, peaks at 1.3 GB, interpreter included).
_BYTES_PER_DELIVERY = 64


#: The same in the compact form: conditions, holder counts and bitsets (about 3), the greedy's
#: sends (4) and the compact rows (8) at once, then the verifier's arrival state (4); measured:
#: the 128x128 mesh all-gather, 268 million pairs, peaks at 5.1 GiB with its verification
#: (20 bytes a pair, interpreter included; benchmarks/ten_synthesis.py --scale).
_BYTES_PER_COMPACT_DELIVERY = 24


#: Bytes per chunk and node of the symmetric search (two condition tables of booleans and
#: their temporaries; measured: torus:128x128, 268 million pairs, peaks at 0.84 GB) ...
_BYTES_PER_SYMMETRIC_PAIR = 4


#: ... and per chunk (its events and index words; measured: ring:4 with a million chunks per
#: shard peaks at 1.17 GB).
_BYTES_PER_SYMMETRIC_CHUNK = 300


def check_work(topo, coll, chunks, method, restarts, compact=False):
    """Counts checked before any work: what cannot end, or cannot fit, is refused now."""
    if restarts is not None and restarts > MAX_RESTARTS:
        raise UnsupportedError(f"restarts must be at most {MAX_RESTARTS:,}, got {restarts:,}")
    n = topo.num_nodes
    k = coll.num_shards(n) * chunks
    if method == "ilp" and k * max(topo.num_links, 1) > MAX_ILP_CHUNK_LINKS:
        raise UnsupportedError(
            f"the ILP of {k:,} chunks on {topo.num_links:,} links has {k * topo.num_links:,} "
            f"send variables per slot, more than {MAX_ILP_CHUNK_LINKS:,}: use fewer chunks or "
            "method='greedy'")
    per = _BYTES_PER_DELIVERY if coll.name in ("allgather", "broadcast", "reduce_scatter",
                                               "reduce", "allreduce") else _BYTES_PER_CHUNK_NODE
    if compact:
        per = min(per, _BYTES_PER_COMPACT_DELIVERY)
    require_memory(k * n * per, f"TEN synthesis of {k:,} chunks on {n} nodes"
                   + (" (compact form)" if compact else ""))


def check_symmetric_work(topo, coll, chunks, restarts):
    """The counts of the translated search checked before any work: its problem still holds
    every chunk's pre- and postcondition at every node and the events of every chunk."""
    if restarts is not None and restarts > MAX_RESTARTS:
        raise UnsupportedError(f"restarts must be at most {MAX_RESTARTS:,}, got {restarts:,}")
    n = topo.num_nodes
    k = coll.num_shards(n) * chunks
    require_memory(k * n * _BYTES_PER_SYMMETRIC_PAIR + k * _BYTES_PER_SYMMETRIC_CHUNK,
                   f"TEN synthesis of {k:,} chunks on {n} nodes (symmetric form)")


def check_chunks(chunks):
    """``chunks`` as an int, checked as the ``chunks`` option of TEN synthesis is."""
    return _AT_LEAST_ONE("ten", "chunks", chunks)


def discretize(cost, time_step=None, *, max_error=REL_ERROR, max_resolution=MAX_RESOLUTION):
    """TEN slots per link, ``ceil(cost / f)``, and the factor ``f`` (seconds per slot).

    Without ``time_step``, ``f`` is the smallest link cost divided by the least resolution
    r = 1..``max_resolution`` (default 8) that rounds every link up by at most ``max_error``
    (default 5%), else by the r of least rounding (uniform links: r = 1, one slot each).

    >>> discretize(np.array([1.0, 1.0]))[0].tolist()
    [1, 1]
    >>> steps, f = discretize(np.array([1.0, 1.5]))
    >>> steps.tolist(), f
    ([2, 3], 0.5)

    A link may take at most :data:`MAX_SLOTS_PER_LINK` slots, which keeps every step number of
    the schedule within the file format's 32-bit range.
    """
    cost = np.asarray(cost, dtype=float)
    if cost.size == 0:
        return np.zeros(0, dtype=np.int64), 1.0
    if np.any(~np.isfinite(cost)) or np.any(cost <= 0):
        raise UnsupportedError("every link needs a positive, finite chunk time")
    if time_step is not None:
        f = parse_time(time_step, what="time_step")
        if f <= 0:
            raise UnsupportedError(f"time_step must be positive, got {time_step!r}")
    else:
        base = float(cost.min())
        best = None
        for r in range(1, int(max_resolution) + 1):
            f = base / r
            steps = np.ceil(cost / f * (1 - 1e-12))
            err = float((steps * f / cost).max()) - 1
            if best is None or err < best[0] - 1e-9:
                best = (err, f)
            if err <= max_error:
                break
        f = best[1]
    slots = float(cost.max()) / f
    if not slots <= MAX_SLOTS_PER_LINK:
        raise UnsupportedError(
            f"time step too small: the slowest link's chunk time {float(cost.max()):.6g} s would "
            f"take {slots:.3g} slots of {f:.3g} s; at most {MAX_SLOTS_PER_LINK} slots per link "
            f"(use a time step of at least {float(cost.max()) / MAX_SLOTS_PER_LINK:.3g} s)")
    steps = np.maximum(1, np.ceil(cost / f * (1 - 1e-12))).astype(np.int64)
    return steps, float(f)


@dataclass
class TenProblem:
    """A collective on a topology in TEN form.

    Attributes
    ----------
    topology : Topology
    collective : Collective
        A non-combining collective.
    root : int or None
    chunks : int
        Chunks per shard, C.
    size : float
        Buffer size M in bytes.
    chunk_bytes : float
    link_cost : float array
        Seconds one chunk occupies each link.
    time_step : float
        The discretization factor f (seconds per slot).
    link_steps : int array
        ``ceil(link_cost / f)``.
    pre, post : bool arrays (num_chunks, num_nodes)
    """

    topology: Topology
    collective: object
    root: object
    chunks: int
    size: float
    chunk_bytes: float
    link_cost: np.ndarray = field(repr=False)
    time_step: float = 1.0
    link_steps: np.ndarray = field(repr=False, default=None)
    pre: np.ndarray = field(repr=False, default=None)
    post: np.ndarray = field(repr=False, default=None)

    @property
    def num_chunks(self):
        return int(self.pre.shape[0])

    def arrays(self):
        """``(num_nodes, link_src, link_dst, link_steps, pre, post)`` for the solvers."""
        t = self.topology
        return (t.num_nodes, t.src, t.dst, self.link_steps, self.pre, self.post)


def ten_problem(topology, collective, *, chunks=1, size=defaults.SYNTHESIS_SIZE, root=None,
                time_step=None, discretization=None):
    """Build the :class:`TenProblem` of a non-combining collective.

    ``discretization``: keyword arguments of :func:`discretize` (``max_error``,
    ``max_resolution``) for the automatic time step.

    >>> p = ten_problem("mesh:5x5", "allgather", size="1GiB")
    >>> p.num_chunks, int(p.link_steps.max())
    (25, 1)
    """
    topo = _topology(topology)
    topo.require_no_switches("TEN synthesis (unwind switches first)")
    coll = _collective(collective)
    check_chunks(chunks)
    size = parse_size(size)
    if size <= 0:
        raise UnsupportedError(f"size must be positive, got {size!r}")
    pre, post = chunk_conditions(coll, topo.num_nodes, chunks, root)
    chunk_bytes = coll.shard_fraction(topo.num_nodes) * size / chunks
    cost = topo.latency + chunk_bytes / topo.bandwidth
    steps, f = discretize(cost, time_step, **(discretization or {}))
    return TenProblem(topo, coll, root, int(chunks), float(size), float(chunk_bytes), cost, f,
                      steps, pre, post)


#: Events turned into transfers at a time by :func:`events_to_schedule`.
_ROWS = 1 << 20


def events_to_schedule(problem, events, *, algorithm="ten-greedy", meta=None):
    """Turn TEN events (``chunk, link, start``; an array or a
    :class:`~.greedy.GreedyResult`) into a :class:`Schedule` (step = start + 1)."""
    t = problem.topology
    c = problem.chunks
    blocks, total = _event_blocks(events)
    transfers = np.empty(total, dtype=TRANSFER_DTYPE)
    lo = 0
    for block in blocks:                      # in blocks: no full-size temporaries
        chunk = block["chunk"].astype(np.int64)
        link = block["link"].astype(np.int64)
        part = chunk % c
        transfers[lo:lo + block.size] = transfer_array(block["start"].astype(np.int64) + 1,
                                                       t.src[link], t.dst[link], chunk // c,
                                                       part / c, (part + 1) / c)
        lo += block.size
    return Schedule(t, problem.collective, transfers,
                    root=problem.root if problem.collective.rooted else None,
                    algorithm=algorithm, meta=meta)


def events_to_compact(problem, events, *, algorithm="ten-greedy", meta=None):
    """Turn TEN events (an array or a :class:`~.greedy.GreedyResult`, whose compact sends are
    let go as they are read) into a :class:`~topocoll.schedule.compact.CompactSchedule`
    (step = start + 1): about 8 bytes a transfer on a 128x128 mesh where the explicit rows take
    37, and never the events' 24 at once."""
    from ...schedule.compact import CompactSchedule

    t = problem.topology
    c = problem.chunks
    n = t.num_nodes
    blocks, total = _event_blocks(events)
    span = int(events.makespan) if isinstance(events, GreedyResult) else None
    cols = {"step": np.empty(total, dtype=np.min_scalar_type(span) if span is not None
                             else np.int64),
            "src": np.empty(total, dtype=np.min_scalar_type(n - 1)),
            "dst": np.empty(total, dtype=np.min_scalar_type(n - 1)),
            "shard": np.empty(total, dtype=np.min_scalar_type(
                max(0, problem.num_chunks // c - 1)))}
    if c > 1:
        cols["part"] = np.empty(total, dtype=np.min_scalar_type(c - 1))
    lo = 0
    for block in blocks:
        chunk = block["chunk"].astype(np.int64)
        link = block["link"].astype(np.int64)
        part = slice(lo, lo + block.size)
        cols["step"][part] = block["start"] + 1
        cols["src"][part] = t.src[link]
        cols["dst"][part] = t.dst[link]
        cols["shard"][part] = chunk // c
        if c > 1:
            cols["part"][part] = chunk % c
        lo += block.size
    if span is None:
        cols["step"] = cols["step"].astype(np.min_scalar_type(int(cols["step"].max(initial=0))))
    return CompactSchedule(t, problem.collective, cols, parts=c,
                           root=problem.root if problem.collective.rooted else None,
                           algorithm=algorithm, meta=meta)


def _event_blocks(events):
    """``(blocks, count)``: the events in start order as blocks of :data:`_ROWS`, straight
    from a greedy's compact sends where they were made in that order."""
    if isinstance(events, GreedyResult) and events.ordered:
        return events.event_blocks(_ROWS), events.num_events
    events = np.asarray(event_array(events))
    start = events["start"]
    if start.size > 1 and not bool(np.all(start[1:] >= start[:-1])):
        events = events[np.argsort(start, kind="stable")]
    return (events[lo:lo + _ROWS] for lo in range(0, events.size, _ROWS)), int(events.size)


def event_array(events):
    """Events as an :data:`~.greedy.EVENT_DTYPE` array: ``events`` itself, or a
    :class:`~.greedy.GreedyResult`'s (made from its compact sends)."""
    return events.events if isinstance(events, GreedyResult) else events


def prepare_topology(topology, unwind_degree=None, fail_links=None, fail_nodes=None):
    """``topology`` (a :class:`Topology` or spec) with the failed links and nodes removed and
    its switches unwound (degree ``unwind_degree``), as :func:`synthesize` takes it; an
    :class:`~topocoll.errors.UnsupportedError` for a degree without switches or fewer than
    two nodes."""
    from ...topology.unwind import fail_links as _fail_links, fail_nodes as _fail_nodes, \
        unwind_switches
    topo = _topology(topology)
    if fail_links:
        topo = _fail_links(topo, fail_links)
    if fail_nodes:
        topo = _fail_nodes(topo, fail_nodes)
    if topo.switches:
        topo = unwind_switches(topo, unwind_degree)
    elif unwind_degree is not None:
        if not isinstance(unwind_degree, dict):
            _check_degree(unwind_degree)
        raise UnsupportedError(f"unwind degree {unwind_degree} given, but {topo.name} has no "
                               "switches to unwind")
    topo.require_nodes(2, "a collective schedule")
    return topo


def _check_degree(k):
    return _AT_LEAST_ONE("ten", "unwind_degree", k)
