"""Translation-invariant all-gathers on networks with a translation symmetry (docs/synthesis.md,
"Mixed link speeds").

On a Cayley graph of an abelian group (a torus, also with one bandwidth per dimension; a
hypercube; a circulant), :func:`~topocoll.topology.symmetry.translation_group` finds node
labels under which every translation ``x -> x + v`` maps links onto links of the same speed.
An all-gather may then be made of one schedule for the chunks of node 0, translated to every
node: node ``v``'s chunk travels the tree of node 0's chunk shifted by ``v``. The translated
sends never collide: the link of label ``g`` out of every node carries, in the same order, the
sends of node 0's tree that use a link of label ``g``. So the links of one label act as a single
server, and the whole all-gather is the broadcast of one chunk (``C`` with ``chunks=C``) from
node 0 over one server per label, each serving its sends one at a time: a problem of N nodes
instead of N chunks x N nodes, small enough to try hundreds of times.

Each try is an event-driven list schedule over exact chunk times (seconds, not slots): a free
server starts a send as soon as some node it can reach from a holder lacks the chunk. The
tries alternate two rules: the fastest links choose that node at the start and the slower
links when the send arrives (among the nodes they could reach from what was held when it
started: *late binding*, as in :mod:`.latebind`, so that a slow link does not claim a node a
fast link reaches first), or every link binds late. Ties are broken by random priorities per
server and node, one draw per try; the best try is kept and the search stops at ``goal``
seconds. The sends are then placed on the TEN's slots, each as
soon as its server and chunk allow, in the order of the exact schedule, so the link model
(which also runs each link's sends in order, as soon as possible) takes at most the try's time.

On a 4x4x4 torus with 100/25/25 GiB/s dimensions at 10 us latency the greedy with all its
restarts and repairs ends at 1.039x the chunk bound; about one try in five (of either rule) is
at the bound here. Neither rule wins everywhere (measured, 200-300 tries each): on the 6x6
torus with 100/25 GiB/s at 10 us only every link binding late reaches the bound (8 tries in
300), on the 4x8 torus with 50/25 GiB/s the first rule hits it twice as often.

>>> from topocoll.topology import topology
>>> from topocoll.topology.families.lattice import with_dimension_bandwidth
>>> from topocoll.synth.ten import chunk_lower_bound, ten_problem
>>> t = with_dimension_bandwidth(topology("torus:4x4", latency=0.0), [4.0, 1.0])
>>> p = ten_problem(t, "allgather", size=16.0)      # 1-byte chunks: 0.25 s and 1 s a link
>>> r = symmetric_events(t, p.link_cost, p.link_steps, 1, goal=chunk_lower_bound(p))
>>> r.time, chunk_lower_bound(p), r.tries, r.events.size     # 16 x 15 sends
(2.5, 2.5, 1, 240)
"""

import heapq
from dataclasses import dataclass

import numpy as np

from ...errors import NotStronglyConnectedError
from ...topology.symmetry import translation_group
from .greedy_sends import EVENT_DTYPE

__all__ = ["symmetric_events", "symmetric_representatives", "translation_servers",
           "SymmetricResult", "SymmetricRows", "TRIES", "TRY_WORK",
           "MIN_TRIES", "MAX_WORK"]

#: Most tries (random priority draws) of one search.
TRIES = 256
#: Chunks x nodes x link labels over all the tries of one search at most (but at least
#: :data:`MIN_TRIES` tries): all :data:`TRIES` up to 512 units (an 8x8 torus is 256, a 4x4x4
#: torus 384), 32 tries on a 32x32 torus.
TRY_WORK = 2**17
MIN_TRIES = 8
#: Most chunks x nodes x servers for which the search runs (a 32x32 torus is 2**12; a try
#: takes a few microseconds per unit, in Python).
MAX_WORK = 2**12
_TOL = 1e-9


@dataclass
class SymmetricResult:
    """Outcome of :func:`symmetric_events`.

    Attributes
    ----------
    events : numpy structured array (chunk, link, start)
        The translated schedule on the TEN's slots.
    makespan : int
        Its last arrival slot.
    time : float
        The best try's end in seconds (the link model takes at most this).
    tries : int
        Tries made.
    """

    events: np.ndarray
    makespan: int
    time: float
    tries: int


