"""``topocoll find`` through its entry point (``run_cli`` in tests/cli/conftest.py), with the
results cache in the test's TOPOCOLL_CACHE_DIR."""

import json

import pytest

import topocoll as tc
from tests.cli.conftest import run_cli

FRONTIER_KEYS = {"name", "nodes", "degree", "steps", "T_B", "time"}


@pytest.fixture
def run(tmp_path):
    def _run(*args):
        return run_cli(["find", *args], tmp_path)
    return _run


def test_table_and_choice(run, tmp_path):
    # the paper's convention (100Gbps per node), in which the figures below are quoted
    r = run("--nodes", 64, "--degree", 4, "--node-bandwidth", "100Gbps")
    assert r.returncode == 0, r
    assert "Pareto frontier for 64 nodes of degree 4 (alpha 10us, 100Gbps per node;" in r.stdout
    # the optimizer's shipped bases: a 16-node Cayley digraph of diameter 2 under a line
    # graph, and a bandwidth-optimal 64-node one of diameter 4 (the directed circulant needs 5)
    for name in ("line(metacyclic:8,2,7:0.1,5.0,6.0,7.1) *", "metacyclic:16,4,5:0.3,1.2,3.3,4.0"):
        assert name in r.stdout
    choice = [line for line in r.stdout_lines if line.startswith("choice:")]
    assert len(choice) == 1 and "line(metacyclic:8,2,7:0.1,5.0,6.0,7.1)" in choice[0]
    assert "evaluated 238.3us" in choice[0] and "two-phase bound 225.2us" in choice[0]
    assert (tmp_path / "cache" / "finder.sqlite").exists()
    again = run("--nodes", 64, "--degree", 4, "--node-bandwidth", "100Gbps")
    assert again.returncode == 0 and "from the cache" in again.stdout
    # the default cluster, 100Gbps per link: B = 4 x 100Gbps per node, the same choice, every
    # time's bandwidth term a quarter (T_L = steps x alpha unchanged)
    link = run("--nodes", 64, "--degree", 4)
    assert link.returncode == 0, link
    assert "(alpha 10us, 100Gbps per link (B = 400Gbps per node);" in link.stdout
    per_link, per_node = (run("--nodes", 64, "--degree", 4, *extra, "--json").json()
                          for extra in ((), ("--node-bandwidth", "100Gbps")))
    assert per_link["bandwidth"] == "100Gbps per link" and per_link["link_bandwidth"] == 12.5e9
    assert per_link["node_bandwidth"] == 4 * 12.5e9
    assert per_node["bandwidth"] == "100Gbps per node" and per_node["link_bandwidth"] is None
    assert per_link["best"]["name"] == per_node["best"]["name"]
    ev = per_node["best"]["evaluation"]
    t_l = ev["steps"] * 10e-6
    assert per_link["best"]["evaluated_time"] == pytest.approx(
        t_l + (per_node["best"]["evaluated_time"] - t_l) / 4, rel=1e-12)


def test_json_keys(run):
    r = run("-n", 100, "-d", 4, "--alpha", "5us", "--node-bandwidth", "25GB/s", "--size",
            "4MiB", "--json")
    assert r.returncode == 0, r
    doc = r.json()
    assert doc["status"] == 0 and doc["success"] and doc["nodes"] == 100
    assert doc["alpha"] == 5e-6 and doc["node_bandwidth"] == 25e9
    assert doc["frontier"] and all(FRONTIER_KEYS <= set(e) for e in doc["frontier"])
    best = doc["best"]
    assert FRONTIER_KEYS | {"lower_bound", "ratio", "evaluated_time"} <= set(best)
    assert best["name"] in [e["name"] for e in doc["frontier"]]
    assert best["time"] == min(e["time"] for e in doc["frontier"])
    assert best["ratio"] == pytest.approx(best["evaluated_time"] / best["lower_bound"])
    assert best["evaluated_time"] <= best["time"] * (1 + 1e-9)
    assert doc["workload"]["sizes"] == [4 * 2**20]


