"""The one interpreter of MSCCL thread blocks that the replay (:mod:`.replay`) and the lint
(:mod:`.lint`) share: reading a program's blocks and steps, and running them as the runtime
does.

Every thread block executes its steps in order: a step first waits for its dependency
(``depid``/``deps``: the named block has finished a step numbered at least ``deps`` that is
marked ``hasdep``), a receive waits for the matching send on its channel (the sends of a
connection ``(sender, receiver, channel)`` queue in order), and sends never wait for the receiver
(unbounded connections; the bounded-buffer run of :func:`~topocoll.interop.buffers.buffer_capacity`
adds the capacity). What a step does to the data is the caller's: :func:`run_blocks` calls it
for every step that runs and queues what it returns for a send. Blocks are advanced in file
order, each as far as it goes, until none can move (the one end state of every fair
interleaving: every wait is on a flag or a queue that only grows).

>>> from topocoll.topology import topology
>>> from topocoll.synth import generate
>>> from topocoll.interop.export import export_msccl
>>> prog = export_msccl(generate(topology("ring:3"), "allgather", "ring")).program
>>> blocks = read_blocks(prog)
>>> run = run_blocks(blocks, lambda blk, op, incoming: op.cnt)
>>> run.done, len(blocks), sorted(run.fifo)[:2]
(True, 6, [(0, 1, 0), (1, 2, 0)])
"""

from typing import NamedTuple

from ..errors import ScheduleFormatError
from .export_writer import HINT, SEND_HINT
from .mscclxml import RECVS, SENDS, STEP_TYPES

__all__ = ["Op", "Block", "Run", "int_attr", "read_blocks", "run_blocks", "dep_ready"]


def int_attr(element, name, program, default=None):
    """Attribute ``name`` of ``element`` as an integer (``default`` when it is absent; an error
    naming the line when it is absent without a default or is not an integer)."""
    raw = element.attrs.get(name)
    if raw is None:
        if default is not None:
            return default
        raise ScheduleFormatError(f"{program.where(element)}: <{_tag(element)}> has no {name}")
    try:
        return int(raw)
    except ValueError:
        raise ScheduleFormatError(f"{program.where(element)}: {name}={raw!r} is not an "
                                  "integer") from None


def _tag(element):
    return getattr(element, "tag", None) or type(element).__name__.lower()


def _hint(raw):
    try:
        return int(raw) if raw is not None else None
    except ValueError:
        return None


class Op:
    """One step, its attributes parsed once (a bad number is an error naming the line)."""

    __slots__ = ("el", "kind", "depid", "deps", "cnt", "srcbuf", "srcoff", "dstbuf", "dstoff",
                 "hasdep", "s", "hint", "send_hint")

    def __init__(self, el, index, program):
        a = el.attrs
        self.el = el
        self.kind = a.get("type", "cpy" if el.tag == "copy" else None)
        self.depid = int_attr(el, "depid", program, default=-1)
        self.deps = int_attr(el, "deps", program, default=-1)
        self.cnt = int_attr(el, "cnt", program, default=1)
        self.srcbuf, self.dstbuf = a.get("srcbuf", "i"), a.get("dstbuf", "o")
        # TACCL and TE-CCL write <copy i_off="" o_off=""/>: one chunk, input to output
        self.srcoff = int_attr(el, "srcoff" if "srcoff" in a or "i_off" not in a else "i_off",
                               program, default=0)
        self.dstoff = int_attr(el, "dstoff" if "dstoff" in a or "o_off" not in a else "o_off",
                               program, default=0)
        self.hasdep = int_attr(el, "hasdep", program, default=0) == 1
        self.s = int_attr(el, "s", program, default=index)
        self.hint = _hint(a.get(HINT))
        self.send_hint = _hint(a.get(SEND_HINT))
        if self.kind not in STEP_TYPES:
            raise ScheduleFormatError(f"{program.where(el)}: type={self.kind!r} is not a step "
                                      "type the runtime knows")
        if self.cnt < 0:
            raise ScheduleFormatError(f"{program.where(el)}: cnt must not be negative")


