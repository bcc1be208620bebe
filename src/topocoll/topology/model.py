"""The Topology model: a directed multigraph on nodes ``0..N-1`` with per-link bandwidth and
latency.

A bidirectional cable is two directed links. Parallel links between one ordered pair are
allowed; for costing, their bandwidths add up and the pair's latency is the largest of theirs.
Links are stored as numpy columns so that topologies with many thousands of links stay cheap.
"""

import numpy as np

from ..defaults import LINK_BANDWIDTH, LINK_LATENCY
from ..errors import InputTypeError, TopologyError
from ..limits import require_memory
from ..units import whole_number

__all__ = ["Topology"]


def _int_column(values, name):
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise InputTypeError(f"link {name} must be a one-dimensional sequence")
    if arr.size == 0:
        return np.zeros(0, dtype=np.int64)
    if arr.dtype.kind == "f":
        if not np.all(np.isfinite(arr)) or np.any(arr != np.floor(arr)):
            raise TopologyError(f"link {name} must hold whole node numbers")
    elif arr.dtype.kind not in "iu":
        raise InputTypeError(f"link {name} must hold integers, got dtype {arr.dtype}")
    return arr.astype(np.int64)


def _float_column(values, count, name, *, positive):
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim == 0:
        arr = np.full(count, float(arr))
    if arr.shape != (count,):
        raise TopologyError(f"link {name} needs one value per link ({count}), got shape {arr.shape}")
    if count and (not np.all(np.isfinite(arr)) or (np.any(arr <= 0) if positive else np.any(arr < 0))):
        bad = int(np.flatnonzero(~np.isfinite(arr) | ((arr <= 0) if positive else (arr < 0)))[0])
        rule = "positive" if positive else "non-negative"
        raise TopologyError(f"link {bad}: {name} must be finite and {rule}, got {arr[bad]!r}")
    return arr


#: Bytes a job keeps per node at least (a handful of int64 and float64 arrays).
_BYTES_PER_NODE = 64
_ASK_ABOVE = 1 << 20   # smaller topologies fit any limit worth setting: no need to ask


