"""A schedule compiled into one rank's dataflow program: packets, their order and dependencies.

The lock-step plan of :mod:`topocoll.runtime.plan` says, per step, what a rank sends to and
receives from each peer. :func:`compile_program` turns it into what the dataflow engine
(:mod:`topocoll.runtime.engine`) executes:

- **Packets.** The pieces one message carries (transfers from one node to another in one step,
  in file order) are cut into packets of at most ``slice_numel`` elements. Adjacent pieces of
  one shard are first joined into runs; a run of ``slice_numel`` elements or more is cut into
  ``ceil(run / slice_numel)`` near-equal slices, each a packet of its own; shorter runs are
  packed whole, in order, into packets of at most ``slice_numel`` elements. Sender and receiver
  cut the same message the same way (the cut depends only on the pieces' sizes and order).
- **Order on a link.** The packets of one directed link (``src -> dst``) are numbered in
  ``(step, packet)`` order; both ends post them in that order and the number is the message
  tag, so sends and receives match one to one (by tag on gloo, by order where tags are
  ignored).
- **Writes.** Every received packet is one *write* (a copy into, or a reduction into, the
  rank's shard buffers). Writes run in *program order*, ``(step, packet, peer)``: slice ``k``
  of every peer's message before slice ``k + 1`` of any, so the messages of one step progress
  together, and results are the same bits on every run.
- **Dependencies.** A send of step ``s`` may start once every earlier-step write that overlaps
  what it reads is done (``SendOp.after``: a count of writes, since writes run in order). A
  write of step ``s`` into a region must wait until the sends of earlier steps that read the
  region have completed (``RecvOp.wait_sends``); a send of step ``s`` whose region a write of
  the same step changes carries a snapshot taken when it starts (``SendOp.snapshot``), since
  step ``s`` sends what the sender held at the end of step ``s - 1``.
- **In place.** A packet that is one contiguous range copied (not reduced), which no other
  operation of the rank touches in the same step, is received straight into the shard buffer
  (``RecvOp.direct``) where nothing earlier touches the range either (posted when the call
  starts), or where it has at least ``in_place_numel`` elements (posted once the earlier
  writes into the range are done and the earlier sends of it have completed). Every other
  packet lands in a staging buffer of its peer (``window`` of them per peer, reused in turn)
  and is copied or reduced from there. A receive posted after its send costs gloo a round trip
  of notices: for small packets more than the copy, for large ones less (measured on 4 ranks
  sharing 2 cores: a 1 MiB ring allreduce took 9.0 ms with in-place receives posted as soon as
  their range was free and 6.2 ms with staged ones; at 64 MiB, 108 ms and 119 ms).

Why this cannot deadlock: every wait of a rank is for an operation of the same or an earlier
step, each rank posts its sends and receives of a link in link order, the earliest write a
rank waits for always has its receive posted (staging buffers are freed in program order), and
a send of step ``s`` never waits for a write of step ``s``. By induction on the step, every
operation completes (docs/runtime.md gives the argument in full).

>>> from topocoll.synth import generate
>>> prog = compile_program(generate("ring:4", "allgather"), rank=0, numel=8, slice_numel=4)
>>> [(op.peer, op.step, op.tag, op.pieces) for op in prog.sends]  # doctest: +NORMALIZE_WHITESPACE
[(1, 1, 0, ((0, 0, 4),)), (3, 1, 0, ((0, 0, 4),)), (1, 1, 1, ((0, 4, 8),)),
 (3, 1, 1, ((0, 4, 8),)), (1, 2, 2, ((3, 4, 8),)), (3, 2, 2, ((1, 0, 4),))]
>>> [(op.peer, op.step, op.direct) for op in prog.recvs][:4]
[(1, 1, True), (3, 1, True), (1, 1, True), (3, 1, True)]
"""

from dataclasses import dataclass

import numpy as np

from ..units import whole_number
from .plan import rank_plan

__all__ = ["SendOp", "RecvOp", "Program", "compile_program", "packets", "slice_elements",
           "check_window", "default_slice_bytes", "DEFAULT_SLICE_BYTES", "WHOLE_MESSAGES", "DEFAULT_WINDOW",
           "IN_PLACE_BYTES"]

