"""Multi-tenant TEN ILP: several collectives at once, scheduled by one ILP over all their chunks
(TACOS Table V's TACOS-ILP column; the greedy is :func:`~.tenants.synthesize_tenants`).

The TEN is the greedy's (:mod:`.tenants`): every tenant uses chunks of one size
``M / (N * C)``, non-combining tenants are chunk flows forward in time, combining ones (reduce,
reduce_scatter) the reversal of their non-combining base on the transposed topology. Where the
greedy matches the forward group first and then fits the reversed group around its slots, the
ILP decides both at once: one model per horizon ``T`` holds the forward chunks' sends (the
model of :mod:`.ilp_model` on the topology) and the reversed chunks' sends (the same model on
the transposed topology, in reversed time), and one capacity row per link and *forward* slot
over both: a reversed send on link ``l`` at reversed slot ``x`` taking ``k`` slots runs forward
during ``[T - x - k, T - x)``. A horizon is feasible when every needed chunk of both groups is
held at ``T``; the search bisects between a lower bound (the larger of the two groups' own ILP
lower bounds) and the greedy's horizon, which is feasible, each model getting half the time
left. Within the time limit it returns the best feasible horizon found (the greedy's schedules
when it finds none) and says whether it is proven minimal.

>>> res = ilp_tenants("uniring:3", ["broadcast:0", "reduce:0"], time_limit=30)
>>> res.meta["horizon_slots"], res.meta["ilp_optimal"]
(6, True)
>>> from topocoll.schedule import verify
>>> all(verify(s).valid for s in res.schedules)
True
"""

import math
import time

import numpy as np
import scipy.sparse as sp

from ... import defaults
from ...collectives import REDUCE
from ...collectives import collective as _collective
from ...errors import UnsupportedError
from ...results import Status
from ...schedule.model import Schedule
from ...units import parse_size
from .ilp import lower_bound
from .ilp_bounds import INF, distances, to_needed
from .ilp_model import Model, build_model, solve_model
from .listsched import as_events, prune
from .problem import discretize, prepare_topology
from .tenants import (
    COMBINING_BASE,
    TenantsResult,
    parse_tenant,
    stack_tenants,
    synthesize_tenants,
    tenant_transfers,
)

__all__ = ["ilp_tenants"]


def _groups(tenants, n, chunks, src, dst):
    """The forward and the reversed group (each where it has tenants) as dicts: tenant indices,
    stacked ``pre``/``post``, chunk ``offsets`` and ``per_shard``, the links the group's
    chunks flow on and whether its time is reversed."""
    out = []
    for rev in (False, True):
        idx = [i for i, (c, _) in enumerate(tenants) if c.combining == rev]
        if not idx:
            continue
        group = [(_collective(COMBINING_BASE[c.name]), r) if rev else (c, r)
                 for c, r in (tenants[i] for i in idx)]
        pre, post, offsets, per_shard = stack_tenants(group, n, chunks)
        out.append({"idx": idx, "pre": pre, "post": post, "offsets": offsets,
                    "per_shard": per_shard, "src": dst if rev else src,
                    "dst": src if rev else dst, "reversed": rev})
    return out


def _part(g, horizon, steps, n):
    """One group's model at ``horizon`` and the hold columns fixed to 1 (the needed holds at
    the horizon), or None when some needed chunk cannot reach its node by then."""
    need = g["post"] & ~g["pre"]
    s, d = g["src"], g["dst"]
    state = (np.where(g["pre"], 0, INF).astype(np.int64), np.zeros(s.size, np.int64), 0)
    model = build_model(state, horizon, horizon, need.astype(float), src=s, dst=d, steps=steps,
                        slack=to_needed(need, distances(n, s, d, steps)))
    goal = [model.hold_index.get((c, m)) for c, m in np.argwhere(need).tolist()]
    if any(x is None or x[1] + x[2] - 1 != horizon for x in goal):
        return None
    return model, np.array([pos + size - 1 for pos, _, size in goal], dtype=np.int64)


