"""The searches of the TEN ILP (:mod:`.ilp`; docs/math.md section 5): increasing horizons with
early termination, and time clustering.

Why increasing horizons and not one makespan-objective model: every horizon model is as small as
it can be, an infeasible horizon is a proof that the makespan is larger, and a partial incumbent
of the horizon being solved at the time limit is exactly what TACOS's early termination
completes. Both searches start from the list schedule of :mod:`.listsched` (the upper bound)
and return a :class:`Found`, which :func:`~topocoll.synth.ten.ilp.ilp_events` reports.
"""

import math
import time
from dataclasses import dataclass

import numpy as np

from ...results import Status
from .ilp_bounds import INF, earliest, to_needed
from .ilp_model import build_model, extract_sends, hint_model, solve_model
from .listsched import complete_events, makespan, orders, prune

__all__ = ["MAX_WINDOWS", "SearchContext", "Found", "horizon_search", "time_clusters"]

#: Guard against a time-clustering loop that stops progressing.
MAX_WINDOWS = 10_000


@dataclass(frozen=True)
class SearchContext:
    """What both searches share: the checked problem (``pre``, ``post``, ``need = post &
    ~pre``, links ``src``, ``dst``, ``steps``, node distances ``dist``, ``links_out`` per node),
    the seeded ``rng`` and HiGHS ``seed``, the limits (``deadline`` on the monotonic clock,
    ``time_limit`` in seconds or None, ``node_limit`` per model or None, ``max_solves``) and
    the caller's choices ``early_stop`` and ``progress``."""

    pre: np.ndarray
    post: np.ndarray
    need: np.ndarray
    src: np.ndarray
    dst: np.ndarray
    steps: np.ndarray
    dist: np.ndarray
    links_out: list
    rng: np.random.Generator
    seed: int
    deadline: float
    early_stop: bool
    progress: object
    time_limit: object
    node_limit: object
    max_solves: int


@dataclass(frozen=True)
class Found:
    """A search's outcome: ``events`` (a list of ``(chunk, link, start)``), the result
    ``status``, the proven ``lower_bound``, the models ``solves``d, where the schedule came
    from (``source``) and a ``note`` for the message."""

    events: list
    status: Status
    lower_bound: int
    solves: int
    source: str
    note: str = ""


def horizon_search(ctx, lb, upper, upper_span):
    """Solve horizons lb, lb+1, ... below the list-scheduling makespan; the first horizon whose
    model delivers every needed chunk is the optimum.

    Each horizon is first a feasibility model (the needed holds at ``T`` fixed to 1, no
    objective): HiGHS settles those 10-50 times faster than the delivery-maximising model
    (4x4 torus allgather at T=4: 0.15 s against 4 s), and infeasibility is the proof that
    raises the lower bound. When the time limit hits, the delivery-maximising model of that
    horizon, warm-started from the list schedule, gets the reserved last tenth of the limit;
    its incumbent is completed along shortest paths (early termination)."""
    pre, post, need, src, dst, steps = ctx.pre, ctx.post, ctx.need, ctx.src, ctx.dst, ctx.steps
    best, best_source, status, solves, note = upper, "list-scheduling", Status.SUCCESS, 0, ""
    target = int(need.sum())
    slack = to_needed(need, ctx.dist)
    total = max(upper_span - lb, 0)
    state = (np.where(pre, 0, INF).astype(np.int64), np.zeros(src.size, np.int64), 0)
    value = need.astype(float)
    reserve = 0.1 * ctx.time_limit if ctx.early_stop and ctx.time_limit else 0.0
    horizon = lb
    while horizon < makespan(best, steps):
        remaining = ctx.deadline - time.monotonic() - reserve
        if solves and (remaining <= 0 or solves >= ctx.max_solves):
            status = Status.LIMIT         # the first horizon is always tried, however briefly
            break
        model = build_model(state, horizon, horizon, value, src=src, dst=dst, steps=steps,
                            slack=slack)
        goal = [model.hold_index.get((c, n)) for c, n in np.argwhere(need).tolist()]
        if any(g is None or g[1] + g[2] - 1 != horizon for g in goal):
            lb = horizon = horizon + 1    # some needed pair cannot be reached by this horizon
            continue
        require = np.array([pos + size - 1 for pos, _, size in goal], dtype=np.int64)
        code, x, _, _ = solve_model(model, None if math.isinf(remaining) else remaining,
                                    ctx.node_limit, ctx.seed + horizon, None, require=require)
        solves += 1
        if ctx.progress is not None:
            ctx.progress(min(solves, total), total)
        if x is not None:
            best, best_source = prune(extract_sends(model, x), pre, post, src, dst, steps), "ilp"
            break
        if code == Status.INFEASIBLE:     # proven: the makespan exceeds horizon
            lb = horizon = horizon + 1
            continue
        status = Status.LIMIT if code == Status.LIMIT else Status.FAILED
        if ctx.early_stop:
            hint = hint_model(model, upper, steps, src, dst)
            left = ctx.deadline - time.monotonic()
            code, x, _, obj = solve_model(model, None if math.isinf(left) else left,
                                          ctx.node_limit, ctx.seed + horizon, hint)
            solves += 1
            if x is not None:
                partial = extract_sends(model, x)
                order = orders(earliest(np.where(pre, 0, INF), src, dst, steps), need,
                               ctx.rng, 1)[0]
                done = prune(complete_events(partial, pre, post, src, dst, steps,
                                             ctx.links_out, order), pre, post, src, dst, steps)
                if makespan(done, steps) <= makespan(best, steps):
                    best, best_source = done, "ilp+shortest-paths"
                note = f", stopped at horizon {horizon} with {obj:.0f}/{target} delivered"
        break
    if ctx.progress is not None:
        ctx.progress(total, total)
    return Found(best, status, lb, solves, best_source, note)


