"""The step-indexed all-to-all LP (``topocoll.throughput.step_lp``).

The flows are checked here from scratch (capacity per step, causality, conservation, delivery);
the optimum against the throughput LP (``T >= 1/lambda``, equal with enough steps on these
symmetric topologies) and closed forms on complete graphs and rings."""

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topocoll.errors import InputTypeError
from topocoll.throughput import step_lp, throughput
from topocoll.topology import Topology, topology

TOL = 1e-6


def diameter(t):
    g = nx.DiGraph(list(zip(t.src.tolist(), t.dst.tolist())))
    return max(max(d.values()) for _, d in nx.all_pairs_shortest_path_length(g))


def check_flows(res, t):
    """Every rule of the LP, recomputed from ``res.flows`` and the topology's links."""
    n, steps = t.num_nodes, res.steps
    cap = {}
    for u, v, b in zip(t.src.tolist(), t.dst.tolist(), t.bandwidth.tolist()):
        cap[(u, v)] = cap.get((u, v), 0.0) + b
    links = [tuple(map(int, e)) for e in res.links]
    assert sorted(links) == sorted(cap)
    assert np.all(res.flows >= -TOL) and np.all(res.step_times >= -TOL)
    for k in range(steps):               # bandwidth-time
        for e, link in enumerate(links):
            assert res.flows[k, :, e].sum() <= cap[link] * res.step_times[k] + TOL
    for c, (s, d) in enumerate(res.commodities.tolist()):
        recv = np.zeros((steps, n))
        sent = np.zeros((steps, n))
        for e, (u, v) in enumerate(links):
            sent[:, u] += res.flows[:, c, e]
            recv[:, v] += res.flows[:, c, e]
        held = np.zeros(n)
        held[s] = 1.0
        for k in range(steps):          # a node sends only what it held before the step
            assert np.all(sent[k] <= held + TOL), (s, d, k)
            held += recv[k] - sent[k]
        want = np.zeros(n)
        want[d] = 1.0
        np.testing.assert_allclose(held, want, atol=1e-5)


SMALL = ["ring:5", "ring:6", "complete:4", "hypercube:3", "kautz:2,2"]


@pytest.mark.parametrize("spec", SMALL)
def test_enough_steps_meet_the_steady_state_bound(spec):
    t = topology(spec, bandwidth=1.0)
    lam = throughput(t, method="link").lam
    diam = diameter(t)
    times = []
    for steps in (diam, diam + 1, diam + 2):
        res = step_lp(t, steps)
        assert res.status_name == "SUCCESS"
        check_flows(res, t)
        assert res.unit_time >= 1 / lam - 1e-6          # averaging the steps is a flow
        times.append(res.unit_time)
    assert times[0] >= times[1] - 1e-6 >= times[2] - 2e-6   # more steps never hurt
    assert times[-1] == pytest.approx(1 / lam, rel=1e-6)


def test_kautz_needs_a_step_more_than_its_diameter():
    # measured: 2 steps (the diameter) cost 5, 3 steps reach 1/lambda = 13/3
    t = topology("kautz:2,2", bandwidth=1.0)
    assert step_lp(t, 2).unit_time == pytest.approx(5.0, rel=1e-6)
    assert step_lp(t, 3).unit_time == pytest.approx(13 / 3, rel=1e-6)


@pytest.mark.parametrize("n", [3, 4, 6])
@pytest.mark.parametrize("steps", [1, 2])
def test_complete_graph_closed_form(n, steps):
    # every pair direct is optimal: each link carries one byte, T = 1/b
    res = step_lp(topology(f"complete:{n}", bandwidth=4.0), steps)
    assert res.unit_time == pytest.approx(0.25, rel=1e-6)
    check_flows(res, topology(f"complete:{n}", bandwidth=4.0))


@pytest.mark.parametrize("n", [4, 5, 6, 7, 8])
def test_ring_closed_form(n):
    # bidirectional ring: T = N^2/(8b) for even N and (N^2 - 1)/(8b) for odd N
    t = topology(f"ring:{n}", bandwidth=2.0)
    res = step_lp(t, n // 2)
    want = (n * n - (n % 2)) / 8 / 2.0
    assert res.unit_time == pytest.approx(want, rel=1e-6)
    check_flows(res, t)


def test_fewer_steps_than_the_diameter_is_infeasible():
    res = step_lp(topology("hypercube:3"), 2)
    assert res.status_name == "INFEASIBLE" and not res.success
    assert "diameter 3" in res.message and res.unit_time == float("inf") and res.lam == 0.0


def test_not_strongly_connected_is_infeasible():
    res = step_lp(Topology(3, [0, 1], [1, 2]), 5)
    assert res.status_name == "INFEASIBLE" and "strongly connected" in res.message


def test_asymmetric_bandwidth_and_time_of_a_buffer():
    # a directed 3-cycle with one slow arc: every pair's route is fixed
    t = Topology(3, [0, 1, 2], [1, 2, 0], [1.0, 1.0, 0.5], [1e-6] * 3)
    res = step_lp(t, 2)
    check_flows(res, t)
    # arc 2->0 carries (2,0), (2,1) and (1,0): 3 bytes at rate 0.5; the others 3 bytes at 1
    # whichever step (2,0) goes in; (2,1) must go in step 1 and (1,0) in step 2: T = 6
    assert res.unit_time == pytest.approx(6.0, rel=1e-6)
    assert res.time(300) == pytest.approx(100 * res.unit_time + 2 * 1e-6)
    doc = res.to_dict(300)
    assert doc["steps"] == 2 and doc["time"] == pytest.approx(res.time(300))
    total = sum(row[-1] for row in doc["flows"])
    assert total == pytest.approx(res.flows.sum())


def test_bad_input():
    with pytest.raises(InputTypeError):
        step_lp("ring:4", 2)
    with pytest.raises(ValueError):
        step_lp(topology("ring:4"), 0)


@settings(max_examples=15, deadline=None)
@given(st.integers(4, 6), st.integers(0, 10**6), st.integers(0, 2))
def test_random_digraphs_obey_every_rule_and_the_bound(n, seed, extra):
    # a directed Hamiltonian cycle (strongly connected) plus random chords and bandwidths
    rng = np.random.default_rng(seed)
    perm = rng.permutation(n)
    arcs = {(int(perm[i]), int(perm[(i + 1) % n])) for i in range(n)}
    for _ in range(n):
        u, v = rng.choice(n, 2, replace=False)
        arcs.add((int(u), int(v)))
    src, dst = zip(*sorted(arcs))
    t = Topology(n, src, dst, rng.uniform(0.5, 2.0, len(src)))
    lam = throughput(t, method="link", bounds=False).lam
    steps = diameter(t) + extra
    res = step_lp(t, steps)
    assert res.status_name == "SUCCESS"
    check_flows(res, t)
    assert res.unit_time * lam >= 1 - 1e-6
    if extra == 0:
        assert step_lp(t, steps + 1).unit_time <= res.unit_time + 1e-6
