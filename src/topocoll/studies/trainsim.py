"""The train-sim job: training iterations, compute overlapped with collectives, on our
allreduce next to the two-phase bound, ShiftedRing and DBT on the same N nodes.

:func:`train_sim` prices every collective the workload sends on every row
(:mod:`.train_pricing`), runs :func:`~topocoll.studies.loop.simulate_training` for each, and
returns a :class:`TrainSimResult` whose ``to_dict()`` is ``topocoll train-sim --json``. Our
allreduce is a schedule, BFB on a topology, or the finder's choice for ``nodes`` and ``degree``
(:func:`topocoll.finder.find` on :func:`finder_sizes`, run here unless its result is given as
``found``).

Errors name the command-line options (``--nodes``), which are the keywords here (``nodes``).
"""

from dataclasses import dataclass, field

from .. import defaults
from ..defaults import bandwidth_convention, describe_convention
from ..errors import InputTypeError, TopocollError, UnsupportedError
from ..results import Result, as_progress
from ..finder.core import EXPLICIT_NODES, find
from ..finder.workload import Workload as FinderWorkload
from ..units import parse_time
from .allreduce_costs import CLOSED_FORM, lower_bound_cost
from .loop import simulate_training
from .models import efficiency_text
from .train_pricing import (cached_baseline, collective_prices, finder_degree,
                            found_allreduce, scheduled_allreduce)
from .workloads import TrainingWorkload

__all__ = ["train_sim", "TrainSimResult", "check_options", "resolve_policy", "bandwidth_keywords",
           "finder_sizes", "compute_words", "MAX_ITERATIONS"]

#: Most iterations train-sim simulates (each is every layer's compute and collectives).
MAX_ITERATIONS = 100


def check_options(nodes=None, degree=None, *, schedule=None, topology=None, comm_model="step",
                  policy=None, bucket_size=None, cycle_time=None, iterations=3):
    """Refuse options that contradict each other or are out of range, before any work.

    Raises
    ------
    UnsupportedError
        Naming the option (as the command line spells it) and the rule it breaks.
    """
    if schedule is not None and topology is not None:
        raise UnsupportedError("give --schedule or --topology, not both")
    if nodes is not None and nodes < 3:
        raise UnsupportedError(f"--nodes must be at least 3, got {nodes}")
    if degree is not None and degree < 1:
        raise UnsupportedError(f"--degree must be at least 1, got {degree}")
    if degree is not None and nodes is not None and degree >= nodes:
        raise UnsupportedError(f"--degree {degree} on {nodes} nodes: a node has at most "
                               f"{nodes - 1} other nodes to link to")
    if comm_model == "link" and schedule is None and topology is None:
        raise UnsupportedError("--comm-model link times a schedule: give --schedule or "
                               "--topology")
    if policy not in (None, "buckets") and bucket_size is not None:
        raise UnsupportedError(f"--bucket-size applies to --policy buckets, not {policy}")
    if bucket_size is not None and (bucket_size <= 0 or bucket_size != int(bucket_size)):
        raise UnsupportedError(f"--bucket-size must be a positive whole number of bytes, got "
                               f"{bucket_size:g}")
    if cycle_time is not None and cycle_time <= 0:
        raise UnsupportedError("--cycle-time must be positive")
    if not 1 <= iterations <= MAX_ITERATIONS:
        raise UnsupportedError(f"--iterations must be between 1 and {MAX_ITERATIONS}, got "
                               f"{iterations}")


def resolve_policy(policy=None, bucket_size=None):
    """``(policy, bucket_size)`` as run: wait-free unless buckets are asked for (a bucket size
    implies them), buckets of :data:`~topocoll.defaults.BUCKET_SIZE` unless given."""
    policy = policy or ("buckets" if bucket_size is not None else "wait-free")
    if policy == "buckets" and bucket_size is None:
        bucket_size = defaults.BUCKET_SIZE
    return policy, bucket_size


def bandwidth_keywords(node_bandwidth=None, link_bandwidth=None):
    """The bandwidth keywords of the pricing functions: ``{"bandwidth": B}`` with a node
    bandwidth, else ``{"link_bandwidth": L}`` (default: 100 Gbps per link)."""
    node, link = bandwidth_convention(node_bandwidth, link_bandwidth)
    return {"bandwidth": node} if link is None else {"link_bandwidth": link}


def finder_sizes(workload):
    """The allreduce sizes the finder optimizes for, in forward order: every allreduce the
    loop sends, or, with none, every collective's size."""
    sent = [c for x in workload.layers for c in workload.collectives_of(x)]
    sizes = [c[2] for c in sent if c[1] == "allreduce"]
    return sizes or [c[2] for c in sent]


def compute_words(workload):
    """Which compute model made the workload's times, in words (printed with every result)."""
    if workload.compute_model == "flops":
        return (f"FLOPs model ({efficiency_text()} unless --gpu-flops/--efficiency say "
                "otherwise; backward = 2 x forward)")
    if workload.compute_model == "measured":
        src = workload.source
        return (f"measured with torch {src.get('torch', '?')} on {src.get('cpu', '?')}, "
                f"{src.get('threads', '?')} thread(s), batch {src.get('batch', '?')}")
    if workload.compute_model == "astra-sim":
        return "ASTRA-sim workload file (cycles x --cycle-time)"
    return f"profile file ({workload.compute_model})"


