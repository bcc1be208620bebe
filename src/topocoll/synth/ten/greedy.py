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
  and chunks are chosen by when another copy could arrive (:mod:`.latebind`).
* *routed* chunks (wanted by one node: scatter, gather, alltoall) travel as one copy along links
  that strictly shorten their remaining (TEN-weighted) distance; chunks with the longest way to
  go are matched first, and each slot's link-chunk pairs form a greedy matching.

The result is a causal schedule by construction: a chunk is only sent by a node that holds it.

The state is kept lean for large networks (a 64x64 mesh all-gather is 16.8 million sends): the
bitset of what each node still needs is kept up to date rather than recomputed every slot, the
links' chunk choices run over blocks of rows that stay in the cache, and the sends are held as
32-bit ids until the end (:class:`_Sends`); the choices, and so the schedules, are the same as
before.

>>> import numpy as np
>>> src, dst = np.array([0, 1, 2]), np.array([1, 2, 0])          # uniring:3
>>> pre = np.eye(3, dtype=bool); post = np.ones((3, 3), dtype=bool)   # allgather
>>> r = greedy_events(3, src, dst, np.ones(3, dtype=int), pre, post, seed=0)
>>> r.makespan, len(r.events)
(2, 6)
"""

from dataclasses import dataclass

import numpy as np

from ...errors import InputTypeError, NotStronglyConnectedError, UnsupportedError
from ...topology.paths import distances
from .latebind import LateLinks, unpack_bits

__all__ = ["greedy_events", "GreedyResult", "EVENT_DTYPE", "check_ten_problem", "RULES"]

#: How a link that binds its chunk at the start chooses it on links of mixed speeds: "tiers"
#: (chunks few of the receiver's in-neighbours hold first) or "latest" (the chunk whose nearest
#: other copy would arrive last first). Uniform links always use "tiers".
RULES = ("tiers", "latest")

#: One matched TEN link-chunk pair: ``chunk`` sent on ``link`` starting at slot ``start``.
EVENT_DTYPE = np.dtype([("chunk", "<i8"), ("link", "<i8"), ("start", "<i8")])

_ONE = np.uint64(1)


@dataclass
class GreedyResult:
    """What :func:`greedy_events` found.

    Attributes
    ----------
    events : numpy structured array of :data:`EVENT_DTYPE`
        The sends, ordered by start slot.
    makespan : int
        The last arrival slot (0 if nothing had to move).
    seed : int
        The seed that made it.
    """

    events: np.ndarray
    makespan: int
    seed: int


def check_ten_problem(num_nodes, link_src, link_dst, link_steps, pre, post):
    """Validate and normalise a raw TEN problem; returns the arrays as int64/bool."""
    if isinstance(num_nodes, bool) or not isinstance(num_nodes, (int, np.integer)) \
            or num_nodes < 1:
        raise InputTypeError(f"num_nodes must be a positive integer, got {num_nodes!r}")
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


def _weighted_distances(num_nodes, src, dst, steps, targets):
    """``dist[i, u]``: least TEN slots from ``u`` to ``targets[i]`` (inf if unreachable);
    parallel links: the fastest one counts (numpy on small networks, else scipy's Dijkstra)."""
    return distances(num_nodes, src, dst, targets, weight=np.asarray(steps, dtype=np.float64),
                     transpose=True)


def _pick_bits(rows, rng, num_bits):
    """Per row of ``uint64`` words: one set bit, found from a random place; -1 if none.

    The search starts at a random word and takes the first non-zero word cyclically; inside it,
    the first set bit after a random rotation. Chunk ids were shuffled once per seed, so this is
    a cheap, seeded stand-in for a uniform random choice.
    """
    start, rot = _pick_draws(rng, *rows.shape)
    return _first_bits(rows, start, rot, num_bits)


def _pick_draws(rng, count, width):
    """The random draws of :func:`_pick_bits` for ``count`` rows of ``width`` words: one
    starting word per call (a per-row start costs a 2-D gather; rows still differ by their
    own bit rotation), one rotation per row."""
    start = int(rng.integers(0, width)) if width > 1 else 0
    return start, rng.integers(0, 64, size=count).astype(np.uint64)


def _first_bits(rows, start, rot, num_bits):
    """:func:`_pick_bits` with its draws given (a block of rows at a time)."""
    ar = np.arange(rows.shape[0])
    nz = rows != 0
    wi = nz[:, start:].argmax(axis=1) + start    # first non-zero word from start on, cyclically
    found = nz[ar, wi]
    if start:
        head = nz[:, :start].argmax(axis=1)
        wi = np.where(found, wi, head)
        found = nz[ar, wi]
    word = rows[ar, wi]
    spun = (word >> rot) | (word << ((np.uint64(64) - rot) & np.uint64(63)))
    spun = np.where(rot == 0, word, spun)
    low = spun & (~spun + _ONE)
    bit = np.log2(np.where(found, low, _ONE).astype(np.float64)).astype(np.int64)
    bit = (bit + rot.astype(np.int64)) & 63
    out = wi * 64 + bit
    return np.where(found & (out < num_bits), out, -1)


#: Words (of rows x chunk bitsets) the greedy's passes handle at a time: a block stays in the
#: cache, and the temporaries are reused rather than mapped afresh.
_BLOCK_WORDS = 1 << 18


class _Flood:
    """Bitset state of the flooding chunks."""

    def __init__(self, chunks, pre, post, num_nodes, *, in_nbrs, in_links, rng, late=None,
                 rule="tiers"):
        self.chunks = chunks                     # original ids, position = internal bit id
        k = chunks.size
        self.k = k
        self.width = max(1, (k + 63) // 64)
        self.in_nbrs = in_nbrs                   # (N, dmax) distinct in-neighbours, -1 padded
        self.in_links = in_links                 # (N, lmax) links into each node, -1 padded
        self.held = np.zeros((num_nodes + 1, self.width), dtype=np.uint64)  # row N: padding
        self.want = np.zeros((num_nodes, self.width), dtype=np.uint64)
        self._set(self.held, pre[chunks].T)
        self._set(self.want, post[chunks].T)
        #: chunks each node wants, lacks and is not receiving yet (cleared when one is sent)
        self.need = self.want & ~self.held[:-1]
        self.need_count = np.bitwise_count(self.need).sum(axis=1, dtype=np.int64)
        self.missing_count = int(self.need_count.sum())
        self.rng = rng
        self.late = late                         # LateLinks on mixed link speeds, else None
        self.rule = rule

    @staticmethod
    def _set(bits, mask):
        nodes, idx = np.nonzero(mask)
        np.bitwise_or.at(bits, (nodes, idx >> 6), _ONE << (idx & 63).astype(np.uint64))

    def missing(self):
        return self.missing_count

    def _claim(self, v, bit):
        """Chunks ``bit`` are on their way to nodes ``v`` (distinct pairs): no longer needed."""
        word, mask = bit >> 6, _ONE << (bit & 63).astype(np.uint64)
        cell = v * self.width + word
        was = (self.need.reshape(-1)[cell] & mask) != 0
        np.bitwise_and.at(self.need.reshape(-1), cell, ~mask)
        self.need_count -= np.bincount(v[was], minlength=self.need_count.size)
        return word, mask

    def match(self, t, free, link_src, link_dst, link_steps, out):
        """Match flooding chunks to the free links; returns the links used."""
        held = self.held
        active = np.flatnonzero(self.need_count > 0)
        none = np.zeros(0, dtype=np.int64)
        if active.size == 0:
            return none
        tab = self.in_links[active]
        ok = np.r_[free, False][tab]
        keep = ok.any(axis=1)
        if not keep.any():
            return none
        active, tab, ok = active[keep], tab[keep], ok[keep]
        need = self.need[active]
        # passes: every waiting link picks a chunk; where links into one receiver picked the
        # same chunk, the shortest link (else a random one) keeps it, the others pick again
        prio = np.where(ok, np.r_[link_steps, 0][tab] + self.rng.random(tab.shape), np.inf)
        row, col = np.nonzero(ok)
        l_all = tab[row, col]
        pr = prio[row, col]
        protect = None
        late = self.late
        if late is not None:
            slow = link_steps[l_all] >= late.late_from
            offer = held[link_src[l_all[slow]]]
            has = (offer & need[row[slow]]).any(axis=1)
            late_links = l_all[slow][has]
            late.start(late_links, t, offer[has])
            row, l_all, pr = row[~slow], l_all[~slow], pr[~slow]
            protect = late.protected(active, need, link_dst)
        if late is not None and late.estimates and self.rule == "latest":
            cand = unpack_bits(held[link_src[l_all]] & need[row], self.k)
            i, b = late.pick(t, l_all, row, cand, pr, link_src, link_dst,
                             unpack_bits(protect[row], self.k))
            used = [(row[i], l_all[i], b)] if i.size else []
        else:
            used = self._assign(row, l_all, pr, link_src[l_all], need, self._tiers(active),
                                protect)
        links = []
        for r, l, b in used:
            v = link_dst[l]
            self._claim(v, b)
            if late is not None:
                late.holds(b, v, t + link_steps[l])
            out.append((self.chunks[b], l, np.full(l.size, t, dtype=np.int64),
                        t + link_steps[l], v, b, np.zeros(l.size, dtype=bool)))
            links.append(l)
        if late is not None:
            links.append(late_links)
        return np.concatenate(links) if links else none

    def _tiers(self, active):
        """Chunks held by at least two / exactly two in-neighbours of each receiver in
        ``active`` (a chunk a link may send is held by one at least: its sender)."""
        held = self.held
        nb = self.in_nbrs[active]
        nb = np.where(nb < 0, held.shape[0] - 1, nb)
        a1 = held[nb[:, 0]]
        a2 = np.zeros_like(a1)
        a3 = np.zeros_like(a1)
        for j in range(1, nb.shape[1]):
            x = held[nb[:, j]]
            a3 |= a2 & x
            a2 |= a1 & x
            a1 |= x
        a3 ^= a2                                     # exactly two: at least two, not three
        return a2, a3

    def _assign(self, row, l_all, pr, offer, need, tiers, protect=None):
        """Exclusivity-tier passes: each link picks a chunk of ``offer`` its receiver (row of
        ``need``, cleared as chunks are taken) needs, first one that no other in-neighbour of
        the receiver holds, then one that one other holds (``tiers``: :meth:`_tiers` of the
        receivers); ``protect``: chunks to take last. ``offer``: the senders' bitsets, or
        their node ids (rows of ``held`` now). Returns ``[(rows, links, chunks)]``."""
        used = []
        step = max(1, _BLOCK_WORDS // self.width)
        while row.size:
            start, rot = _pick_draws(self.rng, row.size, self.width)
            bit = np.empty(row.size, dtype=np.int64)
            for lo in range(0, row.size, step):
                part = slice(lo, lo + step)
                pick = self._tier_pick(offer[part], need, row[part], tiers, protect)
                bit[part] = _first_bits(pick, start, rot[part], self.k)
            go = bit >= 0
            row, l_all, pr, bit, offer = row[go], l_all[go], pr[go], bit[go], offer[go]
            if row.size == 0:
                break
            key = row * self.k + bit
            order = np.lexsort((pr, key))
            sk = key[order]
            win = np.zeros(row.size, dtype=bool)
            win[order[np.r_[True, sk[1:] != sk[:-1]]]] = True
            r, l, b = row[win], l_all[win], bit[win]
            word, mask = b >> 6, _ONE << (b & 63).astype(np.uint64)
            np.bitwise_and.at(need, (r, word), ~mask)    # a receiver may take two bits of
            used.append((r, l, b))                        # one word in one pass
            row, l_all, pr, offer = row[~win], l_all[~win], pr[~win], offer[~win]
        return used

    def _tier_pick(self, offer, need, row, tiers, protect):
        """Per row: the chunks its link may take from the best tier (see :meth:`_assign`)."""
        c = need[row]
        c &= self.held[offer] if offer.ndim == 1 else offer
        if protect is not None:
            free = c & ~protect[row]
            c = np.where(free.any(axis=1)[:, None], free, c)
        # c lies in the chunks some in-neighbour holds (the sender does)
        two = tiers[0][row]
        two &= c
        pick = c ^ two                               # held by the sender alone
        two = tiers[1][row]
        two &= c                                     # ... by the sender and one other
        has1 = pick.any(axis=1)
        if not has1.all():
            has2 = two.any(axis=1)
            fill = ~has1 & has2
            pick[fill] = two[fill]
            rest = ~has1 & ~has2
            pick[rest] = c[rest]
        return pick

    def bind(self, t, link_src, link_dst, link_steps):
        """Give the late transfers arriving at slot ``t`` their chunks; returns the sends
        ``[(chunks, links, starts, arrivals)]`` (a transfer with nothing left to carry is
        dropped)."""
        due = self.late.due(t, link_steps)
        if due is None:
            return []
        links, starts, offer = due
        v = link_dst[links]
        pr = self.rng.random(links.size)
        if self.late.estimates:
            need = self.need[v]
            cand = unpack_bits(offer & need, self.k)
            i, b = self.late.pick(t, links, v, cand, pr, link_src, link_dst)
        else:
            active, row = np.unique(v, return_inverse=True)
            need = self.need[active]
            used = self._assign(row, np.arange(links.size), pr, offer, need,
                                self._tiers(active))
            if not used:
                return []
            i, b = (np.concatenate(x) for x in list(zip(*used))[1:])
        l = links[i]
        self.arrive(link_dst[l], b)
        self.late.holds(b, link_dst[l], t)
        return [(self.chunks[b], l, starts[i], np.full(l.size, t, dtype=np.int64))]

    def arrive(self, v, bit):
        """Chunks ``bit`` arrive at nodes ``v`` (distinct pairs)."""
        word, mask = self._claim(v, bit)
        lacked = ((self.want[v, word] & mask) != 0) & ((self.held[v, word] & mask) == 0)
        self.missing_count -= int(lacked.sum())
        np.bitwise_or.at(self.held.reshape(-1), v * self.width + word, mask)


class _Routed:
    """Single-copy chunks that travel to one target each."""

    def __init__(self, chunks, pre, post, num_nodes, link_src, link_dst, link_steps, rng):
        self.chunks = chunks
        self.target = np.argmax(post[chunks], axis=1)
        targets, inv = np.unique(self.target, return_inverse=True)
        dist = _weighted_distances(num_nodes, link_src, link_dst, link_steps, targets)
        self.dist_rows = inv                      # row of dist for each chunk
        self.dist = dist
        holders = pre[chunks]
        d_hold = np.where(holders, dist[inv], np.inf)
        self.pos = np.argmin(d_hold, axis=1)
        if np.any(~np.isfinite(d_hold[np.arange(chunks.size), self.pos])):
            i = int(np.flatnonzero(~np.isfinite(d_hold.min(axis=1)))[0])
            raise NotStronglyConnectedError(
                f"chunk {int(chunks[i])} cannot reach node {int(self.target[i])}",
                pair=(int(self.pos[i]), int(self.target[i])))
        self.done = self.pos == self.target
        self.inflight = np.zeros(chunks.size, dtype=bool)
        order = np.argsort(link_src, kind="stable")
        self.out_links = order
        self.out_ptr = np.r_[0, np.cumsum(np.bincount(link_src, minlength=num_nodes))]
        self.rng = rng

    def missing(self):
        return int((~self.done).sum())

    def match(self, t, free, link_src, link_dst, link_steps, out):
        parked = np.flatnonzero(~self.done & ~self.inflight)
        if parked.size == 0:
            return np.zeros(0, dtype=np.int64)
        u = self.pos[parked]
        counts = self.out_ptr[u + 1] - self.out_ptr[u]
        rows = np.repeat(np.arange(parked.size), counts)
        offs = np.arange(rows.size) - np.repeat(np.cumsum(counts) - counts, counts)
        links = self.out_links[self.out_ptr[u][rows] + offs]
        chunk = parked[rows]
        drow = self.dist_rows[chunk]
        here = self.dist[drow, self.pos[chunk]]
        there = self.dist[drow, link_dst[links]]
        ok = free[links] & (there < here)
        links, chunk, here, there = links[ok], chunk[ok], here[ok], there[ok]
        if links.size == 0:
            return links
        slack = there + link_steps[links] - here
        order = np.lexsort((self.rng.random(links.size), slack, -here))
        links, chunk = links[order], chunk[order]
        used_links = []
        while links.size:
            _, first = np.unique(links, return_index=True)
            first.sort()
            _, win = np.unique(chunk[first], return_index=True)
            pick = first[win]
            l, c = links[pick], chunk[pick]
            used_links.append(l)
            self.inflight[c] = True
            out.append((self.chunks[c], l, np.full(l.size, t, dtype=np.int64),
                        t + link_steps[l], link_dst[l], c, np.ones(l.size, dtype=bool)))
            keep = ~np.isin(links, l) & ~np.isin(chunk, c)
            links, chunk = links[keep], chunk[keep]
        return np.concatenate(used_links)

    def arrive(self, v, c):
        self.pos[c] = v
        self.inflight[c] = False
        self.done[c] = v == self.target[c]


def _in_table(num_nodes, dst, values):
    """``(N, width)`` table: row v lists ``values`` of the entries with ``dst == v``; -1 pad."""
    order = np.argsort(dst, kind="stable")
    d, s = dst[order], values[order]
    counts = np.bincount(d, minlength=num_nodes)
    width = max(1, int(counts.max()) if counts.size else 1)
    table = np.full((num_nodes, width), -1, dtype=np.int64)
    start = np.cumsum(counts) - counts
    table[d, np.arange(d.size) - start[d]] = s
    return table


def greedy_events(num_nodes, link_src, link_dst, link_steps, pre, post, *, seed=0,
                  blocked=None, rule="tiers", progress=None):
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
    if rule not in RULES:
        raise UnsupportedError(f"unknown rule {rule!r}; choose one of {', '.join(RULES)}")
    rng = np.random.default_rng(seed)
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
        flood = _Flood(chunks, pre, post, n, in_nbrs=_in_table(n, pairs // n, pairs % n),
                       in_links=_in_table(n, dst, np.arange(src.size)), rng=rng, late=late,
                       rule=rule)
    if routed_ids.size:
        routed = _Routed(routed_ids, pre, post, n, src, dst, steps, rng)
    parts = [p for p in (flood, routed) if p is not None]
    total = sum(p.missing() for p in parts)
    can_start = None
    if blocked is not None:
        blocked = np.asarray(blocked, dtype=bool)
        if blocked.ndim != 2 or blocked.shape[0] != src.size:
            raise UnsupportedError(f"blocked must have shape ({src.size}, H)")
        horizon = blocked.shape[1]
        pad = np.zeros((src.size, int(steps.max(initial=1)) + 1), dtype=bool)
        occ = np.concatenate([blocked, pad], axis=1).astype(np.int64)
        csum = np.concatenate([np.zeros((src.size, 1), dtype=np.int64), occ.cumsum(axis=1)], 1)
        s_idx = np.arange(horizon)
        ends = np.minimum(s_idx[None, :] + steps[:, None], occ.shape[1])
        can_start = (csum[np.arange(src.size)[:, None], ends] - csum[:, s_idx]) == 0
    busy = np.zeros(src.size, dtype=np.int64)
    arrivals = {}
    sends = _Sends(pre.shape[0], src.size)
    t = 0
    remaining = total
    while remaining:
        for kind, v, ident in arrivals.pop(t, ()):
            (routed if kind else flood).arrive(v, ident)
        if flood is not None and flood.late is not None:
            for sent in flood.bind(t, src, dst, steps):
                sends.add(*sent)
        free = busy <= t
        if can_start is not None and t < can_start.shape[1]:
            free &= can_start[:, t]
        out = []
        for part in parts:
            if not free.any():
                break
            used = part.match(t, free, src, dst, steps, out)
            if used.size:
                free[used] = False
                busy[used] = t + steps[used]
        for chunk, l, start, arrive, v, ident, is_routed in out:
            sends.add(chunk, l, start, arrive)
            kind = bool(is_routed[0])
            for slot in np.unique(arrive):
                m = arrive == slot
                arrivals.setdefault(int(slot), []).append((kind, v[m], ident[m]))
        remaining = sum(p.missing() for p in parts)
        if progress is not None and total:
            progress(total - remaining, total)
        if not remaining:
            break
        nxt = [s for s in arrivals if s > t]
        if flood is not None and flood.late is not None:
            nxt += flood.late.next_slots(steps)
        later = busy[busy > t]
        if not nxt and not out and (can_start is None or t >= can_start.shape[1]):
            raise NotStronglyConnectedError("greedy synthesis is stuck: some wanted chunk "
                                            "cannot travel on")
        candidates = nxt + ([int(later.min())] if later.size else [])
        if can_start is not None and t + 1 < can_start.shape[1]:
            candidates.append(t + 1)  # blocked windows open at any slot
        t = min(candidates) if candidates else t + 1
    return GreedyResult(sends.events(), sends.makespan, int(seed))


class _Sends:
    """The sends of a greedy run in the order made, held compactly until the end: 32-bit
    chunk and link ids, one start slot per batch that shares it (8 bytes a send where
    :data:`EVENT_DTYPE` takes 24)."""

    def __init__(self, num_chunks, num_links):
        self.chunk_type = np.int32 if num_chunks < 2**31 else np.int64
        self.link_type = np.int32 if num_links < 2**31 else np.int64
        self.parts = []
        self.size = 0
        self.makespan = 0

    def add(self, chunk, link, start, arrive):
        if not chunk.size:
            return
        first = int(start[0])
        shared = bool((start == first).all())
        self.parts.append((chunk.astype(self.chunk_type), link.astype(self.link_type),
                           first if shared else start.astype(np.int64)))
        self.size += int(chunk.size)
        self.makespan = max(self.makespan, int(arrive.max()))

    def events(self):
        """The sends as :data:`EVENT_DTYPE` (the batches are let go)."""
        events = np.empty(self.size, dtype=EVENT_DTYPE)
        at = 0
        parts, self.parts = self.parts, []
        for i, (chunk, link, start) in enumerate(parts):
            parts[i] = None                       # each batch freed once copied
            block = events[at:at + chunk.size]
            block["chunk"], block["link"], block["start"] = chunk, link, start
            at += chunk.size
        return events


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
