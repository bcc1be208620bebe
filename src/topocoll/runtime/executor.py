"""Run any schedule on torch.distributed: each step of a rank's plan is one
``batch_isend_irecv`` of the step's messages (one per peer and direction), then the received
pieces are copied or reduced into place. The buffer layout of each collective is in
:mod:`topocoll.runtime.plan`; a test runs every collective against torch's own on local
processes (``tests/runtime/test_executor.py``).

Inside a program that torchrun started (or any initialized process group of N ranks)::

    from topocoll.runtime import ScheduleCollective
    allreduce = ScheduleCollective("allreduce.json")      # verified, planned once
    allreduce(tensor)                                     # in place, like dist.all_reduce
"""

import threading

from ..errors import InputTypeError, ProcessGroupError, UnsupportedError
from ..schedule.model import as_schedule
from .launch import report_iteration
from .plan import (apply, finish, in_place_shards, initial_state, pack, rank_plan,
                   receives_in_place)

__all__ = ["ScheduleCollective", "ScheduleHandle", "run_schedule", "REDUCE_OPS"]

#: ReduceOp names the executor supports (AVG sums, then divides by the number of ranks).
REDUCE_OPS = ("sum", "product", "min", "max", "avg")


def _combine(op):
    import torch

    if op in ("sum", "avg"):
        return lambda target, piece: target.add_(piece)
    if op == "product":
        return lambda target, piece: target.mul_(piece)
    if op == "min":
        return lambda target, piece: torch.minimum(target, piece, out=target)
    return lambda target, piece: torch.maximum(target, piece, out=target)


def _op_name(op):
    if op is None:
        return "sum"
    name = getattr(op, "name", None) or str(op)
    name = name.split(".")[-1].lower()
    if name not in REDUCE_OPS:
        raise UnsupportedError(f"reduce op {op!r} is not supported; use one of "
                               f"{', '.join(REDUCE_OPS)}")
    return name


class ScheduleHandle:
    """What an asynchronous call returns: :meth:`wait` blocks until the collective is done and
    returns its result (or raises what the collective raised)."""

    def __init__(self, run):
        self._result = None
        self._error = None
        self._thread = threading.Thread(target=self._target, args=(run,), daemon=True)
        self._thread.start()

    def _target(self, run):
        try:
            self._result = run()
        except BaseException as exc:   # handed to wait(), where the caller sees it
            self._error = exc

    def is_completed(self):
        return not self._thread.is_alive()

    def wait(self, timeout=None):
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise ProcessGroupError(f"the collective did not finish within {timeout} s")
        if self._error is not None:
            raise self._error
        return self._result


