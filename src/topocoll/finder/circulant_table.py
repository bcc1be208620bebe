"""The shipped table of directed circulant bases: least-diameter offsets and exact BFB costs.

A directed circulant DC(n, {a_1, ..., a_k}) (``dcirculant:N:A1,...``, Zhao et al. (NSDI 2025),
Table 9) is a Cayley digraph of Z_n: vertex-transitive, reverse-symmetric (``x -> -x`` maps it
onto its transpose) and, in every case measured, bandwidth-optimal under BFB. What matters is
its diameter, and the offsets of least diameter are found by a search over offset sets
(``a_1 = 1``, ``1 < a_2 < ... < a_k``: every set of each size when there are at most
:data:`EXHAUSTIVE` of them, else that many drawn with a fixed seed), which takes minutes for
every n up to 256. So, like :mod:`~topocoll.finder.genkautz_table`, it runs once and its result
ships with the package: for each ``(n, k)`` the offsets (ties broken by the least sum of distances),
the diameter and the exact BFB cost of each phase from :func:`~topocoll.finder.bfbcost.bfb_cost`.
The tests rebuild a sample of the rows with the live code and check them against verified BFB
schedules.

Regenerate (minutes)::

    python -m topocoll.finder.circulant_table --max-nodes 256 --degrees 2-4

>>> row = lookup(64, 4)
>>> row["spec"], row["steps"], row["bw_optimal"]
('dcirculant:64:1,4,13,29', 5, True)
>>> lookup(10**6, 4) is None
True
"""

import argparse
import functools
import itertools
import math
import sys

import numpy as np

from .tables import data_path, parse_range, rows_of, shipped_text, write_rows
from .bfbcost import bfb_cost

__all__ = ["TABLE_VERSION", "EXHAUSTIVE", "lookup", "table", "parse_table", "best_offsets",
           "offset_diameters", "compute_row", "write_table"]

#: Bump when the search or the cost changes meaning: rows of another version are ignored.
TABLE_VERSION = "dcirculant-1"
#: Offset sets per (n, k) searched exhaustively up to this many, else this many sampled.
EXHAUSTIVE = 4000
_FILE = "dcirculant_bfb.csv"
_FIELDS = ("n", "k", "offsets", "steps", "t_b_ag", "t_b_rs")
_BATCH = 2000


@functools.cache
def table():
    """``{(n, k): row}`` from the shipped file (empty if missing or of another version)."""
    return parse_table(shipped_text(_FILE))


def parse_table(text):
    """Rows of a table file keyed by ``(n, k)``; ``{}`` unless its first line names
    :data:`TABLE_VERSION`."""
    out = {}
    for row in rows_of(text, TABLE_VERSION):
        n, k = int(row["n"]), int(row["k"])
        offsets = [int(a) for a in row["offsets"].split()]
        out[n, k] = _row(n, offsets, int(row["steps"]), float(row["t_b_ag"]),
                         float(row["t_b_rs"]))
    return out


def _row(n, offsets, steps, ag, rs):
    bound = (n - 1) / n
    return {"spec": f"dcirculant:{n}:" + ",".join(map(str, offsets)), "nodes": n,
            "degree": len(offsets), "offsets": list(offsets), "steps": steps, "t_b_ag": ag,
            "t_b_rs": rs, "bw_optimal": bool(max(ag, rs) <= bound * (1 + 1e-9))}


def lookup(n, k):
    """The shipped row for ``(n, k)`` (a fresh dict), or None."""
    row = table().get((int(n), int(k)))
    return None if row is None else {**row, "offsets": list(row["offsets"])}


