"""ILP synthesis of chunk schedules on a time-expanded network (docs/math.md section 5,
TACOS-ILP).

The network is given as ``L`` directed links; link ``l`` carries one chunk at a time and a chunk
sent on it at slot ``t`` arrives at ``t + link_steps[l]``. A collective is a precondition
``pre[c, n]`` (node ``n`` holds chunk ``c`` at slot 0) and a postcondition ``post[c, n]``.
:func:`ilp_events` returns a schedule of sends ``(chunk, link, start)`` that meets the
postcondition with the smallest makespan (the last arrival slot) it can prove or find.

Formulation (one model per horizon ``T``, solved with HiGHS through ``highspy``):

* binary ``sent[c, l, t]`` (a send of ``c`` on ``l`` starting at ``t``) and ``hold[c, n, t]``
  in ``[0, 1]``. ``hold`` needs no integrality: ``hold[c, n, t] <= hold[c, n, t-1] + arrivals``
  caps it by an integer count, and ``sent <= hold[c, src, t]`` then only lets a binary send
  leave a node whose ``hold`` is 1, so integral sends force exact holds;
* at most one chunk in flight per link: the sends of ``l`` starting in ``(t - k_l, t]`` sum to
  at most 1;
* TACOS's objective, "maximise chunks delivered by t_f" (the needed ``(c, n)`` held at
  ``T``), is used where partial progress matters (early termination, time clustering). To
  decide whether ``T`` is feasible the needed holds at ``T`` are instead fixed to 1 with no
  objective: HiGHS answers that feasibility question 10-50 times faster, and an infeasible
  answer proves the makespan exceeds ``T``.

Variables are pruned exactly: ``sent[c, l, t]`` exists only if the sender can hold ``c`` at ``t``
(``t >= dist(holders of c, src)``), the receiver does not hold ``c`` already, and the arrival can
still reach some node needing ``c`` by ``T`` (``t + k_l + dist(dst, m) <= T``).

Why increasing horizons and not one makespan-objective model: every horizon model is as small as it
can be (a makespan objective needs the horizon of the upper bound and a makespan variable tied to
every send), an infeasible horizon is a proof that the makespan is larger (the reported
``lower_bound``), and a partial incumbent of the horizon being solved at the time limit is exactly
what TACOS's early termination completes. The search starts at a combinatorial lower bound
(distances and in-link capacities) and stops below an upper bound from earliest-arrival list
scheduling (several seeded routing orders), so it solves at most ``upper - lower`` models; often
none.

Early termination: when the time limit hits, the delivery-maximising model of the current
horizon (warm-started from the list schedule) runs in the last tenth of the limit, kept in
reserve; its incumbent's sends are kept and every missing delivery is routed along an
earliest-arrival path that respects link occupancy.
Time clustering (``window=w``): windows of ``w`` slots are solved in sequence, each maximising
weighted progress (deliveries first, then moving chunks closer to nodes needing them, earlier
is better) from the previous window's end state (holdings, chunks in flight, busy links).

>>> import numpy as np
>>> n = 4                                    # unidirectional ring 0 -> 1 -> 2 -> 3 -> 0
>>> src = np.arange(n); dst = (src + 1) % n; steps = np.ones(n, dtype=np.int64)
>>> pre = np.eye(n, dtype=bool); post = np.ones((n, n), dtype=bool)   # allgather
>>> res = ilp_events(n, src, dst, steps, pre, post)
>>> res.makespan, res.status_name, res.optimal, len(res.events)
(3, 'SUCCESS', True, 12)
>>> res.events[:2].tolist()
[(0, 0, 0), (1, 1, 0)]
"""

import bisect
import math
import heapq
import operator
import time
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from ...errors import (InputTypeError, InvalidScheduleError, NotStronglyConnectedError, SpecError,
                      TopologyError)
from ...highs import solver as new_solver, status_of
from ...results import Result, Status
from .greedy import EVENT_DTYPE  # one TEN send record, shared with the greedy

__all__ = ["ilp_events", "IlpResult", "EVENT_DTYPE", "STATUS_MESSAGES", "lower_bound",
           "shortest_path_events"]


#: What each result status (:mod:`topocoll.results`) means for the ILP.
STATUS_MESSAGES = {
    Status.SUCCESS: "optimal: makespan proven minimal",
    Status.LIMIT: "a time, node or model limit was reached: best schedule found returned, "
                  "minimality not proven",
    Status.NOT_PROVEN: "feasible schedule from time clustering, minimality not proven",
    Status.FAILED: "solver failed: best schedule found so far returned, minimality not proven",
}

_INF = 1 << 40          # "never": large, but far from int64 overflow when slots are added
_TRIALS = 8             # routing orders tried by the list-scheduling upper bound
_MAX_WINDOWS = 10_000   # guard against a time-clustering loop that stops progressing


