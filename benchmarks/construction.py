"""Construction speed: large topology families and expansions, the vectorised paths.

The tests check these objects' sizes and degrees; their speed is measured here. Anchors are the
figures the tests once asserted (every 10k-node family together in 5 s; the two large expansions
in 5 s). Times are medians of ``--repeat`` runs in this process; ``first`` is the first run,
which pays for any caches the later runs hit.

    python benchmarks/construction.py
    python benchmarks/construction.py --repeat 3
"""

import argparse
import statistics
import time

from topocoll.synth import bfb_allgather, cartesian_power_expansion, line_graph_expansion
from topocoll.topology import topology
from topocoll.topology.families import (
    circulant_graph, complete_bipartite_graph, complete_graph, de_bruijn_graph,
    generalized_kautz_graph, hamming_graph, hypercube_graph, kautz_graph, mesh_graph, ring_graph,
    torus_graph)

FAMILIES = [
    ("torus 100x100", lambda: torus_graph([100, 100])),
    ("mesh 100x100", lambda: mesh_graph([100, 100])),
    ("ring 10000", lambda: ring_graph(10_000)),
    ("hypercube 13", lambda: hypercube_graph(13)),
    ("circulant 10000 [1,7,99]", lambda: circulant_graph(10_000, [1, 7, 99])),
    ("hamming 4,10", lambda: hamming_graph(4, 10)),
    ("kautz 3,8", lambda: kautz_graph(3, 8)),
    ("generalized kautz 10000,4", lambda: generalized_kautz_graph(10_000, 4)),
    ("de bruijn 2,13", lambda: de_bruijn_graph(2, 13)),
    ("complete 2000", lambda: complete_graph(2000)),
    ("complete bipartite 2000", lambda: complete_bipartite_graph(2000)),
]
FAMILIES_ANCHOR = 5.0     # seconds, all families together


def _expansions():
    a = bfb_allgather(topology("kautz:4,2"))
    x = line_graph_expansion(line_graph_expansion(a))
    y = cartesian_power_expansion(bfb_allgather(topology("ring:8")), 3)
    return x.num_transfers + y.num_transfers


EXPANSIONS_ANCHOR = 5.0   # seconds: L(L(kautz:4,2)) and ring:8^3 together


def timings(fn, repeat):
    """(first run, median of all runs) in seconds, and the first run's value."""
    times, value = [], None
    for i in range(repeat):
        start = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - start)
        value = out if i == 0 else value
    return times[0], statistics.median(times), value


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs per case (median)")
    args = parser.parse_args()
    print(f"{'case':<28}{'nodes':>8}{'links':>9}{'first s':>9}{'median s':>10}")
    total_first = total = 0.0
    for name, make in FAMILIES:
        first, median, t = timings(make, args.repeat)
        total_first += first
        total += median
        print(f"{name:<28}{t.num_nodes:>8}{t.num_links:>9}{first:>9.3f}{median:>10.3f}")
    print(f"{'all families':<45}{total_first:>9.3f}{total:>10.3f}   anchor "
          f"{FAMILIES_ANCHOR:.1f} s, ratio {total / FAMILIES_ANCHOR:.3f}")
    first, median, count = timings(_expansions, args.repeat)
    print(f"{'L(L(kautz:4,2)) + ring:8^3 expansions':<37}{count:>8}{first:>9.3f}{median:>10.3f}"
          f"   anchor {EXPANSIONS_ANCHOR:.1f} s, ratio {median / EXPANSIONS_ANCHOR:.3f}")
    print("(expansion row: transfers instead of nodes)")


if __name__ == "__main__":
    main()
