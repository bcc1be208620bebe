"""Training-iteration simulation: the wait-free rules and DDP buckets against timelines worked
out by hand, the allreduce costs, the model profiles' parameter counts and the profile files."""

import pytest

from tests.helpers import DATA
from topocoll.errors import InputTypeError, ScheduleFormatError, UnsupportedError
from topocoll.studies.models import model_flops, model_layers, model_params, model_profile
from topocoll.studies.profiles import load_profile, parse_astra
from topocoll.studies.allreduce_costs import AllreduceCost, baseline_cost, lower_bound_cost, \
    schedule_cost
from topocoll.studies.gradient_profile import Profile
from topocoll.studies.training import simulate_iteration

TRAINING = DATA / "training"


def _profile(*layers, compute_time=None):
    return Profile.from_layers("toy", layers, compute_time=compute_time)


def _groups(result):
    return [(a.start, a.end, a.layers) for a in result.allreduces]


# ---------------------------------------------------------------------- wait-free
def test_wait_free_three_layers_one_and_a_half_seconds_each():
    # c ready at 1: network idle, runs 1 -> 2.5. b ready at 2 while c is pending: buffered,
    # runs when c completes, 2.5 -> 4. a ready at 3 while b is pending: 4 -> 5.5.
    r = simulate_iteration(_profile(("c", 1, 1.0), ("b", 1, 2.0), ("a", 1, 3.0)),
                           lambda size: 1.5)
    assert _groups(r) == [(1.0, 2.5, ("c",)), (2.5, 4.0, ("b",)), (4.0, 5.5, ("a",))]
    assert r.iteration_time == 5.5 and r.compute_time == 3.0
    assert r.exposed_comm == 2.5 and r.comm_time == 4.5


def test_wait_free_buffers_layers_ready_while_waiting_into_one_allreduce():
    # c runs 1 -> 2 (100 bytes at 100 B/s); b (ready 1.5) and a (ready 1.8) wait and go
    # together at 2: 400 bytes, 4 s, ending at 6
    r = simulate_iteration(_profile(("c", 100, 1.0), ("b", 300, 1.5), ("a", 100, 1.8)),
                           lambda size: size / 100)
    assert _groups(r) == [(1.0, 2.0, ("c",)), (2.0, 6.0, ("b", "a"))]
    assert [a.bytes for a in r.allreduces] == [100.0, 400.0]
    assert r.iteration_time == 6.0 and r.exposed_comm == 6.0 - 1.8


def test_wait_free_idle_network_starts_a_layer_at_its_ready_time():
    # c runs 1 -> 1.5; b is ready at 2, after the network went idle: it starts at 2, alone
    r = simulate_iteration(_profile(("c", 1, 1.0), ("b", 1, 2.0)), lambda size: 0.5)
    assert _groups(r) == [(1.0, 1.5, ("c",)), (2.0, 2.5, ("b",))]


def test_instant_allreduce_hides_completely():
    r = simulate_iteration(_profile(("c", 1, 1.0), ("b", 5, 2.0), ("a", 7, 3.0),
                                    compute_time=4.0), lambda size: 0.0)
    assert r.iteration_time == 4.0 and r.exposed_comm == 0.0 and r.comm_time == 0.0
    assert [a.layers for a in r.allreduces] == [("c",), ("b",), ("a",)]


def test_everything_exposed_when_every_gradient_is_ready_at_the_end():
    # all ready at 3 = the end of compute: the first goes alone, the rest wait for it
    r = simulate_iteration(_profile(("c", 1, 3.0), ("b", 1, 3.0), ("a", 1, 3.0)),
                           lambda size: 1.0)
    assert _groups(r) == [(3.0, 4.0, ("c",)), (4.0, 5.0, ("b", "a"))]
    assert r.exposed_comm == r.comm_time == 2.0


