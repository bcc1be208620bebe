"""Export a schedule as an MSCCL XML program (docs/interop.md).

A transfer ``(step, src, dst, shard, lo, hi, op)`` becomes a send on ``src`` and a receive on
``dst`` of the chunks ``[lo*K, hi*K)`` of the shard (``K`` chunks per shard; see
:mod:`~topocoll.interop.layout`): ``s`` then ``r`` for a copy, ``s`` then ``rrc`` (receive, reduce
with the local partial sum, store) for a reduce. Each rank gets one thread block per out-link
and one per in-link and channel, so sends and receives of a link meet in the same order on both
sides. Dependencies come from the data, as msccl-tools computes them: a send waits for the
receives that wrote what it reads, a receive for the earlier writes and reads of the chunks it
overwrites (in-place calls share input and output, so those count as the same memory). Steps of
the schedule become a total order (step by step, reads before writes), and every wait points
back in that order, so no wait cycle exists. A step with several dependencies is preceded by
``nop`` steps carrying the extra ones, as the runtime requires.

The runtime's limits are honoured: at most 64 steps per block (a link whose sequence is longer
continues on further channels), 32 channels, 32 blocks per channel and direction, ``cnt < 72``
(longer runs are split) and 16-bit offsets. ``channels=C`` runs ``C`` copies of the program on
``C`` channels, each moving a ``1/C`` slice of every chunk (msccl-tools' "instances").

>>> from topocoll.topology import topology
>>> from topocoll.synth import generate
>>> res = export_msccl(generate(topology("ring:4"), "allgather", "bfb"))
>>> res.success, res.chunks, res.program.attrs["coll"], res.program.attrs["nchunksperloop"]
(True, 2, 'allgather', '8')
"""

import math
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from ..collectives import REDUCE
from ..errors import InputTypeError, UnsupportedError
from ..results import Result, Status
from ..schedule.model import as_schedule
from ..schedule.transforms import merge_pieces
from ..schedule.verify import verify
from .layout import RUNTIME_NAMES, Layout
from .mscclxml import NO_LIMIT, Gpu, Program, Step, ThreadBlock, format_msccl

__all__ = ["ASTRA_COLLECTIVES", "HINT", "SEND_HINT", "astra_command", "export_msccl",
           "ExportResult", "exact_chunks", "quantize",
           "PROTOCOLS", "LIMITS", "WIDTHS", "CAPACITY"]

PROTOCOLS = ("Simple", "LL", "LL128")

#: units a connection (sender, receiver, channel) holds before the sender blocks, where a send
#: step of ``cnt`` chunks takes ``cnt`` units (docs/interop.md, "Bounded buffers"): NCCL_STEPS =
#: 8 slots, a Simple call takes MSCCL_CHUNKSTEPS = 4 of them, an LL or LL128 call one.
CAPACITY = {"Simple": 2, "LL": 8, "LL128": 8}

#: the runtime's limits (msccl-executor-nccl): steps per block, channels, blocks per channel and
#: direction, largest cnt + 1, largest buffer offset + 1, children of one element, elements a
#: rank's parse may hold
LIMITS = {"steps": 64, "channels": 32, "blocks_per_channel": 32, "count": 72,
          "offset": 2**15, "subs": 1024, "nodes": 4096}

#: the integer width the runtime stores each attribute in (msccl-executor-nccl's
#: ``src/include/msccl/msccl_struct.h``): attribute -> (smallest, largest, where it is stored).
#: The parser (``src/misc/msccl/msccl_parser.cc``) copies the values without range checks, so a
#: larger value wraps (``depid="191"`` waits for block -65).
WIDTHS = {
    "depid": (-2**7, 2**7 - 1, "int8_t mscclThreadBlock::dependentBid[]"),
    "deps": (-2**15, 2**15 - 1, "int16_t mscclThreadBlock::dependentStep[]"),
    "srcoff": (-2**15, 2**15 - 1, "int16_t mscclTransmission::srcOffset"),
    "dstoff": (-2**15, 2**15 - 1, "int16_t mscclTransmission::dstOffset"),
    "cnt": (0, 2**8 - 1, "uint8_t mscclTransmission::count"),
    "hasdep": (-2**7, 2**7 - 1, "int8_t mscclTransmission::hasDependence"),
    "send": (-2**15, 2**15 - 1, "int16_t mscclThreadBlock::sendPeer"),
    "recv": (-2**15, 2**15 - 1, "int16_t mscclThreadBlock::recvPeer"),
    "chan": (-2**15, 2**15 - 1, "int16_t mscclThreadBlock::channelId"),
}

