"""benchmarks/seeds/tacos.py (Won et al., TACOS, MICRO 2024 rebuilt): cheap parts in quick mode
print ratio columns that parse, each ratio is ours over the paper's number on its row, and every
schedule the script built was verified."""

import re
from pathlib import Path

from tests.helpers import checked_ratios, number_or_none, run_seed_script, seed_table_rows

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "seeds" / "tacos.py"
CHEAP = "fig5,fig10,table3"


def test_quick_parts_parse_and_verify():
    done = run_seed_script(SCRIPT, "--quick", "--only", CHEAP, timeout=300)
    assert done.returncode == 0, done.stderr
    rows = seed_table_rows(done.stdout)
    assert len(rows) >= 10
    assert checked_ratios(rows, "-") >= 8
    counts = re.findall(r"schedules verified: (\d+)/(\d+)", done.stdout)
    assert len(counts) == len(CHEAP.split(","))
    assert all(ok == total for ok, total in counts) and int(counts[-1][1]) >= 6
    # the parts whose numbers are exact: Fig. 5's 3 steps and Fig. 10's unwinding
    got = {item: ours for item, _paper, ours, _r, _n in rows}
    assert number_or_none(got["topology-aware scatter, 4-NPU unidirectional ring: steps"]) == 3
    assert number_or_none(got["degree 3: directed links"]) == 12
    assert number_or_none(got["NPUs left"]) == 14


def test_unknown_part_is_an_error():
    done = run_seed_script(SCRIPT, "--only", "fig99", timeout=60)
    assert done.returncode != 0 and "unknown part" in done.stderr
