"""Memory and time of the commands that once exhausted the machine or ignored their limits.

Each command runs ``--repeat`` times in a fresh process; the table gives the median wall time,
the peak memory (the child's maximum resident set), the exit status and the anchor: what the
same command did before it was hardened (peak memory, or how it ended). A refused job must
refuse at once with a one-line error naming the limit; a job that fits must use memory that
grows with its work.

    python benchmarks/hostile_inputs.py
    python benchmarks/hostile_inputs.py --repeat 3 --skip-slow

First it runs the table of hostile command lines of ``tests/cli/test_hostile.py`` (every
command: malformed specs and files, absurd and non-finite numbers, broken XML, bad environment
variables, unwritable outputs, decompression bombs), then that of
``tests/cli/test_hostile_new.py`` (sweep, train-sim and find --optimize on workers or a Dask
scheduler, emulate, run --emulate, gossip run, the routed baselines) and prints, to stderr,
how many ended each way per command: a clean error (or an allowed success), a traceback, a
wrong exit status, more than one stderr line, an error that names no rule, an output left
behind, bad JSON, a hang or runaway work (more Python calls than the test allows), a process
started. ``--json`` prints one JSON document on stdout instead of the tables' stdout part (the
counts, the failing cases with their first stderr lines, and the memory rows).

    python benchmarks/hostile_inputs.py --cases-only --json
    python benchmarks/hostile_inputs.py --cases-only --filter run/
"""

import argparse
import collections
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = ROOT / "tests" / "data" / "valid-allgather-bfb-circulant6.json"

#: (label, arguments, anchor text, anchor peak in MiB or None, slow)
CASES = [
    ("info ring:20000", ["info", "ring:20000"], "9.8 GB peak", 9.8 * 1024, False),
    ("gossip info ring --nodes 20000", ["gossip", "info", "ring", "--nodes", "20000"],
     "6.3 GB peak", 6.3 * 1024, False),
    ("gossip info one-peer-exp --nodes 1000000",
     ["gossip", "info", "one-peer-exp", "--nodes", "1000000"], "out of memory", None, False),
    ("verify 6-node file claiming 100000 nodes", ["verify", "BIG"], "7.6 GB, then fails",
     7.6 * 1024, False),
    ("verify /dev/zero", ["verify", "/dev/zero"], "reads until memory runs out", None, False),
    ("alltoall torus:64x64", ["alltoall", "torus:64x64"], "killed by the kernel", None, False),
    ("find --nodes 10000000 -d 4", ["find", "--nodes", "10000000", "-d", "4"],
     "minutes, no output", None, False),
    ("alltoall hypercube:10 --time-limit 30", ["alltoall", "hypercube:10", "--time-limit", "30"],
     "99 s, then a memory limit", None, True),
]


def _script():
    here = Path(sys.executable).parent / "topocoll"
    return str(here) if here.exists() else shutil.which("topocoll")


def _run(args, cwd):
    """(seconds, peak MiB, exit status, last stderr line) of one run in a fresh process."""
    with tempfile.TemporaryFile() as out:
        start = time.perf_counter()
        proc = subprocess.Popen([_script(), *args], cwd=cwd, stdout=out, stderr=subprocess.PIPE)
        err = proc.stderr.read().decode("utf-8", "replace")
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        seconds = time.perf_counter() - start
        out.seek(0)
        text = err.strip() or out.read().decode("utf-8", "replace").strip()
    last = text.splitlines()[-1] if text else ""
    if len(text.splitlines()) > 1 and not err.strip():   # a report: its verdict or diameter
        lines = text.splitlines()
        last = next((line.strip() for line in lines if "diameter:" in line), lines[0])
    return seconds, usage.ru_maxrss / 1024, proc.returncode, last


#: outcome of a case -> the column it is counted in, in the order of the table
OUTCOMES = {"clean": "clean", "traceback": "traceback", "exit": "wrong exit",
            "stderr": "stderr", "rule": "no rule", "output": "output left", "json": "bad json",
            "hang": "hang", "work": "hang", "crash": "crash", "process": "process",
            "other": "other"}


def _outcome(found):
    """The column of a case from the problems ``tests/cli/test_hostile.py`` found."""
    if not found:
        return "clean"
    kind = found[0][0]
    return kind if kind in OUTCOMES else "other"


@contextlib.contextmanager
def _devices_kept():
    """As tests/conftest.py does: a regression must never replace /dev/full (as root)."""
    real = os.replace

    def guarded(src, dst, *rest, **kwargs):
        if os.path.realpath(os.fspath(dst)).startswith("/dev/"):
            raise AssertionError(f"tried to replace the device {dst}")
        return real(src, dst, *rest, **kwargs)
    os.replace = guarded
    try:
        yield
    finally:
        os.replace = real


