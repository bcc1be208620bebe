"""Windowed ILP repair of a TEN schedule's last slots (docs/math.md section 5).

The greedy (:mod:`.greedy`) often ends one slot above the chunk lower bound on links of mixed
speeds: its early slots are fine, but the last chunks of some nodes come a slot late. A repair
keeps the sends that start before slot ``H - W`` (and arrive by the horizon ``H``) and asks the
ILP of :mod:`.ilp` whether the rest can be rescheduled in the window ``[H - W, H]`` so that every
node holds what it must by ``H``: from the kept sends' state (what each node holds or has on its
way, when each link is free), sends in the window, every missing delivery by ``H`` (a pure
feasibility model). Windows grow until one is feasible or the model gets too large.

* :func:`repair_events` lowers the makespan in slots, one slot at a time, toward a target;
* :func:`deadline_events` aims at a time in seconds: each link gets its own last arrival slot,
  ``floor(T * k / cost)`` for a link of ``k`` slots and chunk time ``cost``, and a send on it
  needs its chunk as early as the link would start it in the link model (``pace``). The slots
  of a link of 1.97 fast-link times round to 2, so a schedule at the slot bound can still be
  1.6% above the bound in seconds; per-link deadlines let the slow links' last chunks arrive
  when the link model would bring them.

The work is bounded by counts, not by the clock (same problem, same result on any machine):
:data:`MAX_VARS` variables a model, :data:`WORK` variables over all the models of one call,
and :data:`CHECKS` stop checks of HiGHS's search a solve, which cut off a long branch and bound
(every feasible window measured was found at the root). The checks do not bound HiGHS's work at
the root, where it proves most infeasible windows (a second or more at 12k variables); the
model sizes do.

>>> import numpy as np
>>> src = np.array([0, 1, 1, 2, 0, 2]); dst = np.array([1, 0, 2, 1, 2, 0])  # triangle
>>> steps = np.array([1, 1, 1, 1, 3, 3])                                     # 0 - 2 slow
>>> pre, post = np.eye(3, dtype=bool), np.ones((3, 3), dtype=bool)
>>> late = np.array([(0, 4, 0), (2, 5, 0), (0, 0, 3), (2, 3, 3), (1, 1, 3), (1, 2, 3)],
...                 dtype=[("chunk", "<i8"), ("link", "<i8"), ("start", "<i8")])
>>> r = repair_events(3, src, dst, steps, pre, post, late, target=2)
>>> r.makespan, r.solves > 0
(2, True)
>>> replay_time(src, dst, steps.astype(float), pre, r.events)
2.0
"""

from dataclasses import dataclass

import numpy as np

from .ilp_bounds import INF, distances, to_needed
from .ilp_model import build_model, extract_sends, solve_model
from .listsched import as_events, prune

__all__ = ["repair_events", "deadline_events", "replay_time", "link_deadlines", "RepairResult",
           "MAX_VARS", "WORK", "DEADLINE_MAX_VARS", "DEADLINE_WORK", "CHECKS", "WINDOWS"]

#: Most variables of one window model (larger windows are not tried).
MAX_VARS = 8_000
#: Most variables of all the window models of one call together.
WORK = 20_000
#: :data:`MAX_VARS` and :data:`WORK` of :func:`deadline_events` once a window was feasible:
#: HiGHS finds a feasible window at the root even with 45k variables (the 8x8 torus with 2:1
#: links at 10 us: 0.2 s), but an infeasible one of 12k variables can take it 1-2 s to prove.
#: Before the first feasible window the models have at most :data:`MAX_VARS` variables, and
#: after it the first infeasible one ends the search.
DEADLINE_MAX_VARS = 50_000
DEADLINE_WORK = 100_000
#: HiGHS's stop checks per window solve (its MIP search asks whether to stop at points that
#: do not depend on the clock).
CHECKS = 10
#: Windows tried, in fastest-link times.
WINDOWS = (2, 3, 4, 6, 8, 12, 16)


