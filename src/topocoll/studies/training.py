"""One data-parallel training iteration: backward compute overlapped with gradient allreduces.

A :class:`Profile` lists a model's gradients in the order backpropagation makes them ready (last
layer first), each with its size in bytes and its *ready time*: the forward time plus the
backward time up to and including that layer. :func:`simulate_iteration` overlaps these ready
times with allreduces whose duration ``comm_time(size_bytes)`` (seconds) the caller gives, under
one of two policies:

``"wait-free"``
    Zhao et al., "Efficient Direct-Connect Topologies for Collective Communications" (NSDI 2025),
    section 8.4: (1) if no allreduce is pending, an allreduce of the next ready layer starts as
    soon as that layer is ready; (2) if an allreduce is pending, every layer that becomes ready
    while waiting is buffered, and all of them are allreduced together as soon as the pending
    allreduce completes. Ready times are not affected by the allreduces.
``"buckets"``
    PyTorch DistributedDataParallel's fixed buckets: gradients are fused in ready order into
    buckets of at least ``bucket_size`` bytes (the rest is the last bucket); a bucket's
    allreduce starts when its last gradient is ready and the previous allreduce is done.

The iteration ends when both the compute and the last allreduce have ended; ``exposed_comm`` is
the part of the iteration the allreduces add to the compute.

Bandwidth: every pricing function takes ``link_bandwidth`` (every link's speed; the default,
100 Gbps per link, the one default cluster of :mod:`topocoll.defaults`) or ``bandwidth`` (each
node's egress split over its out-links: the NSDI 2025 paper's convention, in which its figures
are quoted), never both; :func:`priced_network` applies either to a topology.

Allreduce costs: :class:`AllreduceCost` is the affine alpha-beta step model ``latency + per_byte
* M`` (docs/math.md section 1) and is callable, so it serves as ``comm_time``.
:func:`lower_bound_cost` gives the bound ``2 * (moore_depth(N, d) * alpha + (N-1)/N * M/B)`` of
any allreduce on N nodes of degree d, :func:`schedule_cost` prices an allreduce schedule once
(the step model is affine in M), and :func:`baseline_cost` prices the NSDI 2025 paper's
baselines, ShiftedRing and the double binary tree, on their own topologies.

Layers ready at 1, 2 and 2.25 s and 1.5 s per allreduce: ``c`` goes alone at 1 s; ``b`` and
``a`` become ready while it is pending and go together when it completes at 2.5 s.

>>> p = Profile.from_layers("toy", [("c", 100, 1.0), ("b", 100, 2.0), ("a", 100, 2.25)])
>>> r = simulate_iteration(p, lambda size: 1.5)
>>> r.iteration_time, r.compute_time, r.exposed_comm
(4.0, 2.25, 1.75)
>>> [(a.start, a.layers) for a in r.allreduces]
[(1.0, ('c',)), (2.5, ('b', 'a'))]
"""

import math
from dataclasses import dataclass, field

from ..defaults import bandwidth_convention
from ..errors import InputTypeError, UnsupportedError
from ..results import Result, Status
from ..units import (format_size, format_time, parse_bandwidth, parse_size, parse_time,
                     whole_number)

__all__ = ["ProfileLayer", "Profile", "Allreduce", "IterationResult", "simulate_iteration",
           "AllreduceCost", "LinkModelCost", "lower_bound_cost", "schedule_cost",
           "baseline_cost", "baseline_closed_form", "CLOSED_FORM", "priced_network",
           "node_bandwidth_of",
           "plot_iteration", "POLICIES", "BASELINES"]

#: The overlap policies :func:`simulate_iteration` knows.
POLICIES = ("wait-free", "buckets")

#: Baseline allreduces of :func:`baseline_cost`: name -> (topology family, generator).
BASELINES = {"ShiftedRing": ("shiftedring", "shiftedring"), "DBT": ("dbt", "dbt")}


