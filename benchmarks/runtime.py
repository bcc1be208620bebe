"""Schedules run on torch.distributed against torch's own collectives.

For each world size (local processes, gloo over loopback) and buffer size: the ring allreduce
(a unidirectional ring), BFB allreduce and allgather on the topology ``topocoll find`` picks
for that many nodes of degree 2, and the ring allgather, each against torch's ``all_reduce`` /
``all_gather_into_tensor`` on the same group and data. Every case is checked against torch's
result first. Times are medians over ``--iters`` calls of the slowest rank's time per call,
ours and torch's alternating in the same run (``topocoll.runtime.measure``); the table gives
the bus bandwidth as nccl-tests define it and our bus bandwidth over torch's.

Targets (docs/runtime.md): ring allreduce >= 1.0x at 16 and 64 MiB, BFB allreduce >= 0.95x,
BFB allgather >= 1.2x; ``<`` marks a miss. Say which machine gave the numbers: processes that
share few cores measure oversubscription as much as the schedules.

    python benchmarks/runtime.py                                  # 4 processes, 16 and 64 MiB
    python benchmarks/runtime.py --worlds 4 8 16 --sizes 16 64 256
    python benchmarks/runtime.py --engine steps                   # the lock-step executor
    python benchmarks/runtime.py --worlds 2 --sizes 16 64 256 --cpu --tensors reused fresh
    python benchmarks/runtime.py --transport network      # gloo's sockets for our packets too

``--tensors``: ``reused`` (the default) calls each collective on one tensor, refilled untimed
before each call, as DDP reuses its gradient buckets; ``fresh`` gives every call a new copy,
as ``measure_schedule`` did before (the reused tensor decides: that is how training calls a
collective). ``--cpu`` adds the CPU seconds of all ranks together per call, per GiB of the
buffer (user and system time of every thread, from ``getrusage``), ours and torch's.
"""

import argparse
import os
import platform
import statistics

from topocoll.finder import find
from topocoll.runtime import run_local
from topocoll.runtime.measure import measure_schedule
from topocoll.synth import generate

MIB = 1 << 20
#: (case, sizes it applies to in MiB or None for all, least ratio)
TARGETS = {"ring allreduce": ((16, 64), 1.0), "bfb allreduce": (None, 0.95),
           "bfb allgather": (None, 1.2)}


def _schedules(n, cases):
    # degree 2 where the ranks allow it (2 ranks: complete:2, one link each way)
    choice = find(n, min(2, n - 1), evaluate=False, cache=False).best.name
    made = {"ring allreduce": lambda: generate(f"uniring:{n}", "allreduce", "ring"),
            "ring allgather": lambda: generate(f"uniring:{n}", "allgather", "ring"),
            "bfb allreduce": lambda: generate(choice, "allreduce", "bfb"),
            "bfb allgather": lambda: generate(choice, "allgather", "bfb")}
    return [(case, choice if case.startswith("bfb") else f"uniring:{n}", made[case]())
            for case in cases]


def _worker(rank, world_size, cases, sizes, iters, options, tensors=("reused",)):
    rows = []
    for case, topo, schedule in _schedules(world_size, cases):
        for size in sizes:
            for kind in tensors:
                r = measure_schedule(schedule, size, iters=iters, check=True,
                                     reuse=kind == "reused", **options)
                rows.append((case, topo, size, r))
    return rows


