"""The greedy's search: seeded restarts (in processes), the discretizations it tries, the
repair of its last slots by small ILPs on mixed links, and the exact ILP (docs/synthesis.md)."""

import math
import os
from dataclasses import dataclass

import numpy as np

from ...errors import UnsupportedError
from ...topology.model import Topology
from .bounds import bounds_of
from .cayley import symmetric_events
from .greedy import RULES, greedy_events
from .problem import MAX_RESOLUTION, REL_ERROR, event_array, ten_problem

__all__ = ["GreedyRequest", "greedy_search", "run_ilp", "repaired", "auto_restarts",
           "mixed_links", "AUTO_RESTARTS", "GREEDY_DISCRETIZATION",
           "GREEDY_DISCRETIZATIONS", "REPAIR_WORK", "AT_BOUND"]


#: The greedy's finer automatic discretization: its work grows with the transfers, not the
#: slots, and a 5% rounding of the slow links costs up to 2% in the link model (measured on
#: 8x8 meshes and tori with 4:1 links and 10 us latency; docs/synthesis.md).
GREEDY_DISCRETIZATION = {"max_error": 0.01, "max_resolution": 32}


#: Discretizations the default greedy tries on mixed links, in order, until a schedule is
#: within :data:`AT_BOUND` of the chunk bound: the fine one, then the ILP's coarser one (at
#: 10 us latency a 4:1 link is 3.91 fast-link times: 1% needs 11 slots for the fastest link,
#: where the repair's models get too large; 5% rounds it to 4 and the repair reaches the
#: bound on the 8x4 torus).
GREEDY_DISCRETIZATIONS = (GREEDY_DISCRETIZATION,
                          {"max_error": REL_ERROR, "max_resolution": MAX_RESOLUTION})


#: Relative distance to the chunk bound (by the synthesizer's replay of its events) at which
#: the default greedy stops searching.
AT_BOUND = 2e-3


#: Most chunks x links for which the default greedy repairs its schedule with the ILP
#: (:mod:`.repair`) on mixed links (a 16x16 torus is 2**18).
REPAIR_WORK = 2**17


#: Most greedy runs made by default on links of mixed speeds (each stops the search when it
#: reaches the chunk lower bound).
AUTO_RESTARTS = 16


_AUTO_WORK = 2**19


def _restart_seed(seed, index):
    if index == 0:
        return int(seed)
    return int(np.random.SeedSequence([int(seed), int(index)]).generate_state(1)[0])


def _greedy_job(args):
    arrays, seed, rule = args
    r = greedy_events(*arrays, seed=seed, rule=rule)
    return r.makespan, r.events


def mixed_links(problem):
    """True if the problem's links take different numbers of TEN slots."""
    steps = problem.link_steps
    return bool(steps.size) and int(steps.min()) != int(steps.max())


