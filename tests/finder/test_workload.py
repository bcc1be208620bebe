"""Workloads and the workload-aware choice."""

import json

import pytest

import topocoll as tc
from topocoll.errors import FileAccessError, ScheduleFormatError, TopocollError
from topocoll.finder import Cache, Workload, bucket_layers, find, load_workload

ALPHA, B = 1e-5, 12.5e9
_MEMORY = Cache(enabled=False)          # shared by the predictions-only finds below


def test_bucketing_follows_backpropagation_order():
    layers = [100, 50, 0, 30, 400, 20]
    assert bucket_layers(layers) == [20, 400, 30, 50, 100]                 # one per layer
    assert bucket_layers(layers, 60) == [420, 80, 100]                     # ready order
    assert bucket_layers(layers, "1KiB") == [600]
    w = Workload.from_layers(layers, bucket_size=60)
    assert w.sizes == (420, 80, 100) and w.count == 3
    assert "6 layers" in w.description and "3 allreduces" in w.description
    with pytest.raises(TopocollError, match="no gradient bytes"):
        Workload.from_layers([0, 0])


def test_workload_time_and_bound():
    w = Workload.weighted([("1MiB", 3), (2**30, 1)])
    one = Workload.single("1MiB").time(6, 1.02, alpha=ALPHA, bandwidth=B)
    big = Workload.single("1GiB").time(6, 1.02, alpha=ALPHA, bandwidth=B)
    assert w.time(6, 1.02, alpha=ALPHA, bandwidth=B) == pytest.approx(3 * one + big)
    assert Workload.single("1MiB").lower_bound(1024, 4, alpha=ALPHA, bandwidth=B) * 1e6 == \
        pytest.approx(267.6, abs=0.05)
    for bad in ([], [("1MiB", 0)], [(-1, 1)], ["1 parsec"]):
        with pytest.raises(TopocollError):
            Workload.weighted(bad)


def _result(workload, n=256):
    return find(n, 4, workload, alpha=ALPHA, node_bandwidth=B, evaluate=False, cache=_MEMORY)


def test_single_size_picks_the_minimum_predicted_time():
    small, large = _result("1KiB"), _result("1GiB")
    for r in (small, large):
        assert r.predicted_time == min(r.times)
        assert r.best.name == r.frontier[r.times.index(min(r.times))].name
    # latency-bound: the fewest steps; bandwidth-bound: the least T_B
    assert small.best.steps == min(c.steps for c in small.frontier)
    assert large.best.t_b == min(c.t_b for c in large.frontier)
    assert small.best.name != large.best.name


def test_weighted_sizes_choose_by_the_weighted_sum():
    r = _result([("1KiB", 1000), ("1GiB", 1)])
    expected = [1000 * _result("1KiB").times[i] + _result("1GiB").times[i]
                for i in range(len(r.frontier))]
    assert r.times == pytest.approx(expected)
    assert r.best.name == r.frontier[expected.index(min(expected))].name
    assert r.lower_bound == pytest.approx(1000 * _result("1KiB").lower_bound +
                                          _result("1GiB").lower_bound)


def test_model_layers_with_buckets(tmp_path):
    layers = [2**20] * 40 + [64 * 2**20, 4096, 4096]              # a model, forward order
    path = tmp_path / "model.json"
    path.write_text(json.dumps(layers))
    per_layer = load_workload(path)
    assert per_layer.count == 43
    bucketed = load_workload(path, bucket_size="25MiB")
    assert bucketed.sizes == (64 * 2**20 + 8192, 25 * 2**20, 15 * 2**20)
    r1, r2 = _result(per_layer), _result(bucketed)
    # many small allreduces favour few steps; three large ones favour bandwidth
    assert r1.best.steps <= r2.best.steps and r1.best.t_b >= r2.best.t_b
    obj = tmp_path / "obj.json"
    obj.write_text(json.dumps({"layers": layers, "bucket_size": "25MiB"}))
    assert load_workload(obj).sizes == bucketed.sizes


def test_workload_files(tmp_path):
    text = tmp_path / "sizes.txt"
    text.write_text("# size weight\n1MiB 3\n64KiB\n\n2GiB 0.5\n")
    w = load_workload(text)
    assert w.sizes == (2**20, 2**16, 2 * 2**30) and w.weights == (3, 1, 0.5)
    js = tmp_path / "w.json"
    js.write_text(json.dumps({"sizes": [["1MiB", 2], {"size": 1024, "weight": 5}]}))
    assert load_workload(js).weights == (2, 5)
    js.write_text(json.dumps({"1MiB": 2}))
    assert load_workload(js).sizes == (2**20,)
    for content, msg in (("[1, 2", "not valid JSON"), ("1MiB x", "not a number"),
                         ("", "no sizes"), ('"x"', "1MiB|sizes|size")):
        text.write_text(content)
        with pytest.raises(ScheduleFormatError) as info:
            load_workload(text)
        assert str(text) in str(info.value) and "\n" not in str(info.value)
    with pytest.raises(FileAccessError, match="missing.json: cannot read"):
        load_workload(tmp_path / "missing.json")


def test_bad_find_input():
    for args, msg in (((1, 4), "nodes must be >= 2"), ((8, 0), "degree must be >= 1"),
                      ((8.5, 2), "must be an integer")):
        with pytest.raises(TopocollError, match=msg):
            find(*args, cache=False)
    with pytest.raises(TopocollError, match="alpha"):
        find(8, 2, alpha="fast", cache=False)
    with pytest.raises(tc.errors.InputTypeError):
        find(8, 2, workload=object(), cache=False)
    with pytest.raises(TopocollError, match="node_bandwidth or link_bandwidth, not both"):
        find(8, 2, node_bandwidth="100Gbps", link_bandwidth="100Gbps", cache=False)


def test_default_cluster_is_per_link_and_the_model_uses_d_links():
    # the one default cluster: 100Gbps per link, B = d x 100Gbps in units of M/B; the same
    # frontier (it does not depend on B) and the same predictions as node_bandwidth = d x L
    by_link = find(256, 4, "1MiB", evaluate=False, cache=_MEMORY)
    explicit = find(256, 4, "1MiB", link_bandwidth="100Gbps", evaluate=False, cache=_MEMORY)
    as_node = find(256, 4, "1MiB", node_bandwidth="400Gbps", evaluate=False, cache=_MEMORY)
    assert (by_link.link_bandwidth, by_link.node_bandwidth) == (12.5e9, 50e9)
    assert by_link.bandwidth == "100Gbps per link" == by_link.to_dict()["bandwidth"]
    assert as_node.link_bandwidth is None and as_node.bandwidth == "400Gbps per node"
    assert by_link.times == explicit.times == as_node.times
    assert by_link.best == as_node.best
    best = by_link.best
    assert by_link.predicted_time == pytest.approx(
        Workload.single("1MiB").time(best.steps, best.t_b, alpha=ALPHA, bandwidth=4 * 12.5e9),
        rel=1e-12)
