"""All-to-all schedules against the LP: the pipelined schedule of the path LP's routes
(``topocoll schedule TOPO -c alltoall``) next to the lockstep hop-by-hop one
(``topocoll alltoall -o``).

For each topology: the LP time ``(M/N) / lambda`` at 16 GiB per node (latency well under 5%
of the time), and each schedule's step-model bandwidth time ``T_B`` and link-model time over it.
Target: the pipelined schedule's link-model time at most 1.10x the LP time. Wall seconds are
medians of 3 runs (routes, schedule and verification).

    python benchmarks/alltoall_schedules.py
"""

import statistics
import time

from topocoll.schedule.cost import evaluate
from topocoll.schedule.linkmodel import simulate
from topocoll.schedule.verify import verify
from topocoll.throughput import alltoall_schedule, path_throughput
from topocoll.throughput.schedule import pipelined_alltoall_schedule
from topocoll.topology import topology

SIZE = 2**34
TARGET = 1.10
CASES = ["torus:4x4", "torus:8x8", "hypercube:4", "hypercube:6", "randomregular:16,4:1",
         "randomregular:64,4:1", "debruijn:2,5", "slimfly:5"]


def main():
    header = (f"{'topology':<22}{'N':>4}{'rounds':>7}{'transfers':>11}{'lockstep T_B/LP':>16}"
              f"{'pipelined T_B/LP':>17}{'link/LP':>9}{'target':>8}{'s':>7}")
    print(header)
    print("-" * len(header))
    for spec in CASES:
        t = topology(spec)
        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            res = path_throughput(t, bounds=False)
            s = pipelined_alltoall_schedule(res, t)
            if not verify(s).valid:
                raise SystemExit(f"{spec}: the pipelined schedule does not verify")
            times.append(time.perf_counter() - t0)
        lp = SIZE / t.num_nodes / res.lam
        lock = evaluate(alltoall_schedule(res, t), SIZE, check=False).T_B / lp
        pipe = evaluate(s, SIZE, check=False).T_B / lp
        link = simulate(s, SIZE).time / lp
        print(f"{spec:<22}{t.num_nodes:>4}{s.meta['rounds']:>7}{s.num_transfers:>11}"
              f"{lock:>16.3f}{pipe:>17.3f}{link:>9.3f}{TARGET:>8.2f}"
              f"{statistics.median(times):>7.1f}", flush=True)


if __name__ == "__main__":
    main()
