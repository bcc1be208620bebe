"""Training iterations in a loop: compute layer by layer, collectives on one network.

:func:`simulate_training` runs ``iterations`` iterations of a
:class:`~topocoll.studies.workloads.TrainingWorkload` the way ASTRA-sim's workload layer runs
them (``Workload::iterate_data_parallel`` and the hybrid loops):

* **forward**, layer 0 to the last: a layer's forward waits until its weight-gradient collective
  of the previous iteration has completed and then its ``update`` time has passed (ASTRA-sim's
  ``is_weight_grad_comm_finished_blocking``); hybrid loops then send the layer's forward
  collective and wait for it;
* **backward**, the last layer to layer 0. DATA loop: the weight gradient, whose collective is
  sent without waiting, then the input gradient -- except layer 0's, which nothing needs (the
  gradient of the input data). Transformer loop: the input gradient and its collective
  (waited for), then the weight gradient and its collective (not waited for). Hybrid loop: the
  input gradient, its collective sent (not for layer 0), the weight gradient and its
  collective, then the input-gradient collective waited for.

Iteration k *ends* when its backward compute has ended and every one of its weight-gradient
collectives has completed and been followed by its update time (by then every forward of
iteration k + 1 could have passed its wait); its time is its end minus the end of iteration
k - 1 (0 for the first). With one iteration and the DATA loop this is the single-iteration model
of :func:`topocoll.studies.training.simulate_iteration` (when the layers' input gradients are
0); the steady state is the mean of iterations 2..K.

How collectives share the network (``policy``):

``"wait-free"``
    One collective at a time. Zhao et al. (NSDI 2025), section 8.4: a collective sent while
    the network is idle starts at once; weight-gradient collectives of one type sent while it is
    busy wait and go together when it frees; other collectives wait their turn (first sent,
    first run).
``"buckets"``
    One at a time, first sent first run; weight-gradient allreduces are fused in the order they
    are ready into buckets of at least ``bucket_size`` bytes (PyTorch DDP); the rest of an
    iteration's gradients is the last bucket.
``"concurrent"``
    Every collective starts when it is sent and runs beside the others, as ASTRA-sim's streams
    do: the bandwidth parts of the collectives in flight share the network equally (processor
    sharing), each followed by its own latency (the price's ``latency``, or the price of one
    byte). A late
    small gradient may finish before an early large one, so the next forward can start while
    earlier gradients are still on the wire: the steady state differs from the first iteration.

With ``"wait-free"`` and ``"buckets"`` layer 0's gradient is sent last and runs last, so each
iteration starts on an idle network and every iteration takes as long as the first.

>>> from topocoll.studies.workloads import TrainingWorkload, WorkloadLayer
>>> w = TrainingWorkload("toy", (WorkloadLayer("a", 1.0, 1.0, 1.0, None, None, ("allreduce", 1)),
...                              WorkloadLayer("b", 1.0, 1.0, 1.0, None, None, ("allreduce", 1))))
>>> r = simulate_training(w, {"allreduce": lambda m: 1.5}, iterations=2)
>>> r.iteration_times, r.compute_time     # b's gradient at 3 s, a's at 5 s, done at 6.5 s
([6.5, 6.5], 5.0)
"""

import math
from dataclasses import dataclass, field

from ..errors import InputTypeError, UnsupportedError
from ..results import Result, Status
from ..units import format_size, format_time, real_number, whole_number
from .workloads import TrainingWorkload

__all__ = ["simulate_training", "TrainingResult", "Run", "LOOP_POLICIES", "plot_training",
           "serial_runs"]

#: How collectives share the network.
LOOP_POLICIES = ("wait-free", "buckets", "concurrent")


@dataclass(frozen=True)
class Run:
    """One collective on the network: ``start``, ``end`` (s), its ``type``, ``bytes``, the
    ``layers`` it carries, the ``phase`` that sent it and the ``iteration`` (from 1)."""

    start: float
    end: float
    type: str
    bytes: float
    layers: tuple
    phase: str
    iteration: int

    def to_dict(self):
        return {"start": self.start, "end": self.end, "type": self.type, "bytes": self.bytes,
                "layers": list(self.layers), "phase": self.phase, "iteration": self.iteration}


