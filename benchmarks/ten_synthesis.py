"""TEN (TACOS) synthesis: quality and speed against the TACOS paper and code.

All cases: 50 GiB/s links, 0.5 us latency, a 1 GiB all-gather buffer, one chunk per node.
Times are the independent link-model simulation of the synthesized, verified schedule.
"synth s" is wall time of the greedy plus building the schedule (median over seeds); "cpu s"
the process CPU time of the same (the machine is shared, so wall time is noisy).

The second table runs the default ``synthesize`` (translated schedules, restarts, repair and
all) on meshes and tori with mixed link speeds, at 0.5 us and (key rows) 10 us latency, beside
the chunk-model lower bound and its capacity terms alone (the bound before the release-time
and forwarding terms); "before us" is the anchor of the default before the release-time bound
and the ILP repair (commit cf1a153, median of seeds 0-2), its ratio against the capacity bound
it was measured against.

    .venv/bin/python benchmarks/ten_synthesis.py [--runs 3] [--quick]

``--scale`` times the large cases, each in a fresh process (so peak RSS is its own) ``--repeat``
times (medians): the default ``synthesize`` all-gather on torus:128x128 (16,384 nodes; made in
the symmetric form, its rows into node 0, since the explicit one has 268 million transfers), on
the 64x64 mesh (no translation symmetry: the explicit greedy) and on the 128x128 mesh (the
greedy again, its 268 million transfers held in the compact form; ``--only`` picks cases),
beside the targets (60 s; 2 GB on the 64x64 mesh; 15 minutes and 8 GB on the 128x128 mesh) and
the figures before the lean greedy (measured on this machine with the code of
the same day: "before cpu", "before MB"; CPU seconds, since the machine is shared).
``--growth`` times the same call against N from 256 up
(mesh: explicit greedy, torus: symmetric form; ``--max-nodes``) and prints the fitted exponents
of time ~ N^a and peak RSS ~ N^b (least squares in log-log over N >= 1024, where the fixed costs
fade); ``--plot FILE.png`` draws them (matplotlib).

    .venv/bin/python benchmarks/ten_synthesis.py --scale --repeat 3
    .venv/bin/python benchmarks/ten_synthesis.py --growth --plot ten_growth.png
"""

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time

import numpy as np

from topocoll.schedule import verify
from topocoll.schedule.linkmodel import simulate
from topocoll.synth.ten.greedy import greedy_events
from topocoll.synth.ten import chunk_lower_bound, events_to_schedule, synthesize, ten_problem
from topocoll.topology import topology
from topocoll.topology.families.lattice import with_dimension_bandwidth

GIB = 2 ** 30

# case, spec, anchor time (us) or None, anchor label, synth-time anchor (s) or None
CASES = [
    ("5x5 mesh", "mesh:5x5", 9606.0, "TACOS regression value", None),
    ("8x8 torus", "torus:8x8", 5321.0, "TACOS 5321 (bound 5008)", None),
    ("32x32 mesh", "mesh:32x32", 10256.0, "target 10256, <= 8 s", 75.0),
    ("hypercube 1024", "hypercube:10", None, "<= 5 s", 35.0),
]


def run_case(topo, seed, check):
    t0, c0 = time.perf_counter(), time.process_time()
    p = ten_problem(topo, "allgather", size=GIB)
    r = greedy_events(*p.arrays(), seed=seed)
    s = events_to_schedule(p, r.events)
    synth, cpu = time.perf_counter() - t0, time.process_time() - c0
    link_time = simulate(s, GIB).time
    valid = verify(s).valid if check else None
    return {"time": link_time, "synth": synth, "cpu": cpu, "valid": valid,
            "slots": r.makespan, "bound": chunk_lower_bound(p)}


