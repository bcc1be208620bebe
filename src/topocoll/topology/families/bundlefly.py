"""BundleFly (Lei, Dong, Liao and Duato, ICS 2020): a star product of a Slim Fly (MMS) structure
graph and a Paley supernode, built for multi-core fibre bundles.

The *star product* ``G* * G'`` (Bermond, Delorme and Farhi) of a structure graph ``G*`` and a
supernode graph ``G'`` has node set ``V(G*) x V(G')``: node ``(u, x)`` is linked to
``(u, y)`` for every link ``x -- y`` of ``G'`` (a copy of the supernode per structure node),
and, for every structure edge ``u -- v`` oriented ``u -> v``, to ``(v, f_uv(x))`` for a
bijection ``f_uv`` of ``V(G')`` (so the ``|V(G')|`` links between two supernodes form a
perfect matching: one multi-core fibre bundle).

``bundlefly:Q,R`` as built here: ``G*`` is the MMS graph ``slimfly:Q`` (``2Q^2`` nodes, degree
``(3Q - delta)/2``, diameter 2), ``G'`` the Paley graph ``paley:R`` (``R`` a prime power
``= 1 mod 4``, degree ``(R-1)/2``, diameter 2), every structure edge is oriented from the
smaller node id to the larger, and every ``f_uv`` is multiplication by ``xi``, the least
primitive element of GF(R) (a non-square: it maps the Paley graph onto its complement), as in
the BundleFly paper's choice of a non-residue multiplier. Node ``(u, x)`` has id ``u R + x``.
The result is ``((3Q - delta)/2 + (R - 1)/2)``-regular on ``2 Q^2 R`` nodes, bidirectional and
simple; its diameter is at most ``diam G* + diam G' = 4`` for any bijections, and the
multiplier is what brings it to 3 where it does (``meta["diameter_bound"]`` is the 4 that
always holds; tests measure the actual diameter of small members).

>>> t = bundlefly_graph(3, 5)
>>> t.num_nodes, set(t.out_degree().tolist())
(90, {7})
"""

import numpy as np

from ...defaults import LINK_BANDWIDTH, LINK_LATENCY
from .alltoall import _field_tables, slimfly_graph
from .checks import check_size, make_topology
from .drg import paley_graph

__all__ = ["bundlefly_graph"]


def bundlefly_graph(q, r, *, bandwidth=LINK_BANDWIDTH, latency=LINK_LATENCY):
    """BundleFly: star product of ``slimfly:Q`` and ``paley:R`` (module text).

    Parameters
    ----------
    q : int
        The Slim Fly field size: a prime power ``= 4w + delta``, ``delta`` in ``{-1, 0, 1}``.
    r : int
        The Paley field size: a prime power ``= 1 mod 4``.
    bandwidth, latency : float or str
        Per-link bandwidth (bytes/s) and latency (s).

    Returns
    -------
    Topology
        Named ``"bundlefly:3,5"``; ``meta`` has ``q``, ``r``, ``xi``, ``degree``,
        ``structure_degree``, ``supernode_degree`` and ``diameter_bound``.

    Raises
    ------
    SpecError
        ``q`` not a Slim Fly field size or ``r`` not a Paley field size (the rule of each).

    Examples
    --------
    >>> t = bundlefly_graph(4, 5)
    >>> t.name, t.num_nodes, t.meta["degree"], t.is_bidirectional()
    ('bundlefly:4,5', 160, 8, True)
    >>> bundlefly_graph(3, 7)
    Traceback (most recent call last):
    ...
    topocoll.errors.SpecError: paley needs a prime power q = 1 mod 4 (5, 9, 13, 17, 25, ...), got 7
    """
    star = slimfly_graph(q)
    node = paley_graph(r)
    n_star, d_star = star.num_nodes, star.meta["degree"]
    d_node = (r - 1) // 2
    name = f"bundlefly:{q},{r}"
    n = n_star * r
    check_size(name, n, n * (d_star + d_node))
    _, _, _, mul, xi = _field_tables(r)
    inv_xi = int(np.flatnonzero(mul[xi] == 1)[0])
    x = np.arange(r, dtype=np.int64)
    # supernode links: (u, a) -> (u, b) for every Paley link a -> b
    u = np.arange(n_star, dtype=np.int64)
    in_src = (u[:, None] * r + node.src[None, :]).ravel()
    in_dst = (u[:, None] * r + node.dst[None, :]).ravel()
    # bundle links: (u, a) -> (v, xi a) for u < v, (u, a) -> (v, a / xi) for u > v
    mult = np.where(star.src < star.dst, xi, inv_xi)
    b_src = (star.src[:, None] * r + x[None, :]).ravel()
    b_dst = (star.dst[:, None] * r + mul[mult[:, None], x[None, :]]).ravel()
    src, dst = np.concatenate([in_src, b_src]), np.concatenate([in_dst, b_dst])
    order = np.lexsort((dst, src))
    meta = {"family": "bundlefly", "q": q, "r": r, "xi": xi, "degree": d_star + d_node,
            "structure_degree": d_star, "supernode_degree": d_node, "diameter_bound": 4}
    return make_topology(name, n, src[order], dst[order], bandwidth, latency, meta)
