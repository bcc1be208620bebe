"""BFB at scale: generation and verification time for hypercubes and 2D tori.

Prints one table with the generation figures of Zhao et al., "Efficient Direct-Connect Topologies
for Collective Communications", NSDI 2025, section 8.5.1 (hypercube of 1024 nodes 52.7 s, 2D torus
of 2500 nodes 61.1 s), our speed-up over them (paper / ours, for generation with the schedule file
written) and our own targets. Each case runs in a fresh process (so peak memory is its own)
``--repeat`` times; times are medians.

    python benchmarks/bfb_scale.py                 # full table (several minutes)
    python benchmarks/bfb_scale.py --quick         # small cases only
    python benchmarks/bfb_scale.py --case torus:50x50 --repeat 1
    python benchmarks/bfb_scale.py --no-symmetry --workers 1   # every node's problems, one core
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

PAPER = {"hypercube:10": 52.7, "torus:50x50": 61.1}
# our targets for generation with the schedule file written, seconds
TARGET = {"hypercube:10": 5.0, "torus:50x50": 6.0, "genkautz:1024,4": 10.0}
FULL = ["hypercube:6", "hypercube:7", "hypercube:8", "hypercube:9", "hypercube:10",
        "torus:8x8", "torus:16x16", "torus:32x32", "torus:40x40", "torus:50x50",
        "genkautz:256,4", "genkautz:1024,4"]
QUICK = ["hypercube:6", "hypercube:7", "hypercube:8", "torus:8x8", "torus:16x16"]


def run_case(spec, collective, symmetry, workers):
    import scipy.optimize  # noqa: F401 - imported lazily by BFB; keep imports out of the timing

    import topocoll as tc

    topo = tc.build_topology(spec)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "s.json")
        t0 = time.perf_counter()
        schedule = tc.generate(topo, collective, "bfb", symmetry=symmetry, workers=workers)
        t1 = time.perf_counter()
        tc.save_schedule(schedule, path)
        t2 = time.perf_counter()
        report = tc.verify(schedule)
        t3 = time.perf_counter()
        size = os.path.getsize(path)
        back = tc.load_schedule(path)
        t4 = time.perf_counter()
    e = tc.evaluate(schedule, 2**20, check=False)
    return {"spec": spec, "nodes": topo.num_nodes, "transfers": schedule.num_transfers,
            "steps": schedule.num_steps, "valid": report.valid,
            "round_trip": back.num_transfers == schedule.num_transfers,
            "bw_ratio": e.bw_ratio, "generate": t1 - t0, "write": t2 - t1,
            "gen_write": t2 - t0, "verify": t3 - t2, "read": t4 - t3, "file_mb": size / 2**20,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def measure(spec, collective, repeat, symmetry, workers):
    runs = []
    for _ in range(repeat):
        cmd = [sys.executable, __file__, "--worker", spec, "--collective", collective,
               "--workers", str(workers)]
        if not symmetry:
            cmd.append("--no-symmetry")
        out = subprocess.run(cmd, capture_output=True, text=True, check=True)
        runs.append(json.loads(out.stdout))
    row = dict(runs[0])
    for key in ("generate", "write", "gen_write", "verify", "read", "peak_rss_mb"):
        row[key] = statistics.median(r[key] for r in runs)
    row["runs"] = repeat
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", action="append", help="topology spec (repeatable)")
    parser.add_argument("--quick", action="store_true", help="small cases only")
    parser.add_argument("--repeat", type=int, default=3, help="runs per case (median)")
    parser.add_argument("--collective", default="allgather")
    parser.add_argument("--no-symmetry", action="store_true",
                        help="solve every node's problems (no translation symmetry)")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1,
                        help="processes for the load-balancing problems")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(run_case(args.worker, args.collective, not args.no_symmetry,
                                  args.workers)))
        return
    cases = args.case or (QUICK if args.quick else FULL)
    head = (f"{'topology':>15} {'N':>5} {'transfers':>10} {'steps':>5} {'valid':>5} "
            f"{'T_B/bound':>9} {'gen s':>7} {'write s':>7} {'gen+wr s':>8} {'target':>6} "
            f"{'verify s':>8} {'read s':>7} {'file MiB':>8} {'RSS MiB':>7} {'paper s':>7} "
            f"{'paper/us':>8}")
    mode = "no symmetry" if args.no_symmetry else "symmetry where found"
    print(f"BFB {args.collective}, {mode}, {args.workers} workers, median of {args.repeat} "
          f"runs, {os.cpu_count()} cores; gen+wr = generation with the schedule file written")
    print(head)
    print("-" * len(head))
    for spec in cases:
        r = measure(spec, args.collective, args.repeat, not args.no_symmetry, args.workers)
        paper = PAPER.get(spec)
        speedup = f"{paper / r['gen_write']:8.1f}" if paper else f"{'':>8}"
        target = TARGET.get(spec, "")
        print(f"{spec:>15} {r['nodes']:>5} {r['transfers']:>10} {r['steps']:>5} "
              f"{str(r['valid'] and r['round_trip']):>5} {r['bw_ratio']:>9.6f} "
              f"{r['generate']:>7.2f} {r['write']:>7.2f} {r['gen_write']:>8.2f} {target:>6} "
              f"{r['verify']:>8.2f} {r['read']:>7.2f} {r['file_mb']:>8.1f} "
              f"{r['peak_rss_mb']:>7.0f} {paper if paper else '':>7} {speedup}", flush=True)


if __name__ == "__main__":
    main()
