"""Hierarchical neighbor averaging: average inside each machine, gossip between machines.

Ranks are **machine-major**: with ``L`` ranks per machine (``local_size``), rank ``r`` of the
group is local rank ``r % L`` of machine ``r // L``, and the group of ``n`` ranks holds ``M = n /
L`` machines (``L`` must divide ``n``). One call of :func:`hierarchical_neighbor_allreduce` with
the ``M x M`` machine matrix ``W_k`` gives every rank of machine ``m``::

    x_m' = sum_j W_k[m, j] * mean(x_i : rank i on machine j)

as Bluefog's ``hierarchical_neighbor_allreduce`` does; on the ``n`` ranks that is the mixing
matrix ``W_k kron (1/L) 1 1^T`` (:func:`topocoll.gossip.hierarchical_matrix`). It runs in three
steps, so that only ``1/L`` of the tensor crosses each link between machines:

1. **reduce-scatter inside the machine**: the flat tensor is cut into ``L`` parts of
   ``ceil(numel / L)`` elements (the last ones padded with zeros; any ``numel``, also one below
   ``L``); every rank sends part ``j`` to local rank ``j`` and receives its own part from the
   others, then sums the ``L`` copies in local-rank order and divides by ``L``: local rank ``l``
   holds the machine's average of part ``l``.
2. **neighbor averaging between machines**: local rank ``l`` of every machine averages its part
   with :func:`~topocoll.runtime.neighbor_allreduce` on the sub-group ``{m L + l : m}`` of the
   ranks with its local index, whose rank ``m`` is machine ``m``, with ``W_k``: every link
   between machines carries one part.
3. **all-gather inside the machine**: every rank sends its averaged part to the others of its
   machine, so each puts the ``L`` parts together.

Steps 1 and 3 are point-to-point messages on the machine's sub-group, each rank sending and
receiving ``(L - 1) / L`` of the tensor, as a reduce-scatter and an all-gather do. Not
``torch.distributed.reduce_scatter``: gloo has it (torch 2.13, every dtype), but runs it inside
``wait()``, which ignores its timeout and cannot say which rank is late (and
``reduce_scatter_tensor`` is deprecated there); messages are waited for one by one, within
``timeout``, and a failure names the machine, the step and the rank. The sum in local-rank order
makes the result the same bits on every run.

The sub-groups are made with ``torch.distributed.new_group`` on the first call of a (group,
``local_size``) and kept for the group's life in this module's table (weakly, as
:mod:`~topocoll.runtime.neighborhood` keeps its own: once a group is destroyed and gone, its
entry goes, and torch.distributed destroys the sub-groups with the world). For the
world every process makes all ``M + L`` of them in the same order, as torch asks; for another
group each rank makes only its own two (``use_local_synchronization``), so every rank of that
group must have made the same process groups before. With ``L = 1`` the call is
:func:`~topocoll.runtime.neighbor_allreduce` on the group itself; with ``M = 1`` it is the
machine's average times ``W_k[0, 0]``.

An asynchronous call snapshots the tensor and runs the three steps in this (group,
``local_size``)'s one background thread; every call made while one is in flight runs there
too, in the order made, so that every rank sends and receives on the sub-groups in the same
order.
"""

import os
import re
import threading
import weakref
from concurrent.futures import Future, ThreadPoolExecutor

from ..errors import InputTypeError, ProcessGroupError
from ..units import whole_number
from .grouptable import GroupTable
from .launch import group_info, report_iteration
from .mixing import as_mixing
from .neighbor import check_call, neighbor_allreduce
from .shm import check_transport

__all__ = ["hierarchical_neighbor_allreduce", "HierarchicalHandle", "local_size_of",
           "machine_mixing", "kept_subgroups"]

# per parent process group: {local_size: _Machines}, kept while the group lives (see the module)
_MADE = GroupTable()


def kept_subgroups():
    """How many process groups of this process have sub-groups kept here (each for the
    ``local_size`` values it was called with); a destroyed group's go with it."""
    return len(_MADE)


