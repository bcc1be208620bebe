"""The gossip topologies: weights and schedules against decent_dp's and Bluefog's own code
(re-implemented line by line in reference.py), stochasticity over world sizes, and errors."""

import math

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from topocoll.errors import InputTypeError, SpecError, TopologyError
from topocoll.gossip import (GOSSIP_TOPOLOGIES, GraphTopology, GroupTopology, analyze,
                             exact_average_after,
                             gossip_topology, is_column_stochastic, is_row_stochastic,
                             metropolis_hastings, one_peer_dynamic, register_gossip_topology,
                             same_mixing, stochasticity, unregister_gossip_topology)

from tests.helpers import strongly_connected_digraphs
from . import reference as ref

DOUBLY_STOCHASTIC = ["complete", "ring", "one-peer-exp", "exponential-graph",
                     "symmetric-exponential-graph", "ring-graph", "mesh-graph", "star-graph",
                     "fully-connected-graph", "one-peer-exponential-graph"]
LOCAL = ["alternating-exp-ring", "inner-outer-ring", "inner-outer-exponential"]
SYMMETRIC = ["complete", "ring", "one-peer-exp", "alternating-exp-ring",
             "symmetric-exponential-graph", "ring-graph", "mesh-graph", "star-graph",
             "fully-connected-graph"]


def divisor(n, draw_index):
    divs = [d for d in range(1, n + 1) if n % d == 0]
    return divs[draw_index % len(divs)]


def groups_matrix(n, groups):
    """decent_dp's update rule, written out per rank (not topocoll's vectorized build)."""
    w = np.zeros((n, n))
    for ranks, weight in groups:
        for i in ranks:
            if len(ranks) == 1:
                w[i, i] = 1.0
                continue
            for j in ranks:
                w[i, j] = weight if i == j else (1 - weight) / (len(ranks) - 1)
    return w


# ----------------------------------------------------------------------------- properties

@given(st.integers(2, 40), st.integers(0, 10))
def test_every_builtin_is_doubly_stochastic_and_nonnegative(n, pick):
    for name in DOUBLY_STOCHASTIC + LOCAL:
        params = {"local_size": divisor(n, pick)} if name in LOCAL else {}
        t = gossip_topology(name, n, **params)
        facts = stochasticity(t)
        assert facts["row_stochastic"] and facts["column_stochastic"], (name, n, params)
        assert facts["nonnegative"], (name, n)
        if name in SYMMETRIC:
            assert facts["symmetric"], (name, n)


@given(st.integers(2, 40), st.integers(0, 10))
def test_groups_cover_every_rank_once_and_give_the_matrix(n, pick):
    for name in ("complete", "ring", "one-peer-exp", "alternating-exp-ring"):
        params = {"local_size": divisor(n, pick)} if name == "alternating-exp-ring" else {}
        t = gossip_topology(name, n, **params)
        for k in range(t.period):
            groups = t.groups(k)
            ranks = sorted(r for rr, _ in groups for r in rr)
            assert ranks == list(range(n))
            np.testing.assert_allclose(t.matrix(k), groups_matrix(n, groups), atol=1e-15)


@settings(max_examples=15)
@given(st.integers(2, 16), st.integers(0, 10))
def test_neighbor_lists_agree_with_the_matrix(n, pick):
    for name in DOUBLY_STOCHASTIC + LOCAL:
        params = {"local_size": divisor(n, pick)} if name in LOCAL else {}
        t = gossip_topology(name, n, **params)
        for k in range(t.period):
            w = t.matrix(k)
            for rank in range(n):
                self_w, nbrs = t.in_neighbors(k, rank)
                row = np.zeros(n)
                row[rank] = self_w
                for src, weight in nbrs.items():
                    assert src != rank and weight != 0
                    row[src] = weight
                np.testing.assert_array_equal(row, w[rank])
                assert t.out_neighbors(k, rank) == [i for i in range(n)
                                                    if i != rank and w[i, rank] != 0]


def test_matrices_are_copies():
    t = gossip_topology("ring-graph", 5)
    w = t.matrix(0)
    w[:] = 0
    assert is_row_stochastic(t.matrix(0))


