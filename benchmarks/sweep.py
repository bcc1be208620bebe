"""Sweeps: the finder's atlas over (N, d) on local processes, against the targets.

Each part runs ``topocoll.finder.sweep`` from an empty results cache (a fresh folder) and prints
its wall time beside the target and the ratio to it:

* ``predicted``: N = 16..256 (every N), d = 2..6, predictions only, on 1 and 2 local
  processes; target 2 minutes;
* ``speedup``: the verified atlas of N = 16..128, d = 2..4 on 1 and on 2 local processes;
  target: 2 processes at least 1.7x faster;
* ``verified``: N = 16..256, d = 2..6, every pick built and verified, 2 processes; target 30
  minutes; then the same sweep stopped by a time limit at half that time and resumed from
  its cache: the resumed run in at most 55% of the full time, and the same atlas;
* ``optimizer``: ``find(1024, 4, optimize=True)`` under a 20 s search budget, its skeletons in
  turns here (the anchor) and as tasks on 2 local processes: candidates scored, the best's
  time (three runs each, medians);
* ``trainsim``: ResNet-50 training simulated at N = 16..256:16 on 1 and on 2 local processes
  (the anchor: 1; medians of three).

    python benchmarks/sweep.py                        # every part (about 25 minutes here)
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


def optimizer(runs=3):
    import statistics

    from topocoll.finder import find

    rows = {}
    for label, where in (("in turns here", {}), ("2 local processes", {"workers": 2})):
        got = []
        for _ in range(runs):
            r = find(1024, 4, "1MiB", node_bandwidth="100Gbps", cache=_fresh(), optimize=True,
                     budget=20, **where)
            o = r.optimization
            got.append((o["evaluations"], o["exact_evaluations"], o["seconds"]["total"],
                        r.evaluated_time))
        rows[label] = [statistics.median(col) for col in zip(*got)]
    anchor = rows["in turns here"][0]
    for label, (count, exact, seconds, best) in rows.items():
        print(f"optimizer 1024 x 4, 20 s, {label:<27} {seconds:>9.1f} {'':>14} "
              f"{'candidates':>12} {count / anchor:>7.2f}   {count:.0f} candidates ({exact:.0f} "
              f"exact), best {best * 1e6:.1f} us", flush=True)


def trainsim(runs=3):
    import statistics

    from topocoll.studies import train_sim_sizes
    from topocoll.studies.models import model_workload

    workload, times = model_workload("resnet50"), {}
    for workers in (1, 2):
        seconds = []
        for _ in range(runs):
            start = time.perf_counter()
            r = train_sim_sizes(workload, range(16, 257, 16), cache=_fresh(), workers=workers)
            seconds.append(time.perf_counter() - start)
        times[workers] = statistics.median(seconds)
        print(f"{f'train-sim 16..256:16, {workers} process(es)':<52} {times[workers]:>9.1f} "
              f"{'':>14} {'1 / this':>12} {times[1] / times[workers]:>7.2f}   {r.message}",
              flush=True)


PARTS = {"predicted": predicted, "speedup": speedup, "verified": verified,
         "optimizer": optimizer, "trainsim": trainsim}


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
