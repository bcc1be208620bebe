"""Expansions: a base topology with an allgather schedule becomes a larger topology with a
schedule, without solving anything new (docs/math.md section 4; Zhao et al., "Efficient
Direct-Connect Topologies for Collective Communications", NSDI 2025, section 5, appendices C, F).

=================================  ========  =====  ==========  =================================
expansion                          nodes     degree steps       T_B in units of M/B
=================================  ========  =====  ==========  =================================
:func:`line_graph_expansion`       d*N       d      s + 1       t + 1/N  (at most)
:func:`degree_expansion_schedule`  m*N       m*d    s + 1       t + (m-1)/(m*N)
:func:`cartesian_power_expansion`  N^n       n*d    n*s         t * N/(N-1) * (N^n-1)/N^n
:func:`bidirectional_expansion`    N         2*d    s           t
=================================  ========  =====  ==========  =================================

(``s`` and ``t`` are the base allgather's steps and bandwidth time, ``B`` a node's egress
bandwidth on the network in question, so the units change with the degree.) Degree expansion
and Cartesian powers keep bandwidth optimality; products of different graphs take BFB
(:func:`product_schedule`).

One detail differs from the paper's Definition 2: in the line graph, an L-node never receives its
own shard back (the literal construction sends it once, which is harmless in an allgather but
counts that node's contribution twice in the reversed reduce-scatter).

Every expansion takes an ``allgather``, ``reduce_scatter`` or ``allreduce`` schedule and, by
default, returns the same collective on the expanded topology. Reduce-scatter on X(G) is the
expanded allgather of G^T run backwards (X(G^T) = X(G)^T for every expansion here, with the same
node ids); allreduce is the two in sequence. When an allgather of G^T is needed but only one of
G is at hand, it comes from G itself when G^T = G, else through an isomorphism G -> G^T
(reverse-symmetric G; found with networkx for at most :data:`ISOMORPHISM_LIMIT` nodes).

Each result's ``meta`` records the construction (``"expansion"``), the measured base costs and
the prediction of the table (``"predicted": {"steps": .., "t_b": ..}``, ``t_b`` in units of M/B
with B the smallest node egress bandwidth of the expanded topology); :func:`measure` gives the
same two numbers for any schedule.

>>> from topocoll.topology import topology
>>> from topocoll.synth.bfb import bfb_allgather
>>> from topocoll.schedule.verify import verify
>>> base = bfb_allgather(topology("kautz:2,2"))
>>> big = line_graph_expansion(base)
>>> big.topology.name, big.num_nodes, verify(big).valid
('line(kautz:2,2)', 12, True)
>>> measure(big) == (big.meta["predicted"]["steps"], big.meta["predicted"]["t_b"])
True
"""

import numpy as np

from ..collectives import COPY, REDUCE, collective as _collective
from ..errors import InputTypeError, TopologyError, UnsupportedError
from ..schedule.cost import step_costs
from ..schedule.model import Schedule, TRANSFER_DTYPE
from ..schedule.transforms import concatenate, relabel, reverse
from ..topology.model import Topology
from ..topology.specs import topology as build_topology
from ..topology.transforms import (bidirectional_union, cartesian_power, grouped,
                                   cartesian_product, degree_expansion, line_graph, ragged)
from ..units import whole_number
from .bfb import bfb_schedule

__all__ = ["line_graph_expansion", "degree_expansion_schedule", "cartesian_power_expansion",
           "bidirectional_expansion", "product_schedule", "expand_schedule", "predict",
           "expanded_size", "measure", "predict_chain", "reverse_isomorphism", "EXPANSIONS",
           "ISOMORPHISM_LIMIT"]

#: Largest topology for which an isomorphism to the transpose is searched (networkx VF2).
ISOMORPHISM_LIMIT = 500

#: Expansion kinds and the names they also answer to.
EXPANSIONS = {"line": ("line", "line_graph"), "degree": ("degree", "degree_expansion"),
              "power": ("power", "cartesian_power"),
              "bidirectional": ("bidirectional", "bidir", "bidirectional_union"),
              "product": ("product", "cartesian_product")}

_SUPPORTED = ("allgather", "reduce_scatter", "allreduce")


