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
import os
import time
from dataclasses import dataclass, field

import numpy as np

from ... import defaults
from ...collectives import collective as _collective
from ...errors import InputTypeError, NotStronglyConnectedError, UnsupportedError
from ...limits import require_memory
from ...schedule.model import TRANSFER_DTYPE, Schedule, transfer_array
from ...schedule.transforms import concatenate, reverse
from ...topology import topology as _topology
from ...topology.model import Topology
from ...topology.paths import distances
from ...units import parse_size, parse_time
from .cutbound import pair_cut_bound, pair_forward_bound
from .cayley import symmetric_events, symmetric_representatives, translation_servers
from .greedy import RULES, GreedyResult, greedy_events
from .releasebound import release_time_bound

__all__ = ["synthesize", "TenProblem", "ten_problem", "chunk_conditions", "discretize",
           "chunk_lower_bound", "events_to_schedule", "events_to_compact", "METHODS",
           "TEN_COLLECTIVES", "auto_restarts", "mixed_links", "AUTO_RESTARTS",
           "GREEDY_DISCRETIZATIONS", "REPAIR_WORK", "AT_BOUND", "prepare_topology",
           "GreedyRequest", "FORMS"]

#: Synthesis methods.
METHODS = ("greedy", "ilp")
#: Collectives the TEN synthesizer makes (all eight).
TEN_COLLECTIVES = ("allgather", "reduce_scatter", "allreduce", "broadcast", "reduce", "scatter",
                   "gather", "alltoall")
#: Combining collectives and the non-combining collective they are the reversal of.
_REVERSED = {"reduce_scatter": "allgather", "reduce": "broadcast"}
_REL_ERROR = 0.05     # auto discretization: accept a rounding error of 5% per link
#: Most TEN slots one link transfer may take: a finer time step is refused (step numbers are
#: 32-bit in the schedule format, and a makespan spans many link transfers).
MAX_SLOTS_PER_LINK = 2**16
_MAX_RESOLUTION = 8
#: The greedy's finer automatic discretization: its work grows with the transfers, not the
#: slots, and a 5% rounding of the slow links costs up to 2% in the link model (measured on
#: 8x8 meshes and tori with 4:1 links and 10 us latency; docs/synthesis.md).
GREEDY_DISCRETIZATION = {"max_error": 0.01, "max_resolution": 32}
#: Discretizations the default greedy tries on mixed links, in order, until a schedule is
#: within :data:`AT_BOUND` of the chunk bound: the fine one, then the ILP's coarser one (at
#: 10 us latency a 4:1 link is 3.91 fast-link times: 1% needs 11 slots for the fastest link,
#: where the repair's models get too large; 5% rounds it to 4 and the repair reaches the
#: bound on the 8x4 torus).
GREEDY_DISCRETIZATIONS = (GREEDY_DISCRETIZATION,
                          {"max_error": _REL_ERROR, "max_resolution": _MAX_RESOLUTION})
#: Relative distance to the chunk bound (by the synthesizer's replay of its events) at which
#: the default greedy stops searching.
AT_BOUND = 2e-3
#: Most chunks x links for which the default greedy repairs its schedule with the ILP
#: (:mod:`.repair`) on mixed links (a 16x16 torus is 2**18).
REPAIR_WORK = 2**17
#: Most greedy runs made by default on links of mixed speeds (each stops the search when it
#: reaches the chunk lower bound).
AUTO_RESTARTS = 16
_AUTO_WORK = 2**19


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
                               f"{_REVERSED.get(coll.name, 'reduce_scatter + allgather')}")
    _check_chunks(chunks)
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


def _check_work(topo, coll, chunks, method, restarts, compact=False):
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


def _check_symmetric_work(topo, coll, chunks, restarts):
    """The counts of the translated search checked before any work: its problem still holds
    every chunk's pre- and postcondition at every node and the events of every chunk."""
    if restarts is not None and restarts > MAX_RESTARTS:
        raise UnsupportedError(f"restarts must be at most {MAX_RESTARTS:,}, got {restarts:,}")
    n = topo.num_nodes
    k = coll.num_shards(n) * chunks
    require_memory(k * n * _BYTES_PER_SYMMETRIC_PAIR + k * _BYTES_PER_SYMMETRIC_CHUNK,
                   f"TEN synthesis of {k:,} chunks on {n} nodes (symmetric form)")