_MAX_EXACT_CHUNKS = 4096

#: the attribute carrying a send's or receive's step of the schedule (see ``step_hints``), and
#: on a fused step (rcs, rrcs) the step of the send it performs
HINT = "tcstep"
SEND_HINT = "tcsend"


def exact_chunks(schedule, limit=_MAX_EXACT_CHUNKS):
    """The smallest ``K`` for which every ``lo`` and ``hi`` is a multiple of ``1/K``, or ``None``
    if no ``K <= limit`` is.

    >>> from topocoll.topology import topology
    >>> from topocoll.schedule.model import Schedule, transfer_array
    >>> t = transfer_array([1, 1, 1], [0, 0, 1], [1, 1, 0], [0, 0, 1], [0, 1/3, 0], [1/3, 1, 1])
    >>> exact_chunks(Schedule(topology("ring:2"), "allgather", t))
    3
    """
    values = np.unique(np.r_[schedule.transfers["lo"], schedule.transfers["hi"]])
    k = 1
    for v in values.tolist():
        f = Fraction(v).limit_denominator(1 << 20)
        if abs(float(f) - v) > 1e-12:
            return None
        k = k * f.denominator // math.gcd(k, f.denominator)
        if k > limit:
            return None
    return k


def quantize(schedule, k):
    """``schedule`` with every ``lo``/``hi`` rounded to a multiple of ``1/k`` (empty transfers
    dropped), and the fraction of the moved bytes that changed."""
    t = schedule.transfers.copy()
    lo = np.round(t["lo"] * k) / k
    hi = np.round(t["hi"] * k) / k
    before = t["hi"] - t["lo"]
    changed = float(np.abs(t["lo"] - lo).sum() + np.abs(t["hi"] - hi).sum())
    t["lo"], t["hi"] = lo, hi
    keep = t["hi"] > t["lo"]
    total = float(before.sum())
    return schedule.replace(transfers=t[keep]), (changed / total if total else 0.0)


@dataclass(kw_only=True)
class ExportResult(Result):
    """An MSCCL program made from a schedule.

    Attributes
    ----------
    program : Program
        The element tree; ``text`` is the file.
    chunks : int
        Chunks per shard ``K`` (before the channel copies).
    instances : int
        Channel copies of the program (``channels``).
    channels : int
        Channels used in all (copies times the channels long links continue on).
    quantization_loss : float
        Fraction of the moved bytes that rounding to whole chunks changed (0 when exact).
    """

    program: Program = field(repr=False)
    chunks: int = 1
    instances: int = 1
    channels: int = 1
    quantization_loss: float = 0.0
    blocks: int = 0
    steps: int = 0
    max_block_steps: int = 0
    collective: str = ""
    astra: bool = False
    warning: str = ""

    @property
    def text(self):
        return format_msccl(self.program)

    def to_dict(self):
        d = super().to_dict()
        d.update({"format": "msccl-xml-astra" if self.astra else "msccl-xml",
                  "collective": self.collective, "ngpus": len(self.program.gpus),
                  "chunks": self.chunks, "instances": self.instances,
                  "channels": self.channels, "nchunksperloop":
                      int(self.program.attrs["nchunksperloop"]),
                  "thread_blocks": self.blocks, "steps": self.steps,
                  "max_block_steps": self.max_block_steps,
                  "quantization_loss": self.quantization_loss,
                  "proto": self.program.attrs["proto"]})
        if self.warning:
            d["warning"] = self.warning
        return d


