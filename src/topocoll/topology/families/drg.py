"""Distance-regular graphs: the catalogue of Table 7 of
Zhao et al. (NSDI 2025) and four parametrized families.

A connected graph is *distance-regular* when, for nodes ``u, v`` at distance ``i``, the numbers
``c_i``, ``a_i``, ``b_i`` of neighbours of ``v`` at distance ``i-1``, ``i``, ``i+1`` from ``u``
depend only on ``i``; the *intersection array* ``{b_0, ..., b_{D-1}; c_1, ..., c_D}`` lists
them. On every distance-regular graph BFB gives a bandwidth-optimal allgather in ``D`` steps
(appendix E.3 of that paper). All graphs here are undirected (two links per edge) and regular.

Node numbering: ``k``-subsets of ``{0..n-1}`` are numbered in colexicographic order, the subset
``c_0 < ... < c_{k-1}`` being ``sum(C(c_i, i+1))``; incidence graphs number the points first,
then the lines (or blocks); line graphs number the edges of the base graph in increasing
``(u, v)`` order (``u < v``); Paley graphs number GF(q) as in :mod:`.finite_field`.
"""

import itertools
import math
from types import MappingProxyType

import numpy as np

from ...errors import SpecError
from ...defaults import LINK_BANDWIDTH, LINK_LATENCY
from .checks import as_int, at_least, check_size, make_topology, rows_to_links
from .finite_field import GaloisField, prime_power

__all__ = ["distance_regular_graph", "paley_graph", "odd_graph", "doubled_odd_graph",
           "johnson_graph", "DISTANCE_REGULAR_GRAPHS", "projective_points"]


# ---------------------------------------------------------------------- link helpers
def _edge_links(u, v):
    """Both directions of the undirected edges ``u[i] -- v[i]``, sorted by (src, dst)."""
    src = np.concatenate([u, v]).astype(np.int64)
    dst = np.concatenate([v, u]).astype(np.int64)
    order = np.lexsort((dst, src))
    return src[order], dst[order]


def _incidence_links(incident):
    """Links of the incidence graph of a ``(points, blocks)`` boolean matrix (points first)."""
    points, blocks = np.nonzero(incident)
    return incident.shape[0] + incident.shape[1], *_edge_links(points, blocks + incident.shape[0])


def _line_graph(num_nodes, src, dst):
    """Line graph of a regular simple graph given by its links: nodes are its edges ``u < v`` in
    increasing order, adjacent when they share an end."""
    keep = src < dst
    u, v = src[keep], dst[keep]
    order = np.lexsort((v, u))
    u, v = u[order], v[order]
    edges = np.arange(u.size, dtype=np.int64)
    ends = np.concatenate([u, v])
    by_end = np.concatenate([edges, edges])[np.argsort(ends, kind="stable")]
    incident = by_end.reshape(num_nodes, -1)          # edges at each node (regular graph)
    a, b = np.triu_indices(incident.shape[1], 1)
    return u.size, *_edge_links(incident[:, a].ravel(), incident[:, b].ravel())


def _circulant_rows(n, offsets):
    ids = np.arange(n, dtype=np.int64)[:, None]
    return n, *rows_to_links((ids + np.asarray(offsets, dtype=np.int64)[None, :]) % n)


# ---------------------------------------------------------------------- k-subsets
def _binomials(n, k):
    """``C(x, j)`` for ``x <= n``, ``j <= k``, saturating at ``2**61`` (never reached by a rank)."""
    table = np.zeros((n + 1, k + 1), dtype=np.int64)
    table[:, 0] = 1
    for x in range(1, n + 1):
        table[x, 1:] = np.minimum(table[x - 1, 1:] + table[x - 1, :-1], 1 << 61)
    return table