def translation_servers(topology, link_cost):
    """The servers of a translation-invariant network: ``(group, label, cost, link_of)`` with
    one entry per link out of node 0 (its label ``dst``, its chunk time) and ``link_of[x, s]``
    the link of server ``s`` out of node ``x``; None if the network has no translation
    symmetry under which the chunk times are invariant too."""
    t = topology
    group = translation_group(t)
    if group is None or t.num_links == 0:
        return None
    src, dst = t.src.astype(np.int64), t.dst.astype(np.int64)
    cost = np.asarray(link_cost, dtype=float)
    keep = src != dst
    if not keep.all():
        return None
    label = group.subtract(dst, src)
    # parallel links of one label: the k-th out of every node is one server
    order = np.lexsort((np.arange(src.size), label, src))
    first = np.r_[True, (src[order][1:] != src[order][:-1]) |
                  (label[order][1:] != label[order][:-1])]
    run_start = np.maximum.accumulate(np.where(first, np.arange(src.size), 0))
    rank = np.empty(src.size, np.int64)
    rank[order] = np.arange(src.size) - run_start
    out0 = np.flatnonzero(src == 0)
    out0 = out0[np.lexsort((rank[out0], label[out0]))]
    server = {(int(g), int(k)): s for s, (g, k) in enumerate(zip(label[out0], rank[out0]))}
    sid = np.array([server.get((int(g), int(k)), -1) for g, k in zip(label, rank)])
    if np.any(sid < 0) or np.bincount(sid, minlength=out0.size).min() != t.num_nodes:
        return None
    if not np.allclose(cost, cost[out0][sid], rtol=1e-12, atol=0.0):
        return None
    link_of = np.full((t.num_nodes, out0.size), -1, np.int64)
    link_of[src, sid] = np.arange(src.size)
    return group, label[out0], cost[out0], link_of


def symmetric_events(topology, link_cost, link_steps, chunks, goal, *, seed=0, tries=None,
                     servers=None):
    """A translation-invariant all-gather of ``chunks`` chunks per node, or None.

    Parameters
    ----------
    topology : Topology
    link_cost : float array
        Seconds one chunk occupies each link.
    link_steps : int array
        TEN slots of each link (the events are placed on them).
    chunks : int
        Chunks per node (chunk ``v * chunks + j`` is part ``j`` of node ``v``'s shard).
    goal : float
        Stop at the first try that ends by this time (seconds; a lower bound).
    seed : int
        Seeds the priority draws; same seed, same schedule.
    tries : int, optional
        Most tries (default: :data:`TRIES`, fewer above :data:`TRY_WORK`, at least
        :data:`MIN_TRIES`); even tries let the slower links bind late, odd ones every link.
    servers : tuple, optional
        :func:`translation_servers` of the topology, if known.

    Returns None if the network has no translation symmetry (see :func:`translation_servers`)
    or the problem is larger than :data:`MAX_WORK`. The explicit events number ``chunks`` x N
    x (N - 1); :func:`symmetric_representatives` returns the N times fewer rows into node 0.
    """
    found = _search(topology, link_cost, chunks, goal, seed, tries, servers, MAX_WORK)
    if found is None:
        return None
    (group, label, cost, link_of), parent, end, sends, made = found
    n, c = topology.num_nodes, int(chunks)
    steps = np.asarray(link_steps, np.int64)
    part, node, srv, start = _place(sends, c, n, steps[link_of[0]], parent)
    origin = np.arange(n)
    sender = group.add(parent[srv, node][:, None], origin[None, :])       # (sends, n)
    events = np.zeros(part.size * n, dtype=EVENT_DTYPE)
    events["chunk"] = (origin[None, :] * c + part[:, None]).ravel()
    events["link"] = link_of[sender, srv[:, None]].ravel()
    events["start"] = np.repeat(start, n)
    order = np.argsort(events["start"], kind="stable")
    makespan = int((start + steps[link_of[0]][srv]).max())
    return SymmetricResult(events[order], makespan, float(end), made)


