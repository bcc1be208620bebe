"""Decentralized data parallel training: gossip of the parameters instead of an allreduce.

Every rank ``i`` keeps its own replica ``x_i`` of the parameters. Iteration ``k`` (``k = 0, 1,
...``, the wrapper's :attr:`~DecentralizedDataParallel.iteration`) runs, on every rank at once::

    g_i     = grad f_i(x_i^k)                                (your forward + backward at x^k)
    x_i^k+1 = sum_j W_k[i, j] x_j^k  -  lr * g_i             (step())

that is ``x^{k+1} = W_k x^k - lr * grad(x^k)``: the gradient is taken at ``x^k`` **before**
mixing, and the mixing uses the same ``x^k``. This is what makes the overlap possible: the
gossip of ``x^k`` is launched as soon as ``x^k`` exists (at the end of the previous
``step()``, or at construction for ``x^0``) and runs in the background while the forward and
backward pass of iteration ``k`` compute ``g_i``; ``step()`` then waits for it, writes the mix
into the parameters and applies the optimizer with ``g_i``. With an optimizer factory instead
of ``lr`` the update is ``x^{k+1} = opt(W_k x^k, g)`` (the optimizer steps from the mixed
parameters with the gradient taken at ``x^k``; for plain SGD the two coincide exactly).
Parameters that got no gradient in an iteration are only mixed.

Parameters are flattened into buckets of about ``bucket_size_mb`` (per dtype); each parameter
becomes a view into its bucket, so one message per bucket and neighbor carries it. The mixing
of a bucket is :func:`~topocoll.runtime.neighbor_allreduce` (point-to-point, exact order;
through shared memory where the ranks share a host, else the process group), or with
``gossip="allreduce"`` :func:`~topocoll.runtime.edge_allreduce` (decent_dp's way: one
``all_reduce`` per edge of ``W_k``, for topologies whose every ``W_k`` is such edges).

>>> import torch
>>> from topocoll.runtime import single_process_group
>>> with single_process_group():
...     model = torch.nn.Linear(2, 1, bias=False)
...     with torch.no_grad():
...         _ = model.weight.fill_(1.0)
...     ddp = DecentralizedDataParallel(model, [[1.0]], lr=0.5)
...     ddp(torch.tensor([[1.0, 2.0]])).sum().backward()    # grad = [1, 2]
...     ddp.step()
...     ddp.global_avg()
...     model.weight.tolist(), ddp.iteration
([[0.5, 0.0]], 1)
"""

import copy

from ..errors import InputTypeError, ProcessGroupError, UnsupportedError
from ..units import real_number, whole_number
from .hierarchical import hierarchical_neighbor_allreduce, local_size_of, machine_mixing
from .edges import edge_group, mixing_edges, post_edge
from .launch import group_info
from .mixing import as_mixing
from .neighbor import check_tensor, post_exchange
from .neighborhood import neighborhood
from .program import slice_elements
from .shm import check_transport

__all__ = ["DecentralizedDataParallel"]

STATE_FORMAT = "topocoll.gossip-ddp"
# Message tags of bucket b are TAG_BASE + b: clear of the small tags a user's own
# neighbor_allreduce calls use while a gossip of the wrapper is in flight.
TAG_BASE = 1 << 16


def _check_settings(module, lr, optimizer, bucket_size_mb):
    """The constructor's checks of its arguments, before anything communicates."""
    import torch

    if not isinstance(module, torch.nn.Module):
        raise InputTypeError(f"module must be a torch.nn.Module, got {type(module).__name__}")
    if (lr is None) == (optimizer is None):
        raise InputTypeError("give exactly one of lr (plain SGD) and optimizer (a factory)")
    if lr is not None:
        real_number(lr, "lr", least=0)
    if optimizer is not None and not callable(optimizer):
        raise InputTypeError("optimizer must be a callable params -> torch.optim.Optimizer")
    real_number(bucket_size_mb, "bucket_size_mb", above=0)


