"""The exact optimum of allgather and reduce-scatter by spanning-tree packing, and of
allreduce among schedules made of a reduce-scatter followed by an allgather (the *two-phase*
optimum: an allreduce of another shape may be faster; docs/math.md sections 1 and 9).

Allgather: every byte of the shards of the nodes in a set S must leave S at least once, so for
every nonempty proper subset S, ``T_B >= (M/N) * |S| / c_out(S)`` (``c_out``: summed bandwidth
of the links leaving S). By Edmonds' arborescence-packing theorem the largest of these bounds
is met by a weighted packing of spanning out-trees, one unit of weight per root, pipelined
(:mod:`.forest`). Reduce-scatter is the same on the transposed topology (in-trees);
allreduce, built as reduce-scatter then allgather, is the sum of the two.

``max_S |S| / c_out(S)`` is found exactly by Dinkelbach's iteration on the ratio with a
min-cut oracle on integer capacities: for a candidate ratio ``a/b`` (``a = |S|``, ``b`` the
integer capacity out of S), add a source with a link of capacity ``b`` to every node and
scale every link by ``a``; a cut separating the source from a node v has capacity
``b (N - |Y|) + a c_out(Y)`` with Y its source side, so some Y beats the ratio iff some max-flow
falls below ``b N``. The smallest cut gives the next, larger ratio; when none falls below, the
ratio is proven optimal.

>>> from topocoll.topology import topology
>>> b = tree_packing_bound(topology("ring:8", bandwidth=1.0), "allgather")
>>> b.ratio, b.factor, b.exact      # |S| / c_out(S) = 7/2: all but one node; T* = 7/16 M
(Fraction(7, 2), Fraction(7, 16), True)
>>> b.time("1MiB")
458752.0
"""

from dataclasses import dataclass
from fractions import Fraction
from math import gcd, lcm

import numpy as np

from ..options import require_collective
from ...errors import TopologyError
from ...topology import topology as _topology
from ...topology.metrics import require_strongly_connected
from ...units import parse_size

__all__ = ["tree_packing_bound", "PackingBound", "integer_capacities", "PACKING_COLLECTIVES"]

PACKING_COLLECTIVES = ("allgather", "reduce_scatter", "allreduce")

#: Largest capacity of one link in scipy's (int32) max-flow.
_FLOW_LIMIT = 2**31 - 1


@dataclass(frozen=True)
class PackingBound:
    """The optimal bandwidth time of a collective in the step model, per byte of the buffer.

    Attributes
    ----------
    collective : str
        ``allgather``, ``reduce_scatter`` or ``allreduce``.
    factor : Fraction
        ``T* = factor * M`` seconds for a buffer of M bytes (bandwidths in bytes/s).
    ratio : Fraction or None
        ``max_S |S| / c_out(S)`` in seconds per shard (``factor = ratio / N``); for allreduce
        None (it is the sum of two ratios, see ``parts``).
    critical : numpy.ndarray of bool or None
        A set S that attains the ratio (for reduce-scatter: S of the transposed topology, i.e.
        ``(N - |S|) / c_in(V - S)``); None for allreduce.
    exact : bool
        True if the optimum is proven with exact integer arithmetic; False if the bandwidths
        had to be rounded to a grid for the max-flow oracle (then ``factor`` is still a valid
        lower bound from a real cut, and optimal for the rounded bandwidths).
    iterations : int
        Dinkelbach iterations (rounds of N max-flows).
    parts : tuple
        For allreduce, the reduce-scatter and allgather bounds; else empty.
    """

    collective: str
    factor: Fraction
    ratio: Fraction | None
    critical: np.ndarray | None
    exact: bool
    iterations: int
    parts: tuple = ()

    @property
    def per_byte(self):
        """``factor`` as a float (seconds per byte of M)."""
        return float(self.factor)

    def time(self, size):
        """``T*`` in seconds for a buffer of ``size`` bytes (``"1MiB"`` or a number)."""
        return float(self.factor * Fraction(parse_size(size)))

    def to_dict(self):
        out = {"collective": self.collective, "factor": str(self.factor),
               "per_byte": self.per_byte, "exact": self.exact, "iterations": self.iterations}
        if self.ratio is not None:
            out["ratio"] = str(self.ratio)
            out["critical"] = np.flatnonzero(self.critical).tolist()
        if self.parts:
            out["parts"] = [p.to_dict() for p in self.parts]
        return out


