"""Shipped CSV tables of the finder (:mod:`~topocoll.finder.genkautz_table`,
:mod:`~topocoll.finder.circulant_table`): a version line, comment lines, a header, rows.

A table whose first line is not ``# <version>`` is never read, so a table written by an older
algorithm cannot be mistaken for a current one.

>>> list(rows_of("# v1\\n# note\\nn,x\\n2,0.5\\n", "v1"))
[{'n': '2', 'x': '0.5'}]
>>> list(rows_of("# v0\\nn,x\\n2,0.5\\n", "v1"))
[]
"""

import csv
import functools
import io
import os
from importlib import resources

__all__ = ["shipped_text", "rows_of", "write_rows", "parse_range", "data_path",
           "OPTIMIZED_BASES_FILE", "OPTIMIZED_TABLE_VERSION", "OPTIMIZED_FIELDS",
           "optimized_bases", "parse_optimized_bases"]

#: The optimizer's shipped bases (:mod:`~topocoll.finder.optimized_bases`); the results cache's
#: version carries a digest of it (:func:`~topocoll.finder.cache.cache_version`).
OPTIMIZED_BASES_FILE = "optimized_bases.csv"


def data_path(filename):
    """Where the package's table ``filename`` lives (``topocoll/finder/data/``)."""
    return str(resources.files(__package__).joinpath("data", filename))


def shipped_text(filename):
    """The text of the shipped table ``filename``, or ``""`` when it is missing."""
    try:
        return resources.files(__package__).joinpath("data", filename).read_text()
    except (FileNotFoundError, OSError):
        return ""


def rows_of(text, version):
    """The rows (dicts of strings) of a table text; none unless its first line is
    ``# <version>``."""
    lines = text.splitlines()
    if not lines or lines[0] != f"# {version}":
        return iter(())
    return csv.DictReader(line for line in lines[1:] if not line.startswith("#"))


def write_rows(path, version, comment, fields, rows):
    """Write a table atomically: the version line, one comment line, the header, the rows."""
    buf = io.StringIO()
    buf.write(f"# {version}\n# {comment}\n")
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(fields)
    writer.writerows(rows)
    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        f.write(buf.getvalue())
    os.replace(tmp, path)


def parse_range(text):
    """``"2-6"`` -> ``range(2, 7)``; ``"4"`` -> ``range(4, 5)``."""
    lo, _, hi = text.partition("-")
    return range(int(lo), int(hi or lo) + 1)


# the optimizer's shipped bases (topocoll.finder.optimized_bases makes them)
#: Bump when the optimizer's scoring changes meaning: rows of another version are ignored.
OPTIMIZED_TABLE_VERSION = "optimized-bases-1"
OPTIMIZED_FIELDS = ("spec", "nodes", "degree", "steps", "t_b_ag", "t_b_rs", "found_for")


@functools.cache
def optimized_bases():
    """``{spec: {"spec", "nodes", "degree", "steps", "t_b_ag", "t_b_rs", "found_for"}}`` from
    the shipped file (empty if it is missing or of another :data:`OPTIMIZED_TABLE_VERSION`)."""
    return parse_optimized_bases(shipped_text(OPTIMIZED_BASES_FILE))


def parse_optimized_bases(text):
    """The rows of a table file's ``text`` keyed by spec; ``{}`` for another version."""
    out = {}
    for row in rows_of(text, OPTIMIZED_TABLE_VERSION):
        out[row["spec"]] = {"spec": row["spec"], "nodes": int(row["nodes"]),
                            "degree": int(row["degree"]), "steps": int(row["steps"]),
                            "t_b_ag": float(row["t_b_ag"]), "t_b_rs": float(row["t_b_rs"]),
                            "found_for": row["found_for"]}
    return out
