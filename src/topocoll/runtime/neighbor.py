"""Neighbor averaging on torch.distributed: ``x_i <- sum_j W_k[i, j] x_j``.

Every rank sends its tensor to the ranks ``j`` whose row of ``W_k`` weighs it (``W_k[j, i] != 0``)
and receives from the ranks it weighs (``W_k[i, j] != 0``), with point-to-point ``isend`` /
``irecv``; nothing else crosses the network, and no rank waits for ranks it does not talk to.
The result is combined in a fixed order, so it is reproducible bit for bit::

    out = W[i, i] * x_i                       (skipped if W[i, i] == 0)
    for j in ascending order, j != i, W[i, j] != 0:
        out = out + W[i, j] * x_j             (each product rounded, then the sum)

A static topology is one matrix; a dynamic one is a :class:`topocoll.gossip.GossipTopology`
(``matrix(k)``) or a callable ``k -> W``; ``iteration`` picks ``W_k``. Every rank of the group
must call with the same topology, iteration, shape and dtype, in the same order.

Receive buffers come from a per-process pool (:data:`_POOL`): a call takes buffers of its
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

from ..errors import InputTypeError
from .launch import group_info, report_iteration
from .mixing import as_mixing

__all__ = ["neighbor_allreduce", "NeighborHandle", "release_buffers"]


class _BufferPool:
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

    def clear(self):
        self._free.clear()


#: This process's pool of receive buffers (see the module docstring).
_POOL = _BufferPool()


def release_buffers():
    """Free the receive buffers that :func:`neighbor_allreduce` keeps for reuse."""
    _POOL.clear()


class NeighborHandle:
    """An in-flight :func:`neighbor_allreduce`; :meth:`wait` returns the averaged tensor.

    Dropping a handle without waiting is safe: its messages are finished when it is collected
    (the result is discarded).
    """

    def __init__(self, works, send, recvs, plan, out, iteration=None, pooled=False):
        self._works = works
        self._send = send
        self._recvs = recvs
        self._plan = plan
        self._out = out
        self._result = None
        self._iteration = iteration
        self._pooled = pooled

    def is_completed(self):
        """True when every message of this rank has been sent and received."""
        return self._result is not None or all(w.is_completed() for w in self._works)

    def _wait_transfers(self):
        """Finish the messages without combining (the result is dropped)."""
        works, self._works = self._works, []
        for w in works:
            w.wait()
        if self._iteration is not None:
            report_iteration(self._iteration)

    def wait(self):
        """Block until the messages are through, combine, and return the result (idempotent)."""
        if self._result is None:
            self._wait_transfers()
            self._result = _combine(self._plan, self._send, self._recvs, self._out)
            self._release()
        return self._result

    def _release(self):
        if self._pooled and self._recvs:
            _POOL.give(self._recvs)
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


def _combine(plan, x, recvs, out):
    """``out = W[i,i] x + sum_j W[i,j] x_j`` in the documented order (see the module).

    ``recvs`` are scratch buffers: they are scaled in place.
    """
    import torch

    if out is None:
        out = torch.empty_like(x)
    first = True
    if plan.self_weight != 0.0:
        torch.mul(x, plan.self_weight, out=out)
        first = False
    for w, xj in zip(plan.weights, recvs):
        # Two rounded operations rather than add(..., alpha=w): a fused multiply-add would
        # differ from the documented order in the last bit.
        if first:
            torch.mul(xj, w, out=out)
            first = False
        else:
            out.add_(xj.mul_(w))
    return out.zero_() if first else out


def _peer(group, rank):
    import torch.distributed as dist

    return rank if group is None or group is dist.group.WORLD else dist.get_global_rank(group,
                                                                                        rank)


def _check_tensor(tensor, what="tensor"):
    import torch

    if not isinstance(tensor, torch.Tensor):
        raise InputTypeError(f"{what} must be a torch.Tensor, got {type(tensor).__name__}")
    if not (tensor.is_floating_point() or tensor.is_complex()):
        raise InputTypeError(f"{what} must have a floating-point dtype (weights are reals), "
                             f"got {tensor.dtype}")
    if tensor.layout is not torch.strided:
        raise InputTypeError(f"{what} must be a dense (strided) tensor, got {tensor.layout}")


def _launch(send, plan, recvs, group, tag, out=None, iteration=None, pooled=False):
    """Post the receives and sends of ``plan`` for the snapshot ``send`` (not copied)."""
    import torch.distributed as dist

    if iteration is not None:
        report_iteration(iteration, entering=True)
    works = [dist.irecv(buf, src=_peer(group, j), group=group, tag=tag)
             for j, buf in zip(plan.sources, recvs)]
    works += [dist.isend(send, dst=_peer(group, j), group=group, tag=tag)
              for j in plan.destinations]
    return NeighborHandle(works, send, recvs, plan, out, iteration, pooled)


def neighbor_allreduce(tensor, topology, iteration=0, *, async_op=False, group=None, tag=0,
                       out=None):
    """Weighted neighbor averaging: rank ``i`` gets ``sum_j W_k[i, j] x_j``.

    Parameters
    ----------
    tensor : torch.Tensor
        This rank's ``x_i`` (floating point; same shape and dtype on every rank). An async call
        sends a copy, so the caller may change ``tensor`` before ``wait()``.
    topology : GossipTopology, callable or array_like
        A :class:`topocoll.gossip.GossipTopology`, a callable ``k -> W`` or a fixed ``(n, n)``
        matrix, ``n`` = the group's size (else :class:`~topocoll.errors.ProcessGroupError`).
        Row ``i`` holds the weights rank ``i`` applies. Any real weights are allowed.
    iteration : int
        ``k``: which ``W_k`` of a dynamic topology (taken mod its period).
    async_op : bool
        Return a :class:`NeighborHandle` at once instead of the result; its ``wait()`` returns
        the result. Compute may overlap the transfer in between.
    group : ProcessGroup, optional
        The group (default: the world); ranks in ``W`` are ranks of this group.
    tag : int
        Message tag; concurrent calls between the same ranks need distinct tags.
    out : torch.Tensor, optional
        Where to write the result (may be ``tensor`` itself); default a new tensor.

    Returns
    -------
    torch.Tensor or NeighborHandle

    Raises
    ------
    ProcessGroupError
        No process group, or the topology's size is not the group's size.
    TopologyError
        ``W_k`` is not square or has a non-finite entry.
    InputTypeError
        ``tensor`` is not a floating-point torch tensor; ``out`` does not match it.

    Examples
    --------
    >>> import torch
    >>> neighbor_allreduce(torch.ones(2), [[1.0]])  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    topocoll.errors.ProcessGroupError: no torch.distributed process group: ...
    """
    import torch

    _check_tensor(tensor)
    if out is not None:
        _check_tensor(out, "out")
        if out.shape != tensor.shape or out.dtype != tensor.dtype:
            raise InputTypeError(f"out must match tensor: shape {tuple(tensor.shape)}, dtype "
                                 f"{tensor.dtype}; got {tuple(out.shape)}, {out.dtype}")
    rank, size = group_info(group)
    plan = as_mixing(topology, size).plan(iteration, rank)
    with torch.no_grad():
        send = tensor.detach()
        if async_op or not send.is_contiguous():
            # the caller may change tensor before wait(): send a snapshot
            send = send.clone(memory_format=torch.contiguous_format)
        recvs = _POOL.take(send, len(plan.sources))
        handle = _launch(send, plan, recvs, group, tag, out, iteration, pooled=True)
        return handle if async_op else handle.wait()
