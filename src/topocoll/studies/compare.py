"""Compare schedules side by side: same latency and bandwidth for everyone, verified, priced at
several buffer sizes next to their lower bounds, and (optionally) drawn as time against size.

Each entry is a schedule (a :class:`~topocoll.schedule.model.Schedule` or a schedule file, told
apart from topology files by its ``"format"``) or a topology (a spec such as ``"torus:8x8"``, a
topology file or a :class:`~topocoll.topology.model.Topology`), for which a schedule is generated
with every one of ``algorithms``. Every entry then gets the same link latency ``alpha`` and the
same bandwidth (every link's ``link_bandwidth``, by default the one default cluster's 100 Gbps
per link that ``evaluate`` also prices with, or each node's ``node_bandwidth`` split over its
out-links, the NSDI 2025 paper's convention), so that the comparison is fair.

The lower bound of an entry at size M is ``steps_lower_bound * alpha + bw_lower_bound(M)`` (see
:mod:`topocoll.schedule.cost`), and ``ratio`` is its time over that bound.

Every row is priced by the step model (docs/math.md section 1) and says so (``model``); rows
priced by different models are never compared (:func:`fastest` and :func:`plot_comparison`
refuse them). Baselines that run pipelined (``dbt``, as NCCL runs it) are priced as they run:
at each size as K pipelined chunks, K chosen to minimize the step-model time
(:func:`topocoll.schedule.cost.best_chunks`; ``sizes[i].chunks`` says which).

``gamma`` (default none: reductions are free) prices reductions as
:func:`~topocoll.schedule.cost.evaluate` does (docs/math.md, "The reduction cost gamma"):
every ``time`` is ``T_L + T_B + T_gamma``. The lower bounds leave the reduction out, so they
stay bounds (``T_gamma >= 0``).

>>> result = compare(["ring:8", "hypercube:3"], sizes=["1KiB", "1MiB"])
>>> result.status_name, [(r.name, r.steps, r.verified) for r in result.rows]
('SUCCESS', [('ring:8 bfb', 8, True), ('hypercube:3 bfb', 6, True)])
>>> [r.sizes[1].fastest for r in result.rows]
[False, True]
"""

import os
from dataclasses import asdict, dataclass, field

import numpy as np

from .. import defaults
from ..batch import Failure, open_pool, run_tasks
from ..collectives import collective as _collective
from ..plotting import new_axes, save_figure
from ..results import Result, Status
from ..errors import (FileAccessError, InputTypeError, ResourceLimitError, ScheduleFormatError,
                      TopocollError, UnsupportedError)
from ..fileio import is_special, parse_json, read_input
from ..schedule.bounds import degree_lower_bound
from ..collectives import REDUCE
from ..schedule.cost import (MODEL as _STEP_MODEL, PipelinedCost, evaluate,
                             _loads_from, _pipelined)
from ..schedule.reduction import parse_gamma
from ..schedule.io import FORMAT as _SCHEDULE_FORMAT, loads_schedule, schedule_from_dict
from ..schedule.model import Schedule
from ..schedule.verify import verify
from ..synth import generate
from ..topology.io import topology_from_dict
from ..topology.model import Topology
from ..topology.specs import topology as _topology
from ..units import format_bandwidth, format_size, format_time, parse_size, parse_time

__all__ = ["compare", "plot_comparison", "fastest", "CompareResult", "ComparisonRow",
           "SizeCost", "describe_settings"]

_CANONICAL_HEAD = b'{\n"format": "topocoll.schedule"'

#: Generators whose schedules run pipelined: generated rows of these are priced at each size
#: with the chunk count that minimizes the step-model time.
PIPELINED_ALGORITHMS = ("dbt",)


@dataclass
class SizeCost:
    """One entry's cost at one buffer size (seconds).

    ``time_lower_bound`` is this topology's bound (its steps bound and bandwidth bound,
    docs/math.md section 1); ``degree_lower_bound`` what no schedule on any topology of the same
    size, degree and node egress beats (Moore-depth steps and the topology-agnostic bandwidth
    bound, :func:`topocoll.schedule.bounds.degree_lower_bound`), and ``*_ratio`` the time over
    each: two ratios, two names."""

    size: float
    T_B: float
    time: float
    time_lower_bound: float
    ratio: float | None
    degree_lower_bound: float | None = None
    degree_ratio: float | None = None
    fastest: bool = False
    chunks: int | None = None
    T_gamma: float = 0.0


