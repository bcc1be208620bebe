"""Start-up time: ``topocoll --version``, ``topocoll --help``, ``import topocoll``, and the
everyday jobs on small topologies (``synth``, ``schedule``, ``verify``, ``evaluate``, <= 64 nodes).

Each command runs ``--repeat`` times in a fresh process; the first table gives the median wall
time, the anchor (0.55 s for ``topocoll --version`` before the package was made lazy; the target
is at most 0.2 s) and our ratio to it, and whether numpy was loaded (it must not be, for these
three). A bare ``python -c pass`` shows what the interpreter itself costs.

The second table times the everyday jobs on topologies of at most 64 nodes (``synth`` on
mesh:5x5 and torus:8x8, the BFB ``schedule`` of an allreduce on torus:8x8, ``verify`` and
``evaluate`` of that 64-node file): median and fastest wall and the CPU seconds (which a busy
machine inflates less than the wall) as this environment runs them, and the median wall with
compiled modules cached (``.pyc s``, as an installed package runs) against the target of
0.3 s, with the verdict on that median. It names the heavy libraries each job loads (scipy,
networkx, matplotlib, highspy, torch): the package imports them only where they are used, so
a job that needs none of them must not pay for them. With ``--against DIR`` another version of
the package (e.g. the last commit) is timed too, with its own cached modules, in turn with
ours, so that both see the same load.

    python benchmarks/startup.py
    python benchmarks/startup.py --repeat 21
    git archive HEAD src | tar -x -C /tmp/old && python benchmarks/startup.py --against /tmp/old/src
"""

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import hardware   # benchmarks/hardware.py, next to this script

ANCHOR = 0.55   # seconds, `topocoll --version` with the eager package
TARGET = 0.20
JOB_TARGET = 0.30   # seconds, each job below on a topology of at most 64 nodes

#: (name, topocoll arguments); they run in one scratch folder, in this order (``schedule``
#: writes the s.json that ``verify`` and ``evaluate`` read)
JOBS = [
    ("synth mesh:5x5", ["synth", "mesh:5x5", "-c", "allgather"]),
    ("synth torus:8x8", ["synth", "torus:8x8", "-c", "allgather"]),
    ("schedule torus:8x8", ["schedule", "torus:8x8", "-c", "allreduce", "-a", "bfb", "-o",
                            "s.json"]),
    ("verify s.json", ["verify", "s.json"]),
    ("evaluate s.json", ["evaluate", "s.json"]),
]
HEAVY = ("scipy", "networkx", "matplotlib", "highspy", "torch")


def _script():
    here = Path(sys.executable).parent / "topocoll"
    return str(here) if here.exists() else shutil.which("topocoll")


def _numpy_check(code):
    out = subprocess.run([sys.executable, "-c", code + "; import sys; "
                          "print('numpy' in sys.modules)"], capture_output=True, text=True,
                         check=True)
    return out.stdout.strip().splitlines()[-1] == "True"


def median_wall(cmd, repeat):
    return timings(cmd, repeat)[0]


def timings(cmd, repeat, cwd=None, path=None, pycache=None):
    """(median wall, fastest wall, median CPU seconds) of ``repeat`` fresh runs of ``cmd``: with
    the package from the folder ``path`` instead of the installed one, if given; with compiled
    modules cached in the folder ``pycache`` if given, else as this environment runs them."""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    if path is not None:
        env["PYTHONPATH"] = path
    if pycache is not None:
        env["PYTHONPYCACHEPREFIX"] = pycache
        env.pop("PYTHONDONTWRITEBYTECODE")
    subprocess.run(cmd, capture_output=True, check=True, env=env, cwd=cwd)   # warm the cache
    walls, cpus = [], []
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        subprocess.run(cmd, capture_output=True, check=True, env=env, cwd=cwd)
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(walls), min(walls), statistics.median(cpus)


def _heavy_loaded(args, cwd):
    """The heavy libraries in sys.modules after ``topocoll ARGS`` runs in a fresh process."""
    code = ("import sys\nfrom topocoll.cli.main import main\ntry:\n    main(%r)\n"
            "except SystemExit:\n    pass\nprint('HEAVY:' + ','.join(m for m in %r if m in "
            "sys.modules))" % (list(args), HEAVY))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=cwd)
    return out.stdout.strip().splitlines()[-1].removeprefix("HEAVY:")


