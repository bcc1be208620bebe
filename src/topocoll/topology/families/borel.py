"""Borel-Cayley graphs: Cayley graphs of a Borel subgroup of ``GL(2, p)``.

The Borel subgroup used for networks (Tang and Arden, 1992; Ryu, Noel and Tang, "Distributed
and fault-tolerant routing for Borel Cayley graphs", IJDSN 2012) is the group of upper
triangular matrices ``[[x, y], [0, 1]]`` over ``Z_p`` (``p`` prime) with ``x`` in the
subgroup ``<alpha>`` of ``Z_p^*`` of order ``k`` (``k`` divides ``p - 1``): the affine maps
``t -> x t + y``, ``N = p k`` elements, ``(x, y)(a, b) = (x a, x b + y)``. Two generators
``A = (a, b)`` and ``B = (c, d)`` and their inverses give a 4-regular undirected Cayley graph
``g -> g A, g A^-1, g B, g B^-1``.

``borelcayley:P,K`` takes ``alpha = r^((p-1)/k)`` for the least primitive root ``r`` and the
generators ``A = (alpha, 1)``, ``B = (alpha, 0)`` (``A B^-1`` is the translation ``t -> t + 1``,
so together they generate the whole group); ``borelcayley:P,K:A,B,C,D`` takes the generators
explicitly (``a`` and ``c`` must be powers of ``alpha``, and ``A, B`` must generate all
``p k`` elements).

Node ``(alpha^t, y)`` has id ``t p + y``; node 0 is the identity.

>>> t = borel_cayley_graph(7, 3)
>>> t.num_nodes, set(t.out_degree().tolist()), t.meta["alpha"]
(21, {4}, 2)
"""

import numpy as np

from ...defaults import LINK_BANDWIDTH, LINK_LATENCY
from ...errors import SpecError
from .checks import as_int, at_least, check_size, make_topology, rows_to_links

__all__ = ["borel_cayley_graph"]


def _prime(p):
    return p >= 2 and all(p % f for f in range(2, int(p ** 0.5) + 1))


def _alpha(p, k):
    root = next(r for r in range(1, p) if len({pow(r, e, p) for e in range(p - 1)}) == p - 1)
    return pow(root, (p - 1) // k, p)


def _check_generators(p, k, gens, log):
    """Refuse generators outside the group, repeated ones, and sets that do not generate."""
    for x, y in gens:
        if x % p not in log:
            raise SpecError(f"borelcayley:{p},{k} needs A = (a, b) and B = (c, d) with a and c "
                            f"powers of alpha = {pow(_alpha(p, k), 1, p)} (order {k}), got a "
                            f"or c = {x}")
    inverse = [(pow(x, p - 2, p), (-pow(x, p - 2, p) * y) % p) for x, y in gens]
    four = [(x % p, y % p) for x, y in gens] + inverse
    if len(set(four)) < 4 or (1, 0) in four:
        raise SpecError(f"borelcayley needs A, A^-1, B, B^-1 distinct and not the identity "
                        f"(degree 4), got A = {four[0]}, B = {four[1]} over Z_{p} "
                        f"(k >= 3 or a translation)")
    return four


def borel_cayley_graph(p, k, generators=None, *, bandwidth=LINK_BANDWIDTH, latency=LINK_LATENCY):
    """Borel-Cayley graph: 4-regular Cayley graph of ``{t -> x t + y : x in <alpha>}`` over
    ``Z_p``, ``p k`` nodes.

    Parameters
    ----------
    p : int
        A prime, ``>= 3``.
    k : int
        Order of ``alpha`` in ``Z_p^*``: ``k >= 1`` dividing ``p - 1``.
    generators : ((a, b), (c, d)), optional
        The generators ``A``, ``B``; default ``((alpha, 1), (alpha, 0))``.
    bandwidth, latency : float or str
        Per-link bandwidth (bytes/s) and latency (s).

    Returns
    -------
    Topology
        Named ``"borelcayley:7,3"`` (``":A,B,C,D"`` appended for explicit generators);
        ``meta`` has ``p``, ``k``, ``alpha`` and ``generators``.

    Raises
    ------
    SpecError
        ``p`` not prime, ``k`` not dividing ``p - 1``, generators outside the group, repeated
        (degree below 4) or not generating all ``p k`` elements.

    Examples
    --------
    >>> t = borel_cayley_graph(13, 4, ((2 ** 3 % 13, 1), (5, 3)))
    >>> t.name, t.num_nodes, t.meta["generators"]
    ('borelcayley:13,4:8,1,5,3', 52, [[8, 1], [5, 3]])
    >>> borel_cayley_graph(7, 4)
    Traceback (most recent call last):
    ...
    topocoll.errors.SpecError: borelcayley needs k dividing p - 1 (alpha of order k in Z_p^*), got p = 7, k = 4
    """
    from scipy.sparse import coo_matrix   # imported when first needed (start-up time)
    from scipy.sparse.csgraph import connected_components

    p, k = as_int(p, "borelcayley prime p"), as_int(k, "borelcayley order k")
    if not (_prime(p) and p >= 3):
        raise SpecError(f"borelcayley needs a prime p >= 3, got {p}")
    at_least(k, 1, "borelcayley needs k >= 1")
    if (p - 1) % k:
        raise SpecError(f"borelcayley needs k dividing p - 1 (alpha of order k in Z_p^*), got "
                        f"p = {p}, k = {k}")
    alpha = _alpha(p, k)
    log = {pow(alpha, t, p): t for t in range(k)}
    explicit = generators is not None
    if not explicit:
        generators = ((alpha, 1), (alpha, 0))
    gens = [tuple(as_int(v, "borelcayley generator entry") for v in g) for g in generators]
    if len(gens) != 2 or any(len(g) != 2 for g in gens):
        raise SpecError(f"borelcayley takes two generators (a, b), (c, d), got {generators!r}")
    name = f"borelcayley:{p},{k}" + (":" + ",".join(str(v % p) for g in gens for v in g)
                                      if explicit else "")
    n = p * k
    check_size(name, n, 4 * n)
    four = _check_generators(p, k, gens, log)
    t, y = np.divmod(np.arange(n, dtype=np.int64), p)
    x = np.array([pow(alpha, int(e), p) for e in range(k)], dtype=np.int64)[t]
    cols = [np.array([log[int(v)] for v in (x * a) % p], dtype=np.int64) * p + (x * b + y) % p
            for a, b in four]
    rows = np.stack(cols, axis=1)
    adj = coo_matrix((np.ones(rows.size, dtype=np.int8),
                      (np.repeat(np.arange(n), 4), rows.ravel())), shape=(n, n))
    if connected_components(adj, directed=False)[0] != 1:
        raise SpecError(f"borelcayley needs A and B to generate all p k = {n} elements, got "
                        f"A = {four[0]}, B = {four[1]} over Z_{p}")
    src, dst = rows_to_links(rows)
    meta = {"family": "borelcayley", "p": p, "k": k, "alpha": alpha,
            "generators": [[v % p for v in g] for g in gens]}
    return make_topology(name, n, src, dst, bandwidth, latency, meta)