@dataclass
class IlpResult(Result):
    """Outcome of :func:`ilp_events`: a :class:`~topocoll.results.Result` whose ``status`` is
    0 (``SUCCESS``: the makespan is proven minimal), 1 (``LIMIT``: a time, node or model limit
    stopped the search), 2 (``NOT_PROVEN``: time clustering) or 5 (``FAILED``: HiGHS failed);
    in every case ``events`` is a valid schedule (:data:`STATUS_MESSAGES`).

    Attributes
    ----------
    events : numpy.ndarray
        Structured array (:data:`EVENT_DTYPE`: ``chunk``, ``link``, ``start``) sorted by start.
    makespan : int
        Largest arrival slot (``start + link_steps[link]``); 0 when ``pre`` already meets
        ``post``.
    optimal : bool
        The makespan is proven minimal (``makespan == lower_bound``).
    lower_bound : int
        A proven lower bound on the makespan of any valid schedule.
    solves : int
        Number of ILP models solved.
    source : str
        Where the schedule came from: ``"pre"``, ``"ilp"``, ``"ilp+shortest-paths"``,
        ``"windows"``, ``"windows+shortest-paths"`` or ``"list-scheduling"``.
    """

    events: np.ndarray
    makespan: int
    optimal: bool
    lower_bound: int
    solves: int = 0
    source: str = field(default="ilp")


# --------------------------------------------------------------------------------- validation

def _int_array(name, value):
    arr = np.asarray(value)
    if arr.ndim != 1:
        raise SpecError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise InputTypeError(f"{name} must hold integers, got dtype {arr.dtype}")
    return arr.astype(np.int64)


def _bool_matrix(name, value, num_nodes):
    arr = np.asarray(value)
    if arr.dtype != np.bool_:
        raise InputTypeError(f"{name} must be a bool array, got dtype {arr.dtype}")
    if arr.ndim != 2 or arr.shape[1] != num_nodes:
        raise SpecError(f"{name} must have shape (num_chunks, {num_nodes}), got {arr.shape}")
    return arr


def _validate(num_nodes, link_src, link_dst, link_steps, pre, post, time_limit, window):
    num_nodes = _count("num_nodes", num_nodes, 1)
    src = _int_array("link_src", link_src)
    dst = _int_array("link_dst", link_dst)
    steps = _int_array("link_steps", link_steps)
    if not src.size == dst.size == steps.size:
        raise SpecError(f"link_src, link_dst and link_steps must have one length, got "
                        f"{src.size}, {dst.size}, {steps.size}")
    for name, arr in (("link_src", src), ("link_dst", dst)):
        bad = np.flatnonzero((arr < 0) | (arr >= num_nodes))
        if bad.size:
            raise TopologyError(f"{name}[{bad[0]}] = {arr[bad[0]]} is not a node in "
                                f"0..{num_nodes - 1}")
    loops = np.flatnonzero(src == dst)
    if loops.size:
        raise TopologyError(f"link {loops[0]} is a self-loop at node {src[loops[0]]}")
    short = np.flatnonzero(steps < 1)
    if short.size:
        raise TopologyError(f"link_steps must be >= 1, link {short[0]} has {steps[short[0]]}")
    pre = _bool_matrix("pre", pre, num_nodes)
    post = _bool_matrix("post", post, num_nodes)
    if pre.shape != post.shape:
        raise SpecError(f"pre and post must have one shape, got {pre.shape} and {post.shape}")
    orphan = np.flatnonzero(~pre.any(axis=1))
    if orphan.size:
        raise SpecError(f"every chunk must be held by some node at slot 0; chunk {orphan[0]} "
                        f"is held by none")
    if time_limit is not None:
        if isinstance(time_limit, bool) or not isinstance(time_limit, (int, float, np.number)):
            raise InputTypeError(f"time_limit must be a number of seconds, got {time_limit!r}")
        if not time_limit > 0:
            raise SpecError(f"time_limit must be > 0 seconds, got {time_limit}")
        time_limit = float(time_limit)
    if window is not None:
        try:
            window = operator.index(window)
        except TypeError:
            raise InputTypeError(f"window must be an integer number of slots, got "
                                 f"{window!r}") from None
        if window < 1:
            raise SpecError(f"window must be >= 1 slot, got {window}")
    return num_nodes, src, dst, steps, pre, post, time_limit, window


def _optional_count(name, value, least):
    """``value`` as an int >= ``least``, or None."""
    return None if value is None else _count(name, value, least)


def _count(name, value, least):
    """``value`` as an int >= ``least`` (a SpecError or InputTypeError naming ``name``)."""
    if isinstance(value, bool):
        raise InputTypeError(f"{name} must be an integer, got {value!r}")
    try:
        value = operator.index(value)
    except TypeError:
        raise InputTypeError(f"{name} must be an integer, got {value!r}") from None
    if value < least:
        raise SpecError(f"{name} must be >= {least}, got {value}")
    return value


# ------------------------------------------------------------------------------ combinatorics

def _earliest(avail, src, dst, steps, free=None):
    """Earliest slot each (row, node) can be held, starting from ``avail`` (``_INF`` = not
    held) with sends on link ``l`` starting no earlier than ``free[l]``: Bellman-Ford over all
    rows at once (links are FIFO, so waiting never helps and the fixed point is exact)."""
    e = avail.astype(np.int64).copy()
    if src.size == 0 or e.size == 0:
        return e
    floor = np.zeros(src.size, dtype=np.int64) if free is None else free
    for _ in range(avail.shape[1]):
        held = e[:, src]
        arrive = np.maximum(held, floor) + steps
        arrive[held >= _INF] = _INF
        new = e.copy()
        np.minimum.at(new.T, dst, arrive.T)
        if np.array_equal(new, e):
            break
        e = new
    return e