def local_size_of(local_size, size):
    """``local_size`` checked against a group of ``size`` ranks; None means the launcher's
    ``LOCAL_WORLD_SIZE`` (torchrun and :func:`~topocoll.runtime.run_local` set it).

    >>> local_size_of(2, 8)
    2
    >>> local_size_of(3, 8)
    Traceback (most recent call last):
    ...
    topocoll.errors.ProcessGroupError: local_size 3 must divide the group's 8 ranks (every \
machine holds local_size ranks, machine-major)
    """
    if local_size is None:
        text = os.environ.get("LOCAL_WORLD_SIZE")
        if text is None:
            raise ProcessGroupError("hierarchical averaging needs the ranks per machine: pass "
                                    "local_size, or launch with torchrun (LOCAL_WORLD_SIZE is "
                                    "not set)")
        try:
            local_size = int(text)
        except ValueError:
            raise ProcessGroupError(f"LOCAL_WORLD_SIZE={text!r} is not a number of ranks per "
                                    "machine; pass local_size") from None
    local_size = whole_number(local_size, "local_size")
    if size % local_size:
        raise ProcessGroupError(f"local_size {local_size} must divide the group's {size} ranks "
                                "(every machine holds local_size ranks, machine-major)")
    return local_size


def machine_mixing(topology, machines, size, local_size):
    """The machine topology as a Mixing of ``machines`` nodes, or an error naming both sizes."""
    try:
        mixing = as_mixing(topology)
    except InputTypeError:          # a callable k -> W: it is as large as it is asked to be
        mixing = as_mixing(topology, machines)
    if mixing.size != machines:
        raise ProcessGroupError(f"machine topology has {mixing.size} nodes but the group has "
                                f"{machines} machines ({size} ranks, local_size {local_size})")
    return mixing


class _Machines:
    """This rank's sub-groups of one (group, ``local_size``) and the thread its asynchronous
    calls run in; ``machine``, ``local``: where this rank is."""

    def __init__(self, machine_group, index_group, machines, local_size, rank):
        self.machine_group, self.index_group = machine_group, index_group
        self.machines, self.local_size = machines, local_size
        self.machine, self.local = divmod(rank, local_size)
        self._worker = None
        self._last = None
        self._lock = threading.Lock()

    def run(self, job, background):
        """A future of ``job()``: run in this thread unless ``background`` or an earlier
        background job is still in flight (then after it, in the background thread)."""
        with self._lock:
            if background or (self._last is not None and not self._last.done()):
                if self._worker is None:
                    self._worker = ThreadPoolExecutor(1, thread_name_prefix="topocoll-hier")
                    weakref.finalize(self, self._worker.shutdown, wait=False)
                self._last = self._worker.submit(job)
                return self._last
        done = Future()
        try:
            done.set_result(job())
        except BaseException as exc:
            done.set_exception(exc)
        return done


def _make_subgroups(group, pg, local_size, size, rank):
    """This rank's machine and local-index sub-groups (None for one machine: the group itself
    is the machine, and is not kept here, so that the table keeps no group alive)."""
    import torch.distributed as dist

    machines = size // local_size
    ranks = dist.get_process_group_ranks(pg)       # global ranks, in group-rank order
    m, local = divmod(rank, local_size)
    if machines == 1:
        return _Machines(None, None, machines, local_size, rank)
    if group is None or pg is dist.group.WORLD:
        # every process of the world makes every sub-group, in the same order (torch's rule)
        made = [dist.new_group(ranks[j * local_size:(j + 1) * local_size])
                for j in range(machines)]
        index = [dist.new_group(ranks[i::local_size]) for i in range(local_size)]
        return _Machines(made[m], index[local], machines, local_size, rank)
    mine = dist.new_group(ranks[m * local_size:(m + 1) * local_size],
                          use_local_synchronization=True)
    index = dist.new_group(ranks[local::local_size], use_local_synchronization=True)
    return _Machines(mine, index, machines, local_size, rank)


def _machines(group, local_size, size, rank):
    """The :class:`_Machines` of (``group``, ``local_size``), made on first use (collective)."""
    import torch.distributed as dist

    pg = group if group is not None else dist.group.WORLD
    made = _MADE.get(pg, dict)
    if local_size not in made:
        made[local_size] = _make_subgroups(group, pg, local_size, size, rank)
    return made[local_size]