@dataclass
class TrainingResult(Result):
    """What :func:`simulate_training` found (times in seconds).

    ``iteration_times[k]`` is iteration k + 1 (its end minus the previous one's);
    ``first_iteration`` the first, ``steady_iteration`` the mean of iterations 2..K (None for
    K = 1); ``exposed_comm`` and ``steady_exposed_comm`` those minus the compute;
    ``comm_time`` the time the first iteration's collectives keep the network busy (the union
    of their runs; the sum of their durations when they run one at a time);
    ``makespan`` when the last collective and the last compute have ended (the end of the last
    iteration). ``runs`` every collective, ``compute`` every compute phase as ``(start, end,
    phase, layer, iteration)``.
    """

    model: str
    policy: str
    bucket_size: float | None
    iterations: int
    iteration_times: list
    compute_time: float
    comm_time: float
    makespan: float
    runs: list = field(default_factory=list)
    compute: list = field(default_factory=list)

    @property
    def first_iteration(self):
        return self.iteration_times[0]

    @property
    def steady_iteration(self):
        rest = self.iteration_times[1:]
        return sum(rest) / len(rest) if rest else None

    @property
    def exposed_comm(self):
        return self.first_iteration - self.compute_time

    @property
    def steady_exposed_comm(self):
        s = self.steady_iteration
        return None if s is None else s - self.compute_time

    def first_runs(self):
        return [r for r in self.runs if r.iteration == 1]

    def to_dict(self):
        return {**super().to_dict(), "model": self.model, "policy": self.policy,
                "bucket_size": self.bucket_size, "iterations": self.iterations,
                "iteration_time": self.first_iteration,
                "steady_iteration_time": self.steady_iteration,
                "iteration_times": list(self.iteration_times),
                "compute_time": self.compute_time, "exposed_comm": self.exposed_comm,
                "steady_exposed_comm": self.steady_exposed_comm, "comm_time": self.comm_time,
                "makespan": self.makespan,
                "allreduces": [r.to_dict() for r in self.first_runs()
                               if r.phase == "weight_grad"],
                "collectives": [r.to_dict() for r in self.runs]}


# ---------------------------------------------------------------------- requests and networks
class _Request:
    """A collective sent by the compute: filled in with ``end`` once the network ran it."""

    __slots__ = ("type", "bytes", "layers", "phase", "iteration", "issued", "end", "work",
                 "latency")

    def __init__(self, kind, size, layers, phase, iteration, issued):
        self.type, self.bytes, self.layers, self.phase = kind, float(size), tuple(layers), phase
        self.iteration, self.issued, self.end = iteration, issued, None


def _duration(price, size):
    return real_number(price(size), f"a collective's price of {size:g} bytes (in seconds)",
                       least=0)


class _Serial:
    """One collective at a time, first sent first run; ``fuse``: the wait-free rule 2."""

    def __init__(self, prices, fuse):
        self.prices, self.fuse = prices, fuse
        self.queue, self.runs, self.free = [], [], -math.inf

    def issue(self, req):
        self.advance(req.issued)
        self.queue.append(req)

    def advance(self, t):
        """Start every collective whose start is before ``t``."""
        while self.queue and max(self.free, self.queue[0].issued) < t:
            self._start_next()

    def finish(self, req):
        while req.end is None:
            self._start_next()
        return req.end

    def _start_next(self):
        head = self.queue[0]
        start = max(self.free, head.issued)
        group = [head]
        if self.fuse and head.phase == "weight_grad" and head.issued <= self.free:
            group = [r for r in self.queue if r.phase == "weight_grad" and r.type == head.type
                     and r.issued <= start]
        for r in group:
            self.queue.remove(r)
        size = sum(r.bytes for r in group)
        end = start + _duration(self.prices[head.type], size)
        for r in group:
            r.end = end
        self.free = end
        self.runs.append(Run(start, end, head.type, size,
                             tuple(x for r in group for x in r.layers), head.phase,
                             head.iteration))