#: The ``coll`` values ASTRA-sim's MSCCL-to-Chakra converter accepts (our spellings).
ASTRA_COLLECTIVES = ("allreduce", "allgather", "alltoall", "reduce_scatter", "reduce",
                     "broadcast")


def astra_command(xml_path, prefix):
    """The command that turns ``xml_path`` into Chakra traces ``prefix.<rank>.et``: the
    ``msccl`` input of the ``et_converter`` module of ASTRA-sim's Chakra, run in that checkout
    (its ``--num_dims`` is required and unused for MSCCL input; the collective is the file's
    ``coll`` attribute).

    >>> cmd = astra_command("/tmp/ar.xml", "/tmp/ar")
    >>> cmd.startswith("python3 -m et_converter.et_converter --input_type msccl ")
    True
    >>> cmd.split()[-6:]
    ['--input_filename', '/tmp/ar.xml', '--output_filename', '/tmp/ar', '--num_dims', '1']
    """
    return ("python3 -m et_converter.et_converter --input_type msccl "
            f"--input_filename {xml_path} --output_filename {prefix} --num_dims 1")


class _Op:
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


class _Cells:
    """Per storage cell: the op that wrote it last and the ops that read it since."""

    def __init__(self):
        self.writer = {}
        self.readers = {}

    def read(self, op, cells):
        for c in cells:
            w = self.writer.get(c)
            if w is not None:
                op.deps.add(w)
        for c in cells:
            self.readers.setdefault(c, []).append(op)

    def write(self, op, cells, reads=()):
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


def _runs(items, limit):
    """Split ``items`` (tuples of consecutive-able positions) into maximal runs that advance by
    one in every position, at most ``limit`` long."""
    runs, start = [], 0
    for i in range(1, len(items) + 1):
        if i == len(items) or i - start >= limit or any(
                a[0] != b[0] or a[1] + 1 != b[1] for a, b in zip(items[i - 1], items[i])):
            runs.append((start, i))
            start = i
    return runs