def _kind(kind):
    if isinstance(kind, str):
        key = kind.strip().lower().replace("-", "_")
        for name, aliases in EXPANSIONS.items():
            if key in aliases:
                return name
    raise UnsupportedError(f"unknown expansion {kind!r}; choose one of {', '.join(EXPANSIONS)}")


# ---------------------------------------------------------------------------- costs, predictions
def _unit_bandwidth(topology):
    """B: the smallest node egress bandwidth (every node's, on a regular uniform network)."""
    return float(topology.egress_bandwidth().min())


def measure(schedule):
    """``(steps, t_b)`` of a schedule: non-empty steps and ``T_B`` in units of ``M/B``, B the
    smallest node egress bandwidth of its topology (links as they are; no verification).

    >>> from topocoll.topology import topology
    >>> from topocoll.synth.bfb import bfb_allgather
    >>> measure(bfb_allgather(topology("complete:4")))
    (1, 0.75)
    """
    steps, _, beta = step_costs(schedule)
    return int(steps.size), float(beta.sum()) * _unit_bandwidth(schedule.topology)


def predict(kind, steps, t_b, N, d=None, **params):
    """Predicted ``(steps, t_b)`` of an expanded allgather (docs/math.md section 4), from the base's
    ``steps`` and ``t_b`` (units of M/B) on ``N`` nodes of degree ``d``.

    ``params``: ``m`` for ``"degree"``, ``n`` for ``"power"``. Degree expansion with ``m = 1``
    is the base itself (no extra step). ``d`` enters none of the formulas (T_B is in units of
    the node bandwidth, which scales with the degree); it is accepted for symmetry with
    :func:`expanded_size`.

    >>> predict("line", 1, 0.75, 4, 3)
    (2, 1.0)
    >>> predict("degree", 1, 0.75, 4, 3, m=2)
    (2, 0.875)
    >>> predict("power", 1, 0.75, 4, 3, n=2)
    (2, 0.9375)
    """
    kind = _kind(kind)
    steps, t_b, N = int(steps), float(t_b), int(N)
    if N < 1:
        raise UnsupportedError(f"predict needs N >= 1, got {N}")
    if kind == "line":
        return steps + 1, t_b + 1.0 / N
    if kind == "degree":
        m = whole_number(params.get("m"), "degree expansion: m")
        return steps + (1 if m > 1 else 0), t_b + (m - 1) / (m * N)
    if kind == "power":
        n = whole_number(params.get("n"), "cartesian power: n")
        if N == 1:
            return n * steps, 0.0
        return n * steps, t_b * N / (N - 1) * (1.0 - float(N) ** -n)
    if kind == "bidirectional":
        return steps, t_b
    raise UnsupportedError("products of different graphs take BFB; there is no closed-form "
                           "prediction for them")


def predict_chain(schedule, chain):
    """Predicted ``(steps, t_b, exact)`` of ``schedule`` (an allgather, reduce-scatter or
    allreduce) taken through the expansions ``chain``, a sequence of ``(kind, params)`` applied
    in order (``("line", {})``, ``("degree", {"m": 2})``, ``("power", {"n": 2})``), without
    building anything: each phase's measured cost goes through :func:`predict` level by level,
    exactly as the expansion functions record it in ``meta["predicted"]``. ``exact`` is False
    when a line graph is in the chain (its T_B is then an upper bound, docs/math.md section 4);
    the steps are exact. ``t_b`` in units of M/B.

    >>> from topocoll.topology import topology
    >>> from topocoll.synth.bfb import bfb_allreduce
    >>> base = bfb_allreduce(topology("complete:4"))
    >>> predict_chain(base, [("degree", {"m": 2})])
    (4, 1.75, True)
    """
    if not isinstance(schedule, Schedule):
        raise InputTypeError(f"predict_chain needs a Schedule, got {type(schedule).__name__}")
    name = schedule.collective.name
    if name == "allreduce":
        phases = list(_split_allreduce(schedule))
    elif name in ("allgather", "reduce_scatter"):
        phases = [schedule]
    else:
        raise UnsupportedError(f"predict_chain handles {', '.join(_SUPPORTED)}, not {name}")
    n0 = schedule.topology.num_nodes
    d0 = int(schedule.topology.out_degree().max())
    steps_total, t_b_total, exact = 0, 0.0, True
    for phase in phases:
        steps, t_b = measure(phase)
        n, d = n0, d0
        for kind, params in chain:
            kind = _kind(kind)
            steps, t_b = predict(kind, steps, t_b, n, **params)
            n, d = expanded_size(kind, n, d, **params)
            exact = exact and kind != "line"
        steps_total += steps
        t_b_total += t_b
    return int(steps_total), float(t_b_total), exact


