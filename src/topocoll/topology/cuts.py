"""Upper bounds on uniform all-to-all throughput (docs/math.md section 6).

All bounds are on ``lambda``, the rate in bytes/s that every ordered pair ``(x, y)``, ``x != y``,
can sustain at once (the multicommodity-flow LP of :mod:`topocoll.throughput`):

* :func:`injection_bound`: node ``x`` must push ``(N-1) lambda`` out through its egress and take
  ``(N-1) lambda`` in through its ingress bandwidth.
* :func:`agnostic_bound` (topology-agnostic): every pair's traffic crosses at least
  ``dist(x, y)`` links, and no digraph of out-degree ``d`` beats the Moore tree for the sum of
  distances from a node, so ``lambda <= C / (N * S_moore(N, d))`` with ``C`` the total link
  capacity; the injection bound is folded in.
* :func:`distance_bound`: ``lambda <= C / sum_{x != y} dist(x, y)`` (exact on arc-transitive
  graphs).
* :func:`bisection_bound`: traffic from ``S`` to its complement, ``|S| |S'| lambda``, crosses the
  directed cut, so ``lambda <= cut(S -> S') / (|S| |S'|)``; for balanced ``S`` this is the
  bisection bound ``cut / (N/2)^2``. It is exact (every balanced ``S`` enumerated) for small N;
  for large N a spectral (Fiedler-vector) bisection refined by greedy swaps gives a real cut, so
  the bound is still valid, only possibly looser than the exact one.

>>> from topocoll.topology import topology
>>> t = topology("ring:8", bandwidth=1.0)
>>> distance_bound(t), bisection_bound(t).bound   # 8/N^2 and 2/16
(0.125, 0.125)
>>> moore_distance_sum(7, 2)   # 2 nodes at distance 1, 4 at distance 2
10
"""

from dataclasses import dataclass
from itertools import combinations
from math import comb

import numpy as np

from ..errors import TopologyError
from .metrics import distance_sum, unreachable_pair

__all__ = ["injection_bound", "agnostic_bound", "distance_bound", "bisection_bound",
           "moore_distance_sum", "CutBound", "throughput_bounds", "EXACT_BISECTION_LIMIT"]

#: Exact bisection by enumeration while C(N, floor(N/2)) is at most this many sets.
EXACT_BISECTION_LIMIT = 200_000
_BLOCK = 8192  # subsets per vectorised block of the enumeration


def moore_distance_sum(num_nodes, degree):
    """Least possible sum of distances from one node to the other ``N-1`` nodes at out-degree d.

    >>> moore_distance_sum(64, 4)   # 4 + 16*2 + 43*3
    165
    """
    num_nodes, degree = int(num_nodes), int(degree)
    if num_nodes < 1 or degree < 1:
        raise TopologyError(f"the Moore distance sum needs N >= 1 and degree >= 1, got "
                            f"{num_nodes}, {degree}")
    left, layer, depth, total = num_nodes - 1, 1, 0, 0
    while left > 0:
        layer *= degree
        depth += 1
        take = min(layer, left)
        total += take * depth
        left -= take
    return total


def _capacity(topology):
    return float(topology.bandwidth.sum())


def injection_bound(topology):
    """``min(min egress, min ingress) / (N - 1)``: what the busiest endpoint allows.

    >>> from topocoll.topology import topology
    >>> injection_bound(topology("complete:5", bandwidth=1.0))
    1.0
    """
    n = topology.num_nodes
    if n < 2:
        return float("inf")
    return float(min(topology.egress_bandwidth().min(), topology.ingress_bandwidth().min())
                 / (n - 1))


def agnostic_bound(topology):
    """Topology-agnostic bound: total capacity over ``N`` times the Moore distance sum for the
    largest out-degree, and the injection bound; depends only on N, degree and capacities.

    On a d-regular network of link bandwidth b this is ``d b / S_moore(N, d)``.

    >>> from topocoll.topology import topology
    >>> round(agnostic_bound(topology("hypercube:4", bandwidth=1.0)), 6)   # 4/(4*1 + 11*2)
    0.153846
    """
    n = topology.num_nodes
    if n < 2:
        return float("inf")
    degree = int(topology.out_degree().max())
    moore = _capacity(topology) / (n * moore_distance_sum(n, degree))
    return float(min(moore, injection_bound(topology)))


def distance_bound(topology):
    """``total capacity / sum of pairwise hop distances``; 0 when some node cannot reach
    another (an infinite distance: no uniform all-to-all rate is possible).

    >>> from topocoll.topology import topology
    >>> distance_bound(topology("hypercube:4", bandwidth=1.0))   # 2/N
    0.125
    """
    n = topology.num_nodes
    if n < 2:
        return float("inf")
    if unreachable_pair(topology) is not None:
        return 0.0
    total = distance_sum(topology)
    return _capacity(topology) / total


@dataclass
class CutBound:
    """A bound from one cut: ``bound = cut / (|S| (N - |S|))`` for the set ``side`` (a boolean
    mask, traffic from it to the rest crossing ``cut`` bytes/s), how it was found (``"exact"``
    or ``"spectral"``), and for ``"spectral"`` the eigenvalue lower bound on the (symmetrised)
    bisection width, ``lambda_2 N / 4``."""

    bound: float
    cut: float
    side: np.ndarray
    method: str
    width_lower: float | None = None


def _cut_both(members, src, dst, cap):
    """Directed cut capacities out of and into each set (rows of a boolean matrix)."""
    a, b = members[:, src], members[:, dst]
    return (a & ~b) @ cap, (~a & b) @ cap


