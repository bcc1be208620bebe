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

import os
import time
from dataclasses import dataclass, field

from .. import defaults
from ..errors import InputTypeError, TopocollError, UnsupportedError
from ..limits import require_memory
from ..results import Result, Status, as_progress
from ..units import format_time, parse_time, whole_number
from .build import build_allreduce, priced
from .cache import Cache
from .search import Candidate, Search
from .workload import Workload

__all__ = ["find", "find_range", "frontier", "FindResult", "as_workload", "METHODS",
           "EXPLICIT", "BY_CONSTRUCTION", "EXPLICIT_NODES", "MAX_NODES", "resolve_method",
           "open_cache", "rank_by_time", "evaluate_best", "evaluate_candidate",
           "cluster_settings", "check_algorithms", "node_egress"]

#: How an evaluation was obtained: the whole schedule built, verified and evaluated, or the
#: base's allreduce built and verified and the expansions' cost rules applied (docs/math.md
#: section 4; nothing of the expanded size is built).
EXPLICIT = "verified explicit"
BY_CONSTRUCTION = "by construction from a verified base"
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
                "from_cache": dict(self.from_cache), "seconds": dict(self.seconds)}


# ---------------------------------------------------------------------- inputs
def as_workload(workload):
    """A :class:`Workload` from a Workload, a size (``"1MiB"`` or bytes) or a list of sizes or
    ``(size, weight)`` pairs."""
    if isinstance(workload, Workload):
        return workload
    if isinstance(workload, (str, int, float)) and not isinstance(workload, bool):
        return Workload.single(workload)
    if isinstance(workload, (list, tuple, dict)):
        return Workload.weighted(workload)
    raise InputTypeError(f"a workload is a Workload, a size or a list of sizes, not "
                         f"{type(workload).__name__}")


def open_cache(cache):
    if isinstance(cache, Cache):
        return cache
    if cache is True or cache is None:
        return Cache()
    if cache is False:
        return Cache(enabled=False)
    if isinstance(cache, (str, os.PathLike)):
        return Cache(cache)
    raise InputTypeError(f"cache must be True, False, a path or a Cache, not {cache!r}")


def _frontier_key(nodes, degree, products):
    return f"nodes={nodes};degree={degree};products={int(bool(products))}"


# ---------------------------------------------------------------------- frontiers
def frontier(nodes, degree, *, cache=False, products=True, progress=None, search=None):
    """The Pareto frontier at ``nodes`` nodes of degree at most ``degree`` (predictions only),
    from the cache when it is there. Returns ``(candidates, from_cache)``.

    >>> [(c.name, c.steps, round(c.t_b, 4)) for c in frontier(8, 3)[0]]
    [('dcirculant:8:1,2,5', 2, 0.875)]
    """
    nodes = whole_number(nodes, "nodes", 2)
    degree = whole_number(degree, "degree", 1)
    store = open_cache(cache)
    key = _frontier_key(nodes, degree, products)
    doc = store.get("frontier", key)
    if doc is not None:
        return [Candidate.from_dict(c) for c in doc], True
    search = search or Search(degree, store, products=products, progress=progress)
    with store.batch():                 # the bases it measures: one commit, not one each
        found = search.target(nodes)
    store.put("frontier", key, [c.to_dict() for c in found])
    return found, False


def find_range(nodes, degree, *, cache=True, products=True, progress=None, workers=None):
    """Frontiers for every size in ``nodes`` (an iterable, e.g. ``range(2, 2001)``) at degree
    ``degree``: ``{N: [Candidate, ...]}``. Predictions only; every frontier is cached.

    The generalized Kautz digraph's BFB cost (the one part that is not a closed form) is
    computed exactly once per size and kept in the cache; ``workers`` processes compute the
    missing ones in parallel first (default: one).
    """
    degree = whole_number(degree, "degree", 1)
    sizes = [whole_number(n, "nodes", 2) for n in nodes]
    progress = as_progress(progress)
    store = open_cache(cache)
    search = Search(degree, store, products=products, progress=progress)
    missing = [n for n in sizes
               if store.get("frontier", _frontier_key(n, degree, products)) is None]
    if workers and workers > 1 and degree >= 2 and missing:
        _fill_genkautz(store, missing, degree, workers, progress)
    out = {}
    with store.batch():
        for i, n in enumerate(sizes):
            out[n] = frontier(n, degree, cache=store, products=products, search=search)[0]
            if progress:
                progress(i + 1, len(sizes), "frontiers")
    return out


