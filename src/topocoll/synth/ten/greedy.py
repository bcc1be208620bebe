"""Greedy link-chunk matching on the time-expanded network (TACOS-Greedy, docs/math.md
section 5).

The problem is given in the raw TEN form shared with the ILP (:mod:`topocoll.synth.ten`):
directed links ``link_src -> link_dst`` that carry one chunk at a time for ``link_steps`` TEN
slots, and boolean matrices ``pre[c, n]`` / ``post[c, n]``: node ``n`` holds chunk ``c`` at slot
0 / must hold it at the end. A send of chunk ``c`` on link ``l`` starting at slot ``t`` needs the
sender to hold ``c`` at slot ``t`` and makes the receiver hold it at slot ``t + link_steps[l]``.

Two kinds of chunks are matched, slot after slot, until the postcondition holds:

* *flooding* chunks (wanted by several nodes: allgather, broadcast) spread like gossip. Every
  free link ``u -> v`` gets one chunk that ``u`` holds and ``v`` still needs and is not already
  receiving; the links into one node never pick the same chunk. Among candidates a link prefers
  chunks that few of the receiver's in-neighbours hold (only this sender can deliver them soon),
  then a seeded random choice. Node state is a bitset of ``uint64`` words, and every free link
  of a slot is processed at once: the links into one node are served in rounds (shortest link
  first), one link per node per round. On links of mixed speeds the slower links bind late
  and chunks are chosen by when another copy could arrive (:mod:`.latebind`). The state
  and its passes: :mod:`.greedy_flood`, on the bitsets of :mod:`.bitsets`.
* *routed* chunks (wanted by one node: scatter, gather, alltoall) travel as one copy along links
  that strictly shorten their remaining (TEN-weighted) distance; chunks with the longest way to
  go are matched first, and each slot's link-chunk pairs form a greedy matching
  (:mod:`.greedy_routed`).

The result is a causal schedule by construction: a chunk is only sent by a node that holds it.

The state is kept lean for large networks (a 128x128 mesh all-gather is 268 million sends):
the bitset of what each node still needs is kept up to date rather than recomputed every slot,
and so are the tiers, from a chunk-major table of how many in-neighbours of each node hold each
chunk (updated as chunks arrive); the links' chunk choices run over blocks of rows that stay in
the cache, on worker threads for large problems (``threads``); the sends are held as 16- or
32-bit ids until the end (:class:`~.greedy_sends.Sends`) and handed over block by block
(:meth:`GreedyResult.event_blocks`). The choices, and so the schedules, are the same as those
of the plain algorithm, for any number of threads.

>>> import numpy as np
>>> src, dst = np.array([0, 1, 2]), np.array([1, 2, 0])          # uniring:3
>>> pre = np.eye(3, dtype=bool); post = np.ones((3, 3), dtype=bool)   # allgather
>>> r = greedy_events(3, src, dst, np.ones(3, dtype=int), pre, post, seed=0)
>>> r.makespan, len(r.events)
(2, 6)
"""

import os

import numpy as np

from ...errors import NotStronglyConnectedError, UnsupportedError
from ...topology.paths import distances
from ...units import whole_number
from .greedy_flood import Flood, in_table
from .greedy_routed import Routed
from .greedy_sends import EVENT_DTYPE, Sends
from .latebind import LateLinks

__all__ = ["greedy_events", "GreedyResult", "EVENT_DTYPE", "check_ten_problem", "RULES"]

#: How a link that binds its chunk at the start chooses it on links of mixed speeds: "tiers"
#: (chunks few of the receiver's in-neighbours hold first) or "latest" (the chunk whose nearest
#: other copy would arrive last first). Uniform links always use "tiers".
RULES = ("tiers", "latest")


