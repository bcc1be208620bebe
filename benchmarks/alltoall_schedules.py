"""All-to-all schedules against the LP: the pipelined schedule of the path LP's routes
(``topocoll schedule TOPO -c alltoall``), up to 256 nodes.

For each topology: the routes' time ``(M/N) / lambda`` at 16 GiB per node (latency well
under 5% of the time), and the pipelined schedule's step-model bandwidth time ``T_B`` (also
with one round and no offsets: the lockstep hop-by-hop schedule when shares are whole chunks)
and link-model time (``topocoll.schedule.linkmodel.simulate``) over it. Target: the link-model time at most
1.10x. Routes ``lp`` are the path LP's (``path_throughput``) and ``lambda`` its optimum; the
path LP does not finish in minutes at 256 nodes yet, so those rows (routes ``spread``) split
each pair evenly over two random shortest paths and time against that routing's own
``lambda`` (its busiest link) until the column-generation solver lands. Wall seconds: build and
verify the schedule, median of 3 runs (the LP solve not included; the simulation is timed
once, in ``sim s``).

    python benchmarks/alltoall_schedules.py            # all cases
    python benchmarks/alltoall_schedules.py torus:16x16 # some
"""

import statistics
import sys
import time

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import shortest_path

from topocoll.schedule.cost import evaluate
from topocoll.schedule.linkmodel import simulate
from topocoll.schedule.verify import verify
from topocoll.throughput import path_throughput
from topocoll.throughput.result import PathSet
from topocoll.throughput.schedule import pipelined_alltoall_schedule
from topocoll.topology import topology

SIZE = 2**34
TARGET = 1.10
CASES = [("torus:4x4", "lp"), ("torus:8x8", "lp"), ("hypercube:4", "lp"), ("hypercube:6", "lp"),
         ("randomregular:16,4:1", "lp"), ("randomregular:64,4:1", "lp"), ("debruijn:2,5", "lp"),
         ("slimfly:5", "lp"), ("torus:16x16", "spread"), ("hypercube:8", "spread"),
         ("randomregular:256,4:1", "spread"), ("randomregular:256,8:1", "spread"),
         ("debruijn:2,8", "spread"), ("slimfly:11", "spread")]


class SpreadRoutes:
    """Each pair split evenly over two random shortest paths (one if both draws agree): an
    all-to-all result with ``paths`` and the routing's own ``lambda``."""

    def __init__(self, t, seed=0):
        psrc, pdst, cap = t.pairs[0], t.pairs[1], t.pairs[2]
        n = t.num_nodes
        dist = shortest_path(csr_matrix((np.ones(psrc.size), (psrc, pdst)), shape=(n, n)),
                             unweighted=True).astype(np.int64)
        xs, ys = np.nonzero(~np.eye(n, dtype=bool))
        rng = np.random.default_rng(seed)
        longest = int(dist.max())
        # out-links of every node, padded with -1: table[v, j]
        order = np.argsort(psrc, kind="stable")
        deg = np.bincount(psrc, minlength=n)
        table = np.full((n, int(deg.max())), -1)
        table[psrc[order], np.arange(psrc.size) - np.repeat(np.cumsum(deg) - deg, deg)] = order
        draws = []
        for _ in range(2):
            at = xs.copy()
            hops = np.full((xs.size, longest), -1)
            for h in range(longest):
                left = dist[at, ys]
                # among the links out of `at` that get one hop closer, a random one
                out = table[at]
                ok = (out >= 0) & (dist[pdst[out], ys[:, None]] == left[:, None] - 1)
                pick = out[np.arange(xs.size), np.argmax(np.where(ok, rng.random(ok.shape),
                                                                  -1.0), axis=1)]
                moving = left > 0
                hops[moving, h] = pick[moving]
                at = np.where(moving, pdst[pick], at)
            draws.append(hops)
        same = np.all(draws[0] == draws[1], axis=1)
        rows = np.concatenate([draws[0], draws[1][~same]])
        src = np.r_[xs, xs[~same]]
        dst = np.r_[ys, ys[~same]]
        share = np.r_[np.where(same, 1.0, 0.5), np.full(int((~same).sum()), 0.5)]
        order = np.lexsort((dst, src))
        rows, src, dst, share = rows[order], src[order], dst[order], share[order]
        count = (rows >= 0).sum(axis=1)
        self.paths = PathSet(src, dst, np.r_[0, np.cumsum(count)], rows[rows >= 0], share)
        load = np.bincount(self.paths.edges, weights=np.repeat(share, count),
                           minlength=cap.size)
        self.lam = float(1.0 / np.max(load / cap))
        self.num_nodes, self.max_hops = n, 0


def routes(t, kind):
    if kind == "lp":
        return path_throughput(t, bounds=False)
    return SpreadRoutes(t)


def main(names=()):
    cases = [c for c in CASES if not names or c[0] in names]
    header = (f"{'topology':<22}{'N':>4}{'routes':>7}{'rounds':>7}{'transfers':>11}"
              f"{'1 round T_B/LP':>16}{'T_B/LP':>8}{'link/LP':>9}{'target':>8}{'s':>7}"
              f"{'sim s':>7}")
    print(header)
    print("-" * len(header))
    for spec, kind in cases:
        t = topology(spec)
        res = routes(t, kind)
        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            s = pipelined_alltoall_schedule(res, t)
            if not verify(s).valid:
                raise SystemExit(f"{spec}: the pipelined schedule does not verify")
            times.append(time.perf_counter() - t0)
        lp = SIZE / t.num_nodes / res.lam
        lock = evaluate(pipelined_alltoall_schedule(res, t, rounds=1, balance=False), SIZE,
                        check=False).T_B / lp
        pipe = evaluate(s, SIZE, check=False).T_B / lp
        t0 = time.perf_counter()
        link = simulate(s, SIZE).time / lp
        sim = time.perf_counter() - t0
        print(f"{spec:<22}{t.num_nodes:>4}{kind:>7}{s.meta['rounds']:>7}{s.num_transfers:>11}"
              f"{lock:>16.3f}{pipe:>8.3f}{link:>9.3f}{TARGET:>8.2f}"
              f"{statistics.median(times):>7.1f}{sim:>7.1f}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