@dataclass
class ComparisonRow:
    """One compared schedule.

    ``verdict`` is ``"ok"`` (verified and priced), ``"invalid"`` (failed verification: not
    priced, ``reason`` says why) or ``"unsupported"`` (the algorithm cannot make this collective
    on this topology: no schedule, ``reason`` says why). ``sizes`` is empty unless ``ok``.
    ``latency_lower_bound`` is ``steps_lower_bound * alpha``; ``T_B_per_byte`` and
    ``bw_lower_bound_per_byte`` give ``T_B`` and its bound for any size M by multiplication.
    ``alpha`` and ``node_bandwidth`` or ``link_bandwidth`` are what every entry was given.
    ``model`` names the pricing model (``"step"``). ``gamma`` is the reduction cost every
    entry was given (seconds per byte) and ``T_gamma_per_byte`` gives ``T_gamma`` by
    multiplication. A pipelined row (``pipelined``: the pieces
    ``[chunks, steps, T_L, T_B_per_byte, T_gamma_per_byte]`` it was priced with) costs the least
    piece at each size; ``steps``, ``T_L``, ``T_B_per_byte`` and ``T_gamma_per_byte`` are then
    the unpipelined schedule's.
    """

    name: str
    source: str
    topology: str
    algorithm: str
    collective: str
    nodes: int
    degree: int
    verdict: str
    verified: bool | None
    reason: str | None = None
    steps: int | None = None
    diameter: int | None = None
    steps_lower_bound: int | None = None
    moore_steps: int | None = None
    T_L: float | None = None
    T_B_per_byte: float | None = None
    latency_lower_bound: float | None = None
    bw_lower_bound_per_byte: float | None = None
    sizes: list = field(default_factory=list)
    alpha: float | None = None
    node_bandwidth: float | None = None
    link_bandwidth: float | None = None
    model: str = _STEP_MODEL
    pipelined: list | None = None
    gamma: float = 0.0
    T_gamma_per_byte: float = 0.0

    @property
    def priced(self):
        return self.verdict == "ok"

    def time_at(self, size):
        """Total time for a buffer of ``size`` bytes (any size: the cost is linear in M, or for
        a pipelined row the least of its pieces)."""
        m = parse_size(size)
        if self.pipelined:
            return min(t_l + (t_b + t_g) * m for _, _, t_l, t_b, t_g in self.pipelined)
        return self.T_L + (self.T_B_per_byte + self.T_gamma_per_byte) * m

    def lower_bound_at(self, size):
        """The lower bound on the time for ``size`` bytes on this topology."""
        return self.latency_lower_bound + self.bw_lower_bound_per_byte * parse_size(size)

    def to_dict(self):
        return asdict(self)


@dataclass
class _Entry:
    source: str
    label: str | None          # file name shown after the name, for entries read from files
    schedule: Schedule | None = None
    topology: Topology | None = None
    problem: str | None = None   # a file that was read but is no valid schedule or topology


def _read_entry_file(path):
    """An :class:`_Entry` for a schedule or topology file (``-``: standard input; a pipe or
    device is read like it), told apart by its ``format``; compressed or not. A file that can
    be read but holds no valid schedule or topology becomes an entry with a ``problem`` (listed
    as invalid, like ``verify`` does); one that cannot be read, or would not fit, raises."""
    label = "stdin" if path == "-" else os.path.basename(path)
    try:
        return _read_entry_content(path, label)
    except (FileAccessError, ResourceLimitError):
        raise
    except ScheduleFormatError as exc:
        text = str(exc)
        for prefix in (f"{path}: ", f"{label}: "):
            text = text.removeprefix(prefix)
        return _Entry(path, label, problem=text)


def _read_entry_content(path, label):
    stream = path == "-" or is_special(path)   # read once: no second look at it
    if not stream and path.lower().removesuffix(".gz").endswith(".graphml"):
        return _Entry(path, label, topology=_topology(path))
    data = read_input(path, starts=b"{", what="schedule or topology file (JSON)")
    if data.startswith(_CANONICAL_HEAD):     # our own schedule files: no second parse
        doc = None
    else:
        doc = parse_json(data, what=label, shallow=("transfers",))
    if doc is None or (isinstance(doc, dict) and doc.get("format") == _SCHEDULE_FORMAT):
        try:
            schedule = loads_schedule(data) if doc is None else schedule_from_dict(doc)
        except TopocollError as exc:
            raise type(exc)(f"{label}: {str(exc).removeprefix('<schedule>: ')}") from None
        return _Entry(path, label, schedule=schedule)
    if not stream:
        return _Entry(path, label, topology=_topology(path))
    try:
        return _Entry(path, label, topology=topology_from_dict(doc))
    except TopocollError as exc:
        raise type(exc)(f"{label}: {exc}") from None


