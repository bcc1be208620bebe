"""Greedy degree-preserving rewiring: edge swaps accepted when an objective improves.

As in the all-to-all topology studies (Jellyfish, Xpander): start from a good expander (Jellyfish,
a modified de Bruijn digraph, ...), try swapping the endpoints of two links, keep the swap if the
all-to-all time drops, and stop at a local minimum or when the time budget runs out.

* Bidirectional topologies swap cables: ``a--b, c--d`` become ``a--c, b--d`` or
  ``a--d, b--c``; every node keeps its degree and the topology stays bidirectional.
* Directed topologies swap the heads of two arcs: ``a->b, c->d`` become ``a->d, c->b``;
  every node keeps its in- and out-degree.

A swap is legal when the result is simple (no self-loop, no parallel link) and strongly
connected. Candidates come in passes: each pass visits every pair of links once, in a seeded
random order; a pass without an accepted swap proves a local minimum (``converged``). A link
keeps its bandwidth and latency when its far end moves.

>>> from topocoll.topology import topology
>>> res = rewire(topology("jellyfish:16,3"), objective="distance", budget=None)
>>> res.initial, res.final, res.converged, res.stopped
(590.0, 528.0, True, 'converged')
>>> sorted(set(res.topology.out_degree().tolist())), res.topology.is_bidirectional()
([3], True)
"""

import time
from dataclasses import dataclass, field
from types import SimpleNamespace

import numpy as np
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import shortest_path

from ..errors import InputTypeError, SpecError, TopologyError
from ..results import Result, Status
from ..units import parse_size, real_number, whole_number
from ..topology.metrics import require_strongly_connected
from ..topology.model import Topology

__all__ = ["rewire", "RewireResult", "RewireStep", "distance_objective", "alltoall_objective",
           "OBJECTIVES", "STRATEGIES"]

#: Passes over all link pairs are shuffled in memory up to this many pairs; beyond it,
#: candidates are drawn at random with replacement and no local minimum is claimed.
MAX_SHUFFLED_PAIRS = 1 << 22


# ---------------------------------------------------------------------- objectives
#: Up to this many nodes, distances are found by dense boolean BFS (numpy matrix products),
#: which avoids scipy.sparse's per-call overhead on the small graphs rewiring is run on.
DENSE_NODES = 256


def _distance_sum(n, src, dst):
    """Sum of hop distances over all ordered pairs of the digraph ``src -> dst``; ``inf`` when
    it is not strongly connected (so it doubles as the connectivity check)."""
    if n > DENSE_NODES:
        adj = coo_matrix((np.ones(src.size, dtype=np.int8), (src, dst)), shape=(n, n)).tocsr()
        dist = shortest_path(adj, method="D", directed=True, unweighted=True)
        return float(dist.sum()) if np.all(np.isfinite(dist)) else float("inf")
    adj = np.zeros((n, n), dtype=np.float32)
    adj[src, dst] = 1.0
    reach = np.eye(n, dtype=bool)
    frontier = reach.astype(np.float32)
    total, step, count = 0.0, 0, n
    while count < n * n:
        step += 1
        new = (frontier @ adj > 0) & ~reach
        found = int(new.sum())
        if found == 0:
            return float("inf")
        total += step * found
        count += found
        reach |= new
        frontier = new.astype(np.float32)
    return total


def _sum_of_distances(topology):
    return _distance_sum(topology.num_nodes, topology.src, topology.dst)


class distance_objective:  # noqa: N801 - used like a function, named like the others
    """Sum of the hop distances over all ordered pairs (lower is better).

    Cheap (one BFS per node), and a proxy for all-to-all time: docs/math.md section 6 bounds
    ``lambda <= total capacity / sum of distances``.

    >>> from topocoll.topology import topology
    >>> distance_objective()(topology("ring:6"))
    54.0
    """

    name = "distance"
    rtol = 0.0

    def __call__(self, topology):
        return _sum_of_distances(topology)


