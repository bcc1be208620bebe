"""Lower bounds that hold for every schedule of a collective (docs/math.md section 1, "Bounds
that are theorems").

Every bound here is a theorem about *every* valid schedule on the given topology, whatever its
link bandwidths, degrees or symmetry, and it bounds both the step model's ``T_B`` and the link
model's finish time (:func:`topocoll.schedule.linkmodel.simulate`). Bandwidth bounds come per
byte of the buffer M and rest on one lemma: if every valid schedule must move at least ``R M``
bytes over a set of links of summed bandwidth ``c``, then ``T_B >= R M / c`` and the link-model
time is ``>= R M / c``. Three families of such link sets are used:

* **cuts**: the links entering a node set S carry every byte that S needs and does not hold
  (:func:`cut_demand`); the sets tried are every single node, every node's complement, and the
  prefixes (and their complements) of a few node orders: by ingress, egress and total bandwidth,
  and by hop distance from a centre (the root for rooted collectives);
* **partitions** (allreduce only): with the nodes split into k parts, every byte of the result
  crosses between parts at least ``2(k - 1)`` times (the one-way gossip bound); parts are the
  nodes of a prefix S, one each, plus the rest;
* **hop counts** (scatter, gather, alltoall): a byte that travels from x to y crosses at least
  ``dist(x, y)`` links, out of the total capacity of the network.

>>> from topocoll.topology import topology
>>> from topocoll.collectives import collective
>>> t = topology("dbt:16", bandwidth=1.0)       # degrees 2 to 4
>>> round(bandwidth_lower_bound(collective("allreduce"), t), 6)   # 1/min ingress = 30/60
0.5
>>> steps_lower_bound(collective("allreduce"), t) == 4            # the diameter, not twice it
True
"""

import numpy as np

from ..errors import UnsupportedError
from ..topology.metrics import diameter as _diameter, distance_sum, eccentricity, moore_depth

__all__ = ["bandwidth_lower_bound", "bandwidth_bound_terms", "cut_demand", "steps_lower_bound",
           "moore_steps_lower_bound", "degree_lower_bound", "DISTANCE_SUM_LIMIT"]

#: All-pairs hop distances (alltoall) are summed exactly while ``nodes * links`` is at most
#: this; above it the Moore distance sum, a lower bound on every digraph of that degree, is used.
DISTANCE_SUM_LIMIT = 20_000_000


def cut_demand(name, n, s, root_in):
    """Bytes (per byte of M) that must enter a node set S of ``s`` nodes (``0 < s < n``) in
    every valid schedule of collective ``name`` on ``n`` nodes; ``root_in``: whether S holds the
    root (ignored by unrooted collectives). ``s`` and ``root_in`` may be arrays.

    Each value is what S needs at the end and does not hold at the start: a byte of a shard that
    S needs and no node of S starts with (or, for a reduction, a contribution from outside S to a
    piece S must end with) has to cross a link into S at least once.

    >>> cut_demand("allgather", 4, 1, False), cut_demand("allreduce", 4, 3, False)
    (0.75, 1.0)
    >>> cut_demand("broadcast", 4, 2, True), cut_demand("alltoall", 4, 2, False)
    (0.0, 1.0)
    """
    s = np.asarray(s, dtype=float)
    root_in = np.asarray(root_in, dtype=bool)
    rest = (n - s) / n
    if name == "allgather":          # the shards of the nodes outside S
        out = rest
    elif name == "reduce_scatter":   # outside contributions to the shards S owns
        out = s / n
    elif name == "allreduce":        # outside contributions to every piece
        out = np.ones_like(s)
    elif name == "alltoall":         # the blocks from outside S to S: s (n - s) of M/n each
        out = s * rest
    elif name == "broadcast":
        out = np.where(root_in, 0.0, 1.0)
    elif name == "reduce":
        out = np.where(root_in, 1.0, 0.0)
    elif name == "scatter":
        out = np.where(root_in, 0.0, s / n)
    elif name == "gather":
        out = np.where(root_in, rest, 0.0)
    else:
        raise ValueError(f"unknown collective {name!r}")
    return out if out.ndim else float(out)


def _ratio(demand, capacity):
    """Largest ``demand / capacity`` (``inf`` when positive demand meets no capacity)."""
    demand = np.asarray(demand, dtype=float)
    capacity = np.asarray(capacity, dtype=float)
    need = demand > 0
    if not need.any():
        return 0.0
    if np.any(capacity[need] <= 0):
        return float("inf")
    return float((demand[need] / capacity[need]).max())


