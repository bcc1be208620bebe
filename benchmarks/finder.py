"""Topology finder benchmarks beside the figures of Zhao et al. (NSDI 2025) (section 5.4,
Table 4 and appendix G).

    (a) the whole Pareto frontier for every N from 2 to 2000 at d = 4, predictions only, from an
        EMPTY results cache (paper: "under a minute"; target here 10 s);
    (b) one query, N = 1024, d = 4, with an empty results cache: predictions and the choice
        (target 1 s); the chosen schedule's build, verification and evaluation timed apart;
    (c) the chosen allreduce for N = 1024, d = 4, alpha = 10 us, 100 Gbps per node, 1 MiB:
        evaluated time within 10% of the lower bound (paper: 291.0 us against 267.6 us); with
        the optimizer's shipped bases (topocoll/finder/data/optimized_bases.csv, written by
        ``python -m topocoll.finder.optimized_bases``) the default choice is the optimizer's 281.5 us;
        also ``topocoll find --nodes 1024 --degree 4`` timed cold as a command (target 10 s);
    (d) the same query with ``optimize=True`` (``topocoll find --optimize --budget``): better
        bases for the best candidates' expansion recipes, the fastest one built, verified and
        evaluated (target: strictly below the paper's 291.0 us; stretch 1.05x the bound);
    (e) ``topocoll find --nodes 16384 --degree 4``, cold, as a command: the choice evaluated
        by construction from its verified base (target 30 s), with its peak memory;
    and the paper's Table 4 beside our frontier: for each of its rows, our best point with
    at most as many steps.

Every figure is priced in the paper's convention, 100 Gbps of egress per node split over its
links (``node_bandwidth="100Gbps"``, ``--node-bandwidth 100Gbps``), not the one default cluster
of 100 Gbps per link, so that it compares with the paper's.

Every timing runs in a fresh process with the libraries already imported (what a query costs,
not Python's start-up), ``--repeat`` times; the table shows medians. The one part of the sweep
that is not a closed form, the generalized Kautz digraph's exact BFB cost at every N, depends on
nothing but (N, d): it is computed once and shipped with the package
(topocoll/finder/data/genkautz_bfb.csv, N = 2..2048, d = 2..6; the paper: "results can be saved
for future use"). ``--recompute`` also times recomputing that table's d = 4 rows from scratch.

    python benchmarks/finder.py                  # full table
    python benchmarks/finder.py --quick          # sweep N = 2..500 only
    python benchmarks/finder.py --recompute      # also time the Kautz rows from scratch
    python benchmarks/finder.py --budget 300     # the optimizer's search budget (default 60 s)
"""

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

# us, N = 1024, d = 4, 1 MB, with the steps per phase its times imply (2 * (s * 10 us + T_B M/B))
PAPER_TABLE4 = [(5, 323.5), (6, 291.0), (8, 328.4), (11, 387.8), (20, 567.6)]
PAPER_BOUND = 267.6
PAPER_BEST = 291.0
#: The optimizer's best at N = 1024 (``find --optimize``), shipped as a base since: the target
#: of the default choice.
OPTIMIZED_BEST = 281.5


def _warm_imports():
    import highspy  # noqa: F401 - BFB's LP solver, imported lazily

    import topocoll.finder  # noqa: F401
    import topocoll.synth.bfb  # noqa: F401