def _number(value, what, *, positive=False):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputTypeError(f"{what} must be a number, got {value!r}")
    value = float(value)
    if not math.isfinite(value) or value < 0 or (positive and value == 0):
        raise UnsupportedError(f"{what} must be {'positive' if positive else 'non-negative'} "
                               f"and finite, got {value!r}")
    return value


# ---------------------------------------------------------------------- profiles
@dataclass(frozen=True)
class ProfileLayer:
    """One gradient: its layer ``name``, ``bytes`` and ``ready`` time (seconds from the start of
    the iteration)."""

    name: str
    bytes: float
    ready: float

    def to_dict(self):
        return {"name": self.name, "bytes": self.bytes, "ready": self.ready}


@dataclass(frozen=True)
class Profile:
    """A model's gradients in backward (ready) order and its compute time.

    Attributes
    ----------
    name : str
        The model.
    layers : tuple of ProfileLayer
        Gradients with bytes > 0, sorted by ready time (backward order for ties).
    compute_time : float
        Forward plus backward time of one iteration (seconds); at least the last ready time.
    forward_time : float
        The forward pass alone (seconds; 0 when unknown).
    description : str
        One line saying where the numbers come from.

    Examples
    --------
    >>> p = Profile.from_layers("toy", [("fc", 8, 2.0), ("conv", 4, 3.0)], compute_time=3.5)
    >>> p.total_bytes, p.compute_time, p.forward_order_bytes()
    (12.0, 3.5, [4.0, 8.0])
    """

    name: str
    layers: tuple
    compute_time: float
    forward_time: float = 0.0
    description: str = ""

    def __post_init__(self):
        if not self.layers:
            raise UnsupportedError(f"profile {self.name!r} has no gradient bytes (no layer with "
                                   "parameters)")
        last = max(layer.ready for layer in self.layers)
        if self.compute_time < last:
            raise UnsupportedError(f"profile {self.name!r}: compute time {self.compute_time!r} "
                                   f"ends before the last gradient is ready ({last!r})")
        if self.forward_time > self.compute_time:
            raise UnsupportedError(f"profile {self.name!r}: the forward pass "
                                   f"({self.forward_time!r} s) cannot take longer than the whole "
                                   f"compute ({self.compute_time!r} s), which includes it")

    @classmethod
    def from_layers(cls, name, layers, *, compute_time=None, forward_time=0.0, description=""):
        """A profile from ``(name, bytes, ready)`` triples (or :class:`ProfileLayer`) in any
        order: layers of 0 bytes are dropped, the rest sorted by ready time (stable, so ties keep
        the given order). ``bytes`` may be a size string (``"1MiB"``), ``ready`` a time string
        (``"3ms"``). ``compute_time`` defaults to the last ready time."""
        if isinstance(layers, (str, bytes)) or not hasattr(layers, "__iter__"):
            raise InputTypeError(f"profile layers must be a list, got {layers!r}")
        items = []
        for i, layer in enumerate(layers):
            if isinstance(layer, ProfileLayer):
                layer = (layer.name, layer.bytes, layer.ready)
            if not isinstance(layer, (tuple, list)) or len(layer) != 3:
                raise UnsupportedError(f"profile layer {i}: expected (name, bytes, ready), got "
                                       f"{layer!r}")
            lname, size, ready = layer
            size = _size(size, f"layer {i} bytes")
            ready = _time(ready, f"layer {i} ready time")
            if size > 0:
                items.append(ProfileLayer(str(lname), size, ready))
        items.sort(key=lambda x: x.ready)
        if compute_time is None:
            compute_time = max((x.ready for x in items), default=0.0)
        compute_time = _time(compute_time, "compute time")
        forward_time = _time(forward_time, "forward time")
        return cls(str(name), tuple(items), compute_time, forward_time, description)

    @property
    def total_bytes(self):
        """Gradient bytes of one iteration."""
        return float(sum(x.bytes for x in self.layers))

    def forward_order_bytes(self):
        """Gradient sizes in forward order (the reverse of ready order), as
        :meth:`topocoll.finder.Workload.from_layers` takes them."""
        return [x.bytes for x in reversed(self.layers)]

    def to_dict(self):
        return {"name": self.name, "compute_time": self.compute_time,
                "forward_time": self.forward_time, "total_bytes": self.total_bytes,
                "description": self.description,
                "layers": [x.to_dict() for x in self.layers]}


