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

The state is kept lean for large networks (a 128x128 mesh all-gather is 268 million sends):
the bitset of what each node still needs is kept up to date rather than recomputed every slot,
and so are the tiers, from a chunk-major table of how many in-neighbours of each node hold each
chunk (updated as chunks arrive); the links' chunk choices run over blocks of rows that stay in
the cache, on worker threads for large problems (``threads``); the sends are held as 16- or
32-bit ids until the end (:class:`_Sends`) and handed over block by block
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
#: Rows below which a block is not split further for threads.
_MIN_BLOCK_ROWS = 256


class _Flood:
    """Bitset state of the flooding chunks."""

    def __init__(self, chunks, pre, post, num_nodes, *, out_nbrs, in_links, rng,
                 late=None, rule="tiers", pool=None):
        self.pool = pool                         # worker threads for the bitset passes
        self.threads = 1 if pool is None else pool.threads
        self.chunks = chunks                     # original ids, position = internal bit id
        k = chunks.size
        self.k = k
        self.width = max(1, (k + 63) // 64)
        self.in_links = in_links                 # (N, lmax) links into each node, -1 padded
        self.out_nbrs = out_nbrs                 # (N, dmax) distinct out-neighbours, -1 padded
        held_by = pre[chunks]
        self.held = np.zeros((num_nodes + 1, self.width), dtype=np.uint64)  # row N: padding
        self.held[:-1] = _pack_columns(held_by, self.width)
        self.want = _pack_columns(post[chunks], self.width)
        #: chunks each node wants, lacks and is not receiving yet (cleared when one is sent)
        self.need = self.want & ~self.held[:-1]
        # how many distinct in-neighbours of each node hold each chunk (kept as arrivals
        # come), and its tiers as bitsets: fewer than two hold it / exactly two do
        fan_in = np.bincount(out_nbrs[out_nbrs >= 0], minlength=1).max()
        # chunk-major: the out-neighbours of one node are near each other in most networks
        # numbering, so the counts one arrival moves share cache lines
        self.holders = np.zeros((k, num_nodes), dtype=np.uint8 if fan_in < 255 else np.uint32)
        self.below = np.full((num_nodes, self.width), ~np.uint64(0))
        self.two = np.zeros((num_nodes, self.width), dtype=np.uint64)
        rows = max(1, _BLOCK_WORDS * 64 // max(1, num_nodes))
        for lo in range(0, k, rows):                 # the start's holders, a block at a time
            bit, node = np.nonzero(held_by[lo:lo + rows])
            self._count(node, bit + lo)
        del held_by
        self.need_count = np.bitwise_count(self.need).sum(axis=1, dtype=np.int64)
        self.missing_count = int(self.need_count.sum())
        self.rng = rng
        self.late = late                         # LateLinks on mixed link speeds, else None
        self.rule = rule

    def missing(self):
        return self.missing_count

    def _claim(self, v, bit):
        """Chunks ``bit`` are on their way to nodes ``v`` (distinct pairs): no longer needed."""
        word, mask = bit >> 6, _ONE << (bit & 63).astype(np.uint64)
        cell = v * self.width + word
        was = (self.need.reshape(-1)[cell] & mask) != 0
        _clear_at(self.need.reshape(-1), cell, mask)
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
        late = self.late
        # on uniform links the passes clear the chunks taken in the state itself (counted
        # below); the late-binding rules read a copy of the receivers' rows
        need = self.need[active] if late is not None else None
        # passes: every waiting link picks a chunk; where links into one receiver picked the
        # same chunk, the shortest link (else a random one) keeps it, the others pick again
        prio = np.where(ok, np.r_[link_steps, 0][tab] + self.rng.random(tab.shape), np.inf)
        row, col = np.nonzero(ok)
        l_all = tab[row, col]
        pr = prio[row, col]
        protect = None
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
        elif need is None:
            used = self._assign(active[row], l_all, pr, link_src[l_all], self.need,
                                self._tiers(None), protect)
        else:
            used = self._assign(row, l_all, pr, link_src[l_all], need, self._tiers(active),
                                protect)
        links = []
        for r, l, b in used:
            v = link_dst[l]
            if need is None:            # taken out of the state by the passes already
                self.need_count -= np.bincount(v, minlength=self.need_count.size)
            else:
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
        """The tiers of the receivers ``active``, for :meth:`_tier_pick` (rows index
        ``active``; None: rows are node ids)."""
        return self.below, self.two, active

    def _count(self, v, bit):
        """Chunks ``bit`` are now held by nodes ``v`` (distinct pairs, none held before):
        one more in-neighbour of each of their out-neighbours holds them."""
        nbr = self.out_nbrs[v]
        has = nbr >= 0
        w = nbr[has]
        b = np.broadcast_to(bit[:, None], nbr.shape)[has]
        flat = self.holders.reshape(-1)
        at = b * self.holders.shape[1] + w
        before = flat[at]
        np.add.at(flat, at, flat.dtype.type(1))     # a typed one: numpy's fast path
        now = flat[at]            # a pair met twice reads the same counts: the writes agree
        cell = w * self.width + (b >> 6)
        mask = _ONE << (b & 63).astype(np.uint64)
        up = (before < 2) & (now >= 2)
        _clear_at(self.below.reshape(-1), cell[up], mask[up])
        two = self.two.reshape(-1)
        up = (before != 2) & (now == 2)
        _set_at(two, cell[up], mask[up])
        up = (before <= 2) & (now > 2)
        _clear_at(two, cell[up], mask[up])

    def _assign(self, row, l_all, pr, offer, need, tiers, protect=None):
        """Exclusivity-tier passes: each link picks a chunk of ``offer`` its receiver (row of
        ``need``, cleared as chunks are taken) needs, first one that no other in-neighbour of
        the receiver holds, then one that one other holds (``tiers``: :meth:`_tiers` of the
        receivers); ``protect``: chunks to take last. ``offer``: the senders' bitsets, or
        their node ids (rows of ``held`` now). Returns ``[(rows, links, chunks)]``."""
        used = []
        while row.size:
            step = self._block_rows(row.size)
            start, rot = _pick_draws(self.rng, row.size, self.width)
            bit = np.empty(row.size, dtype=np.int64)

            def pick_block(lo, row=row, offer=offer, rot=rot, bit=bit):
                part = slice(lo, lo + step)
                pick = self._tier_pick(offer[part], need, row[part], tiers, protect)
                bit[part] = _first_bits(pick, start, rot[part], self.k)

            self._each(pick_block, range(0, row.size, step))
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
            _clear_at(need.reshape(-1), r * self.width + word, mask)   # a receiver may take
            used.append((r, l, b))                    # two bits of one word in one pass
            row, l_all, pr, offer = row[~win], l_all[~win], pr[~win], offer[~win]
        return used

    def _block_rows(self, rows):
        """Rows a block of a pass takes: a cache's worth, and with worker threads at most an
        even share of ``rows`` for each."""
        step = max(1, _BLOCK_WORDS // self.width)
        if self.pool is not None:
            step = min(step, max(_MIN_BLOCK_ROWS, -(-rows // self.threads)))
        return step

    def _each(self, job, starts):
        """``job(lo)`` for every block start: on the worker threads where there are some
        (numpy lets go of the interpreter lock in these passes; the blocks write disjoint
        rows, so the result does not depend on the thread count)."""
        if self.pool is None or len(starts) < 2:
            for lo in starts:
                job(lo)
        else:
            for done in self.pool.map(job, starts):
                pass

    def _tier_pick(self, offer, need, row, tiers, protect):
        """Per row: the chunks its link may take from the best tier (see :meth:`_assign`)."""
        c = need[row]
        c &= self.held[offer] if offer.ndim == 1 else offer
        if protect is not None:
            free = c & ~protect[row]
            c = np.where(free.any(axis=1)[:, None], free, c)
        # c lies in the chunks some in-neighbour holds (the sender does)
        below, exactly_two, nodes = tiers
        node = row if nodes is None else nodes[row]
        pick = below[node]
        pick &= c                                    # held by the sender alone
        has1 = pick.any(axis=1)
        if not has1.all():
            lack = np.flatnonzero(~has1)
            two = exactly_two[node[lack]]
            two &= c[lack]                           # ... by the sender and one other
            has2 = two.any(axis=1)
            pick[lack[has2]] = two[has2]
            rest = lack[~has2]
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
        new = (self.held[v, word] & mask) == 0
        lacked = ((self.want[v, word] & mask) != 0) & new
        self.missing_count -= int(lacked.sum())
        _set_at(self.held.reshape(-1), v * self.width + word, mask)
        if not new.all():
            v, bit = v[new], bit[new]
        self._count(v, bit)


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


def _set_at(words, cell, mask):
    """``words[cell] |= mask`` with every bit kept where a cell repeats (``np.bitwise_or.at``,
    but about twice as fast on large arrays: a plain write, then the bits it lost again)."""
    while cell.size:
        words[cell] |= mask
        lost = (words[cell] & mask) != mask
        if not lost.any():
            return
        cell, mask = cell[lost], mask[lost]


def _clear_at(words, cell, mask):
    """``words[cell] &= ~mask`` with every bit cleared where a cell repeats (as
    :func:`_set_at`)."""
    while cell.size:
        words[cell] &= ~mask
        lost = (words[cell] & mask) != 0
        if not lost.any():
            return
        cell, mask = cell[lost], mask[lost]


def _pack_columns(mask, width):
    """The columns of a boolean ``(bits, rows)`` matrix as rows of ``width`` little-endian
    ``uint64`` words (bit ``i`` of row ``r``: word ``i // 64``, bit ``i % 64``)."""
    packed = np.packbits(mask, axis=0, bitorder="little")
    out = np.zeros((mask.shape[1], width * 8), dtype=np.uint8)
    out[:, :packed.shape[0]] = packed.T
    return out.view("<u8").astype(np.uint64, copy=False)


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
    if rule not in RULES:
        raise UnsupportedError(f"unknown rule {rule!r}; choose one of {', '.join(RULES)}")
    if threads is not None and (isinstance(threads, bool) or
                                not isinstance(threads, (int, np.integer)) or threads < 1):
        raise InputTypeError(f"threads must be a whole number >= 1, got {threads!r}")
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
        pool = _thread_pool(threads, n * ((chunks.size + 63) // 64))
        flood = _Flood(chunks, pre, post, n, out_nbrs=_in_table(n, pairs % n, pairs // n), in_links=_in_table(n, dst, np.arange(src.size)), rng=rng, late=late,
                       rule=rule, pool=pool)
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
    try:
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
    finally:
        if flood is not None and flood.pool is not None:
            flood.pool.shutdown()
    return GreedyResult(sends, sends.makespan, int(seed))


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


class _Sends:
    """The sends of a greedy run in the order made, held compactly until the end: chunk and
    link ids in the smallest unsigned type that holds them (16 bits up to 65,536 chunks and
    links), one start slot per batch that shares it (4 bytes a send on a 128x128 mesh where
    :data:`EVENT_DTYPE` takes 24)."""

    def __init__(self, num_chunks, num_links):
        self.chunk_type = np.min_scalar_type(max(0, num_chunks - 1))
        self.link_type = np.min_scalar_type(max(0, num_links - 1))
        self.parts = []
        self.size = 0
        self.makespan = 0
        self.ordered = True             # every batch starts no earlier than the one before
        self._last_start = 0

    def add(self, chunk, link, start, arrive):
        if not chunk.size:
            return
        first = int(start[0])
        shared = bool((start == first).all())
        low = first if shared else int(start.min())
        if low < self._last_start:
            self.ordered = False
        self._last_start = max(self._last_start, first if shared else int(start.max()))
        self.parts.append((chunk.astype(self.chunk_type), link.astype(self.link_type),
                           first if shared else start.astype(np.int64)))
        self.size += int(chunk.size)
        self.makespan = max(self.makespan, int(arrive.max()))

    def events(self):
        """The sends as :data:`EVENT_DTYPE` (the batches are let go)."""
        events = np.empty(self.size, dtype=EVENT_DTYPE)
        at = 0
        for block in self.blocks(max(1, self.size)):
            events[at:at + block.size] = block
            at += block.size
        return events

    def blocks(self, rows):
        """The sends as :data:`EVENT_DTYPE` blocks of at most ``rows``, in the order made (each
        batch let go once copied)."""
        parts, self.parts = self.parts, []
        parts.reverse()                           # popped from the end: first made, first out
        block = np.empty(min(rows, self.size), dtype=EVENT_DTYPE)
        at = 0
        while parts:
            chunk, link, start = parts.pop()
            lo = 0
            while lo < chunk.size:
                take = min(chunk.size - lo, block.size - at)
                part = block[at:at + take]
                part["chunk"], part["link"] = chunk[lo:lo + take], link[lo:lo + take]
                part["start"] = start if isinstance(start, int) else start[lo:lo + take]
                at += take
                lo += take
                if at == block.size:
                    yield block
                    block = np.empty(block.size, dtype=EVENT_DTYPE)
                    at = 0
        if at:
            yield block[:at]


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
