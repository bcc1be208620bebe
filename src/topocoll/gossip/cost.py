"""The communication cost of one gossip iteration on a physical network (alpha-beta model).

Which gossip topology suits a network? Price one iteration of each on the same network.

Traffic of iteration k, for a buffer of M bytes per rank:

* graph topologies (Bluefog's ``neighbor_allreduce``): every non-zero ``W[i, j]``, ``i != j``, is a
  message of M bytes from rank j to rank i, one latency step;
* group topologies (decent_dp): a pair exchanges M bytes each way in one step; a group of
  g > 2 ranks runs a ring allreduce in rank order (``group_mode="allreduce"``, what decent_dp's
  ``all_reduce`` on the group's process group does): each member sends ``2(g-1)/g * M`` bytes
  to the next member, over ``2(g-1)`` latency steps. ``group_mode="neighbor"`` prices a group
  like a graph topology instead (every member sends M to every other).

So ``complete`` with the default group mode *is* a ring allreduce of all ranks: the baseline.

Routing and time: ranks sit on the network's endpoints (non-switch nodes; several ranks per
node with ``ranks_per_node``, whose messages inside a node are free). Every message is split
evenly over all shortest paths (hop count) between its nodes, as ECMP routing does. All messages
of one iteration are in flight together, so

    T_beta  = max over directed links (u, v) of (bytes routed over u -> v) / bandwidth(u -> v)
    T_alpha = max over messages of steps * (largest latency sum along its shortest paths)
    time    = T_alpha + T_beta

(parallel links between one pair add their bandwidths, as in the schedule cost model). This is
the fluid, pipelined (cut-through) alpha-beta model of docs/math.md section 1 applied to one
iteration: a lower-bound-style estimate that is exact for contention-free patterns, and ranks
topologies by their busiest link.

>>> c = gossip_cost("ring", "ring:8", "1MiB", alpha="1us", link_bandwidth="1GB/s")
>>> [round(i.time * 1e6, 3) for i in c.iterations]
[1049.576, 1049.576]
"""

from dataclasses import asdict, dataclass, field

import numpy as np

from ..errors import InputTypeError, NotStronglyConnectedError, SpecError, TopologyError
from ..units import parse_size, whole_number
from .mixing import GossipTopology
from .registry import gossip_topology

__all__ = ["gossip_cost", "GossipCost", "IterationCost", "iteration_messages",
           "hierarchical_messages", "iterations_to_accuracy", "GROUP_MODES"]

#: How a group of more than two ranks communicates (see the module docstring).
GROUP_MODES = ("allreduce", "neighbor")

_CHUNK = 2_000_000  # message-pair x link entries per block of the load computation


@dataclass
class IterationCost:
    """Cost of one iteration (times in seconds, bytes as floats)."""

    iteration: int
    messages: int
    local_messages: int
    bytes: float
    max_hops: int
    steps: int
    T_alpha: float
    T_beta: float
    time: float
    max_link_load: float
    bottleneck: tuple = None


@dataclass
class GossipCost:
    """Per-iteration costs of a gossip topology on a network, over one period."""

    topology: str
    nodes: int
    network: str
    network_nodes: int
    size: float
    group_mode: str
    period: int
    iterations: list = field(default_factory=list)

    @property
    def mean_time(self):
        """Average time per iteration over the priced iterations."""
        return float(np.mean([i.time for i in self.iterations]))

    @property
    def max_time(self):
        """Slowest priced iteration."""
        return float(max(i.time for i in self.iterations))

    def to_dict(self):
        out = {k: v for k, v in asdict(self).items() if k != "iterations"}
        out["mean_time"] = self.mean_time
        out["max_time"] = self.max_time
        out["iterations"] = [{**asdict(i), "bottleneck": None if i.bottleneck is None
                              else list(i.bottleneck)} for i in self.iterations]
        return out