def _distances(num_nodes, src, dst, steps):
    """Node-to-node distances in slots (``_INF`` if unreachable)."""
    start = np.full((num_nodes, num_nodes), _INF, dtype=np.int64)
    np.fill_diagonal(start, 0)
    return _earliest(start, src, dst, steps)


def _to_needed(need, dist):
    """``g[c, n]`` = slots from ``n`` to the nearest node needing chunk ``c``."""
    if need.size == 0:
        return np.zeros(need.shape, dtype=np.int64)
    return np.where(need[:, None, :], dist[None, :, :], _INF).min(axis=2)


def _check_reachable(earliest, need):
    bad = np.argwhere(need & (earliest >= _INF))
    if bad.size:
        c, n = (int(v) for v in bad[0])
        raise NotStronglyConnectedError(
            f"chunk {c} can never reach node {n}: no path from its holders", pair=(c, n))


def lower_bound(num_nodes, link_src, link_dst, link_steps, pre, post):
    """A proven lower bound on the makespan, from distances and in-link capacities.

    The largest, over needed ``(c, n)``, of the distance in slots from the holders of ``c`` to
    ``n``; and for every node ``n`` the first horizon ``T`` at which its in-links can deliver
    all chunks it misses: link ``l`` delivers at most ``(T - s_l) // k_l`` of them, ``s_l`` the
    earliest slot its sender can hold one of them.

    >>> import numpy as np
    >>> src, dst = np.array([0, 1, 2]), np.array([1, 2, 0])       # ring of 3
    >>> lower_bound(3, src, dst, np.ones(3, int), np.eye(3, dtype=bool), np.ones((3, 3), bool))
    2
    """
    num_nodes, src, dst, steps, pre, post, _, _ = _validate(
        num_nodes, link_src, link_dst, link_steps, pre, post, 1.0, None)
    need = post & ~pre
    earliest = _earliest(np.where(pre, 0, _INF), src, dst, steps)
    _check_reachable(earliest, need)
    return _lower_bound(earliest, need, src, dst, steps)


