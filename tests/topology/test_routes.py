"""Static shortest-path routes: every route is a shortest path of existing links, the choice at
every hop is the lowest-numbered link that gets closer, and loads add up the bytes of the
messages that cross each link."""

import numpy as np
import pytest
from hypothesis import given

from topocoll.errors import NotStronglyConnectedError
from topocoll.topology import Topology, distance_matrix, topology
from topocoll.topology.routes import shortest_routes
from tests.helpers import strongly_connected_digraphs


@given(strongly_connected_digraphs(max_nodes=8))
def test_every_route_is_a_shortest_path_of_existing_links(topo):
    r = shortest_routes(topo)
    dist = distance_matrix(topo)
    n = topo.num_nodes
    for u in range(n):
        for v in range(n):
            links = r.link_path(u, v)
            assert len(links) == dist[u, v] == r.hops[u, v]
            at = u
            for link in links:
                assert topo.src[link] == at
                at = int(topo.dst[link])
            assert at == v


@given(strongly_connected_digraphs(max_nodes=8))
def test_the_next_link_is_the_lowest_numbered_one_closer(topo):
    r = shortest_routes(topo)
    dist = distance_matrix(topo)
    for u in range(topo.num_nodes):
        for v in range(topo.num_nodes):
            if u == v:
                assert r.next_link[u, v] == -1
                continue
            closer = [i for i in range(topo.num_links) if topo.src[i] == u
                      and topo.dst[i] != u and dist[topo.dst[i], v] == dist[u, v] - 1]
            assert r.next_link[u, v] == min(closer)


@given(strongly_connected_digraphs(max_nodes=7))
def test_loads_are_the_bytes_of_the_messages_that_cross_each_link(topo):
    rng = np.random.default_rng(topo.num_links)
    n = topo.num_nodes
    src = rng.integers(0, n, size=12)
    dst = rng.integers(0, n, size=12)
    nbytes = rng.random(12)
    r = shortest_routes(topo)
    expected = np.zeros(topo.num_links)
    for s, d, b in zip(src, dst, nbytes):
        for link in r.link_path(s, d):
            expected[link] += b
    assert np.allclose(r.loads(src, dst, nbytes), expected)


def test_tori_route_dimension_by_dimension():
    r = shortest_routes(topology("torus:4x4"))
    # rows first (the first dimension), then columns, wrapping where shorter
    assert r.node_path(0, 15) == [0, 12, 15]
    assert r.node_path(5, 10) == [5, 9, 10]
    assert r.node_path(3, 4) == [3, 7, 4]


def test_switches_forward():
    t = topology("switch:4")
    r = shortest_routes(t)
    assert r.node_path(0, 3) == [0, 4, 3]
    assert int(r.hops[1, 2]) == 2


def test_unreachable_pairs_are_named():
    t = Topology(3, [0, 1], [1, 2])     # nothing gets back to 0
    r = shortest_routes(t)
    assert r.next_link[2, 0] == -1 and r.hops[2, 0] == -1
    with pytest.raises(NotStronglyConnectedError, match="no path 2 -> 0"):
        r.link_path(2, 0)
    with pytest.raises(NotStronglyConnectedError, match="no path 1 -> 0"):
        r.loads([1], [0], [1.0])
