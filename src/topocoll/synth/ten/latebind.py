"""The greedy on links of mixed speeds: late binding and arrival estimates (docs/math.md
section 5).

On uniform links every transfer takes one TEN slot and the greedy (:mod:`.greedy`) picks its
chunk when the transfer starts. On mixed links that wastes the slow ones: a link of ``k`` slots
that picks chunk ``c`` now keeps ``c`` from a fast link that would bring it sooner, and a slow
link blind to where the chunks are brings the same chunk into a group of fast-linked nodes
several times. Three rules fix that, all of them off on uniform links:

* **late binding**: a link slower than the fastest starts as soon as its sender holds a chunk its
  receiver needs, and picks its chunk only when the transfer arrives, from what the sender held
  when it started (so the schedule stays causal). A chunk a fast link brought in the meantime is
  not carried twice; a transfer left with nothing to carry is dropped (its link idled);
* **latest alternative first**: a late transfer takes the chunk whose nearest other copy (held or
  on its way, the sender excluded) would reach the receiver last, by TEN distance;
* **protection**: a link that picks at the start avoids a chunk that is one of the last few
  (at most :data:`PROTECT`) a late transfer into the same receiver could still carry.

Distances are only looked at within :data:`RADIUS_FACTOR` times the slowest link's slots: a copy
farther away than that cannot overtake any transfer under way. Above :data:`ESTIMATE_WORK`
chunks x links the arrival estimates are left out (their cost grows as chunks x links per slot;
a 32x32 mesh took 50 s a run with them): late transfers then choose by the exclusivity tiers.

>>> import numpy as np
>>> unpack_bits(np.array([[5]], dtype=np.uint64), 4).tolist()
[[True, False, True, False]]
"""

import numpy as np

__all__ = ["LateLinks", "unpack_bits", "PROTECT", "RADIUS_FACTOR", "ESTIMATE_WORK"]

#: A fast link avoids the chunks of a late transfer into its receiver that can carry at most
#: this many chunks still (measured: 2..5 bring an 8x8 torus with 4:1 links to the bound, 1
#: does not).
PROTECT = 3
#: Arrival estimates look this many times the slowest link's slots around a receiver.
RADIUS_FACTOR = 1
#: Most chunks x links for which the arrival estimates are kept (a 16x16 torus: 2**18).
ESTIMATE_WORK = 2**20
_OUT_OF_REACH = 1e9
_ONE = np.uint64(1)


def unpack_bits(bits, k):
    """``(rows, words)`` uint64 bitsets -> ``(rows, k)`` booleans (bit b of word b >> 6)."""
    words = np.ascontiguousarray(bits, dtype="<u8")
    by = words.view(np.uint8).reshape(words.shape[0], words.shape[1] * 8)
    return np.unpackbits(by, axis=1, bitorder="little")[:, :k].astype(bool)


