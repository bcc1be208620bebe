"""Training-iteration simulation at scale beside Zhao et al., "Efficient Direct-Connect
Topologies for Collective Communications" (NSDI 2025), section 8.4: N = 1024 nodes of degree 4,
alpha 10 us, 100 Gbps per node (the paper's convention: every network here is priced with
``--node-bandwidth``, default 100Gbps, each node's egress split over its links, not with the
one default cluster of 100 Gbps per link). Across eleven DNNs the paper's topologies come within 1.5% of
the allreduce two-phase bound on average, with 6.7x and 38x lower allreduce time than ShiftedRing and
DBT.

For every shipped model (topocoll.studies.models, default batches and the A100 FLOPs model):

* ours: the finder's best topology for N, d and the model's per-layer workload, BFB allreduce
  (built, verified and priced once; the step model is affine in the buffer size);
* the two-phase bound 2 * (moore_depth(N, d) * alpha + (N-1)/N * M/B) for every allreduce;
* ShiftedRing (shiftedring:N) and the double binary tree (dbt:N), priced once.

``--iterations`` iterations (default 3) are simulated as ``topocoll train-sim`` does
(topocoll.studies.loop: each layer's next forward waits for its gradient's allreduce) under
the wait-free rules (or ``--policy buckets`` / ``concurrent``). Columns: first-iteration time,
total allreduce time of the first iteration, ours over the two-phase bound, and the speed-up of
ours over ShiftedRing and DBT in total allreduce time; the steady-state iteration (iterations
2..K) is printed beside the first for ours.

At N > 1024 (as ``topocoll train-sim`` does) ours is priced by construction from its verified
base (docs/math.md section 4; the base's allreduce is built and verified, nothing of N nodes is)
and the baselines by their closed forms, which equal the generated schedules' prices
(tests/studies/test_training_scale.py); ``--verify-full`` builds and verifies everything.

``--scale`` times the command itself instead: ``topocoll train-sim --workload W --nodes N``
for every W of ``--workloads`` (default resnet50; a model name or a profile file, e.g. the
measured tests/data/training/measured_resnet18_b2.json or a hybrid ASTRA-sim workload) and
every N of ``--nodes`` (default 4096 8192 with ``--scale``), ``--repeat`` cold runs (a fresh
results cache each) and as many warm ones (the cache filled), each in its own process; the
table gives median wall seconds and median peak RSS (``/usr/bin/time -f %M``; ``ru_maxrss``
where that is missing), the first and steady-state iteration, and names the machine.

    python benchmarks/train_sim.py                 # N = 1024, d = 4
    python benchmarks/train_sim.py --nodes 256     # smaller and quicker
    python benchmarks/train_sim.py --nodes 1024 4096 8192
    python benchmarks/train_sim.py --policy buckets
    python benchmarks/train_sim.py --scale --nodes 1024 2048 4096 8192 --repeat 3
    python benchmarks/train_sim.py --scale             # N = 4096 and 8192, resnet50
    python benchmarks/train_sim.py --scale --workloads resnet50 \
        tests/data/training/measured_resnet18_b2.json tests/data/training/astra_transformer.txt
"""

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

from hardware import machine   # benchmarks/hardware.py, next to this script

PAPER = {"over_bound": 1.015, "vs_shiftedring": 6.7, "vs_dbt": 38.0}