def _resolve(item):
    """Turn one argument into an :class:`_Entry` (reading files and parsing specs now, so that
    bad input fails before any schedule is generated)."""
    if isinstance(item, Schedule):
        return _Entry(item.topology.name, None, schedule=item)
    if isinstance(item, Topology):
        return _Entry(item.name, None, topology=item)
    if isinstance(item, os.PathLike):
        item = os.fspath(item)
    if not isinstance(item, str):
        raise InputTypeError("compare takes topology specs, topology or schedule files, "
                             f"Topologies and Schedules, not {type(item).__name__}")
    text = item.strip()
    if text == "-" or os.path.isfile(text) or is_special(text):
        return _read_entry_file(text)
    return _Entry(text, None, topology=_topology(text))


def _resolve_pair(item):
    """An entry and the one algorithm asked of it (``(entry, algorithm)``), or None for all."""
    if isinstance(item, tuple):
        if len(item) != 2 or not isinstance(item[1], str):
            raise InputTypeError("a compare entry with its own algorithm is a pair "
                                 f"(topology, algorithm name), not {item!r}")
        return _resolve(item[0]), item[1]
    return _resolve(item), None


def _sizes(sizes):
    if isinstance(sizes, (str, int, float)):
        sizes = [sizes]
    out = [float(parse_size(s)) for s in sizes]
    if not out:
        raise UnsupportedError("compare needs at least one buffer size")
    if any(m <= 0 for m in out):
        raise UnsupportedError("buffer sizes must be positive")
    return out


def _algorithms(algorithms):
    if isinstance(algorithms, str):
        algorithms = [algorithms]
    out = list(dict.fromkeys(algorithms))
    if not out:
        raise UnsupportedError("compare needs at least one algorithm")
    return out


def _fair(topo, alpha, node_bandwidth, link_bandwidth):
    """The topology with every link's latency ``alpha`` and the chosen bandwidth."""
    topo = topo.with_links(latency=alpha, bandwidth=link_bandwidth)
    if link_bandwidth is None:
        topo = topo.with_node_bandwidth(node_bandwidth)
    return topo


def _row(schedule, name, source, sizes, settings, pipelined=False):
    topo = schedule.topology
    alpha = settings["alpha"]
    base = dict(name=name, source=source, topology=topo.name, algorithm=schedule.algorithm,
                collective=schedule.collective.name, nodes=topo.num_nodes,
                degree=_degree(topo), **settings)
    report = verify(schedule)
    if not report.valid:
        return ComparisonRow(**base, verdict="invalid", verified=False, reason=report.summary(),
                             steps=schedule.num_steps)
    evals = [evaluate(schedule, m, check=False, gamma=settings["gamma"]) for m in sizes]
    e0 = evals[0]
    per_byte = e0.T_B / e0.size
    gamma_per_byte = e0.T_gamma / e0.size
    bound_per_byte = e0.bw_lower_bound / e0.size
    latency_bound = e0.steps_lower_bound * alpha
    # what no topology of this size, degree and node egress beats (a theorem, unlike this
    # topology's own bandwidth bound, which another topology of the same degree may beat)
    moore, any_per_byte = degree_lower_bound(e0.collective, topo.num_nodes, _degree(topo),
                                             float(topo.egress_bandwidth().max()))
    pieces = _pieces(schedule, sizes, settings["gamma"]) if pipelined else None
    costs = []
    for e in evals:
        bound = latency_bound + e.bw_lower_bound
        degree_bound = moore * alpha + any_per_byte * e.size
        t_b, t_g, time, chunks = e.T_B, e.T_gamma, e.time, None
        if pieces is not None:     # the chunk count that is cheapest at this size
            chunks, _, t_l, t_b_per_byte, t_g_per_byte = min(
                pieces, key=lambda p: (p[2] + (p[3] + p[4]) * e.size, p[0]))
            t_b, t_g = t_b_per_byte * e.size, t_g_per_byte * e.size
            time = t_l + t_b + t_g
        costs.append(SizeCost(size=e.size, T_B=t_b, time=time, time_lower_bound=bound,
                              ratio=time / bound if bound > 0 else None,
                              degree_lower_bound=degree_bound,
                              degree_ratio=time / degree_bound if degree_bound > 0 else None,
                              chunks=chunks, T_gamma=t_g))
    return ComparisonRow(**base, verdict="ok", verified=True, steps=e0.steps, diameter=e0.diameter,
                         steps_lower_bound=e0.steps_lower_bound, moore_steps=moore, T_L=e0.T_L,
                         T_B_per_byte=per_byte, latency_lower_bound=latency_bound,
                         bw_lower_bound_per_byte=bound_per_byte, sizes=costs,
                         pipelined=pieces, T_gamma_per_byte=gamma_per_byte)