def _check_chunks(chunks):
    if isinstance(chunks, bool) or not isinstance(chunks, (int, np.integer)) or chunks < 1:
        raise UnsupportedError(f"chunks must be a whole number >= 1, got {chunks!r}")


def discretize(cost, time_step=None, *, max_error=_REL_ERROR, max_resolution=_MAX_RESOLUTION):
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
    _check_chunks(chunks)
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
    events = np.asarray(_event_array(events))
    start = events["start"]
    if start.size > 1 and not bool(np.all(start[1:] >= start[:-1])):
        events = events[np.argsort(start, kind="stable")]
    return (events[lo:lo + _ROWS] for lo in range(0, events.size, _ROWS)), int(events.size)


def chunk_lower_bound(problem, release=None):
    """A lower bound (seconds) on any schedule of ``problem``'s chunks in the link model.

    The largest of: for every node, the time its in-links (out-links for what it must send)
    need to carry the chunks it must receive (send), each link carrying one chunk per chunk
    time; the same for every pair of adjacent nodes and the links crossing into (out of) the
    pair (:func:`~topocoll.synth.ten.cutbound.pair_cut_bound`); the least chunk-time path
    from the nearest holder of a chunk to a node that wants it; and, with ``release``, the
    node terms with each chunk released on a link only once it can be at the sender
    (:func:`~topocoll.synth.ten.releasebound.release_time_bound`) and the pair terms with a
    chunk that enters one node of the pair late also entering the other
    (:func:`~topocoll.synth.ten.cutbound.pair_forward_bound`); without these two, the
    *capacity bound* of ``meta["capacity_lower_bound"]``. ``release`` defaults to links of
    mixed chunk times (on uniform meshes, tori and hypercubes it never raised the bound, and
    it costs up to 0.2 s on 128 nodes).
    """
    if release is None:
        release = _mixed_costs(problem)
    capacity = _capacity_bound(problem)
    return _refined(problem, capacity) if release else capacity


def _refined(problem, capacity, pairs=None):
    """The release-time and pair-forwarding terms of :func:`chunk_lower_bound`, at least
    ``capacity`` (``pairs`` as in :func:`_capacity_bound`)."""
    if not problem.topology.num_links or not (problem.post & ~problem.pre).any():
        return capacity
    t, cost, pre, post = problem.topology, problem.link_cost, problem.pre, problem.post
    bound = pair_forward_bound(t, cost, pre, post, capacity, pairs=pairs)
    return release_time_bound(t, cost, pre, post, bound)


def _mixed_costs(problem):
    cost = problem.link_cost
    return bool(cost.size) and float(cost.max()) > float(cost.min()) * (1 + 1e-9)


def _bounds(problem, symmetric=False):
    """``(capacity bound, chunk bound)`` of :func:`chunk_lower_bound`, computed once;
    ``symmetric``: the network has a translation symmetry under which the problem is
    invariant (an all-gather), so node 0 and its pairs stand for all (the same values)."""
    pairs = _node0_pairs(problem.topology) if symmetric else None
    capacity = _capacity_bound(problem, pairs)
    return capacity, _refined(problem, capacity, pairs) if _mixed_costs(problem) else capacity


def _capacity_bound(problem, pairs=None):
    """The capacity terms of :func:`chunk_lower_bound`. ``pairs``: on a network with a
    translation symmetry, node 0 and its adjacent pairs stand for all nodes and pairs
    (:func:`_node0_pairs`); only node 0's terms are computed then."""
    t = problem.topology
    n = t.num_nodes
    cost = problem.link_cost
    pre, post = problem.pre, problem.post
    if pairs is None:
        recv = (post & ~pre).sum(axis=0)
        # what a node must send: chunks it alone holds at the start that someone else wants
        sole = pre & (pre.sum(axis=1) == 1)[:, None] & (post & ~pre).any(axis=1)[:, None]
        send = sole.sum(axis=0)
    else:                   # node 0's demands only
        recv, send = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
        recv[0] = int((post[:, 0] & ~pre[:, 0]).sum())
        mine = np.flatnonzero(pre[:, 0])
        send[0] = int(((pre[mine].sum(axis=1) == 1) & (post[mine] & ~pre[mine]).any(axis=1)).sum())
    bound = max(_stream_bound(t.dst, cost, recv, n), _stream_bound(t.src, cost, send, n),
                pair_cut_bound(t, cost, pre, post, _stream_bound, pairs=pairs))
    if t.num_links and (post & ~pre).any() and _far_above(t, cost, pre, post, bound):
        bound = max(bound, _farthest(t, cost, pre, post, node0=pairs is not None))
    return float(bound)