class GreedyResult:
    """What :func:`greedy_events` found.

    Attributes
    ----------
    events : numpy structured array of :data:`EVENT_DTYPE`
        The sends, ordered by start slot (made from the compact sends when first read).
    makespan : int
        The last arrival slot (0 if nothing had to move).
    seed : int
        The seed that made it.
    """

    def __init__(self, sends, makespan, seed):
        self._sends = sends
        self._events = None
        self.makespan = int(makespan)
        self.seed = int(seed)

    @property
    def events(self):
        if self._events is None:
            self._events = self._sends.events()
            self._sends = None
        return self._events

    @property
    def num_events(self):
        return int(self._events.size if self._events is not None else self._sends.size)

    @property
    def ordered(self):
        """True if the sends were made in start order (so :meth:`event_blocks` are too)."""
        return self._events is not None or self._sends.ordered

    def event_blocks(self, rows):
        """The events in blocks of at most ``rows``, in the order made; the compact sends
        are let go as they are handed over, so read them once (or read :attr:`events`)."""
        if self._events is not None:
            for lo in range(0, self._events.size, rows):
                yield self._events[lo:lo + rows]
            return
        sends, self._sends = self._sends, None
        if sends is None:
            raise UnsupportedError("the greedy's sends were handed over already")
        yield from sends.blocks(rows)


def check_ten_problem(num_nodes, link_src, link_dst, link_steps, pre, post):
    """Validate and normalise a raw TEN problem; returns the arrays as int64/bool."""
    whole_number(num_nodes, "num_nodes")
    src = np.asarray(link_src, dtype=np.int64).ravel()
    dst = np.asarray(link_dst, dtype=np.int64).ravel()
    steps = np.asarray(link_steps, dtype=np.int64).ravel()
    if not (src.size == dst.size == steps.size):
        raise UnsupportedError("link_src, link_dst and link_steps must have one entry per link")
    if src.size and (src.min() < 0 or dst.min() < 0 or max(src.max(), dst.max()) >= num_nodes):
        raise UnsupportedError(f"link endpoints must be nodes 0..{num_nodes - 1}")
    if steps.size and steps.min() < 1:
        raise UnsupportedError("link_steps must be >= 1 (a send takes at least one slot)")
    pre = np.asarray(pre, dtype=bool)
    post = np.asarray(post, dtype=bool)
    if pre.ndim != 2 or pre.shape != post.shape or pre.shape[1] != num_nodes:
        raise UnsupportedError("pre and post must be boolean arrays of shape "
                               f"(num_chunks, {num_nodes}), got {pre.shape} and {post.shape}")
    missing = post.any(axis=1) & ~pre.any(axis=1)
    if np.any(missing):
        raise UnsupportedError(f"chunk {int(np.flatnonzero(missing)[0])} is wanted but held by "
                               "no node at the start")
    return int(num_nodes), src, dst, steps, pre, post


def greedy_events(num_nodes, link_src, link_dst, link_steps, pre, post, *, seed=0,
                  blocked=None, rule="tiers", progress=None, threads=None):
    """Synthesize a schedule on the TEN by greedy link-chunk matching.

    Parameters
    ----------
    num_nodes : int
    link_src, link_dst : int arrays (L,)
        The directed links.
    link_steps : int array (L,)
        TEN slots a chunk occupies each link (>= 1).
    pre, post : bool arrays (num_chunks, num_nodes)
        Who holds each chunk at slot 0, who must hold it at the end.
    seed : int
        Seeds the tie-breaking (chunk choice and link order); same seed, same result.
    blocked : bool array (L, H), optional
        ``blocked[l, s]``: link ``l`` is taken at slot ``s`` by someone else (multi-tenant
        synthesis); a send may only start where its whole duration is free.
    rule : {"tiers", "latest"}
        How links that pick their chunk when they start choose it on links of mixed speeds
        (:data:`RULES`); ignored on uniform links.
    progress : callable, optional
        ``progress(done, total)`` in delivered chunk copies.
    threads : int, optional
        Threads for the bitset passes of flooding chunks (the same result for any number);
        default: up to :data:`MAX_THREADS` of the machine's cores on large problems, else 1.

    Returns
    -------
    GreedyResult

    Raises
    ------
    NotStronglyConnectedError
        If some wanted chunk cannot reach a node that must hold it.
    """
    n, src, dst, steps, pre, post = check_ten_problem(num_nodes, link_src, link_dst,
                                                      link_steps, pre, post)
    _check_choices(rule, threads)
    rng = np.random.default_rng(seed)
    flood, routed = _parts(n, (src, dst, steps), pre, post, rng, rule=rule, threads=threads)
    run = _Run(flood, routed, (src, dst, steps), pre.shape[0],
               None if blocked is None else _start_windows(blocked, src.size, steps))
    try:
        run.slots(progress)
    finally:
        if flood is not None and flood.pool is not None:
            flood.pool.shutdown()
    return GreedyResult(run.sends, run.sends.makespan, int(seed))


