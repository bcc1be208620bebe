"""benchmarks/seeds/alltoall.py (Basu et al.'s all-to-all working document rebuilt): cheap parts
in quick mode print ratio columns that parse, each ratio is ours over the paper's number on its
row, and the exact claims come out exact."""

import subprocess
import sys
from fractions import Fraction
from pathlib import Path

from tests.helpers import number_or_none, seed_table_rows

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "seeds" / "alltoall.py"
CHEAP = "dbj,sccl,families,steplp"


def test_quick_parts_parse():
    done = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--only", CHEAP],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    rows = seed_table_rows(done.stdout)
    assert len(rows) >= 15
    ratios = 0
    for item, paper, ours, ratio, _note in rows:
        if ratio == "n/a":
            assert paper == "n/a" or ours == "n/a", item
            continue
        r = number_or_none(ratio)
        assert r is not None and r > 0, (item, ratio)
        assert abs(r - number_or_none(ours) / number_or_none(paper)) <= 1e-3 * max(1.0, r) + 5e-4, item
        ratios += 1
    assert ratios >= 5
    got = {item: ours for item, _paper, ours, _r, _n in rows}
    # de Bruijn N = 8: lambda = 1/9 exactly (the paper's 0.1111)
    assert Fraction(number_or_none(got["debruijn:2,3 lambda"])).limit_denominator(100) == Fraction(1, 9)
    assert number_or_none(got["switches"]) == 72 and number_or_none(got["GPUs"]) == 512
    assert number_or_none(got["zig-zag hypercube:4 (z) K4 degree"]) == 9


def test_unknown_part_is_an_error():
    done = subprocess.run([sys.executable, str(SCRIPT), "--only", "fig99"],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode != 0 and "unknown part" in done.stderr