def _genkautz_job(args):
    from .bfbcost import genkautz_cost

    n, d = args
    return n, genkautz_cost(n, d)


def _fill_genkautz(store, sizes, degree, workers, progress):
    import concurrent.futures as cf
    import multiprocessing as mp

    from .gktable import lookup

    todo = [n for n in sizes if lookup(n, degree) is None
            and store.get("cost", f"genkautz:{n},{degree}") is None]
    if not todo:
        return
    todo.sort(reverse=True)                       # big ones first: better balance
    ctx = mp.get_context("fork") if "fork" in mp.get_all_start_methods() else None
    with cf.ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
        for i, (n, cost) in enumerate(pool.map(_genkautz_job, [(n, degree) for n in todo],
                                               chunksize=8)):
            store.put("cost", f"genkautz:{n},{degree}", cost)
            if progress:
                progress(i + 1, len(todo), "generalized Kautz costs")


# ---------------------------------------------------------------------- find
def rank_by_time(candidates, workload, alpha, bandwidth):
    times = [c.time(workload, alpha=alpha, bandwidth=bandwidth) for c in candidates]
    order = sorted(range(len(candidates)),
                   key=lambda i: (times[i], candidates[i].steps, candidates[i].t_b,
                                  candidates[i].name))
    return times, order


def evaluate_best(candidate, algorithms, cost, *, store, keep_schedule=False, progress=None,
                  method="explicit"):
    """:func:`evaluate_candidate` with every algorithm of ``algorithms``: the fastest
    evaluation (its ``"algorithm"`` says which). ``cost`` is ``(workload, alpha, B)``, B the
    egress per node. An algorithm that fails on the candidate is skipped; if all fail, the
    first one's error is raised."""
    workload, alpha, bandwidth = cost
    best, first_error = None, None
    for algorithm in algorithms:
        try:
            if method == "construction" and not keep_schedule:
                got = _evaluate_by_construction(candidate, workload, alpha, bandwidth, store,
                                                progress, algorithm=algorithm)
            else:
                got = evaluate_candidate(candidate, workload, alpha, bandwidth, store,
                                         keep_schedule, progress, algorithm=algorithm)
        except (TopocollError, MemoryError) as exc:
            first_error = first_error or exc
            continue
        if best is None or got[0]["time"] < best[0]["time"]:
            best = got
    if best is None:
        raise first_error
    return best


def evaluate_candidate(candidate, workload, alpha, bandwidth, store, keep_schedule, progress, *,
                       algorithm="bfb"):
    """Build (leaves scheduled by ``algorithm``), verify and evaluate one candidate; the
    evaluation dict, the schedule and the seconds spent."""
    from ..schedule.cost import evaluate

    key = candidate.name if algorithm == "bfb" else f"{candidate.name}@{algorithm}"
    doc = store.get("evaluation", key)
    if doc is not None and not keep_schedule:
        return _evaluation_from(doc, workload, alpha, bandwidth, "cache", algorithm), None, {}
    seconds = {}
    schedule = _built_and_verified(
        lambda: priced(build_allreduce(candidate, algorithm=algorithm), alpha=alpha,
                       node_bandwidth=bandwidth),
        f"the {algorithm} allreduce on {candidate.name}",
        f"the allreduce built for {candidate.name}", progress, seconds)
    start = time.perf_counter()
    first = evaluate(schedule, workload.sizes[0], check=False)
    seconds["evaluate"] = time.perf_counter() - start
    # every link has latency alpha, so T_L = steps * alpha; T_B is linear in M/B: one
    # evaluation prices every size (the step model is affine in M)
    doc = {"steps": first.steps, "t_b": first.T_B / first.size * bandwidth / 2.0,
           "transfers": schedule.num_transfers, "verified": True,
           "topology": schedule.topology.name, "method": EXPLICIT, "exact": True}
    store.put("evaluation", key, doc)
    return _evaluation_from(doc, workload, alpha, bandwidth, "fresh", algorithm), schedule, \
        seconds


def _chain(recipe):
    """``(leaf recipe, [(kind, params), ...] innermost first)`` of a recipe."""
    chain = []
    while recipe[0] in ("line", "degree", "power"):
        if recipe[0] == "line":
            chain.append(("line", {}))
        elif recipe[0] == "degree":
            chain.append(("degree", {"m": recipe[2]}))
        else:
            chain.append(("power", {"n": recipe[2]}))
        recipe = recipe[1]
    return recipe, chain[::-1]