def integer_capacities(bandwidth, limit=None):
    """Bandwidths as whole multiples of one unit: ``(caps, unit, exact)``.

    ``unit`` is a Fraction with ``bandwidth == caps * unit`` exactly when ``exact``; floats are
    binary fractions, so the exact unit always exists, but if its integers would exceed
    ``limit`` (total capacity), the bandwidths are rounded to a coarser grid instead.

    >>> integer_capacities(np.array([12.5e9, 25e9, 37.5e9]))
    (array([1, 2, 3]), Fraction(12500000000, 1), True)
    """
    values = [Fraction(float(x)) for x in np.asarray(bandwidth, dtype=float)]
    den = lcm(*(v.denominator for v in values)) if values else 1
    num = 0
    for v in values:
        num = gcd(num, v.numerator * (den // v.denominator))
    unit = Fraction(num, den) if num else Fraction(1)
    caps = [int(v / unit) for v in values]
    if limit is None or sum(caps) <= limit:
        return np.array(caps, dtype=np.int64), unit, True
    # round to a grid: the smallest link gets a large whole number, the total stays in range
    bw = np.asarray(bandwidth, dtype=float)
    scale = limit / bw.sum()
    caps = np.maximum(1, np.floor(bw * scale)).astype(np.int64)
    return caps, Fraction(1) / Fraction(scale), False


def _cut_ratio(side, psrc, pdst, caps):
    out = side[psrc] & ~side[pdst]
    return int(side.sum()), int(caps[out].sum())


def _flow_graph(n, psrc, pdst, caps, a, b):
    """Links scaled by ``a`` plus a source (node n) with capacity ``b`` to every node."""
    import scipy.sparse as sp  # imported when first needed (start-up time)

    rows = np.r_[psrc, np.full(n, n)]
    cols = np.r_[pdst, np.arange(n)]
    data = np.r_[caps * a, np.full(n, b, dtype=np.int64)]
    return sp.csr_matrix((data.astype(np.int32), (rows, cols)), shape=(n + 1, n + 1))


def _source_side(graph, flow, source):
    """Nodes reachable from the source in the residual graph of a maximum flow."""
    import scipy.sparse as sp  # imported when first needed (start-up time)
    from scipy.sparse.csgraph import breadth_first_order

    cap = graph.tocoo()
    f = np.asarray(flow[cap.row, cap.col]).ravel()
    fwd = cap.data - f > 0
    back = f > 0
    n = graph.shape[0]
    rows = np.r_[cap.row[fwd], cap.col[back]]
    cols = np.r_[cap.col[fwd], cap.row[back]]
    residual = sp.csr_matrix((np.ones(rows.size, dtype=np.int8), (rows, cols)), shape=(n, n))
    reach = breadth_first_order(residual, source, directed=True, return_predecessors=False)
    side = np.zeros(n, dtype=bool)
    side[reach] = True
    return side[:-1]


def _start(n, psrc, pdst, caps):
    """The better of the single-node sets and the all-but-one-node sets."""
    egress = np.bincount(psrc, weights=caps, minlength=n)
    ingress = np.bincount(pdst, weights=caps, minlength=n)
    u = int(np.argmin(egress))
    v = int(np.argmin(ingress))
    one = np.zeros(n, dtype=bool)
    one[u] = True
    rest = np.ones(n, dtype=bool)
    rest[v] = False
    a1, b1 = _cut_ratio(one, psrc, pdst, caps)
    a2, b2 = _cut_ratio(rest, psrc, pdst, caps)
    return (one, a1, b1) if Fraction(a1, b1) >= Fraction(a2, b2) else (rest, a2, b2)


def _max_ratio(topology, progress=None):
    """``(ratio in seconds per shard as a Fraction, critical set, exact, iterations)``."""
    from scipy.sparse.csgraph import maximum_flow  # imported when first needed (start-up time)

    n = topology.num_nodes
    psrc, pdst, pbw, _ = topology.pairs
    # scipy's max-flow holds capacities in int32: links are scaled by a <= N, the source's
    # links carry b <= the total capacity
    caps, unit, exact = integer_capacities(pbw, limit=_FLOW_LIMIT // (n + 1))
    side, a, b = _start(n, psrc, pdst, caps)
    iterations = 0
    while True:
        iterations += 1
        graph = _flow_graph(n, psrc, pdst, caps, a, b)
        best = (b * n, None)
        for v in range(n):
            res = maximum_flow(graph, n, v, method="dinic")
            if res.flow_value < best[0]:
                best = (int(res.flow_value), v, res.flow)
            if progress:
                progress(v + 1, n)
        if best[1] is None:
            break
        new = _source_side(graph, best[2], n)
        na, nb = _cut_ratio(new, psrc, pdst, caps)
        if Fraction(na, nb) <= Fraction(a, b):   # cannot happen with exact integers
            raise TopologyError("tree packing bound: the min-cut oracle did not improve the "
                                "ratio (capacities out of range)")
        side, a, b = new, na, nb
    # the ratio of the critical set in the topology's own bandwidths (exact fractions)
    out = side[psrc] & ~side[pdst]
    c_out = sum((Fraction(float(x)) for x in pbw[out]), Fraction(0))
    return Fraction(int(side.sum())) / c_out, side, exact, iterations


def tree_packing_bound(topology, collective="allgather", *, progress=None):
    """The exact optimal ``T_B`` of ``collective`` in the step model (docs/math.md section 9).

    Parameters
    ----------
    topology : Topology
        Strongly connected, without switches.
    collective : str
        ``allgather`` (out-trees), ``reduce_scatter`` (in-trees) or ``allreduce`` (the sum).
    progress : callable, optional
        ``progress(done, total)`` over the max-flows of each Dinkelbach iteration.

    Returns
    -------
    PackingBound
        ``factor`` (``T* = factor * M``) as a Fraction, the critical set, whether exact.

    Examples
    --------
    Two triangles joined by one link each way: the bottleneck is the joining link.

    >>> from topocoll.topology import Topology
    >>> tri = [(0, 1), (1, 2), (2, 0), (3, 4), (4, 5), (5, 3)]
    >>> links = tri + [(v, u) for u, v in tri] + [(0, 3), (3, 0)]
    >>> t = Topology(6, *zip(*links), bandwidth=1.0)
    >>> b = tree_packing_bound(t, "allgather")
    >>> b.ratio, sorted(np.flatnonzero(b.critical).tolist()) in ([0, 1, 2], [3, 4, 5])
    (Fraction(3, 1), True)
    >>> tree_packing_bound(t, "allreduce").factor   # 2 * 3/6
    Fraction(1, 1)
    """
    topology = _topology(topology)
    coll = require_collective(collective, PACKING_COLLECTIVES, "trees")
    topology.require_no_switches("the tree packing bound")
    topology.require_nodes(2, "the tree packing bound")
    require_strongly_connected(topology, "the tree packing bound")
    n = topology.num_nodes
    if coll.name == "allreduce":
        rs = tree_packing_bound(topology, "reduce_scatter", progress=progress)
        ag = tree_packing_bound(topology, "allgather", progress=progress)
        return PackingBound("allreduce", rs.factor + ag.factor, None, None,
                            rs.exact and ag.exact, rs.iterations + ag.iterations, (rs, ag))
    net = topology if coll.name == "allgather" else topology.transpose()
    ratio, side, exact, iterations = _max_ratio(net, progress)
    return PackingBound(coll.name, ratio / n, ratio, side, exact, iterations)