def expanded_size(kind, N, d, **params):
    """``(nodes, degree)`` of the expanded topology of an ``N``-node ``d``-regular base.

    >>> expanded_size("line", 6, 2), expanded_size("degree", 6, 2, m=3)
    ((12, 2), (18, 6))
    >>> expanded_size("power", 5, 2, n=3), expanded_size("bidirectional", 6, 2)
    ((125, 6), (6, 4))
    """
    kind = _kind(kind)
    N, d = int(N), int(d)
    if kind == "line":
        return d * N, d
    if kind == "degree":
        m = whole_number(params.get("m"), "degree expansion: m")
        return m * N, m * d
    if kind == "power":
        n = whole_number(params.get("n"), "cartesian power: n")
        return N ** n, n * d
    if kind == "bidirectional":
        return N, 2 * d
    raise UnsupportedError("expanded_size covers line, degree, power and bidirectional")


# ---------------------------------------------------------------------------- helpers
def _rows(step, src, dst, shard, lo, hi, op=COPY):
    """A transfer array from broadcastable columns."""
    cols = np.broadcast_arrays(*(np.asarray(c) for c in (step, src, dst, shard, lo, hi, op)))
    out = np.empty(cols[0].size, dtype=TRANSFER_DTYPE)
    for name, col in zip(TRANSFER_DTYPE.names, cols):
        out[name] = col.reshape(-1)
    return out


def _by_step(transfers):
    """The transfers in step order (stable), sorted only if they are not already."""
    steps = transfers["step"]
    if steps.size < 2 or np.all(steps[1:] >= steps[:-1]):
        return transfers
    return transfers[np.argsort(steps, kind="stable")]


def _cumulative_shares(weights, ptr):
    """For items grouped by ``ptr`` (CSR), the sub-interval ``[before, after)`` of [0, 1) that
    each item takes in proportion to its weight; group ends are exactly 0 and 1, and
    neighbouring items share their boundary exactly."""
    weights = np.asarray(weights, dtype=np.float64)
    cum = np.cumsum(weights)
    counts = np.diff(ptr)
    group = np.repeat(np.arange(counts.size), counts)
    base = np.where(ptr[:-1] > 0, cum[np.maximum(ptr[:-1] - 1, 0)], 0.0)
    end = np.where(counts > 0, cum[np.maximum(ptr[1:] - 1, 0)], 1.0)
    total_full = end - base
    after = (cum - base[group]) / total_full[group]
    before = np.empty_like(after)
    before[1:] = after[:-1]
    nonempty = counts > 0
    before[ptr[:-1][nonempty]] = 0.0
    after[ptr[1:][nonempty] - 1] = 1.0
    return before, after


def _pair_links(topology):
    """Links grouped by ordered pair: (order, ptr, before, after), ``order[ptr[p]:ptr[p+1]]``
    the links of pair ``p`` (index into ``topology.pairs``), each taking
    ``[before, after)`` of the pair's traffic in proportion to its bandwidth."""
    pair_of_link = topology.pair_index(topology.src, topology.dst)
    order, ptr = grouped(pair_of_link, topology.pairs[0].size)
    before, after = _cumulative_shares(topology.bandwidth[order], ptr)
    return order, ptr, before, after


def _split_over_links(topology, t):
    """Per transfer, the links of its pair with its byte range split by link bandwidth.

    Returns ``(row, link, lo, hi)``: transfer row, link index and the sub-range."""
    pidx = topology.pair_index(t["src"], t["dst"])
    if np.any(pidx < 0):
        i = int(np.flatnonzero(pidx < 0)[0])
        raise TopologyError(f"transfer {i} uses link {t['src'][i]}->{t['dst'][i]}, which "
                            f"{topology.name} does not have")
    order, ptr, before, after = _pair_links(topology)
    counts = np.diff(ptr)[pidx]
    lo, hi = t["lo"].astype(np.float64), t["hi"].astype(np.float64)
    if np.all(counts == 1):
        return np.arange(t.size), order[ptr[pidx]], lo, hi
    row, pos = ragged(counts)
    k = ptr[pidx[row]] + pos
    width = hi[row] - lo[row]
    new_lo = np.where(before[k] == 0.0, lo[row], lo[row] + width * before[k])
    new_hi = np.where(after[k] == 1.0, hi[row], lo[row] + width * after[k])
    keep = new_lo < new_hi
    return row[keep], order[k][keep], new_lo[keep], new_hi[keep]


