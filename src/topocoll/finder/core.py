"""The topology finder: "N nodes with d ports, this latency and bandwidth, these allreduces:
which topology, which schedule, how far from optimal?"

:func:`find` runs the search (:class:`~topocoll.finder.search.Search`, predictions only),
prices every frontier candidate for the workload, chooses the fastest, then builds its
allreduce schedule, verifies it with :func:`topocoll.verify` and prices it with
:func:`topocoll.evaluate` at the cluster's latency and bandwidth: the *evaluated* time is
the truth the prediction is compared with. :func:`find_range` gives frontiers for many sizes
(predictions only). The cluster is the one default (:mod:`topocoll.defaults`): 100 Gbps
and 10 us on every link, so a d-regular candidate's time is what ``topocoll schedule`` and
``topocoll evaluate`` give for its topology; ``node_bandwidth`` asks instead for the NSDI 2025
paper's convention of a fixed egress per node split over its links. The cost model is in units
of M/B with B a node's egress: per link, ``B = d * link_bandwidth`` (every candidate has d
links per node, or fewer links standing for d/d' parallel ones). Both keep their answers in
the results cache (:mod:`~topocoll.finder.cache`), so a repeated query is instant.

>>> r = find(16, 4, "1MiB", cache=False)
>>> r.success, r.best.name, r.evaluation["verified"]
(True, 'metacyclic:8,2,7:0.1,5.0,6.0,7.1', True)
>>> round(r.evaluated_time / r.predicted_time, 12)
1.0
"""

import time
from dataclasses import dataclass, field

from .. import defaults
from ..errors import TopocollError, UnsupportedError
from ..limits import require_memory
from ..results import Result, Status, as_progress
from ..units import format_time
from .build import recipe_topology
from .cache import Cache
# re-exported: their documented home was this module (find_range, frontier and the helpers
# optimize shares with find now live in evaluation.py, below both)
from .evaluation import (BY_CONSTRUCTION, EXPLICIT, as_workload, check_algorithms,
                         cluster_settings, evaluate_best, evaluate_candidate, find_range,
                         frontier, node_egress, open_cache, rank_by_time)
from .optimize import optimize as _optimize
from .search import Candidate
from .workload import Workload

__all__ = ["find", "find_range", "frontier", "FindResult", "as_workload", "METHODS",
           "EXPLICIT", "BY_CONSTRUCTION", "EXPLICIT_NODES", "MAX_NODES", "resolve_method",
           "open_cache", "rank_by_time", "evaluate_best", "evaluate_candidate",
           "cluster_settings", "check_algorithms", "node_egress"]

#: ``find(method=...)``: the name -> the label the evaluation carries (``"auto"``: explicit up
#: to :data:`EXPLICIT_NODES` nodes or when the schedule is kept, else by construction).
METHODS = {"explicit": EXPLICIT, "construction": BY_CONSTRUCTION, "auto": None}
#: Largest N whose chosen allreduce ``method="auto"`` builds and verifies whole (1024 nodes:
#: about 2.5 million transfers, seconds; 16384 nodes would be 670 million, tens of GiB).
EXPLICIT_NODES = 1024
#: Largest N :func:`find` takes (by construction a million nodes take seconds; the limit keeps
#: a mistyped size from running the search on numbers no cluster has).
MAX_NODES = 1 << 20