class alltoall_objective:  # noqa: N801 - used like a function
    """All-to-all time ``(M/N) / lambda`` in seconds from the flow LP
    (:func:`topocoll.throughput.throughput`), for a per-node buffer of ``size`` bytes.

    Its :meth:`lower_bound`, ``(M/N) * sum of distances / total bandwidth`` (every byte of
    pair ``(x, y)`` crosses at least ``dist(x, y)`` links), lets :func:`rewire` skip the LP for
    swaps that cannot improve. Swaps must gain more than ``rtol`` (relative), so solver noise
    is not taken for progress.

    Parameters
    ----------
    size : int or str
        Per-node buffer ``M`` (``"1MiB"``); it scales the time, not the ranking.
    rtol : float
        Smallest relative improvement accepted (default ``1e-6``, the LP's tolerance).
    **options
        Passed to ``throughput`` (e.g. ``method="path", max_hops=0``); ``bounds=False``
        unless given. Without a ``method``, once the default has fallen back from the balanced
        shortest paths to the column generation, later candidates go to the column generation
        directly (a swap or two rarely makes the distance bound tight, and the attempt costs
        about a seventh of the column generation's time at 256 nodes of degree 4).
    """

    name = "alltoall"

    def __init__(self, size="1MiB", *, rtol=1e-6, **options):
        self.size = parse_size(size)
        self.rtol = float(rtol)
        self.options = {"bounds": False, **options}     # bounds are not needed per candidate

    def __call__(self, topology):
        from .solve import throughput  # here, not at the top: solve imports the LP stack

        result = throughput(topology, **self.options)
        if "method" not in self.options and result.method == "colgen":
            self.options["method"] = "colgen"
        if not (result.success and result.lam > 0):
            return float("inf")
        return float(result.time(self.size))

    def lower_bound(self, topology, distance_sum=None):
        """A time no flow can beat: ``(M/N) * sum of distances / total bandwidth``."""
        if distance_sum is None:
            distance_sum = _sum_of_distances(topology)
        per_pair = self.size / topology.num_nodes
        return per_pair * distance_sum / float(topology.bandwidth.sum())


#: Objective names accepted by :func:`rewire` and ``topocoll rewire --objective``.
OBJECTIVES = {"alltoall": alltoall_objective, "distance": distance_objective}


def _objective(objective):
    if objective is None:
        return alltoall_objective()
    if isinstance(objective, str):
        make = OBJECTIVES.get(objective.strip().lower())
        if make is None:
            raise SpecError(f"unknown rewire objective {objective!r}; use one of "
                            f"{', '.join(OBJECTIVES)} or a callable Topology -> float")
        return make()
    if not callable(objective):
        raise InputTypeError(f"objective must be a callable Topology -> float or a name, got "
                             f"{type(objective).__name__}")
    return objective


# ---------------------------------------------------------------------- result
@dataclass(frozen=True)
class RewireStep:
    """One accepted swap: after ``tried`` candidates and ``seconds``, the objective became
    ``value`` by replacing the links ``removed`` with ``added`` (``(u, v)`` pairs; for
    bidirectional topologies each stands for both directions)."""

    tried: int
    seconds: float
    value: float
    removed: tuple
    added: tuple