def _size(value, what):
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise InputTypeError(f"{what} must be a size in bytes, got {value!r}")
    value = _number(value, what) if isinstance(value, (int, float)) else \
        float(parse_size(value, what=what))
    if value != int(value):
        raise UnsupportedError(f"{what} must be a whole number of bytes, got {value!r}")
    return value


def _time(value, what):
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise InputTypeError(f"{what} must be a time in seconds, got {value!r}")
    if isinstance(value, (int, float)):
        return _number(value, what)
    return float(parse_time(value, what=what))


# ---------------------------------------------------------------------- simulation
@dataclass(frozen=True)
class Allreduce:
    """One allreduce of the iteration: ``start`` and ``end`` (s), ``bytes`` and the names of the
    ``layers`` it carries."""

    start: float
    end: float
    bytes: float
    layers: tuple

    def to_dict(self):
        return {"start": self.start, "end": self.end, "bytes": self.bytes,
                "layers": list(self.layers)}


@dataclass
class IterationResult(Result):
    """What :func:`simulate_iteration` found (all times in seconds).

    Attributes
    ----------
    model : str
        The profile's name.
    policy : str
        ``"wait-free"`` or ``"buckets"``.
    bucket_size : float or None
        The bucket size of the ``"buckets"`` policy (bytes).
    iteration_time : float
        When both the compute and the last allreduce have ended.
    compute_time : float
        Forward plus backward compute.
    comm_time : float
        Total allreduce busy time (sum of the allreduces' durations).
    exposed_comm : float
        ``iteration_time - compute_time``: the communication not hidden behind compute.
    allreduces : list of Allreduce
        In the order they ran (they never overlap one another).
    """

    model: str
    policy: str
    bucket_size: float | None
    iteration_time: float
    compute_time: float
    comm_time: float
    exposed_comm: float
    allreduces: list = field(default_factory=list)

    def to_dict(self):
        """The ``--json`` form: the status fields, the times and every allreduce."""
        return {**super().to_dict(), "model": self.model, "policy": self.policy,
                "bucket_size": self.bucket_size, "iteration_time": self.iteration_time,
                "compute_time": self.compute_time, "comm_time": self.comm_time,
                "exposed_comm": self.exposed_comm,
                "allreduces": [a.to_dict() for a in self.allreduces]}


