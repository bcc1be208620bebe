"""``topocoll simulate``: the two pricing models, the per-link busy times and critical path in
``--json``, and the ``--plot`` timeline."""

import json

import pytest

from topocoll.schedule import evaluate, save_schedule, simulate
from topocoll.synth import generate
from topocoll.topology import topology

from tests.cli.test_cli import assert_one_line_error

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
HOP = 1.000001      # a 1 GB shard over 1 GB/s plus 1 us


@pytest.fixture
def ring4(tmp_path):
    """Ring allgather on uniring:4 with 1e9 B/s links and 1 us latency, as ring4.json."""
    s = generate(topology("uniring:4", bandwidth=1e9, latency=1e-6), "allgather", "ring")
    save_schedule(s, tmp_path / "ring4.json")
    return s, "ring4.json"


def test_json_is_one_document_with_links_and_critical_path(run, ring4):
    _, name = ring4
    result = run("simulate", name, "--size", "4GB", "--json")
    assert result.returncode == 0, result
    top = json.loads(result.stdout)                 # exactly one document
    assert top["success"] is True and top["model"] == "link" and top["size"] == 4e9, top
    assert len(top["schedules"]) == 1 and top["time"] == top["schedules"][0]["time"], top
    doc = top["schedules"][0]
    # the keys that were there before stay, in the file's entry
    assert doc["time"] == pytest.approx(3 * HOP, abs=1e-12)
    assert doc["step_model_time"] == pytest.approx(3 * HOP, abs=1e-12)
    assert doc["steps"] == 3 and doc["transfers"] == 12 and doc["links_used"] == 4
    assert doc["model"] == "link" and "step_model" not in doc and doc["plot"] is None
    assert [d["busy"] for d in doc["link_busy"]] == pytest.approx([3.000003] * 4, abs=1e-12)
    assert [(d["src"], d["dst"], d["transfers"]) for d in doc["link_busy"]] == \
        [(0, 1, 3), (1, 2, 3), (2, 3, 3), (3, 0, 3)]
    path = doc["critical_path"]
    assert [e["step"] for e in path] == [1, 2, 3]
    assert [e["waited_for"] for e in path] == ["start", "data", "data"]
    assert [e["end"] for e in path] == pytest.approx([HOP, 2 * HOP, 3 * HOP], abs=1e-12)
    assert [e["src"] for e in path[1:]] == [e["dst"] for e in path[:-1]]


def test_model_both_matches_the_library(run, ring4, tmp_path):
    # a 2:1 link-bandwidth spread makes the two models differ: bfb on a bidirectional ring
    s = generate(topology("ring:5").with_links(bandwidth=[1e9, 2e9] * 5, latency=2e-6),
                 "allgather", "bfb")
    save_schedule(s, tmp_path / "bfb.json")
    result = run("simulate", "bfb.json", "--size", "5MB", "--model", "both", "--json")
    assert result.returncode == 0, result
    doc = result.json()["schedules"][0]
    e = evaluate(s, 5e6)
    r = simulate(s, 5e6)
    assert doc["model"] == "both"
    assert doc["step_model"] == {"time": e.time, "T_L": e.T_L, "T_B": e.T_B,
                                 "T_gamma": e.T_gamma, "steps": e.steps}
    assert doc["time"] == doc["link_model_time"] == r.time
    assert doc["critical_path"] == r.to_dict(detail=True)["critical_path"]
    table = run("simulate", "bfb.json", "--size", "5MB", "--model", "both")
    assert table.returncode == 0, table
    for col in ("step model", "T_L", "T_B", "link/step", "critical path"):
        assert col in table.stdout


def test_model_step_prices_without_the_link_model(run, ring4):
    _, name = ring4
    top = run("simulate", name, "--size", "4GB", "--model", "step", "--json").json()
    assert top["status"] == 0 and top["model"] == "step", top
    doc = top["schedules"][0]
    # 3 steps of 1 us + 1 GB at 1 GB/s
    assert doc["step_model"] == pytest.approx({"time": 3.000003, "T_L": 3e-6, "T_B": 3.0,
                                               "T_gamma": 0.0, "steps": 3}, abs=1e-12)
    assert doc["time"] == doc["step_model_time"]
    assert "critical_path" not in doc and "link_busy" not in doc


def test_plot_of_several_files_writes_a_png_and_json_names_it(run, ring4, tmp_path):
    _, name = ring4
    result = run("simulate", name, name, "--size", "4GB", "--plot", "t.png", "--json")
    assert result.returncode == 0, result
    top = result.json()                              # one document: one row per file
    assert top["plot"] == "t.png" and top["time"] == pytest.approx(6 * HOP, abs=1e-12)
    docs = top["schedules"]
    assert [d["plot"] for d in docs] == ["t.png", "t.png"]
    # the two copies share the links, steps interleaved: on every link A1 B1 A2 B2 A3 B3, one
    # HOP each, so A ends after 5 hops and B after 6
    assert [d["time"] for d in docs] == pytest.approx([5 * HOP, 6 * HOP], abs=1e-12)
    # each last transfer (step 3) waited for the other copy's step-2 or step-3 transfer on its
    # link (its own data was there a hop earlier), so each path is that one transfer
    for d in docs:
        assert [(e["step"], e["waited_for"]) for e in d["critical_path"]] == [(3, "link")]
    assert (tmp_path / "t.png").read_bytes()[:8] == PNG_MAGIC


@pytest.mark.parametrize("args, needles", [
    (["--model", "fast"], ["--model", "fast"]),
    (["--model", "step", "--plot", "t.png"], ["--plot", "--comm-model link or both"]),
    (["--plot", ""], ["--plot name is empty"]),
    (["--plot", "t.nope"], ["t.nope", "format"]),
], ids=["bad-model", "step-plot", "empty-plot", "bad-suffix"])
def test_bad_options_are_one_line_errors(run, ring4, tmp_path, args, needles):
    _, name = ring4
    result = run("simulate", name, *args)
    assert_one_line_error(result, *needles, code=2)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ring4.json"]
