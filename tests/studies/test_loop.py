"""ASTRA-sim workload files read whole, and the training loop over several iterations: timings
worked out by hand (every collective costs 7 us, a cycle lasts 1 us)."""

import random

import pytest

from tests.helpers import DATA
from topocoll.errors import ScheduleFormatError, UnsupportedError
from topocoll.studies.loop import simulate_training
from topocoll.studies.models import model_workload
from topocoll.studies.prices import bound_prices, schedule_prices
from topocoll.topology.cuts import moore_distance_sum
from topocoll.studies.allreduce_costs import lower_bound_cost
from topocoll.studies.gradient_profile import Profile
from topocoll.studies.training import simulate_iteration
from topocoll.studies.workloads import (TrainingWorkload, WorkloadLayer, from_profile,
                                        load_training_workload, parse_astra_workload,
                                        workload_from_document)

TRAINING = DATA / "training"
US = 1e-6
SEVEN = {k: (lambda m: 7 * US) for k in ("allreduce", "allgather", "reducescatter",
                                          "alltoall")}


def _load(name):
    return load_training_workload(TRAINING / name, cycle_time=US)


# ---------------------------------------------------------------------- reading
def test_transformer_header_and_fields_in_astra_order():
    w = _load("astra_transformer.txt")
    assert (w.loop, w.parallelism, w.header) == ("transformer", "HYBRID_TRANSFORMER",
                                                 {"model_parallel_NPU_group": "4"})
    fc = w.layers[2]
    assert (fc.forward, fc.input_grad, fc.weight_grad, fc.update) == pytest.approx(
        (30 * US, 30 * US, 30 * US, 2 * US))
    assert (fc.forward_comm, fc.input_grad_comm, fc.weight_grad_comm) == (
        ("allgather", 1024.0), ("reducescatter", 1024.0), ("allreduce", 8192.0))
    assert w.layers[0].input_grad_comm is None           # NONE
    assert w.collective_types() == ["allgather", "allreduce", "reducescatter"]


def test_customized_has_a_thirteenth_field():
    w = _load("astra_customized.txt")
    assert w.loop == "hybrid" and [x.name for x in w.layers] == ["mlp0", "mlp1"]
    assert w.layers[1].input_grad_comm == ("alltoall", 2048.0)
    text = (TRAINING / "astra_customized.txt").read_text().replace("\tDATA\n", "\n")
    with pytest.raises(ScheduleFormatError, match="line 4: expected 13 fields"):
        parse_astra_workload(text)


def test_data_loop_ignores_activation_collectives_as_astra_sim_does():
    w = parse_astra_workload("DATA\n1\nx -1 1 ALLGATHER 8 1 NONE 0 1 ALLREDUCE 8 0\n")
    assert w.layers[0].forward_comm == ("allgather", 8.0)        # read ...
    assert w.collective_types() == ["allreduce"]                 # ... never sent


@pytest.mark.parametrize("text, needle", [
    ("HYBRID_DLRM 4\n1\nx -1 1 NONE 0 1 NONE 0 1 ALLREDUCE 8 0\n", "HYBRID_DLRM .* not run"),
    ("PIPELINE\n1\nx -1 1 NONE 0 1 NONE 0 1 ALLREDUCE 8 0\n", "unknown parallelism"),
    ("MODEL\n1\nx -1 1 NONE 0 1 NONE 0 1 NONE 0 0\n", "sends no collective"),
    ("HYBRID_CUSTOMIZED\n1\nx -1 1 NONE 0 1 NONE 0 1 ALLREDUCE 8 0 SOMETHING\n",
     "layer parallelism 'SOMETHING'"),
    ("DATA\n1\nx r 1 NONE 0 1 NONE 0 1 ALLREDUCE 8 0\n", "line 3: the reserved field"),
])
def test_astra_errors_are_one_line(text, needle):
    with pytest.raises(ScheduleFormatError, match=needle) as info:
        parse_astra_workload(text)
    assert "\n" not in str(info.value)