def simulate_iteration(profile, comm_time, policy="wait-free", bucket_size=None):
    """Overlap one iteration's compute with its gradient allreduces.

    Parameters
    ----------
    profile : Profile
        The model's gradients in ready order (see :class:`Profile`).
    comm_time : callable
        ``comm_time(size_bytes) -> seconds``: how long one allreduce of that many bytes takes
        (e.g. an :class:`AllreduceCost`).
    policy : {"wait-free", "buckets"}
        ``"wait-free"``: the NSDI 2025 paper's two rules (see the module docstring);
        ``"buckets"``: PyTorch DDP's fixed buckets of at least ``bucket_size`` bytes.
    bucket_size : float or str, optional
        Bucket size of the ``"buckets"`` policy; default ``defaults.BUCKET_SIZE`` (25 MiB).
        Not allowed with ``"wait-free"``.

    Returns
    -------
    IterationResult

    Raises
    ------
    UnsupportedError
        An unknown policy, a bucket size with ``"wait-free"``, or a ``comm_time`` that returns
        a negative or non-finite time.

    Examples
    --------
    Three layers ready at 1, 2 and 3 s, one second of allreduce whatever the size, buckets of
    2 bytes: the first bucket holds two layers and starts at 2 s, the last at 3 s.

    >>> p = Profile.from_layers("toy", [("c", 1, 1.0), ("b", 1, 2.0), ("a", 1, 3.0)])
    >>> r = simulate_iteration(p, lambda size: 1.0, policy="buckets", bucket_size=2)
    >>> [(a.start, a.end, a.layers) for a in r.allreduces]
    [(2.0, 3.0, ('c', 'b')), (3.0, 4.0, ('a',))]
    >>> r.iteration_time, r.exposed_comm
    (4.0, 1.0)
    """
    from .. import defaults

    if not isinstance(profile, Profile):
        raise InputTypeError(f"profile must be a Profile, got {type(profile).__name__}")
    if not callable(comm_time):
        raise InputTypeError(f"comm_time must be a callable size -> seconds, got {comm_time!r}")
    if policy not in POLICIES:
        raise UnsupportedError(f"unknown policy {policy!r}; use one of {', '.join(POLICIES)}")
    if policy == "wait-free":
        if bucket_size is not None:
            raise UnsupportedError("bucket_size applies to the 'buckets' policy, not "
                                   "'wait-free'")
        groups = _wait_free(profile.layers, comm_time)
        cap = None
    else:
        cap = _size(defaults.BUCKET_SIZE if bucket_size is None else bucket_size, "bucket size")
        if cap <= 0:
            raise UnsupportedError(f"bucket size must be positive, got {bucket_size!r}")
        groups = _buckets(profile.layers, comm_time, cap)
    busy = sum(a.end - a.start for a in groups)
    last = max(a.end for a in groups)
    iteration = max(profile.compute_time, last)
    exposed = iteration - profile.compute_time
    how = "wait-free" if cap is None else f"buckets of {format_size(cap)}"
    message = (f"{profile.name}, {how}: iteration {format_time(iteration)} = compute "
               f"{format_time(profile.compute_time)} + exposed allreduce {format_time(exposed)} "
               f"({len(groups)} allreduces, {format_time(busy)} busy)")
    return IterationResult(status=Status.SUCCESS, message=message, model=profile.name,
                           policy=policy, bucket_size=cap, iteration_time=iteration,
                           compute_time=profile.compute_time, comm_time=busy,
                           exposed_comm=exposed, allreduces=groups)


def _duration(comm_time, size):
    t = comm_time(size)
    if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t) or t < 0:
        raise UnsupportedError(f"comm_time({size:g}) returned {t!r}; it must return a "
                               "non-negative time in seconds")
    return float(t)


def _run(start, layers, comm_time):
    size = float(sum(x.bytes for x in layers))
    return Allreduce(start, start + _duration(comm_time, size), size,
                     tuple(x.name for x in layers))


def _wait_free(layers, comm_time):
    """The two rules: a lone layer starts when it is ready if the network is idle; layers that
    become ready while an allreduce is pending go together when it completes."""
    out = []
    i, n = 0, len(layers)
    free = -math.inf            # when the pending allreduce completes
    while i < n:
        if layers[i].ready > free:          # rule 1: nothing pending when it becomes ready
            out.append(_run(layers[i].ready, layers[i:i + 1], comm_time))
            i += 1
        else:                               # rule 2: buffered while waiting
            j = i
            while j < n and layers[j].ready <= free:
                j += 1
            out.append(_run(free, layers[i:j], comm_time))
            i = j
        free = out[-1].end
    return out


def _buckets(layers, comm_time, cap):
    """PyTorch DDP: fuse in ready order until a bucket holds ``cap`` bytes; a bucket starts when
    its last gradient is ready and the previous allreduce is done."""
    out, bucket, held = [], [], 0.0
    free = 0.0
    for k, layer in enumerate(layers):
        bucket.append(layer)
        held += layer.bytes
        if held >= cap or k == len(layers) - 1:
            out.append(_run(max(layer.ready, free), bucket, comm_time))
            free = out[-1].end
            bucket, held = [], 0.0
    return out