@dataclass
class RewireResult(Result):
    """What :func:`rewire` did: a :class:`~topocoll.results.Result` whose ``status`` is 0
    (``SUCCESS``) when it converged (a full pass found no improving swap: a local minimum) and
    1 (``LIMIT``) when the time budget or ``max_swaps`` stopped it first (``stopped`` says
    which); either way ``topology`` is the best one found.

    Attributes
    ----------
    topology : Topology
        The rewired topology (the input itself when no swap was accepted).
    initial, final : float
        Objective before and after; ``final <= initial``.
    accepted : int
        Swaps kept.
    tried : int
        Legal candidate swaps examined (simple results; counted before the connectivity check).
    history : list of RewireStep
        The accepted swaps in order.
    evaluated : int
        Objective evaluations (the initial one included).
    pruned : int
        Candidates skipped because the objective's lower bound ruled out an improvement.
    seconds : float
        Wall time spent.
    converged : bool
        True if a full pass over all link pairs found no improving swap (a local minimum).
    stopped : str
        ``"converged"``, ``"budget"`` or ``"max_swaps"``.
    directed : bool
        True if arcs were swapped as directed (head swaps), False for cable swaps.
    warmup_swaps : int
        Swaps of the distance warm-up stage that were kept (included in ``accepted``).
    strategy : str
        ``"first"``, ``"best"`` or ``"anneal"`` (see :func:`rewire`).
    """

    topology: Topology
    initial: float
    final: float
    accepted: int
    tried: int
    history: list = field(default_factory=list)
    evaluated: int = 0
    pruned: int = 0
    seconds: float = 0.0
    converged: bool = False
    stopped: str = "converged"
    directed: bool = False
    warmup_swaps: int = 0
    strategy: str = "first"

    @property
    def improvement(self):
        """Relative gain ``1 - final/initial`` (0 when ``initial`` is not positive and finite)."""
        if not (np.isfinite(self.initial) and self.initial > 0):
            return 0.0
        return 1.0 - self.final / self.initial

    def to_dict(self):
        """JSON-friendly summary (without the topology)."""
        return {**super().to_dict(), "initial": self.initial, "final": self.final,
                "improvement": self.improvement, "accepted": self.accepted, "tried": self.tried,
                "evaluated": self.evaluated, "pruned": self.pruned, "seconds": self.seconds,
                "converged": self.converged, "stopped": self.stopped, "directed": self.directed,
                "warmup_swaps": self.warmup_swaps, "strategy": self.strategy,
                "history": [{"tried": s.tried, "seconds": s.seconds, "value": s.value,
                             "removed": [list(e) for e in s.removed],
                             "added": [list(e) for e in s.added]} for s in self.history]}


# ---------------------------------------------------------------------- state
class _Links:
    """The mutable link set: ``ends[i] = (u, v)``, one row per cable (undirected, ``u--v``) or
    per arc (directed), with the per-direction bandwidth/latency, and a key set for O(1)
    membership."""

    def __init__(self, topology, directed):
        n = topology.num_nodes
        self.n = n
        self.directed = directed
        src, dst = topology.src, topology.dst
        if directed:
            self.ends = np.stack([src, dst], axis=1).astype(np.int64)
            self.fwd = np.stack([topology.bandwidth, topology.latency], axis=1)
            self.back = None
        else:
            keep = src < dst
            self.ends = np.stack([src[keep], dst[keep]], axis=1).astype(np.int64)
            rev = topology.pair_index(dst[keep], src[keep])
            # pairs are distinct (simple topology), so pair index = position in sorted order
            order = np.lexsort((dst, src))
            self.fwd = np.stack([topology.bandwidth[keep], topology.latency[keep]], axis=1)
            self.back = np.stack([topology.bandwidth[order][rev], topology.latency[order][rev]],
                                 axis=1)
        self.keys = set((self.ends[:, 0] * n + self.ends[:, 1]).tolist())
        if not directed:
            self.keys |= set((self.ends[:, 1] * n + self.ends[:, 0]).tolist())

    def has(self, u, v):
        return u * self.n + v in self.keys

    def arrays(self, ends=None):
        ends = self.ends if ends is None else ends
        if self.directed:
            return ends[:, 0], ends[:, 1], self.fwd[:, 0], self.fwd[:, 1]
        return (np.concatenate([ends[:, 0], ends[:, 1]]), np.concatenate([ends[:, 1], ends[:, 0]]),
                np.concatenate([self.fwd[:, 0], self.back[:, 0]]),
                np.concatenate([self.fwd[:, 1], self.back[:, 1]]))

    def candidate(self, i, j, variant):
        """New ends of links ``i`` and ``j`` for one swap variant, or ``None`` if illegal."""
        a, b = self.ends[i].tolist()
        c, d = self.ends[j].tolist()
        if self.directed:
            new_i, new_j = (a, d), (c, b)      # swap heads
        elif variant == 0:
            new_i, new_j = (a, c), (b, d)
        else:
            new_i, new_j = (a, d), (b, c)
        for u, v in (new_i, new_j):
            if u == v or self.has(u, v):
                return None
        if new_i == new_j or (not self.directed and new_i == new_j[::-1]):
            return None
        return new_i, new_j

    def apply(self, i, j, new_i, new_j):
        n = self.n
        for idx in (i, j):
            u, v = self.ends[idx].tolist()
            self.keys.discard(u * n + v)
            if not self.directed:
                self.keys.discard(v * n + u)
        for idx, (u, v) in ((i, new_i), (j, new_j)):
            self.ends[idx] = (u, v)
            self.keys.add(u * n + v)
            if not self.directed:
                self.keys.add(v * n + u)


