"""Which pair may carry which shard in which step of BFB (docs/math.md section 2): the pair
``w -> v`` carries the shard of origin ``o`` in step ``dist(o, v)`` when ``dist(o, v) =
dist(o, w) + 1``. Only the distances to the receivers in question and to their in-neighbours
are computed (:func:`origin_distances`), so node 0's problems under a translation symmetry cost
O(N x degree), never the ``N x N`` matrix.
"""

import numpy as np

from ..errors import NotStronglyConnectedError
from ..topology.metrics import distance_matrix
from ..topology.paths import hop_distances
from .bfb_rounding import segments

__all__ = ["candidates", "origin_distances", "in_positions", "sorted_candidates",
           "CANDIDATE_CELLS"]

#: Cells (shards x pairs) of the distance comparisons :func:`candidates` makes at a time.
CANDIDATE_CELLS = 1 << 22


def candidates(dist_o, psrc, pdst):
    """All (shard, pair) with dist(origin, dst) = dist(origin, src) + 1, i.e. the pair may carry
    the shard in step dist(origin, dst). Returns (shard, pair, step) arrays."""
    num_shards = dist_o.shape[0]
    chunk = max(1, CANDIDATE_CELLS // max(num_shards, 1))
    shards, pairs, steps = [], [], []
    for start in range(0, psrc.size, chunk):
        ps = slice(start, start + chunk)
        dv = dist_o[:, pdst[ps]]
        dw = dist_o[:, psrc[ps]]
        s, p = np.nonzero((dv == dw + 1) & (dw >= 0))
        shards.append(s)
        pairs.append(p + start)
        steps.append(dv[s, p])
    return (np.concatenate(shards).astype(np.int64), np.concatenate(pairs).astype(np.int64),
            np.concatenate(steps).astype(np.int64))


def origin_distances(topology, origins, src, dst):
    """Distances ``D[origins[i], column[j]]`` (int64, -1 where unreachable) for the nodes
    ``column`` (sorted) that are ends of the given pairs.

    Only these columns are needed. When they are few (one receiver under translation symmetry:
    node 0 and its in-neighbours) they come from breadth-first searches towards them on the
    transposed graph, O(columns x links), instead of the ``N x N`` matrix; with few origins
    (a broadcast) from searches out of the origins; otherwise from the cached matrix."""
    n = topology.num_nodes
    column = np.unique(np.r_[src, dst]).astype(np.int64)
    if column.size == n and origins.size * 4 >= n:
        return np.asarray(distance_matrix(topology)[origins], dtype=np.int64), column
    if column.size <= origins.size:   # numpy on small graphs, scipy's searches on large ones
        rows = hop_distances(topology, column, transpose=True).T[origins]
    else:
        rows = hop_distances(topology, np.asarray(origins, dtype=np.int64))[:, column]
    out = np.full(rows.shape, -1, dtype=np.int64)
    finite = np.isfinite(rows)
    out[finite] = rows[finite].astype(np.int64)
    return out, column


def in_positions(psrc, pdst):
    """Position of each pair among the in-pairs of its destination (for sender-set masks)."""
    by_dst = np.lexsort((psrc, pdst))
    inpos = np.empty(pdst.size, dtype=np.int64)
    starts_dst = segments(pdst[by_dst])
    inpos[by_dst] = np.arange(pdst.size) - np.repeat(starts_dst, np.diff(np.r_[starts_dst,
                                                                               pdst.size]))
    return inpos


def sorted_candidates(topology, origins, receivers, inpos):
    """Every (shard, pair, step, receiver) a pair may carry, ordered by step, receiver, shard
    and the pair's place among the receiver's in-pairs; an error where some origin does not
    reach some node."""
    psrc, pdst, _, _ = topology.pairs
    into = np.arange(pdst.size) if receivers is None else np.flatnonzero(np.isin(pdst, receivers))
    dist_o, column = origin_distances(topology, origins, psrc[into], pdst[into])
    if np.any(dist_o < 0):
        s, v = np.argwhere(dist_o < 0)[0]
        raise NotStronglyConnectedError(
            f"BFB needs every node reachable, but in {topology.name} node {column[v]} cannot be "
            f"reached from node {origins[s]}", pair=(int(origins[s]), int(column[v])))
    ends = np.searchsorted(column, np.r_[psrc[into], pdst[into]])
    shard, pair, step = candidates(dist_o, ends[:into.size], ends[into.size:])
    pair = into[pair]
    v = pdst[pair]
    order = np.lexsort((inpos[pair], shard, v, step))
    return shard[order], pair[order], step[order], v[order]
