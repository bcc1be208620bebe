"""TACOS's hierarchical multi-NPU systems (Won et al., TACOS, MICRO 2024, section VII-B), built
dimension by dimension as ASTRA-sim builds multi-dimensional networks: NPU ``i`` has the
mixed-radix coordinates ``(i mod D1, (i // D1) mod D2, ...)``, first dimension fastest, and each
dimension joins the NPUs that differ only in its coordinate.

* ``ringfcswitch:R,F,S`` (Ring_FC_Switch): a bidirectional ring of ``R`` NPUs (one cable for
  ``R = 2``), the rings' NPUs of equal ring index fully connected ``F`` at a time within a node
  of ``R*F`` NPUs, and ``S`` nodes joined dimension-wise by ``R*F`` switches (switch ``g``
  joins the ``S`` NPUs of in-node index ``g``). The paper's nodes are ``2x4`` with
  200, 100 and 50 GB/s per level: the defaults, ring links at ``bandwidth`` and the other two
  levels 2 and 4 times slower (``ringfcswitch:R,F,S,D2,D3`` sets those two slowdowns).
* ``switchswitch:A,B`` (Switch_Switch, "similar to DGX"): ``B`` nodes of ``A`` NPUs, each node
  on a switch of its own, and ``A`` scale-out switches, switch ``j`` joining the ``B`` NPUs of
  in-node index ``j`` (a NIC per NPU). The paper's ``8x4`` system runs 300 and 25 GB/s: the
  scale-out level 12 times slower by default (``switchswitch:A,B,D``).

Switches forward and hold no rank (:attr:`Topology.switches`); ``meta["switch_levels"]``
gives each switch its dimension (0 = first), the levels
:func:`~topocoll.topology.unwind.unwind_switches` takes per-level degrees by. TACOS unwinds
scale-up switches at max degree and scale-out ones at degree 1: ``unwind_degree="0:max,1:1"``
on ``switchswitch``, ``"2:1"`` on ``ringfcswitch``.

>>> t = ringfcswitch_graph(2, 4, 2, bandwidth=200.0)
>>> t.name, t.num_nodes, len(t.switches), sorted(set(t.bandwidth.tolist()))
('ringfcswitch:2,4,2', 24, 8, [50.0, 100.0, 200.0])
>>> s = switchswitch_graph(8, 4, bandwidth=300.0)
>>> s.num_nodes - len(s.switches), sorted(set(s.bandwidth.tolist()))
(32, [25.0, 300.0])
"""

import numpy as np

from ...defaults import LINK_BANDWIDTH, LINK_LATENCY
from ...errors import SpecError
from ...units import parse_bandwidth
from .checks import as_int, at_least, check_size, make_topology

__all__ = ["ringfcswitch_graph", "switchswitch_graph"]


