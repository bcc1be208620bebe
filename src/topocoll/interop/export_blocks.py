"""The block-assignment pass of the MSCCL export (:mod:`.export`): operations go into thread
blocks (one per out-link and one per in-link and channel, so both sides of a link see the same
order; a link's sequence moves to a further channel every ``cap`` transfers), fused
(:mod:`.export_fusion`), and a step with several dependencies is preceded by ``nop`` steps
carrying the extra ones, as the runtime requires.
"""

from ..errors import UnsupportedError
from .export_fusion import fuse as fuse_blocks
from .export_limits import WIDTHS

__all__ = ["assign_blocks"]


def assign_blocks(builder, cap, fuse, room=None):
    """Group ops into thread blocks (a link's sequence moves to a further channel every ``cap``
    transfers), fuse receives with the sends that forward them, add nops for extra dependencies
    and number the steps. Returns per rank the list of blocks ``(send, recv, chan, ops)``."""
    per_rank = _channel_blocks(builder, cap, fuse, room)
    for rank, blocks in enumerate(per_rank):
        _number(blocks)
        _waited_first(rank, blocks)
    return [[(max(send, -1), max(recv, -1), chan, _with_nops(rank, bid, ops))
             for bid, (send, recv, chan, ops) in enumerate(blocks)]
            for rank, blocks in enumerate(per_rank)]


def _channel_blocks(builder, cap, fuse, room):
    """Each rank's blocks ``[send, recv, chan, ops]``, in the order of their keys: the sends
    and receives of a link, a further channel every ``cap`` transfers, fused when ``fuse``, and
    the local copies (peers -2) last."""
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
        fuse_blocks(keyed, builder, room)
    for op in builder.copies:
        keyed.setdefault((op.rank, 0, -2, -2), []).append(op)
    per_rank = [[] for _ in range(builder.n)]
    for (rank, chan, send, recv), ops in sorted(keyed.items()):
        per_rank[rank].append([send, recv, chan, ops])
    return per_rank


def _number(blocks):
    """Set every op's block id and position (a fused send's too)."""
    for bid, blk in enumerate(blocks):
        for pos, op in enumerate(blk[3]):
            op.block, op.pos = bid, pos
            if op.fused is not None:
                op.fused.block, op.fused.pos = bid, pos


def _waited_first(rank, blocks):
    """Give the blocks that others wait for the lowest ids: the runtime keeps the block a step
    waits for in 8 bits (``WIDTHS["depid"]``), thread block ids themselves may go to 1023."""
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
        _number(blocks)
        if len(waited) > WIDTHS["depid"][1] + 1:
            raise UnsupportedError(
                f"rank {rank} has {len(waited)} thread blocks that other blocks wait for; "
                f"the runtime stores the block a step waits for (depid) in 8 bits "
                f"(0..{WIDTHS['depid'][1]}); use fewer --channels")


def _with_nops(rank, bid, ops):
    """Block ``bid``'s steps ``(op, dependency)``: a step waits for the latest op of each other
    block of its rank it needs and this block has not waited for yet; all but the last of
    those go to ``("nop", op)`` steps before it. Marks the ops waited for ``hasdep``."""
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
    return out
