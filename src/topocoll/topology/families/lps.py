"""Lubotzky-Phillips-Sarnak Ramanujan graphs ``X^{p,q}``, and SpectralFly, the same graphs as a
network.

For distinct odd primes ``p`` and ``q``, ``X^{p,q}`` is the Cayley graph of ``PSL(2, q)``
(when ``p`` is a square mod ``q``, Legendre symbol ``(p/q) = 1``) or of ``PGL(2, q)`` (when
``(p/q) = -1``) with the ``p + 1`` generators that come from the integer solutions of
``a0^2 + a1^2 + a2^2 + a3^2 = p`` (Lubotzky, Phillips and Sarnak, Combinatorica 1988; the form
for any odd ``q`` is that of Davidoff, Sarnak and Valette, *Elementary Number Theory, Group
Theory and Ramanujan Graphs*, 2003). It is ``(p+1)``-regular on ``q(q^2-1)/2`` or ``q(q^2-1)``
vertices (bipartite in the ``PGL`` case) and Ramanujan: every eigenvalue other than ``+-(p+1)``
has absolute value at most ``2 sqrt(p)``.

SpectralFly (Young et al., IPDPS 2022) *is* the LPS graph used as a router network, so
``spectralfly:P,Q`` builds exactly the links of ``lps:P,Q`` under its own name.

>>> t = lps_graph(3, 5)
>>> t.num_nodes, set(t.out_degree().tolist()), t.meta["group"]
(120, {4}, 'PGL(2,5)')
"""

import numpy as np

from ...defaults import LINK_BANDWIDTH, LINK_LATENCY
from ...errors import SpecError
from .checks import as_int, check_size, make_topology, rows_to_links

__all__ = ["lps_graph", "spectralfly_graph", "lps_generators", "legendre"]


def _is_prime(n):
    return n >= 2 and all(n % f for f in range(2, int(n ** 0.5) + 1))


