"""Neighbor averaging on torch.distributed: ``x_i <- sum_j W_k[i, j] x_j``.

Every rank sends its tensor to the ranks ``j`` whose row of ``W_k`` weighs it (``W_k[j, i] != 0``)
and receives from the ranks it weighs (``W_k[i, j] != 0``), with point-to-point sends and
receives; nothing else crosses the network, and no rank waits for ranks it does not talk to
(but for the first call of a group, which agrees on the transport: where every rank shares
this host the slices go through shared memory, :mod:`topocoll.runtime.neighborhood`, with the
same results bit for bit; elsewhere, and with ``transport="network"``, through the process
group as described here).

The tensor travels in slices of about ``slice_bytes`` (1 MiB by default): every slice's sends
and receives to and from every neighbour are posted at once, in slice order on every link, and
the weighted sum is applied slice by slice as the slices arrive, so that the combining of one
slice overlaps the transfer of the next. Where the result overwrites the tensor being sent
(``out=tensor``), a slice is written only once it has left. The result is combined in a fixed
order, so it is reproducible bit for bit (and the same bits whatever the slicing)::

    out = W[i, i] * x_i                       (skipped if W[i, i] == 0)
    for j in ascending order, j != i, W[i, j] != 0:
        out = out + W[i, j] * x_j             (each product rounded, then the sum)

A static topology is one matrix; a dynamic one is a :class:`topocoll.gossip.GossipTopology`
(``matrix(k)``) or a callable ``k -> W``; ``iteration`` picks ``W_k``. Every rank of the group
must call with the same topology, iteration, shape and dtype, in the same order.
Bluefog's call form (``self_weight=``, ``neighbor_weights=``, ``send_neighbors=``, each rank
its own part) builds the same per-rank plan, checked across the ranks first
(:mod:`topocoll.runtime.bluefog`); the exchange and the sum are the ones above.

Receive buffers come from a per-process pool (:data:`BUFFER_POOL`): a call takes buffers of its
tensor's shape, dtype and device and gives them back when its result is combined, so steady
gossip allocates (and page-faults) nothing; :func:`release_buffers` empties the pool. A handle
dropped without :meth:`NeighborHandle.wait` finishes its messages when it is collected, so the
next call between the same ranks is not confused by them.

>>> import torch
>>> from topocoll.runtime import single_process_group
>>> with single_process_group():
...     neighbor_allreduce(torch.tensor([2.0, 4.0]), [[0.5]]).tolist()
[1.0, 2.0]
"""

from ..errors import InputTypeError, ProcessGroupError
from .launch import group_info, report_iteration
from .bluefog import call_plan
from .mixing import combine
from .neighborhood import neighborhood
from .program import DEFAULT_SLICE_BYTES, slice_elements

__all__ = ["neighbor_allreduce", "NeighborHandle", "release_buffers", "check_tensor",
           "check_call", "post_exchange"]


class BufferPool:
    """Free tensors by (shape, dtype, device); at most :attr:`keep` of each kind are kept."""

    keep = 16

    def __init__(self):
        self._free = {}

    def take(self, like, count):
        import torch

        free = self._free.get((tuple(like.shape), like.dtype, like.device), [])
        out = [free.pop() for _ in range(min(count, len(free)))]
        return out + [torch.empty_like(like, memory_format=torch.contiguous_format)
                      for _ in range(count - len(out))]

    def give(self, tensors):
        for t in tensors:
            free = self._free.setdefault((tuple(t.shape), t.dtype, t.device), [])
            if len(free) < self.keep:
                free.append(t)

    def held(self):
        """The buffers kept for reuse now."""
        return [t for tensors in self._free.values() for t in tensors]

    def clear(self):
        self._free.clear()


#: This process's pool of receive buffers (see the module docstring).
BUFFER_POOL = BufferPool()


def release_buffers():
    """Free the receive buffers that :func:`neighbor_allreduce` keeps for reuse."""
    BUFFER_POOL.clear()