def _check_choices(rule, threads):
    if rule not in RULES:
        raise UnsupportedError(f"unknown rule {rule!r}; choose one of {', '.join(RULES)}")
    if threads is not None:
        whole_number(threads, "threads")


def _parts(n, links, pre, post, rng, *, rule, threads):
    """``(flood, routed)``: the state of the chunks wanted by several nodes and of those wanted
    by one (None where there are none); an error where some node cannot get a chunk."""
    src, dst, steps = links
    todo = post & ~pre
    single = post.sum(axis=1) == 1
    routed_ids = np.flatnonzero(single & todo.any(axis=1))
    flood_ids = np.flatnonzero(~single & todo.any(axis=1))
    _check_reachable(n, src, dst, pre, todo, flood_ids)
    flood = routed = None
    if flood_ids.size:
        pairs = np.unique(dst * n + src)
        chunks = rng.permutation(flood_ids)
        mixed = steps.size and steps.min() != steps.max()
        late = LateLinks(pre[chunks], src, dst, steps, rng) if mixed else None
        pool = _thread_pool(threads, n * ((chunks.size + 63) // 64))
        flood = Flood(chunks, pre, post, n, out_nbrs=in_table(n, pairs % n, pairs // n),
                      in_links=in_table(n, dst, np.arange(src.size)), rng=rng, late=late,
                      rule=rule, pool=pool)
    if routed_ids.size:
        routed = Routed(routed_ids, pre, post, n, src, dst, steps, rng)
    return flood, routed


def _start_windows(blocked, num_links, steps):
    """``can_start[l, s]``: a send on link ``l`` may start at slot ``s`` (its whole duration
    free of the slots ``blocked``), for the slots of ``blocked``."""
    blocked = np.asarray(blocked, dtype=bool)
    if blocked.ndim != 2 or blocked.shape[0] != num_links:
        raise UnsupportedError(f"blocked must have shape ({num_links}, H)")
    horizon = blocked.shape[1]
    pad = np.zeros((num_links, int(steps.max(initial=1)) + 1), dtype=bool)
    occ = np.concatenate([blocked, pad], axis=1).astype(np.int64)
    csum = np.concatenate([np.zeros((num_links, 1), dtype=np.int64), occ.cumsum(axis=1)], 1)
    s_idx = np.arange(horizon)
    ends = np.minimum(s_idx[None, :] + steps[:, None], occ.shape[1])
    return (csum[np.arange(num_links)[:, None], ends] - csum[:, s_idx]) == 0


class _Run:
    """The slots of one greedy run: arrivals land, late links bind, free links are matched,
    until every wanted chunk is where it is wanted."""

    def __init__(self, flood, routed, links, num_chunks, can_start):
        self.flood, self.routed = flood, routed
        self.parts = [p for p in (flood, routed) if p is not None]
        self.src, self.dst, self.steps = links
        self.can_start = can_start
        self.late = flood is not None and flood.late is not None
        self.busy = np.zeros(self.src.size, dtype=np.int64)
        self.arrivals = {}                  # slot -> [(routed?, nodes, chunk ids)]
        self.sends = Sends(num_chunks, self.src.size)

    def slots(self, progress):
        """Match slot after slot until nothing is missing."""
        total = sum(p.missing() for p in self.parts)
        t = 0
        remaining = total
        while remaining:
            out = self.slot(t)
            remaining = sum(p.missing() for p in self.parts)
            if progress is not None and total:
                progress(total - remaining, total)
            if not remaining:
                break
            t = self.next_slot(t, out)

    def slot(self, t):
        """Slot ``t``: arrivals, late bindings, then the free links' matches (returned)."""
        src, dst, steps = self.src, self.dst, self.steps
        busy, can_start = self.busy, self.can_start
        for kind, v, ident in self.arrivals.pop(t, ()):
            (self.routed if kind else self.flood).arrive(v, ident)
        if self.late:
            for sent in self.flood.bind(t, src, dst, steps):
                self.sends.add(*sent)
        free = busy <= t
        if can_start is not None and t < can_start.shape[1]:
            free &= can_start[:, t]
        out = []
        for part in self.parts:
            if not free.any():
                break
            used = part.match(t, free, src, dst, steps, out)
            if used.size:
                free[used] = False
                busy[used] = t + steps[used]
        for chunk, l, start, arrive, v, ident, is_routed in out:
            self.sends.add(chunk, l, start, arrive)
            kind = bool(is_routed[0])
            for slot in np.unique(arrive):
                m = arrive == slot
                self.arrivals.setdefault(int(slot), []).append((kind, v[m], ident[m]))
        return out

    def next_slot(self, t, out):
        """The next slot where something can happen; an error where nothing ever can."""
        busy, can_start = self.busy, self.can_start
        nxt = [s for s in self.arrivals if s > t]
        if self.late:
            nxt += self.flood.late.next_slots(self.steps)
        later = busy[busy > t]
        if not nxt and not out and (can_start is None or t >= can_start.shape[1]):
            raise NotStronglyConnectedError("greedy synthesis is stuck: some wanted chunk "
                                            "cannot travel on")
        candidates = nxt + ([int(later.min())] if later.size else [])
        if can_start is not None and t + 1 < can_start.shape[1]:
            candidates.append(t + 1)  # blocked windows open at any slot
        return min(candidates) if candidates else t + 1


#: Threads the greedy uses at most by default, and the bitset words (nodes x chunk words)
#: from which it uses more than one: below that, handing blocks to threads costs more than
#: it saves.
MAX_THREADS = 4
_THREAD_WORDS = 1 << 20


def _thread_pool(threads, words):
    """A pool of ``threads`` workers (default: by the problem's ``words``), or None for one."""
    if threads is None:
        threads = min(MAX_THREADS, os.cpu_count() or 1) if words >= _THREAD_WORDS else 1
    if threads <= 1:
        return None
    from concurrent.futures import ThreadPoolExecutor    # imported here: start-up time

    pool = ThreadPoolExecutor(max_workers=int(threads), thread_name_prefix="topocoll-greedy")
    pool.threads = int(threads)
    return pool


def _check_reachable(n, src, dst, pre, todo, flood_ids):
    """Every node that must receive a flooding chunk can be reached from one of its holders."""
    if flood_ids.size == 0:
        return
    if n == 1 or all(np.isfinite(distances(n, src, dst, [0], transpose=back)).all()
                     for back in (False, True)):
        return                    # strongly connected: every node reaches every node
    # small or broken networks only: check per distinct holder set
    seen = {}
    for c in flood_ids:
        holders = np.flatnonzero(pre[c])
        key = holders.tobytes()
        if key not in seen:
            seen[key] = np.isfinite(distances(n, src, dst, holders, min_only=True))
        bad = np.flatnonzero(todo[c] & ~seen[key])
        if bad.size:
            raise NotStronglyConnectedError(
                f"node {int(bad[0])} cannot be reached from node {int(holders[0])}, which holds "
                f"chunk {int(c)}", pair=(int(holders[0]), int(bad[0])))