def legendre(a, q):
    """The Legendre symbol ``(a/q)`` for an odd prime ``q``: 1, -1 or 0.

    >>> legendre(3, 13), legendre(3, 5), legendre(10, 5)
    (1, -1, 0)
    """
    r = pow(a % q, (q - 1) // 2, q)
    return -1 if r == q - 1 else r


def _four_squares(p):
    """The ``p + 1`` LPS solutions ``(a0, a1, a2, a3)`` of ``sum a_i^2 = p``: for
    ``p = 1 mod 4``, ``a0`` odd and positive, the rest even; for ``p = 3 mod 4``, ``a0`` even,
    the rest odd, the first non-zero coordinate positive."""
    r = int(p ** 0.5)
    out = []
    span = range(-r, r + 1)
    for a0 in span:
        for a1 in span:
            for a2 in span:
                rest = p - a0 * a0 - a1 * a1 - a2 * a2
                if rest < 0:
                    continue
                a3 = int(round(rest ** 0.5))
                for s in {a3, -a3}:
                    if s * s != rest:
                        continue
                    v = (a0, a1, a2, s)
                    if p % 4 == 1 and a0 > 0 and a0 % 2 == 1:
                        out.append(v)
                    elif p % 4 == 3 and a0 % 2 == 0 and next(c for c in v if c) > 0:
                        out.append(v)
    return sorted(out)


def lps_generators(p, q):
    """The ``p + 1`` generator matrices of ``X^{p,q}`` as ``(a, b, c, d)`` entries mod ``q``.

    With ``x, y`` the least pair with ``x^2 + y^2 + 1 = 0 mod q``, the solution
    ``(a0, a1, a2, a3)`` gives ``[[a0 + a1 x + a3 y, -a1 y + a2 + a3 x],
    [-a1 y - a2 + a3 x, a0 - a1 x - a3 y]]``, of determinant ``p`` mod ``q``. The set is
    closed under inversion in ``PGL(2, q)`` (the solution with ``a1, a2, a3`` negated gives
    the adjugate), so the Cayley graph is undirected.

    Examples
    --------
    >>> len(lps_generators(5, 13)), lps_generators(3, 5)[0]
    (6, (3, 2, 4, 2))
    >>> sorted({(a * d - b * c) % 5 for a, b, c, d in lps_generators(3, 5)})   # det = p
    [3]
    """
    p, q = _check(p, q)
    x, y = next((x, y) for x in range(q) for y in range(q) if (x * x + y * y + 1) % q == 0)
    gens = []
    for a0, a1, a2, a3 in _four_squares(p):
        gens.append(((a0 + a1 * x + a3 * y) % q, (-a1 * y + a2 + a3 * x) % q,
                     (-a1 * y - a2 + a3 * x) % q, (a0 - a1 * x - a3 * y) % q))
    return gens


def _check(p, q):
    p, q = as_int(p, "lps prime p"), as_int(q, "lps prime q")
    if not (_is_prime(p) and p > 2 and _is_prime(q) and q > 2 and p != q):
        raise SpecError(f"lps needs distinct odd primes p and q, got p = {p}, q = {q}")
    return p, q


def _normalize(m, q, inv):
    """Scale each row ``(a, b, c, d)`` of ``m`` so that its first non-zero entry is 1 (the
    canonical representative in ``PGL(2, q)``); returns the codes ``((a q + b) q + c) q + d``."""
    lead = np.where(m[:, 0] != 0, m[:, 0], m[:, 1])
    m = (m * inv[lead][:, None]) % q
    return ((m[:, 0] * q + m[:, 1]) * q + m[:, 2]) * q + m[:, 3]


def _pgl_elements(q):
    """Codes of the canonical representatives of ``PGL(2, q)``: ``(1, b, c, d)`` with
    ``d != bc`` and ``(0, 1, c, d)`` with ``c != 0``; ``q(q^2 - 1)`` of them, sorted."""
    b, c, d = np.meshgrid(*(np.arange(q, dtype=np.int64),) * 3, indexing="ij")
    b, c, d = b.ravel(), c.ravel(), d.ravel()
    keep = (d - b * c) % q != 0
    first = ((q + b[keep]) * q + c[keep]) * q + d[keep]
    c2, d2 = np.meshgrid(np.arange(1, q, dtype=np.int64), np.arange(q, dtype=np.int64),
                         indexing="ij")
    second = (q + c2.ravel()) * q + d2.ravel()
    return np.sort(np.concatenate([first, second]))


def _cayley_rows(q, gens):
    """Out-neighbour table of the Cayley graph ``g -> g s`` on the component of the
    identity, and the number of elements of ``PGL(2, q)``."""
    from scipy.sparse import coo_matrix   # imported when first needed (start-up time)
    from scipy.sparse.csgraph import connected_components

    codes = _pgl_elements(q)
    inv = np.array([0] + [pow(i, q - 2, q) for i in range(1, q)], dtype=np.int64)
    a, rest = np.divmod(codes, q ** 3)
    b, rest = np.divmod(rest, q * q)
    c, d = np.divmod(rest, q)
    cols = []
    for s0, s1, s2, s3 in gens:
        prod = np.stack([a * s0 + b * s2, a * s1 + b * s3, c * s0 + d * s2, c * s1 + d * s3],
                        axis=1) % q
        cols.append(np.searchsorted(codes, _normalize(prod, q, inv)))
    rows = np.stack(cols, axis=1)
    n = codes.size
    adj = coo_matrix((np.ones(rows.size, dtype=np.int8),
                      (np.repeat(np.arange(n), rows.shape[1]), rows.ravel())), shape=(n, n))
    labels = connected_components(adj, directed=False)[1]
    identity = int(np.searchsorted(codes, ((q + 0) * q + 0) * q + 1))
    keep = np.flatnonzero(labels == labels[identity])
    new_id = np.full(n, -1, dtype=np.int64)
    new_id[keep] = np.arange(keep.size)
    return new_id[rows[keep]], n


def lps_graph(p, q, *, bandwidth=LINK_BANDWIDTH, latency=LINK_LATENCY, _family="lps"):
    """The LPS Ramanujan graph ``X^{p,q}``: ``(p+1)``-regular Cayley graph of ``PSL(2, q)`` or
    ``PGL(2, q)``.

    Nodes are the elements of the group reachable from the identity (``PSL(2, q)`` when
    ``(p/q) = 1``, all of ``PGL(2, q)`` when ``(p/q) = -1``), numbered in increasing order of
    the code ``((a q + b) q + c) q + d`` of their canonical matrix (first non-zero entry 1);
    node 0 is the identity. ``g -> g s`` for each generator ``s`` of :func:`lps_generators`,
    links of a node in generator order. Bidirectional, simple and vertex-transitive.

    Parameters
    ----------
    p, q : int
        Distinct odd primes. The ``p + 1`` generators must be distinct and non-trivial mod
        ``q`` (``q > 2 sqrt(p)`` suffices).
    bandwidth, latency : float or str
        Per-link bandwidth (bytes/s) and latency (s).

    Returns
    -------
    Topology
        Named ``"lps:3,5"``; ``meta`` has ``p``, ``q``, ``legendre`` (``(p/q)``), ``group``,
        ``degree``, ``bipartite`` and ``ramanujan_bound`` (``2 sqrt(p)``).

    Raises
    ------
    SpecError
        ``p`` or ``q`` not an odd prime, ``p == q``, or generators that collide mod ``q``.

    Examples
    --------
    >>> t = lps_graph(3, 13)
    >>> t.name, t.num_nodes, t.meta["group"], t.meta["bipartite"]
    ('lps:3,13', 1092, 'PSL(2,13)', False)
    >>> lps_graph(3, 4)
    Traceback (most recent call last):
    ...
    topocoll.errors.SpecError: lps needs distinct odd primes p and q, got p = 3, q = 4
    """
    p, q = _check(p, q)
    name = f"{_family}:{p},{q}"
    sym = legendre(p, q)
    size = q * (q * q - 1) // (2 if sym == 1 else 1)
    check_size(name, q * (q * q - 1), q * (q * q - 1) * (p + 1))
    gens = lps_generators(p, q)
    inv = np.array([0] + [pow(i, q - 2, q) for i in range(1, q)], dtype=np.int64)
    codes = _normalize(np.array(gens, dtype=np.int64), q, inv)
    if len(set(codes.tolist())) < p + 1 or ((q * q) * q + 1) in codes.tolist():
        raise SpecError(f"lps needs the p+1 = {p + 1} generators distinct and non-trivial mod "
                        f"q (q > 2 sqrt(p) suffices), got p = {p}, q = {q}")
    rows, _ = _cayley_rows(q, gens)
    if rows.shape[0] != size:   # the group theory says otherwise; never hand out a wrong graph
        raise SpecError(f"{name}: built {rows.shape[0]} nodes, expected {size}")
    src, dst = rows_to_links(rows)
    meta = {"family": _family, "p": p, "q": q, "legendre": sym,
            "group": f"{'PSL' if sym == 1 else 'PGL'}(2,{q})", "degree": p + 1,
            "bipartite": sym == -1, "ramanujan_bound": 2 * p ** 0.5}
    return make_topology(name, size, src, dst, bandwidth, latency, meta)


def spectralfly_graph(p, q, *, bandwidth=LINK_BANDWIDTH, latency=LINK_LATENCY):
    """SpectralFly (Young et al., IPDPS 2022): the LPS graph ``X^{p,q}`` as a router network.

    The very links of :func:`lps_graph` ``(p, q)``; only the name (``"spectralfly:P,Q"``) and
    ``meta["family"]`` differ.

    Examples
    --------
    >>> s, t = spectralfly_graph(5, 7), lps_graph(5, 7)
    >>> s.name, s.num_nodes, bool((s.dst == t.dst).all())
    ('spectralfly:5,7', 336, True)
    """
    return lps_graph(p, q, bandwidth=bandwidth, latency=latency, _family="spectralfly")