# ----------------------------------------------------------------------------- decent_dp

@pytest.mark.parametrize("k", range(1, 8))
def test_one_peer_exp_is_decent_dps_pairing(k):
    n = 2 ** k
    t = gossip_topology("one-peer-exp", n)
    theirs = ref.dd_one_peer_exp(n)
    assert t.period == len(theirs) == k
    for i, it in enumerate(theirs):
        assert t.groups(i) == ref.normalized(it)


def test_exp_is_an_alias_of_one_peer_exp():
    assert same_mixing(gossip_topology("exp", 16), gossip_topology("one-peer-exp", 16))
    assert "exp" in GOSSIP_TOPOLOGIES["one-peer-exp"].aliases


@given(st.integers(1, 30).map(lambda h: 2 * h))
def test_even_ring_is_decent_dps_ring(n):
    t = gossip_topology("ring", n)
    theirs = ref.dd_ring(n)
    assert t.period == 2
    for i, it in enumerate(theirs):
        assert t.groups(i) == ref.normalized(it)


@given(st.integers(1, 20).map(lambda h: 2 * h + 1))
def test_odd_ring_pairs_ring_neighbours_and_covers_the_cycle(n):
    t = gossip_topology("ring", n)
    assert t.period == 3
    used = set()
    for k in range(3):
        pairs = [r for r, _ in t.groups(k) if len(r) == 2]
        assert len(pairs) == (n - 1) // 2  # a maximum matching: one rank sits out
        for a, b in pairs:
            assert (b - a) % n in (1, n - 1)
            used.add(frozenset((a, b)))
    assert used == {frozenset((i, (i + 1) % n)) for i in range(n)}
    assert analyze(t).rho < 1


@pytest.mark.parametrize(("nodes", "local"), [(2, 1), (2, 3), (4, 1), (4, 2), (8, 4), (16, 2),
                                              (32, 1)])
def test_alternating_exp_ring_is_decent_dps_schedule(nodes, local):
    n = nodes * local
    t = gossip_topology("alternating-exp-ring", n, local_size=local)
    theirs = ref.dd_alternating_exp_ring(n, local)
    assert t.period == len(theirs)
    for i, it in enumerate(theirs):
        assert t.groups(i) == ref.normalized(it)


@settings(max_examples=15)
@given(st.integers(1, 4), st.integers(1, 4))
def test_alternating_exp_ring_exact_after_one_period_for_power_of_two_nodes(k, local):
    t = gossip_topology("alternating-exp-ring", 2 ** k * local, local_size=local)
    assert t.period == 2 * k
    assert exact_average_after(t) == 2 * k


def test_alternating_exp_ring_unstaggered_goes_intra_then_inter():
    t = gossip_topology("alternating-exp-ring", 12, local_size=3, stagger=False)
    assert all(len(r) == 3 for r, _ in t.groups(0))
    assert all(len(r) == 6 for r, _ in t.groups(1))
    assert t.groups(0) != gossip_topology("alternating-exp-ring", 12, local_size=3).groups(0)


def test_alternating_exp_ring_on_one_node_is_the_node_average():
    t = gossip_topology("alternating-exp-ring", 4, local_size=4)
    assert same_mixing(t, gossip_topology("complete", 4))


# ----------------------------------------------------------------------------- Bluefog

@settings(max_examples=20)
@given(st.integers(2, 40))
def test_static_graphs_have_bluefogs_weights(n):
    cases = [("exponential-graph", {}, ref.bf_exponential_graph(n)),
             ("exponential-graph", {"base": 3}, ref.bf_exponential_graph(n, 3)),
             ("symmetric-exponential-graph", {}, ref.bf_symmetric_exponential_graph(n)),
             ("symmetric-exponential-graph", {"base": 2},
              ref.bf_symmetric_exponential_graph(n, 2)),
             ("ring-graph", {}, ref.bf_ring_graph(n)),
             ("ring-graph", {"connect_style": 1}, ref.bf_ring_graph(n, 1)),
             ("ring-graph", {"connect_style": 2}, ref.bf_ring_graph(n, 2)),
             ("mesh-graph", {}, ref.bf_mesh_grid_2d(n)),
             ("star-graph", {}, ref.bf_star_graph(n)),
             ("star-graph", {"center": n - 1}, ref.bf_star_graph(n, n - 1)),
             ("fully-connected-graph", {}, ref.bf_fully_connected(n))]
    for name, params, graph in cases:
        theirs = GraphTopology.from_networkx(graph)
        assert same_mixing(gossip_topology(name, n, **params), theirs), (name, params, n)


