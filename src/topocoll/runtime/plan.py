"""A schedule as a per-rank plan of messages, on the buffer layout of every collective.

Where each shard sits in a rank's input and output buffers is written once, in
:class:`topocoll.interop.layout.Layout` (MSCCL's layout, which msccl-tools, the runtime and
this module share). :func:`layout` adds the element sizes for a tensor of ``numel`` elements
(a :class:`TensorLayout`), which makes it the following (``N`` ranks, rank ``i`` plays node
``i``):

===============  ==========================  ==========================  =====================
collective       input (per rank)            output (per rank)           shard ``x``
===============  ==========================  ==========================  =====================
allgather        ``S`` elements              ``N*S``                     rank x's input;
                                                                         ``output[x*S:(x+1)*S]``
reduce_scatter   ``N*S``                     ``S``                       ``input[x*S:(x+1)*S]``
allreduce        ``M`` (in place)            the same tensor             ``[x*M//N, (x+1)*M//N)``
broadcast        ``M`` (in place)            the same tensor             the whole tensor
reduce           ``M`` (in place)            the same tensor (the root)  the whole tensor
scatter          ``N*S`` (the root)          ``S``                       ``input[x*S:(x+1)*S]``
gather           ``S``                       ``N*S`` (the root)          rank x's input
alltoall         ``N*S``                     ``N*S``                     ``x*N + y``: rank x's
                                                                         ``input[y*S:..]``, rank
                                                                         y's ``output[x*S:..]``
===============  ==========================  ==========================  =====================

Only the allreduce splits a buffer that need not divide by ``N``: its shards differ by at most
one element. A transfer of ``[lo, hi)`` of a shard of ``E`` elements moves elements
``[round(lo*E), round(hi*E))``: one fraction always maps to one element index, so adjacent
ranges neither overlap nor leave a gap, and a range that rounds to nothing is not sent.

A :class:`RankPlan` lists, for each step in which the rank takes part, what it sends to each
peer and what it receives from each, as element ranges of shards, in the order of the schedule's
transfers (sender and receiver derive the same order from the same file). Every transfer from
``src`` to ``dst`` in one step travels in one message. Data sent in step ``s`` is what the
sender held at the end of step ``s - 1``; received pieces are copied or added after all of the
step's messages have arrived.

>>> from topocoll.synth import generate
>>> plan = rank_plan(generate("ring:4", "allgather"), rank=0, numel=3)
>>> [(step.step, sorted(step.sends), sorted(step.recvs)) for step in plan.steps]
[(1, [1, 3], [1, 3]), (2, [1, 3], [1, 3])]
"""

from dataclasses import dataclass

import numpy as np

from ..collectives import REDUCE
from ..errors import UnsupportedError
from ..interop.layout import Layout
from ..units import whole_number

__all__ = ["TensorLayout", "layout", "RankPlan", "StepPlan", "rank_plan", "simulate_plans",
           "simulation_inputs"]

#: Collectives that torch.distributed calls on one tensor, which holds the result
ONE_TENSOR = ("allreduce", "broadcast", "reduce")


@dataclass(frozen=True)
class TensorLayout:
    """Element sizes of one collective's tensors and shards (see the module table).

    Attributes
    ----------
    collective : str
    nodes : int
    root : int or None
    input_numel, output_numel : int
        Elements of the input and output tensors of one rank (the root's, where they differ);
        ``output_numel == 0`` means the collective works in place on the input.
    shard_sizes : numpy.ndarray
        Elements of each shard.
    slot_starts : numpy.ndarray
        Offset of each slot of a buffer: slot ``i`` of ``buffers`` (one shard's place) starts
        at element ``slot_starts[i]`` of that buffer.
    buffers : Layout
        Which shard sits in which slot of each rank's input and output (one chunk per shard).
    """

    collective: str
    nodes: int
    root: object
    input_numel: int
    output_numel: int
    shard_sizes: np.ndarray
    slot_starts: np.ndarray
    buffers: Layout

    @property
    def in_place(self):
        return self.output_numel == 0

    def cut(self, tensor, shard, slot):
        """The part of a flat ``tensor`` (an input or output buffer) that is ``slot``, holding
        ``shard``."""
        a = int(self.slot_starts[slot])
        return tensor[a:a + int(self.shard_sizes[shard])]