def offset_diameters(n, offsets):
    """Diameter and sum of distances from node 0 (= of every node) of DC(n, S) for each row
    S of ``offsets`` (``(count, k)``); diameter ``n`` when not strongly connected."""
    offsets = np.asarray(offsets, dtype=np.int64)
    count = offsets.shape[0]
    idx = np.arange(n, dtype=np.int64)[None, :]
    rows = np.arange(count)[:, None]
    reach = np.zeros((count, n), dtype=bool)
    reach[:, 0] = True
    frontier = reach.copy()
    diam = np.full(count, n, dtype=np.int64)
    total = np.zeros(count, dtype=np.int64)
    for depth in range(1, n):
        new = np.zeros_like(reach)
        for i in range(offsets.shape[1]):
            new |= frontier[rows, (idx - offsets[:, i:i + 1]) % n]
        new &= ~reach
        total += depth * new.sum(axis=1)
        reach |= new
        frontier = new
        full = reach.all(axis=1) & (diam == n)
        diam[full] = depth
        if not frontier.any():
            break
    return diam, total


def best_offsets(n, k, *, seed=0, limit=EXHAUSTIVE):
    """Offsets ``[1, a_2, ..., a_k]`` of least diameter (then least distance sum) for DC(n, k
    offsets): every set if there are at most ``limit``, else ``limit`` seeded random ones.
    Returns ``(offsets, diameter)``."""
    if not 1 <= k <= n - 1:
        raise ValueError(f"a directed circulant on {n} nodes has 1..{n - 1} offsets, not {k}")
    pool = range(2, n)
    if math.comb(n - 2, k - 1) <= limit:
        sets = np.array([(1, *c) for c in itertools.combinations(pool, k - 1)], dtype=np.int64)
    else:
        rng = np.random.default_rng([seed, n, k])
        draws = np.sort(np.stack([rng.choice(n - 2, size=k - 1, replace=False) + 2
                                  for _ in range(limit)]), axis=1)
        sets = np.unique(np.c_[np.ones(limit, dtype=np.int64), draws], axis=0)
    best = None
    for start in range(0, len(sets), _BATCH):
        chunk = sets[start:start + _BATCH]
        diam, total = offset_diameters(n, chunk)
        i = int(np.lexsort((total, diam))[0])
        key = (int(diam[i]), int(total[i]))
        if best is None or key < best[0]:
            best = (key, chunk[i].tolist())
    return best[1], best[0][0]


def compute_row(n, k):
    """One table row: the best offsets and their exact BFB costs (both phases)."""
    from ..topology.families.cayley import directed_circulant_graph
    offsets, _ = best_offsets(n, k)
    topo = directed_circulant_graph(n, offsets)
    # vertex-transitive: node 0's load-balancing problems are every node's
    ag = bfb_cost(topo, receivers=[0])
    rs = bfb_cost(topo, receivers=[0], transpose=True)
    return _row(n, offsets, ag["steps"], ag["t_b"], rs["t_b"])


def write_table(rows, path):
    """Write rows (from :func:`compute_row`) as the shipped CSV, atomically."""
    write_rows(path, TABLE_VERSION, "least-diameter directed circulants DC(n, k offsets) with "
               "exact BFB costs (T_B in units of M/B); written by python -m "
               "topocoll.finder.circulant_table", _FIELDS,
               [(r["nodes"], r["degree"], " ".join(map(str, r["offsets"])), r["steps"],
                 repr(float(r["t_b_ag"])), repr(float(r["t_b_rs"])))
                for r in sorted(rows, key=lambda r: (r["degree"], r["nodes"]))])


def main(argv=None):
    parser = argparse.ArgumentParser(description="Regenerate the shipped directed circulant "
                                                 "table.")
    parser.add_argument("--max-nodes", type=int, default=256)
    parser.add_argument("--degrees", type=parse_range, default=parse_range("2-4"),
                        help="e.g. 2-4")
    parser.add_argument("--out", default=data_path(_FILE))
    args = parser.parse_args(argv)
    rows = []
    for k in args.degrees:
        for n in range(k + 2, args.max_nodes + 1):
            rows.append(compute_row(n, k))
        print(f"degree {k} done", file=sys.stderr, flush=True)
    write_table(rows, args.out)
    print(f"wrote {len(rows)} rows to {args.out}")


if __name__ == "__main__":
    main()
