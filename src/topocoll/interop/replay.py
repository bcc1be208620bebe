"""Run an MSCCL program symbolically and read off the schedule it performs.

Every thread block executes its steps in order, as the runtime does: a step first waits for
its dependency (``depid``/``deps``: the named block has finished a step numbered at least
``deps`` that is marked ``hasdep``), a receive waits for the matching send on its channel, and
sends never wait for the receiver (the runtime's connections buffer them). Buffers hold symbolic
values: which chunk of which shard, and in combining collectives which ranks' contributions
are summed in. The run ends when every block is done, or when none can move: then the program
would hang, and the blocked steps are named.

The older dialect's ``<copy>`` elements (TACCL, TE-CCL: ``<copy i_off o_off/>``, one chunk from
input to output; or with ``srcbuf srcoff dstbuf dstoff cnt``) run before the GPU's thread
blocks, and a program without ``outofplace`` runs in the one mode it declares
(:func:`program_modes`: in place unless ``inplace="0"``).

Each send-receive pair becomes a transfer of the schedule. Its step is the earliest the data
allows (one after the step that delivered what it sends, and never before an earlier step of
the same thread block), or the ``tcstep`` the exporter wrote where that is not earlier. An
allreduce may cut its buffer into any number of chunks: a chunk becomes the ranges of the
shards it covers (:meth:`Layout.pieces <topocoll.interop.layout.Layout.pieces>`).

>>> from topocoll.topology import topology
>>> from topocoll.synth import generate
>>> from topocoll.interop.export import export_msccl
>>> prog = export_msccl(generate(topology("ring:4"), "allgather", "bfb")).program
>>> run = replay(prog)
>>> run.hang, run.problems, run.schedule.num_steps
([], [], 2)
"""

from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from ..collectives import COPY, REDUCE
from ..errors import ScheduleFormatError
from ..schedule.model import TRANSFER_DTYPE, Schedule, transfer_array
from ..schedule.transforms import merge_pieces
from ..topology.model import Topology
from .layout import Layout, collective_of_runtime_name
from .mscclxml import RECVS, REDUCES, SENDS, WRITES
from .threadblocks import dep_ready, int_attr as _int, read_blocks, run_blocks

__all__ = ["replay", "Replay", "program_layout", "program_modes", "program_root"]



