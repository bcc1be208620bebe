"""Bounded buffers: the least connection capacity an MSCCL program completes with
(docs/interop.md, "Bounded buffers").

The runtime's connections between thread blocks hold a few chunks (``CAPACITY`` per protocol);
a program whose sends outrun its receives by more waits forever. :func:`buffer_capacity` runs
the thread blocks with connections of a given size (:func:`~.threadblocks.run_blocks` with a
``capacity``) and searches the least size that lets every block finish; ``lint`` reports a
program that needs more than its protocol gives, and ``export`` raises the capacity it writes
until the program fits.
"""

from .export_limits import CAPACITY
from .mscclxml import RECVS, SENDS
from .threadblocks import read_blocks, run_blocks

__all__ = ["buffer_capacity"]


def _no_data(block, op, incoming):
    """The bounded run follows only who waits for whom, not what the steps move."""
    return None


def _blocked_cycle(run):
    """What the stuck blocks of a bounded :class:`~.threadblocks.Run` wait for, as a cycle: a
    list of ``(block index, reason)``."""
    blocks, pcs, held, flags = run.blocks, run.pcs, run.held, run.flags
    where = {(blk.rank, blk.bid): bi for bi, blk in enumerate(blocks)}
    sender = {}
    for bi, blk in enumerate(blocks):
        if blk.send >= 0:
            sender.setdefault((blk.rank, blk.send, blk.chan), bi)

    def waits(bi):
        rank, bid, speer, rpeer, chan, ops = blocks[bi]
        op = ops[pcs[bi]]
        if op.depid >= 0 and flags.get((rank, op.depid), -1) < op.deps:
            return where.get((rank, op.depid)), (f"waits for its rank's block {op.depid} step "
                                                 f"{op.deps}")
        if op.kind in RECVS:
            conn = (rpeer, rank, chan)
            if conn in sender and not held.get(conn, 0):
                return sender[conn], f"waits for the send of rank {rpeer} (channel {chan})"
        if op.kind in SENDS and speer >= 0:
            conn = (rank, speer, chan)
            if conn in run.receiver:
                return run.receiver[conn], (f"waits for room to send {op.units} unit(s) to rank "
                                            f"{speer} (channel {chan}: {held.get(conn, 0)} held, "
                                            f"capacity {run.capacity})")
        return None, "waits"

    stuck = [bi for bi in range(len(blocks)) if pcs[bi] < len(blocks[bi].ops)]
    if not stuck:
        return []
    bi, seen, path = stuck[0], {}, []
    while bi is not None and bi not in seen and pcs[bi] < len(blocks[bi].ops):
        seen[bi] = len(path)
        nxt, why = waits(bi)
        path.append((bi, why))
        bi = nxt
    if bi is not None and bi in seen:
        return path[seen[bi]:]
    return path


def buffer_capacity(program, *, capacity=None):
    """The smallest connection capacity (in units: a step of ``cnt`` chunks is ``cnt``) with
    which ``program`` completes, the run at ``capacity`` (default: the protocol's,
    :data:`~topocoll.interop.export.CAPACITY`) and the blocked cycle there if it hangs:
    ``(min_capacity, blocked)``, ``blocked`` a list of ``(block, step index, reason)`` (a
    :class:`~.threadblocks.Block`); ``min_capacity`` is ``None`` if the program cannot complete
    even with unbounded buffers (the replay says why) or cannot be read that far (the static
    rules say why)."""
    try:
        blocks = read_blocks(program, copies=False)
    except (KeyError, ValueError, TypeError):
        return None, []
    if capacity is None:
        capacity = CAPACITY.get(program.attrs.get("proto", "Simple"), CAPACITY["Simple"])
    if not run_blocks(blocks, _no_data).done:
        return None, []
    most = {}
    for blk in blocks:
        if blk.send >= 0:
            key = (blk.rank, blk.send, blk.chan)
            most[key] = most.get(key, 0) + sum(op.units for op in blk.ops if op.kind in SENDS)
    hi = max(most.values(), default=1)
    cache = {}

    def run_at(c):
        if c not in cache:
            cache[c] = run_blocks(blocks, _no_data, capacity=c)
        return cache[c]

    # more room never stops a block that could advance, so completing is monotone in capacity
    lo, least = 1, hi
    while lo < least:
        mid = (lo + least) // 2
        if run_at(mid).done:
            least = mid
        else:
            lo = mid + 1
    blocked = []
    run = run_at(capacity)
    if not run.done:
        blocked = [(blocks[bi], run.pcs[bi], why) for bi, why in _blocked_cycle(run)]
    return least, blocked