def worker(mode, cache_dir, top, budget=60.0):
    _warm_imports()
    from topocoll.finder import Cache, find, find_range

    path = os.path.join(cache_dir, "finder.sqlite")
    if mode == "table":
        from topocoll.finder.genkautz_table import compute_rows

        t0 = time.perf_counter()
        compute_rows(range(2, top + 1), [4], workers=os.cpu_count() or 1)
        return {"seconds": time.perf_counter() - t0}
    if mode == "sweep":
        t0 = time.perf_counter()
        with Cache(path) as c:
            out = find_range(range(2, top + 1), 4, cache=c)
        seconds = time.perf_counter() - t0
        sizes = [len(v) for v in out.values()]
        return {"seconds": seconds, "sizes": len(out), "mean_frontier": sum(sizes) / len(sizes),
                "max_frontier": max(sizes)}
    if mode == "query":
        t0 = time.perf_counter()
        with Cache(path) as c:
            r = find(1024, 4, "1MiB", alpha="10us", node_bandwidth="100Gbps", evaluate=False,
                     cache=c)
        return {"seconds": time.perf_counter() - t0, "best": r.best.name,
                "frontier": [[c.name, c.steps, c.t_b, t] for c, t in zip(r.frontier, r.times)],
                "lower_bound": r.lower_bound, "predicted": r.predicted_time}
    if mode == "evaluate":
        t0 = time.perf_counter()
        r = find(1024, 4, "1MiB", alpha="10us", node_bandwidth="100Gbps", cache=path,
                 keep_schedule=True)
        total = time.perf_counter() - t0
        return {"seconds": total, "best": r.best.name, "evaluated": r.evaluated_time,
                "predicted": r.predicted_time, "lower_bound": r.lower_bound, "ratio": r.ratio,
                "verified": r.evaluation["verified"], "transfers": r.evaluation["transfers"],
                "build": r.seconds.get("build"), "verify": r.seconds.get("verify"),
                "status": r.status}
    if mode == "optimize":
        from topocoll.schedule.cost import evaluate
        from topocoll.schedule.verify import verify

        t0 = time.perf_counter()
        r = find(1024, 4, "1MiB", alpha="10us", node_bandwidth="100Gbps", cache=path,
                 keep_schedule=True, optimize=True, budget=budget)
        total = time.perf_counter() - t0
        # the claim, checked again from the schedule itself
        report = verify(r.schedule)
        again = evaluate(r.schedule, 2**20).time
        opt = r.optimization
        return {"seconds": total, "best": r.best.name, "evaluated": r.evaluated_time,
                "reverified": report.valid, "reevaluated": again, "ratio": r.ratio,
                "lower_bound": r.lower_bound, "steps": r.evaluation["steps"],
                "improved": opt["improved"], "seed": opt["seed"], "seed_time": opt["seed_time"],
                "evaluations": opt["evaluations"], "exact": opt["exact_evaluations"],
                "search": opt["seconds"]["search"], "confirm": opt["seconds"]["confirm"]}
    raise SystemExit(f"unknown mode {mode}")


#: Runs a command as its only child and prints the child's peak memory (KiB on Linux) last.
_PEAK = ("import resource, subprocess, sys\n"
         "r = subprocess.run(sys.argv[1:])\n"
         "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)\n"
         "sys.exit(r.returncode)")


def command(nodes, cache_dir):
    """``topocoll find --nodes N --degree 4 --node-bandwidth 100Gbps --json`` (the paper's
    convention) in a fresh process with an empty cache:
    wall seconds, the command's peak memory (MiB) and its JSON document."""
    env = dict(os.environ, TOPOCOLL_CACHE_DIR=cache_dir)
    exe = os.path.join(os.path.dirname(sys.executable), "topocoll")
    argv = [exe] if os.path.exists(exe) else [sys.executable, "-m", "topocoll"]
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", _PEAK, *argv, "find", "--nodes", str(nodes),
                          "--degree", "4", "--node-bandwidth", "100Gbps", "--json"],
                         capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - t0
    if out.returncode:
        raise SystemExit(f"find --nodes {nodes} failed:\n{out.stderr}")
    peak = int(out.stderr.strip().splitlines()[-1]) / 1024.0
    return seconds, peak, json.loads(out.stdout)


