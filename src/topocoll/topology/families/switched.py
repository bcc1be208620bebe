"""Switched networks: endpoints on one switch, or on leaf switches under one spine.

``switch:N`` is a cluster on one switch: endpoints ``0..N-1`` (the ranks) and switch node
``N``, a cable (a link each way) from every endpoint to it. ``switch:N,G`` spreads the endpoints
over ``G`` leaf switches of ``N/G`` endpoints each (``N..N+G-1``; endpoint ``i`` on leaf
``N + i // (N/G)``) and joins the leaves with one cable each to a spine switch ``N+G``. Every
cable has the same bandwidth, so on ``switch:N,G`` the ``N/G`` endpoints of a leaf share its
one uplink. ``switch:N,G,S`` makes every uplink (leaf to spine, both ways) ``S`` times slower
than the endpoint cables: a two-level network of ``G`` machines of ``N/G`` ranks, each
machine's ranks on a fast switch of their own, the machines joined by slower links.

Switch nodes hold no data and are not ranks (``Topology.switches``): schedule generators take
them only after :func:`~topocoll.topology.unwind.unwind_switches`; the emulated network and
the gossip cost model route through them.

>>> t = switch_graph(4)
>>> t.name, t.num_nodes, t.switches, t.num_links
('switch:4', 5, (4,), 8)
>>> switch_graph(8, 2).switches
(8, 9, 10)
>>> sorted(set(switch_graph(8, 2, 4, bandwidth=100.0).bandwidth.tolist()))
[25.0, 100.0]
"""

import numpy as np

from ...defaults import LINK_BANDWIDTH, LINK_LATENCY
from ...errors import SpecError
from ...units import parse_bandwidth
from .checks import as_int, at_least, check_size, make_topology

__all__ = ["switch_graph"]


def switch_graph(n, groups=1, slowdown=1, *, bandwidth=LINK_BANDWIDTH, latency=LINK_LATENCY):
    """Endpoints on one switch (``groups=1``) or on ``groups`` leaf switches under a spine.

    Parameters
    ----------
    n : int
        Endpoints (ranks), ``>= 2``.
    groups : int
        Leaf switches, ``>= 1``, dividing ``n``; with more than one, a spine joins them.
    slowdown : int
        How many times slower every uplink (leaf to spine, both directions) is than the
        endpoint cables, ``>= 1``; above 1 only with ``groups >= 2`` (``switch:N,G,S``).
    bandwidth, latency : float or str
        Bandwidth (bytes/s) of every endpoint cable and latency (s) of every link.

    Examples
    --------
    >>> t = switch_graph(4, 2)
    >>> list(zip(t.src.tolist(), t.dst.tolist()))[:4]
    [(0, 4), (4, 0), (1, 4), (4, 1)]
    >>> t = switch_graph(16, 4, 4, bandwidth=1e9)
    >>> t.name, float(t.bandwidth.min()), float(t.bandwidth.max())
    ('switch:16,4,4', 250000000.0, 1000000000.0)
    >>> switch_graph(6, 4)
    Traceback (most recent call last):
    ...
    topocoll.errors.SpecError: switch:N,G needs G to divide N (equal leaves), got N=6, G=4
    """
    n = at_least(as_int(n, "switch endpoints"), 2, "switch needs at least 2 endpoints")
    groups = at_least(as_int(groups, "switch groups"), 1, "switch needs at least 1 group")
    if n % groups:
        raise SpecError(f"switch:N,G needs G to divide N (equal leaves), got N={n}, G={groups}")
    slowdown = at_least(as_int(slowdown, "switch uplink slowdown"), 1,
                        "switch:N,G,S needs an uplink slowdown S >= 1")
    if slowdown > 1 and groups < 2:
        raise SpecError(f"switch:N,G,S needs G >= 2 leaves for slower uplinks, got G={groups}")
    name = f"switch:{n}" if groups == 1 else f"switch:{n},{groups}"
    name += f",{slowdown}" if slowdown > 1 else ""
    spine = groups > 1
    nodes = n + groups + (1 if spine else 0)
    check_size(name, nodes, 2 * (n + (groups if spine else 0)))
    ends = np.arange(n, dtype=np.int64)
    leaf = n + ends // (n // groups)
    a = [ends]
    b = [leaf]
    if spine:
        a.append(np.arange(n, n + groups, dtype=np.int64))
        b.append(np.full(groups, n + groups, dtype=np.int64))
    a, b = np.concatenate(a), np.concatenate(b)
    # each cable as its two links, one after the other
    src = np.column_stack([a, b]).ravel()
    dst = np.column_stack([b, a]).ravel()
    if slowdown > 1:
        if isinstance(bandwidth, str):
            bandwidth = parse_bandwidth(bandwidth)
        bandwidth = np.where(np.arange(src.size) >= 2 * n, float(bandwidth) / slowdown,
                             float(bandwidth))
    return make_topology(name, nodes, src, dst, bandwidth, latency,
                         {"family": "switch", "n": n, "groups": groups, "slowdown": slowdown},
                         switches=range(n, nodes))