def test_mesh_graph_shape_and_bluefog_prime_line():
    t = gossip_topology("mesh-graph", 12, shape="2x6")
    assert same_mixing(t, GraphTopology.from_networkx(ref.bf_mesh_grid_2d(12, (2, 6))))
    assert t.params["shape"] == "2x6"
    assert gossip_topology("mesh-graph", 7).params["shape"] == "1x7"
    assert gossip_topology("mesh-graph", 24).params["shape"] == "4x6"


def test_integer_power_test_where_bluefogs_float_log_fails():
    # Bluefog tests powers with int(math.log(x, base)), which misses 3**5 = 243.
    assert 3 ** int(math.log(243, 3)) != 243
    w = gossip_topology("exponential-graph", 300, base=3).matrix()
    assert w[243, 0] > 0 and w[243, 0] == w[1, 0]


@settings(max_examples=20)
@given(st.integers(2, 33))
def test_one_peer_exponential_graph_is_bluefogs_dynamic_schedule(n):
    t = gossip_topology("one-peer-exponential-graph", n)
    graph = ref.bf_exponential_graph(n)
    gens = [ref.bf_dynamic_one_peer(graph, r) for r in range(n)]
    for k in range(2 * t.period):
        for r in range(n):
            send, recv = next(gens[r])
            assert t.out_neighbors(k, r) == send
            self_w, nbrs = t.in_neighbors(k, r)
            assert sorted(nbrs) == sorted(recv)
            assert self_w == pytest.approx(1 / (len(recv) + 1))
            assert all(v == pytest.approx(1 / (len(recv) + 1)) for v in nbrs.values())


@pytest.mark.parametrize("base", ["ring-graph", "mesh-graph", "star-graph"])
def test_one_peer_graph_over_other_bases_is_bluefogs_rule(base):
    n = 9
    t = gossip_topology("one-peer-graph", n, base=base)
    graph = {"ring-graph": ref.bf_ring_graph, "mesh-graph": ref.bf_mesh_grid_2d,
             "star-graph": ref.bf_star_graph}[base](n)
    gens = [ref.bf_dynamic_one_peer(graph, r) for r in range(n)]
    for k in range(t.period + 3):
        for r in range(n):
            send, recv = next(gens[r])
            assert t.out_neighbors(k, r) == send
            assert sorted(t.in_neighbors(k, r)[1]) == sorted(recv)
    facts = stochasticity(t)
    assert facts["row_stochastic"]
    # Only a base where every rank receives equally often per iteration keeps the mean.
    assert facts["column_stochastic"] == (base == "ring-graph")


@settings(max_examples=15)
@given(st.integers(2, 6), st.integers(3, 6))
def test_inner_outer_schedules_are_bluefogs(machines, local):
    n = machines * local
    for name, gen in (("inner-outer-ring", ref.bf_inner_outer_ring),
                      ("inner-outer-exponential", ref.bf_inner_outer_expo2)):
        t = gossip_topology(name, n, local_size=local)
        gens = [gen(n, local, r) for r in range(n)]
        for k in range(2 * t.period):
            for r in range(n):
                send, recv = next(gens[r])
                assert t.out_neighbors(k, r) == send, (name, k, r)
                assert t.in_neighbors(k, r) == (0.5, {recv[0]: 0.5}), (name, k, r)


@given(st.integers(1, 9), st.integers(1, 9))
def test_inner_outer_schedules_work_where_bluefog_refuses(machines, local):
    # Bluefog asserts local_size > 2; a rank whose only target is itself sits out instead.
    for name in ("inner-outer-ring", "inner-outer-exponential"):
        if machines * local < 2:
            continue
        t = gossip_topology(name, machines * local, local_size=local)
        for w in t.matrices():
            assert is_row_stochastic(w) and is_column_stochastic(w)
            assert set(np.round(w[w > 0], 12)) <= {0.5, 1.0}


