"""Ranks on an emulated network: every collective's schedule gives torch's result across the
emulated links, neighbor averaging equals the matrix product, a killed rank takes nothing
down with it but itself, and the measurement carries the model beside it."""

import os
import signal

import numpy as np
import pytest

from topocoll.emulate.network import EmulatedNetwork
from topocoll.errors import ProcessGroupError
from tests.emulate.conftest import needs_root

pytestmark = needs_root

RATE = "200Mbps"     # fast enough that small tests take little time, slow enough to shape
COLLECTIVES = [("allgather", "bfb"), ("reduce_scatter", "bfb"), ("allreduce", "bfb"),
               ("broadcast", "bfb"), ("reduce", "bfb"), ("scatter", "ten"), ("gather", "ten"),
               ("alltoall", "ten")]


def _every_collective(rank, world_size, schedules):
    from topocoll.runtime.measure import measure_schedule

    out = {}
    for name, s in schedules:
        r = measure_schedule(s, "64KiB", iters=1, warmup=0, check=True, baseline=False)
        out[name] = r["correct"]
    return out


def test_every_collective_is_torchs_result_across_the_emulated_links():
    pytest.importorskip("torch")
    from topocoll.runtime import run_local
    from topocoll.synth import generate

    spec = "hypercube:2"
    schedules = [(c, generate(spec, c, a, **({"root": 1} if c in ("broadcast", "reduce",
                                                                  "scatter", "gather") else {})))
                 for c, a in COLLECTIVES]
    with EmulatedNetwork(spec, link_bandwidth=RATE) as net:
        got = run_local(_every_collective, 4, (schedules,), network=net, start_method="fork",
                        timeout=300)
    assert got[0] == {c: True for c, _ in COLLECTIVES}


def _neighbor(rank, world_size, topology, iterations):
    import torch

    from topocoll.runtime import neighbor_allreduce

    x = torch.arange(6, dtype=torch.float64) + 10.0 * rank
    seen = []
    for k in range(iterations):
        x = neighbor_allreduce(x, topology, k)
        seen.append(x.numpy().copy())
    return seen


def test_neighbor_averaging_across_a_switch_is_the_matrix_product():
    pytest.importorskip("torch")
    from topocoll.gossip import gossip_topology
    from topocoll.runtime import run_local

    topo = gossip_topology("one-peer-exp", 4)
    with EmulatedNetwork("switch:4", link_bandwidth=RATE) as net:
        got = run_local(_neighbor, 4, (topo, 3), network=net, start_method="fork", timeout=300)
    x = np.array([np.arange(6) + 10.0 * r for r in range(4)])
    for k in range(3):
        x = topo.matrix(k) @ x
        for rank in range(4):
            assert np.allclose(got[rank][k], x[rank], rtol=1e-12)


def _ddp_step(rank, world_size, topology):
    import torch

    from topocoll.runtime import DecentralizedDataParallel

    torch.manual_seed(rank)
    model = torch.nn.Linear(4, 2)
    with DecentralizedDataParallel(model, topology, lr=0.1) as ddp:
        for _ in range(3):
            loss = ddp(torch.randn(8, 4)).pow(2).sum()
            loss.backward()
            ddp.step()
            ddp.zero_grad()
        ddp.global_avg()
        return [p.detach().numpy().copy() for p in ddp.parameters()]


def test_decentralized_data_parallel_trains_on_the_network():
    pytest.importorskip("torch")
    from topocoll.gossip import gossip_topology
    from topocoll.runtime import run_local

    with EmulatedNetwork("ring:4", link_bandwidth=RATE) as net:
        got = run_local(_ddp_step, 4, (gossip_topology("ring-graph", 4),), network=net,
                        start_method="fork", timeout=300)
    for rank in range(1, 4):   # after global_avg every rank holds the same parameters
        for a, b in zip(got[0], got[rank]):
            assert np.allclose(a, b, rtol=1e-6)


def _dies(rank, world_size):
    import torch
    import torch.distributed as dist

    x = torch.ones(1 << 16)
    dist.all_reduce(x)
    if rank == 2:
        os.kill(os.getpid(), signal.SIGKILL)
    dist.all_reduce(x)
    return True


def test_a_killed_rank_is_named_and_the_network_still_goes():
    pytest.importorskip("torch")
    from topocoll.runtime import run_local

    with EmulatedNetwork("ring:4", link_bandwidth=RATE) as net:
        with pytest.raises(ProcessGroupError, match="rank 2 died"):
            run_local(_dies, 4, network=net, start_method="fork", timeout=120)
        run = net.run
    from tests.emulate.conftest import our_namespaces
    assert not any(run in n for n in our_namespaces())


