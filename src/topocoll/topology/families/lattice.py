"""Lattice families: torus, mesh, rings and the hypercube.

Node ids are mixed-radix numbers over the dimension sizes, first dimension most significant:
in ``torus:4x6x3`` node ``(a, b, c)`` is ``a*18 + b*3 + c``. Every link is bidirectional except
in :func:`uniring_graph`. Tori and rings claim their translation symmetry in
``meta["symmetry"]`` (mixed radix over the dimensions; cyclic), the hypercube its xor symmetry.
"""

import numpy as np

from ...errors import SpecError, TopologyError
from ...defaults import LINK_BANDWIDTH, LINK_LATENCY
from ...units import parse_bandwidth
from .checks import (as_int, as_int_tuple, at_least, check_size, make_topology,
                      mixed_radix_digits, rows_to_links)

__all__ = ["torus_graph", "mesh_graph", "ring_graph", "uniring_graph", "hypercube_graph",
           "link_dimensions", "with_dimension_bandwidth"]


def _dims(dims, family):
    dims = as_int_tuple(dims, f"{family} dimensions")
    text = "x".join(str(k) for k in dims)
    bad = [k for k in dims if k < 1]
    if bad:
        raise SpecError(f"{family} dimensions must be >= 1, got {bad[0]} in {text}")
    num_nodes = int(np.prod([int(k) for k in dims], dtype=object))
    if num_nodes < 2:
        raise SpecError(f"a {family} needs at least 2 nodes in total, got {num_nodes} ({text})")
    return dims, text, num_nodes


def _lattice_links(dims, num_nodes, *, wrap, double_size2=False):
    """Links of a torus (``wrap``) or mesh over ``dims``, sorted by source."""
    ids, digits, strides = mixed_radix_digits(num_nodes, dims)
    columns = []
    for k, c, stride in zip(dims, digits, strides):
        if k == 1:
            continue
        if wrap:
            plus = ids + ((c + 1) % k - c) * stride
            minus = ids + ((c - 1) % k - c) * stride
            if k > 2:
                columns += [plus, minus]
            else:  # both neighbours are the same node: one cable unless asked for two
                columns += [plus, plus] if double_size2 else [plus]
        else:
            columns.append(np.where(c < k - 1, ids + stride, -1))
            columns.append(np.where(c > 0, ids - stride, -1))
    return rows_to_links(np.stack(columns, axis=1))