def run(mode, cache_dir, top, budget=60.0):
    cmd = [sys.executable, __file__, "--worker", mode, "--cache", cache_dir, "--top", str(top),
           "--budget", str(budget)]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(f"{mode} failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _empty(path):
    """``path`` as an empty folder (a cold cache)."""
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    return path


def _copy_without(src_dir, dst_dir, kinds):
    """A copy of the cache in ``dst_dir`` without the entries of ``kinds`` (cold for them)."""
    os.makedirs(dst_dir, exist_ok=True)
    dst = os.path.join(dst_dir, "finder.sqlite")
    shutil.copyfile(os.path.join(src_dir, "finder.sqlite"), dst)
    con = sqlite3.connect(dst)
    with con:
        con.executemany("DELETE FROM entries WHERE kind = ?", [(k,) for k in kinds])
    con.close()
    return dst_dir


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per timing (median)")
    parser.add_argument("--quick", action="store_true", help="sweep N = 2..500 only")
    parser.add_argument("--keep", help="cache folder to keep (default: a temp dir)")
    parser.add_argument("--recompute", action="store_true",
                        help="also time recomputing the shipped genkautz cost rows (minutes)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--cache", help=argparse.SUPPRESS)
    parser.add_argument("--top", type=int, default=2000, help=argparse.SUPPRESS)
    parser.add_argument("--budget", type=float, default=60.0,
                        help="the optimizer's search seconds in (d) (default 60)")
    parser.add_argument("--no-optimize", action="store_true", help="skip (d)")
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker, args.cache, args.top, args.budget)))
        return
    top = 500 if args.quick else 2000
    root = args.keep or tempfile.mkdtemp(prefix="topocoll-finder-bench-")
    os.makedirs(root, exist_ok=True)
    master = os.path.join(root, "master")
    os.makedirs(master, exist_ok=True)
    rows = []

    def med(values):
        return statistics.median(values)

    if args.recompute:
        table = run("table", master, top)
        rows.append((f"    recompute the shipped genkautz BFB costs, N=2..{top}, d=4 "
                     f"({os.cpu_count()} workers)", f"{table['seconds']:.1f} s", "-", "-", "-"))

    # (a) the sweep from an empty results cache: bases, expansions, frontiers all computed
    sweeps = []
    for i in range(args.repeat):
        d = _empty(os.path.join(root, f"sweep{i}"))
        sweeps.append(run("sweep", d, top))
    a = med([s["seconds"] for s in sweeps])
    target_a = 10.0   # for N up to 2000; --quick sweeps less under the same target (most of
    # an empty-cache sweep is the base database, the same for any range)
    rows.insert(0, (f"(a) frontier for every N = 2..{top}, d = 4, empty cache", f"{a:.2f} s",
                    f"{target_a:g} s", "< 60 s", f"{a / target_a:.2f}"))
    warm = run("sweep", d, top)
    rows.insert(1, ("    same, second run (frontiers cached)", f"{warm['seconds']:.3f} s", "-",
                    "-", "-"))
    master = d

    # (b) one query, cold results cache (bases and the Kautz cost computed as needed)
    queries = []
    for i in range(args.repeat):
        d = _empty(os.path.join(root, f"cold{i}"))
        queries.append(run("query", d, top))
    b = med([q["seconds"] for q in queries])
    rows.append(("(b) query N=1024, d=4, empty cache (predictions + choice)", f"{b:.3f} s",
                 "1 s", "-", f"{b / 1.0:.2f}"))
    bases_warm = []
    for i in range(args.repeat):
        d = _copy_without(master, os.path.join(root, f"warmbases{i}"),
                          ["frontier", "evaluation", "cost"])
        bases_warm.append(run("query", d, top))
    rows.append(("    same, base database warm", f"{med([q['seconds'] for q in bases_warm]):.3f} s",
                 "1 s", "-", "-"))
    again = run("query", d, top)
    rows.append(("    same, second run (cached)", f"{again['seconds'] * 1e3:.1f} ms", "-", "-",
                 "-"))

    # (c) build, verify and evaluate the choice
    ev = run("evaluate", os.path.join(root, "cold0"), top)
    rows.append((f"    build the chosen allreduce ({ev['transfers']} transfers)",
                 f"{ev['build']:.2f} s", "-", "-", "-"))
    rows.append(("    verify it (topocoll.verify)", f"{ev['verify']:.2f} s", "-", "-", "-"))
    bound = ev["lower_bound"] * 1e6
    rows.append((f"(c) evaluated allreduce, 1 MiB: {ev['best']}", f"{ev['evaluated'] * 1e6:.1f} us",
                 f"<= {OPTIMIZED_BEST} us", f"{PAPER_BEST} us",
                 f"{ev['evaluated'] * 1e6 / PAPER_BEST:.3f}"))
    rows.append(("    lower bound 2*(Moore*alpha + (N-1)/N*M/B)", f"{bound:.1f} us", "-",
                 f"{PAPER_BOUND} us", f"{bound / PAPER_BOUND:.3f}"))
    rows.append(("    evaluated / lower bound", f"{ev['ratio']:.4f}", "<= 1.10",
                 f"{PAPER_BEST / PAPER_BOUND:.4f}", f"{ev['ratio'] / 1.1:.3f}"))

    cli = [command(1024, _empty(os.path.join(root, f"cli{i}"))) for i in range(args.repeat)]
    rows.append((f"    topocoll find --nodes 1024 --degree 4, cold, whole command (peak "
                  f"{max(c[1] for c in cli):.0f} MiB)",
                 f"{med([c[0] for c in cli]):.2f} s", "10 s", "-",
                 f"{med([c[0] for c in cli]) / 10.0:.2f}"))

    # (d) the optimizer (one run per --repeat; each takes the budget plus the confirmations)
    if not args.no_optimize:
        opts = [run("optimize", _empty(os.path.join(root, f"opt{i}")), top, args.budget)
                for i in range(args.repeat)]
        o = sorted(opts, key=lambda x: x["evaluated"])[len(opts) // 2]     # the median run
        rows.append((f"(d) optimized allreduce, 1 MiB, budget {args.budget:g} s: {o['best']}",
                     f"{o['evaluated'] * 1e6:.1f} us", f"< {PAPER_BEST} us", f"{PAPER_BEST} us",
                     f"{o['evaluated'] * 1e6 / PAPER_BEST:.3f}"))
        rows.append(("    re-verified and re-evaluated from the schedule",
                     f"{o['reevaluated'] * 1e6:.1f} us" + ("" if o["reverified"] else " INVALID"),
                     "-", "-", "-"))
        rows.append(("    optimized / lower bound", f"{o['ratio']:.4f}", "<= 1.05 (stretch)",
                     f"{PAPER_BEST / PAPER_BOUND:.4f}", f"{o['ratio'] / 1.05:.3f}"))
        rows.append((f"    search ({o['evaluations']} candidates, {o['exact']} exact BFB costs) "
                     "+ confirmation", f"{o['search']:.0f} + {o['confirm']:.0f} s", "-", "-", "-"))
        if args.repeat > 1:
            rows.append(("    optimized times of the runs",
                         " ".join(f"{x['evaluated'] * 1e6:.1f}" for x in opts), "-", "-", "-"))

    # (e) 16384 nodes: by construction from the verified base (the explicit schedule would
    # be 670 million transfers)
    big = [command(16384, _empty(os.path.join(root, f"big{i}"))) for i in range(args.repeat)]
    doc = big[0][2]
    rows.append((f"(e) find --nodes 16384 --degree 4, cold: {doc['best']['name']}",
                 f"{med([b[0] for b in big]):.2f} s", "30 s", "-",
                 f"{med([b[0] for b in big]) / 30.0:.2f}"))
    ev16 = doc["best"]["evaluation"]
    rows.append((f"    evaluated {ev16['method']}, 1 MiB (peak memory "
                 f"{max(b[1] for b in big):.0f} MiB)", f"{doc['best']['evaluated_time'] * 1e6:.1f} us",
                 "-", "-", f"{doc['best']['ratio']:.3f}x bound"))

    width = max(len(r[0]) for r in rows)
    head = ("figure", "ours (median)", "target", "paper", "ours/target")
    print(f"topology finder, median of {args.repeat} runs, {os.cpu_count()} cores; "
          f"cache under {root}; priced at 100 Gbps per node (the paper's convention, "
          "--node-bandwidth 100Gbps)")
    print(f"{head[0]:<{width}}  {head[1]:>14}  {head[2]:>17}  {head[3]:>10}  {head[4]:>11}")
    for r in rows:
        print(f"{r[0]:<{width}}  {r[1]:>14}  {r[2]:>17}  {r[3]:>10}  {r[4]:>11}")
    print()
    frontier = queries[0]["frontier"]
    bound = queries[0]["lower_bound"] * 1e6
    print("frontier at N = 1024, d = 4 (allreduce of 1 MiB, alpha 10 us, 100 Gbps per node; steps "
          "and T_B per phase):")
    for name, steps, t_b, t in frontier:
        print(f"  {name:<52} steps {steps:>3}  T_B {t_b:.5f}  {t * 1e6:7.1f} us")
    print()
    print("Table 4 of the paper beside ours: the frontier point that matches or beats each row "
          "in both steps and time, with the most steps (the closest to it)")
    print(f"  {'paper':>13}  {'ours':>9}  {'steps':>5}  {'ours/paper':>10}  {'ours/bound':>10}"
          f"  {'paper/bound':>11}  ours")
    for steps, paper in PAPER_TABLE4:
        fit = [f for f in frontier if f[1] <= steps and f[3] * 1e6 <= paper + 0.05]
        if not fit:
            print(f"  {paper:>7.1f} us {steps:>2}  nothing on our frontier matches it")
            continue
        name, s_, _, t = max(fit, key=lambda f: (f[1], -f[3]))
        print(f"  {paper:>7.1f} us {steps:>2}  {t * 1e6:>6.1f} us  {s_:>5}  {t * 1e6 / paper:>10.3f}"
              f"  {t * 1e6 / bound:>10.3f}  {paper / PAPER_BOUND:>11.3f}  {name}")
    if not args.no_optimize:
        print(f"  {PAPER_BEST:>7.1f} us  *  {o['evaluated'] * 1e6:>6.1f} us  {o['steps'] // 2:>5}"
              f"  {o['evaluated'] * 1e6 / PAPER_BEST:>10.3f}  {o['ratio']:>10.3f}"
              f"  {PAPER_BEST / PAPER_BOUND:>11.3f}  {o['best']} (optimizer, verified)")
    print(f"  lower bound {PAPER_BOUND} us (paper), {bound:.1f} us (ours)")
    if not args.keep:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