class ScheduleCollective:
    """A schedule prepared for one process group: plans are built once per tensor size and
    buffers kept for reuse, so that calling it many times costs only the messages.

    Parameters
    ----------
    schedule : Schedule or path
        A schedule for N nodes; the group must have N ranks.
    group : ProcessGroup, optional
        Default: the world.
    rank_map : sequence of int, optional
        ``rank_map[v]`` is the group rank that plays node ``v`` (default: rank v plays node v).
    op : str or torch.distributed.ReduceOp
        Reduction of the combining collectives: sum (default), product, min, max or avg.
    check : bool
        Verify the schedule first (default); an invalid one raises
        :class:`~topocoll.errors.InvalidScheduleError`.
    timeout : float, optional
        Seconds to wait for each step's messages; a peer that does not deliver in time raises
        :class:`~topocoll.errors.ProcessGroupError` naming the rank and the step (default: the
        process group's own timeout). Under :func:`~topocoll.runtime.run_local` each step is
        also reported, so that a run that times out says which step each rank was at.
    """

    def __init__(self, schedule, *, group=None, rank_map=None, op=None, check=True,
                 timeout=None):
        import torch.distributed as dist

        from ..schedule.verify import verify

        self.schedule = as_schedule(schedule)
        if check:
            verify(self.schedule).raise_if_invalid()
        if not dist.is_initialized():
            raise ProcessGroupError("torch.distributed is not initialized; call "
                                    "init_process_group first (or use topocoll.runtime.run_local)")
        self.group = group
        n = self.schedule.topology.num_nodes
        world = dist.get_world_size(group)
        if world != n:
            raise ProcessGroupError(f"the schedule is for {n} nodes but the group has {world} "
                                    "ranks; run it on a group of exactly that many")
        if rank_map is None:
            rank_map = list(range(n))
        rank_map = [int(r) for r in rank_map]
        if sorted(rank_map) != list(range(n)):
            raise InputTypeError(f"rank_map must be a permutation of 0..{n - 1}, got {rank_map}")
        self.rank_map = rank_map
        self.node = rank_map.index(dist.get_rank(group))
        self.op = _op_name(op)
        if timeout is not None and not timeout > 0:
            raise InputTypeError(f"timeout must be a positive number of seconds, got {timeout!r}")
        self.timeout = timeout
        self._plans = {}
        self._buffers = {}

    def plan(self, numel):
        """The plan of this rank for tensors of ``numel`` elements (built once)."""
        if numel not in self._plans:
            self._plans[numel] = rank_plan(self.schedule, self.node, numel)
        return self._plans[numel]

    def __call__(self, tensor, output=None, *, async_op=False):
        """Run the collective on ``tensor`` (and ``output`` where the layout has one); returns
        the result tensor, or a :class:`ScheduleHandle` with ``async_op``."""
        run = self._prepare(tensor, output)
        if async_op:
            return ScheduleHandle(run)
        return run()

    def _prepare(self, tensor, output):
        import torch

        if not isinstance(tensor, torch.Tensor):
            raise InputTypeError(f"expected a torch.Tensor, got {type(tensor).__name__}")
        if not tensor.is_contiguous():
            raise InputTypeError("the tensor must be contiguous")
        plan = self.plan(tensor.numel())
        lay = plan.layout
        if not lay.in_place:
            needed = lay.output_numel
            wants_output = lay.collective not in ("gather",) or self.node == lay.root
            if output is None and wants_output:
                output = torch.empty(needed, dtype=tensor.dtype, device=tensor.device)
            if output is not None and output.numel() != needed:
                raise InputTypeError(f"{lay.collective} of {tensor.numel()} elements on "
                                     f"{lay.nodes} ranks needs an output of {needed} elements, "
                                     f"got {output.numel()}")
        return lambda: self._run(plan, tensor, output)

    def _run(self, plan, tensor, output):
        import torch
        import torch.distributed as dist

        flat = tensor.view(-1)
        out = None if output is None else output.view(-1)
        key = (flat.numel(), flat.dtype, flat.device)
        cached = self._buffers.get(key)
        views = in_place_shards(plan, flat, out)
        state = initial_state(plan, flat, lambda k: torch.zeros(k, dtype=flat.dtype,
                                                                device=flat.device),
                              state=None if cached is None else cached[0], views=views)
        received = {} if cached is None else cached[1]
        self._buffers[key] = ({s: b for s, b in state.items() if s not in views}, received)
        combine = _combine(self.op)
        for index, step in enumerate(plan.steps):
            ops = []
            for peer in sorted(step.sends):
                message = pack(step, peer, state, torch.cat)
                ops.append(dist.P2POp(dist.isend, message, group=self.group,
                                      group_peer=self.rank_map[peer], tag=step.step))
            inbox = {}
            for peer in sorted(step.recvs):
                if receives_in_place(step, peer):
                    s, a, b, _ = step.recvs[peer][0]
                    ops.append(dist.P2POp(dist.irecv, state[s][a:b], group=self.group,
                                          group_peer=self.rank_map[peer], tag=step.step))
                    continue
                buf = received.get((index, peer))
                if buf is None:
                    buf = torch.empty(step.recv_numel(peer), dtype=flat.dtype,
                                      device=flat.device)
                    received[(index, peer)] = buf
                inbox[peer] = buf
                ops.append(dist.P2POp(dist.irecv, buf, group=self.group,
                                      group_peer=self.rank_map[peer], tag=step.step))
            if ops:
                report_iteration(step.step, entering=True)
                peers = sorted(step.sends) + sorted(step.recvs)
                try:
                    requests = dist.batch_isend_irecv(ops)
                except RuntimeError as exc:   # a peer gone before the messages could start
                    ranks = sorted({self.rank_map[p] for p in peers})
                    raise ProcessGroupError(
                        f"step {step.step}: the exchange with rank(s) "
                        f"{', '.join(map(str, ranks))} failed: "
                        f"{str(exc).splitlines()[0][:160]}") from None
                for peer, request in zip(peers, requests):
                    self._wait(request, peer, step.step)
                report_iteration(step.step)
            for peer, buf in inbox.items():
                apply(step, peer, buf, state, combine)
        result = finish(plan, state, flat, out, views)
        if self.op == "avg" and plan.layout.collective in ("allreduce", "reduce_scatter",
                                                           "reduce"):
            result.div_(plan.layout.nodes)
        return tensor if plan.layout.in_place else output


    def _wait(self, request, peer, step):
        if self.timeout is None:
            try:
                request.wait()
            except RuntimeError as exc:   # gloo/NCCL say "connection closed": say with whom
                raise ProcessGroupError(
                    f"step {step}: the exchange with rank {self.rank_map[peer]} (node {peer}) "
                    f"failed: {str(exc).splitlines()[0][:160]}") from None
            return
        from datetime import timedelta

        try:
            done = request.wait(timedelta(seconds=self.timeout))
        except RuntimeError as exc:
            raise ProcessGroupError(
                f"step {step}: rank {self.rank_map[peer]} (node {peer}) did not exchange its "
                f"message within {self.timeout:g} s ({str(exc).splitlines()[0][:120]})") from None
        if done is False:
            raise ProcessGroupError(f"step {step}: rank {self.rank_map[peer]} (node {peer}) "
                                    f"did not exchange its message within {self.timeout:g} s")


def run_schedule(schedule, tensor, *, output=None, group=None, rank_map=None, op=None,
                 check=True, timeout=None, async_op=False):
    """Run ``schedule`` once on ``tensor`` on this process group (see
    :class:`ScheduleCollective`, which prepares once for many calls)."""
    collective = ScheduleCollective(schedule, group=group, rank_map=rank_map, op=op,
                                    check=check, timeout=timeout)
    return collective(tensor, output, async_op=async_op)
