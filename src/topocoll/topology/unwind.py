"""Switch unwinding and failures: topology transforms for TEN synthesis.

* :func:`unwind_switches` replaces every switch by point-to-point links among the nodes attached
  to it (TACOS section IV-D, degree-k unwinding): with the attached nodes ``e_0..e_{m-1}`` in id
  order, ``e_i -> e_{i+1}, ..., e_{i+k}`` (mod m). A new link ``a -> b`` has the latency of the
  path ``a -> switch -> b`` and the smaller of its two bandwidths divided by ``k`` (each port's
  bandwidth is shared by the k links that replace it). Switches are eliminated one after the
  other, so a switch attached to another switch (a two-level fabric) passes its endpoints on.
  The switch nodes are then dropped and the endpoints renumbered ``0..M-1`` in id order
  (``meta["nodes_kept"]`` lists their original ids).
* :func:`fail_links` removes cables (both directions; ``"u>v"`` for one direction only) and
  :func:`fail_nodes` removes nodes with their links, renumbering the survivors.

>>> from topocoll.topology import Topology
>>> star = Topology(5, [0, 1, 2, 3, 4, 4, 4, 4], [4, 4, 4, 4, 0, 1, 2, 3], bandwidth=120.0,
...                 latency=1.0, switches=[4])
>>> ring = unwind_switches(star, 1)
>>> list(zip(ring.src.tolist(), ring.dst.tolist())), ring.latency.tolist()[0], ring.bandwidth.tolist()[0]
([(0, 1), (1, 2), (2, 3), (3, 0)], 2.0, 120.0)
>>> unwind_switches(star).num_links, unwind_switches(star).bandwidth.tolist()[0]
(12, 40.0)
>>> from topocoll.topology import topology
>>> fail_nodes(fail_links(topology("mesh:3x3"), "0-1"), [4]).num_nodes
8
"""

import re

import numpy as np

from ..errors import InputTypeError, TopologyError
from ..units import whole_number
from .model import Topology

__all__ = ["unwind_switches", "fail_links", "fail_nodes", "parse_link_list", "parse_node_list"]

_LINK = re.compile(r"^\s*(\d+)\s*([->])\s*(\d+)\s*$")


def parse_link_list(spec):
    """``"0-1,2>3"`` -> ``[(0, 1, True), (2, 3, False)]`` (True: both directions).

    Lists of pairs ``[(0, 1), ...]`` are accepted too (both directions).
    """
    if isinstance(spec, str):
        out = []
        for item in filter(None, (p.strip() for p in spec.split(","))):
            m = _LINK.match(item)
            if not m:
                raise TopologyError(f"failed link {item!r}: expected U-V (a cable) or U>V "
                                    "(one direction)")
            out.append((int(m.group(1)), int(m.group(3)), m.group(2) == "-"))
        return out
    try:
        return [(int(u), int(v), True) for u, v in spec]
    except (TypeError, ValueError):
        raise InputTypeError(f"failed links must be a string like '0-1,2-3' or a list of "
                             f"pairs, got {spec!r}") from None


def parse_node_list(spec):
    """``"5,7"`` -> ``[5, 7]``; lists of ints are accepted too."""
    if isinstance(spec, str):
        items = [p.strip() for p in spec.split(",") if p.strip()]
        if not all(re.fullmatch(r"\d+", p) for p in items):
            raise TopologyError(f"failed nodes {spec!r}: expected node ids like '5,7'")
        return [int(p) for p in items]
    try:
        return [int(v) for v in spec]
    except (TypeError, ValueError):
        raise InputTypeError(f"failed nodes must be a string like '5,7' or a list of ints, "
                             f"got {spec!r}") from None


def _rebuild(topo, keep_links, *, name, meta, src=None, dst=None, bw=None, lat=None,
             switches=None, num_nodes=None):
    return Topology(topo.num_nodes if num_nodes is None else num_nodes,
                    topo.src[keep_links] if src is None else src,
                    topo.dst[keep_links] if dst is None else dst,
                    topo.bandwidth[keep_links] if bw is None else bw,
                    topo.latency[keep_links] if lat is None else lat,
                    name=name, switches=topo.switches if switches is None else switches,
                    meta=meta)


def fail_links(topology, links):
    """Remove failed links; ``links`` as in :func:`parse_link_list`.

    Raises :class:`TopologyError` naming a link that does not exist.

    >>> from topocoll.topology import topology
    >>> fail_links(topology("ring:4"), "0-1").num_links
    6
    >>> fail_links(topology("ring:4"), "0>2")
    Traceback (most recent call last):
    ...
    topocoll.errors.TopologyError: failed link 0>2: ring:4 has no link 0->2
    """
    topo = topology
    drop = np.zeros(topo.num_links, dtype=bool)
    failed = []
    for u, v, both in parse_link_list(links):
        sep = "-" if both else ">"
        for a, b in ((u, v), (v, u)) if both else ((u, v),):
            hit = (topo.src == a) & (topo.dst == b)
            if not hit.any():
                raise TopologyError(f"failed link {u}{sep}{v}: {topo.name} has no link {a}->{b}")
            if [a, b] in failed:
                raise TopologyError(f"failed link {u}{sep}{v}: link {a}->{b} is listed more "
                                    "than once")
            drop |= hit
            failed.append([a, b])
    meta = dict(topo.meta)
    meta["failed_links"] = list(meta.get("failed_links", [])) + failed
    return _rebuild(topo, ~drop, name=f"{topo.name}-links{len(failed)}", meta=meta)


