"""Gossip: neighbor averaging against all_reduce on local gloo processes, and rho of every topology.

Part 1 times one iteration of ``topocoll.runtime.neighbor_allreduce`` for a few gossip
topologies against ``torch.distributed.all_reduce`` (followed by the division by n, so both
compute the same kind of average) on 4 and 8 local processes (all_reduce: gloo over
loopback; neighbor averaging: shared memory, as by default where ranks share a host, or the
same sockets with ``--transport network``), for a few tensor sizes. One iteration's time is the slowest rank's (every iteration starts after a
barrier); the table shows the median over ``--iters`` iterations, after warm-up, with
all_reduce and the topologies alternating iteration by iteration. The anchor is
the alpha-beta model of the papers (decent_dp, Bluefog): a rank of a topology with d in-
neighbours receives d * M bytes, a ring all_reduce 2 (n-1)/n * M, so the bandwidth-bound time
ratio is ``d n / (2 (n-1))``; "measured / model" compares the two. Loopback processes share
two cores here, so the numbers are about message counts and copies, not a network. Target:
one-peer-exp at 64 MiB at most 0.75x of all_reduce's time (model 0.67x on 4 processes); "<"
in the target column marks a miss. docs/gossip-runtime.md has the measured tables.

Part 2 prints ``rho`` (of the period product; per iteration = rho^(1/period)) and the iterations to
the exact average for every built-in gossip topology at n = 4, 8, ..., 256 (from
``topocoll.gossip.analysis.rho_table``), next to the closed forms of docs/math.md section 7 where
one exists (exponential graph ``1 - 2/(ceil(log2 n)+1)`` for even n; ring with weights 1/3 ``(1 + 2
cos(2 pi / n))/3``; complete averaging 0).

    python benchmarks/gossip.py                     # both parts (a few minutes)
    python benchmarks/gossip.py --no-rho --iters 20 # timings only
    python benchmarks/gossip.py --no-rho --worlds 2 4 8 --transport network
    python benchmarks/gossip.py --no-timing --rho-sizes 4 8 16

Part 3 (``--two-level``, root: it builds an emulated network) times one step of three
averagings on the same 16 ranks of ``switch:16,4,S`` (4 machines of 4 ranks, each machine on a
leaf switch of its own, the leaves joined by a spine over uplinks S times slower): torch's
``all_reduce`` (and the division by n), flat one-peer-exp over the 16 ranks and hierarchical
one-peer-exp over the 4 machines (``hierarchical_neighbor_allreduce``, L = 4), alternating
call by call after a barrier, beside the model of that network with its calibrated constants
(``topocoll.emulate.prediction``). Each of ``--two-level-runs`` runs gives the mean over its
iterations (a multiple of 4, flat one-peer-exp's period: its iterations k = 0, 1 stay inside
the machines, k = 2, 3 cross the uplinks) of the slowest rank's time; the table shows the
median over the runs, the model (the mean over the same iterations) and their ratio. Target: hierarchical faster than flat
and than all_reduce where the model says so, each within 1.10x of its model.

    sudo python benchmarks/gossip.py --no-timing --no-rho --two-level

Part 4 (``--edges``, or ``--edges-only`` for this part alone) times decent_dp's way of gossiping
against topocoll's: one-peer-exp on ``--edges-worlds`` local processes, each iteration as
point-to-point neighbor averaging (``neighbor_allreduce``, through shared memory as by default
here, and through the gloo sockets with ``transport="network"``) and as one ``all_reduce`` per
edge (``edge_allreduce``), alternating call by call after a barrier in the same run. A run gives
the median over its iterations of the slowest rank's time; the table shows the median over
``--edges-runs`` runs, and each case against the shared-memory point-to-point one.

    python benchmarks/gossip.py --edges-only --edges-worlds 4 8 --edges-sizes 262144 4194304
"""

import argparse
import math
import statistics
import time

TIMED_TOPOLOGIES = [("one-peer-exp", {}), ("ring-graph", {}), ("exponential-graph", {}),
                    ("alternating-exp-ring", {"local_size": 2})]


TARGET = ("one-peer-exp", 64 << 20, 0.75)


