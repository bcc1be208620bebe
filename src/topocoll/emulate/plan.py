"""The plan of an emulated network: what becomes a namespace, a cable, a rate, an address, a route.

Nothing here touches the kernel; :class:`~topocoll.emulate.network.EmulatedNetwork` builds the
plan, and the model (:mod:`topocoll.emulate.prediction`) prices on the same plan, so that both
speak of the same links, rates and routes.

* Every node is a network namespace; switch nodes forward and hold no rank. Rank ``r`` sits on
  the ``r``-th non-switch node.
* Every node pair joined by a link in either direction is one *cable*, a veth pair: one end in
  each namespace, named ``p<peer>`` there. Each end shapes what leaves through it (a ``tbf``
  qdisc) to the emulated rate of its direction: the topology's bandwidth of that direction
  (parallel links added up) times ``scale``.
* A direction with no link (a digraph's cable that exists one way only) is capped at
  :data:`REVERSE_FRACTION` of the other direction: no route ever uses it (routes follow the
  directed links, so a message's TCP acknowledgements travel the directed path back, like any
  other packet), and it carries only the neighbour resolution (ARP) of its cable.
* Every node has one address, ``10.x.y.z``, on all its interfaces, and a host route to every
  other node through the next hop of :func:`~topocoll.topology.routes.shortest_routes`, with
  its own address as the source.

>>> from topocoll.topology import topology
>>> plan = NetworkPlan(topology("uniring:3", bandwidth=1e6), scale=2.0)
>>> [(c.a, c.b, c.rate_ab, c.rate_ba) for c in plan.cables]
[(0, 1, 2000000.0, 20000.0), (0, 2, 20000.0, 2000000.0), (1, 2, 2000000.0, 20000.0)]
>>> plan.address(0), plan.interface(2, 0), plan.route(0, 2)
('10.0.0.1', 'p0', (1, '10.0.0.2'))
"""

from dataclasses import dataclass

import numpy as np

from ..errors import SpecError, TopologyError
from ..units import format_bandwidth

__all__ = ["NetworkPlan", "Cable", "DEFAULT_MTU", "MIN_RATE", "MAX_RATE", "REVERSE_FRACTION",
           "frame_bytes", "node_address"]

#: Large frames by default: with 1500-byte frames the host's cores, not the emulated links,
#: set the pace (docs/emulate.md, "Why large frames").
DEFAULT_MTU = 65000
#: veth's own MTU range.
MIN_MTU, MAX_MTU = 1280, 65535
#: tbf keeps its rate in a 32-bit count of bytes per second; below this the ARP and TCP timers
#: misbehave.
MIN_RATE, MAX_RATE = 1000.0, 4.0e9
#: A direction without a link carries this fraction of the other direction's rate (ARP only).
REVERSE_FRACTION = 0.01
#: Bytes of the link-layer header tbf counts with every frame.
ETHERNET_HEADER = 14


def frame_bytes(mtu):
    """The largest frame on a link of this MTU, as the shaper counts it."""
    return int(mtu) + ETHERNET_HEADER


def node_address(node):
    """The one IPv4 address of ``node``: ``10.a.b.c`` with ``c`` in 1..250.

    >>> node_address(0), node_address(249), node_address(250)
    ('10.0.0.1', '10.0.0.250', '10.0.1.1')
    """
    high, low = divmod(int(node), 250)
    return f"10.{high // 256}.{high % 256}.{low + 1}"


@dataclass(frozen=True)
class Cable:
    """A veth pair between nodes ``a < b`` and the emulated rate (bytes/s) of each direction;
    ``linked_ab``/``linked_ba`` say whether the topology has that direction."""

    a: int
    b: int
    rate_ab: float
    rate_ba: float
    linked_ab: bool = True
    linked_ba: bool = True


