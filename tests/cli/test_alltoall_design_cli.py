"""``topocoll alltoall-steps``, ``topocoll alltoall-design`` and ``topocoll rewire --strategy``:
the numbers on the command line are the library's, and bad input is one error line."""

import json

import pytest

from tests.cli.conftest import run_cli
from tests.cli.test_cli import assert_one_line_error
from topocoll.throughput import throughput
from topocoll.topology import Topology, load_topology, topology


def test_alltoall_steps_json_matches_the_steady_state(tmp_path):
    res = run_cli(["alltoall-steps", "kautz:2,2", "--steps", "2", "--link-bandwidth", "1",
                   "--json"], tmp_path)
    assert res.returncode == 0, res
    doc = json.loads(res.stdout)
    assert doc["steps"] == 2 and doc["unit_time"] == pytest.approx(5.0, rel=1e-6)
    assert doc["over_steady_state"] == pytest.approx(5.0 * 3 / 13, rel=1e-6)
    assert len(doc["step_times"]) == 2
    # the flows delivered: every pair's byte leaves its source
    out = {}
    for step, s, d, u, v, amount in doc["flows"]:
        if u == s:
            out[(s, d)] = out.get((s, d), 0.0) + amount
    assert len(out) == 30 and all(x == pytest.approx(1.0, abs=1e-6) for x in out.values())


def test_alltoall_steps_default_is_the_diameter_and_too_few_is_an_error(tmp_path):
    res = run_cli(["alltoall-steps", "hypercube:3", "--json"], tmp_path)
    assert res.returncode == 0 and json.loads(res.stdout)["steps"] == 3
    assert_one_line_error(run_cli(["alltoall-steps", "hypercube:3", "--steps", "2"], tmp_path),
                          "diameter 3")


def test_alltoall_design_writes_the_optimum(tmp_path):
    res = run_cli(["alltoall-design", "-n", "5", "-d", "2", "--link-bandwidth", "1",
                   "-o", "best.json", "--json"], tmp_path)
    assert res.returncode == 0, res
    doc = json.loads(res.stdout)
    assert doc["lambda"] == pytest.approx(1 / 3) and doc["status_name"] == "SUCCESS"
    t = load_topology(tmp_path / "best.json")
    assert sorted(zip(t.src.tolist(), t.dst.tolist())) == [tuple(e) for e in doc["edges"]]
    flat = Topology(5, t.src, t.dst, 1.0)
    assert throughput(flat, method="link", bounds=False).lam == pytest.approx(1 / 3, rel=1e-6)


def test_alltoall_design_bad_input(tmp_path):
    assert_one_line_error(run_cli(["alltoall-design", "-n", "5", "-d", "3",
                                   "--bidirectional"], tmp_path), "must be even")
    assert_one_line_error(run_cli(["alltoall-design", "-n", "4", "-d", "2", "-a", "iterative",
                                   "--bidirectional"], tmp_path), "--bidirectional")


@pytest.mark.parametrize("strategy", ["best", "anneal"])
def test_rewire_strategy(tmp_path, strategy):
    res = run_cli(["rewire", "jellyfish:10,3,2", "--objective", "distance", "--strategy",
                   strategy, "--max-swaps", "100", "--time-limit", "0", "-o", "r.json",
                   "--json"], tmp_path)
    assert res.returncode == 0, res
    doc = json.loads(res.stdout)
    assert doc["strategy"] == strategy and doc["final"] <= doc["initial"]
    t = load_topology(tmp_path / "r.json")
    assert (t.out_degree() == 3).all() and t.num_links == topology("jellyfish:10,3,2").num_links