def run_cases(select="", quick=False, progress=True):
    """Run the hostile-input table; (counts per command and outcome, failing cases, the
    slowest cases with their count of Python calls)."""
    sys.path.insert(0, str(ROOT))
    from tests.cli import test_hostile as table
    from tests.cli import test_hostile_new as newer

    cases = [case for case in table.CASES + newer.CASES
             if select in case.id and not (quick and case.slow)]
    counts = collections.defaultdict(collections.Counter)
    failing, slowest = [], []
    with tempfile.TemporaryDirectory(prefix="topocoll-hostile-") as work, _devices_kept():
        work = Path(work)
        (work / "in").mkdir()
        table.warm_up()
        inputs = newer.make_all_inputs(work / "in")    # both tables' inputs
        for i, case in enumerate(cases):
            cwd, scratch = work / f"case{i}", work / f"out{i}"
            cwd.mkdir()
            scratch.mkdir()
            start = time.perf_counter()
            outcome = table.run_case(case, inputs, cwd, scratch, work / "cache")
            seconds = time.perf_counter() - start
            found = table.problems(case, outcome)
            counts[case.command][OUTCOMES[_outcome(found)]] += 1
            if progress and (i + 1) % 100 == 0:
                print(f"  {i + 1}/{len(cases)} cases", file=sys.stderr, flush=True)
            if found:
                lines = [line for line in outcome.stderr.splitlines() if line.strip()]
                failing.append({"id": case.id, "args": [a[:80] for a in case.args],
                                "env": dict(case.env), "exit": outcome.code,
                                "calls": outcome.calls, "problems": [f"{k}: {m}" for k, m
                                                                     in found],
                                "stderr": lines[:3], "escaped": outcome.escaped,
                                "seconds": round(seconds, 2)})
            slowest.append({"id": case.id, "seconds": round(seconds, 2),
                            "calls": outcome.calls})
            shutil.rmtree(cwd, ignore_errors=True)
            shutil.rmtree(scratch, ignore_errors=True)
    slowest.sort(key=lambda row: -row["seconds"])
    return counts, failing, slowest[:15]


def _print_counts(counts, failing):
    columns = list(dict.fromkeys(OUTCOMES.values()))
    header = f"{'command':14} {'cases':>5} " + " ".join(f"{c:>11}" for c in columns)
    err = sys.stderr
    print(header, file=err)
    print("-" * len(header), file=err)
    total = collections.Counter()
    for command in sorted(counts):
        row = counts[command]
        total.update(row)
        print(f"{command:14} {sum(row.values()):5d} "
              + " ".join(f"{row.get(c, 0):11d}" for c in columns), file=err)
    print("-" * len(header), file=err)
    print(f"{'all':14} {sum(total.values()):5d} "
          + " ".join(f"{total.get(c, 0):11d}" for c in columns), file=err)
    for case in failing:
        print(f"FAIL {case['id']}: exit {case['exit']}; {'; '.join(case['problems'])[:200]}",
              file=err)
        for line in case["stderr"][:2]:
            print(f"     | {line[:200]}", file=err)


def _memory_rows(args, out):
    work = tempfile.mkdtemp(prefix="topocoll-hostile-")
    doc = json.loads(FIXTURE.read_text())
    doc["topology"]["nodes"] = 100_000
    Path(work, "BIG").write_text(json.dumps(doc))
    header = (f"{'command':42} {'wall s':>8} {'peak MiB':>9} {'exit':>4}  "
              f"{'before':28} {'peak/before':>11}  answer")
    print(header, file=out)
    print("-" * len(header), file=out)
    rows = []
    for label, argv, anchor, anchor_mib, slow in CASES:
        if slow and args.skip_slow:
            continue
        runs = [_run(argv, work) for _ in range(1 if slow else args.repeat)]
        wall = statistics.median(r[0] for r in runs)
        peak = statistics.median(r[1] for r in runs)
        code, last = runs[-1][2], runs[-1][3]
        ratio = f"{peak / anchor_mib:.3f}" if anchor_mib else "-"
        print(f"{label:42} {wall:8.2f} {peak:9.0f} {code:4d}  {anchor:28} {ratio:>11}  "
              f"{last[:110]}", file=out)
        rows.append({"command": label, "wall_s": wall, "peak_mib": peak, "exit": code,
                     "before": anchor, "answer": last})
    shutil.rmtree(work, ignore_errors=True)
    print(f"medians of {args.repeat} runs (1 for the time-limit case); peak = maximum resident "
          "set of the child; a refusal names the estimate, the limit and TOPOCOLL_MEMORY_LIMIT",
          file=out)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--skip-slow", action="store_true", help="skip the 30-second time limit")
    ap.add_argument("--cases-only", action="store_true",
                    help="only the hostile-input table (outcome counts)")
    ap.add_argument("--memory-only", action="store_true",
                    help="only the time and peak memory of the commands that once ran away")
    ap.add_argument("--filter", default="", help="only the table's cases whose id contains this")
    ap.add_argument("--quick", action="store_true",
                    help="only the table's cases that pytest runs without -m slow")
    ap.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    args = ap.parse_args()
    doc = {}
    if not args.memory_only:
        counts, failing, slowest = run_cases(args.filter, args.quick)
        _print_counts(counts, failing)
        doc["cases"] = {"total": sum(sum(row.values()) for row in counts.values()),
                        "counts": {command: dict(row) for command, row in sorted(counts.items())},
                        "failing": failing, "slowest": slowest}
    if not args.cases_only:
        doc["memory"] = _memory_rows(args, sys.stderr if args.json else sys.stdout)
    if args.json:
        print(json.dumps(doc, indent=1))
    elif not args.memory_only:
        failed = len(doc["cases"]["failing"])
        print(f"{doc['cases']['total']} hostile command lines, {failed} not ended as they must")


if __name__ == "__main__":
    main()
