"""Topology transforms of the expansion techniques (docs/math.md section 4;
Zhao et al. (NSDI 2025), section 5).

* :func:`line_graph` -- one node per link, an edge for every pair of consecutive links;
* :func:`degree_expansion` -- m copies of every node, every link replaced by m*m links;
* :func:`cartesian_product`, :func:`cartesian_power` -- product graphs, node ids mixed radix
  (first factor most significant);
* :func:`bidirectional_union` -- G plus its transpose (appendix F).

Everything is built from the link columns with numpy, never per link in Python.

>>> from topocoll.topology import topology
>>> g = line_graph(topology("kautz:2,2"))
>>> g.name, g.num_nodes, sorted(set(g.out_degree().tolist()))
('line(kautz:2,2)', 12, [2])
>>> d = degree_expansion(topology("complete:4"), 2)
>>> d.name, d.num_nodes, int(d.out_degree().max())
('degree(complete:4,m=2)', 8, 6)
>>> p = cartesian_product(topology("ring:4"), topology("ring:5"))
>>> p.name, p.num_nodes, p.meta["factor_sizes"]
('product(ring:4,ring:5)', 20, [4, 5])
>>> cartesian_power(topology("complete:3"), 2).name
'power(complete:3,n=2)'
"""

import numpy as np

from ..errors import InputTypeError, TopologyError
from ..units import whole_number
from .model import Topology
from .symmetry import translation_group

__all__ = ["line_graph", "degree_expansion", "cartesian_product", "cartesian_power",
           "bidirectional_union", "ragged", "grouped"]


def ragged(counts):
    """For rows with ``counts[r]`` items each: ``(row, position)`` of every item, rows in order.

    >>> [a.tolist() for a in ragged([2, 0, 3])]
    [[0, 0, 2, 2, 2], [0, 1, 0, 1, 2]]
    """
    counts = np.asarray(counts, dtype=np.int64)
    row = np.repeat(np.arange(counts.size, dtype=np.int64), counts)
    start = np.cumsum(counts) - counts
    return row, np.arange(row.size, dtype=np.int64) - start[row]


def grouped(keys, size):
    """Indices sorted (stably) by ``keys`` and the CSR pointer of each key ``0..size-1``."""
    order = np.argsort(keys, kind="stable")
    ptr = np.zeros(size + 1, dtype=np.int64)
    np.cumsum(np.bincount(keys, minlength=size), out=ptr[1:])
    return order, ptr


def _as_topology(value, what):
    """A Topology from a Topology or a networkx graph (a spec string is the registry's to
    read, above this module: ``topocoll.build_topology(spec)``, or the composite spec
    ``line(SPEC)``)."""
    if isinstance(value, Topology):
        return value
    if isinstance(value, str):
        raise InputTypeError(f"{what} needs a Topology or a networkx graph, got the spec "
                             f"{value[:40]!r}: build it first with topocoll.build_topology, or "
                             "write the composite spec (line(SPEC), degree(SPEC,m=M), ...)")
    try:
        import networkx as nx
    except ImportError:  # pragma: no cover - networkx is a dependency
        nx = None
    if nx is not None and isinstance(value, nx.Graph):
        if nx.number_of_selfloops(value):
            u = next(iter(nx.selfloop_edges(value)))[0]
            raise TopologyError(f"{what} needs a topology without self-loops, but node {u!r} "
                                "has one")
        return Topology.from_networkx(value)
    raise InputTypeError(f"{what} needs a Topology or a networkx graph, got "
                         f"{type(value).__name__}")


def _symmetry_dims(topology):
    """The verified translation group's dims of a topology, or None."""
    group = translation_group(topology)
    return None if group is None else [int(d) for d in group.dims]


def line_graph(topology):
    """The line graph L(G): one node per link of G, an edge ``e -> f`` whenever ``dst(e) ==
    src(f)``.

    Node ``e`` is link ``e`` of G (in the order of ``G.src``/``G.dst``), so parallel links of G
    are distinct nodes. Links are ordered by their first link, then by the out-link order of
    G; each carries the bandwidth and latency of its second link ``f``. G has no self-loops, so
    neither has L(G). A d-regular G of N nodes gives a d-regular L(G) of d*N nodes.

    >>> from topocoll.topology import topology
    >>> g = line_graph(topology("uniring:4"))
    >>> g.num_nodes, g.src.tolist(), g.dst.tolist()
    (4, [0, 1, 2, 3], [1, 2, 3, 0])
    """
    g = _as_topology(topology, "line graph")
    g.require_no_switches("the line graph")
    if g.num_links == 0:
        raise TopologyError(f"the line graph of {g.name} would be empty: it has no links")
    n = g.num_nodes
    out_order, out_ptr = grouped(g.src, n)
    outdeg = np.diff(out_ptr)
    e, pos = ragged(outdeg[g.dst])
    f = out_order[out_ptr[g.dst[e]] + pos]
    meta = {"construction": "line_graph", "base": g.name, "base_nodes": n,
            "base_links": g.num_links,
            "node_ids": "node e is link e of the base (src[e] -> dst[e])"}
    return Topology(g.num_links, e, f, g.bandwidth[f], g.latency[f],
                    name=f"line({g.name})", meta=meta)


