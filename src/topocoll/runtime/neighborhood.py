"""Neighbor averaging through shared memory: the ranks of one host gossip without sockets.

:func:`~topocoll.runtime.neighbor_allreduce` (and
:class:`~topocoll.runtime.DecentralizedDataParallel`) send every slice to every neighbour
through the process group by default only where the ranks do not share a host; where they
do (``transport="auto"``, the default, or ``"shared_memory"``), a :class:`Neighborhood` moves
the slices through the channels of :mod:`topocoll.runtime.shm`, the ones the dataflow engine
uses for schedules:

* one channel per ordered pair of ranks that ever exchange, opened on the pair's first
  message by its two ends alone (the sender makes the file and renames it into place, the
  receiver maps it and unlinks it), so a dynamic topology opens the pairs of its period as
  they come, and nothing is left in ``/dev/shm`` once both ends hold it;
* a slice is copied into each destination's next free slot as soon as there is room, ahead
  of the slices being combined (``window`` slots a channel), and the weighted sum reads the
  received slices **straight from the slots** (no staging copy), in the documented order, so
  the bits are those of the network path;
* exchanges run one after another, in the order the calls were made (which is the same on
  every rank): a synchronous call runs in the caller's thread, an asynchronous one (and every
  call made while one is in flight) in this group's one background thread, so that the
  transfer overlaps the caller's compute as gloo's does.

Choosing the transport is collective: the first call on a group with ``auto`` or
``shared_memory`` gathers a few integers from every rank (host, boot, namespaces; see
:func:`~topocoll.runtime.shm.shared_memory_refusal`), and the answer is kept for the group's
life in this module's table, as torch.distributed keeps its own per group. A peer that exits
is named within a second; ``timeout`` bounds any one wait.
"""

import os
import threading
import weakref
from concurrent.futures import Future, ThreadPoolExecutor

from ..errors import ProcessGroupError, UnsupportedError
from .launch import gather_integers, group_info
from .mixing import combine
from .program import DEFAULT_SLICE_BYTES, DEFAULT_WINDOW, slice_elements
from .grouptable import GroupTable
from .shm import (Channel, Patience, channel_prefix, check_transport, gather_facts,
                  remove_stale_channels, slot_bytes)

__all__ = ["Neighborhood", "neighborhood", "slice_count"]

# the transport of each process group: (its Neighborhood or None for the network, why not
# shared memory); see the module
_CHOSEN = GroupTable()


def neighborhood(group=None, transport="auto", timeout=None):
    """The :class:`Neighborhood` of ``group`` (default: the world), or None where neighbor
    averaging goes through the process group: ``transport="network"``, or ``auto`` where the
    ranks do not all share this host. The first ``auto`` or ``shared_memory`` call on a group
    is collective (every rank makes it, within ``timeout`` seconds); later ones are not."""
    import torch.distributed as dist

    if check_transport(transport) == "network":
        return None
    group_info(group)     # a process group, and this process in it
    pg = group if group is not None else dist.group.WORLD
    chosen, refusal = _CHOSEN.get(pg, lambda: _choose(group, timeout))
    if refusal is not None and transport == "shared_memory":
        raise UnsupportedError(f"transport shared_memory: {refusal}")
    return chosen


def _choose(group, timeout):
    """``(Neighborhood or None, why not shared memory)`` of ``group``: its ranks agree."""
    facts, refusal = gather_facts(lambda values: gather_integers(
        values, group, timeout,
        lambda missing: "the ranks did not agree on the transport of neighbor averaging: "
                        f"not every rank of the group made its first call{missing}; call "
                        "it on every rank, or give transport='network'"))
    return (None if refusal else Neighborhood(group, facts)), refusal