def _evaluate_by_construction(candidate, workload, alpha, bandwidth, store, progress, *,
                              algorithm="bfb"):
    """Price an expanded candidate without building it: the allreduce of its leaf (the base)
    is built and verified, its measured phases go through the expansions' cost rules
    (:func:`topocoll.synth.expansions.predict_chain`, docs/math.md section 4). The expanded
    schedule is valid by construction; steps are exact and T_B is exact, or an upper bound when
    a line graph is in the chain (``"exact": False``). A candidate that is a leaf itself is
    built, verified and evaluated (:func:`evaluate_candidate`)."""
    from ..synth.expansions import predict_chain

    leaf, chain = _chain(candidate.recipe)
    if not chain:
        return evaluate_candidate(candidate, workload, alpha, bandwidth, store, False, progress,
                                  algorithm=algorithm)
    key = f"{candidate.name}@construction" + ("" if algorithm == "bfb" else f"@{algorithm}")
    doc = store.get("evaluation", key)
    if doc is not None:
        return _evaluation_from(doc, workload, alpha, bandwidth, "cache", algorithm), None, {}
    seconds = {}
    base = _built_and_verified(lambda: build_allreduce(leaf, algorithm=algorithm),
                               f"the {algorithm} allreduce on the base of {candidate.name}",
                               f"the base allreduce of {candidate.name}", progress, seconds)
    steps, t_b, exact = predict_chain(base, chain)
    doc = {"steps": steps, "t_b": t_b / 2.0, "transfers": None, "verified": True,
           "topology": candidate.name, "method": BY_CONSTRUCTION, "exact": exact,
           "base": {"topology": base.topology.name, "transfers": base.num_transfers}}
    store.put("evaluation", key, doc)
    return _evaluation_from(doc, workload, alpha, bandwidth, "fresh", algorithm), None, seconds


def _built_and_verified(build, what, failure, progress, seconds):
    """``build()``'s schedule, verified (or an UnsupportedError naming ``failure``), with the
    seconds of each part added to ``seconds``."""
    from ..schedule.verify import verify

    start = time.perf_counter()
    if progress:
        progress(0, None, f"building {what}")
    schedule = build()
    seconds["build"] = time.perf_counter() - start
    if progress:
        progress(0, None, f"verifying {schedule.num_transfers} transfers")
    start = time.perf_counter()
    report = verify(schedule)
    seconds["verify"] = time.perf_counter() - start
    if not report.valid:
        raise UnsupportedError(f"{failure} failed verification: {report.summary()}")
    return schedule


def _evaluation_from(doc, workload, alpha, bandwidth, source, algorithm="bfb"):
    """Evaluated costs from a cached measurement: T_L = (latency steps) * alpha and T_B linear
    in M/B (exact for a network whose links all have latency alpha and whose nodes all have
    egress bandwidth B)."""
    per_size = []
    total = 0.0
    for m, w in zip(workload.sizes, workload.weights):
        t_l = doc["steps"] * alpha
        t_b = 2.0 * doc["t_b"] * m / bandwidth
        per_size.append({"size": m, "weight": w, "steps": doc["steps"], "T_L": t_l, "T_B": t_b,
                         "time": t_l + t_b})
        total += w * (t_l + t_b)
    out = {"source": source, "verified": bool(doc["verified"]), "steps": doc["steps"],
           "transfers": doc["transfers"], "T_B_per_phase": doc["t_b"], "time": total,
           "sizes": per_size, "algorithm": algorithm, "method": doc.get("method", EXPLICIT),
           "exact": bool(doc.get("exact", True))}
    if "base" in doc:
        out["base"] = dict(doc["base"])
    return out


def node_egress(degree, node_bandwidth=None, link_bandwidth=None):
    """``(B, L)``: the egress B per node the cost model uses and the link speed L (None under
    the per-node convention). Neither given: the default cluster, ``L =``
    :data:`~topocoll.defaults.LINK_BANDWIDTH` and ``B = degree * L``.

    >>> node_egress(4)
    (50000000000.0, 12500000000.0)
    >>> node_egress(4, node_bandwidth="100Gbps")
    (12500000000.0, None)
    """
    node, link = defaults.bandwidth_convention(node_bandwidth, link_bandwidth)
    return (node, None) if link is None else (int(degree) * link, link)


