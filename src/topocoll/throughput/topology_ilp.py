"""Throughput-maximising topologies for small clusters: the topology ILP and its iterative,
one-commodity-at-a-time heuristic (Basu et al.; Zhao et al., "Optimal direct-connect
topologies for collective communications", appendix on all-to-all topologies).

**The topology ILP** (:func:`design_topology`) picks the links of a d-regular topology on N
nodes and the flow of a uniform all-to-all on them at once: binaries ``y[i, j]`` (link
``i -> j`` present), flows ``f[s, i, j] >= 0`` grouped by source and the rate ``lambda``:

    maximise lambda
    sum_j y[i, j] = d,  sum_i y[i, j] = d                    (every node: d out, d in)
    sum_s f[s, i, j] <= b y[i, j]                             (a link exists to carry flow)
    in_s(v) - out_s(v) = lambda                               (every source s, every v != s)

with ``y[i, j] = y[j, i]`` for ``bidirectional=True``. Two valid cuts help the search: node 0's
out-neighbours are fixed to ``1..d`` (any topology can be relabelled so), and ``lambda`` is at
most ``d b / M``, where M is the Moore bound on a node's sum of distances (``d`` nodes at
distance 1, ``d^2`` at 2, ...; ``d (d-1)^(k-1)`` for bidirectional). HiGHS (through
``scipy.optimize.milp``) proves the optimum of degree 2 for N <= 6 in under a second, N = 7
in about 20 s and N = 8 in about half an hour (lambda 3/20); beyond that, use ``time_limit``.

**The iterative heuristic** (:func:`iterative_design`) lays the topology down one commodity at
a time: start from no links, take the commodities in a seeded random order, and route a small
demand of each with a one-commodity MILP over the residual capacities, where a new link costs
``edge_cost`` hops and each node may gain links up to its degree. Links used stay; passes
repeat until a pass adds no link. A last small MILP makes the links d-regular, keeping the
most used of those laid down (a node may have been left with free degree that only a link it
already has, or a self-loop, could use).
The result is a d-regular topology, not proven best (status ``NOT_PROVEN``).

>>> r = design_topology(4, 2)
>>> r.status_name, round(r.lam, 6), r.topology.num_links     # 4 nodes, degree 2: 1/2
('SUCCESS', 0.5, 8)
"""

import time
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from ..errors import SpecError
from ..results import Result, Status
from ..topology.model import Topology
from ..units import real_number, whole_number

__all__ = ["design_topology", "iterative_design", "DesignResult", "moore_distance_sum",
           "MAX_DESIGN_NODES", "MAX_ITERATIVE_NODES"]

#: Largest N :func:`design_topology` accepts (Basu et al. report 12 nodes as the limit).
MAX_DESIGN_NODES = 12
#: Largest N :func:`iterative_design` accepts (N (N-1) one-commodity MILPs a pass).
MAX_ITERATIVE_NODES = 32


@dataclass(kw_only=True)
class DesignResult(Result):
    """A designed topology: ``topology``, its all-to-all rate ``lam`` per ordered pair (bytes/s),
    ``upper_bound`` (the solver's proven bound on the best ``lam``; ``inf`` for heuristics),
    ``method`` (``"ilp"`` or ``"iterative"``), ``seconds`` and ``solves`` (MILPs solved)."""

    topology: Topology | None = None
    lam: float = 0.0
    upper_bound: float = float("inf")
    method: str = "ilp"
    seconds: float = 0.0
    solves: int = 0
    details: dict = field(default_factory=dict)

    @property
    def edges(self):
        """The links as sorted ``(u, v)`` pairs."""
        if self.topology is None:
            return []
        return sorted(zip(self.topology.src.tolist(), self.topology.dst.tolist()))

    def to_dict(self):
        """JSON-friendly summary."""
        return {**super().to_dict(), "method": self.method, "lambda": self.lam,
                "upper_bound": self.upper_bound if np.isfinite(self.upper_bound) else None,
                "edges": [list(e) for e in self.edges], "seconds": self.seconds,
                "solves": self.solves, "details": self.details}


def moore_distance_sum(n, degree, bidirectional=False):
    """Least possible sum of hop distances from one node to the other ``n - 1`` in a topology
    of out-degree ``degree`` (the Moore bound).

    >>> moore_distance_sum(8, 2), moore_distance_sum(8, 3, bidirectional=True)
    (13, 11)
    """
    total, left, level, width = 0, n - 1, 1, degree
    while left > 0:
        take = min(left, width)
        total += level * take
        left -= take
        level += 1
        width = width * (degree - 1 if bidirectional else degree)
        if width <= 0:
            return float("inf")
    return total