def _forward_slots(model, steps, horizon, rev):
    """Per slot a send occupies: (the send's column, key ``link * (horizon + 1) + forward
    slot``)."""
    k = steps[model.xl]
    rep = np.repeat(np.arange(model.xl.size), k)
    off = np.arange(k.sum()) - np.repeat(np.cumsum(k) - k, k)
    first = horizon - model.xs - k if rev else model.xs
    return rep, model.xl[rep] * (horizon + 1) + first[rep] + off


def _joint_model(groups, horizon, steps, n):
    """The joint model at ``horizon``: ``(model, required columns, per group the columns of
    its sends)``, or None when some group cannot finish by then. Columns: every group's sends,
    then every group's holds (the integer columns first, as :func:`solve_model` expects)."""
    parts = [_part(g, horizon, steps, n) for g in groups]
    if any(p is None for p in parts):
        return None
    models = [p[0] for p in parts]
    nsend = [m.xc.size for m in models]
    nhold = [m.num_vars - m.xc.size for m in models]
    send0 = np.cumsum([0] + nsend)
    hold0 = send0[-1] + np.cumsum([0] + nhold)
    rows, cols, vals, row0, upper, keys, kcol = [], [], [], 0, [], [], []
    colmaps = []
    for j, m in enumerate(models):
        cmap = np.r_[send0[j] + np.arange(nsend[j]), hold0[j] + np.arange(nhold[j])]
        a = sp.coo_matrix(m.matrix)
        rows.append(a.row + row0), cols.append(cmap[a.col]), vals.append(a.data)
        row0 += a.shape[0]
        upper.append(m.row_upper)
        rep, key = _forward_slots(m, steps, horizon, groups[j]["reversed"])
        keys.append(key), kcol.append(cmap[rep])
        colmaps.append(cmap)
    # one chunk per link and forward slot, over every group
    uniq, inv = np.unique(np.concatenate(keys), return_inverse=True)
    rows.append(row0 + inv), cols.append(np.concatenate(kcol)), vals.append(np.ones(inv.size))
    total = int(hold0[-1])
    matrix = sp.csc_matrix((np.concatenate(vals), (np.concatenate(rows),
                                                   np.concatenate(cols))),
                           shape=(row0 + uniq.size, total))
    model = Model(np.concatenate([m.xc for m in models]), np.concatenate([m.xl for m in models]),
                  np.concatenate([m.xs for m in models]), total, matrix,
                  np.concatenate(upper + [np.ones(uniq.size)]), np.zeros(total), {}, None)
    require = np.concatenate([cm[p[1]] for cm, p in zip(colmaps, parts)])
    sends = [cm[:m.xc.size] for cm, m in zip(colmaps, models)]
    return model, require, sends


def _search(groups, steps, n, low, high, deadline, node_limit, seed):
    """Bisect horizons in ``[low, high)`` (``high`` feasible by the greedy; feasibility is
    monotone: a reversed flow delayed one reversed slot keeps its forward slots). Returns
    ``(best (horizon, model, x, send columns) or None, proven lower bound, solves)``."""
    best, proven, solves = None, low, 0
    while low < high:
        left = deadline - time.monotonic()
        if solves and left <= 0:
            break
        mid = (low + high) // 2
        made = _joint_model(groups, mid, steps, n)
        if made is None:                    # some chunk cannot arrive by mid: infeasible
            low = proven = max(proven, mid + 1)
            continue
        model, require, sends = made
        # half of what is left: a horizon that stays undecided leaves time for those above
        code, x, _, _ = solve_model(model, None if math.isinf(left) else max(left / 2, 1.0),
                                    node_limit, seed + mid, None, require=require)
        solves += 1
        if x is not None:
            best, high = (mid, model, x, sends), mid
        elif code == Status.INFEASIBLE:     # proven: every horizon up to mid is infeasible
            low = proven = max(proven, mid + 1)
        else:                               # a limit: mid stays undecided
            low = mid + 1
    return best, proven, solves