def _lower_bound(earliest, need, src, dst, steps):
    if not need.any():
        return 0
    bound = int(earliest[need].max())
    for n in np.flatnonzero(need.any(axis=0)):
        chunks = np.flatnonzero(need[:, n])
        links = np.flatnonzero(dst == n)
        first = earliest[chunks][:, src[links]].min(axis=0)
        k = steps[links]
        t = bound
        while np.maximum(0, (t - first) // k).sum() < chunks.size:
            t += 1
        bound = t
    return bound


# ----------------------------------------------------------------- list scheduling, pruning

class _Occupancy:
    """Start slots already booked on every link (each booking lasts ``steps[l]`` slots)."""

    def __init__(self, steps, events=()):
        self.steps = steps
        self.starts = [[] for _ in range(steps.size)]
        for _, l, s in events:
            bisect.insort(self.starts[l], s)

    def earliest(self, l, t):
        """First slot ``>= t`` at which ``l`` is free for ``steps[l]`` slots."""
        k = int(self.steps[l])
        booked = self.starts[l]
        i = max(bisect.bisect_right(booked, t - k), 0)
        s = t
        while i < len(booked) and booked[i] < s + k:
            s = max(s, booked[i] + k)
            i += 1
        return s

    def book(self, l, s):
        bisect.insort(self.starts[l], s)


def _complete(events, pre, post, src, dst, steps, out_links, order):
    """Add sends so that ``post`` holds: every missing ``(c, m)`` in ``order`` is routed along
    an earliest-arrival path (time-dependent Dijkstra over the free link slots) from the nodes
    that hold ``c`` by then. ``events`` is a list of ``(chunk, link, start)``, extended."""
    occ = _Occupancy(steps, events)
    have = np.where(pre, 0, _INF).astype(np.int64)
    for c, l, s in events:
        have[c, dst[l]] = min(have[c, dst[l]], s + steps[l])
    for c, m in order:
        if have[c, m] < _INF:
            continue
        label = have[c].tolist()
        pred = {}
        heap = [(t, n) for n, t in enumerate(label) if t < _INF]
        heapq.heapify(heap)
        while heap:
            t, u = heapq.heappop(heap)
            if t > label[u]:
                continue
            if u == m:
                break
            for l in out_links[u]:
                s = occ.earliest(l, t)
                a = s + int(steps[l])
                v = int(dst[l])
                if a < label[v]:
                    label[v] = a
                    pred[v] = (l, s)
                    heapq.heappush(heap, (a, v))
        v = m
        while v in pred:
            l, s = pred[v]
            events.append((int(c), int(l), int(s)))
            occ.book(l, s)
            have[c, v] = min(have[c, v], s + int(steps[l]))
            v = int(src[l])
    return events


def _prune(events, pre, post, src, dst, steps):
    """Keep only sends some needed delivery depends on: the first arrival of each (chunk,
    node) and, backwards, the arrivals its sends rely on. Returns a list of tuples."""
    first = {}
    for c, l, s in events:
        n = int(dst[l])
        if pre[c, n]:
            continue
        a = s + int(steps[l])
        if (c, n) not in first or a < first[(c, n)][0]:
            first[(c, n)] = (a, (c, l, s))
    needed = post & ~pre
    kept = []
    for (c, n), (a, ev) in sorted(first.items(), key=lambda kv: -kv[1][0]):
        if needed[c, n]:
            kept.append(ev)
            u = int(src[ev[1]])
            if not pre[c, u]:
                needed[c, u] = True
    return kept


def _as_events(events):
    arr = np.array(sorted((int(s), int(l), int(c)) for c, l, s in events), dtype=np.int64)
    out = np.zeros(len(events), dtype=EVENT_DTYPE)
    if len(events):
        out["start"], out["link"], out["chunk"] = arr[:, 0], arr[:, 1], arr[:, 2]
    return out


def _makespan(events, steps):
    return max((s + int(steps[l]) for _, l, s in events), default=0)


def _orders(earliest, need, rng, trials):
    """Routing orders for list scheduling: farthest deliveries first (the critical ones), then
    seeded random tie-breaks and fully random orders."""
    pairs = np.argwhere(need)
    if pairs.size == 0:
        return [[]]
    far = earliest[need]
    out = [pairs[np.lexsort((pairs[:, 0], -far))].tolist()]
    for i in range(1, trials):
        key = rng.random(len(pairs))
        idx = np.lexsort((key, -far)) if i % 2 else rng.permutation(len(pairs))
        out.append(pairs[idx].tolist())
    return out


def shortest_path_events(num_nodes, link_src, link_dst, link_steps, pre, post, *, events=None,
                         seed=0, trials=_TRIALS):
    """A valid schedule by earliest-arrival list scheduling, no ILP: the upper bound that
    :func:`ilp_events` starts from, and its early-termination completion when ``events`` (a
    valid partial schedule, :data:`EVENT_DTYPE`) is given. Returns ``(events, makespan)``;
    sends of the partial schedule that no needed delivery depends on are dropped.

    >>> import numpy as np
    >>> src, dst = np.array([0, 1, 1, 2]), np.array([1, 0, 2, 1])   # path 0 - 1 - 2
    >>> pre, post = np.eye(3, dtype=bool), np.ones((3, 3), bool)
    >>> ev, span = shortest_path_events(3, src, dst, np.ones(4, int), pre, post)
    >>> span, len(ev)
    (2, 6)
    >>> ev2, span2 = shortest_path_events(3, src, dst, np.ones(4, int), pre, post,
    ...                                   events=ev[:3])
    >>> span2, len(ev2)
    (2, 6)
    """
    num_nodes, src, dst, steps, pre, post, _, _ = _validate(
        num_nodes, link_src, link_dst, link_steps, pre, post, 1.0, None)
    trials = _count("trials", trials, 1)
    need = post & ~pre
    earliest = _earliest(np.where(pre, 0, _INF), src, dst, steps)
    _check_reachable(earliest, need)
    start = [] if events is None else _check_partial(events, pre, src, dst, steps)
    out_links = _out_links(num_nodes, src)
    best, best_span = None, _INF
    for order in _orders(earliest, need, np.random.default_rng(seed), trials):
        ev = _prune(_complete(list(start), pre, post, src, dst, steps, out_links, order),
                    pre, post, src, dst, steps)
        span = _makespan(ev, steps)
        if span < best_span:
            best, best_span = ev, span
    return _as_events(best), best_span


def _check_partial(events, pre, src, dst, steps):
    """A partial schedule as a list of tuples, after checking it is valid so far."""
    arr = np.asarray(events)
    if arr.dtype.names is None or not {"chunk", "link", "start"} <= set(arr.dtype.names):
        raise InputTypeError("events must be a structured array with fields chunk, link, start")
    out = sorted(zip(arr["start"].tolist(), arr["link"].tolist(), arr["chunk"].tolist()))
    have = np.where(pre, 0, _INF)
    busy = {}
    for s, l, c in out:
        if not (0 <= c < pre.shape[0] and 0 <= l < src.size and s >= 0):
            raise InvalidScheduleError(f"event (chunk {c}, link {l}, start {s}) is out of range")
        if have[c, src[l]] > s:
            raise InvalidScheduleError(f"event (chunk {c}, link {l}, start {s}): node "
                                       f"{src[l]} does not hold chunk {c} at slot {s}")
        if busy.get(l, -_INF) > s:
            raise InvalidScheduleError(f"event (chunk {c}, link {l}, start {s}): link {l} is "
                                       f"busy until slot {busy[l]}")
        busy[l] = s + int(steps[l])
        have[c, dst[l]] = min(have[c, dst[l]], s + int(steps[l]))
    return [(c, l, s) for s, l, c in out]


def _out_links(num_nodes, src):
    out = [[] for _ in range(num_nodes)]
    for l, u in enumerate(src.tolist()):
        out[u].append(l)
    return out


def _list_schedule(pre, post, need, earliest, src, dst, steps, out_links, rng, trials):
    best, best_span = None, _INF
    for order in _orders(earliest, need, rng, trials):
        ev = _prune(_complete([], pre, post, src, dst, steps, out_links, order),
                    pre, post, src, dst, steps)
        span = _makespan(ev, steps)
        if span < best_span:
            best, best_span = ev, span
    return best, best_span


# ----------------------------------------------------------------------------- the ILP model

@dataclass
class _Model:
    xc: np.ndarray          # per send variable: chunk, link, start
    xl: np.ndarray
    xs: np.ndarray
    num_vars: int
    matrix: sp.csc_matrix
    row_upper: np.ndarray
    cost: np.ndarray        # maximised
    hold_index: dict        # (c, n) -> (first variable, first slot, number of slots)
    avail: np.ndarray


def _build(state, horizon, send_end, value, src, dst, steps, slack, useful=None, early=0.0,
           pace=None):
    """One window/horizon model. ``state`` = (avail[c, n] slot from which ``n`` holds ``c``,
    free[l] first slot link ``l`` may start a send, t0 first start slot). Sends start in
    ``[t0, send_end]`` (``send_end``: a slot, or one per link) and arrive by ``horizon``;
    ``value[c, n]`` is the objective weight of
    holding ``c`` at ``n`` at the horizon. A send to ``n`` must arrive ``slack[c, n]`` slots
    before the horizon (to be of any use) and, if given, be allowed by ``useful[c, l]``.
    ``early`` adds ``early * value[c, n]`` for every slot ``c`` is held at ``n`` (sooner is
    better); 0 keeps the objective an integer count, which HiGHS proves optimal faster.
    ``pace[l]`` (at most 1): a send on ``l`` starting at slot ``s`` needs its chunk at the
    sender by slot ``floor(s * pace[l])``, not ``s`` (a link whose slots round its chunk time
    up runs ahead of them in the link model); the model only gets stricter."""
    avail, free, t0 = state
    num_chunks = avail.shape[0]
    earliest = _earliest(avail, src, dst, steps, free)
    k = steps[None, :]
    lo = np.maximum(np.maximum(earliest[:, src], free[None, :]), t0)
    hi = np.minimum(np.minimum(horizon - k, avail[:, dst] - k - 1), send_end)
    hi = np.minimum(hi, horizon - k - slack[:, dst])
    count = np.maximum(hi - lo + 1, 0)
    count[earliest[:, src] >= _INF] = 0
    if useful is not None:
        count[~useful] = 0
    cl = np.flatnonzero(count.ravel())
    reps = count.ravel()[cl]
    xc = np.repeat(cl // src.size, reps)
    xl = np.repeat(cl % src.size, reps)
    offs = np.arange(reps.sum()) - np.repeat(np.cumsum(reps) - reps, reps)
    xs = lo.ravel()[np.repeat(cl, reps)] + offs
    # a send whose sender never gets the chunk within the model is dropped (fixed point)
    while True:
        arr = xs + steps[xl]
        key = xc * avail.shape[1] + dst[xl]
        first = np.full(num_chunks * avail.shape[1], _INF, dtype=np.int64)
        np.minimum.at(first, key, arr)
        first = first.reshape(avail.shape)
        ready = xs if pace is None else np.floor(xs * pace[xl] + 1e-9).astype(np.int64)
        sender_ok = (avail[xc, src[xl]] <= ready) | (first[xc, src[xl]] <= ready)
        if sender_ok.all():
            break
        xc, xl, xs = xc[sender_ok], xl[sender_ok], xs[sender_ok]
    nx = xc.size
    # hold variables for (c, n) pairs some send reaches: slots first..min(horizon, avail - 1)
    hold_index = {}
    hc, hn, ht = [], [], []
    pos = nx
    for c, n in np.argwhere(first < _INF).tolist():
        last = min(horizon, int(avail[c, n]) - 1)
        f = int(first[c, n])
        hold_index[(c, n)] = (pos, f, last - f + 1)
        ts = np.arange(f, last + 1)
        hc.append(np.full(ts.size, c)), hn.append(np.full(ts.size, n)), ht.append(ts)
        pos += ts.size
    nh = pos - nx
    hc = np.concatenate(hc) if hc else np.zeros(0, np.int64)
    hn = np.concatenate(hn) if hn else np.zeros(0, np.int64)
    ht = np.concatenate(ht) if ht else np.zeros(0, np.int64)
    hvar = nx + np.arange(nh)
    rows, cols, vals = [], [], []
    nrow = 0
    # (a) hold[c,n,t] - hold[c,n,t-1] - arrivals at t <= 0
    rows.append(np.arange(nh)), cols.append(hvar), vals.append(np.ones(nh))
    has_prev = np.r_[False, (hc[1:] == hc[:-1]) & (hn[1:] == hn[:-1])] if nh else \
        np.zeros(0, bool)
    rows.append(np.flatnonzero(has_prev)), cols.append(hvar[has_prev] - 1)
    vals.append(-np.ones(has_prev.sum()))
    arrive_row = np.array([hold_index[(c, n)][0] - nx + a - hold_index[(c, n)][1]
                           for c, n, a in zip(xc.tolist(), dst[xl].tolist(),
                                              (xs + steps[xl]).tolist())], dtype=np.int64)
    rows.append(arrive_row), cols.append(np.arange(nx)), vals.append(-np.ones(nx))
    nrow = nh
    # (b) sent[c,l,t] - hold[c,src,t] <= 0 when the sender does not hold c from the start
    dep = np.flatnonzero(avail[xc, src[xl]] > ready)
    hold_col = np.array([hold_index[(c, u)][0] + s - hold_index[(c, u)][1]
                         for c, u, s in zip(xc[dep].tolist(), src[xl[dep]].tolist(),
                                            ready[dep].tolist())], dtype=np.int64)
    r = nrow + np.arange(dep.size)
    rows += [r, r]
    cols += [dep, hold_col]
    vals += [np.ones(dep.size), -np.ones(dep.size)]
    nrow += dep.size
    # (c) one chunk per link in flight: rows (l, t) over the slots each send occupies
    k_x = steps[xl]
    rep = np.repeat(np.arange(nx), k_x)
    slot = xs[rep] + (np.arange(k_x.sum()) - np.repeat(np.cumsum(k_x) - k_x, k_x))
    key = xl[rep] * (horizon + 2) + slot
    uniq, inv, cnt = np.unique(key, return_inverse=True, return_counts=True)
    busy = cnt[inv] >= 2       # a slot one send alone can use needs no row
    _, rid = np.unique(inv[busy], return_inverse=True)
    rows.append(nrow + rid), cols.append(rep[busy]), vals.append(np.ones(busy.sum()))
    nrow += int(rid.max()) + 1 if rid.size else 0
    matrix = sp.csc_matrix((np.concatenate(vals), (np.concatenate(rows),
                                                   np.concatenate(cols))),
                           shape=(nrow, nx + nh))
    row_upper = np.zeros(nrow)
    row_upper[nh + dep.size:] = 1.0
    cost = np.zeros(nx + nh)
    at_end = (ht == horizon) if nh else np.zeros(0, bool)
    cost[nx:][at_end] = value[hc[at_end], hn[at_end]]
    if early:
        cost[nx:] += early * value[hc, hn]
    return _Model(xc, xl, xs, nx + nh, matrix, row_upper, cost, hold_index, avail)


def _solve(model, time_limit, node_limit, seed, hint, require=None, checks=None, **options):
    """Maximise ``model.cost`` with HiGHS, the columns ``require`` fixed to 1; returns (result
    status, x or None, dual bound, objective). A proven infeasible model gives
    (``INFEASIBLE``, None); ``time_limit`` None means none. ``checks``: stop at the
    ``checks``-th time HiGHS's MIP search asks whether to stop (a count of the work done
    that, unlike the clock, is the same on every machine); ``options``: more HiGHS options."""
    if model.num_vars == 0:                   # nothing can move: HiGHS calls that an error
        return Status.SUCCESS, np.zeros(0), 0.0, 0.0
    import highspy
    limits = {} if node_limit is None else {"mip_max_nodes": int(node_limit)}
    h = new_solver(time_limit=None if time_limit is None else max(float(time_limit), 1e-3),
                   seed=seed, **limits, **options)
    if checks is not None:
        asked = [0]

        def interrupt(event):
            asked[0] += 1
            if asked[0] >= checks:
                event.interrupt()

        h.cbMipInterrupt.subscribe(interrupt)
    lp = highspy.HighsLp()
    lp.num_col_ = model.num_vars
    lp.num_row_ = model.matrix.shape[0]
    lower = np.zeros(model.num_vars)
    if require is not None:
        lower[require] = 1.0
        lp.col_cost_ = np.zeros(model.num_vars)     # a pure feasibility question
    else:
        lp.col_cost_ = model.cost
    lp.col_lower_ = lower
    lp.col_upper_ = np.ones(model.num_vars)
    lp.row_lower_ = np.full(lp.num_row_, -highspy.kHighsInf)
    lp.row_upper_ = model.row_upper
    lp.sense_ = highspy.ObjSense.kMaximize
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_ = model.matrix.indptr
    lp.a_matrix_.index_ = model.matrix.indices
    lp.a_matrix_.value_ = model.matrix.data
    nx = model.xc.size
    lp.integrality_ = ([highspy.HighsVarType.kInteger] * nx
                       + [highspy.HighsVarType.kContinuous] * (model.num_vars - nx))
    h.passModel(lp)
    if hint is not None:
        sol = highspy.HighsSolution()
        sol.col_value = hint.tolist()
        h.setSolution(sol)
    h.run()
    status = status_of(h.getModelStatus())
    info = h.getInfo()
    x = None
    if info.primal_solution_status == 2:         # kSolutionStatusFeasible
        x = np.asarray(h.getSolution().col_value)
    return status, x, float(info.mip_dual_bound), float(info.objective_function_value)


def _hint(model, events, steps, src, dst):
    """A feasible start for ``model`` from a schedule: its sends that are variables of the
    model and whose senders hold the chunk in time (within the model), with implied holds."""
    index = {key: i for i, key in enumerate(zip(model.xc.tolist(), model.xl.tolist(),
                                                model.xs.tolist()))}
    x = np.zeros(model.num_vars)
    got = {}
    for c, l, s in sorted(events, key=lambda e: e[2]):
        i = index.get((c, l, s))
        u, v = int(src[l]), int(dst[l])
        if i is None or (model.avail[c, u] > s and got.get((c, u), _INF) > s):
            continue
        x[i] = 1.0
        got[(c, v)] = min(got.get((c, v), _INF), s + int(steps[l]))
    for (c, n), (pos, f, size) in model.hold_index.items():
        a = got.get((c, n), _INF)
        if a < _INF:
            x[pos + a - f:pos + size] = 1.0
    return x


# ------------------------------------------------------------------------------ entry point

def ilp_events(num_nodes, link_src, link_dst, link_steps, pre, post, *, time_limit=None,
               node_limit=None, max_solves=None, window=None, early_stop=True, seed=0,
               progress=None):
    """Schedule chunk sends on a time-expanded network with an ILP (TACOS-ILP).

    Parameters
    ----------
    num_nodes : int
        Number of nodes.
    link_src, link_dst : array_like of int, shape (L,)
        Directed links (parallel links allowed, no self-loops).
    link_steps : array_like of int, shape (L,)
        Slots (>= 1) a chunk occupies each link; a send starting at ``t`` arrives at
        ``t + link_steps[l]``.
    pre, post : numpy.ndarray of bool, shape (num_chunks, num_nodes)
        Who holds chunk ``c`` at slot 0 / must hold it at the end.
    time_limit : float, optional
        Wall-clock seconds for all ILP solves together (the polynomial list scheduling that
        gives the upper bound is not counted). The first model is always tried. Default: none.
    node_limit : int, optional
        Branch-and-bound nodes per ILP model (HiGHS ``mip_max_nodes``): a limit that does not
        depend on the machine's speed.
    max_solves : int, optional
        ILP models at most (horizons, or windows with ``window``); reaching it stops the search
        with status 1, whatever the machine's speed.
    window : int, optional
        Time clustering: solve windows of this many slots in sequence.
    early_stop : bool
        At a limit, complete the best incumbent along shortest paths; if False, return the best
        *complete* schedule found so far instead.
    seed : int
        Seeds the routing orders of the list-scheduling bound and HiGHS.
    progress : callable, optional
        ``progress(done, total)`` after every solved model.

    Returns
    -------
    IlpResult

    Raises
    ------
    NotStronglyConnectedError
        A needed ``(chunk, node)`` cannot be reached from the chunk's holders (``.pair``).
    TopologyError, SpecError, InputTypeError
        Bad links, shapes or types.

    Examples
    --------
    Broadcast from node 0 over a bidirectional path 0 - 1 - 2 whose links take 2 slots:

    >>> import numpy as np
    >>> src, dst = np.array([0, 1, 1, 2]), np.array([1, 0, 2, 1])
    >>> pre = np.array([[True, False, False]]); post = np.ones((1, 3), dtype=bool)
    >>> res = ilp_events(3, src, dst, np.full(4, 2), pre, post, node_limit=1000)
    >>> res.makespan, res.optimal, res.events.tolist()
    (4, True, [(0, 0, 0), (0, 2, 2)])
    """
    num_nodes, src, dst, steps, pre, post, time_limit, window = _validate(
        num_nodes, link_src, link_dst, link_steps, pre, post, time_limit, window)
    node_limit = _optional_count("node_limit", node_limit, 0)
    max_solves = _optional_count("max_solves", max_solves, 1)
    need = post & ~pre
    earliest = _earliest(np.where(pre, 0, _INF), src, dst, steps)
    _check_reachable(earliest, need)
    if not need.any():
        return IlpResult(_as_events([]), 0, True, 0, 0, "pre", status=Status.SUCCESS,
                         message=STATUS_MESSAGES[Status.SUCCESS] + " (post holds at slot 0)")
    lb = _lower_bound(earliest, need, src, dst, steps)
    dist = _distances(num_nodes, src, dst, steps)
    out_links = _out_links(num_nodes, src)
    rng = np.random.default_rng(seed)
    upper, upper_span = _list_schedule(pre, post, need, earliest, src, dst, steps, out_links,
                                       rng, _TRIALS)
    # the time limit is for the ILP solves: list scheduling is polynomial and always runs
    deadline = math.inf if time_limit is None else time.monotonic() + time_limit
    ctx = dict(pre=pre, post=post, need=need, src=src, dst=dst, steps=steps, dist=dist,
               out_links=out_links, rng=rng, seed=seed, deadline=deadline,
               early_stop=early_stop, progress=progress, time_limit=time_limit,
               node_limit=node_limit, max_solves=max_solves or _MAX_WINDOWS)
    if window is None:
        return _horizon_search(ctx, lb, upper, upper_span)
    return _time_clusters(ctx, window, lb, upper, upper_span)


def _result(events, steps, status, lb, solves, source, note=""):
    span = _makespan(events, steps)
    optimal = span <= lb
    if optimal:
        status = Status.SUCCESS
    message = STATUS_MESSAGES[status] + f" ({source}, makespan {span}, lower bound {lb}"
    message += f", {solves} ILP solves{note})"
    return IlpResult(_as_events(events), span, optimal, min(lb, span), solves, source,
                     status=status, message=message)


def _extract(model, x):
    on = x[:model.xc.size] > 0.5
    return list(zip(model.xc[on].tolist(), model.xl[on].tolist(), model.xs[on].tolist()))


def _horizon_search(ctx, lb, upper, upper_span):
    """Solve horizons lb, lb+1, ... below the list-scheduling makespan; the first horizon whose
    model delivers every needed chunk is the optimum.

    Each horizon is first a feasibility model (the needed holds at ``T`` fixed to 1, no
    objective): HiGHS settles those 10-50 times faster than the delivery-maximising model
    (4x4 torus allgather at T=4: 0.15 s against 4 s), and infeasibility is the proof that
    raises the lower bound. When the time limit hits, the delivery-maximising model of that
    horizon, warm-started from the list schedule, gets the reserved last tenth of the limit;
    its incumbent is completed along shortest paths (early termination)."""
    pre, post, need, src, dst, steps = (ctx[k] for k in ("pre", "post", "need", "src", "dst",
                                                          "steps"))
    best, best_source, status, solves, note = upper, "list-scheduling", Status.SUCCESS, 0, ""
    target = int(need.sum())
    slack = _to_needed(need, ctx["dist"])
    total = max(upper_span - lb, 0)
    state = (np.where(pre, 0, _INF).astype(np.int64), np.zeros(src.size, np.int64), 0)
    value = need.astype(float)
    reserve = 0.1 * ctx["time_limit"] if ctx["early_stop"] and ctx["time_limit"] else 0.0
    horizon = lb
    while horizon < _makespan(best, steps):
        remaining = ctx["deadline"] - time.monotonic() - reserve
        if solves and (remaining <= 0 or solves >= ctx["max_solves"]):
            status = Status.LIMIT         # the first horizon is always tried, however briefly
            break
        model = _build(state, horizon, horizon, value, src, dst, steps, slack)
        goal = [model.hold_index.get((c, n)) for c, n in np.argwhere(need).tolist()]
        if any(g is None or g[1] + g[2] - 1 != horizon for g in goal):
            lb = horizon = horizon + 1    # some needed pair cannot be reached by this horizon
            continue
        require = np.array([pos + size - 1 for pos, _, size in goal], dtype=np.int64)
        code, x, _, _ = _solve(model, None if math.isinf(remaining) else remaining,
                               ctx["node_limit"], ctx["seed"] + horizon, None, require=require)
        solves += 1
        if ctx["progress"] is not None:
            ctx["progress"](min(solves, total), total)
        if x is not None:
            best, best_source = _prune(_extract(model, x), pre, post, src, dst, steps), "ilp"
            break
        if code == Status.INFEASIBLE:     # proven: the makespan exceeds horizon
            lb = horizon = horizon + 1
            continue
        status = Status.LIMIT if code == Status.LIMIT else Status.FAILED
        if ctx["early_stop"]:
            hint = _hint(model, upper, steps, src, dst)
            left = ctx["deadline"] - time.monotonic()
            code, x, _, obj = _solve(model, None if math.isinf(left) else left,
                                     ctx["node_limit"], ctx["seed"] + horizon, hint)
            solves += 1
            if x is not None:
                partial = _extract(model, x)
                order = _orders(_earliest(np.where(pre, 0, _INF), src, dst, steps), need,
                                ctx["rng"], 1)[0]
                done = _prune(_complete(partial, pre, post, src, dst, steps,
                                        ctx["out_links"], order), pre, post, src, dst, steps)
                if _makespan(done, steps) <= _makespan(best, steps):
                    best, best_source = done, "ilp+shortest-paths"
                note = f", stopped at horizon {horizon} with {obj:.0f}/{target} delivered"
        break
    if ctx["progress"] is not None:
        ctx["progress"](total, total)
    return _result(best, steps, status, lb, solves, best_source, note)


def _time_clusters(ctx, window, lb, upper, upper_span):
    """Solve windows of ``window`` start slots in sequence from the previous end state."""
    pre, post, need, src, dst, steps, dist = (ctx[k] for k in ("pre", "post", "need", "src",
                                                                "dst", "steps", "dist"))
    num_chunks, num_nodes = pre.shape
    avail = np.where(pre, 0, _INF).astype(np.int64)
    free = np.zeros(src.size, np.int64)
    events, solves, status, source = [], 0, Status.NOT_PROVEN, "windows"
    total = -(-upper_span // window)
    kmax = int(steps.max())
    t0 = 0
    while True:
        missing = need & (avail >= _INF)
        if not missing.any():
            break
        if solves and (time.monotonic() >= ctx["deadline"] or solves >= ctx["max_solves"]):
            status = Status.LIMIT
            break
        # progress value of holding c at n: deliveries first, then how much closer n is than
        # the current holders to every node still missing c
        near = np.where(avail[:, :, None] < _INF, dist[None, :, :], _INF).min(axis=1)
        gain = np.maximum(near[:, None, :] - dist[None, :, :], 0)
        gain = np.where(missing[:, None, :], np.minimum(gain, num_nodes), 0).sum(axis=2)
        value = missing * float(num_nodes * num_nodes + 1) + gain / float(num_nodes + 1)
        held = avail < _INF
        useful = (missing[:, dst] | (gain[:, dst] > 0)) & ~held[:, dst]
        horizon = t0 + window - 1 + kmax
        in_flight = ((avail > t0) & (avail < _INF)).any() or (free > t0).any()
        model = _build((avail, free, t0), horizon, t0 + window - 1, value, src, dst, steps,
                       np.zeros_like(avail), useful, early=1.0 / (window + kmax + 1))
        left = ctx["deadline"] - time.monotonic()
        code, x, _, _ = _solve(model, None if math.isinf(left) else left, ctx["node_limit"],
                               ctx["seed"] + t0, None)
        solves += 1
        if ctx["progress"] is not None:
            ctx["progress"](min(solves, total), max(total, solves))
        new = _extract(model, x) if x is not None else []
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
    if (need & (avail >= _INF)).any():
        if ctx["early_stop"] or not events:
            order = _orders(_earliest(np.where(pre, 0, _INF), src, dst, steps), need,
                            ctx["rng"], 1)[0]
            events = _complete(events, pre, post, src, dst, steps, ctx["out_links"], order)
            source = "windows+shortest-paths"
        else:
            events, source = upper, "list-scheduling"
    events = _prune(events, pre, post, src, dst, steps)
    if ctx["progress"] is not None:
        ctx["progress"](max(total, solves), max(total, solves))
    return _result(events, steps, status, lb, solves, source)
