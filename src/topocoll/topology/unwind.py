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
from .model import Topology

__all__ = ["unwind_switches", "fail_links", "fail_nodes", "parse_link_list", "parse_node_list",
           "parse_unwind_degree", "switch_levels"]

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


def parse_unwind_degree(value):
    """An unwinding degree as :func:`unwind_switches` takes it: ``None`` or ``"max"`` (every
    attached node to every other), an integer ``k >= 1`` (digit strings too), or a per-level
    mapping ``{level: k}`` (a dict, a list indexed by level, or a string ``"0:max,1:1"``),
    each ``k`` an integer ``>= 1`` or ``None``/``"max"``.

    >>> parse_unwind_degree("2"), parse_unwind_degree("max")
    (2, None)
    >>> parse_unwind_degree("0:max,1:1")
    {0: None, 1: 1}
    >>> parse_unwind_degree([None, 2])
    {0: None, 1: 2}
    >>> parse_unwind_degree("0:0")
    Traceback (most recent call last):
    ...
    topocoll.errors.TopologyError: unwind degree of level 0 must be an integer >= 1 or max, got 0
    """
    if isinstance(value, str) and ":" in value:
        pairs = [p.strip() for p in value.split(",") if p.strip()]
        if not all(re.fullmatch(r"\d+\s*:\s*(\d+|max)", p) for p in pairs):
            raise TopologyError(f"unwind degree {value!r}: expected K, max or LEVEL:K pairs "
                                "such as 0:max,1:1")
        value = {int(p.split(":")[0]): p.split(":")[1].strip() for p in pairs}
    if isinstance(value, (list, tuple)):
        value = dict(enumerate(value))
    if isinstance(value, dict):
        out = {}
        for level, k in value.items():
            if isinstance(level, bool) or not isinstance(level, (int, np.integer)) or level < 0:
                raise TopologyError(f"unwind degree: switch levels are integers >= 0, got "
                                    f"{level!r}")
            out[int(level)] = _one_degree(k, f"unwind degree of level {level}")
        return out
    return _one_degree(value, "unwind degree")


def _one_degree(k, what):
    """One degree: ``None`` for max, else an int ``>= 1``."""
    if k is None or (isinstance(k, str) and k.strip().lower() == "max"):
        return None
    if isinstance(k, str) and k.strip().isdigit():
        k = int(k.strip())
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise TopologyError(f"{what} must be an integer >= 1 or max, got {k!r}")
    return int(k)


def switch_levels(topology):
    """The level of every switch, ``{switch: level}``: ``meta["switch_levels"]`` where the
    family records it (:mod:`~topocoll.topology.families.hierarchical`, one level per
    dimension), else the hop distance from the nearest endpoint minus one (leaves 0, a spine 1).

    >>> from topocoll.topology import topology
    >>> switch_levels(topology("switch:8,2"))
    {8: 0, 9: 0, 10: 1}
    """
    topo = topology
    given = topo.meta.get("switch_levels")
    if given is not None:
        return {int(s): int(given[str(s)] if str(s) in given else given[s])
                for s in topo.switches}
    switches = set(int(s) for s in topo.switches)
    level, frontier, depth = {}, {int(v) for v in topo.src if int(v) not in switches}, 0
    pairs = list(zip(topo.src.tolist(), topo.dst.tolist()))
    while frontier:
        nxt = {b for a, b in pairs if a in frontier and b in switches and b not in level}
        nxt |= {a for a, b in pairs if b in frontier and a in switches and a not in level}
        for s in nxt:
            level[s] = depth
        frontier, depth = nxt, depth + 1
    return {int(s): level.get(int(s), depth) for s in topo.switches}


def _degree_label(degree):
    if isinstance(degree, dict):
        return ",".join(f"{lv}:{'max' if k is None else k}" for lv, k in sorted(degree.items()))
    return "max" if degree is None else str(degree)


def unwind_switches(topology, degree=None):
    """Replace every switch by degree-``degree`` point-to-point links (see the module doc).

    ``degree=None`` connects every attached node to every other one (degree-max unwinding).
    ``degree`` may also be a per-level mapping (:func:`parse_unwind_degree`: ``{level: k}``,
    a list by level, or ``"0:max,1:1"``; levels by :func:`switch_levels`, a level not named
    unwinds at max degree), as TACOS unwinds scale-up switches at max degree and scale-out
    switches at degree 1. A topology without switches comes back unchanged.

    >>> from topocoll.topology import topology
    >>> t = unwind_switches(topology("switch:8,2"), {0: 1, 1: 1})
    >>> t.name, t.num_nodes, t.meta["unwind_degree"]
    ('unwind(switch:8,2,k=0:1,1:1)', 8, {'0': 1, '1': 1})
    """
    topo = topology
    degree = parse_unwind_degree(degree)
    if not topo.switches:
        return topo
    levels = switch_levels(topo) if isinstance(degree, dict) else {}
    src, dst = topo.src.copy(), topo.dst.copy()
    bw, lat = topo.bandwidth.copy(), topo.latency.copy()
    for s in topo.switches:
        want = degree.get(levels[int(s)]) if isinstance(degree, dict) else degree
        src, dst, bw, lat = _unwind_one(topo.num_nodes, s, want, src, dst, bw, lat)
    alive = np.ones(topo.num_nodes, dtype=bool)
    alive[list(topo.switches)] = False
    new_id = np.cumsum(alive) - 1
    meta = dict(topo.meta)
    meta.pop("switch_levels", None)
    original = np.asarray(meta.get("nodes_kept", np.arange(topo.num_nodes)))
    meta["nodes_kept"] = original[alive].tolist()
    meta["unwound_switches"] = original[list(topo.switches)].tolist()
    meta["unwind_degree"] = ({str(lv): ("max" if k is None else k) for lv, k in degree.items()}
                             if isinstance(degree, dict) else
                             "max" if degree is None else int(degree))
    return Topology(int(alive.sum()), new_id[src], new_id[dst], bw, lat,
                    name=f"unwind({topo.name},k={_degree_label(degree)})", meta=meta)


def _unwind_one(num_nodes, s, degree, src, dst, bw, lat):
    """The link arrays with switch ``s`` replaced by degree-``degree`` links among the nodes
    attached to it."""
    into, out = dst == s, src == s
    attached = np.union1d(src[into], dst[out])
    attached = attached[attached != s]
    m = attached.size
    k = m - 1 if degree is None else min(int(degree), m - 1)
    new = []
    if m >= 2 and k >= 1:
        # per attached node: summed port bandwidth and largest latency to / from s
        up_bw = np.bincount(src[into], weights=bw[into], minlength=num_nodes)
        dn_bw = np.bincount(dst[out], weights=bw[out], minlength=num_nodes)
        up_lat = np.zeros(num_nodes)
        dn_lat = np.zeros(num_nodes)
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
    return src, dst, bw, lat