@dataclass
class FindResult(Result):
    """What :func:`find` found: a :class:`~topocoll.results.Result` with ``success``,
    ``status`` and ``message`` and the fields below.

    ``node_bandwidth`` is the egress B per node every price used (per link: ``degree *
    link_bandwidth``), ``link_bandwidth`` the link speed when the cluster was given per link
    (the default) and None under the per-node convention; ``bandwidth`` names the convention.

    ``status`` (the one table of :mod:`topocoll.results`): 0 (``SUCCESS``) the chosen candidate
    was built, verified and evaluated; 2 (``NOT_PROVEN``) the choice rests on predictions only
    (``evaluate=False``), or the best-predicted candidate could not be built or verified and
    the next best one was; 5 (``FAILED``) no frontier candidate could be built and verified.

    Attributes
    ----------
    frontier : list of Candidate
        The Pareto frontier over (steps, T_B), fewest steps first.
    times : list of float
        Predicted workload time (s) of each frontier candidate.
    best : Candidate
        The chosen candidate (the evaluated one when ``status`` is 2).
    predicted_time, lower_bound : float
        Its predicted workload time and the two-phase bound ``sum 2*(moore_steps*alpha +
        (N-1)/N*M/B)`` (seconds): no allreduce made of a reduce-scatter followed by an
        allgather (every schedule the finder builds) beats it; schedules of other shapes may
        (:func:`topocoll.finder.workload.any_allreduce_lower_bound` bounds those).
    evaluated_time : float or None
        The workload's time from :func:`topocoll.evaluate` on the built, verified schedule.
    ratio : float or None
        ``evaluated_time / lower_bound`` (``predicted_ratio``: the prediction's).
    evaluation : dict or None
        ``steps``, ``T_L``, ``T_B`` and ``time`` of the verified allreduce for each workload
        size, ``verified``, ``transfers`` and where it came from (``"fresh"`` or ``"cache"``).
    schedule : Schedule or None
        The verified allreduce (at the cluster's latency and bandwidth) when it was built in
        this call (a cached evaluation rebuilds nothing unless ``keep_schedule``).
    bidirectional, bidirectional_checked : bool
        Whether the search was restricted to bidirectional topologies and, when it was, the
        check of the chosen topology (built from its recipe) by
        :meth:`~topocoll.topology.model.Topology.is_bidirectional` (None when not asked).
    """

    nodes: int
    degree: int
    alpha: float
    node_bandwidth: float
    workload: Workload
    frontier: list
    times: list
    best: Candidate | None
    predicted_time: float | None
    lower_bound: float
    evaluated_time: float | None = None
    ratio: float | None = None
    predicted_ratio: float | None = None
    optimization: dict | None = None
    evaluation: dict | None = None
    schedule: object = field(default=None, repr=False)
    warnings: list = field(default_factory=list)
    from_cache: dict = field(default_factory=dict)
    seconds: dict = field(default_factory=dict)
    link_bandwidth: float | None = None
    bidirectional: bool = False
    bidirectional_checked: bool | None = None

    @property
    def bandwidth(self):
        """The convention priced with, in words: ``"100Gbps per link"`` or ``"100Gbps per
        node"``."""
        return defaults.describe_convention(self.node_bandwidth, self.link_bandwidth)

    @property
    def topology(self):
        return None if self.schedule is None else self.schedule.topology

    def entry(self, candidate, time_):
        return {"name": candidate.name, "nodes": candidate.nodes, "degree": candidate.degree,
                "steps": candidate.steps, "T_B": candidate.t_b, "time": time_,
                "allreduce_steps": candidate.allreduce_steps, "kind": candidate.kind,
                "exact": candidate.exact, "bw_optimal": candidate.bw_optimal}

    def to_dict(self):
        """The ``--json`` document: ``frontier`` and ``best`` plus the settings."""
        best = None
        if self.best is not None:
            best = self.entry(self.best, self.predicted_time)
            best.update(lower_bound=self.lower_bound, ratio=self.ratio,
                        predicted_ratio=self.predicted_ratio,
                        evaluated_time=self.evaluated_time, evaluation=self.evaluation)
        return {**super().to_dict(), "nodes": self.nodes, "degree": self.degree, "alpha": self.alpha,
                "node_bandwidth": self.node_bandwidth, "link_bandwidth": self.link_bandwidth,
                "bandwidth": self.bandwidth, "workload": self.workload.to_dict(),
                "frontier": [self.entry(c, t) for c, t in zip(self.frontier, self.times)],
                "best": best, "optimization": self.optimization, "warnings": list(self.warnings),
                "from_cache": dict(self.from_cache), "seconds": dict(self.seconds),
                "bidirectional": self.bidirectional,
                "bidirectional_checked": self.bidirectional_checked}


