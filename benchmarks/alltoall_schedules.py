"""All-to-all schedules against the LP: the pipelined schedule of the path LP's routes
(``topocoll schedule TOPO -c alltoall``), up to 256 nodes.

For each topology: the routes' time ``(M/N) / lambda`` at 16 GiB per node (latency well
under 5% of the time), and the pipelined schedule's step-model bandwidth time ``T_B`` (also
with one round and no offsets: the lockstep hop-by-hop schedule when shares are whole chunks)
and link-model time (``topocoll.schedule.linkmodel.simulate``) over it. Target: the link-model time at most
1.10x. Routes are the LP optimum's (``alltoall_routes``: the path LP below 60 000 link-LP
columns, the column generation from there on; ``method``) and ``lambda`` its optimum, certified
within 1e-4 (column generation) or 1e-6. Wall seconds: build and verify the schedule, median of
3 runs (the LP solve is timed once, in ``LP s``, and so is the simulation, in ``sim s``).

    python benchmarks/alltoall_schedules.py            # all cases
    python benchmarks/alltoall_schedules.py torus:16x16 # some
"""

import statistics
import sys
import time

from topocoll.schedule.cost import evaluate
from topocoll.schedule.linkmodel import simulate
from topocoll.schedule.verify import verify
from topocoll.throughput import alltoall_routes
from topocoll.throughput.schedule import pipelined_alltoall_schedule
from topocoll.topology import topology

SIZE = 2**34
TARGET = 1.10
CASES = ["torus:4x4", "torus:8x8", "hypercube:4", "hypercube:6", "randomregular:16,4:1",
         "randomregular:64,4:1", "debruijn:2,5", "slimfly:5", "torus:16x16", "hypercube:8",
         "randomregular:256,4:1", "randomregular:256,8:1", "debruijn:2,8", "slimfly:11"]


def routes(t):
    """The LP's optimal routes and the seconds they took."""
    t0 = time.perf_counter()
    res = alltoall_routes(t)
    return res, time.perf_counter() - t0


def main(names=()):
    cases = [c for c in CASES if not names or c in names]
    header = (f"{'topology':<22}{'N':>4}{'method':>7}{'LP s':>7}{'rounds':>7}{'transfers':>11}"
              f"{'1 round T_B/LP':>16}{'T_B/LP':>8}{'link/LP':>9}{'target':>8}{'s':>7}"
              f"{'sim s':>7}")
    print(header)
    print("-" * len(header))
    for spec in cases:
        t = topology(spec)
        res, lp_seconds = routes(t)
        times = []
        for _ in range(3):
            t0 = time.perf_counter()
            s = pipelined_alltoall_schedule(res, t, size=SIZE)
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
        print(f"{spec:<22}{t.num_nodes:>4}{res.method:>7}{lp_seconds:>7.1f}{s.meta['rounds']:>7}"
              f"{s.num_transfers:>11}"
              f"{lock:>16.3f}{pipe:>8.3f}{link:>9.3f}{TARGET:>8.2f}"
              f"{statistics.median(times):>7.1f}{sim:>7.1f}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
