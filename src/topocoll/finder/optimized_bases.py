"""The shipped table of optimized bases: what :func:`~topocoll.finder.optimize.optimize` found.

The optimizer searches for small bases (Cayley digraphs of metacyclic groups, rewired digraphs)
whose expansions beat the catalogue's at a target size; a good base serves every size its
expansions reach. Its search takes a minute at N = 1024, so its best bases are found once,
offline, and shipped here: every ``find`` then offers them like any other base
(:mod:`~topocoll.finder.bases`, family ``"optimized"``). The table stores specs and the costs
they were measured with; the search reads the costs, and the chosen candidate's allreduce is
built from the base's own BFB allreduce and verified with :func:`topocoll.verify` (``find``
warns when an evaluated time exceeds its prediction). The tests rebuild every row, and
:func:`~topocoll.finder.bases.measure_base` with source ``"bfb"`` refuses a row its verified
measurement disagrees with (:class:`~topocoll.errors.InvalidScheduleError`), so the table
cannot drift from the code.

How the rows were produced: for every target of :data:`TARGETS`, ``optimize(N, d, "1MiB",
alpha="10us", node_bandwidth="100Gbps", seed=SEED, max_evaluations=EVALUATIONS)`` seeded by the
frontier *without* the shipped table (so the table does not feed itself), and each skeleton's
best base that improved on its seed kept (one row per spec, smallest first). Deterministic for
the seed and the evaluation count. Regenerate (a few minutes)::

    python -m topocoll.finder.optimized_bases

>>> rows = table()
>>> row = rows["metacyclic:8,2,7:0.1,5.0,6.0,7.1"]
>>> row["nodes"], row["degree"], row["steps"], row["t_b_ag"]
(16, 4, 2, 1.0)
"""

import argparse
import sys

from .bases import compute_base
from .optimize import optimize
from .search import Search
# the shipped rows are read below the bases that offer them; their names stay importable here
from .tables import (OPTIMIZED_BASES_FILE, OPTIMIZED_FIELDS as _FIELDS,
                     OPTIMIZED_TABLE_VERSION as TABLE_VERSION, data_path,
                     optimized_bases as table, parse_optimized_bases as parse_table, write_rows)

__all__ = ["TABLE_VERSION", "TARGETS", "SEED", "EVALUATIONS", "table", "parse_table",
           "compute_rows", "write_table"]

#: (nodes, degree) targets the optimizer runs at to produce the table.
TARGETS = ((64, 4), (256, 4))
#: The optimizer's seed and candidate count per target.
SEED = 0
EVALUATIONS = 3000


def compute_rows(targets=TARGETS, *, seed=SEED, evaluations=EVALUATIONS, progress=None):
    """Run the optimizer at every target and return the table rows of the bases it found
    (each measured by a verified BFB allreduce, :func:`~topocoll.finder.bases.compute_base`)."""
    found = {}
    for nodes, degree in targets:
        seed_frontier = Search(degree, optimized_bases=False).target(nodes)
        r = optimize(nodes, degree, "1MiB", alpha="10us", node_bandwidth="100Gbps", seed=seed,
                     max_evaluations=evaluations, confirm=0, cache=False,
                     frontier=seed_frontier, keep_schedule=False)
        for track in r.skeletons:
            spec = track.get("best_base")
            if spec is None or spec == track.get("seed_base") or spec in found:
                continue
            entry = compute_base(spec, "optimized")
            found[spec] = (spec, entry.nodes, entry.degree, entry.steps, repr(entry.t_b_ag),
                           repr(entry.t_b_rs), f"{track['skeleton']} at {nodes} nodes")
        if progress:
            progress(f"{nodes} nodes of degree {degree}: {len(found)} bases so far")
    return sorted(found.values(), key=lambda row: (row[1], row[2], row[3], row[0]))


def write_table(rows, path):
    """Write ``rows`` (from :func:`compute_rows`) as the shipped CSV, atomically."""
    write_rows(path, TABLE_VERSION, f"bases found by topocoll.finder.optimize (seed {SEED}, "
               f"{EVALUATIONS} candidates per target, targets {list(TARGETS)}, 1MiB, 10us, "
               "100Gbps), costs of their verified BFB allreduce in units of M/B; written by "
               "python -m topocoll.finder.optimized_bases", _FIELDS, rows)


def main(argv=None):
    parser = argparse.ArgumentParser(description="Regenerate the shipped optimized-base table.")
    parser.add_argument("--out", default=data_path(OPTIMIZED_BASES_FILE))
    args = parser.parse_args(argv)
    rows = compute_rows(progress=lambda line: print(line, file=sys.stderr, flush=True))
    write_table(rows, args.out)
    print(f"wrote {len(rows)} rows to {args.out}")


if __name__ == "__main__":
    main()
