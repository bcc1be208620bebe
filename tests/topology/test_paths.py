"""Shortest-path distances without scipy (topocoll.topology.paths): the numpy iteration gives
exactly scipy's Dijkstra values, hop counts and weighted, on random digraphs with parallel
links, self-loops, zero weights and sums that round differently in floating point; the
metrics built on it (connectivity, unreachable pairs) agree with scipy's components."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components, dijkstra, shortest_path

from topocoll.topology import paths
from topocoll.topology.metrics import unreachable_pair
from topocoll.topology.model import Topology

#: weights whose sums round differently depending on their order (0.1 + 0.2 != 0.3)
_WEIGHTS = st.sampled_from([0.0, 0.1, 0.2, 0.3, 0.7, 1.0, 1.5, 3.0, 1e-17, 1e16])


@st.composite
def digraphs(draw, max_nodes=12, weighted=True):
    n = draw(st.integers(1, max_nodes))
    m = draw(st.integers(0, 4 * n))
    src = np.array(draw(st.lists(st.integers(0, n - 1), min_size=m, max_size=m)), dtype=np.int64)
    dst = np.array(draw(st.lists(st.integers(0, n - 1), min_size=m, max_size=m)), dtype=np.int64)
    w = np.array(draw(st.lists(_WEIGHTS, min_size=m, max_size=m)), dtype=float) \
        if weighted else None
    k = draw(st.integers(1, n))
    sources = np.array(draw(st.lists(st.integers(0, n - 1), min_size=k, max_size=k)))
    return n, src, dst, w, sources


def _scipy_rows(n, src, dst, w, sources, transpose=False, min_only=False):
    """scipy's own answer, built here independently (parallel links: the cheapest)."""
    if transpose:
        src, dst = dst, src
    if w is None:
        keys = np.unique(src * n + dst)
        graph = csr_matrix((np.ones(keys.size), (keys // n, keys % n)), shape=(n, n))
        if min_only:
            return dijkstra(graph, indices=sources, unweighted=True, min_only=True)
        return shortest_path(graph, method="D", unweighted=True, indices=sources)
    best = {}
    for u, v, c in zip(src.tolist(), dst.tolist(), w.tolist()):
        best[u, v] = min(c, best.get((u, v), np.inf))
    rows, cols = (np.array([k[i] for k in best], dtype=np.int64) for i in (0, 1))
    graph = csr_matrix((np.array(list(best.values())), (rows, cols)), shape=(n, n))
    return dijkstra(graph, indices=sources, min_only=min_only)


@settings(max_examples=150, deadline=None)
@given(digraphs(), st.booleans(), st.booleans(), st.booleans())
def test_numpy_distances_equal_scipys(graph, weighted, transpose, min_only):
    n, src, dst, w, sources = graph
    w = w if weighted else None
    ours = paths.distances(n, src, dst, sources, weight=w, transpose=transpose,
                           min_only=min_only, budget=10**9)
    theirs = _scipy_rows(n, src, dst, w, sources, transpose, min_only)
    assert ours.shape == theirs.shape
    assert np.array_equal(ours, theirs)      # exactly: same floats, same inf


@settings(max_examples=60, deadline=None)
@given(digraphs(max_nodes=8))
def test_the_scipy_fallback_gives_the_same_values(graph):
    n, src, dst, w, sources = graph
    for weight in (w, None):
        fast = paths.distances(n, src, dst, sources, weight=weight, budget=10**9)
        slow = paths.distances(n, src, dst, sources, weight=weight, budget=0)
        assert np.array_equal(fast, slow)


def test_the_budget_hands_large_problems_to_scipy(monkeypatch):
    calls = []
    real = paths.scipy_distances
    monkeypatch.setattr(paths, "scipy_distances", lambda *a: calls.append(a) or real(*a))
    ring = np.arange(50)
    paths.distances(50, ring, (ring + 1) % 50, [0], budget=10**6)
    assert calls == []                      # 50 rounds of 50 links: within the budget
    paths.distances(50, ring, (ring + 1) % 50, [0], budget=1000)
    assert len(calls) == 1
    # 50 sources: one search from the first says all would take 50 x 50 x 50 updates
    many = paths.distances(50, ring, (ring + 1) % 50, ring, budget=10**5)
    assert len(calls) == 2
    assert np.array_equal(many, paths.distances(50, ring, (ring + 1) % 50, ring, budget=10**6))
    assert len(calls) == 2


def test_negative_weights_are_refused():
    with pytest.raises(ValueError, match="non-negative"):
        paths.distances(2, [0], [1], [0], weight=[-1.0])


@settings(max_examples=80, deadline=None)
@given(digraphs(max_nodes=9, weighted=False))
def test_unreachable_pair_agrees_with_strong_components(graph):
    n, src, dst, _, _ = graph
    keep = src != dst                        # a Topology has no self-loops
    t = Topology(n, src[keep], dst[keep], np.ones(int(keep.sum())), np.zeros(int(keep.sum())))
    adjacency = csr_matrix((np.ones(int(keep.sum())), (src[keep], dst[keep])), shape=(n, n))
    count, _ = connected_components(adjacency, directed=True, connection="strong")
    pair = unreachable_pair(t)
    assert (pair is None) == (count == 1)
    if pair is not None:
        u, v = pair
        assert np.isinf(shortest_path(adjacency, unweighted=True, indices=u)[v])


def test_the_registry_spells_the_distance_regular_names_as_the_family_module():
    """The registry lists drg names without importing their module; they must stay equal."""
    from topocoll.topology.families import DISTANCE_REGULAR_GRAPHS
    from topocoll.topology.specs import DRG_NAMES

    assert DRG_NAMES == tuple(DISTANCE_REGULAR_GRAPHS)


def test_registries_make_entries_on_first_use_with_the_right_names():
    from topocoll.synth import ALGORITHMS
    from topocoll.topology import FAMILIES

    assert all(g.name == name for name, g in ALGORITHMS.items())
    assert ALGORITHMS.get("nosuch") is None and "bfb" in ALGORITHMS
    assert FAMILIES["torus"].builder.resolve().__name__ == "torus_graph"
