"""Shortest paths without scipy: where the numpy iteration of :mod:`topocoll.topology.paths`
pays and where scipy's Dijkstra takes over (the budgets ``BUDGET`` and ``LOADED_BUDGET``).

For a few topologies and source counts the table gives the element updates the numpy rounds
spend (sources x links x rounds), the median seconds of the numpy rounds and of scipy's
Dijkstra on the same arrays (the anchor: the values are the same), their ratio, the numpy cost
per update, and which one :func:`~topocoll.topology.paths.distances` picks in a process without
scipy. The last line times ``import scipy.sparse.csgraph`` in a fresh interpreter: what a small
job saves by never asking scipy.

    python benchmarks/paths.py
    python benchmarks/paths.py --repeat 9
"""

import argparse
import statistics
import subprocess
import sys
import time

import numpy as np

from topocoll.topology import paths, topology

CASES = [("torus:8x8", 1), ("torus:8x8", 64), ("mesh:5x5", 25), ("hypercube:6", 64),
         ("torus:16x16", 1), ("torus:16x16", 256), ("ring:256", 256), ("torus:32x32", 1024)]


def _median(func, repeat):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        func()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _import_seconds(repeat):
    code = ("import time, numpy; t = time.perf_counter(); import scipy.sparse.csgraph; "
            "print(time.perf_counter() - t)")
    runs = [float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                 check=True).stdout) for _ in range(repeat)]
    return statistics.median(runs)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs per case (median)")
    args = parser.parse_args()
    from startup import machine   # benchmarks/startup.py, next to this script

    print(machine())
    print(f"{'topology':<14}{'sources':>8}{'updates':>13}{'numpy s':>10}{'scipy s':>10}"
          f"{'ratio':>8}{'ns/upd':>8}  picked")
    for spec, k in CASES:
        t = topology(spec)
        src, dst, _, _ = t.pairs
        n, w, sources = t.num_nodes, np.ones(src.size), np.arange(k)
        rounds = paths._relax(n, src, dst, w, sources[:1], 10**12)[1]
        updates = rounds * k * src.size
        ours = _median(lambda: paths._relax(n, src, dst, w, sources, 10**12), args.repeat)
        anchor = _median(lambda: paths._scipy(n, src, dst, w, sources, True), args.repeat)
        picked = "numpy" if updates <= paths.BUDGET else "scipy"
        print(f"{spec:<14}{k:>8}{updates:>13,}{ours:>10.4f}{anchor:>10.4f}{ours / anchor:>8.1f}"
              f"{1e9 * ours / updates:>8.1f}  {picked}")
    print(f"import scipy.sparse.csgraph (after numpy, fresh process): "
          f"{_import_seconds(args.repeat):.3f} s; BUDGET {paths.BUDGET:,} updates")


if __name__ == "__main__":
    main()
