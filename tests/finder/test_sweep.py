"""Sweeps (topocoll.finder.sweep, topocoll sweep): every cell is find's answer; the atlas is the
same bytes from one process, two local processes and a Dask LocalCluster, with or without a
worker killed mid-sweep; a resumed sweep computes no cell twice; a failing cell is recorded
and the others go on."""

import csv
import json
import multiprocessing as mp
import os
import signal

import pytest
from click.testing import CliRunner

from topocoll.cli.main import cli
from topocoll.cli.sweep import parse_range
from topocoll.errors import InputTypeError, UnsupportedError
from topocoll.finder import find
from topocoll.finder.sweep import CSV_COLUMNS, family, sweep

NODES = range(16, 40)
DEGREES = [2, 3]


@pytest.fixture
def cache(tmp_path):
    return tmp_path / "cache.sqlite"


@pytest.fixture(scope="module")
def reference():
    """The predicted atlas of the grid computed in this process, without a cache."""
    return sweep(NODES, DEGREES, evaluate=False, cache=False, workers=1, chunk=3)


def test_every_cell_is_finds_answer(reference):
    assert reference.success and reference.failed == 0 and len(reference.cells) == 48
    for cell in reference.cells[::7]:
        r = find(cell["nodes"], cell["degree"], "1MiB", evaluate=False, cache=False)
        assert cell["pick"] == r.best.name
        assert cell["time"] == pytest.approx(r.predicted_time, rel=1e-12)
        assert cell["ratio"] == pytest.approx(r.predicted_ratio, rel=1e-12)
        assert cell["T_L"] + cell["T_B"] == pytest.approx(cell["time"], rel=1e-12)
        assert cell["ratio"] >= 1 - 1e-12             # the bound is a bound
        names = [c.name for c in r.frontier]
        assert sorted(f["name"] for f in cell["frontier"]) == sorted(names)
        assert [f["time"] for f in cell["frontier"]] == sorted(r.times)
        up = cell["runner_up"]
        if len(names) > 1:
            assert up["name"] in names and up["name"] != cell["pick"]
            assert up["time"] >= cell["time"] - 1e-15
        else:
            assert up is None
    assert [(c["degree"], c["nodes"]) for c in reference.cells] == \
        [(d, n) for d in DEGREES for n in NODES]


def test_evaluated_cells_are_built_and_verified(cache):
    r = sweep([16, 18, 21], [3], cache=cache, workers=2, chunk=1)
    assert r.success
    for cell in r.cells:
        found = find(cell["nodes"], 3, "1MiB", cache=False)
        assert cell["verified"] is True and cell["status"] == "success"
        assert cell["time"] == pytest.approx(found.evaluated_time, rel=1e-12)
        assert cell["ratio"] == pytest.approx(found.ratio, rel=1e-12)


def test_two_local_processes_write_the_same_atlas(reference, cache):
    two = sweep(NODES, DEGREES, evaluate=False, cache=cache, workers=2, chunk=3)
    assert two.atlas() == reference.atlas()
    assert two.pool == "2 local processes" and two.computed == 48


def _kill_a_worker_once():
    """A progress callback that kills one local worker process when it is first called."""
    done = []

    def progress(*_):
        if not done:
            children = mp.active_children()
            if children:
                os.kill(children[0].pid, signal.SIGKILL)
                done.append(children[0].pid)
    return progress, done


def test_a_local_worker_killed_mid_sweep_changes_nothing(reference, cache):
    progress, killed = _kill_a_worker_once()
    r = sweep(NODES, DEGREES, evaluate=False, cache=cache, workers=2, chunk=3, progress=progress)
    assert killed and r.failed == 0
    assert r.atlas() == reference.atlas()


def test_a_resumed_sweep_computes_no_cell_twice(reference, cache):
    first = sweep(range(16, 28), DEGREES, evaluate=False, cache=cache, workers=2, chunk=3)
    assert first.computed == 24 and first.reused == 0
    again = sweep(NODES, DEGREES, evaluate=False, cache=cache, workers=2, chunk=3)
    assert again.reused == 24 and again.computed == 24      # only the cells not there yet
    assert again.atlas() == reference.atlas()
    third = sweep(NODES, DEGREES, evaluate=False, cache=cache, workers=2)
    assert third.computed == 0 and third.reused == 48 and third.pool == ""


def test_a_sweep_stopped_by_its_time_limit_resumes(reference, cache):
    stopped = sweep(NODES, DEGREES, evaluate=False, cache=cache, workers=1, chunk=1,
                    time_limit=1e-9)
    assert not stopped.success and stopped.failed == 48 - stopped.computed
    assert all(c["error"] == "not finished within the time limit"
               for c in stopped.cells if c["status"] == "failed")
    rest = sweep(NODES, DEGREES, evaluate=False, cache=cache, workers=2, chunk=3)
    assert rest.reused == stopped.computed and rest.computed == 48 - stopped.computed
    assert rest.atlas() == reference.atlas()


def test_a_failing_cell_is_kept_with_its_reason_and_the_rest_go_on(cache):
    r = sweep([3, 16], [2, 4], evaluate=False, cache=cache, workers=1)
    failed = [c for c in r.cells if c["status"] == "failed"]
    assert r.failed == len(failed) == 1 and not r.success
    assert (failed[0]["nodes"], failed[0]["degree"]) == (3, 4)
    assert "degree 4 on 3 nodes" in failed[0]["error"]
    assert sum(c["status"] != "failed" for c in r.cells) == 3
    again = sweep([3, 16], [2, 4], evaluate=False, cache=cache, workers=1)
    assert again.computed == 0 and again.reused == 3 and again.failed == 1   # tried again