# ---------------------------------------------------------------------- allreduce costs
@dataclass(frozen=True)
class AllreduceCost:
    """The alpha-beta step model of one allreduce: ``latency + per_byte * M`` seconds for M
    bytes (docs/math.md section 1: ``T_L = steps * alpha`` and ``T_B`` linear in M). Callable,
    so it is a ``comm_time`` for :func:`simulate_iteration`.

    Examples
    --------
    >>> c = AllreduceCost.from_step_model(4, 2.0, alpha="10us", bandwidth="100Gbps")
    >>> round(c(12.5e9) , 6)    # 4 steps of 10 us + 2 * 12.5 GB / 12.5 GB/s
    2.00004
    """

    name: str
    latency: float
    per_byte: float
    steps: int | None = None

    @classmethod
    def from_step_model(cls, steps, t_b, *, alpha, bandwidth, name=""):
        """``steps`` steps of latency ``alpha`` and ``t_b`` in units of M/B at node bandwidth
        ``bandwidth``: ``steps * alpha + t_b * M / bandwidth``."""
        alpha = float(parse_time(alpha, what="alpha"))
        bandwidth = float(parse_bandwidth(bandwidth, what="bandwidth"))
        return cls(name, steps * alpha, _number(t_b, "T_B") / bandwidth, int(steps))

    def __call__(self, size):
        return self.latency + self.per_byte * size

    def to_dict(self):
        return {"name": self.name, "steps": self.steps, "latency": self.latency,
                "per_byte": self.per_byte}


def priced_network(topology, *, alpha, bandwidth=None, link_bandwidth=None):
    """``topology`` with latency ``alpha`` on every link and the bandwidth convention of
    :func:`~topocoll.defaults.bandwidth_convention`: every link ``link_bandwidth`` (default
    100 Gbps) or each node's
    egress ``bandwidth`` split evenly over its out-links.

    >>> from topocoll.topology import topology
    >>> t = priced_network(topology("dbt:8"), alpha="1us")
    >>> t.describe_bandwidth()
    '100Gbps per link'
    """
    node, link = bandwidth_convention(bandwidth, link_bandwidth)
    topo = topology.with_links(latency=float(parse_time(alpha, what="alpha")), bandwidth=link)
    return topo if node is None else topo.with_node_bandwidth(node)


def node_bandwidth_of(topology, *, bandwidth=None, link_bandwidth=None):
    """The egress B per node that prices a ring or a bound in units of M/B on ``topology``:
    ``bandwidth`` itself under the per-node convention, else the least node's out-links times
    the link bandwidth (every node's, on a regular topology).

    >>> from topocoll.topology import topology
    >>> node_bandwidth_of(topology("torus:4x4"), link_bandwidth=1.0)
    4.0
    """
    node, link = bandwidth_convention(bandwidth, link_bandwidth)
    if node is not None:
        return node
    return float(topology.out_degree(multi=True).min()) * link


def lower_bound_cost(nodes, degree, *, alpha, bandwidth=None, link_bandwidth=None):
    """The two-phase bound: no allreduce on N nodes of degree d made of a reduce-scatter
    followed by an allgather beats ``2 * (moore_depth(N, d) * alpha + (N-1)/N * M / B)``
    (Moore-depth steps in each phase; every node sends, then receives, (N-1)/N of the buffer).
    Allreduces of other shapes may (see
    :func:`topocoll.finder.workload.any_allreduce_lower_bound`). Per link (the default), ``B =
    d * link_bandwidth``.

    >>> c = lower_bound_cost(1024, 4, alpha="10us", bandwidth="100Gbps")
    >>> c.steps, round(c(2**20) * 1e6, 1)
    (10, 267.6)
    >>> round(lower_bound_cost(1024, 4, alpha="10us")(2**20) * 1e6, 1)    # 4 links of 100Gbps
    141.9
    """
    from ..topology.metrics import moore_depth

    nodes, degree = whole_number(nodes, "nodes", 2), whole_number(degree, "degree", 1)
    node, link = bandwidth_convention(bandwidth, link_bandwidth)
    bandwidth = node if node is not None else degree * link
    return AllreduceCost.from_step_model(2 * moore_depth(nodes, degree),
                                         2.0 * (nodes - 1) / nodes, alpha=alpha,
                                         bandwidth=bandwidth, name="two-phase bound")