def _pieces(schedule, sizes, gamma):
    """The pipelined pieces ``[K, steps, T_L, T_B per byte, T_gamma per byte]`` of
    ``schedule`` (:class:`~topocoll.schedule.cost.PipelinedCost`'s counts K). Pipelined step u
    has node v reduce 1/K of what it reduces in the steps of its window, as a pair carries
    1/K of their loads, so the reduce loads per (step, node) pipeline as the link loads do and
    ``T_gamma(K)`` adds to ``T_L(K) + T_B(K)`` (docs/math.md sections 1 and 12)."""
    pieces = [list(p) + [0.0] for p in PipelinedCost.of(schedule, sizes).pieces]
    rows = schedule.representatives()
    red = rows.transfers[rows.transfers["op"] == REDUCE]
    if gamma == 0 or not rows.collective.combining or red.size == 0:
        return pieces
    frac = rows.collective.shard_fraction(rows.num_nodes)
    # symmetric: the representatives reach every node, so one node stands for all (as in
    # topocoll.schedule.reduction.reduction_step_loads)
    node = np.zeros(red.size, dtype=np.int64) if schedule.group is not None else red["dst"]
    loads = _loads_from(red["step"], node, (red["hi"] - red["lo"]) * frac * gamma,
                        np.zeros(red.size))
    for p in pieces:
        p[4] = _pipelined(loads, p[0])[2]
    return pieces


def _degree(topo):
    return int(topo.out_degree().max()) if topo.num_links else 0


def _unique(names):
    seen = {}
    out = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        out.append(name if seen[name] == 1 else f"{name} #{seen[name]}")
    return out


def _jobs(resolved, algorithms):
    """``(entry, algorithm or None)`` for every row: a schedule or an unreadable entry once, a
    topology once per algorithm (or the one its pair asks for)."""
    jobs = []
    for entry, only in resolved:
        if entry.problem is not None:
            jobs.append((entry, None))
        elif entry.schedule is not None:
            if only is not None:
                raise UnsupportedError(f"{entry.source} is a schedule: it keeps its own "
                                       f"algorithm, {only!r} cannot be asked of it")
            jobs.append((entry, None))
        else:
            jobs.extend((entry, a) for a in ([only] if only is not None else algorithms))
    return jobs


def _job_rows(jobs, coll, sizes, settings, progress, workers, scheduler):
    """The rows of ``jobs``, in order: one after another in this process (an error raised as
    it is), or on a pool, where a job that raises is an error naming its entry."""
    if scheduler is None and workers in (None, 1):
        rows = []
        for done, (entry, algorithm) in enumerate(jobs, 1):
            rows.append(_job_row(entry, algorithm, coll, sizes, settings))
            if progress:
                progress(done, len(jobs))
        return rows
    rows = [None] * len(jobs)
    tasks = [(i, (entry, algorithm, coll, sizes, settings))
             for i, (entry, algorithm) in enumerate(jobs)]
    with open_pool(workers, scheduler) as pool:
        for done, (i, row) in enumerate(run_tasks(_job_row, tasks, pool), 1):
            if isinstance(row, Failure):
                raise UnsupportedError(f"{jobs[i][0].source}: {row.reason}")
            rows[i] = row
            if progress:
                progress(done, len(jobs))
    return rows