def test_networkx_round_trip_keeps_bluefogs_convention():
    t = gossip_topology("ring-graph", 5, connect_style=2)
    g = t.to_networkx()
    assert g[0][1]["weight"] == 0.5  # rank 0 sends to rank 1 ("right connection")
    assert t.in_neighbors(0, 1) == (0.5, {0: 0.5})
    assert same_mixing(GraphTopology.from_networkx(g), t)


@given(strongly_connected_digraphs(max_nodes=12, heterogeneous=False))
def test_metropolis_hastings_weights_are_symmetric_and_doubly_stochastic(net):
    a = net.adjacency().toarray()
    w = metropolis_hastings(a)
    edge = (a + a.T) > 0
    np.fill_diagonal(edge, False)
    assert np.allclose(w, w.T)
    assert is_row_stochastic(w) and is_column_stochastic(w)
    assert np.all(w >= 0)
    off = w.copy()
    np.fill_diagonal(off, 0)
    assert np.array_equal(off > 0, edge)  # exactly the graph's edges
    deg = edge.sum(axis=1)
    i, j = np.nonzero(edge)
    np.testing.assert_allclose(w[i, j], 1 / (np.maximum(deg[i], deg[j]) + 1))


def test_metropolis_hastings_on_a_network_spec():
    t = gossip_topology("metropolis-hastings", 16, network="torus:4x4")
    assert same_mixing(t, GraphTopology("mh", metropolis_hastings(
        nx.to_numpy_array(nx.grid_2d_graph(4, 4, periodic=True)))))
    with pytest.raises(SpecError, match="has 16 nodes, not n=8"):
        gossip_topology("metropolis-hastings", 8, network="torus:4x4")


# ----------------------------------------------------------------------------- errors

@pytest.mark.parametrize(("name", "n", "params", "match"), [
    ("ring", 1, {}, "ring needs n >= 2"),
    ("one-peer-exp", 1, {}, "needs n >= 2"),
    ("alternating-exp-ring", 12, {"local_size": 5}, "local_size must divide n"),
    ("alternating-exp-ring", 12, {}, "needs local_size="),
    ("alternating-exp-ring", 12, {"local_size": 0}, "local_size must be >= 1"),
    ("alternating-exp-ring", 12, {"local_size": 3, "stagger": "yes"}, "stagger"),
    ("inner-outer-ring", 10, {"local_size": 4}, "local_size must divide n"),
    ("exponential-graph", 8, {"base": 1}, "base must be >= 2"),
    ("ring-graph", 8, {"connect_style": 3}, "connect_style"),
    ("mesh-graph", 12, {"shape": "5x5"}, "must multiply to n=12"),
    ("mesh-graph", 12, {"shape": "axb"}, "ROWSxCOLS"),
    ("star-graph", 4, {"center": 4}, "center must be a rank"),
    ("complete", 0, {}, "complete needs n >= 1"),
    ("one-peer-exp", 8, {"local_size": 2}, "has no parameter 'local_size'"),
    ("one-peer-graph", 8, {"base": "ring"}, "needs a static base graph"),
    ("no-such-topology", 8, {}, "unknown gossip topology"),
    ("exponentail-graph", 8, {}, "did you mean exponential-graph"),
])
def test_no_valid_topology_is_a_clear_spec_error(name, n, params, match):
    with pytest.raises(SpecError, match=match):
        gossip_topology(name, n, **params)


def test_bad_world_size_types():
    with pytest.raises(InputTypeError):
        gossip_topology("ring", 8.0)
    with pytest.raises(InputTypeError):
        gossip_topology("ring", True)


@pytest.mark.parametrize(("iterations", "match"), [
    ([[((0, 1), 0.5), ((1, 2), 0.5)]], "rank 1 is in more than one group"),
    ([[((0, 1), 0.5)]], r"ranks \[2\] are in no group"),
    ([[((0, 1, 2), 1.5)]], r"must be in \[0, 1\]"),
    ([[((0, 1, 3), 0.5)]], "rank 3 is outside"),
    ([], "at least one iteration"),
    ([[((), 0.5), ((0, 1, 2), 0.5)]], "at least one rank"),
])
def test_group_topology_rejects_broken_groups(iterations, match):
    with pytest.raises(TopologyError, match=match):
        GroupTopology("bad", 3, iterations)


