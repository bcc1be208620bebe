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
>>> q = quantize_paths(r, topology("ring:5", bandwidth=1.0))
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

__all__ = ["Quantized", "quantize_paths", "alltoall_schedule", "pipelined_alltoall_schedule",
           "rational_chunks", "balance_offsets", "step_time_ratio"]


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


def quantize_paths(result, topology, chunks=None, *, max_chunks=64):
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
    q = quantize_paths(result, topo, chunks, max_chunks=max_chunks)
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


def _path_hops(paths, topology):
    """Per (path, hop) row: the path, the hop index, the pair-link and the sending node."""
    hops = paths.hops
    p_idx = np.repeat(np.arange(len(paths)), hops)
    hop = np.arange(p_idx.size) - np.repeat(np.cumsum(hops) - hops, hops)
    edge = paths.edges[paths.ptr[p_idx] + hop]
    pdst = topology.pairs[1]
    prev = np.where(hop == 0, paths.src[p_idx],
                    pdst[paths.edges[paths.ptr[p_idx] + np.maximum(hop - 1, 0)]])
    return p_idx, hop, edge, prev


def balance_offsets(paths, topology, *, batch=256):
    """Start offsets that even out the links' loads step by step.

    Path ``p`` of ``h`` links may start ``o_p`` steps late, ``0 <= o_p <= L - h`` (``L``: the
    longest path), so that its hop ``k`` falls in step ``o_p + k + 1`` of a one-round
    schedule. The step-model time of such a schedule is the sum over steps of its busiest
    link's load, which is the LP time only when every busy link is equally busy in every step.
    The offsets are chosen greedily, largest paths (share times links) first, in batches of
    ``batch`` paths: each path takes the offset that raises the steps' busiest loads least
    (ties: the least loaded cells).

    Returns
    -------
    offsets : numpy.ndarray
        Per path, its offset.
    load : numpy.ndarray
        ``load[e, j]``: seconds per byte of a shard that pair-link ``e`` carries at hop
        position ``j`` (offset included) in a one-round schedule.
    """
    hops = paths.hops
    longest = int(hops.max())
    cap = topology.pairs[2]
    load = np.zeros((cap.size, longest))
    offsets = np.zeros(len(paths), dtype=np.int64)
    order = np.argsort(-(paths.share * hops), kind="stable")
    k = np.arange(longest)
    shifts = np.arange(longest)
    for b0 in range(0, order.size, int(batch)):
        p = order[b0:b0 + int(batch)]
        h = hops[p]
        valid = k[None, :] < h[:, None]                                      # (B, L)
        edge = paths.edges[np.minimum(paths.ptr[p][:, None] + k[None, :], paths.edges.size - 1)]
        add = np.where(valid, paths.share[p][:, None] / cap[edge], 0.0)
        cell = np.minimum(shifts[:, None] + k[None, :], longest - 1)          # (L, L)
        now = load[edge[:, None, :], cell[None, :, :]]                        # (B, L, L)
        top = load.max(axis=0)[cell]                                          # (L, L)
        rise = np.where(valid[:, None, :], np.maximum(0.0, now + add[:, None, :] - top), 0.0)
        used = np.where(valid[:, None, :], now, 0.0)
        cost = rise.sum(axis=2) + 1e-3 * used.sum(axis=2)
        cost[shifts[None, :] > (longest - h)[:, None]] = np.inf
        best = np.argmin(cost, axis=1)
        offsets[p] = best
        step = best[:, None] + k[None, :]
        np.add.at(load, (edge[valid], step[valid]), add[valid])
    return offsets, load


def _round_profile(load, rounds):
    """Per-step loads of a ``rounds``-round schedule from the one-round loads ``load[e, j]``:
    step ``s`` carries ``1/rounds`` of every hop position ``j`` with ``0 <= s - j < rounds``."""
    links, width = load.shape
    steps = rounds + width - 1
    delta = np.zeros((links, steps + 1))
    delta[:, :width] += load
    delta[:, rounds:rounds + width] -= load
    return np.cumsum(delta, axis=1)[:, :steps] / rounds


def step_time_ratio(load, rounds):
    """The step-model bandwidth time of a ``rounds``-round schedule over the routes' own time
    (the busiest link's total load): ``sum_s max_e load(e, s) / max_e sum_s load(e, s)``."""
    total = load.sum(axis=1).max()
    if not total > 0:
        return 1.0
    return float(_round_profile(load, rounds).max(axis=0).sum() / total)