def _distances(topology, node, transpose=False):
    """Hop distances from ``node`` (to it with ``transpose``); ``inf`` where unreachable."""
    from ..topology.paths import hop_distances   # numpy on small graphs (start-up time)

    return hop_distances(topology, [int(node)], transpose=transpose)[0]


def _orders(topology, ing, egr, root):
    """Node orders whose prefixes (and their complements) are tried as cuts."""
    total = ing + egr
    orders = [np.argsort(ing, kind="stable"), np.argsort(egr, kind="stable"),
              np.argsort(total, kind="stable")]
    centres = [root] if root is not None else \
        list(dict.fromkeys([int(np.argmin(ing)), int(np.argmin(egr)), int(np.argmax(total))]))
    for c in centres:
        for transpose in (False, True):
            d = _distances(topology, c, transpose)
            d = np.where(np.isfinite(d), d, topology.num_nodes)
            orders.append(np.lexsort((total, d)))   # balls around c, nearest first
    return orders


def _prefix_capacities(topology, order):
    """For the prefixes ``S_k`` (k = 1 .. n-1) of ``order``: bandwidth into S_k, out of S_k,
    and of the links with an end in S_k; and the rank of every node."""
    n = topology.num_nodes
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n)
    bw = topology.bandwidth
    # a link is inside S_k once both its ends are: from k = max rank + 1 on
    inside = np.cumsum(np.bincount(np.maximum(rank[topology.src], rank[topology.dst]),
                                   weights=bw, minlength=n))
    into = np.cumsum(np.bincount(rank[topology.dst], weights=bw, minlength=n)) - inside
    out = np.cumsum(np.bincount(rank[topology.src], weights=bw, minlength=n)) - inside
    touch = into + out + inside
    return into[:-1], out[:-1], touch[:-1], rank


def bandwidth_bound_terms(collective, topology, root=None):
    """The bandwidth lower bound's terms, per byte of M, in seconds: ``{"node", "cut",
    "partition", "hops"}`` (0.0 where a term does not apply). Their maximum is
    :func:`bandwidth_lower_bound`.

    ``node``: every single node and its complement as the set S of a cut; ``cut``: the other
    cuts tried; ``partition``: allreduce's gossip bound; ``hops``: the hop-count bound.
    """
    from ..collectives import collective as _collective

    name = _collective(collective).name
    if name not in ("broadcast", "reduce", "scatter", "gather"):
        root = None
    elif root is None or not 0 <= int(root) < topology.num_nodes:
        raise UnsupportedError(f"the {name} bound needs a root among the {topology.num_nodes} "
                               f"nodes, got {root!r}")
    key = ("bandwidth_bound_terms", name, None if root is None else int(root))
    return dict(topology._cached(key, lambda: _terms(name, topology, root)))


def _terms(name, topology, root):
    n = topology.num_nodes
    terms = {"node": 0.0, "cut": 0.0, "partition": 0.0, "hops": 0.0}
    if n < 2:
        return terms
    rooted = name in ("broadcast", "reduce", "scatter", "gather")
    ing = topology.ingress_bandwidth()
    egr = topology.egress_bandwidth()
    if rooted:
        is_root = np.zeros(n, dtype=bool)
        is_root[int(root)] = True
    else:
        root, is_root = None, np.zeros(n, dtype=bool)
    # S = {v}: bandwidth in is ing(v); S = V - {v}: bandwidth in is egr(v)
    terms["node"] = max(_ratio(cut_demand(name, n, 1, is_root), ing),
                        _ratio(cut_demand(name, n, n - 1, ~is_root), egr))
    if n > 2:
        best, best_part = 0.0, 0.0
        sizes = np.arange(1, n)
        for order in _orders(topology, ing, egr, root):
            into, out, touch, rank = _prefix_capacities(topology, order)
            root_in = rank[root] < sizes if rooted else np.zeros(n - 1, dtype=bool)
            best = max(best, _ratio(cut_demand(name, n, sizes, root_in), into),
                       _ratio(cut_demand(name, n, n - sizes, ~root_in), out))
            if name == "allreduce":
                # parts: each node of S_k alone, and the rest: k + 1 parts, 2k crossings
                best_part = max(best_part, _ratio(2.0 * sizes, touch))
        terms["cut"] = best
        terms["partition"] = best_part
    capacity = float(topology.bandwidth.sum())
    if name == "allreduce":
        terms["partition"] = max(terms["partition"], _ratio(2.0 * (n - 1), capacity))
    elif name in ("scatter", "gather"):
        d = _distances(topology, root, transpose=name == "gather")
        hops = float(d.sum()) if np.all(np.isfinite(d)) else float("inf")
        terms["hops"] = _ratio(hops / n, capacity)
    elif name == "alltoall":
        terms["hops"] = _ratio(_alltoall_hops(topology), capacity)
    return terms