def target_of(case, size):
    """The least ratio the case should reach at ``size`` bytes, or None."""
    sizes, least = TARGETS.get(case, (None, None))
    if least is None or (sizes is not None and size // MIB not in sizes):
        return None
    return least


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worlds", type=int, nargs="+", default=[4], help="processes per run")
    ap.add_argument("--sizes", type=float, nargs="+", default=[16, 64], help="buffer MiB")
    ap.add_argument("--cases", nargs="+", default=["ring allreduce", "bfb allreduce",
                                                   "bfb allgather", "ring allgather"],
                    choices=["ring allreduce", "bfb allreduce", "bfb allgather",
                             "ring allgather"])
    ap.add_argument("--iters", type=int, default=9, help="timed calls per case (median)")
    ap.add_argument("--slice-bytes", type=int, help="ScheduleCollective slice_bytes")
    ap.add_argument("--window", type=int, help="ScheduleCollective window")
    ap.add_argument("--engine", choices=["dataflow", "steps"], default="dataflow")
    ap.add_argument("--transport", choices=["auto", "network", "shared_memory"],
                    default="auto", help="ScheduleCollective transport (auto: shared memory "
                    "between local ranks)")
    ap.add_argument("--tensors", nargs="+", choices=["reused", "fresh"], default=["reused"],
                    help="one tensor per collective refilled before each call (reused), or a "
                    "fresh copy per call; several: a row each")
    ap.add_argument("--cpu", action="store_true", help="print CPU seconds per GiB, ours and "
                    "torch's (all ranks together)")
    ap.add_argument("--repeat", type=int, default=1, help="whole runs (fresh process groups); "
                    "the summary gives the median ratio over them")
    args = ap.parse_args()
    options = {"engine": args.engine, "transport": args.transport}
    if args.slice_bytes is not None:
        options["slice_bytes"] = args.slice_bytes
    if args.window is not None:
        options["window"] = args.window
    sizes = [int(s * MIB) for s in args.sizes]
    print(f"machine: {platform.machine()}, {os.cpu_count()} cores; gloo over loopback; "
          f"engine {args.engine}, transport {args.transport}; medians of {args.iters} calls "
          "(slowest rank)")
    header = (f"{'ranks':>5} {'case':15} {'topology':24} {'size':>8} {'tensor':>6} "
              f"{'ours ms':>9} {'torch ms':>9} {'ours GB/s':>9} {'torch GB/s':>10} "
              f"{'ratio':>6} {'target':>6} {'check':>6}"
              + (f" {'ours CPU s/GiB':>14} {'torch CPU s/GiB':>15}" if args.cpu else ""))
    print(header)
    print("-" * len(header))
    ratios = {}
    for n in args.worlds:
        for _ in range(args.repeat):
            rows = run_local(_worker, n, (args.cases, sizes, args.iters, options,
                                          tuple(args.tensors)),
                             start_method="fork", timeout=7200)[0]
            for case, topo, size, r in rows:
                kind = "reused" if r["reuse"] else "fresh"
                ratios.setdefault((n, case, topo, size, kind), []).append(r["ratio"])
                _print_row(n, case, topo, size, r, args.cpu)
    if args.repeat > 1:
        print(f"\nmedian ratio over {args.repeat} runs")
        for (n, case, topo, size, kind), values in ratios.items():
            least = target_of(case, size)
            med = statistics.median(values)
            mark = "" if least is None else f"{least:.2f}" + ("<" if med < least else "")
            runs = " ".join(f"{v:.3f}" for v in values)
            print(f"{n:5d} {case:15} {topo:24} {size / MIB:6g}Mi {kind:>6} {med:6.3f} "
                  f"{mark:>6}  ({runs})")
    print("ratio = our bus bandwidth / torch's (gloo); target: the least ratio wanted, '<' "
          "marks a miss")


def _print_row(n, case, topo, size, r, cpu=False):
    least = target_of(case, size)
    mark = "" if least is None else f"{least:.2f}" + ("<" if r["ratio"] < least else "")
    kind = "reused" if r["reuse"] else "fresh"
    extra = f" {r['cpu_per_gib']:14.3f} {r['baseline_cpu_per_gib']:15.3f}" if cpu else ""
    print(f"{n:5d} {case:15} {topo:24} {size / MIB:6g}Mi {kind:>6} {1e3 * r['time']:9.2f} "
          f"{1e3 * r['baseline_time']:9.2f} {r['busbw'] / 1e9:9.3f} "
          f"{r['baseline_busbw'] / 1e9:10.3f} {r['ratio']:6.3f} {mark:>6} "
          f"{'ok' if r['correct'] else 'WRONG':>6}{extra}", flush=True)


if __name__ == "__main__":
    main()