# ---------------------------------------------------------------------- buckets
def test_buckets_by_hand():
    # cap 20 bytes, 0.1 s per byte: [x, y] = 20 bytes closes at y's ready time 2 -> 2..4;
    # [z] = 30 bytes ready at 3 waits for the network until 4 -> 4..7; [w] ready 4 -> 7..7.5
    p = _profile(("x", 10, 1.0), ("y", 10, 2.0), ("z", 30, 3.0), ("w", 5, 4.0),
                 compute_time=4.5)
    r = simulate_iteration(p, lambda size: 0.1 * size, policy="buckets", bucket_size=20)
    got = [(round(s, 9), round(e, 9), layers) for s, e, layers in _groups(r)]
    assert got == [(2.0, 4.0, ("x", "y")), (4.0, 7.0, ("z",)), (7.0, 7.5, ("w",))]
    assert r.iteration_time == pytest.approx(7.5) and r.exposed_comm == pytest.approx(3.0)
    assert r.bucket_size == 20.0 and r.policy == "buckets"


def test_buckets_default_is_25_mib():
    r = simulate_iteration(_profile(("a", 2**20, 1.0)), lambda size: 0.0, policy="buckets")
    assert r.bucket_size == 25 * 2**20


def test_result_dictionary_has_the_times():
    r = simulate_iteration(_profile(("c", 1, 1.0)), lambda size: 2.0)
    doc = r.to_dict()
    assert doc["iteration_time"] == 3.0 and doc["compute_time"] == 1.0
    assert doc["exposed_comm"] == 2.0 and doc["comm_time"] == 2.0
    assert doc["allreduces"] == [{"start": 1.0, "end": 3.0, "bytes": 1.0, "layers": ["c"]}]
    assert doc["status_name"] == "SUCCESS"


@pytest.mark.parametrize("kwargs, error, needle", [
    ({"policy": "fifo"}, UnsupportedError, "unknown policy"),
    ({"bucket_size": 10}, UnsupportedError, "bucket_size applies"),
    ({"policy": "buckets", "bucket_size": 0}, UnsupportedError, "positive"),
])
def test_bad_simulation_options(kwargs, error, needle):
    with pytest.raises(error, match=needle):
        simulate_iteration(_profile(("c", 1, 1.0)), lambda size: 1.0, **kwargs)


def test_bad_comm_time():
    p = _profile(("c", 1, 1.0))
    with pytest.raises(InputTypeError):
        simulate_iteration(p, 3.0)
    with pytest.raises(UnsupportedError, match=r"comm_time\(1\) \(in seconds\) must be >= 0"):
        simulate_iteration(p, lambda size: -1.0)
    with pytest.raises(InputTypeError, match="must be a number, got '1ms'"):
        simulate_iteration(p, lambda size: "1ms")


def test_profile_rules():
    p = _profile(("late", 4, 2.0), ("empty", 0, 1.5), ("early", "1KiB", "1s"))
    assert [x.name for x in p.layers] == ["early", "late"]   # sorted, no empty layer
    assert p.forward_order_bytes() == [4.0, 1024.0]
    with pytest.raises(UnsupportedError, match="no gradient bytes"):
        _profile(("empty", 0, 1.0))
    with pytest.raises(UnsupportedError, match="ends before"):
        _profile(("a", 1, 2.0), compute_time=1.0)


# ---------------------------------------------------------------------- costs
def test_step_model_cost():
    c = AllreduceCost.from_step_model(3, 1.5, alpha="2us", bandwidth="1GB/s")
    assert c(2e9) == pytest.approx(3 * 2e-6 + 1.5 * 2.0)


def test_lower_bound_at_1024_nodes_of_degree_4():
    # Moore depth of 1024 nodes of out-degree 4: 1+4+16+64+256 = 341 < 1024 <= 341+1024
    c = lower_bound_cost(1024, 4, alpha="10us", bandwidth="100Gbps")
    m = 2**20
    assert c.steps == 10
    assert c(m) == pytest.approx(2 * (5 * 1e-5 + 1023 / 1024 * m / 12.5e9))


def test_schedule_cost_of_a_ring_allreduce():
    from topocoll.synth import generate

    # ring:4 has 2 out-links per node (B/2 each); the ring allreduce sends M/4 per step over one
    # link in each of 6 steps: 6 * (M/4) / (B/2) = 3 M/B
    c = schedule_cost(generate("ring:4", "allreduce", "ring"), alpha="1us", bandwidth="1GB/s")
    assert c.steps == 6
    assert c(1e9) == pytest.approx(6e-6 + 3.0)


