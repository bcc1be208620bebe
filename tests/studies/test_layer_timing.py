"""Measured profiles: torch optional (a one-line error without it), a tiny model measured in
well under a second, and the measured ResNet-18 fixture."""

import sys

import pytest

from tests.helpers import DATA
from topocoll.errors import TorchUnavailableError
from topocoll.studies import measure_model
from topocoll.studies.loop import simulate_training
from topocoll.studies.prices import bound_prices
from topocoll.studies.workloads import load_training_workload, workload_from_document


def test_without_torch_the_error_is_one_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)      # import torch now fails
    with pytest.raises(TorchUnavailableError, match="needs PyTorch") as info:
        measure_model("mlp", batch=2)
    assert "\n" not in str(info.value)


def test_a_tiny_model_is_measured_layer_by_layer():
    pytest.importorskip("torch")
    w = measure_model("mlp", batch=2, repeats=1)
    assert w.compute_model == "measured" and w.loop == "data"
    assert [x.name for x in w.layers] == ["0 (Linear)", "1 (ReLU)", "2 (Linear)", "3 (ReLU)",
                                          "4 (Linear)"]
    # a layer's gradient is its own parameters, fp32: weights and biases
    assert [x.gradient_bytes for x in w.layers] == [
        (256 * 512 + 512) * 4, 0, (512 * 512 + 512) * 4, 0, (512 * 10 + 10) * 4]
    assert all(x.forward > 0 and x.input_grad > 0 for x in w.layers)
    assert [x.weight_grad > 0 for x in w.layers] == [True, False, True, False, True]
    assert w.source["batch"] == 2 and w.source["threads"] == 1
    assert w.source["input"] == [[2, 256]]
    again = workload_from_document(w.to_document())
    assert again.layers == w.layers and again.compute_model == "measured"


def test_the_measured_fixture():
    w = load_training_workload(DATA / "training" / "measured_resnet18_b2.json")
    assert w.compute_model == "measured" and w.source["batch"] == 2
    # torchvision's ResNet-18 has 11,689,512 parameters: every one is some layer's gradient
    assert w.gradient_bytes == 11_689_512 * 4
    convs = [x for x in w.layers if "Conv2d" in x.name]
    assert len(convs) == 20 and len(w.layers) == 61
    r = simulate_training(w, bound_prices(16, 4, alpha="10us", bandwidth="100Gbps"),
                          iterations=2)
    assert r.first_iteration >= w.compute_time
    assert w.source["sum_of_layers_s"] == pytest.approx(
        sum(x.forward + x.input_grad + x.weight_grad for x in w.layers))