def _mixing(topology, world_size, topology_options, local_size=None):
    """The mixing matrices of ``topology`` (a built-in gossip topology's name among them); with
    ``local_size``, of the machine topology on ``world_size / local_size`` machines."""
    machines = world_size // (local_size or 1)
    if isinstance(topology, str):
        try:
            from ..gossip import gossip_topology
        except ImportError:
            raise UnsupportedError("named topologies need topocoll.gossip; pass a matrix or "
                                   "a callable k -> W instead") from None
        topology = gossip_topology(topology, machines, **(topology_options or {}))
    elif topology_options:
        raise InputTypeError("topology_options only apply to a topology given by name")
    if local_size is not None:
        return machine_mixing(topology, machines, world_size, local_size)
    return as_mixing(topology, world_size)


class _Bucket:
    """Contiguous storage of some parameters (their ``.data`` are views of ``flat``)."""

    def __init__(self, params):
        import torch

        self.params = params
        total = sum(p.numel() for p in params)
        self.flat = torch.empty(total, dtype=params[0].dtype, device=params[0].device)
        offset = 0
        with torch.no_grad():
            for p in params:
                n = p.numel()
                view = self.flat[offset:offset + n].view(p.shape)
                view.copy_(p.detach())
                p.data = view
                offset += n
        self.send = torch.empty_like(self.flat)
        self.recvs = []

    def recv_buffers(self, count):
        import torch

        while len(self.recvs) < count:
            self.recvs.append(torch.empty_like(self.flat))
        return self.recvs[:count]


def _make_buckets(params, bucket_bytes):
    """Group parameters by (dtype, device), in order, into buckets of about ``bucket_bytes``."""
    groups = {}
    for p in params:
        groups.setdefault((p.dtype, p.device), []).append(p)
    buckets = []
    for members in groups.values():
        current, size = [], 0
        for p in members:
            nbytes = p.numel() * p.element_size()
            if current and size + nbytes > bucket_bytes:
                buckets.append(_Bucket(current))
                current, size = [], 0
            current.append(p)
            size += nbytes
        if current:
            buckets.append(_Bucket(current))
    return buckets


