"""The plan of an emulated network and its model, without building anything: cables, rates,
addresses and routes from the topology; model times against closed forms and against the
link model and gossip cost model they stand on."""

import numpy as np
import pytest
from hypothesis import given

from topocoll.emulate.calibrate import Calibration
from topocoll.emulate.prediction import (ack_share, flows_model_time, gossip_model_time,
                                    link_goodputs, schedule_model_time, torch_model_time)
from topocoll.emulate.network import EmulatedNetwork
from topocoll.emulate.plan import REVERSE_FRACTION, NetworkPlan, node_address
from topocoll.errors import InputTypeError, SpecError, TopologyError, UnsupportedError
from topocoll.topology import Topology, topology
from tests.helpers import strongly_connected_digraphs

RATE = 25e6 / 8


def exact(rate=RATE, alpha=0.0, hop_delay=0.0):
    """A calibration that says the links do exactly what they were told."""
    return Calibration(rate=rate, goodput=rate, alpha=alpha, hop_delay=hop_delay,
                       hop_delay_measured=True)


def test_a_torus_is_one_cable_per_neighbour_pair_at_the_rate_asked():
    net = EmulatedNetwork("torus:4x4", link_bandwidth="25Mbps")
    plan = net.plan
    assert plan.num_ranks == 16 and len(plan.cables) == 32
    assert all(c.rate_ab == c.rate_ba == pytest.approx(RATE) for c in plan.cables)
    assert plan.interfaces(0) == [("p1", 1), ("p3", 3), ("p4", 4), ("p12", 12)]
    assert plan.route(0, 5) == (4, "10.0.0.5")
    assert plan.aggregate_rate() == pytest.approx(64 * RATE)


def test_one_way_links_are_capped_the_other_way_and_never_routed():
    plan = NetworkPlan(topology("uniring:4", bandwidth=1e6), scale=1.0)
    for c in plan.cables:
        forward = c.rate_ab if c.linked_ab else c.rate_ba
        back = c.rate_ba if c.linked_ab else c.rate_ab
        assert forward == 1e6 and back == pytest.approx(REVERSE_FRACTION * 1e6)
    assert plan.directed
    # every route follows the ring's direction: 1 -> 0 goes the long way round
    assert plan.routes.node_path(1, 0) == [1, 2, 3, 0]


def test_parallel_links_share_one_cable_with_their_bandwidths_added():
    t = Topology(2, [0, 0, 1], [1, 1, 0], bandwidth=[1e6, 3e6, 2e6])
    plan = NetworkPlan(t, scale=0.5)
    (c,) = plan.cables
    assert (c.rate_ab, c.rate_ba) == (2e6, 1e6)
    # each link's share of its direction, in proportion to its bandwidth
    assert plan.link_rates().tolist() == [0.5e6, 1.5e6, 1e6]


def test_heterogeneous_links_keep_their_ratios():
    t = Topology(3, [0, 1, 1, 2], [1, 0, 2, 1], bandwidth=[4e9, 4e9, 1e9, 1e9])
    net = EmulatedNetwork(t, link_bandwidth="40Mbps")
    assert net.plan.rate(0, 1) == pytest.approx(5e6)
    assert net.plan.rate(1, 2) == pytest.approx(1.25e6)


def test_switches_hold_no_rank():
    plan = EmulatedNetwork("switch:4").plan
    assert plan.ranks == [0, 1, 2, 3] and plan.switches == (4,)
    assert plan.route(0, 3) == (4, node_address(4))


def test_addresses_are_distinct_and_never_end_in_0_or_255():
    addresses = [node_address(i) for i in range(70000)]
    assert len(set(addresses)) == len(addresses)
    assert all(1 <= int(a.rsplit(".", 1)[1]) <= 250 for a in addresses)


@pytest.mark.parametrize("kwargs, rule", [
    ({"link_bandwidth": "25Mbps", "scale": 1.0}, "not both"),
    ({"link_bandwidth": "1Tbps"}, "emulated rates must be"),
    ({"link_bandwidth": "1bps"}, "emulated rates must be"),
    ({"mtu": 100}, "MTU must be"),
    ({"latency": "20s"}, "0..10 s"),
    ({"cpu_share": 0.0}, "cpu_share"),
])
def test_bad_settings_are_refused_before_anything_is_built(kwargs, rule):
    with pytest.raises(SpecError, match=rule):
        EmulatedNetwork("ring:4", **kwargs)