def _job_row(entry, algorithm, coll, sizes, settings):
    """The :class:`ComparisonRow` of one job: invalid (unreadable), a schedule priced as it
    is, or a topology's schedule generated (unsupported when the generator says so) and
    priced."""
    alpha, node_bandwidth, link_bandwidth = (settings["alpha"], settings["node_bandwidth"],
                                             settings["link_bandwidth"])
    suffix = f" [{entry.label}]" if entry.label else ""
    if entry.problem is not None:
        return ComparisonRow(name=entry.label, source=entry.source, topology=None,
                             algorithm=None, collective=coll, nodes=None, degree=None,
                             verdict="invalid", verified=False, reason=entry.problem,
                             **settings)
    if entry.schedule is not None:
        s = entry.schedule
        s = s.replace(topology=_fair(s.topology, alpha, node_bandwidth, link_bandwidth))
        return _row(s, f"{s.topology.name} {s.algorithm}{suffix}", entry.source, sizes,
                    settings)
    topo = _fair(entry.topology, alpha, node_bandwidth, link_bandwidth)
    name = f"{topo.name} {algorithm}{suffix}"
    try:
        s = generate(topo, coll, algorithm)
    except UnsupportedError as exc:
        return ComparisonRow(name=name, source=entry.source, topology=topo.name,
                             algorithm=algorithm, collective=coll, nodes=topo.num_nodes,
                             degree=_degree(topo), verdict="unsupported", verified=None,
                             reason=str(exc), **settings)
    return _row(s, name, entry.source, sizes, settings,
                pipelined=algorithm in PIPELINED_ALGORITHMS)


def compare(entries, sizes=defaults.COMPARE_SIZES, collective="allreduce", algorithms=("bfb",), *,
            alpha=defaults.ALPHA, node_bandwidth=None, link_bandwidth=None, progress=None,
            workers=None, scheduler=None, gamma=None):
    """Verify and price schedules side by side under the same latency and bandwidth.

    Parameters
    ----------
    entries : iterable
        Topology specs (``"torus:8x8"``), topology files, schedule files (``.json`` whose
        ``"format"`` is ``"topocoll.schedule"``), Topologies and Schedules, in any mix; a
        pair ``(topology, algorithm)`` runs only that algorithm on that topology.
    sizes : iterable of float or str
        Buffer sizes M (``"1MiB"`` or bytes). Default :data:`defaults.COMPARE_SIZES`.
    collective : str
        What to generate for topology entries (schedules keep their own). Default allreduce.
    algorithms : str or iterable of str
        Generators run on every topology entry, one row each (schedules keep their own).
    alpha : float or str
        Latency of every link (default 10 us).
    node_bandwidth : float or str, optional
        Egress bandwidth of each node, split evenly over its out-links (the NSDI 2025 paper's
        fair-comparison convention; not together with ``link_bandwidth``).
    link_bandwidth : float or str, optional
        Bandwidth of every link. Default (neither given): 100 Gbps per link
        (:data:`defaults.LINK_BANDWIDTH`), the cluster ``schedule`` and ``evaluate`` price
        with, so a spec's time here is the time ``evaluate`` gives.
    progress : callable, optional
        Called as ``progress(done, total)`` after each row.
    workers : int, optional
        Local processes that make, verify and price the rows (default: this process, one row
        after another; :func:`topocoll.batch.open_pool`).
    scheduler : str, optional
        A Dask scheduler's address (``tcp://HOST:8786``): the rows run on its cluster.
    gamma : float or str, optional
        Reduction cost: seconds per byte a node reduces, or its reduction throughput
        (``"100GB/s"``). Default none: reductions are free. Every time is then
        ``T_L + T_B + T_gamma``, ``T_gamma`` as :func:`topocoll.schedule.cost.evaluate` prices
        it (docs/math.md, "The reduction cost gamma"); the lower bounds leave it out.

    Returns
    -------
    CompareResult
        ``rows``: one :class:`ComparisonRow` per schedule file and one per (topology,
        algorithm), in argument order. Rows that failed verification have
        ``verdict="invalid"`` and are not priced (the result's status is then 3);
        (topology, algorithm) pairs the algorithm cannot handle have ``verdict="unsupported"``.
        The fastest priced row at each size has ``sizes[i].fastest`` set.

    Raises
    ------
    SpecError, ScheduleFormatError, UnitError
        A bad spec, an unreadable file or a bad quantity, before anything is generated.
    UnsupportedError
        No entries, or nothing could be generated at all (the message gives the first reason).

    Examples
    --------
    >>> plain, reducing = (compare(["ring:8"], sizes=["1MiB"], gamma=g) for g in (None, "100GB/s"))
    >>> reducing.rows[0].sizes[0].time > plain.rows[0].sizes[0].time
    True
    """
    if isinstance(entries, (str, os.PathLike, Schedule, Topology)):
        entries = [entries]
    sizes = _sizes(sizes)
    algorithms = _algorithms(algorithms)
    coll = _collective(collective).name
    alpha = parse_time(alpha, what="alpha")
    node_bandwidth, link_bandwidth = defaults.bandwidth_convention(node_bandwidth, link_bandwidth)
    settings = {"alpha": alpha, "node_bandwidth": node_bandwidth,
                "link_bandwidth": link_bandwidth, "gamma": parse_gamma(gamma)}
    resolved = [_resolve_pair(item) for item in entries]
    if not resolved:
        raise UnsupportedError("nothing to compare: give topology specs or schedule files")

    jobs = _jobs(resolved, algorithms)
    rows = _job_rows(jobs, coll, sizes, settings, progress, workers, scheduler)

    if all(r.verdict == "unsupported" for r in rows):
        raise UnsupportedError(f"nothing to compare: {rows[0].name}: {rows[0].reason}")
    for row, name in zip(rows, _unique([r.name for r in rows])):
        row.name = name
    for i in range(len(sizes)):
        best = fastest(rows, i)
        if best is not None:
            best.sizes[i].fastest = True
    return _result(rows, sizes, coll, settings)