@dataclass
class TrainSimResult(Result):
    """What :func:`train_sim` found (times in seconds).

    ``run`` is our :class:`~topocoll.studies.loop.TrainingResult` (its status and message are
    this result's) and ``baseline_runs`` the others' by name; ``ours`` and ``baselines`` are
    their rows as ``--json`` prints them (a baseline that could not be built has only
    ``allreduce`` and ``error``). ``methods`` says how each baseline was priced, ``skipped``
    why one is missing, ``pricing`` how ours was (``method``, ``exact``, maybe ``base``);
    ``finder`` is the finder's message when it chose our topology.
    """

    workload: TrainingWorkload = None
    run: object = None
    baseline_runs: dict = field(default_factory=dict)
    ours: dict = field(default_factory=dict)
    baselines: dict = field(default_factory=dict)
    comm_model: str = "step"
    nodes: int = 0
    degree: int = 0
    alpha: float = 0.0
    node_bandwidth: float | None = None
    link_bandwidth: float | None = None
    policy: str = "wait-free"
    bucket_size: float | None = None
    methods: dict = field(default_factory=dict)
    skipped: dict = field(default_factory=dict)
    pricing: dict = field(default_factory=dict)
    finder: str | None = None

    @property
    def bandwidth(self):
        """The bandwidth convention in words, e.g. ``100Gbps per link``."""
        return describe_convention(self.node_bandwidth, self.link_bandwidth)

    def to_dict(self):
        """The ``--json`` form: our run's fields, then the cluster, the rows and the profile."""
        doc = self.run.to_dict()
        doc.update(super().to_dict())
        return {**doc, "comm_model": self.comm_model, "nodes": self.nodes,
                "degree": self.degree, "alpha": self.alpha,
                "node_bandwidth": self.node_bandwidth, "link_bandwidth": self.link_bandwidth,
                "bandwidth": self.bandwidth, "compute_model": self.workload.compute_model,
                "compute": compute_words(self.workload), "ours": self.ours,
                "baselines": self.baselines, "profile": self.workload.summary(),
                "finder": self.finder}


def train_sim(workload, *, nodes=None, degree=None, schedule=None, topology=None, found=None,
              comm_model="step", alpha=defaults.ALPHA, node_bandwidth=None,
              link_bandwidth=None, policy=None, bucket_size=None, iterations=3,
              verify_full=False, cache=None, progress=None):
    """Simulate ``iterations`` training iterations of ``workload`` on our allreduce and on the
    two-phase bound, ShiftedRing and DBT of the same N nodes.

    Parameters
    ----------
    workload : TrainingWorkload
        E.g. :func:`~topocoll.studies.resolve.resolve_workload` of a model's name.
    nodes, degree : int, optional
        N (default: the schedule's or topology's) and d (default: the topology's largest
        out-degree, or the finder's).
    schedule : Schedule or path, optional
        Our allreduce as a schedule; or ``topology``, a spec or file whose BFB allreduce is
        ours; or ``found``, the finder's result for ``nodes`` and
        :func:`~topocoll.studies.train_pricing.finder_degree` (at most one of the three; with
        none, the finder runs here for ``nodes`` and ``degree``, explicitly verified up to
        :data:`~topocoll.finder.core.EXPLICIT_NODES` nodes or with ``verify_full``).
    comm_model : {"step", "link"}
        Price our schedule by the step model or time it by the link model at every size.
    alpha, node_bandwidth, link_bandwidth
        Latency of every link; the bandwidth convention (default: 100 Gbps per link).
    policy, bucket_size
        ``"wait-free"``, ``"buckets"`` or ``"concurrent"`` (see :mod:`.loop`);
        :func:`resolve_policy` gives the defaults.
    verify_full : bool
        Generate the baselines' schedules instead of pricing them by closed form.
    cache : optional
        Where the finder's results and baseline prices are kept (the finder's ``Cache``;
        None: none).
    progress : callable, optional
        ``progress(done, total, stage)``, in any shape :func:`~topocoll.results.as_progress`
        takes.

    Returns
    -------
    TrainSimResult

    Raises
    ------
    UnsupportedError, InputTypeError
        Options out of range or contradicting each other: more than one of ``schedule``,
        ``topology`` and ``found``, or none of them and no ``nodes``.
    """
    if not isinstance(workload, TrainingWorkload):
        raise InputTypeError(f"workload must be a TrainingWorkload, got "
                             f"{type(workload).__name__}")
    check_options(nodes, degree, schedule=schedule, topology=topology, comm_model=comm_model,
                  policy=policy, bucket_size=bucket_size, iterations=iterations)
    if (schedule is not None or topology is not None) and found is not None:
        raise UnsupportedError("train_sim takes one of schedule, topology and found (the "
                               "finder's result)")
    if schedule is None and topology is None and found is None and nodes is None:
        raise UnsupportedError("--nodes is required unless --schedule or --topology gives the "
                               "cluster")
    policy, bucket_size = resolve_policy(policy, bucket_size)
    alpha = float(parse_time(alpha, what="alpha"))
    bandwidth = bandwidth_keywords(node_bandwidth, link_bandwidth)
    if schedule is None and topology is None and found is None:
        sizes = FinderWorkload.from_layers(finder_sizes(workload),
                                           bucket_size if policy == "buckets" else None)
        full = verify_full or nodes <= EXPLICIT_NODES
        found = find(nodes, finder_degree(nodes, degree), sizes, alpha=alpha,
                     node_bandwidth=bandwidth.get("bandwidth"),
                     link_bandwidth=bandwidth.get("link_bandwidth"), cache=cache,
                     progress=progress, method="explicit" if full else "construction")
    if found is not None:
        ours = found_allreduce(found, nodes=found.nodes if nodes is None else nodes,
                               degree=degree, alpha=alpha)
    else:
        ours = scheduled_allreduce(schedule, topology, nodes=nodes, degree=degree,
                                   alpha=alpha, bandwidth=bandwidth, comm_model=comm_model,
                                   progress=progress)
    if ours.nodes < 3:
        raise UnsupportedError(f"train-sim needs at least 3 nodes, got {ours.nodes}")
    rows = _rows(workload, ours, alpha=alpha, bandwidth=bandwidth, cache=cache,
                 full=verify_full, progress=progress)
    options = {"policy": policy, "bucket_size": bucket_size if policy == "buckets" else None,
               "iterations": iterations}
    runs = {name: simulate_training(workload, p, **options) for name, p in rows.prices.items()}
    run = runs.pop("ours")
    return TrainSimResult(
        status=run.status, message=run.message, workload=workload, run=run,
        baseline_runs=runs, ours={**rows.row("ours", run, runs), **ours.how},
        baselines=rows.baselines(runs), comm_model=comm_model, nodes=ours.nodes,
        degree=ours.degree, alpha=alpha, node_bandwidth=bandwidth.get("bandwidth"),
        link_bandwidth=bandwidth.get("link_bandwidth"), policy=policy,
        bucket_size=bucket_size, methods=rows.methods, skipped=rows.skipped, pricing=ours.how,
        finder=None if found is None else found.message)