def test_schedule_cost_refuses_other_collectives():
    from topocoll.synth import generate

    with pytest.raises(UnsupportedError, match="allreduce"):
        schedule_cost(generate("ring:4", "allgather", "bfb"), alpha="1us", bandwidth="1GB/s")


def test_shifted_ring_baseline_closed_form():
    # two bidirectional rings, half the buffer each: 2(N-1) steps, T_B = 2 (N-1)/N M/B
    c = baseline_cost("ShiftedRing", 8, alpha="10us", bandwidth="100Gbps")
    assert c.steps == 14
    assert c.per_byte == pytest.approx(2 * 7 / 8 / 12.5e9)
    with pytest.raises(UnsupportedError, match="unknown baseline"):
        baseline_cost("Ring", 8, alpha="10us", bandwidth="100Gbps")


def test_dbt_baseline_is_slower_than_the_bound():
    dbt = baseline_cost("DBT", 16, alpha="10us", bandwidth="100Gbps")
    bound = lower_bound_cost(16, 4, alpha="10us", bandwidth="100Gbps")
    assert dbt(2**20) > bound(2**20)


# ---------------------------------------------------------------------- models
@pytest.mark.parametrize("model, params", [
    ("resnet50", 25_557_032),
    # embeddings 30522*1024 + 512*1024 + 2*1024 + 2*1024 = 31,782,912; 24 layers of 12,596,224;
    # pooler 1024*1024 + 1024
    ("bert-large", 31_782_912 + 24 * 12_596_224 + 1_049_600),
    ("gpt2-medium", 354_823_168),
    ("vit-b16", 86_567_656),
])
def test_parameter_totals(model, params):
    assert model_params(model) == params


def test_bert_without_pooler():
    from topocoll.studies.models import bert_large_layers

    assert sum(x.params for x in bert_large_layers(pooler=False)) == 334_092_288


def test_layer_sizes_by_hand():
    resnet = {x.name: x for x in model_layers("resnet50")}
    assert resnet["conv1"].params == 7 * 7 * 3 * 64 + 2 * 64
    assert resnet["layer1.0.conv2"].params == 3 * 3 * 64 * 64 + 2 * 64
    assert resnet["layer4.0.downsample"].params == 1024 * 2048 + 2 * 2048
    assert resnet["fc"].params == 2048 * 1000 + 1000
    assert resnet["conv1"].flops == 2 * 7 * 7 * 3 * 64 * 112 * 112
    vit = {x.name: x for x in model_layers("vit-b16")}
    assert vit["blocks.0.attn.qkv"].params == 768 * 2304 + 2304
    # 197 tokens: 2 * weights * tokens + 4 * tokens^2 * width for the scores and values
    assert vit["blocks.0.attn.qkv"].flops == 2 * 768 * 2304 * 197 + 4 * 197 * 197 * 768
    gpt = {x.name: x for x in model_layers("gpt2-medium")}
    assert gpt["wte"].params == 50257 * 1024 and gpt["lm_head (tied to wte)"].params == 0


def test_resnet50_forward_flops_are_about_4_1_giga_macs():
    assert 8.0e9 < model_flops("resnet50") < 8.4e9


def test_profile_times_follow_the_flops_model():
    # batch 2 at 1 TFLOP/s: forward = 2 * flops / 1e12, backward twice that
    p = model_profile("vit-b16", batch=2, gpu_flops=1e12, efficiency=1.0, bytes_per_param="fp16")
    forward = 2 * model_flops("vit-b16") / 1e12
    assert p.forward_time == pytest.approx(forward)
    assert p.compute_time == pytest.approx(3 * forward)
    head = p.layers[0]
    assert head.name == "head" and head.bytes == 2 * (768 * 1000 + 1000)
    assert head.ready == pytest.approx(forward + 2 * 2 * (2 * 768 * 1000) / 1e12)