def iteration_messages(topology, k, size=1.0, group_mode="allreduce"):
    """The messages of iteration ``k``: ``(src_rank, dst_rank, bytes, steps)`` as four arrays.

    >>> from topocoll.gossip import gossip_topology
    >>> src, dst, nbytes, steps = iteration_messages(gossip_topology("complete", 4), 0, 8.0)
    >>> src.tolist(), dst.tolist(), nbytes.tolist(), steps.tolist()
    ([0, 1, 2, 3], [1, 2, 3, 0], [12.0, 12.0, 12.0, 12.0], [6, 6, 6, 6])
    """
    if group_mode not in GROUP_MODES:
        raise SpecError(f"group_mode must be one of {', '.join(GROUP_MODES)}, got {group_mode!r}")
    groups = topology.groups(k)
    if groups is None or group_mode == "neighbor":
        w = topology.sparse_matrix(k).tocoo()   # the stored weights: no n x n array
        off = w.row != w.col
        order = np.lexsort((w.col[off], w.row[off]))   # np.nonzero's order: by dst, then src
        dst, src = w.row[off][order].astype(np.int64), w.col[off][order].astype(np.int64)
        ones = np.ones(src.size)
        return src, dst, ones * float(size), ones.astype(np.int64)
    src, dst, nbytes, steps = [], [], [], []
    for ranks, _ in groups:
        g = len(ranks)
        if g == 1:
            continue
        if g == 2:
            src += [ranks[0], ranks[1]]
            dst += [ranks[1], ranks[0]]
            nbytes += [float(size)] * 2
            steps += [1, 1]
            continue
        src += list(ranks)
        dst += list(ranks[1:]) + [ranks[0]]
        nbytes += [2.0 * (g - 1) / g * size] * g
        steps += [2 * (g - 1)] * g
    return (np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64),
            np.asarray(nbytes, dtype=np.float64), np.asarray(steps, dtype=np.int64))


