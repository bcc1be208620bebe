"""``topocoll.studies.train_sim``, the train-sim job, as a library call: its result, its errors
and its agreement with ``topocoll train-sim --json``."""

import json
from types import SimpleNamespace

import pytest

import topocoll.studies as studies
from tests.cli.conftest import run_cli
from tests.helpers import DATA
from topocoll.errors import InputTypeError, UnsupportedError
from topocoll.studies.loop import TrainingResult
from topocoll.studies.models import model_workload
from topocoll.studies.resolve import resolve_workload
from topocoll.studies.trainsim import TrainSimResult, train_sim


@pytest.fixture(scope="module")
def resnet():
    return model_workload("resnet50")


def test_result_fields_on_a_topology(resnet):
    result = train_sim(resnet, topology="torus:4x4", iterations=2)
    assert isinstance(result, TrainSimResult) and result.success
    assert isinstance(result.run, TrainingResult) and result.message == result.run.message
    assert (result.nodes, result.degree, result.policy) == (16, 4, "wait-free")
    assert result.bandwidth == "100Gbps per link" and result.link_bandwidth == 12.5e9
    assert result.ours["allreduce"] == "torus:4x4 bfb" and result.ours["exact"] is True
    assert set(result.baselines) == set(result.baseline_runs) == {"two-phase bound",
                                                                  "ShiftedRing", "DBT"}
    assert result.methods["two-phase bound"] == "closed form"
    # nothing beats the bound's collective time
    bound = result.baseline_runs["two-phase bound"]
    assert result.run.comm_time >= bound.comm_time * (1 - 1e-12)
    doc = result.to_dict()
    assert doc["iterations"] == 2 and doc["nodes"] == 16 and doc["finder"] is None
    assert doc["profile"]["name"] == "resnet50" and doc["compute_model"] == "flops"


def test_a_bucket_size_means_buckets(resnet):
    result = train_sim(resnet, topology="ring:8", bucket_size=2**20, iterations=1)
    assert result.policy == "buckets" and result.bucket_size == 2**20
    assert result.run.bucket_size == 2**20


def test_the_front_door_is_lazy():
    assert studies.train_sim is train_sim and studies.TrainSimResult is TrainSimResult
    assert "train_sim" in studies.__all__ and "simulate_training" in dir(studies)


@pytest.mark.parametrize("kwargs, error, needle", [
    ({"topology": "ring:8", "nodes": 16}, UnsupportedError, "has 8 nodes"),
    ({}, UnsupportedError, "--nodes is required unless"),
    ({"topology": "ring:8", "found": SimpleNamespace(nodes=8)}, UnsupportedError,
     "one of schedule, topology and found"),
    ({"topology": "ring:8", "schedule": DATA / "valid-allreduce-ring-uniring4.json"},
     UnsupportedError, "not both"),
    ({"topology": "ring:8", "iterations": 0}, UnsupportedError, "--iterations must"),
    ({"topology": "ring:8", "policy": "concurrent", "bucket_size": 2**20}, UnsupportedError,
     "--bucket-size applies"),
    ({"found": SimpleNamespace(success=False, evaluation=None, message="nothing", nodes=8)},
     UnsupportedError, "the finder found no topology: nothing"),
])
def test_bad_inputs_raise_topocoll_errors(resnet, kwargs, error, needle):
    with pytest.raises(error, match=needle):
        train_sim(resnet, **kwargs)


def test_a_workload_must_be_a_workload():
    with pytest.raises(InputTypeError, match="TrainingWorkload"):
        train_sim("resnet50", topology="ring:8")


def test_resolve_refuses_an_unknown_model():
    with pytest.raises(UnsupportedError, match="neither a known model"):
        resolve_workload("alexnet")


def test_the_library_result_is_the_commands_json(tmp_path, monkeypatch):
    monkeypatch.setenv("TOPOCOLL_CACHE_DIR", str(tmp_path / "cache"))
    schedule = DATA / "valid-allreduce-ring-uniring4.json"
    cli = run_cli(["train-sim", "--workload", "bert-large", "--schedule", schedule,
                   "--policy", "concurrent", "--json"], tmp_path)
    assert cli.returncode == 0, cli
    result = train_sim(resolve_workload("bert-large"), schedule=str(schedule),
                       policy="concurrent")
    doc = json.loads(json.dumps({**result.to_dict(), "plot": None}, default=float))
    assert doc == json.loads(cli.stdout)


def test_the_finder_runs_inside_the_job_and_matches_the_command(tmp_path, monkeypatch):
    monkeypatch.setenv("TOPOCOLL_CACHE_DIR", str(tmp_path / "cache"))
    from topocoll.finder import Cache, find
    from topocoll.finder.workload import Workload
    from topocoll.studies.trainsim import finder_sizes

    workload = resolve_workload("resnet50")
    result = train_sim(workload, nodes=12, degree=3, iterations=1, cache=Cache(enabled=False))
    found = find(12, 3, Workload.from_layers(finder_sizes(workload), None), cache=False,
                 method="explicit")
    assert result.success and result.nodes == 12 and result.finder == found.message
    assert result.ours["allreduce"].startswith(found.best.name)
    given = train_sim(workload, nodes=12, degree=3, iterations=1, found=found)
    assert given.to_dict() == result.to_dict()
    cli = run_cli(["train-sim", "--workload", "resnet50", "--nodes", "12", "--degree", "3",
                   "--iterations", "1", "--no-cache", "--json"], tmp_path)
    assert cli.returncode == 0, cli
    doc = json.loads(json.dumps({**result.to_dict(), "plot": None}, default=float))
    assert doc == json.loads(cli.stdout)


def test_the_commands_explicit_limit_is_the_finders():
    # spelt in the command so that --help starts without the finder; one value all the same
    from topocoll.cli.trainsim import EXPLICIT_NODES as command_limit
    from topocoll.finder.core import EXPLICIT_NODES

    assert command_limit == EXPLICIT_NODES
