"""The TEN ILP model of one horizon or window, and its solve on HiGHS (:mod:`.ilp`; docs/math.md
section 5).

* binary ``sent[c, l, t]`` (a send of ``c`` on ``l`` starting at ``t``) and ``hold[c, n, t]``
  in ``[0, 1]``; ``hold`` needs no integrality: ``hold[c, n, t] <= hold[c, n, t-1] + arrivals``
  caps it by an integer count, and ``sent <= hold[c, src, t]`` then only lets a binary send
  leave a node whose ``hold`` is 1, so integral sends force exact holds;
* at most one chunk in flight per link;
* variables pruned exactly (see :func:`build_model`).

>>> import numpy as np
>>> src, dst, steps = np.array([0, 1]), np.array([1, 0]), np.ones(2, np.int64)  # 0 <-> 1
>>> pre = np.array([[True, False]]); avail = np.where(pre, 0, INF)
>>> model = build_model((avail, np.zeros(2, np.int64), 0), 1, 1, (~pre).astype(float),
...                     src=src, dst=dst, steps=steps, slack=np.zeros((1, 2), np.int64))
>>> model.num_vars, model.hold_index
(2, {(0, 1): (1, 1, 1)})
>>> status, x, _, objective = solve_model(model, None, None, 0, None)
>>> status.name, extract_sends(model, x), objective
('SUCCESS', [(0, 0, 0)], 1.0)
"""

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ...highs import column_model, solver as new_solver, status_of
from ...results import Status
from .ilp_bounds import INF, earliest

__all__ = ["Model", "build_model", "solve_model", "hint_model", "extract_sends"]


@dataclass
class Model:
    """One ILP model: the send variables (columns ``0 .. xc.size - 1``, one per chunk ``xc``,
    link ``xl`` and start slot ``xs``), then the hold variables; rows ``matrix @ x <=
    row_upper``; ``cost`` is maximised. ``hold_index[(c, n)]`` = (first hold variable, first
    slot, number of slots) and ``avail`` the slot from which each node holds each chunk
    before the model."""

    xc: np.ndarray          # per send variable: chunk, link, start
    xl: np.ndarray
    xs: np.ndarray
    num_vars: int
    matrix: sp.csc_matrix
    row_upper: np.ndarray
    cost: np.ndarray        # maximised
    hold_index: dict        # (c, n) -> (first variable, first slot, number of slots)
    avail: np.ndarray


def build_model(state, horizon, send_end, value, *, src, dst, steps, slack, useful=None,
                early=0.0, pace=None):
    """One window/horizon model (``state, horizon, send_end, value`` positional; the links
    ``src, dst, steps`` and the rest keyword-only). ``state`` = (avail[c, n] slot from which
    ``n`` holds ``c``, free[l] first slot link ``l`` may start a send, t0 first start slot).
    Sends start in ``[t0, send_end]`` (``send_end``: a slot, or one per link) and arrive by
    ``horizon``; ``value[c, n]`` is the objective weight of holding ``c`` at ``n`` at the
    horizon. A send to ``n`` must arrive ``slack[c, n]`` slots
    before the horizon (to be of any use) and, if given, be allowed by ``useful[c, l]``.
    ``early`` adds ``early * value[c, n]`` for every slot ``c`` is held at ``n`` (sooner is
    better); 0 keeps the objective an integer count, which HiGHS proves optimal faster.
    ``pace[l]`` (at most 1): a send on ``l`` starting at slot ``s`` needs its chunk at the
    sender by slot ``floor(s * pace[l])``, not ``s`` (a link whose slots round its chunk time
    up runs ahead of them in the link model); the model only gets stricter."""
    avail = state[0]
    xc, xl, xs = _send_candidates(state, horizon, send_end, (src, dst, steps), slack, useful)
    xc, xl, xs, first, ready = _drop_unfed_sends(avail, (xc, xl, xs), (src, dst, steps), pace)
    nx = xc.size
    hold_index, hc, hn, ht = _hold_variables(first, avail, horizon, nx)
    nh = hc.size
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
    return Model(xc, xl, xs, nx + nh, matrix, row_upper, cost, hold_index, avail)