class Block(NamedTuple):
    """A thread block: its rank, id (``None`` for the older dialect's ``<copy>`` elements, which
    run before the GPU's blocks), send and receive peers (-1: none), channel and steps."""

    rank: int
    bid: object
    send: int
    recv: int
    chan: int
    ops: list


def read_blocks(program, n=None, copies=True):
    """The program's thread blocks in file order (a GPU's ``<copy>`` elements first, as one
    block, when ``copies``). With ``n``, every ``<gpu>`` id must be a rank ``0..n-1`` named
    once."""
    blocks = []
    seen = set()
    for gpu in program.gpus:
        rank = int_attr(gpu, "id", program)
        if n is not None and (not 0 <= rank < n or rank in seen):
            raise ScheduleFormatError(f"{program.where(gpu)}: gpu id {rank} is not a rank "
                                      f"0..{n - 1} named once")
        seen.add(rank)
        if copies and gpu.copies:
            blocks.append(Block(rank, None, -1, -1, 0,
                                [Op(c, i, program) for i, c in enumerate(gpu.copies)]))
        for tb in gpu.blocks:
            ops = [Op(st, i, program) for i, st in enumerate(tb.steps)]
            blocks.append(Block(rank, int_attr(tb, "id", program),
                                int_attr(tb, "send", program, -1),
                                int_attr(tb, "recv", program, -1),
                                int_attr(tb, "chan", program, 0), ops))
    return blocks


def dep_ready(flags, rank, op):
    """Whether ``op``'s dependency (if any) has been met: its block has finished a step marked
    ``hasdep`` numbered at least ``deps``."""
    return op.depid < 0 or flags.get((rank, op.depid), -1) >= op.deps


class Run:
    """The state of a run: ``pcs`` (each block's next step), ``flags`` (``(rank, block)`` ->
    the largest ``s`` finished with ``hasdep``), ``fifo`` (connection ``(src, dst, chan)`` ->
    what its sends queued) and ``head`` (how many of those were received)."""

    def __init__(self, blocks):
        self.blocks = blocks
        self.pcs = [0] * len(blocks)
        self.flags = {}
        self.fifo = {}
        self.head = {}

    @property
    def done(self):
        """Whether every block ran all its steps."""
        return all(pc >= len(b.ops) for pc, b in zip(self.pcs, self.blocks))

    def advance(self, bi, on_step):
        """Run block ``bi`` as far as it goes; whether it moved."""
        blk = self.blocks[bi]
        rank, bid, send_peer, recv_peer, chan, ops = blk
        moved = False
        while self.pcs[bi] < len(ops):
            op = ops[self.pcs[bi]]
            if not dep_ready(self.flags, rank, op):
                break
            incoming = None
            if op.kind in RECVS:
                key = (recv_peer, rank, chan)
                q = self.fifo.get(key, [])
                h = self.head.get(key, 0)
                if h >= len(q):
                    break
                self.head[key] = h + 1
                incoming = q[h]
            payload = on_step(blk, op, incoming)
            if op.kind in SENDS and send_peer >= 0:
                self.fifo.setdefault((rank, send_peer, chan), []).append(payload)
            if op.hasdep and bid is not None:
                self.flags[(rank, bid)] = max(self.flags.get((rank, bid), -1), op.s)
            self.pcs[bi] += 1
            moved = True
        return moved


def run_blocks(blocks, on_step):
    """Run ``blocks`` (see the module docstring): ``on_step(block, op, incoming)`` is called for
    every step that runs, ``incoming`` being what the matching send's ``on_step`` returned (for
    a receive; else ``None``); a send queues what its ``on_step`` returns. Returns the
    :class:`Run` where no block can move."""
    run = Run(blocks)
    progress = True
    while progress:
        progress = False
        for bi in range(len(blocks)):
            if run.advance(bi, on_step):
                progress = True
    return run