def timed_run(args, cache_dir):
    """Wall seconds and peak RSS (MiB) of ``topocoll ARGS`` in a process of its own."""
    env = {**os.environ, "TOPOCOLL_CACHE_DIR": str(cache_dir)}
    cmd = [sys.executable, "-m", "topocoll.cli.main", *args]
    gnu_time = os.path.exists("/usr/bin/time")
    with tempfile.NamedTemporaryFile("r") as rss_file:
        if gnu_time:
            cmd = ["/usr/bin/time", "-f", "%M", "-o", rss_file.name, *cmd]
        start = time.perf_counter()
        proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
        wall = time.perf_counter() - start
        if proc.returncode:
            raise SystemExit(f"{' '.join(args)} failed:\n{proc.stderr}")
        if gnu_time:
            rss_kib = float(rss_file.read().split()[-1])
        else:       # the largest child so far: an upper bound when runs grow
            rss_kib = float(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
    return wall, rss_kib / 1024, proc.stdout


def scale(args):
    import json

    from topocoll.units import format_time

    print(f"machine: {machine()}")
    print(f"topocoll train-sim --workload W --nodes N --iterations {args.iterations} "
          f"--node-bandwidth {args.node_bandwidth} (per node: the paper's convention)"
          f"{' --verify-full' if args.verify_full else ''}; medians of {args.repeat} runs "
          "each, every run its own process")
    head = (f"{'workload':<28} {'N':>6} {'ours':<44} {'priced':<36} {'first':>9} {'steady':>9} "
            f"{'cold s':>7} {'cold MiB':>9} {'warm s':>7} {'warm MiB':>9}")
    print(head)
    print("-" * len(head))
    for workload in args.workloads:
        for n in args.nodes or [4096, 8192]:
            cli = ["train-sim", "--workload", workload, "--nodes", str(n), "--iterations",
                   str(args.iterations), "--node-bandwidth", args.node_bandwidth, "--json"]
            if args.verify_full:
                cli.append("--verify-full")
            cold, warm, doc = [], [], None
            for _ in range(args.repeat):
                with tempfile.TemporaryDirectory() as tmp:
                    wall, rss, out = timed_run(cli, tmp)
                    cold.append((wall, rss))
                    doc = json.loads(out)
                    warm.append(timed_run(cli, tmp)[:2])
            ours = doc["ours"]
            how = ours["method"] + ("" if ours.get("exact", True) else " (T_B bound)")
            steady = doc["steady_iteration_time"]
            print(f"{os.path.basename(workload)[:28]:<28} {n:>6} {ours['allreduce'][:44]:<44} "
                  f"{how[:36]:<36} {format_time(doc['iteration_time']):>9} "
                  f"{'-' if steady is None else format_time(steady):>9} "
                  f"{statistics.median(w for w, _ in cold):>7.2f} "
                  f"{statistics.median(r for _, r in cold):>9.0f} "
                  f"{statistics.median(w for w, _ in warm):>7.2f} "
                  f"{statistics.median(r for _, r in warm):>9.0f}")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="+",
                        help="cluster sizes [default: 1024; 4096 8192 with --scale]")
    parser.add_argument("--workloads", nargs="+", default=["resnet50"],
                        help="--scale: models or profile files to time [default: resnet50]")
    parser.add_argument("--iterations", type=int, default=3)
    parser.add_argument("--degree", type=int, default=4)
    parser.add_argument("--alpha", default="10us")
    parser.add_argument("--node-bandwidth", default="100Gbps",
                        help="egress per node, split over its links (the paper's convention)")
    parser.add_argument("--policy", choices=["wait-free", "buckets", "concurrent"],
                        default="wait-free")
    parser.add_argument("--verify-full", action="store_true",
                        help="build and verify ours whole and generate the baselines")
    parser.add_argument("--scale", action="store_true",
                        help="time `topocoll train-sim` (wall, peak RSS) at every --nodes")
    parser.add_argument("--repeat", type=int, default=3, help="runs per size with --scale")
    args = parser.parse_args(argv)
    if args.scale:
        scale(args)
        return
    print(f"machine: {machine()}")
    for n in args.nodes or [1024]:
        table(args, n)