class NeighborHandle:
    """An in-flight :func:`neighbor_allreduce`; :meth:`wait` returns the averaged tensor.

    Dropping a handle without waiting is safe: its messages are finished when it is collected
    (the result is discarded).
    """

    def __init__(self, works, send, recvs, plan, *, out, bounds, aliased, iteration=None,
                 pooled=False, timeout=None):
        self._works = works           # per slice: ([receives, by source], [sends])
        self._timeout = timeout
        self._send = send
        self._recvs = recvs
        self._plan = plan
        self._out = out
        self._bounds = bounds
        self._aliased = aliased
        self._result = None
        self._iteration = iteration
        self._pooled = pooled

    def is_completed(self):
        """True when every message of this rank has been sent and received."""
        return self._result is not None or all(w.is_completed() for recvs, sends in self._works
                                               for w in recvs + sends)

    def _wait_transfers(self):
        """Finish the messages without combining (the result is dropped)."""
        works, self._works = self._works, []
        for recvs, sends in works:
            for w in recvs + sends:
                w.wait()
        if self._iteration is not None:
            report_iteration(self._iteration)

    def wait(self):
        """Block until the messages are through, combining slice by slice as they arrive, and
        return the result (idempotent)."""
        if self._result is None:
            import torch

            works, self._works = self._works, []
            out = self._out if self._out is not None else torch.empty_like(self._send)
            # a strided out is filled through a contiguous result, copied at the end
            target = out if out.is_contiguous() else torch.empty_like(self._send)
            flat_out, flat_send = target.view(-1), self._send.view(-1)
            flat_recvs = [r.view(-1) for r in self._recvs]
            for s, ((lo, hi), (recvs, sends)) in enumerate(zip(zip(self._bounds,
                                                                   self._bounds[1:]), works)):
                for j, w in zip(self._plan.sources, recvs):
                    self._wait(w, j, s)
                if self._aliased:         # out is what is being sent: let the slice leave
                    for j, w in zip(self._plan.destinations, sends):
                        self._wait(w, j, s)
                combine(self._plan, flat_send[lo:hi], [r[lo:hi] for r in flat_recvs],
                         flat_out[lo:hi])
            if not self._aliased:        # (a gloo request must not be waited for twice)
                for s, (_, sends) in enumerate(works):
                    for j, w in zip(self._plan.destinations, sends):
                        self._wait(w, j, s)
            if target is not out:
                out.copy_(target)
            if self._iteration is not None:
                report_iteration(self._iteration)
            self._result = out
            self._release()
        return self._result

    def _wait(self, work, peer, s):
        """Wait for the message of slice ``s`` to or from ``peer``, within the timeout: a peer
        that neither exits nor answers (stopped, hung) is named, not waited for without end."""
        if self._timeout is None:
            work.wait()
            return
        from datetime import timedelta

        try:
            done = work.wait(timedelta(seconds=self._timeout))
        except RuntimeError as exc:   # gloo says "Timed out waiting ..."
            if "imed out" not in str(exc):
                raise
            done = False
        if done is False:
            raise ProcessGroupError(f"neighbor averaging, iteration {self._iteration or 0}, "
                                    f"slice {s}: rank {peer} did not exchange its slice within "
                                    f"{self._timeout:g} s (network)")

    def _release(self):
        if self._pooled and self._recvs:
            BUFFER_POOL.give(self._recvs)
        self._send = self._recvs = None

    def __del__(self):
        # Messages still in flight would be matched by the next call between the same ranks
        # (same tag): finish them. Nothing to do once waited, or if torch is shutting down.
        if getattr(self, "_works", None):
            try:
                self._wait_transfers()
                self._release()
            except Exception:   # the group is gone (shutdown): there is no next call either
                pass


