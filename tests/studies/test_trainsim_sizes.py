"""Training simulated at several cluster sizes as batch tasks
(:func:`topocoll.studies.train_sim_sizes`, ``train-sim -n 8,16,...``): each size's document is
the one-size job's, wherever the tasks ran; a size that fails is recorded and the others stay;
options that fix one cluster are refused."""

import json

import pytest

import topocoll.studies.trainsim_sizes as sizes_module
from tests.cli.conftest import run_cli
from topocoll.errors import InputTypeError, UnsupportedError
from topocoll.studies import train_sim_sizes
from topocoll.studies.models import model_workload
from topocoll.studies.trainsim import train_sim

SIZES = [8, 12, 16]


@pytest.fixture(scope="module")
def resnet():
    return model_workload("resnet50")


def _canonical(doc):
    return json.dumps(doc, sort_keys=True)


def test_each_size_is_the_one_size_job_here_on_processes_and_on_dask(resnet, cluster):
    alone = [_canonical(train_sim(resnet, nodes=n, iterations=2).to_dict()) for n in SIZES]
    runs = [train_sim_sizes(resnet, [16, 8, 12, 8], iterations=2, cache=False, **where)
            for where in ({"workers": 1}, {"workers": 2},
                          {"scheduler": cluster.scheduler_address})]
    for r in runs:
        assert r.success and r.failed == [] and "3 sizes simulated" in r.message
        assert [_canonical(doc) for doc in r.sizes] == alone
    assert [r.where for r in runs][:2] == ["this process", "2 local processes"]
    assert "Dask cluster" in runs[2].where
    # every size's allreduce: never faster than the bound's
    for doc in runs[0].sizes:
        assert doc["ours"]["comm_ratio"] >= 1 - 1e-12 and doc["nodes"] in SIZES


def test_a_failing_size_is_recorded_and_the_others_stay(resnet, monkeypatch):
    real = sizes_module.train_sim

    def breaks_at_12(workload, *, nodes, **options):
        if nodes == 12:
            raise UnsupportedError("no topology for twelve")
        return real(workload, nodes=nodes, **options)

    monkeypatch.setattr(sizes_module, "train_sim", breaks_at_12)
    r = train_sim_sizes(resnet, SIZES, workers=1, cache=False, iterations=1)
    assert not r.success and r.failed == [12]
    assert r.sizes[1] == {"nodes": 12, "error": "UnsupportedError: no topology for twelve"}
    assert "1 of 3 sizes failed: 12 (UnsupportedError" in r.message
    assert [doc["nodes"] for doc in r.sizes] == SIZES and "ours" in r.sizes[2]


@pytest.mark.parametrize("nodes,options,error,words", [
    (16, {}, InputTypeError, "sequence of cluster sizes"),
    ([8, "16"], {}, InputTypeError, "integer"),
    ([], {}, UnsupportedError, "at least one"),
    ([8, 16], {"topology": "torus:4x4"}, UnsupportedError, "topology gives one cluster"),
    ([2, 16], {}, UnsupportedError, "at least 3"),
    ([8, 16], {"degree": 9}, UnsupportedError, "--degree 9 on 8 nodes"),
    ([8, 16], {"iterations": 0}, UnsupportedError, "--iterations"),
])
def test_bad_calls_are_refused_before_any_task(resnet, nodes, options, error, words):
    with pytest.raises(error, match=words):
        train_sim_sizes(resnet, nodes, workers=1, cache=False, **options)


def test_cli_rows_and_json(tmp_path):
    r = run_cli(["train-sim", "--workload", "resnet50", "-n", "8..16:4", "--iterations", 2,
                 "--workers", 2, "--json"], tmp_path)
    assert r.returncode == 0, r
    doc = r.json()
    assert doc["success"] and [s["nodes"] for s in doc["sizes"]] == SIZES
    one = run_cli(["train-sim", "--workload", "resnet50", "-n", 12, "--iterations", 2,
                   "--json"], tmp_path)
    assert _canonical({**doc["sizes"][1], "plot": None}) == _canonical(one.json())
    table = run_cli(["train-sim", "--workload", "resnet50", "-n", "8,16", "--workers", 1],
                    tmp_path)
    assert table.returncode == 0, table
    assert "by cluster size" in table.stdout and "2 sizes simulated" in table.stdout


@pytest.mark.parametrize("args,words", [
    (["-n", "8,16", "--topology", "torus:4x4"], "--topology gives one cluster"),
    (["-n", "8,16", "--plot", "x.png"], "give one --nodes"),
    (["-n", "16", "--workers", 2], "apply to several --nodes"),
    (["-n", "8,16", "--workers", 2, "--scheduler", "tcp://127.0.0.1:1"], "not both"),
    (["-n", "16..8"], "first at most the last"),
])
def test_cli_refuses(tmp_path, args, words):
    r = run_cli(["train-sim", "--workload", "resnet50", *args], tmp_path)
    assert r.returncode == 2 and words in r.stderr, r
