"""``topocoll train-sim`` and ``topocoll find --workload`` through the real entry point."""

import json

import pytest

from tests.cli.test_cli import assert_one_line_error
from tests.helpers import DATA


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TOPOCOLL_CACHE_DIR", str(tmp_path / "cache"))


def test_json_document_has_ours_and_the_baselines(run):
    result = run("train-sim", "--model", "resnet50", "--nodes", "16", "--degree", "4", "--json")
    assert result.returncode == 0, result
    doc = json.loads(result.stdout)      # exactly one JSON document
    for key in ("iteration_time", "exposed_comm", "compute_time", "comm_time", "allreduces",
                "baselines", "ours", "nodes", "degree"):
        assert key in doc, key
    assert set(doc["baselines"]) == {"two-phase bound", "ShiftedRing", "DBT"}
    assert doc["exposed_comm"] == pytest.approx(doc["iteration_time"] - doc["compute_time"])
    assert doc["nodes"] == 16 and doc["policy"] == "wait-free"
    # nothing beats the bound: the same compute, and at least its allreduce time
    bound = doc["baselines"]["two-phase bound"]
    assert bound["compute_time"] == doc["compute_time"]
    assert doc["comm_time"] >= bound["comm_time"] * (1 - 1e-12)
    assert doc["baselines"]["DBT"]["comm_ratio"] > 1


def test_table_on_stdout_with_four_rows(run, tmp_path):
    result = run("train-sim", "--model", "vit-b16", "--topology", "torus:4x4", "--bucket",
                 "25MiB", "--plot", "t.png")
    assert result.returncode == 0, result
    for label in ("ours", "two-phase bound", "ShiftedRing", "DBT", "torus:4x4 bfb",
                  "DDP buckets of 25MiB"):
        assert label in result.stdout, label
    assert (tmp_path / "t.png").stat().st_size > 0


def test_schedule_file_is_priced(run):
    result = run("train-sim", "--model", "bert-large", "--schedule",
                 DATA / "valid-allreduce-ring-uniring4.json", "--json")
    assert result.returncode == 0, result
    doc = result.json()
    assert doc["nodes"] == 4 and doc["ours"]["steps"] == 6
    # no shifted ring of 4 nodes (it needs a shift 2 <= s <= N-2 prime to N): said, not fatal
    assert "error" in doc["baselines"]["ShiftedRing"]
    assert doc["baselines"]["DBT"]["comm_time"] > 0


def test_astra_profile_file(run):
    result = run("train-sim", "--model", DATA / "training" / "astra_data.txt", "--nodes", "8",
                 "--cycle-time", "1us", "--json")
    assert result.returncode == 0, result
    doc = result.json()
    # 8300 cycles of 1 us (worked out in tests/studies/test_training.py)
    assert doc["compute_time"] == pytest.approx(8300e-6)
    assert doc["profile"]["layers"] == 3 and doc["compute_model"] == "astra-sim"


@pytest.mark.parametrize("args, needle", [
    (["--model", "alexnet", "--nodes", "16"], "neither a known model"),
    (["--model", "resnet50"], "--nodes is required"),
    (["--model", "resnet50", "--nodes", "16", "--policy", "wait-free", "--bucket", "1MiB"],
     "--bucket-size applies"),
    (["--model", "resnet50", "--nodes", "16", "--schedule", "x.json", "--topology", "ring:16"],
     "not both"),
    (["--model", "resnet50", "--nodes", "2"], "at least 3"),
    (["--model", "resnet50", "--nodes", "16", "--batch", "0"], "batch"),
    (["--model", "resnet50", "--nodes", "16", "--cycle-time", "1ns"], "--cycle-time applies"),
    (["--model", "resnet50", "--topology", "ring:8", "--nodes", "16"], "has 8 nodes"),
    (["--model", "resnet50", "--nodes", "16", "--bucket", "lots"], "--bucket"),
])
def test_bad_inputs_are_one_line(run, args, needle):
    assert_one_line_error(run("train-sim", *args), needle)


def test_malformed_astra_file_names_the_line(run):
    result = run("train-sim", "--model", DATA / "training" / "astra_bad_line4.txt", "--nodes",
                 "8")
    assert_one_line_error(result, "line 4", code=2)


def test_find_with_a_model_workload(run):
    result = run("find", "--nodes", "16", "--degree", "4", "--workload", "resnet50",
                 "--bucket-size", "25MiB", "--json")
    assert result.returncode == 0, result
    workload = result.json()["workload"]
    # 97.49 MiB of fp32 gradients: three full 25 MiB buckets and the rest
    assert len(workload["sizes"]) == 4
    assert sum(workload["sizes"]) == pytest.approx(4 * 25_557_032)
    # conv1, 16 bottlenecks of 3 convolutions, 4 downsamples, fc (a batch norm with its conv)
    assert f"{1 + 16 * 3 + 4 + 1} layers" in workload["description"]


def test_find_workload_excludes_sizes(run):
    assert_one_line_error(run("find", "--nodes", "16", "--degree", "4", "--workload",
                              "resnet50", "--size", "1MiB"), "not both")


def test_link_model_prices_a_schedule_at_every_size(run):
    # a ring's link model: with one allreduce size per layer, the link model can only be as
    # fast as the step model's bandwidth term and pays the same latency per step
    args = ("train-sim", "--model", "resnet50", "--topology", "uniring:4", "--json")
    step = run(*args).json()
    link = run(*args, "--comm-model", "link").json()
    assert step["comm_model"] == "step" and link["comm_model"] == "link"
    assert link["compute_time"] == step["compute_time"]
    # uniring: one link per node carries everything in both models, so they agree
    assert link["comm_time"] == pytest.approx(step["comm_time"], rel=1e-9)
    assert_one_line_error(run("train-sim", "--model", "resnet50", "--nodes", "8",
                              "--comm-model", "link"), "--schedule or --topology", code=2)


def test_default_is_per_link_and_node_bandwidth_is_the_papers_convention(run):
    # the default cluster, 100Gbps per link: on 4-regular networks (ours, the bound's degree,
    # ShiftedRing) the same as 400Gbps per node; --node-bandwidth 100Gbps is the paper's
    args = ("train-sim", "--workload", "resnet50", "--nodes", "16", "--json")
    per_link, as_node, paper = (json.loads(run(*args, *extra).stdout) for extra in
                                ((), ("--node-bandwidth", "400Gbps"),
                                 ("--node-bandwidth", "100Gbps")))
    assert per_link["bandwidth"] == "100Gbps per link" and per_link["link_bandwidth"] == 12.5e9
    assert per_link["node_bandwidth"] is None
    assert paper["bandwidth"] == "100Gbps per node" and paper["link_bandwidth"] is None
    assert per_link["comm_time"] == pytest.approx(as_node["comm_time"], rel=1e-12)
    for name in ("two-phase bound", "ShiftedRing"):
        assert per_link["baselines"][name]["comm_time"] == pytest.approx(
            as_node["baselines"][name]["comm_time"], rel=1e-12), name
    assert paper["comm_time"] > per_link["comm_time"]