def _exact_bisection(n, src, dst, cap):
    k = n // 2
    best = (np.inf, None)
    it = combinations(range(n), k)
    while True:
        block = np.fromiter((i for c in _take(it, _BLOCK) for i in c), dtype=np.int64)
        if block.size == 0:
            break
        rows = block.reshape(-1, k)
        members = np.zeros((rows.shape[0], n), dtype=bool)
        members[np.arange(rows.shape[0])[:, None], rows] = True
        out, into = _cut_both(members, src, dst, cap)
        for cuts, flip in ((out, False), (into, True)):
            i = int(np.argmin(cuts))
            if cuts[i] < best[0]:
                best = (float(cuts[i]), ~members[i] if flip else members[i].copy())
    return best


def _take(it, count):
    for _ in range(count):
        try:
            yield next(it)
        except StopIteration:
            return


def _spectral_bisection(n, src, dst, cap, seed):
    """Fiedler-vector median split of the symmetrised capacities, then greedy pair swaps."""
    import scipy.sparse as sp

    w = sp.coo_matrix((cap, (src, dst)), shape=(n, n)).tocsr()
    w = (w + w.T).tocsr()
    deg = np.asarray(w.sum(axis=1)).ravel()
    lap = sp.diags(deg) - w
    if n <= 2048:
        vals, vecs = np.linalg.eigh(lap.toarray())
        lam2, fiedler = float(vals[1]), vecs[:, 1]
    else:
        from scipy.sparse.linalg import eigsh

        rng = np.random.default_rng(seed)
        vals, vecs = eigsh(lap.astype(np.float64), k=2, sigma=-1e-3, which="LM",
                           v0=rng.standard_normal(n))
        order = np.argsort(vals)
        lam2, fiedler = float(vals[order[1]]), vecs[:, order[1]]
    side = np.zeros(n, dtype=bool)
    side[np.argsort(fiedler, kind="stable")[:n // 2]] = True
    side = _refine(side, w.toarray() if n <= 4096 else w)
    return side, max(lam2, 0.0) * n / 4.0


def _refine(side, w, max_rounds=None):
    """Kernighan-Lin style: swap the best pair (one node per side) while the symmetric cut
    drops. Gains ``D_v = external - internal`` are updated incrementally."""
    dense = isinstance(w, np.ndarray)
    if not dense:
        return side
    n = side.size
    sign = np.where(side, 1.0, -1.0)
    # D_v = sum_u w_vu * [u on the other side] - sum_u w_vu * [u on v's side]
    d = -(w @ sign) * sign
    rounds = max_rounds if max_rounds is not None else 4 * n
    for _ in range(rounds):
        a_idx = np.flatnonzero(side)
        b_idx = np.flatnonzero(~side)
        if a_idx.size == 0 or b_idx.size == 0:
            break
        gain = d[a_idx][:, None] + d[b_idx][None, :] - 2.0 * w[np.ix_(a_idx, b_idx)]
        flat = int(np.argmax(gain))
        if gain.flat[flat] <= 1e-12 * max(1.0, float(np.abs(w).max())):
            break
        a, b = int(a_idx[flat // b_idx.size]), int(b_idx[flat % b_idx.size])
        side[a], side[b] = False, True
        sign = np.where(side, 1.0, -1.0)
        d = -(w @ sign) * sign
    return side


def bisection_bound(topology, *, exact_limit=EXACT_BISECTION_LIMIT, seed=0):
    """The bisection bound ``lambda <= min directed cut(S -> S') / (|S| |S'|)`` over balanced
    ``S``; exact (enumeration) while ``C(N, N/2) <= exact_limit``, else spectral (a valid bound
    from a good but not necessarily minimum bisection). Returns a :class:`CutBound`.

    >>> from topocoll.topology import topology
    >>> b = bisection_bound(topology("hypercube:3", bandwidth=1.0))
    >>> b.method, b.cut, b.bound   # 4 links cross a bisection of the 3-cube each way: 4/16
    ('exact', 4.0, 0.25)
    >>> bisection_bound(topology("hypercube:3", bandwidth=1.0), exact_limit=0).method
    'spectral'
    """
    n = topology.num_nodes
    if n < 2:
        return CutBound(float("inf"), 0.0, np.zeros(n, dtype=bool), "exact")
    psrc, pdst, cap, _ = topology.pairs
    if comb(n, n // 2) <= exact_limit:
        cut, side = _exact_bisection(n, psrc, pdst, cap)
        method, width_lower = "exact", None
    else:
        side, width_lower = _spectral_bisection(n, psrc, pdst, cap, seed)
        out, into = _cut_both(side[None, :], psrc, pdst, cap)
        if into[0] < out[0]:
            side = ~side
        cut = float(min(out[0], into[0]))
        method = "spectral"
    k = int(side.sum())
    return CutBound(bound=cut / (k * (n - k)), cut=cut, side=side, method=method,
                    width_lower=width_lower)


def throughput_bounds(topology, *, exact_limit=EXACT_BISECTION_LIMIT, seed=0):
    """All the bounds on ``lambda`` as one dict (bytes/s per ordered pair), plus
    ``bisection_method`` and ``best`` (the smallest bound).

    >>> from topocoll.topology import topology
    >>> b = throughput_bounds(topology("complete:6", bandwidth=1.0))
    >>> b["distance"], b["best"]
    (1.0, 1.0)
    """
    cut = bisection_bound(topology, exact_limit=exact_limit, seed=seed)
    out = {"injection": injection_bound(topology), "agnostic": agnostic_bound(topology),
           "distance": distance_bound(topology), "bisection": cut.bound,
           "bisection_method": cut.method, "bisection_cut": cut.cut}
    if cut.width_lower is not None:
        out["bisection_width_lower"] = cut.width_lower
    out["best"] = min(out["injection"], out["agnostic"], out["distance"], out["bisection"])
    return out