class LateLinks:
    """State of the late-binding transfers and the arrival estimates of one greedy run.

    Parameters
    ----------
    held : bool array (k, N)
        Which node holds each (flooding) chunk at slot 0.
    link_src, link_dst, link_steps : int arrays (L,)
    rng : numpy Generator

    Attributes
    ----------
    estimates : bool
        Whether the arrival estimates are kept (:data:`ESTIMATE_WORK`).
    """

    def __init__(self, held, link_src, link_dst, link_steps, rng):
        from scipy.sparse import csgraph, csr_matrix  # imported when first needed (start-up time)

        k, n = held.shape
        self.k = k
        self.rng = rng
        self.late_from = int(link_steps.min()) + 1
        self.deferred = []                        # (links, start slot, sender bitsets)
        # the estimates keep node x node distances: at most 2048 nodes
        self.estimates = k * link_src.size <= ESTIMATE_WORK and n <= 2048
        if not self.estimates:
            return
        #: slot from which each node holds, or will hold, each chunk (inf: not on its way)
        self.avail = np.where(held, 0.0, np.inf)
        radius = RADIUS_FACTOR * int(link_steps.max())
        order = np.lexsort((link_steps, link_src * n + link_dst))
        pair = (link_src * n + link_dst)[order]
        first = order[np.r_[True, pair[1:] != pair[:-1]]]  # parallel links: the fastest counts
        w = csr_matrix((link_steps[first].astype(float), (link_src[first], link_dst[first])),
                       shape=(n, n))
        dist_to = csgraph.dijkstra(w, directed=True, limit=radius).T           # [v, w]
        near = np.isfinite(dist_to)
        width = int(near.sum(axis=1).max())
        idx = np.argsort(~near, axis=1, kind="stable")[:, :width]
        inside = np.take_along_axis(near, idx, axis=1)
        self.ball = np.where(inside, idx, n)      # nodes near each receiver, n pads
        self.ball_dist = np.where(inside, np.take_along_axis(dist_to, idx, axis=1), np.inf)
        self.radius = radius

    def holds(self, chunks, nodes, slot):
        """Chunks ``chunks`` are at (or on their way to) ``nodes`` from ``slot`` on."""
        if self.estimates:
            self.avail[chunks, nodes] = slot

    # ------------------------------------------------------------ arrival estimates
    def alternative(self, t, links, link_src, link_dst, chunks=None):
        """``(len(links), len(chunks))``: earliest slot a copy of each chunk (default: all)
        other than the sender's could reach each link's receiver (at most
        ``t + radius + 1``)."""
        chunks = np.arange(self.k) if chunks is None else chunks
        u, v = link_src[links], link_dst[links]
        start = np.maximum(self.avail[chunks], t)
        start = np.concatenate([start, np.full((chunks.size, 1), np.inf)], axis=1)
        nodes = self.ball[v]
        d = np.where(nodes == u[:, None], np.inf, self.ball_dist[v])
        alt = (start[:, nodes] + d[None]).min(axis=2).T
        return np.minimum(alt, t + self.radius + 1)

    def pick(self, t, links, row, cand, pr, link_src, link_dst, protect=None):
        """Give each link a distinct chunk of its receiver (``row``), latest alternative first.

        ``cand[i, c]``: link ``i`` may carry chunk ``c``; ``pr``: where links into one receiver
        want the same chunk the lowest keeps it. Returns ``(link index, chunk)`` arrays.
        """
        if links.size == 0:
            return links, links
        noise = 0.5 * self.rng.random(cand.shape)
        cols = np.flatnonzero(cand.any(axis=0))        # only chunks some link may carry
        score = np.full(cand.shape, -np.inf)
        score[:, cols] = self.alternative(t, links, link_src, link_dst, cols) + noise[:, cols]
        if protect is not None:
            score -= _OUT_OF_REACH * protect
        score[~cand] = -np.inf
        rows = np.unique(row, return_inverse=True)[1]
        taken = np.zeros((rows.max() + 1, self.k), dtype=bool)
        idx = np.arange(links.size)
        got_i, got_c = [], []
        while idx.size:
            best = np.argmax(score[idx], axis=1)
            live = np.isfinite(score[idx, best])
            idx, best = idx[live], best[live]
            if idx.size == 0:
                break
            key = rows[idx] * self.k + best
            order = np.lexsort((pr[idx], key))
            sk = key[order]
            win = np.zeros(idx.size, dtype=bool)
            win[order[np.r_[True, sk[1:] != sk[:-1]]]] = True
            wi, wc = idx[win], best[win]
            got_i.append(wi)
            got_c.append(wc)
            taken[rows[wi], wc] = True
            score[wi] = -np.inf
            idx = idx[~win]
            score[idx] = np.where(taken[rows[idx]], -np.inf, score[idx])
        if not got_i:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        return np.concatenate(got_i), np.concatenate(got_c)

    # ------------------------------------------------------------ late transfers
    def start(self, links, t, offer):
        """Links ``links`` start a late transfer at slot ``t``; ``offer``: their senders'
        bitsets now."""
        if links.size:
            self.deferred.append((links, int(t), offer))

    def due(self, t, link_steps):
        """Pop the late transfers that arrive at slot ``t``: ``(links, starts, offers)``."""
        keep, due = [], []
        for links, start, offer in self.deferred:
            hit = start + link_steps[links] == t
            if hit.any():
                due.append((links[hit], np.full(int(hit.sum()), start, dtype=np.int64),
                            offer[hit]))
            if not hit.all():
                keep.append((links[~hit], start, offer[~hit]))
        self.deferred = keep
        if not due:
            return None
        return tuple(np.concatenate(x) for x in zip(*due))

    def next_slots(self, link_steps):
        """Slots at which late transfers under way arrive."""
        return [int(s) for links, start, _ in self.deferred
                for s in np.unique(start + link_steps[links])]

    def protected(self, receivers, need, link_dst):
        """Bitsets ``(len(receivers), words)`` of the chunks fast links should leave to the
        late transfers under way into ``receivers`` (``need``: their rows of needed chunks)."""
        prot = np.zeros_like(need)
        if not self.deferred:
            return prot
        pos = np.full(int(max(receivers.max(), link_dst.max())) + 1, -1)
        pos[receivers] = np.arange(receivers.size)
        for links, _, offer in self.deferred:
            r = pos[link_dst[links]]
            mine = r >= 0
            cand = offer[mine] & need[r[mine]]
            few = np.bitwise_count(cand).sum(axis=1) <= PROTECT
            np.bitwise_or.at(prot, r[mine][few], cand[few])
        return prot
