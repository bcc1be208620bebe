"""Start-up time: ``topocoll --version``, ``topocoll --help`` and ``import topocoll``.

Each command runs ``--repeat`` times in a fresh process; the table gives the median wall time,
the anchor (0.55 s for ``topocoll --version`` before the package was made lazy; the target is at
most 0.2 s) and our ratio to it, and whether numpy was loaded (it must not be, for these three).
A bare ``python -c pass`` shows what the interpreter itself costs.

    python benchmarks/startup.py
    python benchmarks/startup.py --repeat 21
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ANCHOR = 0.55   # seconds, `topocoll --version` with the eager package
TARGET = 0.20


def _script():
    here = Path(sys.executable).parent / "topocoll"
    return str(here) if here.exists() else shutil.which("topocoll")


def _numpy_check(code):
    out = subprocess.run([sys.executable, "-c", code + "; import sys; "
                          "print('numpy' in sys.modules)"], capture_output=True, text=True,
                         check=True)
    return out.stdout.strip().splitlines()[-1] == "True"


def median_wall(cmd, repeat):
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    subprocess.run(cmd, capture_output=True, check=True, env=env)   # warm the file cache
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(cmd, capture_output=True, check=True, env=env)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=11, help="runs per command (median)")
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
    print(f"{'command':<22}{'median s':>10}{'numpy loaded':>14}")
    for name, cmd, probe in cases:
        seconds = median_wall(cmd, args.repeat)
        numpy = "-" if probe is None else ("yes" if _numpy_check(probe) else "no")
        print(f"{name:<22}{seconds:>10.3f}{numpy:>14}")
        if name == "topocoll --version":
            verdict = "meets" if seconds <= TARGET else "misses"
            print(f"anchor {ANCHOR:.2f} s, ratio {seconds / ANCHOR:.2f}; {verdict} the target "
                  f"of {TARGET:.2f} s")


if __name__ == "__main__":
    main()