def machine():
    """:func:`hardware.machine`, and whether this environment keeps compiled modules
    (PYTHONDONTWRITEBYTECODE set: every start compiles the package's modules from source)."""
    pyc = "no .pyc written" if os.environ.get("PYTHONDONTWRITEBYTECODE") else ".pyc written"
    return f"{hardware.machine()}, {pyc}"


def jobs_table(script, repeat, against=None):
    """Time the everyday jobs (see :data:`JOBS`) in a scratch folder and print their table.

    Each job is timed as this environment runs it (``median s``, ``min s``, ``cpu s``) and with
    its compiled modules cached (``.pyc s``, as an installed package runs); the ratio and the
    verdict compare that cached median with :data:`JOB_TARGET`. With ``against`` (a folder
    holding another version of the package) that version is timed too, with its own cached
    modules, in turn with ours, so that both see the same load."""
    before = f"{'before s':>10}{'speed-up':>10}" if against else ""
    print(f"\n{'job':<22}{'median s':>10}{'min s':>8}{'cpu s':>8}{'.pyc s':>8}{'target':>8}"
          f"{'ratio':>7}{'':>7}{before}  heavy libraries loaded")
    with tempfile.TemporaryDirectory() as folder:
        pycache = os.path.join(folder, "pycache")
        old_pycache = os.path.join(folder, "pycache-before")
        for name, args in JOBS:
            old = ""
            if against:
                then = timings([script, *args], repeat, cwd=folder, path=against,
                               pycache=old_pycache)[0]
            wall, fastest, cpu = timings([script, *args], repeat, cwd=folder)
            cached = timings([script, *args], repeat, cwd=folder, pycache=pycache)[0]
            if against:
                old = f"{then:>10.3f}{then / cached:>10.2f}"
            heavy = _heavy_loaded(args, folder) or "none"
            verdict = "meets" if cached < JOB_TARGET else "misses"
            print(f"{name:<22}{wall:>10.3f}{fastest:>8.3f}{cpu:>8.3f}{cached:>8.3f}"
                  f"{JOB_TARGET:>8.2f}{cached / JOB_TARGET:>7.2f}{verdict:>7}{old}  {heavy}")
    floor, _, _ = timings([sys.executable, "-c", "import numpy"], repeat)
    print(f"{'(python -c import numpy)':<22}{floor:>10.3f}: the floor of any job that computes")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=11, help="runs per command (median)")
    parser.add_argument("--against", metavar="DIR", help="also time the jobs with the package "
                        "in DIR (e.g. DIR/topocoll from `git archive OLD src`: give DIR=.../src)")
    args = parser.parse_args()
    script = _script()
    if script is None:
        sys.exit("startup.py: the topocoll command is not installed (pip install -e .)")
    cases = [
        ("python -c pass", [sys.executable, "-c", "pass"], None),
        ("import topocoll", [sys.executable, "-c", "import topocoll"], "import topocoll"),
        ("topocoll --help", [script, "--help"],
         "from topocoll.cli.main import cli; cli.get_help(__import__('click').Context(cli))"),
        ("topocoll --version", [script, "--version"], "import topocoll.cli.main"),
    ]
    print(machine())
    print(f"{'command':<22}{'median s':>10}{'numpy loaded':>14}")
    for name, cmd, probe in cases:
        seconds = median_wall(cmd, args.repeat)
        numpy = "-" if probe is None else ("yes" if _numpy_check(probe) else "no")
        print(f"{name:<22}{seconds:>10.3f}{numpy:>14}")
        if name == "topocoll --version":
            verdict = "meets" if seconds <= TARGET else "misses"
            print(f"anchor {ANCHOR:.2f} s, ratio {seconds / ANCHOR:.2f}; {verdict} the target "
                  f"of {TARGET:.2f} s")
    jobs_table(script, args.repeat, args.against)


if __name__ == "__main__":
    main()