@dataclass
class SymmetricRows:
    """Outcome of :func:`symmetric_representatives`: the sends into node 0 of a
    translation-invariant all-gather (its orbit representatives).

    Attributes
    ----------
    group : TranslationGroup
    start : int array
        TEN start slot of each send (its transfer is in step ``start + 1``).
    src : int array
        The sender (``-label`` of the send's link).
    shard : int array
        The shard carried (the node it started at).
    part : int array
        Which of the ``chunks`` parts of the shard.
    makespan : int
        The last arrival slot.
    time : float
        The best try's end in seconds (the link model takes at most this).
    tries : int
    """

    group: object
    start: np.ndarray
    src: np.ndarray
    shard: np.ndarray
    part: np.ndarray
    makespan: int
    time: float
    tries: int


def symmetric_representatives(topology, link_cost, link_steps, chunks, goal, *, seed=0,
                              tries=None, servers=None):
    """The all-gather of :func:`symmetric_events` as its orbit representatives, the sends into
    node 0: ``chunks`` x (N - 1) rows where the explicit form has N times as many; None if the
    network has no translation symmetry. No size limit: one try is a list schedule of
    ``chunks`` x N sends (a 128x128 torus: about a second).

    >>> from topocoll.synth.ten import chunk_lower_bound, ten_problem
    >>> p = ten_problem("torus:4x4", "allgather")
    >>> r = symmetric_representatives(p.topology, p.link_cost, p.link_steps, 1,
    ...                               goal=chunk_lower_bound(p))
    >>> r.src.size, r.makespan       # 15 sends into node 0 over 4 in-links: 4 slots
    (15, 4)
    """
    found = _search(topology, link_cost, chunks, goal, seed, tries, servers, None)
    if found is None:
        return None
    (group, label, cost, link_of), parent, end, sends, made = found
    n, c = topology.num_nodes, int(chunks)
    server_steps = np.asarray(link_steps, np.int64)[link_of[0]]
    part, node, srv, start = _place(sends, c, n, server_steps, parent)
    # the send (node 0's part, parent -> node) translated by -node: into node 0
    src = group.subtract(0, label[srv])
    shard = group.subtract(0, node)
    order = np.argsort(start, kind="stable")
    makespan = int((start + server_steps[srv]).max()) if start.size else 0
    return SymmetricRows(group, start[order], src[order], shard[order], part[order], makespan,
                         float(end), made)


