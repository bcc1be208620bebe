"""The cost of the optimal BFB schedule of a topology without building the schedule.

BFB's load-balancing problem of receiver v at step t (docs/math.md section 2) is fractional
bipartite load balancing: sources u at distance t from v, each to be sent in full by in-
neighbours w of v with ``dist(u, w) = t-1``, minimising the busiest in-link's time. By max-flow
min-cut its optimum is a Hall-type maximum over sets A of in-neighbours::

    U(v, t) = max_A  #{u : every allowed sender of u is in A} / capacity(A)

With at most ``k`` in-neighbours per node that is ``2^k`` subsets, counted for all receivers at
once with a subset-sum transform: no linear program, no transfers. BFB's T_B is then
``sum_t max_v U(v, t) / N`` in units of M/B when every node's egress bandwidth is B (the value
:func:`topocoll.synth.bfb.bfb_allgather` reaches, to rounding; the tests compare them).

For the generalized Kautz digraph GK(n, d) (``i -> -d*i - j mod n``) the nodes reached from u
by walks of exactly s steps form the interval ``[S_s(u), S_s(u) + d^s)`` mod n with
``S_{s+1} = -d*S_s - d^(s+1)``, which gives its distances and diameter without a graph search.

>>> c = bfb_cost(__import__("topocoll").build_topology("hypercube:3"))
>>> c["steps"], round(c["t_b"], 12)
(3, 0.875)
"""

import numpy as np

from ..errors import UnsupportedError
from ..topology.metrics import distance_matrix, require_strongly_connected

__all__ = ["bfb_cost", "bfb_phases", "genkautz_cost", "genkautz_diameter", "MAX_IN_DEGREE"]

#: In-degree above which the 2^k subset counts get too large.
MAX_IN_DEGREE = 10
_BLOCK = 1 << 22          # (sources x receivers) cells per block


def _in_slots(n, src, dst, cap):
    """``(W, C)``: sender id and capacity of every in-link slot of every node (``-1``/0 pad)."""
    order = np.lexsort((src, dst))
    src, dst, cap = src[order], dst[order], cap[order]
    indeg = np.bincount(dst, minlength=n)
    k = int(indeg.max()) if indeg.size else 0
    if k > MAX_IN_DEGREE:
        raise UnsupportedError(f"the BFB cost evaluator handles in-degree up to {MAX_IN_DEGREE}, "
                               f"got {k}")
    start = np.r_[0, np.cumsum(indeg)[:-1]]
    slot = np.arange(src.size) - start[dst]
    W = np.full((n, max(k, 1)), -1, dtype=np.int64)
    C = np.zeros((n, max(k, 1)))
    W[dst, slot] = src
    C[dst, slot] = cap
    return W, C


def _subset_capacity(C):
    """``cap[v, A]``: summed capacity of the slots in subset A (bit j = slot j)."""
    n, k = C.shape
    idx = np.arange(1 << k)
    cap = np.zeros((n, 1 << k))
    for j in range(k):
        cap[:, (idx >> j) & 1 == 1] += C[:, j][:, None]
    return cap


