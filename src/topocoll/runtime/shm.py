"""Shared memory between the ranks of one host: the dataflow engine's links without sockets.

Ranks on one host that exchange packets through gloo pay the loopback network stack for every
byte: a copy into the kernel, TCP, a copy out, and the system calls, on the cores that also
reduce. MPI and NCCL move messages inside a node through shared memory instead; so does this
transport (``ScheduleCollective(..., transport="shared_memory")``, or ``"auto"`` where every
rank of the group shares the host).

Each directed link ``u -> v`` of a rank's program gets a **channel**: a file in ``/dev/shm``
mapped by both ends, holding ``K`` slots of the link's largest packet and two counters, the
packets written (by ``u`` only) and read (by ``v`` only). Both ends take the link's packets in
the same order (:mod:`~topocoll.runtime.program`), so packet ``j`` uses slot ``j mod K``:

* a send copies its packet into the next slot once that slot has been read, then counts it
  written; until there is room it waits in a queue (``isend`` never blocks, as on gloo);
* a receive copies the next written slot into its buffer (a staging buffer or the shard range
  itself) and counts it read; each slot also carries the packet's tag and size, checked.

Nothing runs in the background: every call of the links (posting, testing, waiting) first
moves whatever it can on every channel, and a wait sleeps between tries (from 2 us up to
200 us), so waiting costs little CPU. The engine's argument that it cannot deadlock carries
over: a send here completes as soon as its packet is in the channel, which is no later than
gloo's (which needs the receiver to take it), and a receive completes once the sender has
posted its send and called the links again, which it does in every wait.

The counters are 8-byte stores that x86-64 makes visible in order after the data (its memory
model keeps stores in order, and loads); the transport is refused on other processors. Ranks
use it only when they share the host, its boot, ``/dev/shm`` and their network and process
namespaces: ranks in the namespaces of an emulated network keep the network path, so that the
emulated links stay what they measure. A peer that exits is noticed within a second
(:class:`~topocoll.errors.ProcessGroupError`), as is a wait beyond ``timeout``.

The channels of a program are made on its first call (every rank calls it: a collective), the
files unlinked once every end has mapped them, so nothing is left behind after the run. A rank
killed before that (stopped or hung past the run's limit) cannot unlink its files: under
:func:`~topocoll.runtime.run_local` their names carry the run's tag and the run removes them.

The folder is ``/dev/shm`` unless the environment variable ``TOPOCOLL_SHM_DIR`` names another
(read when this module is imported; every rank of a group must see the same folder): a larger
tmpfs where a container's ``/dev/shm`` is small, or one folder per concurrent job (the test
suite gives each of its workers one).
"""

import errno
import hashlib
import mmap
import os
import platform
import secrets
import socket
import time
from collections import deque

from ..errors import ProcessGroupError, UnsupportedError

__all__ = ["TRANSPORTS", "SHM_DIR", "SharedMemoryLinks", "host_identity", "shared_memory_refusal",
           "open_channels", "encode_identity", "decode_identity", "check_transport",
           "choose_transport", "gather_facts", "Patience", "Channel", "slot_bytes",
           "channel_prefix", "remove_run_files", "remove_stale_channels", "run_tag",
           "set_run_tag"]

#: ``ScheduleCollective(transport=...)``: ``auto`` (the default: shared memory where every rank
#: can, else the network), ``network`` (the process group's links) or ``shared_memory`` (this
#: module; refused where the ranks do not share a host).
TRANSPORTS = ("auto", "network", "shared_memory")
#: Where the channel files go: ``TOPOCOLL_SHM_DIR`` if set, else ``/dev/shm``.
SHM_DIR = os.environ.get("TOPOCOLL_SHM_DIR") or "/dev/shm"
_HEADER = 128          # written counter at 0, read counter at 64: apart, on cache lines;
_CREATOR = 8           # the creating process's id at 8 (stale files: remove_stale_channels)
_SLOT_HEADER = 64      # tag and size of the packet in the slot
_ALIGN = 64
_PROCESSORS = ("x86_64", "AMD64", "amd64")
_FIRST_PAUSE, _LONGEST_PAUSE = 2e-6, 2e-4
_LIVENESS_EVERY = 1.0


