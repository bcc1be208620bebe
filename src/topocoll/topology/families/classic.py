"""Classic families: complete, complete bipartite, circulant and Hamming graphs.

All of them are bidirectional (every link ``u -> v`` has a partner ``v -> u``) and regular,
and all are Cayley graphs of their node labelling, claimed in ``meta["symmetry"]``: complete
graphs and circulants are cyclic, K(n, n) is ``Z_2 x Z_n`` (side, index) and H(d, q) is
``Z_q^d``.
"""

import numpy as np

from ...errors import SpecError
from ..model import DEFAULT_BANDWIDTH, DEFAULT_LATENCY
from ._common import (as_int, as_int_tuple, at_least, check_size, make_topology,
                      mixed_radix_digits, rows_to_links)

__all__ = ["complete_graph", "complete_bipartite_graph", "circulant_graph", "hamming_graph"]


def complete_graph(n, *, bandwidth=DEFAULT_BANDWIDTH, latency=DEFAULT_LATENCY):
    """Complete graph: a link from every node to every other node.

    Parameters
    ----------
    n : int
        Number of nodes, ``>= 2``.
    bandwidth, latency : float or str
        Per-link bandwidth (bytes/s) and latency (s).

    Examples
    --------
    >>> t = complete_graph(4)
    >>> t.name, t.num_links, t.dst[t.src == 2].tolist()
    ('complete:4', 12, [0, 1, 3])
    """
    n = at_least(as_int(n, "complete graph size"), 2, "complete needs n >= 2")
    name = f"complete:{n}"
    check_size(name, n, n * (n - 1))
    ids = np.arange(n, dtype=np.int64)
    others = np.arange(n - 1, dtype=np.int64)[None, :]
    src, dst = rows_to_links(others + (others >= ids[:, None]))
    return make_topology(name, n, src, dst, bandwidth, latency,
                         {"family": "complete", "n": n, "symmetry": {"kind": "cyclic"}})


def complete_bipartite_graph(n, *, bandwidth=DEFAULT_BANDWIDTH, latency=DEFAULT_LATENCY):
    """Complete bipartite graph K(n, n): nodes ``0..n-1`` on one side, ``n..2n-1`` on the other.

    Parameters
    ----------
    n : int
        Nodes per side, ``>= 1``.
    bandwidth, latency : float or str
        Per-link bandwidth (bytes/s) and latency (s).

    Examples
    --------
    >>> t = complete_bipartite_graph(3)
    >>> t.name, t.num_nodes, t.dst[t.src == 1].tolist(), t.dst[t.src == 4].tolist()
    ('bipartite:3', 6, [3, 4, 5], [0, 1, 2])
    """
    n = at_least(as_int(n, "bipartite side size"), 1, "bipartite needs n >= 1 nodes per side")
    name = f"bipartite:{n}"
    check_size(name, 2 * n, 2 * n * n)
    ids = np.arange(2 * n, dtype=np.int64)
    side = np.arange(n, dtype=np.int64)[None, :]
    src, dst = rows_to_links(np.where(ids[:, None] < n, side + n, side))
    return make_topology(name, 2 * n, src, dst, bandwidth, latency,
                         {"family": "bipartite", "n": n,
                          "symmetry": {"kind": "mixed_radix", "dims": [2, n]}})


def circulant_graph(n, offsets, *, bandwidth=DEFAULT_BANDWIDTH, latency=DEFAULT_LATENCY):
    """Circulant graph C(n, offsets): ``i <-> i + a mod n`` for every offset ``a``.

    Parameters
    ----------
    n : int
        Number of nodes, ``>= 2``.
    offsets : sequence of int
        Offsets in ``1..n-1``. Offsets ``a`` and ``n - a`` give the same links, so they are
        normalized to ``min(a, n - a)`` and may not repeat. When ``2a == n`` the two nodes
        ``i`` and ``i + a`` get a single link each way.
    bandwidth, latency : float or str
        Per-link bandwidth (bytes/s) and latency (s).

    Returns
    -------
    Topology
        Named ``"circulant:16:1,4"`` with the normalized offsets in increasing order.

    Examples
    --------
    >>> t = circulant_graph(16, [1, 4])
    >>> t.name, t.num_links, sorted(t.dst[t.src == 0].tolist())
    ('circulant:16:1,4', 64, [1, 4, 12, 15])
    >>> circulant_graph(8, [7, 4]).name, circulant_graph(8, [4]).num_links
    ('circulant:8:1,4', 8)
    """
    n = at_least(as_int(n, "circulant size"), 2, "circulant needs n >= 2")
    offsets = as_int_tuple(offsets, "circulant offsets")
    normal = {}
    for a in offsets:
        if not 1 <= a <= n - 1:
            raise SpecError(f"circulant offsets must be in 1..n-1 = 1..{n - 1}, got {a}")
        b = min(a, n - a)
        if b in normal:
            if normal[b] == a:
                raise SpecError(f"circulant offset {a} is given twice")
            raise SpecError(f"circulant offsets {normal[b]} and {a} are the same links for "
                            f"n={n} (a and n-a coincide); give only one of them")
        normal[b] = a
    offsets = sorted(normal)
    name = f"circulant:{n}:" + ",".join(str(a) for a in offsets)
    check_size(name, n, n * sum(1 if 2 * a == n else 2 for a in offsets))
    ids = np.arange(n, dtype=np.int64)
    columns = []
    for a in offsets:
        columns.append((ids + a) % n)
        if 2 * a != n:
            columns.append((ids - a) % n)
    src, dst = rows_to_links(np.stack(columns, axis=1))
    return make_topology(name, n, src, dst, bandwidth, latency,
                         {"family": "circulant", "n": n, "offsets": offsets,
                          "symmetry": {"kind": "cyclic"}})


def hamming_graph(d, q, *, bandwidth=DEFAULT_BANDWIDTH, latency=DEFAULT_LATENCY):
    """Hamming graph H(d, q): the ``q**d`` words of length ``d`` over ``q`` symbols, adjacent iff
    they differ in exactly one position.

    Node ids are the words read as base-``q`` numbers, first position most significant.
    H(d, 2) is the hypercube; H(1, q) is the complete graph.

    Parameters
    ----------
    d : int
        Word length, ``>= 1``.
    q : int
        Alphabet size, ``>= 2``.
    bandwidth, latency : float or str
        Per-link bandwidth (bytes/s) and latency (s).

    Examples
    --------
    >>> t = hamming_graph(3, 4)
    >>> t.name, t.num_nodes, int(t.out_degree().max())
    ('hamming:3,4', 64, 9)
    >>> sorted(hamming_graph(2, 3).dst[:4].tolist())
    [1, 2, 3, 6]
    """
    d = at_least(as_int(d, "hamming word length d"), 1, "hamming needs word length d >= 1")
    q = at_least(as_int(q, "hamming alphabet size q"), 2, "hamming needs alphabet size q >= 2")
    name = f"hamming:{d},{q}"
    num_nodes = q**d
    check_size(name, num_nodes, num_nodes * d * (q - 1))
    ids, digits, strides = mixed_radix_digits(num_nodes, (q,) * d)
    columns = [ids + ((c + s) % q - c) * stride
               for c, stride in zip(digits, strides) for s in range(1, q)]
    src, dst = rows_to_links(np.stack(columns, axis=1))
    return make_topology(name, num_nodes, src, dst, bandwidth, latency,
                         {"family": "hamming", "d": d, "q": q,
                          "symmetry": {"kind": "mixed_radix", "dims": [q] * d}})