def _far_above(t, cost, pre, post, bound):
    """False if the distance term of :func:`_farthest` cannot exceed ``bound``: every path
    from a holder to a node that wants the chunk is at most the way from the holder to node 0
    and on from node 0 (two Dijkstra runs instead of one per holder)."""
    graph = _cost_graph(t, cost)
    to0 = _dijkstra(graph, [0], transpose=True)[0]
    from0 = _dijkstra(graph, [0])[0]
    holders = pre.any(axis=1) & (post & ~pre).any(axis=1)
    upper = float(to0[pre[holders].any(axis=0)].max()) + \
        float(from0[(post & ~pre).any(axis=0)].max())
    return not upper <= bound


#: Holders whose distances one Dijkstra call computes at a time.
_SOURCES = 256


def _cost_graph(t, cost):
    """Chunk-time graph of the links for :func:`_dijkstra`: ``(n, src, dst, cost)`` (parallel
    links: the fastest counts)."""
    return t.num_nodes, t.src, t.dst, cost


def _dijkstra(graph, indices, *, transpose=False, min_only=False):
    """Least chunk times from ``indices`` (to them with ``transpose``): scipy's Dijkstra's
    values, from numpy on small networks (:func:`topocoll.topology.paths.distances`)."""
    n, src, dst, cost = graph
    return distances(n, src, dst, indices, weight=cost, transpose=transpose, min_only=min_only)


def _farthest(t, cost, pre, post, node0=False):
    """The least chunk time from the nearest holder of a chunk to a node that wants it,
    maxed over the chunks and nodes (``node0``: node 0's chunks stand for all)."""
    rows = np.flatnonzero(pre[:, 0]) if node0 else np.arange(pre.shape[0])
    pre, post = pre[rows], post[rows]
    need = post & ~pre
    keep = need.any(axis=1)
    pre, post, need = pre[keep], post[keep], need[keep]
    rows = np.arange(pre.shape[0])
    graph = _cost_graph(t, cost)
    count = pre[rows].sum(axis=1)
    far = 0.0
    single = rows[count == 1]
    if single.size:                 # one holder each: Dijkstra from the holders, in blocks
        holder = pre[single].argmax(axis=1)
        nodes, inv = np.unique(holder, return_inverse=True)
        for lo in range(0, nodes.size, _SOURCES):
            d = _dijkstra(graph, nodes[lo:lo + _SOURCES])
            sel = np.flatnonzero((inv >= lo) & (inv < lo + _SOURCES))
            for b in range(0, sel.size, _SOURCES):
                part = sel[b:b + _SOURCES]
                far = max(far, float(np.where(need[single[part]], d[inv[part] - lo],
                                              -np.inf).max()))
    multi = rows[count > 1]
    if multi.size:                  # distinct holder sets are few in practice
        keys = np.packbits(pre[multi], axis=1)
        _, first, inv = np.unique(keys, axis=0, return_index=True, return_inverse=True)
        for i, c in enumerate(multi[first]):
            d = _dijkstra(graph, np.flatnonzero(pre[c]), min_only=True)
            far = max(far, float(d[need[multi[inv.ravel() == i]].any(axis=0)].max()))
    if not np.isfinite(far):
        raise NotStronglyConnectedError("some node cannot be reached by a chunk it needs")
    return far