def _check(n, degree, bidirectional, bandwidth):
    n = whole_number(n, "nodes", 2)
    degree = whole_number(degree, "degree", 1)
    bandwidth = real_number(bandwidth, "bandwidth", above=0)
    if degree > n - 1:
        raise SpecError(f"degree must be at most nodes - 1 = {n - 1}, got {degree}")
    if bidirectional and (n * degree) % 2:
        raise SpecError(f"n * d must be even for a bidirectional topology, got {n} * {degree}")
    return n, degree, float(bandwidth)


def _arcs(n):
    i, j = np.nonzero(~np.eye(n, dtype=bool))
    return i, j


def _ilp(n, degree, bidirectional):
    """``(cost, A, lower, upper, var_lower, var_upper, integrality)`` of the topology ILP
    (bandwidth 1); variables: y (arcs), f (source x arc, arcs into the source left out), lam."""
    ai, aj = _arcs(n)
    num_a = ai.size
    s_f, a_f = np.nonzero(aj[None, :] != np.arange(n)[:, None])
    num_f = s_f.size
    lam = num_a + num_f
    fcol = num_a + np.arange(num_f)
    rows, cols, vals, lo, hi = [], [], [], [], []

    def add(r, c, v):
        rows.append(np.asarray(r)), cols.append(np.asarray(c)), vals.append(np.asarray(v, float))

    add(ai, np.arange(num_a), np.ones(num_a))                       # out-degree rows 0..n-1
    add(n + aj, np.arange(num_a), np.ones(num_a))                   # in-degree rows n..2n-1
    lo += [degree] * 2 * n
    hi += [degree] * 2 * n
    base = 2 * n                                                    # capacity rows
    add(base + a_f, fcol, np.ones(num_f))
    add(base + np.arange(num_a), np.arange(num_a), -np.ones(num_a))
    lo += [-np.inf] * num_a
    hi += [0.0] * num_a
    base += num_a                                                   # conservation (s, v != s)

    def cons(s, v):
        return base + s * (n - 1) + v - (v > s)

    into = aj[a_f] != s_f
    add(cons(s_f[into], aj[a_f][into]), fcol[into], np.ones(into.sum()))
    out = ai[a_f] != s_f
    add(cons(s_f[out], ai[a_f][out]), fcol[out], -np.ones(out.sum()))
    s_all, v_all = np.nonzero(~np.eye(n, dtype=bool))
    add(cons(s_all, v_all), np.full(s_all.size, lam), -np.ones(s_all.size))
    lo += [0.0] * n * (n - 1)
    hi += [0.0] * n * (n - 1)
    base += n * (n - 1)
    if bidirectional:                                               # y[i, j] = y[j, i]
        fwd = np.flatnonzero(ai < aj)
        rev = ai[fwd] * (n - 1) + aj[fwd] - 1                       # position of (i, j) ...
        back = aj[fwd] * (n - 1) + ai[fwd] - (ai[fwd] > aj[fwd])    # ... and of (j, i)
        k = np.arange(fwd.size)
        add(base + k, rev, np.ones(fwd.size))
        add(base + k, back, -np.ones(fwd.size))
        lo += [0.0] * fwd.size
        hi += [0.0] * fwd.size
    num_rows = len(lo)
    matrix = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                           shape=(num_rows, lam + 1))
    var_lo = np.zeros(lam + 1)
    var_hi = np.full(lam + 1, np.inf)
    var_hi[:num_a] = 1.0
    var_lo[:degree] = 1.0                      # node 0 -> 1..d (arcs of node 0 come first)
    var_hi[lam] = degree / moore_distance_sum(n, degree, bidirectional)
    integrality = np.zeros(lam + 1)
    integrality[:num_a] = 1
    cost = np.zeros(lam + 1)
    cost[lam] = -1.0
    return cost, matrix, np.array(lo), np.array(hi), var_lo, var_hi, integrality


def _topology(n, arcs_on, bandwidth, name, meta):
    ai, aj = _arcs(n)
    return Topology(n, ai[arcs_on], aj[arcs_on], bandwidth, name=name, meta=meta)