def _pair_stream(rng, m, passes_ok):
    """Yield ``(pass_start, i, j)``: link pairs ``i < j`` in shuffled passes (``pass_start``
    marks the first pair of a pass), or random pairs forever when there are too many."""
    if passes_ok:
        first_end, second_end = (a.astype(np.int32) for a in np.triu_indices(m, 1))
        while True:
            perm = rng.permutation(first_end.size)
            for step, (i, j) in enumerate(zip(first_end[perm].tolist(),
                                               second_end[perm].tolist())):
                yield step == 0, i, j
    else:
        while True:
            i, j = rng.choice(m, size=2, replace=False).tolist()
            yield False, min(i, j), max(i, j)


def _check_rewire_args(topology, seed, budget, max_swaps, directed):
    """Check :func:`rewire`'s arguments; return ``(directed, passes_ok)``."""
    if not isinstance(topology, Topology):
        raise InputTypeError(f"rewire needs a Topology, got {type(topology).__name__}")
    topology.require_no_switches("rewire")
    whole_number(seed, "rewire seed", 0)
    if budget is not None:
        # an infinite budget is a long way to write None, not a mistake
        real_number(budget, "rewire budget (seconds)", above=0, finite=False)
    if max_swaps is not None:
        whole_number(max_swaps, "rewire max_swaps", 0)
    if topology.pairs[0].size != topology.num_links:
        raise TopologyError(f"rewire needs a simple topology, but {topology.name} has "
                            f"{topology.num_links - topology.pairs[0].size} parallel links")
    require_strongly_connected(topology, "rewire")
    bidirectional = topology.is_bidirectional()
    if directed is None:
        directed = not bidirectional
    elif not directed and not bidirectional:
        raise TopologyError(f"cable swaps need a bidirectional topology; {topology.name} has "
                            "one-way links (use directed=True)")
    num_swappable = topology.num_links if directed else topology.num_links // 2
    passes_ok = num_swappable * (num_swappable - 1) // 2 <= MAX_SHUFFLED_PAIRS
    if budget is None and max_swaps is None and not passes_ok:
        raise SpecError(f"{topology.name} has too many link pairs to reach a local minimum; "
                        "give rewire a budget or max_swaps")
    return directed, passes_ok


