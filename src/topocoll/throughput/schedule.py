"""From path-LP routes to an all-to-all schedule: whole chunks per path, moved hop by hop.

Every commodity (shard ``x*N+y``, M/N bytes) is cut into ``K`` equal chunks. The path LP gives
each path ``p`` of pair ``(x, y)`` a share; path ``p`` gets a whole number of chunks
(largest-remainder rounding of ``K * share``), as one contiguous byte range. A range on a path
``x = v0 -> v1 -> ... -> vh = y`` moves one hop per step: step ``i`` sends it ``v(i-1) -> vi``.
There are no dependencies across chunks, so the schedule has as many steps as the longest path.

When the LP optimum is rational with a small common denominator (as on tori and other
symmetric graphs), ``K`` is that denominator and rounding loses nothing; otherwise the loss is
reported: with rounded shares the busiest link sets ``lambda_q = min_e c_e / load_e``, and
``loss = 1 - lambda_q / lambda``.

>>> from topocoll.topology import topology
>>> from topocoll.throughput.pathlp import path_throughput
>>> r = path_throughput(topology("ring:5", bandwidth=1.0), max_hops=0)
>>> q = quantize(r, topology("ring:5", bandwidth=1.0))
>>> q.chunks, q.loss
(1, 0.0)
>>> s = alltoall_schedule(r, topology("ring:5", bandwidth=1.0))
>>> s.num_steps, s.collective.name
(2, 'alltoall')
"""

from dataclasses import dataclass

import numpy as np

from ..errors import UnsupportedError
from ..schedule.model import Schedule, transfer_array

__all__ = ["Quantized", "quantize", "alltoall_schedule", "rational_chunks"]


@dataclass
class Quantized:
    """Whole chunks per path: ``counts[p]`` of ``chunks`` chunks of pair ``(src[p], dst[p])``
    ride on path ``p`` of ``paths``; ``lam_quantized`` is the throughput of that routing and
    ``loss = 1 - lam_quantized / lam``."""

    paths: object
    counts: np.ndarray
    chunks: int
    lam: float
    lam_quantized: float
    loss: float
    rational: bool


def rational_chunks(shares, max_chunks=64, tol=1e-6):
    """Smallest ``K <= max_chunks`` with every ``K * share`` within ``tol`` of a whole number,
    or ``None``.

    >>> rational_chunks(np.array([0.5, 0.25, 0.25, 1.0]))
    4
    >>> rational_chunks(np.array([0.43, 0.57])) is None
    True
    """
    shares = np.asarray(shares, dtype=np.float64)
    for k in range(1, int(max_chunks) + 1):
        scaled = shares * k
        if np.all(np.abs(scaled - np.round(scaled)) <= tol * k):
            return k
    return None


def _largest_remainder(pair, share, chunks):
    """Per pair, whole counts summing to ``chunks`` closest to ``chunks * share``."""
    want = share * chunks
    base = np.floor(want + 1e-9).astype(np.int64)
    frac = want - base
    num_pairs = int(pair.max()) + 1 if pair.size else 0
    missing = chunks - np.bincount(pair, weights=base, minlength=num_pairs).astype(np.int64)
    order = np.lexsort((-frac, pair))          # per pair, largest remainder first
    ps = pair[order]
    first = np.searchsorted(ps, ps, side="left")
    rank = np.arange(ps.size) - first
    extra = np.zeros(pair.size, dtype=np.int64)
    extra[order] = (rank < missing[ps]).astype(np.int64)
    return base + extra


def quantize(result, topology, chunks=None, *, max_chunks=64):
    """Round the path shares of a path-LP ``result`` to whole chunks.

    Parameters
    ----------
    result : AlltoallResult
        From the path LP (``method="path"``).
    topology : Topology
        The topology it was solved on.
    chunks : int, optional
        Chunks per commodity; default: the LP optimum's common denominator if it is at most
        ``max_chunks``, else ``max_chunks``.
    """
    paths = result.paths
    if paths is None:
        raise UnsupportedError("a schedule needs routes: solve the path LP (method='path' or "
                               "max_hops) rather than the link LP")
    n = result.num_nodes
    pair = paths.src * n + paths.dst
    rational = False
    if chunks is None:
        k = rational_chunks(paths.share, max_chunks)
        rational = k is not None
        chunks = k if rational else int(max_chunks)
    chunks = int(chunks)
    if chunks < 1:
        raise UnsupportedError(f"chunks must be at least 1, got {chunks}")
    _, compact = np.unique(pair, return_inverse=True)
    counts = _largest_remainder(compact, paths.share, chunks)
    load = np.bincount(paths.edges, weights=np.repeat(counts / chunks, paths.hops))
    cap = topology.pairs[2][:load.size]
    used = load > 0
    lam_q = float(np.min(cap[used] / load[used])) if np.any(used) else float("inf")
    loss = max(0.0, 1.0 - lam_q / result.lam) if result.lam > 0 else 0.0
    if loss < 1e-9:
        loss = 0.0
    return Quantized(paths=paths, counts=counts, chunks=chunks, lam=result.lam,
                     lam_quantized=lam_q, loss=loss, rational=rational)


def alltoall_schedule(result, topology, *, chunks=None, max_chunks=64):
    """A hop-by-hop ``alltoall`` :class:`~topocoll.schedule.Schedule` from path-LP routes.

    ``meta`` records ``lambda``, ``lambda_quantized``, ``chunks``, ``quantization_loss``,
    ``max_hops`` and the LP's time per byte of M, ``1 / (N lambda)``.
    """
    topo = topology
    q = quantize(result, topo, chunks, max_chunks=max_chunks)
    paths, counts, k = q.paths, q.counts, q.chunks
    n = result.num_nodes
    pair = paths.src * n + paths.dst
    # contiguous chunk ranges per path: cumulative counts within each pair
    csum = np.cumsum(counts)
    first_of_pair = np.searchsorted(pair, pair, side="left")
    before = csum - counts - (csum[first_of_pair] - counts[first_of_pair])
    use = counts > 0
    hops = paths.hops
    pdst = topo.pairs[1]
    p_idx = np.repeat(np.flatnonzero(use), hops[use])
    offset = np.arange(p_idx.size) - np.repeat(np.cumsum(hops[use]) - hops[use], hops[use])
    edge = paths.edges[paths.ptr[p_idx] + offset]
    dst = pdst[edge]
    prev = np.where(offset == 0, paths.src[p_idx], pdst[paths.edges[paths.ptr[p_idx]
                                                                    + np.maximum(offset - 1, 0)]])
    lo = before[p_idx] / k
    hi = (before[p_idx] + counts[p_idx]) / k
    transfers = transfer_array(offset + 1, prev, dst, paths.src[p_idx] * n + paths.dst[p_idx],
                               lo, hi)
    meta = {"lambda": result.lam, "lambda_quantized": q.lam_quantized, "chunks": k,
            "rational": q.rational, "quantization_loss": q.loss, "max_hops": result.max_hops,
            "lp_time_per_byte": 1.0 / (n * result.lam) if result.lam > 0 else None,
            "note": "hop-by-hop all-to-all from the path LP: chunk ranges move one hop per step"}
    return Schedule(topo, "alltoall", transfers, algorithm="alltoall-lp", meta=meta)