def _read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def _inode(path):
    try:
        return os.stat(path).st_ino
    except OSError:
        return None


_SHARED = ("host", "boot", "shm", "mntns", "ipcns", "pidns", "netns")
_WHAT = {"host": "host", "boot": "host boot", "shm": SHM_DIR, "mntns": "mount namespace",
         "ipcns": "IPC namespace", "pidns": "process namespace", "netns": "network namespace"}


def host_identity():
    """What two ranks must have in common to share memory (host name, boot, the ``/dev/shm``
    they see, their mount, IPC, process and network namespaces), whether this process can use
    the transport at all (``usable``: None, or why not), its process id (to notice a peer
    that exits) and a random token (to name channel files)."""
    try:
        # the file system and the folder: ranks given different folders cannot meet
        found = os.stat(SHM_DIR)
        shm = (found.st_dev, found.st_ino)
    except OSError:
        shm = None
    usable = None
    if platform.machine() not in _PROCESSORS:
        usable = (f"the shared-memory transport needs x86-64 (its ordering of stores); this is "
                  f"{platform.machine()}")
    elif shm is None or not os.access(SHM_DIR, os.W_OK):
        usable = f"{SHM_DIR} is not there or not writable"
    return {"host": socket.gethostname(), "boot": _read("/proc/sys/kernel/random/boot_id"),
            "shm": shm, "netns": _inode("/proc/self/ns/net"),
            "pidns": _inode("/proc/self/ns/pid"), "ipcns": _inode("/proc/self/ns/ipc"),
            "mntns": _inode("/proc/self/ns/mnt"), "usable": usable, "pid": os.getpid(),
            "token": secrets.randbits(48)}


def _digest(value):
    return int.from_bytes(hashlib.blake2b(repr(value).encode(), digest_size=7).digest(), "big")


def encode_identity(identity):
    """:func:`host_identity` as integers (each shared fact hashed), for an all_gather."""
    return [_digest(identity[k]) for k in _SHARED] + [
        0 if identity["usable"] is None else 1, identity["pid"], identity["token"]]


def decode_identity(values):
    """The inverse of :func:`encode_identity`, up to the hashing of the shared facts."""
    values = [int(v) for v in values]
    out = dict(zip(_SHARED, values))
    out.update(usable=None if values[len(_SHARED)] == 0 else "cannot",
               pid=values[len(_SHARED) + 1], token=values[len(_SHARED) + 2])
    return out


def shared_memory_refusal(identities, mine=None):
    """Why the ranks of ``identities`` (:func:`host_identity` of each, or their decoded
    encodings) cannot share memory, or None if they can. ``mine``: this rank's own reason, if
    it has one, said in full."""
    if mine is not None:
        return mine
    for rank, other in enumerate(identities):
        if other["usable"] is not None:     # decoded: "cannot", the reason stayed there
            why = (f"it needs x86-64 and a writable {SHM_DIR}" if other["usable"] == "cannot"
                   else other["usable"])
            return f"rank {rank} cannot use shared memory ({why})"
    first = identities[0]
    for rank, other in enumerate(identities[1:], start=1):
        for key in _SHARED:
            if other[key] != first[key]:
                return (f"rank {rank} does not share the {_WHAT[key]} of rank 0 (ranks on other "
                        f"hosts or in an emulated network keep the network path)")
    return None


def _reserve(fd, path, size):
    """Give the new channel file ``size`` bytes of memory now: a full ``/dev/shm`` (64 MiB in
    a container by default) then fails here, with the reason, instead of killing the process
    with SIGBUS when a packet is first written past what is there."""
    try:
        os.posix_fallocate(fd, 0, size)
    except OSError as exc:
        if exc.errno not in (errno.EOPNOTSUPP, errno.EINVAL):
            os.unlink(path)         # (the caller closes fd)
            free = os.statvfs(SHM_DIR)
            raise ProcessGroupError(
                f"shared memory: {SHM_DIR} has no room for a channel of {size} bytes "
                f"({free.f_bavail * free.f_frsize} free; {exc.strerror}): enlarge it (docker: "
                "--shm-size), point TOPOCOLL_SHM_DIR at a larger tmpfs folder or give "
                "transport='network'") from None
        os.ftruncate(fd, size)      # a file system without fallocate: sized, not reserved