class HierarchicalHandle:
    """An in-flight :func:`hierarchical_neighbor_allreduce`; :meth:`wait` returns the result.

    Dropping a handle without waiting is safe: the steps run to their end in the background
    thread (the result is discarded).
    """

    def __init__(self, future, *, numel, shape, out):
        self._future, self._numel, self._shape, self._out = future, numel, shape, out
        self._result = None

    def is_completed(self):
        """True when the three steps are through."""
        return self._result is not None or self._future.done()

    def _wait_transfers(self):
        """Finish the steps without using the result."""
        self._future.result()

    def wait(self):
        """Block until the steps are through and return the result (idempotent)."""
        if self._result is None:
            gathered = self._future.result()
            result = gathered[:self._numel].view(self._shape)
            if self._out is not None:
                self._out.copy_(result)
                result = self._out
            self._result = result
        return self._result


def _wait_peer(work, peer, what, timeout):
    """Wait for one message to or from local rank ``peer`` of the machine, within
    ``timeout``; ``what(peer)`` starts the error that names it."""
    from datetime import timedelta

    try:
        done = work.wait() if timeout is None else work.wait(timedelta(seconds=timeout))
    except RuntimeError as exc:         # gloo says "Timed out waiting ..."
        if "imed out" not in str(exc):
            raise ProcessGroupError(f"{what(peer)} failed ({_first_line(exc)})") from None
        done = False
    if done is False:
        raise ProcessGroupError(f"{what(peer)} did not exchange its part within {timeout:g} s")


def _inside_machine(ctx, group, sends, recvs, tag, what, timeout):
    """Send ``sends[j]`` to and receive ``recvs[j]`` from every other local rank ``j`` of this
    machine (point to point on its sub-group, or on ``group`` when it is one machine), all
    posted at once; wait for them all."""
    import torch.distributed as dist

    pg = ctx.machine_group if ctx.machine_group is not None else group
    pg = pg if pg is not None else dist.group.WORLD
    works = []
    for kind in ("recv", "send"):
        for j in range(ctx.local_size):
            if j == ctx.local:
                continue
            try:
                works.append((j, pg.recv([recvs[j]], j, tag) if kind == "recv"
                              else pg.send([sends[j]], j, tag)))
            except RuntimeError as exc:     # the peer is gone already
                raise ProcessGroupError(f"{what(j)} failed ({_first_line(exc)})") from None
    for j, work in works:
        _wait_peer(work, j, what, timeout)


def _first_line(exc):
    return str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__


def _between_machines(ctx, part, mixing, iteration, call):
    """Step 2 on this rank's part: neighbor averaging over the machines (its local index's
    sub-group), a failure's "rank j" told as machine ``j`` and its rank in the group."""
    if ctx.machines == 1:
        w = float(mixing.matrix(iteration)[0, 0])
        return part.mul_(w) if w != 0.0 else part.zero_()
    try:
        return neighbor_allreduce(part, mixing, iteration, group=ctx.index_group, out=part,
                                  **call)
    except ProcessGroupError as exc:
        size, local = ctx.local_size, ctx.local
        said = re.sub(r"\brank (\d+)", lambda g: f"machine {g[1]} (rank "
                      f"{int(g[1]) * size + local})", str(exc))
        raise ProcessGroupError(f"hierarchical neighbor averaging between machines, part "
                                f"{local}: {said}") from None


def _steps(ctx, group, padded, parts, mixing, iteration, call):
    """The three steps (see the module) on the padded flat snapshot; returns the gathered
    padded result."""
    import torch

    size, local, timeout = ctx.local_size, ctx.local, call["timeout"]
    first = ctx.machine * size

    def said(step):
        return lambda j: (f"hierarchical neighbor averaging, iteration {iteration}, {step} "
                          f"inside machine {ctx.machine}: rank {first + j}")

    report_iteration(iteration, entering=True)
    chunks = list(padded.split(parts))
    with torch.no_grad():
        received = [c if j == local else torch.empty_like(c) for j, c in enumerate(chunks)]
        _inside_machine(ctx, group, chunks, received, 2 * call["tag"],
                        said("reduce-scatter"), timeout)
        part = received[0].clone()
        for other in received[1:]:           # in local-rank order: the same bits every time
            part.add_(other)
        part = _between_machines(ctx, part.div_(size), mixing, iteration, call)
        gathered = torch.empty_like(padded)
        pieces = list(gathered.split(parts))
        pieces[local].copy_(part)
        _inside_machine(ctx, group, [part] * size, pieces, 2 * call["tag"] + 1,
                        said("all-gather"), timeout)
    report_iteration(iteration)
    return gathered


