"""Bounded buffers: the least connection capacity an MSCCL program completes with
(docs/interop.md, "Bounded buffers").

The runtime's connections between thread blocks hold a few chunks (``CAPACITY`` per protocol);
a program whose sends outrun its receives by more waits forever. :func:`buffer_capacity` runs
the thread blocks with connections of a given size and searches the least size that lets every
block finish; ``lint`` reports a program that needs more than its protocol gives, and
``export`` raises the capacity it writes until the program fits.
"""

from .export_limits import CAPACITY
from .mscclxml import RECVS, SENDS

__all__ = ["buffer_capacity"]



def _bounded_blocks(program):
    """The thread blocks as the bounded-buffer run sees them, or ``None`` if the program cannot
    be read that far (the static rules say why)."""
    blocks = []
    try:
        for gpu in program.gpus:
            rank = int(gpu.attrs["id"])
            for tb in gpu.blocks:
                ops = []
                for i, st in enumerate(tb.steps):
                    a = st.attrs
                    ops.append((a.get("type"), int(a.get("depid", -1)), int(a.get("deps", -1)),
                                max(1, int(a.get("cnt", 1))), a.get("hasdep") == "1",
                                int(a.get("s", i)), st))
                blocks.append((rank, int(tb.attrs["id"]), int(tb.attrs.get("send", -1)),
                               int(tb.attrs.get("recv", -1)), int(tb.attrs.get("chan", 0)), ops))
    except (KeyError, ValueError, TypeError):
        return None
    return blocks


def _run_bounded(blocks, capacity):
    """Run the thread blocks with connections that hold ``capacity`` units (a step of ``cnt``
    chunks is ``cnt`` units; ``None``: unbounded). Each block runs its steps in order; a step
    waits for its dependency, a receive for its matching send, a send for room on its
    connection (sender, receiver, channel). A send larger than the room left streams: it
    completes together with its receive once the receiver stands at it with nothing else
    held. Every wait is on a FIFO that only its own block empties, so what can advance stays
    able to until it does: advancing any block that can, until none can, reaches the one final
    state every fair interleaving reaches.

    Returns ``(pcs, held, flags)``: each block's next step (its length when it finished), the
    units each connection holds at the end and the dependency flags set."""
    run = _BoundedRun(blocks, capacity)
    progress = True
    while progress:
        progress = False
        for bi in range(len(blocks)):
            while run.step(bi):
                progress = True
    return run.pcs, run.held, run.flags


class _BoundedRun:
    """The state of :func:`_run_bounded`: each block's next step (``pcs``), the dependency
    flags set, and per connection the units deposited and not yet received (a FIFO) and
    held."""

    def __init__(self, blocks, capacity):
        self.blocks, self.capacity = blocks, capacity
        self.pcs = [0] * len(blocks)
        self.flags = {}
        self.queue = {}      # connection -> list of units deposited and not yet received (FIFO)
        self.held = {}       # connection -> units held
        self.receiver = {}
        for bi, (rank, bid, speer, rpeer, chan, ops) in enumerate(blocks):
            if rpeer >= 0:
                self.receiver.setdefault((rpeer, rank, chan), bi)

    def dep_ok(self, rank, op):
        return op[1] < 0 or self.flags.get((rank, op[1]), -1) >= op[2]

    def recv_ready(self, bi, op):
        rank, _, _, rpeer, chan, _ = self.blocks[bi]
        return bool(self.queue.get((rpeer, rank, chan)))

    def room(self, conn, units):
        return self.capacity is None or self.held.get(conn, 0) + units <= self.capacity

    def finish(self, bi, op):
        rank, bid = self.blocks[bi][0], self.blocks[bi][1]
        if op[4]:
            self.flags[(rank, bid)] = max(self.flags.get((rank, bid), -1), op[5])
        self.pcs[bi] += 1

    def take(self, bi):
        rank, _, _, rpeer, chan, _ = self.blocks[bi]
        conn = (rpeer, rank, chan)
        units = self.queue[conn].pop(0)
        self.held[conn] -= units

    def put(self, bi, units):
        rank, _, speer, _, chan, _ = self.blocks[bi]
        conn = (rank, speer, chan)
        self.queue.setdefault(conn, []).append(units)
        self.held[conn] = self.held.get(conn, 0) + units

    def step(self, bi):
        """Advance block ``bi`` by one step if it can; whether it did."""
        rank, bid, speer, rpeer, chan, ops = self.blocks[bi]
        if self.pcs[bi] >= len(ops):
            return False
        op = ops[self.pcs[bi]]
        kind, units = op[0], op[3]
        if not self.dep_ok(rank, op):
            return False
        if kind in RECVS and not self.recv_ready(bi, op):
            return False
        if kind in SENDS and speer >= 0:
            conn = (rank, speer, chan)
            if not self.room(conn, units):
                return self.stream(bi, op, conn)
            if kind in RECVS:
                self.take(bi)
            self.put(bi, units)
        elif kind in RECVS:
            self.take(bi)
        self.finish(bi, op)
        return True

    def stream(self, bi, op, conn):
        """A send larger than the room left on ``conn``: it completes together with its
        receive when the receiver stands at it with nothing held before; whether it did."""
        kind = op[0]
        ri = self.receiver.get(conn)
        if self.held.get(conn, 0) or ri is None or self.pcs[ri] >= len(self.blocks[ri][5]):
            return False
        rop = self.blocks[ri][5][self.pcs[ri]]
        rrank, _, rspeer, _, rchan, _ = self.blocks[ri]
        if rop[0] not in RECVS or not self.dep_ok(rrank, rop):
            return False
        if rop[0] in SENDS and rspeer >= 0 and not self.room((rrank, rspeer, rchan), rop[3]):
            return False
        if kind in RECVS:
            self.take(bi)
        self.finish(bi, op)
        if rop[0] in SENDS and rspeer >= 0:
            self.put(ri, rop[3])
        self.finish(ri, rop)
        return True