def _fewest_rounds(load, ramp, most):
    """The fewest rounds, at most ``most``, whose step-model time is within ``1 + ramp`` of the
    routes' time (``most`` if none is)."""
    if step_time_ratio(load, most) > 1.0 + ramp:
        return most
    low, high = 0, most            # ratio(high) within the ramp; ratio(low) not (or low = 0)
    r = 1
    while r < high:                # doubling, then bisection (the ratio falls with rounds,
        if step_time_ratio(load, r) <= 1.0 + ramp:      # up to rounding noise)
            high = r
            break
        low = r
        r *= 2
    while high - low > 1:
        mid = (low + high) // 2
        if step_time_ratio(load, mid) <= 1.0 + ramp:
            high = mid
        else:
            low = mid
    return high


def _latency_rounds(edge, topology, lp_time, ramp):
    """The most rounds whose summed link latencies stay within ``ramp`` of ``lp_time``: a link
    crossed by ``n`` path hops pays ``n`` latencies a round (at least one round)."""
    per_round = np.bincount(edge, minlength=topology.pairs[3].size) * topology.pairs[3]
    worst = float(per_round.max())
    if not worst > 0:
        return np.iinfo(np.int64).max
    return max(1, int(ramp * lp_time / worst))


def pipelined_alltoall_schedule(result, topology, *, rounds=None, ramp=0.05, balance=True,
                                max_transfers=4_000_000, size=None, batch=256):
    """An ``alltoall`` schedule that pipelines the path LP's routes to near the LP's time.

    Every path's byte range (its share of its pair's shard) is cut into ``rounds`` equal
    pieces; piece ``r`` crosses hop ``h`` of path ``p`` at step ``o_p + r + h + 1``. With
    ``balance`` the start offsets ``o_p`` (``0 <= o_p <= L - h_p`` for paths of at most ``L``
    links) are chosen by :func:`balance_offsets` so that in every step the busy links are
    about equally busy, if that lowers the step-model time (``meta["balanced"]`` says whether
    it did); otherwise they are 0. In a step every link carries one piece of each
    path through it, ``1/rounds`` of its LP load, so no step's busiest link exceeds
    ``1/rounds`` of the LP time ``(M/N) / lambda``; the schedule has ``rounds + L - 1`` steps
    and its bandwidth time is at most ``(rounds + L - 1) / rounds`` times the LP time.

    That bound is loose: only the first and last ``L - 1`` steps, where links carry less than
    a full round, cost more than their share, and balanced offsets make those steps cheap
    too. So ``rounds`` defaults to the fewest whose step-model time (computed exactly from the
    per-step link loads, before any transfer is made) is within ``1 + ramp`` of the LP time,
    at most ``ceil((L - 1) / ramp)`` (where the bound alone guarantees it), and at most as many
    as keep the schedule within ``max_transfers`` transfers (it has ``rounds`` x the links of
    all paths; ``None``: no limit; at least one round). Given the buffer ``size`` M, also at most
    as many as keep the links' latencies within ``ramp`` of the LP time: a link that carries
    ``n`` pieces per round pays ``rounds * n`` latencies (a 242-node Slim Fly at 16 GiB per
    node: 33 rounds cost 11% in latency and ran 1.127x the LP time, 14 rounds 1.09x). The link
    model, where a link moves on
    as soon as its data is there instead of waiting for the step's busiest link, runs well
    below the step-model time: within 1-2% of the LP time with a few balanced rounds
    (docs/alltoall.md).

    ``meta`` records ``lambda``, ``rounds``, ``balanced``, ``ramp``, ``max_hops``, ``longest_path``,
    ``latency_rounds`` (the cap from ``size``, or None), ``T_B_over_routes`` (the step-model time over the routes' own time, ``1/lambda`` for the
    LP's routes) and ``lp_time_per_byte``.

    >>> from topocoll.topology import topology
    >>> from topocoll.throughput.pathlp import path_throughput
    >>> t = topology("ring:6", bandwidth=1.0)
    >>> s = pipelined_alltoall_schedule(path_throughput(t, max_hops=0), t, rounds=8)
    >>> s.num_steps                                   # 8 rounds + paths of up to 3 links - 1
    10
    """
    paths = result.paths
    if paths is None or len(paths) == 0:
        raise UnsupportedError("a pipelined schedule needs the path LP's routes (method='path')")
    if not ramp > 0:
        raise UnsupportedError(f"ramp must be positive, got {ramp}")
    n = result.num_nodes
    hop_rows = _path_hops(paths, topology)
    p_idx, hop, edge, _ = hop_rows
    load = np.zeros((topology.pairs[2].size, int(paths.hops.max())))
    np.add.at(load, (edge, hop), paths.share[p_idx] / topology.pairs[2][edge])
    candidates = [(np.zeros(len(paths), dtype=np.int64), load)]
    if balance:
        candidates.append(balance_offsets(paths, topology, batch=batch))
    most = _most_rounds(paths, ramp, max_transfers)
    if rounds is not None and int(rounds) < 1:
        raise UnsupportedError(f"rounds must be at least 1, got {rounds}")
    latency_rounds = None
    if size is not None:
        latency_rounds = _latency_rounds(edge, topology, size / (n * result.lam), float(ramp))
        most = min(most, latency_rounds)
    offsets, rounds, ratio = _pick_offsets(candidates, rounds, float(ramp), most)
    transfers = _pipelined_transfers(paths, topology, n, hop_rows, offsets, rounds)
    meta = {"lambda": result.lam, "rounds": rounds, "balanced": bool(offsets.any()),
            "ramp": float(ramp), "max_hops": result.max_hops,
            "longest_path": int(paths.hops.max()), "latency_rounds": latency_rounds,
            "T_B_over_routes": ratio,
            "lp_time_per_byte": 1.0 / (n * result.lam) if result.lam > 0 else None,
            "note": "pipelined all-to-all from the path LP: piece r of path p crosses its hop "
                    "h at step o_p + r + h + 1"}
    return Schedule(topology, "alltoall", transfers, algorithm="alltoall-pipelined", meta=meta)