def slice_count(numel, per):
    """Slices of ``per`` elements (the last one shorter) that cover ``numel``; at least one."""
    return max(1, -(-numel // per))


def _remove(paths, worker):
    worker.shutdown(wait=False)
    for path in paths:
        for p in (path, path + "-new"):
            try:
                os.unlink(p)
            except OSError:
                pass


class Neighborhood:
    """This rank's shared-memory channels to the ranks it averages with (see the module).

    Parameters
    ----------
    group : ProcessGroup or None
        The group; ranks are its ranks.
    facts : list of dict
        Every rank's :func:`~topocoll.runtime.shm.host_identity` (decoded): their process ids,
        and rank 0's token, which names the channel files.
    slice_bytes : int
        Most bytes of one slice, so of one channel slot (the same on every rank).
    window : int
        Slots of a channel: slices a sender may be ahead of its receiver.
    """

    def __init__(self, group, facts, slice_bytes=DEFAULT_SLICE_BYTES, window=DEFAULT_WINDOW):
        # the group is not kept: the table's entry for it must not keep it alive
        self.rank, self.size = group_info(group)
        self.pids = [f["pid"] for f in facts]
        self.prefix = channel_prefix(f"{facts[0]['token']:x}-gossip")
        remove_stale_channels()        # what ranks of earlier runs were killed before mapping
        self.slice_bytes, self.window = int(slice_bytes), int(window)
        self._slot = slot_bytes(self.slice_bytes, 1)
        self._out, self._in = {}, {}          # peer -> Channel
        self._sent, self._taken = {}, {}      # peer -> slices through that channel so far
        self._made = []
        self._worker = ThreadPoolExecutor(1, thread_name_prefix="topocoll-gossip")
        self._last = None                     # the future of the last exchange handed over
        self._failed = None
        self._lock = threading.Lock()
        weakref.finalize(self, _remove, self._made, self._worker)

    def __repr__(self):
        return (f"Neighborhood(rank={self.rank}, size={self.size}, open={len(self._out)} out "
                f"and {len(self._in)} in)")

    @property
    def channels(self):
        """``(ranks sent to, ranks received from)`` through channels opened so far, sorted."""
        return sorted(self._out), sorted(self._in)

    # -- one exchange -----------------------------------------------------------------------
    def start(self, send, plan, target, *, tag=0, slice_bytes=None, timeout=None,
              iteration=0, background=False):
        """Exchange ``send`` (flat, contiguous) along ``plan`` and write the weighted sum into
        ``target`` (flat; may be ``send`` itself); returns a future. Runs now in this thread
        unless ``background`` or an earlier exchange is still in flight."""
        if self._failed is not None:
            raise ProcessGroupError(f"an earlier neighbor averaging on this group failed "
                                    f"({self._failed}); its shared-memory channels are out of "
                                    "step")
        per = min(slice_elements(slice_bytes or self.slice_bytes, send.element_size()),
                  self.slice_bytes // send.element_size())
        args = (send, plan, target, tag, per, timeout, iteration)
        with self._lock:
            if background or (self._last is not None and not self._last.done()):
                self._last = self._worker.submit(self._run, *args)
                return self._last
        done = Future()
        try:
            done.set_result(self._run(*args))
        except BaseException as exc:
            done.set_exception(exc)
        return done

    def _run(self, send, plan, target, tag, per, timeout, iteration):
        try:
            return self._exchange(send, plan, target, tag, per, timeout, iteration)
        except BaseException as exc:
            self._failed = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise

    def _exchange(self, send, plan, target, tag, per, timeout, iteration):
        n = send.numel()
        count = slice_count(n, per)
        pushed = dict.fromkeys(plan.destinations, 0)
        aliased = target.data_ptr() == send.data_ptr() and n > 0

        def push_ahead():
            for d in plan.destinations:
                while pushed[d] < count and self._push(d, send[pushed[d] * per:
                                                               (pushed[d] + 1) * per],
                                                       tag, pushed[d]):
                    pushed[d] += 1

        for s in range(count):
            lo, hi = s * per, min(n, (s + 1) * per)
            push_ahead()
            waiting = None
            while True:
                late = [j for j in plan.sources if not self._arrived(j)]
                if not late and aliased:    # a slice is overwritten only once it has left
                    late = [d for d in plan.destinations if pushed[d] <= s]
                if not late:
                    break
                waiting = waiting or self._patience(late[0], iteration, s, timeout)
                waiting()
                push_ahead()
            views = [self._received(j, send.dtype, hi - lo, tag, s, iteration)
                     for j in plan.sources]
            combine(plan, send[lo:hi], views, target[lo:hi])
            for j in plan.sources:
                self._consume(j)
        push_ahead()
        for d in plan.destinations:
            waiting = None
            while pushed[d] < count:
                waiting = waiting or self._patience(d, iteration, pushed[d], timeout)
                waiting()
                push_ahead()
        return target

    def _patience(self, peer, iteration, s, timeout):
        where = f"neighbor averaging, iteration {iteration}, slice {s}: rank {peer}"
        return Patience(timeout, self.pids[peer],
                        lambda: ProcessGroupError(f"{where} did not exchange its slice within "
                                                  f"{timeout:g} s (shared memory)"),
                        lambda: ProcessGroupError(f"{where} exited before it exchanged its "
                                                  "slice (shared memory)"))

    # -- channels ---------------------------------------------------------------------------
    def _path(self, u, v):
        return f"{self.prefix}-{u}-{v}"

    def _push(self, peer, data, tag, s):
        """Copy slice ``s`` into the channel to ``peer`` if it has room (True if it did)."""
        ch = self._out.get(peer)
        if ch is None:
            path = self._path(self.rank, peer)
            self._made.append(path)
            # made under another name and renamed: the receiver never maps a half-made file
            ch = Channel(path + "-new", self.window, self._slot, create=True)
            os.rename(path + "-new", path)
            self._out[peer], self._sent[peer] = ch, 0
        j = self._sent[peer]
        if j - int(ch.read[0]) >= ch.slots:
            return False
        k = j % ch.slots
        if data.numel():
            ch.data(k, data.dtype, data.numel()).copy_(data)
        ch.heads[k][0], ch.heads[k][1] = tag, (s << 32) | data.numel()
        ch.written[0] = j + 1          # after the data: x86-64 keeps stores in order
        self._sent[peer] = j + 1
        return True

    def _arrived(self, peer):
        ch = self._in.get(peer)
        if ch is None:
            path = self._path(peer, self.rank)
            try:
                ch = Channel(path, self.window, self._slot, create=False)
            except FileNotFoundError:   # the sender has not sent on this pair yet
                return False
            try:
                os.unlink(path)         # both ends hold it now
            except OSError:
                pass
            self._in[peer], self._taken[peer] = ch, 0
        return int(ch.written[0]) > self._taken[peer]

    def _received(self, peer, dtype, numel, tag, s, iteration):
        ch = self._in[peer]
        k = self._taken[peer] % ch.slots
        got_tag, word = int(ch.heads[k][0]), int(ch.heads[k][1])
        if (got_tag, word >> 32, word & 0xFFFFFFFF) != (tag, s, numel):
            raise ProcessGroupError(
                f"neighbor averaging, iteration {iteration}: rank {peer} sent slice "
                f"{word >> 32} of {word & 0xFFFFFFFF} elements with tag {got_tag} where slice "
                f"{s} of {numel} with tag {tag} was due: the ranks made different calls (the "
                "same topology, iteration, shape, dtype and slice_bytes on every rank, in the "
                "same order?)")
        return ch.data(k, dtype, numel)

    def _consume(self, peer):
        ch = self._in[peer]
        self._taken[peer] += 1
        ch.read[0] = self._taken[peer]