def _blocked_cycle(blocks, pcs, held, flags, capacity):
    """What the stuck blocks wait for, as a cycle: a list of ``(block index, reason)``."""
    where = {}
    for bi, (rank, bid, *_rest) in enumerate(blocks):
        where[(rank, bid)] = bi
    receiver, sender = {}, {}
    for bi, (rank, bid, speer, rpeer, chan, ops) in enumerate(blocks):
        if rpeer >= 0:
            receiver.setdefault((rpeer, rank, chan), bi)
        if speer >= 0:
            sender.setdefault((rank, speer, chan), bi)

    def waits(bi):
        rank, bid, speer, rpeer, chan, ops = blocks[bi]
        op = ops[pcs[bi]]
        if op[1] >= 0 and flags.get((rank, op[1]), -1) < op[2]:
            return where.get((rank, op[1])), f"waits for its rank's block {op[1]} step {op[2]}"
        if op[0] in RECVS:
            conn = (rpeer, rank, chan)
            if conn in sender and not held.get(conn, 0):
                return sender[conn], f"waits for the send of rank {rpeer} (channel {chan})"
        if op[0] in SENDS and speer >= 0:
            conn = (rank, speer, chan)
            if conn in receiver:
                return receiver[conn], (f"waits for room to send {op[3]} unit(s) to rank {speer} "
                                        f"(channel {chan}: {held.get(conn, 0)} held, capacity "
                                        f"{capacity})")
        return None, "waits"

    stuck = [bi for bi in range(len(blocks)) if pcs[bi] < len(blocks[bi][5])]
    if not stuck:
        return []
    bi, seen, path = stuck[0], {}, []
    while bi is not None and bi not in seen and pcs[bi] < len(blocks[bi][5]):
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
    ``(min_capacity, blocked)``; ``min_capacity`` is ``None`` if the program cannot complete
    even with unbounded buffers (the replay says why)."""
    blocks = _bounded_blocks(program)
    if blocks is None:
        return None, []
    if capacity is None:
        capacity = CAPACITY.get(program.attrs.get("proto", "Simple"), CAPACITY["Simple"])
    done = [len(b[5]) for b in blocks]
    pcs = _run_bounded(blocks, None)[0]
    if pcs != done:
        return None, []
    most = {}
    for rank, bid, speer, rpeer, chan, ops in blocks:
        if speer >= 0:
            units = sum(op[3] for op in ops if op[0] in SENDS)
            most[(rank, speer, chan)] = most.get((rank, speer, chan), 0) + units
    hi = max(most.values(), default=1)
    cache = {}

    def completes(c):
        if c not in cache:
            cache[c] = _run_bounded(blocks, c)
        return cache[c][0] == done

    # more room never stops a block that could advance, so completing is monotone in capacity
    lo, least = 1, hi
    while lo < least:
        mid = (lo + least) // 2
        if completes(mid):
            least = mid
        else:
            lo = mid + 1
    blocked = []
    if not completes(capacity):
        pcs, held, flags = cache[capacity]
        blocked = [(blocks[bi], pcs[bi], why) for bi, why in
                   _blocked_cycle(blocks, pcs, held, flags, capacity)]
    return least, blocked