# case, spec, form, target seconds, target MB, before CPU seconds, before MB (this machine,
# the code before the lean greedy, user + system time of the process, run back to back with the
# new code: 64x64 at load ~2, 45.4 s wall / 44.8 s CPU before, 30.9 s / 29.4 s after; at load
# ~6, 105.8 s / 52.4 s before, 58.1 s / 28.5 s after; the torus could not be made: its explicit
# form is 268 million transfers, about 10 GB as a transfer array alone). The 128x128 mesh's
# "before" is the previous release's greedy alone (no schedule: its explicit form does not
# fit), one run on the idle machine the day the compact form landed: 961 s wall, 960 s CPU,
# 11,362 MB; with --check the target covers the synthesis and the verifier together.
SCALE = [
    ("torus 128x128 allgather", "torus:128x128", "auto", 60.0, None, None, None),
    ("mesh 64x64 allgather", "mesh:64x64", "auto", 60.0, 2048.0, 44.8, 2953.0),
    ("mesh 48x48 allgather", "mesh:48x48", "auto", None, None, 9.2, 977.0),
    ("mesh 128x128 allgather", "mesh:128x128", "auto", 900.0, 8192.0, 960.0, 11362.0),
]


def worker(spec, form, check):
    """One synthesis in this (fresh) process; prints one JSON line."""
    t0, c0 = time.perf_counter(), time.process_time()
    s = synthesize(spec, "allgather", size=GIB, form=form)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    out = {"spec": spec, "form": s.form, "wall": wall, "cpu": cpu, "nodes": s.num_nodes,
           "slots": s.meta["makespan_slots"], "bound_slots": s.meta["chunk_lower_bound_slots"],
           "transfers": s.num_transfers}
    if check:
        t1 = time.perf_counter()
        out["valid"] = bool(verify(s).valid)
        out["verify_s"] = time.perf_counter() - t1
    out["rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(out), flush=True)


def fresh(spec, form, check=False):
    """:func:`worker` in a fresh process: its JSON, or None if it failed."""
    cmd = [sys.executable, __file__, "--worker", spec, "--form", form] + \
        (["--check"] if check else [])
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        print(f"  {spec}: failed: {done.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
        return None
    return json.loads(done.stdout.strip().splitlines()[-1])


def _machine():
    cpu = platform.processor() or platform.machine()
    return f"{platform.node() or 'this machine'}, {os.cpu_count()} cores, {cpu}"


def scale_table(repeat, check, only=None):
    """The large cases, fresh process each, medians of ``repeat``."""
    print(f"TEN all-gather at scale ({_machine()}; medians of {repeat} fresh processes; "
          "seconds: the synthesize call, wall and CPU (user + system); ratio: before cpu / "
          f"cpu; peak RSS of the process; load average now {os.getloadavg()[0]:.1f}):")
    print(f"{'case':<26}{'form':>10}{'slots':>7}{'bound':>7}{'wall s':>8}{'cpu s':>8}"
          f"{'verify s':>9}{'target s':>9}{'before cpu':>11}{'ratio':>7}{'peak MB':>9}"
          f"{'target MB':>10}{'before MB':>10}  verified")
    for name, spec, form, t_s, t_mb, b_s, b_mb in SCALE:
        if only and spec not in only:
            continue
        runs = [r for r in (fresh(spec, form, check) for _ in range(repeat)) if r]
        if not runs:
            continue
        wall = statistics.median(r["wall"] for r in runs)
        cpu = statistics.median(r["cpu"] for r in runs)
        mb = statistics.median(r["rss_mb"] for r in runs)
        ok = all(r.get("valid", True) for r in runs) if check else "-"
        check_s = statistics.median(r["verify_s"] for r in runs) if check else None
        print(f"{name:<26}{runs[0]['form']:>10}{runs[0]['slots']:>7}{runs[0]['bound_slots']:>7}"
              f"{wall:>8.1f}{cpu:>8.1f}{_opt(check_s, '.1f'):>9}{_opt(t_s, '.0f'):>9}"
              f"{_opt(b_s, '.1f'):>11}"
              f"{_opt(b_s and b_s / cpu, '.2f'):>7}{mb:>9.0f}{_opt(t_mb, '.0f'):>10}"
              f"{_opt(b_mb, '.0f'):>10}  {ok}", flush=True)


def _opt(value, fmt):
    return "-" if value is None else format(value, fmt)


GROWTH = {"mesh": ("mesh:{0}x{0}", "explicit", (16, 24, 32, 40, 48, 56, 64)),
          "torus": ("torus:{0}x{0}", "symmetric", (16, 32, 64, 96, 128))}


def growth(max_nodes, plot):
    """Time and peak RSS against N; fitted exponents; optional log-log plot."""
    print(f"growth ({_machine()}; one fresh process per point):")
    print(f"{'family':<8}{'N':>7}{'form':>10}{'wall s':>9}{'cpu s':>8}{'peak MB':>9}")
    series = {}
    for family, (pattern, form, sides) in GROWTH.items():
        for side in sides:
            if side * side > max_nodes:
                break
            r = fresh(pattern.format(side), form)
            if r is None:
                break
            series.setdefault(family, []).append((r["nodes"], r["wall"], r["cpu"], r["rss_mb"]))
            print(f"{family:<8}{r['nodes']:>7}{r['form']:>10}{r['wall']:>9.2f}{r['cpu']:>8.2f}"
                  f"{r['rss_mb']:>9.0f}", flush=True)
    for family, rows in series.items():
        big = [r for r in rows if r[0] >= 1024] or rows
        if len(big) < 2:
            continue
        n = np.log([r[0] for r in big])
        fit = [float(np.polyfit(n, np.log([r[i] for r in big]), 1)[0]) for i in (1, 2, 3)]
        print(f"{family}: wall ~ N^{fit[0]:.2f}, cpu ~ N^{fit[1]:.2f}, peak RSS ~ N^{fit[2]:.2f} "
              f"(N >= {big[0][0]})")
    if plot:
        _plot(series, plot)


def _plot(series, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (ax_t, ax_m) = plt.subplots(1, 2, figsize=(10, 4))
    for family, rows in series.items():
        n = [r[0] for r in rows]
        ax_t.loglog(n, [r[2] for r in rows], "o-", label=f"{family} (cpu s)")
        ax_m.loglog(n, [r[3] for r in rows], "o-", label=family)
    ax_t.set(xlabel="nodes N", ylabel="seconds", title="TEN all-gather: synthesis time")
    ax_m.set(xlabel="nodes N", ylabel="peak RSS (MB)", title="peak memory")
    for ax in (ax_t, ax_m):
        ax.legend()
        ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"plot written to {path}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3, help="seeds per case (median reported)")
    ap.add_argument("--quick", action="store_true", help="skip the two 1024-node cases")
    ap.add_argument("--scale", action="store_true", help="the large cases only (fresh processes)")
    ap.add_argument("--repeat", type=int, default=3, help="--scale: fresh runs per case")
    ap.add_argument("--check", action="store_true", help="--scale: verify each schedule too")
    ap.add_argument("--only", nargs="+", metavar="SPEC",
                    help="--scale: these cases only (e.g. mesh:128x128, about 10 minutes)")
    ap.add_argument("--growth", action="store_true", help="time and memory against N")
    ap.add_argument("--max-nodes", type=int, default=16384, help="--growth: largest N")
    ap.add_argument("--plot", help="--growth: write a log-log plot to this file (.png)")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--form", default="auto", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.worker, args.form, args.check)
        return
    if args.scale or args.growth:
        if args.scale:
            scale_table(args.repeat, args.check, args.only)
        if args.growth:
            growth(args.max_nodes, args.plot)
        return
    cases = CASES[:2] if args.quick else CASES
    rows = []
    print(f"{'case':<16}{'anchor':>26}{'ours us':>11}{'ratio':>8}{'bound us':>10}"
          f"{'spread us':>20}{'synth s':>9}{'cpu s':>7}{'anchor s':>9}  verified")
    for name, spec, anchor, label, anchor_s in cases:
        topo = topology(spec, bandwidth="50GiB/s", latency="0.5us")
        res = [run_case(topo, seed, check=True) for seed in range(args.runs)]
        times = [r["time"] * 1e6 for r in res]
        med = statistics.median(times)
        ratio = f"{med / anchor:.3f}" if anchor else "-"
        rows.append((name, med))
        print(f"{name:<16}{label:>26}{med:>11.1f}{ratio:>8}{res[0]['bound'] * 1e6:>10.1f}"
              f"{f'{min(times):.1f}..{max(times):.1f}':>20}"
              f"{statistics.median(r['synth'] for r in res):>9.2f}"
              f"{statistics.median(r['cpu'] for r in res):>7.2f}"
              f"{anchor_s if anchor_s else '-':>9}  {all(r['valid'] for r in res)}", flush=True)
    mixed_table(args.runs)
    random_table(args.runs)


def _dims(spec, gib_per_s, latency="0.5us"):
    """``spec`` with one bandwidth per dimension (GiB/s, first dimension first)."""
    base = topology(spec, latency=latency)
    return with_dimension_bandwidth(base, [g * GIB for g in gib_per_s])


def _cables(spec, choices, seed, latency="0.5us"):
    """``spec`` with every cable (both directions) at a random one of ``choices`` GiB/s."""
    base = topology(spec, latency=latency)
    n = base.num_nodes
    key = np.minimum(base.src, base.dst) * n + np.maximum(base.src, base.dst)
    _, cable = np.unique(key, return_inverse=True)
    bw = np.random.default_rng(seed).choice(choices, size=cable.max() + 1)[cable] * GIB
    return base.with_links(bandwidth=bw)


def _row(name, make, before_05, before_10=None):
    """A mixed-speed case at 0.5 us (and 10 us when ``before_10`` is given); ``before_*``:
    the default before the release-time bound and the repair (commit cf1a153, median link-model
    time of seeds 0-2, us)."""
    rows = [(name, "0.5us", lambda: make("0.5us"), before_05)]
    if before_10 is not None:
        rows.append((name, "10us", lambda: make("10us"), before_10))
    return rows


MIXED = [r for rows in (
    _row("mesh 6x6 rows 50, columns 25", lambda lat: _dims("mesh:6x6", (25, 50), lat),
         13345.3, 13573.3),
    _row("mesh 4x4 2:1", lambda lat: _dims("mesh:4x4", (50, 25), lat), 12505.0),
    _row("mesh 8x8 2:1", lambda lat: _dims("mesh:8x8", (50, 25), lat), 13146.0),
    _row("mesh 6x6 4:1", lambda lat: _dims("mesh:6x6", (25, 100), lat), 7791.8),
    _row("mesh 8x8 4:1", lambda lat: _dims("mesh:8x8", (100, 25), lat), 7994.2, 8312.5),
    _row("torus 4x4 2:1", lambda lat: _dims("torus:4x4", (50, 25), lat), 7503.0),
    _row("torus 6x6 2:1", lambda lat: _dims("torus:6x6", (50, 25), lat), 6672.7),
    _row("torus 8x8 2:1", lambda lat: _dims("torus:8x8", (50, 25), lat), 6886.0, 7095.0),
    _row("torus 4x8 2:1", lambda lat: _dims("torus:4x8", (50, 25), lat), 6880.5),
    _row("torus 4x4 4:1", lambda lat: _dims("torus:4x4", (100, 25), lat), 6252.0),
    _row("torus 8x8 4:1", lambda lat: _dims("torus:8x8", (100, 25), lat), 4075.5, 4322.5),
    _row("torus 8x4 4:1", lambda lat: _dims("torus:8x4", (100, 25), lat), 4382.0, 4515.0),
    _row("torus 6x6 4:1", lambda lat: _dims("torus:6x6", (100, 25), lat), 4450.9, 4574.4),
    _row("torus 4x4x4 2:2:1", lambda lat: _dims("torus:4x4x4", (50, 50, 25), lat), 4069.0),
    _row("torus 4x4x4 2:1:1", lambda lat: _dims("torus:4x4x4", (50, 25, 25), lat), 5321.0,
         5482.5),
    _row("torus 4x4x4 4:1:1", lambda lat: _dims("torus:4x4x4", (100, 25, 25), lat), 3760.5,
         3960.0),
    _row("mesh 8x8 cables 25/50", lambda lat: _cables("mesh:8x8", (25, 50), 1, lat), 20019.5),
    _row("mesh 8x8 cables 25/100", lambda lat: _cables("mesh:8x8", (25, 100), 2, lat),
         13298.3),
    _row("mesh 5x5 cables 25/50/100", lambda lat: _cables("mesh:5x5", (25, 50, 100), 1, lat),
         13206.0),
    _row("torus 8x8 cables 25/50", lambda lat: _cables("torus:8x8", (25, 50), 1, lat), 10012.5,
         10250.0),
    _row("torus 8x8 cables 25/50/100",
         lambda lat: _cables("torus:8x8", (25, 50, 100), 3, lat), 8141.0),
) for r in rows]


def mixed_table(runs):
    """The default ``synthesize`` on mixed link speeds: all-gather of 1 GiB, one chunk."""
    print("\nmixed link speeds, default synthesize (1 GiB all-gather, one chunk; '2:1' = first "
          "dimension 2x faster; bound: the chunk bound, capacity: without its release-time "
          "and forwarding terms; before: the default before the release-time bound and the "
          "repair; seconds: median wall time of the call; sym: tries of the translated "
          "schedule, 0 if not kept, - if the network has no translation symmetry):")
    print(f"{'case':<28}{'lat':>6}{'ours us':>10}{'bound us':>10}{'ratio':>7}"
          f"{'capacity us':>12}{'ratio':>7}{'seconds':>8}{'sym':>5}{'runs':>5}{'ILPs':>5}"
          f"{'before us':>11}{'ratio':>7}  verified")
    for name, latency, make, before in MIXED:
        topo = make()
        res = []
        for seed in range(runs):
            t0 = time.perf_counter()
            s = synthesize(topo, "allgather", size=GIB, seed=seed)
            wall = time.perf_counter() - t0
            repair = s.meta["repair"] or {"solves": 0}
            sym = s.meta["symmetric"]
            res.append((simulate(s, GIB).time * 1e6, wall, len(s.meta["restart_makespans"]),
                        repair["solves"], verify(s).valid,
                        "-" if sym is None else sym["tries"] if sym["kept"] else 0))
        med = statistics.median(r[0] for r in res)
        bound = s.meta["chunk_lower_bound"] * 1e6
        capacity = s.meta["capacity_lower_bound"] * 1e6
        print(f"{name:<28}{latency:>6}{med:>10.1f}{bound:>10.1f}{med / bound:>7.3f}"
              f"{capacity:>12.1f}{med / capacity:>7.3f}"
              f"{statistics.median(r[1] for r in res):>8.2f}{_tries([r[5] for r in res]):>5}"
              f"{statistics.median(r[2] for r in res):>5.0f}"
              f"{statistics.median(r[3] for r in res):>5.0f}"
              f"{before:>11.1f}{before / capacity:>7.3f}  {all(r[4] for r in res)}", flush=True)


def _tries(values):
    """The translated schedule's tries over the seeds: '-' if not tried (no translation
    symmetry), 0 if not kept, else the median tries."""
    if "-" in values:
        return "-"
    return f"{statistics.median(values):.0f}"


def random_table(runs):
    """One greedy run per seed on meshes with random link bandwidths (each direction)."""
    print("\nheterogeneous meshes, one greedy run (link bandwidth 25/50/100 GiB/s at random, "
          "0.5 us):")
    print(f"{'case':<26}{'ours us':>11}{'bound us':>11}{'ratio':>8}{'spread us':>20}  verified")
    for spec in ("mesh:5x5", "mesh:8x8"):
        for chunks in (1, 4):
            base = topology(spec)
            rng = np.random.default_rng(1)
            bw = rng.choice([25, 50, 100], size=base.num_links) * GIB
            topo = base.with_links(bandwidth=bw, latency=0.5e-6, name=f"{spec}-hetero")
            res = []
            for seed in range(runs):
                p = ten_problem(topo, "allgather", size=GIB, chunks=chunks)
                r = greedy_events(*p.arrays(), seed=seed)
                s = events_to_schedule(p, r.events)
                res.append((simulate(s, GIB).time * 1e6, verify(s).valid,
                            chunk_lower_bound(p) * 1e6))
            times = [x[0] for x in res]
            med, bound = statistics.median(times), res[0][2]
            label = f"{spec} C={chunks}"
            print(f"{label:<26}{med:>11.1f}{bound:>11.1f}{med / bound:>8.3f}"
                  f"{f'{min(times):.1f}..{max(times):.1f}':>20}  {all(x[1] for x in res)}",
                  flush=True)


if __name__ == "__main__":
    main()