def _node0_pairs(t):
    """The adjacent pairs ``(0, x)`` of node 0, as :func:`~.cutbound.pair_cut_bound` takes
    them: on a network with a translation symmetry every adjacent pair is a translate of one
    of these."""
    x = np.unique(np.r_[t.dst[t.src == 0], t.src[t.dst == 0]].astype(np.int64))
    x = x[x != 0]
    return np.zeros(x.size, dtype=np.int64), x


def _stream_bound(ends, cost, demand, n):
    """Least T with sum over a node's links of floor(T / cost) >= demand, maxed over nodes."""
    if not np.any(demand > 0):
        return 0.0
    nodes = np.flatnonzero(demand > 0)
    lo = np.zeros(n)
    hi = np.full(n, np.inf)
    rate = np.bincount(ends, weights=1.0 / cost, minlength=n)
    if np.any(rate[nodes] == 0):
        raise NotStronglyConnectedError(f"node {int(nodes[rate[nodes] == 0][0])} has no link "
                                        "to carry its chunks")
    hi[nodes] = (demand[nodes] + 1) / rate[nodes] + cost.max()
    for _ in range(80):
        mid = (lo + hi) / 2
        got = np.bincount(ends, weights=np.floor(mid[ends] / cost), minlength=n)
        ok = got >= demand
        hi = np.where(ok, mid, hi)
        lo = np.where(ok, lo, mid)
    # snap to the completion time of the last chunk actually needed
    snapped = np.zeros(n)
    np.maximum.at(snapped, ends, np.floor(hi[ends] / cost * (1 + 1e-12)) * cost)
    return float(snapped[nodes].max())


def _restart_seed(seed, index):
    if index == 0:
        return int(seed)
    return int(np.random.SeedSequence([int(seed), int(index)]).generate_state(1)[0])


def _greedy_job(args):
    arrays, seed, rule = args
    r = greedy_events(*arrays, seed=seed, rule=rule)
    return r.makespan, r.events


def mixed_links(problem):
    """True if the problem's links take different numbers of TEN slots."""
    steps = problem.link_steps
    return bool(steps.size) and int(steps.min()) != int(steps.max())