class NetworkPlan:
    """Namespaces, cables, rates, addresses and routes of a topology's emulation.

    Parameters
    ----------
    topology : Topology
        The network; it must connect every rank to every other (routes follow directed links).
    scale : float
        Emulated rate of each direction = its bandwidth in the topology x ``scale``.
    mtu : int
        The MTU of every veth.
    """

    def __init__(self, topology, *, scale, mtu=DEFAULT_MTU):
        from ..topology.routes import shortest_routes

        mtu = int(mtu)
        if not MIN_MTU <= mtu <= MAX_MTU:
            raise SpecError(f"the MTU must be {MIN_MTU}..{MAX_MTU} bytes (veth's range), got {mtu}")
        if not (isinstance(scale, float) and np.isfinite(scale) and scale > 0):
            raise SpecError(f"the rate scale must be a positive number, got {scale!r}")
        if topology.num_nodes < 2:
            raise TopologyError("an emulated network needs at least 2 nodes")
        self.topology, self.scale, self.mtu = topology, scale, mtu
        switch = np.zeros(topology.num_nodes, dtype=bool)
        switch[list(topology.switches)] = True
        self.ranks = [int(v) for v in np.flatnonzero(~switch)]
        if len(self.ranks) < 2:
            raise TopologyError(f"{topology.name} has fewer than 2 endpoints to run ranks on")
        self.cables = self._cables()
        for c in self.cables:
            for rate, u, v in ((c.rate_ab, c.a, c.b), (c.rate_ba, c.b, c.a)):
                if not MIN_RATE <= rate <= MAX_RATE:
                    raise SpecError(
                        f"link {u}->{v} would be emulated at {format_bandwidth(rate)}; emulated "
                        f"rates must be {format_bandwidth(MIN_RATE)}..{format_bandwidth(MAX_RATE)}"
                        " (change --link-bandwidth or --scale)")
        self.routes = shortest_routes(topology)
        hops = self.routes.hops[np.ix_(self.ranks, self.ranks)]
        if np.any(hops < 0):
            i, j = np.argwhere(hops < 0)[0]
            raise TopologyError(f"{topology.name} has no path from node {self.ranks[i]} to node "
                                f"{self.ranks[j]}: ranks could not reach each other")
        self._rate = {}
        for c in self.cables:
            self._rate[c.a, c.b] = c.rate_ab
            self._rate[c.b, c.a] = c.rate_ba

    def _cables(self):
        t = self.topology
        keep = t.src != t.dst
        src, dst, bw = t.src[keep], t.dst[keep], t.bandwidth[keep]
        n = t.num_nodes
        # the bandwidth of each direction of each node pair, parallel links added up
        key = src * n + dst
        uniq, inverse = np.unique(key, return_inverse=True)
        total = np.bincount(inverse, weights=bw)
        way = dict(zip(uniq.tolist(), total.tolist()))
        pairs = sorted({(min(u, v), max(u, v)) for u, v in zip(src.tolist(), dst.tolist())})
        cables = []
        for a, b in pairs:
            ab, ba = way.get(a * n + b), way.get(b * n + a)
            rab = ab * self.scale if ab else None
            rba = ba * self.scale if ba else None
            cables.append(Cable(a, b, rab if rab else rba * REVERSE_FRACTION,
                                rba if rba else rab * REVERSE_FRACTION,
                                linked_ab=ab is not None, linked_ba=ba is not None))
        return cables

    @property
    def num_nodes(self):
        return self.topology.num_nodes

    @property
    def num_ranks(self):
        return len(self.ranks)

    @property
    def switches(self):
        return self.topology.switches

    @property
    def directed(self):
        """True when some cable carries data one way only."""
        return any(not (c.linked_ab and c.linked_ba) for c in self.cables)

    def rate(self, u, v):
        """The emulated rate (bytes/s) of direction ``u -> v`` (0 where no cable joins them)."""
        return self._rate.get((int(u), int(v)), 0.0)

    def address(self, node):
        return node_address(node)

    @staticmethod
    def interface(node, peer):
        """The name, inside ``node``'s namespace, of its end of the cable to ``peer``."""
        return f"p{int(peer)}"

    def interfaces(self, node):
        """``[(interface, peer), ...]`` of ``node``, by peer."""
        peers = sorted({c.b if c.a == node else c.a for c in self.cables if node in (c.a, c.b)})
        return [(self.interface(node, p), p) for p in peers]

    def route(self, u, v):
        """``(next hop, its address)`` of the route ``u -> v``."""
        link = int(self.routes.next_link[u, v])
        hop = int(self.topology.dst[link])
        return hop, self.address(hop)

    def link_rates(self):
        """The emulated rate of every topology link (bytes/s): its share of its direction's
        rate, in proportion to its own bandwidth (parallel links share one veth)."""
        t = self.topology
        out = np.zeros(t.num_links)
        n = t.num_nodes
        keep = t.src != t.dst
        key = t.src * n + t.dst
        uniq, inverse = np.unique(key[keep], return_inverse=True)
        total = np.bincount(inverse, weights=t.bandwidth[keep])
        out[keep] = t.bandwidth[keep] / total[inverse] * np.array(
            [self.rate(u, v) for u, v in zip(uniq // n, uniq % n)])[inverse]
        return out

    def aggregate_rate(self):
        """Bytes per second all cables carry at most, both directions of every cable."""
        return float(sum(c.rate_ab + c.rate_ba for c in self.cables))

    def describe(self):
        """A JSON-ready summary."""
        rates = sorted({round(c.rate_ab, 3) for c in self.cables if c.linked_ab}
                       | {round(c.rate_ba, 3) for c in self.cables if c.linked_ba})
        return {"topology": self.topology.name, "nodes": self.num_nodes,
                "ranks": self.num_ranks, "switches": list(self.switches),
                "cables": len(self.cables), "mtu": self.mtu, "scale": self.scale,
                "link_rates": rates, "directed": self.directed,
                "aggregate_rate": self.aggregate_rate()}