def _optimize_into(result, store, products, progress, algorithms, search):
    """Run the optimizer from the result's frontier; take its choice when it is faster (it
    comes with its verified schedule; otherwise the result keeps what it had)."""
    opt = _optimize(result.nodes, result.degree, result.workload, alpha=result.alpha,
                   node_bandwidth=result.node_bandwidth, algorithms=algorithms, cache=store,
                   products=products, progress=progress, frontier=result.frontier,
                   keep_schedule=False, **search)
    result.optimization = opt.to_dict()
    result.seconds["optimize"] = opt.seconds["total"]
    if not opt.improved:
        return
    before = result.evaluated_time
    result.best, result.predicted_time = opt.best, opt.predicted_time
    result.predicted_ratio = opt.predicted_time / result.lower_bound
    result.message = (f"optimized {opt.best.name}: evaluated {format_time(opt.evaluated_time)} "
                      f"(predicted {format_time(opt.predicted_time)}), "
                      f"{opt.evaluated_time / result.lower_bound:.3f}x the two-phase bound "
                      f"{format_time(result.lower_bound)}; the frontier's best {opt.seed.name} "
                      f"evaluated {format_time(before)}")
    result.evaluation = opt.evaluation
    result.evaluated_time = opt.evaluated_time
    result.ratio = opt.evaluated_time / result.lower_bound
    result.schedule = opt.schedule
    result.status = Status.SUCCESS


def resolve_method(method, nodes, keep_schedule=False):
    """The evaluation method :func:`find` uses: ``"auto"`` is ``"explicit"`` up to
    :data:`EXPLICIT_NODES` nodes or when the schedule is kept, else ``"construction"``.

    >>> resolve_method("auto", 1024), resolve_method("auto", 16384)
    ('explicit', 'construction')
    """
    if method not in METHODS:
        raise UnsupportedError(f"unknown evaluation method {method!r}; use one of "
                               f"{', '.join(METHODS)}")
    if method != "auto":
        return method
    return "explicit" if keep_schedule or nodes <= EXPLICIT_NODES else "construction"


def allreduce_bytes(nodes):
    """Estimated peak memory of building, verifying and evaluating a BFB allreduce of ``nodes``
    nodes: about ``2.5 N^2`` transfers (each node receives ``N - 1`` shards twice, split over
    its in-links) at about 100 bytes each with the verifier's state."""
    return int(250 * nodes * nodes)


