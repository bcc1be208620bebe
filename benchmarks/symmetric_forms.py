"""The symmetric form against the explicit one: verify, evaluate (step model) and simulate (link
model) of BFB schedules, from the representatives and from the expansion.

Each row is one schedule; ``explicit`` times the functions on ``SymmetricSchedule.expand()``
(the anchor: what they cost without the form), ``symmetric`` on the representatives; ratio =
explicit / symmetric. Medians of ``--repeat`` runs (default 3), in seconds, on this machine
(printed first). Rows above ``--explicit-limit`` transfers time the symmetric form only (their
explicit form needs more memory than a laptop has: 16,384 nodes, hundreds of millions of
transfers). Every result is compared: verdicts, step-model times and link-model times agree
(``agree`` column: relative difference of the link-model times).

    python benchmarks/symmetric_forms.py            # the table (about five minutes on 2 cores)
    python benchmarks/symmetric_forms.py --quick    # the small rows only
"""

import argparse
import os
import platform
import statistics
import time

from topocoll.schedule import evaluate, simulate, verify
from topocoll.synth import generate

CASES = [("torus:16x16", "allreduce"), ("hypercube:8", "allreduce"), ("torus:32x32", "allgather"),
         ("torus:32x32", "allreduce"), ("torus:128x128", "allgather"),
         ("torus:128x128", "allreduce"), ("hypercube:14", "allgather")]
QUICK = 3


def _median(func, repeat):
    times, value = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        value = func()
        times.append(time.perf_counter() - start)
    return statistics.median(times), value


def _time_all(schedule, repeat):
    out = {}
    out["verify"] = _median(lambda: verify(schedule), repeat)
    out["evaluate"] = _median(lambda: evaluate(schedule, "1GiB", check=False), repeat)
    out["simulate"] = _median(lambda: simulate(schedule, "1GiB"), repeat)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--explicit-limit", type=int, default=3_000_000)
    args = parser.parse_args()
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}")
    header = (f"{'schedule':<26} {'reps':>7} {'transfers':>11} {'what':<9} {'explicit':>9} "
              f"{'symmetric':>9} {'ratio':>7} {'agree':>8}")
    print(header)
    for spec, coll in CASES[:QUICK] if args.quick else CASES:
        s = generate(spec, coll, "bfb", form="symmetric")
        mine = _time_all(s, args.repeat)
        theirs = _time_all(s.expand(), args.repeat) if s.num_transfers <= args.explicit_limit \
            else None
        for what in ("verify", "evaluate", "simulate"):
            t_sym, value = mine[what]
            if theirs is None:
                t_exp, agree, ratio = "-", "-", "-"
            else:
                t_exp, other = theirs[what]
                if what == "verify":
                    agree = "yes" if value.valid == other.valid else "NO"
                else:
                    agree = f"{abs(value.time - other.time) / other.time:.1e}"
                ratio, t_exp = f"{t_exp / t_sym:.0f}x", f"{t_exp:.3f}"
            print(f"{spec + ' ' + coll:<26} {s.num_representatives:>7} {s.num_transfers:>11} "
                  f"{what:<9} {t_exp:>9} {t_sym:>9.3f} {ratio:>7} {agree:>8}", flush=True)


if __name__ == "__main__":
    main()
