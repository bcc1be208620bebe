"""Metrics against networkx on random small digraphs, and small known tables."""

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topocoll.errors import NotStronglyConnectedError, TopologyError
from topocoll.topology import (Topology, circulant_graph, degree_summary, diameter,
                               distance_matrix, eccentricity, generalized_kautz_graph,
                               hypercube_graph, is_strongly_connected, kautz_graph, mesh_graph,
                               moore_depth, require_strongly_connected, ring_graph, topology,
                               torus_graph, uniring_graph, unreachable_pair)


@st.composite
def digraphs(draw):
    """A small random directed multigraph without self-loops, as a Topology."""
    n = draw(st.integers(1, 8))
    pairs = st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)).filter(lambda p: p[0] != p[1])
    edges = draw(st.lists(pairs, max_size=3 * n)) if n > 1 else []
    src = [u for u, _ in edges]
    dst = [v for _, v in edges]
    return Topology(n, src, dst)


def nx_of(t):
    g = nx.DiGraph()
    g.add_nodes_from(range(t.num_nodes))
    g.add_edges_from(zip(t.src.tolist(), t.dst.tolist()))
    return g


@settings(max_examples=100, deadline=None)
@given(digraphs())
def test_distance_matrix_matches_networkx_shortest_paths(t):
    g = nx_of(t)
    dist = distance_matrix(t)
    assert dist.shape == (t.num_nodes, t.num_nodes) and dist.dtype == np.int32
    lengths = dict(nx.all_pairs_shortest_path_length(g))
    for u in range(t.num_nodes):
        for v in range(t.num_nodes):
            assert dist[u, v] == lengths[u].get(v, -1)


@settings(max_examples=100, deadline=None)
@given(digraphs())
def test_strong_connectivity_and_unreachable_pair_match_networkx(t):
    g = nx_of(t)
    strongly = nx.is_strongly_connected(g)
    assert is_strongly_connected(t) == strongly
    pair = unreachable_pair(t)
    if strongly:
        assert pair is None
        assert diameter(t) == (nx.diameter(g) if t.num_nodes > 1 else 0)
        require_strongly_connected(t)          # does not raise
    else:
        u, v = pair
        assert u != v and not nx.has_path(g, u, v)
        with pytest.raises(NotStronglyConnectedError) as info:
            require_strongly_connected(t, "the test")
        assert info.value.pair == pair
        assert f"node {v} cannot be reached from node {u}" in str(info.value)
        with pytest.raises(NotStronglyConnectedError):
            diameter(t)


def test_distance_matrix_is_cached_and_read_only():
    t = torus_graph([3, 4])
    first = distance_matrix(t)
    assert distance_matrix(t) is first
    with pytest.raises(ValueError):
        first[0, 1] = 7


def test_disconnected_family_members_are_reported():
    t = circulant_graph(16, [4])            # four separate 4-cycles
    assert not is_strongly_connected(t)
    u, v = unreachable_pair(t)
    assert (v - u) % 4 != 0
    with pytest.raises(NotStronglyConnectedError, match=r"circulant:16:4"):
        diameter(t)
    assert not is_strongly_connected(generalized_kautz_graph(6, 1))   # i -> n-1-i pairs
    assert is_strongly_connected(topology("genkautz:50,3"))


MOORE = [((1, 3), 0), ((2, 1), 1), ((4, 3), 1), ((5, 3), 2), ((5, 2), 2), ((7, 2), 2),
         ((8, 2), 3), ((21, 4), 2), ((22, 4), 3), ((64, 4), 3), ((85, 4), 3), ((86, 4), 4),
         ((64, 1), 63), ((1000, 10), 3), ((1112, 10), 4), ((1, 0), 0)]


@pytest.mark.parametrize("args, depth", MOORE)
def test_moore_depth_table(args, depth):
    assert moore_depth(*args) == depth


def test_moore_depth_rejects_impossible_inputs():
    with pytest.raises(TopologyError, match=r"N >= 1"):
        moore_depth(0, 2)
    with pytest.raises(TopologyError, match=r"degree >= 1"):
        moore_depth(5, 0)


@pytest.mark.parametrize("make", [lambda: kautz_graph(2, 3), lambda: kautz_graph(3, 3),
                                  lambda: hypercube_graph(5), lambda: torus_graph([4, 4]),
                                  lambda: generalized_kautz_graph(50, 3)])
def test_diameter_is_at_least_the_moore_depth(make):
    t = make()
    assert diameter(t) >= moore_depth(t.num_nodes, int(t.out_degree().max()))


def test_kautz_is_within_one_step_of_the_moore_depth():
    # K(d, k) has diameter k and nearly the Moore bound's node count
    for d, k in [(2, 3), (3, 2), (4, 3)]:
        t = kautz_graph(d, k)
        assert diameter(t) == k
        assert moore_depth(t.num_nodes, d) in (k - 1, k)


def test_eccentricity_out_and_in():
    t = uniring_graph(5)
    assert eccentricity(t, 0) == 4 and eccentricity(t, 0, direction="in") == 4
    m = mesh_graph([3, 3])
    assert eccentricity(m, 0) == 4 and eccentricity(m, 4) == 2
    # a directed path closed by one long link back: out- and in-eccentricities differ
    d = Topology(4, [0, 1, 2, 3, 1], [1, 2, 3, 0, 0])
    assert eccentricity(d, 1) == 2                      # 1 -> 2 -> 3; 1 -> 0 directly
    assert eccentricity(d, 1, direction="in") == 3      # 2 -> 3 -> 0 -> 1


def test_degree_summary():
    assert degree_summary(mesh_graph([3, 3])) == {
        "out_min": 2, "out_max": 4, "in_min": 2, "in_max": 4, "regular": False}
    assert degree_summary(torus_graph([4, 6]))["regular"]
    assert degree_summary(ring_graph(2)) == {
        "out_min": 1, "out_max": 1, "in_min": 1, "in_max": 1, "regular": True}
    gk = degree_summary(generalized_kautz_graph(50, 3))
    assert (gk["out_min"], gk["out_max"], gk["regular"]) == (2, 3, False)
