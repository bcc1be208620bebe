"""Memory and time of the commands that once exhausted the machine or ignored their limits.

Each command runs ``--repeat`` times in a fresh process; the table gives the median wall time,
the peak memory (the child's maximum resident set), the exit status and the anchor: what the
same command did before it was hardened (peak memory, or how it ended). A refused job must
refuse at once with a one-line error naming the limit; a job that fits must use memory that
grows with its work.

    python benchmarks/hostile_inputs.py
    python benchmarks/hostile_inputs.py --repeat 3 --skip-slow
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FIXTURE = Path(__file__).resolve().parent.parent / "tests" / "data" / \
    "valid-allgather-bfb-circulant6.json"

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


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--skip-slow", action="store_true", help="skip the 30-second time limit")
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="topocoll-hostile-")
    doc = json.loads(FIXTURE.read_text())
    doc["topology"]["nodes"] = 100_000
    Path(work, "BIG").write_text(json.dumps(doc))
    header = (f"{'command':42} {'wall s':>8} {'peak MiB':>9} {'exit':>4}  "
              f"{'before':28} {'peak/before':>11}  answer")
    print(header)
    print("-" * len(header))
    for label, argv, anchor, anchor_mib, slow in CASES:
        if slow and args.skip_slow:
            continue
        runs = [_run(argv, work) for _ in range(1 if slow else args.repeat)]
        wall = statistics.median(r[0] for r in runs)
        peak = statistics.median(r[1] for r in runs)
        code, last = runs[-1][2], runs[-1][3]
        ratio = f"{peak / anchor_mib:.3f}" if anchor_mib else "-"
        print(f"{label:42} {wall:8.2f} {peak:9.0f} {code:4d}  {anchor:28} {ratio:>11}  "
              f"{last[:110]}")
    shutil.rmtree(work, ignore_errors=True)
    print(f"medians of {args.repeat} runs (1 for the time-limit case); peak = maximum resident "
          "set of the child; a refusal names the estimate, the limit and TOPOCOLL_MEMORY_LIMIT")


if __name__ == "__main__":
    main()