class Topology:
    """A directed multigraph with per-link ``bandwidth`` (bytes/s) and ``latency`` (s).

    Parameters
    ----------
    num_nodes : int
        Number of nodes; nodes are ``0..num_nodes-1``.
    src, dst : sequences of int
        Link endpoints, one entry per directed link.
    bandwidth, latency : float or sequence of float
        Per-link values; a scalar applies to every link.
    name : str, optional
        A label, usually the spec string the topology came from.
    switches : sequence of int, optional
        Nodes that hold no data and are not ranks.
    drop_self_loops : bool
        Drop links ``v -> v`` (recorded in ``meta["dropped_self_loops"]``) instead of rejecting
        them. Self-loops carry nothing useful and never enter a schedule.
    meta : dict, optional
        Free-form facts about the topology (family parameters, notes).

    Examples
    --------
    >>> t = Topology(3, [0, 1, 2], [1, 2, 0], bandwidth=1e9, name="uniring:3")
    >>> t.num_nodes, t.num_links
    (3, 3)
    >>> t.transpose().src.tolist()
    [1, 2, 0]
    """

    __slots__ = ("num_nodes", "src", "dst", "bandwidth", "latency", "name", "switches", "meta",
                 "_cache")

    def __init__(self, num_nodes, src, dst, bandwidth=LINK_BANDWIDTH, latency=LINK_LATENCY,
                 *, name=None, switches=(), drop_self_loops=False, meta=None):
        # an empty topology is no topology (files declare sizes too): a TopologyError
        num_nodes = whole_number(num_nodes, "num_nodes", None)
        if num_nodes < 1:
            raise TopologyError(f"a topology needs at least 1 node, got {num_nodes}")
        # every job keeps a few arrays per node (degrees, bandwidth shares, distances): ask
        # before a file that declares a billion nodes starts them
        if num_nodes > _ASK_ABOVE:
            require_memory(_BYTES_PER_NODE * num_nodes, f"a topology of {num_nodes} nodes")
        src = _int_column(src, "src")
        dst = _int_column(dst, "dst")
        if src.shape != dst.shape:
            raise TopologyError(f"link src and dst differ in length ({src.size} vs {dst.size})")
        count = src.size
        bandwidth = _float_column(bandwidth, count, "bandwidth", positive=True)
        latency = _float_column(latency, count, "latency", positive=False)
        out_of_range = (src < 0) | (src >= num_nodes) | (dst < 0) | (dst >= num_nodes)
        if np.any(out_of_range):
            i = int(np.flatnonzero(out_of_range)[0])
            raise TopologyError(f"link {i}: {src[i]}->{dst[i]} names a node outside "
                                f"0..{num_nodes - 1}")
        meta = dict(meta or {})
        loops = src == dst
        if np.any(loops):
            if not drop_self_loops:
                i = int(np.flatnonzero(loops)[0])
                raise TopologyError(f"link {i}: {src[i]}->{dst[i]} is a self-loop; self-loops are "
                                    "not allowed (drop them first)")
            keep = ~loops
            meta["dropped_self_loops"] = int(loops.sum()) + int(meta.get("dropped_self_loops", 0))
            src, dst, bandwidth, latency = src[keep], dst[keep], bandwidth[keep], latency[keep]
        switches = tuple(sorted({int(s) for s in switches}))
        if switches and (switches[0] < 0 or switches[-1] >= num_nodes):
            raise TopologyError(f"switch ids must be nodes 0..{num_nodes - 1}, got {list(switches)}")
        self.num_nodes = num_nodes
        self.src, self.dst = src, dst
        self.bandwidth, self.latency = bandwidth, latency
        for arr in (self.src, self.dst, self.bandwidth, self.latency):
            arr.flags.writeable = False
        self.name = name if name is not None else f"topology:{num_nodes}"
        self.switches = switches
        self.meta = meta
        self._cache = {}

    # ------------------------------------------------------------------ basic facts
    @property
    def num_links(self):
        """Number of directed links (parallel links counted separately)."""
        return int(self.src.size)

    def __repr__(self):
        return f"Topology({self.name!r}, nodes={self.num_nodes}, links={self.num_links})"

    def _cached(self, key, compute):
        if key not in self._cache:
            self._cache[key] = compute()
        return self._cache[key]

    @property
    def pairs(self):
        """Distinct ordered pairs ``(src, dst, bandwidth, latency)`` as four arrays, sorted.

        Parallel links are merged: bandwidths add up, the latency is the largest.
        """
        def compute():
            n = self.num_nodes
            keys = self.src * n + self.dst
            uniq, inverse = np.unique(keys, return_inverse=True)
            bw = np.bincount(inverse, weights=self.bandwidth, minlength=uniq.size)
            lat = np.full(uniq.size, -np.inf)
            np.maximum.at(lat, inverse, self.latency)
            lat[~np.isfinite(lat)] = 0.0
            return (uniq // n, uniq % n, bw, lat, uniq)
        return self._cached("pairs", compute)[:4]

    def pair_index(self, src, dst):
        """Index into :attr:`pairs` of each ``src -> dst`` (arrays), ``-1`` where no link exists."""
        self.pairs  # noqa: B018 - fills the cache
        uniq = self._cache["pairs"][4]
        query = np.asarray(src, dtype=np.int64) * self.num_nodes + np.asarray(dst, dtype=np.int64)
        if uniq.size == 0:
            return np.full(query.shape, -1, dtype=np.int64)
        pos_clipped = np.minimum(np.searchsorted(uniq, query), uniq.size - 1)
        found = uniq[pos_clipped] == query
        return np.where(found, pos_clipped, -1)

    def has_link(self, u, v):
        """True if at least one link ``u -> v`` exists."""
        return bool(self.pair_index(np.array([u]), np.array([v]))[0] >= 0)

    def adjacency(self):
        """Sparse 0/1 adjacency matrix (CSR), ``A[u, v] = 1`` iff a link ``u -> v`` exists."""
        def compute():
            import scipy.sparse as sp   # here, not at the top: most jobs never need scipy

            psrc, pdst, _, _ = self.pairs
            n = self.num_nodes
            return sp.csr_matrix((np.ones(psrc.size, dtype=np.int8), (psrc, pdst)), shape=(n, n))
        return self._cached("adjacency", compute)

    def out_degree(self, *, multi=False):
        """Out-degree of every node: distinct out-neighbours, or links if ``multi``."""
        src = self.src if multi else self.pairs[0]
        return np.bincount(src, minlength=self.num_nodes)

    def in_degree(self, *, multi=False):
        """In-degree of every node: distinct in-neighbours, or links if ``multi``."""
        dst = self.dst if multi else self.pairs[1]
        return np.bincount(dst, minlength=self.num_nodes)

    def egress_bandwidth(self):
        """Summed bandwidth of the links leaving each node (bytes/s)."""
        return np.bincount(self.src, weights=self.bandwidth, minlength=self.num_nodes)

    def ingress_bandwidth(self):
        """Summed bandwidth of the links entering each node (bytes/s)."""
        return np.bincount(self.dst, weights=self.bandwidth, minlength=self.num_nodes)

    def is_bidirectional(self):
        """True if for every link ``u -> v`` some link ``v -> u`` exists."""
        psrc, pdst, _, _ = self.pairs
        return bool(np.all(self.pair_index(pdst, psrc) >= 0))

    # ------------------------------------------------------------------ transforms
    def transpose(self):
        """The topology with every link reversed (bandwidth and latency kept)."""
        return Topology(self.num_nodes, self.dst, self.src, self.bandwidth, self.latency,
                        name=f"transpose({self.name})", switches=self.switches, meta=self.meta)

    def with_links(self, *, bandwidth=None, latency=None, name=None):
        """A copy with every link's bandwidth and/or latency replaced by the given value."""
        return Topology(self.num_nodes, self.src, self.dst,
                        self.bandwidth if bandwidth is None else bandwidth,
                        self.latency if latency is None else latency,
                        name=self.name if name is None else name, switches=self.switches,
                        meta=self.meta)

    def with_node_bandwidth(self, bandwidth, *, name=None):
        """A copy in which every node's egress ``bandwidth`` is split evenly over its out-links.

        >>> from topocoll.topology import topology
        >>> topology("torus:4x4").with_node_bandwidth(100.0).bandwidth[:2].tolist()
        [25.0, 25.0]
        """
        per_node = self.out_degree(multi=True)
        return self.with_links(bandwidth=float(bandwidth) / per_node[self.src], name=name)

    def describe_bandwidth(self):
        """The links' bandwidth in words, for tables and JSON documents: one bandwidth per
        link, else one egress per node split evenly over its links, else the range.

        >>> from topocoll.topology import topology
        >>> topology("torus:4x4").describe_bandwidth()
        '100Gbps per link'
        >>> topology("genkautz:10,3").with_node_bandwidth(12.5e9).describe_bandwidth()
        '100Gbps per node, split over its links'
        """
        from ..units import format_bandwidth

        bw = self.bandwidth
        if bw.size == 0:
            return "no links"
        if np.all(bw == bw[0]):
            return f"{format_bandwidth(bw[0])} per link"
        egress = np.bincount(self.src, weights=bw, minlength=self.num_nodes)
        senders = egress[np.bincount(self.src, minlength=self.num_nodes) > 0]
        if np.allclose(senders, senders[0], rtol=1e-9):
            return f"{format_bandwidth(senders[0])} per node, split over its links"
        return f"links of {format_bandwidth(bw.min())} to {format_bandwidth(bw.max())}"

    def require_no_switches(self, what="this tool"):
        """Raise :class:`TopologyError` if the topology still has switch nodes."""
        if self.switches:
            raise TopologyError(f"{what} needs an endpoint-only topology, but {self.name} has "
                                f"switches {list(self.switches)[:8]}; unwind switches first")

    def require_nodes(self, minimum=2, what="a collective"):
        """Raise :class:`TopologyError` if the topology has fewer than ``minimum`` nodes."""
        if self.num_nodes < minimum:
            raise TopologyError(f"{what} needs at least {minimum} nodes; {self.name} has "
                                f"{self.num_nodes}")

    # ------------------------------------------------------------------ interchange
    def to_dict(self):
        """The ``topocoll.topology`` file form (see docs/format.md)."""
        links = [{"src": int(s), "dst": int(d), "bandwidth": float(b), "latency": float(l)}
                 for s, d, b, l in zip(self.src.tolist(), self.dst.tolist(),
                                       self.bandwidth.tolist(), self.latency.tolist())]
        out = {"format": "topocoll.topology", "version": 1, "name": self.name,
               "nodes": self.num_nodes, "links": links}
        if self.switches:
            out["switches"] = list(self.switches)
        return out

    def to_networkx(self):
        """A ``networkx.MultiDiGraph`` with link attributes ``bandwidth`` and ``latency``."""
        import networkx as nx

        g = nx.MultiDiGraph(name=self.name)
        g.add_nodes_from(range(self.num_nodes))
        for node in self.switches:
            g.nodes[node]["switch"] = True
        g.add_edges_from((int(s), int(d), {"bandwidth": float(b), "latency": float(l)})
                         for s, d, b, l in zip(self.src, self.dst, self.bandwidth, self.latency))
        return g

    @classmethod
    def from_networkx(cls, graph, *, bandwidth=LINK_BANDWIDTH, latency=LINK_LATENCY,
                      name=None, drop_self_loops=False):
        """Build from a networkx graph; undirected edges become two directed links.

        Nodes are relabelled ``0..N-1`` in sorted order unless they already are those integers;
        link attributes ``bandwidth``/``latency`` are used where present, else the defaults.
        Nodes with a true ``switch`` attribute become switches.

        >>> import networkx as nx
        >>> Topology.from_networkx(nx.cycle_graph(4)).num_links
        8
        """
        import networkx as nx

        if not isinstance(graph, nx.Graph):
            raise InputTypeError(f"expected a networkx graph, got {type(graph).__name__}")
        nodes = list(graph.nodes)
        if nodes == list(range(len(nodes))):
            index = {v: v for v in nodes}
        else:
            try:
                ordered = sorted(nodes)
            except TypeError:
                ordered = nodes
            index = {v: i for i, v in enumerate(ordered)}
        src, dst, bws, lats = [], [], [], []
        edges = graph.edges(data=True)
        for u, v, data in edges:
            b = data.get("bandwidth", bandwidth)
            l = data.get("latency", latency)
            pairs = [(u, v)] if graph.is_directed() else [(u, v), (v, u)]
            for a, c in pairs:
                src.append(index[a])
                dst.append(index[c])
                bws.append(float(b))
                lats.append(float(l))
        switches = [index[v] for v, d in graph.nodes(data=True) if d.get("switch")]
        return cls(len(nodes), src, dst, bws, lats,
                   name=name or graph.graph.get("name") or f"graph:{len(nodes)}",
                   switches=switches, drop_self_loops=drop_self_loops)