class _SharedHandle(NeighborHandle):
    """An in-flight averaging through shared memory (:mod:`topocoll.runtime.neighborhood`):
    the exchange writes into ``target`` (the snapshot being sent, or ``out`` itself); ``wait``
    copies it into ``out`` where they differ."""

    def __init__(self, future, target, *, out, shape, iteration=None):
        self._future, self._target, self._out = future, target, out
        self._shape, self._iteration = shape, iteration
        self._result = None

    def is_completed(self):
        return self._result is not None or self._future.done()

    def _wait_transfers(self):
        self._future.result()
        if self._iteration is not None:
            report_iteration(self._iteration)
        self._iteration = None

    def wait(self):
        if self._result is None:
            self._wait_transfers()
            result = self._target.view(self._shape)
            if self._out is not None and self._out.data_ptr() != self._target.data_ptr():
                self._out.copy_(result)
                result = self._out
            self._result, self._target = result, None
        return self._result

    def __del__(self):
        pass    # the exchange runs to its end in the group's thread, waited for or not


def check_tensor(tensor, what="tensor"):
    """Refuse anything but a dense floating-point or complex torch tensor (``what`` names it)."""
    import torch

    if not isinstance(tensor, torch.Tensor):
        raise InputTypeError(f"{what} must be a torch.Tensor, got {type(tensor).__name__}")
    if not (tensor.is_floating_point() or tensor.is_complex()):
        raise InputTypeError(f"{what} must have a floating-point dtype (weights are reals), "
                             f"got {tensor.dtype}")
    if tensor.layout is not torch.strided:
        raise InputTypeError(f"{what} must be a dense (strided) tensor, got {tensor.layout}")


#: Slices of one message at most (each has a tag of its own: ``tag * MAX_SLICES + slice``).
MAX_SLICES = 1 << 12
#: User tags are below this, so that every slice tag is below 2^30, clear of the schedule
#: executor's tags (2^30 and up).
TAG_LIMIT = 1 << 18


