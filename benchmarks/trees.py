"""Spanning-tree packing (algorithm ``trees``) against BFB, the node-bandwidth bound and the
exact optimum ``T*`` from the cuts, bandwidth time only (``T_B``, step model, any buffer size).

For each topology and collective: ``T*`` (``tree_packing_bound``), the node-bandwidth bound over
``T*`` (below 1 where some cut is tighter than every node), BFB's ``T_B`` and ours over ``T*`` at
the default K (the smallest power of two within 1% of ``T*``, at most 256) and at K = 1, the
trees, their depth, the transfers and the seconds to pack and build (median of ``--runs``).

    python benchmarks/trees.py [--runs 3] [--large]     # --large adds genkautz:1024,4
"""

import argparse
import statistics
import time

from topocoll.collectives import collective as _collective
from topocoll.schedule.cost import bandwidth_lower_bound, evaluate
from topocoll.schedule.verify import verify
from topocoll.synth import generate
from topocoll.synth.packing import tree_packing_bound, trees_schedule
from topocoll.topology import topology
from topocoll.topology.families.lattice import with_dimension_bandwidth

M = 2**30
CASES = ["torus:8x8", "hypercube:6", "circulant:32:1,5", "kautz:2,3", "kautz:3,3",
         "genkautz:50,3", "genkautz:128,4", "debruijn:2,6", "randomdigraph:32,2",
         "randomdigraph:64,3", "randomregular:64,3", "mesh:6x6 50/25"]
LARGE = ["genkautz:1024,4"]


def make(spec):
    if spec == "mesh:6x6 50/25":
        return with_dimension_bandwidth(topology("mesh:6x6"), ["25GiB/s", "50GiB/s"])
    return topology(spec)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--large", action="store_true")
    ap.add_argument("--collective", default="allgather")
    args = ap.parse_args()
    coll = args.collective
    print(f"{'topology':<22}{'node/T*':>8}{'BFB/T*':>8}{'trees/T*':>9}{'K':>5}{'K=1/T*':>8}"
          f"{'trees':>7}{'depth':>6}{'transfers':>11}{'seconds':>9}  verified")
    for spec in CASES + (LARGE if args.large else []):
        t = make(spec)
        opt = tree_packing_bound(t, coll).time(M)
        node = bandwidth_lower_bound(_collective(coll), t) * M / opt
        seconds = []
        for _ in range(args.runs):
            t0 = time.perf_counter()
            s = trees_schedule(t, coll)
            seconds.append(time.perf_counter() - t0)
        ours = evaluate(s, M, check=False).T_B / opt
        one = evaluate(trees_schedule(t, coll, chunks=1), M, check=False).T_B / opt
        bfb = evaluate(generate(t, coll, "bfb"), M, check=False).T_B / opt
        print(f"{spec:<22}{node:>8.3f}{bfb:>8.3f}{ours:>9.4f}{s.meta['chunks']:>5}{one:>8.3f}"
              f"{s.meta['trees']:>7}{s.meta['max_depth']:>6}{s.num_transfers:>11}"
              f"{statistics.median(seconds):>9.2f}  {verify(s).valid}", flush=True)


if __name__ == "__main__":
    main()