def test_output_folder_has_topology_schedule_and_plot(run, tmp_path):
    r = run("--nodes", 36, "--degree", 4, "-o", "out", "--no-cache")
    assert r.returncode == 0, r
    out = tmp_path / "out"
    assert sorted(p.name for p in out.iterdir()) == ["allreduce.json", "frontier.png",
                                                     "topology.json"]
    assert (out / "frontier.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    schedule = tc.load_schedule(out / "allreduce.json")
    assert schedule.collective.name == "allreduce" and tc.verify(schedule).valid
    topo = tc.load_topology(out / "topology.json")
    assert topo.num_nodes == 36 and topo.name == schedule.topology.name
    assert float(topo.latency[0]) == 1e-5
    assert topo.bandwidth == pytest.approx(12.5e9)            # the default: 100Gbps per link
    assert not (tmp_path / "cache").exists()                      # --no-cache
    checked = run_cli(["verify", out / "allreduce.json"], tmp_path)
    assert checked.returncode == 0, checked


def test_sizes_files(run, tmp_path):
    (tmp_path / "model.json").write_text(json.dumps([2**20] * 30 + [2**26]))
    per_layer = run("-n", 64, "-d", 4, "--sizes", "model.json", "--json", "--no-evaluate")
    bucketed = run("-n", 64, "-d", 4, "--sizes", "model.json", "--bucket-size", "32MiB",
                   "--json", "--no-evaluate")
    assert per_layer.returncode == 0 and bucketed.returncode == 0, (per_layer, bucketed)
    assert len(per_layer.json()["workload"]["sizes"]) == 31
    assert bucketed.json()["workload"]["sizes"] == [2**26, 30 * 2**20]
    assert bucketed.json()["best"]["evaluated_time"] is None
    (tmp_path / "w.txt").write_text("1KiB 100\n1GiB 1\n")
    w = run("-n", 64, "-d", 4, "--sizes", "w.txt", "--no-evaluate")
    assert w.returncode == 0 and "2 allreduce size(s), 101 allreduces" in w.stdout


@pytest.mark.parametrize("args,message", [
    (["--nodes", 1, "--degree", 4], "--nodes must be at least 2, got 1"),
    (["--nodes", 8, "--degree", 0], "--degree must be at least 1, got 0"),
    (["--nodes", 8, "--degree", 2, "--sizes", "missing.json"], "missing.json"),
    (["--nodes", 8, "--degree", 2, "--sizes", "bad.json"], "bad.json: not valid JSON"),
    (["--nodes", 8, "--degree", 2, "--size", "1MiB", "--sizes", "bad.json"],
     "give --size or --sizes, not both"),
    (["--nodes", 8, "--degree", 2, "--bucket-size", "1MiB"], "--bucket-size applies"),
    (["--nodes", 8, "--degree", 2, "--alpha", "soon"], "--alpha"),
])
def test_bad_input_is_one_line(run, tmp_path, args, message):
    (tmp_path / "bad.json").write_text("[1, 2")
    r = run(*args)
    assert r.returncode == 2, r
    assert r.stdout == "" and len(r.stderr_lines) == 1, r
    assert r.stderr_lines[0].startswith("error: ") and message in r.stderr_lines[0], r


def test_damaged_cache_is_a_warning(run, tmp_path):
    folder = tmp_path / "cache"
    folder.mkdir()
    (folder / "finder.sqlite").write_bytes(b"garbage" * 1000)
    r = run("--nodes", 12, "--degree", 3, "--no-evaluate")
    assert r.returncode == 0, r
    assert any(line.startswith("warning: results cache") and "rebuilt" in line
               for line in r.stderr_lines), r


def test_an_interrupted_find_takes_back_the_folder_it_made(tmp_path, monkeypatch):
    from click.testing import CliRunner

    import topocoll.cli.find as find_cli
    from topocoll.cli.main import cli

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(find_cli, "run_find", interrupted)
    kept = tmp_path / "kept"
    kept.mkdir()
    for folder in (tmp_path / "new", kept):
        result = CliRunner().invoke(cli, ["find", "-n", "16", "-d", "4", "--no-cache", "-o",
                                          str(folder)])
        assert result.exit_code != 0
    assert not (tmp_path / "new").exists() and kept.is_dir()   # a folder that was there stays