def layout(collective, nodes, numel, root=None):
    """The :class:`TensorLayout` of ``collective`` on ``nodes`` ranks for an input of ``numel``
    elements; raises :class:`~topocoll.errors.UnsupportedError` when it does not divide as the
    layout needs.

    >>> layout("allreduce", 3, 7).shard_sizes.tolist()
    [2, 2, 3]
    >>> layout("reduce_scatter", 3, 7)
    Traceback (most recent call last):
    ...
    topocoll.errors.UnsupportedError: reduce_scatter on 3 ranks needs an input of a multiple of 3 elements (one shard per rank), got 7
    """
    n, numel = int(nodes), whole_number(numel, "numel (a tensor's elements)")
    buffers = Layout(collective, n, 1, root)
    name = buffers.collective.name
    slots = max(buffers.input_chunks, buffers.output_chunks)
    if name == "allreduce":             # the one split that need not divide: shards differ by 1
        bounds = np.arange(n + 1, dtype=np.int64) * numel // n
        sizes, starts = np.diff(bounds), bounds[:-1]
    else:
        if numel % buffers.input_chunks:
            raise UnsupportedError(f"{name} on {n} ranks needs an input of a multiple of {n} "
                                   f"elements (one shard per rank), got {numel}")
        size = numel // buffers.input_chunks
        sizes = np.full(buffers.num_shards, size, dtype=np.int64)
        starts = np.arange(slots, dtype=np.int64) * size
    out = 0 if name in ONE_TENSOR else int(sizes[0]) * buffers.output_chunks
    return TensorLayout(name, n, root, numel, out, sizes, starts, buffers)


@dataclass
class StepPlan:
    """One step of one rank: ``sends[peer]`` and ``recvs[peer]`` are lists of pieces
    ``(shard, start, stop)`` (receives: ``(shard, start, stop, reduce)``), in message order."""

    step: int
    sends: dict
    recvs: dict

    def send_numel(self, peer):
        return sum(b - a for _, a, b in self.sends[peer])

    def recv_numel(self, peer):
        return sum(b - a for _, a, b, _ in self.recvs[peer])


@dataclass
class RankPlan:
    """What one rank does: its steps in order, the shards it touches, and the layout."""

    rank: int
    layout: TensorLayout
    steps: list
    shards: np.ndarray


def _element_ranges(schedule, lay):
    t = schedule.transfers
    size = lay.shard_sizes[t["shard"]].astype(np.float64)
    start = np.rint(t["lo"] * size).astype(np.int64)
    stop = np.rint(t["hi"] * size).astype(np.int64)
    return start, stop


def rank_plan(schedule, rank, numel, *, element_ranges=None):
    """The :class:`RankPlan` of ``rank`` for an input of ``numel`` elements."""
    n = schedule.topology.num_nodes
    lay = layout(schedule.collective.name, n, numel, schedule.root)
    t = schedule.transfers
    start, stop = element_ranges if element_ranges is not None else _element_ranges(schedule, lay)
    mine = np.flatnonzero(((t["src"] == rank) | (t["dst"] == rank)) & (stop > start))
    order = mine[np.lexsort((mine, t["step"][mine]))]   # by step, then file order
    steps = []
    current = None
    for i in order.tolist():
        step = int(t["step"][i])
        if current is None or current.step != step:
            current = StepPlan(step, {}, {})
            steps.append(current)
        src, dst, shard = int(t["src"][i]), int(t["dst"][i]), int(t["shard"][i])
        a, b = int(start[i]), int(stop[i])
        if src == rank:
            current.sends.setdefault(dst, []).append((shard, a, b))
        if dst == rank:
            current.recvs.setdefault(src, []).append((shard, a, b, int(t["op"][i]) == REDUCE))
    touched = np.unique(np.concatenate([t["shard"][mine], _own_shards(lay, rank)]))
    return RankPlan(rank, lay, steps, touched)


def _own_shards(lay, rank):
    """Shards the rank holds data of at the start or must hold at the end."""
    b = lay.buffers
    return np.unique(np.array([g for g, _ in b.inputs(rank)] + [g for g, _ in b.outputs(rank)],
                              dtype=np.int64))


# ------------------------------------------------------------------ state: start, pack, apply
def in_place_shards(plan, inputs, output):
    """Shard buffers that can be views of the user's tensors, so that no copy goes in or out:
    every shard of the in-place collectives (allreduce, broadcast, reduce: the tensor is the
    result), and the output slices of an allgather. Other shards need buffers of their own
    (a reduce-scatter must not change its input)."""
    lay, rank = plan.layout, plan.rank
    name, b = lay.collective, lay.buffers
    views = {}
    if name in ONE_TENSOR:
        source = inputs
    elif name == "allgather" and output is not None:
        source = output
    else:
        return views
    for s in plan.shards.tolist():
        slot = b.output_of(rank, s)
        views[s] = lay.cut(source, s, b.input_of(rank, s) if slot is None else slot)
    return views