def schedule_cost(schedule, *, alpha, bandwidth=None, link_bandwidth=None, name=None):
    """Price an allreduce schedule once: its topology gets latency ``alpha`` on every link and
    the bandwidth of :func:`priced_network` (every link ``link_bandwidth``, default 100 Gbps,
    or egress ``bandwidth`` per node split over its out-links); the step model gives ``T_L`` and
    ``T_B`` per byte, and the result is affine in M. The schedule is not verified here (do it
    first, as the CLI does).

    >>> from topocoll.synth import generate
    >>> c = schedule_cost(generate("ring:4", "allreduce", "ring"), alpha="1us",
    ...                   bandwidth="1GB/s")
    >>> c.steps, round(c(1e9), 9)    # 6 steps; 2 * 3/4 * M over 1/2 GB/s per direction
    (6, 3.000006)
    """
    from ..schedule.cost import step_costs

    if getattr(schedule, "collective", None) is None or schedule.collective.name != "allreduce":
        got = getattr(getattr(schedule, "collective", None), "name", type(schedule).__name__)
        raise UnsupportedError(f"train-sim needs an allreduce schedule, got {got}")
    topo = priced_network(schedule.topology, alpha=alpha, bandwidth=bandwidth,
                          link_bandwidth=link_bandwidth)
    steps, alpha_t, beta_t = step_costs(schedule.replace(topology=topo))
    return AllreduceCost(name or schedule.algorithm or "schedule", float(alpha_t.sum()),
                         float(beta_t.sum()), int(steps.size))


class LinkModelCost:
    """An allreduce schedule timed by the link model (docs/math.md section 5) at each size it is
    asked for, remembered per size: not affine in M, so every distinct allreduce size is one
    simulation. Callable, so it is a ``comm_time`` for :func:`simulate_iteration`.

    >>> from topocoll.synth import generate
    >>> c = LinkModelCost(generate("uniring:4", "allreduce", "ring"), alpha="1us",
    ...                   bandwidth="1GB/s")
    >>> round(c(4e9), 6)     # 6 steps, each 1 GB over one 1 GB/s link plus 1 us
    6.000006
    """

    def __init__(self, schedule, *, alpha, bandwidth=None, link_bandwidth=None, name=None):
        if getattr(schedule, "collective", None) is None or \
                schedule.collective.name != "allreduce":
            raise UnsupportedError("train-sim needs an allreduce schedule")
        topo = priced_network(schedule.topology, alpha=alpha, bandwidth=bandwidth,
                              link_bandwidth=link_bandwidth)
        self.schedule = schedule.replace(topology=topo)
        self.name = name or schedule.algorithm or "schedule"
        self.steps = schedule.num_steps
        self._times = {}

    def __call__(self, size):
        from ..schedule.linkmodel import simulate

        key = float(size)
        if key not in self._times:
            self._times[key] = simulate(self.schedule, key).time
        return self._times[key]

    def to_dict(self):
        return {"name": self.name, "steps": self.steps, "model": "link",
                "sizes_simulated": len(self._times)}