@dataclass
class RepairResult:
    """Outcome of :func:`repair_events` or :func:`deadline_events`.

    Attributes
    ----------
    events : numpy structured array (chunk, link, start)
        The repaired schedule (the input's if no repair helped).
    makespan : int
        Its last arrival slot.
    solves : int
        Window models solved.
    windows : list of int
        The window (slots) of each repair kept, in order.
    """

    events: np.ndarray
    makespan: int
    solves: int
    windows: list


_SHORT = "short"


class _Windows:
    """The window models of one problem and the work spent on them."""

    def __init__(self, num_nodes, src, dst, steps, pre, post, *, seed, max_vars, work, checks):
        self.src, self.dst, self.steps = src, dst, steps
        self.pre, self.post = pre, post
        self.need = post & ~pre
        self.dist = distances(num_nodes, src, dst, steps)
        self.seed = seed
        self.max_vars = MAX_VARS if max_vars is None else max_vars
        self.work = WORK if work is None else work
        self.checks = CHECKS if checks is None else checks
        self.solves = self.spent = 0

    def widths(self, horizon):
        fast = int(self.steps.min())
        return sorted({min(m * fast, horizon) for m in WINDOWS})

    def solve(self, events, width, deadline, pace=None):
        """Reschedule the sends from slot ``max(deadline) - width`` on so that each link's
        arrive by ``deadline[link]``: the new events, :data:`_SHORT` (the window is too short
        for some delivery), False (HiGHS found no such schedule) or None (the model is too
        large)."""
        src, dst, steps, pre = self.src, self.dst, self.steps, self.pre
        horizon = int(deadline.max())
        t0 = horizon - width
        arrive = events["start"] + steps[events["link"]]
        keep = (events["start"] < t0) & (arrive <= deadline[events["link"]])
        kept = events[keep]
        avail = np.where(pre, 0, INF).astype(np.int64)
        free = np.zeros(src.size, np.int64)
        np.minimum.at(avail, (kept["chunk"], dst[kept["link"]]), arrive[keep])
        np.maximum.at(free, kept["link"], arrive[keep])
        missing = self.need & (avail > horizon)
        model = build_model((avail, free, t0), horizon, deadline - steps,
                            missing.astype(float), src=src, dst=dst, steps=steps,
                            slack=to_needed(missing, self.dist), pace=pace)
        if model.num_vars > min(self.max_vars, self.work - self.spent):
            return None
        goal = [model.hold_index.get((c, n)) for c, n in np.argwhere(missing).tolist()]
        if any(g is None or g[1] + g[2] - 1 != horizon for g in goal):
            return _SHORT
        require = np.array([pos + size - 1 for pos, _, size in goal], dtype=np.int64)
        # presolve off: measured 2-3x faster on the feasible windows
        _, x, _, _ = solve_model(model, None, None, self.seed + self.solves, None,
                                 require=require, checks=self.checks, presolve="off")
        self.solves += 1
        self.spent += model.num_vars
        if x is None:
            return False
        fixed = list(zip(kept["chunk"].tolist(), kept["link"].tolist(), kept["start"].tolist()))
        return as_events(prune(fixed + extract_sends(model, x), pre, self.post, src, dst,
                               steps))

    def left(self):
        return self.spent < self.work


def _arrays(link_src, link_dst, link_steps):
    return tuple(np.asarray(a, dtype=np.int64) for a in (link_src, link_dst, link_steps))


def _span(events, steps):
    return int((events["start"] + steps[events["link"]]).max()) if events.size else 0


def repair_events(num_nodes, link_src, link_dst, link_steps, pre, post, events, target, *,
                  seed=0, max_vars=None, work=None, checks=None):
    """Lower the makespan of a valid TEN schedule toward ``target`` slots by re-solving its
    last slots with the ILP, one slot at a time.

    Parameters
    ----------
    num_nodes, link_src, link_dst, link_steps, pre, post
        The TEN problem (:func:`~topocoll.synth.ten.greedy.greedy_events`).
    events : structured array (chunk, link, start)
        A valid schedule of it.
    target : int
        Stop at this makespan (a lower bound).
    seed : int
        HiGHS's seed.
    max_vars, work, checks : int, optional
        The work limits (default :data:`MAX_VARS`, :data:`WORK`, :data:`CHECKS`).

    Returns
    -------
    RepairResult
    """
    src, dst, steps = _arrays(link_src, link_dst, link_steps)
    win = _Windows(num_nodes, src, dst, steps, pre, post, seed=seed, max_vars=max_vars,
                   work=work, checks=checks)
    ev = np.asarray(events)
    span = _span(ev, steps)
    done = []
    while span > target and win.left():
        horizon = span - 1
        got = None
        for width in win.widths(horizon):
            got = win.solve(ev, width, np.full(src.size, horizon))
            if got is None or isinstance(got, np.ndarray):
                break
        if not isinstance(got, np.ndarray):
            break
        done.append(int(width))
        ev, span = got, _span(got, steps)
    return RepairResult(ev, span, win.solves, done)