def _coords(dims):
    """Per NPU its coordinate in every dimension (first fastest)."""
    ids = np.arange(int(np.prod(dims)), dtype=np.int64)
    out, stride = [], 1
    for d in dims:
        out.append((ids // stride) % d)
        stride *= d
    return ids, out


def _stride(dims, i):
    return int(np.prod(dims[:i], dtype=np.int64))


def _cables(a, b):
    """Both directions of the cables ``a[i] - b[i]``, one after the other."""
    return np.column_stack([a, b]).ravel(), np.column_stack([b, a]).ravel()


def _ring_level(dims, i):
    ids, c = _coords(dims)
    d = dims[i]
    if d < 2:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    up = ids[(c[i] + 1 < d) | (d > 2)]     # R = 2: one cable, not two
    return _cables(up, up + (((c[i][up] + 1) % d) - c[i][up]) * _stride(dims, i))


def _fc_level(dims, i):
    ids, c = _coords(dims)
    d, st = dims[i], _stride(dims, i)
    a = np.repeat(ids, d)
    other = np.tile(np.arange(d), ids.size)
    b = a + (other - c[i][a]) * st
    keep = b != a
    return a[keep], b[keep]


def _switch_level(dims, i, first_switch):
    """One switch per group of the NPUs that differ in coordinate ``i`` only."""
    ids, c = _coords(dims)
    if dims[i] < 2:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), 0
    group = (ids % _stride(dims, i)) + (ids // _stride(dims, i + 1)) * _stride(dims, i)
    src, dst = _cables(ids, first_switch + group)
    return src, dst, int(group.max()) + 1


def _build(name, dims, kinds, slowdowns, bandwidth, latency, family_meta):
    """The topology of the levels ``kinds`` (``ring``, ``fc``, ``switch``) over ``dims``, level
    ``i``'s links ``slowdowns[i]`` times slower than ``bandwidth``."""
    if isinstance(bandwidth, str):
        bandwidth = parse_bandwidth(bandwidth)
    npus = int(np.prod(dims))
    srcs, dsts, bws, levels = [], [], [], {}
    switch = npus
    for i, (kind, slow) in enumerate(zip(kinds, slowdowns)):
        if kind == "ring":
            a, b = _ring_level(dims, i)
        elif kind == "fc":
            a, b = _fc_level(dims, i)
        else:
            a, b, count = _switch_level(dims, i, switch)
            levels.update({str(s): i for s in range(switch, switch + count)})
            switch += count
        srcs.append(a)
        dsts.append(b)
        bws.append(np.full(a.size, float(bandwidth) / slow))
    src, dst = np.concatenate(srcs), np.concatenate(dsts)
    check_size(name, switch, src.size)
    meta = dict(family_meta, switch_levels=levels)
    return make_topology(name, switch, src, dst, np.concatenate(bws), latency, meta,
                         switches=range(npus, switch))


def _slowdown(value, what):
    return at_least(as_int(value, what), 1, f"{what} must be >= 1")


def ringfcswitch_graph(ring, fc, nodes, fc_slowdown=2, switch_slowdown=4, *,
                       bandwidth=LINK_BANDWIDTH, latency=LINK_LATENCY):
    """TACOS's Ring_FC_Switch: ``nodes`` nodes of a ``ring x fc`` NPU grid (see the module).

    Parameters
    ----------
    ring, fc : int
        NPUs per ring (``>= 1``) and per fully connected group (``>= 1``) in a node.
    nodes : int
        Nodes (``>= 1``), joined by ``ring * fc`` switches of ``nodes`` NPUs each.
    fc_slowdown, switch_slowdown : int
        How many times slower than the ring links the fully connected links and the switch
        cables are (defaults 2 and 4: the paper's 200/100/50 GB/s).
    bandwidth, latency : float or str
        Bandwidth of the ring links (bytes/s) and latency (s) of every link.

    Examples
    --------
    >>> t = ringfcswitch_graph(2, 4, 1)
    >>> t.num_nodes, t.num_links, t.switches          # 4 ring cables and 2 K4s, no switch
    (8, 32, ())
    >>> ringfcswitch_graph(1, 1, 1)
    Traceback (most recent call last):
    ...
    topocoll.errors.SpecError: ringfcswitch needs at least 2 NPUs (R*F*S >= 2), got 1
    """
    dims = [at_least(as_int(v, f"ringfcswitch {w}"), 1, f"ringfcswitch needs {w} >= 1")
            for v, w in ((ring, "R"), (fc, "F"), (nodes, "S"))]
    slow = (1, _slowdown(fc_slowdown, "ringfcswitch D2"),
            _slowdown(switch_slowdown, "ringfcswitch D3"))
    at_least(int(np.prod(dims)), 2, "ringfcswitch needs at least 2 NPUs (R*F*S >= 2)")
    name = f"ringfcswitch:{dims[0]},{dims[1]},{dims[2]}"
    if slow[1:] != (2, 4):
        name += f",{slow[1]},{slow[2]}"
    return _build(name, dims, ("ring", "fc", "switch"), slow, bandwidth, latency,
                  {"family": "ringfcswitch", "dims": dims, "slowdowns": list(slow)})


def switchswitch_graph(npus, nodes, slowdown=12, *, bandwidth=LINK_BANDWIDTH,
                       latency=LINK_LATENCY):
    """TACOS's Switch_Switch: ``nodes`` nodes of ``npus`` NPUs on a switch each, and ``npus``
    scale-out switches of ``nodes`` NPUs (see the module).

    Parameters
    ----------
    npus : int
        NPUs per node (``>= 1``).
    nodes : int
        Nodes (``>= 1``).
    slowdown : int
        How many times slower the scale-out cables are than the in-node ones (default 12: the
        paper's 300/25 GB/s).
    bandwidth, latency : float or str
        Bandwidth of the in-node switch cables (bytes/s) and latency (s) of every link.

    Examples
    --------
    >>> t = switchswitch_graph(2, 3)
    >>> t.num_nodes, t.switches, t.meta["switch_levels"]
    (11, (6, 7, 8, 9, 10), {'6': 0, '7': 0, '8': 0, '9': 1, '10': 1})
    """
    dims = [at_least(as_int(v, f"switchswitch {w}"), 1, f"switchswitch needs {w} >= 1")
            for v, w in ((npus, "A"), (nodes, "B"))]
    slow = (1, _slowdown(slowdown, "switchswitch D"))
    if dims[0] * dims[1] < 2:
        raise SpecError(f"switchswitch needs at least 2 NPUs (A*B >= 2), got "
                        f"{dims[0] * dims[1]}")
    name = f"switchswitch:{dims[0]},{dims[1]}" + (f",{slow[1]}" if slow[1] != 12 else "")
    return _build(name, dims, ("switch", "switch"), slow, bandwidth, latency,
                  {"family": "switchswitch", "dims": dims, "slowdowns": list(slow)})