def _warmup_stage(topology, fn, warmup, *, start, budget, max_swaps, seed, directed, progress):
    """Evaluate the start and run :func:`rewire`'s distance warm-up stage.

    Returns ``(result, current, best_topology)``: the result so far, the objective value and
    topology to continue from.
    """
    rtol = float(getattr(fn, "rtol", 0.0))
    if warmup is None:
        warmup = 0.5 * budget if budget is not None and isinstance(fn, alltoall_objective) else 0
    warmup = real_number(warmup, "rewire warmup (seconds)", least=0, finite=False)

    current = float(fn(topology))
    result = RewireResult(topology, current, current, 0, 0, evaluated=1, directed=directed,
                          status=Status.SUCCESS, message="")
    best_topology = topology
    if warmup > 0 and not isinstance(fn, distance_objective):
        # Cheap stage: greedy swaps on the sum of distances (thousands per second), kept as one
        # step only if the real objective agrees that it improved.
        warm = rewire(topology, objective=distance_objective(), budget=warmup,
                      max_swaps=max_swaps, seed=seed, directed=directed, warmup=0,
                      progress=progress)
        result.tried += warm.tried
        if warm.accepted:
            value = float(fn(warm.topology))
            result.evaluated += 1
            if value < current - rtol * abs(current):
                old = set(zip(topology.src.tolist(), topology.dst.tolist()))
                new = set(zip(warm.topology.src.tolist(), warm.topology.dst.tolist()))
                if not directed:
                    old = {(u, v) for u, v in old if u < v}
                    new = {(u, v) for u, v in new if u < v}
                result.accepted += warm.accepted
                result.warmup_swaps = warm.accepted
                result.history.append(RewireStep(result.tried, time.monotonic() - start, value,
                                                 tuple(sorted(old - new)),
                                                 tuple(sorted(new - old))))
                current, best_topology = value, warm.topology
    return result, current, best_topology


def _candidate_value(fn, bound, threshold, distance_sum, arrays, name):
    """Objective value of a candidate swap: ``(value, topology or None)``, or
    ``(None, None)`` when the objective's lower bound rules out an improvement."""
    n, src, dst, bw, lat = arrays
    cand = None
    if isinstance(fn, distance_objective):
        value = distance_sum          # already known: skip building a Topology
    else:
        cand = Topology(n, src, dst, bw, lat, name=name)
        if bound is not None:
            low = (bound(cand, distance_sum) if isinstance(fn, alltoall_objective)
                   else bound(cand))
            if low >= threshold:
                return None, None
        value = float(fn(cand))
    return value, cand


def _finish(result, topology, best_topology, fn, seed, current, start):
    """Fill in ``result``'s final value, topology, status and message."""
    result.final = current
    result.seconds = time.monotonic() - start
    if result.accepted:
        meta = {"family": "rewired", "base": topology.name, "seed": int(seed),
                "swaps": result.accepted, "initial": result.initial, "final": result.final,
                "objective": getattr(fn, "name", getattr(fn, "__name__", "custom"))}
        order = np.lexsort((best_topology.dst, best_topology.src))
        result.topology = Topology(topology.num_nodes, best_topology.src[order], best_topology.dst[order],
                                   best_topology.bandwidth[order], best_topology.latency[order],
                                   name=best_topology.name, meta=meta)
    result.status = Status.SUCCESS if result.stopped == "converged" else Status.LIMIT
    why = {"converged": "converged to a local minimum",
           "budget": "stopped by the time budget",
           "max_swaps": "stopped after max_swaps candidates"}[result.stopped]
    result.message = (f"{why}: {result.accepted} of {result.tried} swaps kept, objective "
                      f"{result.initial:.6g} -> {result.final:.6g}")


# ---------------------------------------------------------------------- rewire
#: Search strategies of :func:`rewire` (``topocoll rewire --strategy``).
STRATEGIES = ("first", "best", "anneal")


