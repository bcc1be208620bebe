"""Topology optimization for allreduce: better bases for the frontier's expansion recipes.

The frontier's best candidates at N nodes are mostly small *bases* carried to N by expansions
(``line(line(line(optcirculant:16)))``). An expansion's cost follows from its base's
(docs/math.md section 4), and a base is small, so improving the base is cheap where improving
the 1024-node topology is not: the exact BFB cost (:func:`~topocoll.finder.bfbcost.bfb_phases`,
no schedule, no linear program) of a 16-node base takes well under a millisecond, of a 1024-node
topology a tenth of a second, and building and verifying a 1024-node allreduce several seconds.

So the optimizer takes the *skeletons* of the best frontier candidates (the recipe with its
base left open, plus the bare target) and, for each, searches for a base that minimizes the
predicted allreduce time at the target (the workload's time for the base's exact BFB steps and
T_B carried through the skeleton's expansions):

* **Cayley digraphs** of the groups Z_m x|_r Z_k of the base's order (directed circulants and
  metacyclic groups, :mod:`topocoll.topology.families.cayley`), generators drawn at random. They
  are vertex-transitive, so the diameter is one node's eccentricity (a cheap proxy that prunes
  most draws: the time at that many steps and optimal T_B must beat the best so far) and one
  receiver's load-balancing problems give the exact T_B. Non-abelian groups reach diameters no
  circulant can (16 nodes of degree 4 at diameter 2).
* **Degree-preserving rewiring** of the best base so far: swap the heads of two links
  (``a->b, c->d`` become ``a->d, c->b``: every in- and out-degree kept, no self-loop or parallel
  link), scored by the exact cost, kept when the predicted time does not grow.

Work is shared round-robin between the skeletons until the budget (seconds and/or candidate
count) is spent. Then the best few bases, expanded, are *confirmed*: built (leaves scheduled by
each algorithm of :data:`~topocoll.finder.build.ALGORITHMS` asked for), verified with
:func:`topocoll.verify` and evaluated with :func:`topocoll.evaluate` at the target; the result is
the fastest evaluated schedule, the seed's included, so it is never slower than the seed.

>>> r = optimize(64, 4, "1MiB", max_evaluations=200, cache=False)
>>> r.evaluated_time <= r.seed_time, r.evaluation["verified"]
(True, True)
"""

import math
import time
from dataclasses import dataclass, field

import numpy as np

from ..errors import TopocollError, UnsupportedError
from ..units import format_time, parse_time, whole_number
from ..topology.composite import rewired_spec
from .bfbcost import bfb_phases
from .bidir_moves import (any_generators, head_swap, inverse_closed, is_symmetric,
                          symmetric_swap)
from .evaluation import (check_algorithms, cluster_settings, evaluate_best, evaluate_candidate,
                         frontier as _frontier, open_cache, rank_by_time)
from .recipes import EXPANSIONS, ArcsRecipe, SpecRecipe
from .search import Candidate, expand_candidate

__all__ = ["optimize", "OptimizeResult", "Skeleton", "skeleton_of", "group_presentations"]

_CAYLEY_BATCH = 48          # Cayley draws per round for a 256-node base (more for smaller)
_SWAP_BATCH = 8             # rewiring moves per skeleton per round
_MAX_DRAW_TRIES = 50        # draws of distinct generators before giving up on a group


# ---------------------------------------------------------------------- skeletons
@dataclass(frozen=True)
class Skeleton:
    """A recipe with its base left open: ``chain`` lists the expansions from the base outward
    (``("line",)``, ``("degree", m)``, ``("power", n)``), applied to a base of ``nodes``
    nodes and degree ``degree``."""

    nodes: int
    degree: int
    chain: tuple

    def wrap(self, base):
        """The candidate that the chain makes of a base :class:`Candidate`."""
        c = base
        for step in self.chain:
            if step[0] == "line":
                c = expand_candidate(c, "line")
            elif step[0] == "degree":
                c = expand_candidate(c, "degree", m=step[1])
            else:
                c = expand_candidate(c, "power", n=step[1])
        return c

    def describe(self):
        out = "B"
        for step in self.chain:
            out = f"{step[0]}({out}" + (f",{step[1]})" if len(step) > 1 else ")")
        return f"{out} with B of {self.nodes} nodes, degree {self.degree}"


