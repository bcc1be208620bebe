"""benchmarks/seeds/tacos.py (Won et al., TACOS, MICRO 2024 rebuilt): cheap parts in quick mode
print ratio columns that parse, each ratio is ours over the paper's number on its row, and every
schedule the script built was verified."""

import re
import subprocess
import sys
from pathlib import Path

from tests.helpers import number_or_none, seed_table_rows

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "seeds" / "tacos.py"
CHEAP = "fig5,fig10,table3"


def test_quick_parts_parse_and_verify():
    done = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--only", CHEAP],
                          capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    rows = seed_table_rows(done.stdout)
    assert len(rows) >= 10
    ratios = 0
    for item, paper, ours, ratio, _note in rows:
        if ratio == "-":
            continue
        r = number_or_none(ratio)
        assert r is not None and r > 0, (item, ratio)
        assert abs(r - number_or_none(ours) / number_or_none(paper)) <= 1e-3 * max(1.0, r) + 5e-4, item
        ratios += 1
    assert ratios >= 8
    counts = re.findall(r"schedules verified: (\d+)/(\d+)", done.stdout)
    assert len(counts) == len(CHEAP.split(","))
    assert all(ok == total for ok, total in counts) and int(counts[-1][1]) >= 6
    # the parts whose numbers are exact: Fig. 5's 3 steps and Fig. 10's unwinding
    got = {item: ours for item, _paper, ours, _r, _n in rows}
    assert number_or_none(got["topology-aware scatter, 4-NPU unidirectional ring: steps"]) == 3
    assert number_or_none(got["degree 3: directed links"]) == 12
    assert number_or_none(got["NPUs left"]) == 14


def test_unknown_part_is_an_error():
    done = subprocess.run([sys.executable, str(SCRIPT), "--only", "fig99"],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode != 0 and "unknown part" in done.stderr