def hierarchical_messages(machine_topology, local_size, k, size=1.0):
    """The messages of one hierarchical step (:func:`topocoll.runtime.\
hierarchical_neighbor_allreduce`) of iteration ``k``: three phases, one after the other, each
    ``(src_rank, dst_rank, bytes, steps)`` on the ``n = M L`` machine-major ranks.

    1. reduce-scatter inside every machine: every rank sends ``M / L`` bytes (one part) to
       each of the ``L - 1`` others of its machine;
    2. between machines: local rank ``l`` of machine ``j`` sends its part to local rank ``l``
       of every out-neighbour machine of ``W_k``; all ``L`` local ranks at once, so a
       machine's uplink carries ``L`` parts per neighbour machine, the whole buffer;
    3. all-gather inside every machine: as phase 1.

    Parameters
    ----------
    machine_topology : GossipTopology
        The machines' topology (``M`` nodes); its messages are priced as a graph topology's.
    local_size : int
        Ranks per machine ``L``.
    k : int
        The iteration.
    size : float
        Buffer bytes per rank.

    Examples
    --------
    >>> from topocoll.gossip import gossip_topology
    >>> a, b, c = hierarchical_messages(gossip_topology("one-peer-exp", 2), 2, 0, 8.0)
    >>> a[0].tolist(), a[1].tolist(), a[2].tolist()
    ([0, 1, 2, 3], [1, 0, 3, 2], [4.0, 4.0, 4.0, 4.0])
    >>> b[0].tolist(), b[1].tolist(), b[2].tolist()
    ([2, 3, 0, 1], [0, 1, 2, 3], [4.0, 4.0, 4.0, 4.0])
    """
    size_l = whole_number(local_size, "local_size")
    machines = machine_topology.size
    part = float(size) / size_l
    ranks = np.arange(machines * size_l, dtype=np.int64)
    src = np.repeat(ranks, size_l)
    dst = (src // size_l) * size_l + np.tile(np.arange(size_l, dtype=np.int64), ranks.size)
    keep = src != dst
    inside = (src[keep], dst[keep], np.full(int(keep.sum()), part),
              np.ones(int(keep.sum()), dtype=np.int64))
    m_src, m_dst, _, m_steps = iteration_messages(machine_topology, k, part, "neighbor")
    local = np.arange(size_l, dtype=np.int64)
    between = ((m_src[:, None] * size_l + local).ravel(),
               (m_dst[:, None] * size_l + local).ravel(),
               np.full(m_src.size * size_l, part), np.repeat(m_steps, size_l))
    return [inside, between, inside]


def _placement(net, n, placement, ranks_per_node):
    switches = np.zeros(net.num_nodes, dtype=bool)
    switches[list(net.switches)] = True
    endpoints = np.flatnonzero(~switches)
    if placement is not None and ranks_per_node is not None:
        raise SpecError("give placement or ranks_per_node, not both")
    if placement is not None:
        place = np.asarray(placement)
        if place.shape != (n,) or place.dtype.kind not in "iu":
            raise InputTypeError(f"placement needs one network node (int) per rank ({n})")
        if np.any((place < 0) | (place >= net.num_nodes)) or np.any(switches[place]):
            raise TopologyError(f"placement must name endpoints of {net.name} (not switches)")
        return place.astype(np.int64)
    per = 1 if ranks_per_node is None else ranks_per_node
    per = whole_number(per, "ranks_per_node")
    if n != per * endpoints.size:
        raise TopologyError(f"network {net.name} has {endpoints.size} endpoints x {per} ranks per "
                            f"node = {per * endpoints.size} ranks, but the gossip topology has "
                            f"{n}; give ranks_per_node or a placement")
    return endpoints[np.arange(n) // per]


def _layers(out_ptr, out_dst, out_lat, dist_rows, starts, with_latency):
    """Shortest-path counts from each start (and, if asked, the largest latency sum over the
    shortest paths), one BFS layer at a time.

    Only the frontier (the nodes at distance t-1 from each start) is expanded over its
    out-links, so the work is O(starts x links), not O(starts x nodes x diameter).
    ``out_ptr``/``out_dst``/``out_lat`` are the links grouped by source (CSR).
    """
    rows, nodes = dist_rows.shape
    count = np.zeros((rows, nodes))
    lat = np.full((rows, nodes), -np.inf) if with_latency else None
    f_row = np.arange(rows)
    f_node = np.asarray(starts, dtype=np.int64)
    f_count = np.ones(rows)
    f_lat = np.zeros(rows)
    count[f_row, f_node] = 1.0
    if with_latency:
        lat[f_row, f_node] = 0.0
    t = 0
    while f_row.size:
        t += 1
        deg = out_ptr[f_node + 1] - out_ptr[f_node]
        link = np.repeat(out_ptr[f_node] - np.cumsum(deg) + deg, deg) + np.arange(deg.sum())
        src_idx = np.repeat(np.arange(f_row.size), deg)  # which frontier entry expands
        row = f_row[src_idx]
        node = out_dst[link]
        keep = dist_rows[row, node] == t  # a shortest-path step: one layer further out
        src_idx, row, node, link = src_idx[keep], row[keep], node[keep], link[keep]
        key = row * nodes + node
        ukey, inverse = np.unique(key, return_inverse=True)
        f_count = np.bincount(inverse, weights=f_count[src_idx], minlength=ukey.size)
        f_row, f_node = ukey // nodes, ukey % nodes
        count[f_row, f_node] = f_count
        if with_latency:
            best = np.full(ukey.size, -np.inf)
            np.maximum.at(best, inverse, f_lat[src_idx] + out_lat[link])
            f_lat = best
            lat[f_row, f_node] = best
    return count, lat


def gossip_cost(topology, network, size, *, params=None, alpha=None, link_bandwidth=None,
                node_bandwidth=None, placement=None, ranks_per_node=None,
                group_mode="allreduce", iterations=None, progress=None):
    """Price the iterations of a gossip topology on a physical network (see the module doc).

    Parameters
    ----------
    topology : GossipTopology or str
        A topology, or a registered name (built for the network's size, with ``params``).
    network : str, Topology, path or networkx graph
        The physical network (:func:`topocoll.topology.topology` spec), routed over shortest
        paths; its switches route but hold no ranks.
    size : int, float or str
        Buffer size M per rank (e.g. ``"64MiB"``).
    params : dict, optional
        Parameters of a named topology.
    alpha, link_bandwidth : float or str, optional
        Replace every link's latency / bandwidth.
    node_bandwidth : float or str, optional
        Split every node's egress bandwidth evenly over its links.
    placement : sequence of int, optional
        Network node of each rank (default: endpoints in order).
    ranks_per_node : int, optional
        Ranks ``r*i .. r*i+r-1`` share endpoint i (messages among them are free).
    group_mode : {"allreduce", "neighbor"}
        How groups of more than two ranks communicate.
    iterations : sequence of int, optional
        Which iterations to price (default: the whole period).
    progress : callable, optional
        ``progress(done, total)`` over the iterations.

    Returns
    -------
    GossipCost

    Examples
    --------
    >>> c = gossip_cost("complete", "ring:8", 2**20, alpha="1us", link_bandwidth="1GB/s")
    >>> it = c.iterations[0]
    >>> it.steps, round(it.T_beta / (2 * 7 / 8 * 2**20 / 1e9), 12)
    (14, 1.0)
    """
    from ..topology import topology as _network
    from ..units import parse_bandwidth

    if link_bandwidth is not None and node_bandwidth is not None:
        raise SpecError("give node_bandwidth or link_bandwidth, not both")
    net = _network(network, bandwidth=link_bandwidth, latency=alpha)
    if node_bandwidth is not None:
        net = net.with_node_bandwidth(parse_bandwidth(node_bandwidth, what="node bandwidth"))
    m = parse_size(size) if isinstance(size, str) else float(size)
    if not np.isfinite(m) or m <= 0:
        raise SpecError(f"the buffer size must be positive, got {size!r}")
    if isinstance(topology, GossipTopology):
        if params:
            raise SpecError("params apply to a topology given by name")
        topo = topology
    else:
        per = 1 if ranks_per_node is None else ranks_per_node
        n = (len(placement) if placement is not None
             else (net.num_nodes - len(net.switches)) * (per if isinstance(per, int) else 1))
        topo = gossip_topology(topology, n, **(params or {}))
    place = _placement(net, topo.size, placement, ranks_per_node)
    ks = range(topo.period) if iterations is None else [int(k) for k in iterations]

    from ..topology.metrics import distance_matrix

    messages = []
    for k in ks:
        src, dst, nbytes, steps = iteration_messages(topo, k, m, group_mode)
        a, b = place[src], place[dst]
        local = a == b
        messages.append((k, int(local.sum()), a[~local], b[~local], nbytes[~local],
                         steps[~local]))
    router = _Router(net, distance_matrix(net),
                     np.concatenate([msg[2] for msg in messages]),
                     np.concatenate([msg[3] for msg in messages]))
    result = GossipCost(topo.name, topo.size, net.name, net.num_nodes, m, group_mode, topo.period)
    for done, (k, local, a, b, nbytes, steps) in enumerate(messages, 1):
        cost = IterationCost(k, int(a.size), local, float(nbytes.sum()), 0, 0, 0.0, 0.0, 0.0,
                             0.0)
        if a.size:
            router.route(cost, a, b, nbytes, steps)
        result.iterations.append(cost)
        if progress is not None:
            progress(done, len(messages))
    return result


class _Router:
    """Shortest-path tables of a network for the nodes that send and receive, built once for
    all iterations: path counts from every source and to every destination (and the largest
    latency sum from every source when link latencies differ)."""

    def __init__(self, net, dist, sources, dests):
        self.net = net
        self.dist = dist
        self.psrc, self.pdst, self.pbw, self.plat = net.pairs
        self.uniform = self.plat.size == 0 or bool(np.ptp(self.plat) == 0)
        n = net.num_nodes
        self.us = np.unique(sources)
        self.ud = np.unique(dests)
        self.dist_from = np.asarray(dist[self.us], dtype=np.int64)
        self.dist_to = np.asarray(dist[:, self.ud].T, dtype=np.int64)  # [i, v]: v -> ud[i]
        by_src = np.argsort(self.psrc, kind="stable")
        by_dst = np.argsort(self.pdst, kind="stable")
        fwd = (np.r_[0, np.cumsum(np.bincount(self.psrc, minlength=n))], self.pdst[by_src],
               self.plat[by_src])
        back = (np.r_[0, np.cumsum(np.bincount(self.pdst, minlength=n))], self.psrc[by_dst],
                self.plat[by_dst])
        self.sigma_from, self.lat_from = _layers(*fwd, self.dist_from, self.us,
                                                 not self.uniform)
        self.sigma_to, _ = _layers(*back, self.dist_to, self.ud, False)

    def route(self, cost, a, b, nbytes, steps):
        psrc, pdst, pbw, plat = self.psrc, self.pdst, self.pbw, self.plat
        n_nodes = self.net.num_nodes
        ukey, inverse = np.unique(a * n_nodes + b, return_inverse=True)
        load_sd = np.bincount(inverse, weights=nbytes, minlength=ukey.size)
        steps_sd = np.zeros(ukey.size, dtype=np.int64)
        np.maximum.at(steps_sd, inverse, steps)
        s, d = ukey // n_nodes, ukey % n_nodes
        hops = self.dist[s, d].astype(np.int64)
        if np.any(hops < 0):
            i = int(np.flatnonzero(hops < 0)[0])
            raise NotStronglyConnectedError(f"network {self.net.name} has no path {s[i]} -> "
                                            f"{d[i]} for a gossip message",
                                            pair=(int(s[i]), int(d[i])))
        s_row = np.searchsorted(self.us, s)
        d_row = np.searchsorted(self.ud, d)
        total = self.sigma_from[s_row, d]
        load = np.zeros(psrc.size)
        chunk = max(1, _CHUNK // max(1, psrc.size))
        for lo in range(0, ukey.size, chunk):
            sl = slice(lo, lo + chunk)
            fr, to = s_row[sl], d_row[sl]
            # link u -> v lies on a shortest s -> d path iff dist(s,u) + 1 + dist(v,d) =
            # dist(s,d); its share of the message is paths(s,u) * paths(v,d) / paths(s,d).
            on_path = (self.dist_from[fr][:, psrc] + 1 + self.dist_to[to][:, pdst]) \
                == hops[sl, None]
            frac = np.where(on_path, self.sigma_from[fr][:, psrc] * self.sigma_to[to][:, pdst],
                            0.0)
            load += (load_sd[sl] / total[sl]) @ frac
        per_byte = load / pbw
        e = int(np.argmax(per_byte))
        path_lat = hops * plat[0] if self.uniform else self.lat_from[s_row, d]
        cost.max_hops = int(hops.max())
        cost.steps = int(steps_sd.max())
        cost.T_alpha = float(np.max(steps_sd * path_lat))
        cost.T_beta = float(per_byte[e])
        cost.time = cost.T_alpha + cost.T_beta
        cost.max_link_load = float(load[e])
        cost.bottleneck = (int(psrc[e]), int(pdst[e]))


def iterations_to_accuracy(topology, cost=None, eps=1e-6):
    """How many iterations (and, with a :class:`GossipCost` of the whole period, how long) until
    every start is within ``eps`` times its initial distance to the mean.

    An upper bound from ``rho`` of the period product P: ``period * ceil(log eps / log rho(P))``
    iterations, or the exact-averaging count when that is smaller. ``None`` when neither
    applies (``rho(P) >= 1`` and no exact average).

    Returns
    -------
    dict
        ``rho_per_iteration``, ``exact_average_after``, ``accuracy`` (eps),
        ``iterations_to_accuracy`` and ``time_to_accuracy`` (seconds, ``None`` without a cost).

    Examples
    --------
    >>> from topocoll.gossip import gossip_topology
    >>> iterations_to_accuracy(gossip_topology("ring-graph", 8))["iterations_to_accuracy"]
    64
    """
    import math

    from .consensus import exact_average_after  # consensus loads scipy (through spectrum)
    from .spectrum import period_rho  # spectrum loads scipy

    if not 0 < eps < 1:
        raise SpecError(f"the accuracy must be in (0, 1), got {eps!r}")
    r = period_rho(topology)
    exact = exact_average_after(topology)
    its = None
    if r == 0.0:
        its = topology.period if exact is None else exact
    elif r < 1.0:
        its = topology.period * math.ceil(math.log(eps) / math.log(r))
    if exact is not None:
        its = exact if its is None else min(its, exact)
    seconds = None
    if cost is not None and its is not None:
        times = {c.iteration % topology.period: c.time for c in cost.iterations}
        if len(times) == topology.period:
            full, rest = divmod(its, topology.period)
            seconds = full * sum(times.values()) + sum(times[k] for k in range(rest))
    return {"rho_per_iteration": r ** (1.0 / topology.period), "exact_average_after": exact,
            "accuracy": eps, "iterations_to_accuracy": its, "time_to_accuracy": seconds}