def _alltoall_hops(topology):
    """A lower bound on ``sum_{x != y} dist(x, y) / N``: exact when affordable, else the Moore
    distance sum of the largest out- and in-degree (no digraph of that degree does better)."""
    from ..topology.cuts import moore_distance_sum
    from ..topology.metrics import unreachable_pair

    n = topology.num_nodes
    if unreachable_pair(topology) is not None:
        return float("inf")
    if n * max(topology.num_links, 1) <= DISTANCE_SUM_LIMIT:
        return distance_sum(topology) / n
    d_out = int(topology.out_degree().max())
    d_in = int(topology.in_degree().max())
    return float(max(moore_distance_sum(n, d_out), moore_distance_sum(n, d_in)))


def bandwidth_lower_bound(collective, topology, root=None):
    """Lower bound on the bandwidth time of every schedule, per byte of M (seconds per byte).

    It bounds the step model's ``T_B`` and the link model's finish time alike, on any topology
    and link speeds: the largest of :func:`bandwidth_bound_terms`. On a network whose nodes all
    have ingress and egress B it is ``(N-1)/N * M/B`` for allgather and reduce-scatter and
    ``2(N-1)/N * M/B`` for allreduce (the partition bound with N parts).
    """
    return float(max(bandwidth_bound_terms(collective, topology, root).values()))


def steps_lower_bound(collective, topology, root=None):
    """Fewest steps of any schedule: the diameter for the unrooted collectives (allreduce
    included: on a complete digraph it takes one step), the root's eccentricity (out for
    broadcast and scatter, in for reduce and gather) for the rooted ones."""
    from ..collectives import collective as _collective

    name = _collective(collective).name
    if topology.num_nodes == 1:
        return 0
    if name in ("broadcast", "scatter"):
        return eccentricity(topology, root, direction="out")
    if name in ("reduce", "gather"):
        return eccentricity(topology, root, direction="in")
    return _diameter(topology)


def moore_steps_lower_bound(collective, topology):
    """Fewest steps of any schedule on *any* digraph with these N and largest degrees: the Moore
    depth ``k*(N, d)`` of the largest out-degree (what spreads from one node) for broadcast and
    scatter, of the largest in-degree (what gathers at one node) for reduce and gather, and the
    larger of the two for the unrooted collectives (allreduce included, not doubled)."""
    from ..collectives import collective as _collective

    name = _collective(collective).name
    n = topology.num_nodes
    if n == 1:
        return 0
    if topology.num_links == 0:
        return 0     # nothing can be sent: no schedule exists to bound
    d_out = int(topology.out_degree().max())
    d_in = int(topology.in_degree().max())
    if name in ("broadcast", "scatter"):
        return moore_depth(n, d_out)
    if name in ("reduce", "gather"):
        return moore_depth(n, d_in)
    return max(moore_depth(n, d_out), moore_depth(n, d_in))


def degree_lower_bound(collective, num_nodes, degree, egress):
    """``(steps, seconds per byte of M)`` that no schedule beats on *any* digraph of
    ``num_nodes`` nodes whose out-degree is at most ``degree`` and whose every node has egress
    bandwidth at most ``egress`` (bytes/s): the topology-agnostic bound, e.g. for comparing
    topologies of one size and degree.

    Steps: the Moore depth ``k*(N, d)`` (what spreads from one node), but 1 for reduce and
    gather, whose in-degree is not limited. Bandwidth: the total capacity is at most
    ``N * egress``; allgather and reduce-scatter move ``(N-1) M`` bytes, allreduce ``2(N-1) M``
    (Theorem 2), alltoall ``M`` times the Moore distance sum; broadcast's root and every
    non-root of a reduce send ``M`` through ``egress``, scatter's root ``(N-1)/N M`` and every
    node of a gather ``M/N`` (the root's ingress is not limited).

    >>> degree_lower_bound("allreduce", 64, 4, 1.0)   # k*(64, 4) = 3, 2 * 63/64
    (3, 1.96875)
    """
    from ..collectives import collective as _collective
    from ..topology.cuts import moore_distance_sum

    name = _collective(collective).name
    n, d, b = int(num_nodes), int(degree), float(egress)
    if n < 2:
        return 0, 0.0
    steps = 1 if name in ("reduce", "gather") else moore_depth(n, d)
    spread = (n - 1) / n
    per_byte = {"allgather": spread, "reduce_scatter": spread, "allreduce": 2 * spread,
                "broadcast": 1.0, "reduce": 1.0, "scatter": spread, "gather": 1 / n,
                "alltoall": max(spread, moore_distance_sum(n, d) / n)}[name]
    return steps, per_byte / b
