"""The steps of an MSCCL program's transfers as the runtime runs it, and the program carrying
them as step hints (the correctness half of :func:`~.lint.lint_msccl`).

The lint judges what the runtime runs: step hints (``tcstep``) are ignored and each transfer's
step comes from the thread blocks' order and dependencies (:func:`runtime_steps`);
:func:`with_steps` writes those steps back as hints for the replay to read.

>>> from topocoll.topology import topology
>>> from topocoll.synth import generate
>>> from topocoll.interop.export import export_msccl
>>> prog = export_msccl(generate(topology("ring:3"), "allgather", "ring")).program
>>> sorted({send for _, send in runtime_steps(prog, False).values() if send is not None})
[1, 2]
"""

import math

from ..errors import TopocollError
from .export_writer import HINT, SEND_HINT
from .layout import Layout
from .mscclxml import RECVS, REDUCES, SENDS, WRITES, Gpu, Program, Step, ThreadBlock
from .replay import program_layout, program_root
from .threadblocks import read_blocks, run_blocks

__all__ = ["runtime_steps", "with_steps", "has_hints"]


def runtime_steps(program, inplace, max_passes=200):
    """Schedule steps for the program's transfers from what the runtime runs, ignoring any step
    hints: ``{id(step element): (receive step, send step)}``, or ``None`` if the program cannot
    be run (the replay then says why) or no consistent steps exist.

    Every thread block runs its steps in order, a step waits for its dependency and a receive
    for its send, as in :func:`~topocoll.interop.replay.replay` (the same interleaving). A
    transfer's step is the least that respects, on each rank's storage cells in that order:
    a read after a write comes a step later, a write after a write a step later, a write after a
    read no earlier (reads before writes in a step); local ``cpy``/``re`` steps sit between
    steps. Transfers along one thread block never go back. Solved by iterating to the least
    fixpoint (a send's step is only known once its receive ran)."""
    try:
        coll, n, k, _ = program_layout(program)
        lay = Layout(coll, n, k, program_root(program, coll))
        blocks = read_blocks(program)
    except (KeyError, ValueError, TypeError, TopocollError):
        return None
    steps = {}        # transfer (the send op's key) -> step
    marks = {id(op.el): [None, None] for b in blocks for op in b.ops}   # (receive, send) steps
    for _ in range(max_passes):
        solver = _StepPass(lay, inplace, steps, marks)
        run_blocks(blocks, solver.step)
        if not solver.changed:
            break
    else:
        return None
    return {key: tuple(pair) for key, pair in marks.items()}


class _StepPass:
    """One pass of :func:`runtime_steps` over the program's run: each transfer's least step
    given the steps the previous pass found (``steps``, updated in place; ``changed`` says
    whether any moved). A send queues its key ``(rank, block, op)``."""

    def __init__(self, lay, inplace, steps, marks):
        self.lay, self.inplace, self.steps, self.marks = lay, inplace, steps, marks
        self.changed = False
        self.wrote, self.read = {}, {}   # cell -> time of the last write / latest read since
        self.last = {}                   # (rank, bid, side) -> latest step on that block side
        self.send_min = {}

    def cells(self, rank, buf, off, cnt):
        if self.inplace:
            return [(rank,) + self.lay.alias(rank, buf, off + i) for i in range(cnt)]
        return [(rank, buf, off + i) for i in range(cnt)]

    def step(self, blk, op, incoming):
        """:func:`~.threadblocks.run_blocks`'s ``on_step``."""
        rank, kind = blk.rank, op.kind
        recv_step = None
        dst = []
        if kind in RECVS:
            recv_step, dst = self.receive(blk, op, incoming)
        elif kind in ("cpy", "re"):
            self.local(rank, op)
        if kind in SENDS and blk.send >= 0:
            return self.send(blk, op, recv_step, dst)
        return None

    def receive(self, blk, op, x):
        rank, bid, kind = blk.rank, blk.bid, op.kind
        wrote, read, last = self.wrote, self.read, self.last
        dst = self.cells(rank, op.dstbuf, op.dstoff, op.cnt) if kind in WRITES else []
        src = self.cells(rank, op.srcbuf, op.srcoff, op.cnt) if kind in REDUCES else []
        t = max([self.send_min[x], self.steps.get(x, 1), last.get((rank, bid, "r"), 1)]
                + [math.floor(wrote.get(c, 0)) + 1 for c in dst + src]
                + [math.ceil(read.get(c, 0)) for c in dst])
        if t != self.steps.get(x):
            self.steps[x] = t
            self.changed = True
        last[(rank, bid, "r")] = t
        last[x[:2] + ("s",)] = max(last.get(x[:2] + ("s",), 1), t)
        for c in src:
            read[c] = max(read.get(c, 0), t)
        for c in dst:
            wrote[c] = t
            read[c] = 0
        self.marks[id(op.el)][0] = t
        return t, dst

    def local(self, rank, op):
        """A ``cpy`` or ``re`` step: between steps of the schedule."""
        wrote, read, kind = self.wrote, self.read, op.kind
        src = self.cells(rank, op.srcbuf, op.srcoff, op.cnt)
        dst = self.cells(rank, op.dstbuf, op.dstoff, op.cnt)
        rd = src + (dst if kind == "re" else [])
        tau = max([0.5] + [math.floor(wrote.get(c, 0)) + 0.5 for c in rd + dst]
                  + [math.floor(read.get(c, 0)) + 0.5 for c in dst])
        for c in rd:
            read[c] = max(read.get(c, 0), tau)
        for c in dst:
            wrote[c] = tau
            read[c] = 0

    def send(self, blk, op, recv_step, dst):
        rank, bid, kind = blk.rank, blk.bid, op.kind
        x = (rank, bid, id(op))
        if kind == "s":
            src = self.cells(rank, op.srcbuf, op.srcoff, op.cnt)
            lo = max([1] + [math.floor(self.wrote.get(c, 0)) + 1 for c in src])
        else:
            src = dst if kind in WRITES else []
            lo = recv_step + 1
        lo = max(lo, self.last.get((rank, bid, "s"), 1))
        self.send_min[x] = lo
        t = max(lo, self.steps.get(x, lo))
        self.last[(rank, bid, "s")] = t
        for c in src:
            self.read[c] = max(self.read.get(c, 0), t)
        self.marks[id(op.el)][1] = t
        return x


def with_steps(program, steps, copies=True):
    """A copy of ``program`` whose sends and receives carry ``steps`` as their step hints (any
    hints of its own removed); without ``steps``, just without hints."""
    def step_of(st):
        a = {k: v for k, v in st.attrs.items() if k not in (HINT, SEND_HINT)}
        r, s = (steps or {}).get(id(st), (None, None))
        kind = a.get("type")
        if kind in SENDS and kind not in RECVS and s is not None:
            a[HINT] = str(s)
        elif kind in RECVS and r is not None:
            a[HINT] = str(r)
            if kind in SENDS and s is not None:
                a[SEND_HINT] = str(s)
        return Step(a, line=st.line, tag=st.tag)

    gpus = [Gpu(dict(g.attrs), [ThreadBlock(dict(tb.attrs), [step_of(st) for st in tb.steps],
                                            line=tb.line) for tb in g.blocks],
                [step_of(c) for c in g.copies] if copies else [], line=g.line)
            for g in program.gpus]
    return Program(dict(program.attrs), gpus, line=program.line, preamble=program.preamble,
                   source=program.source, quirks=list(program.quirks))


def has_hints(program):
    return any(HINT in st.attrs or SEND_HINT in st.attrs
               for g in program.gpus for tb in g.blocks for st in tb.steps)