def degree_expansion(topology, m):
    """The degree expansion G*m: copies ``v_0..v_{m-1}`` of every node ``v`` (id ``v*m + i``)
    and a link ``u_i -> w_j`` for every link ``u -> w`` of G and every ``i, j`` (its bandwidth
    and latency). N*m nodes of degree m*d. G must have no self-loops.

    >>> from topocoll.topology import topology
    >>> t = degree_expansion(topology("uniring:3"), 2)
    >>> t.num_nodes, t.num_links, t.src[:4].tolist(), t.dst[:4].tolist()
    (6, 12, [0, 0, 1, 1], [2, 3, 2, 3])
    """
    g = _as_topology(topology, "degree expansion")
    m = whole_number(m, "degree expansion: m")
    g.require_no_switches("degree expansion")
    loops = g.src == g.dst
    if np.any(loops):  # a Topology rejects them; kept for objects built around that rule
        i = int(np.flatnonzero(loops)[0])
        raise TopologyError(f"degree expansion needs a topology without self-loops, but link "
                            f"{i} is {g.src[i]}->{g.dst[i]}")
    i = np.arange(m, dtype=np.int64)
    src = g.src[:, None, None] * m + i[None, :, None]
    dst = g.dst[:, None, None] * m + i[None, None, :]
    shape = (g.num_links, m, m)
    meta = {"construction": "degree_expansion", "base": g.name, "base_nodes": g.num_nodes,
            "m": m, "node_ids": "copy i of node v is v*m + i"}
    dims = _symmetry_dims(g)
    if dims is not None:
        meta["symmetry"] = {"kind": "mixed_radix", "dims": dims + ([m] if m > 1 else [])}
    return Topology(g.num_nodes * m, np.broadcast_to(src, shape).ravel(),
                    np.broadcast_to(dst, shape).ravel(),
                    np.repeat(g.bandwidth, m * m), np.repeat(g.latency, m * m),
                    name=f"degree({g.name},m={m})", meta=meta)


def _product(factors, name, meta):
    sizes = [f.num_nodes for f in factors]
    total = int(np.prod(sizes, dtype=np.int64))
    weights = [int(np.prod(sizes[j + 1:], dtype=np.int64)) for j in range(len(sizes))]
    ids = np.arange(total, dtype=np.int64)
    src, dst, bw, lat = [], [], [], []
    for f, size, w in zip(factors, sizes, weights):
        rest = ids[(ids // w) % size == 0]    # every assignment of the other coordinates
        src.append((f.src[:, None] * w + rest[None, :]).ravel())
        dst.append((f.dst[:, None] * w + rest[None, :]).ravel())
        bw.append(np.repeat(f.bandwidth, rest.size))
        lat.append(np.repeat(f.latency, rest.size))
    meta = dict(meta, factor_sizes=sizes,
                node_ids="mixed radix over factor_sizes, first factor most significant")
    dims = []
    for f in factors:
        fd = _symmetry_dims(f) if f.num_nodes > 1 else []
        if fd is None:
            dims = None
            break
        dims += fd
    if dims:
        meta["symmetry"] = {"kind": "mixed_radix", "dims": dims}
    return Topology(total, np.concatenate(src), np.concatenate(dst), np.concatenate(bw),
                    np.concatenate(lat), name=name, meta=meta)


def cartesian_product(*factors):
    """The Cartesian product G1 x G2 x ...: node ``(c_1, c_2, ...)`` (id mixed radix over the
    factor sizes, first factor most significant); a link along factor j for every link of
    G_j and every assignment of the other coordinates, with that link's bandwidth and latency.

    >>> from topocoll.topology import topology
    >>> t = cartesian_product(topology("uniring:2"), topology("uniring:3"))
    >>> t.num_nodes, t.num_links, int(t.out_degree().max())
    (6, 12, 2)
    """
    if len(factors) == 1 and isinstance(factors[0], (list, tuple)):
        factors = tuple(factors[0])
    if not factors:
        raise TopologyError("cartesian product needs at least one factor")
    factors = [_as_topology(f, "cartesian product") for f in factors]
    for f in factors:
        f.require_no_switches("the cartesian product")
    name = f"product({','.join(f.name for f in factors)})"
    return _product(factors, name, {"construction": "cartesian_product",
                                    "factors": [f.name for f in factors]})


def cartesian_power(topology, n):
    """The Cartesian power G^n (``n`` copies of G in :func:`cartesian_product`): N^n nodes of
    degree n*d; node ``(c_0, ..., c_{n-1})`` has id ``sum c_k N^(n-1-k)``.

    >>> from topocoll.topology import topology
    >>> t = cartesian_power(topology("ring:3"), 3)
    >>> t.num_nodes, int(t.out_degree().max()), t.meta["factor_sizes"]
    (27, 6, [3, 3, 3])
    """
    g = _as_topology(topology, "cartesian power")
    n = whole_number(n, "cartesian power: n")
    g.require_no_switches("the cartesian power")
    return _product([g] * n, f"power({g.name},n={n})",
                    {"construction": "cartesian_power", "base": g.name, "n": n})


def bidirectional_union(topology):
    """G + G^T: the links of G followed by the links of its transpose (appendix F). For a
    reverse-symmetric d-regular G this is a bidirectional topology of degree 2d (fewer distinct
    neighbours where G already has a link both ways).

    >>> from topocoll.topology import topology
    >>> t = bidirectional_union(topology("uniring:4"))
    >>> t.name, t.num_links, t.is_bidirectional()
    ('bidir(uniring:4)', 8, True)
    """
    g = _as_topology(topology, "bidirectional union")
    g.require_no_switches("the bidirectional union")
    meta = {"construction": "bidirectional_union", "base": g.name,
            "links": "links 0..L-1 are the base's, L..2L-1 their reverses"}
    return Topology(g.num_nodes, np.concatenate([g.src, g.dst]), np.concatenate([g.dst, g.src]),
                    np.tile(g.bandwidth, 2), np.tile(g.latency, 2), name=f"bidir({g.name})",
                    meta=meta)


# the old private name, still imported by synth/expansions.py
