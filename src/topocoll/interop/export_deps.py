"""The dependency pass of the MSCCL export (:mod:`.export`; msccl-tools computes them the same
way): a schedule's transfers become send and receive operations on the ranks' buffers, each with
the operations it must wait for.

A send waits for the receives that wrote what it reads, a receive for the earlier writes and
reads of the chunks it overwrites (in-place calls share input and output, so those count as the
same memory). The schedule's steps become a total order (step by step, reads before writes,
``Op.index``), and every dependency points back in that order, so no wait cycle exists.

>>> runs([(("i", 0), ("o", 4)), (("i", 1), ("o", 5)), (("i", 3), ("o", 6))], 8)
[(0, 2), (2, 3)]
"""

from ..collectives import REDUCE
from ..errors import UnsupportedError
from .export_limits import LIMITS
from .layout import Layout

__all__ = ["Op", "Cells", "runs", "OpBuilder"]


class Op:
    """One operation of a rank: ``kind`` ``s`` (send to ``peer``), ``r`` or ``rrc`` (receive
    from ``peer``, with reduce), ``cpy`` (a local copy); ``cnt`` chunks from ``(srcbuf, srcoff)``
    to ``(dstbuf, dstoff)``, for the schedule's ``step`` on ``link`` ``(src, dst, instance)``.
    ``deps`` are the operations it waits for and ``pair`` the other side of a transfer; the
    later passes set ``chan``, ``block``, ``pos``, ``s``, ``hasdep`` and the fusion links
    ``fused`` (on a receive) and ``via`` (on a send)."""

    __slots__ = ("rank", "kind", "peer", "link", "srcbuf", "srcoff", "dstbuf", "dstoff", "cnt",
                 "deps", "step", "pair", "block", "pos", "hasdep", "s", "index", "chan", "fused",
                 "via")

    def __init__(self, rank, kind, peer, link, src, dst, cnt, step):
        self.rank, self.kind, self.peer, self.link = rank, kind, peer, link
        self.srcbuf, self.srcoff = src
        self.dstbuf, self.dstoff = dst
        self.cnt, self.step = cnt, step
        self.deps = set()
        self.pair = None
        self.block = None
        self.pos = -1
        self.hasdep = False
        self.s = -1
        self.index = -1      # position in the total order (step, reads before writes)
        self.chan = -1
        self.fused = None    # a receive: the send it performs as well (rcs, rrcs)
        self.via = None      # a send: the receive that performs it


class Cells:
    """Per storage cell: the op that wrote it last and the ops that read it since."""

    def __init__(self):
        self.writer = {}
        self.readers = {}

    def read(self, op, cells):
        """``op`` reads ``cells``: it waits for their last writers."""
        for c in cells:
            w = self.writer.get(c)
            if w is not None:
                op.deps.add(w)
        for c in cells:
            self.readers.setdefault(c, []).append(op)

    def write(self, op, cells, reads=()):
        """``op`` writes ``cells`` (after reading ``reads``, a receive-reduce's partial sum): it
        waits for the last writers of both and the readers of ``cells`` since."""
        for c in reads:
            w = self.writer.get(c)
            if w is not None:
                op.deps.add(w)
        for c in cells:
            w = self.writer.get(c)
            if w is not None:
                op.deps.add(w)
            op.deps.update(self.readers.get(c, ()))
        for c in reads:
            if c not in cells:
                self.readers.setdefault(c, []).append(op)
        for c in cells:
            self.writer[c] = op
            self.readers[c] = []


def runs(items, limit):
    """Split ``items`` (tuples of consecutive-able positions) into maximal runs that advance by
    one in every position, at most ``limit`` long."""
    runs, start = [], 0
    for i in range(1, len(items) + 1):
        if i == len(items) or i - start >= limit or any(
                a[0] != b[0] or a[1] + 1 != b[1] for a, b in zip(items[i - 1], items[i])):
            runs.append((start, i))
            start = i
    return runs