def _lattice_link_count(dims, num_nodes, *, wrap, double_size2=False):
    if not wrap:
        return sum(2 * (num_nodes // k) * (k - 1) for k in dims)
    per_node = sum(2 if k > 2 or (k == 2 and double_size2) else (1 if k == 2 else 0)
                   for k in dims)
    return num_nodes * per_node


def torus_graph(dims, *, double_size2=False, bandwidth=LINK_BANDWIDTH,
                latency=LINK_LATENCY):
    """Torus (wrap-around grid) of any number of dimensions and any sizes, bidirectional.

    Parameters
    ----------
    dims : sequence of int
        Dimension sizes, each ``>= 1``, with at least 2 nodes in total.
    double_size2 : bool
        In a dimension of size 2 both neighbours of a node are the same node. By default the two
        nodes get one link each way; with ``double_size2`` they get two parallel links each way
        (the "wrap-around" cable is kept), so that every node has degree ``2 * len(dims)``.
    bandwidth, latency : float or str
        Per-link bandwidth (bytes/s) and latency (s); unit strings such as ``"100Gbps"`` work.

    Returns
    -------
    Topology
        Named ``"torus:4x6x3"`` (``":double"`` appended when it changed something).

    Examples
    --------
    >>> t = torus_graph([4, 6, 3])
    >>> t.name, t.num_nodes, t.num_links
    ('torus:4x6x3', 72, 432)
    >>> t, double = torus_graph([2, 4]), torus_graph([2, 4], double_size2=True)
    >>> t.num_links, set(t.out_degree().tolist()), double.name, double.num_links
    (24, {3}, 'torus:2x4:double', 32)
    """
    dims, text, num_nodes = _dims(dims, "torus")
    double_size2 = bool(double_size2)
    name = f"torus:{text}" + (":double" if double_size2 and 2 in dims else "")
    check_size(name, num_nodes, _lattice_link_count(dims, num_nodes, wrap=True,
                                                    double_size2=double_size2))
    src, dst = _lattice_links(dims, num_nodes, wrap=True, double_size2=double_size2)
    meta = {"family": "torus", "dims": list(dims), "double_size2": double_size2,
            "symmetry": {"kind": "mixed_radix", "dims": list(dims)}}
    return make_topology(name, num_nodes, src, dst, bandwidth, latency, meta)


def mesh_graph(dims, *, bandwidth=LINK_BANDWIDTH, latency=LINK_LATENCY):
    """Grid without wrap-around, any number of dimensions, bidirectional links.

    Parameters
    ----------
    dims : sequence of int
        Dimension sizes, each ``>= 1``, with at least 2 nodes in total.
    bandwidth, latency : float or str
        Per-link bandwidth (bytes/s) and latency (s).

    Returns
    -------
    Topology
        Named ``"mesh:5x5"``; diameter ``sum(k - 1)``.

    Examples
    --------
    >>> t = mesh_graph([5, 5])
    >>> t.name, t.num_nodes, t.num_links, sorted(set(t.out_degree().tolist()))
    ('mesh:5x5', 25, 80, [2, 3, 4])
    """
    dims, text, num_nodes = _dims(dims, "mesh")
    name = f"mesh:{text}"
    check_size(name, num_nodes, _lattice_link_count(dims, num_nodes, wrap=False))
    src, dst = _lattice_links(dims, num_nodes, wrap=False)
    return make_topology(name, num_nodes, src, dst, bandwidth, latency,
                         {"family": "mesh", "dims": list(dims)})


def ring_graph(n, *, bandwidth=LINK_BANDWIDTH, latency=LINK_LATENCY):
    """Bidirectional ring: ``i <-> i+1 mod n``.

    Parameters
    ----------
    n : int
        Number of nodes, ``>= 2``. A ring of 2 has one link each way.
    bandwidth, latency : float or str
        Per-link bandwidth (bytes/s) and latency (s).

    Examples
    --------
    >>> t = ring_graph(8)
    >>> t.name, t.num_links, sorted(t.dst[t.src == 0].tolist())
    ('ring:8', 16, [1, 7])
    >>> ring_graph(2).num_links
    2
    """
    n = at_least(as_int(n, "ring size"), 2, "ring needs n >= 2")
    name = f"ring:{n}"
    check_size(name, n, 2 * n)
    src, dst = _lattice_links((n,), n, wrap=True)
    return make_topology(name, n, src, dst, bandwidth, latency,
                         {"family": "ring", "n": n, "symmetry": {"kind": "cyclic"}})


def uniring_graph(n, *, bandwidth=LINK_BANDWIDTH, latency=LINK_LATENCY):
    """Unidirectional ring: ``i -> i+1 mod n``.

    Parameters
    ----------
    n : int
        Number of nodes, ``>= 2``.
    bandwidth, latency : float or str
        Per-link bandwidth (bytes/s) and latency (s).

    Examples
    --------
    >>> t = uniring_graph(4)
    >>> t.name, t.src.tolist(), t.dst.tolist()
    ('uniring:4', [0, 1, 2, 3], [1, 2, 3, 0])
    """
    n = at_least(as_int(n, "uniring size"), 2, "uniring needs n >= 2")
    name = f"uniring:{n}"
    check_size(name, n, n)
    ids = np.arange(n, dtype=np.int64)
    return make_topology(name, n, ids, (ids + 1) % n, bandwidth, latency,
                         {"family": "uniring", "n": n, "symmetry": {"kind": "cyclic"}})


def hypercube_graph(k, *, bandwidth=LINK_BANDWIDTH, latency=LINK_LATENCY):
    """Hypercube of dimension ``k``: ``2**k`` nodes, ``i <-> i xor 2**j`` for ``j < k``.

    Parameters
    ----------
    k : int
        Dimension, ``>= 1``.
    bandwidth, latency : float or str
        Per-link bandwidth (bytes/s) and latency (s).

    Examples
    --------
    >>> t = hypercube_graph(3)
    >>> t.name, t.num_nodes, t.dst[t.src == 5].tolist()
    ('hypercube:3', 8, [4, 7, 1])
    """
    k = at_least(as_int(k, "hypercube dimension"), 1, "hypercube needs dimension k >= 1")
    name = f"hypercube:{k}"
    check_size(name, 2**k, k * 2**k)
    ids = np.arange(2**k, dtype=np.int64)
    dst = ids[:, None] ^ (np.int64(1) << np.arange(k, dtype=np.int64))[None, :]
    src, dst = rows_to_links(dst)
    return make_topology(name, 2**k, src, dst, bandwidth, latency,
                         {"family": "hypercube", "k": k, "symmetry": {"kind": "xor"}})


def link_dimensions(topology):
    """The dimension each link of a mesh or torus runs along (0 = first, most significant).

    >>> t = mesh_graph([2, 3])                  # links 0 -> 3 (between rows), 0 -> 1 (in a row)
    >>> t.dst[:2].tolist(), link_dimensions(t)[:2].tolist()
    ([3, 1], [0, 1])
    """
    dims = topology.meta.get("dims")
    if topology.meta.get("family") not in ("mesh", "torus") or not dims:
        raise TopologyError(f"per-dimension bandwidths need a mesh or torus built from a spec, "
                            f"got {topology.name}")
    _, digits, _ = mixed_radix_digits(topology.num_nodes, [int(k) for k in dims])
    differs = np.stack([d[topology.src] != d[topology.dst] for d in digits], axis=1)
    return np.argmax(differs, axis=1)


def with_dimension_bandwidth(topology, bandwidths):
    """A copy of a mesh or torus whose links run at one bandwidth per dimension.

    Parameters
    ----------
    topology : Topology
        A mesh or torus (``meta["dims"]``), e.g. ``topology("mesh:6x6")``.
    bandwidths : sequence of float or str
        One bandwidth per dimension, first dimension first; in ``mesh:6x6`` node ``(a, b)`` is
        ``6a + b``, so the second bandwidth is that of the links within a row.

    Examples
    --------
    >>> t = with_dimension_bandwidth(mesh_graph([6, 6]), ["25GiB/s", "50GiB/s"])
    >>> float(t.bandwidth[(t.src == 0) & (t.dst == 1)][0]) / 2**30
    50.0
    >>> float(t.bandwidth[(t.src == 0) & (t.dst == 6)][0]) / 2**30
    25.0
    """
    dims = topology.meta.get("dims") or []
    values = [parse_bandwidth(b) for b in bandwidths]
    along = link_dimensions(topology)
    if len(values) != len(dims):
        raise TopologyError(f"{topology.name} has {len(dims)} dimensions; give one bandwidth "
                            f"each, got {len(values)}")
    return topology.with_links(bandwidth=np.asarray(values)[along])