#: Packet size in bytes where the ranks of this machine have cores to spare
#: (:func:`default_slice_bytes`).
DEFAULT_SLICE_BYTES = 1 << 20
#: Packet size that never cuts a message: what :func:`default_slice_bytes` gives where the
#: ranks of this machine share its cores.
WHOLE_MESSAGES = 1 << 40
#: Default staging buffers per peer: packets from one peer that may be in flight into staging
#: buffers at once.
DEFAULT_WINDOW = 4
#: Bytes from which a copied packet is received in place even where earlier work touches its
#: range (the executor's ``in_place_numel``; see the module text).
IN_PLACE_BYTES = 4 << 20


@dataclass(frozen=True)
class SendOp:
    """One packet this rank sends.

    Attributes
    ----------
    peer : int
        The receiving node.
    step : int
    tag : int
        Its number on the link (``0, 1, ...`` in link order).
    pieces : tuple of (shard, start, stop)
        Element ranges of shard buffers, sent in this order.
    numel : int
    after : int
        Writes (in program order) that must be done before it may start.
    contiguous : bool
        One range of one shard: sent straight from the shard buffer.
    snapshot : bool
        A write of the same step changes what it reads: copy it when it starts.
    """

    peer: int
    step: int
    tag: int
    pieces: tuple
    numel: int
    after: int
    contiguous: bool
    snapshot: bool

    @property
    def copied(self):
        """Whether the packet is packed into a send buffer (not sent from the shard itself)."""
        return self.snapshot or not self.contiguous


@dataclass(frozen=True)
class RecvOp:
    """One packet this rank receives, and the write that puts it in place.

    Attributes
    ----------
    peer, step, tag, numel
        As for :class:`SendOp` (``peer`` is the sender).
    pieces : tuple of (shard, start, stop, reduce)
        Where its elements go, in order; ``reduce`` combines instead of copying.
    direct : bool
        Received straight into the shard buffer (one contiguous copied range).
    after : int
        For a direct packet: writes that must be done before its receive is posted.
    wait_sends : tuple of int
        Sends (indices into :attr:`Program.sends`) that must have completed before the packet
        may change the shard buffers: before its receive is posted (direct) or before it is
        applied (staged).
    slot : int
        Its staging buffer among the peer's ``window`` (-1 when direct).
    release : int
        For a staged packet: the write (program index) that frees its staging buffer before
        it may be posted: the peer's staged packet ``window`` places earlier (-1: none).
    """

    peer: int
    step: int
    tag: int
    pieces: tuple
    numel: int
    direct: bool
    after: int
    wait_sends: tuple
    slot: int
    release: int


@dataclass
class Program:
    """One rank's dataflow program (see the module text).

    Attributes
    ----------
    rank : int
    layout : Layout
    shards : numpy.ndarray
        Shards this rank touches.
    sends : list of SendOp
        Grouped by nothing in particular; :attr:`send_links` gives each peer's in link order.
    recvs : list of RecvOp
        In program order (the order of the writes).
    send_links, recv_links : dict
        ``peer -> [indices]`` into :attr:`sends` / :attr:`recvs`, in link order.
    staging : dict
        ``peer -> elements`` of one staging buffer of that peer (the largest staged packet).
    window : int
    slice_numel : int
    in_place_numel : int or None
        See :func:`compile_program`.
    """

    rank: int
    layout: object
    shards: np.ndarray
    sends: list
    recvs: list
    send_links: dict
    recv_links: dict
    staging: dict
    window: int
    slice_numel: int
    in_place_numel: object = None

    @property
    def send_copy_numel(self):
        """Elements of all packets packed into send buffers (a buffer kept per program)."""
        return sum(op.numel for op in self.sends if op.copied)


def default_slice_bytes(local_ranks=None, cores=None):
    """The packet size used when none is given: :data:`DEFAULT_SLICE_BYTES` (1 MiB) where this
    machine has at least two cores per local rank, else :data:`WHOLE_MESSAGES`.

    Slicing buys overlap: the reduction of one slice runs while the next is in flight, which
    needs a core for the rank's compute and one for its transport thread. Where ranks share
    cores there is no idle core to overlap on, and every extra packet costs a wake-up of a
    thread that waits behind others for a core (measured on 4 ranks on 2 cores: 1 MiB slices
    took the ring allreduce from 0.86-0.98x of gloo's to 0.63-0.65x). ``local_ranks`` defaults
    to ``LOCAL_WORLD_SIZE`` (set by torchrun and :func:`~topocoll.runtime.run_local`), else 1;
    ``cores`` to the cores this process may run on.

    >>> default_slice_bytes(local_ranks=4, cores=16) == DEFAULT_SLICE_BYTES
    True
    >>> default_slice_bytes(local_ranks=4, cores=2) == WHOLE_MESSAGES
    True
    """
    import os

    if local_ranks is None:
        try:
            local_ranks = max(1, int(os.environ.get("LOCAL_WORLD_SIZE", "1")))
        except ValueError:
            local_ranks = 1
    if cores is None:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") \
            else (os.cpu_count() or 1)
    return DEFAULT_SLICE_BYTES if cores >= 2 * local_ranks else WHOLE_MESSAGES