def _hall(sources, W, C, receivers, max_steps):
    """``U[r, t]`` for receivers ``r`` and steps ``0..max_steps``.

    ``sources(xs)`` returns the ``(len(xs), N)`` distances ``dist(u, x)`` from every source u
    to each x.
    """
    k = W.shape[1]
    receivers = np.asarray(receivers, dtype=np.int64)
    out = np.zeros((receivers.size, max_steps + 1))
    if receivers.size == 0:
        return out
    idx = np.arange(1 << k)
    cap_all = _subset_capacity(C)
    n_sources = sources(receivers[:1]).shape[1]
    width = max(1, _BLOCK // max(n_sources * (k + 1), 1))
    for start in range(0, receivers.size, width):
        block = receivers[start:start + width]
        b = block.size
        senders = W[block]
        rows = sources(np.concatenate([block, np.where(senders >= 0, senders, 0).T.ravel()]))
        target = rows[:b] - np.array(1, dtype=rows.dtype)
        mask = np.zeros((b, n_sources), dtype=np.uint8)
        for j in range(k):
            hit = (rows[b * (j + 1):b * (j + 2)] == target).view(np.uint8)
            missing = senders[:, j] < 0
            if missing.any():
                hit[missing] = 0
            if j:
                hit <<= j
            mask |= hit
        dv = rows[:b].astype(np.int32)
        np.minimum(dv, max_steps + 1, out=dv)          # beyond max_steps: ignored bucket
        dv += (np.arange(b, dtype=np.int32) * (max_steps + 2))[:, None]
        dv <<= k
        dv |= mask
        counts = np.bincount(dv.ravel(), minlength=b * (max_steps + 2) << k)
        counts = counts.reshape(b, max_steps + 2, 1 << k)[:, :max_steps + 1, :]
        counts = counts.astype(float)
        for j in range(k):                               # subset sums (zeta transform)
            has = (idx >> j) & 1 == 1
            counts[:, :, has] += counts[:, :, idx[has] ^ (1 << j)]
        cap = cap_all[block][:, None, :]
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(cap > 0, counts / np.where(cap > 0, cap, 1.0),
                             np.where(counts > 0, np.inf, 0.0))
        out[start:start + b] = ratio[:, :, 1:].max(axis=2) if k else 0.0
    out[:, 0] = 0.0
    return out


def _cost_from_u(U, n):
    steps = int(np.flatnonzero(U.max(axis=0) > 0).max()) if np.any(U > 0) else 0
    if not np.all(np.isfinite(U)):
        raise UnsupportedError("BFB cost: a source has no sender (not strongly connected?)")
    return steps, float(U.max(axis=0).sum() / n)


def _unit_links(topology):
    """Distinct pairs with capacities for node egress bandwidth 1 split over the out-links."""
    unit = topology.with_node_bandwidth(1.0)
    psrc, pdst, pbw, _ = unit.pairs
    return psrc.astype(np.int64), pdst.astype(np.int64), pbw.astype(float)


def bfb_cost(topology, *, receivers=None, transpose=False):
    """Steps and T_B (units of M/B, every node's egress bandwidth split over its out-links) of
    the optimal BFB allgather on ``topology`` (``transpose``: on its transpose with the same
    link bandwidths, i.e. what BFB's reduce-scatter costs).

    ``receivers``: only these receivers' problems (a lower bound on T_B); default all (exact).
    Returns ``{"steps": .., "t_b": .., "exact": bool}``.
    """
    require_strongly_connected(topology, "the BFB cost")
    n = topology.num_nodes
    if n == 1:
        return {"steps": 0, "t_b": 0.0, "exact": True}
    dist = distance_matrix(topology)
    src, dst, cap = _unit_links(topology)
    if transpose:
        src, dst = dst, src
        rows = dist                              # dist_T(u, x) = dist(x, u): row x
    else:
        rows = np.ascontiguousarray(dist.T)      # dist(u, x) for all u: row x of dist^T
    W, C = _in_slots(n, src, dst, cap)
    exact = receivers is None
    receivers = np.arange(n) if receivers is None else np.unique(receivers)
    U = _hall(lambda xs: rows[xs], W, C, receivers, int(dist.max()))
    steps, t_b = _cost_from_u(U, n)
    return {"steps": steps, "t_b": t_b, "exact": exact}


def bfb_phases(topology, *, receivers=None, dist=None):
    """Both phases of a BFB allreduce at once: ``{"steps", "t_b_ag", "t_b_rs", "exact"}`` (the
    allgather's T_B and the reduce-scatter's, i.e. BFB on the transpose; units of M/B), from
    one distance matrix (``dist``, when the caller has it). ``receivers`` as in
    :func:`bfb_cost` (on a vertex-transitive topology one receiver gives the exact cost).

    >>> c = bfb_phases(__import__("topocoll").build_topology("kautz:2,2"))
    >>> c["steps"], c["t_b_ag"] == c["t_b_rs"]
    (2, True)
    """
    n = topology.num_nodes
    if dist is None:
        require_strongly_connected(topology, "the BFB cost")
        dist = distance_matrix(topology)
    elif np.any(dist < 0):
        raise UnsupportedError("BFB cost: the topology is not strongly connected")
    src, dst, cap = _unit_links(topology)
    exact = receivers is None
    receivers = np.arange(n) if receivers is None else np.unique(receivers)
    steps = int(dist.max())
    to = np.ascontiguousarray(dist.T)
    W, C = _in_slots(n, src, dst, cap)
    _, t_ag = _cost_from_u(_hall(lambda xs: to[xs], W, C, receivers, steps), n)
    Wt, Ct = _in_slots(n, dst, src, cap)
    _, t_rs = _cost_from_u(_hall(lambda xs: dist[xs], Wt, Ct, receivers, steps), n)
    return {"steps": steps, "t_b_ag": t_ag, "t_b_rs": t_rs, "exact": exact}


# ---------------------------------------------------------------------- generalized Kautz
def _gk_levels(n, d):
    """Interval starts ``S[s, u]`` and lengths ``L[s]`` of the walks of exactly s steps from u,
    up to the first level that covers every node."""
    starts = [np.arange(n, dtype=np.int64)]
    lengths = [1]
    while lengths[-1] < n:
        s, length = starts[-1], lengths[-1]
        starts.append((-d * s - d * length) % n)
        lengths.append(length * d)
    return np.array(starts), np.array(lengths, dtype=np.int64)


def _gk_to(n, S, L, xs):
    """``dist(u, x)`` for each x in ``xs`` (rows) and every source u (columns)."""
    xs = np.asarray(xs, dtype=np.int64)
    dist = np.full((xs.size, n), S.shape[0], dtype=np.int8)
    for s in range(S.shape[0] - 1, -1, -1):
        diff = xs[:, None] - S[s][None, :]
        diff += n * (diff < 0)
        dist[diff < L[s]] = s
    return dist


def _gk_matrix(n, S, L):
    """All distances ``dist(u, x)`` (row u): each row is filled interval by interval, the
    farthest level first, so that nearer levels overwrite (about n*D slice assignments)."""
    top = S.shape[0] - 1
    dist = np.full((n, n), top, dtype=np.int8)          # the last level reaches everyone
    for s in range(top - 1, -1, -1):
        length = int(L[s])
        for u, a in enumerate(S[s].tolist()):
            b = a + length
            row = dist[u]
            if b <= n:
                row[a:b] = s
            else:
                row[a:] = s
                row[:b - n] = s
    return dist


def _gk_from(n, S, L, xs):
    """``dist(x, u)`` for each x in ``xs`` (rows) and every u (columns)."""
    xs = np.asarray(xs, dtype=np.int64)
    u = np.arange(n, dtype=np.int64)
    dist = np.full((xs.size, n), S.shape[0], dtype=np.int8)
    for s in range(S.shape[0] - 1, -1, -1):
        diff = u[None, :] - S[s][xs][:, None]
        diff += n * (diff < 0)
        dist[diff < L[s]] = s
    return dist


def genkautz_diameter(n, d):
    """Diameter of GK(n, d) from the walk intervals: the eccentricity of u is the first level
    at which the intervals of levels ``0..s`` cover all n nodes.

    >>> genkautz_diameter(50, 3), genkautz_diameter(20, 4)
    (4, 2)
    """
    if n <= 1:
        return 0
    S, L = _gk_levels(n, d)
    lengths = np.minimum(L, n)
    total = np.cumsum(lengths)
    for s in range(S.shape[0]):
        if total[s] < n:
            continue
        starts = S[:s + 1]                                # (s+1, n)
        lens = lengths[:s + 1][:, None]
        order = np.argsort(starts, axis=0, kind="stable")
        st = np.take_along_axis(starts, order, axis=0)
        ln = np.take_along_axis(np.broadcast_to(lens, starts.shape), order, axis=0)
        reach = np.maximum((starts + lens - n).max(axis=0), 0)
        covered = np.ones(n, dtype=bool)
        for i in range(s + 1):
            covered &= st[i] <= reach
            reach = np.maximum(reach, st[i] + ln[i])
        covered &= reach >= n
        if covered.all():
            return s
    return S.shape[0] - 1


def _gk_topology_links(n, d):
    """Distinct pairs of GK(n, d) without self-loops, with capacities for node bandwidth 1."""
    i = np.repeat(np.arange(n, dtype=np.int64), d)
    j = np.tile(np.arange(1, d + 1, dtype=np.int64), n)
    dst = (-d * i - j) % n
    keep = i != dst
    src, dst = i[keep], dst[keep]
    links_out = np.bincount(src, minlength=n)
    key = src * n + dst
    uniq, count = np.unique(key, return_counts=True)
    psrc, pdst = uniq // n, uniq % n
    return psrc, pdst, count / links_out[psrc]


def _sample(n, psrc, pdst, size):
    """Receivers for a sampled cost: the nodes that lost a self-loop and their neighbours
    (where the largest loads hide), evenly spaced nodes and a few seeded random ones."""
    outdeg = np.bincount(psrc, minlength=n)
    short = np.flatnonzero(outdeg < outdeg.max())
    near = np.concatenate([short, pdst[np.isin(psrc, short)], psrc[np.isin(pdst, short)]])
    rng = np.random.default_rng(n)
    picks = [near, np.linspace(0, n - 1, max(size // 2, 1)).astype(np.int64),
             rng.integers(0, n, max(size - size // 2, 1))]
    return np.unique(np.concatenate(picks))


def genkautz_cost(n, d, *, sample=None):
    """BFB costs of the generalized Kautz digraph GK(n, d) with self-loops dropped (as
    ``genkautz:N,D`` builds it) and each node's egress bandwidth split over its links.

    Returns ``{"steps", "t_b_ag", "t_b_rs", "exact"}``: the allgather's and the reduce-
    scatter's (BFB on the transpose) T_B in units of M/B. ``sample``: evaluate only about this
    many receivers (nodes next to self-loops, evenly spaced and random ones), which gives a
    lower bound on each T_B (``exact`` False); default all receivers (exact).

    >>> c = genkautz_cost(37, 4)
    >>> c["steps"], round(c["t_b_ag"], 6), c["exact"]
    (3, 1.297297, True)
    """
    n, d = int(n), int(d)
    if n < 2 or d < 1:
        raise UnsupportedError(f"genkautz needs n >= 2 and d >= 1, got {n}, {d}")
    psrc, pdst, cap = _gk_topology_links(n, d)
    S, L = _gk_levels(n, d)
    steps = genkautz_diameter(n, d)
    exact = sample is None or sample >= n
    receivers = np.arange(n) if exact else _sample(n, psrc, pdst, int(sample))
    if exact and n * n <= 64 << 20:
        frm = _gk_matrix(n, S, L)                           # frm[x, u] = dist(x, u)
        to = np.ascontiguousarray(frm.T)                    # to[x, u] = dist(u, x)
        ag, rs = (lambda xs: to[xs]), (lambda xs: frm[xs])
    else:
        ag = lambda xs: _gk_to(n, S, L, xs)                 # noqa: E731
        rs = lambda xs: _gk_from(n, S, L, xs)               # noqa: E731
    W, C = _in_slots(n, psrc, pdst, cap)
    _, t_ag = _cost_from_u(_hall(ag, W, C, receivers, steps), n)
    Wt, Ct = _in_slots(n, pdst, psrc, cap)
    _, t_rs = _cost_from_u(_hall(rs, Wt, Ct, receivers, steps), n)
    return {"steps": steps, "t_b_ag": t_ag, "t_b_rs": t_rs, "exact": bool(exact)}
