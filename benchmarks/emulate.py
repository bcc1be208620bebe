"""Schedules on emulated networks: measured against the calibrated model and against torch.

Every topology is built as an emulated network (``topocoll.emulate``: namespaces, veth cables
shaped with tbf, shortest-path routes) with every link at ``--rate`` (25 Mbit/s), one rank per
node; the network is calibrated once (goodput, latency per message and per hop) and every
schedule runs on it, with torch's ``all_reduce`` and ``all_gather_into_tensor`` on the same
ranks. Each case is a call on a reused tensor (as training calls a collective), every call
after a barrier, the cases alternating call by call; a case's time is the median over
``--repeats`` calls of the slowest rank. The anchor of every row is the model's time on that
network (``topocoll.emulate.prediction``: the link model for our schedules, torch's gloo rings in
rank order over the installed routes for torch's), and torch's own time.

Parts:

* build: building and tearing down the 4x4 torus (and the 8x8 torus), medians of 3;
* schedules: torus:4x4, hypercube:4, the finder's 16-node degree-4 pick, ring:16 and dbt:16
  with BFB, trees, torusrings, ring, bidirectional ring, recursive halving-doubling, DBT and
  TEN schedules, at 4 and 16 MiB (``--sizes``);
* gossip: one-peer-exp, ring-graph and exponential-graph neighbor averaging against
  all_reduce on switch:16 and torus:4x4.

Targets (16 ranks, 25 Mbit/s, 4 MiB): BFB allreduce on torus:4x4 at least 7x torch's
all_reduce and within 1.05x of the model; every schedule within 1.10x of the model on
torus:4x4, hypercube:4 and the finder's pick at 4 and 16 MiB; the measured order agreeing with
the model's for at least 95% of the pairs the model separates by more than 10%; one-peer-exp
on switch:16 at most 0.56x of all_reduce; the 4x4 torus built and taken down in under 5 s.
``<`` marks a miss. Needs root (or unprivileged user namespaces) and torch.

    sudo python benchmarks/emulate.py                          # everything (about 40 min)
    python benchmarks/emulate.py --parts build
    python benchmarks/emulate.py --parts schedules --topologies torus:4x4 --sizes 4MiB
    python benchmarks/emulate.py --parts schedules --topologies torus:4x4 --sizes 1KiB 64KiB 4MiB
    python benchmarks/emulate.py --json out.json --plot docs/emulate.png
"""

import argparse
import json
import statistics
import sys
import time

from topocoll.units import parse_size

from hardware import machine

MIB = 1 << 20
TOPOLOGIES = ["torus:4x4", "hypercube:4", "pick", "ring:16", "dbt:16"]
#: (collective, algorithm) per topology; "pick" is the finder's 16-node degree-4 choice
SCHEDULES = {
    "torus:4x4": [("allreduce", "bfb"), ("allreduce", "trees"), ("allreduce", "torusrings"),
                  ("allreduce", "ten"), ("allgather", "bfb"), ("allgather", "torusrings"),
                  ("allgather", "ten"), ("allreduce", "swing", {"multiport": True}),
                  ("allreduce", "swing-latency", {"variant": "latency"})],
    "hypercube:4": [("allreduce", "bfb"), ("allreduce", "rhd"), ("allreduce", "trees"),
                    ("allgather", "bfb"), ("allgather", "rhd"), ("allgather", "ten")],
    "pick": [("allreduce", "bfb"), ("allreduce", "trees"), ("allgather", "bfb"),
             ("allgather", "ten")],
    "ring:16": [("allreduce", "ring"), ("allreduce", "biring"), ("allreduce", "bfb"),
                ("allgather", "ring"), ("allgather", "bfb")],
    "dbt:16": [("allreduce", "dbt"), ("allreduce", "bfb")],
}
TORCH = {"allreduce": "all_reduce", "allgather": "all_gather"}
GOSSIP = [("switch:16", "one-peer-exp"), ("switch:16", "ring-graph"),
          ("switch:16", "exponential-graph"), ("torus:4x4", "one-peer-exp"),
          ("torus:4x4", "ring-graph")]