@pytest.mark.parametrize("where", ["this process", "local processes", "a Dask cluster"])
def test_a_cell_past_its_own_time_limit_fails_and_its_chunk_goes_on(where, request):
    # here and in local processes an alarm stops the cell; in a Dask worker's thread the
    # finder's next progress report does
    kw = {"this process": {"workers": 1}, "local processes": {"workers": 2}}.get(where) or \
        {"scheduler": request.getfixturevalue("cluster").scheduler_address}
    before = signal.getsignal(signal.SIGALRM)
    r = sweep([16, 17, 18], [2], cache=False, chunk=3, cell_time_limit=1e-6, **kw)
    assert r.failed == 3 and not r.success
    assert {c["error"] for c in r.cells} == {
        "TimeUp: not finished within its time limit of 1e-06 s"}
    assert signal.getsignal(signal.SIGALRM) is before


def test_a_cell_time_limit_that_is_not_reached_changes_nothing(reference):
    r = sweep(NODES, DEGREES, evaluate=False, cache=False, workers=1, chunk=3,
              cell_time_limit=3600)
    assert r.atlas() == reference.atlas()
    with pytest.raises(UnsupportedError, match="cell_time_limit must be > 0"):
        sweep([16], [2], cache=False, cell_time_limit=0)


def test_settings_are_part_of_the_key(cache):
    a = sweep([16], [2], evaluate=False, cache=cache, workers=1)
    b = sweep([16], [2], "64MiB", evaluate=False, cache=cache, workers=1)
    assert b.computed == 1 and a.cells[0]["time"] < b.cells[0]["time"]


def test_bad_requests_are_refused():
    with pytest.raises(InputTypeError, match="one buffer size"):
        sweep([16], [2], ["1MiB", "2MiB"], evaluate=False, cache=False)
    with pytest.raises(InputTypeError, match="at least one"):
        sweep([], [2], cache=False)
    assert family("line(line(x:3))") == "line graph" and family("torus:4x4") == "product"


# -- the cluster -------------------------------------------------------------------------------



def test_the_cluster_writes_the_same_atlas(reference, cluster):
    r = sweep(NODES, DEGREES, evaluate=False, cache=False, scheduler=cluster.scheduler_address,
              chunk=3)
    assert r.atlas() == reference.atlas() and r.pool.startswith("the Dask cluster")


def test_a_cluster_worker_killed_mid_sweep_changes_nothing(reference, cluster):
    import distributed

    with distributed.Client(cluster.scheduler_address) as client:
        pids = list(client.run(os.getpid).values())
    killed = []

    def progress(*_):
        if not killed:
            os.kill(pids[0], signal.SIGKILL)
            killed.append(pids[0])
    r = sweep(NODES, DEGREES, evaluate=False, cache=False, scheduler=cluster.scheduler_address,
              chunk=2, progress=progress)
    assert killed and r.failed == 0
    assert r.atlas() == reference.atlas()


def test_the_finders_cost_tables_run_on_the_same_layer(cluster, tmp_path):
    from topocoll.finder import find_range, genkautz_table

    here = genkautz_table.compute_rows(range(40, 56), [3], workers=1)
    assert len(here) == 16
    assert genkautz_table.compute_rows(range(40, 56), [3], workers=2) == here
    assert genkautz_table.compute_rows(range(40, 56), [3],
                                       scheduler=cluster.scheduler_address) == here
    alone = find_range(range(40, 48), 3, cache=tmp_path / "a.sqlite")
    spread = find_range(range(40, 48), 3, cache=tmp_path / "b.sqlite", workers=2)
    assert {n: [c.name for c in f] for n, f in alone.items()} == \
        {n: [c.name for c in f] for n, f in spread.items()}


# -- the command ------------------------------------------------------------------------------

def test_the_command_writes_the_atlas_and_its_maps(tmp_path, reference):
    env = {"TOPOCOLL_CACHE_DIR": str(tmp_path / "cache")}
    out = tmp_path / "atlas"
    res = CliRunner().invoke(cli, ["sweep", "-n", "16..39", "-d", "2,3", "--no-evaluate",
                                   "--workers", "1", "-o", str(out), "--json"], env=env)
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["computed"] == 48 and sorted(os.listdir(out)) == ["atlas.csv", "atlas.json",
                                                                  "families.png", "ratio.png"]
    assert (out / "atlas.json").read_text() == reference.atlas()
    rows = list(csv.reader((out / "atlas.csv").open()))
    assert tuple(rows[0]) == CSV_COLUMNS and len(rows) == 49
    assert rows[1][:4] == ["2", "16", reference.cells[0]["status"], reference.cells[0]["pick"]]


def test_the_command_exits_1_when_a_cell_fails(tmp_path):
    res = CliRunner().invoke(cli, ["sweep", "-n", "3,16", "-d", "2,4", "--no-evaluate",
                                   "--no-cache", "--workers", "1"])
    assert res.exit_code == 1 and "1 of 4 cells failed" in res.output
    assert "failed: N=3 d=4: UnsupportedError: degree 4 on 3 nodes" in res.output
    late = CliRunner().invoke(cli, ["sweep", "-n", "16", "-d", "2", "--no-cache", "--workers",
                                    "1", "--cell-time-limit", "1us"])
    assert late.exit_code == 1 and "not finished within its time limit of 1e-06 s" in late.output


@pytest.mark.parametrize("text", ["16..8", "a..b", "4..8:0", ""])
def test_ranges_that_are_not_ranges_are_refused(text):
    res = CliRunner().invoke(cli, ["sweep", "-n", text, "-d", "2", "--no-evaluate"])
    assert res.exit_code == 2 and "expected sizes such as 16..256" in res.output


def test_ranges():
    assert parse_range("16..20", "-n") == [16, 17, 18, 19, 20]
    assert parse_range("16..64:16,100", "-n") == [16, 32, 48, 64, 100]
