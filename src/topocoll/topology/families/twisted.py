"""Twisted families: the twisted torus (TPU v4) and the twisted hypercube (crossed cube).

Both keep the degree of their untwisted parent and lower its diameter by rerouting a few
links. Every link is bidirectional.
"""

import numpy as np

from ...errors import SpecError
from ...defaults import LINK_BANDWIDTH, LINK_LATENCY
from .checks import (as_int, as_int_tuple, at_least, check_size, make_topology,
                      mixed_radix_digits, rows_to_links)

__all__ = ["twisted_torus_graph", "twisted_hypercube_graph"]


def twisted_torus_graph(dims, twist=None, *, bandwidth=LINK_BANDWIDTH,
                        latency=LINK_LATENCY):
    """Twisted torus: a torus whose shorter dimensions wrap around with a shift along the longest.

    Let ``L = max(dims)``. A dimension of size ``L`` is *long*, any other is *short*. Node
    ``(x_1, ..., x_n)`` (mixed radix, first coordinate most significant, as in
    :func:`~topocoll.topology.families.torus_graph`) links to ``x +- e_i`` for every dimension
    ``i``, modulo ``dims[i]`` in coordinate ``i``, exactly as in the torus, except on the
    wrap-around links of a short dimension: stepping from ``x_i = dims[i]-1`` to ``x_i = 0``
    also adds ``twist`` to every long coordinate (modulo ``L``), and stepping back subtracts it.
    With ``twist = L // 2`` (the default) this is the twisted torus of TPU v4 slices
    (``k x k x 2k`` and ``k x 2k x 2k``: the ``+k mod 2k`` seam) and, in 2D, the rectangular
    twisted torus ``a x 2a`` of Camara et al. (2010). ``twist = 0`` is the plain torus.

    The graph is the Cayley graph of ``Z^n / L`` (``L`` spanned by ``dims[i] * e_i - twist *
    sum(long e_j)`` for short ``i`` and ``L * e_j`` for long ``j``) with generators ``+-e_i``:
    vertex-transitive and ``2n``-regular when every dimension is ``>= 3``. Its node ids are not
    a translation labelling of that group, so no ``meta["symmetry"]`` is claimed.

    Parameters
    ----------
    dims : sequence of int
        At least two dimension sizes, each ``>= 3``, at least one shorter than the longest.
    twist : int, optional
        Shift of the short dimensions' wrap-around links along the long ones, in
        ``0..L-1``; default ``L // 2``.
    bandwidth, latency : float or str
        Per-link bandwidth (bytes/s) and latency (s).

    Returns
    -------
    Topology
        Named ``"twistedtorus:4x4x8"``, with ``":T"`` appended when the twist is not the
        default ``L // 2``; ``meta`` holds ``dims``, ``twist`` and ``long_dims`` (indices).

    Examples
    --------
    >>> from topocoll.topology import diameter, torus_graph
    >>> t = twisted_torus_graph([4, 8])
    >>> t.name, t.num_nodes, t.num_links, diameter(t), diameter(torus_graph([4, 8]))
    ('twistedtorus:4x8', 32, 128, 4, 6)
    >>> t.dst[t.src == 24].tolist()    # (3, 0): +x wraps to (0, 0 + 4), -x goes to (2, 0)
    [4, 16, 25, 31]
    >>> twisted_torus_graph([4, 4, 8], 3).name, diameter(twisted_torus_graph([4, 4, 8]))
    ('twistedtorus:4x4x8:3', 6)
    """
    dims = as_int_tuple(dims, "twistedtorus dimensions")
    text = "x".join(str(k) for k in dims)
    if len(dims) < 2:
        raise SpecError(f"twistedtorus needs at least 2 dimensions, got {text}")
    if min(dims) < 3:
        raise SpecError(f"twistedtorus dimensions must be >= 3, got {min(dims)} in {text}")
    longest = max(dims)
    if min(dims) == longest:
        raise SpecError(f"twistedtorus needs a dimension shorter than the longest (the short "
                        f"ones wrap with a twist along the longest), got {text}")
    default = longest // 2
    twist = default if twist is None else as_int(twist, "twistedtorus twist")
    if not 0 <= twist < longest:
        raise SpecError(f"twistedtorus twist must be in 0..{longest - 1} (the longest "
                        f"dimension), got {twist}")
    name = f"twistedtorus:{text}" + ("" if twist == default else f":{twist}")
    num_nodes = int(np.prod(dims, dtype=object))
    check_size(name, num_nodes, 2 * len(dims) * num_nodes)
    ids, digits, strides = mixed_radix_digits(num_nodes, dims)
    long_dims = [i for i, k in enumerate(dims) if k == longest]
    carry = np.zeros(num_nodes, dtype=np.int64)   # id change of adding twist to long coords
    for j in long_dims:
        carry += ((digits[j] + twist) % longest - digits[j]) * strides[j]
    back = np.zeros(num_nodes, dtype=np.int64)    # ... and of subtracting it
    for j in long_dims:
        back += ((digits[j] - twist) % longest - digits[j]) * strides[j]
    columns = []
    for i, (k, c, stride) in enumerate(zip(dims, digits, strides)):
        plus = ids + ((c + 1) % k - c) * stride
        minus = ids + ((c - 1) % k - c) * stride
        if k < longest:
            # the long coordinates are untouched by this step, so the shifts just add up
            plus = np.where(c == k - 1, plus + carry, plus)
            minus = np.where(c == 0, minus + back, minus)
        columns += [plus, minus]
    src, dst = rows_to_links(np.stack(columns, axis=1))
    meta = {"family": "twistedtorus", "dims": list(dims), "twist": twist,
            "long_dims": long_dims}
    return make_topology(name, num_nodes, src, dst, bandwidth, latency, meta)


