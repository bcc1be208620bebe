"""BFB at scale: generation and verification time for hypercubes and 2D tori.

Prints one table with the paper's generation figures (seed 002, section 8.5.1: hypercube of
1024 nodes 52.7 s, 2D torus of 2500 nodes 61.1 s) and our ratio to them. Each case runs in a
fresh process (so peak memory is its own) ``--repeat`` times; times are medians.

    python benchmarks/bfb_scale.py                 # full table (several minutes)
    python benchmarks/bfb_scale.py --quick         # small cases only
    python benchmarks/bfb_scale.py --case torus:50x50 --repeat 1
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
FULL = ["hypercube:6", "hypercube:7", "hypercube:8", "hypercube:9", "hypercube:10",
        "torus:8x8", "torus:16x16", "torus:32x32", "torus:40x40", "torus:50x50"]
QUICK = ["hypercube:6", "hypercube:7", "hypercube:8", "torus:8x8", "torus:16x16"]


def run_case(spec, collective):
    import topocoll as tc

    topo = tc.topology(spec)
    t0 = time.perf_counter()
    schedule = tc.generate(topo, collective, "bfb")
    t1 = time.perf_counter()
    report = tc.verify(schedule)
    t2 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "s.json")
        tc.save_schedule(schedule, path)
        t3 = time.perf_counter()
        size = os.path.getsize(path)
        back = tc.load_schedule(path)
        t4 = time.perf_counter()
    e = tc.evaluate(schedule, 2**20, check=False)
    return {"spec": spec, "nodes": topo.num_nodes, "transfers": schedule.num_transfers,
            "steps": schedule.num_steps, "valid": report.valid,
            "round_trip": back.num_transfers == schedule.num_transfers,
            "bw_ratio": e.bw_ratio, "generate": t1 - t0, "verify": t2 - t1, "write": t3 - t2,
            "read": t4 - t3, "file_mb": size / 2**20,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def measure(spec, collective, repeat):
    runs = []
    for _ in range(repeat):
        out = subprocess.run([sys.executable, __file__, "--worker", spec, "--collective",
                              collective], capture_output=True, text=True, check=True)
        runs.append(json.loads(out.stdout))
    row = dict(runs[0])
    for key in ("generate", "verify", "write", "read", "peak_rss_mb"):
        row[key] = statistics.median(r[key] for r in runs)
    row["runs"] = repeat
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", action="append", help="topology spec (repeatable)")
    parser.add_argument("--quick", action="store_true", help="small cases only")
    parser.add_argument("--repeat", type=int, default=3, help="runs per case (median)")
    parser.add_argument("--collective", default="allgather")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(run_case(args.worker, args.collective)))
        return
    cases = args.case or (QUICK if args.quick else FULL)
    head = (f"{'topology':>14} {'N':>5} {'transfers':>10} {'steps':>5} {'valid':>5} "
            f"{'T_B/bound':>9} {'gen s':>8} {'verify s':>8} {'write s':>7} {'read s':>7} "
            f"{'file MiB':>8} {'RSS MiB':>7} {'paper s':>7} {'gen/paper':>9}")
    print(f"BFB {args.collective}, median of {args.repeat} runs, {os.cpu_count()} cores")
    print(head)
    print("-" * len(head))
    for spec in cases:
        r = measure(spec, args.collective, args.repeat)
        paper = PAPER.get(spec)
        ratio = f"{r['generate'] / paper:9.3f}" if paper else f"{'':>9}"
        print(f"{spec:>14} {r['nodes']:>5} {r['transfers']:>10} {r['steps']:>5} "
              f"{str(r['valid'] and r['round_trip']):>5} {r['bw_ratio']:>9.6f} "
              f"{r['generate']:>8.2f} {r['verify']:>8.2f} {r['write']:>7.2f} {r['read']:>7.2f} "
              f"{r['file_mb']:>8.1f} {r['peak_rss_mb']:>7.0f} "
              f"{paper if paper else '':>7} {ratio}", flush=True)


if __name__ == "__main__":
    main()
