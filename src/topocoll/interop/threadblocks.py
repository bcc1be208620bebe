"""The one interpreter of MSCCL thread blocks that the replay (:mod:`.replay`), the lint
(:mod:`.lint_steps`) and the bounded-buffer run (:mod:`.buffers`) share: reading a program's
blocks and steps, and running them as the runtime does.

Every thread block executes its steps in order: a step first waits for its dependency
(``depid``/``deps``: the named block has finished a step numbered at least ``deps`` that is
marked ``hasdep``), a receive waits for the matching send on its channel (the sends of a
connection ``(sender, receiver, channel)`` queue in order), and sends never wait for the receiver
unless the run is given a connection ``capacity`` (docs/interop.md, "Bounded buffers"): then a
send also waits for room on its connection, or streams (see :meth:`Run.stream`). What a step
does to the data is the caller's: :func:`run_blocks` calls it for every step that runs and
queues what it returns for a send. Blocks are advanced in file order, each as far as it goes,
until none can move (the one end state of every fair interleaving: every wait is on a flag or a
queue that only its own block empties, so what can advance stays able to until it does).

>>> from topocoll.topology import topology
>>> from topocoll.synth import generate
>>> from topocoll.interop.export import export_msccl
>>> prog = export_msccl(generate(topology("ring:3"), "allgather", "ring")).program
>>> blocks = read_blocks(prog)
>>> run = run_blocks(blocks, lambda blk, op, incoming: op.cnt)
>>> run.done, len(blocks), sorted(run.fifo)[:2]
(True, 6, [(0, 1, 0), (1, 2, 0)])
>>> [run_blocks(blocks, lambda blk, op, incoming: None, capacity=c).done for c in (1, 2)]
[False, True]
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

    @property
    def units(self):
        """What a send of this step takes of its connection: ``cnt``, at least 1."""
        return max(1, self.cnt)


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
    what its sends queued), ``head`` (how many of those were received) and ``held`` (the units,
    :attr:`Op.units`, queued on a connection and not yet received). ``capacity``: the units a
    connection holds before its sender waits (``None``: unbounded)."""

    def __init__(self, blocks, capacity=None):
        self.blocks = blocks
        self.capacity = capacity
        self.pcs = [0] * len(blocks)
        self.flags = {}
        self.fifo = {}
        self.head = {}
        self.held = {}
        self.sizes = {}      # connection -> units of each queued send, beside fifo
        self.receiver = {}   # connection -> the block that receives on it
        for bi, blk in enumerate(blocks):
            if blk.recv >= 0:
                self.receiver.setdefault((blk.recv, blk.rank, blk.chan), bi)

    @property
    def done(self):
        """Whether every block ran all its steps."""
        return all(pc >= len(b.ops) for pc, b in zip(self.pcs, self.blocks))

    def ready(self, blk, op):
        """Whether ``op`` of ``blk`` can start: its dependency met and, for a receive, a send
        queued for it."""
        if not dep_ready(self.flags, blk.rank, op):
            return False
        if op.kind in RECVS:
            key = (blk.recv, blk.rank, blk.chan)
            return self.head.get(key, 0) < len(self.fifo.get(key, ()))
        return True

    def room(self, blk, op):
        """Whether ``op``'s send (if any) fits what its connection holds."""
        if self.capacity is None or op.kind not in SENDS or blk.send < 0:
            return True
        return self.held.get((blk.rank, blk.send, blk.chan), 0) + op.units <= self.capacity

    def advance(self, bi, on_step):
        """Run block ``bi`` as far as it goes; whether it moved."""
        blk = self.blocks[bi]
        moved = False
        while self.pcs[bi] < len(blk.ops):
            op = blk.ops[self.pcs[bi]]
            if not self.ready(blk, op):
                break
            if self.room(blk, op):
                self.run_step(bi, op, on_step)
            elif not self.stream(bi, op, on_step):
                break
            moved = True
        return moved

    def run_step(self, bi, op, on_step):
        """Run ``op``, the next step of block ``bi``, whose waits are over: take what it
        receives, call ``on_step`` and queue what a send returns."""
        blk = self.blocks[bi]
        rank, bid, send_peer, recv_peer, chan, _ = blk
        incoming = None
        if op.kind in RECVS:
            key = (recv_peer, rank, chan)
            h = self.head.get(key, 0)
            self.head[key] = h + 1
            self.held[key] -= self.sizes[key][h]
            incoming = self.fifo[key][h]
        payload = on_step(blk, op, incoming)
        if op.kind in SENDS and send_peer >= 0:
            key = (rank, send_peer, chan)
            self.fifo.setdefault(key, []).append(payload)
            self.sizes.setdefault(key, []).append(op.units)
            self.held[key] = self.held.get(key, 0) + op.units
        if op.hasdep and bid is not None:
            self.flags[(rank, bid)] = max(self.flags.get((rank, bid), -1), op.s)
        self.pcs[bi] += 1

    def stream(self, bi, op, on_step):
        """A send larger than the room left on its connection: it completes together with its
        receive when the connection holds nothing and the receiver stands at that receive
        ready to run (its dependency met, room for what it forwards); whether it did."""
        blk = self.blocks[bi]
        key = (blk.rank, blk.send, blk.chan)
        ri = self.receiver.get(key)
        if self.held.get(key, 0) or ri is None or self.pcs[ri] >= len(self.blocks[ri].ops):
            return False
        rblk = self.blocks[ri]
        rop = rblk.ops[self.pcs[ri]]
        if rop.kind not in RECVS or not dep_ready(self.flags, rblk.rank, rop) or \
                not self.room(rblk, rop):
            return False
        self.run_step(bi, op, on_step)
        self.run_step(ri, rop, on_step)
        return True


def run_blocks(blocks, on_step, capacity=None):
    """Run ``blocks`` (see the module docstring): ``on_step(block, op, incoming)`` is called for
    every step that runs, ``incoming`` being what the matching send's ``on_step`` returned (for
    a receive; else ``None``); a send queues what its ``on_step`` returns. ``capacity``: the
    units a connection holds (``None``: unbounded). Returns the :class:`Run` where no block can
    move."""
    run = Run(blocks, capacity)
    progress = True
    while progress:
        progress = False
        for bi in range(len(blocks)):
            if run.advance(bi, on_step):
                progress = True
    return run
