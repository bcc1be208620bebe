"""Run any schedule on torch.distributed with the dataflow engine.

Each rank compiles its part of the schedule once per tensor size into a program of sliced
sends, receives, copies and reductions with explicit dependencies
(:mod:`topocoll.runtime.program`), and runs it with :mod:`topocoll.runtime.engine`: a packet
leaves as soon as the data it carries is final, the reduction of one slice overlaps the
transfer of the next, and both ends of every link post its packets in the same order. On NCCL
(CUDA tensors, GPU streams) each step is instead one ``batch_isend_irecv`` of whole messages
(``engine="steps"``), the lock-step execution NCCL's stream semantics need. The buffer layout
of each collective is in :mod:`topocoll.runtime.plan`; a test runs every collective against
torch's own on local processes (``tests/runtime/test_executor.py``).

Inside a program that torchrun started (or any initialized process group of N ranks)::

    from topocoll.runtime import ScheduleCollective
    allreduce = ScheduleCollective("allreduce.json")      # verified, planned once
    allreduce(tensor)                                     # in place, like dist.all_reduce
"""

import threading

from ..errors import InputTypeError, ProcessGroupError, UnsupportedError
from .launch import gather_integers, missing_ranks, report_iteration
from .engine import allocate, execute
from .plan import (apply, finish, in_place_shards, initial_state, pack, rank_plan,
                   receives_in_place)
from .program import (DEFAULT_WINDOW, IN_PLACE_BYTES, check_window, compile_program,
                      default_slice_bytes, slice_elements)
from .shm import SharedMemoryLinks, check_transport, choose_transport, open_channels
from .sources import load_runnable

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


#: Message tags of schedule packets start here: clear of the tags of a user's own
#: point-to-point calls and of the gossip runtime's (below 2^30, see ``neighbor.TAG_LIMIT``).
TAG_OFFSET = 1 << 30
ENGINES = ("auto", "dataflow", "steps")


class _TorchLinks:
    """The engine's links over a torch.distributed process group (see
    :mod:`topocoll.runtime.engine`)."""

    def __init__(self, group, rank_map, timeout):
        import torch.distributed as dist

        self.pg = group if group is not None else dist.group.WORLD
        self.rank_map = rank_map
        self.timeout = None if timeout is None else _timedelta(timeout)
        self.seconds = timeout

    def isend(self, buf, peer, tag, op):
        try:
            return self.pg.send([buf], self.rank_map[peer], TAG_OFFSET + tag)
        except RuntimeError as exc:   # a peer gone before the message could start
            raise self._failed(op, exc) from None

    def irecv(self, buf, peer, tag, op):
        try:
            return self.pg.recv([buf], self.rank_map[peer], TAG_OFFSET + tag)
        except RuntimeError as exc:
            raise self._failed(op, exc) from None

    def test(self, request):
        return request.is_completed()

    def wait(self, request, op):
        try:
            done = request.wait() if self.timeout is None else request.wait(self.timeout)
        except RuntimeError as exc:   # gloo says "connection closed" or "timed out": say who
            raise self._failed(op, exc) from None
        if done is False:
            raise self._late(op, "")

    def _failed(self, op, exc):
        text = str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__
        if self.seconds is not None and "imed out" in text:
            return self._late(op, f" ({text[:120]})")
        return ProcessGroupError(f"step {op.step}: the exchange with rank "
                                 f"{self.rank_map[op.peer]} (node {op.peer}) failed: {text}")

    def _late(self, op, why):
        return ProcessGroupError(f"step {op.step}: rank {self.rank_map[op.peer]} (node "
                                 f"{op.peer}) did not exchange its message within "
                                 f"{self.seconds:g} s{why}")


def _timedelta(seconds):
    from datetime import timedelta

    return timedelta(seconds=seconds)


def _check_rank_map(rank_map, n):
    """``rank_map`` as a list of ints, checked to be a permutation of the ``n`` nodes."""
    if rank_map is None:
        rank_map = list(range(n))
    rank_map = [int(r) for r in rank_map]
    if sorted(rank_map) != list(range(n)):
        raise InputTypeError(f"rank_map must be a permutation of 0..{n - 1}, got {rank_map}")
    return rank_map


def _least_slice_bytes(slice_bytes, group, timeout):
    """The least of the ranks' ``slice_bytes`` (an all_reduce every rank of ``group`` joins)."""
    import torch
    import torch.distributed as dist

    least = torch.tensor([slice_bytes], dtype=torch.int64)
    work = dist.all_reduce(least, op=dist.ReduceOp.MIN, group=group, async_op=True)
    missing = missing_ranks(work, timeout)
    if missing is not None:
        raise ProcessGroupError(
            "the ranks did not agree on the slice size: not every rank of the group "
            f"built this ScheduleCollective{missing}; build it on every rank, or give "
            "slice_bytes") from None
    return int(least.item())


