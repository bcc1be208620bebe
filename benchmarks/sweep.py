"""Sweeps: the finder's atlas over (N, d) on local processes, against the targets.

Each part runs ``topocoll.finder.sweep`` from an empty results cache (a fresh folder) and prints
its wall time beside the target and the ratio to it:

* ``predicted``: N = 16..256 (every N), d = 2..6, predictions only, on 1 and 2 local
  processes; target 2 minutes;
* ``speedup``: the verified atlas of N = 16..128, d = 2..4 on 1 and on 2 local processes;
  target: 2 processes at least 1.7x faster;
* ``verified``: N = 16..256, d = 2..6, every pick built and verified, 2 processes; target 30
  minutes; then the same sweep stopped by a time limit at half that time and resumed from
  its cache: the resumed run in at most 55% of the full time, and the same atlas.

    python benchmarks/sweep.py                        # every part (about 20 minutes here)
    python benchmarks/sweep.py --parts predicted speedup
"""

import argparse
import os
import platform
import tempfile
import time


def _fresh():
    return os.path.join(tempfile.mkdtemp(prefix="topocoll-sweep-"), "finder.sqlite")


def _timed(*args, **kwargs):
    from topocoll.finder.sweep import sweep

    start = time.perf_counter()
    result = sweep(*args, **kwargs)
    return result, time.perf_counter() - start


def _row(label, seconds, target, ratio_label, ratio, result):
    print(f"{label:<52} {seconds:>9.1f} {target:>14} {ratio_label:>12} {ratio:>7.2f}   "
          f"{result.message}", flush=True)


def predicted():
    for workers in (1, 2):
        r, s = _timed(range(16, 257), range(2, 7), evaluate=False, cache=_fresh(),
                      workers=workers)
        _row(f"predicted 16..256 x 2..6, {workers} process(es)", s, "120 s", "s / target",
             s / 120, r)


def speedup():
    times = {}
    for workers in (1, 2):
        r, times[workers] = _timed(range(16, 129), range(2, 5), cache=_fresh(), workers=workers)
        _row(f"verified 16..128 x 2..4, {workers} process(es)", times[workers], "", "", 1.0, r)
    print(f"{'  2 processes over 1':<52} {'':>9} {'>= 1.7x':>14} {'speedup':>12} "
          f"{times[1] / times[2]:>7.2f}", flush=True)


def verified():
    grid = (range(16, 257), range(2, 7))
    full, s = _timed(*grid, cache=_fresh(), workers=2)
    _row("verified 16..256 x 2..6, 2 processes", s, "1800 s", "s / target", s / 1800, full)
    cache = _fresh()
    half, s_half = _timed(*grid, cache=cache, workers=2, time_limit=s / 2)
    _row("  the same, stopped at half its time", s_half, "", "", s_half / s, half)
    rest, s_rest = _timed(*grid, cache=cache, workers=2)
    _row("  resumed from its cache", s_rest, "<= 55% full", "of full", s_rest / s, rest)
    print(f"  the resumed atlas equals the full one: {rest.atlas() == full.atlas()}", flush=True)


PARTS = {"predicted": predicted, "speedup": speedup, "verified": verified}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", nargs="+", choices=list(PARTS), default=list(PARTS))
    args = parser.parse_args()
    print(f"sweeps on {platform.machine()}, {os.cpu_count()} cores, empty caches")
    print(f"{'run':<52} {'seconds':>9} {'target':>14} {'':>12} {'ratio':>7}   summary")
    for part in args.parts:
        PARTS[part]()


if __name__ == "__main__":
    main()