def table(args, n):
    from topocoll.cli.trainsim import EXPLICIT_NODES
    from topocoll.finder import Cache, Workload, find
    from topocoll.studies.loop import simulate_training
    from topocoll.studies.models import MODELS, model_workload
    from topocoll.studies.training import AllreduceCost, baseline_closed_form, baseline_cost, \
        lower_bound_cost
    from topocoll.units import format_time, parse_bandwidth, parse_time

    alpha = parse_time(args.alpha)
    bandwidth = parse_bandwidth(args.node_bandwidth)
    d = args.degree
    full = args.verify_full or n <= EXPLICIT_NODES
    price = baseline_cost if args.verify_full else baseline_closed_form
    bucket = 25 * 2**20 if args.policy == "buckets" else None
    started = time.perf_counter()
    costs = {"two-phase bound": lower_bound_cost(n, d, alpha=alpha, bandwidth=bandwidth)}
    for name in ("ShiftedRing", "DBT"):
        t = time.perf_counter()
        costs[name] = price(name, n, alpha=alpha, bandwidth=bandwidth)
        print(f"{name}: {costs[name].steps} steps, T_B {costs[name].per_byte * bandwidth:.3f} "
              f"M/B ({time.perf_counter() - t:.1f} s to price)", file=sys.stderr)
    rows = []
    with tempfile.TemporaryDirectory() as tmp, Cache(f"{tmp}/finder.sqlite") as store:
        for model in MODELS:
            train = model_workload(model)
            t = time.perf_counter()
            workload = Workload.from_layers(train.to_profile().forward_order_bytes(), bucket)
            found = find(n, d, workload, alpha=alpha, node_bandwidth=bandwidth, cache=store,
                         method="explicit" if full else "construction")
            ev = found.evaluation
            ours = AllreduceCost.from_step_model(ev["steps"], 2 * ev["T_B_per_phase"],
                                                 alpha=alpha, bandwidth=bandwidth,
                                                 name=found.best.name)
            print(f"{model}: chose {found.best.name} ({ev['steps']} steps, {ev['method']}, "
                  f"{time.perf_counter() - t:.1f} s)", file=sys.stderr)
            opts = {"policy": args.policy, "bucket_size": bucket, "iterations": args.iterations}
            res = {"ours": simulate_training(train, {"allreduce": ours}, **opts)}
            res.update({k: simulate_training(train, {"allreduce": c}, **opts)
                        for k, c in costs.items()})
            rows.append((model, found.best.name, res))

    print(f"\nN = {n}, d = {d}, alpha {format_time(alpha)}, {args.node_bandwidth} per node, "
          f"{args.policy}, FLOPs model; first iteration / its total allreduce time; ours: "
          f"steady state over iterations 2..{args.iterations} in brackets")
    head = (f"{'model':<12} {'ours topology':<42} {'compute':>9} {'ours':>19} {'two-phase bound':>19} "
            f"{'ShiftedRing':>19} {'DBT':>19} {'ours/LB':>8} {'SR/ours':>8} {'DBT/ours':>9}")
    print(head)
    print("-" * len(head))
    over, vs_sr, vs_dbt = [], [], []
    for model, topo, r in rows:
        def cell(key):
            return f"{format_time(r[key].first_iteration)} / {format_time(r[key].comm_time)}"
        o = r["ours"].comm_time
        over.append(o / r["two-phase bound"].comm_time)
        vs_sr.append(r["ShiftedRing"].comm_time / o)
        vs_dbt.append(r["DBT"].comm_time / o)
        steady = r["ours"].steady_iteration
        print(f"{model:<12} {topo:<42} {format_time(r['ours'].compute_time):>9} {cell('ours'):>19} "
              f"{cell('two-phase bound'):>19} {cell('ShiftedRing'):>19} {cell('DBT'):>19} "
              f"{over[-1]:>8.3f} {vs_sr[-1]:>7.1f}x {vs_dbt[-1]:>8.1f}x"
              + ("" if steady is None else f"  (ours steady {format_time(steady)})"))
    print("-" * len(head))
    print(f"{'average':<12} {'(this run, 4 models)':<42} {'':>9} {'':>19} {'':>19} {'':>19} "
          f"{'':>19} {statistics.mean(over):>8.3f} {statistics.mean(vs_sr):>7.1f}x "
          f"{statistics.mean(vs_dbt):>8.1f}x")
    print(f"{'paper':<12} {'(NSDI 2025, 11 DNNs)':<42} {'':>9} {'':>19} {'':>19} {'':>19} "
          f"{'':>19} {PAPER['over_bound']:>8.3f} {PAPER['vs_shiftedring']:>7.1f}x "
          f"{PAPER['vs_dbt']:>8.1f}x")
    print(f"\ntotal {time.perf_counter() - started:.1f} s", file=sys.stderr)
    print()


if __name__ == "__main__":
    main()