def rewire(topology, *, objective=None, budget=10.0, max_swaps=None, seed=0, progress=None,
           directed=None, prescreen=False, warmup=None, strategy="first", temperature=None):
    """Greedy degree-preserving rewiring of ``topology`` to lower ``objective``.

    Candidate swaps of two links (see the module text) come in seeded shuffled passes; a legal
    swap (simple and strongly connected result) is kept when the objective drops (by more than
    the objective's ``rtol`` attribute, if it has one). If the objective has a
    ``lower_bound(topology)`` method, candidates whose bound rules out an improvement are
    skipped without evaluating it.

    Parameters
    ----------
    topology : Topology
        Strongly connected, simple (no parallel links), without switches.
    objective : callable, str or None
        ``Topology -> float`` to minimize, ``"distance"`` (:class:`distance_objective`),
        ``"alltoall"`` or ``None`` (:class:`alltoall_objective`: the flow LP's all-to-all time).
    budget : float or None
        Wall-time budget in seconds (default 10); checked before each candidate, so one
        objective evaluation may run past it. ``None``: no time limit.
    max_swaps : int or None
        Most candidate swaps to try (``tried``); ``None``: no limit. With ``budget=None`` the
        run is fully deterministic for a seed.
    seed : int
        Seed of the candidate order (default 0).
    progress : callable, optional
        Called as ``progress(tried, max_swaps)`` after each candidate.
    directed : bool or None
        Swap arc heads (True) or cables (False); default: cables iff the topology is
        bidirectional.
    prescreen : bool
        Heuristic filter for expensive objectives: skip (as ``pruned``) every candidate whose
        sum of hop distances exceeds the current topology's, without evaluating the objective.
        More evaluations go to promising swaps, but improving swaps that lengthen paths are
        missed, and ``converged`` then means a local minimum among the screened swaps.
    warmup : float or None
        Seconds (taken from ``budget``) of a first stage that rewires greedily on the sum of
        distances; its result is kept, as one step of the history, only if it lowers the
        objective. ``None``: half the budget for the all-to-all objective (its time sits
        close to the distance bound, and an LP solve costs as much as thousands of distance
        evaluations), else 0.
    strategy : {"first", "best", "anneal"}
        ``"first"`` (default): keep the first improving swap of the shuffled passes.
        ``"best"``: each step scans every swap and keeps the best (steepest descent; needs
        every pair of links scannable). ``"anneal"``: simulated annealing over ``max_swaps``
        random candidates (default 500) with the temperature schedule ``temperature``; the
        best topology seen is returned (:mod:`topocoll.throughput.rewire_search`).
        ``prescreen`` applies to ``"first"`` only.
    temperature : (float, float), optional
        Annealing schedule ``(start, end)`` in relative change of the objective (default
        ``(0.02, 1e-4)``), geometric over the candidates.

    Returns
    -------
    RewireResult

    Raises
    ------
    TopologyError
        Switches, parallel links, or cable swaps asked for a topology that is not bidirectional.
    NotStronglyConnectedError
        The input is not strongly connected.
    SpecError
        An unknown objective name.
    InputTypeError, UnsupportedError
        A budget, warmup, max_swaps or seed of the wrong kind, or out of range.

    Examples
    --------
    >>> from topocoll.topology import topology
    >>> t = topology("moddebruijn:16,2")
    >>> res = rewire(t, objective="distance", budget=None, max_swaps=300, seed=1)
    >>> res.directed, res.final <= res.initial
    (True, True)
    >>> bool((res.topology.out_degree() == 2).all() and (res.topology.in_degree() == 2).all())
    True
    """
    directed, passes_ok = _check_rewire_args(topology, seed, budget, max_swaps, directed)
    fn = _objective(objective)
    if strategy != "first":
        return _other_strategy(strategy, topology, fn, directed, passes_ok, budget=budget,
                               max_swaps=max_swaps, seed=seed, progress=progress,
                               warmup=warmup, temperature=temperature)
    start = time.monotonic()
    result, current, best_topology = _warmup_stage(
        topology, fn, warmup, start=start, budget=budget, max_swaps=max_swaps, seed=seed,
        directed=directed, progress=progress)
    walk = _Walk(_Links(best_topology, directed), current, _sum_of_distances(best_topology),
                 best_topology, fn=fn, name=f"rewired({topology.name})", prescreen=prescreen,
                 start=start)
    m = walk.links.ends.shape[0]
    rng = np.random.default_rng(int(seed))
    variants = 1 if directed else 2
    clean_pass = False           # no swap accepted since the current pass began
    result.stopped = "converged"
    if m < 2:
        result.converged = True
    stream = _pair_stream(rng, m, passes_ok) if m >= 2 else iter(())
    for pass_start, i, j in stream:
        if pass_start:
            if clean_pass:
                result.converged = True
                break
            clean_pass = True
        stopped = _stop_reason(result, max_swaps, budget, start)
        if stopped:
            result.stopped = stopped
            break
        order = [0, 1] if variants == 1 or rng.random() < 0.5 else [1, 0]
        if walk.try_pair(result, i, j, order[:variants], max_swaps):
            clean_pass = False
        if progress is not None:
            progress(result.tried, max_swaps)
    _finish(result, topology, walk.best, fn, seed, walk.current, start)
    return result