class OpBuilder:
    """The operations of a schedule with ``k`` chunks per shard, run as ``instances`` channel
    copies (``astra``: the form ASTRA-sim's converter reads): :meth:`start` places every rank's
    input (and adds the local copies of the out-of-place calls), then :meth:`step` lowers each
    step's transfers in order. ``ops`` holds the sends and receives in the total order,
    ``copies`` the local copies, ``lay`` the buffer :class:`~.layout.Layout` and ``scratch`` the
    scratch chunks of every rank."""

    def __init__(self, schedule, k, instances, astra):
        self.s = schedule
        self.n = schedule.num_nodes
        self.k = k
        self.m = instances
        self.kk = k * instances                      # chunks per shard in the program
        self.lay = Layout(schedule.collective, self.n, self.kk, schedule.root)
        self.combining = schedule.collective.combining
        self.astra = astra
        self.loc = [dict() for _ in range(self.n)]   # rank -> g -> (buf, off)
        self.scratch = [dict() for _ in range(self.n)]
        self.cells = Cells()
        self.ops = []
        self.copies = []

    def cell(self, rank, where):
        """The storage cell of a place ``(buffer, offset)`` of ``rank`` (in-place aliases
        are one cell)."""
        return (rank,) + self.lay.alias(rank, where[0], where[1])

    def canon(self, rank, where):
        """The ASTRA form names every place by its in-place cell (one buffer per rank), so that
        a chunk has one offset wherever it lives and each step's ``srcoff`` equals its
        ``dstoff``, as ASTRA-sim's converter requires."""
        return self.lay.alias(rank, where[0], where[1]) if self.astra else where

    def home(self, rank, g):
        """Where ``rank`` keeps chunk ``g`` when it receives it: its output place, else (ASTRA,
        in place) its input place, else a scratch chunk."""
        out = self.lay.output_of(rank, g)
        if out is not None:
            return self.canon(rank, ("o", out))
        if self.astra and self.lay.inplace:
            idx = self.lay.input_of(rank, g)
            if idx is not None:         # a partial sum stays where the rank's input was
                return self.canon(rank, ("i", idx))
        slots = self.scratch[rank]
        if g not in slots:
            slots[g] = len(slots)
        return ("s", slots[g])

    def start(self):
        """Place every rank's input chunks; add the local copies into the output."""
        lay = self.lay
        for r in range(self.n):
            own = []
            for g in range(lay.num_chunks):
                idx = lay.input_of(r, g)
                if idx is not None:
                    self.loc[r][g] = self.canon(r, ("i", idx))
                    out = lay.output_of(r, g)
                    if not self.combining and out is not None:
                        own.append((("i", idx), ("o", out)))
            if self.astra:
                continue
            for a, b in runs(own, LIMITS["count"] - 1):
                op = Op(r, "cpy", -1, None, own[a][0], own[a][1], b - a, 0)
                self.cells.write(op, [self.cell(r, ("o", own[a][1][1] + i)) for i in range(b - a)],
                                 reads=[self.cell(r, ("i", own[a][0][1] + i)) for i in range(b - a)])
                self.copies.append(op)

    def step(self, rows):
        """All transfers of one step: reads first, then writes."""
        pieces = self._pieces(rows)
        dsts = self._receive(pieces)
        sends, recvs = [], []
        for piece, dst in zip(pieces, dsts):
            self._lower(piece, dst, sends, recvs)
        for op, cells in sends:
            self.cells.read(op, cells)
            op.index = len(self.ops)
            self.ops.append(op)
        for op, cells, reads in recvs:
            self.cells.write(op, cells, reads=reads)
            op.index = len(self.ops)
            self.ops.append(op)

    def _pieces(self, rows):
        """The senders' side: per transfer and channel copy, ``(row, instance, chunks, where
        the sender holds them)``."""
        kk, m = self.kk, self.m
        pieces = []
        for row in rows:
            src, dst, shard = int(row["src"]), int(row["dst"]), int(row["shard"])
            c0, c1 = round(row["lo"] * self.k), round(row["hi"] * self.k)
            length = c1 - c0
            for inst in range(m):
                first = shard * kk + c0 * m + inst * length
                gs = list(range(first, first + length))
                srcs = [self.loc[src].get(g) for g in gs]
                if any(x is None for x in srcs):
                    raise UnsupportedError(f"transfer at step {row['step']} {src}->{dst}: the "
                                           "sender does not hold what it sends; verify the "
                                           "schedule first")
                pieces.append((row, inst, gs, srcs))
        return pieces

    def _receive(self, pieces):
        """The receivers' side, in the same order as the writes happen: per piece ``(homes,
        partial sums, reduce)``; the chunks now live at their homes."""
        dsts = []
        for row, inst, gs, srcs in pieces:
            dst = int(row["dst"])
            reduce = self.combining and int(row["op"]) == REDUCE
            homes = [self.home(dst, g) for g in gs]
            local = [self.loc[dst].get(g) for g in gs] if reduce else None
            if reduce and any(x is None for x in local):
                raise UnsupportedError(f"reduce into {dst} at step {row['step']} without a partial "
                                       "sum there")
            for g, h in zip(gs, homes):
                self.loc[dst][g] = h
            dsts.append((homes, local, reduce))
        return dsts

    def _lower(self, piece, receiving, sends, recvs):
        """One piece's send and receive operations, a pair per run of consecutive chunks, with
        the cells they read and write appended to ``sends`` and ``recvs``."""
        (row, inst, _, srcs), (homes, local, reduce) = piece, receiving
        src, dst, step = int(row["src"]), int(row["dst"]), int(row["step"])
        keys = [(a, b) + ((c,) if reduce else ()) for a, b, c in
                zip(srcs, homes, local if reduce else homes)]
        for a, b in runs(keys, LIMITS["count"] - 1):
            cnt = b - a
            send = Op(src, "s", dst, (src, dst, inst), srcs[a], homes[a], cnt, step)
            recv = Op(dst, "rrc" if reduce else "r", src, (src, dst, inst),
                      local[a] if reduce else srcs[a], homes[a], cnt, step)
            send.pair, recv.pair = recv, send
            if self.astra:
                # the runtime reads only a send's source and a receive's destination; the
                # other side is a label, which the converter requires equal to this one
                send.dstoff = send.srcoff
                if recv.kind == "r":
                    recv.srcoff = recv.dstoff
                elif recv.srcoff != recv.dstoff:     # cannot happen: canon() above
                    raise UnsupportedError(f"rank {dst}: a receive-reduce at step {step} "
                                           "reads and writes different offsets, which "
                                           "ASTRA-sim's converter rejects")
            sends.append((send, [self.cell(src, (srcs[a][0], srcs[a][1] + i))
                                 for i in range(cnt)]))
            recvs.append((recv, [self.cell(dst, (homes[a][0], homes[a][1] + i))
                                 for i in range(cnt)],
                          [self.cell(dst, (local[a][0], local[a][1] + i))
                           for i in range(cnt)] if reduce else []))
