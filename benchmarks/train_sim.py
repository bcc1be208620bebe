"""Training-iteration simulation at scale beside Zhao et al., "Efficient Direct-Connect
Topologies for Collective Communications" (NSDI 2025), section 8.4: N = 1024 nodes of degree 4,
alpha 10 us, 100 Gbps per node. Across eleven DNNs the paper's topologies come within 1.5% of
the allreduce two-phase bound on average, with 6.7x and 38x lower allreduce time than ShiftedRing and
DBT.

For every shipped model (topocoll.studies.models, default batches and the A100 FLOPs model):

* ours: the finder's best topology for N, d and the model's per-layer workload, BFB allreduce
  (built, verified and priced once; the step model is affine in the buffer size);
* the two-phase bound 2 * (moore_depth(N, d) * alpha + (N-1)/N * M/B) for every allreduce;
* ShiftedRing (shiftedring:N) and the double binary tree (dbt:N), generated and priced once.

One iteration is simulated under the wait-free rules (or ``--policy buckets``). Columns:
iteration time, total allreduce time, ours over the two-phase bound, and the speed-up of ours over
ShiftedRing and DBT in total allreduce time.

    python benchmarks/train_sim.py                 # N = 1024, d = 4
    python benchmarks/train_sim.py --nodes 256     # smaller and quicker
    python benchmarks/train_sim.py --policy buckets
"""

import argparse
import statistics
import sys
import tempfile
import time

PAPER = {"over_bound": 1.015, "vs_shiftedring": 6.7, "vs_dbt": 38.0}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1024)
    parser.add_argument("--degree", type=int, default=4)
    parser.add_argument("--alpha", default="10us")
    parser.add_argument("--node-bandwidth", default="100Gbps")
    parser.add_argument("--policy", choices=["wait-free", "buckets"], default="wait-free")
    args = parser.parse_args(argv)

    from topocoll.finder import Cache, Workload, find
    from topocoll.studies.models import MODELS, model_profile
    from topocoll.studies.training import AllreduceCost, baseline_cost, lower_bound_cost, \
        simulate_iteration
    from topocoll.units import format_time, parse_bandwidth, parse_time

    alpha = parse_time(args.alpha)
    bandwidth = parse_bandwidth(args.node_bandwidth)
    n, d = args.nodes, args.degree
    bucket = None if args.policy == "wait-free" else 25 * 2**20
    started = time.perf_counter()
    costs = {"two-phase bound": lower_bound_cost(n, d, alpha=alpha, bandwidth=bandwidth)}
    for name in ("ShiftedRing", "DBT"):
        t = time.perf_counter()
        costs[name] = baseline_cost(name, n, alpha=alpha, bandwidth=bandwidth)
        print(f"{name}: {costs[name].steps} steps, T_B {costs[name].per_byte * bandwidth:.3f} "
              f"M/B ({time.perf_counter() - t:.1f} s to build and price)", file=sys.stderr)
    rows = []
    with tempfile.TemporaryDirectory() as tmp, Cache(f"{tmp}/finder.sqlite") as store:
        for model in MODELS:
            profile = model_profile(model)
            t = time.perf_counter()
            workload = Workload.from_layers(profile.forward_order_bytes(), bucket)
            found = find(n, d, workload, alpha=alpha, node_bandwidth=bandwidth, cache=store)
            ev = found.evaluation
            ours = AllreduceCost.from_step_model(ev["steps"], 2 * ev["T_B_per_phase"],
                                                 alpha=alpha, bandwidth=bandwidth,
                                                 name=found.best.name)
            print(f"{model}: chose {found.best.name} ({ev['steps']} steps, "
                  f"{time.perf_counter() - t:.1f} s)", file=sys.stderr)
            opts = {"policy": args.policy, "bucket_size": bucket}
            res = {"ours": simulate_iteration(profile, ours, **opts)}
            res.update({k: simulate_iteration(profile, c, **opts) for k, c in costs.items()})
            rows.append((model, found.best.name, res))

    print(f"\nN = {n}, d = {d}, alpha {format_time(alpha)}, {args.node_bandwidth} per node, "
          f"{args.policy}; iteration time / total allreduce time")
    head = (f"{'model':<12} {'ours topology':<34} {'compute':>9} {'ours':>19} {'two-phase bound':>19} "
            f"{'ShiftedRing':>19} {'DBT':>19} {'ours/LB':>8} {'SR/ours':>8} {'DBT/ours':>9}")
    print(head)
    print("-" * len(head))
    over, vs_sr, vs_dbt = [], [], []
    for model, topo, r in rows:
        def cell(key):
            return f"{format_time(r[key].iteration_time)} / {format_time(r[key].comm_time)}"
        o = r["ours"].comm_time
        over.append(o / r["two-phase bound"].comm_time)
        vs_sr.append(r["ShiftedRing"].comm_time / o)
        vs_dbt.append(r["DBT"].comm_time / o)
        print(f"{model:<12} {topo:<34} {format_time(r['ours'].compute_time):>9} {cell('ours'):>19} "
              f"{cell('two-phase bound'):>19} {cell('ShiftedRing'):>19} {cell('DBT'):>19} "
              f"{over[-1]:>8.3f} {vs_sr[-1]:>7.1f}x {vs_dbt[-1]:>8.1f}x")
    print("-" * len(head))
    print(f"{'average':<12} {'(this run, 4 models)':<34} {'':>9} {'':>19} {'':>19} {'':>19} "
          f"{'':>19} {statistics.mean(over):>8.3f} {statistics.mean(vs_sr):>7.1f}x "
          f"{statistics.mean(vs_dbt):>8.1f}x")
    print(f"{'paper':<12} {'(NSDI 2025, 11 DNNs)':<34} {'':>9} {'':>19} {'':>19} {'':>19} "
          f"{'':>19} {PAPER['over_bound']:>8.3f} {PAPER['vs_shiftedring']:>7.1f}x "
          f"{PAPER['vs_dbt']:>8.1f}x")
    print(f"\ntotal {time.perf_counter() - started:.1f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