def find(nodes, degree, workload="1MiB", *, alpha="10us", node_bandwidth=None,
         link_bandwidth=None, evaluate=True, keep_schedule=False, cache=True, products=True,
         progress=None, algorithms=("bfb",), optimize=False, budget=None, max_evaluations=None,
         seed=0, method="auto", workers=None, scheduler=None, bidirectional=False):
    """The best topology and allreduce schedule for a cluster and a workload.

    Parameters
    ----------
    nodes : int
        Cluster size N (>= 2).
    degree : int
        Links (ports) per node d (>= 1); candidates use at most d distinct out-neighbours.
    workload : Workload, size or list
        One buffer size (``"1MiB"``), a list of sizes or ``(size, weight)`` pairs, or a
        :class:`~topocoll.finder.workload.Workload` (e.g. from a model's layer sizes).
    alpha : float or str
        Latency of every link (one per step), default 10 us.
    node_bandwidth : float or str, optional
        Egress bandwidth B of every node, split evenly over its links (the NSDI 2025 paper's
        convention, e.g. ``"100Gbps"``); not together with ``link_bandwidth``.
    link_bandwidth : float or str, optional
        Bandwidth of every link (default when neither is given: 100 Gbps,
        :data:`~topocoll.defaults.LINK_BANDWIDTH`); the cost model's B is then ``degree *
        link_bandwidth``.
    evaluate : bool
        Build, verify and evaluate the choice (default). Otherwise only predictions.
    keep_schedule : bool
        Build the schedule even when its evaluation is cached (to write it out).
    cache : bool, path or Cache
        The results cache (default: the user's; False: none).
    products : bool
        Include Cartesian products of different bandwidth-optimal graphs (tori among them).
    progress : callable, optional
        ``progress(done, total, stage)`` during long work (``total`` None when unknown;
        :func:`~topocoll.results.as_progress` says which callbacks are accepted).
    algorithms : sequence of str
        Schedule algorithms for the candidates' leaves (keys of
        :data:`~topocoll.finder.build.ALGORITHMS`, default BFB only); the chosen candidate is
        built with each and the fastest verified schedule is kept.
    optimize : bool
        After the frontier, run :func:`~topocoll.finder.optimize.optimize` (better bases for
        the best candidates' expansion recipes, then the best ones built, verified and
        evaluated); its result replaces the choice when it evaluates faster. Implies
        ``evaluate``.
    budget : float or str, optional
        The optimizer's search time in seconds (``300`` or ``"5min"``).
    max_evaluations : int, optional
        The optimizer's number of candidate bases (deterministic for a given ``seed``).
    seed : int
        The optimizer's random seed.
    workers, scheduler : optional
        Where the optimizer searches its skeletons: as tasks on local processes or a Dask
        cluster (see :func:`~topocoll.finder.optimize.optimize`) [default: in turns here].
    method : {"auto", "explicit", "construction"}
        How the choice is evaluated: ``"explicit"`` builds its whole allreduce, verifies and
        evaluates it; ``"construction"`` builds and verifies only the allreduce of an
        expanded candidate's base and applies the expansions' cost rules (docs/math.md section
        4): steps exact, T_B exact or (line graphs) an upper bound; the evaluation's
        ``"method"`` and ``"exact"`` say which. Far less time and memory at thousands of nodes.
        ``"auto"`` (default): explicit up to :data:`EXPLICIT_NODES` nodes or with
        ``keep_schedule``, else by construction (:func:`resolve_method`).
    bidirectional : bool
        Only bidirectional topologies, every link with its reverse (Zhao et al. (NSDI 2025),
        appendix F: bases that are bidirectional, degree expansions, Cartesian powers and
        products of them, and unions ``bidir(G)`` of reverse-symmetric digraphs G of degree
        d/2 with their transpose, at G's steps and T_B). The choice's topology is checked
        (``bidirectional_checked``). With ``optimize`` the optimizer proposes bidirectional
        bases only (inverse-closed Cayley generators, symmetric rewiring) under skeletons of
        degree expansions and powers, and its choice is checked again. Its predicted time is
        never below the unrestricted choice's: it picks from a subset.

    Returns
    -------
    FindResult
        With ``optimization`` (the optimizer's summary) when ``optimize``.
    """
    started = time.perf_counter()
    nodes, degree, alpha, bandwidth, workload, link = cluster_settings(
        nodes, degree, alpha, node_bandwidth, workload, link_bandwidth=link_bandwidth)
    progress = as_progress(progress)
    algorithms = check_algorithms(algorithms)
    evaluate = evaluate or optimize
    method = resolve_method(method, nodes, keep_schedule)
    if nodes > MAX_NODES:
        raise UnsupportedError(f"find handles at most {MAX_NODES} nodes, got {nodes}")
    if (evaluate or keep_schedule) and (method == "explicit" or keep_schedule):
        _require_allreduce_memory(nodes)   # fail before the search, not after it
    store = open_cache(cache)
    try:
        candidates, cached = frontier(nodes, degree, cache=store, products=products,
                                      progress=progress, bidirectional=bidirectional)
        if not candidates:
            kind = "bidirectional topology" if bidirectional else "topology"
            raise UnsupportedError(f"the search has no {kind} of {nodes} nodes and degree "
                                   f"{degree}" + (" (every link with its reverse: odd degree "
                                                  "needs an even number of nodes)"
                                                  if bidirectional and nodes * degree % 2
                                                  else ""))
        searched = time.perf_counter()
        times, order = rank_by_time(candidates, workload, alpha, bandwidth)
        lower = workload.lower_bound(nodes, degree, alpha=alpha, bandwidth=bandwidth)
        result = FindResult(status=Status.NOT_PROVEN, message="", nodes=nodes, degree=degree, alpha=alpha,
                            node_bandwidth=bandwidth, workload=workload, frontier=candidates,
                            times=times, best=candidates[order[0]],
                            predicted_time=times[order[0]], lower_bound=lower,
                            predicted_ratio=times[order[0]] / lower, link_bandwidth=link,
                            bidirectional=bool(bidirectional))
        result.from_cache["frontier"] = cached
        result.seconds["search"] = searched - started
        if not evaluate:
            result.message = (f"chose {result.best.name}: predicted {format_time(times[order[0]])}"
                              f", {result.predicted_ratio:.3f}x the lower bound (not evaluated)")
            _check_bidirectional(result)
            return result
        _evaluate_in_order(result, candidates, times, order, (workload, alpha, bandwidth),
                           algorithms=algorithms, store=store, keep_schedule=keep_schedule,
                           progress=progress, method=method)
        _check_bidirectional(result)
        if optimize and result.status != Status.FAILED:
            _optimize_into(result, store, products, progress, algorithms,
                           dict(budget=budget, max_evaluations=max_evaluations, seed=seed,
                                workers=workers, scheduler=scheduler,
                                bidirectional=bool(bidirectional)))
            _check_bidirectional(result)
        return result
    finally:
        if "result" in locals():
            result.warnings.extend(store.warnings)
            result.seconds["total"] = time.perf_counter() - started
        if not isinstance(cache, Cache):
            store.close()


