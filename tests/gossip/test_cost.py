"""The per-iteration cost of gossip on a physical network: ECMP loads and path latencies against
a brute-force enumeration of all shortest paths (networkx), closed forms on rings, placements,
switches and errors."""

import math

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from topocoll.errors import NotStronglyConnectedError, SpecError, TopologyError
from topocoll.gossip import (gossip_cost, gossip_topology, iteration_messages,
                             iterations_to_accuracy, period_rho)
from topocoll.topology import Topology, topology

from tests.helpers import strongly_connected_digraphs

NAMES = ["ring", "one-peer-exp", "complete", "exponential-graph", "mesh-graph", "star-graph",
         "one-peer-exponential-graph"]


def brute_force(topo, net, k, size, group_mode="allreduce", place=None):
    """Per-pair loads and the latency term by enumerating every shortest path."""
    g = nx.DiGraph()
    g.add_nodes_from(range(net.num_nodes))
    psrc, pdst, pbw, plat = net.pairs
    for u, v, lat in zip(psrc.tolist(), pdst.tolist(), plat.tolist()):
        g.add_edge(u, v, latency=lat)
    place = np.arange(topo.size) if place is None else np.asarray(place)
    load = {}
    t_alpha = 0.0
    src, dst, nbytes, steps = iteration_messages(topo, k, size, group_mode)
    for s, d, b, st_ in zip(place[src], place[dst], nbytes, steps):
        if s == d:
            continue
        paths = list(nx.all_shortest_paths(g, int(s), int(d)))
        for p in paths:
            for u, v in zip(p, p[1:]):
                load[(u, v)] = load.get((u, v), 0.0) + b / len(paths)
        lat = max(sum(g[u][v]["latency"] for u, v in zip(p, p[1:])) for p in paths)
        t_alpha = max(t_alpha, st_ * lat)
    bw = dict(zip(zip(psrc.tolist(), pdst.tolist()), pbw.tolist()))
    t_beta = max((x / bw[e] for e, x in load.items()), default=0.0)
    return t_alpha, t_beta, load


@settings(max_examples=30)
@given(strongly_connected_digraphs(min_nodes=3, max_nodes=9), st.sampled_from(NAMES),
       st.sampled_from(["allreduce", "neighbor"]))
def test_loads_and_latencies_match_all_shortest_paths(net, name, group_mode):
    topo = gossip_topology(name, net.num_nodes)
    cost = gossip_cost(topo, net, 1000.0, group_mode=group_mode)
    assert len(cost.iterations) == topo.period
    for it in cost.iterations:
        t_alpha, t_beta, load = brute_force(topo, net, it.iteration, 1000.0, group_mode)
        assert it.T_beta == pytest.approx(t_beta, rel=1e-9)
        assert it.T_alpha == pytest.approx(t_alpha, rel=1e-9)
        assert it.time == pytest.approx(t_alpha + t_beta, rel=1e-9)
        assert it.max_link_load == pytest.approx(load[it.bottleneck], rel=1e-9)


def test_ring_gossip_on_a_ring_network_is_one_hop():
    n, m, b, a = 10, 2**20, 1e9, 2e-6
    cost = gossip_cost("ring", f"ring:{n}", m, alpha=a, link_bandwidth=b)
    for it in cost.iterations:
        assert it.max_hops == 1 and it.steps == 1 and it.messages == n
        assert it.T_beta == pytest.approx(m / b)
        assert it.T_alpha == pytest.approx(a)


@pytest.mark.parametrize("n", [3, 4, 7, 8, 16])
def test_complete_is_the_ring_allreduce_baseline(n):
    m, b, a = 2**20, 1e9, 1e-6
    it = gossip_cost("complete", f"ring:{n}", m, alpha=a, link_bandwidth=b).iterations[0]
    assert it.steps == 2 * (n - 1)
    assert it.T_beta == pytest.approx(2 * (n - 1) / n * m / b)
    assert it.T_alpha == pytest.approx(2 * (n - 1) * a)
    # every member to every other instead: n-1 full buffers leave each rank
    nb = gossip_cost("complete", f"ring:{n}", m, alpha=a, link_bandwidth=b,
                     group_mode="neighbor").iterations[0]
    assert nb.messages == n * (n - 1) and nb.T_beta > it.T_beta * (n > 3)


def test_one_peer_exp_on_a_hypercube_uses_each_dimension_once():
    m, b = 1e6, 1e9
    cost = gossip_cost("one-peer-exp", "hypercube:4", m, alpha=0.0, link_bandwidth=b)
    assert [it.max_hops for it in cost.iterations] == [1, 1, 1, 1]
    assert all(it.T_beta == pytest.approx(m / b) for it in cost.iterations)