class DecentralizedDataParallel:
    """Wrap a module for decentralized (gossip) data-parallel training.

    Parameters
    ----------
    module : torch.nn.Module
        The model; its trainable parameters become views into flat buckets (in place).
    topology : GossipTopology, str, callable or array_like
        The mixing matrices ``W_k``: a :class:`topocoll.gossip.GossipTopology`, a built-in
        name such as ``"one-peer-exp"`` (built by ``topocoll.gossip.gossip_topology(name,
        world_size, **topology_options)``), a callable ``k -> W`` or a fixed matrix.
    lr : float, optional
        Plain SGD step size: ``x^{k+1} = W_k x^k - lr * g``. Give ``lr`` or ``optimizer``.
    optimizer : callable, optional
        ``optimizer(params) -> torch.optim.Optimizer``, called once with the (bucketed)
        parameters; stepped from the mixed parameters (see the module).
    bucket_size_mb : float
        Target bucket size in MiB (a larger parameter gets a bucket of its own).
    group : ProcessGroup, optional
        The process group (default: the world); topology ranks are ranks of this group.
    broadcast_parameters : bool
        Copy group rank 0's parameters (those that do not train too) and buffers to every rank
        first (as DDP does), so all replicas start equal. Pass False to keep each rank's own
        ``x^0``.
    topology_options : dict, optional
        Keyword arguments for the built-in topology named by ``topology`` (e.g. ``local_size``).
    slice_bytes : int, optional
        Bytes of one slice of a bucket's messages (default 1 MiB; see
        :func:`~topocoll.runtime.neighbor_allreduce`).
    transport : {"auto", "network", "shared_memory"}
        How the gossip travels (as for :func:`~topocoll.runtime.neighbor_allreduce`): by
        default through shared memory where every rank shares this host, else the process
        group.
    timeout : float, optional
        Seconds to wait for a peer's slice (default: no limit through shared memory, the
        process group's own timeout on the network path).
    hierarchical : bool
        Gossip between machines: ``topology`` is then the **machine** topology (``M = n /
        local_size`` nodes; a name is built for ``M``), and every bucket is mixed by
        :func:`~topocoll.runtime.hierarchical_neighbor_allreduce`, so that ``x^{k+1} = W_eff,k
        x^k - lr * g`` with ``W_eff,k = W_k kron (1/L) 1 1^T`` on machine-major ranks.
    local_size : int, optional
        Ranks per machine ``L`` with ``hierarchical=True`` (default: the launcher's
        ``LOCAL_WORLD_SIZE``). Not a named topology's ``local_size`` (that goes in
        ``topology_options``).
    gossip : {"point-to-point", "allreduce"}
        How a bucket is mixed: point-to-point messages (the default,
        :func:`~topocoll.runtime.neighbor_allreduce`), or one ``all_reduce`` per edge of
        ``W_k`` (:func:`~topocoll.runtime.edge_allreduce`; every ``W_k`` must be edges, else
        :class:`~topocoll.errors.TopologyError`; ``transport`` and ``slice_bytes`` do not
        apply; not with ``hierarchical``).

    Attributes
    ----------
    module, iteration (``k``: the index of the current iterate ``x^k``), mixing (of the
    machines when hierarchical), local_size (None unless hierarchical), lr, optimizer (the
    optimizer built by the factory; None with ``lr``).

    Notes
    -----
    Every method that communicates (the constructor, :meth:`step`, :meth:`global_avg`,
    :meth:`load_state_dict`, :meth:`close`) is collective: all ranks of the group call it, in
    the same order. Call :meth:`close` (or :meth:`global_avg`) before destroying the process
    group, so that no gossip is left in flight; a wrapper dropped without ``close()`` finishes
    its gossip when it is collected (on every rank), so later calls are not confused by it.
    """

    def __init__(self, module, topology, *, lr=None, optimizer=None, bucket_size_mb=25.0,
                 group=None, broadcast_parameters=True, topology_options=None, slice_bytes=None,
                 transport="auto", timeout=None, hierarchical=False, local_size=None,
                 gossip="point-to-point"):
        import torch

        _check_settings(module, lr, optimizer, bucket_size_mb)
        if gossip not in ("point-to-point", "allreduce"):
            raise InputTypeError(f"gossip must be 'point-to-point' or 'allreduce', got "
                                 f"{gossip!r}")
        if gossip == "allreduce" and hierarchical:
            raise UnsupportedError("gossip='allreduce' does not combine with hierarchical=True")
        self.gossip = gossip
        self.rank, self.world_size = group_info(group)
        self.group = group
        if local_size is not None and not hierarchical:
            raise InputTypeError("local_size (ranks per machine) only applies with "
                                 "hierarchical=True; a named topology's local_size goes in "
                                 "topology_options")
        self.local_size = local_size_of(local_size, self.world_size) if hierarchical else None
        self.mixing = _mixing(topology, self.world_size, topology_options, self.local_size)
        if slice_bytes is not None:
            slice_elements(slice_bytes, 1)   # checks it
        self.slice_bytes = slice_bytes
        if timeout is not None:
            real_number(timeout, "timeout", above=0)
        self.timeout = timeout
        self.transport = check_transport(transport)
        # hierarchical gossip finds its own transport, on each sub-group
        self._neighborhood = None
        if gossip == "allreduce":
            mixing_edges(self.mixing, 0)     # not edges: say so before anything is made
        elif not hierarchical:
            self._neighborhood = neighborhood(group, transport, timeout)
        self.module = module
        params = [p for p in module.parameters() if p.requires_grad]
        if not params:
            raise InputTypeError("module has no trainable parameters")
        for p in params:
            check_tensor(p, "every parameter")
        self._buckets = _make_buckets(params, float(bucket_size_mb) * 2 ** 20)
        # parameters that do not train are not gossiped, but start equal and are averaged by
        # global_avg like the rest (as torch's DistributedDataParallel treats them)
        self._frozen = [p for p in module.parameters() if not p.requires_grad]
        if broadcast_parameters and self.world_size > 1:
            self._broadcast_start()
        self._params = params
        self.lr = None if lr is None else float(lr)
        self.optimizer = None  # plain SGD needs none (and torch.optim costs seconds to import)
        if optimizer is not None:
            self.optimizer = optimizer(params)
            if not isinstance(self.optimizer, torch.optim.Optimizer):
                raise InputTypeError("optimizer(params) must return a torch.optim.Optimizer, got "
                                     f"{type(self.optimizer).__name__}")
        self.iteration = 0
        self._pending = None
        self._closed = False
        self._launch()  # gossip of x^0 overlaps the first forward and backward

    def _broadcast_start(self):
        """Group rank 0's buckets, frozen parameters and buffers to every rank."""
        import torch
        import torch.distributed as dist

        src = 0 if self.group is None else dist.get_global_rank(self.group, 0)
        with torch.no_grad():
            for b in self._buckets:
                dist.broadcast(b.flat, src=src, group=self.group)
            for t in self._frozen + list(self.module.buffers()):
                dist.broadcast(t.data, src=src, group=self.group)

    # -- the module's face -------------------------------------------------------------------

    def __call__(self, *args, **kwargs):
        return self.module(*args, **kwargs)

    forward = __call__

    def parameters(self):
        """The wrapped module's parameters."""
        return self.module.parameters()

    def named_parameters(self):
        """The wrapped module's named parameters."""
        return self.module.named_parameters()

    def train(self, mode=True):
        """Set the module's training mode; returns self."""
        self.module.train(mode)
        return self

    def eval(self):
        """Set the module to evaluation mode; returns self."""
        return self.train(False)

    @property
    def buckets(self):
        """``[(number of parameters, number of elements, dtype)]`` of every bucket."""
        return [(len(b.params), b.flat.numel(), b.flat.dtype) for b in self._buckets]

    # -- gossip ------------------------------------------------------------------------------

    def _check_open(self):
        if self._closed:
            raise ProcessGroupError("this DecentralizedDataParallel is closed")

    def _launch(self):
        """Start the gossip of the current iterate x^k with W_k, one message per bucket."""
        if self.local_size is not None:
            self._pending = [hierarchical_neighbor_allreduce(
                b.flat, self.mixing, local_size=self.local_size, iteration=self.iteration,
                async_op=True, group=self.group, tag=TAG_BASE + tag, out=b.flat,
                slice_bytes=self.slice_bytes, transport=self.transport, timeout=self.timeout)
                for tag, b in enumerate(self._buckets)]   # each snapshots its bucket first
            return
        if self.gossip == "allreduce":
            self._launch_edges()
            return
        plan = self.mixing.plan(self.iteration, self.rank)
        handles = []
        for tag, b in enumerate(self._buckets):
            b.send.copy_(b.flat)  # the snapshot x^k; the parameters stay usable meanwhile
            recvs = None if self._neighborhood else b.recv_buffers(len(plan.sources))
            handles.append(post_exchange(b.send, plan, recvs, self.group, TAG_BASE + tag,
                                         out=b.flat, iteration=self.iteration,
                                         slice_bytes=self.slice_bytes,
                                         neighborhood=self._neighborhood, timeout=self.timeout))
        self._pending = handles

    def _launch_edges(self):
        """Start the gossip of x^k as one all_reduce per bucket on this rank's edge of W_k."""
        edges = mixing_edges(self.mixing, self.iteration)
        edge = next(e for e in edges if self.rank in e.ranks)
        sub = edge_group(edges, self.rank, self.world_size, self.group)
        handles = []
        for b in self._buckets:
            b.send.copy_(b.flat)  # summed in place; the parameters (x_i^k) stay as they are
            handles.append(post_edge(b.send, b.flat, edge, sub, b.flat,
                                     iteration=self.iteration, timeout=self.timeout))
        self._pending = handles

    def _drain(self):
        """Finish a gossip in flight without using its result (its x^k is still in place)."""
        if self._pending is not None:
            for h in self._pending:
                h._wait_transfers()
            self._pending = None

    def step(self):
        """Finish iteration ``k``: ``x^{k+1} = W_k x^k - lr * g``; launch the gossip of x^{k+1}.

        Uses the gradients in ``.grad`` (taken at ``x^k``) and clears them (sets them to None).
        Collective.
        """
        import torch

        self._check_open()
        if self._pending is None:  # after global_avg / load_state_dict: gossip now, blocking
            self._launch()
        with torch.no_grad():
            for h in self._pending:
                h.wait()  # writes W_k x^k into the bucket, i.e. into the parameters
            self._pending = None
            if self.optimizer is not None:
                self.optimizer.step()
            else:
                for p in self._params:
                    if p.grad is not None:
                        p.add_(p.grad, alpha=-self.lr)
        self.zero_grad()
        self.iteration += 1
        self._launch()

    def zero_grad(self, set_to_none=True):
        """Clear the gradients (``step`` already does)."""
        if self.optimizer is not None:
            self.optimizer.zero_grad(set_to_none=set_to_none)
            return
        for p in self._params:
            if p.grad is not None:
                if set_to_none:
                    p.grad = None
                else:
                    p.grad.detach_().zero_()

    def global_avg(self, buffers=True):
        """Replace every replica by the average over all ranks (before evaluation). Collective.

        The gossip in flight is dropped; the next :meth:`step` mixes the averaged iterate.
        Floating-point parameters that do not train are averaged too; ``buffers`` also
        averages floating-point buffers (e.g. batch-norm statistics).
        """
        import torch
        import torch.distributed as dist

        self._check_open()
        self._drain()
        with torch.no_grad():
            tensors = [b.flat for b in self._buckets]
            tensors += [p.data for p in self._frozen if p.is_floating_point()]
            if buffers:
                tensors += [t for t in self.module.buffers() if t.is_floating_point()]
            for t in tensors:
                dist.all_reduce(t, op=dist.ReduceOp.SUM, group=self.group)
                t.div_(self.world_size)

    def close(self):
        """Finish the gossip in flight; the wrapper cannot step afterwards. Collective."""
        if not self._closed:
            self._drain()
            self._closed = True

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- checkpoints -------------------------------------------------------------------------

    def state_dict(self):
        """This rank's state: its replica ``x_i^k``, the optimizer's state and ``k``.

        A snapshot (copies, unaffected by later steps). Local (no communication); save one per
        rank to resume exactly.
        """
        return {"format": STATE_FORMAT, "version": 1, "iteration": self.iteration,
                "rank": self.rank, "world_size": self.world_size,
                "module": {k: v.detach().clone() for k, v in self.module.state_dict().items()},
                # a deep copy: torch's optimizer state dict holds the live momentum buffers
                "optimizer": (None if self.optimizer is None
                              else copy.deepcopy(self.optimizer.state_dict()))}

    def load_state_dict(self, state):
        """Resume from :meth:`state_dict` (of the same rank). Collective.

        Training continues exactly as it would have from the saved point.
        """
        self._check_open()
        if not isinstance(state, dict) or state.get("format") != STATE_FORMAT:
            raise InputTypeError(f"not a {STATE_FORMAT} state dict")
        k = whole_number(state.get("iteration"), "state dict iteration", 0)
        if state.get("world_size") != self.world_size:
            raise ProcessGroupError(f"state dict is from a world of {state.get('world_size')} "
                                    f"ranks, this group has {self.world_size}")
        self._drain()
        self.module.load_state_dict(state["module"])  # copies in place: the views stay views
        if self.optimizer is not None:
            self.optimizer.load_state_dict(state["optimizer"])
        self.iteration = k
