"""Shift-register digraphs: Kautz, generalized Kautz (Imase-Itoh) and de Bruijn.

These are directed (a link ``u -> v`` usually has no partner ``v -> u``), have out-degree ``d``
and diameter close to the Moore bound. Self-loops, which the arithmetic definitions of the
generalized Kautz and de Bruijn digraphs contain, are dropped and counted in
``meta["dropped_self_loops"]``; ``meta`` then also gives the resulting degree ranges (links per
node, parallel links counted).
"""

import numpy as np

from ...defaults import LINK_BANDWIDTH, LINK_LATENCY
from .checks import as_int, at_least, check_size, make_topology, rows_to_links

__all__ = ["kautz_graph", "generalized_kautz_graph", "de_bruijn_graph"]


def kautz_graph(d, k, *, bandwidth=LINK_BANDWIDTH, latency=LINK_LATENCY):
    """Kautz digraph K(d, k): ``(d+1) * d**(k-1)`` nodes, out- and in-degree ``d``, diameter ``k``.

    The nodes are the strings ``s1 s2 ... sk`` over the letters ``0..d`` with no two equal
    consecutive letters; ``s1 ... sk -> s2 ... sk x`` for every ``x != sk``. String ids: with
    ``t_i = (s_{i+1} - s_i - 1) mod (d+1)`` (a digit in ``0..d-1``), the id is
    ``s1 * d**(k-1) + t_1 * d**(k-2) + ... + t_{k-1}``. Out-neighbours are listed in the order
    ``x = sk+1, sk+2, ... (mod d+1)``.

    Parameters
    ----------
    d : int
        Degree, ``>= 2``.
    k : int
        String length (the diameter), ``>= 1``. K(d, 1) is the complete digraph on ``d+1`` nodes.
    bandwidth, latency : float or str
        Per-link bandwidth (bytes/s) and latency (s).

    Examples
    --------
    >>> t = kautz_graph(2, 3)
    >>> t.name, t.num_nodes, t.num_links
    ('kautz:2,3', 12, 24)
    >>> t.dst[t.src == 0].tolist()  # "012" -> "120", "121"
    [4, 5]
    """
    d = at_least(as_int(d, "kautz degree d"), 2, "kautz needs degree d >= 2")
    k = at_least(as_int(k, "kautz string length k"), 1, "kautz needs string length k >= 1")
    name = f"kautz:{d},{k}"
    place = d ** (k - 1)  # place value of the first letter
    num_nodes = (d + 1) * place
    check_size(name, num_nodes, num_nodes * d)
    ids = np.arange(num_nodes, dtype=np.int64)[:, None]
    j = np.arange(d, dtype=np.int64)[None, :]
    first, rest = ids // place, ids % place
    if k == 1:
        dst = (first + 1 + j) % (d + 1)
    else:
        second = (first + 1 + rest // (place // d)) % (d + 1)
        dst = second * place + (rest % (place // d)) * d + j
    src, dst = rows_to_links(dst)
    return make_topology(name, num_nodes, src, dst, bandwidth, latency,
                         {"family": "kautz", "d": d, "k": k})


def _shift_register(name, num_nodes, dst, bandwidth, latency, meta):
    """A topology from an ``(N, d)`` out-neighbour array, self-loops dropped and degrees noted."""
    src, dst = rows_to_links(dst)
    keep = src != dst
    out_deg = np.bincount(src[keep], minlength=num_nodes)
    in_deg = np.bincount(dst[keep], minlength=num_nodes)
    pairs = np.unique(src[keep] * num_nodes + dst[keep]).size
    meta.update({"dropped_self_loops": 0,
                 "out_degree_min": int(out_deg.min()), "out_degree_max": int(out_deg.max()),
                 "in_degree_min": int(in_deg.min()), "in_degree_max": int(in_deg.max())})
    if pairs < int(keep.sum()):
        # the degrees above count links (ports); with repeated arcs a node has fewer distinct
        # neighbours, which is what a topology report's out_min/in_min count
        meta["parallel_links"] = int(keep.sum()) - pairs
    return make_topology(name, num_nodes, src, dst, bandwidth, latency, meta,
                         drop_self_loops=True)


def generalized_kautz_graph(n, d, *, bandwidth=LINK_BANDWIDTH, latency=LINK_LATENCY):
    """Generalized Kautz (Imase-Itoh) digraph GK(n, d): ``i -> (-d*i - j) mod n``, ``j = 1..d``.

    For ``n = d**k + d**(k-1)`` it is isomorphic to the Kautz digraph K(d, k). Self-loops are
    dropped (``meta["dropped_self_loops"]``), so a few nodes may have out-degree ``d - 1``;
    ``meta["out_degree_min"]``/``["out_degree_max"]`` (and the ``in_`` pair) give the range.
    When ``d > n`` some arcs repeat and stay as parallel links (``meta["parallel_links"]``
    counts the repeats): the ``meta`` degrees count links (a node's ports), while
    ``Topology.out_degree()`` and ``topocoll info`` count distinct neighbours, at most
    ``n - 1``.

    Parameters
    ----------
    n : int
        Number of nodes, ``>= 2``.
    d : int
        Degree, ``>= 1``.
    bandwidth, latency : float or str
        Per-link bandwidth (bytes/s) and latency (s).

    Examples
    --------
    >>> t = generalized_kautz_graph(50, 3)
    >>> t.name, t.num_nodes, t.dst[t.src == 1].tolist()
    ('genkautz:50,3', 50, [46, 45, 44])
    >>> t.meta["dropped_self_loops"], t.meta["out_degree_min"], t.meta["out_degree_max"]
    (2, 2, 3)
    >>> t = generalized_kautz_graph(5, 9)
    >>> t.meta["out_degree_min"], int(t.out_degree().min()), t.meta["parallel_links"]
    (8, 4, 20)
    """
    n = at_least(as_int(n, "genkautz size n"), 2, "genkautz needs n >= 2 nodes")
    d = at_least(as_int(d, "genkautz degree d"), 1, "genkautz needs degree d >= 1")
    name = f"genkautz:{n},{d}"
    check_size(name, n, n * d)
    ids = np.arange(n, dtype=np.int64)[:, None]
    j = np.arange(1, d + 1, dtype=np.int64)[None, :]
    dst = (-d * ids - j) % n
    return _shift_register(name, n, dst, bandwidth, latency,
                           {"family": "genkautz", "n": n, "d": d})


def de_bruijn_graph(d, k, *, bandwidth=LINK_BANDWIDTH, latency=LINK_LATENCY):
    """De Bruijn digraph B(d, k): ``d**k`` nodes, ``i -> (d*i + j) mod d**k`` for ``j < d``.

    Node ``i`` is the base-``d`` string of length ``k`` that spells ``i``; the arcs shift one
    letter in on the right. The ``d`` constant strings would have self-loops; those are dropped
    (``meta["dropped_self_loops"] == d``), so their out-degree is ``d - 1``. Diameter ``k``.

    Parameters
    ----------
    d : int
        Alphabet size (degree), ``>= 2``.
    k : int
        String length (the diameter), ``>= 1``.
    bandwidth, latency : float or str
        Per-link bandwidth (bytes/s) and latency (s).

    Examples
    --------
    >>> t = de_bruijn_graph(2, 3)
    >>> t.name, t.num_nodes, t.num_links, t.meta["dropped_self_loops"]
    ('debruijn:2,3', 8, 14, 2)
    >>> t.dst[t.src == 3].tolist()
    [6, 7]
    """
    d = at_least(as_int(d, "debruijn alphabet size d"), 2, "debruijn needs alphabet size d >= 2")
    k = at_least(as_int(k, "debruijn string length k"), 1, "debruijn needs string length k >= 1")
    name = f"debruijn:{d},{k}"
    num_nodes = d**k
    check_size(name, num_nodes, num_nodes * d)
    ids = np.arange(num_nodes, dtype=np.int64)[:, None]
    j = np.arange(d, dtype=np.int64)[None, :]
    return _shift_register(name, num_nodes, (d * ids + j) % num_nodes, bandwidth, latency,
                           {"family": "debruijn", "d": d, "k": k})