def _result(rows, sizes, collective, settings):
    """The :class:`CompareResult` of finished rows: 3 if any schedule failed verification."""
    _one_model(rows)
    invalid = [r.name for r in rows if r.verdict == "invalid"]
    unsupported = sum(r.verdict == "unsupported" for r in rows)
    priced = len(rows) - len(invalid) - unsupported
    skipped = f"; {unsupported} unsupported" if unsupported else ""
    if invalid:
        status = Status.INVALID
        message = (f"{len(invalid)} of {len(rows)} schedules failed verification "
                   f"({', '.join(invalid)}); {priced} priced{skipped}")
    else:
        status = Status.SUCCESS
        message = f"{priced} schedules verified and priced at {len(sizes)} sizes{skipped}"
    return CompareResult(status=status, message=message, rows=rows, sizes=list(sizes),
                         collective=collective, **settings)


@dataclass
class CompareResult(Result):
    """What :func:`compare` (and :func:`~topocoll.studies.survey.survey`) returns: a
    :class:`~topocoll.results.Result` whose ``status`` is 0 (``SUCCESS``) when every schedule
    verified (rows the algorithm cannot make are listed, not counted against it) and 3
    (``INVALID``) when any failed verification; ``message`` names them.

    Attributes
    ----------
    rows : list of ComparisonRow
        One per schedule file and one per (topology, algorithm), in argument order.
    sizes : list of float
        The buffer sizes priced (bytes).
    collective : str
        What was generated for topology entries.
    alpha, node_bandwidth, link_bandwidth : float or None
        The latency and bandwidth every entry was given.
    gamma : float
        The reduction cost every entry was given (seconds per byte; 0: free).
    """

    rows: list
    sizes: list
    collective: str
    alpha: float
    node_bandwidth: float | None = None
    link_bandwidth: float | None = None
    gamma: float = 0.0

    def fastest(self, index):
        """The priced row fastest at ``sizes[index]``, or None."""
        return fastest(self.rows, index)

    def to_dict(self):
        """The core result fields, the settings, every row and the fastest row per size."""
        winners = [self.fastest(i) for i in range(len(self.sizes))]
        return {**super().to_dict(), "collective": self.collective,
                "model": _one_model(self.rows), "alpha": self.alpha,
                "node_bandwidth": self.node_bandwidth, "link_bandwidth": self.link_bandwidth,
                "gamma": self.gamma, "bandwidth": describe_settings(self.alpha, self.node_bandwidth,
                                               self.link_bandwidth).split(", ", 1)[1],
                "sizes": list(self.sizes), "rows": [r.to_dict() for r in self.rows],
                "fastest": [{"size": m, "name": w.name if w else None}
                            for m, w in zip(self.sizes, winners)]}