def _check_call(tensor, out, tag, slice_bytes, transport, timeout):
    """The checks of every argument but the topology, before anything communicates."""
    check_call(tensor, out=out, tag=tag, slice_bytes=slice_bytes, timeout=timeout)
    check_transport(transport)


def hierarchical_neighbor_allreduce(tensor, machine_topology, *, local_size=None, iteration=0,
                                    async_op=False, group=None, tag=0, out=None,
                                    slice_bytes=None, transport="auto", timeout=None):
    """Average inside every machine, then gossip between machines with ``W_k``: every rank of
    machine ``m`` gets ``sum_j W_k[m, j] * mean(x of machine j's ranks)``.

    Ranks are machine-major: rank ``r`` is local rank ``r % local_size`` of machine ``r //
    local_size`` (see the module for the three steps).

    Parameters
    ----------
    tensor : torch.Tensor
        This rank's ``x_i`` (floating point or complex; same shape and dtype on every rank).
        An async call sends a snapshot, so the caller may change ``tensor`` before ``wait()``.
    machine_topology : GossipTopology, callable or array_like
        The machines' mixing matrices: a :class:`topocoll.gossip.GossipTopology`, a callable
        ``k -> W`` or a fixed ``(M, M)`` matrix, ``M`` = the number of machines (else
        :class:`~topocoll.errors.ProcessGroupError` naming both). Row ``m`` holds the weights
        machine ``m`` applies.
    local_size : int, optional
        Ranks per machine ``L``; it must divide the group's size. Default: the launcher's
        ``LOCAL_WORLD_SIZE`` (torchrun and :func:`~topocoll.runtime.run_local` set it).
    iteration : int
        ``k``: which ``W_k`` of a dynamic machine topology.
    async_op : bool
        Return a :class:`HierarchicalHandle` at once; its ``wait()`` returns the result.
    group : ProcessGroup, optional
        The group (default: the world); its ranks are machine-major.
    tag, slice_bytes, transport, timeout
        As for :func:`~topocoll.runtime.neighbor_allreduce`, applied to the averaging between
        machines (step 2); ``tag`` also tells concurrent calls apart inside a machine, and
        ``timeout`` also bounds each message of steps 1 and 3.
    out : torch.Tensor, optional
        Where to write the result (may be ``tensor`` itself); default a new tensor.

    Returns
    -------
    torch.Tensor or HierarchicalHandle

    Raises
    ------
    ProcessGroupError
        No process group; ``local_size`` missing or not dividing the group's size; a machine
        topology whose size is not the number of machines; a message that fails or times out
        (the message names the step, the machine and the peer's rank; between machines the
        peer machine and its rank).
    TopologyError, InputTypeError, UnsupportedError
        As :func:`~topocoll.runtime.neighbor_allreduce` raises them.

    Examples
    --------
    >>> import torch
    >>> from topocoll.runtime import single_process_group
    >>> with single_process_group():
    ...     hierarchical_neighbor_allreduce(torch.tensor([2.0, 4.0]), [[0.5]],
    ...                                     local_size=1).tolist()
    [1.0, 2.0]
    """
    import torch

    _check_call(tensor, out, tag, slice_bytes, transport, timeout)
    rank, size = group_info(group)
    local_size = local_size_of(local_size, size)
    machines = size // local_size
    mixing = machine_mixing(machine_topology, machines, size, local_size)
    call = dict(tag=tag, slice_bytes=slice_bytes, transport=transport, timeout=timeout)
    if local_size == 1:
        return neighbor_allreduce(tensor, mixing, iteration, async_op=async_op, group=group,
                                  out=out, **call)
    mixing.plan(iteration, rank // local_size)     # checks W_k before anything communicates
    ctx = _machines(group, local_size, size, rank)
    numel = tensor.numel()
    parts = -(-numel // local_size)
    with torch.no_grad():
        padded = tensor.new_zeros(parts * local_size)   # the snapshot the steps work on
        padded[:numel].copy_(tensor.detach().reshape(-1))
    if numel == 0:
        future = Future()
        future.set_result(padded)
    else:
        future = ctx.run(lambda: _steps(ctx, group, padded, parts, mixing, iteration, call),
                         background=async_op)
    handle = HierarchicalHandle(future, numel=numel, shape=tensor.shape, out=out)
    return handle if async_op else handle.wait()