def test_gpt2_tied_embedding_is_ready_last():
    p = model_profile("gpt2-medium")
    assert p.layers[-1].name == "wte" and p.layers[-1].ready == pytest.approx(p.compute_time)
    assert p.total_bytes == 4 * 354_823_168


def test_model_profile_bad_inputs():
    with pytest.raises(UnsupportedError, match="unknown model"):
        model_profile("alexnet")
    with pytest.raises(UnsupportedError, match="batch"):
        model_profile("resnet50", batch=0)
    with pytest.raises(UnsupportedError, match="efficiency"):
        model_profile("resnet50", efficiency=1.5)
    with pytest.raises(UnsupportedError, match="gradient type"):
        model_profile("resnet50", bytes_per_param="fp8")


# ---------------------------------------------------------------------- profile files
def test_astra_data_workload():
    # forward 1000 + 200 + 3000 = 4200 cycles; fc: weight grad 1000 -> ready 5200, input grad
    # 1000 -> 6200; relu: 0 + 100 -> 6300; conv1: weight grad 2000 -> ready 8300; conv1 is
    # layer 0, whose input gradient (500) ASTRA-sim's DATA loop skips
    p = load_profile(TRAINING / "astra_data.txt")
    assert [(x.name, x.bytes) for x in p.layers] == [("fc", 8000.0), ("conv1", 4000.0)]
    assert [x.ready for x in p.layers] == pytest.approx([5200e-9, 8300e-9])
    assert p.forward_time == pytest.approx(4200e-9)
    assert p.compute_time == pytest.approx(8300e-9)
    slow = load_profile(TRAINING / "astra_data.txt", cycle_time=1e-6)
    assert slow.compute_time == pytest.approx(8300e-6)


def test_astra_malformed_line_is_named():
    with pytest.raises(ScheduleFormatError, match=r"astra_bad_line4\.txt: line 4: expected 12"):
        load_profile(TRAINING / "astra_bad_line4.txt")


def test_astra_without_gradient_allreduce_has_no_profile_for_find():
    # read whole by topocoll.studies.workloads; find --workload needs gradient allreduces
    with pytest.raises(ScheduleFormatError, match="no layer allreduces a weight gradient"):
        load_profile(TRAINING / "astra_hybrid.txt")


@pytest.mark.parametrize("text, needle", [
    ("DATA\n2\nx -1 1 NONE 0 1 NONE 0 1 ALLREDUCE 8 0\n", "declares 2 layers but has 1"),
    ("DATA\ntwo\n", "line 2: expected the number of layers"),
    ("DATA\n1\nx -1 1 NONE 0 1 NONE 0 z ALLREDUCE 8 0\n", "line 3: weight-gradient compute"),
    ("DATA\n1\nx -1 1 NONE 0 1 NONE 0 1 ALLREDUCEALLTOALL 8 0\n", "line 3: unknown weight"),
    ("HYBRID_DLRM 4\n1\nx -1 1 NONE 0 1 NONE 0 1 ALLREDUCE 8 0\n", "line 1: parallelism "
     "HYBRID_DLRM"),
    ("DATA\n1\nx -1 1 NONE 0 1 NONE 0 1 BCAST 8 0\n", "line 3: unknown weight-gradient"),
    ("", "empty"),
])
def test_astra_errors(text, needle):
    with pytest.raises(ScheduleFormatError, match=needle):
        parse_astra(text)


def test_json_profile():
    p = load_profile(TRAINING / "profile.json")
    assert p.name == "tiny" and p.compute_time == 5.0 and p.forward_time == 1.0
    assert [(x.name, x.bytes, x.ready) for x in p.layers] == [
        ("c", 300.0, 1.5), ("b", 1024.0, 2.0), ("a", 100.0, 3.0)]


def test_json_profile_errors(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"layers": [{"name": "a", "bytes": 4}]}')
    with pytest.raises(ScheduleFormatError, match="bad.json: layer 0: missing 'forward'"):
        load_profile(bad)
    bad.write_text("{nope")
    with pytest.raises(ScheduleFormatError, match="not valid JSON"):
        load_profile(bad)