def skeleton_of(candidate):
    """The :class:`Skeleton` of a candidate whose base is one spec, or None (products)."""
    recipe = candidate.recipe
    chain = []
    while isinstance(recipe, EXPANSIONS):
        chain.append((recipe.kind, *recipe.params.values()))
        recipe = recipe.base
    if not isinstance(recipe, SpecRecipe):
        return None
    from ..topology.specs import topology

    base = topology(recipe.spec)
    return Skeleton(base.num_nodes, int(base.out_degree(multi=True).max()), tuple(chain[::-1]))


def group_presentations(n):
    """Every ``(m, k, r)`` with ``m * k = n``, ``gcd(r, m) = 1`` and ``r^k = 1 mod m``: the
    groups Z_m x|_r Z_k of order n (abelian ones included, some groups more than once).

    >>> group_presentations(4)
    [(4, 1, 1), (2, 2, 1), (1, 4, 1)]
    """
    out = []
    for m in range(n, 0, -1):
        if n % m:
            continue
        k = n // m
        for r in range(1, max(m, 2)):
            if math.gcd(r, m) == 1 and pow(r, k, m) == 1 % m:
                out.append((m, k, r))
    return out


# ---------------------------------------------------------------------- result
@dataclass
class OptimizeResult:
    """What :func:`optimize` found.

    Attributes
    ----------
    seed : Candidate
        The frontier's best evaluated candidate (what the optimizer must beat).
    seed_time : float
        Its evaluated workload time (s).
    best : Candidate
        The returned candidate: the seed, or an optimized one that evaluated faster.
    evaluated_time, predicted_time : float
        Its evaluated (verified schedule) and predicted workload time (s).
    evaluation : dict
        As :attr:`FindResult.evaluation` (``verified``, ``steps``, ``time``, per size, and
        ``algorithm``).
    schedule : Schedule or None
        The verified allreduce at the cluster's latency and bandwidth (built in this call).
    improved : bool
        ``best`` is not the seed.
    evaluations, exact_evaluations : int
        Candidate bases scored (by the proxy or exactly) and those scored with the exact BFB
        cost.
    confirmed : list of dict
        Each confirmed candidate: name, predicted and evaluated time, algorithm.
    skeletons : list of dict
        Per skeleton: its description, the seed base and the best base found, with predicted
        times.
    stopped : str
        ``"evaluations"`` or ``"budget"`` (what ended the search), or ``"exhausted"``.
    seconds : dict
        ``search``, ``confirm`` and ``total`` wall time.
    """

    seed: Candidate
    seed_time: float
    best: Candidate
    evaluated_time: float
    predicted_time: float
    evaluation: dict
    schedule: object = None
    improved: bool = False
    evaluations: int = 0
    exact_evaluations: int = 0
    confirmed: list = field(default_factory=list)
    skeletons: list = field(default_factory=list)
    stopped: str = ""
    seconds: dict = field(default_factory=dict)

    @property
    def topology(self):
        return None if self.schedule is None else self.schedule.topology

    def to_dict(self):
        return {"seed": self.seed.name, "seed_time": self.seed_time, "best": self.best.name,
                "evaluated_time": self.evaluated_time, "predicted_time": self.predicted_time,
                "improved": self.improved, "evaluations": self.evaluations,
                "exact_evaluations": self.exact_evaluations, "confirmed": list(self.confirmed),
                "skeletons": list(self.skeletons), "stopped": self.stopped,
                "seconds": dict(self.seconds)}


# ---------------------------------------------------------------------- the search state
def _heads_topology(n, heads, name="candidate"):
    from ..topology.model import Topology

    src = np.repeat(np.arange(n, dtype=np.int64), heads.shape[1])
    return Topology(n, src, heads.ravel(), name=name)


def _eccentricity0(heads):
    """Eccentricity of node 0 in the digraph ``heads`` (None if some node is unreachable)."""
    n = heads.shape[0]
    seen = np.zeros(n, dtype=bool)
    seen[0] = True
    frontier = np.array([0])
    depth = 0
    while True:
        nxt = np.unique(heads[frontier].ravel())
        nxt = nxt[~seen[nxt]]
        if nxt.size == 0:
            break
        seen[nxt] = True
        frontier = nxt
        depth += 1
    return depth if seen.all() else None