def cluster_settings(nodes, degree, alpha, node_bandwidth, workload, *, link_bandwidth=None):
    """The checked cluster and workload arguments of :func:`find` and
    :func:`~topocoll.finder.optimize.optimize`: ``(nodes, degree, alpha, B, workload, L)``
    with B and L from :func:`node_egress`."""
    nodes, degree = whole_number(nodes, "nodes", 2), whole_number(degree, "degree", 1)
    if degree > nodes - 1:
        # complete:N already links every pair and allreduces optimally in each phase's single
        # step: more links per node cannot help, and the searches grow with the degree
        raise UnsupportedError(f"degree {degree} on {nodes} nodes: at most {nodes - 1} (every "
                               f"other node; complete:{nodes} has it)")
    bandwidth, link = node_egress(degree, node_bandwidth, link_bandwidth)
    return (nodes, degree, parse_time(alpha, what="alpha"), bandwidth, as_workload(workload),
            link)


def check_algorithms(algorithms):
    from .build import ALGORITHMS

    if isinstance(algorithms, str):
        algorithms = (algorithms,)
    try:
        algorithms = tuple(algorithms)
    except TypeError:
        raise InputTypeError(f"algorithms must be a sequence of names, not {algorithms!r}") \
            from None
    unknown = [a for a in algorithms if a not in ALGORITHMS]
    if unknown or not algorithms:
        raise UnsupportedError(f"unknown schedule algorithm(s) {unknown or algorithms!r}; the "
                               f"finder knows {', '.join(ALGORITHMS)}")
    return algorithms


def _optimize_into(result, store, products, progress, algorithms, budget, max_evaluations,
                   seed):
    """Run the optimizer from the result's frontier; take its choice when it is faster (it
    comes with its verified schedule; otherwise the result keeps what it had)."""
    from .optimize import optimize

    opt = optimize(result.nodes, result.degree, result.workload, alpha=result.alpha,
                   node_bandwidth=result.node_bandwidth, seed=seed, budget=budget,
                   max_evaluations=max_evaluations, algorithms=algorithms, cache=store,
                   products=products, progress=progress, frontier=result.frontier,
                   keep_schedule=False)
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
         seed=0, method="auto"):
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
    method : {"auto", "explicit", "construction"}
        How the choice is evaluated: ``"explicit"`` builds its whole allreduce, verifies and
        evaluates it; ``"construction"`` builds and verifies only the allreduce of an
        expanded candidate's base and applies the expansions' cost rules (docs/math.md section
        4): steps exact, T_B exact or (line graphs) an upper bound; the evaluation's
        ``"method"`` and ``"exact"`` say which. Far less time and memory at thousands of nodes.
        ``"auto"`` (default): explicit up to :data:`EXPLICIT_NODES` nodes or with
        ``keep_schedule``, else by construction (:func:`resolve_method`).

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
        # fail before the search, not after it
        require_memory(allreduce_bytes(nodes), f"building and verifying the allreduce of "
                       f"{nodes} nodes (about {2.5 * nodes * nodes:.3g} transfers; --no-evaluate or "
                       "evaluate=False gives the predictions only)")
    store = open_cache(cache)
    try:
        candidates, cached = frontier(nodes, degree, cache=store, products=products,
                                      progress=progress)
        searched = time.perf_counter()
        times, order = rank_by_time(candidates, workload, alpha, bandwidth)
        lower = workload.lower_bound(nodes, degree, alpha=alpha, bandwidth=bandwidth)
        result = FindResult(status=Status.NOT_PROVEN, message="", nodes=nodes, degree=degree, alpha=alpha,
                            node_bandwidth=bandwidth, workload=workload, frontier=candidates,
                            times=times, best=candidates[order[0]],
                            predicted_time=times[order[0]], lower_bound=lower,
                            predicted_ratio=times[order[0]] / lower, link_bandwidth=link)
        result.from_cache["frontier"] = cached
        result.seconds["search"] = searched - started
        if not evaluate:
            result.message = (f"chose {result.best.name}: predicted {format_time(times[order[0]])}"
                              f", {result.predicted_ratio:.3f}x the lower bound (not evaluated)")
            return result
        failures = []
        for rank, i in enumerate(order):
            c = candidates[i]
            try:
                evaluation, schedule, seconds = evaluate_best(
                    c, algorithms, (workload, alpha, bandwidth), store=store,
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
        if optimize and result.status != Status.FAILED:
            _optimize_into(result, store, products, progress, algorithms, budget,
                           max_evaluations, seed)
        return result
    finally:
        if "result" in locals():
            result.warnings.extend(store.warnings)
            result.seconds["total"] = time.perf_counter() - started
        if not isinstance(cache, Cache):
            store.close()
