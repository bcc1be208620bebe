"""Soaks: long runs of the runtime and of emulated networks, checked to stay flat.

The soaks of ``tests/soak`` (``tests/soak/soaks.py``), at the same sizes by default:

- ``schedule network`` / ``schedule shm``: one ScheduleCollective (a BFB allreduce on
  ``ring:4``, 4 KiB of float32) called ``--calls`` times on 4 ranks, through gloo and through
  shared memory;
- ``gossip auto`` / ``gossip network``: ``--iterations`` steps of DecentralizedDataParallel
  (one-peer exponential gossip, a 145-parameter model) on 4 ranks;
- ``groups``: ``--groups`` one-rank process groups made and destroyed one after another, a
  gossip step in each;
- ``emulate``: ``--builds`` builds and teardowns of an emulated ``ring:8`` (root only; the
  row says why it was skipped elsewhere).

Each rank (or the process, for ``groups`` and ``emulate``) measures itself after the first
tenth of the calls (the warm-up) and at the end. The table gives, for the rank whose resident
memory grew most, the resident memory after the warm-up and at the end and its growth, the
open descriptors and threads (Python's, then the kernel's) after the warm-up and at the end,
the median time of a call after the warm-up (the median over ranks of each rank's median), and
what was left on the host afterwards (processes, channel files in ``/dev/shm``, temporary
files; for ``emulate`` also namespaces, run records, veths and holders of the namespaces).
``flat`` says whether the tests' limits hold: growth under 5%, no more descriptors, as many
threads, nothing left.

    python benchmarks/soak.py
    python benchmarks/soak.py --calls 500 --iterations 300 --builds 10 --skip-emulate
"""

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _machine():
    from topocoll.emulate import describe_host

    host = describe_host()
    return (f"{host['processor']} ({host['machine']}), {host['cpus']} cores, Linux "
            f"{host['kernel']}, load average {os.getloadavg()[0]:.1f}")


def _soaks(args):
    """``(label, thunk)``: each thunk returns ``(figures of each rank, left)``."""
    from tests.soak import soaks

    out = [(f"schedule {short}", lambda t=transport: soaks.schedule_soak(t, calls=args.calls))
           for short, transport in (("network", "network"), ("shm", "shared_memory"))]
    out += [(f"gossip {t}", lambda t=t: soaks.ddp_soak(t, iterations=args.iterations))
            for t in ("auto", "network")]
    out.append(("groups", lambda: _one(soaks.groups_soak(groups=args.groups))))
    if not args.skip_emulate:
        out.append(("emulate", lambda: _one(soaks.emulate_soak(builds=args.builds))))
    return out


def _one(result):
    figures, left = result
    return [figures], left


def _emulation_refusal():
    sys.path.insert(0, str(ROOT))
    from tests.emulate.conftest import WHY_NOT

    return WHY_NOT


def _row(label, ranks, left, seconds):
    from tests.soak import soaks

    worst = max(ranks, key=lambda r: soaks.growth(r["start"], r["end"]))
    s, e = worst["start"], worst["end"]
    flat = not any(soaks.problems(r, "") for r in ranks) and not soaks.leftovers(left)
    leftover = "; ".join(f"{k}: {len(v)}" for k, v in left.items() if v) or "none"
    median = statistics.median(r["median_s"] for r in ranks) * 1e3
    return (f"{label:<16} {worst['calls']:>6} {s['rss_kib'] / 1024:>9.1f} "
            f"{e['rss_kib'] / 1024:>9.1f} {soaks.growth(s, e):>+7.2f}% "
            f"{s['fds']:>4}/{e['fds']:<4} {s['threads']}/{e['threads']} "
            f"{s['os_threads']:>3}/{e['os_threads']:<3} {median:>9.2f} {seconds:>6.1f} "
            f"{'yes' if flat else 'NO':>4}  {leftover}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--iterations", type=int, default=1000)
    parser.add_argument("--groups", type=int, default=30)
    parser.add_argument("--builds", type=int, default=50)
    parser.add_argument("--skip-emulate", action="store_true")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    import torch  # noqa: F401  (imported before forking: the ranks inherit it)

    print(f"Soaks on {_machine()}; 4 ranks where ranks run, forked")
    head = (f"{'soak':<16} {'calls':>6} {'RSS warm':>9} {'RSS end':>9} {'growth':>8} "
            f"{'fds':>9} {'py':>3} {'threads':>7} {'median ms':>9} {'wall s':>6} "
            f"{'flat':>4}  left behind")
    print(head)
    print("-" * len(head))
    why_not = None if args.skip_emulate else _emulation_refusal()
    for label, soak in _soaks(args):
        if label == "emulate" and why_not is not None:
            print(f"{label:<16} skipped: {why_not}")
            continue
        began = time.monotonic()
        ranks, left = soak()
        print(_row(label, ranks, left, time.monotonic() - began), flush=True)
    print(f"(RSS in MiB; fds, Python threads and kernel threads after the warm-up/at the end; "
          f"Python {platform.python_version()}, torch {torch.__version__})")


if __name__ == "__main__":
    main()