def serial_runs(gradients, price, *, bucket_size=None):
    """Gradients ``(name, bytes, ready)``, in ready order, sent as allreduces priced by
    ``price`` to the one-at-a-time network of :func:`simulate_training`: under the wait-free
    rules (``bucket_size`` None) or fused in order into buckets of at least ``bucket_size``
    bytes, the rest being the last. The runs in the order they ran (iteration 1), for
    :func:`topocoll.studies.training.simulate_iteration`, which gives the ready times as they
    are."""
    net = _Serial({"allreduce": price}, bucket_size is None)
    names, held = [], 0.0
    for k, (name, size, ready) in enumerate(gradients):
        names.append(name)
        held += size
        if bucket_size is None or held >= bucket_size or k == len(gradients) - 1:
            net.issue(_Request("allreduce", held, names, "weight_grad", 1, ready))
            names, held = [], 0.0
    net.advance(math.inf)
    return net.runs


def _latency(price, total):
    lat = getattr(price, "latency", None)
    if lat is None:             # a price without a latency term of its own: one byte's
        lat = _duration(price, 1.0)
    return min(float(lat), total)


class _Concurrent:
    """Every collective starts when sent; the bandwidth parts in flight share the network."""

    def __init__(self, prices):
        self.prices, self.runs = prices, []
        self.now, self.active = 0.0, []        # requests whose bandwidth work is in flight

    def issue(self, req):
        self.advance(req.issued)
        total = _duration(self.prices[req.type], req.bytes)
        req.latency = _latency(self.prices[req.type], total)
        req.work = total - req.latency
        self.active.append(req)

    def _step(self, limit):
        """Serve the active work until ``limit`` or the next completion; False if none."""
        if not self.active:
            self.now = max(self.now, limit)
            return False
        n = len(self.active)
        first = min(r.work for r in self.active)
        t = self.now + first * n
        if t > limit:
            for r in self.active:
                r.work -= (limit - self.now) / n
            self.now = limit
            return False
        for r in list(self.active):
            r.work -= first
            if r.work <= 1e-15 * max(1.0, t):
                self.active.remove(r)
                r.end = t + r.latency
                self.runs.append(Run(r.issued, r.end, r.type, r.bytes, r.layers, r.phase,
                                     r.iteration))
        self.now = t
        return True

    def advance(self, t):
        while self._step(t):
            pass

    def finish(self, req):
        while req.end is None:
            self._step(math.inf)
        return req.end


