"""The flooding chunks of the greedy matcher (:mod:`.greedy`): chunks wanted by several nodes
(allgather, broadcast) spread like gossip. Every free link ``u -> v`` gets one chunk that ``u``
holds and ``v`` still needs and is not already receiving; the links into one node never pick
the same chunk. Among candidates a link prefers chunks that few of the receiver's
in-neighbours hold (the tiers: fewer than two hold it, exactly two do), then a seeded random
choice. The state is a bitset of ``uint64`` words per node (:mod:`.bitsets`), the tiers kept up
to date from a chunk-major table of how many in-neighbours hold each chunk; on links of mixed
speeds the slower links bind late (:mod:`.latebind`).
"""

import numpy as np

from .bitsets import ONE, clear_at, first_bits, pack_columns, pick_draws, set_at
from .latebind import unpack_bits

__all__ = ["Flood", "in_table", "BLOCK_WORDS", "MIN_BLOCK_ROWS"]


#: Words (of rows x chunk bitsets) the greedy's passes handle at a time: a block stays in the
#: cache, and the temporaries are reused rather than mapped afresh.
BLOCK_WORDS = 1 << 18
#: Rows below which a block is not split further for threads.
MIN_BLOCK_ROWS = 256


class Flood:
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
        self.held[:-1] = pack_columns(held_by, self.width)
        self.want = pack_columns(post[chunks], self.width)
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
        rows = max(1, BLOCK_WORDS * 64 // max(1, num_nodes))
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
        word, mask = bit >> 6, ONE << (bit & 63).astype(np.uint64)
        cell = v * self.width + word
        was = (self.need.reshape(-1)[cell] & mask) != 0
        clear_at(self.need.reshape(-1), cell, mask)
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
                                self.tiers(None), protect)
        else:
            used = self._assign(row, l_all, pr, link_src[l_all], need, self.tiers(active),
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

    def tiers(self, active):
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
        mask = ONE << (b & 63).astype(np.uint64)
        up = (before < 2) & (now >= 2)
        clear_at(self.below.reshape(-1), cell[up], mask[up])
        two = self.two.reshape(-1)
        up = (before != 2) & (now == 2)
        set_at(two, cell[up], mask[up])
        up = (before <= 2) & (now > 2)
        clear_at(two, cell[up], mask[up])

    def _assign(self, row, l_all, pr, offer, need, tiers, protect=None):
        """Exclusivity-tier passes: each link picks a chunk of ``offer`` its receiver (row of
        ``need``, cleared as chunks are taken) needs, first one that no other in-neighbour of
        the receiver holds, then one that one other holds (``tiers``: :meth:`tiers` of the
        receivers); ``protect``: chunks to take last. ``offer``: the senders' bitsets, or
        their node ids (rows of ``held`` now). Returns ``[(rows, links, chunks)]``."""
        used = []
        while row.size:
            step = self._block_rows(row.size)
            start, rot = pick_draws(self.rng, row.size, self.width)
            bit = np.empty(row.size, dtype=np.int64)

            def pick_block(lo, row=row, offer=offer, rot=rot, bit=bit):
                part = slice(lo, lo + step)
                pick = self._tier_pick(offer[part], need, row[part], tiers, protect)
                bit[part] = first_bits(pick, start, rot[part], self.k)

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
            word, mask = b >> 6, ONE << (b & 63).astype(np.uint64)
            clear_at(need.reshape(-1), r * self.width + word, mask)   # a receiver may take
            used.append((r, l, b))                    # two bits of one word in one pass
            row, l_all, pr, offer = row[~win], l_all[~win], pr[~win], offer[~win]
        return used

    def _block_rows(self, rows):
        """Rows a block of a pass takes: a cache's worth, and with worker threads at most an
        even share of ``rows`` for each."""
        step = max(1, BLOCK_WORDS // self.width)
        if self.pool is not None:
            step = min(step, max(MIN_BLOCK_ROWS, -(-rows // self.threads)))
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
                                self.tiers(active))
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
        set_at(self.held.reshape(-1), v * self.width + word, mask)
        if not new.all():
            v, bit = v[new], bit[new]
        self._count(v, bit)


def in_table(num_nodes, dst, values):
    """``(N, width)`` table: row v lists ``values`` of the entries with ``dst == v``; -1 pad."""
    order = np.argsort(dst, kind="stable")
    d, s = dst[order], values[order]
    counts = np.bincount(d, minlength=num_nodes)
    width = max(1, int(counts.max()) if counts.size else 1)
    table = np.full((num_nodes, width), -1, dtype=np.int64)
    start = np.cumsum(counts) - counts
    table[d, np.arange(d.size) - start[d]] = s
    return table
