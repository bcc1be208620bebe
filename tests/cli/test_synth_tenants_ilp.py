"""``topocoll synth -a ilp`` with several tenants: one ILP over every tenant (TACOS's
multi-tenant ILP), each schedule verified on its own, never later than the greedy's."""

import json

import pytest
from click.testing import CliRunner

from topocoll import verify
from topocoll.cli.main import cli
from topocoll.errors import UnsupportedError
from topocoll.schedule import load_schedule
from topocoll.studies.multitenant import run_tenants

TENANTS = ["-c", "broadcast:1", "-c", "reduce:0", "-c", "allgather"]


def _run(args):
    return CliRunner().invoke(cli, args, catch_exceptions=False)


def test_ilp_tenants_from_the_command_line(tmp_path):
    out = tmp_path / "tenants"
    got = _run(["synth", "ring:4", *TENANTS, "-a", "ilp", "--time-limit", "20s",
                "-o", str(out), "--json"])
    assert got.exit_code == 0, got.output
    doc = json.loads(got.stdout)
    assert [t["collective"] for t in doc["tenants"]] == ["broadcast", "reduce", "allgather"]
    assert all(t["verified"] for t in doc["tenants"])
    assert len(doc["files"]) == 3
    for path in doc["files"]:
        assert verify(load_schedule(path)).valid
    greedy = json.loads(_run(["synth", "ring:4", *TENANTS, "--json"]).stdout)
    assert (max(t["finish_slots"] for t in doc["tenants"])
            <= max(t["finish_slots"] for t in greedy["tenants"]))


def test_the_api_reports_the_ilp_source():
    run = run_tenants("ring:4", ["broadcast:1", "allgather"], method="ilp", time_limit=20)
    assert run.statuses == ["verified", "verified"]
    assert run.result.meta["lower_bound_slots"] <= run.result.meta["horizon_slots"]
    assert run.result.meta["horizon_slots"] <= run.result.meta["greedy_horizon_slots"]


def test_an_unknown_method_is_refused():
    with pytest.raises(UnsupportedError, match="greedy or ilp"):
        run_tenants("ring:4", ["broadcast:1", "allgather"], method="bfb")


@pytest.mark.parametrize("extra, rule", [(["--max-solves", "3"], "one collective only"),
                                         (["--window", "4"], "one collective only")])
def test_single_collective_ilp_options_are_refused(extra, rule):
    got = CliRunner().invoke(cli, ["synth", "ring:4", *TENANTS, "-a", "ilp", *extra])
    assert got.exit_code != 0
    assert rule in got.output and "Traceback" not in got.output
