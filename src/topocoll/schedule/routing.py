"""Routed transfers: the links each transfer of a routed schedule crosses.

A schedule with a ``routing`` policy (:data:`~topocoll.topology.routes.ROUTINGS`) may send
between nodes that share no link; the network forwards the message along the policy's route
(:func:`~topocoll.topology.routes.routes_of`), and every link of the route carries its bytes.
A schedule without one crosses exactly the link ``src -> dst`` per transfer. The step model
and the link model read both through :func:`transfer_hops`; the link model serves a
route's hops after the first with :func:`serve_further_hops` (docs/math.md section 11).

>>> from topocoll.topology import topology
>>> t = topology("ring:6")
>>> who, link, hop = transfer_hops(t, "shortest", np.array([0, 2]), np.array([3, 1]))
>>> who.tolist(), hop.tolist()
([0, 1, 0, 0], [0, 0, 1, 2])
>>> [(int(t.src[i]), int(t.dst[i])) for i in link]
[(0, 1), (2, 1), (1, 2), (2, 3)]
"""

import numpy as np

from ..errors import NotStronglyConnectedError, TopologyError
from ..topology.routes import routes_of

__all__ = ["transfer_hops", "unlinked", "routing_needed", "TransferHops", "hop_pairs", "serve_further_hops"]


def unlinked(topology, src, dst):
    """Per transfer ``src[i] -> dst[i]``, whether the topology has no link for it (a routed
    transfer)."""
    return topology.pair_index(src, dst) < 0


def routing_needed(topology, transfers):
    """``"shortest"`` if some of ``transfers`` crosses no single link, else None: what a
    generator whose peers may be far away sets as its schedule's ``routing``."""
    return "shortest" if unlinked(topology, transfers["src"], transfers["dst"]).any() else None


def transfer_hops(topology, routing, src, dst):
    """Every hop of every transfer ``src[i] -> dst[i]``: ``(transfer, link, hop)`` arrays, one
    entry per link crossed, ordered by hop number (all first hops, then all second hops, ...;
    within a hop number by transfer).

    With ``routing`` None a transfer's one hop is the lowest-numbered link ``src -> dst`` (a
    pair without a link raises ``TopologyError``); else the route of that policy (a pair with
    no path raises ``NotStronglyConnectedError``).
    """
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    who = np.arange(src.size, dtype=np.int64)
    if routing is None:
        pair = topology.pair_index(src, dst)
        if np.any(pair < 0):
            i = int(np.flatnonzero(pair < 0)[0])
            raise TopologyError(f"transfer {i} uses link {src[i]}->{dst[i]}, which the "
                                "topology does not have")
        return who, _first_link(topology, src, dst), np.zeros(src.size, dtype=np.int64)
    routes = routes_of(topology, routing)
    parts_who, parts_link, parts_hop = [], [], []
    at, goal, hop = src, dst, 0
    while True:
        moving = at != goal
        at, goal, who = at[moving], goal[moving], who[moving]
        if not at.size:
            break
        links = routes.next_link[at, goal].astype(np.int64)
        if np.any(links < 0):
            i = int(np.flatnonzero(links < 0)[0])
            raise NotStronglyConnectedError(
                f"transfer {int(who[i])}: {topology.name} has no path {int(at[i])} -> "
                f"{int(goal[i])} for the {routing} routing", pair=(int(at[i]), int(goal[i])))
        parts_who.append(who)
        parts_link.append(links)
        parts_hop.append(np.full(who.size, hop, dtype=np.int64))
        at = topology.dst[links].astype(np.int64)
        hop += 1
    if not parts_who:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, empty
    return np.concatenate(parts_who), np.concatenate(parts_link), np.concatenate(parts_hop)


def _first_link(topology, src, dst):
    """The lowest-numbered link ``src[i] -> dst[i]`` of each pair (all exist)."""
    n = topology.num_nodes
    key = topology.src.astype(np.int64) * n + topology.dst
    order = np.argsort(key, kind="stable")
    pos = np.searchsorted(key[order], src * n + dst)
    return order[pos].astype(np.int64)


class TransferHops:
    """The pairs (rows of the network's table) that each transfer of a schedule crosses:
    one per transfer, or a route's worth for a routed schedule (:func:`transfer_hops`)."""

    def __init__(self, net, schedule):
        t = schedule.transfers
        self.ptr = None
        if schedule.routing is None:
            self.pairs = net.pairs_of(t)
            return
        who, link, hop = transfer_hops(schedule.topology, schedule.routing, t["src"], t["dst"])
        order = np.lexsort((hop, who))
        self.pairs = net.pair_of_link[link[order]]
        self.ptr = np.searchsorted(who[order], np.arange(t.size + 1))

    def count(self, idx):
        """Hops of transfers ``idx``."""
        return np.ones(idx.size, dtype=np.int64) if self.ptr is None else \
            self.ptr[idx + 1] - self.ptr[idx]

    def pair(self, idx, k):
        """The pair of hop ``k`` of transfers ``idx`` (each has more than ``k`` hops)."""
        return self.pairs[idx] if self.ptr is None else self.pairs[self.ptr[idx] + k]


def hop_pairs(hops, ten, idx, k):
    """The pair of hop ``k`` of the transfers ``(ten, idx)`` of several tenants."""
    pair = np.empty(idx.size, dtype=np.int64)
    for i, h in enumerate(hops):
        m = ten == i
        if m.any():
            pair[m] = h.pair(idx[m], k)
    return pair


def serve_further_hops(net, lat, hops, out, step, ten, idx, nbytes, done):
    """Serve the hops after the first of a step's routed transfers, cut-through: hop ``k``
    may start once the head has crossed hop ``k - 1`` (its start plus that link's latency) and
    ends no sooner than the tail arrives (hop ``k - 1``'s end) plus its own charge. Within a
    step a link serves the first hops, then the second hops, and so on (each in the
    schedule's order). Returns when each transfer's last hop ends; each hop's link time is
    added to the busy time of its tenant."""
    final = done[1].copy()
    count = np.ones(idx.size, dtype=np.int64)
    for i, h in enumerate(hops):
        m = ten == i
        if m.any() and h.ptr is not None:
            count[m] = h.count(idx[m])
    start, link = done[0].copy(), done[2].copy()
    for k in range(1, int(count.max()) if count.size else 0):
        sel = np.flatnonzero(count > k)
        ready = start[sel] + lat[link[sel]]
        more = net.serve(step, ten[sel], idx[sel], ready, np.full(sel.size, -1), nbytes[sel],
                         hop_pairs(hops, ten[sel], idx[sel], k), floor=final[sel])
        start[sel], final[sel], link[sel] = more[0], more[1], more[2]
        out.add_busy(ten[sel], more[2], more[1] - more[0])
    return final