def _self_transpose(topology):
    """True if G^T = G as a network: every pair u->v has a v->u of equal bandwidth/latency."""
    psrc, pdst, pbw, plat = topology.pairs
    back = topology.pair_index(pdst, psrc)
    return bool(np.all(back >= 0) and np.array_equal(pbw[back], pbw)
                and np.array_equal(plat[back], plat))


def _check_isomorphism(topology, phi):
    """``phi`` as an int array, checked to map G onto G^T (pairs, bandwidth and latency)."""
    n = topology.num_nodes
    try:
        phi = np.asarray(phi, dtype=np.int64)
    except (TypeError, ValueError):
        raise InputTypeError("isomorphism must be a sequence of node ids") from None
    if phi.shape != (n,) or not np.array_equal(np.sort(phi), np.arange(n)):
        raise TopologyError(f"isomorphism must be a permutation of 0..{n - 1}")
    psrc, pdst, pbw, plat = topology.pairs
    # u -> v in G must become phi(u) -> phi(v) in G^T, i.e. phi(v) -> phi(u) in G
    image = topology.pair_index(phi[pdst], phi[psrc])
    ok = image >= 0
    if ok.all():
        ok = (pbw[image] == pbw) & (plat[image] == plat)
    if not ok.all():
        i = int(np.flatnonzero(~ok)[0])
        raise TopologyError(f"isomorphism does not map {topology.name} onto its transpose: link "
                            f"{psrc[i]}->{pdst[i]} has no equal image")
    return phi


def reverse_isomorphism(topology, *, limit=ISOMORPHISM_LIMIT):
    """An isomorphism ``phi`` from G to its transpose (``u -> v`` in G iff ``phi(u) -> phi(v)``
    in G^T, equal bandwidth and latency), as an array; the identity when G^T = G.

    Raises :class:`~topocoll.errors.UnsupportedError` if G is not reverse-symmetric, or if it
    has more than ``limit`` nodes and is not its own transpose (pass the isomorphism then).

    >>> from topocoll.topology import topology
    >>> phi = reverse_isomorphism(topology("kautz:2,2"))
    >>> sorted(phi.tolist())
    [0, 1, 2, 3, 4, 5]
    """
    n = topology.num_nodes
    if _self_transpose(topology):
        return np.arange(n, dtype=np.int64)
    psrc, pdst, pbw, plat = topology.pairs
    indeg, outdeg = topology.in_degree(), topology.out_degree()
    if not np.array_equal(np.sort(indeg * (n + 1) + outdeg), np.sort(outdeg * (n + 1) + indeg)):
        raise UnsupportedError(f"{topology.name} is not reverse-symmetric (its degree sequence "
                               "differs from its transpose's)")
    if n > limit:
        raise UnsupportedError(f"{topology.name} has {n} nodes; an isomorphism to its transpose "
                               f"is searched only up to {limit}: pass isomorphism=")
    import networkx as nx
    from networkx.algorithms.isomorphism import DiGraphMatcher

    attrs = [{"w": (float(b), float(l))} for b, l in zip(pbw, plat)]
    g = nx.DiGraph()
    g.add_nodes_from(range(n))
    g.add_edges_from(zip(psrc.tolist(), pdst.tolist(), attrs))
    gt = nx.DiGraph()
    gt.add_nodes_from(range(n))
    gt.add_edges_from(zip(pdst.tolist(), psrc.tolist(), attrs))
    matcher = DiGraphMatcher(g, gt, edge_match=lambda a, b: a["w"] == b["w"])
    if not matcher.is_isomorphic():
        raise UnsupportedError(f"{topology.name} is not reverse-symmetric (no isomorphism to its "
                               "transpose)")
    return np.array([matcher.mapping[v] for v in range(n)], dtype=np.int64)