def deadline_events(num_nodes, link_src, link_dst, link_steps, pre, post, events, *, link_cost,
                    time_step, goal, seed=0, max_vars=None, work=None, checks=None):
    """Re-solve the last slots of a valid TEN schedule so that it ends by ``goal`` seconds in
    the link model: each link's sends arrive by slot ``floor(goal * k / cost)`` and need their
    chunk by slot ``floor(start * cost / (k * time_step))``. Keeps the schedule of the least
    :func:`replay_time` (the input's if none is less).

    Parameters are those of :func:`repair_events` but the keyword-only ``link_cost`` (seconds
    a chunk occupies each link), ``time_step`` (seconds a slot) and ``goal`` (seconds) for
    ``target``, and the work limits default to :data:`DEADLINE_MAX_VARS` and
    :data:`DEADLINE_WORK`.

    Returns
    -------
    RepairResult
    """
    src, dst, steps = _arrays(link_src, link_dst, link_steps)
    cost = np.asarray(link_cost, dtype=float)
    large = DEADLINE_MAX_VARS if max_vars is None else max_vars
    win = _Windows(num_nodes, src, dst, steps, pre, post, seed=seed,
                   max_vars=min(MAX_VARS, large),
                   work=DEADLINE_WORK if work is None else work, checks=checks)
    ev = np.asarray(events)
    deadline = link_deadlines(cost, steps, goal)
    pace = np.minimum(cost / (steps * float(time_step)), 1.0)
    best, best_time, done = ev, replay_time(src, dst, cost, pre, ev), []
    opened = False                          # a window was feasible: larger ones may be tried
    for width in win.widths(int(deadline.max())):
        got = win.solve(ev, width, deadline, pace)
        if got is None or (got is False and opened) or not win.left():
            break
        if isinstance(got, np.ndarray):
            opened, win.max_vars = True, large
            t = replay_time(src, dst, cost, pre, got)
            if t < best_time * (1 - 1e-12):
                best, best_time = got, t
                done.append(int(width))
            if best_time <= goal * (1 + 1e-9):
                break
    return RepairResult(best, _span(best, steps), win.solves, done)


def link_deadlines(link_cost, link_steps, goal):
    """Per link, the last slot a send may arrive to end by ``goal`` seconds if the link's
    sends ran back to back: ``floor(goal * k / cost)``."""
    return np.floor(goal / np.asarray(link_cost) * np.asarray(link_steps) + 1e-9).astype(np.int64)


def replay_time(link_src, link_dst, link_cost, pre, events):
    """When a TEN schedule ends if every send starts as soon as its link is free and its
    sender holds the chunk (from an earlier slot's send), for ``link_cost`` seconds: the
    synthesizer's own estimate of the link-model time, to choose between schedules."""
    src, dst = np.asarray(link_src), np.asarray(link_dst)
    have = np.where(pre, 0.0, np.inf)
    free = np.zeros(src.size)
    ev = np.asarray(events)
    ev = ev[np.argsort(ev["start"], kind="stable")]
    cut = np.flatnonzero(np.diff(ev["start"])) + 1
    end_all = 0.0
    for group in np.split(ev, cut):
        c, l = group["chunk"], group["link"]
        end = np.maximum(free[l], have[c, src[l]]) + link_cost[l]
        free[l] = end
        np.minimum.at(have, (c, dst[l]), end)
        end_all = max(end_all, float(end.max()))
    return end_all
