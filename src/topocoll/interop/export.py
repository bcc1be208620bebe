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

The export runs as separate passes, as msccl-tools does: :mod:`.export_deps` (operations and
their data dependencies), :mod:`.export_fusion` (``rcs``/``rrcs``), :mod:`.export_blocks`
(thread blocks, channels, ``nop`` steps) and :mod:`.export_writer` (the element tree);
:mod:`.export_limits` holds the runtime's limits. This module checks the request, runs the
passes and reports.

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

from ..errors import UnsupportedError
from ..results import Result, Status
from ..schedule.io import as_schedule
from ..schedule.routing import unlinked
from ..schedule.transforms import merge_pieces
from ..schedule.verify import verify
from ..units import whole_number
from .buffers import buffer_capacity
from .chunk_memory import chunk_cells, require_chunk_memory
from .export_blocks import assign_blocks
from .export_deps import OpBuilder
from .export_limits import CAPACITY, LIMITS, PROTOCOLS, WIDTHS, next_block_cap
from .export_precheck import precheck, precheck_elements
from .export_writer import HINT, SEND_HINT, check_widths, write_program
from .layout import Layout
from .mscclxml import NO_LIMIT, Program, format_msccl

__all__ = ["ASTRA_COLLECTIVES", "HINT", "SEND_HINT", "astra_command", "export_msccl",
           "ExportResult", "exact_chunks", "quantize",
           "PROTOCOLS", "LIMITS", "WIDTHS", "CAPACITY"]