def baseline_cost(baseline, nodes, *, alpha, bandwidth=None, link_bandwidth=None):
    """The allreduce of a baseline of the NSDI 2025 paper on its own topology of ``nodes``
    nodes (degree 4): ``"ShiftedRing"`` (TopoOpt's two superposed rings on ``shiftedring:N``)
    or ``"DBT"`` (NCCL's double binary tree on ``dbt:N``), generated and priced once.

    DBT is priced as NCCL runs it, pipelined: a
    :class:`~topocoll.schedule.cost.PipelinedCost` whose chunk count K minimizes the step-model
    time of each size (docs/math.md section 1, "Pipelined schedules"); its ``steps``,
    ``latency`` and ``per_byte`` are those of the unpipelined schedule (K = 1).

    >>> c = baseline_cost("ShiftedRing", 8, alpha="10us", bandwidth="100Gbps")
    >>> c.steps, round(c.per_byte * 12.5e9, 6)     # 2(N-1) steps, T_B = 2 (N-1)/N M/B
    (14, 1.75)
    >>> d = baseline_cost("DBT", 16, alpha="10us", bandwidth="100Gbps")
    >>> d.best(2**26)[0], d(2**26) < d.latency + d.per_byte * 2**26   # 64 MiB: K chunks
    (91, True)
    """
    from ..synth import generate
    from ..topology.registry import topology

    if baseline not in BASELINES:
        raise UnsupportedError(f"unknown baseline {baseline!r}; use one of "
                               f"{', '.join(BASELINES)}")
    nodes = whole_number(nodes, "nodes", 3)
    family, algorithm = BASELINES[baseline]
    schedule = generate(topology(f"{family}:{nodes}"), "allreduce", algorithm)
    if baseline == "DBT":       # NCCL pipelines chunks along the trees
        from ..schedule.cost import PipelinedCost

        topo = priced_network(schedule.topology, alpha=alpha, bandwidth=bandwidth,
                              link_bandwidth=link_bandwidth)
        return PipelinedCost.of(schedule.replace(topology=topo), name=baseline)
    return schedule_cost(schedule, alpha=alpha, bandwidth=bandwidth,
                         link_bandwidth=link_bandwidth, name=baseline)


#: How :func:`baseline_closed_form` prices: the step model from the baseline's structure.
CLOSED_FORM = "closed form"


def baseline_closed_form(baseline, nodes, *, alpha, bandwidth=None, link_bandwidth=None):
    """The cost :func:`baseline_cost` gives, without building the schedule (whose ``~N^2``
    transfers take minutes and gigabytes at thousands of nodes):

    * ``"ShiftedRing"``: two rings, each with half of every shard, ring reduce-scatter then
      ring allgather: ``2(N-1)`` steps, every link carrying ``M/(2N)`` per step at ``B/2``
      (each node has two out-links), so ``T_B = 2(N-1)/N * M/B`` (per link, B is the
      egress of a node of ``shiftedring:N``, :func:`node_bandwidth_of`);
    * ``"DBT"``: :func:`topocoll.synth.trees.dbt_schedule` moves, for *every* shard, half a
      shard over each tree edge at the same step (up at ``H - depth + 1``, down at
      ``H + depth``), so a link's load in a step is ``M/2`` times the number of trees using it
      then, whatever N is: the step model of the ``dbt:N`` topology (node bandwidth split over
      each node's links) is priced from the two trees' ``O(N)`` edges, pipelined in chunks as
      :func:`baseline_cost` prices it (:meth:`~topocoll.schedule.cost.PipelinedCost.from_loads`).

    Both agree with the generated schedules (tests/studies/test_training_scale.py checks them
    against :func:`baseline_cost` on small N).

    >>> c = baseline_closed_form("ShiftedRing", 8, alpha="10us", bandwidth="100Gbps")
    >>> c.steps, round(c.per_byte * 12.5e9, 6)
    (14, 1.75)
    """
    import numpy as np

    from ..topology.families.trees import dbt_trees
    from ..topology.registry import topology

    if baseline not in BASELINES:
        raise UnsupportedError(f"unknown baseline {baseline!r}; use one of "
                               f"{', '.join(BASELINES)}")
    nodes = whole_number(nodes, "nodes", 3)
    alpha_s = float(parse_time(alpha, what="alpha"))
    family = BASELINES[baseline][0]
    topo = topology(f"{family}:{nodes}")       # same errors as the generator (no shiftedring:6)
    if baseline == "ShiftedRing":
        steps, t_b = 2 * (nodes - 1), 2.0 * (nodes - 1) / nodes
        bw = node_bandwidth_of(topo, bandwidth=bandwidth, link_bandwidth=link_bandwidth)
        return AllreduceCost.from_step_model(steps, t_b, alpha=alpha_s, bandwidth=bw,
                                             name=baseline)
    topo = priced_network(topo, alpha=alpha_s, bandwidth=bandwidth, link_bandwidth=link_bandwidth)
    src, dst, step = [], [], []
    for parent in dbt_trees(nodes):
        depth = np.zeros(nodes, dtype=np.int64)
        cur = parent.copy()
        while np.any(cur >= 0):
            live = cur >= 0
            depth[live] += 1
            cur[live] = parent[cur[live]]
        height = int(depth.max())
        kids = np.flatnonzero(parent >= 0)
        src += [kids, parent[kids]]
        dst += [parent[kids], kids]
        step += [height - depth[kids] + 1, height + depth[kids]]
    src, dst, step = np.concatenate(src), np.concatenate(dst), np.concatenate(step)
    _, _, pair_bw, pair_lat = topo.pairs
    pidx = topo.pair_index(src, dst)
    key = step * pair_bw.size + pidx
    ukey, inverse = np.unique(key, return_inverse=True)
    load = 0.5 * np.bincount(inverse, minlength=ukey.size)     # half of M per tree
    pair = ukey % pair_bw.size
    per_byte = load / pair_bw[pair]
    steps = ukey // pair_bw.size
    if hasattr(baseline_cost_model(), "from_loads"):    # priced pipelined, as baseline_cost does
        return baseline_cost_model().from_loads(baseline, steps, pair, per_byte, pair_lat[pair])
    starts = np.flatnonzero(np.r_[True, steps[1:] != steps[:-1]])
    latency = float(np.maximum.reduceat(pair_lat[pair], starts).sum())
    return AllreduceCost(baseline, latency, float(np.maximum.reduceat(per_byte, starts).sum()),
                         int(starts.size))