def _window_values(missing, avail, dist, dst):
    """``(value, useful)`` of a window's model: the progress value of holding chunk c at node
    n, deliveries first, then how much closer n is than the current holders to every node
    still missing c; and which (chunk, link) sends may help."""
    num_nodes = missing.shape[1]
    near = np.where(avail[:, :, None] < INF, dist[None, :, :], INF).min(axis=1)
    gain = np.maximum(near[:, None, :] - dist[None, :, :], 0)
    gain = np.where(missing[:, None, :], np.minimum(gain, num_nodes), 0).sum(axis=2)
    value = missing * float(num_nodes * num_nodes + 1) + gain / float(num_nodes + 1)
    held = avail < INF
    useful = (missing[:, dst] | (gain[:, dst] > 0)) & ~held[:, dst]
    return value, useful


def time_clusters(ctx, window, lb, upper, upper_span):
    """Solve windows of ``window`` start slots in sequence from the previous end state."""
    pre, post, need, src, dst, steps, dist = (ctx.pre, ctx.post, ctx.need, ctx.src, ctx.dst,
                                              ctx.steps, ctx.dist)
    avail = np.where(pre, 0, INF).astype(np.int64)
    free = np.zeros(src.size, np.int64)
    events, solves, status, source = [], 0, Status.NOT_PROVEN, "windows"
    total = -(-upper_span // window)
    kmax = int(steps.max())
    t0 = 0
    while True:
        missing = need & (avail >= INF)
        if not missing.any():
            break
        if solves and (time.monotonic() >= ctx.deadline or solves >= ctx.max_solves):
            status = Status.LIMIT
            break
        value, useful = _window_values(missing, avail, dist, dst)
        horizon = t0 + window - 1 + kmax
        in_flight = ((avail > t0) & (avail < INF)).any() or (free > t0).any()
        model = build_model((avail, free, t0), horizon, t0 + window - 1, value, src=src,
                            dst=dst, steps=steps, slack=np.zeros_like(avail), useful=useful,
                            early=1.0 / (window + kmax + 1))
        left = ctx.deadline - time.monotonic()
        code, x, _, _ = solve_model(model, None if math.isinf(left) else left, ctx.node_limit,
                                    ctx.seed + t0, None)
        solves += 1
        if ctx.progress is not None:
            ctx.progress(min(solves, total), max(total, solves))
        new = extract_sends(model, x) if x is not None else []
        for c, l, s in new:
            a = s + int(steps[l])
            avail[c, dst[l]] = min(avail[c, dst[l]], a)
            free[l] = max(free[l], a)
        events += new
        if code not in (Status.SUCCESS, Status.INFEASIBLE):
            status = Status.LIMIT if code == Status.LIMIT else Status.FAILED
            break
        if not new and not in_flight:
            break             # the state is unchanged, so every later window would be alike
        t0 += window
    if (need & (avail >= INF)).any():
        if ctx.early_stop or not events:
            order = orders(earliest(np.where(pre, 0, INF), src, dst, steps), need,
                           ctx.rng, 1)[0]
            events = complete_events(events, pre, post, src, dst, steps, ctx.links_out,
                                     order)
            source = "windows+shortest-paths"
        else:
            events, source = upper, "list-scheduling"
    events = prune(events, pre, post, src, dst, steps)
    if ctx.progress is not None:
        ctx.progress(max(total, solves), max(total, solves))
    return Found(events, status, lb, solves, source)