def design_topology(n, degree, *, bidirectional=False, bandwidth=1.0, time_limit=None,
                    mip_rel_gap=1e-6):
    """The d-regular topology on ``n`` nodes with the highest uniform all-to-all throughput,
    found by the topology ILP (module text).

    Parameters
    ----------
    n : int
        Nodes, 2..:data:`MAX_DESIGN_NODES`.
    degree : int
        Links out of and into every node (1..n-1).
    bidirectional : bool
        Links in both directions (``n * degree`` even).
    bandwidth : float
        Bandwidth of every link, bytes/s (``lam`` scales with it).
    time_limit : float, optional
        Seconds for HiGHS; when it stops first, the status is ``LIMIT`` and ``upper_bound``
        says how far from the best the topology may be.
    mip_rel_gap : float
        Relative gap at which HiGHS may stop (default 1e-6: proven optimal).

    Returns
    -------
    DesignResult

    Examples
    --------
    >>> r = design_topology(6, 3, bidirectional=True)   # 18 links / (6 x 7 hops) = 3/7
    >>> r.status_name, round(r.lam, 6), r.topology.is_bidirectional()
    ('SUCCESS', 0.428571, True)
    """
    from scipy.optimize import LinearConstraint, milp  # deferred: scipy.optimize is heavy

    n, degree, bandwidth = _check(n, degree, bidirectional, bandwidth)
    if n > MAX_DESIGN_NODES:
        raise SpecError(f"the topology ILP needs nodes <= {MAX_DESIGN_NODES}, got {n}")
    cost, matrix, lo, hi, var_lo, var_hi, integrality = _ilp(n, degree, bidirectional)
    options = {"mip_rel_gap": float(mip_rel_gap)}
    if time_limit is not None:
        options["time_limit"] = float(real_number(time_limit, "time_limit", above=0))
    start = time.perf_counter()
    from scipy.optimize import Bounds

    res = milp(cost, integrality=integrality, bounds=Bounds(var_lo, var_hi),
               constraints=LinearConstraint(matrix, lo, hi), options=options)
    seconds = time.perf_counter() - start
    kind = "bidirectional" if bidirectional else "directed"
    if res.x is None:
        status = Status.INFEASIBLE if res.status == 2 else Status.FAILED
        return DesignResult(status=status, message=f"no {degree}-regular {kind} topology on {n} "
                            f"nodes: {res.message}", seconds=seconds, solves=1)
    num_a = n * (n - 1)
    on = res.x[:num_a] > 0.5
    lam = float(res.x[-1]) * bandwidth
    bound = getattr(res, "mip_dual_bound", None)
    bound = lam if bound is None else -float(bound) * bandwidth
    status = Status.SUCCESS if res.status == 0 else Status.LIMIT
    t = _topology(n, on, bandwidth, f"ilp:{n},{degree}",
                  {"family": "ilp", "lambda": lam, "bidirectional": bidirectional})
    return DesignResult(status=status, message=f"{kind} degree {degree} on {n} nodes: lambda "
                        f"{lam:.6g} ({'optimal' if status == 0 else res.message})",
                        topology=t, lam=lam, upper_bound=max(bound, lam), method="ilp",
                        seconds=seconds, solves=1)


def _route_one(n, degree, have, used, s, d, demand, edge_cost, bandwidth):
    """One commodity's MILP: route ``demand`` from ``s`` to ``d`` over links in ``have`` (with
    their residual capacity) and new links (``edge_cost`` hops each, within the degrees).
    Returns ``(flow n x n, new links n x n)`` or ``None`` when it cannot be routed."""
    from scipy.optimize import Bounds, LinearConstraint, milp  # deferred: heavy import

    ai, aj = _arcs(n)
    num_a = ai.size
    new_ok = ~have[ai, aj]
    resid = np.where(have[ai, aj], np.maximum(bandwidth - used[ai, aj], 0.0), 0.0)
    # variables: f (arcs), then y (arcs; fixed 0 where the link exists)
    cost = np.concatenate([np.ones(num_a), np.full(num_a, edge_cost * demand)])
    cons = np.zeros((n, 2 * num_a))
    cons[aj, np.arange(num_a)] += 1.0
    cons[ai, np.arange(num_a)] -= 1.0
    rhs = np.zeros(n)
    rhs[s], rhs[d] = -demand, demand
    cap = np.zeros((num_a, 2 * num_a))
    cap[np.arange(num_a), np.arange(num_a)] = 1.0
    cap[np.arange(num_a), num_a + np.arange(num_a)] = -bandwidth
    deg = np.zeros((2 * n, 2 * num_a))
    deg[ai, num_a + np.arange(num_a)] = 1.0
    deg[n + aj, num_a + np.arange(num_a)] = 1.0
    free = np.concatenate([degree - have.sum(axis=1), degree - have.sum(axis=0)])
    upper = np.concatenate([np.where(new_ok, bandwidth, resid), new_ok.astype(float)])
    res = milp(cost, integrality=np.concatenate([np.zeros(num_a), np.ones(num_a)]),
               bounds=Bounds(np.zeros(2 * num_a), upper),
               constraints=[LinearConstraint(cons, rhs, rhs),
                            LinearConstraint(cap, -np.inf, resid),
                            LinearConstraint(deg, -np.inf, free)])
    if res.x is None:
        return None
    flow = np.zeros((n, n))
    flow[ai, aj] = res.x[:num_a]
    new = np.zeros((n, n), dtype=bool)
    new[ai, aj] = res.x[num_a:] > 0.5
    return flow, new