def program_layout(program, root=None):
    """``(collective, ranks, chunks per shard, Layout)`` of a program, from ``coll``, ``ngpus``
    and the buffer sizes of its GPUs (the largest input and output chunk counts)."""
    coll = collective_of_runtime_name(program.attrs.get("coll", ""))
    n = _int(program, "ngpus", program, default=len(program.gpus))
    if n < 1:
        raise ScheduleFormatError(f"{program.where(program)}: ngpus must be at least 1")
    ins = max([_int(g, "i_chunks", program, default=0) for g in program.gpus] + [0])
    outs = max([_int(g, "o_chunks", program, default=0) for g in program.gpus] + [0])
    name = coll.name
    per_shard = {"allgather": outs // n if outs else ins,
                 "reduce_scatter": ins // n if ins else outs,
                 "allreduce": max(ins, outs) // n, "broadcast": max(ins, outs),
                 "reduce": max(ins, outs), "scatter": outs or ins // n,
                 "gather": ins or outs // n, "alltoall": max(ins, outs) // n}[name]
    k = per_shard
    if name == "allreduce" and max(ins, outs) % n:
        # any chunking of the buffer: chunk c covers [c/C, (c+1)/C) of it (Layout.pieces)
        k = Fraction(max(ins, outs), n)
    if k <= 0:
        raise ScheduleFormatError(f"{program.where(program)}: i_chunks/o_chunks give no whole "
                                  f"chunk per shard for {name} on {n} ranks")
    lay = Layout(coll, n, k, root)
    if (name == "allgather" and outs and outs != n * k) or \
            (name in ("allreduce", "alltoall") and max(ins, outs) != n * k):
        raise ScheduleFormatError(f"{program.where(program)}: {name} on {n} ranks needs buffers "
                                  f"of a multiple of {n} chunks, got i_chunks={ins}, "
                                  f"o_chunks={outs}")
    return coll, n, k, lay


def program_modes(program):
    """The calls a program declares it is right for: ``[False]`` (out-of-place), ``[True]``
    (in-place) or ``[False, True]``.

    The current dialect says it with ``inplace`` and ``outofplace``. The older one (TACCL,
    ASTRA-sim's inputs, early SCCL) has no ``outofplace``: its programs are in-place unless
    ``inplace="0"`` (TACCL writes ``inplace="1"`` and reads each rank's own chunk from the
    output buffer).

    >>> from topocoll.interop.mscclxml import parse_msccl
    >>> [program_modes(parse_msccl(f'<algo coll="allgather" {a}/>')) for a in
    ...  ('inplace="1" outofplace="1"', 'inplace="0" outofplace="1"', 'inplace="1"',
    ...   'inplace="0"', '')]
    [[False, True], [False], [True], [False], [True]]
    """
    a = program.attrs
    if "outofplace" not in a:
        return [a.get("inplace", "1") != "0"]
    modes = [False] if a.get("outofplace") != "0" else []
    if a.get("inplace") == "1":
        modes.append(True)
    return modes or [False]


@dataclass
class Replay:
    """What a program does: the schedule, and what went wrong.

    ``problems`` are ``(line, message)`` pairs: reductions that add a contribution twice or mix
    chunks, reads of empty buffers, sends whose receive does not match. ``hang`` lists the
    blocked steps if the program cannot finish. ``wrong_outputs`` names output chunks that do
    not hold what the collective promises when the program ends.
    """

    schedule: Schedule = None
    problems: list = field(default_factory=list)
    hang: list = field(default_factory=list)
    wrong_outputs: list = field(default_factory=list)
    inplace: bool = False
    hinted: bool = False
    #: transfers of a combining program that our model cannot state exactly (see
    #: ``_combining_ops``)
    unexpressed: int = 0

    @property
    def ok(self):
        return not (self.problems or self.hang or self.wrong_outputs)


def program_root(program, coll, given=None):
    """The root of a program of collective ``coll``: ``None`` for a collective without one, else
    ``given``, the ``root`` attribute, or the one rank that only sends (broadcast, scatter) or
    only receives (reduce, gather), else 0."""
    if not coll.rooted:
        return None
    if given is not None:
        return int(given)
    if "root" in program.attrs:
        return _int(program, "root", program)
    # the root is the rank that only sends (broadcast, scatter) or only receives (reduce,
    # gather); intermediate ranks do both
    kinds = {}
    for gpu in program.gpus:
        rank = gpu.attrs.get("id")
        for tb in gpu.blocks:
            for st in tb.steps:
                kind = st.attrs.get("type")
                if kind in SENDS:
                    kinds.setdefault(rank, set()).add("send")
                if kind in RECVS:
                    kinds.setdefault(rank, set()).add("recv")
    want = {"send"} if coll.name in ("broadcast", "scatter") else {"recv"}
    cands = [r for r, k in kinds.items() if k == want]
    try:
        return int(cands[0]) if len(cands) == 1 else 0
    except ValueError:
        return 0


def _check_sizes(program, n):
    """Refuse programs whose claims would make the replay itself unbounded: ranks must match
    the <gpu> elements, buffers must fit the runtime's 16-bit offsets."""
    if n != len(program.gpus):
        raise ScheduleFormatError(f"{program.where(program)}: ngpus={n} but the file has "
                                  f"{len(program.gpus)} <gpu> element(s)")
    for gpu in program.gpus:
        for name in ("i_chunks", "o_chunks", "s_chunks"):
            v = _int(gpu, name, program, default=0)
            if not 0 <= v < 1 << 15:
                raise ScheduleFormatError(f"{program.where(gpu)}: {name}={v} must be "
                                          "0..32767 (the runtime's 16-bit offsets)")


def replay(program, *, inplace=False, topology=None, root=None, max_problems=20):
    """Execute ``program`` symbolically (see the module docstring).

    Parameters
    ----------
    program : Program
    inplace : bool
        Run it as an in-place call (input and output one buffer, as the layout aliases them).
        A program of the older dialect (no ``outofplace`` attribute) declares one mode, and
        runs in it whatever this says (see :func:`program_modes`).
    topology : Topology, optional
        The network for the schedule; by default the links the program uses, with the default
        bandwidth and latency.
    root : int, optional
        The root of a rooted collective; by default the ``root`` attribute or the rank that
        only sends (broadcast, scatter) or only receives (reduce, gather).

    Returns
    -------
    Replay
    """
    coll, n, k, _ = program_layout(program)
    _check_sizes(program, n)
    if "outofplace" not in program.attrs:
        inplace = program_modes(program)[0]
    root = program_root(program, coll, root)
    if coll.rooted and not 0 <= root < n:
        raise ScheduleFormatError(f"{program.where(program)}: root {root} is not a rank")
    lay = Layout(coll, n, k, root)
    out = Replay(inplace=inplace)
    sym = _Symbolic(program, coll, lay, inplace, out, max_problems)
    run = run_blocks(read_blocks(program, n), sym.step)
    _report_stuck(run, sym, out)
    sym.check_outputs()
    rows = sym.rows
    out.hinted = sym.hinted and bool(rows)
    if coll.combining:
        rows, unexpressed = _combining_ops(rows, n)
        if unexpressed:
            out.unexpressed = unexpressed
    out.schedule = _schedule(rows, coll, n, k, lay, root, topology, program)
    return out


class _Symbolic:
    """The buffers of a symbolic run and what each step does to them (:func:`replay`).

    Buffers map rank -> cell -> (value, ready step); a value is ``g`` or ``(g, bits)``. What a
    rank holds at the start is filled in on first read (an input chunk nobody wrote yet). A
    send queues ``[values, ready, op, cnt, hint, (rank, bid)]``; ``rows`` collects
    ``(step, src, dst, g, op)``."""

    def __init__(self, program, coll, lay, inplace, out, max_problems):
        self.program, self.coll, self.lay, self.inplace = program, coll, lay, inplace
        self.out, self.max_problems = out, max_problems
        self.n = n = lay.n
        self.combining = coll.combining
        self.mem = [dict() for _ in range(n)]
        self.start = [dict() for _ in range(n)]
        for r in range(n):
            for g, idx in lay.inputs(r):
                self.start[r][self.cell(r, "i", idx)] = ((g, 1 << r) if self.combining else g,
                                                         0)
        self.last_step = {}    # (rank, bid, side) -> step of the side's latest transfer
        self.rows = []
        self.hinted = True

    def note(self, element, message):
        if len(self.out.problems) < self.max_problems:
            self.out.problems.append((element.line, f"{self.program.where(element)}: {message}"))

    def cell(self, rank, buf, off):
        return self.lay.alias(rank, buf, off) if self.inplace else (buf, off)

    def read(self, rank, buf, off, cnt, op):
        vals = []
        for i in range(cnt):
            c = self.cell(rank, buf, off + i)
            got = self.mem[rank].get(c)
            if got is None:
                got = self.start[rank].get(c)
            if got is None:
                self.note(op.el, f"reads {buf}[{off + i}] on rank {rank}, which holds no data "
                                 "yet")
                return None
            vals.append(got)
        return vals

    def combine(self, a, b, op, rank):
        (ga, ba), (gb, bb) = a, b
        if ga != gb:
            self.note(op.el, f"rank {rank} reduces chunk {ga} with chunk {gb}")
        if ba & bb:
            self.note(op.el, f"rank {rank} adds a contribution twice (ranks "
                             f"{[i for i in range(self.n) if (ba & bb) >> i & 1]})")
        return (ga, ba | bb)

    def step(self, blk, op, incoming):
        """Run one step of ``blk`` (:func:`~.threadblocks.run_blocks`'s ``on_step``)."""
        rank, bid, send_peer, recv_peer = blk.rank, blk.bid, blk.send, blk.recv
        kind = op.kind
        if incoming is not None and incoming[3] != op.cnt:
            self.note(op.el, f"receives cnt={op.cnt} but the matching send on rank "
                             f"{recv_peer} (line {incoming[2].el.line}) sends cnt={incoming[3]}")
        result = None
        ready = 0
        if kind == "s":
            result = self.read(rank, op.srcbuf, op.srcoff, op.cnt, op)
        elif kind in ("cpy", "re"):
            result = self.read(rank, op.srcbuf, op.srcoff, op.cnt, op)
            if kind == "re" and result is not None:
                cur = self.read(rank, op.dstbuf, op.dstoff, op.cnt, op)
                if cur is not None and self.combining:
                    result = [(self.combine(a[0], b[0], op, rank), max(a[1], b[1]))
                              for a, b in zip(result, cur)]
        elif incoming is not None:
            result, ready = self.receive(blk, op, incoming)
        if result is not None and kind in WRITES:
            for i, v in enumerate(result):
                self.mem[rank][self.cell(rank, op.dstbuf, op.dstoff + i)] = \
                    (v[0], v[1] if kind in ("cpy", "re") else ready)
        if kind in SENDS and send_peer >= 0:
            ready_at = (max((v[1] for v in result), default=0) if result else 0) \
                if kind == "s" else ready
            push_hint = op.hint if kind == "s" else op.send_hint
            return [result, ready_at, op, op.cnt, push_hint, (rank, bid)]
        return None

    def receive(self, blk, op, incoming):
        """A receive's values and step: ``(result, step)``."""
        rank, bid, recv_peer, kind = blk.rank, blk.bid, blk.recv, op.kind
        local = self.read(rank, op.srcbuf, op.srcoff, op.cnt, op) if kind in REDUCES else None
        # steps never go back along one connection's sequence (a fused block's sends run ahead
        # of its receives, so each side counts alone)
        last = self.last_step
        step = max(1 + incoming[1], last.get((rank, bid, "recv"), 0),
                   last.get(incoming[5] + ("send",), 0))
        hint = op.hint
        if incoming[4] is not None and hint is not None and hint >= step and incoming[4] == hint:
            step = hint
        else:
            self.hinted = False
        last[(rank, bid, "recv")] = step
        last[incoming[5] + ("send",)] = step
        vals = incoming[0]
        reduce = kind in REDUCES
        if vals is not None:
            for v, _ in vals:
                # combining: the op follows from the data (see _combining_ops)
                self.rows.append((step, recv_peer, rank, v[0], v[1]) if self.combining else
                                 (step, recv_peer, rank, v, COPY))
        result = None
        if reduce and not self.combining:
            self.note(op.el, f"a reducing step ({kind}) in {self.coll.name}, which does not "
                             "combine")
            result = [(v, step) for v, _ in vals] if vals is not None else None
        elif reduce:
            if vals is not None and local is not None:
                result = [(self.combine(a[0], b[0], op, rank), step)
                          for a, b in zip(vals, local)]
        else:
            result = [(v, step) for v, _ in vals] if vals is not None else None
        return result, step

    def check_outputs(self):
        """The postcondition, on the output buffers."""
        n, out, combining = self.n, self.out, self.combining
        full = (1 << n) - 1
        for r in range(n):
            for g, idx in self.lay.outputs(r):
                c = self.cell(r, "o", idx)
                got = self.mem[r].get(c) or self.start[r].get(c)
                want = (g, full) if combining else g
                if got is None or got[0] != want:
                    if len(out.wrong_outputs) < self.max_problems:
                        have = "nothing" if got is None else _describe(got[0], n, combining)
                        out.wrong_outputs.append(f"rank {r} output chunk {idx} holds {have}, "
                                                 f"not {_describe(want, n, combining)}")


def _report_stuck(run, sym, out):
    """The blocked steps of a run that did not finish, and sends no receive matched."""
    for (rank, bid, _, _, _, ops), pc in zip(run.blocks, run.pcs):
        if pc < len(ops):
            op = ops[pc]
            why = (f"waits for block {op.depid} step {op.deps}"
                   if not dep_ready(run.flags, rank, op)
                   else "waits for a send that never comes")
            out.hang.append((op.el.line, f"{sym.program.where(op.el)}: rank {rank} block {bid} "
                                         f"step {op.s} {why}"))
    for (src, dst, chan), q in run.fifo.items():
        if run.head.get((src, dst, chan), 0) < len(q) and not out.hang:
            op = q[run.head.get((src, dst, chan), 0)][2]
            sym.note(op.el, f"rank {src} sends to rank {dst} on channel {chan} but no receive "
                            "matches")


def _combining_ops(rows, n):
    """Copy or reduce for every transfer of a combining collective, from what it carries.

    A program may receive into scratch and reduce locally later (``r`` then ``re``), or receive
    a finished sum with ``r``; our schedules say ``reduce`` or ``copy`` on the transfer. Going
    through the transfers step by step with each rank's partial sum as our model keeps it (its
    own contribution plus every reduce received in earlier steps): contributions disjoint from
    the receiver's are a ``reduce``, a sum that contains the receiver's a ``copy``. A transfer
    that carries less than its sender holds in our model cannot be written as one of ours; such
    transfers are counted (``unexpressed``), and the verifier then sees what our model means.
    """
    held = {}
    out, unexpressed = [], 0
    order = sorted(range(len(rows)), key=lambda i: rows[i][0])
    i = 0
    while i < len(order):
        j = i
        while j < len(order) and rows[order[j]][0] == rows[order[i]][0]:
            j += 1
        batch = [rows[x] for x in order[i:j]]
        for step, src, dst, g, bits in batch:
            if bits != held.get((src, g), 1 << src):
                unexpressed += 1
        for step, src, dst, g, bits in batch:
            mine = held.get((dst, g), 1 << dst)
            if bits & mine == 0:
                held[(dst, g)] = mine | bits
                out.append((step, src, dst, g, REDUCE))
            else:
                if bits & mine != mine:
                    unexpressed += 1
                held[(dst, g)] = bits | mine
                out.append((step, src, dst, g, COPY))
        i = j
    return out, unexpressed


def _describe(value, n, combining):
    if combining:
        g, bits = value
        ranks = [i for i in range(n) if bits >> i & 1]
        return f"chunk {g} summed over {len(ranks)} of {n} ranks"
    return f"chunk {value}"


def _schedule(rows, coll, n, k, lay, root, topology, program):
    if rows:
        arr = np.array(rows, dtype=np.int64)
        step, src, dst, g, op = arr.T
    else:
        step = src = dst = g = op = np.zeros(0, dtype=np.int64)
    if rows and not lay.whole:
        # chunks that are not whole parts of a shard: one transfer per shard a chunk touches
        parts = {}
        cols = []
        for r in rows:
            if r[3] not in parts:
                parts[r[3]] = lay.pieces(r[3])
            cols.extend((r[0], r[1], r[2], x, float(lo), float(hi), r[4])
                        for x, lo, hi in parts[r[3]])
        step, src, dst, shard, lo, hi, op = (np.array(c) for c in zip(*cols))
        t = transfer_array(step, src, dst, shard, lo, hi, op)
    elif rows:
        shard, j = np.divmod(g, k)
        t = transfer_array(step, src, dst, shard, j / k, (j + 1) / k, op)
    else:
        t = np.zeros(0, dtype=TRANSFER_DTYPE)
    if topology is None:
        pairs = np.unique(np.c_[src, dst], axis=0) if rows else np.zeros((0, 2), dtype=np.int64)
        topology = Topology(n, pairs[:, 0], pairs[:, 1],
                            name=f"msccl:{program.attrs.get('name', 'program')}")
    sched = Schedule(topology, coll, t, root=root if coll.rooted else None,
                     algorithm=f"msccl:{program.attrs.get('name', 'program')}")
    return merge_pieces(sched)
