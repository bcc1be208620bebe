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

``--symmetric`` times the symmetric form instead (orbit representatives only; the explicit
schedule of 16,384 nodes has hundreds of millions of transfers and is never built): allgather and
allreduce on torus:64x64, torus:128x128, hypercube:12 and hypercube:14, with the wall seconds of
generate, verify and evaluate (step model, 1 MiB), their total and the peak RSS; target: total
under 60 s and peak under 4 GB at 16,384 nodes. ``--growth`` times the same steps against N
from 256 to 16,384 for the torus and hypercube families and prints the fitted exponents of
time ~ N^a and peak RSS ~ N^b (least squares in log-log); ``--plot FILE.png`` draws them.

    python benchmarks/bfb_scale.py --symmetric --repeat 3
    python benchmarks/bfb_scale.py --growth --collective allreduce --plot growth.png
"""

import argparse
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

from hardware import machine   # benchmarks/hardware.py, next to this script

PAPER = {"hypercube:10": 52.7, "torus:50x50": 61.1}
# our targets for generation with the schedule file written, seconds
TARGET = {"hypercube:10": 5.0, "torus:50x50": 6.0, "genkautz:1024,4": 10.0}
FULL = ["hypercube:6", "hypercube:7", "hypercube:8", "hypercube:9", "hypercube:10",
        "torus:8x8", "torus:16x16", "torus:32x32", "torus:40x40", "torus:50x50",
        "genkautz:256,4", "genkautz:1024,4"]
QUICK = ["hypercube:6", "hypercube:7", "hypercube:8", "torus:8x8", "torus:16x16"]
SYMMETRIC = ["torus:64x64", "torus:128x128", "hypercube:12", "hypercube:14"]
SYMMETRIC_TARGET = {"seconds": 60.0, "peak_mb": 4000.0}   # at 16,384 nodes, per collective
GROWTH = {"torus": ["torus:16x16", "torus:16x32", "torus:32x32", "torus:32x64", "torus:64x64",
                    "torus:64x128", "torus:128x128"],
          "hypercube": [f"hypercube:{k}" for k in range(8, 15)]}


def peak_rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


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


def run_symmetric_case(spec, collective):
    """Generate, verify and price the symmetric BFB schedule; seconds of each and peak RSS."""
    import scipy.optimize  # noqa: F401 - imported lazily by BFB; keep imports out of the timing

    import topocoll as tc

    topo = tc.build_topology(spec)
    base = peak_rss_mb()
    t0 = time.perf_counter()
    schedule = tc.generate(topo, collective, "bfb", form="symmetric")
    t1 = time.perf_counter()
    report = tc.verify(schedule)
    t2 = time.perf_counter()
    e = tc.evaluate(schedule, 2**20, check=False)
    t3 = time.perf_counter()
    return {"spec": spec, "nodes": topo.num_nodes, "form": schedule.form,
            "representatives": int(schedule.transfers.size), "transfers": schedule.num_transfers,
            "steps": schedule.num_steps, "valid": bool(report.valid), "bw_ratio": e.bw_ratio,
            "generate": t1 - t0, "verify": t2 - t1, "evaluate": t3 - t2, "total": t3 - t0,
            "base_rss_mb": base, "peak_rss_mb": peak_rss_mb()}


MEMORY_LIMIT_GIB = [6.0]   # set from --memory-limit


MEDIAN_KEYS = ("generate", "write", "gen_write", "verify", "read", "evaluate", "total",
               "base_rss_mb", "peak_rss_mb")


def measure(spec, collective, repeat, symmetry, workers, symmetric=False):
    """Median of ``repeat`` runs of one case, each in a fresh process."""
    runs = []
    for _ in range(repeat):
        cmd = [sys.executable, __file__, "--worker", spec, "--collective", collective,
               "--workers", str(workers), "--memory-limit", str(MEMORY_LIMIT_GIB[0])]
        if not symmetry:
            cmd.append("--no-symmetry")
        if symmetric:
            cmd.append("--symmetric")
        out = subprocess.run(cmd, capture_output=True, text=True)
        if out.returncode != 0:
            tail = " | ".join(out.stderr.strip().splitlines()[-3:])
            print(f"{spec} {collective}: worker exit code {out.returncode} ({tail or 'no output'}"
                  "); case left out", file=sys.stderr, flush=True)
            return None
        runs.append(json.loads(out.stdout))
    row = dict(runs[0])
    for key in MEDIAN_KEYS:
        if key in row:
            row[key] = statistics.median(r[key] for r in runs)
    row["runs"] = repeat
    return row


def symmetric_table(cases, collectives, repeat):
    head = (f"{'topology':>14} {'collective':>10} {'N':>6} {'reps':>6} {'transfers':>11} "
            f"{'steps':>5} {'valid':>5} {'T_B/bound':>9} {'gen s':>6} {'verify s':>8} "
            f"{'eval s':>6} {'total s':>7} {'target':>6} {'ratio':>5} {'RSS MB':>7} "
            f"{'(import)':>8}")
    print(f"BFB in symmetric form, median of {repeat} runs, each in a fresh process; "
          f"{machine()}; ratio = total / target; (import) = RSS before generating")
    print(head)
    print("-" * len(head))
    for spec in cases:
        for collective in collectives:
            r = measure(spec, collective, repeat, True, 1, symmetric=True)
            if r is None:
                continue
            target = SYMMETRIC_TARGET["seconds"]
            print(f"{spec:>14} {collective:>10} {r['nodes']:>6} {r['representatives']:>6} "
                  f"{r['transfers']:>11} {r['steps']:>5} {str(r['valid']):>5} "
                  f"{r['bw_ratio']:>9.6f} {r['generate']:>6.2f} {r['verify']:>8.2f} "
                  f"{r['evaluate']:>6.2f} {r['total']:>7.2f} {target:>6.0f} "
                  f"{r['total'] / target:>5.3f} {r['peak_rss_mb']:>7.0f} "
                  f"{r['base_rss_mb']:>8.0f}", flush=True)


def fit_exponent(xs, ys):
    """Least-squares slope of log y against log x: y ~ x^slope."""
    lx = [math.log(x) for x in xs]
    ly = [math.log(y) for y in ys]
    mx, my = sum(lx) / len(lx), sum(ly) / len(ly)
    sxx = sum((a - mx) ** 2 for a in lx)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / sxx if sxx else float("nan")


TAIL_FROM = 2048   # the exponents are also fitted on N >= this (start-up costs fade)


def fit_all(rows):
    """Fitted exponents of one family's rows: total, generate and verify time, peak RSS, and
    RSS above the imports."""
    n = [r["nodes"] for r in rows]
    fit = {key: fit_exponent(n, [max(r[key], 1e-4) for r in rows])
           for key in ("total", "generate", "verify")}
    fit["time"] = fit.pop("total")
    fit["rss"] = fit_exponent(n, [r["peak_rss_mb"] for r in rows])
    fit["extra_rss"] = fit_exponent(n, [max(r["peak_rss_mb"] - r["base_rss_mb"], 1e-3)
                                        for r in rows])
    return fit


def growth(collective, repeat, families, plot):
    """Time and peak RSS against N, per family, with fitted exponents."""
    print(f"BFB {collective} in symmetric form against N, median of {repeat} runs, each in a "
          f"fresh process; {machine()}; time = generate + verify + evaluate; extra RSS = peak "
          f"minus RSS after imports")
    head = (f"{'topology':>14} {'N':>6} {'reps':>6} {'gen s':>6} {'verify s':>8} {'eval s':>6} "
            f"{'total s':>7} {'RSS MB':>7} {'extra MB':>8}")
    print(head)
    print("-" * len(head))
    series = {}
    for family in families:
        rows = []
        for spec in GROWTH[family]:
            r = measure(spec, collective, repeat, True, 1, symmetric=True)
            if r is None:
                continue
            rows.append(r)
            print(f"{spec:>14} {r['nodes']:>6} {r['representatives']:>6} {r['generate']:>6.2f} "
                  f"{r['verify']:>8.2f} {r['evaluate']:>6.2f} {r['total']:>7.2f} "
                  f"{r['peak_rss_mb']:>7.0f} {r['peak_rss_mb'] - r['base_rss_mb']:>8.1f}",
                  flush=True)
        series[family] = rows
    fits, tails = {}, {}
    for family, rows in series.items():
        fits[family] = fit_all(rows)
        big = [r for r in rows if r["nodes"] >= TAIL_FROM]
        tails[family] = tail = fit_all(big) if len(big) >= 2 else None
        for label, f in (("all N", fits[family]), (f"N >= {TAIL_FROM}", tail)):
            if f:
                print(f"{family} ({label}): total time ~ N^{f['time']:.2f}, generate ~ "
                      f"N^{f['generate']:.2f}, verify ~ N^{f['verify']:.2f}, peak RSS ~ "
                      f"N^{f['rss']:.2f}, RSS above imports ~ N^{f['extra_rss']:.2f}")
    if plot:
        plot_growth(series, fits, tails, collective, plot)
    return series, fits


def _exponents(fits, tails, family, key):
    """Legend text: the exponent over all N, and over the large N where fitted."""
    text = f"N^{fits[family][key]:.2f}"
    if tails.get(family):
        text += f"; N>={TAIL_FROM}: N^{tails[family][key]:.2f}"
    return text


def plot_growth(series, fits, tails, collective, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_t, ax_m) = plt.subplots(1, 2, figsize=(11, 4.2))
    for (family, rows), marker in zip(series.items(), "os^v"):
        n = [r["nodes"] for r in rows]
        ax_t.loglog(n, [r["total"] for r in rows], marker=marker,
                    label=f"{family} ({_exponents(fits, tails, family, 'time')})")
        ax_m.loglog(n, [r["peak_rss_mb"] for r in rows], marker=marker,
                    label=f"{family} peak ({_exponents(fits, tails, family, 'rss')})")
        ax_m.loglog(n, [max(r["peak_rss_mb"] - r["base_rss_mb"], 1e-3) for r in rows],
                    marker=marker, linestyle="--",
                    label=f"{family} above imports "
                          f"({_exponents(fits, tails, family, 'extra_rss')})")
    ax_t.set(xlabel="nodes N", ylabel="generate + verify + evaluate (s)",
             title=f"BFB {collective}, symmetric form: time")
    ax_m.set(xlabel="nodes N", ylabel="peak RSS (MB)", title="memory")
    for ax in (ax_t, ax_m):
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"plot written to {path}", file=sys.stderr)


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
    parser.add_argument("--symmetric", action="store_true",
                        help="time the symmetric form at up to 16,384 nodes (allgather and "
                             "allreduce unless --collective is given)")
    parser.add_argument("--growth", action="store_true",
                        help="symmetric form: time and memory against N, fitted exponents")
    parser.add_argument("--family", action="append", choices=sorted(GROWTH),
                        help="with --growth: families to run (default both)")
    parser.add_argument("--plot", metavar="FILE.png", help="with --growth: draw the growth")
    parser.add_argument("--memory-limit", type=float, default=6.0, metavar="GIB",
                        help="address-space limit of each case's process (default 6 GiB)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    collective_given = "--collective" in sys.argv
    MEMORY_LIMIT_GIB[0] = args.memory_limit
    if args.worker:
        limit = int(args.memory_limit * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        if args.symmetric:
            print(json.dumps(run_symmetric_case(args.worker, args.collective)))
        else:
            print(json.dumps(run_case(args.worker, args.collective, not args.no_symmetry,
                                      args.workers)))
        return
    if args.growth:
        growth(args.collective if collective_given else "allreduce", args.repeat,
               args.family or sorted(GROWTH), args.plot)
        return
    if args.symmetric:
        symmetric_table(args.case or SYMMETRIC,
                        [args.collective] if collective_given else ["allgather", "allreduce"],
                        args.repeat)
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
        if r is None:
            continue
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