class _Builder:
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
        self.cells = _Cells()
        self.ops = []
        self.copies = []

    def cell(self, rank, where):
        return (rank,) + self.lay.alias(rank, where[0], where[1])

    def canon(self, rank, where):
        """The ASTRA form names every place by its in-place cell (one buffer per rank), so that
        a chunk has one offset wherever it lives and each step's ``srcoff`` equals its
        ``dstoff``, as ASTRA-sim's converter requires."""
        return self.lay.alias(rank, where[0], where[1]) if self.astra else where

    def home(self, rank, g):
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
            for a, b in _runs(own, LIMITS["count"] - 1):
                op = _Op(r, "cpy", -1, None, own[a][0], own[a][1], b - a, 0)
                self.cells.write(op, [self.cell(r, ("o", own[a][1][1] + i)) for i in range(b - a)],
                                 reads=[self.cell(r, ("i", own[a][0][1] + i)) for i in range(b - a)])
                self.copies.append(op)

    def step(self, rows):
        """All transfers of one step: reads first, then writes."""
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
        # the receivers' side, in the same order as the writes happen
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
        sends, recvs = [], []
        for (row, inst, gs, srcs), (homes, local, reduce) in zip(pieces, dsts):
            src, dst, step = int(row["src"]), int(row["dst"]), int(row["step"])
            keys = [(a, b) + ((c,) if reduce else ()) for a, b, c in
                    zip(srcs, homes, local if reduce else homes)]
            for a, b in _runs(keys, LIMITS["count"] - 1):
                cnt = b - a
                send = _Op(src, "s", dst, (src, dst, inst), srcs[a], homes[a], cnt, step)
                recv = _Op(dst, "rrc" if reduce else "r", src, (src, dst, inst),
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
        for op, cells in sends:
            self.cells.read(op, cells)
            op.index = len(self.ops)
            self.ops.append(op)
        for op, cells, reads in recvs:
            self.cells.write(op, cells, reads=reads)
            op.index = len(self.ops)
            self.ops.append(op)


def _fusable(send):
    """The receive a send can be fused into (it sends exactly what that receive stored, and
    waits for nothing else), or ``None``."""
    if len(send.deps) != 1:
        return None
    (recv,) = send.deps
    if recv.kind not in ("r", "rrc") or recv.rank != send.rank or recv.chan != send.chan or \
            (recv.dstbuf, recv.dstoff, recv.cnt) != (send.srcbuf, send.srcoff, send.cnt):
        return None
    return recv


def _held_ok(out, room):
    """Whether every send of a merged block finds room when it runs, once everything before it
    in the global order has run (docs/interop.md, "Bounded buffers"): a send runs at its place
    in the block (a fused one at its receive's), and what its connection still holds then is
    the earlier sends whose receives come later in the order."""
    sent = []
    for op in out:
        send = op.fused if op.kind in ("r", "rrc") else (op if op.kind == "s" else None)
        if send is None:
            continue
        key = op.index
        held = sum(o.cnt for o in sent if o.pair.index > key)
        if held + send.cnt > room:
            return False
        sent.append(send)
    return True


def _fuse(keyed, builder, room=None):
    """Merge, per rank and channel, the receive block of one peer with the send block of another
    where receives can forward at once (``rcs``, ``rrcs``), as msccl-tools does.

    Each in-peer pairs with at most one out-peer (one block per channel and peer); the pairs
    are a maximum matching on the number of fusable receive-send couples. A send is fused only
    if it is the next send on its link at the receive's place in the merged order, so both
    sides of every connection still see the same sequence."""
    from scipy.optimize import linear_sum_assignment

    counts = {}
    for op in builder.ops:
        if op.kind == "s":
            recv = _fusable(op)
            if recv is not None:
                key = (op.rank, op.chan)
                counts.setdefault(key, {}).setdefault((recv.peer, op.peer), 0)
                counts[key][(recv.peer, op.peer)] += 1
    for (rank, chan), pairs in counts.items():
        ins = sorted({q for q, _ in pairs})
        outs = sorted({p for _, p in pairs})
        weight = np.zeros((len(ins), len(outs)))
        for (q, p), c in pairs.items():
            weight[ins.index(q), outs.index(p)] = c
        rows, cols = linear_sum_assignment(-weight)
        for i, j in zip(rows, cols):
            if weight[i, j] <= 0:
                continue
            q, p = ins[i], outs[j]
            recvs = keyed.pop((rank, chan, -1, q))
            sends = keyed.pop((rank, chan, p, -1))
            merged = sorted(recvs + sends, key=lambda o: o.index)
            pending = [o for o in merged if o.kind == "s"]
            nxt = 0          # index into pending: the next send on the link r->p
            out = []
            for op in merged:
                if op.kind == "s":
                    if op.via is None:
                        out.append(op)
                        nxt += 1
                    continue
                out.append(op)
                while nxt < len(pending) and pending[nxt].via is not None:
                    nxt += 1
                if nxt < len(pending):
                    cand = pending[nxt]
                    if _fusable(cand) is op and all(o.index < op.index or o is cand for o in
                                                     pending[:nxt]):
                        op.fused, cand.via = cand, op
                        if room is not None and not _held_ok(out, room):
                            op.fused = cand.via = None    # it could wait on a later receive
                        else:
                            nxt += 1
            if room is not None and not _held_ok(out, room):
                # a plain send here could block the receives behind it: keep the blocks apart
                for op in out:
                    if op.fused is not None:
                        op.fused.via = None
                        op.fused = None
                keyed[(rank, chan, -1, q)] = recvs
                keyed[(rank, chan, p, -1)] = sends
                continue
            keyed[(rank, chan, p, q)] = out


def _blocks(builder, cap, fuse, room=None):
    """Group ops into thread blocks (a link's sequence moves to a further channel every ``cap``
    transfers), fuse receives with the sends that forward them, add nops for extra dependencies
    and number the steps. Returns per rank the list of blocks ``(send, recv, chan, ops)``."""
    m = builder.m
    seq = {}
    keyed = {}
    for op in builder.ops + builder.copies:
        op.fused = op.via = None
        op.hasdep = False
    for op in builder.ops:
        if op.kind == "s":
            k = seq.get(op.link, 0)
            seq[op.link] = k + 1
            op.chan = op.pair.chan = op.link[2] + m * (k // cap)
            keyed.setdefault((op.rank, op.chan, op.peer, -1), []).append(op)
            keyed.setdefault((op.pair.rank, op.chan, -1, op.rank), []).append(op.pair)
    if fuse:
        _fuse(keyed, builder, room)
    for op in builder.copies:
        keyed.setdefault((op.rank, 0, -2, -2), []).append(op)
    per_rank = [[] for _ in range(builder.n)]
    for (rank, chan, send, recv), ops in sorted(keyed.items()):
        per_rank[rank].append([send, recv, chan, ops])

    def number(blocks):
        for bid, blk in enumerate(blocks):
            for pos, op in enumerate(blk[3]):
                op.block, op.pos = bid, pos
                if op.fused is not None:
                    op.fused.block, op.fused.pos = bid, pos

    for rank, blocks in enumerate(per_rank):
        number(blocks)
        # the runtime keeps the block a step waits for in 8 bits (WIDTHS["depid"]): blocks
        # that are waited for take the lowest ids (thread block ids themselves may go to 1023)
        waited = set()
        for bid, blk in enumerate(blocks):
            for op in blk[3]:
                deps = set(op.deps) | (op.fused.deps if op.fused is not None else set())
                for d in deps:
                    d = d.via or d
                    if d.rank == rank and d.block != bid:
                        waited.add(d.block)
        if waited and max(waited) > WIDTHS["depid"][1]:
            order = sorted(range(len(blocks)), key=lambda b: (b not in waited, b))
            blocks[:] = [blocks[b] for b in order]
            number(blocks)
            if len(waited) > WIDTHS["depid"][1] + 1:
                raise UnsupportedError(
                    f"rank {rank} has {len(waited)} thread blocks that other blocks wait for; "
                    f"the runtime stores the block a step waits for (depid) in 8 bits "
                    f"(0..{WIDTHS['depid'][1]}); use fewer --channels")
    final = [[] for _ in range(builder.n)]
    for rank, blocks in enumerate(per_rank):
        for bid, (send, recv, chan, ops) in enumerate(blocks):
            waited = {}
            out = []
            for op in ops:
                latest = {}
                deps = set(op.deps)
                if op.fused is not None:
                    deps |= op.fused.deps
                for d in deps:
                    d = d.via or d
                    if d.block == bid or d.rank != rank or d is op:
                        continue
                    if d.pos > latest.get(d.block, (-1, None))[0]:
                        latest[d.block] = (d.pos, d)
                need = [(b, p, d) for b, (p, d) in sorted(latest.items())
                        if p > waited.get(b, -1)]
                for b, p, d in need:
                    waited[b] = p
                    d.hasdep = True
                for b, p, d in need[:-1]:
                    out.append(("nop", d))
                out.append((op, need[-1][2] if need else None))
            final[rank].append((max(send, -1), max(recv, -1), chan, out))
    return final


def _program(builder, blocks, name, proto, hints):
    lay = builder.lay
    s_chunks = [len(x) for x in builder.scratch]
    gpus = []
    max_chan = 0
    # step numbers first (nops count), then dependencies can name them
    for rank_blocks in blocks:
        for send, recv, chan, out in rank_blocks:
            for s, (op, _) in enumerate(out):
                if op != "nop":
                    op.s = s
    for rank, rank_blocks in enumerate(blocks):
        tbs = []
        for bid, (send, recv, chan, out) in enumerate(rank_blocks):
            max_chan = max(max_chan, chan)
            steps = []
            for s, (op, dep) in enumerate(out):
                depid, deps = (-1, -1) if dep is None else (dep.block, dep.s)
                if op == "nop":
                    attrs = {"s": s, "type": "nop", "srcbuf": "i", "srcoff": -1, "dstbuf": "o",
                             "dstoff": -1, "cnt": 0}
                else:
                    kind = op.kind if op.fused is None else {"r": "rcs", "rrc": "rrcs"}[op.kind]
                    attrs = {"s": s, "type": kind, "srcbuf": op.srcbuf, "srcoff": op.srcoff,
                             "dstbuf": op.dstbuf, "dstoff": op.dstoff, "cnt": op.cnt}
                attrs.update({"depid": depid, "deps": deps,
                              "hasdep": int(op != "nop" and op.hasdep)})
                if hints and op != "nop" and op.kind in ("s", "r", "rrc"):
                    attrs[HINT] = op.step
                    if op.fused is not None:
                        attrs[SEND_HINT] = op.fused.step
                steps.append(Step({k: str(v) for k, v in attrs.items()}))
            tbs.append(ThreadBlock({"id": str(bid), "send": str(send), "recv": str(recv),
                                    "chan": str(chan)}, steps))
        gpus.append(Gpu({"id": str(rank), "i_chunks": str(lay.input_chunks),
                         "o_chunks": str(lay.output_chunks), "s_chunks": str(s_chunks[rank])},
                        tbs))
    coll = builder.s.collective.name
    attrs = {"name": name, "proto": proto, "nchannels": str(max_chan + 1),
             "nchunksperloop": str(max(lay.input_chunks, lay.output_chunks)),
             "ngpus": str(builder.n), "coll": RUNTIME_NAMES[coll],
             "inplace": "1" if lay.inplace else "0", "outofplace": "1"}
    if builder.astra:
        # ASTRA-sim's converter spells the collective as ours do (reduce_scatter), and the form
        # is in-place where the collective has an in-place call (docs/interop.md, "ASTRA-sim")
        attrs["coll"] = coll
        attrs["outofplace"] = "0" if lay.inplace else "1"
    return Program(attrs, gpus), max_chan + 1


def _check_widths(program):
    """Never write a value the runtime would store wrapped (``WIDTHS``)."""
    for g in program.gpus:
        for tb in g.blocks:
            for el in [tb] + tb.steps:
                for k, v in el.attrs.items():
                    if k in WIDTHS and not WIDTHS[k][0] <= int(v) <= WIDTHS[k][1]:
                        lo, hi, where = WIDTHS[k]
                        raise UnsupportedError(
                            f"rank {g.attrs['id']} block {tb.attrs['id']}: {k}={v} does not fit "
                            f"the runtime's {where} ({lo}..{hi}); use fewer --channels or "
                            "--chunks")


def _offset_message(n, k, channels, needed):
    return (f"{n} ranks x {k} chunk(s) per shard x {channels} channel(s) need buffer offsets up "
            f"to {needed}; the runtime stores offsets in 16 bits (below {LIMITS['offset']}); use "
            "fewer chunks or channels")


def _layout(builder, channels, fuse, proto, name, schedule, hints):
    """Blocks and program: a link's sequence continues on further channels until every block
    holds at most 64 steps."""
    cap = LIMITS["steps"]
    while True:
        blocks = _blocks(builder, cap, fuse=fuse, room=CAPACITY[proto])
        longest = max((len(b[3]) for rb in blocks for b in rb), default=0)
        used = 1 + max((b[2] for rb in blocks for b in rb), default=0)
        if longest <= LIMITS["steps"] and used <= LIMITS["channels"]:
            break
        if used > LIMITS["channels"] or cap <= 1:
            raise UnsupportedError(
                f"the schedule does not fit the runtime: a link carries more transfers than "
                f"{LIMITS['channels']} channels x {LIMITS['steps']} steps per thread block hold "
                f"(with {channels} channel copies, {used} channels would be needed); use fewer "
                "--channels, fewer --chunks, or a schedule with fewer transfers per link")
        cap = max(1, cap * 3 // 4)
    program, used = _program(builder, blocks, name, proto, hints)
    return program, used, blocks, cap


def export_msccl(schedule, *, proto="Simple", channels=1, chunks=None, min_bytes=0,
                 max_bytes=NO_LIMIT, name=None, astra=False, unfused=False, step_hints=True,
                 check=True):
    """An MSCCL XML program that runs ``schedule`` (see the module docstring).

    Parameters
    ----------
    schedule : Schedule or path
        Any verified schedule of the eight collectives.
    proto : {"Simple", "LL", "LL128"}
        The NCCL protocol the runtime uses.
    channels : int
        Copies of the program on separate channels, each moving a slice of every chunk.
    chunks : int, optional
        Chunks per shard. By default the smallest that represents every transfer exactly; a
        smaller one rounds transfers to whole chunks (the loss is reported, and the rounded
        schedule must still verify).
    min_bytes, max_bytes : int
        The message sizes the runtime should use the program for.
    name : str, optional
        The program's name (default: algorithm and topology).
    astra : bool
        The form ASTRA-sim's MSCCL converter reads: only ``s``, ``r``, ``rrc`` and ``nop``
        steps (no fused steps, no local copies), ``srcoff`` equal to ``dstoff`` in every
        step, ``coll`` spelled ``reduce_scatter``, and in-place only (``inplace="1"
        outofplace="0"``) for the collectives that have an in-place call. Alltoall is
        out-of-place only and needs a local copy of each rank's own block, which the
        converter cannot express: its export says so in ``warning`` (status 2). Scatter and
        gather are not among the converter's collectives (:class:`UnsupportedError`).
    unfused : bool
        Keep every receive and send a step of its own (no ``rcs``/``rrcs``), local copies kept.
    step_hints : bool
        Add the attribute ``tcstep`` (the schedule's step) to every send and receive, so that
        ``import`` gives back the same steps even where the schedule waits longer than its data
        needs. The runtime ignores attributes it does not read.

    Returns
    -------
    ExportResult
        ``text`` is the file; ``status`` is 0, or 2 when rounding to whole chunks changed
        transfers.
    """
    schedule = as_schedule(schedule)
    if proto not in PROTOCOLS:
        raise UnsupportedError(f"proto must be one of {', '.join(PROTOCOLS)}, got {proto!r}")
    for label, value in (("channels", channels), ("chunks", chunks)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, np.integer))):
            raise InputTypeError(f"{label} must be an integer, got {value!r}")
    if not 1 <= channels <= LIMITS["channels"]:
        raise UnsupportedError(f"channels must be 1..{LIMITS['channels']} (the runtime's "
                               f"channel limit), got {channels}")
    if chunks is not None and chunks < 1:
        raise UnsupportedError(f"chunks must be at least 1, got {chunks}")
    for label, value in (("min_bytes", min_bytes), ("max_bytes", max_bytes)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not \
                0 <= value <= NO_LIMIT:
            raise UnsupportedError(f"{label} must be an integer 0..{NO_LIMIT}, got {value!r}")
    if min_bytes > max_bytes:
        raise UnsupportedError(f"min_bytes ({min_bytes}) must not exceed max_bytes ({max_bytes})")
    if astra and schedule.collective.name not in ASTRA_COLLECTIVES:
        raise UnsupportedError(f"ASTRA-sim's MSCCL converter does not take "
                               f"{schedule.collective.name} (only "
                               f"{', '.join(ASTRA_COLLECTIVES)}); export it without --astra")
    if check:
        verify(schedule).raise_if_invalid()
    n = schedule.num_nodes
    if n > LIMITS["subs"]:
        raise UnsupportedError(f"{n} ranks: an MSCCL program holds at most {LIMITS['subs']} "
                               "<gpu> elements")
    loss = 0.0
    exact = exact_chunks(schedule)
    if chunks is None:
        if exact is None:
            raise UnsupportedError("the transfers' byte ranges need more than "
                                   f"{_MAX_EXACT_CHUNKS} chunks per shard to be exact; give "
                                   "--chunks K to round them to whole chunks")
        k = exact
    else:
        k = chunks
        if exact is None or k % exact:
            schedule, loss = quantize(schedule, k)
            report = verify(schedule)
            if not report.valid:
                first = report.errors[0].message if report.errors else "invalid"
                raise UnsupportedError(f"rounded to {k} chunks per shard the schedule no longer "
                                       f"verifies ({first}); use more chunks"
                                       + (f" ({exact} are exact)" if exact else ""))
    lay = Layout(schedule.collective, n, k * channels, schedule.root)
    if max(lay.input_chunks, lay.output_chunks) >= LIMITS["offset"]:
        raise UnsupportedError(_offset_message(n, k, channels,
                                               max(lay.input_chunks, lay.output_chunks)))
    schedule = merge_pieces(schedule)
    builder = _Builder(schedule, k, channels, astra)
    builder.start()
    t = schedule.transfers
    t = t[np.argsort(t["step"], kind="stable")]
    bounds = np.flatnonzero(np.r_[True, t["step"][1:] != t["step"][:-1], True])
    for a, b in zip(bounds[:-1], bounds[1:]):
        builder.step(t[a:b])
    peers = {(op.rank, op.peer) for op in builder.ops if op.kind == "s"}
    degree = int(np.bincount([r for r, _ in peers], minlength=1).max()) if peers else 0
    if degree > LIMITS["blocks_per_channel"]:
        raise UnsupportedError(f"a rank sends to {degree} peers; the runtime allows "
                               f"{LIMITS['blocks_per_channel']} thread blocks per channel and "
                               "direction")
    fuse = not (astra or unfused)
    name = name or f"topocoll-{schedule.algorithm}-{schedule.topology.name}"[:200]
    while True:
        program, used, blocks, cap = _layout(builder, channels, fuse, proto, name, schedule,
                                             step_hints)
        # check it: the bounded-buffer run of lint (docs/interop.md, "Bounded buffers")
        from .lint import buffer_capacity

        need, _ = buffer_capacity(program)
        if need is not None and need <= CAPACITY[proto]:
            break
        if not fuse:
            raise UnsupportedError(
                f"the program needs connections that hold {need} unit(s); proto={proto} holds "
                f"{CAPACITY[proto]}: it would hang in the runtime (use --chunks to change the "
                "sizes of the sends)")
        fuse = False         # never reached for the shapes tested; the unfused form is the anchor
    program.attrs["minBytes"] = str(int(min_bytes))
    program.attrs["maxBytes"] = str(int(max_bytes))
    _check_widths(program)
    total_blocks = sum(len(g.blocks) for g in program.gpus)
    total_steps = sum(len(tb.steps) for g in program.gpus for tb in g.blocks)
    per_rank_nodes = max(1 + n + len(g.blocks) + sum(len(tb.steps) for tb in g.blocks)
                         for g in program.gpus)
    if per_rank_nodes > LIMITS["nodes"]:
        raise UnsupportedError(f"a rank's part of the program has {per_rank_nodes} elements; the "
                               f"runtime's parser holds {LIMITS['nodes']}")
    longest = max((len(tb.steps) for g in program.gpus for tb in g.blocks), default=0)
    scratch = max(int(g.attrs["s_chunks"]) for g in program.gpus)
    if scratch >= LIMITS["offset"]:
        raise UnsupportedError(_offset_message(n, k, channels, scratch))
    status = Status.NOT_PROVEN if loss > 0 else Status.SUCCESS
    message = (f"{total_blocks} thread blocks, {total_steps} steps on {used} channel(s), "
               f"{k} chunk(s) per shard")
    if loss > 0:
        message += f"; rounding to whole chunks changed {loss:.2%} of the moved bytes"
    warning = ""
    if astra and not lay.inplace:
        warning = (f"not self-contained: {schedule.collective.name} has no in-place call and "
                   "ASTRA-sim's converter has no local copy, so each rank's own block stays in "
                   "its input (lint reports it missing from the output); ASTRA-sim simulates "
                   "the transfers, which are all there")
        status = Status.NOT_PROVEN
        message += "; " + warning
    return ExportResult(status=status, message=message, program=program, chunks=k,
                        instances=channels, channels=used, quantization_loss=loss,
                        blocks=total_blocks, steps=total_steps, max_block_steps=longest,
                        collective=schedule.collective.name, astra=astra, warning=warning)
