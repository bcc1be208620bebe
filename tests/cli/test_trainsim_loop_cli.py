"""``topocoll train-sim``: measured profiles (--measure, -o), several iterations, hybrid
ASTRA-sim workloads and the compute model named in every output."""

import json
import sys

import pytest

from tests.cli.test_cli import assert_one_line_error
from tests.helpers import DATA

TRAINING = DATA / "training"


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TOPOCOLL_CACHE_DIR", str(tmp_path / "cache"))


def test_the_compute_model_is_named(run):
    result = run("train-sim", "--workload", "resnet50", "--nodes", "16")
    assert result.returncode == 0, result
    assert "compute: FLOPs model (40% of 312 TFLOP/s peak" in result.stdout
    assert "steady iteration" in result.stdout
    doc = run("train-sim", "--workload", "resnet50", "--nodes", "16", "--json").json()
    assert doc["compute_model"] == "flops" and doc["iterations"] == 3
    assert len(doc["iteration_times"]) == 3
    assert doc["steady_iteration_time"] == pytest.approx(doc["iteration_time"])  # one at a time


def test_measure_writes_a_profile_that_train_sim_reads(run, tmp_path):
    pytest.importorskip("torch")
    result = run("train-sim", "--workload", "mlp", "--measure", "--batch", "2", "-o",
                 "prof.json", "--json")
    assert result.returncode == 0, result
    assert result.json()["workload"]["compute_model"] == "measured"
    doc = json.loads((tmp_path / "prof.json").read_text())
    assert doc["format"] == "topocoll-training-profile" and len(doc["layers"]) == 5
    sim = run("train-sim", "--workload", "prof.json", "--nodes", "8", "--json").json()
    assert sim["compute_model"] == "measured" and "measured with torch" in sim["compute"]
    assert sim["compute_time"] == pytest.approx(
        sum(x["forward"] + x["input_grad"] + x["weight_grad"] for x in doc["layers"])
        - doc["layers"][0]["input_grad"])            # layer 0's input gradient is skipped


def test_measure_without_torch_is_one_line(run, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)
    assert_one_line_error(run("train-sim", "--workload", "mlp", "--measure", "-o", "p.json"),
                          "needs PyTorch")


def test_the_measured_fixture_over_iterations(run):
    doc = run("train-sim", "--workload", TRAINING / "measured_resnet18_b2.json", "--nodes",
              "16", "--iterations", "4", "--policy", "concurrent", "--json").json()
    assert doc["policy"] == "concurrent" and len(doc["iteration_times"]) == 4
    assert doc["steady_iteration_time"] == pytest.approx(sum(doc["iteration_times"][1:]) / 3)
    assert doc["makespan"] == pytest.approx(sum(doc["iteration_times"]))


def test_hybrid_workload_prices_every_collective(run):
    doc = run("train-sim", "--workload", TRAINING / "astra_transformer.txt", "--topology",
              "torus:3x3", "--cycle-time", "1us", "--json").json()
    assert doc["profile"]["collective_types"] == ["allgather", "allreduce", "reducescatter"]
    kinds = {c["type"] for c in doc["collectives"]}
    assert kinds == {"allgather", "allreduce", "reducescatter"}
    bound = doc["baselines"]["two-phase bound"]
    assert doc["comm_time"] >= bound["comm_time"] * (1 - 1e-12)
    assert "BFB schedules" in doc["ours"]["other_collectives"]


def test_all_to_all_on_the_finders_topology(run):
    doc = run("train-sim", "--workload", TRAINING / "astra_customized.txt", "--nodes", "8",
              "--json").json()
    assert {c["type"] for c in doc["collectives"]} == {"allgather", "alltoall", "allreduce"}
    assert "distance bound" in doc["ours"]["other_collectives"]


@pytest.mark.parametrize("args, needle", [
    (["--workload", "resnet50", "--nodes", "16", "--iterations", "0"], "--iterations must"),
    (["--workload", "resnet50", "--nodes", "16", "--iterations", "1000000000"],
     "--iterations must be between 1 and 100"),
    (["--workload", "mlp", "--measure", "--batch", "1000000000", "-o", "p.json"],
     "--batch with --measure must be between"),
    (["--workload", "bert-large", "--measure", "--nodes", "16"], "--measure needs a torch"),
    (["--workload", "mlp", "--nodes", "16"], "neither a known model"),
    (["--workload", "resnet50", "--measure", "--gpu-flops", "1e12", "-o", "p.json"],
     "--gpu-flops applies to the FLOPs model"),
    (["--workload", "resnet50"], "--nodes is required"),
    (["--workload", "resnet50", "--nodes", "16", "--policy", "concurrent", "--bucket-size",
      "1MiB"], "--bucket-size applies"),
])
def test_bad_inputs_are_one_line(run, args, needle):
    assert_one_line_error(run("train-sim", *args), needle)


def test_concurrent_with_the_link_model(run):
    # the link model's price has no latency term of its own: one byte's price stands for it
    doc = run("train-sim", "--workload", "resnet50", "--topology", "uniring:4", "--comm-model",
              "link", "--policy", "concurrent", "--json").json()
    first, *rest = doc["iteration_times"]
    assert rest and all(t < first for t in rest)      # tails hide behind the next forward
