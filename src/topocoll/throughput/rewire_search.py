"""Best-swap and annealed rewiring: the two other search strategies of
:func:`topocoll.throughput.rewire` (``strategy="best"`` and ``"anneal"``).

* **best** (steepest descent, as in Basu et al.'s greedy rewiring): every step evaluates every
  legal swap of every pair of links and applies the one that lowers the objective most; it
  stops at a local minimum (a full scan without an improving swap, ``converged``). Candidates
  whose lower bound cannot beat the best swap of the scan so far are skipped.
* **anneal** (simulated annealing): candidates are drawn at random (seeded); a swap that
  changes the objective by the relative amount ``delta`` is taken when ``delta < 0`` or with
  probability ``exp(-delta / T)``, where the temperature ``T`` falls geometrically from
  ``temperature[0]`` to ``temperature[1]`` over ``max_swaps`` candidates. The best topology
  seen is returned, so ``final <= initial``; with ``budget=None`` the run is a function of
  the seed.

>>> from topocoll.topology import topology
>>> from topocoll.throughput import rewire
>>> t = topology("jellyfish:10,3,2")
>>> best = rewire(t, objective="distance", strategy="best", budget=None)
>>> best.converged, best.final <= best.initial, best.strategy
(True, True, 'best')
>>> a = rewire(t, objective="distance", strategy="anneal", budget=None, max_swaps=200, seed=5)
>>> b = rewire(t, objective="distance", strategy="anneal", budget=None, max_swaps=200, seed=5)
>>> moves = lambda r: [(s.value, s.removed, s.added) for s in r.history]
>>> a.final == b.final and moves(a) == moves(b) and a.final <= a.initial
True
"""

import math
import time

import numpy as np

from ..errors import SpecError
from ..topology.model import Topology
from ..units import real_number

__all__ = ["best_swap_search", "anneal_search", "ANNEAL_SWAPS", "TEMPERATURE"]

#: Candidates of an annealing run when ``max_swaps`` is not given.
ANNEAL_SWAPS = 500
#: Default temperature schedule ``(start, end)``, in relative change of the objective.
TEMPERATURE = (0.02, 1e-4)


class _Search:
    """State shared by both strategies: the links, the current value and topology. ``kit``
    holds :mod:`~topocoll.throughput.rewire`'s helpers (passed in: importing that module here
    would make the two import each other)."""

    def __init__(self, kit, topology, fn, directed, current, name):
        self.kit = kit
        self.links = kit.Links(topology, directed)
        self.fn, self.name, self.current, self.topology = fn, name, current, topology
        self.rtol = float(getattr(fn, "rtol", 0.0))
        self.bound = getattr(fn, "lower_bound", None)

    def evaluate(self, i, j, swap, threshold):
        """``(value, topology, distance_sum)`` of a swap, or ``None`` when it disconnects or
        its lower bound rules out beating ``threshold``."""
        links, n = self.links, self.links.n
        ends = links.ends.copy()
        ends[i], ends[j] = swap
        src, dst, bw, lat = links.arrays(ends)
        distance_sum = self.kit.distance_sum(n, src, dst)
        if not np.isfinite(distance_sum):
            return None
        value, cand = self.kit.candidate_value(self.fn, self.bound, threshold, distance_sum,
                                       (n, src, dst, bw, lat), self.name)
        if value is None:
            return None
        if cand is None:
            cand = Topology(n, src, dst, bw, lat, name=self.name)
        return value, cand

    def apply(self, result, i, j, swap, value, cand, start):
        removed = (tuple(self.links.ends[i].tolist()), tuple(self.links.ends[j].tolist()))
        self.links.apply(i, j, *swap)
        self.current, self.topology = value, cand
        result.accepted += 1
        result.history.append(self.kit.Step(result.tried, time.monotonic() - start, value, removed,
                                         swap))


def _start(kit, topology, fn, warmup, start, budget, max_swaps, seed, directed, progress):
    result, current, best_topology = kit.warmup_stage(
        topology, fn, warmup, start=start, budget=budget, max_swaps=max_swaps, seed=seed,
        directed=directed, progress=progress)
    return result, _Search(kit, best_topology, fn, directed, current,
                           f"rewired({topology.name})")