def _check_bidirectional(result):
    """Under ``bidirectional``: build the choice's topology (from its kept schedule, else its
    recipe) and check that every link has its reverse; a choice that fails is a search bug,
    reported as ``FAILED`` rather than handed out."""
    if not result.bidirectional or result.best is None:
        return
    topo = (result.schedule.topology if result.schedule is not None
            else recipe_topology(result.best.recipe))
    result.bidirectional_checked = topo.is_bidirectional()
    if not result.bidirectional_checked:
        result.status = Status.FAILED
        result.message = f"{result.best.name} is not bidirectional: a search bug"


def _require_allreduce_memory(nodes):
    require_memory(allreduce_bytes(nodes), f"building and verifying the allreduce of "
                   f"{nodes} nodes (about {2.5 * nodes * nodes:.3g} transfers; --no-evaluate or "
                   "evaluate=False gives the predictions only)")


def _evaluate_in_order(result, candidates, times, order, settings, *, algorithms, store,
                       keep_schedule, progress, method):
    """Build, verify and evaluate the candidates best-predicted first until one succeeds; its
    evaluation goes into ``result`` (``FAILED`` when none does)."""
    lower = result.lower_bound
    failures = []
    for rank, i in enumerate(order):
        c = candidates[i]
        try:
            evaluation, schedule, seconds = evaluate_best(
                c, algorithms, settings, store=store,
                keep_schedule=keep_schedule, progress=progress, method=method)
        except (TopocollError, MemoryError) as exc:
            failures.append(f"{c.name}: {exc}")
            continue
        result.best, result.predicted_time = c, times[i]
        result.predicted_ratio = times[i] / lower
        result.evaluation = evaluation
        result.evaluated_time = evaluation["time"]
        result.ratio = evaluation["time"] / lower
        result.schedule = schedule
        result.from_cache["evaluation"] = evaluation["source"] == "cache"
        result.seconds.update(seconds)
        result.status = Status.SUCCESS if rank == 0 else Status.NOT_PROVEN
        result.message = (f"chose {c.name}: evaluated {format_time(result.evaluated_time)} "
                          f"(predicted {format_time(times[i])}), {result.ratio:.3f}x the "
                          f"two-phase bound {format_time(lower)}")
        if evaluation["algorithm"] == "bfb" and evaluation["time"] > times[i] * (1 + 1e-9):
            # every BFB prediction is exact or an upper bound: a shipped cost is wrong
            result.warnings.append(f"{c.name}: evaluated {format_time(evaluation['time'])}"
                                   f" exceeds its prediction {format_time(times[i])}; a "
                                   "shipped base cost may be wrong")
        if failures:
            result.message += f"; skipped {len(failures)} better-predicted candidate(s): " \
                              + "; ".join(failures)
        break
    else:
        result.status = Status.FAILED
        result.message = "no frontier candidate could be built and verified: " + \
            "; ".join(failures)
