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

The allreduces run on the network of :func:`topocoll.studies.loop.simulate_training` (one at a
time; the same two rules), fed the profile's ready times as they are. :func:`plot_iteration`
draws one iteration. The profile is :mod:`.gradient_profile`'s; allreduce costs, such as
:func:`~topocoll.studies.allreduce_costs.lower_bound_cost`, are :mod:`.allreduce_costs`'.

Layers ready at 1, 2 and 2.25 s and 1.5 s per allreduce: ``c`` goes alone at 1 s; ``b`` and
``a`` become ready while it is pending and go together when it completes at 2.5 s.

>>> p = Profile.from_layers("toy", [("c", 100, 1.0), ("b", 100, 2.0), ("a", 100, 2.25)])
>>> r = simulate_iteration(p, lambda size: 1.5)
>>> r.iteration_time, r.compute_time, r.exposed_comm
(4.0, 2.25, 1.75)
>>> [(a.start, a.layers) for a in r.allreduces]
[(1.0, ('c',)), (2.5, ('b', 'a'))]
"""

from dataclasses import dataclass, field

from .. import defaults
from ..errors import InputTypeError, UnsupportedError
from ..results import Result, Status
from ..units import format_size, format_time, real_number
# kept importable from here for benchmarks/train_sim.py and docs/training.md (their homes are
# .allreduce_costs and .gradient_profile)
from .allreduce_costs import AllreduceCost, baseline_closed_form, baseline_cost, lower_bound_cost
from .gradient_profile import Profile, check_bytes
from .loop import serial_runs

__all__ = ["Allreduce", "IterationResult", "simulate_iteration", "plot_iteration", "POLICIES",
           "Profile", "AllreduceCost", "lower_bound_cost", "baseline_cost",
           "baseline_closed_form"]

#: The overlap policies :func:`simulate_iteration` knows.
POLICIES = ("wait-free", "buckets")


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
        a negative or non-finite time (:class:`~topocoll.errors.InputTypeError`: one that
        returns no number).

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
    if not isinstance(profile, Profile):
        raise InputTypeError(f"profile must be a Profile, got {type(profile).__name__}")
    if not callable(comm_time):
        raise InputTypeError(f"comm_time must be a callable size -> seconds, got {comm_time!r}")
    if policy not in POLICIES:
        raise UnsupportedError(f"unknown policy {policy!r}; use one of {', '.join(POLICIES)}")
    cap = None
    if policy == "wait-free" and bucket_size is not None:
        raise UnsupportedError("bucket_size applies to the 'buckets' policy, not 'wait-free'")
    if policy == "buckets":
        cap = check_bytes(defaults.BUCKET_SIZE if bucket_size is None else bucket_size,
                          "bucket size")
        if cap <= 0:
            raise UnsupportedError(f"bucket size must be positive, got {bucket_size!r}")
    # the training loop's network on the profile's own ready times (a workload made from the
    # profile would re-add its compute phase by phase and move the times by rounding)
    runs = serial_runs([(x.name, x.bytes, x.ready) for x in profile.layers],
                       lambda size: _duration(comm_time, size), bucket_size=cap)
    groups = [Allreduce(r.start, r.end, r.bytes, r.layers) for r in runs]
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
    return real_number(comm_time(size), f"comm_time({size:g}) (in seconds)", least=0)


def plot_iteration(result, path, *, profile=None, title=None):
    """Draw one iteration: compute (forward, backward) on one row, the allreduces on another,
    and the gradients' ready times as ticks when ``profile`` is given; the communication not
    hidden behind compute is shaded. The time axis is in us, ms or s (whichever fits), the
    legend sits beside the axes and a long title is wrapped. Returns ``path``."""
    from ..plotting import new_axes, save_figure, time_scale, wrap_title

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