def test_json_layer_profile_and_its_errors():
    doc = {"name": "m", "loop": "transformer", "layers": [
        {"name": "a", "forward": "1ms", "input_grad": 0.002, "weight_grad": "3ms",
         "forward_comm": {"type": "allgather", "bytes": "1KiB"}, "bytes": 64}]}
    w = workload_from_document(doc)
    assert w.layers[0].forward_comm == ("allgather", 1024.0) and w.loop == "transformer"
    assert workload_from_document(w.to_document()).layers == w.layers     # round trip
    for layer, needle in [({"forward": 1, "input_grad": 1}, "missing 'weight_grad'"),
                          ({"forward": 1, "input_grad": 1, "weight_grad": -1},
                           "weight_grad must be >= 0"),
                          ({"forward": 1, "input_grad": 1, "weight_grad": 1, "speed": 2},
                           "unknown key 'speed'"),
                          ({"forward": 1, "input_grad": 1, "weight_grad": 1,
                            "forward_comm": {"type": "bcast", "bytes": 4}}, "type 'bcast'")]:
        with pytest.raises(UnsupportedError, match=needle):
            workload_from_document({"layers": [layer]})


# ---------------------------------------------------------------------- the loops
def test_transformer_loop_by_hand():
    # forward: embed 0-10, its all-gather 10-17; attn 17-37; fc 37-67, all-gather 67-74.
    # backward: fc ig 74-104, reduce-scatter 104-111 (waited), wg 111-141, allreduce 141-148;
    # attn ig 141-161, allreduce 161-168 (waited), wg 168-188, allreduce 188-195; embed ig
    # 188-191 (layer 0's too in this loop), wg 191-196, allreduce 196-203; + update 2 -> 205
    r = simulate_training(_load("astra_transformer.txt"), SEVEN, iterations=3)
    assert r.iteration_times == pytest.approx([205 * US] * 3)
    assert r.compute_time == pytest.approx(168 * US)
    first = [(round(x.start / US), x.type, x.phase) for x in r.first_runs()]
    assert first == [(10, "allgather", "forward"), (67, "allgather", "forward"),
                     (104, "reducescatter", "input_grad"), (141, "allreduce", "weight_grad"),
                     (161, "allreduce", "input_grad"), (188, "allreduce", "weight_grad"),
                     (196, "allreduce", "weight_grad")]


def test_hybrid_loop_by_hand():
    # forward: mlp0 0-10, all-gather 10-17; mlp1 17-27. backward: mlp1 ig 27-37, its
    # all-to-all 37-44 (not waited yet), wg 37-47, allreduce 47-54, then the all-to-all is
    # waited for (done); mlp0 ig 47-57 but layer 0 sends no reduce-scatter, wg 57-67,
    # allreduce 67-74; + update 1 -> 75
    r = simulate_training(_load("astra_customized.txt"), SEVEN, iterations=2)
    assert r.iteration_times == pytest.approx([75 * US, 75 * US])
    assert [x.type for x in r.first_runs()] == ["allgather", "alltoall", "allreduce",
                                                "allreduce"]
    assert r.compute_time == pytest.approx(60 * US)


def test_data_loop_skips_layer_zero_input_gradient_and_waits_per_layer():
    w = _load("astra_data.txt")          # compute 8300 cycles: conv1's input gradient skipped
    r = simulate_training(w, SEVEN, iterations=2)
    assert r.compute_time == pytest.approx(8300 * US)
    # fc's gradient at 5200, conv1's at 8300: its allreduce ends 8307, then its update (100)
    assert r.iteration_times == pytest.approx([8407 * US, 8407 * US])


def test_one_iteration_is_the_single_iteration_model():
    rng = random.Random(3)
    for trial in range(20):
        forward = rng.uniform(0, 2)
        layers = [(f"l{i}", rng.randint(1, 50), forward + rng.uniform(0, 10)) for i in range(8)]
        p = Profile.from_layers("p", layers, compute_time=forward + rng.choice([10.0, 12.0]),
                                forward_time=forward)
        cost = lower_bound_cost(16, 4, alpha=rng.choice([1e-3, 1.0]), bandwidth=rng.uniform(5, 80))
        for policy, bucket in (("wait-free", None), ("buckets", 60)):
            old = simulate_iteration(p, cost, policy=policy, bucket_size=bucket)
            new = simulate_training(from_profile(p), {"allreduce": cost}, policy=policy,
                                    bucket_size=bucket)
            assert new.first_iteration == pytest.approx(old.iteration_time), trial
            assert new.compute_time == pytest.approx(old.compute_time)
            assert len(new.first_runs()) == len(old.allreduces)