def initial_state(plan, inputs, zeros, state=None, views=None):
    """Shard buffers of a rank at the start: ``{shard: 1-D array}`` from its input tensor (a
    flat array); ``zeros(k)`` makes a fresh zero array of ``k`` elements. A ``state`` from an
    earlier call with the same plan is zeroed and reused; ``views`` (from
    :func:`in_place_shards`) replace buffers by views of the user's tensors."""
    lay, rank = plan.layout, plan.rank
    views = views or {}
    if state is None:
        state = {int(s): zeros(int(lay.shard_sizes[s])) for s in plan.shards if s not in views}
    else:
        for s, buffer in state.items():
            if s not in views:
                buffer[:] = 0
    state = {**state, **views}
    if lay.collective in ONE_TENSOR and views:
        return state                      # the shards are the input itself
    for shard, slot in lay.buffers.inputs(rank):
        state[shard][:] = lay.cut(inputs, shard, slot)
    return state


def pack(step, peer, state, cat):
    """The message of one step to ``peer``: its pieces, concatenated (a single piece is sent
    as it is, without a copy)."""
    pieces = step.sends[peer]
    if len(pieces) == 1:
        s, a, b = pieces[0]
        return state[s][a:b]
    return cat([state[s][a:b] for s, a, b in pieces])


def receives_in_place(step, peer):
    """Whether the message from ``peer`` is one copied piece that no send of this step reads:
    it can then be received straight into place, with no buffer and no copy."""
    pieces = step.recvs[peer]
    if len(pieces) != 1 or pieces[0][3]:
        return False
    s, a, b, _ = pieces[0]
    return not any(s2 == s and a2 < b and a < b2
                   for sends in step.sends.values() for s2, a2, b2 in sends)


def _add(target, piece):
    target += piece


def apply(step, peer, message, state, combine=_add):
    """Copy or combine a received message into the shard buffers; ``combine(target, piece)``
    reduces in place (default: adds)."""
    offset = 0
    for s, a, b, reduce in step.recvs[peer]:
        piece = message[offset:offset + (b - a)]
        if reduce:
            combine(state[s][a:b], piece)
        else:
            state[s][a:b] = piece
        offset += b - a


def finish(plan, state, inputs, output, views=None):
    """Write the result into ``output`` (or ``inputs`` for in-place collectives); nothing to
    write where the shards were views of it."""
    lay, rank = plan.layout, plan.rank
    target = inputs if lay.in_place else output
    if views:
        return target
    for shard, slot in lay.buffers.outputs(rank):
        lay.cut(target, shard, slot)[:] = state[shard]
    return target


def simulation_inputs(schedule, inputs):
    """``(n, flat inputs, layout, element ranges)`` of an in-memory run of ``schedule``: what
    :func:`simulate_plans` and :func:`~topocoll.runtime.loopback.simulate_dataflow` share."""
    n = schedule.topology.num_nodes
    inputs = [np.array(x).reshape(-1) for x in inputs]
    if len(inputs) != n:
        raise UnsupportedError(f"the schedule has {n} nodes; got {len(inputs)} inputs")
    lay = layout(schedule.collective.name, n, inputs[0].size, schedule.root)
    return n, inputs, lay, _element_ranges(schedule, lay)


def simulate_plans(schedule, inputs):
    """Run a schedule on in-memory ranks with numpy: ``inputs[i]`` is rank i's flat input;
    returns each rank's result (its output, or its input updated in place). The same plans,
    packing and combining as the torch executor, without torch: what a test checks against
    the collective's definition.

    >>> from topocoll.synth import generate
    >>> out = simulate_plans(generate("ring:3", "allreduce"), [np.arange(4.0)] * 3)
    >>> out[0].tolist()
    [0.0, 3.0, 6.0, 9.0]
    """
    n, inputs, lay, ranges = simulation_inputs(schedule, inputs)
    numel = inputs[0].size
    plans = [rank_plan(schedule, r, numel, element_ranges=ranges) for r in range(n)]
    dtype = inputs[0].dtype
    states = [initial_state(p, x, lambda k: np.zeros(k, dtype=dtype))
              for p, x in zip(plans, inputs)]
    steps = sorted({s.step for p in plans for s in p.steps})
    cursor = [0] * n
    for number in steps:
        now = []
        for r, p in enumerate(plans):
            if cursor[r] < len(p.steps) and p.steps[cursor[r]].step == number:
                now.append((r, p.steps[cursor[r]]))
                cursor[r] += 1
        mail = {(r, peer): np.array(pack(step, peer, states[r], np.concatenate))   # a copy
                for r, step in now for peer in step.sends}
        for r, step in now:
            for peer in step.recvs:
                apply(step, peer, mail[(peer, r)], states[r])
    results = []
    for p, x, state in zip(plans, inputs, states):
        out = x.copy() if lay.in_place else np.zeros(max(lay.output_numel, 1), dtype=dtype)
        results.append(finish(p, state, out, out))
    return results