@dataclass
class _Rows:
    """Every row's prices, its allreduce's name, how a baseline was priced (``methods``) and
    why one is missing (``skipped``); :meth:`row` is a row's ``--json`` dict."""

    prices: dict
    labels: dict
    methods: dict
    skipped: dict
    other_how: dict

    def row(self, name, r, runs):
        bound = runs["two-phase bound"]
        cost = self.prices[name]["allreduce"]
        return {"allreduce": self.labels[name], "steps": getattr(cost, "steps", None),
                "iteration_time": r.first_iteration, "steady_iteration_time": r.steady_iteration,
                "compute_time": r.compute_time, "exposed_comm": r.exposed_comm,
                "steady_exposed_comm": r.steady_exposed_comm, "comm_time": r.comm_time,
                "collectives": len(r.first_runs()),
                "allreduces": sum(1 for x in r.first_runs() if x.type == "allreduce"),
                "comm_ratio": r.comm_time / bound.comm_time if bound.comm_time else None,
                "iteration_ratio": r.first_iteration / bound.first_iteration,
                "other_collectives": self.other_how.get(name)}

    def baselines(self, runs):
        out = {name: {**self.row(name, r, runs), "method": self.methods[name]}
               for name, r in runs.items()}
        out.update({name: {"allreduce": name, "error": why}
                    for name, why in self.skipped.items()})
        return out


def _rows(workload, ours, *, alpha, bandwidth, cache, full, progress):
    """The bound's and the baselines' allreduces (a baseline that cannot be built is skipped,
    with why) and every row's prices."""
    say = as_progress(progress)
    nodes = ours.nodes
    costs = {"two-phase bound": lower_bound_cost(nodes, ours.degree, alpha=alpha, **bandwidth)}
    methods = {"two-phase bound": CLOSED_FORM}
    skipped = {}
    for name in ("ShiftedRing", "DBT"):
        if say:
            say(0, None, f"{name} allreduce on {nodes} nodes")
        try:
            costs[name], methods[name] = cached_baseline(name, nodes, alpha=alpha,
                                                         bandwidth=bandwidth, cache=cache,
                                                         full=full)
        except TopocollError as exc:      # e.g. no shifted ring of 4 or 6 nodes
            skipped[name] = str(exc)
    if say:
        say(0, None, "pricing the other collectives")
    prices, other_how = collective_prices(workload.collective_types(), ours, alpha=alpha,
                                          bandwidth=bandwidth, costs=costs)
    labels = {"ours": ours.cost.name, **{name: costs[name].name for name in costs}}
    return _Rows(prices, labels, methods, skipped, other_how)