def test_concurrent_steady_state_differs_from_the_first_iteration():
    w = model_workload("resnet50")
    prices = bound_prices(64, 4, alpha="10us", bandwidth="100Gbps")
    serial = simulate_training(w, prices, iterations=3)
    both = simulate_training(w, prices, iterations=3, policy="concurrent")
    assert serial.steady_iteration == pytest.approx(serial.first_iteration)
    # layer 0's small gradient lands before larger earlier ones: iteration 2's forward starts
    # while they are still on the wire, so part of each iteration's tail hides behind the next
    assert w.compute_time < both.steady_iteration < both.first_iteration
    assert both.first_iteration < serial.first_iteration      # no waiting in line either


def test_update_time_delays_the_next_forward():
    base = WorkloadLayer("a", 1.0, 1.0, 1.0, None, None, ("allreduce", 1.0))
    late = TrainingWorkload("t", (WorkloadLayer("a", 1.0, 1.0, 1.0, None, None,
                                                ("allreduce", 1.0), update=0.5),))
    price = {"allreduce": lambda m: 1.0}
    assert simulate_training(TrainingWorkload("t", (base,)), price).first_iteration == 3.0
    assert simulate_training(late, price).first_iteration == 3.5


def test_missing_price_is_named():
    with pytest.raises(UnsupportedError, match="sends alltoall, and no price for alltoall"):
        simulate_training(_load("astra_customized.txt"), {"allreduce": lambda m: 1.0,
                                                          "allgather": lambda m: 1.0})


# ---------------------------------------------------------------------- prices
def test_our_schedules_never_beat_the_bounds():
    from topocoll.topology import topology

    bound = bound_prices(9, 4, alpha="10us", bandwidth="100Gbps")
    ours = schedule_prices(topology("torus:3x3"), ["allgather", "reducescatter", "alltoall"],
                           alpha="10us", bandwidth="100Gbps", label="torus")
    for kind, cost in ours.items():
        for m in (1e3, 1e6, 1e9):
            assert cost(m) >= bound[kind](m) * (1 - 1e-12), (kind, m)
    # torus:3x3 distances from a node: 4 at 1, 4 at 2 -> 12; the Moore bound 4 at 1, 4 at 2
    assert moore_distance_sum(9, 4) == 12


def test_concurrent_shares_bandwidth_by_hand():
    # b's gradient (2 bytes at 1 s/byte, latency 0.5 s) is sent at 1 s, a's (1 byte) at 2 s.
    # Concurrent: b alone 1-2 s (1 byte left), then both at half speed until 4 s, each then
    # pays its latency: both end at 4.5 s; the network is busy 1-4.5 s. Wait-free: b 1-3.5 s,
    # a 3.5-5 s.
    from topocoll.studies.allreduce_costs import AllreduceCost

    w = TrainingWorkload("t", (WorkloadLayer("a", 0.0, 0.0, 1.0, None, None, ("allreduce", 1)),
                               WorkloadLayer("b", 0.0, 0.0, 1.0, None, None, ("allreduce", 2))))
    price = {"allreduce": AllreduceCost("c", 0.5, 1.0)}
    both = simulate_training(w, price, policy="concurrent")
    assert [(r.layers, r.start, r.end) for r in both.runs] == [(("b",), 1.0, 4.5),
                                                             (("a",), 2.0, 4.5)]
    assert (both.first_iteration, both.comm_time) == (4.5, 3.5)
    serial = simulate_training(w, price)
    assert (serial.first_iteration, serial.comm_time) == (5.0, 4.0)


def test_a_json_list_is_no_profile_for_either_reader(tmp_path):
    # one rule for train-sim's workloads and the finder's profiles (which reads through it)
    from topocoll.errors import ScheduleFormatError
    from topocoll.studies.profiles import load_profile
    from topocoll.studies.workloads import load_training_workload

    path = tmp_path / "sizes.json"
    path.write_text("[1024, 2048]")
    for read in (load_training_workload, load_profile):
        with pytest.raises(ScheduleFormatError, match="not a JSON list"):
            read(path)
    path.write_text("[1024, ")
    with pytest.raises(ScheduleFormatError, match="sizes.json") as info:
        load_training_workload(path)
    assert "not a JSON list" not in str(info.value)