_MAX_EXACT_CHUNKS = 4096


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
    routed : int
        Transfers of a routed schedule sent to nodes that are not neighbours (the message says
        the network must forward them); 0 for a direct schedule.
    """

    program: Program = field(repr=False)
    chunks: int = 1
    instances: int = 1
    channels: int = 1
    quantization_loss: float = 0.0
    routed: int = 0
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
        if self.routed:
            d["routed"] = self.routed
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


def _offset_message(n, k, channels, needed):
    return (f"{n} ranks x {k} chunk(s) per shard x {channels} channel(s) need buffer offsets up "
            f"to {needed}; the runtime stores offsets in 16 bits (below {LIMITS['offset']}); use "
            "fewer chunks or channels")


def _layout(builder, channels, fuse, proto, name, schedule, hints):
    """Blocks and program: a link's sequence continues on further channels until every block
    holds at most 64 steps."""
    cap = LIMITS["steps"]
    while True:
        blocks = assign_blocks(builder, cap, fuse=fuse, room=CAPACITY[proto])
        longest = max((len(b[3]) for rb in blocks for b in rb), default=0)
        used = 1 + max((b[2] for rb in blocks for b in rb), default=0)
        smaller = next_block_cap(longest, used, channels, cap)
        if smaller is None:
            break
        cap = smaller
    program, used = write_program(builder, blocks, name, proto, hints)
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
    _check_request(schedule, proto=proto, channels=channels, chunks=chunks,
                   min_bytes=min_bytes, max_bytes=max_bytes, astra=astra, name=name)
    fuse = not (astra or unfused)
    # a rank's part that cannot fit the runtime's parser, found in seconds on arrays before
    # verifying and translating (docs/interop.md, "Runtime rules and limits")
    early = _early_elements(schedule, chunks, channels, fuse, astra)
    if check:
        verify(schedule).raise_if_invalid()
    n = schedule.num_nodes
    if n > LIMITS["subs"]:
        raise UnsupportedError(f"{n} ranks: an MSCCL program holds at most {LIMITS['subs']} "
                               "<gpu> elements")
    if early is not None:
        schedule, k, loss = early
    else:
        schedule, k, loss = _chunks_per_shard(schedule, chunks)
        _check_offsets(schedule, n, k, channels)
        schedule = merge_pieces(schedule)
        precheck_elements(schedule, k, channels, fuse=fuse, astra=astra)
    lay = Layout(schedule.collective, n, k * channels, schedule.root)
    # the block pass's own refusals, found in seconds on arrays (docs/interop.md, "Limits")
    precheck(schedule, k, channels, room=CAPACITY[proto] if fuse else None, astra=astra)
    t = schedule.transfers
    moved = np.rint((t["hi"] - t["lo"]) * k).astype(np.int64) * channels
    require_chunk_memory(chunk_cells(n, lay.num_chunks, moved), "export",
                         f"exporting {schedule.num_transfers:,} transfers in {k} chunk(s) per "
                         f"shard on {n} ranks")
    builder = translate_schedule(schedule, k, channels, astra)
    name = name or f"topocoll-{schedule.algorithm}-{schedule.topology.name}"[:200]
    program, used = _fitted_program(builder, channels, fuse, proto, name, schedule, step_hints)
    program.attrs["minBytes"] = str(int(min_bytes))
    program.attrs["maxBytes"] = str(int(max_bytes))
    check_widths(program)
    total_blocks, total_steps, longest = _check_program_size(program, n, k, channels)
    status = Status.NOT_PROVEN if loss > 0 else Status.SUCCESS
    message = (f"{total_blocks} thread blocks, {total_steps} steps on {used} channel(s), "
               f"{k} chunk(s) per shard")
    if loss > 0:
        message += f"; rounding to whole chunks changed {loss:.2%} of the moved bytes"
    routed = _routed_transfers(schedule)
    if routed:
        message += (f"; {routed} of {schedule.num_transfers} transfers go to nodes that are not "
                    f"neighbours ({schedule.routing} routing): the program sends them directly, "
                    "which needs a network that forwards (switches, routers, an emulated "
                    "network's routes)")
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
                        collective=schedule.collective.name, astra=astra, warning=warning,
                        routed=routed)


def _routed_transfers(schedule):
    """How many transfers of a routed schedule have no link of their own (0 if direct)."""
    if schedule.routing is None:
        return 0
    t = schedule.transfers
    return int(np.count_nonzero(unlinked(schedule.topology, t["src"], t["dst"])))


def _check_request(schedule, *, proto, channels, chunks, min_bytes, max_bytes, astra, name):
    """Refuse an export request the runtime or the converter could not take."""
    if proto not in PROTOCOLS:
        raise UnsupportedError(f"proto must be one of {', '.join(PROTOCOLS)}, got {proto!r}")
    # the channel limit gets its own message: it is the runtime's, not a property of a count
    if not 1 <= whole_number(channels, "channels", None) <= LIMITS["channels"]:
        raise UnsupportedError(f"channels must be 1..{LIMITS['channels']} (the runtime's "
                               f"channel limit), got {channels}")
    if chunks is not None:
        whole_number(chunks, "chunks")
    for label, value in (("min_bytes", min_bytes), ("max_bytes", max_bytes)):
        whole_number(value, label, 0, most=NO_LIMIT)
    if min_bytes > max_bytes:
        raise UnsupportedError(f"min_bytes ({min_bytes}) must not exceed max_bytes ({max_bytes})")
    if astra and schedule.collective.name not in ASTRA_COLLECTIVES:
        raise UnsupportedError(f"ASTRA-sim's MSCCL converter does not take "
                               f"{schedule.collective.name} (only "
                               f"{', '.join(ASTRA_COLLECTIVES)}); export it without --astra")
    if name is not None and (not name.strip() or len(name) > 200 or '"' in name
                             or any(not c.isprintable() for c in name)):
        raise UnsupportedError(f"name {name[:40]!r}: the program's name must be 1 to 200 "
                               "printable characters without a double quote (the runtime "
                               "reads it as one quoted attribute)")


def _check_offsets(schedule, n, k, channels):
    """Refuse buffers whose offsets pass 16 bits."""
    lay = Layout(schedule.collective, n, k * channels, schedule.root)
    if max(lay.input_chunks, lay.output_chunks) >= LIMITS["offset"]:
        raise UnsupportedError(_offset_message(n, k, channels,
                                               max(lay.input_chunks, lay.output_chunks)))


def _early_elements(schedule, chunks, channels, fuse, astra):
    """Before verifying: where the schedule is lowered without rounding, ``(merged schedule,
    k, 0.0)`` after :func:`~.export_precheck.precheck_elements` (which raises where a rank's
    part cannot fit; an invalid schedule is refused by the export anyway); ``None`` where the
    usual order decides (rounding, too many ranks or offsets, ASTRA, other collectives)."""
    n = schedule.num_nodes
    t = schedule.transfers
    if astra or schedule.collective.name != "allreduce" or n > LIMITS["subs"] or not (
            np.isfinite(t["lo"]).all() and np.isfinite(t["hi"]).all()):
        return None                 # the verifier names what is wrong with the values
    exact = exact_chunks(schedule)
    if exact is None or (chunks is not None and chunks % exact):
        return None
    k = chunks or exact
    lay = Layout(schedule.collective, n, k * channels, schedule.root)
    if max(lay.input_chunks, lay.output_chunks) >= LIMITS["offset"]:
        return None
    merged = merge_pieces(schedule)
    precheck_elements(merged, k, channels, fuse=fuse)
    return merged, k, 0.0


def _chunks_per_shard(schedule, chunks):
    """``(schedule, k, loss)``: the chunks per shard (``chunks``, or the least exact number)
    and the schedule rounded to them with the fraction of moved bytes that changed."""
    loss = 0.0
    exact = exact_chunks(schedule)
    if chunks is None:
        if exact is None:
            raise UnsupportedError("the transfers' byte ranges need more than "
                                   f"{_MAX_EXACT_CHUNKS} chunks per shard to be exact; give "
                                   "--chunks K to round them to whole chunks")
        return schedule, exact, loss
    k = chunks
    if exact is None or k % exact:
        schedule, loss = quantize(schedule, k)
        report = verify(schedule)
        if not report.valid:
            first = report.errors[0].message if report.errors else "invalid"
            raise UnsupportedError(f"rounded to {k} chunks per shard the schedule no longer "
                                   f"verifies ({first}); use more chunks"
                                   + (f" ({exact} are exact)" if exact else ""))
    return schedule, k, loss


def translate_schedule(schedule, k, channels, astra):
    """The operations of every step (:class:`~.export_deps.OpBuilder`), refusing as soon as a
    rank's part cannot fit the runtime's parser or a rank sends to too many peers."""
    n = schedule.num_nodes
    builder = OpBuilder(schedule, k, channels, astra)
    builder.start()
    t = schedule.transfers
    t = t[np.argsort(t["step"], kind="stable")]
    bounds = np.flatnonzero(np.r_[True, t["step"][1:] != t["step"][:-1], True])
    per_rank = np.zeros(n, dtype=np.int64)
    for a, b in zip(bounds[:-1], bounds[1:]):
        done = len(builder.ops)
        builder.step(t[a:b])
        # every op is a step of its own or half of a fused one: fail as soon as a rank's part
        # cannot fit, not after translating everything (a 1024-node allreduce: minutes)
        per_rank += np.bincount([op.rank for op in builder.ops[done:]], minlength=n)
        least = 1 + n + -(-int(per_rank.max()) // 2)
        if least >= LIMITS["nodes"]:
            raise UnsupportedError(
                f"rank {int(per_rank.argmax())}'s part of the program needs at least {least} "
                f"elements by step {int(t[a]['step'])} of {int(t['step'][-1])} (1 <algo>, {n} "
                f"<gpu>, a step per op or per fused pair of ops); the runtime's parser holds "
                f"{LIMITS['nodes'] - 1}: MSCCL cannot run this schedule on {n} ranks")
    peers = {(op.rank, op.peer) for op in builder.ops if op.kind == "s"}
    degree = int(np.bincount([r for r, _ in peers], minlength=1).max()) if peers else 0
    if degree > LIMITS["blocks_per_channel"]:
        raise UnsupportedError(f"a rank sends to {degree} peers; the runtime allows "
                               f"{LIMITS['blocks_per_channel']} thread blocks per channel and "
                               "direction")
    return builder


def _fitted_program(builder, channels, fuse, proto, name, schedule, step_hints):
    """``(program, channels used)``: the laid-out program whose connections need no more than
    the protocol holds (the bounded-buffer run of lint, docs/interop.md, "Bounded buffers")."""
    while True:
        program, used, _blocks, _cap = _layout(builder, channels, fuse, proto, name, schedule,
                                               step_hints)
        need, _ = buffer_capacity(program)
        if need is not None and need <= CAPACITY[proto]:
            return program, used
        if not fuse:
            raise UnsupportedError(
                f"the program needs connections that hold {need} unit(s); proto={proto} holds "
                f"{CAPACITY[proto]}: it would hang in the runtime (use --chunks to change the "
                "sizes of the sends)")
        fuse = False         # never reached for the shapes tested; the unfused form is the anchor


def _check_program_size(program, n, k, channels):
    """``(thread blocks, steps, longest block)`` of ``program``, refusing a rank's part the
    runtime's parser cannot hold or scratch offsets past 16 bits."""
    total_blocks = sum(len(g.blocks) for g in program.gpus)
    total_steps = sum(len(tb.steps) for g in program.gpus for tb in g.blocks)
    per_rank_nodes = max(1 + n + len(g.blocks) + sum(len(tb.steps) for tb in g.blocks)
                         for g in program.gpus)
    if per_rank_nodes >= LIMITS["nodes"]:   # one short of MAX_NODES (docs/interop.md)
        raise UnsupportedError(f"a rank's part of the program has {per_rank_nodes} elements; the "
                               f"runtime's parser holds {LIMITS['nodes'] - 1}")
    longest = max((len(tb.steps) for g in program.gpus for tb in g.blocks), default=0)
    scratch = max(int(g.attrs["s_chunks"]) for g in program.gpus)
    if scratch >= LIMITS["offset"]:
        raise UnsupportedError(_offset_message(n, k, channels, scratch))
    return total_blocks, total_steps, longest