def auto_restarts(problem):
    """Greedy runs by default: 1 on uniform links (the greedy is at the bound there on the
    benchmarks), on mixed links up to :data:`AUTO_RESTARTS`, fewer on large problems (at least
    2), so that chunks x links x restarts stays near ``2**19``.

    >>> auto_restarts(ten_problem("torus:4x4", "allgather"))
    1
    """
    if not mixed_links(problem):
        return 1
    work = max(1, problem.num_chunks * problem.link_steps.size)
    return int(min(AUTO_RESTARTS, max(2, _AUTO_WORK // work)))


def _run_greedy(problem, seed, restarts, workers, progress, target):
    arrays = problem.arrays()
    auto = restarts is None
    if auto:
        restarts = auto_restarts(problem)
    seeds = [_restart_seed(seed, i) for i in range(restarts)]
    # on mixed links the restarts alternate the two chunk-choice rules (measured: neither
    # wins everywhere, see docs/synthesis.md)
    rules = [RULES[i % 2] if mixed_links(problem) else "tiers" for i in range(restarts)]
    if workers is None:
        workers = 1 if auto else min(restarts, os.cpu_count() or 1)
    results = []
    if restarts == 1 or workers <= 1:
        for i, (s, rule) in enumerate(zip(seeds, rules)):
            cb = progress if restarts == 1 else None
            r = greedy_events(*arrays, seed=s, rule=rule, progress=cb)
            results.append((r.makespan, r))        # its events made when first needed
            if progress is not None and restarts > 1:
                progress(i + 1, restarts)
            if r.makespan <= target:           # at the lower bound: no restart can do better
                break
    else:
        from ...batch import open_pool      # imported here: start-up time

        jobs = [(arrays, s, rule) for s, rule in zip(seeds, rules)]
        # Ctrl-C or a failed run leaves the pool abandoned: the queued restarts are dropped
        # instead of run before the error can surface
        with open_pool(workers) as pool:
            futures = [pool.submit(_greedy_job, job) for job in jobs]
            for i, future in enumerate(futures):
                results.append(future.result())
                if progress is not None:
                    progress(i + 1, restarts)
        # the runs a serial search would have made (it stops at the bound)
        hit = [i for i, r in enumerate(results) if r[0] <= target]
        results = results[:hit[0] + 1] if hit else results
    spans = [r[0] for r in results]
    best = int(np.argmin(spans))               # first best: independent of the worker count
    return results[best][1], results[best][0], {"restart_makespans": spans,
                                                "best_restart": best,
                                                "best_seed": seeds[best],
                                                "best_rule": rules[best]}


@dataclass(frozen=True)
class GreedyRequest:
    """What a greedy synthesis of one non-combining collective was asked for: the prepared
    topology ``topo``, the collective ``coll`` and its ``root``, ``chunks`` per shard, buffer
    ``size`` in bytes, the ``time_step`` (None: automatic), the ``seed``, ``restarts`` (None:
    :func:`auto_restarts`), ``workers`` and the ``progress`` callback, as
    :func:`synthesize` takes them."""

    topo: Topology
    coll: object
    root: object
    chunks: int
    size: float
    time_step: object
    seed: int
    restarts: object
    workers: object
    progress: object

    def problem(self, discretization=None):
        """The :class:`TenProblem` of the request, discretized by ``discretization``."""
        return ten_problem(self.topo, self.coll, chunks=self.chunks, size=self.size,
                           root=self.root, time_step=self.time_step,
                           discretization=discretization)


def greedy_search(req, *, repair, symmetric):
    """On mixed links of a network with a translation symmetry, first the translated all-gather
    of :mod:`.cayley` (at the slot bound but above the bound in seconds, with the per-link
    deadline windows of :mod:`.repair`); unless it is within :data:`AT_BOUND` of the chunk
    bound, the greedy's restarts, then on mixed links the repair (:mod:`.repair`) and the
    coarser discretization; the schedule of least replay time (:func:`~.repair.replay_time`).

    Returns ``(problem, capacity bound, bound, events, makespan, info)``."""
    problem = req.problem(GREEDY_DISCRETIZATION)
    seed = req.seed
    capacity, bound = bounds_of(problem)
    if repair is None:
        repair = mixed_links(problem) and \
            problem.num_chunks * problem.link_steps.size <= REPAIR_WORK
    if symmetric is None:
        symmetric = mixed_links(problem)
    sym = None
    if symmetric and req.coll.name == "allgather":
        sym = symmetric_events(problem.topology, problem.link_cost, problem.link_steps,
                               req.chunks, bound, seed=seed)
    if sym is not None:
        fixed = None
        sym_time, sym_events, sym_span = _replay(problem, sym.events), sym.events, sym.makespan
        # only the deadline windows: above the slot bound the slot repair's windows cost as
        # much as the greedy's (the 6x6 torus with 4:1 links at 10 us: 0.6 s for nothing)
        if repair and sym_time > bound * (1 + AT_BOUND) and \
                sym_span <= math.ceil(bound / problem.time_step - 1e-9):
            sym_time, sym_events, sym_span, solves = repaired(problem, sym_events, sym_span,
                                                               bound, seed)
            fixed = {"solves": solves, "time_steps": [problem.time_step]}
        tried = {"tries": sym.tries, "time": sym_time, "kept": True}
        if sym_time <= bound * (1 + AT_BOUND):
            info = {"restart_makespans": [], "best_restart": None, "best_seed": None,
                    "best_rule": None, "repair": fixed, "symmetric": tried}
            return problem, capacity, bound, sym_events, sym_span, info
    found = greedy_runs(req, problem, repair=repair, bound=bound)
    ends, problem_g, events, makespan, info = found
    if sym is None:
        return problem_g, capacity, bound, events, makespan, dict(info, symmetric=None)
    if ends is None:
        ends = _replay(problem_g, events)
    if fixed is not None:
        info = dict(info, repair=dict(info["repair"],
                                      solves=info["repair"]["solves"] + fixed["solves"]))
    if ends <= sym_time * (1 + 1e-12):
        return problem_g, capacity, bound, events, makespan, \
            dict(info, symmetric=dict(tried, kept=False))
    return problem, capacity, bound, sym_events, sym_span, dict(info, symmetric=tried)


def greedy_runs(req, problem, *, repair, bound):
    """The greedy part of :func:`greedy_search` for ``req`` (a :class:`GreedyRequest`) from
    its first ``problem``: ``(replay time, problem, events, makespan, info)``; the replay time
    is None without the repair (not computed)."""
    seed, restarts, workers, progress = req.seed, req.restarts, req.workers, req.progress
    if not repair:
        slots = int(math.ceil(bound / problem.time_step - 1e-9))
        events, makespan, info = _run_greedy(problem, seed, restarts, workers, progress, slots)
        return None, problem, events, makespan, dict(info, repair=None)
    best, tried, solves = None, [], 0
    for disc in GREEDY_DISCRETIZATIONS if req.time_step is None else (None,):
        if disc is not GREEDY_DISCRETIZATION and disc is not None:
            problem = req.problem(disc)
        if problem.time_step in tried:
            continue
        tried.append(problem.time_step)
        slots = int(math.ceil(bound / problem.time_step - 1e-9))
        events, makespan, info = _run_greedy(problem, seed, restarts, workers, progress, slots)
        ends, events, makespan, done = repaired(problem, events, makespan, bound, seed)
        solves += done
        if best is None or ends < best[0] * (1 - 1e-12):
            best = (ends, problem, events, makespan, info)
        if best[0] <= bound * (1 + AT_BOUND):
            break
    ends, problem, events, makespan, info = best
    info = dict(info, repair={"solves": solves, "time_steps": tried})
    return ends, problem, events, makespan, info


def repaired(problem, events, makespan, bound, seed):
    """A schedule's repair (:mod:`.repair`): its last slots re-solved toward the slot bound,
    then, if its replay is still above the bound, per-link deadlines no later than a horizon
    the slot repair failed at; ``(replay time, events, makespan, window solves)``."""
    from .repair import deadline_events, link_deadlines, repair_events  # ILPs: scipy, HiGHS
    events = event_array(events)
    arrays = problem.arrays()
    slots = int(math.ceil(bound / problem.time_step - 1e-9))
    solves, failed = 0, -1               # a horizon the slot repair could not reach
    if makespan > slots:
        fixed = repair_events(*arrays, events, slots, seed=seed)
        events, makespan, solves = fixed.events, fixed.makespan, fixed.solves
        if makespan > slots:
            failed = makespan - 1
    ends = _replay(problem, events)
    if ends > bound * (1 + AT_BOUND) and \
            link_deadlines(problem.link_cost, problem.link_steps, bound).max() > failed:
        timed = deadline_events(*arrays, events, link_cost=problem.link_cost,
                                time_step=problem.time_step, goal=bound, seed=seed)
        solves += timed.solves
        ends_timed = _replay(problem, timed.events)
        if ends_timed < ends:
            events, makespan, ends = timed.events, timed.makespan, ends_timed
    return ends, events, makespan, solves


def _replay(problem, events):
    from .repair import replay_time  # ILPs: scipy, HiGHS
    return replay_time(problem.topology.src, problem.topology.dst, problem.link_cost,
                       problem.pre, event_array(events))


def run_ilp(problem, seed, limits, window, progress):
    try:
        from .ilp import ilp_events  # ILPs: scipy, HiGHS
    except ImportError:
        raise UnsupportedError("method ilp needs topocoll.synth.ten.ilp, which is not "
                               "installed; use method greedy") from None
    res = ilp_events(*problem.arrays(), **limits, window=window, early_stop=True, seed=seed,
                     progress=progress)
    info = {"ilp_status": int(res.status), "ilp_status_name": res.status_name,
            "ilp_message": str(res.message), "ilp_optimal": bool(res.optimal)}
    return res.events, int(res.makespan), info