class ScheduleCollective:
    """A schedule prepared for one process group: programs are compiled once per tensor size
    and buffers kept for reuse, so that calling it many times costs only the messages.

    Parameters
    ----------
    schedule : Schedule or path
        A schedule for N nodes (a schedule file or an MSCCL XML file, through the importer);
        the group must have N ranks.
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
        Seconds to wait for any one packet; a peer that does not deliver in time raises
        :class:`~topocoll.errors.ProcessGroupError` naming the rank and the step (default: the
        process group's own timeout). Under :func:`~topocoll.runtime.run_local` each step is
        also reported, so that a run that times out says which step each rank was at.
    slice_bytes : int, optional
        Most bytes of one packet: messages are cut into slices of about this size, so that the
        reduction of one overlaps the transfer of the next. Default
        (:func:`~topocoll.runtime.program.default_slice_bytes`): 1 MiB where this machine has
        two cores per local rank, else whole messages; the constructor then agrees on the least
        of the ranks' defaults with an all_reduce (it is collective, as every call is). Given,
        it must be the same on every rank.
    window : int
        Staging buffers per peer (default 4): packets that are reduced (or gathered from
        several ranges) land in one of these; this many per peer may be in flight at once.
    engine : {"auto", "dataflow", "steps"}
        ``dataflow`` (the default on gloo and other CPU backends) or ``steps``: each step one
        ``batch_isend_irecv`` of whole messages, then its copies and reductions (the default on
        NCCL, whose GPU streams need it).
    transport : {"auto", "network", "shared_memory"}
        How the dataflow engine's packets travel: ``auto`` (the default): through shared
        memory where every rank of the group shares this host (:mod:`topocoll.runtime.shm`:
        no sockets, no system calls), else through the process group; ``network``: always
        the process group; ``shared_memory``: refused with the reason where the ranks do not
        share the host, its namespaces included. Choosing makes the constructor collective
        (one all_gather of a few integers a rank, within ``timeout``); ``network`` does not.
    """

    def __init__(self, schedule, *, group=None, rank_map=None, op=None, check=True,
                 timeout=None, slice_bytes=None, window=None, engine="auto",
                 transport="auto"):
        import torch.distributed as dist

        from ..schedule.verify import verify
        self.schedule = load_runnable(schedule)
        if check:
            verify(self.schedule).raise_if_invalid()
        if engine not in ENGINES:
            raise InputTypeError(f"engine must be one of {', '.join(ENGINES)}, got {engine!r}")
        self.slice_bytes = default_slice_bytes() if slice_bytes is None else slice_bytes
        slice_elements(self.slice_bytes, 1)     # checks it
        self.window = check_window(DEFAULT_WINDOW if window is None else window)
        self.slice_bytes = int(self.slice_bytes)
        if not dist.is_initialized():
            raise ProcessGroupError("torch.distributed is not initialized; call "
                                    "init_process_group first (or use topocoll.runtime.run_local)")
        self.group = group
        n = self.schedule.topology.num_nodes
        world = dist.get_world_size(group)
        if world != n:
            raise ProcessGroupError(f"the schedule is for {n} nodes but the group has {world} "
                                    "ranks; run it on a group of exactly that many")
        self.rank_map = rank_map = _check_rank_map(rank_map, n)
        self.node = rank_map.index(dist.get_rank(group))
        self.op = _op_name(op)
        if timeout is not None and not timeout > 0:
            raise InputTypeError(f"timeout must be a positive number of seconds, got {timeout!r}")
        self.timeout = timeout
        if engine == "auto":
            engine = "steps" if dist.get_backend(group) == "nccl" else "dataflow"
        self.engine = engine
        if slice_bytes is None and engine == "dataflow" and world > 1:
            # every rank must cut messages alike: the least of the ranks' defaults
            self.slice_bytes = _least_slice_bytes(self.slice_bytes, group, timeout)
        self.transport, self._host = self._choose_transport(check_transport(transport))
        self._plans = {}
        self._programs = {}
        self._buffers = {}
        self._lock = threading.Lock()   # one call at a time: calls share buffers and tags

    def _choose_transport(self, transport):
        """``(transport, facts of every rank or None)``: the network, or shared memory where
        asked for (or ``auto``) and every rank can use it. Asking is collective: an all_gather
        of a few integers a rank, bounded by ``timeout``."""
        if transport == "network":
            return "network", None
        if self.engine != "dataflow":
            if transport == "auto":
                return "network", None
            raise UnsupportedError("the shared-memory transport runs the dataflow engine; "
                                   f"engine {self.engine!r} was chosen")
        return choose_transport(transport, self._gather)

    def _gather(self, values):
        """Every rank's ``values`` (integers, as many on every rank), within ``timeout``."""
        return gather_integers(
            values, self.group, self.timeout,
            lambda missing: "the ranks did not agree on the transport: not every rank of the "
                            f"group built this ScheduleCollective{missing}; build it on every "
                            "rank, or give transport='network'")

    def _links(self, program, flat):
        """The engine's links for ``program``: the process group's, or this program's
        shared-memory channels (made on its first call, kept for the next)."""
        if self.transport == "network":
            return _TorchLinks(self.group, self.rank_map, self.timeout)
        key = ("links", flat.numel(), flat.element_size())
        links = self._buffers.get(key)
        if links is None:
            name = f"{self._host[0]['token']:x}-{flat.numel()}x{flat.element_size()}"
            outgoing, incoming = open_channels(program, flat.element_size(), self.node, name,
                                               lambda: self._all_here(flat.numel()))
            links = SharedMemoryLinks(outgoing, incoming, self.rank_map,
                                      [f["pid"] for f in self._host], self.timeout)
            self._buffers[key] = links
        return links

    def _all_here(self, numel):
        """Wait for every rank (within ``timeout``): the channels of a tensor size are made on
        its first call, which every rank must make."""
        import torch
        import torch.distributed as dist

        work = dist.all_reduce(torch.zeros(1), group=self.group, async_op=True)
        missing = missing_ranks(work, self.timeout)
        if missing is not None:
            raise ProcessGroupError(
                f"not every rank made the first call for tensors of {numel} elements"
                f"{missing}, in which the shared-memory channels are made; call the "
                "collective on every rank") from None

    def plan(self, numel):
        """The lock-step plan of this rank for tensors of ``numel`` elements (built once)."""
        if numel not in self._plans:
            self._plans[numel] = rank_plan(self.schedule, self.node, numel)
        return self._plans[numel]

    def program(self, numel, itemsize=4):
        """The dataflow program of this rank for tensors of ``numel`` elements of
        ``itemsize`` bytes (compiled once)."""
        key = (numel, itemsize)
        if key not in self._programs:
            self._programs[key] = compile_program(
                self.schedule, self.node, numel,
                slice_numel=slice_elements(self.slice_bytes, itemsize), window=self.window,
                in_place_numel=slice_elements(IN_PLACE_BYTES, itemsize))
        return self._programs[key]

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
        plan = (self.program(tensor.numel(), tensor.element_size()) if self.engine == "dataflow"
                else self.plan(tensor.numel()))
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

        with self._lock:
            flat = tensor.view(-1)
            out = None if output is None else output.view(-1)
            key = (flat.numel(), flat.dtype, flat.device)
            cached = self._buffers.get(key)

            def zeros(k):
                return torch.zeros(k, dtype=flat.dtype, device=flat.device)

            views = in_place_shards(plan, flat, out)
            state = initial_state(plan, flat, zeros, state=None if cached is None else cached[0],
                                  views=views)
            if self.engine == "dataflow":
                extra = allocate(plan, lambda k: torch.empty(k, dtype=flat.dtype,
                                                             device=flat.device)) \
                    if cached is None else cached[1]
                execute(plan, state, self._links(plan, flat), _combine(self.op), extra,
                        report_iteration)
            else:
                extra = {} if cached is None else cached[1]
                self._run_steps(plan, state, extra, flat)
            self._buffers[key] = ({s: b for s, b in state.items() if s not in views}, extra)
            result = finish(plan, state, flat, out, views)
            if self.op == "avg" and plan.layout.collective in ("allreduce", "reduce_scatter",
                                                               "reduce"):
                result.div_(plan.layout.nodes)
            return tensor if plan.layout.in_place else output

    def _run_steps(self, plan, state, received, flat):
        """Lock-step execution: each step one ``batch_isend_irecv`` of whole messages."""
        import torch
        import torch.distributed as dist

        combine = _combine(self.op)
        links = _TorchLinks(self.group, self.rank_map, self.timeout)
        for index, step in enumerate(plan.steps):
            ops, inbox = [], {}
            for peer in sorted(step.sends):
                ops.append(dist.P2POp(dist.isend, pack(step, peer, state, torch.cat),
                                      group=self.group, group_peer=self.rank_map[peer],
                                      tag=step.step))
            for peer in sorted(step.recvs):
                if receives_in_place(step, peer):
                    s, a, b, _ = step.recvs[peer][0]
                    buf = state[s][a:b]
                else:
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
                where = [_Where(step.step, p) for p in peers]
                try:
                    requests = dist.batch_isend_irecv(ops)
                except RuntimeError as exc:   # a peer gone before the messages could start
                    raise links._failed(where[0], exc) from None
                for w, request in zip(where, requests):
                    links.wait(request, w)
                report_iteration(step.step)
            for peer, buf in inbox.items():
                apply(step, peer, buf, state, combine)


class _Where:
    """The step and peer of a message, for error messages."""

    __slots__ = ("step", "peer")

    def __init__(self, step, peer):
        self.step, self.peer = step, peer


def run_schedule(schedule, tensor, *, output=None, group=None, rank_map=None, op=None,
                 check=True, timeout=None, async_op=False, slice_bytes=None, window=None,
                 engine="auto", transport="auto"):
    """Run ``schedule`` (a Schedule, a schedule file or an MSCCL XML file) once on ``tensor``
    on this process group (see :class:`ScheduleCollective`, which prepares once for many
    calls)."""
    collective = ScheduleCollective(schedule, group=group, rank_map=rank_map, op=op,
                                    check=check, timeout=timeout, slice_bytes=slice_bytes,
                                    window=window, engine=engine, transport=transport)
    return collective(tensor, output, async_op=async_op)
