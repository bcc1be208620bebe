"""The Diamond (``diamond:8``): the spec, its structure, and the exhaustive search over every
8-node 2-regular digraph that chose it (the claims of its module docstring)."""

import itertools

import networkx as nx
import numpy as np
import pytest

import topocoll as tc
from topocoll.errors import SpecError
from topocoll.finder.bfbcost import bfb_phases
from topocoll.synth.bfb import bfb_allreduce
from topocoll.throughput import throughput
from topocoll.topology import Topology, diameter, topology
from topocoll.topology.families import DIAMOND_HEADS, diamond_graph

N = 8


def _edges(t):
    return sorted(zip(t.src.tolist(), t.dst.tolist()))


def test_spec_forms_and_the_generator_agree():
    assert topology("diamond").name == topology("diamond:8").name == "diamond:8"
    assert _edges(topology("diamond")) == _edges(diamond_graph()) == sorted(
        (u, v) for u, heads in enumerate(DIAMOND_HEADS) for v in heads)
    with pytest.raises(SpecError, match="exactly 8 nodes, got 9"):
        topology("diamond:9")
    with pytest.raises(SpecError, match="not a whole number"):
        topology("diamond:x")


def test_structure_two_regular_simple_diameter_three_mirror_symmetric():
    t = diamond_graph()
    edges = _edges(t)
    assert len(set(edges)) == 16 and all(u != v for u, v in edges)
    assert set(t.out_degree().tolist()) == set(t.in_degree().tolist()) == {2}
    assert diameter(t) == 3
    g = nx.DiGraph(edges)
    assert sorted(nx.single_source_shortest_path_length(g, 0).values()) == [0, 1, 1, 2, 2, 2, 2, 3]
    sigma = t.meta["automorphism"]
    assert sorted((sigma[u], sigma[v]) for u, v in edges) == edges
    # not reverse-symmetric: its transpose is the other throughput-optimal class
    assert not nx.is_isomorphic(g, g.reverse())


def test_bfb_allreduce_is_verified_with_three_steps_and_t_b_one_per_phase():
    unit = diamond_graph().with_node_bandwidth(1.0)
    schedule = bfb_allreduce(unit)
    assert tc.verify(schedule).valid
    steps, _, beta = tc.schedule.cost.step_costs(schedule)
    assert int(steps.max()) == 6
    assert float(beta[steps <= 3].sum()) == pytest.approx(1.0)
    assert float(beta[steps > 3].sum()) == pytest.approx(1.0)


# ---------------------------------------------------------------------- the search
def _all_two_regular_digraphs():
    """Adjacency matrices of 8-node digraphs, in- and out-degree 2, no loop, no parallel link,
    with every isomorphism class among them: the first of the two permutations whose union the
    digraph is (Koenig) fixed to one representative per cycle type."""
    perms = np.array(list(itertools.permutations(range(N))))
    derangements = perms[(perms != np.arange(N)).all(axis=1)]
    out = []
    for parts in [(8,), (6, 2), (5, 3), (4, 4), (4, 2, 2), (3, 3, 2), (2, 2, 2, 2)]:
        first, start = [], 0
        for k in parts:
            first += [start + (i + 1) % k for i in range(k)]
            start += k
        second = derangements[(derangements != np.array(first)).all(axis=1)]
        a = np.zeros((len(second), N, N), dtype=np.int64)
        a[:, np.arange(N), first] = 1
        a[np.arange(len(second))[:, None], np.arange(N)[None, :], second] = 1
        out.append(a)
    return np.concatenate(out)


def _distances(a):
    """``(K, N, N)`` distances (N for unreachable) of a stack of adjacency matrices."""
    eye = np.eye(N, dtype=np.int64)
    dist = np.where(eye[None].astype(bool), 0, N).repeat(len(a), axis=0)
    reach = eye[None].repeat(len(a), axis=0)
    for k in range(1, N):
        reach = np.minimum(reach @ (eye + a), 1)
        dist = np.where((reach > 0) & (dist == N), k, dist)
    return dist


def _classes(stack):
    reps = []
    for a in stack:
        g = nx.DiGraph([tuple(e) for e in np.argwhere(a)])
        if not any(nx.is_isomorphic(g, h) for h in reps):
            reps.append(g)
    return reps


def _topo(g):
    src, dst = zip(*sorted(g.edges()))
    return Topology(N, np.array(src), np.array(dst), bandwidth=1.0)


@pytest.fixture(scope="module")
def space():
    a = _all_two_regular_digraphs()
    return a, _distances(a)


def test_the_diamond_and_its_transpose_are_the_only_throughput_optima(space):
    a, dist = space
    assert len(a) == 33192 and np.all(a.sum(axis=1) == 2) and np.all(a.sum(axis=2) == 2)
    total = np.where((dist < N).all(axis=(1, 2)), dist.sum(axis=(1, 2)), 10**6)
    assert total.min() == 106                    # so lambda <= 16/106 for every one of them
    assert 16 / 107 < 0.15                       # larger distance sums cannot reach 0.15
    best = [(throughput(_topo(g), bounds=False).lam, g) for g in _classes(a[total == 106])]
    top = max(lam for lam, _ in best)
    assert top == pytest.approx(0.15, abs=1e-7)
    winners = [g for lam, g in best if lam > top - 1e-7]
    diamond = nx.DiGraph(_edges(diamond_graph()))
    assert len(winners) == 2
    assert sorted([nx.is_isomorphic(w, diamond), nx.is_isomorphic(w, diamond.reverse())]
                  for w in winners) == [[False, True], [True, False]]


def test_bandwidth_optimal_bfb_gives_only_two_directed_circulants(space):
    a, dist = space
    # BFB needs >= diameter steps (>= 3: 1 + 2 + 4 < 8), and its T_B is at least
    # sum_t max_v #(sources at distance t from v) / N (the 2 in-links of v carry 1 together),
    # which is 7/8 only if every node has the same profile: the rest cannot be bandwidth-optimal
    ok = (dist.max(axis=(1, 2)) == 3)
    for axis in (1, 2):                          # allgather (in-) and reduce-scatter (out-)
        prof = np.stack([(dist == t).sum(axis=axis) for t in (1, 2, 3)], axis=1)
        ok &= (prof == prof[:, :, :1]).all(axis=(1, 2))
    optimal = []
    for g in _classes(a[ok]):
        c = bfb_phases(_topo(g))
        if max(c["t_b_ag"], c["t_b_rs"]) <= 7 / 8 + 1e-9:
            optimal.append(g)
    circulants = [nx.DiGraph(_edges(topology(s))) for s in ("dcirculant:8:1,3",
                                                            "dcirculant:8:1,6")]
    assert len(optimal) == 2
    assert all(any(nx.is_isomorphic(g, c) for g in optimal) for c in circulants)
    lams = [throughput(_topo(c), bounds=False).lam for c in circulants]
    assert lams == pytest.approx([1 / 7, 5 / 36], abs=1e-7)
    assert max(lams) < throughput(diamond_graph(), bandwidth=1.0, bounds=False).lam


def test_throughput_against_its_distance_bound():
    res = throughput(diamond_graph(), bandwidth=1.0)
    assert res.lam == pytest.approx(3 / 20, abs=1e-7)
    assert res.bounds["distance"] == pytest.approx(16 / 106)
    assert not nx.is_isomorphic(nx.DiGraph(_edges(diamond_graph())),
                                nx.DiGraph(_edges(topology("moddebruijn:8,2"))))
