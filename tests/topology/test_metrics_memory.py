"""Metrics in memory that grows with N: blocks of breadth-first searches, one search under a
translation group, and the all-pairs matrix only where it is asked for (and fits)."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from topocoll.errors import ResourceLimitError
from topocoll.topology import Topology, diameter, distance_matrix, eccentricity, topology
from topocoll.topology import metrics
from topocoll.topology.metrics import distance_sum
from topocoll.topology.paths import hop_distances

from tests.helpers import strongly_connected_digraphs


def _dense(t):
    fresh = Topology(t.num_nodes, t.src, t.dst, t.bandwidth, t.latency)
    return distance_matrix(fresh)


@settings(max_examples=60, deadline=None)
@given(strongly_connected_digraphs(max_nodes=12), st.integers(1, 5))
def test_blocked_searches_give_the_all_pairs_answers(t, rows_per_block):
    dense = _dense(t)
    with pytest.MonkeyPatch.context() as mp:   # a few rows per block: many blocks
        mp.setattr(metrics, "BLOCK_BYTES", 8 * t.num_nodes * rows_per_block)
        fresh = Topology(t.num_nodes, t.src, t.dst, t.bandwidth, t.latency)
        assert diameter(fresh) == dense.max()
        assert distance_sum(fresh) == dense.sum()
        assert "distance_matrix" not in fresh._cache        # never built for these
        for v in range(t.num_nodes):
            assert eccentricity(fresh, v) == dense[v].max()
            assert eccentricity(fresh, v, direction="in") == dense[:, v].max()
        assert np.array_equal(distance_matrix(fresh), dense)


@pytest.mark.parametrize("spec", ["ring:31", "torus:4x6", "hypercube:5", "circulant:40:1,7",
                                  "hamming:2,4", "uniring:9", "complete:7"])
def test_one_search_under_a_translation_group_is_exact(spec):
    t = topology(spec)
    dense = _dense(t)
    fresh = topology(spec)
    assert diameter(fresh) == dense.max() and distance_sum(fresh) == dense.sum()
    assert "distance_matrix" not in fresh._cache


def test_a_large_ring_needs_no_all_pairs_matrix(monkeypatch):
    monkeypatch.setenv("TOPOCOLL_MEMORY_LIMIT", "64MiB")     # 20000^2 int32 would be 1.6 GB
    t = topology("ring:20000")
    assert diameter(t) == 10_000 and eccentricity(t, 123, direction="in") == 10_000
    with pytest.raises(ResourceLimitError, match=r"distance matrix of ring:20000 .* needs about "
                                                 r"1\.\d+GiB, more than the memory limit of 64MiB"):
        distance_matrix(t)


def test_unreachable_pairs_are_found_without_the_matrix(monkeypatch):
    monkeypatch.setenv("TOPOCOLL_MEMORY_LIMIT", "1MiB")
    n = 3000
    src = np.arange(n - 1)                      # a path 0 -> 1 -> ... -> n-1 and back from 5
    t = Topology(n, np.r_[src, 5], np.r_[src + 1, 0])
    u, v = metrics.unreachable_pair(t)
    assert metrics.unreachable_pair(t) is not None and u != v
    reach = hop_distances(t, [u])[0]
    assert reach[v] == np.inf