# ---------------------------------------------------------------------- the loop
class _Loop:
    """One run of the compute thread over ``iterations`` iterations."""

    def __init__(self, workload, net, cap):
        self.w, self.net, self.cap = workload, net, cap
        self.t, self.compute, self.grad = 0.0, [], {}
        self.bucket = []
        self.ends = []          # per iteration: backward end and (request, update) pairs
        self.last = min((j for j, x in enumerate(workload.layers) if x.weight_grad_comm
                         and x.weight_grad_comm[0] == "allreduce"), default=-1)

    def run_phase(self, seconds, phase, layer, k):
        if seconds > 0:
            self.compute.append((self.t, self.t + seconds, phase, layer, k))
        self.t += seconds

    def send(self, layer, phase, k, wait):
        comm = getattr(layer, f"{phase}_comm")
        if comm is None:
            return None
        req = _Request(comm[0], comm[1], (layer.name,), phase, k, self.t)
        self.net.issue(req)
        if wait:
            self.t = max(self.t, self.net.finish(req))
        return req

    def send_gradient(self, i, k):
        layer = self.w.layers[i]
        comm = layer.weight_grad_comm
        if comm is None:
            self.grad[i] = (None, self.t + layer.update)
            return
        if self.cap is None or comm[0] != "allreduce":
            self.grad[i] = (self.send(layer, "weight_grad", k, False), layer.update)
            return
        self.bucket.append(i)
        if i == self.last or sum(self.w.layers[j].gradient_bytes for j in self.bucket) >= self.cap:
            self.flush(k)       # full, or the iteration's last gradient: the rest is a bucket

    def flush(self, k):
        if not self.bucket:
            return
        names = tuple(self.w.layers[j].name for j in self.bucket)
        size = sum(self.w.layers[j].gradient_bytes for j in self.bucket)
        req = _Request("allreduce", size, names, "weight_grad", k, self.t)
        self.net.issue(req)
        for j in self.bucket:
            self.grad[j] = (req, self.w.layers[j].update)
        self.bucket = []

    def wait_gradient(self, i):
        req, extra = self.grad.get(i, (None, 0.0))
        if req is None:
            self.t = max(self.t, extra)
        else:
            self.t = max(self.t, self.net.finish(req) + extra)

    def iterate(self, k):
        layers, loop = self.w.layers, self.w.loop
        for i, layer in enumerate(layers):
            self.wait_gradient(i)
            self.run_phase(layer.forward, "forward", layer.name, k)
            if loop != "data":
                self.send(layer, "forward", k, True)
        for i in range(len(layers) - 1, -1, -1):
            layer = layers[i]
            if loop == "data":
                self.run_phase(layer.weight_grad, "weight_grad", layer.name, k)
                self.send_gradient(i, k)
                if i > 0:
                    self.run_phase(layer.input_grad, "input_grad", layer.name, k)
                continue
            self.run_phase(layer.input_grad, "input_grad", layer.name, k)
            ig = None
            if loop == "transformer" or i > 0:
                ig = self.send(layer, "input_grad", k, loop == "transformer")
            self.run_phase(layer.weight_grad, "weight_grad", layer.name, k)
            self.send_gradient(i, k)
            if ig is not None:
                self.t = max(self.t, self.net.finish(ig))
        self.flush(k)
        self.ends.append((self.t, [self.grad[i] for i in range(len(layers)) if i in self.grad]))

    def iteration_ends(self):
        """Each iteration's end (after the network has run everything)."""
        out = []
        for backward, grads in self.ends:
            done = [extra if req is None else self.net.finish(req) + extra
                    for req, extra in grads]
            out.append(max([backward] + done))
        return out


def _check_prices(workload, prices):
    if not isinstance(prices, dict):
        raise InputTypeError(f"prices must be a dict collective -> callable, got {prices!r}")
    for kind in workload.collective_types():
        if not callable(prices.get(kind)):
            raise UnsupportedError(f"{workload.name} sends {kind}, and no price for {kind} was "
                                   "given")


def simulate_training(workload, prices, *, iterations=1, policy="wait-free", bucket_size=None):
    """Run ``iterations`` training iterations (see the module docstring).

    Parameters
    ----------
    workload : TrainingWorkload
    prices : dict
        Collective type (``"allreduce"``, ``"allgather"``, ``"reducescatter"``,
        ``"alltoall"``) -> ``cost(size_bytes) -> seconds``, for every type the loop sends.
    iterations : int
        K >= 1.
    policy : {"wait-free", "buckets", "concurrent"}
    bucket_size : float, optional
        Bytes per bucket with ``"buckets"`` (default ``defaults.BUCKET_SIZE``).

    Returns
    -------
    TrainingResult
    """
    from .. import defaults
    if not isinstance(workload, TrainingWorkload):
        raise InputTypeError(f"workload must be a TrainingWorkload, got "
                             f"{type(workload).__name__}")
    if policy not in LOOP_POLICIES:
        raise UnsupportedError(f"unknown policy {policy!r}; use one of "
                               f"{', '.join(LOOP_POLICIES)}")
    if bucket_size is not None and policy != "buckets":
        raise UnsupportedError(f"bucket_size applies to the 'buckets' policy, not {policy!r}")
    iterations = whole_number(iterations, "iterations", 1)
    _check_prices(workload, prices)
    cap = None
    if policy == "buckets":
        cap = float(defaults.BUCKET_SIZE if bucket_size is None else bucket_size)
        if not cap > 0:
            raise UnsupportedError(f"bucket size must be positive, got {bucket_size!r}")
    net = _Concurrent(prices) if policy == "concurrent" else _Serial(prices,
                                                                     policy == "wait-free")
    loop = _Loop(workload, net, cap)
    for k in range(1, iterations + 1):
        loop.iterate(k)
    net.advance(math.inf)
    ends = loop.iteration_ends()
    makespan = max([loop.t] + [r.end for r in net.runs])
    times = [b - a for a, b in zip([0.0] + ends, ends)]
    busy = _union([(r.start, r.end) for r in net.runs if r.iteration == 1])
    result = TrainingResult(status=Status.SUCCESS, message="", model=workload.name,
                            policy=policy, bucket_size=cap, iterations=iterations,
                            iteration_times=times, compute_time=workload.compute_time,
                            comm_time=busy, makespan=makespan,
                            runs=sorted(net.runs, key=lambda r: (r.start, r.end)),
                            compute=loop.compute)
    result.message = _message(workload, result)
    return result


