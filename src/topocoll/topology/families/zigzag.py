"""The zig-zag product of Reingold, Vadhan and Wigderson (Annals of Mathematics 2002).

For a ``D``-regular graph ``G`` on ``N`` nodes and a ``d``-regular graph ``H`` on ``D`` nodes,
``G (z) H`` is ``d^2``-regular on ``N D`` nodes, and an expander when ``G`` and ``H`` are: its
normalized second eigenvalue is at most ``lambda_G + lambda_H + lambda_H^2``.

The *rotation map* of ``G`` labels the ``D`` links of each node ``v`` with ``0 .. D-1`` in
the order of the link list (for the generators here, increasing head), and
``Rot_G(v, i) = (w, j)`` when link ``i`` of ``v`` goes to ``w`` and the reverse link is link
``j`` of ``w``. Node ``(v, k)`` of the product (id ``v D + k``) has the ``d^2`` links, for
``i, j < d``: a step in ``H`` ``k -> k' = `` link ``i`` of ``k``; a step in ``G``
``(w, l') = Rot_G(v, k')``; a step in ``H`` ``l = `` link ``j`` of ``l'``: ``(v, k) -> (w, l)``.
The rotation map of the product is an involution, so the product is undirected; when ``G`` and
``H`` are simple, so is the product (distinct ``i`` give distinct ``w``, distinct ``j``
distinct ``l``).

``zigzag(G,H)`` is the composite spec (:mod:`~topocoll.topology.composite`), e.g.
``zigzag(complete:5,ring:4)``.

>>> from topocoll.topology import topology
>>> t = topology("zigzag(complete:5,ring:4)")
>>> t.name, t.num_nodes, set(t.out_degree().tolist())
('zigzag(complete:5,ring:4)', 20, {4})
"""

import numpy as np

from ...errors import SpecError
from .checks import check_size, make_topology

__all__ = ["zigzag_product"]


def _rotation(topo, what):
    """``(heads, back)``: ``heads[v, i]`` the head of link ``i`` of ``v`` and ``back[v, i]`` the
    label of the reverse link at the head, for a regular, simple, bidirectional topology."""
    n = topo.num_nodes
    deg = np.bincount(topo.src, minlength=n)
    if deg.size == 0 or deg.min() != deg.max() or deg[0] == 0:
        raise SpecError(f"zigzag needs {what} regular (every out-degree equal, >= 1), got "
                        f"{topo.name} with degrees {sorted(set(deg.tolist()))[:4]}")
    order = np.lexsort((topo.dst, topo.src))
    src, dst = topo.src[order], topo.dst[order]
    d = int(deg[0])
    code = src * n + dst
    if np.unique(code).size != code.size or np.any(src == dst):
        raise SpecError(f"zigzag needs {what} simple (no parallel links or self-loops), got "
                        f"{topo.name}")
    rev = np.searchsorted(code, dst * n + src)
    rev = np.minimum(rev, code.size - 1)
    if not np.array_equal(code[rev], dst * n + src):
        raise SpecError(f"zigzag needs {what} bidirectional (every link has its reverse), got "
                        f"{topo.name}")
    return dst.reshape(n, d), (rev % d).reshape(n, d)


def zigzag_product(g, h):
    """The zig-zag product ``G (z) H`` (module text): ``N_G N_H`` nodes of degree ``d_H^2``.

    Parameters
    ----------
    g : Topology
        ``D``-regular, simple and bidirectional, on ``N`` nodes.
    h : Topology
        ``d``-regular, simple and bidirectional, on exactly ``D`` nodes.

    Returns
    -------
    Topology
        Named ``"zigzag(G,H)"``; every link has the bandwidth and latency of ``G``'s first
        link; ``meta`` has ``g``, ``h`` and ``degree``.

    Raises
    ------
    SpecError
        Either graph not regular, simple or bidirectional, or ``N_H != d_G``.

    Examples
    --------
    >>> from topocoll.topology import topology
    >>> t = zigzag_product(topology("hypercube:4"), topology("complete:4"))
    >>> t.num_nodes, t.meta["degree"], t.is_bidirectional()
    (64, 9, True)
    >>> zigzag_product(topology("complete:5"), topology("ring:5"))
    Traceback (most recent call last):
    ...
    topocoll.errors.SpecError: zigzag(G,H) needs H on d_G nodes: G = complete:5 has degree 4, H = ring:5 has 5 nodes
    """
    g_heads, g_back = _rotation(g, "G")
    big_d = g_heads.shape[1]
    if h.num_nodes != big_d:
        raise SpecError(f"zigzag(G,H) needs H on d_G nodes: G = {g.name} has degree {big_d}, "
                        f"H = {h.name} has {h.num_nodes} nodes")
    h_heads, _ = _rotation(h, "H")
    d = h_heads.shape[1]
    n = g.num_nodes * big_d
    name = f"zigzag({g.name},{h.name})"
    check_size(name, n, n * d * d)
    v, k = np.divmod(np.arange(n, dtype=np.int64), big_d)
    kp = h_heads[k]                                    # (n, d): k' per i
    w, lp = g_heads[v[:, None], kp], g_back[v[:, None], kp]
    ll = h_heads[lp]                                   # (n, d, d): l per (i, j)
    dst = (w[:, :, None] * big_d + ll).reshape(n, d * d)
    src = np.repeat(np.arange(n, dtype=np.int64), d * d)
    dst = np.sort(dst, axis=1).ravel()
    meta = {"family": "zigzag", "g": g.name, "h": h.name, "degree": d * d}
    return make_topology(name, n, src, dst, g.bandwidth[0], g.latency[0], meta)