def twisted_hypercube_graph(k, *, bandwidth=LINK_BANDWIDTH, latency=LINK_LATENCY):
    """Twisted hypercube: the crossed cube CQ_k of Efe (1992), ``2**k`` nodes, degree ``k``,
    diameter ``ceil((k + 1) / 2)``.

    Node ``u`` (a ``k``-bit number) has one neighbour per dimension ``d < k``: flip bit ``d``
    and, for every bit pair ``(2i+1, 2i)`` with ``i < d // 2``, flip bit ``2i+1`` when bit
    ``2i`` is set (Efe's pair relation ``00~00, 10~10, 01~11, 11~01``); bits above ``d`` and,
    for odd ``d``, bit ``d-1`` stay. Dimension ``d`` thus joins the two halves ``u_d = 0`` and
    ``u_d = 1`` of a ``CQ_{d+1}`` by a perfect matching that is *crossed* instead of straight.
    For ``k <= 2`` it is the hypercube; ``CQ_3`` is the 8-node twisted cube of Zhao et al.'s
    Appendix I (diameter 2 instead of 3). Crossed cubes are not vertex-transitive for
    ``k >= 5``, so no ``meta["symmetry"]`` is claimed; BFB is bandwidth-optimal on them for
    ``k <= 4`` but not beyond.

    Parameters
    ----------
    k : int
        Dimension, ``>= 1``.
    bandwidth, latency : float or str
        Per-link bandwidth (bytes/s) and latency (s).

    Examples
    --------
    >>> from topocoll.topology import diameter
    >>> t = twisted_hypercube_graph(3)
    >>> t.name, t.num_nodes, t.num_links, diameter(t)
    ('twistedhypercube:3', 8, 24, 2)
    >>> t.dst[t.src == 1].tolist()    # 001: dims 0, 1 as in the cube, dim 2 crossed to 111
    [0, 3, 7]
    >>> [diameter(twisted_hypercube_graph(j)) for j in range(1, 8)]
    [1, 2, 2, 3, 3, 4, 4]
    """
    k = at_least(as_int(k, "twistedhypercube dimension"), 1,
                 "twistedhypercube needs dimension k >= 1")
    name = f"twistedhypercube:{k}"
    check_size(name, 2**k, k * 2**k)
    ids = np.arange(2**k, dtype=np.int64)
    columns = []
    for d in range(k):
        even_bits = sum(1 << (2 * i) for i in range(d // 2))
        columns.append(ids ^ (np.int64(1) << d) ^ ((ids & even_bits) << 1))
    src, dst = rows_to_links(np.stack(columns, axis=1))
    return make_topology(name, 2**k, src, dst, bandwidth, latency,
                         {"family": "twistedhypercube", "k": k, "construction": "crossed cube"})