def _union(intervals):
    """Total length of the union of ``(start, end)`` intervals (the network's busy time)."""
    total, reach = 0.0, -math.inf
    for a, b in sorted(intervals):
        if b > reach:
            total += b - max(a, reach)
            reach = b
    return total


def _message(workload, r):
    how = "wait-free" if r.policy == "wait-free" else (
        f"buckets of {format_size(r.bucket_size)}" if r.policy == "buckets" else "concurrent")
    text = (f"{workload.name}, {workload.loop} loop, {how}: first iteration "
            f"{format_time(r.first_iteration)} = compute {format_time(r.compute_time)} + exposed "
            f"{format_time(r.exposed_comm)}")
    if r.steady_iteration is not None:
        text += (f"; steady state (iterations 2..{r.iterations}) "
                 f"{format_time(r.steady_iteration)}")
    return text + f" ({len(r.first_runs())} collectives in the first)"


# ---------------------------------------------------------------------- plot
_PHASE_COLOURS = {"forward": "tab:gray", "input_grad": "tab:blue", "weight_grad": "tab:cyan"}
_TYPE_COLOURS = {"allreduce": "tab:orange", "allgather": "tab:green",
                 "reducescatter": "tab:purple", "alltoall": "tab:red"}


def plot_training(result, path, *, title=None):
    """Draw the iterations: compute phases on one row (forward, input gradient, weight
    gradient), the collectives below it, one row per collective type (concurrent ones drawn
    translucent over each other), iteration ends as dashed lines. Returns ``path``."""
    from ..plotting import new_axes, save_figure, time_scale, wrap_title

    end = max(result.makespan, sum(result.iteration_times))
    k, unit = time_scale(end)
    text = wrap_title(title or result.message, 7.6, 8)
    kinds = sorted({r.type for r in result.runs})
    fig, ax = new_axes((10, 3 + 0.4 * len(kinds) + 0.16 * text.count("\n")))
    top = len(kinds)
    for phase, colour in _PHASE_COLOURS.items():
        bars = [(a * k, (b - a) * k) for a, b, p, _, _ in result.compute if p == phase]
        if bars:
            ax.broken_barh(bars, (top + 0.1, 0.8), facecolors=colour,
                           label=f"compute: {phase.replace('_', ' ')}")
    for row, kind in enumerate(kinds):
        bars = [(r.start * k, max(r.end - r.start, 0.0) * k) for r in result.runs
                if r.type == kind]
        ax.broken_barh(bars, (row + 0.1, 0.8), facecolors=_TYPE_COLOURS.get(kind, "tab:olive"),
                       edgecolors="black", linewidth=0.3,
                       alpha=0.5 if result.policy == "concurrent" else 1.0,
                       label=f"{kind} ({len(bars)})")
    t = 0.0
    for it in result.iteration_times:
        ax.axvline(t * k, color="black", linestyle="--", linewidth=0.6)
        t += it
    ax.set_yticks([r + 0.5 for r in range(top + 1)], [*kinds, "compute"])
    ax.set_ylim(0.0, top + 1.0)
    ax.set_xlabel(f"time ({unit}); dashed: iteration ends")
    ax.set_xlim(0, end * k * 1.02)
    ax.set_title(text, fontsize=8)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, frameon=False)
    return save_figure(fig, path)
