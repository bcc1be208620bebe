"""Earliest-arrival list scheduling on the TEN: the upper bound of the ILP (:mod:`.ilp`), its
early-termination completion, and the pruning and packing of schedules that the ILP and the
repair (:mod:`.repair`) share.

A schedule here is a list of ``(chunk, link, start)`` tuples; :func:`as_events` packs one into
the structured array :data:`~topocoll.synth.ten.greedy.EVENT_DTYPE`.

>>> import numpy as np
>>> src, dst, steps = np.array([0, 1]), np.array([1, 2]), np.ones(2, np.int64)  # path 0 -> 2
>>> pre = np.array([[True, False, False]]); post = np.ones((1, 3), bool)
>>> ev = complete_events([], pre, post, src, dst, steps, out_links(3, src), [(0, 2)])
>>> ev, makespan(ev, steps)
([(0, 1, 1), (0, 0, 0)], 2)
>>> as_events(ev).tolist()
[(0, 0, 0), (0, 1, 1)]
"""

import bisect
import heapq

import numpy as np

from .greedy import EVENT_DTYPE
from .ilp_bounds import INF

__all__ = ["TRIALS", "Occupancy", "complete_events", "prune", "as_events", "makespan",
           "orders", "out_links", "list_schedule"]

#: Routing orders tried by the list-scheduling upper bound.
TRIALS = 8


class Occupancy:
    """Start slots already booked on every link (each booking lasts ``steps[l]`` slots)."""

    def __init__(self, steps, events=()):
        self.steps = steps
        self.starts = [[] for _ in range(steps.size)]
        for _, l, s in events:
            bisect.insort(self.starts[l], s)

    def earliest(self, l, t):
        """First slot ``>= t`` at which ``l`` is free for ``steps[l]`` slots."""
        k = int(self.steps[l])
        booked = self.starts[l]
        i = max(bisect.bisect_right(booked, t - k), 0)
        s = t
        while i < len(booked) and booked[i] < s + k:
            s = max(s, booked[i] + k)
            i += 1
        return s

    def book(self, l, s):
        """Book link ``l`` from slot ``s``."""
        bisect.insort(self.starts[l], s)


def complete_events(events, pre, post, src, dst, steps, links_out, order):
    """Add sends so that ``post`` holds: every missing ``(c, m)`` in ``order`` is routed along
    an earliest-arrival path (time-dependent Dijkstra over the free link slots) from the nodes
    that hold ``c`` by then. ``events`` is a list of ``(chunk, link, start)``, extended and
    returned; ``links_out`` is :func:`out_links`."""
    occ = Occupancy(steps, events)
    have = np.where(pre, 0, INF).astype(np.int64)
    for c, l, s in events:
        have[c, dst[l]] = min(have[c, dst[l]], s + steps[l])
    for c, m in order:
        if have[c, m] < INF:
            continue
        label = have[c].tolist()
        pred = {}
        heap = [(t, n) for n, t in enumerate(label) if t < INF]
        heapq.heapify(heap)
        while heap:
            t, u = heapq.heappop(heap)
            if t > label[u]:
                continue
            if u == m:
                break
            for l in links_out[u]:
                s = occ.earliest(l, t)
                a = s + int(steps[l])
                v = int(dst[l])
                if a < label[v]:
                    label[v] = a
                    pred[v] = (l, s)
                    heapq.heappush(heap, (a, v))
        v = m
        while v in pred:
            l, s = pred[v]
            events.append((int(c), int(l), int(s)))
            occ.book(l, s)
            have[c, v] = min(have[c, v], s + int(steps[l]))
            v = int(src[l])
    return events


def prune(events, pre, post, src, dst, steps):
    """Keep only sends some needed delivery depends on: the first arrival of each (chunk,
    node) and, backwards, the arrivals its sends rely on. Returns a list of tuples."""
    first = {}
    for c, l, s in events:
        n = int(dst[l])
        if pre[c, n]:
            continue
        a = s + int(steps[l])
        if (c, n) not in first or a < first[(c, n)][0]:
            first[(c, n)] = (a, (c, l, s))
    needed = post & ~pre
    kept = []
    for (c, n), (a, ev) in sorted(first.items(), key=lambda kv: -kv[1][0]):
        if needed[c, n]:
            kept.append(ev)
            u = int(src[ev[1]])
            if not pre[c, u]:
                needed[c, u] = True
    return kept


def as_events(events):
    """A list of ``(chunk, link, start)`` as an :data:`EVENT_DTYPE` array sorted by start."""
    arr = np.array(sorted((int(s), int(l), int(c)) for c, l, s in events), dtype=np.int64)
    out = np.zeros(len(events), dtype=EVENT_DTYPE)
    if len(events):
        out["start"], out["link"], out["chunk"] = arr[:, 0], arr[:, 1], arr[:, 2]
    return out


def makespan(events, steps):
    """Last arrival slot of a list of ``(chunk, link, start)`` (0 when empty)."""
    return max((s + int(steps[l]) for _, l, s in events), default=0)


def orders(first, need, rng, trials):
    """Routing orders for list scheduling: farthest deliveries first (the critical ones, by
    the earliest holds ``first``), then seeded random tie-breaks and fully random orders."""
    pairs = np.argwhere(need)
    if pairs.size == 0:
        return [[]]
    far = first[need]
    out = [pairs[np.lexsort((pairs[:, 0], -far))].tolist()]
    for i in range(1, trials):
        key = rng.random(len(pairs))
        idx = np.lexsort((key, -far)) if i % 2 else rng.permutation(len(pairs))
        out.append(pairs[idx].tolist())
    return out


def out_links(num_nodes, src):
    """Per node, the links leaving it."""
    out = [[] for _ in range(num_nodes)]
    for l, u in enumerate(src.tolist()):
        out[u].append(l)
    return out


def list_schedule(pre, post, need, first, *, src, dst, steps, links_out, rng, trials, start=()):
    """The best of ``trials`` list schedules (routing :func:`orders`), each completing the
    partial schedule ``start`` and pruned: ``(events, makespan)``. ``pre, post, need, first``
    are positional; the links (``src, dst, steps, links_out``), ``rng``, ``trials`` and
    ``start`` are keyword-only."""
    best, best_span = None, INF
    for order in orders(first, need, rng, trials):
        ev = prune(complete_events(list(start), pre, post, src, dst, steps, links_out,
                                   order), pre, post, src, dst, steps)
        span = makespan(ev, steps)
        if span < best_span:
            best, best_span = ev, span
    return best, best_span