def test_graph_topology_rejects_bad_matrices():
    with pytest.raises(TopologyError, match="square"):
        GraphTopology("bad", np.ones((2, 3)))
    with pytest.raises(TopologyError, match="same size"):
        GraphTopology("bad", [np.eye(2), np.eye(3)])
    with pytest.raises(TopologyError, match="non-finite"):
        GraphTopology("bad", [[np.nan, 0], [0, 1]])
    with pytest.raises(TopologyError, match="lists itself"):
        GraphTopology.from_neighbors("bad", 2, [[(0.5, {0: 0.5}), (1.0, {})]])
    with pytest.raises(TopologyError, match="weights given for 1 ranks"):
        GraphTopology.from_neighbors("bad", 2, [{0: (1.0, {})}])


def test_from_neighbors_builds_bluefog_dynamic_weights():
    # Bluefog's dynamic example: avg_weight = 1/(len(from) + 1) for self and every sender.
    t = GraphTopology.from_neighbors("swap-shift", 3, [
        [(0.5, {2: 0.5}), (0.5, {0: 0.5}), (0.5, {1: 0.5})],
        [(1 / 3, {1: 1 / 3, 2: 1 / 3}), (1.0, {}), (0.5, {1: 0.5})]])
    assert t.period == 2 and not t.is_static
    assert stochasticity(t)["row_stochastic"]
    assert not stochasticity(t)["column_stochastic"]


# ----------------------------------------------------------------------------- registry

def test_register_a_user_topology_and_use_it_everywhere():
    @register_gossip_topology("test-shift-pairs", aliases=("test-sp",))
    def shift_pairs(size, shift=1):
        """Pairs (i, i + shift) for even i."""
        if size % 2:
            raise SpecError("test-shift-pairs needs even n")
        return GroupTopology("test-shift-pairs", size,
                             [[((i, (i + shift) % size), 0.5) for i in range(0, size, 2)]],
                             {"shift": shift})
    try:
        t = gossip_topology("test-sp", 6, shift=1)
        assert t.groups(0)[0] == ((0, 1), 0.5)
        assert GOSSIP_TOPOLOGIES["test-shift-pairs"].summary == "Pairs (i, i + shift) for even i."
        assert analyze(t).rho == pytest.approx(1.0)  # disconnected pairs never mix
        with pytest.raises(SpecError, match="needs even n"):
            gossip_topology("test-shift-pairs", 5)
        with pytest.raises(SpecError, match="already registered"):
            register_gossip_topology("test-shift-pairs")(shift_pairs)
        with pytest.raises(SpecError, match="already registered"):
            register_gossip_topology("other-name", aliases=("exp",))(shift_pairs)
        register_gossip_topology("test-shift-pairs", replace=True)(shift_pairs)
    finally:
        unregister_gossip_topology("test-shift-pairs")
    with pytest.raises(SpecError, match="unknown gossip topology"):
        gossip_topology("test-shift-pairs", 6)


def test_a_builder_returning_the_wrong_thing_is_caught():
    @register_gossip_topology("test-wrong-size")
    def wrong(size):
        return gossip_topology("complete", size + 1)
    try:
        with pytest.raises(TopologyError, match="made 5 ranks, not 4"):
            gossip_topology("test-wrong-size", 4)
    finally:
        unregister_gossip_topology("test-wrong-size")
    with pytest.raises(SpecError, match="plain words"):
        register_gossip_topology("bad name")


def test_one_peer_dynamic_refuses_huge_periods():
    w = np.zeros((40, 40))
    # Out-degrees 1..39 would need lcm(1..39) iterations.
    for r in range(1, 40):
        w[list(range(r)), r] = 1
    w += np.eye(40)
    with pytest.raises(SpecError, match="repeats only after"):
        one_peer_dynamic(GraphTopology("skewed", w))