class _Subsets:
    """The ``k``-subsets of ``{0..n-1}`` as sorted rows, row ``r`` being colex rank ``r``."""

    def __init__(self, n, k):
        self.n, self.k = n, k
        self.table = _binomials(n, k)
        rows = np.array(list(itertools.combinations(range(n), k)), dtype=np.int64).reshape(-1, k)
        self.rows = np.empty_like(rows)
        self.rows[self.rank(rows)] = rows

    def rank(self, rows):
        """Colex ranks of sorted subset rows (any leading shape)."""
        return self.table[rows, np.arange(1, self.k + 1)].sum(axis=-1)

    def complements(self):
        """The sorted complement of every subset, shape ``(N, n - k)``."""
        member = np.zeros((self.rows.shape[0], self.n), dtype=bool)
        member[np.arange(self.rows.shape[0])[:, None], self.rows] = True
        return np.nonzero(~member)[1].reshape(-1, self.n - self.k)


def _odd(k):
    """O_k: (k-1)-subsets of 2k-1 points, adjacent iff disjoint (the complement minus a point)."""
    subsets = _Subsets(2 * k - 1, k - 1)
    comp = subsets.complements()                                    # (N, k)
    dst = np.stack([subsets.rank(np.delete(comp, j, axis=1)) for j in range(k)], axis=1)
    return dst.shape[0], *rows_to_links(dst)


def _doubled_odd(k):
    """D(O_k): (k-1)- and k-subsets of 2k-1 points, adjacent iff one contains the other."""
    small, large = _Subsets(2 * k - 1, k - 1), _Subsets(2 * k - 1, k)
    m = small.rows.shape[0]
    comp = small.complements()                                      # (m, k)
    up = np.stack([large.rank(np.sort(np.concatenate([small.rows, comp[:, j:j + 1]], axis=1),
                                      axis=1)) for j in range(k)], axis=1) + m
    down = np.stack([small.rank(np.delete(large.rows, j, axis=1)) for j in range(k)], axis=1)
    return 2 * m, *rows_to_links(np.concatenate([up, down]))


def _johnson(n, k):
    """J(n, k): k-subsets of n points, adjacent iff they share k-1 points."""
    subsets = _Subsets(n, k)
    rows, comp = subsets.rows, subsets.complements()                # (N, k), (N, n-k)
    columns = []
    for i in range(k):
        kept = np.delete(rows, i, axis=1)                           # (N, k-1)
        new = np.concatenate([np.repeat(kept[:, None, :], n - k, axis=1), comp[:, :, None]],
                             axis=2)
        columns.append(subsets.rank(np.sort(new, axis=2)))          # (N, n-k)
    return rows.shape[0], *rows_to_links(np.concatenate(columns, axis=1))


# ---------------------------------------------------------------------- finite geometry
def _sum(field, terms):
    total = terms[0]
    for term in terms[1:]:
        total = field.add(total, term)
    return total