class SkeletonTrack:
    """The search of one skeleton: its best base so far and its rewiring walk."""

    def __init__(self, skeleton, seed_base, rng, bidirectional=False):
        self.skeleton = skeleton
        self.rng = rng
        self.bidirectional = bidirectional    # bidirectional bases only (bidir_moves)
        self.groups = group_presentations(skeleton.nodes) if skeleton.nodes >= 2 else []
        self.seen = set()
        self.best = None          # (time, candidate, heads)
        self.walk = None          # (time, heads): the rewiring walk's current state
        self.seed_base = seed_base
        self.bases = []           # every improving (time, candidate) in order

    def offer(self, time_, candidate, heads):
        if self.best is None or time_ < self.best[0] * (1 - 1e-12):
            self.best = (time_, candidate, heads)
            self.bases.append((time_, candidate))
            return True
        return False


class BaseScorer:
    """Scores bases for skeletons and makes the moves; counts the candidates it scores."""

    def __init__(self, workload, alpha, bandwidth):
        self.workload = workload
        self.alpha = alpha
        self.bandwidth = bandwidth
        self.evaluations = 0
        self.exact = 0

    def time_of(self, skeleton, steps, t_b):
        """Predicted workload time of a base with ``(steps, t_b)`` through the skeleton."""
        c = skeleton.wrap(Candidate("b", skeleton.nodes, skeleton.degree, steps, t_b,
                                    SpecRecipe("b"), "optimized", True, False))
        return c.time(self.workload, alpha=self.alpha, bandwidth=self.bandwidth), c

    def base_candidate(self, skeleton, name, recipe, steps, t_b):
        n = skeleton.nodes
        base = Candidate(name, n, skeleton.degree, steps, t_b, recipe, "optimized", True,
                         t_b <= (n - 1) / n * (1 + 1e-9))
        return skeleton.wrap(base)

    def score(self, skeleton, heads, *, transitive, best_time):
        """``(time, steps, t_b)`` of a base given by its heads, or None if pruned/invalid."""
        from ..topology.metrics import distance_matrix

        n = skeleton.nodes
        self.evaluations += 1
        topo = _heads_topology(n, heads)
        if transitive:
            ecc = _eccentricity0(heads)
            if ecc is None:
                return None
            bound, _ = self.time_of(skeleton, ecc, (n - 1) / n)
            if best_time is not None and bound >= best_time:
                return None
            dist = None
            receivers = [0]
        else:
            dist = distance_matrix(topo)
            if np.any(dist < 0):
                return None
            bound, _ = self.time_of(skeleton, int(dist.max()), (n - 1) / n)
            if best_time is not None and bound > best_time:
                return None
            receivers = None
        cost = bfb_phases(topo, receivers=receivers, dist=dist)
        self.exact += 1
        t_b = 0.5 * (cost["t_b_ag"] + cost["t_b_rs"])
        time_, _ = self.time_of(skeleton, cost["steps"], t_b)
        return time_, cost["steps"], t_b

    # ------------------------------------------------------------------ moves
    def cayley(self, track, count):
        """Draw up to ``count`` Cayley digraphs of the skeleton's order and degree (with a
        bidirectional track, generator sets closed under inverses: bidirectional graphs)."""
        from ..topology.families.cayley import metacyclic_heads

        sk, rng = track.skeleton, track.rng
        if not track.groups or sk.degree >= sk.nodes:
            return 0
        draw = inverse_closed if track.bidirectional else any_generators
        done = 0
        for _ in range(count):
            m, k, r = track.groups[int(rng.integers(len(track.groups)))]
            gens = None
            for _try in range(_MAX_DRAW_TRIES):
                cand = draw(m, k, r, sk.degree, rng)
                if cand is not None and (m, k, r, cand) not in track.seen:
                    gens = cand
                    break
            if gens is None:
                continue
            track.seen.add((m, k, r, gens))
            done += 1
            heads = metacyclic_heads(m, k, r, gens)
            best_time = None if track.best is None else track.best[0]
            got = self.score(sk, heads, transitive=True, best_time=best_time)
            if got is None or not (best_time is None or got[0] < best_time):
                continue
            if track.bidirectional and not is_symmetric(heads):
                continue             # checked before it is offered as a find
            spec = (f"dcirculant:{m}:" + ",".join(str(y) for y, _ in gens) if k == 1 else
                    f"metacyclic:{m},{k},{r}:" + ",".join(f"{y}.{j}" for y, j in gens))
            cand = self.base_candidate(sk, spec, SpecRecipe(spec), got[1], got[2])
            if track.offer(got[0], cand, heads):
                track.walk = None         # restart the rewiring walk from the new best
        return done

    def rewire(self, track, count):
        """Up to ``count`` head swaps on the rewiring walk (started at the best base), kept
        when the predicted time does not grow; a bidirectional track swaps two links both
        ways (:func:`~topocoll.finder.bidir_moves.symmetric_swap`)."""
        sk, rng = track.skeleton, track.rng
        if track.best is None or track.best[2] is None:
            return 0
        if track.bidirectional and not is_symmetric(track.best[2]):
            return 0
        swap = symmetric_swap if track.bidirectional else head_swap
        if track.walk is None:
            track.walk = (track.best[0], track.best[2].copy())
        cur_time, heads = track.walk
        n, d = heads.shape
        done = 0
        for _ in range(count):
            u1, u2 = (int(x) for x in rng.integers(n, size=2))
            i1, i2 = (int(x) for x in rng.integers(d, size=2))
            changes = swap(heads, u1, i1, u2, i2)
            if changes is None:
                continue
            done += 1
            got = self.score(sk, heads, transitive=False, best_time=cur_time)
            if got is None or got[0] > cur_time * (1 + 1e-12):
                for u, slot, old in changes:
                    heads[u, slot] = old
                continue
            cur_time = got[0]
            if cur_time < track.best[0] * (1 - 1e-12) and (
                    not track.bidirectional or is_symmetric(heads)):
                name = rewired_spec(heads)          # a spec that rebuilds these heads
                recipe = ArcsRecipe(name, n, tuple(tuple(int(x) for x in row) for row in heads))
                track.offer(cur_time, self.base_candidate(sk, name, recipe, got[1], got[2]),
                            heads.copy())
        track.walk = (cur_time, heads)
        return done