class Channel:
    """One directed link's slots in a mapped file (see the module text)."""

    def __init__(self, path, slots, slot_bytes, create):
        self.slots, self.slot_bytes = slots, slot_bytes
        size = _HEADER + slots * slot_bytes
        flags = os.O_RDWR | (os.O_CREAT | os.O_EXCL if create else 0)
        fd = os.open(path, flags, 0o600)
        try:
            if create:
                _reserve(fd, path, size)
            elif os.fstat(fd).st_size != size:     # mapping past its end would crash on use
                raise ProcessGroupError(
                    f"shared memory: the channel {os.path.basename(path)} holds "
                    f"{os.fstat(fd).st_size} bytes, this rank expected {size}: the ranks run "
                    "different programs (the same schedule, size and slice_bytes on every "
                    "rank?)")
            self.map = mmap.mmap(fd, size)
        finally:
            os.close(fd)
        import numpy as np

        self.written = np.frombuffer(self.map, dtype=np.int64, count=1, offset=0)
        self.read = np.frombuffer(self.map, dtype=np.int64, count=1, offset=64)
        if create:
            np.frombuffer(self.map, dtype=np.int64, count=1, offset=_CREATOR)[0] = os.getpid()
        self.heads = [np.frombuffer(self.map, dtype=np.int64, count=2,
                                    offset=_HEADER + k * slot_bytes) for k in range(slots)]

    def data(self, k, dtype, numel):
        import torch

        if not numel:       # (frombuffer refuses a count of 0)
            return torch.empty(0, dtype=dtype)
        return torch.frombuffer(self.map, dtype=dtype, count=numel,
                                offset=_HEADER + k * self.slot_bytes + _SLOT_HEADER)


class Patience:
    """One wait's pauses between tries: from 2 us doubling up to 200 us; every second it checks
    that the peer's process ``pid`` lives (else raises ``gone()``), and past ``timeout`` seconds
    (None: no limit) it raises ``late()``."""

    __slots__ = ("timeout", "pid", "late", "gone", "pause", "started", "checked")

    def __init__(self, timeout, pid, late, gone):
        self.timeout, self.pid, self.late, self.gone = timeout, pid, late, gone
        self.pause = _FIRST_PAUSE
        self.started = self.checked = time.monotonic()

    def __call__(self):
        now = time.monotonic()
        if self.timeout is not None and now - self.started > self.timeout:
            raise self.late()
        if now - self.checked > _LIVENESS_EVERY:
            self.checked = now
            try:
                os.kill(self.pid, 0)
            except ProcessLookupError:
                raise self.gone() from None
            except PermissionError:    # alive, someone else's
                pass
        time.sleep(self.pause)
        self.pause = min(2 * self.pause, _LONGEST_PAUSE)


class _Request:
    __slots__ = ("buf", "tag", "op", "done")

    def __init__(self, buf, tag, op):
        self.buf, self.tag, self.op, self.done = buf, tag, op, False


