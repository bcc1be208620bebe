"""``topocoll gossip``: list, info (JSON keys, exact average, plot) and cost, one-line errors."""

import json
import subprocess
import sys

import pytest

from topocoll.cli.main import main
from topocoll.gossip import analyze, gossip_cost, gossip_topology


def run(capsys, *args):
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    out, err = capsys.readouterr()
    return exc.value.code or 0, out, err


def test_info_json_has_the_promised_keys(capsys):
    code, out, err = run(capsys, "gossip", "info", "one-peer-exp", "--nodes", "8", "--json")
    assert code == 0, err
    top = json.loads(out)
    assert top["success"] is True and top["nodes"] == 8 and len(top["topologies"]) == 1, top
    doc = top["topologies"][0]
    assert doc["rho"] == 0.0 and doc["period"] == 3 and doc["exact_average_after"] == 3
    assert [d["in_max"] for d in doc["degree"]] == [1, 1, 1]
    code, out, _ = run(capsys, "gossip", "info", "ring-graph", "--nodes", "8", "--json")
    doc = json.loads(out)["topologies"][0]
    assert doc["exact_average_after"] is None  # JSON null: never exact
    assert doc["rho"] == pytest.approx(analyze(gossip_topology("ring-graph", 8)).rho)


def test_info_parameters_inline_and_as_options(capsys):
    code, out, _ = run(capsys, "gossip", "info", "alternating-exp-ring:local_size=4",
                       "one-peer-exp", "--nodes", "16", "--json")
    assert code == 0
    docs = json.loads(out)["topologies"]
    assert [d["name"] for d in docs] == ["alternating-exp-ring", "one-peer-exp"]
    assert docs[0]["params"]["local_size"] == 4
    code, out, _ = run(capsys, "gossip", "info", "alternating-exp-ring", "-O", "local_size=2",
                       "--nodes", "8")
    assert code == 0 and "exact_average_after: 4 iterations" in out


def test_info_human_output_and_plot(capsys, tmp_path):
    target = tmp_path / "consensus.png"
    code, out, err = run(capsys, "gossip", "info", "ring", "exp", "-n", "16", "--plot",
                         str(target), "--iterations", "10")
    assert code == 0, err
    assert "rho" in out and "never" in out and "4 iterations" in out
    assert target.stat().st_size > 1000


@pytest.mark.parametrize(("args", "message"), [
    (("gossip", "info", "nope", "-n", "8"), "unknown gossip topology 'nope'"),
    (("gossip", "info", "alternating-exp-ring:local_size=5", "-n", "12"),
     "local_size must divide n"),
    (("gossip", "info", "ring", "-n", "1"), "ring needs n >= 2"),
    (("gossip", "info", "ring", "-n", "8", "-O", "local_size=2"),
     "none of the topologies takes a parameter 'local_size'"),
    (("gossip", "info", "ring:oops", "-n", "8"), "KEY=VALUE"),
    (("gossip", "cost", "ring", "--network", "torus:4x4", "-n", "24"), "not a multiple"),
    (("gossip", "info", "ring", "-n", "8", "--plot", "x.xyz"), "unknown format"),
])
def test_errors_are_one_line_exit_2(capsys, args, message):
    code, out, err = run(capsys, *args)
    assert code == 2
    assert message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_cost_json_matches_the_api(capsys):
    code, out, err = run(capsys, "gossip", "cost", "one-peer-exp", "--network", "torus:4x4",
                         "--size", "64MiB", "--alpha", "10us", "--link-bandwidth", "100Gbps",
                         "--json")
    assert code == 0, err
    top = json.loads(out)
    assert top["status"] == 0 and top["network"] == "torus:4x4" and top["size"] == 2**26, top
    doc = top["topologies"][0]
    api = gossip_cost("one-peer-exp", "torus:4x4", 2**26, alpha=1e-5, link_bandwidth=12.5e9)
    assert doc["mean_time"] == pytest.approx(api.mean_time)
    assert len(doc["iterations"]) == 4 and doc["iterations_to_accuracy"] == 4
    assert doc["time_to_accuracy"] == pytest.approx(4 * api.mean_time)


def test_cost_several_topologies_and_ranks_per_node(capsys):
    code, out, err = run(capsys, "gossip", "cost", "ring", "complete", "exp", "--network",
                         "ring:4", "--nodes", "16", "--size", "1MiB")
    assert code == 0, err
    assert "4 per node" in out and "fastest to 1e-6" in out
    code, out, _ = run(capsys, "gossip", "cost", "ring", "exp", "--network", "ring:4", "-n", "8",
                       "--json")
    docs = json.loads(out)["topologies"]
    assert [d["nodes"] for d in docs] == [8, 8]


def test_list_and_the_real_entry_point(capsys):
    code, out, _ = run(capsys, "gossip", "list", "--json")
    names = [r["name"] for r in json.loads(out)["topologies"]]
    assert {"ring", "one-peer-exp", "exponential-graph", "mesh-graph"} <= set(names)
    done = subprocess.run([sys.executable, "-m", "topocoll.cli.main", "gossip", "info",
                           "complete", "--nodes", "5"], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and "exact_average_after: 1 iterations" in done.stdout


def test_info_on_thousands_of_ranks_needs_no_dense_matrix(monkeypatch):
    import json
    import math

    from click.testing import CliRunner

    from topocoll.cli.main import cli

    monkeypatch.setenv("TOPOCOLL_MEMORY_LIMIT", "64MiB")   # one dense matrix: 128 MB
    result = CliRunner().invoke(cli, ["gossip", "info", "ring", "one-peer-exp", "ring-graph",
                                      "--nodes", "4000", "--json"])
    assert result.exit_code == 0, result.output
    docs = {d["name"]: d for d in json.loads(result.stdout)["topologies"]}
    assert docs["ring"]["rho"] == pytest.approx(math.cos(2 * math.pi / 4000), abs=1e-12)
    assert docs["ring-graph"]["rho"] == pytest.approx(
        (1 + 2 * math.cos(2 * math.pi / 4000)) / 3, abs=1e-12)
    assert docs["one-peer-exp"]["period"] == 12 and docs["one-peer-exp"]["success"]