def best_swap_search(kit, topology, fn, *, directed, passes_ok, budget, max_swaps, seed,
                     progress, warmup):
    """``strategy="best"`` of :func:`~topocoll.throughput.rewire` (see the module text)."""
    if not passes_ok:
        raise SpecError(f"strategy 'best' scans every pair of links; {topology.name} has too "
                        "many (use strategy 'first')")
    start = time.monotonic()
    result, search = _start(kit, topology, fn, warmup, start, budget, max_swaps, seed,
                            directed, progress)
    m = search.links.ends.shape[0]
    variants = (0,) if directed else (0, 1)
    result.stopped, result.converged = "converged", False
    while True:
        best, stopped = None, ""
        threshold = search.current - search.rtol * abs(search.current)
        for i, j in zip(*np.triu_indices(m, 1)):
            for variant in variants:
                stopped = kit.stop_reason(result, max_swaps, budget, start)
                if stopped:
                    break
                swap = search.links.candidate(int(i), int(j), variant)
                if swap is None:
                    continue
                result.tried += 1
                got = search.evaluate(int(i), int(j), swap, threshold)
                if progress is not None:
                    progress(result.tried, max_swaps)
                if got is None:
                    result.pruned += 1
                    continue
                result.evaluated += 1
                if got[0] < threshold:
                    best, threshold = (int(i), int(j), swap, *got), got[0]
            if stopped:
                break
        if best is not None:
            search.apply(result, *best, start)
        if stopped or best is None:
            result.stopped, result.converged = stopped or "converged", not stopped
            break
    kit.finish(result, topology, search.topology, fn, seed, search.current, start)
    result.strategy = "best"
    return result


def _temperatures(temperature):
    if temperature is None:
        temperature = TEMPERATURE
    try:
        t0, t1 = temperature
    except (TypeError, ValueError):
        raise SpecError(f"temperature must be a pair (start, end), got {temperature!r}") from None
    t0 = real_number(t0, "start temperature", above=0)
    t1 = real_number(t1, "end temperature", above=0)
    if t1 > t0:
        raise SpecError(f"the end temperature {t1:g} must not exceed the start {t0:g}")
    return float(t0), float(t1)


def anneal_search(kit, topology, fn, *, directed, budget, max_swaps, seed, progress, warmup,
                  temperature=None):
    """``strategy="anneal"`` of :func:`~topocoll.throughput.rewire` (see the module text)."""
    t0, t1 = _temperatures(temperature)
    total = ANNEAL_SWAPS if max_swaps is None else max_swaps
    start = time.monotonic()
    result, search = _start(kit, topology, fn, warmup, start, budget, total, seed, directed,
                            progress)
    best_value, best_topology = search.current, search.topology
    m = search.links.ends.shape[0]
    rng = np.random.default_rng(int(seed))
    draws = 0
    result.stopped = "max_swaps"
    while m >= 2 and result.tried < total and draws < 50 * max(total, 1):
        if budget is not None and time.monotonic() - start >= budget:
            result.stopped = "budget"
            break
        draws += 1
        i, j = sorted(rng.choice(m, size=2, replace=False).tolist())
        swap = search.links.candidate(i, j, 0 if directed else int(rng.integers(2)))
        if swap is None:
            continue
        result.tried += 1
        temp = t0 * (t1 / t0) ** (result.tried / max(total, 1))
        got = search.evaluate(i, j, swap, float("inf"))
        u = rng.random()
        if progress is not None:
            progress(result.tried, total)
        if got is None:
            continue
        result.evaluated += 1
        delta = (got[0] - search.current) / max(abs(search.current), 1e-300)
        if delta < 0 or u < math.exp(-delta / temp):
            search.apply(result, i, j, swap, *got, start)
            if got[0] < best_value - search.rtol * abs(best_value):
                best_value, best_topology = got
    kit.finish(result, topology, best_topology, fn, seed, best_value, start)
    result.strategy = "anneal"
    result.message = result.message.replace("stopped after max_swaps candidates",
                                            "annealing schedule done")
    return result