def slot_bytes(numel, itemsize):
    raw = _SLOT_HEADER + numel * itemsize
    return -(-raw // _ALIGN) * _ALIGN


# Set in each process that run_local starts: the run's tag, which the names of its
# shared-memory files carry, so that run_local removes the files of ranks it had to kill.
_run_tag = None


def set_run_tag(tag):
    """Mark this process a rank of the :func:`~topocoll.runtime.run_local` run ``tag``."""
    global _run_tag
    _run_tag = tag


def run_tag():
    """The tag of the :func:`~topocoll.runtime.run_local` run this process is a rank of, or
    None."""
    return _run_tag


def channel_prefix(name):
    """Where the channel files named ``name`` go: ``/dev/shm/topocoll-NAME``, under
    :func:`~topocoll.runtime.run_local` ``/dev/shm/topocoll-TAG-NAME`` with the run's tag, so
    that the run removes what its ranks could not (:func:`remove_run_files`)."""
    tag = run_tag()
    return os.path.join(SHM_DIR, f"topocoll-{tag}-{name}" if tag else f"topocoll-{name}")


def remove_run_files(tag):
    """Remove the channel files of the :func:`~topocoll.runtime.run_local` run ``tag``: a
    rank killed (stopped, hung past the limit) between making a file and its peer mapping it
    leaves the file, which nothing else would ever remove."""
    try:
        names = os.listdir(SHM_DIR)
    except OSError:
        return
    for name in names:
        if name.startswith(f"topocoll-{tag}-"):
            try:
                os.unlink(os.path.join(SHM_DIR, name))
            except OSError:
                pass


def remove_stale_channels():
    """Remove the channel files in :data:`SHM_DIR` whose creating process has exited; returns
    their names. A rank killed between making a file and its peer mapping it leaves the file;
    :func:`remove_run_files` removes those of a :func:`~topocoll.runtime.run_local` run, and
    this (called whenever a rank opens channels) those of any other launcher, torchrun's
    included. A file whose creator is alive, or that does not yet name one, is kept."""
    removed = []
    try:
        names = [n for n in os.listdir(SHM_DIR) if n.startswith("topocoll-")]
    except OSError:
        return removed
    for name in names:
        path = os.path.join(SHM_DIR, name)
        try:
            with open(path, "rb") as f:
                head = f.read(_CREATOR + 8)
        except OSError:
            continue
        if len(head) < _CREATOR + 8:
            continue
        pid = int.from_bytes(head[_CREATOR:], "little", signed=True)
        if pid > 0 and not _alive(pid):
            try:
                os.unlink(path)
                removed.append(name)
            except OSError:
                pass
    return removed


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:      # someone else's process: alive
        return True
    return True


def open_channels(program, itemsize, node, name, barrier):
    """The channels of this rank's ``program`` of ``itemsize``-byte elements (every rank calls
    it, collectively): ``(outgoing, incoming)``, peer -> channel. ``name`` is the same on every
    rank and on no other program (a session and the tensor's size); ``barrier()`` waits for
    every rank."""
    prefix = channel_prefix(name)
    remove_stale_channels()

    def path(u, v):
        return f"{prefix}-{u}-{v}"

    def layout(ops, idx):
        return min(program.window, len(idx)), slot_bytes(max(ops[i].numel for i in idx),
                                                          itemsize)

    outgoing = {}
    made = []
    try:
        for peer, idx in program.send_links.items():
            slots, size = layout(program.sends, idx)
            made.append(path(node, peer))
            outgoing[peer] = Channel(made[-1], slots, size, create=True)
        barrier()
        incoming = {}
        for peer, idx in program.recv_links.items():
            slots, size = layout(program.recvs, idx)
            try:
                incoming[peer] = Channel(path(peer, node), slots, size, create=False)
            except FileNotFoundError:
                # the peer failed between the barriers and removed what it made
                raise ProcessGroupError(
                    f"shared memory: the channel {os.path.basename(path(peer, node))} was "
                    f"removed before this rank mapped it: node {peer} stopped while opening "
                    "its channels (its own error says why)") from None
        barrier()
    finally:
        for p in made:       # mapped by both ends now (or failed): the files can go
            try:
                os.unlink(p)
            except OSError:
                pass
    return outgoing, incoming


class SharedMemoryLinks:
    """The engine's links (:mod:`topocoll.runtime.engine`) over shared-memory channels; one
    per compiled program, kept between calls (the packet counts continue)."""

    def __init__(self, outgoing, incoming, rank_map, pids, timeout=None):
        self.outgoing, self.incoming = outgoing, incoming
        self.rank_map, self.pids, self.timeout = rank_map, pids, timeout
        self.sent = dict.fromkeys(outgoing, 0)
        self.taken = dict.fromkeys(incoming, 0)
        self.queued = {peer: deque() for peer in outgoing}
        self.posted = {peer: deque() for peer in incoming}

    # -- the links interface ------------------------------------------------------------------
    def isend(self, buf, peer, tag, op):
        request = _Request(buf, tag, op)
        self.queued[peer].append(request)
        self._push(peer)
        return request

    def irecv(self, buf, peer, tag, op):
        request = _Request(buf, tag, op)
        self.posted[peer].append(request)
        self._pull(peer)
        return request

    def test(self, request):
        if not request.done:
            self.progress()
        return request.done

    def wait(self, request, op):
        self.progress()
        if request.done:            # the common case: no pauses to prepare
            return
        patience = Patience(
            self.timeout, self.pids[self.rank_map[op.peer]],
            lambda: ProcessGroupError(
                f"step {op.step}: rank {self.rank_map[op.peer]} (node {op.peer}) did not "
                f"exchange its message within {self.timeout:g} s (shared memory)"),
            lambda: ProcessGroupError(
                f"step {op.step}: rank {self.rank_map[op.peer]} (node {op.peer}) exited "
                "before it exchanged its message (shared memory)"))
        while not request.done:
            self.progress()
            if request.done:
                return
            patience()

    # -- moving packets -----------------------------------------------------------------------
    def progress(self):
        for peer in self.queued:
            if self.queued[peer]:
                self._push(peer)
        for peer in self.posted:
            if self.posted[peer]:
                self._pull(peer)

    def _push(self, peer):
        channel, queue = self.outgoing[peer], self.queued[peer]
        while queue and self.sent[peer] - int(channel.read[0]) < channel.slots:
            request = queue.popleft()
            j = self.sent[peer]
            k = j % channel.slots
            buf = request.buf
            if buf.numel():                  # an empty packet still takes its turn
                channel.data(k, buf.dtype, buf.numel()).copy_(buf)
            channel.heads[k][0], channel.heads[k][1] = request.tag, buf.numel()
            channel.written[0] = j + 1       # after the data: x86-64 keeps stores in order
            self.sent[peer] = j + 1
            request.done = True

    def _pull(self, peer):
        channel, posted = self.incoming[peer], self.posted[peer]
        while posted and int(channel.written[0]) > self.taken[peer]:
            request = posted.popleft()
            j = self.taken[peer]
            k = j % channel.slots
            buf = request.buf
            tag, numel = int(channel.heads[k][0]), int(channel.heads[k][1])
            if tag != request.tag or numel != buf.numel():
                raise ProcessGroupError(
                    f"step {request.op.step}: rank {self.rank_map[peer]} (node {peer}) sent "
                    f"packet {tag} of {numel} elements where packet {request.tag} of "
                    f"{buf.numel()} was due: the ranks run different programs (the same "
                    f"schedule, size and slice_bytes on every rank?)")
            if numel:
                buf.copy_(channel.data(k, buf.dtype, numel))
            channel.read[0] = j + 1
            self.taken[peer] = j + 1
            request.done = True


def gather_facts(gather):
    """Every rank's :func:`host_identity` (decoded) and why they cannot share memory (None if
    they can). ``gather(values)`` returns every rank's list of integers (a collective)."""
    mine = host_identity()
    facts = [decode_identity(row) for row in gather(encode_identity(mine))]
    return facts, shared_memory_refusal(facts, mine["usable"])


def choose_transport(transport, gather):
    """``(transport, facts of every rank or None)`` for ``transport`` ``auto`` or
    ``shared_memory``: shared memory where every rank can use it, else the network (``auto``)
    or :class:`~topocoll.errors.UnsupportedError` with the reason (:func:`gather_facts`)."""
    facts, refusal = gather_facts(gather)
    if refusal is None:
        return "shared_memory", facts
    if transport == "auto":
        return "network", None
    raise UnsupportedError(f"transport shared_memory: {refusal}")


def check_transport(transport):
    if transport not in TRANSPORTS:
        raise UnsupportedError(f"transport must be one of {', '.join(TRANSPORTS)}, got "
                               f"{transport!r}")
    return transport