def _transpose_allgather(ag, target, phi=None):
    """An allgather on ``target`` (a topology equal to ``ag.topology``'s transpose) from the
    allgather ``ag``: the same transfers if G^T = G, else ``ag`` relabelled through an
    isomorphism G -> G^T (Theorem 4 of Zhao et al.)."""
    g = ag.topology
    if _self_transpose(g):
        return ag.replace(topology=target)
    if phi is None:
        phi = reverse_isomorphism(g)
    else:
        phi = _check_isomorphism(g, phi)
    return relabel(ag, phi, topology=target)


def _split_allreduce(schedule):
    """An allreduce as (reduce-scatter, allgather): the reduce steps, then the copy steps."""
    t = schedule.transfers
    red = t["op"] == REDUCE
    if not red.any() or red.all():
        raise UnsupportedError("an allreduce to expand must be a reduce-scatter (reduce ops) "
                               "followed by an allgather (copy ops)")
    last = int(t["step"][red].max())
    if np.any(t["step"][~red] <= last):
        raise UnsupportedError("an allreduce to expand must be a reduce-scatter (reduce ops) "
                               "followed by an allgather (copy ops); its phases overlap")
    g = schedule.topology
    ag = t[~red].copy()
    ag["step"] -= last
    return (Schedule(g, "reduce_scatter", t[red], algorithm=schedule.algorithm),
            Schedule(g, "allgather", ag, algorithm=schedule.algorithm))


def _base_allgathers(schedule, gt):
    """(allgather on G or None, allgather on G^T or None) from the schedule's phases."""
    name = schedule.collective.name
    if name == "allgather":
        return schedule, None
    if name == "reduce_scatter":
        return None, reverse(schedule, "allgather", gt)
    rs, ag = _split_allreduce(schedule)
    return ag, reverse(rs, "allgather", gt)