@pytest.mark.parametrize("kwargs, error, rule", [
    ({"mtu": 1500.5}, InputTypeError, r"the MTU \(bytes\) must be an integer"),
    ({"scale": "fast"}, InputTypeError, "scale must be a number"),
    ({"scale": 0}, UnsupportedError, "scale must be > 0"),
])
def test_bad_numbers_are_refused_by_kind_and_range(kwargs, error, rule):
    with pytest.raises(error, match=rule):
        EmulatedNetwork("ring:4", **kwargs)


def test_ranks_that_cannot_reach_each_other_are_refused():
    t = Topology(3, [0, 1], [1, 2])
    with pytest.raises(TopologyError, match="no path from node 1 to node 0"):
        NetworkPlan(t, scale=1e-3)


def test_torch_ring_on_a_torus_is_the_one_link_ring():
    """Rank-order ring flows on torus:4x4 never share a link under dimension-order routes:
    2 (n-1)/n M over one link's rate."""
    plan = EmulatedNetwork("torus:4x4", link_bandwidth="25Mbps").plan
    m = 4 * 2**20
    got = torch_model_time("allreduce", plan, exact(), m)
    assert got == pytest.approx(2 * 15 / 16 * m / (RATE * (1 - ack_share(plan.mtu))))
    assert torch_model_time("allgather", plan, exact(), m) == pytest.approx(got / 2)
    assert torch_model_time("broadcast", plan, exact(), m) is None


def test_a_ring_across_a_shared_link_pays_for_the_sharing():
    """Cables 0-1-2-4-3-0: the rank-order ring's flows 2 -> 4 -> 3 and 4 -> 3 -> 0 share link
    4 -> 3, which carries two flows, so the ring takes twice its one-link time."""
    order = [0, 1, 2, 4, 3]
    src = [a for i, a in enumerate(order) for a in (order[i], order[(i + 1) % 5])]
    dst = [b for i, _ in enumerate(order) for b in (order[(i + 1) % 5], order[i])]
    plan = NetworkPlan(Topology(5, src, dst, bandwidth=RATE), scale=1.0)
    assert plan.routes.node_path(2, 3) == [2, 4, 3] and plan.routes.node_path(4, 0) == [4, 3, 0]
    m = 5e6
    got = torch_model_time("allreduce", plan, exact(), m)
    one_link = 2 * 4 / 5 * m / (RATE * (1 - ack_share(plan.mtu)))
    assert got == pytest.approx(2 * one_link)


def test_one_peer_gossip_on_a_switch_is_one_buffer_per_port():
    from topocoll.gossip import gossip_topology

    plan = EmulatedNetwork("switch:16", link_bandwidth="25Mbps").plan
    m = 4 * 2**20
    topo = gossip_topology("one-peer-exp", 16)
    per = RATE * (1 - ack_share(plan.mtu))
    for k in range(topo.period):
        assert gossip_model_time(topo, k, plan, exact(), m) == pytest.approx(m / per)
    ratio = gossip_model_time(topo, 0, plan, exact(), m) / torch_model_time(
        "allreduce", plan, exact(), m)
    assert ratio == pytest.approx(16 / 30)


def test_latency_counts_per_step_and_per_hop():
    plan = EmulatedNetwork("switch:4", link_bandwidth="25Mbps").plan
    cal = exact(alpha=1e-3, hop_delay=5e-3)
    # every ring flow crosses the switch: 2 hops, alpha + hop_delay per step, 6 steps
    base = torch_model_time("allreduce", plan, exact(), 1e6)
    assert torch_model_time("allreduce", plan, cal, 1e6) == pytest.approx(base + 6 * 6e-3)


def test_the_schedule_model_is_the_link_model_on_the_emulated_links():
    from topocoll.schedule.linkmodel import simulate
    from topocoll.synth import generate

    s = generate("torus:4x4", "allreduce", "bfb")
    plan = EmulatedNetwork("torus:4x4", link_bandwidth="25Mbps").plan
    cal = Calibration(rate=RATE, goodput=0.9 * RATE, alpha=2e-5, hop_delay=0.0,
                      hop_delay_measured=True)
    got = schedule_model_time(s, plan, cal, 4 * 2**20)
    want = simulate(s, 4 * 2**20, alpha=2e-5,
                    link_bandwidth=0.9 * RATE * (1 - ack_share(plan.mtu))).time
    assert got == pytest.approx(want)
    assert np.allclose(link_goodputs(plan, cal), 0.9 * RATE * (1 - ack_share(plan.mtu)))
    # the bandwidth bound of the allreduce on 4 links per node
    assert got >= 2 * 15 / 16 * 4 * 2**20 / (4 * 0.9 * RATE)


