"""`topocoll convert` and the symmetric form on the command line: `schedule --form`, and
verify, evaluate, simulate, export on symmetric files."""

import json

import numpy as np
import pytest

from tests.cli.test_cli import assert_one_line_error
from topocoll.errors import ResourceLimitError
from topocoll.runtime.sources import load_runnable
from topocoll.schedule import load_schedule


def _rows(schedule):
    t = schedule.transfers
    return t[np.lexsort((t["op"], t["hi"], t["lo"], t["shard"], t["dst"], t["src"], t["step"]))]


def test_schedule_writes_the_symmetric_form_and_the_commands_read_it(run, tmp_path):
    made = run("schedule", "torus:4x4", "-c", "allreduce", "--form", "symmetric", "-o",
               "sym.json", "--json")
    assert made.returncode == 0, made
    doc = made.json()
    assert list(doc)[:4] == ["success", "status", "status_name", "message"]
    assert doc["form"] == "symmetric" and doc["symmetry"] == [4, 4]
    assert doc["transfers"] == doc["representatives"] * 16 and doc["verified"]
    head = json.loads((tmp_path / "sym.json").read_text())
    assert head["form"] == "symmetric" and len(head["transfers"]) == doc["representatives"]

    checked = run("verify", "sym.json", "--json")
    assert checked.returncode == 0 and checked.json()["form"] == "symmetric"
    assert "representatives" in run("verify", "sym.json").stdout
    priced = run("evaluate", "sym.json", "--json")
    assert priced.returncode == 0 and priced.json()["form"] == "symmetric"
    timed = run("simulate", "sym.json", "--json")
    assert timed.returncode == 0, timed
    row = timed.json()["schedules"][0]
    assert row["transfers"] == doc["transfers"]

    explicit = run("schedule", "torus:4x4", "-c", "allreduce", "--form", "explicit", "-o",
                   "exp.json", "--json")
    assert explicit.json()["form"] == "explicit"
    mine, theirs = priced.json()["sizes"][0], run("evaluate", "exp.json", "--json").json()
    assert mine["time"] == theirs["sizes"][0]["time"]
    assert mine["link_model_time"] == theirs["sizes"][0]["link_model_time"]


def test_convert_both_ways(run, tmp_path):
    assert run("schedule", "torus:3x4", "-c", "reduce_scatter", "--form", "explicit", "-o",
               "e.json").returncode == 0
    to_sym = run("convert", "e.json", "-o", "s.json.gz", "--form", "symmetric", "--json")
    assert to_sym.returncode == 0, to_sym
    doc = to_sym.json()
    assert list(doc)[:4] == ["success", "status", "status_name", "message"]
    assert doc["from"] == "explicit" and doc["form"] == "symmetric"
    assert doc["transfers"] == 12 * doc["representatives"]
    back = run("convert", "s.json.gz", "-o", "back.json", "--form", "explicit")
    assert back.returncode == 0 and "symmetric -> explicit" in back.stdout
    original, returned = load_schedule(tmp_path / "e.json"), load_schedule(tmp_path / "back.json")
    assert returned.form == "explicit"
    assert np.array_equal(_rows(original), _rows(returned))
    assert run("verify", "back.json").returncode == 0


def test_convert_refuses_what_has_no_symmetric_form(run):
    assert run("schedule", "genkautz:12,2", "-c", "allgather", "-o", "g.json").returncode == 0
    assert_one_line_error(run("convert", "g.json", "-o", "x.json", "--form", "symmetric"),
                          "no translation group", code=2)
    assert run("schedule", "ring:6", "-c", "broadcast", "-o", "b.json").returncode == 0
    assert_one_line_error(run("convert", "b.json", "-o", "x.json", "--form", "symmetric"),
                          "not broadcast", code=2)


def test_export_expands_a_symmetric_file_or_refuses_in_one_line(run, monkeypatch):
    assert run("schedule", "ring:6", "-c", "allgather", "--form", "symmetric",
               "-o", "s.json").returncode == 0
    assert run("export", "s.json", "-o", "s.xml").returncode == 0
    monkeypatch.setenv("TOPOCOLL_MEMORY_LIMIT", "1MiB")
    assert run("schedule", "torus:12x12", "-c", "allgather", "--form", "symmetric",
               "-o", "big.json").returncode == 0
    assert_one_line_error(run("export", "big.json", "-o", "big.xml"), "memory limit", code=2)


def test_run_reads_a_symmetric_file_expanded(run, tmp_path, monkeypatch):
    assert run("schedule", "torus:3x3", "-c", "allreduce", "--form", "symmetric",
               "-o", "s.json").returncode == 0
    s = load_runnable(tmp_path / "s.json")
    assert s.form == "explicit" and s.num_transfers == 9 * load_schedule(
        tmp_path / "s.json").num_representatives
    assert run("schedule", "torus:12x12", "-c", "allgather", "--form", "symmetric",
               "-o", "big.json").returncode == 0
    monkeypatch.setenv("TOPOCOLL_MEMORY_LIMIT", "1MiB")
    with pytest.raises(ResourceLimitError, match="explicit allgather schedule on 144 nodes"):
        load_runnable(tmp_path / "big.json")
