"""The vectorized ECMP loads and the one-source shortcut on Cayley graphs against a plain
per-source Brandes reference, on random multigraphs (with switches, unreachable nodes, deep
and shallow ones) and on Cayley families (Valiant's closed form against its two phases summed
literally is tests/throughput/test_valiant.py's)."""

from collections import deque

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topocoll.throughput import shortest_path_loads, valiant_throughput
from topocoll.topology import Topology, topology


def reference_loads(t, sources=None):
    """Per link, one unit from every rank source to every reachable rank target split evenly
    over the shortest link-paths: a breadth-first search and Brandes' back-propagation per
    source, in plain Python."""
    n, src, dst = t.num_nodes, t.src.tolist(), t.dst.tolist()
    out = [[] for _ in range(n)]
    for i, u in enumerate(src):
        out[u].append(i)
    ranks = [v not in set(t.switches) for v in range(n)]
    load = np.zeros(len(src))
    for s in (range(n) if sources is None else sources):
        if not ranks[s]:
            continue
        dist, sigma, order = {s: 0}, [0.0] * n, []
        sigma[s], queue = 1.0, deque([s])
        while queue:
            u = queue.popleft()
            order.append(u)
            for i in out[u]:
                v = dst[i]
                if v not in dist:
                    dist[v] = dist[u] + 1
                    queue.append(v)
                if dist[v] == dist[u] + 1:
                    sigma[v] += sigma[u]
        delta = [0.0] * n
        for v in reversed(order):
            for i in out[v]:
                w = dst[i]
                if dist.get(w) == dist[v] + 1:
                    c = sigma[v] / sigma[w] * (ranks[w] + delta[w])
                    load[i] += c
                    delta[v] += c
    return load


@st.composite
def multigraphs(draw):
    """Random directed multigraphs: some strongly connected (a cycle through every node
    first), some with switches, parallel links and long paths."""
    n = draw(st.integers(2, 12))
    cycle = draw(st.booleans())
    extra = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)),
                          max_size=3 * n))
    links = [(i, (i + 1) % n) for i in range(n)] if cycle else []
    links += [(a, b) for a, b in extra if a != b]
    if not links:
        links = [(0, 1)]
    switches = draw(st.sets(st.integers(0, n - 1), max_size=n // 3))
    bw = draw(st.lists(st.sampled_from([1.0, 2.0, 0.5]), min_size=len(links),
                       max_size=len(links)))
    src, dst = (np.array(c) for c in zip(*links))
    return Topology(n, src, dst, np.array(bw), 1e-6, switches=sorted(switches))


@settings(max_examples=60, deadline=None)
@given(t=multigraphs(), symmetry=st.booleans())
def test_loads_equal_the_reference_on_random_multigraphs(t, symmetry):
    assert np.allclose(shortest_path_loads(t, symmetry=symmetry), reference_loads(t),
                       rtol=1e-12, atol=1e-12)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(6, 30), d=st.integers(2, 5), seed=st.integers(0, 1000))
def test_random_regular_graphs_agree_and_meet_the_closed_form(n, d, seed):
    n += n * d % 2
    t = topology(f"randomregular:{n},{d}:{seed}", bandwidth=1.0)
    fast, slow = valiant_throughput(t), valiant_throughput(t, symmetry=False)
    ref = reference_loads(t)
    lam_sp = 1.0 / ref.max()
    for res in (fast, slow):
        assert np.allclose(res.betweenness, ref, rtol=1e-12)
        assert res.lam_shortest == pytest.approx(lam_sp, rel=1e-12)
        assert res.lam == pytest.approx(lam_sp * n / (2 * (n - 1)), rel=1e-12)


CAYLEY = ["ring:9", "ring:10", "hypercube:4", "hypercube:6", "complete:7", "torus:4x6",
          "torus:2x4:double", "torus:3x3x3", "circulant:13:1,5", "circulant:16:1,4,6",
          "dcirculant:16:1,6", "metacyclic:8,2,7:1.0,3.1,0.1,6.0", "borelcayley:7,3",
          "lps:3,5", "lps:5,7", "spectralfly:3,7", "ring:61", "uniring:30", "paley:13",
          "hamming:3,3", "twistedtorus:4x4x8", "shiftedring:10", "optcirculant:25",
          "bipartite:4"]


@pytest.mark.parametrize("spec", CAYLEY)
def test_cayley_families_take_the_shortcut_and_agree(spec):
    t = topology(spec, bandwidth=1.0)
    fast, slow = valiant_throughput(t), valiant_throughput(t, symmetry=False)
    assert fast.symmetric and not slow.symmetric
    ref = reference_loads(t)
    for res in (fast, slow):
        assert np.allclose(res.betweenness, ref, rtol=1e-12)
        assert res.lam_shortest == pytest.approx(1.0 / ref.max(), rel=1e-12)
        assert res.utilization.max() == pytest.approx(1.0)
    assert fast.lam == pytest.approx(slow.lam, rel=1e-12)


@pytest.mark.parametrize("spec", ["dragonfly:3,1", "kautz:2,3", "zigzag(complete:5,ring:4)",
                                  "randomregular:12,3:5", "switch:4", "switchswitch:4,2"])
def test_other_topologies_take_the_general_path(spec):
    t = topology(spec, bandwidth=1.0)
    res = valiant_throughput(t)
    assert not res.symmetric
    assert np.allclose(res.betweenness, reference_loads(t), rtol=1e-12)


def test_a_cayley_graph_with_shuffled_links_is_still_proven_or_left_alone():
    # the link order no longer follows the generators: the shortcut must not guess
    t = topology("lps:3,5", bandwidth=1.0)
    perm = np.random.default_rng(1).permutation(t.num_links)
    shuffled = Topology(t.num_nodes, t.src[perm], t.dst[perm], 1.0, 1e-6)
    res = valiant_throughput(shuffled)
    assert np.allclose(res.betweenness, reference_loads(shuffled), rtol=1e-12)


def test_non_uniform_bandwidth_on_a_cayley_graph():
    t = topology("torus:4x4", bandwidth=1.0)
    bw = np.ones(t.num_links)
    bw[3] = 0.25                                       # one slow link: it is the bottleneck
    t2 = Topology(t.num_nodes, t.src, t.dst, bw, 1e-6)
    ref = reference_loads(t2)
    res = valiant_throughput(t2)
    assert res.lam_shortest == pytest.approx(float(np.min(bw / ref)), rel=1e-12)
    assert res.utilization.argmax() == 3


def test_lps_shortcut_at_a_thousand_nodes_matches_the_blocks():
    t = topology("lps:3,13", bandwidth=1.0)
    fast, slow = valiant_throughput(t), valiant_throughput(t, symmetry=False)
    assert fast.symmetric and fast.num_nodes == 1092
    assert np.allclose(fast.betweenness, slow.betweenness, rtol=1e-12)
    assert fast.lam == pytest.approx(slow.lam, rel=1e-12)


def test_deep_topology_with_switches_walks_each_source():
    # a 60-node bidirectional ring, every fifth node a switch: depth 30, past the dense levels
    t0 = topology("ring:60", bandwidth=1.0)
    t = Topology(60, t0.src, t0.dst, 1.0, 1e-6, switches=list(range(0, 60, 5)))
    res = valiant_throughput(t)
    ref = reference_loads(t)
    assert not res.symmetric and np.allclose(res.betweenness, ref, rtol=1e-12)
    assert res.lam_shortest == pytest.approx(1.0 / ref.max(), rel=1e-12)
    assert res.num_nodes == 48