def auto_restarts(problem):
    """Greedy runs by default: 1 on uniform links (the greedy is at the bound there on the
    benchmarks), on mixed links up to :data:`AUTO_RESTARTS`, fewer on large problems (at least
    2), so that chunks x links x restarts stays near ``2**19``.

    >>> auto_restarts(ten_problem("torus:4x4", "allgather"))
    1
    """
    if not mixed_links(problem):
        return 1
    work = max(1, problem.num_chunks * problem.link_steps.size)
    return int(min(AUTO_RESTARTS, max(2, _AUTO_WORK // work)))


def _run_greedy(problem, seed, restarts, workers, progress, target):
    arrays = problem.arrays()
    auto = restarts is None
    if auto:
        restarts = auto_restarts(problem)
    seeds = [_restart_seed(seed, i) for i in range(restarts)]
    # on mixed links the restarts alternate the two chunk-choice rules (measured: neither
    # wins everywhere, see docs/synthesis.md)
    rules = [RULES[i % 2] if mixed_links(problem) else "tiers" for i in range(restarts)]
    if workers is None:
        workers = 1 if auto else min(restarts, os.cpu_count() or 1)
    results = []
    if restarts == 1 or workers <= 1:
        for i, (s, rule) in enumerate(zip(seeds, rules)):
            cb = progress if restarts == 1 else None
            r = greedy_events(*arrays, seed=s, rule=rule, progress=cb)
            results.append((r.makespan, r))        # its events made when first needed
            if progress is not None and restarts > 1:
                progress(i + 1, restarts)
            if r.makespan <= target:           # at the lower bound: no restart can do better
                break
    else:
        from concurrent.futures import ProcessPoolExecutor   # imported here: start-up time

        pool = ProcessPoolExecutor(max_workers=workers)
        try:
            jobs = [(arrays, s, rule) for s, rule in zip(seeds, rules)]
            for i, res in enumerate(pool.map(_greedy_job, jobs)):
                results.append(res)
                if progress is not None:
                    progress(i + 1, restarts)
        except BaseException:
            # Ctrl-C or a failed run: drop the queued restarts instead of running them all
            # before the error can surface (shutting down with wait=True would)
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown(wait=True)
        # the runs a serial search would have made (it stops at the bound)
        hit = [i for i, r in enumerate(results) if r[0] <= target]
        results = results[:hit[0] + 1] if hit else results
    spans = [r[0] for r in results]
    best = int(np.argmin(spans))               # first best: independent of the worker count
    return results[best][1], results[best][0], {"restart_makespans": spans,
                                                "best_restart": best,
                                                "best_seed": seeds[best],
                                                "best_rule": rules[best]}


@dataclass(frozen=True)
class GreedyRequest:
    """What a greedy synthesis of one non-combining collective was asked for: the prepared
    topology ``topo``, the collective ``coll`` and its ``root``, ``chunks`` per shard, buffer
    ``size`` in bytes, the ``time_step`` (None: automatic), the ``seed``, ``restarts`` (None:
    :func:`auto_restarts`), ``workers`` and the ``progress`` callback, as
    :func:`synthesize` takes them."""

    topo: Topology
    coll: object
    root: object
    chunks: int
    size: float
    time_step: object
    seed: int
    restarts: object
    workers: object
    progress: object

    def problem(self, discretization=None):
        """The :class:`TenProblem` of the request, discretized by ``discretization``."""
        return ten_problem(self.topo, self.coll, chunks=self.chunks, size=self.size,
                           root=self.root, time_step=self.time_step,
                           discretization=discretization)


def _greedy_search(req, *, repair, symmetric):
    """On mixed links of a network with a translation symmetry, first the translated all-gather
    of :mod:`.cayley` (at the slot bound but above the bound in seconds, with the per-link
    deadline windows of :mod:`.repair`); unless it is within :data:`AT_BOUND` of the chunk
    bound, the greedy's restarts, then on mixed links the repair (:mod:`.repair`) and the
    coarser discretization; the schedule of least replay time (:func:`~.repair.replay_time`).

    Returns ``(problem, capacity bound, bound, events, makespan, info)``."""
    problem = req.problem(GREEDY_DISCRETIZATION)
    seed = req.seed
    capacity, bound = _bounds(problem)
    if repair is None:
        repair = mixed_links(problem) and \
            problem.num_chunks * problem.link_steps.size <= REPAIR_WORK
    if symmetric is None:
        symmetric = mixed_links(problem)
    sym = None
    if symmetric and req.coll.name == "allgather":
        sym = symmetric_events(problem.topology, problem.link_cost, problem.link_steps,
                               req.chunks, bound, seed=seed)
    if sym is not None:
        fixed = None
        sym_time, sym_events, sym_span = _replay(problem, sym.events), sym.events, sym.makespan
        # only the deadline windows: above the slot bound the slot repair's windows cost as
        # much as the greedy's (the 6x6 torus with 4:1 links at 10 us: 0.6 s for nothing)
        if repair and sym_time > bound * (1 + AT_BOUND) and \
                sym_span <= math.ceil(bound / problem.time_step - 1e-9):
            sym_time, sym_events, sym_span, solves = _repaired(problem, sym_events, sym_span,
                                                               bound, seed)
            fixed = {"solves": solves, "time_steps": [problem.time_step]}
        tried = {"tries": sym.tries, "time": sym_time, "kept": True}
        if sym_time <= bound * (1 + AT_BOUND):
            info = {"restart_makespans": [], "best_restart": None, "best_seed": None,
                    "best_rule": None, "repair": fixed, "symmetric": tried}
            return problem, capacity, bound, sym_events, sym_span, info
    found = _greedy_runs(req, problem, repair=repair, bound=bound)
    ends, problem_g, events, makespan, info = found
    if sym is None:
        return problem_g, capacity, bound, events, makespan, dict(info, symmetric=None)
    if ends is None:
        ends = _replay(problem_g, events)
    if fixed is not None:
        info = dict(info, repair=dict(info["repair"],
                                      solves=info["repair"]["solves"] + fixed["solves"]))
    if ends <= sym_time * (1 + 1e-12):
        return problem_g, capacity, bound, events, makespan, \
            dict(info, symmetric=dict(tried, kept=False))
    return problem, capacity, bound, sym_events, sym_span, dict(info, symmetric=tried)


def _greedy_runs(req, problem, *, repair, bound):
    """The greedy part of :func:`_greedy_search` for ``req`` (a :class:`GreedyRequest`) from
    its first ``problem``: ``(replay time, problem, events, makespan, info)``; the replay time
    is None without the repair (not computed)."""
    seed, restarts, workers, progress = req.seed, req.restarts, req.workers, req.progress
    if not repair:
        slots = int(math.ceil(bound / problem.time_step - 1e-9))
        events, makespan, info = _run_greedy(problem, seed, restarts, workers, progress, slots)
        return None, problem, events, makespan, dict(info, repair=None)
    best, tried, solves = None, [], 0
    for disc in GREEDY_DISCRETIZATIONS if req.time_step is None else (None,):
        if disc is not GREEDY_DISCRETIZATION and disc is not None:
            problem = req.problem(disc)
        if problem.time_step in tried:
            continue
        tried.append(problem.time_step)
        slots = int(math.ceil(bound / problem.time_step - 1e-9))
        events, makespan, info = _run_greedy(problem, seed, restarts, workers, progress, slots)
        ends, events, makespan, done = _repaired(problem, events, makespan, bound, seed)
        solves += done
        if best is None or ends < best[0] * (1 - 1e-12):
            best = (ends, problem, events, makespan, info)
        if best[0] <= bound * (1 + AT_BOUND):
            break
    ends, problem, events, makespan, info = best
    info = dict(info, repair={"solves": solves, "time_steps": tried})
    return ends, problem, events, makespan, info


def _repaired(problem, events, makespan, bound, seed):
    """A schedule's repair (:mod:`.repair`): its last slots re-solved toward the slot bound,
    then, if its replay is still above the bound, per-link deadlines no later than a horizon
    the slot repair failed at; ``(replay time, events, makespan, window solves)``."""
    from .repair import deadline_events, link_deadlines, repair_events  # ILPs: scipy, HiGHS
    events = _event_array(events)
    arrays = problem.arrays()
    slots = int(math.ceil(bound / problem.time_step - 1e-9))
    solves, failed = 0, -1               # a horizon the slot repair could not reach
    if makespan > slots:
        fixed = repair_events(*arrays, events, slots, seed=seed)
        events, makespan, solves = fixed.events, fixed.makespan, fixed.solves
        if makespan > slots:
            failed = makespan - 1
    ends = _replay(problem, events)
    if ends > bound * (1 + AT_BOUND) and \
            link_deadlines(problem.link_cost, problem.link_steps, bound).max() > failed:
        timed = deadline_events(*arrays, events, link_cost=problem.link_cost,
                                time_step=problem.time_step, goal=bound, seed=seed)
        solves += timed.solves
        ends_timed = _replay(problem, timed.events)
        if ends_timed < ends:
            events, makespan, ends = timed.events, timed.makespan, ends_timed
    return ends, events, makespan, solves


def _replay(problem, events):
    from .repair import replay_time  # ILPs: scipy, HiGHS
    return replay_time(problem.topology.src, problem.topology.dst, problem.link_cost,
                       problem.pre, _event_array(events))


def _event_array(events):
    """Events as an :data:`~.greedy.EVENT_DTYPE` array: ``events`` itself, or a
    :class:`~.greedy.GreedyResult`'s (made from its compact sends)."""
    return events.events if isinstance(events, GreedyResult) else events


def _run_ilp(problem, seed, limits, window, progress):
    try:
        from .ilp import ilp_events  # ILPs: scipy, HiGHS
    except ImportError:
        raise UnsupportedError("method ilp needs topocoll.synth.ten.ilp, which is not "
                               "installed; use method greedy") from None
    res = ilp_events(*problem.arrays(), **limits, window=window, early_stop=True, seed=seed,
                     progress=progress)
    info = {"ilp_status": int(res.status), "ilp_status_name": res.status_name,
            "ilp_message": str(res.message), "ilp_optimal": bool(res.optimal)}
    return res.events, int(res.makespan), info


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
        _check_degree(unwind_degree)
        raise UnsupportedError(f"unwind degree {unwind_degree} given, but {topo.name} has no "
                               "switches to unwind")
    topo.require_nodes(2, "a collective schedule")
    return topo


def _check_degree(k):
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise UnsupportedError(f"unwind degree must be a whole number >= 1, got {k!r}")


#: The clock that splits an allreduce's time limit (tests replace it).
_clock = time.monotonic


def synthesize(topology, collective, *, method="greedy", chunks=1, size=defaults.SYNTHESIS_SIZE,
               root=None, seed=0, restarts=None, workers=None, unwind_degree=None,
               fail_links=None, fail_nodes=None, time_step=None, time_limit=None,
               node_limit=None, max_solves=None, window=None, repair=None, symmetric=None,
               form="auto", progress=None):
    """Synthesize a schedule of any collective on any topology through the TEN.

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
    if method not in METHODS:
        raise UnsupportedError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    if method != "ilp":   # said, not silently ignored
        given = [name for name, value in (("time_limit", time_limit), ("node_limit", node_limit),
                                          ("max_solves", max_solves), ("window", window))
                 if value is not None]
        if given:
            raise UnsupportedError(f"{', '.join(given)} appl{'ies' if len(given) == 1 else 'y'} "
                                   "to method='ilp' only")
    else:
        for name, value in (("repair", repair), ("symmetric", symmetric)):
            if value is not None:
                raise UnsupportedError(f"{name} applies to method='greedy' only")
    for name, value in (("repair", repair), ("symmetric", symmetric)):
        if value is not None and not isinstance(value, (bool, np.bool_)):
            raise UnsupportedError(f"{name} must be True, False or None, got {value!r}")
    if restarts is not None and (isinstance(restarts, bool) or
                                 not isinstance(restarts, (int, np.integer)) or restarts < 1):
        raise UnsupportedError(f"restarts must be a whole number >= 1, got {restarts!r}")
    if workers is not None and (isinstance(workers, bool) or
                                not isinstance(workers, (int, np.integer)) or workers < 1):
        raise UnsupportedError(f"workers must be a whole number >= 1, got {workers!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InputTypeError(f"seed must be a non-negative integer, got {seed!r}")
    _check_chunks(chunks)
    topo = prepare_topology(topology, unwind_degree, fail_links, fail_nodes)
    coll = _collective(collective)
    if coll.rooted:
        root = 0 if root is None else root
        if isinstance(root, bool) or not isinstance(root, (int, np.integer)) or \
                not 0 <= root < topo.num_nodes:
            raise UnsupportedError(f"root must be a node 0..{topo.num_nodes - 1}, got {root!r}")
        root = int(root)
    elif root is not None:
        raise UnsupportedError(f"{coll.name} takes no root")
    size = parse_size(size)
    form = _resolve_form(form, topo, coll, int(chunks), method, symmetric)
    if form != "symmetric":
        _check_work(topo, coll, int(chunks), method, restarts, compact=form == "compact")
    else:
        _check_symmetric_work(topo, coll, int(chunks), restarts)
    opts = dict(method=method, chunks=chunks, size=size, seed=seed, restarts=restarts,
                workers=workers, time_step=time_step, window=window, progress=progress,
                repair=repair, symmetric=symmetric, form=form,
                limits=dict(time_limit=time_limit, node_limit=node_limit, max_solves=max_solves))
    if coll.name == "allreduce":
        # one time limit for the whole call: half for the first phase, what is left for the second
        started = _clock()
        first = dict(opts, limits=dict(opts["limits"], time_limit=None if time_limit is None
                                       else time_limit / 2))
        rs = _synth_one(topo, _collective("reduce_scatter"), None, **first)
        if time_limit is not None:
            left = max(time_limit - (_clock() - started), 1e-3)
            opts = dict(opts, limits=dict(opts["limits"], time_limit=left))
        ag = _synth_one(topo, _collective("allgather"), None, **opts)
        if form == "symmetric":
            from ...schedule.transforms import concatenate_symmetric
            out = concatenate_symmetric(rs, ag, "allreduce", algorithm=rs.algorithm)
        else:
            out = concatenate(rs, ag, "allreduce", algorithm=rs.algorithm)
        meta = {k: v for k, v in ag.meta.items()}
        for key in ("makespan_slots", "ten_time"):
            meta[key] = rs.meta[key] + ag.meta[key]
        # The link model lets one shard's allgather start while others are still being
        # reduced, so only the larger phase bound bounds it (the sum bounds phase-by-phase).
        for key in ("chunk_lower_bound", "chunk_lower_bound_slots", "capacity_lower_bound"):
            meta[key] = max(rs.meta[key], ag.meta[key])
        meta["two_phase_lower_bound"] = rs.meta["chunk_lower_bound"] + ag.meta["chunk_lower_bound"]
        meta["phases"] = {"reduce_scatter": _phase(rs.meta), "allgather": _phase(ag.meta)}
        out = out.replace(meta=meta)
    else:
        out = _synth_one(topo, coll, root, **opts)
    return out


def _phase(meta):
    return {k: meta[k] for k in ("makespan_slots", "ten_time", "chunk_lower_bound")}


def _synth_one(topo, coll, root, *, method, chunks, size, seed, restarts, workers, time_step,
               limits, window, progress, repair, symmetric, form="explicit"):
    if coll.name in _REVERSED:
        base = _collective(_REVERSED[coll.name])
        fwd = _synth_one(topo.transpose(), base, root, method=method, chunks=chunks, size=size,
                         seed=seed, restarts=restarts, workers=workers, time_step=time_step,
                         limits=limits, window=window, progress=progress, repair=repair,
                         symmetric=symmetric, form=form)
        if form == "symmetric":
            from ...schedule.transforms import reverse_symmetric
            out = reverse_symmetric(fwd, coll, topo)
        else:
            out = reverse(fwd, coll, topo)
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
        problem, capacity, bound, events, makespan, info = _greedy_search(
            req, repair=repair, symmetric=symmetric)
    else:
        problem = ten_problem(topo, coll, chunks=chunks, size=size, root=root,
                              time_step=time_step)
        capacity, bound = _bounds(problem)
        events, makespan, info = _run_ilp(problem, seed, limits, window, progress)
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


#: The forms :func:`synthesize` makes.
FORMS = ("auto", "explicit", "symmetric", "compact")


def _resolve_form(form, topo, coll, chunks, method, symmetric):
    """``"explicit"``, ``"symmetric"`` or ``"compact"``: what ``form`` asks for on ``topo``,
    refused in one line where that form cannot be made."""
    from ...schedule.symmetric import EXPLICIT_TRANSFER_LIMIT, SYMMETRIC_COLLECTIVES
    from ...topology.symmetry import translation_group

    if form not in FORMS:
        raise UnsupportedError(f"unknown form {form!r}; choose one of {', '.join(FORMS)}")
    if form == "explicit":
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
        if explicit <= EXPLICIT_TRANSFER_LIMIT:
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
    from ...schedule.symmetric import EXPLICIT_TRANSFER_LIMIT

    return "compact" if transfers > EXPLICIT_TRANSFER_LIMIT and _copies_only(coll) else "explicit"


def _copies_only(coll):
    """True if the greedy makes ``coll`` of copies alone: what a compact schedule holds (the
    reversed collectives are made from copies, then reduce)."""
    return not coll.combining and coll.name not in _REVERSED


def _symmetric_allgather(topo, *, chunks, size, seed, tries, time_step, progress):
    """The translated all-gather of :mod:`.cayley` on ``topo`` as a
    :class:`~topocoll.schedule.symmetric.SymmetricSchedule` (its rows into node 0), with the
    meta of :func:`synthesize`; the bound from node 0 and its pairs (:func:`_bounds`)."""
    from ...schedule.symmetric import SymmetricSchedule
    problem = ten_problem(topo, "allgather", chunks=chunks, size=size, time_step=time_step,
                          discretization=GREEDY_DISCRETIZATION)
    servers = translation_servers(topo, problem.link_cost)
    if servers is None:
        raise UnsupportedError(f"form='symmetric': the links of {topo.name} are not invariant "
                               "under its translations (parallel links of one label differ)")
    capacity, bound = _bounds(problem, symmetric=True)
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
