"""Static routes: one path per ordered pair of nodes, as a network's routing tables hold them.

A message between nodes that share no link is forwarded by the nodes between them (TPU ICI
routers, switches, the kernels of an emulated network). :func:`shortest_routes` picks one
shortest path (hop count) per ordered pair, hop by hop: at node ``u`` towards ``v`` the next
link is the *lowest-numbered* out-link of ``u`` whose head is one hop closer to ``v``. The rule
is deterministic, consistent (every node on the way makes the same choice the path made) and,
because the lattice families list each node's links dimension by dimension, it is
dimension-order routing on tori and meshes. Switches forward like any other node.

The same tables serve the emulated network (:mod:`topocoll.emulate`, which installs them as
kernel routes) and its model (which charges every link of a route with the bytes that cross
it), so that measured and modelled congestion are the same thing.

>>> from topocoll.topology import topology
>>> r = shortest_routes(topology("torus:4x4"))
>>> r.node_path(0, 5)            # first dimension first: 0 -> 4, then 4 -> 5
[0, 4, 5]
>>> int(r.hops[3, 4]), r.node_path(3, 4)
(2, [3, 7, 4])
"""

import re

import numpy as np

from ..errors import InputTypeError, NotStronglyConnectedError, UnsupportedError
from ..limits import require_memory
from .metrics import distance_matrix

__all__ = ["Routes", "shortest_routes", "dimension_order_routes", "lattice_dims", "ROUTINGS",
           "routes_of"]

#: The routing policies a schedule may name (docs/format.md, "Routed transfers"): the routes a
#: transfer between nodes that share no link follows. ``"xy"``: dimension-order routing on a
#: mesh, torus or ring (:func:`dimension_order_routes`).
ROUTINGS = ("shortest", "xy")


class Routes:
    """One route per ordered pair of a topology's nodes (see the module text).

    Attributes
    ----------
    topology : Topology
        The network routed.
    next_link : int32 array, shape (N, N)
        ``next_link[u, v]``: the link (an index into ``topology.src``/``dst``) that ``u`` sends
        a message for ``v`` on; -1 on the diagonal and where ``v`` is unreachable from ``u``.
    hops : int32 array, shape (N, N)
        Links on the route ``u -> v`` (-1 where unreachable).
    """

    __slots__ = ("topology", "next_link", "hops")

    def __init__(self, topology, next_link, hops):
        self.topology, self.next_link, self.hops = topology, next_link, hops

    def __repr__(self):
        return f"Routes({self.topology.name!r}, nodes={self.topology.num_nodes})"

    def _check_pair(self, u, v):
        n = self.topology.num_nodes
        if not (0 <= u < n and 0 <= v < n):
            raise InputTypeError(f"route {u} -> {v}: nodes are 0..{n - 1}")
        if u != v and self.hops[u, v] < 0:
            raise NotStronglyConnectedError(f"{self.topology.name} has no path {u} -> {v}",
                                            pair=(int(u), int(v)))

    def link_path(self, u, v):
        """The links of the route ``u -> v`` in order (empty for ``u == v``)."""
        u, v = int(u), int(v)
        self._check_pair(u, v)
        out = []
        dst = self.topology.dst
        while u != v:
            link = int(self.next_link[u, v])
            out.append(link)
            u = int(dst[link])
        return out

    def node_path(self, u, v):
        """The nodes of the route ``u -> v``, both ends included."""
        links = self.link_path(u, v)
        return [int(u)] + [int(self.topology.dst[i]) for i in links]

    def loads(self, src, dst, nbytes):
        """Bytes each link carries when every message ``src[i] -> dst[i]`` of ``nbytes[i]``
        bytes follows its route: a float array with one entry per topology link.

        All messages advance one hop per round, so the work is (messages x longest route),
        not a Python loop over paths.

        >>> from topocoll.topology import topology
        >>> t = topology("ring:4")
        >>> r = shortest_routes(t)
        >>> load = r.loads([0, 1], [2, 2], [5.0, 1.0])
        >>> {(int(t.src[i]), int(t.dst[i])): float(load[i]) for i in load.nonzero()[0]}
        {(0, 1): 5.0, (1, 2): 6.0}
        """
        src = np.asarray(src, dtype=np.int64).ravel()
        dst = np.asarray(dst, dtype=np.int64).ravel()
        nbytes = np.broadcast_to(np.asarray(nbytes, dtype=np.float64), src.shape)
        load = np.zeros(self.topology.num_links)
        at, weight = src.copy(), nbytes.copy()
        for _ in range(self.topology.num_nodes):
            moving = at != dst
            if not moving.any():
                return load
            at, goal, weight = at[moving], dst[moving], weight[moving]
            links = self.next_link[at, goal]
            if np.any(links < 0):
                i = int(np.flatnonzero(links < 0)[0])
                raise NotStronglyConnectedError(
                    f"{self.topology.name} has no path {int(at[i])} -> {int(goal[i])}",
                    pair=(int(at[i]), int(goal[i])))
            np.add.at(load, links, weight)
            at, dst = self.topology.dst[links], goal
        return load


def routes_of(topology, routing):
    """The :class:`Routes` of ``topology`` under the policy ``routing`` (one of
    :data:`ROUTINGS`), computed once per topology object.

    >>> from topocoll.topology import topology
    >>> t = topology("torus:4x4")
    >>> routes_of(t, "shortest") is routes_of(t, "shortest")
    True
    """
    if routing not in ROUTINGS:
        raise InputTypeError(f"routing must be one of {', '.join(ROUTINGS)}, got {routing!r}")
    make = dimension_order_routes if routing == "xy" else shortest_routes
    return topology._cached(("routes", routing), lambda: make(topology))