def slice_bounds(numel, itemsize, slice_bytes):
    """Element bounds ``[0, ..., numel]`` of the slices of a tensor: ``ceil(bytes /
    slice_bytes)`` near-equal slices, at most :data:`MAX_SLICES` (larger ones beyond that).

    >>> slice_bounds(10, 4, 16)
    [0, 3, 6, 10]
    """
    per = slice_elements(slice_bytes, itemsize)
    k = min(MAX_SLICES, max(1, -(-numel // per)))
    return [j * numel // k for j in range(k + 1)]


def check_call(tensor, *, out, tag, slice_bytes, timeout):
    """The checks of a neighbor-averaging call's tensor, ``out``, ``tag``, ``slice_bytes``
    and ``timeout``, before anything is taken or sent."""
    check_tensor(tensor)
    _check_tag(tag)
    if slice_bytes is not None:
        slice_elements(slice_bytes, 1)   # checks it before any buffer is taken
    if out is not None:
        check_tensor(out, "out")
        if out.shape != tensor.shape or out.dtype != tensor.dtype:
            raise InputTypeError(f"out must match tensor: shape {tuple(tensor.shape)}, dtype "
                                 f"{tensor.dtype}; got {tuple(out.shape)}, {out.dtype}")
    if timeout is not None and not timeout > 0:
        raise InputTypeError(f"timeout must be a positive number of seconds, got {timeout!r}")


def _check_tag(tag):
    if isinstance(tag, bool) or not isinstance(tag, int) or not 0 <= tag < TAG_LIMIT:
        raise InputTypeError(f"tag must be an integer in [0, {TAG_LIMIT}), got {tag!r}")


def _shares_memory(a, b):
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


def post_exchange(send, plan, recvs, group, tag, *, out=None, iteration=None, pooled=False,
                  slice_bytes=None, neighborhood=None, timeout=None):
    """Post the receives and sends of ``plan`` for the snapshot ``send`` (not copied), slice
    by slice (see the module), into ``recvs``; or, given a :class:`~topocoll.runtime.
    neighborhood.Neighborhood`, start the exchange through its shared memory in its thread
    (``recvs`` unused; the sum is formed in ``send`` and copied into ``out`` on ``wait``).
    Everything after ``tag`` is keyword-only."""
    import torch.distributed as dist

    if iteration is not None:
        report_iteration(iteration, entering=True)
    if neighborhood is not None:
        flat = send.view(-1)
        future = neighborhood.start(flat, plan, flat, tag=tag, slice_bytes=slice_bytes,
                                    timeout=timeout, iteration=iteration or 0,
                                    background=True)
        return _SharedHandle(future, flat, out=out, shape=send.shape, iteration=iteration)
    pg = group if group is not None else dist.group.WORLD   # ranks in W are its ranks
    flat = send.view(-1)
    flat_recvs = [r.view(-1) for r in recvs]
    bounds = slice_bounds(flat.numel(), flat.element_size(),
                          DEFAULT_SLICE_BYTES if slice_bytes is None else slice_bytes)
    works = []
    # one tag per slice: gloo matches a receive by (peer, tag), and several pending receives
    # with one tag from one peer do not match in order
    for k, (lo, hi) in enumerate(zip(bounds, bounds[1:])):
        t = tag * MAX_SLICES + k
        rw = [pg.recv([buf[lo:hi]], j, t) for j, buf in zip(plan.sources, flat_recvs)]
        sw = [pg.send([flat[lo:hi]], j, t) for j in plan.destinations]
        works.append((rw, sw))
    aliased = out is not None and _shares_memory(out, send)
    return NeighborHandle(works, send, recvs, plan, out=out, bounds=bounds, aliased=aliased,
                          iteration=iteration, pooled=pooled, timeout=timeout)


def _average_shared(nb, send, plan, out, *, tag, iteration, slice_bytes, timeout):
    """A synchronous averaging through shared memory, in this thread (if nothing else of the
    group's is in flight), straight into ``out`` where it can."""
    import torch

    report_iteration(iteration, entering=True)
    target = out if out is not None and out.is_contiguous() else torch.empty_like(send)
    future = nb.start(send.view(-1), plan, target.view(-1), tag=tag, slice_bytes=slice_bytes,
                      timeout=timeout, iteration=iteration)
    return _SharedHandle(future, target.view(-1), out=out, shape=send.shape,
                         iteration=iteration).wait()


def neighbor_allreduce(tensor, topology=None, iteration=0, *, self_weight=None,
                       neighbor_weights=None, send_neighbors=None, check=None,
                       enable_topo_check=None, name=None, async_op=False, group=None, tag=0,
                       out=None, slice_bytes=None, transport="auto", timeout=None):
    """Weighted neighbor averaging: rank ``i`` gets ``sum_j W_k[i, j] x_j``.

    The weights come from ``topology`` (every rank reads the same matrices) or, in Bluefog's
    call form, from this rank's ``self_weight``, ``neighbor_weights`` and ``send_neighbors``
    (:mod:`topocoll.runtime.bluefog`; give one form or the other).

    Parameters
    ----------
    tensor : torch.Tensor
        This rank's ``x_i`` (floating point; same shape and dtype on every rank). An async call
        sends a copy, so the caller may change ``tensor`` before ``wait()``.
    topology : GossipTopology, callable or array_like, optional
        A :class:`topocoll.gossip.GossipTopology`, a callable ``k -> W`` or a fixed ``(n, n)``
        matrix, ``n`` = the group's size (else :class:`~topocoll.errors.ProcessGroupError`).
        Row ``i`` holds the weights rank ``i`` applies. Any real weights are allowed. Omitted
        in Bluefog's form.
    iteration : int
        ``k``: which ``W_k`` of a dynamic topology (taken mod its period); in Bluefog's form
        only what a timed-out :func:`~topocoll.runtime.run_local` reports.
    self_weight, neighbor_weights, send_neighbors : optional
        Bluefog's form (by keyword): this rank's own weight, ``{source rank: weight}`` of the
        ranks it receives from, and the ranks it sends to (omitted: the ranks whose
        ``neighbor_weights`` name it, learned by the check). ``self_weight`` and
        ``neighbor_weights`` go together; see :func:`~topocoll.runtime.bluefog.bluefog_plan`.
    check, enable_topo_check : bool, optional
        Bluefog's form only: before exchanging, gather every rank's lists (one ``all_gather``
        of ``1 + 2 ceil(n/8)`` bytes per rank, blocking even with ``async_op``) and raise on
        every rank when a send has no matching receive (default on; ``enable_topo_check`` is
        Bluefog's name for it). Every rank must pass the same.
    name : str, optional
        Bluefog's name of the call; labels error messages only.
    async_op : bool
        Return a :class:`NeighborHandle` at once instead of the result; its ``wait()`` returns
        the result. Compute may overlap the transfer in between.
    group : ProcessGroup, optional
        The group (default: the world); ranks in ``W`` are ranks of this group.
    tag : int
        Message tag in ``[0, 2^18)``; concurrent calls between the same ranks need distinct
        tags (slice ``k`` travels with tag ``tag * 4096 + k``).
    out : torch.Tensor, optional
        Where to write the result (may be ``tensor`` itself); default a new tensor.
    slice_bytes : int, optional
        Bytes of one slice (default 1 MiB on every machine, so that every rank cuts the same
        slices; see the module; at most 1 MiB through shared memory). Every rank must use the
        same.
    transport : {"auto", "network", "shared_memory"}
        How the slices travel: ``auto`` (the default) through shared memory where every rank
        of the group shares this host (:mod:`topocoll.runtime.neighborhood`), else through the
        process group; ``network`` always through the process group; ``shared_memory``
        refused with the reason where the ranks cannot. The first call of a group with
        ``auto`` or ``shared_memory`` agrees on it (collective); every rank must pass the same.
    timeout : float, optional
        Seconds to wait for a peer's slice; past it :class:`~topocoll.errors.
        ProcessGroupError` names the peer, the iteration and the slice (default: no limit
        through shared memory, where a peer that exits is named within a second; the process
        group's own timeout on the network path).

    Returns
    -------
    torch.Tensor or NeighborHandle

    Raises
    ------
    ProcessGroupError
        No process group, or the topology's size is not the group's size; a peer that did
        not exchange its slice within ``timeout`` (or exited); in Bluefog's form with the
        check, a send without its receive (naming the pair) or bad arguments on another rank.
    TopologyError
        ``W_k`` is not square or has a non-finite entry; in Bluefog's form, a rank outside
        the group or this rank in its own lists, a repeated send, a non-finite weight.
    InputTypeError
        ``tensor`` is not a floating-point torch tensor; ``out`` does not match it; both a
        topology and Bluefog's keywords, or neither, or Bluefog's keywords without their
        partners (``neighbor_weights`` without ``self_weight``, ...).
    UnsupportedError
        An unknown ``transport``, or ``shared_memory`` where the ranks cannot share memory
        (the message says why).

    Examples
    --------
    >>> import torch
    >>> neighbor_allreduce(torch.ones(2), [[1.0]])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    topocoll.errors.ProcessGroupError: no torch.distributed process group: ...
    """
    import torch

    check_call(tensor, out=out, tag=tag, slice_bytes=slice_bytes, timeout=timeout)
    rank, size = group_info(group)
    plan = call_plan(topology, iteration, rank, size, self_weight=self_weight,
                     neighbor_weights=neighbor_weights, send_neighbors=send_neighbors,
                     check=check, enable_topo_check=enable_topo_check, name=name, group=group,
                     timeout=timeout)
    nb = neighborhood(group, transport, timeout)
    with torch.no_grad():
        send = tensor.detach()
        if async_op or not send.is_contiguous():
            # the caller may change tensor before wait(): send a snapshot
            send = send.clone(memory_format=torch.contiguous_format)
        if nb is not None:
            if async_op:
                return post_exchange(send, plan, None, group, tag, out=out,
                                     iteration=iteration, slice_bytes=slice_bytes,
                                     neighborhood=nb, timeout=timeout)
            return _average_shared(nb, send, plan, out, tag=tag, iteration=iteration,
                                   slice_bytes=slice_bytes, timeout=timeout)
        recvs = BUFFER_POOL.take(send, len(plan.sources))
        handle = post_exchange(send, plan, recvs, group, tag, out=out, iteration=iteration,
                               pooled=True, slice_bytes=slice_bytes, timeout=timeout)
        return handle if async_op else handle.wait()