def _send_candidates(state, horizon, send_end, links, slack, useful):
    """Every send ``(chunk, link, start slot)`` the window allows, as arrays ``(xc, xl, xs)``
    (``links``: ``(src, dst, steps)``; see :func:`build_model`)."""
    avail, free, t0 = state
    src, dst, steps = links
    reach = earliest(avail, src, dst, steps, free)
    k = steps[None, :]
    lo = np.maximum(np.maximum(reach[:, src], free[None, :]), t0)
    hi = np.minimum(np.minimum(horizon - k, avail[:, dst] - k - 1), send_end)
    hi = np.minimum(hi, horizon - k - slack[:, dst])
    count = np.maximum(hi - lo + 1, 0)
    count[reach[:, src] >= INF] = 0
    if useful is not None:
        count[~useful] = 0
    cl = np.flatnonzero(count.ravel())
    reps = count.ravel()[cl]
    xc = np.repeat(cl // src.size, reps)
    xl = np.repeat(cl % src.size, reps)
    offs = np.arange(reps.sum()) - np.repeat(np.cumsum(reps) - reps, reps)
    xs = lo.ravel()[np.repeat(cl, reps)] + offs
    return xc, xl, xs


def _drop_unfed_sends(avail, sends, links, pace):
    """Drop, to a fixed point, the sends whose sender never gets the chunk within the model.

    Returns ``(xc, xl, xs, first, ready)``: the kept sends, the first arrival slot of each
    chunk at each node, and the slot by which each send needs its chunk.
    """
    xc, xl, xs = sends
    src, dst, steps = links
    num_chunks = avail.shape[0]
    while True:
        arr = xs + steps[xl]
        key = xc * avail.shape[1] + dst[xl]
        first = np.full(num_chunks * avail.shape[1], INF, dtype=np.int64)
        np.minimum.at(first, key, arr)
        first = first.reshape(avail.shape)
        ready = xs if pace is None else np.floor(xs * pace[xl] + 1e-9).astype(np.int64)
        sender_ok = (avail[xc, src[xl]] <= ready) | (first[xc, src[xl]] <= ready)
        if sender_ok.all():
            break
        xc, xl, xs = xc[sender_ok], xl[sender_ok], xs[sender_ok]
    return xc, xl, xs, first, ready


def _hold_variables(first, avail, horizon, nx):
    """Hold variables for the ``(c, n)`` pairs some send reaches, at slots
    ``first..min(horizon, avail - 1)``, numbered from ``nx``.

    Returns ``(hold_index, hc, hn, ht)``: ``hold_index[(c, n)] = (first column, first slot,
    count)`` and each hold variable's chunk, node and slot.
    """
    hold_index = {}
    hc, hn, ht = [], [], []
    pos = nx
    for c, n in np.argwhere(first < INF).tolist():
        last = min(horizon, int(avail[c, n]) - 1)
        f = int(first[c, n])
        hold_index[(c, n)] = (pos, f, last - f + 1)
        ts = np.arange(f, last + 1)
        hc.append(np.full(ts.size, c)), hn.append(np.full(ts.size, n)), ht.append(ts)
        pos += ts.size
    hc = np.concatenate(hc) if hc else np.zeros(0, np.int64)
    hn = np.concatenate(hn) if hn else np.zeros(0, np.int64)
    ht = np.concatenate(ht) if ht else np.zeros(0, np.int64)
    return hold_index, hc, hn, ht


def solve_model(model, time_limit, node_limit, seed, hint, require=None, checks=None, **options):
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
    m = model.matrix
    cost = np.zeros(model.num_vars) if require is not None else model.cost  # feasibility only
    lp = column_model(cost, (m.indptr, m.indices, m.data), np.full(m.shape[0], -np.inf),
                      model.row_upper, col_upper=np.ones(model.num_vars), maximize=True)
    if require is not None:
        lower = np.zeros(model.num_vars)
        lower[require] = 1.0
        lp.col_lower_ = lower
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


def hint_model(model, events, steps, src, dst):
    """A feasible start for ``model`` from a schedule: its sends that are variables of the
    model and whose senders hold the chunk in time (within the model), with implied holds."""
    index = {key: i for i, key in enumerate(zip(model.xc.tolist(), model.xl.tolist(),
                                                model.xs.tolist()))}
    x = np.zeros(model.num_vars)
    got = {}
    for c, l, s in sorted(events, key=lambda e: e[2]):
        i = index.get((c, l, s))
        u, v = int(src[l]), int(dst[l])
        if i is None or (model.avail[c, u] > s and got.get((c, u), INF) > s):
            continue
        x[i] = 1.0
        got[(c, v)] = min(got.get((c, v), INF), s + int(steps[l]))
    for (c, n), (pos, f, size) in model.hold_index.items():
        a = got.get((c, n), INF)
        if a < INF:
            x[pos + a - f:pos + size] = 1.0
    return x




def extract_sends(model, x):
    """The sends of a solution ``x`` of ``model``: a list of ``(chunk, link, start)``."""
    on = x[:model.xc.size] > 0.5
    return list(zip(model.xc[on].tolist(), model.xl[on].tolist(), model.xs[on].tolist()))