def _timing_worker(rank, n, sizes, iters, warmup, slice_bytes=None, transport="auto"):
    import torch
    import torch.distributed as dist

    from topocoll.gossip import gossip_topology
    from topocoll.runtime import neighbor_allreduce

    topos = [(name, gossip_topology(name, n, **params)) for name, params in TIMED_TOPOLOGIES]
    out = {}
    for nbytes in sizes:
        x = torch.randn(nbytes // 4, generator=torch.Generator().manual_seed(rank))
        cases = [("all_reduce", None)] + topos
        times = {label: [] for label, _ in cases}
        for i in range(warmup + iters):
            for label, topo in (cases if i % 2 == 0 else cases[::-1]):
                dist.barrier()
                t0 = time.perf_counter()
                if topo is None:
                    dist.all_reduce(x)
                    x.div_(n)
                else:
                    neighbor_allreduce(x, topo, i, out=x, slice_bytes=slice_bytes,
                                       transport=transport)
                times[label].append(time.perf_counter() - t0)
        for label, samples in times.items():
            out[(nbytes, label)] = samples[warmup:]
    return out


def in_degree(name, params, n):
    """Largest number of ranks any rank receives from in one iteration (over a period)."""
    from topocoll.gossip import gossip_topology

    topo = gossip_topology(name, n, **params)
    return max(int(((topo.matrix(k) != 0).sum(axis=1) - 1).max()) for k in range(topo.period))


def timing(worlds, sizes, iters, warmup, slice_bytes=None, transport="auto"):
    from topocoll.runtime import run_local
    from topocoll.units import format_size, format_time

    import os
    import platform

    print("Part 1: time per iteration, median of the slowest rank over "
          f"{iters} iterations (all_reduce: gloo, loopback; neighbor averaging: transport "
          f"{transport}; {platform.machine()}, {os.cpu_count()} cores)")
    for n in worlds:
        results = run_local(_timing_worker, n, (sizes, iters, warmup, slice_bytes, transport),
                            start_method="fork", timeout=1800)
        print(f"\n{n} processes")
        head = (f"{'size':>9} {'operation':<22} {'in-deg':>6} {'time':>10} "
                f"{'vs all_reduce':>13} {'model':>7} {'measured/model':>14} {'target':>7}")
        print(head)
        print("-" * len(head))
        for nbytes in sizes:
            labels = ["all_reduce"] + [name for name, _ in TIMED_TOPOLOGIES]
            med = {}
            for label in labels:
                per_iter = [max(r[(nbytes, label)][i] for r in results) for i in range(iters)]
                med[label] = statistics.median(per_iter)
            for label in labels:
                if label == "all_reduce":
                    print(f"{format_size(nbytes):>9} {label:<22} {'':>6} "
                          f"{format_time(med[label]):>10} {1.0:>13.2f} {1.0:>7.2f} {'':>14}")
                    continue
                params = dict(TIMED_TOPOLOGIES)[label]
                d = in_degree(label, params, n)
                model = d * n / (2 * (n - 1))
                ratio = med[label] / med["all_reduce"]
                goal = ""
                if (label, nbytes) == TARGET[:2]:
                    goal = f"{TARGET[2]:.2f}" + ("<" if ratio > TARGET[2] else "")
                print(f"{format_size(nbytes):>9} {label:<22} {d:>6} {format_time(med[label]):>10} "
                      f"{ratio:>13.2f} {model:>7.2f} {ratio / model:>14.2f} {goal:>7}")


EDGE_CASES = ("point-to-point (shared memory)", "point-to-point (network)",
              "edge all_reduce")


def _edges_worker(rank, n, sizes, iters, warmup):
    """Seconds of each call on this rank, by (size, case) (see Part 4)."""
    import torch
    import torch.distributed as dist

    from topocoll.gossip import gossip_topology
    from topocoll.runtime import edge_allreduce, neighbor_allreduce

    topo = gossip_topology("one-peer-exp", n)
    out = {}
    for nbytes in sizes:
        x = torch.randn(nbytes // 4, generator=torch.Generator().manual_seed(rank))
        calls = [lambda k: neighbor_allreduce(x, topo, k, out=x),
                 lambda k: neighbor_allreduce(x, topo, k, out=x, transport="network"),
                 lambda k: edge_allreduce(x, topo, k, out=x)]
        times = [[] for _ in calls]
        order = list(range(len(calls)))
        for i in range(warmup + iters):
            for c in (order if i % 2 == 0 else order[::-1]):
                dist.barrier()
                t0 = time.perf_counter()
                calls[c](i)
                times[c].append(time.perf_counter() - t0)
        for label, samples in zip(EDGE_CASES, times):
            out[(nbytes, label)] = samples[warmup:]
    return out


def edges_part(worlds, sizes, iters, runs, warmup=3):
    """Part 4: the table of the module text; returns {(n, size, case): median seconds}."""
    import os
    import platform

    from topocoll.runtime import run_local
    from topocoll.units import format_size, format_time

    print(f"\nPart 4: one-peer-exp, point-to-point neighbor averaging vs one all_reduce per edge "
          f"(decent_dp); median over {runs} runs of the median over {iters} iterations of the "
          f"slowest rank ({platform.machine()}, {os.cpu_count()} cores)")
    head = f"{'ranks':>5} {'size':>9} {'case':<30} {'time':>10} {'runs':>30} {'vs p2p shm':>10}"
    print(head)
    print("-" * len(head))
    table = {}
    for n in worlds:
        per_run = {}
        for _ in range(runs):
            results = run_local(_edges_worker, n, (sizes, iters, warmup), start_method="fork",
                                timeout=1800)
            for key in results[0]:
                slowest = [max(r[key][i] for r in results) for i in range(iters)]
                per_run.setdefault(key, []).append(statistics.median(slowest))
        for nbytes in sizes:
            base = statistics.median(per_run[(nbytes, EDGE_CASES[0])])
            for label in EDGE_CASES:
                samples = per_run[(nbytes, label)]
                med = table[(n, nbytes, label)] = statistics.median(samples)
                text = " ".join(format_time(t) for t in samples)
                print(f"{n:>5} {format_size(nbytes):>9} {label:<30} {format_time(med):>10} "
                      f"{text:>30} {med / base:>10.2f}")
    return table


def closed_form(name, n):
    """rho from docs/math.md section 7 where it gives one (None otherwise)."""
    if name in ("complete", "fully-connected-graph"):
        return 0.0
    if name == "exponential-graph" and n % 2 == 0:
        return 1 - 2 / (math.ceil(math.log2(n)) + 1)
    if name == "ring-graph" and n >= 3:
        return (1 + 2 * math.cos(2 * math.pi / n)) / 3
    if name in ("one-peer-exp", "one-peer-exponential-graph") and n & (n - 1) == 0:
        return 0.0  # exact average after log2 n iterations: the period product is 11^T/n
    return None


def rho_part(sizes):
    from topocoll.gossip import rho_table

    print("\nPart 2: rho of the period product (and per iteration), iterations to the exact "
          "average, closed form where docs/math.md gives one")
    t0 = time.perf_counter()
    rows = rho_table(sizes=sizes)
    head = (f"{'topology':<36} {'n':>4} {'period':>6} {'rho':>9} {'rho/iter':>9} "
            f"{'exact after':>11} {'closed form':>11} {'ratio':>7}")
    print(head)
    print("-" * len(head))
    for r in rows:
        label = r["name"] + "".join(f" {k}={v}" for k, v in (r["params"] or {}).items())
        if r["error"]:
            print(f"{label:<36} {r['nodes']:>4} (none: {r['error']})")
            continue
        anchor = closed_form(r["name"], r["nodes"])
        if anchor is None:
            ratio = ""
        elif anchor == 0:
            ratio = "exact" if r["rho"] < 1e-12 else "NO"
        else:
            ratio = f"{r['rho'] / anchor:.4f}"
        exact = "-" if r["exact_average_after"] is None else str(r["exact_average_after"])
        print(f"{label:<36} {r['nodes']:>4} {r['period']:>6} {r['rho']:>9.5f} "
              f"{r['rho_per_iteration']:>9.5f} {exact:>11} "
              f"{'' if anchor is None else f'{anchor:.5f}':>11} {ratio:>7}")
    print(f"({len(rows)} rows in {time.perf_counter() - t0:.1f} s)")


def _two_level_worker(rank, n, machines, flat, local, numel, iterations, warmup):
    """Seconds of each call on this rank, by case: all_reduce, flat, hierarchical."""
    import torch
    import torch.distributed as dist

    from topocoll.runtime import hierarchical_neighbor_allreduce, neighbor_allreduce

    x = torch.randn(numel, generator=torch.Generator().manual_seed(rank))

    def average(k):
        dist.all_reduce(x)
        x.div_(n)

    calls = [("all_reduce", average),
             ("flat one-peer-exp", lambda k: neighbor_allreduce(x, flat, k, out=x)),
             ("hierarchical one-peer-exp", lambda k: hierarchical_neighbor_allreduce(
                 x, machines, local_size=local, iteration=k, out=x))]
    times = {label: [] for label, _ in calls}
    for i in range(warmup + iterations):
        k = max(i - warmup, 0)
        for label, call in (calls if i % 2 == 0 else calls[::-1]):
            dist.barrier()
            t0 = time.perf_counter()
            call(k)
            times[label].append(time.perf_counter() - t0)
    return {label: t[warmup:] for label, t in times.items()}


def two_level(rate, slowdown, size, iterations, runs, warmup=1):
    """Part 3: the table of the module text; returns its rows."""
    import os
    import platform

    from topocoll.emulate import EmulatedNetwork
    from topocoll.emulate.prediction import (gossip_model_time, hierarchical_model_time,
                                             torch_model_time)
    from topocoll.gossip import gossip_topology
    from topocoll.runtime import run_local

    spec, local = f"switch:16,4,{slowdown}", 4
    machines, flat = gossip_topology("one-peer-exp", 4), gossip_topology("one-peer-exp", 16)
    measured = {}
    with EmulatedNetwork(spec, link_bandwidth=rate) as net:
        cal = net.calibration()
        for _ in range(runs):
            per_rank = run_local(_two_level_worker, 16, (machines, flat, local, size // 4,
                                                         iterations, warmup),
                                 network=net, start_method="fork", timeout=1800)
            for label in per_rank[0]:
                slowest = [max(r[label][i] for r in per_rank) for i in range(iterations)]
                measured.setdefault(label, []).append(statistics.mean(slowest))
        plan = net.plan
        models = {"all_reduce": torch_model_time("allreduce", plan, cal, size),
                  "flat one-peer-exp": statistics.mean(
                      gossip_model_time(flat, k, plan, cal, size) for k in range(iterations)),
                  "hierarchical one-peer-exp": statistics.mean(
                      hierarchical_model_time(machines, local, k, plan, cal, size)
                      for k in range(iterations))}
    print(f"\nPart 3: {spec} (4 machines x 4 ranks, uplinks {slowdown}x slower), links at "
          f"{rate}, {size >> 20} MiB per rank, mean of {iterations} iterations per run, median of "
          f"{runs} runs ({platform.machine()}, {os.cpu_count()} cores)")
    head = (f"{'case':<26} {'model':>9} {'measured':>9} {'meas/model':>10} "
            f"{'runs':>24} {'vs all_reduce':>13}")
    print(head)
    print("-" * len(head))
    rows = []
    base = statistics.median(measured["all_reduce"])
    for label, model in models.items():
        med = statistics.median(measured[label])
        runs_text = " ".join(f"{t:.3f}" for t in measured[label])
        print(f"{label:<26} {model:>8.3f}s {med:>8.3f}s {med / model:>10.3f} {runs_text:>24} "
              f"{med / base:>13.3f}")
        rows.append({"case": label, "model": model, "measured": med, "runs": measured[label]})
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worlds", type=int, nargs="+", default=[4, 8])
    parser.add_argument("--sizes", type=int, nargs="+", default=[4096, 262144, 4194304, 67108864],
                        help="tensor sizes in bytes (float32)")
    parser.add_argument("--iters", type=int, default=30)
    parser.add_argument("--slice-bytes", type=int, help="neighbor_allreduce slice_bytes")
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--transport", default="auto", choices=("auto", "network", "shared_memory"),
                        help="neighbor_allreduce transport (default auto: shared memory here)")
    parser.add_argument("--rho-sizes", type=int, nargs="+",
                        default=[4, 8, 16, 32, 64, 128, 256])
    parser.add_argument("--no-timing", action="store_true")
    parser.add_argument("--no-rho", action="store_true")
    parser.add_argument("--two-level", action="store_true",
                        help="Part 3: on an emulated two-level network (root)")
    parser.add_argument("--two-level-rate", default="25Mbps",
                        help="emulated rate of the endpoint cables")
    parser.add_argument("--two-level-slowdown", type=int, default=4,
                        help="how many times slower the uplinks are")
    parser.add_argument("--two-level-size", type=int, default=1 << 20, help="bytes per rank")
    parser.add_argument("--two-level-iterations", type=int, default=8,
                        help="timed iterations per run, a multiple of 4")
    parser.add_argument("--two-level-runs", type=int, default=3)
    parser.add_argument("--edges", action="store_true",
                        help="Part 4: point-to-point gossip vs one all_reduce per edge")
    parser.add_argument("--edges-only", action="store_true", help="Part 4 and nothing else")
    parser.add_argument("--edges-worlds", type=int, nargs="+", default=[4, 8])
    parser.add_argument("--edges-sizes", type=int, nargs="+", default=[262144, 4194304],
                        help="tensor sizes in bytes (float32)")
    parser.add_argument("--edges-iters", type=int, default=20)
    parser.add_argument("--edges-runs", type=int, default=3)
    args = parser.parse_args()
    if args.edges_only:
        edges_part(args.edges_worlds, args.edges_sizes, args.edges_iters, args.edges_runs)
        return
    if args.two_level:
        from topocoll.emulate import prepare_process

        prepare_process()   # before numpy starts threads: root, or a user namespace
    if not args.no_timing:
        timing(args.worlds, args.sizes, args.iters, args.warmup, args.slice_bytes, args.transport)
    if not args.no_rho:
        rho_part(args.rho_sizes)
    if args.two_level:
        two_level(args.two_level_rate, args.two_level_slowdown, args.two_level_size,
                  args.two_level_iterations, args.two_level_runs)
    if args.edges:
        edges_part(args.edges_worlds, args.edges_sizes, args.edges_iters, args.edges_runs)


if __name__ == "__main__":
    main()