def fail_nodes(topology, nodes):
    """Remove failed nodes and their links; survivors are renumbered in id order.

    ``meta["nodes_kept"]`` maps new ids to the original ones.

    >>> from topocoll.topology import topology
    >>> t = fail_nodes(topology("mesh:4x4"), "7,9")
    >>> t.num_nodes, t.meta["nodes_kept"][7]
    (14, 8)
    """
    topo = topology
    listed = parse_node_list(nodes)
    gone = sorted(set(listed))
    if len(gone) < len(listed):
        twice = sorted(v for v in gone if listed.count(v) > 1)
        raise TopologyError(f"failed nodes: node {twice[0]} is listed more than once")
    for v in gone:
        if not 0 <= v < topo.num_nodes:
            raise TopologyError(f"failed node {v}: {topo.name} has nodes 0..{topo.num_nodes - 1}")
    if len(gone) >= topo.num_nodes:
        raise TopologyError(f"failing nodes {gone} leaves no node of {topo.name}")
    alive = np.ones(topo.num_nodes, dtype=bool)
    alive[gone] = False
    new_id = np.cumsum(alive) - 1
    keep = alive[topo.src] & alive[topo.dst]
    meta = dict(topo.meta)
    original = np.asarray(meta.get("nodes_kept", np.arange(topo.num_nodes)))
    meta["nodes_kept"] = original[alive].tolist()
    meta["failed_nodes"] = list(meta.get("failed_nodes", [])) + original[gone].tolist()
    switches = [int(new_id[s]) for s in topo.switches if alive[s]]
    return _rebuild(topo, keep, name=f"{topo.name}-nodes{len(gone)}", meta=meta,
                    src=new_id[topo.src[keep]], dst=new_id[topo.dst[keep]],
                    switches=switches, num_nodes=int(alive.sum()))


def unwind_switches(topology, degree=None):
    """Replace every switch by degree-``degree`` point-to-point links (see the module doc).

    ``degree=None`` connects every attached node to every other one (degree-max unwinding).
    A topology without switches comes back unchanged.
    """
    topo = topology
    if degree is not None:
        whole_number(degree, "unwind degree")
    if not topo.switches:
        return topo
    src, dst = topo.src.copy(), topo.dst.copy()
    bw, lat = topo.bandwidth.copy(), topo.latency.copy()
    used_k = {}
    for s in topo.switches:
        into, out = dst == s, src == s
        attached = np.union1d(src[into], dst[out])
        attached = attached[attached != s]
        m = attached.size
        k = m - 1 if degree is None else min(int(degree), m - 1)
        used_k[int(s)] = k
        new = []
        if m >= 2 and k >= 1:
            # per attached node: summed port bandwidth and largest latency to / from s
            up_bw = np.bincount(src[into], weights=bw[into], minlength=topo.num_nodes)
            dn_bw = np.bincount(dst[out], weights=bw[out], minlength=topo.num_nodes)
            up_lat = np.zeros(topo.num_nodes)
            dn_lat = np.zeros(topo.num_nodes)
            np.maximum.at(up_lat, src[into], lat[into])
            np.maximum.at(dn_lat, dst[out], lat[out])
            i = np.repeat(np.arange(m), k)
            j = (i + np.tile(np.arange(1, k + 1), m)) % m
            a, b = attached[i], attached[j]
            ok = (up_bw[a] > 0) & (dn_bw[b] > 0)
            a, b = a[ok], b[ok]
            new = (a, b, np.minimum(up_bw[a], dn_bw[b]) / k, up_lat[a] + dn_lat[b])
        keep = ~(into | out)
        src, dst, bw, lat = src[keep], dst[keep], bw[keep], lat[keep]
        if len(new):
            src, dst = np.r_[src, new[0]], np.r_[dst, new[1]]
            bw, lat = np.r_[bw, new[2]], np.r_[lat, new[3]]
    alive = np.ones(topo.num_nodes, dtype=bool)
    alive[list(topo.switches)] = False
    new_id = np.cumsum(alive) - 1
    meta = dict(topo.meta)
    original = np.asarray(meta.get("nodes_kept", np.arange(topo.num_nodes)))
    meta["nodes_kept"] = original[alive].tolist()
    meta["unwound_switches"] = original[list(topo.switches)].tolist()
    meta["unwind_degree"] = "max" if degree is None else int(degree)
    label = "max" if degree is None else int(degree)
    return Topology(int(alive.sum()), new_id[src], new_id[dst], bw, lat,
                    name=f"unwind({topo.name},k={label})", meta=meta)

