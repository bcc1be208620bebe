"""TEN synthesis (greedy): every collective verifies, seeds reproduce, bounds where known."""

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from topocoll.collectives import COLLECTIVES
from topocoll.errors import NotStronglyConnectedError, UnsupportedError
from topocoll.schedule import simulate, verify
from topocoll.synth.ten.greedy import greedy_events
from topocoll.synth.ten import chunk_conditions, discretize, synthesize, ten_problem
from topocoll.topology import Topology, topology

from tests.helpers import strongly_connected_digraphs

ALL = sorted(COLLECTIVES)


@settings(max_examples=12)
@given(strongly_connected_digraphs(max_nodes=7), st.sampled_from(ALL), st.integers(1, 2),
       st.integers(0, 1000))
def test_every_collective_verifies_on_random_networks(topo, coll, chunks, seed):
    root = seed % topo.num_nodes if COLLECTIVES[coll].rooted else None
    s = synthesize(topo, coll, chunks=chunks, size=64.0, seed=seed, root=root)
    report = verify(s)
    assert report.valid, report.summary()
    m = dict(s.meta, link_model_time=simulate(s, 64.0).time)
    # the link model never beats the chunk-model bound
    assert m["link_model_time"] >= m["chunk_lower_bound"] * (1 - 1e-9)
    # With one link per pair, each link serves the plan's transfers in the plan's order, each
    # no later than its (ceil-discretized) slot, so the ASAP link model never loses to the plan.
    # Parallel links break this: the link model picks a link greedily (first to finish), not
    # the plan's, and a greedy choice can delay a later transfer (a list-scheduling anomaly).
    pairs = topo.src.astype(int) * topo.num_nodes + topo.dst
    if np.unique(pairs).size == pairs.size:
        assert m["link_model_time"] <= m["ten_time"] * (1 + 1e-9)


def test_same_seed_same_schedule_and_other_seed_may_differ():
    topo = topology("randomregular:24,3:5")
    a = synthesize(topo, "allgather", seed=7)
    b = synthesize(topo, "allgather", seed=7)
    assert np.array_equal(a.transfers, b.transfers)
    others = [synthesize(topo, "allgather", seed=s).transfers for s in range(1, 4)]
    assert any(not np.array_equal(a.transfers, o) for o in others)


def test_restarts_independent_of_workers():
    one = synthesize("torus:4x4", "allgather", seed=3, restarts=3, workers=1)
    two = synthesize("torus:4x4", "allgather", seed=3, restarts=3, workers=2)
    assert np.array_equal(one.transfers, two.transfers)
    assert one.meta["restart_makespans"] == two.meta["restart_makespans"]
    assert one.meta["makespan_slots"] == min(one.meta["restart_makespans"])


@pytest.mark.parametrize("spec,degree", [("mesh:5x5", 2), ("torus:6x6", 4), ("torus:8x8", 4),
                                          ("hypercube:6", 6), ("mesh:8x8", 2)])
def test_allgather_reaches_ingress_bound(spec, degree):
    # closed form: the node with the fewest in-links must take N-1 chunks through them
    topo = topology(spec, bandwidth="50GiB/s", latency="0.5us")
    s = synthesize(topo, "allgather", size="1GiB")
    n = topo.num_nodes
    slots = math.ceil((n - 1) / degree)
    chunk_time = 0.5e-6 + 2 ** 30 / n / (50 * 2 ** 30)
    assert s.meta["makespan_slots"] == slots
    assert simulate(s, "1GiB").time == pytest.approx(slots * chunk_time, rel=1e-12)


def test_tacos_regression_value_5x5_mesh():
    topo = topology("mesh:5x5", bandwidth="50GiB/s", latency="0.5us")
    s = synthesize(topo, "allgather", size="1GiB")
    assert round(simulate(s, "1GiB").time * 1e6, 6) == 9606.0


def test_schedule_causal_and_mutations_rejected():
    s = synthesize("mesh:3x4", "allgather", seed=1)
    assert verify(s).valid
    t = s.transfers
    # drop the last transfer: someone misses a shard
    assert not verify(s.replace(transfers=t[:-1])).valid
    # move a forwarded chunk (not its owner's first send) to step 1: its sender lacks it then
    fwd = np.flatnonzero(t["src"] != t["shard"])
    bad = t.copy()
    bad["step"][fwd[0]] = 1
    assert not verify(s.replace(transfers=bad)).valid


def test_events_never_duplicate_a_delivery():
    topo = topology("hypercube:5")
    n = topo.num_nodes
    pre, post = chunk_conditions("allgather", n, 2)
    r = greedy_events(n, topo.src, topo.dst, np.ones(topo.num_links, int), pre, post, seed=4)
    recv = r.events["chunk"] * n + topo.dst[r.events["link"]]
    assert np.unique(recv).size == recv.size == (post & ~pre).sum()
    # a link carries one chunk per slot
    key = r.events["link"] * 10_000 + r.events["start"]
    assert np.unique(key).size == key.size


def test_combining_collectives_are_reversals():
    s = synthesize("torus:3x4", "reduce_scatter", chunks=2)
    assert s.meta["reversed_from"] == "allgather"
    assert set(s.transfers["op"].tolist()) == {1}
    ar = synthesize("torus:3x4", "allreduce")
    assert verify(ar).valid
    assert ar.meta["makespan_slots"] == sum(p["makespan_slots"] for p in
                                            ar.meta["phases"].values())


def test_heterogeneous_discretization_and_bound():
    rng = np.random.default_rng(0)
    base = topology("mesh:4x4")
    bw = rng.choice([25e9, 50e9, 100e9], size=base.num_links)
    topo = base.with_links(bandwidth=bw, latency=0.5e-6)
    s = synthesize(topo, "allgather", size="1GiB", chunks=2)
    assert verify(s).valid
    p = ten_problem(topo, "allgather", size="1GiB", chunks=2)
    assert p.link_steps.min() >= 1
    # ceil discretization: a slot count never undercuts the real chunk time
    assert np.all(p.link_steps * p.time_step >= p.link_cost * (1 - 1e-12))
    assert s.meta["chunk_lower_bound"] <= simulate(s, "1GiB").time <= s.meta["ten_time"]


def test_discretize_explicit_factor():
    steps, f = discretize(np.array([1.0, 2.3, 4.0]), time_step=2.3)
    assert f == 2.3 and steps.tolist() == [1, 1, 2]


def test_disconnected_network_is_rejected():
    topo = Topology(4, [0, 1, 2, 3], [1, 0, 3, 2])
    with pytest.raises(NotStronglyConnectedError):
        synthesize(topo, "allgather")
    with pytest.raises(NotStronglyConnectedError):
        synthesize(topo, "scatter", root=0)


def test_bad_arguments():
    with pytest.raises(UnsupportedError):
        synthesize("ring:4", "allgather", method="magic")
    with pytest.raises(UnsupportedError):
        synthesize("ring:4", "allgather", chunks=0)
    with pytest.raises(UnsupportedError):
        synthesize("ring:4", "broadcast", root=7)
    with pytest.raises(UnsupportedError):
        synthesize("ring:4", "allgather", root=1)
