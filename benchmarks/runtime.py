"""Schedules run on torch.distributed against torch's own collectives.

For 4 and 8 local processes (gloo) and buffers of 1, 16, 64 and 256 MiB: the ring allreduce
and allgather (a unidirectional ring), and BFB allreduce and allgather on the topology
``topocoll find`` picks for that many nodes of degree 2, each against torch's
``all_reduce`` / ``all_gather_into_tensor`` on the same group and data. The table gives the
median time per call, the bus bandwidth as nccl-tests define it, and our bus bandwidth over
torch's (target: the ring allreduce at 64 MiB and above at least 0.9x). Every case is checked
against torch's result first.

    python benchmarks/runtime.py
    python benchmarks/runtime.py --quick          # 4 processes, 1 and 16 MiB
"""

import argparse

from topocoll.finder import find
from topocoll.runtime import run_local
from topocoll.runtime.measure import measure_schedule
from topocoll.synth import generate

MIB = 1 << 20
TARGET = 0.9


def _schedules(n):
    choice = find(n, 2, evaluate=False, cache=False).best.name
    out = []
    for name in ("allreduce", "allgather"):
        out.append((f"ring {name}", generate(f"uniring:{n}", name, "ring")))
        out.append((f"bfb {name} on {choice}", generate(choice, name, "bfb")))
    return out


def _worker(rank, world_size, sizes, iters):
    rows = []
    for label, schedule in _schedules(world_size):
        for size in sizes:
            r = measure_schedule(schedule, size, iters=iters, check=True)
            rows.append((label, size, r))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--iters", type=int, default=5, help="timed calls per case (median)")
    args = ap.parse_args()
    worlds = (4,) if args.quick else (4, 8)
    sizes = (MIB, 16 * MIB) if args.quick else (MIB, 16 * MIB, 64 * MIB, 256 * MIB)
    header = (f"{'processes':>9} {'schedule':40} {'size':>8} {'ours ms':>9} {'torch ms':>9} "
              f"{'ours GB/s':>9} {'torch GB/s':>10} {'ratio':>6} {'check':>6}")
    print(header)
    print("-" * len(header))
    for n in worlds:
        rows = run_local(_worker, n, (sizes, args.iters), timeout=3600)[0]
        for label, size, r in rows:
            flag = " <" if label.startswith("ring allreduce") and size >= 64 * MIB and \
                r["ratio"] < TARGET else ""
            print(f"{n:9d} {label:40} {size // MIB:6d}Mi {1e3 * r['time']:9.2f} "
                  f"{1e3 * r['baseline_time']:9.2f} {r['busbw'] / 1e9:9.3f} "
                  f"{r['baseline_busbw'] / 1e9:10.3f} {r['ratio']:6.3f}"
                  f" {'ok' if r['correct'] else 'WRONG':>6}{flag}")
    print(f"bus bandwidth as nccl-tests define it; ratio = ours / torch's (gloo); target: ring "
          f"allreduce >= {TARGET}x at 64 MiB and above (< marks a miss); medians of "
          f"{args.iters} calls")


if __name__ == "__main__":
    main()
