"""Frontiers and evaluations of the finder's candidates: what :func:`~topocoll.finder.core.find`
and :func:`~topocoll.finder.optimize.optimize` both use.

:func:`frontier` is the Pareto frontier at one size (predictions only, cached), and
:func:`find_range` many of them; :func:`evaluate_candidate` builds a candidate's allreduce,
verifies and prices it, :func:`evaluate_best` does so with every schedule algorithm asked for,
and an expanded candidate can be priced by construction from its verified base.
:func:`cluster_settings` checks the cluster arguments both searches take.

>>> [(c.name, c.steps, round(c.t_b, 4)) for c in frontier(8, 3)[0]]
[('dcirculant:8:1,2,5', 2, 0.875)]
"""

import os
import time

from .. import defaults
from ..batch import Failure, open_pool, run_tasks
from ..errors import InputTypeError, TopocollError, UnsupportedError
from ..results import as_progress
from ..units import parse_time, whole_number
from .bfbcost import genkautz_cost
from .build import ALGORITHMS, build_allreduce, priced
from .cache import Cache
from .genkautz_table import lookup as lookup_genkautz
from .recipes import EXPANSIONS, as_recipe
from .search import Candidate, Search
from .workload import Workload

__all__ = ["frontier", "find_range", "as_workload", "open_cache", "rank_by_time",
           "evaluate_best", "evaluate_candidate", "cluster_settings", "check_algorithms",
           "node_egress", "EXPLICIT", "BY_CONSTRUCTION"]

#: How an evaluation was obtained: the whole schedule built, verified and evaluated, or the
#: base's allreduce built and verified and the expansions' cost rules applied (docs/math.md
#: section 4; nothing of the expanded size is built).
EXPLICIT = "verified explicit"
BY_CONSTRUCTION = "by construction from a verified base"

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


def _frontier_key(nodes, degree, products, bidirectional=False):
    # the restricted search has its own entries; the unrestricted keys are as they were
    return (f"nodes={nodes};degree={degree};products={int(bool(products))}"
            + (";bidirectional=1" if bidirectional else ""))


# ---------------------------------------------------------------------- frontiers
def frontier(nodes, degree, *, cache=False, products=True, progress=None, search=None,
             bidirectional=False):
    """The Pareto frontier at ``nodes`` nodes of degree at most ``degree`` (predictions only),
    from the cache when it is there. Returns ``(candidates, from_cache)``. ``bidirectional``:
    over bidirectional topologies only (:class:`~topocoll.finder.search.Search`)."""
    nodes = whole_number(nodes, "nodes", 2)
    degree = whole_number(degree, "degree", 1)
    store = open_cache(cache)
    key = _frontier_key(nodes, degree, products, bidirectional)
    doc = store.get("frontier", key)
    if doc is not None:
        return [Candidate.from_dict(c) for c in doc], True
    search = search or Search(degree, store, products=products, progress=progress,
                              bidirectional=bidirectional)
    with store.batch():                 # the bases it measures: one commit, not one each
        found = search.target(nodes)
    store.put("frontier", key, [c.to_dict() for c in found])
    return found, False


def find_range(nodes, degree, *, cache=True, products=True, progress=None, workers=None,
               scheduler=None, bidirectional=False):
    """Frontiers for every size in ``nodes`` (an iterable, e.g. ``range(2, 2001)``) at degree
    ``degree``: ``{N: [Candidate, ...]}``. Predictions only; every frontier is cached.

    The generalized Kautz digraph's BFB cost (the one part that is not a closed form) is
    computed exactly once per size and kept in the cache; ``workers`` local processes (or
    the Dask cluster at ``scheduler``, :func:`topocoll.batch.open_pool`) compute the missing
    ones in parallel first (default: this process only).

    Parameters
    ----------
    bidirectional : bool
        Only bidirectional topologies, every link with its reverse (as
        :func:`~topocoll.finder.find`; cached apart from the unrestricted frontiers). A size
        with no bidirectional candidate (degree 1 beyond 2 nodes) maps to ``[]``.

    Examples
    --------
    >>> got = find_range([7, 8], 3, bidirectional=True, cache=False)
    >>> {n: [c.name for c in cs] for n, cs in got.items()}
    {7: ['ring:7'], 8: ['hypercube:3']}
    """
    degree = whole_number(degree, "degree", 1)
    sizes = [whole_number(n, "nodes", 2) for n in nodes]
    progress = as_progress(progress)
    store = open_cache(cache)
    search = Search(degree, store, products=products, progress=progress,
                    bidirectional=bidirectional)
    missing = [n for n in sizes if store.get(
        "frontier", _frontier_key(n, degree, products, bidirectional)) is None]
    if ((workers and workers > 1) or scheduler) and degree >= 2 and missing:
        _fill_genkautz(store, missing, degree, workers, progress, scheduler)
    out = {}
    with store.batch():
        for i, n in enumerate(sizes):
            out[n] = frontier(n, degree, cache=store, products=products, search=search,
                              bidirectional=bidirectional)[0]
            if progress:
                progress(i + 1, len(sizes), "frontiers")
    return out


def _genkautz_job(n, d):
    return genkautz_cost(n, d)


def _fill_genkautz(store, sizes, degree, workers, progress, scheduler=None):
    todo = [n for n in sizes if lookup_genkautz(n, degree) is None
            and store.get("cost", f"genkautz:{n},{degree}") is None]
    if not todo:
        return
    todo.sort(reverse=True)                       # big ones first: better balance
    with open_pool(workers, scheduler) as pool:
        outcomes = run_tasks(_genkautz_job, [(n, (n, degree)) for n in todo], pool)
        for i, (n, cost) in enumerate(outcomes):
            if isinstance(cost, Failure):
                raise UnsupportedError(f"the BFB cost of genkautz:{n},{degree} could not be "
                                       f"computed: {cost.reason}")
            store.put("cost", f"genkautz:{n},{degree}", cost)
            if progress:
                progress(i + 1, len(todo), "generalized Kautz costs")


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


def expansion_chain(recipe):
    """``(leaf recipe, [(kind, params), ...] innermost first)`` of a recipe (or of its JSON
    or tuple form)."""
    recipe = as_recipe(recipe)
    chain = []
    while isinstance(recipe, EXPANSIONS):
        chain.append((recipe.kind, recipe.params))
        recipe = recipe.base
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

    leaf, chain = expansion_chain(candidate.recipe)
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