_LATTICE_NAME = re.compile(r"^(mesh|torus|ring):(\d+(?:x\d+)*)(?::double)?$")


def lattice_dims(topology):
    """``(dims, wrap)`` of a mesh, torus or ring by its meta, or by its name when it has no
    family (read from a file), node ids mixed-radix, first dimension most significant; None
    for any other topology.

    >>> from topocoll.topology import topology
    >>> lattice_dims(topology("torus:3x4")), lattice_dims(topology("kautz:2,2"))
    (([3, 4], True), None)
    """
    meta = topology.meta
    family = meta.get("family")
    named = _LATTICE_NAME.match(topology.name or "")
    if family == "ring":
        dims, wrap = [int(meta.get("n", topology.num_nodes))], True
    elif family in ("mesh", "torus") and meta.get("dims"):
        dims, wrap = [int(d) for d in meta["dims"]], family == "torus"
    elif family is None and named:     # a topology read from a file keeps its name only
        dims, wrap = [int(d) for d in named.group(2).split("x")], named.group(1) != "mesh"
    else:
        return None
    if int(np.prod(dims)) != topology.num_nodes:
        return None
    return dims, wrap


def dimension_order_routes(topology):
    """:class:`Routes` of dimension-order ("xy") routing on a mesh, torus or ring: a message
    corrects its first coordinate, then the second, and so on, the short way round a torus
    dimension (up on a tie), on the lowest-numbered link of each hop.

    On these families the lowest-numbered shortest routes are the same
    (:func:`shortest_routes`; the links are listed dimension by dimension); this policy states
    it and refuses any other topology.

    Examples
    --------
    >>> from topocoll.topology import topology
    >>> dimension_order_routes(topology("mesh:3x3")).node_path(0, 8)
    [0, 3, 6, 7, 8]
    >>> dimension_order_routes(topology("hypercube:3"))
    Traceback (most recent call last):
    ...
    topocoll.errors.UnsupportedError: xy routing needs a mesh, torus or ring (lattice coordinates); hypercube:3 is none
    """
    found = lattice_dims(topology)
    if found is None:
        raise UnsupportedError(f"xy routing needs a mesh, torus or ring (lattice coordinates); "
                               f"{topology.name} is none")
    dims, wrap = found
    n = topology.num_nodes
    require_memory(24 * n * n, f"the routing tables of {topology.name} ({n} nodes)")
    stride = np.cumprod([1] + dims[::-1])[:-1][::-1]
    ids = np.arange(n, dtype=np.int64)
    digit = [(ids // st) % d for st, d in zip(stride, dims)]
    nxt = np.full((n, n), -1, dtype=np.int64)    # next node on the way u -> v
    hops = np.zeros((n, n), dtype=np.int64)
    for st, d, c in zip(stride, dims, digit):
        up = (c[None, :] - c[:, None]) % d if wrap else c[None, :] - c[:, None]
        if wrap:
            step = np.where(up == 0, 0, np.where(up <= d - up, 1, -1))
            hops += np.minimum(up, d - up)
        else:
            step = np.sign(up)
            hops += np.abs(up)
        todo = (nxt < 0) & (step != 0)
        w = ids[:, None] + (((c[:, None] + step) % d) - c[:, None]) * st
        nxt[todo] = w[todo]
    key = topology.src.astype(np.int64) * n + topology.dst
    order = np.argsort(key, kind="stable")
    want = np.arange(n)[:, None] * n + nxt
    pos = np.clip(np.searchsorted(key[order], want), 0, max(key.size - 1, 0))
    link = np.where(nxt >= 0, order[pos], -1)
    if np.any((nxt >= 0) & (key[link] != want)):
        raise UnsupportedError(f"xy routing: {topology.name} lacks a lattice link (a mesh, "
                               "torus or ring with links removed has no dimension-order routes)")
    nxt, hops = link.astype(np.int32), hops.astype(np.int32)
    for table in (nxt, hops):
        table.flags.writeable = False
    return Routes(topology, nxt, hops)


def shortest_routes(topology):
    """:class:`Routes` along shortest paths, the lowest-numbered link first at every hop.

    Parameters
    ----------
    topology : Topology
        Any topology, switches included (they forward). Pairs with no path get -1 entries;
        :meth:`Routes.link_path` and :meth:`Routes.loads` refuse them by name.

    Examples
    --------
    >>> from topocoll.topology import topology
    >>> shortest_routes(topology("uniring:4")).node_path(1, 0)
    [1, 2, 3, 0]
    """
    n = topology.num_nodes
    require_memory(12 * n * n, f"the routing tables of {topology.name} ({n} nodes)")
    dist = np.asarray(distance_matrix(topology), dtype=np.int64)   # [u, v], -1 unreachable
    nxt = np.full((n, n), -1, dtype=np.int32)
    # links in decreasing index order, so that the lowest-numbered candidate is written last
    for link in range(topology.num_links - 1, -1, -1):
        u, w = int(topology.src[link]), int(topology.dst[link])
        if u == w:
            continue
        closer = (dist[w] >= 0) & (dist[u] == dist[w] + 1)
        nxt[u, closer] = link
    np.fill_diagonal(nxt, -1)
    hops = dist.astype(np.int32)
    for table in (nxt, hops):
        table.flags.writeable = False
    return Routes(topology, nxt, hops)