def test_a_schedule_is_priced_only_on_its_own_network():
    from topocoll.synth import generate

    plan = EmulatedNetwork("hypercube:4", link_bandwidth="25Mbps").plan
    with pytest.raises(TopologyError, match="the network it was made for"):
        schedule_model_time(generate("torus:4x4", "allreduce", "bfb"), plan, exact(), 1e6)


@given(strongly_connected_digraphs(max_nodes=7, heterogeneous=False))
def test_flows_time_is_the_busiest_link_plus_the_longest_route(topo):
    t = topo.with_links(bandwidth=RATE, latency=0.0)
    plan = NetworkPlan(t, scale=1.0)
    n = t.num_nodes
    src = np.arange(n)
    dst = (src + 1) % n
    cal = exact(alpha=1e-4, hop_delay=1e-3)
    got = flows_model_time(plan, cal, src, dst, 1e5, 2)
    load = plan.routes.loads(src, dst, np.full(n, 1e5))
    per = link_goodputs(plan, cal)
    hops = plan.routes.hops[src, dst]
    want = (load / per).max() + 2 * (1e-4 + (hops.max() - 1) * 1e-3)
    assert got == pytest.approx(want)


def test_gloos_allreduce_goes_against_a_one_way_ring():
    """gloo's allreduce sends to rank r - 1, its allgather to r + 1: on uniring:8 (links
    i -> i+1) every allreduce message goes seven hops, so all seven flows share every link;
    the allgather's go one hop each."""
    plan = NetworkPlan(topology("uniring:8", bandwidth=RATE), scale=1.0)
    m = 8e6
    per = RATE * (1 - ack_share(plan.mtu))
    assert torch_model_time("allreduce", plan, exact(), m) == pytest.approx(
        7 * 2 * 7 / 8 * m / per)
    assert torch_model_time("allgather", plan, exact(), m) == pytest.approx(7 / 8 * m / per)


@pytest.mark.parametrize("slowdown", [1, 4, 8])
def test_hierarchical_step_on_a_two_level_network_matches_its_closed_form(slowdown):
    """switch:16,4,S: 4 machines of 4 ranks, uplinks S times slower. One hierarchical step of
    one-peer-exp over the machines is (3/4 + S + 3/4) B / g: the reduce-scatter and the
    all-gather move 3/4 of the buffer over each rank's cable, and the 4 ranks of a machine send
    B/4 each through its one uplink; flat one-peer-exp (rank i with i xor 2^k) stays inside the
    machines for k = 0, 1 and sends 4 buffers through every uplink for k = 2, 3; gloo's ring all_reduce crosses each uplink once each way with 2 (n-1)/n
    of the buffer."""
    from topocoll.emulate.prediction import hierarchical_model_time
    from topocoll.gossip import gossip_topology

    plan = NetworkPlan(topology(f"switch:16,4,{slowdown}", bandwidth=1e6), scale=RATE / 1e6)
    alpha, hop = 3e-4, 1e-4
    cal = exact(alpha=alpha, hop_delay=hop)
    g = RATE * (1 - ack_share(plan.mtu))
    size = 4 << 20
    machines = gossip_topology("one-peer-exp", 4)
    for k in range(2):
        want = (1.5 + slowdown) * size / g + 2 * (alpha + hop) + alpha + 3 * hop
        assert hierarchical_model_time(machines, 4, k, plan, cal, size) == pytest.approx(want)
    flat = gossip_topology("one-peer-exp", 16)
    for k in range(4):
        hops = 2 if k < 2 else 4
        want = (1 if k < 2 else 4 * slowdown) * size / g + alpha + (hops - 1) * hop
        assert gossip_model_time(flat, k, plan, cal, size) == pytest.approx(want)
    ring = torch_model_time("allreduce", plan, exact(), size)
    assert ring == pytest.approx(slowdown * 2 * 15 / 16 * size / g)
    with pytest.raises(TopologyError, match="2 machines of 4 ranks"):
        hierarchical_model_time(gossip_topology("one-peer-exp", 2), 4, 0, plan, cal, size)