def _one_model(rows):
    """The pricing model every row names; rows priced by different models are refused."""
    models = sorted({getattr(r, "model", _STEP_MODEL) for r in rows})
    if len(models) > 1:
        raise UnsupportedError(f"rows priced by different models ({', '.join(models)}) are "
                               "not comparable; price them all in one model")
    return models[0] if models else _STEP_MODEL


def fastest(rows, index):
    """The priced row with the smallest time at ``sizes[index]`` (the first on ties), or None.
    Rows priced by different models are refused (UnsupportedError)."""
    _one_model(rows)
    priced = [r for r in rows if r.priced]
    return min(priced, key=lambda r: r.sizes[index].time) if priced else None


def _best_overall(priced):
    """The row fastest at the most sizes; ties go to the one fastest at the largest size."""
    order = sorted(range(len(priced[0].sizes)), key=lambda i: priced[0].sizes[i].size)
    wins = [sum(r.sizes[i].fastest for i in order) for r in priced]
    largest = order[-1]
    return max(range(len(priced)),
               key=lambda k: (wins[k], -priced[k].sizes[largest].time))


def plot_comparison(rows, path, *, title=None):
    """Draw time against buffer size on log-log axes, one line per priced row, and the lower
    bound of the best row (fastest at the most sizes) dashed; write it to ``path`` (the suffix
    picks the format: .png, .svg, .pdf).

    matplotlib is imported here (see :mod:`topocoll.plotting`).
    """
    _one_model(rows)
    priced = [r for r in rows if r.priced]
    if not priced:
        raise UnsupportedError("nothing to plot: no schedule was verified and priced")
    given = sorted({c.size for r in priced for c in r.sizes})
    lo, hi = given[0], given[-1]
    if hi <= lo * 4:
        lo, hi = lo / 8, hi * 8
    grid = np.geomspace(lo, hi, 200)

    fig, ax = new_axes((7, 4.5))
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

    for r in priced:
        line, = ax.plot(grid, [r.time_at(m) for m in grid], linewidth=1.6, label=r.name)
        ax.plot([c.size for c in r.sizes], [c.time for c in r.sizes], "o",
                color=line.get_color(), markersize=4)
    best = priced[_best_overall(priced)]
    ax.plot(grid, best.latency_lower_bound + best.bw_lower_bound_per_byte * grid, "--",
            color="black", linewidth=1.2, label=f"lower bound ({best.name})")

    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ticks = given if len(given) <= 8 else [2.0**k for k in range(0, 61, 10) if lo <= 2.0**k <= hi]
    if ticks:
        ax.xaxis.set_major_locator(FixedLocator(ticks))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: format_size(x)))
        ax.xaxis.set_minor_formatter(NullFormatter())
    ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: format_time(y)))
    ax.set_xlabel("buffer size M (bytes, log scale)")
    ax.set_ylabel("time (s, log scale)")
    ax.grid(True, which="major", linewidth=0.5, alpha=0.5)
    ax.set_title(title or _default_title(priced), fontsize=10)
    ax.legend(fontsize=8, loc="upper left", frameon=False)
    return save_figure(fig, path, dpi=100)


def _default_title(priced):
    colls = sorted({r.collective for r in priced})
    what = colls[0] if len(colls) == 1 else "mixed collectives"
    r = priced[0]
    return (f"{what}: time against buffer size "
            f"({describe_settings(r.alpha, r.node_bandwidth, r.link_bandwidth, gamma=r.gamma)})")


def describe_settings(alpha=defaults.ALPHA, node_bandwidth=None, link_bandwidth=None, *,
                      gamma=None):
    """One line naming the latency and bandwidth applied to every entry, for titles, and
    the reduction cost ``gamma`` when there is one.

    >>> describe_settings(), describe_settings(node_bandwidth="100Gbps")
    ('alpha 10us, 100Gbps per link', 'alpha 10us, 100Gbps per node')
    >>> describe_settings(gamma="100GB/s")
    'alpha 10us, 100Gbps per link, reduction at 800Gbps'
    """
    alpha = parse_time(alpha, what="alpha")
    gamma = parse_gamma(gamma)
    reduction = f", reduction at {format_bandwidth(1.0 / gamma)}" if gamma > 0 else ""
    return f"alpha {format_time(alpha)}, " \
           f"{defaults.describe_convention(node_bandwidth, link_bandwidth)}{reduction}"
