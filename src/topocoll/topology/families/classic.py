"""Classic families: complete, complete bipartite, circulant and Hamming graphs, and TopoOpt's
shifted ring (a circulant of degree 4).

All of them are bidirectional (every link ``u -> v`` has a partner ``v -> u``) and regular,
and all are Cayley graphs of their node labelling, claimed in ``meta["symmetry"]``: complete
graphs and circulants are cyclic, K(n, n) is ``Z_2 x Z_n`` (side, index) and H(d, q) is
``Z_q^d``.
"""

import math

import numpy as np

from ...errors import SpecError
from ...defaults import LINK_BANDWIDTH, LINK_LATENCY
from .checks import (as_int, as_int_tuple, at_least, check_size, make_topology,
                      mixed_radix_digits, rows_to_links)

__all__ = ["complete_graph", "complete_bipartite_graph", "circulant_graph", "hamming_graph",
           "shifted_ring_graph", "default_shift"]


def complete_graph(n, *, bandwidth=LINK_BANDWIDTH, latency=LINK_LATENCY):
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


def complete_bipartite_graph(n, *, bandwidth=LINK_BANDWIDTH, latency=LINK_LATENCY):
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


def circulant_graph(n, offsets, *, bandwidth=LINK_BANDWIDTH, latency=LINK_LATENCY):
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


def hamming_graph(d, q, *, bandwidth=LINK_BANDWIDTH, latency=LINK_LATENCY):
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


def default_shift(n):
    """The shift of TopoOpt's second ring: the smallest ``s >= 2`` with ``gcd(s, N) = 1`` and
    ``s != N-1`` (so ``i -> i+s`` is a Hamiltonian cycle that shares no link with the ring
    ``i -> i+1``). Exists exactly for N = 5 and N >= 7 (for N = 2, 3, 4, 6 the only units mod N
    are +-1).

    >>> [default_shift(n) for n in (5, 7, 8, 9, 10, 12, 30)]
    [2, 2, 3, 2, 3, 5, 7]
    """
    n = as_int(n, "shifted ring size")
    for s in range(2, n - 1):
        if math.gcd(s, n) == 1:
            return s
    raise SpecError(f"a shifted ring needs a shift s with 2 <= s <= N-2 and gcd(s, N) = 1, "
                    f"which exists for N = 5 and N >= 7; got N={n}")


def shifted_ring_graph(n, shift=None, *, bandwidth=LINK_BANDWIDTH, latency=LINK_LATENCY):
    """TopoOpt's ShiftedRing topology: the circulant ``C(N, {1, s})`` (degree 4), i.e. the ring
    ``i <-> i+1`` and the shifted ring ``i <-> i+s`` with ``gcd(s, N) = 1``.

    Parameters
    ----------
    n : int
        Number of nodes: 5 or at least 7.
    shift : int, optional
        The second ring's offset ``s`` (``2 <= s <= N-2``, ``gcd(s, N) = 1``); default
        :func:`default_shift`.
    bandwidth, latency : float or str
        Per-link bandwidth (bytes/s) and latency (s).

    Returns
    -------
    Topology
        The circulant (``meta`` as :func:`circulant_graph`'s), named ``"shiftedring:N"`` for
        the default shift and ``"shiftedring:N,S"`` otherwise (``S`` normalized to
        ``min(s, N-s)``).

    Examples
    --------
    >>> shifted_ring_graph(10).name, shifted_ring_graph(10, 7).name
    ('shiftedring:10', 'shiftedring:10')
    >>> t = shifted_ring_graph(11, 3)
    >>> t.name, t.meta["offsets"]
    ('shiftedring:11,3', [1, 3])
    """
    n = as_int(n, "shifted ring size")
    s = default_shift(n) if shift is None else as_int(shift, "shifted ring shift")
    if not 2 <= s <= n - 2 or math.gcd(s, n) != 1:
        raise SpecError(f"a shifted ring needs a shift s with 2 <= s <= N-2 and gcd(s, N) = 1; "
                        f"got s={s} for N={n}")
    s = min(s, n - s)
    name = f"shiftedring:{n}" if s == default_shift(n) else f"shiftedring:{n},{s}"
    return circulant_graph(n, [1, s], bandwidth=bandwidth, latency=latency).with_links(name=name)