def baseline_cost_model():
    """The class DBT's price is (:class:`topocoll.schedule.cost.PipelinedCost`: NCCL pipelines
    chunks along the trees), or :class:`AllreduceCost` where that is missing."""
    from ..schedule import cost

    return getattr(cost, "PipelinedCost", AllreduceCost)


# ---------------------------------------------------------------------- plot
def plot_iteration(result, path, *, profile=None, title=None):
    """Draw one iteration: compute (forward, backward) on one row, the allreduces on another,
    and the gradients' ready times as ticks when ``profile`` is given; the communication not
    hidden behind compute is shaded. The time axis is in us, ms or s (whichever fits), the
    legend sits beside the axes and a long title is wrapped. Returns ``path``."""
    from ..plotting import new_axes, save_figure, time_scale, wrap_title
    from ..units import format_time

    k, unit = time_scale(result.iteration_time)
    text = wrap_title(title or result.message, 7.6, 8)
    fig, ax = new_axes((10, 3 + 0.16 * text.count("\n")))
    forward = profile.forward_time if profile is not None else 0.0
    if forward > 0:
        ax.broken_barh([(0, forward * k)], (1.1, 0.8), facecolors="tab:gray",
                       label="compute: forward")
    ax.broken_barh([(forward * k, (result.compute_time - forward) * k)], (1.1, 0.8),
                   facecolors="tab:blue", label="compute: backward")
    bars = [(a.start * k, max(a.end - a.start, 0.0) * k) for a in result.allreduces]
    ax.broken_barh(bars, (0.1, 0.8), facecolors="tab:orange", edgecolors="black",
                   linewidth=0.3, label=f"allreduce ({len(bars)} of them)")
    if result.iteration_time > result.compute_time:
        ax.axvspan(result.compute_time * k, result.iteration_time * k, color="tab:red",
                   alpha=0.12, linewidth=0,
                   label=f"exposed allreduce ({format_time(result.exposed_comm)})")
    rows, names = [0.5, 1.5], ["allreduce", "compute"]
    if profile is not None:
        ax.vlines([x.ready * k for x in profile.layers], 2.1, 2.5, colors="black",
                  linewidth=0.4, label="a layer's gradient ready")
        rows.append(2.3)
        names.append("gradients")
    ax.set_yticks(rows, names)
    ax.set_ylim(0.0, rows[-1] + 0.3)
    ax.set_xlabel(f"time ({unit})")
    ax.set_xlim(0, result.iteration_time * k * 1.02)
    ax.set_title(text, fontsize=8)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, frameon=False)
    return save_figure(fig, path)
