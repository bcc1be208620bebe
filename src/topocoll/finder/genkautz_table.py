"""The shipped table of exact BFB costs of the generalized Kautz digraph GK(n, d).

The finder offers ``genkautz:N,d`` at every target size. Its exact BFB cost
(:func:`topocoll.finder.bfbcost.genkautz_cost`) takes O(N^2) work per N, about 0.2 s at N = 2000,
and a sweep over every N up to 2000 would spend minutes on it alone. The costs depend on nothing
but ``(n, d)``, so, as Zhao et al. (NSDI 2025) suggest for their search ("results can be saved for
future use"), they are computed once by this module and shipped with the package: a sweep then
reads them instead of recomputing them. Sizes outside the table are computed on demand (and cached
by the finder). The tests recompute a random sample of the rows with the live code and require
equality, so the table cannot drift from :mod:`topocoll.finder.bfbcost`.

Regenerate (minutes; uses every core)::

    python -m topocoll.finder.genkautz_table --max-nodes 2048 --degrees 2-6

A second file holds a few larger sizes the finder is asked about (N = 4096, 8192, 16384 at
d = 4: the last takes minutes on its own, too long for a query)::

    python -m topocoll.finder.genkautz_table --sizes 4096,8192,16384 --degrees 4 \\
        --out src/topocoll/finder/data/genkautz_bfb_large.csv

>>> row = lookup(37, 4)
>>> row["steps"], round(row["t_b_ag"], 6), row["exact"]
(3, 1.297297, True)
>>> lookup(10**6, 4) is None
True
"""

import argparse
import functools
import sys

from ..batch import Failure, open_pool, run_tasks
from ..errors import UnsupportedError
from .bfbcost import genkautz_cost
from .tables import data_path, parse_range, rows_of, shipped_text, write_rows

__all__ = ["TABLE_VERSION", "lookup", "table", "parse_table", "compute_rows", "write_table"]

#: Bump when :func:`genkautz_cost` changes what it computes: rows of another version are ignored.
TABLE_VERSION = "genkautz-bfb-1"
_FILE = "genkautz_bfb.csv"
_LARGE_FILE = "genkautz_bfb_large.csv"
_FIELDS = ("n", "d", "steps", "t_b_ag", "t_b_rs")


@functools.cache
def table():
    """``{(n, d): {"steps", "t_b_ag", "t_b_rs", "exact"}}`` from the shipped files (empty if
    they are missing or of another :data:`TABLE_VERSION`)."""
    return {**parse_table(shipped_text(_LARGE_FILE)), **parse_table(shipped_text(_FILE))}


def parse_table(text):
    """The rows of a table file's ``text`` keyed by ``(n, d)``; ``{}`` when its version line is
    not :data:`TABLE_VERSION` (a table of an older cost algorithm is never read)."""
    out = {}
    for row in rows_of(text, TABLE_VERSION):
        n, d = int(row["n"]), int(row["d"])
        out[n, d] = {"steps": int(row["steps"]), "t_b_ag": float(row["t_b_ag"]),
                     "t_b_rs": float(row["t_b_rs"]), "exact": True}
    return out


def lookup(n, d):
    """The shipped exact cost of GK(n, d) (a fresh dict), or None when the table lacks it."""
    row = table().get((int(n), int(d)))
    return None if row is None else dict(row)


def compute_rows(sizes, degrees, *, workers=None, scheduler=None, progress=None):
    """Exact costs for every ``n`` in ``sizes`` and ``d`` in ``degrees``, as table rows, on
    ``workers`` local processes or the Dask cluster at ``scheduler``
    (:func:`topocoll.batch.open_pool`)."""
    todo = sorted(((n, d) for d in degrees for n in sizes), key=lambda p: -p[0] * (1 << p[1]))
    rows = []
    with open_pool(workers, scheduler) as pool:
        outcomes = run_tasks(genkautz_cost, [((n, d), (n, d)) for n, d in todo], pool)
        for i, ((n, d), cost) in enumerate(outcomes):
            if isinstance(cost, Failure):
                raise UnsupportedError(f"GK({n}, {d}): {cost.reason}")
            rows.append((n, d, cost["steps"], cost["t_b_ag"], cost["t_b_rs"]))
            if progress:
                progress(i + 1, len(todo))
    return sorted(rows, key=lambda r: (r[1], r[0]))


def write_table(rows, path):
    """Write ``rows`` (from :func:`compute_rows`) as the shipped CSV, atomically."""
    write_rows(path, TABLE_VERSION, "exact BFB costs of GK(n, d) with self-loops dropped, T_B "
               "in units of M/B; written by python -m topocoll.finder.genkautz_table", _FIELDS,
               [(n, d, steps, repr(float(ag)), repr(float(rs))) for n, d, steps, ag, rs in rows])


def main(argv=None):
    parser = argparse.ArgumentParser(description="Regenerate the shipped GK(n, d) BFB cost table.")
    parser.add_argument("--max-nodes", type=int, default=2048)
    parser.add_argument("--sizes", help="comma-separated sizes instead of 2..--max-nodes")
    parser.add_argument("--degrees", type=parse_range, default=parse_range("2-6"),
                        help="e.g. 2-6")
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--scheduler", help="a Dask scheduler (tcp://HOST:8786) to run on")
    parser.add_argument("--out", default=data_path(_FILE))
    args = parser.parse_args(argv)

    def report(done, total):
        if done % 200 == 0 or done == total:
            print(f"{done}/{total}", file=sys.stderr, flush=True)

    sizes = ([int(x) for x in args.sizes.split(",")] if args.sizes
             else range(2, args.max_nodes + 1))
    rows = compute_rows(sizes, args.degrees, workers=args.workers, scheduler=args.scheduler,
                        progress=report)
    write_table(rows, args.out)
    print(f"wrote {len(rows)} rows to {args.out}")


if __name__ == "__main__":
    main()
