"""Multi-tenant synthesis, the ILP end to end, and the synth/simulate/evaluate commands."""

import json

import pytest
from click.testing import CliRunner

from topocoll.cli.main import cli
from topocoll.schedule import load_schedule, verify
from topocoll.schedule.linkmodel import simulate_many
from topocoll.synth.ten.tenants import synthesize_tenants
from topocoll.synth.ten import synthesize


def test_tenants_each_verify_and_never_share_a_slot():
    res = synthesize_tenants("mesh:4x4", ["broadcast:2", "reduce:9", "allgather",
                                          "reduce_scatter"], seed=1)
    assert all(verify(s).valid for s in res.schedules)
    # TEN occupancy: no link carries two chunks (of any tenants) in one slot
    topo = res.schedules[0].topology
    seen = set()
    for s in res.schedules:
        for st, a, b in zip(s.transfers["step"].tolist(), s.transfers["src"].tolist(),
                            s.transfers["dst"].tolist()):
            assert (st, a, b) not in seen
            seen.add((st, a, b))
    finish = [r.time for r in simulate_many(res.schedules, "1GiB")]
    assert res.to_dict(finish_times=finish)["time"] == max(finish)
    assert max(finish) <= max(res.finish_slots) * res.time_step * (1 + 1e-9)
    assert topo.num_nodes == 16


def test_tenant_errors():
    with pytest.raises(ValueError):
        synthesize_tenants("ring:4", ["allreduce"])
    with pytest.raises(ValueError):
        synthesize_tenants("ring:4", ["allgather:2"])


@pytest.mark.parametrize("spec,coll,root", [("mesh:3x3", "allgather", None),
                                             ("ring:5", "reduce_scatter", None),
                                             ("mesh:3x3", "gather", 4),
                                             ("uniring:4", "broadcast", 1),
                                             ("mesh:2x3", "allreduce", None)])
def test_ilp_equals_or_beats_greedy(spec, coll, root):
    greedy = synthesize(spec, coll, root=root)
    ilp = synthesize(spec, coll, root=root, method="ilp")
    assert verify(ilp).valid
    assert ilp.meta["method"] == "ilp"
    assert ilp.meta["makespan_slots"] <= greedy.meta["makespan_slots"]
    if ilp.meta.get("ilp_optimal"):
        assert ilp.meta["makespan_slots"] >= ilp.meta["chunk_lower_bound_slots"]


def test_cli_synth_verify_simulate_evaluate(tmp_path):
    runner = CliRunner()
    out = tmp_path / "m5.json"
    r = runner.invoke(cli, ["synth", "mesh:5x5", "-c", "allgather", "--link-bandwidth",
                            "50GiB/s", "--alpha", "0.5us", "-o", str(out), "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc["makespan_slots"] == 12 and round(doc["link_model_time"] * 1e6, 3) == 9606.0
    assert verify(load_schedule(out)).valid
    assert runner.invoke(cli, ["verify", str(out)]).exit_code == 0
    r = runner.invoke(cli, ["simulate", str(out), "--json"])
    sim = json.loads(r.output)["schedules"][0]
    assert sim["time"] == pytest.approx(9606.0e-6)
    # the step model beside it: 12 steps of one 40 MiB chunk at 50 GiB/s plus 0.5 us
    assert sim["steps"] == 12 and sim["step_model_time"] == pytest.approx(12 * 800.5e-6)
    r = runner.invoke(cli, ["evaluate", str(out), "--size", "1GiB", "--json"])
    ev = json.loads(r.output)["sizes"][0]
    assert ev["link_model_time"] == pytest.approx(9606.0e-6) and "T_B" in ev


def test_cli_tenants_and_errors(tmp_path):
    runner = CliRunner()
    r = runner.invoke(cli, ["synth", "mesh:3x3", "-c", "allgather", "-c", "broadcast:4",
                            "-o", str(tmp_path / "t"), "--json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert len(doc["files"]) == 2 and all(t["verified"] for t in doc["tenants"])
    assert doc["success"] is True and doc["status"] == 0
    r = runner.invoke(cli, ["synth", "mesh:3x3", "-c", "allgather", "--fail-links", "0-8"])
    assert r.exit_code != 0