def _complete(n, degree, have, used):
    """The d-regular digraph that keeps the most used of the links in ``have`` (weight: their
    flow, plus one) and adds the fewest others: a small MILP that is always feasible."""
    from scipy.optimize import Bounds, LinearConstraint, milp  # deferred: heavy import

    ai, aj = _arcs(n)
    num_a = ai.size
    deg = np.zeros((2 * n, num_a))
    deg[ai, np.arange(num_a)] = 1.0
    deg[n + aj, np.arange(num_a)] = 1.0
    gain = np.where(have[ai, aj], 1.0 + used[ai, aj], 0.0)
    res = milp(-gain, integrality=np.ones(num_a), bounds=Bounds(np.zeros(num_a), np.ones(num_a)),
               constraints=LinearConstraint(deg, degree, degree))
    out = np.zeros((n, n), dtype=bool)
    out[ai, aj] = res.x > 0.5
    return out


def iterative_design(n, degree, *, seed=0, demand=None, edge_cost=1.5, max_passes=20,
                     bandwidth=1.0):
    """A d-regular directed topology laid down one commodity at a time (module text).

    Parameters
    ----------
    n, degree : int
        Nodes (2..:data:`MAX_ITERATIVE_NODES`) and links out of and into every node.
    seed : int
        Seed of the commodity order (the result is a function of the arguments).
    demand : float, optional
        Bytes/s routed per commodity per pass (default ``degree * bandwidth / (n (n-1))``).
    edge_cost : float
        Cost of a new link in hops of flow (default 1.5: a free two-hop route beats a new
        link, a new link beats a three-hop route).
    max_passes : int
        Most passes over all commodities.
    bandwidth : float
        Bandwidth of every link.

    Returns
    -------
    DesignResult
        ``method="iterative"``, status ``NOT_PROVEN``; ``lam`` is the throughput LP's optimum
        on the topology found; ``details`` holds ``passes`` and ``saturated`` (commodities
        that no longer fit).

    Examples
    --------
    >>> r = iterative_design(6, 2, seed=1)
    >>> r.status_name, sorted(set(r.topology.out_degree().tolist())), r.lam > 0
    ('NOT_PROVEN', [2], True)
    """
    from .linklp import link_throughput  # deferred: the LP stack is heavy to import

    n, degree, bandwidth = _check(n, degree, False, bandwidth)
    if n > MAX_ITERATIVE_NODES:
        raise SpecError(f"iterative design needs nodes <= {MAX_ITERATIVE_NODES}, got {n}")
    seed = whole_number(seed, "seed", 0)
    max_passes = whole_number(max_passes, "max_passes", 1)
    edge_cost = real_number(edge_cost, "edge_cost", least=0)
    demand = (degree * bandwidth / (n * (n - 1)) if demand is None
              else real_number(demand, "demand", above=0))
    rng = np.random.default_rng(seed)
    have = np.zeros((n, n), dtype=bool)
    used = np.zeros((n, n))
    start = time.perf_counter()
    solves = saturated = passes = 0
    pairs = np.argwhere(~np.eye(n, dtype=bool))
    for passes in range(1, max_passes + 1):
        before = int(have.sum())
        saturated = 0
        for s, d in pairs[rng.permutation(len(pairs))].tolist():
            got = _route_one(n, degree, have, used, s, d, demand, edge_cost, bandwidth)
            solves += 1
            if got is None:
                saturated += 1
                continue
            used += got[0]
            have |= got[1]
        if int(have.sum()) == before:
            break
    final = _complete(n, degree, have, used)
    solves += 1
    seconds = time.perf_counter() - start
    details = {"passes": passes, "saturated": saturated, "seed": seed,
               "dropped": int((have & ~final).sum())}
    have = final
    ai, aj = _arcs(n)
    t = _topology(n, have[ai, aj], bandwidth, f"iterative:{n},{degree}",
                  {"family": "iterative", "seed": seed})
    flow = link_throughput(t, bounds=False)
    lam = float(flow.lam) if flow.success else 0.0
    if lam <= 0:
        return DesignResult(status=Status.FAILED, message=f"{passes} passes: the topology laid "
                            "down is not strongly connected", topology=t, method="iterative",
                            seconds=seconds, solves=solves, details=details)
    return DesignResult(status=Status.NOT_PROVEN, message=f"{passes} passes, {solves} MILPs: "
                        f"lambda {lam:.6g} (heuristic)", topology=t, lam=lam, method="iterative",
                        seconds=seconds, solves=solves, details=details)