def _schedules(topo, tenants, groups, best, steps, meta):
    """The tenants' schedules from the joint solution ``best``; ``(schedules, finish)``."""
    horizon, model, x, sends = best
    transfers, finish = [None] * len(tenants), [0] * len(tenants)
    for g, cols in zip(groups, sends):
        on = cols[x[cols] > 0.5]
        raw = list(zip(model.xc[on].tolist(), model.xl[on].tolist(), model.xs[on].tolist()))
        ev = as_events(prune(raw, g["pre"], g["post"], g["src"], g["dst"], steps))
        rev = g["reversed"]
        step = (horizon - ev["start"] - steps[ev["link"]] if rev else ev["start"]) + 1
        for j, i in enumerate(g["idx"]):
            lo, hi = g["offsets"][j], g["offsets"][j + 1]
            # transfers go forward along the topology's links (reversed flows: reduced)
            transfers[i] = tenant_transfers(ev, lo, hi - lo, g["per_shard"][j], topo.src, topo.dst,
                                      step, REDUCE if rev else 0)
            mine = (ev["chunk"] >= lo) & (ev["chunk"] < hi)
            finish[i] = int(horizon - ev["start"][mine].min()) if rev and mine.any() else \
                int((ev["start"][mine] + steps[ev["link"][mine]]).max(initial=0))
    schedules = [Schedule(topo, coll, t, root=root, algorithm="ten-ilp-tenants",
                          meta={**meta, "tenant": i, "makespan_slots": int(finish[i])})
                 for i, ((coll, root), t) in enumerate(zip(tenants, transfers))]
    return schedules, finish


def ilp_tenants(topology, tenants, *, chunks=1, size=defaults.SYNTHESIS_SIZE, time_limit=None,
                node_limit=None, seed=0, unwind_degree=None, fail_links=None, fail_nodes=None,
                time_step=None):
    """Synthesize several collectives that run at the same time with one ILP (see the module).

    Parameters
    ----------
    topology : Topology or str
    tenants : list of str or (name, root)
        As in :func:`~topocoll.synth.ten.tenants.synthesize_tenants`.
    chunks, size, seed, unwind_degree, fail_links, fail_nodes, time_step
        As in :func:`topocoll.synth.ten.synthesize`.
    time_limit : float, optional
        Wall-clock seconds for the ILP solves together (the greedy that gives the upper bound
        is not counted; the first model is always tried). Default: none.
    node_limit : int, optional
        Branch-and-bound nodes per model.

    Returns
    -------
    TenantsResult
        ``meta``: ``horizon_slots`` (the ILP's horizon, or the greedy's where the ILP found
        nothing better), ``greedy_horizon_slots``, ``lower_bound_slots``, ``ilp_optimal``
        (the horizon is proven minimal), ``solves`` and ``source`` (``"ilp"`` or ``"greedy"``).
    """
    greedy = synthesize_tenants(topology, tenants, chunks=chunks, size=size, seed=seed,
                                unwind_degree=unwind_degree, fail_links=fail_links,
                                fail_nodes=fail_nodes, time_step=time_step)
    start = time.monotonic()
    parsed = [parse_tenant(t) for t in tenants]
    topo = prepare_topology(topology, unwind_degree, fail_links, fail_nodes)
    n = topo.num_nodes
    steps, f = discretize(topo.latency + parse_size(size) / (n * chunks) / topo.bandwidth,
                          time_step)
    if not np.isclose(f, greedy.time_step):
        raise UnsupportedError("ilp_tenants: the greedy's TEN differs from the ILP's")
    groups = _groups(parsed, n, chunks, topo.src, topo.dst)
    low = max(lower_bound(n, g["src"], g["dst"], steps, g["pre"], g["post"]) for g in groups)
    high = int(greedy.meta["horizon_slots"])
    deadline = math.inf if time_limit is None else start + float(time_limit)
    best, proven, solves = _search(groups, steps, n, low, high, deadline, node_limit,
                                   int(seed))
    horizon = high if best is None else best[0]
    meta = {"horizon_slots": int(horizon), "greedy_horizon_slots": high,
            "lower_bound_slots": int(min(proven, horizon)), "ilp_optimal": proven >= horizon,
            "solves": solves, "source": "greedy" if best is None else "ilp",
            "topology": topo.name}
    if best is None:
        return TenantsResult(greedy.schedules, greedy.finish_slots, greedy.time_step, meta)
    common = {"seed": int(seed), "chunks": int(chunks), "size": float(parse_size(size)),
              "time_step": f}
    schedules, finish = _schedules(topo, parsed, groups, best, steps, common)
    return TenantsResult(schedules, finish, f, meta)