MODEL_TARGET, MODEL_TOPOLOGIES = 1.10, ("torus:4x4", "hypercube:4", "pick")


def finder_pick():
    from topocoll.finder import find

    return find(16, 4, evaluate=False, cache=False).best.name


def _worker(rank, n, cases, nbytes, repeats, warmup, slice_bytes=None):
    """Time every case on reused tensors: ``cases`` is ``[(label, collective, schedule or
    None), ...]`` (None: torch's own); ``slice_bytes`` the runtime's packet size (default:
    its own). Seconds per call on this rank, by label."""
    import time as clock
    import warnings

    import torch
    import torch.distributed as dist

    from topocoll.runtime import ScheduleCollective

    # torch 2.13 renamed all_gather_into_tensor; the old name still works
    warnings.simplefilter("ignore", FutureWarning)
    calls = []
    for label, collective, schedule in cases:
        if collective == "allgather":
            x = torch.ones(nbytes // 4 // n)
            if schedule is None:
                out = torch.empty(x.numel() * n)
                calls.append((label, lambda x=x, out=out: dist.all_gather_into_tensor(out, x)))
            else:
                run = ScheduleCollective(schedule, slice_bytes=slice_bytes)
                calls.append((label, lambda x=x, run=run: run(x)))
        else:
            x = torch.ones(nbytes // 4)
            if schedule is None:
                calls.append((label, lambda x=x: dist.all_reduce(x)))
            else:
                run = ScheduleCollective(schedule, slice_bytes=slice_bytes)
                calls.append((label, lambda x=x, run=run: run(x)))
    times = {label: [] for label, _ in calls}
    for i in range(warmup + repeats):
        for label, call in (calls if i % 2 == 0 else calls[::-1]):
            dist.barrier()
            t0 = clock.perf_counter()
            call()
            if i >= warmup:
                times[label].append(clock.perf_counter() - t0)
    return times


def _slowest_median(per_rank, label):
    count = len(per_rank[0][label])
    return statistics.median(max(r[label][i] for r in per_rank) for i in range(count))


def build_part(args):
    from topocoll.emulate import EmulatedNetwork

    print(f"\nbuild and teardown (medians of 3; {machine()})")
    print(f"{'topology':<12} {'nodes':>5} {'cables':>6} {'build':>8} {'teardown':>9} "
          f"{'together':>9} {'target':>7}")
    rows = []
    for spec in args.build_specs:
        builds, downs = [], []
        for _ in range(3):
            net = EmulatedNetwork(spec, link_bandwidth=args.rate)
            t0 = time.monotonic()
            net.build()
            t1 = time.monotonic()
            net.close()
            t2 = time.monotonic()
            builds.append(t1 - t0)
            downs.append(t2 - t1)
        b, d = statistics.median(builds), statistics.median(downs)
        goal = "5 s" + ("<" if b + d > 5 else "")
        print(f"{spec:<12} {net.plan.num_nodes:>5} {len(net.plan.cables):>6} {b:>7.2f}s "
              f"{d:>8.2f}s {b + d:>8.2f}s {goal:>7}")
        rows.append({"topology": spec, "build": b, "teardown": d})
    return rows


def _schedule_cases(spec, name, sizes):
    from topocoll.synth import generate

    cases = []
    for collective, label, *given in SCHEDULES[name]:
        algorithm = label.split("-")[0]           # "swing-latency": swing with its options
        options = {"size": max(sizes)} if algorithm == "trees" else dict(*given)
        try:
            schedule = generate(spec, collective, algorithm, **options)
        except Exception as exc:   # a generator that does not apply here: said, not hidden
            print(f"  ({algorithm} {collective} on {spec}: {exc})", file=sys.stderr)
            continue
        cases.append((f"{label} {collective}", collective, schedule))
    for collective in sorted({c for c, *_ in SCHEDULES[name]}):
        cases.append((f"torch {TORCH[collective]}", collective, None))
    return cases


def schedules_part(args):
    from topocoll.emulate import EmulatedNetwork
    from topocoll.emulate.prediction import schedule_model_time, torch_model_time
    from topocoll.runtime import run_local

    rows = []
    print(f"\nschedules on emulated networks, links at {args.rate}, {args.repeats} calls, "
          f"median of the slowest rank ({machine()})")
    head = (f"{'topology':<34} {'size':>6} {'schedule':<24} {'time':>9} {'model':>9} "
            f"{'meas/model':>10} {'torch/ours':>10} {'idle':>5} {'target':>7}")
    for name in args.topologies:
        spec = finder_pick() if name == "pick" else name
        cases = _schedule_cases(spec, name, [parse_size(s) for s in args.sizes])
        with EmulatedNetwork(spec, link_bandwidth=args.rate) as net:
            cal = net.calibration()
            print(f"\n{spec}: {net.plan.num_nodes} nodes, built in {net.build_seconds:.2f} s; "
                  f"goodput {cal.goodput_ratio:.4f} of the rate, alpha "
                  f"{cal.alpha * 1e6:.0f} us, per further hop {cal.hop_delay * 1e6:.0f} us")
            print(head)
            print("-" * len(head))
            for size in args.sizes:
                from topocoll.emulate.host import HostMonitor

                nbytes = int(parse_size(size))
                with HostMonitor() as load:
                    per_rank = run_local(_worker, net.num_ranks,
                                         (cases, nbytes, args.repeats, 1), network=net,
                                         start_method="fork", timeout=3600)
                for label, collective, schedule in cases:
                    measured = _slowest_median(per_rank, label)
                    model = (torch_model_time(collective, net.plan, cal, nbytes)
                             if schedule is None else
                             schedule_model_time(schedule, net.plan, cal, nbytes))
                    torch_time = _slowest_median(per_rank, f"torch {TORCH[collective]}")
                    row = {"topology": spec, "name": name, "size": nbytes, "case": label,
                           "collective": collective, "time": measured, "model": model,
                           "ratio": measured / model, "speedup": torch_time / measured,
                           "idle": load.idle}
                    rows.append(row)
                    goal = ""
                    if schedule is not None and name in MODEL_TOPOLOGIES:
                        goal = f"{MODEL_TARGET:.2f}" + ("<" if row["ratio"] > MODEL_TARGET
                                                       else "")
                    if (name, label, nbytes) == ("torus:4x4", "bfb allreduce", 4 * MIB):
                        goal = "7x,1.05" + ("<" if row["speedup"] < 7 or row["ratio"] > 1.05
                                           else "")
                    print(f"{spec[:34]:<34} {size:>6} {label:<24} {measured:>8.3f}s "
                          f"{model:>8.3f}s {row['ratio']:>10.3f} {row['speedup']:>10.2f} "
                          f"{load.idle:>5.0%} {goal:>7}")
    _order_agreement(rows)
    return rows


def _order_agreement(rows):
    """Of the pairs of cases on one network and size whose model times differ by more than
    10%, the share the measurement orders as the model does."""
    agree = total = 0
    groups = {}
    for r in rows:
        groups.setdefault((r["topology"], r["size"], r["collective"]), []).append(r)
    for group in groups.values():
        for i, a in enumerate(group):
            for b in group[i + 1:]:
                if max(a["model"], b["model"]) > 1.1 * min(a["model"], b["model"]):
                    total += 1
                    agree += (a["model"] < b["model"]) == (a["time"] < b["time"])
    if total:
        share = agree / total
        print(f"\nmeasured order agrees with the model's for {agree} of {total} pairs the model "
              f"separates by more than 10% ({share:.0%}; target 95%{'<' if share < .95 else ''})")


def gossip_part(args):
    from topocoll.emulate import EmulatedNetwork
    from topocoll.gossip import gossip_topology
    from topocoll.runtime.emulated import measure_gossip

    rows = []
    print(f"\nneighbor averaging against all_reduce, links at {args.rate}, "
          f"{args.gossip_size} MiB per rank ({machine()})")
    head = (f"{'network':<10} {'topology':<20} {'time':>9} {'model':>9} {'meas/model':>10} "
            f"{'all_reduce':>10} {'ratio':>7} {'model':>7} {'target':>7}")
    print(head)
    print("-" * len(head))
    for spec, name in GOSSIP:
        with EmulatedNetwork(spec, link_bandwidth=args.rate) as net:
            r = measure_gossip(gossip_topology(name, net.num_ranks), args.gossip_size * MIB,
                               network=net, iterations=args.gossip_iterations)
        goal = ""
        if (spec, name) == ("switch:16", "one-peer-exp"):
            goal = "0.56" + ("<" if r["ratio"] > 0.56 else "")
        print(f"{spec:<10} {name:<20} {r['time']:>8.3f}s {r['model_time']:>8.3f}s "
              f"{r['measured_over_model']:>10.3f} {r['baseline_time']:>9.3f}s "
              f"{r['ratio']:>7.3f} {r['model_ratio']:>7.3f} {goal:>7}")
        rows.append({"network": spec, "topology": name, "time": r["time"],
                     "model": r["model_time"], "baseline": r["baseline_time"],
                     "baseline_model": r["baseline_model_time"], "ratio": r["ratio"],
                     "model_ratio": r["model_ratio"], "idle": r["host"]["idle"]})
    return rows


def plot(path, schedule_rows, gossip_rows):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 6))
    names = sorted({r["topology"] for r in schedule_rows})
    markers = "osD^v<>"
    for i, name in enumerate(names):
        mine = [r for r in schedule_rows if r["topology"] == name]
        ax.scatter([r["model"] for r in mine], [r["time"] for r in mine], s=28,
                   marker=markers[i % len(markers)], label=name[:28], alpha=0.8)
    if gossip_rows:
        ax.scatter([r["model"] for r in gossip_rows] + [r["baseline_model"] for r in gossip_rows],
                   [r["time"] for r in gossip_rows] + [r["baseline"] for r in gossip_rows],
                   s=28, marker="x", color="black", label="gossip, all_reduce")
    every = [r["model"] for r in schedule_rows] + [r["time"] for r in schedule_rows]
    lo, hi = min(every) * 0.8, max(every) * 1.25
    ax.plot([lo, hi], [lo, hi], color="grey", linewidth=1, label="measured = model")
    ax.plot([lo, hi], [1.1 * lo, 1.1 * hi], color="grey", linewidth=0.7, linestyle="--",
            label="1.10x the model")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("model time (s), calibrated")
    ax.set_ylabel("measured time (s), median of the slowest rank")
    ax.set_title("16 ranks on emulated networks, 25 Mbit/s links: measured against the model",
                 fontsize=10)
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", nargs="+", default=["build", "schedules", "gossip"],
                        choices=["build", "schedules", "gossip"])
    parser.add_argument("--topologies", nargs="+", default=TOPOLOGIES,
                        choices=TOPOLOGIES)
    parser.add_argument("--sizes", nargs="+", default=["4MiB", "16MiB"],
                        help="buffer sizes such as 64KiB or 4MiB")
    parser.add_argument("--rate", default="25Mbps")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--gossip-size", type=int, default=4, help="MiB")
    parser.add_argument("--gossip-iterations", type=int, default=8)
    parser.add_argument("--build-specs", nargs="+", default=["torus:4x4", "torus:8x8"])
    parser.add_argument("--json", help="write every row to this file")
    parser.add_argument("--plot", help="measured against model, one point per case and size")
    args = parser.parse_args()
    from topocoll.emulate import prepare_process

    prepare_process()   # before numpy starts threads: root, or a user namespace
    out = {"machine": machine()}
    if "build" in args.parts:
        out["build"] = build_part(args)
    if "schedules" in args.parts:
        out["schedules"] = schedules_part(args)
    if "gossip" in args.parts:
        out["gossip"] = gossip_part(args)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    if args.plot and out.get("schedules"):
        plot(args.plot, out["schedules"], out.get("gossip", []))


if __name__ == "__main__":
    main()