def _seed_heads(candidate_base_spec, skeleton):
    """Heads of the seed base (d-regular simple digraphs only), else None."""
    from ..topology.specs import topology

    topo = topology(candidate_base_spec)
    n, d = skeleton.nodes, skeleton.degree
    if topo.num_links != n * d:
        return None
    if np.any(topo.out_degree() != d) or np.any(topo.in_degree() != d):
        return None
    order = np.argsort(topo.src, kind="stable")
    return topo.dst[order].reshape(n, d).astype(np.int64)


def _leaf(candidate):
    """The leaf recipe under a candidate's expansions."""
    recipe = candidate.recipe
    while isinstance(recipe, EXPANSIONS):
        recipe = recipe.base
    return recipe


def _leaf_name(candidate):
    """The spec of a candidate's base (a ``rewired:`` spec for an explicit digraph)."""
    match _leaf(candidate):
        case SpecRecipe(spec=spec) | ArcsRecipe(name=spec):
            return spec
    return None


def _base_spec(candidate):
    leaf = _leaf(candidate)
    return leaf.spec if isinstance(leaf, SpecRecipe) else None


def _find_seed(candidates, order, times, cost, tools, nodes):
    """The seed: the best-predicted frontier candidate that builds and verifies, as
    ``(candidate, evaluation, schedule, predicted time)``."""
    workload, alpha, bandwidth = cost
    algorithms, store, progress = tools
    for i in order:
        try:
            ev, sched, _ = evaluate_best(candidates[i], algorithms, (workload, alpha, bandwidth),
                                         store=store, progress=progress)
        except (TopocollError, MemoryError):
            continue
        return candidates[i], ev, sched, times[i]
    raise UnsupportedError(f"no frontier candidate at {nodes} nodes could be built and "
                           "verified to seed the optimizer")


