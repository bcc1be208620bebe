"""All-to-all throughput at scale: ``throughput()`` with its default method on random regular
graphs (Jellyfish) of degree 4 and 8 (the whole link LP up to 64 nodes; from 128 nodes on,
shortest paths balanced to the distance bound where that bound is tight, as on degree 8, and
otherwise the column generation seeded by multiplicative weights) and on tori and hypercubes
of up to 4096 nodes (the symmetric LP: one source's flow under the translation group), the
latter against their closed forms; every result certified by its dual bound (the gap column).

Targets (certified gap at most 1e-4): random 4-regular 512 nodes <= 60 s, 1024 nodes <= 10 min,
random 8-regular 1024 nodes <= 5 min, the 64x64 torus <= 10 s exact against 8/k^3; memory
under 8 GiB. Every case runs in a fresh process (so peak memory is its own) ``--repeat`` times;
times are medians of wall clock and of CPU time (CPU time is what an idle machine would show
when other work shares the cores). Also prints lambda, the certified gap and lambda over the
best bound.

    python benchmarks/alltoall.py                 # 64..1024 nodes, degree 4 and 8
    python benchmarks/alltoall.py --quick         # 64 and 128 nodes only
    python benchmarks/alltoall.py --case randomregular:256,8 --repeat 1
"""

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time

TARGET = {"randomregular:64,4": 2.0, "randomregular:64,8": 2.0,
          "randomregular:512,4": 60.0, "randomregular:1024,4": 600.0,
          "randomregular:1024,8": 300.0, "torus:64x64": 10.0}    # seconds
MAX_GAP = 1e-4
MEMORY_TARGET_MB = 8 * 1024
FULL = [f"randomregular:{n},{d}" for d in (4, 8) for n in (64, 128, 256, 512, 1024)] + \
    ["torus:16x16", "torus:32x32", "torus:64x64", "hypercube:12"]
QUICK = [f"randomregular:{n},{d}" for d in (4, 8) for n in (64, 128)] + ["torus:64x64"]


def closed_form(spec):
    """lambda of a unit-bandwidth k x k torus (k even, 8/k^3) or hypercube:d (2/N), else None."""
    family, _, arg = spec.partition(":")
    if family == "torus" and "x" in arg:
        k, k2 = map(int, arg.split("x"))
        return 8 / k ** 3 if k == k2 and k % 2 == 0 else None
    if family == "hypercube":
        return 2 / 2 ** int(arg)
    return None


def run_case(spec):
    import importlib

    importlib.import_module("highspy")  # keep the import out of the timing
    from topocoll.throughput import throughput
    from topocoll.topology import topology

    topo = topology(spec, bandwidth=1.0)
    w0, c0 = time.perf_counter(), time.process_time()
    res = throughput(topo, bounds=False)
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    from topocoll.topology.cuts import throughput_bounds

    best = throughput_bounds(topo)["best"]
    exact = closed_form(spec)
    return {"spec": spec, "nodes": topo.num_nodes, "links": topo.num_links, "method": res.method,
            "closed_form_error": None if exact is None else abs(res.lam / exact - 1),
            "status": res.status_name, "lambda": res.lam, "gap": res.gap,
            "over_bound": res.lam / best, "wall": wall, "cpu": cpu,
            "solve": res.solve_seconds, "build": res.build_seconds,
            "iterations": res.iterations,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def measure(spec, repeat):
    runs = []
    for _ in range(repeat):
        done = subprocess.run([sys.executable, __file__, "--child", spec], capture_output=True,
                              text=True, check=True)
        runs.append(json.loads(done.stdout))
    out = dict(runs[-1])
    for key in ("wall", "cpu", "solve", "build", "peak_rss_mb"):
        out[key] = statistics.median(r[key] for r in runs)
    out["runs"] = len(runs)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--case", action="append")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(run_case(args.child)))
        return
    cases = args.case or (QUICK if args.quick else FULL)
    header = (f"{'case':<22}{'N':>5}{'links':>7}{'lambda':>12}{'gap':>9}{'lam/bound':>10}"
              f"{'wall s':>9}{'cpu s':>9}{'target s':>9}{'cpu/target':>11}{'MiB':>8}"
              f"  method     vs closed form")
    print(header)
    print("-" * len(header))
    for spec in cases:
        target = TARGET.get(spec)
        r = measure(spec, args.repeat)
        n = r["nodes"]
        ratio = f"{r['cpu'] / target:.2f}" if target else "-"
        err = r["closed_form_error"]
        exact = "-" if err is None else f"{err:.1e}"
        print(f"{spec:<22}{n:>5}{r['links']:>7}{r['lambda']:>12.6g}{r['gap']:>9.1e}"
              f"{r['over_bound']:>10.3f}{r['wall']:>9.2f}{r['cpu']:>9.2f}"
              f"{target if target else '-':>9}{ratio:>11}{r['peak_rss_mb']:>8.0f}"
              f"  {r['method']:<10} {exact}", flush=True)
    print("targets: " + ", ".join(f"{k} <= {v:g} s" for k, v in TARGET.items())
          + f", gap <= {MAX_GAP:g}, memory < {MEMORY_TARGET_MB} MiB; medians of {args.repeat} "
          "runs")


if __name__ == "__main__":
    main()
