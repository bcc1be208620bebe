"""The routed chunks of the greedy matcher (:mod:`.greedy`): chunks wanted by one node
(scatter, gather, alltoall) travel as one copy along links that strictly shorten their
remaining (TEN-weighted) distance; chunks with the longest way to go are matched first, and each
slot's link-chunk pairs form a greedy matching.
"""

import numpy as np

from ...errors import NotStronglyConnectedError
from ...topology.paths import distances

__all__ = ["Routed", "weighted_distances"]


def weighted_distances(num_nodes, src, dst, steps, targets):
    """``dist[i, u]``: least TEN slots from ``u`` to ``targets[i]`` (inf if unreachable);
    parallel links: the fastest one counts (numpy on small networks, else scipy's Dijkstra)."""
    return distances(num_nodes, src, dst, targets, weight=np.asarray(steps, dtype=np.float64),
                     transpose=True)


class Routed:
    """Single-copy chunks that travel to one target each."""

    def __init__(self, chunks, pre, post, num_nodes, link_src, link_dst, link_steps, rng):
        self.chunks = chunks
        self.target = np.argmax(post[chunks], axis=1)
        targets, inv = np.unique(self.target, return_inverse=True)
        dist = weighted_distances(num_nodes, link_src, link_dst, link_steps, targets)
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