def _make_tracks(candidates, picked, target, seed, cost, bidirectional=False):
    """Search tracks: the skeletons of the picked frontier candidates, and the bare target
    ``(nodes, degree)``."""
    workload, alpha, bandwidth = cost
    tracks = []
    keys = set()
    picks = [candidates[i] for i in picked]
    for c in picks + [None]:
        if c is None:
            sk, spec = Skeleton(*target, ()), None
        else:
            sk, spec = skeleton_of(c), _base_spec(c)
        if sk is None or (sk.nodes, sk.degree, sk.chain) in keys or sk.degree >= sk.nodes or (
                bidirectional and any(step[0] in ("line", "bidir") for step in sk.chain)):
            continue    # bidirectional: only chains that keep a bidirectional base so
        keys.add((sk.nodes, sk.degree, sk.chain))
        track = SkeletonTrack(sk, spec, np.random.default_rng([int(seed), len(tracks)]),
                              bidirectional)
        if spec is not None:
            track.offer(c.time(workload, alpha=alpha, bandwidth=bandwidth), c,
                        _seed_heads(spec, sk))
            track.bases.clear()             # the seed is not a find
        tracks.append(track)
    return tracks


def _draws(track):
    """Cayley draws per round: small bases are cheap to draw and score, so they get more."""
    return min(max(_CAYLEY_BATCH * 256 // track.skeleton.nodes, 8), 768)


def _search(opt, tracks, spent, room, progress, max_evaluations):
    """Run the tracks' Cayley draws and swaps in rounds until ``spent()`` names a reason or
    nothing moves; return why it stopped."""
    stopped = spent()
    while stopped is None:
        moved = 0
        for track in tracks:
            moved += opt.cayley(track, room(_draws(track)))
            if (stopped := spent()):
                break
            moved += opt.rewire(track, room(_SWAP_BATCH))
            if (stopped := spent()):
                break
        if progress:
            best = min((t.best[0] for t in tracks if t.best), default=math.inf)
            progress(opt.evaluations, max_evaluations, f"optimizing: {opt.evaluations} "
                     f"candidates, best predicted {format_time(best)}")
        if stopped is None and moved == 0:
            stopped = "exhausted"
    return stopped


def _limits(opt, most, seconds, started):
    """``(spent, room)`` of a search: ``spent()`` names why it must stop (``most`` candidates
    scored by ``opt``, ``seconds`` since ``started``) or is None; ``room(count)`` is how many
    of ``count`` more it may score."""
    def spent():
        if most is not None and opt.evaluations >= most:
            return "evaluations"
        if seconds is not None and time.perf_counter() - started >= seconds:
            return "budget"
        return None

    def room(count):
        return count if most is None else min(count, most - opt.evaluations)

    return spent, room


def _track_task(track, cost, share, seconds):
    """One track searched alone (a task of :func:`_search_split`): at most ``share``
    candidates and ``seconds`` of search; ``(track, evaluations, exact, why it stopped)``."""
    opt = BaseScorer(*cost)
    stopped = _search(opt, [track], *_limits(opt, share, seconds, time.perf_counter()), None,
                      share)
    return track, opt.evaluations, opt.exact, stopped


def _apportion(total, weights):
    """``total`` split into whole numbers in proportion to ``weights`` (largest remainders)."""
    exact = total * weights
    shares = np.floor(exact).astype(int)
    extra = np.argsort(-(exact - shares), kind="stable")[:total - int(shares.sum())]
    shares[extra] += 1
    return shares.tolist()


def _search_split(tracks, cost, limits, where, progress):
    """The tracks searched as independent tasks on a :mod:`topocoll.batch` pool, each its
    share of ``max_evaluations`` and of the budget's worker time in proportion to its part of
    a round in turns; ``(tracks, evaluations, exact, stopped)``. The result does not depend on
    where the tasks ran."""
    from ..batch import Failure, open_pool, run_tasks

    budget, max_evaluations = limits
    count = len(tracks)
    # each track's part of a round of the search in turns (its draws and swaps), so that the
    # costly large skeletons get as little as they would there
    weights = np.array([_draws(track) + _SWAP_BATCH for track in tracks], dtype=float)
    weights /= weights.sum()
    shares = [None] * count if max_evaluations is None else _apportion(max_evaluations, weights)
    found, evaluations, exact, reasons = list(tracks), 0, 0, []
    with open_pool(*where) as pool:
        # a track gets at most the whole budget, so that the search ends near it
        seconds = [None] * count if budget is None else \
            (budget * np.minimum(1.0, min(pool.workers, count) * weights)).tolist()
        jobs = [(i, (track, cost, shares[i], seconds[i])) for i, track in enumerate(tracks)]
        for done, (i, outcome) in enumerate(run_tasks(_track_task, jobs, pool), 1):
            if isinstance(outcome, Failure):    # its finds are lost; the others stand
                reasons.append("failed")
            else:
                found[i], n_eval, n_exact, why = outcome
                evaluations, exact = evaluations + n_eval, exact + n_exact
                reasons.append(why)
            if progress:
                progress(done, count, f"optimizing: {done} of {count} skeletons searched "
                         f"on {pool.description}")
    stopped = next((why for why in ("budget", "evaluations", "failed", "exhausted")
                    if why in reasons), "exhausted")
    return found, evaluations, exact, stopped


def _confirm(tracks, best, confirm, cost, tools):
    """Build, verify and evaluate the best optimized candidates at the target; return the
    new ``best`` tuple and the confirmation records."""
    workload, alpha, bandwidth = cost
    algorithms, store, progress = tools
    seed_time = best[0]
    found = {}
    for track in tracks:
        for time_, cand in track.bases:
            if cand.name not in found or time_ < found[cand.name][0]:
                found[cand.name] = (time_, cand)
    ranked = sorted(found.values(), key=lambda tc_: (tc_[0], tc_[1].name))
    confirmed = []
    for time_, cand in ranked[:max(int(confirm), 0)]:
        if time_ >= seed_time * (1 - 1e-12):
            break
        if progress:
            progress(len(confirmed), min(confirm, len(ranked)), f"confirming {cand.name}")
        try:
            ev, sched, _ = evaluate_best(cand, algorithms, (workload, alpha, bandwidth),
                                         store=store, keep_schedule=True, progress=progress)
        except (TopocollError, MemoryError) as exc:
            confirmed.append({"name": cand.name, "predicted": time_, "evaluated": None,
                              "error": str(exc)})
            continue
        confirmed.append({"name": cand.name, "predicted": time_, "evaluated": ev["time"],
                          "algorithm": ev["algorithm"]})
        if ev["time"] < best[0] * (1 - 1e-12):
            best = (ev["time"], cand, ev, sched, time_)
    return best, confirmed


def _track_summary(track):
    """One track's summary record."""
    return {"skeleton": track.skeleton.describe(), "seed_base": track.seed_base,
            "best": None if track.best is None else track.best[1].name,
            "best_base": None if track.best is None else _leaf_name(track.best[1]),
            "best_predicted": None if track.best is None else track.best[0]}


def _search_limits(budget, max_evaluations):
    """``(budget, max_evaluations)`` of :func:`optimize` checked: the budget in seconds (from
    ``300`` or ``"5min"``) or None, the count or None; with neither, 2000 candidates."""
    if budget is not None:
        budget = parse_time(budget, what="budget") if isinstance(budget, str) else float(budget)
        if not budget >= 0:
            raise UnsupportedError(f"the budget must be >= 0 seconds, got {budget}")
    if max_evaluations is not None:
        max_evaluations = whole_number(max_evaluations, "max_evaluations", 0)
    elif budget is None:
        max_evaluations = 2000
    return budget, max_evaluations


# ---------------------------------------------------------------------- the API
def optimize(nodes, degree, workload="1MiB", *, alpha="10us", node_bandwidth=None,
             link_bandwidth=None, seed=0,
             budget=None, max_evaluations=None, seeds=4, confirm=2, algorithms=("bfb",),
             cache=False, products=True, progress=None, frontier=None, keep_schedule=True,
             workers=None, scheduler=None, bidirectional=False):
    """Search for a topology with a faster evaluated allreduce than the frontier's best.

    Parameters
    ----------
    nodes, degree : int
        The cluster: N nodes of degree d.
    workload, alpha, node_bandwidth, link_bandwidth
        As in :func:`~topocoll.finder.core.find` (default: 100 Gbps per link).
    seed : int
        Seed of every random choice: with ``max_evaluations`` and no ``budget`` the result is
        a function of the arguments.
    budget : float or str, optional
        Seconds of search (``300`` or ``"5min"``); confirming the best bases (building,
        verifying and evaluating them at the target) comes on top.
    max_evaluations : int, optional
        Candidate bases to score (by the proxy or exactly) before stopping. Without a budget
        and a count the search stops after 2000 of them.
    seeds : int
        How many of the best frontier candidates give skeletons (their base with expansions).
    confirm : int
        How many optimized candidates (best predicted first) to build, verify and evaluate.
    algorithms : sequence of str
        Schedule algorithms (:data:`~topocoll.finder.build.ALGORITHMS`) for each confirmed
        candidate; the fastest verified schedule counts.
    cache, products
        As in :func:`~topocoll.finder.core.find`.
    progress : callable, optional
        ``progress(done, total, stage)`` (:func:`~topocoll.results.as_progress`).
    frontier : list of Candidate, optional
        The frontier to seed from (default: computed).
    keep_schedule : bool
        Return the verified schedule even when the seed wins and its evaluation is cached
        (default); optimized candidates always come with theirs.
    workers, scheduler : optional
        Search each skeleton as its own task on ``workers`` local processes (1: this process)
        or on the Dask cluster at ``scheduler`` (:func:`topocoll.batch.open_pool`): each gets
        an equal share of ``max_evaluations`` and of the budget's worker time, so the result
        is the same wherever the tasks run. Without either (the default) the skeletons take
        turns in this process and share the candidates as they go.
    bidirectional : bool
        Bidirectional topologies only: the bidirectional frontier, skeletons of degree
        expansions and powers alone, and bases equal to their reverse (inverse-closed Cayley
        generators, symmetric rewiring; :mod:`~topocoll.finder.bidir_moves`).

    Returns
    -------
    OptimizeResult
    """
    from ..results import as_progress

    started = time.perf_counter()
    nodes, degree, alpha, bandwidth, workload, _ = cluster_settings(
        nodes, degree, alpha, node_bandwidth, workload, link_bandwidth=link_bandwidth)
    progress = as_progress(progress)
    budget, max_evaluations = _search_limits(budget, max_evaluations)
    algorithms = check_algorithms(algorithms)
    store = open_cache(cache)
    candidates = frontier if frontier is not None else _frontier(
        nodes, degree, cache=store, products=products, progress=progress,
        bidirectional=bidirectional)[0]
    times, order = rank_by_time(candidates, workload, alpha, bandwidth)

    cost = (workload, alpha, bandwidth)
    seed_cand, seed_eval, seed_sched, seed_pred = _find_seed(
        candidates, order, times, cost, (algorithms, store, progress), nodes)
    opt = BaseScorer(workload, alpha, bandwidth)
    tracks = _make_tracks(candidates, order[:max(int(seeds), 1)], (nodes, degree), seed, cost,
                          bidirectional)

    if workers is None and scheduler is None:
        stopped = _search(opt, tracks, *_limits(opt, max_evaluations, budget, started),
                          progress, max_evaluations)
    else:
        tracks, opt.evaluations, opt.exact, stopped = _search_split(
            tracks, cost, (budget, max_evaluations), (workers, scheduler), progress)
    searched = time.perf_counter()

    # confirm: the best optimized candidates, built, verified and evaluated at the target
    best = (seed_eval["time"], seed_cand, seed_eval, seed_sched, seed_pred)
    best, confirmed = _confirm(tracks, best, confirm, cost, (algorithms, store, progress))
    if best[3] is None and keep_schedule:
        ev, sched, _ = evaluate_candidate(best[1], workload, alpha, bandwidth, store, True,
                                          progress, algorithm=best[2]["algorithm"])
        best = (ev["time"], best[1], ev, sched, best[4])
    finished = time.perf_counter()
    summary = [_track_summary(track) for track in tracks]
    return OptimizeResult(seed=seed_cand, seed_time=seed_eval["time"], best=best[1],
                          evaluated_time=best[0], predicted_time=best[4], evaluation=best[2],
                          schedule=best[3], improved=best[1] is not seed_cand,
                          evaluations=opt.evaluations, exact_evaluations=opt.exact,
                          confirmed=confirmed, skeletons=summary, stopped=stopped,
                          seconds={"search": searched - started, "confirm": finished - searched,
                                   "total": finished - started})