def slice_elements(slice_bytes, itemsize):
    """Elements of one packet for ``slice_bytes`` bytes (at least one element).

    >>> slice_elements(1 << 20, 4)
    262144
    """
    return max(1, whole_number(slice_bytes, "slice_bytes") // int(itemsize))


def _runs(pieces):
    """Adjacent pieces of one shard joined: ``[(shard, start, stop, [pieces])]``."""
    runs = []
    for piece in pieces:
        s, a, b = piece[0], piece[1], piece[2]
        if runs and runs[-1][0] == s and runs[-1][2] == a:
            runs[-1][2] = b
            runs[-1][3].append(piece)
        else:
            runs.append([s, a, b, [piece]])
    return runs


def _cut(members, a, b):
    """The parts of ``members`` (pieces of one run) inside elements ``[a, b)``."""
    out = []
    for piece in members:
        lo, hi = max(piece[1], a), min(piece[2], b)
        if lo < hi:
            out.append((piece[0], lo, hi) + tuple(piece[3:]))
    return out


def packets(pieces, slice_numel):
    """Cut one message's pieces into packets (lists of pieces; see the module text).

    ``pieces`` are ``(shard, start, stop, ...)``; what follows ``stop`` is kept.

    >>> packets([(0, 0, 10), (0, 10, 12), (1, 0, 2), (2, 0, 3)], 5)
    [[(0, 0, 4)], [(0, 4, 8)], [(0, 8, 10), (0, 10, 12)], [(1, 0, 2), (2, 0, 3)]]
    """
    out, small, small_n = [], [], 0
    for s, a, b, members in _runs(pieces):
        n = b - a
        if n >= slice_numel:
            if small:
                out.append(small)
                small, small_n = [], 0
            k = -(-n // slice_numel)
            cuts = [a + j * n // k for j in range(k + 1)]
            out.extend(_cut(members, lo, hi) for lo, hi in zip(cuts, cuts[1:]))
            continue
        if small and small_n + n > slice_numel:
            out.append(small)
            small, small_n = [], 0
        small.extend(_cut(members, a, b))
        small_n += n
    if small:
        out.append(small)
    return out


def _contiguous(pieces):
    return all(p[0] == pieces[0][0] and p[1] == q[2] for p, q in zip(pieces[1:], pieces))


class _Regions:
    """The element ranges of many operations (``(step, pieces)`` each), per shard, for overlap
    queries."""

    def __init__(self, ops):
        rows = [(p[0], p[1], p[2], i, step) for i, (step, pieces) in enumerate(ops)
                for p in pieces]
        table = np.array(rows, dtype=np.int64).reshape(-1, 5)
        order = np.argsort(table[:, 0], kind="stable")
        table = table[order]
        shards, starts = np.unique(table[:, 0], return_index=True)
        bounds = np.r_[starts, len(table)]
        self._by_shard = {int(s): table[bounds[j]:bounds[j + 1], 1:]
                          for j, s in enumerate(shards)}

    def overlapping(self, pieces):
        """``(index, step)`` rows of the operations whose ranges overlap any of ``pieces``."""
        found = []
        for piece in pieces:
            rows = self._by_shard.get(piece[0])
            if rows is None:
                continue
            hit = (rows[:, 0] < piece[2]) & (piece[1] < rows[:, 1])
            if hit.any():
                found.append(rows[hit][:, 2:])
        return np.concatenate(found) if found else np.zeros((0, 2), dtype=np.int64)


def compile_program(schedule, rank, numel, *, slice_numel, window=DEFAULT_WINDOW,
                    in_place_numel=None, element_ranges=None):
    """The :class:`Program` of ``rank`` for an input of ``numel`` elements.

    Parameters
    ----------
    schedule : Schedule
    rank : int
        The node this rank plays.
    numel : int
        Elements of the rank's input tensor.
    slice_numel : int
        Most elements of one packet.
    window : int
        Staging buffers per peer.
    in_place_numel : int, optional
        Copied packets of at least this many elements are received in place even where
        earlier work touches their range (posted once it is done); None: only where nothing
        earlier does.
    element_ranges : tuple of arrays, optional
        The transfers' element ranges, when the caller computed them for every rank already.
    """
    whole_number(slice_numel, "slice_numel")
    check_window(window)
    plan = rank_plan(schedule, rank, numel, element_ranges=element_ranges)
    raw_sends = _numbered_packets(plan.steps, "sends", slice_numel)
    raw_recvs = _numbered_packets(plan.steps, "recvs", slice_numel)
    send_regions = _Regions([(r[2], r[4]) for r in raw_sends])
    write_regions = _Regions([(r[2], r[4]) for r in raw_recvs])
    sends = _send_ops(raw_sends, write_regions)
    recvs, staging = _recv_ops(raw_recvs, send_regions, write_regions, window=window,
                               in_place_numel=in_place_numel)
    send_links, recv_links = _links(sends), _links(recvs)
    return Program(rank, plan.layout, plan.shards, sends, recvs, send_links, recv_links,
                   staging, int(window), int(slice_numel),
                   None if in_place_numel is None else int(in_place_numel))


def check_window(window):
    """``window`` (staging buffers per peer) as an int, checked to be a positive integer."""
    return whole_number(window, "window")


def _numbered_packets(steps, which, slice_numel):
    """The packets of every step's ``which`` (``"sends"`` or ``"recvs"``) as ``(key, peer,
    step, tag, packet)`` sorted by key ``(step, packet, peer)``; tags count each peer's
    packets."""
    raw, count = [], {}
    for step in steps:
        messages = getattr(step, which)
        for peer in sorted(messages):
            for j, pkt in enumerate(packets(messages[peer], slice_numel)):
                tag = count.get(peer, 0)
                count[peer] = tag + 1
                raw.append(((step.step, j, peer), peer, step.step, tag, tuple(pkt)))
    raw.sort(key=lambda r: r[0])
    return raw


def _send_ops(raw_sends, write_regions):
    """Each send waits for the earlier receives that write its range (``after``) and
    snapshots its data where a receive of its own step writes there."""
    sends = []
    for (_, peer, step, tag, pkt) in raw_sends:
        rows = write_regions.overlapping(pkt)
        earlier = rows[rows[:, 1] < step, 0]
        after = int(earlier.max()) + 1 if earlier.size else 0
        snapshot = bool((rows[:, 1] == step).any())
        sends.append(SendOp(peer, step, tag, pkt, sum(b - a for _, a, b in pkt), after,
                            _contiguous(pkt), snapshot))
    return sends


def _recv_ops(raw_recvs, send_regions, write_regions, *, window, in_place_numel):
    """Each receive in place or into a staging buffer of its peer; returns the receives and
    the most elements a staging buffer of each peer holds."""
    recvs, staging, staged_by_peer = [], {}, {}
    for index, (_, peer, step, tag, pkt) in enumerate(raw_recvs):
        region = [p[:3] for p in pkt]
        readers = send_regions.overlapping(region)
        wait_sends = tuple(int(i) for i in np.unique(readers[readers[:, 1] < step, 0]))
        writers = write_regions.overlapping(region)
        others = writers[writers[:, 0] != index]
        same_step = (others[:, 1] == step).any() or (readers[:, 1] == step).any()
        # straight into place where nothing earlier touches the range (posted when the call
        # starts), or where the packet is large enough that a copy costs more than the round
        # trip of notices a receive posted after its send costs (then posted once the earlier
        # work on the range is done)
        numel_ = sum(p[2] - p[1] for p in pkt)
        earlier = others[others[:, 0] < index, 0]
        fresh = not wait_sends and not earlier.size
        large = in_place_numel is not None and numel_ >= in_place_numel
        if _contiguous(pkt) and not any(p[3] for p in pkt) and not same_step \
                and (fresh or large):
            after = int(earlier.max()) + 1 if earlier.size else 0
            recvs.append(RecvOp(peer, step, tag, pkt, numel_, True, after, wait_sends, -1, -1))
            continue
        mine = staged_by_peer.setdefault(peer, [])
        release = mine[-window] if len(mine) >= window else -1
        recvs.append(RecvOp(peer, step, tag, pkt, numel_, False, 0, wait_sends,
                            len(mine) % window, release))
        mine.append(index)
        staging[peer] = max(staging.get(peer, 0), numel_)
    return recvs, staging


def _links(ops):
    """``{peer: [index of op]}`` in the order of their tags."""
    links = {}
    for i, op in enumerate(ops):
        links.setdefault(op.peer, []).append(i)
    for peer, idx in links.items():
        idx.sort(key=lambda i: ops[i].tag)
    return links
