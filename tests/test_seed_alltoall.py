"""benchmarks/seeds/alltoall.py (Basu et al.'s all-to-all working document rebuilt): cheap parts
in quick mode print ratio columns that parse, each ratio is ours over the paper's number on its
row, and the exact claims come out exact."""

from fractions import Fraction
from pathlib import Path

from tests.helpers import checked_ratios, number_or_none, run_seed_script, seed_table_rows

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "seeds" / "alltoall.py"
CHEAP = "dbj,sccl,families,steplp"


def test_quick_parts_parse():
    done = run_seed_script(SCRIPT, "--quick", "--only", CHEAP, timeout=120)
    assert done.returncode == 0, done.stderr
    rows = seed_table_rows(done.stdout)
    assert len(rows) >= 15
    assert checked_ratios(rows, "n/a") >= 5
    got = {item: ours for item, _paper, ours, _r, _n in rows}
    # de Bruijn N = 8: lambda = 1/9 exactly (the paper's 0.1111)
    assert Fraction(number_or_none(got["debruijn:2,3 lambda"])).limit_denominator(100) == Fraction(1, 9)
    assert number_or_none(got["switches"]) == 72 and number_or_none(got["GPUs"]) == 512
    assert number_or_none(got["zig-zag hypercube:4 (z) K4 degree"]) == 9


def test_unknown_part_is_an_error():
    done = run_seed_script(SCRIPT, "--only", "fig99", timeout=60)
    assert done.returncode != 0 and "unknown part" in done.stderr