def projective_points(field, dim):
    """The points of PG(dim-1, q): vectors whose first non-zero coordinate is 1, increasing in
    their base-q code (first coordinate most significant)."""
    q = field.q
    codes = np.arange(q**dim, dtype=np.int64)
    vec = (codes[:, None] // q ** np.arange(dim - 1, -1, -1, dtype=np.int64)) % q
    lead = vec[np.arange(codes.size), np.argmax(vec != 0, axis=1)]
    return vec[lead == 1]


def _point_index(field, points, vec):
    """Index in ``points`` of the projective point of each non-zero vector in ``vec``."""
    q, dim = field.q, points.shape[1]
    lead = vec[np.arange(vec.shape[0]), np.argmax(vec != 0, axis=1)]
    normal = field.mul(vec, field.inverse_table()[lead][:, None])
    place = q ** np.arange(dim - 1, -1, -1, dtype=np.int64)
    return np.searchsorted(points @ place, normal @ place)


def _lines(field, points, first, second):
    """The lines spanned by the point pairs ``(first[i], second[i])``, deduplicated, as sorted
    rows of ``q + 1`` point indices."""
    x, y = points[first], points[second]
    members = [second]
    for c in range(field.q):
        members.append(_point_index(field, points, field.add(x, field.mul(y, c))))
    return np.unique(np.sort(np.stack(members, axis=1), axis=1), axis=0)


def _incidence_from_lines(num_points, lines):
    incident = np.zeros((num_points, lines.shape[0]), dtype=bool)
    incident[lines, np.arange(lines.shape[0])[:, None]] = True
    return incident


def _projective_plane(q):
    """Point-line incidence matrix of PG(2, q): ``x`` on ``[y]`` iff ``x . y = 0``."""
    field = GaloisField(q)
    pts = projective_points(field, 3)
    dot = _sum(field, [field.mul(pts[:, None, i], pts[None, :, i]) for i in range(3)])
    return dot == 0


def _affine_plane_minus_class(q):
    """AG(2, q) without its vertical lines: point ``(x, y)`` = ``q*x + y`` lies on line
    ``(m, b)`` = ``q*m + b`` iff ``y = m*x + b``."""
    field = GaloisField(q)
    x, y = np.divmod(np.arange(q * q, dtype=np.int64), q)
    m, b = np.divmod(np.arange(q * q, dtype=np.int64), q)
    return y[:, None] == field.add(field.mul(m[None, :], x[:, None]), b[None, :])


def _symplectic_quadrangle(q):
    """Incidence matrix of the generalized quadrangle W(q): points of PG(3, q), lines the
    lines totally isotropic for ``x0 y1 - x1 y0 + x2 y3 - x3 y2``."""
    field = GaloisField(q)
    pts = projective_points(field, 4)
    i, j = np.triu_indices(pts.shape[0], 1)
    x, y = pts[i], pts[j]
    form = _sum(field, [field.mul(x[:, 0], y[:, 1]), field.neg(field.mul(x[:, 1], y[:, 0])),
                        field.mul(x[:, 2], y[:, 3]), field.neg(field.mul(x[:, 3], y[:, 2]))])
    iso = form == 0
    return _incidence_from_lines(pts.shape[0], _lines(field, pts, i[iso], j[iso]))


def _split_cayley_hexagon(q):
    """Incidence matrix of the split Cayley hexagon H(q) (a generalized hexagon of order
    (q, q)): the points of the quadric ``x0 x4 + x1 x5 + x2 x6 = x3^2`` in PG(6, q), and the
    lines of that quadric whose Grassmann coordinates satisfy ``p12 = p34, p54 = p32,
    p20 = p35, p65 = p30, p01 = p36, p46 = p31`` (Tits; Van Maldeghem, Generalized Polygons,
    2.4.13)."""
    field = GaloisField(q)
    mul, neg = field.mul, field.neg
    pts = projective_points(field, 7)
    quad = _sum(field, [mul(pts[:, 0], pts[:, 4]), mul(pts[:, 1], pts[:, 5]),
                        mul(pts[:, 2], pts[:, 6]), neg(mul(pts[:, 3], pts[:, 3]))])
    pts = pts[quad == 0]
    i, j = np.triu_indices(pts.shape[0], 1)
    x, y = pts[i], pts[j]
    bilinear = _sum(field, [mul(x[:, a], y[:, b]) for a, b in
                            ((0, 4), (4, 0), (1, 5), (5, 1), (2, 6), (6, 2))]
                    + [neg(mul(mul(x[:, 3], y[:, 3]), 2 % field.p))])

    def plucker(a, b):
        return field.add(mul(x[:, a], y[:, b]), neg(mul(x[:, b], y[:, a])))

    keep = bilinear == 0
    for (a, b), (c, d) in (((1, 2), (3, 4)), ((5, 4), (3, 2)), ((2, 0), (3, 5)),
                           ((6, 5), (3, 0)), ((0, 1), (3, 6)), ((4, 6), (3, 1))):
        keep &= plucker(a, b) == plucker(c, d)
    return _incidence_from_lines(pts.shape[0], _lines(field, pts, i[keep], j[keep]))


def _paley(q):
    field = GaloisField(q)
    ids = np.arange(q, dtype=np.int64)
    squares = np.unique(field.mul(ids[1:], ids[1:]))
    return q, *rows_to_links(field.add(ids[:, None], squares[None, :]))


def _paley_symmetry(q):
    p, k = prime_power(q)
    return {"kind": "cyclic"} if k == 1 else {"kind": "mixed_radix", "dims": [p] * k}


# ---------------------------------------------------------------------- the catalogue
def _hypercube4():
    ids = np.arange(16, dtype=np.int64)[:, None]
    return 16, *rows_to_links(ids ^ (1 << np.arange(4, dtype=np.int64))[None, :])


def _heawood_distance3():
    return _incidence_links(~_projective_plane(2))


_CATALOGUE = {
    # name: (description, builder, symmetry, intersection array {b_0..; c_1..})
    "octahedron": ("octahedron J(4,2) = K(2,2,2) = C(6,{1,2})",
                   lambda: _circulant_rows(6, [1, 2, 4, 5]), {"kind": "cyclic"},
                   ([4, 1], [1, 4])),
    "paley9": ("Paley graph P(9) = H(2,3) (the 3x3 rook's graph)", lambda: _paley(9),
               _paley_symmetry(9), ([4, 2], [1, 2])),
    "k55-minus-matching": ("K(5,5) minus a perfect matching = C(10,{1,3})",
                           lambda: _circulant_rows(10, [1, 3, 7, 9]), {"kind": "cyclic"},
                           ([4, 3, 1], [1, 3, 4])),
    "heawood-distance3": ("distance-3 graph of the Heawood graph (Fano points vs non-incident "
                          "lines)", _heawood_distance3, None, ([4, 3, 2], [1, 2, 4])),
    "petersen-line": ("line graph of the Petersen graph", lambda: _line_graph(*_odd(3)), None,
                      ([4, 2, 1], [1, 1, 4])),
    "4cube": ("4-cube Q4 = H(4,2)", _hypercube4, {"kind": "xor"},
              ([4, 3, 2, 1], [1, 2, 3, 4])),
    "heawood-line": ("line graph of the Heawood graph",
                     lambda: _line_graph(*_incidence_links(_projective_plane(2))), None,
                     ([4, 2, 2], [1, 1, 2])),
    "pg23-incidence": ("incidence graph of the projective plane PG(2,3)",
                       lambda: _incidence_links(_projective_plane(3)), None,
                       ([4, 3, 3], [1, 1, 4])),
    "ag24-minus-parallel-class": ("incidence graph of AG(2,4) minus a parallel class",
                                  lambda: _incidence_links(_affine_plane_minus_class(4)), None,
                                  ([4, 3, 3, 1], [1, 1, 3, 4])),
    "odd4": ("odd graph O4 (3-subsets of 7 points, adjacent iff disjoint)", lambda: _odd(4),
             None, ([4, 3, 3], [1, 1, 2])),
    "tutte8cage-line": ("line graph of Tutte's 8-cage (the Tutte-Coxeter graph)",
                        lambda: _line_graph(*_incidence_links(_symplectic_quadrangle(2))), None,
                        ([4, 2, 2, 2], [1, 1, 1, 2])),
    "doubled-odd4": ("doubled odd graph D(O4) (3- and 4-subsets of 7 points, by inclusion)",
                     lambda: _doubled_odd(4), None,
                     ([4, 3, 3, 2, 2, 1, 1], [1, 1, 2, 2, 3, 3, 4])),
    "gq33-incidence": ("incidence graph of the generalized quadrangle GQ(3,3) = W(3)",
                       lambda: _incidence_links(_symplectic_quadrangle(3)), None,
                       ([4, 3, 3, 3], [1, 1, 1, 4])),
    "tutte12cage-line": ("line graph of Tutte's 12-cage",
                         lambda: _line_graph(*_incidence_links(_split_cayley_hexagon(2))), None,
                         ([4, 2, 2, 2, 2, 2], [1, 1, 1, 1, 1, 2])),
    "gh33-incidence": ("incidence graph of the generalized hexagon GH(3,3) = H(3)",
                       lambda: _incidence_links(_split_cayley_hexagon(3)), None,
                       ([4, 3, 3, 3, 3, 3], [1, 1, 1, 1, 1, 4])),
    # a few cubic classics the Table 7 graphs are built from
    "petersen": ("Petersen graph = odd graph O3", lambda: _odd(3), None, ([3, 2], [1, 1])),
    "heawood": ("Heawood graph = incidence graph of the Fano plane PG(2,2)",
                lambda: _incidence_links(_projective_plane(2)), None, ([3, 2, 2], [1, 1, 3])),
    "tutte8cage": ("Tutte's 8-cage (Tutte-Coxeter graph) = incidence graph of GQ(2,2) = W(2)",
                   lambda: _incidence_links(_symplectic_quadrangle(2)), None,
                   ([3, 2, 2, 2], [1, 1, 1, 3])),
    "tutte12cage": ("Tutte's 12-cage = incidence graph of the generalized hexagon H(2)",
                    lambda: _incidence_links(_split_cayley_hexagon(2)), None,
                    ([3, 2, 2, 2, 2, 2], [1, 1, 1, 1, 1, 3])),
}

def _order(b, c):
    """Number of nodes from an intersection array: ``sum(k_i)``, ``k_{i+1} = k_i b_i / c_{i+1}``."""
    sizes = [1]
    for bi, ci in zip(b, c):
        sizes.append(sizes[-1] * bi // ci)
    return sum(sizes)


#: The named distance-regular graphs of :func:`distance_regular_graph`: name -> a dict with
#: ``description``, ``intersection_array`` (``[[b_0, ...], [c_1, ...]]``), ``nodes``,
#: ``degree`` and ``diameter``. The first fifteen are Table 7 of Zhao et al., in its order.
DISTANCE_REGULAR_GRAPHS = MappingProxyType({
    name: MappingProxyType({
        "description": description,
        "intersection_array": (tuple(b), tuple(c)),
        "degree": b[0],
        "diameter": len(b),
        # n = sum over i of k_i, with k_0 = 1 and k_{i+1} = k_i * b_i / c_{i+1}
        "nodes": _order(b, c),
    })
    for name, (description, _, _, (b, c)) in _CATALOGUE.items()
})


def distance_regular_graph(graph, *, bandwidth=LINK_BANDWIDTH, latency=LINK_LATENCY):
    """A named distance-regular graph: Table 7 of Zhao et al. (NSDI 2025) and a few cubic classics.

    ===========================  =====  ======  ========  ===============================
    name                         nodes  degree  diameter  intersection array
    ===========================  =====  ======  ========  ===============================
    octahedron                       6       4         2  {4,1; 1,4}
    paley9                           9       4         2  {4,2; 1,2}
    k55-minus-matching              10       4         3  {4,3,1; 1,3,4}
    heawood-distance3               14       4         3  {4,3,2; 1,2,4}
    petersen-line                   15       4         3  {4,2,1; 1,1,4}
    4cube                           16       4         4  {4,3,2,1; 1,2,3,4}
    heawood-line                    21       4         3  {4,2,2; 1,1,2}
    pg23-incidence                  26       4         3  {4,3,3; 1,1,4}
    ag24-minus-parallel-class       32       4         4  {4,3,3,1; 1,1,3,4}
    odd4                            35       4         3  {4,3,3; 1,1,2}
    tutte8cage-line                 45       4         4  {4,2,2,2; 1,1,1,2}
    doubled-odd4                    70       4         7  {4,3,3,2,2,1,1; 1,1,2,2,3,3,4}
    gq33-incidence                  80       4         4  {4,3,3,3; 1,1,1,4}
    tutte12cage-line               189       4         6  {4,2,2,2,2,2; 1,1,1,1,1,2}
    gh33-incidence                 728       4         6  {4,3,3,3,3,3; 1,1,1,1,1,4}
    petersen                        10       3         2  {3,2; 1,1}
    heawood                         14       3         3  {3,2,2; 1,1,3}
    tutte8cage                      30       3         4  {3,2,2,2; 1,1,1,3}
    tutte12cage                    126       3         6  {3,2,2,2,2,2; 1,1,1,1,1,3}
    ===========================  =====  ======  ========  ===============================

    Constructions: circulants (octahedron = C(6,{1,2}), K(5,5) minus a matching =
    C(10,{1,3})); the Paley graph over GF(9); the hypercube; odd and doubled odd graphs on
    subsets of 7 points; incidence graphs of PG(2,q) (points ``x``, lines ``[y]``, incident iff
    ``x . y = 0``), of AG(2,4) without its vertical lines, of the symplectic quadrangle W(q)
    and of the split Cayley hexagon H(q) (Tits' quadric construction); line graphs of those.
    Octahedron and ``k55-minus-matching`` (cyclic), ``paley9`` (``Z_3 x Z_3``) and ``4cube``
    (xor) carry ``meta["symmetry"]``.

    Parameters
    ----------
    graph : str
        A name from the table (case-insensitive), see :data:`DISTANCE_REGULAR_GRAPHS`.
    bandwidth, latency : float or str
        Per-link bandwidth (bytes/s) and latency (s).

    Returns
    -------
    Topology
        Named ``"drg:NAME"``; ``meta`` holds ``graph``, ``description`` and
        ``intersection_array`` (``[[b_0, ...], [c_1, ...]]``).

    Examples
    --------
    >>> from topocoll.topology import diameter
    >>> t = distance_regular_graph("odd4")
    >>> t.name, t.num_nodes, int(t.out_degree().max()), diameter(t)
    ('drg:odd4', 35, 4, 3)
    >>> t.meta["intersection_array"]
    [[4, 3, 3], [1, 1, 2]]
    >>> distance_regular_graph("octahedron").meta["symmetry"]
    {'kind': 'cyclic'}
    """
    if not isinstance(graph, str):
        raise SpecError(f"drg takes a graph name, got {graph!r}")
    key = graph.strip().lower()
    if key not in _CATALOGUE:
        raise SpecError(f"unknown distance-regular graph {graph.strip()!r}; known: "
                        f"{', '.join(_CATALOGUE)}")
    description, build, symmetry, (b, c) = _CATALOGUE[key]
    num_nodes, src, dst = build()
    meta = {"family": "drg", "graph": key, "description": description,
            "intersection_array": [list(b), list(c)]}
    if symmetry is not None:
        meta["symmetry"] = dict(symmetry)
    return make_topology(f"drg:{key}", num_nodes, src, dst, bandwidth, latency, meta)


# ---------------------------------------------------------------------- parametrized families
def paley_graph(q, *, bandwidth=LINK_BANDWIDTH, latency=LINK_LATENCY):
    """Paley graph P(q): the elements of GF(q), ``x <-> x + s`` for every non-zero square ``s``.

    Strongly regular (distance-regular of diameter 2) with intersection array
    ``{(q-1)/2, (q-1)/4; 1, (q-1)/4}``. Node ids number GF(q) by base-``p`` digits (see
    :mod:`topocoll.topology.families.finite_field`), so the links are translations of ``Z_q``
    (``q`` prime: ``meta["symmetry"] = {"kind": "cyclic"}``) or of ``Z_p^k``
    (``{"kind": "mixed_radix", "dims": [p]*k}``).

    Parameters
    ----------
    q : int
        A prime power with ``q = 1 mod 4`` (so that -1 is a square): 5, 9, 13, 17, 25, 29, ...
    bandwidth, latency : float or str
        Per-link bandwidth (bytes/s) and latency (s).

    Examples
    --------
    >>> t = paley_graph(13)
    >>> t.name, t.num_nodes, t.dst[t.src == 0].tolist(), t.meta["symmetry"]
    ('paley:13', 13, [1, 3, 4, 9, 10, 12], {'kind': 'cyclic'})
    >>> paley_graph(9).meta["symmetry"]
    {'kind': 'mixed_radix', 'dims': [3, 3]}
    """
    q = at_least(as_int(q, "paley field size q"), 5, "paley needs a prime power q >= 5")
    name = f"paley:{q}"
    check_size(name, q, q * (q - 1) // 2)
    if q % 4 != 1 or prime_power(q) is None:
        raise SpecError(f"paley needs a prime power q = 1 mod 4 (5, 9, 13, 17, 25, ...), got {q}")
    num_nodes, src, dst = _paley(q)
    return make_topology(name, num_nodes, src, dst, bandwidth, latency,
                         {"family": "paley", "q": q, "symmetry": _paley_symmetry(q)})


def odd_graph(k, *, bandwidth=LINK_BANDWIDTH, latency=LINK_LATENCY):
    """Odd graph O_k: the ``(k-1)``-subsets of ``2k-1`` points, adjacent iff disjoint.

    ``C(2k-1, k-1)`` nodes, degree ``k``, diameter ``k-1``; distance-regular. O_2 is the
    triangle, O_3 the Petersen graph, O_4 (35 nodes) is in Table 7 of Zhao et al. (NSDI 2025).

    Parameters
    ----------
    k : int
        ``>= 2``.
    bandwidth, latency : float or str
        Per-link bandwidth (bytes/s) and latency (s).

    Examples
    --------
    >>> from topocoll.topology import diameter
    >>> t = odd_graph(3)
    >>> t.name, t.num_nodes, t.num_links, diameter(t)
    ('odd:3', 10, 30, 2)
    """
    k = at_least(as_int(k, "odd graph k"), 2, "odd needs k >= 2")
    name = f"odd:{k}"
    nodes = math.comb(2 * k - 1, k - 1)
    check_size(name, nodes, nodes * k)
    num_nodes, src, dst = _odd(k)
    return make_topology(name, num_nodes, src, dst, bandwidth, latency,
                         {"family": "odd", "k": k})


def doubled_odd_graph(k, *, bandwidth=LINK_BANDWIDTH, latency=LINK_LATENCY):
    """Doubled odd graph D(O_k): the ``(k-1)``- and ``k``-subsets of ``2k-1`` points, adjacent
    iff one contains the other.

    ``2 * C(2k-1, k-1)`` nodes, degree ``k``, diameter ``2k-1``; distance-regular and
    bipartite. Node ids: the ``(k-1)``-subsets first, then the ``k``-subsets.

    Parameters
    ----------
    k : int
        ``>= 2``.
    bandwidth, latency : float or str
        Per-link bandwidth (bytes/s) and latency (s).

    Examples
    --------
    >>> from topocoll.topology import diameter
    >>> t = doubled_odd_graph(4)
    >>> t.name, t.num_nodes, int(t.out_degree().max()), diameter(t)
    ('doubledodd:4', 70, 4, 7)
    """
    k = at_least(as_int(k, "doubled odd graph k"), 2, "doubledodd needs k >= 2")
    name = f"doubledodd:{k}"
    nodes = 2 * math.comb(2 * k - 1, k - 1)
    check_size(name, nodes, nodes * k)
    num_nodes, src, dst = _doubled_odd(k)
    return make_topology(name, num_nodes, src, dst, bandwidth, latency,
                         {"family": "doubledodd", "k": k})


def johnson_graph(n, k, *, bandwidth=LINK_BANDWIDTH, latency=LINK_LATENCY):
    """Johnson graph J(n, k): the ``k``-subsets of ``n`` points, adjacent iff they share ``k-1``.

    ``C(n, k)`` nodes, degree ``k (n-k)``, diameter ``min(k, n-k)``; distance-regular.
    J(n, 1) is the complete graph, J(4, 2) the octahedron.

    Parameters
    ----------
    n : int
        Number of points, ``>= 2``.
    k : int
        Subset size, ``1 <= k <= n-1``.
    bandwidth, latency : float or str
        Per-link bandwidth (bytes/s) and latency (s).

    Examples
    --------
    >>> from topocoll.topology import diameter
    >>> t = johnson_graph(6, 3)
    >>> t.name, t.num_nodes, int(t.out_degree().max()), diameter(t)
    ('johnson:6,3', 20, 9, 3)
    """
    n = at_least(as_int(n, "johnson n"), 2, "johnson needs n >= 2 points")
    k = as_int(k, "johnson k")
    if not 1 <= k <= n - 1:
        raise SpecError(f"johnson needs subset size 1 <= k <= n-1 = {n - 1}, got {k}")
    name = f"johnson:{n},{k}"
    nodes = math.comb(n, k)
    check_size(name, nodes, nodes * k * (n - k))
    num_nodes, src, dst = _johnson(n, k)
    return make_topology(name, num_nodes, src, dst, bandwidth, latency,
                         {"family": "johnson", "n": n, "k": k})
