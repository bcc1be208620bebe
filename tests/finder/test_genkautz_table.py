"""The shipped GK(n, d) BFB cost table agrees with the live computation."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from topocoll.finder import genkautz_table
from topocoll.finder.bfbcost import genkautz_cost

TABLE = genkautz_table.table()
SMALL = sorted(k for k in TABLE if k[0] <= 300)


def test_table_covers_the_sweep():
    # the finder's benchmark sweeps N = 2..2000 at d = 4: every row must be there
    for d in range(2, 7):
        assert all((n, d) in TABLE for n in range(2, 2049)), d


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(SMALL))
def test_rows_equal_the_live_cost(key):
    row = genkautz_table.lookup(*key)
    live = genkautz_cost(*key)
    assert row["steps"] == live["steps"]
    assert row["t_b_ag"] == pytest.approx(live["t_b_ag"], rel=1e-12)
    assert row["t_b_rs"] == pytest.approx(live["t_b_rs"], rel=1e-12)


@pytest.mark.parametrize("key", [(2000, 4), (1531, 5), (1024, 6)])
def test_large_rows_equal_the_live_cost(key):
    live = genkautz_cost(*key)
    row = genkautz_table.lookup(*key)
    assert (row["steps"], row["t_b_ag"], row["t_b_rs"]) == pytest.approx(
        (live["steps"], live["t_b_ag"], live["t_b_rs"]), rel=1e-12)


def test_write_and_parse_round_trip(tmp_path):
    rows = genkautz_table.compute_rows(range(2, 12), [2, 3], workers=1)
    path = tmp_path / "t.csv"
    genkautz_table.write_table(rows, path)
    parsed = genkautz_table.parse_table(path.read_text())
    assert len(parsed) == len(rows) == 20
    for n, d, steps, ag, rs in rows:
        assert parsed[n, d]["steps"] == steps and parsed[n, d]["t_b_ag"] == ag
    # a table of another cost version is never read
    stale = path.read_text().replace(genkautz_table.TABLE_VERSION, "genkautz-bfb-0")
    assert genkautz_table.parse_table(stale) == {}


def test_lookup_misses_return_none_and_copies():
    assert genkautz_table.lookup(10**6, 4) is None
    row = genkautz_table.lookup(37, 4)
    row["steps"] = -1
    assert genkautz_table.lookup(37, 4)["steps"] != -1
    assert np.isfinite(genkautz_table.lookup(37, 4)["t_b_rs"])