def _search(topology, link_cost, chunks, goal, seed, tries, servers, max_work):
    """The tries of :func:`symmetric_events`: ``(servers, parent, end, sends, tries made)`` of
    the best, None without a translation symmetry or above ``max_work`` (None: no limit)."""
    if servers is None:
        servers = translation_servers(topology, link_cost)
    if servers is None:
        return None
    group, label, cost, link_of = servers
    n, c = topology.num_nodes, int(chunks)
    if max_work is not None and c * n * cost.size > max_work:
        return None
    nodes = np.arange(n)
    child = np.stack([group.add(nodes, g) for g in label])          # (servers, n)
    parent = np.stack([group.subtract(nodes, g) for g in label])
    if tries is None:
        tries = min(TRIES, max(MIN_TRIES, TRY_WORK // (c * n * cost.size)))
    rules = (cost > cost.min() * (1 + _TOL), np.ones(cost.size, dtype=bool))
    rng = np.random.default_rng(seed)
    best, made = None, 0
    for i in range(int(tries)):
        made += 1
        sends = _try(n, c, cost, rules[i % 2], child, parent, rng.random((cost.size, c, n)))
        end = max(e for *_, e in sends) if sends else 0.0
        if best is None or end < best[0] * (1 - 1e-12):
            best = (end, sends)
        if best[0] <= goal * (1 + _TOL):
            break
    return servers, parent, best[0], best[1], made


def _try(n, c, cost, late, child, parent, key):
    """One list schedule of node 0's chunks; returns its sends ``(part, node, server, start,
    end)`` (``node`` receives the part from ``parent[server, node]``)."""
    holders = _Holders(n, c, cost.size, child, parent, key)
    for j in range(c):
        holders.reached(j, 0)
    flight, sends, idle, now, left, seq = [], [], list(range(cost.size)), 0.0, c * (n - 1), 0
    while left:
        seq = _start_sends(holders, idle, flight, late, cost, now, seq)
        if not flight:
            raise NotStronglyConnectedError("symmetric schedule: node 0's chunks reach no "
                                            "further node (the topology is not strongly "
                                            "connected)")
        now = flight[0][0]
        left -= _land_sends(holders, flight, now, sends, idle)
        idle.sort(key=lambda s: (cost[s], s))
    return sends


class _Holders:
    """One try's state: when each part reaches each node (``arrive``), which (part, node) is
    claimed by a send, and per server a heap of the (part, node) it could serve next."""

    def __init__(self, n, c, num, child, parent, key):
        self.arrive = np.full((c, n), np.inf)
        self.arrive[:, 0] = 0.0
        self.claimed = np.zeros((c, n), dtype=bool)
        self.claimed[:, 0] = True
        self.heaps = [[] for _ in range(num)]        # (-priority, part, node)
        self.num, self.child, self.parent, self.key = num, child, parent, key

    def reached(self, j, x):
        """Part ``j`` is at node ``x``: each server may now carry it on from there."""
        child, claimed, key, heaps = self.child, self.claimed, self.key, self.heaps
        for s in range(self.num):
            y = int(child[s, x])
            if not claimed[j, y]:
                heapq.heappush(heaps[s], (-key[s, j, y], j, y))

    def pick(self, s, start):
        """Best unclaimed node server ``s`` reaches from a holder by ``start``."""
        heap, later, got = self.heaps[s], [], None
        claimed, arrive, parent = self.claimed, self.arrive, self.parent
        while heap:
            item = heapq.heappop(heap)
            _, j, y = item
            if claimed[j, y]:
                continue
            if arrive[j, parent[s, y]] <= start:
                got = (j, y)
                break
            later.append(item)
        for item in later:
            heapq.heappush(heap, item)
        return got

    def ready(self, s):
        """True if server ``s`` has some unclaimed (part, node) left."""
        heap, claimed = self.heaps[s], self.claimed
        while heap and claimed[heap[0][1], heap[0][2]]:
            heapq.heappop(heap)
        return bool(heap)


def _start_sends(holders, idle, flight, late, cost, now, seq):
    """Every idle server that can start a send at ``now`` starts one: a server that binds
    early claims its (part, node) now, one that binds late (``late[s]``) on arrival. Returns
    the next sequence number (ties in ``flight`` go by it)."""
    for s in idle[:]:
        if late[s]:
            if not holders.ready(s):
                continue
            target = None                   # chosen on arrival
        else:
            target = holders.pick(s, now)
            if target is None:
                continue
            holders.claimed[target] = True
        idle.remove(s)
        heapq.heappush(flight, (now + cost[s], seq, s, target, now))
        seq += 1
    return seq


def _land_sends(holders, flight, now, sends, idle):
    """The sends ending at ``now`` land (a late one takes its (part, node) now, if any is
    left); returns how many parts arrived."""
    landed = 0
    while flight and flight[0][0] <= now:
        end, _, s, target, start = heapq.heappop(flight)
        if target is None:
            target = holders.pick(s, start)
            if target is not None:
                holders.claimed[target] = True
        if target is not None:
            j, y = target
            holders.arrive[j, y] = end
            sends.append((j, y, s, start, end))
            landed += 1
            holders.reached(j, y)
        idle.append(s)
    return landed


def _place(sends, c, n, server_steps, parent):
    """Place node 0's sends on slots, each as soon as its server and part allow, in the order
    of their exact starts: arrays ``(part, node, server, start)``."""
    sends = sorted(sends, key=lambda r: (r[3], r[2]))
    free = np.zeros(server_steps.size, np.int64)
    have = np.zeros((c, n), np.int64)
    rows = []
    for j, y, s, _, _ in sends:
        start = max(int(free[s]), int(have[j, parent[s, y]]))
        free[s] = have[j, y] = start + server_steps[s]
        rows.append((j, y, s, start))
    if not rows:
        return tuple(np.zeros(0, np.int64) for _ in range(4))
    return tuple(np.array(col, dtype=np.int64) for col in zip(*rows))