def _other_strategy(strategy, topology, fn, directed, passes_ok, *, temperature, **common):
    """Run the ``"best"`` or ``"anneal"`` search of :func:`rewire` with this module's helpers."""
    from .rewire_search import anneal_search, best_swap_search  # deferred: only these need it

    kit = SimpleNamespace(Links=_Links, Step=RewireStep, distance_sum=_distance_sum,
                          candidate_value=_candidate_value, finish=_finish,
                          stop_reason=_stop_reason, warmup_stage=_warmup_stage)
    if strategy == "best":
        return best_swap_search(kit, topology, fn, directed=directed, passes_ok=passes_ok,
                                **common)
    if strategy == "anneal":
        return anneal_search(kit, topology, fn, directed=directed, temperature=temperature,
                             **common)
    raise SpecError(f"unknown rewire strategy {strategy!r}; use one of {', '.join(STRATEGIES)}")


def _stop_reason(result, max_swaps, budget, start):
    """``"max_swaps"`` or ``"budget"`` when that limit stops :func:`rewire` before the next
    candidate, else ``""`` (the clock is read only with a budget)."""
    if max_swaps is not None and result.tried >= max_swaps:
        return "max_swaps"
    if budget is not None and time.monotonic() - start >= budget:
        return "budget"
    return ""


class _Walk:
    """The greedy search of :func:`rewire`: the links, the objective's current value and the
    sum of distances where the walk stands, and the best topology (the current one)."""

    def __init__(self, links, current, distance, best, *, fn, name, prescreen, start):
        self.links, self.current, self.distance, self.best = links, current, distance, best
        self.fn, self.name, self.prescreen, self.start = fn, name, prescreen, start
        self.rtol = float(getattr(fn, "rtol", 0.0))
        self.bound = getattr(fn, "lower_bound", None)

    def try_pair(self, result, i, j, variants, max_swaps):
        """Try the swap ``variants`` of links ``i`` and ``j`` in turn, counting them in
        ``result``; keep the first that improves the objective. Returns whether one did."""
        links, n = self.links, self.links.n
        for variant in variants:
            swap = links.candidate(i, j, variant)
            if swap is None:
                continue
            if max_swaps is not None and result.tried >= max_swaps:
                break
            result.tried += 1
            ends = links.ends.copy()
            ends[i], ends[j] = swap
            src, dst, bw, lat = links.arrays(ends)
            distance_sum = _distance_sum(n, src, dst)
            if not np.isfinite(distance_sum):
                continue          # the swap would disconnect the topology
            if self.prescreen and distance_sum > self.distance:
                result.pruned += 1
                continue
            threshold = self.current - self.rtol * abs(self.current)
            value, cand = _candidate_value(self.fn, self.bound, threshold, distance_sum,
                                           (n, src, dst, bw, lat), self.name)
            if value is None:
                result.pruned += 1
                continue
            result.evaluated += 1
            if value < threshold:
                removed = (tuple(links.ends[i].tolist()), tuple(links.ends[j].tolist()))
                links.apply(i, j, *swap)
                self.current, self.distance = value, distance_sum
                self.best = cand if cand is not None else Topology(n, src, dst, bw, lat,
                                                                   name=self.name)
                result.accepted += 1
                result.history.append(RewireStep(result.tried, time.monotonic() - self.start,
                                                 value, removed, swap))
                return True
        return False