def test_a_run_on_the_network_reports_the_model_beside_it():
    pytest.importorskip("torch")
    from topocoll.runtime.emulated import measure_on_network
    from topocoll.synth import generate

    s = generate("ring:4", "allreduce", "bfb")
    with EmulatedNetwork("ring:4", link_bandwidth="100Mbps") as net:
        r = measure_on_network(s, net, "1MiB", iters=2, warmup=1)
    assert r["correct"] is True
    for key in ("time", "baseline_time", "model_time", "baseline_model_time"):
        assert r[key] > 0
    assert r["measured_over_model"] == pytest.approx(r["time"] / r["model_time"])
    # 1 MiB on 100 Mbit/s links takes tens of milliseconds: the links, not the host, set it
    assert 0.5 < r["measured_over_model"] < 3
    assert 0 <= r["host"]["idle"] <= 1 and r["network"]["topology"] == "ring:4"
    goodput = r["calibration"]["goodput_ratio"]
    assert 0 < goodput <= 1.1                # a fraction of the shaped rate, measured
    if r["host"]["idle"] >= 0.5:             # a starved host moves less than its links allow
        assert goodput == pytest.approx(1.0, abs=0.1)


def test_gossip_on_a_switch_reports_both_and_their_models():
    pytest.importorskip("torch")
    from topocoll.gossip import gossip_topology
    from topocoll.runtime.emulated import measure_gossip

    topo = gossip_topology("one-peer-exp", 4)
    with EmulatedNetwork("switch:4", link_bandwidth="100Mbps") as net:
        r = measure_gossip(topo, "1MiB", network=net, iterations=2)
    # M against 2 (n-1)/n M, and each side's latencies: 6 ring steps against one message
    assert r["model_ratio"] == pytest.approx(r["model_time"] / r["baseline_model_time"])
    assert 0 < r["model_ratio"] <= 4 / 6 + 1e-9    # latencies only lower it
    # the bytes of one port at the calibrated goodput (measured: may sit a little above the
    # shaper's nominal rate)
    assert r["model_time"] >= (1 << 20) / r["calibration"]["goodput"] * (1 - 1e-9)
    assert r["ratio"] == pytest.approx(r["time"] / r["baseline_time"])
    assert r["iterations"] == 2 and r["ranks"] == 4


def test_run_local_refuses_a_network_of_another_size():
    pytest.importorskip("torch")
    from topocoll.errors import InputTypeError
    from topocoll.runtime import run_local

    net = EmulatedNetwork("ring:4", link_bandwidth=RATE)
    with net:
        with pytest.raises(InputTypeError, match="has 4 ranks, not 3"):
            run_local(_dies, 3, network=net, start_method="fork")


def _hierarchical(rank, world_size, matrix, iterations):
    import torch

    from topocoll.runtime import hierarchical_neighbor_allreduce

    x = torch.arange(7, dtype=torch.float64) + 10.0 * rank     # 7: not a multiple of 2
    seen = []
    for k in range(iterations):
        x = hierarchical_neighbor_allreduce(x, matrix, local_size=2, iteration=k)
        seen.append(x.numpy().copy())
    return seen


def test_hierarchical_averaging_on_a_two_level_network_is_the_matrix_product():
    """2 machines of 2 ranks, each on a leaf switch, the leaves joined by uplinks 4x slower:
    every iteration equals (W kron (1/2) 1 1^T) X, and the measurement prices it."""
    pytest.importorskip("torch")
    from topocoll.gossip import GraphTopology, hierarchical_matrix
    from topocoll.runtime import run_local
    from topocoll.runtime.emulated import measure_gossip

    w = np.array([[0.75, 0.25], [0.25, 0.75]])
    with EmulatedNetwork("switch:4,2,4", link_bandwidth=RATE) as net:
        got = run_local(_hierarchical, 4, (w, 2), network=net, start_method="fork",
                        timeout=300)
        r = measure_gossip(GraphTopology("w", w), "256KiB", network=net, iterations=2,
                           local_size=2)
    x = np.array([np.arange(7) + 10.0 * rank for rank in range(4)])
    for k in range(2):
        x = hierarchical_matrix(w, 2) @ x
        for rank in range(4):
            assert np.allclose(got[rank][k], x[rank], rtol=1e-12)
    assert r["hierarchical_local_size"] == 2 and r["ranks"] == 4
    assert r["model_time"] > 0 and r["time"] > 0 and r["baseline_model_time"] > 0