# ---------------------------------------------------------------------------- allgather expansions
def _line_allgather(ag, topology=None):
    """Allgather on L(G) from an allgather on G (Zhao et al., Definition 2).

    L-node ``e = (y, x)`` owns shard ``e``. Step 1: every L-node sends its shard to all its
    out-neighbours, so each out-link ``(x, z)`` of x holds every shard ``(y, x)`` ("x's data").
    Then an A-transfer ``(t, v -> w, [lo, hi) of x's shard)`` becomes, at step t+1, for every
    link ``(w, z)`` of G, the transfer ``(v, w) -> (w, z)`` of ``[lo, hi)`` of every shard
    ``(y, x)``, split over parallel ``v -> w`` links by bandwidth; the receiver's own shard is
    left out (it holds it; sending it again would count it twice in the reversed
    reduce-scatter). Invariant: every out-link of w holds what w held in A one step earlier.
    """
    g = ag.topology
    lg = line_graph(g) if topology is None else topology
    n = g.num_nodes
    out_order, out_ptr = grouped(g.src, n)
    in_order, in_ptr = grouped(g.dst, n)
    outdeg, indeg = np.diff(out_ptr), np.diff(in_ptr)

    e, pos = ragged(outdeg[g.dst])
    f = out_order[out_ptr[g.dst[e]] + pos]
    first = _rows(1, e, f, e, 0.0, 1.0)

    t = ag.transfers
    row, link, lo, hi = _split_over_links(g, t)
    w = g.dst[link]
    x = t["shard"][row].astype(np.int64)
    k = indeg[x]
    r2, pos = ragged(outdeg[w] * k)
    kk = k[r2]
    f = out_order[out_ptr[w[r2]] + pos // kk]
    y = in_order[in_ptr[x[r2]] + pos % kk]
    keep = f != y
    r2, f, y = r2[keep], f[keep], y[keep]
    rest = _rows(t["step"][row][r2] + 1, link[r2], f, y, lo[r2], hi[r2])
    return Schedule(lg, "allgather", _by_step(np.concatenate([first, rest])),
                    algorithm=f"line({ag.algorithm})")


def _degree_allgather(ag, m, topology=None):
    """Allgather on G*m from an allgather on G (Zhao et al., Definition 4).

    An A-transfer ``(t, u -> w, [lo, hi) of x)`` becomes ``(t, u_i -> w_j, [lo, hi) of x_i)``
    for every i and j: copy i of every node forwards the shards of copy i, and every copy of
    the receiver gets them. Then one more step: each ``x_j`` takes every sibling shard ``x_i``
    (i != j) from all its in-links ``u_a -> x_j``, each carrying a share proportional to its
    bandwidth (1/(m*d) on a uniform network); ``u != x`` holds all of ``x_i`` by then."""
    g = ag.topology
    dg = degree_expansion(g, m) if topology is None else topology
    t = ag.transfers
    i = np.arange(m, dtype=np.int64)
    src = t["src"].astype(np.int64)[:, None, None] * m + i[None, :, None]
    dst = t["dst"].astype(np.int64)[:, None, None] * m + i[None, None, :]
    shard = t["shard"][:, None, None] * m + i[None, :, None]
    main = _rows(t["step"][:, None, None], src, dst, shard, t["lo"][:, None, None],
                 t["hi"][:, None, None])
    if m == 1:
        return Schedule(dg, "allgather", _by_step(main), algorithm=f"degree({ag.algorithm},m=1)")
    psrc, pdst, pbw, _ = dg.pairs
    order, ptr = grouped(pdst, dg.num_nodes)
    before, after = _cumulative_shares(pbw[order], ptr)
    receiver = pdst[order]
    j = receiver % m
    sib = np.arange(m - 1, dtype=np.int64)[None, :]
    sib = sib + (sib >= j[:, None])
    last = _rows(ag.last_step + 1, psrc[order][:, None], receiver[:, None],
                 (receiver // m * m)[:, None] + sib, before[:, None], after[:, None])
    return Schedule(dg, "allgather", _by_step(np.concatenate([main, last])),
                    algorithm=f"degree({ag.algorithm},m={m})")


def _power_allgather(ag, n, topology=None):
    """Allgather on G^n from an allgather on G (Zhao et al., Definition 14).

    Every shard is cut into n parts; in phase p (p = 0..n-1, steps(A) steps each) part k runs
    A along dimension ``j = (k + p) mod n``, so the parts use disjoint links at every step.
    An A-transfer ``(t, v -> w, [lo, hi) of x)`` becomes, for every assignment c of the other
    coordinates, ``(c, j = v) -> (c, j = w)`` carrying ``[(k + lo)/n, (k + hi)/n)`` of every
    shard whose origin has coordinate j equal to x, coordinates equal to c in the dimensions
    part k has not gathered yet, and any value in the dimensions it has."""
    g = ag.topology
    pg = cartesian_power(g, n) if topology is None else topology
    N = g.num_nodes
    total = N ** n
    weights = [N ** (n - 1 - d) for d in range(n)]
    ids = np.arange(total, dtype=np.int64)
    coords = [(ids // w) % N for w in weights]
    t = ag.transfers
    span = ag.last_step
    tv = t["src"].astype(np.int64)[:, None, None]
    tw = t["dst"].astype(np.int64)[:, None, None]
    tx = t["shard"].astype(np.int64)[:, None, None]
    tstep = t["step"][:, None, None]
    blocks = []
    for p in range(n):
        for k in range(n):
            j = (k + p) % n
            gathered = [(k + q) % n for q in range(p)]
            other = ids[coords[j] == 0]                  # every c, coordinate j zero
            fixed = other.copy()                         # c on the not-yet-gathered dims
            for d in gathered:
                fixed -= coords[d][other] * weights[d]
            free_mask = np.ones(total, dtype=bool)       # any value on the gathered dims
            for d in range(n):
                if d not in gathered:
                    free_mask &= coords[d] == 0
            free = ids[free_mask]
            wj = weights[j]
            blocks.append(_rows(
                tstep + p * span, tv * wj + other[None, :, None], tw * wj + other[None, :, None],
                tx * wj + fixed[None, :, None] + free[None, None, :],
                ((k + t["lo"]) / n)[:, None, None], ((k + t["hi"]) / n)[:, None, None]))
    return Schedule(pg, "allgather", _by_step(np.concatenate(blocks)),
                    algorithm=f"power({ag.algorithm},n={n})")


def _bidirectional_allgather(ag, phi, topology=None):
    """Allgather on G + G^T (Zhao et al., appendix F): ``[0, 1/2)`` of every shard runs A on G, and
    ``[1/2, 1)`` runs A relabelled through ``phi`` (an allgather on G^T) on the reverse links;
    the shard of x travels as shard phi(x) there."""
    g = ag.topology
    bg = bidirectional_union(g) if topology is None else topology
    t = ag.transfers
    a = t.copy()
    a["lo"], a["hi"] = t["lo"] / 2, t["hi"] / 2
    b = t.copy()
    b["src"], b["dst"], b["shard"] = phi[t["src"]], phi[t["dst"]], phi[t["shard"]]
    b["lo"], b["hi"] = 0.5 + t["lo"] / 2, 0.5 + t["hi"] / 2
    return Schedule(bg, "allgather", _by_step(np.concatenate([a, b])),
                    algorithm=f"bidir({ag.algorithm})")


# ---------------------------------------------------------------------------- the driver
def _expand(kind, schedule, params, make_topology, expand_ag, collective, phi=None):
    """Shared driver: expanded allgather, reduce-scatter (reversed expansion of the transposed
    base's allgather) or allreduce (both), with meta and predictions."""
    have, want = _collectives(kind, schedule, collective)
    g = schedule.topology
    gt = g.transpose()
    bases = _base_allgathers(schedule, gt)
    target = make_topology(g)
    predicted = []
    base_costs = {}

    def run(base, topology, label):
        steps, t_b = measure(base)
        base_costs[label] = {"steps": steps, "t_b": t_b}
        predicted.append(predict(kind, steps, t_b, g.num_nodes, **params))
        return expand_ag(base, topology)

    out_ag, out_rs, shared = _expanded_parts(bases, (g, gt, target), want, run, phi)
    if shared and want == "allreduce":
        predicted.append(predicted[0])
    if want == "allgather":
        result = out_ag
    elif want == "reduce_scatter":
        result = out_rs
    else:
        result = concatenate(out_rs, out_ag, "allreduce")
    steps = sum(p[0] for p in predicted[:2])
    t_b = sum(p[1] for p in predicted[:2])
    label = {"line": "line", "degree": "degree", "power": "power",
             "bidirectional": "bidir"}[kind]
    extra = "".join(f",{k}={v}" for k, v in params.items())
    history = list(schedule.meta.get("expansions", [])) + [f"{label}{extra}"]
    meta = {"expansion": {"kind": kind, **params, "base_topology": g.name,
                          "base_algorithm": schedule.algorithm,
                          "base_collective": have, "base_costs": base_costs},
            "expansions": history,
            "predicted": {"steps": int(steps), "t_b": float(t_b)},
            "t_b_unit": "M/B, B = smallest node egress bandwidth"}
    return result.replace(algorithm=f"{label}({schedule.algorithm}{extra})", meta=meta)


def _collectives(kind, schedule, collective):
    """``(have, want)``: the base schedule's collective and the one to make, both checked."""
    if not isinstance(schedule, Schedule):
        raise InputTypeError(f"{kind} expansion needs a Schedule, got {type(schedule).__name__}")
    have = schedule.collective.name
    want = have if collective is None else _collective(collective).name
    for name in (have, want):
        if name not in _SUPPORTED:
            raise UnsupportedError(f"{kind} expansion handles {', '.join(_SUPPORTED)} "
                                   f"schedules, not {name}")
    return have, want


def _expanded_parts(bases, graphs, want, run, phi):
    """``(allgather, reduce-scatter, shared)`` on the expanded topology as ``want`` needs them
    (None for one it does not), each expanded by ``run(base, topology, label)`` from ``bases``
    (:func:`_base_allgathers`); ``graphs``: ``(G, G^T, expanded G)``; ``shared``: one expanded
    allgather serves both directions (the expanded topology is its own transpose)."""
    ag, ag_t = bases
    g, gt, target = graphs
    need_ag = want in ("allgather", "allreduce")
    need_rs = want in ("reduce_scatter", "allreduce")
    out_ag = out_rs = None
    if _self_transpose(target) and need_rs:
        # X(G) = X(G)^T: one expanded allgather serves both directions
        if ag is not None:
            out_ag = run(ag, target, "allgather")
        else:
            out_ag = run(ag_t, None, "transposed_allgather").replace(topology=target)
        return out_ag, reverse(out_ag, "reduce_scatter", target), True
    if need_rs:
        if ag_t is None:
            ag_t = _transpose_allgather(ag, gt, phi)
        out_rs = reverse(run(ag_t, None, "transposed_allgather"), "reduce_scatter", target)
    if need_ag:
        if ag is None:
            ag = _transpose_allgather(ag_t, g, phi)
        out_ag = run(ag, target, "allgather")
    return out_ag, out_rs, False


def line_graph_expansion(schedule, *, collective=None):
    """The schedule on the line graph L(G) (Zhao et al., section 5.1, Definition 2).

    ``schedule``: an allgather, reduce-scatter or allreduce on G; ``collective``: the one to
    make (default: the same). Steps + 1; T_B at most ``t_B + 1/N`` in units of M/B.
    """
    return _expand("line", schedule, {}, line_graph, _line_allgather, collective)


def degree_expansion_schedule(schedule, m, *, collective=None):
    """The schedule on the degree expansion G*m (Zhao et al., section 5.2, Definition 4): m
    copies of every node; steps + 1 (none for m = 1), T_B ``t_B + (m-1)/(m*N)`` in units of
    M/B, so a bandwidth-optimal base stays bandwidth-optimal."""
    m = whole_number(m, "degree expansion: m")
    return _expand("degree", schedule, {"m": m}, lambda g: degree_expansion(g, m),
                   lambda ag, topo: _degree_allgather(ag, m, topo), collective)


def cartesian_power_expansion(schedule, n, *, collective=None):
    """The schedule on the Cartesian power G^n (Zhao et al., section 5.3, Definition 14): n parts
    of every shard run the base along the dimensions in rotated orders; n * steps, T_B
    ``t_B * N/(N-1) * (N^n-1)/N^n`` in units of M/B (bandwidth-optimal from an optimal base)."""
    n = whole_number(n, "cartesian power: n")
    return _expand("power", schedule, {"n": n}, lambda g: cartesian_power(g, n),
                   lambda ag, topo: _power_allgather(ag, n, topo), collective)


def bidirectional_expansion(schedule, isomorphism=None, *, collective=None):
    """The schedule on G + G^T for a reverse-symmetric G (Zhao et al., appendix F): half of
    every shard on the base schedule, half on it mapped through ``isomorphism`` (G -> G^T, found
    with networkx for at most :data:`ISOMORPHISM_LIMIT` nodes when not given) onto the reverse
    links. Same steps and the same T_B in units of M/B (the node bandwidth doubles)."""
    g = schedule.topology if isinstance(schedule, Schedule) else None
    if g is None:
        raise InputTypeError(f"bidirectional expansion needs a Schedule, got "
                             f"{type(schedule).__name__}")
    phi = reverse_isomorphism(g) if isomorphism is None else _check_isomorphism(g, isomorphism)
    # phi maps G onto G^T and equally G^T onto G, so it serves the transposed base too
    return _expand("bidirectional", schedule, {}, bidirectional_union,
                   lambda ag, topo: _bidirectional_allgather(ag, phi, topo), collective, phi)


def product_schedule(factors, collective="allgather", **options):
    """A schedule on the Cartesian product of different graphs: BFB on the product
    (Zhao et al., section 5.3; bandwidth-optimal when every factor's BFB is; translation
    symmetry of Cayley factors carries over). ``options`` go to
    :func:`~topocoll.synth.bfb.bfb_schedule`."""
    if isinstance(factors, (Topology, str)):
        factors = [factors]
    # spec strings are the registry's to read (the registry sits above topology.transforms)
    product = cartesian_product(*(build_topology(f) if isinstance(f, str) else f
                                  for f in factors))
    return bfb_schedule(product, _collective(collective), **options)


def expand_schedule(kind, schedule, **params):
    """Dispatch by kind: ``"line"``, ``"degree"`` (``m=``), ``"power"`` (``n=``),
    ``"bidirectional"`` (``isomorphism=``), ``"product"`` (``factors=``: the other factors;
    BFB on ``schedule.topology x factors``); ``collective=`` as in the functions."""
    kind = _kind(kind)
    if kind == "line":
        return line_graph_expansion(schedule, **params)
    if kind == "degree":
        return degree_expansion_schedule(schedule, **params)
    if kind == "power":
        return cartesian_power_expansion(schedule, **params)
    if kind == "bidirectional":
        return bidirectional_expansion(schedule, **params)
    factors = params.pop("factors", ())
    if isinstance(factors, (Topology, str)):
        factors = [factors]
    collective = params.pop("collective", None) or schedule.collective.name
    return product_schedule([schedule.topology, *factors], collective, **params)
