"""Cayley digraphs of cyclic and metacyclic groups: directed circulants and ``Z_m x| Z_k``.

A Cayley digraph Cay(G, S) has the group elements as nodes and a link ``g -> g*s`` for every
generator ``s`` in S: every node has in- and out-degree ``|S|``, and left multiplication by any
group element is an automorphism, so every node sees the same network (vertex-transitive).

* :func:`directed_circulant_graph`: G = Z_n, links ``i -> i + a mod n`` (the directed
  circulant of Zhao et al. (NSDI 2025), Table 9; the unidirectional ring is offsets ``[1]``).
* :func:`metacyclic_graph`: G = Z_m x|_r Z_k, the pairs ``(x, i)`` with
  ``(x, i) * (y, j) = (x + r^i y mod m, i + j mod k)`` (``r^k = 1 mod m``). For ``r = 1`` it is
  the abelian group Z_m x Z_k; ``r = m - 1``, ``k = 2`` is the dihedral group. Node ``(x, i)``
  has id ``x * k + i``. Non-abelian groups give digraphs of smaller diameter than any abelian
  one of the same size and degree (which has at most ``C(D + d, d)`` nodes within D steps).

>>> directed_circulant_graph(8, [1, 3]).dst[:2].tolist()
[1, 3]
>>> t = metacyclic_graph(8, 2, 7, [(1, 0), (3, 1), (0, 1), (6, 0)])
>>> t.name, t.num_nodes, sorted(set(t.out_degree().tolist()) | set(t.in_degree().tolist()))
('metacyclic:8,2,7:1.0,3.1,0.1,6.0', 16, [4])
"""

import math

import numpy as np

from ...defaults import LINK_BANDWIDTH, LINK_LATENCY
from ...errors import SpecError
from .checks import as_int, as_int_tuple, at_least, check_size, make_topology, rows_to_links

__all__ = ["directed_circulant_graph", "metacyclic_graph", "metacyclic_heads"]


def directed_circulant_graph(n, offsets, *, bandwidth=LINK_BANDWIDTH, latency=LINK_LATENCY):
    """Directed circulant DC(n, offsets): ``i -> i + a mod n`` for every offset ``a``.

    Parameters
    ----------
    n : int
        Number of nodes, ``>= 2``.
    offsets : sequence of int
        Distinct offsets in ``1..n-1`` (kept in the given order: the order of each node's
        links).
    bandwidth, latency : float or str
        Per-link bandwidth (bytes/s) and latency (s).

    Returns
    -------
    Topology
        Named ``"dcirculant:16:1,6"``; in- and out-degree ``len(offsets)``; strongly connected
        iff ``gcd(n, offsets) = 1``.

    Examples
    --------
    >>> t = directed_circulant_graph(16, [1, 6])
    >>> t.name, t.num_links, t.dst[t.src == 0].tolist()
    ('dcirculant:16:1,6', 32, [1, 6])
    """
    n = at_least(as_int(n, "dcirculant size"), 2, "dcirculant needs n >= 2")
    offsets = as_int_tuple(offsets, "dcirculant offsets")
    if not offsets:
        raise SpecError("dcirculant needs at least one offset")
    for a in offsets:
        if not 1 <= a <= n - 1:
            raise SpecError(f"dcirculant offsets must be in 1..n-1 = 1..{n - 1}, got {a}")
    if len(set(offsets)) != len(offsets):
        raise SpecError(f"dcirculant offsets must be distinct, got {list(offsets)}")
    name = f"dcirculant:{n}:" + ",".join(map(str, offsets))
    check_size(name, n, n * len(offsets))
    ids = np.arange(n, dtype=np.int64)[:, None]
    src, dst = rows_to_links((ids + np.asarray(offsets, dtype=np.int64)[None, :]) % n)
    return make_topology(name, n, src, dst, bandwidth, latency,
                         {"family": "dcirculant", "n": n, "offsets": list(offsets),
                          "symmetry": {"kind": "cyclic"}})


def _check_group(m, k, r):
    m = at_least(as_int(m, "metacyclic m"), 1, "metacyclic needs m >= 1")
    k = at_least(as_int(k, "metacyclic k"), 1, "metacyclic needs k >= 1")
    r = as_int(r, "metacyclic r")
    if m * k < 2:
        raise SpecError("metacyclic needs m*k >= 2 nodes")
    if not 1 <= r < max(m, 2) or math.gcd(r, m) != 1 or pow(r, k, m) != 1 % m:
        raise SpecError(f"metacyclic needs 1 <= r < m, gcd(r, m) = 1 and r^k = 1 mod m; got "
                        f"m={m}, k={k}, r={r}")
    return m, k, r


def metacyclic_heads(m, k, r, generators):
    """``heads[g, s]``: the id of ``g * s`` for every node g and generator s (no checks)."""
    x = np.repeat(np.arange(m, dtype=np.int64), k)
    i = np.tile(np.arange(k, dtype=np.int64), m)
    powers = np.array([pow(r, e, m) for e in range(k)], dtype=np.int64)
    cols = [((x + powers[i] * y) % m) * k + (i + j) % k for y, j in generators]
    return np.stack(cols, axis=1)


def metacyclic_graph(m, k, r, generators, *, bandwidth=LINK_BANDWIDTH, latency=LINK_LATENCY):
    """Cayley digraph of the metacyclic group Z_m x|_r Z_k with the given generators.

    Parameters
    ----------
    m, k, r : int
        The group: pairs ``(x, i)``, ``x`` mod m, ``i`` mod k, with
        ``(x, i) * (y, j) = (x + r^i y, i + j)``; needs ``gcd(r, m) = 1`` and ``r^k = 1 mod m``.
    generators : sequence of (int, int)
        Distinct non-identity elements ``(y, j)``; node ``g`` links to ``g * (y, j)``.
    bandwidth, latency : float or str
        Per-link bandwidth (bytes/s) and latency (s).

    Returns
    -------
    Topology
        Named ``"metacyclic:M,K,R:Y1.J1,Y2.J2,..."``; m*k nodes, in- and out-degree
        ``len(generators)``; strongly connected iff the generators generate the group.

    Examples
    --------
    >>> t = metacyclic_graph(4, 2, 3, [(1, 0), (0, 1)])
    >>> t.name, t.dst[t.src == 2].tolist()      # (1, 0) -> (2, 0) and (1, 1)
    ('metacyclic:4,2,3:1.0,0.1', [4, 3])
    """
    m, k, r = _check_group(m, k, r)
    gens = []
    for g in generators:
        pair = as_int_tuple(g, "metacyclic generator")
        if len(pair) != 2:
            raise SpecError(f"a metacyclic generator is a pair (y, j), got {list(pair)}")
        y, j = pair[0] % m, pair[1] % k
        if (y, j) == (0, 0):
            raise SpecError("metacyclic generators may not be the identity (0, 0)")
        gens.append((y, j))
    if not gens or len(set(gens)) != len(gens):
        raise SpecError(f"metacyclic needs distinct generators, got {gens}")
    n = m * k
    name = f"metacyclic:{m},{k},{r}:" + ",".join(f"{y}.{j}" for y, j in gens)
    check_size(name, n, n * len(gens))
    src, dst = rows_to_links(metacyclic_heads(m, k, r, gens))
    return make_topology(name, n, src, dst, bandwidth, latency,
                         {"family": "metacyclic", "m": m, "k": k, "r": r,
                          "generators": [list(g) for g in gens]})