def _most_rounds(paths, ramp, max_transfers):
    """The most rounds :func:`pipelined_alltoall_schedule` considers before the latency cap:
    ``ceil((L - 1) / ramp)``, within ``max_transfers`` transfers (``None``: no limit), at
    least one."""
    most = max(1, int(np.ceil((int(paths.hops.max()) - 1) / float(ramp))))
    if max_transfers is not None:
        most = max(1, min(most, int(max_transfers) // int(paths.hops.sum())))
    return most


def _pick_offsets(candidates, rounds, ramp, most):
    """``(offsets, rounds, ratio)`` of the best of the ``candidates`` ``(offsets, load)``.

    Per candidate (start at once, balanced offsets): its rounds and step-model time; with
    ``rounds`` given the faster wins, else the one with fewer rounds (then the faster), so
    balancing never makes a schedule slower or bigger.
    """
    best = None
    for offs, ld in candidates:
        r = int(rounds) if rounds is not None else _fewest_rounds(ld, ramp, most)
        ratio = step_time_ratio(ld, r)
        key = (ratio, r) if rounds is not None else (r, ratio)
        if best is None or key < best[0]:
            best = (key, offs, r, ratio)
    return best[1:]


def _byte_ranges(paths, n):
    """Each path's byte range ``[a, b)`` in its pair's shard (``pair = src * n + dst``):
    shares laid end to end, pair by pair; neighbouring ranges share their boundary value
    exactly and the last one ends at 1.0. Returns ``(pair, start, end)``."""
    pair = paths.src.astype(np.int64) * n + paths.dst
    share = paths.share / np.bincount(pair, weights=paths.share, minlength=n * n)[pair]
    order = np.argsort(pair, kind="stable")
    sp, ss = pair[order], share[order]
    first = np.r_[True, sp[1:] != sp[:-1]]
    last = np.r_[sp[1:] != sp[:-1], True]
    csum = np.cumsum(ss)
    base = np.maximum.accumulate(np.where(first, csum - ss, 0.0))
    b_sorted = np.where(last, 1.0, csum - base)
    a_sorted = np.where(first, 0.0, np.r_[0.0, b_sorted[:-1]])
    start, end = np.empty(len(paths)), np.empty(len(paths))
    start[order], end[order] = a_sorted, b_sorted
    return pair, start, end


def _pipelined_transfers(paths, topology, n, hop_rows, offsets, rounds):
    """The transfers of :func:`pipelined_alltoall_schedule`: piece ``r`` of path ``p`` crosses
    its hop ``h`` at step ``offsets[p] + r + h + 1`` (``hop_rows``: :func:`_path_hops`; ``n``:
    the result's nodes, which number the shards)."""
    p_idx, hop, edge, prev = hop_rows
    pair, start, end = _byte_ranges(paths, n)
    dst = topology.pairs[1][edge]
    # one row per (round, path, hop): round-major, so a link's pieces of one step keep the
    # paths' order
    rows = p_idx.size
    r_all = np.repeat(np.arange(rounds), rows)
    p_all = np.tile(p_idx, rounds)
    a, b = start[p_all], end[p_all]

    def cut(k):          # the boundary of piece k of [a, b): the same float on both sides
        return np.where(k <= 0, a, np.where(k >= rounds, b, a + (b - a) * k / rounds))
    lo, hi = cut(r_all), cut(r_all + 1)
    keep = hi > lo
    step = r_all + np.tile(hop + offsets[p_idx], rounds) + 1
    return transfer_array(step[keep], np.tile(prev, rounds)[keep], np.tile(dst, rounds)[keep],
                          (pair[p_all])[keep], lo[keep], hi[keep])