def test_ranks_per_node_makes_intra_node_groups_free():
    # alternating-exp-ring with local_size = ranks per node: intra-node iterations cost nothing.
    topo = gossip_topology("alternating-exp-ring", 16, local_size=4, stagger=False)
    cost = gossip_cost(topo, "ring:4", 1e6, ranks_per_node=4)
    times = [it.time for it in cost.iterations]
    assert times[0] == 0.0 and times[2] == 0.0
    assert cost.iterations[0].local_messages > 0 and cost.iterations[0].messages == 0
    assert times[1] > 0 and times[3] > 0
    # the named form builds the topology for endpoints x ranks_per_node ranks
    named = gossip_cost("alternating-exp-ring", "ring:4", 1e6, params={"local_size": 4,
                                                                       "stagger": False},
                        ranks_per_node=4)
    assert named.nodes == 16 and [i.time for i in named.iterations] == times


def test_explicit_placement_matches_brute_force():
    net = topology("torus:3x3")
    topo = gossip_topology("one-peer-exp", 9)
    place = np.random.default_rng(5).permutation(9)
    cost = gossip_cost(topo, net, 100.0, placement=place)
    for it in cost.iterations:
        t_alpha, t_beta, _ = brute_force(topo, net, it.iteration, 100.0, place=place)
        assert it.T_beta == pytest.approx(t_beta) and it.T_alpha == pytest.approx(t_alpha)


def test_switches_route_but_hold_no_ranks():
    # four endpoints on one switch (node 4): every message goes endpoint -> switch -> endpoint
    src = [0, 1, 2, 3, 4, 4, 4, 4]
    dst = [4, 4, 4, 4, 0, 1, 2, 3]
    net = Topology(5, src, dst, bandwidth=1e9, latency=1e-6, switches=[4], name="switch4")
    it = gossip_cost("fully-connected-graph", net, 1e6).iterations[0]
    assert it.max_hops == 2
    assert it.T_beta == pytest.approx(3 * 1e6 / 1e9)  # three buffers leave every endpoint
    assert it.T_alpha == pytest.approx(2e-6)


def test_cost_errors():
    with pytest.raises(TopologyError, match="16 ranks, but the gossip topology has 8"):
        gossip_cost(gossip_topology("ring", 8), "torus:4x4", 1e6)
    with pytest.raises(SpecError, match="positive"):
        gossip_cost("ring", "ring:4", 0)
    with pytest.raises(SpecError, match="group_mode"):
        gossip_cost("complete", "ring:4", 1e6, group_mode="tree")
    with pytest.raises(TopologyError, match="endpoints"):
        gossip_cost(gossip_topology("ring", 4), "ring:4", 1e6, placement=[0, 1, 2, 9])
    two_islands = Topology(4, [0, 1, 2, 3], [1, 0, 3, 2])
    with pytest.raises(NotStronglyConnectedError, match="no path"):
        gossip_cost("ring", two_islands, 1e6)


def test_iterations_to_accuracy():
    t = gossip_topology("ring-graph", 8)
    got = iterations_to_accuracy(t)
    assert got["iterations_to_accuracy"] == math.ceil(math.log(1e-6) / math.log(period_rho(t)))
    e = gossip_topology("one-peer-exp", 8)
    cost = gossip_cost(e, "hypercube:3", 1e6, alpha=0.0, link_bandwidth=1e9)
    got = iterations_to_accuracy(e, cost)
    assert got["iterations_to_accuracy"] == 3
    assert got["time_to_accuracy"] == pytest.approx(3 * 1e6 / 1e9)
    pairs = gossip_topology("one-peer-exp", 2)
    assert iterations_to_accuracy(pairs)["iterations_to_accuracy"] == 1


def test_hierarchical_messages_move_a_part_inside_and_between_machines():
    from topocoll.gossip import gossip_topology
    from topocoll.gossip.cost import hierarchical_messages

    machines, local, size = 4, 4, 64.0
    topo = gossip_topology("exponential-graph", machines)
    inside, between, gather = hierarchical_messages(topo, local, 0, size)
    assert all(np.array_equal(x, y) for x, y in zip(inside, gather))
    src, dst, nbytes, steps = inside
    assert src.size == machines * local * (local - 1)
    assert np.all(src // local == dst // local) and np.all(src != dst)
    assert np.all(nbytes == size / local) and np.all(steps == 1)
    sent = np.bincount(src, weights=nbytes)
    assert np.allclose(sent, (local - 1) / local * size)
    src, dst, nbytes, steps = between
    assert np.all(src % local == dst % local) and np.all(src // local != dst // local)
    w = topo.matrix(0)
    pairs = {(int(s) // local, int(d) // local) for s, d in zip(src, dst)}
    assert pairs == {(j, i) for i, j in zip(*np.nonzero(w)) if i != j}
    out_degree = np.count_nonzero(w, axis=0) - 1
    assert np.allclose(np.bincount(src, weights=nbytes),
                       np.repeat(out_degree, local) * size / local)
