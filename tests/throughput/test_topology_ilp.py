"""The topology ILP and the iterative one-commodity heuristic
(``topocoll.throughput.topology_ilp``) against brute force over every small d-regular digraph,
with every throughput recomputed by the link LP."""

import itertools

import numpy as np
import pytest
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import shortest_path

from topocoll.errors import SpecError
from topocoll.throughput import throughput
from topocoll.throughput.topology_ilp import (design_topology, iterative_design,
                                             moore_distance_sum)
from topocoll.topology import Topology


def regular_digraphs(n, d):
    """Every 0/1 matrix with a zero diagonal and all row and column sums ``d``."""
    rows = [r for r in itertools.combinations(range(n), d)]

    def go(i, cols, chosen):
        if i == n:
            yield list(chosen)
            return
        left = n - i
        for r in rows:
            if i in r or any(cols[j] >= d for j in r):
                continue
            new = list(cols)
            for j in r:
                new[j] += 1
            if any(d - c > left - 1 for c in new):   # column j can still reach d
                continue
            yield from go(i + 1, new, chosen + [r])

    for choice in go(0, [0] * n, []):
        yield [(i, j) for i, r in enumerate(choice) for j in r]


def regular_graphs(n, d):
    """Every simple undirected d-regular graph on n labelled nodes, as arc lists."""
    pairs = list(itertools.combinations(range(n), 2))
    for edges in itertools.combinations(pairs, n * d // 2):
        deg = np.zeros(n, int)
        for u, v in edges:
            deg[u] += 1
            deg[v] += 1
        if np.all(deg == d):
            yield [(u, v) for u, v in edges] + [(v, u) for u, v in edges]


def distance_sum(n, arcs):
    """Sum of hop distances (scipy's BFS), ``None`` when not strongly connected."""
    u, v = np.array(arcs).T
    adj = csr_matrix((np.ones(len(arcs)), (u, v)), shape=(n, n))
    dist = shortest_path(adj, unweighted=True)
    return float(dist.sum()) if np.isfinite(dist).all() else None


def lam(n, arcs):
    t = Topology(n, [a for a, _ in arcs], [b for _, b in arcs], 1.0)
    return throughput(t, method="link", bounds=False).lam


def up_to_isomorphism(n, graphs):
    """One arc list per isomorphism class of ``graphs`` (canonical form: the smallest
    adjacency bit string over all relabellings)."""
    graphs = list(graphs)
    adj = np.zeros((len(graphs), n, n), dtype=np.int64)
    for g, arcs in enumerate(graphs):
        adj[(g, *np.array(arcs).T)] = 1
    weights = 1 << np.arange(n * n, dtype=np.int64)
    best = np.full(len(graphs), np.iinfo(np.int64).max)
    for perm in itertools.permutations(range(n)):
        p = np.array(perm)
        best = np.minimum(best, adj[:, p][:, :, p].reshape(len(graphs), -1) @ weights)
    _, first = np.unique(best, return_index=True)
    return [graphs[i] for i in first]


def brute_force(n, graphs):
    """Best lambda over ``graphs`` (up to isomorphism): the link LP on every graph whose
    distance bound ``|arcs| / sum of distances`` (a theorem) can still beat the best so far."""
    scored = []
    for arcs in up_to_isomorphism(n, graphs):
        total = distance_sum(n, arcs)
        if total is not None:
            scored.append((len(arcs) / total, arcs))
    scored.sort(key=lambda x: -x[0])
    best, solved = 0.0, 0
    for bound, arcs in scored:
        if bound <= best + 1e-9:
            break
        best = max(best, lam(n, arcs))
        solved += 1
    return best


def check_design(res, n, d, bidirectional=False):
    t = res.topology
    assert t.num_nodes == n and t.num_links == n * d
    assert (t.out_degree() == d).all() and (t.in_degree() == d).all()
    assert len(set(zip(t.src.tolist(), t.dst.tolist()))) == n * d
    assert not np.any(t.src == t.dst)
    if bidirectional:
        assert t.is_bidirectional()
    assert lam(n, list(zip(t.src.tolist(), t.dst.tolist()))) == pytest.approx(res.lam, rel=1e-6)


@pytest.mark.parametrize("n, d", [(3, 1), (4, 2), (5, 2), (5, 3), (6, 2)])
def test_ilp_matches_brute_force_directed(n, d):
    res = design_topology(n, d)
    assert res.status_name == "SUCCESS"
    check_design(res, n, d)
    assert res.lam == pytest.approx(brute_force(n, regular_digraphs(n, d)), rel=1e-6)
    assert res.upper_bound == pytest.approx(res.lam, rel=1e-5)


@pytest.mark.parametrize("n, d", [(4, 2), (6, 3)])
def test_ilp_matches_brute_force_bidirectional(n, d):
    res = design_topology(n, d, bidirectional=True)
    check_design(res, n, d, bidirectional=True)
    assert res.lam == pytest.approx(brute_force(n, regular_graphs(n, d)), rel=1e-6)


def test_known_small_optima():
    # K_{3,3} (distance sum 7 per node): 18 / 42 = 3/7; 5 nodes of degree 2: 1/3
    assert design_topology(6, 3, bidirectional=True).lam == pytest.approx(3 / 7)
    assert design_topology(5, 2, bandwidth=3.0).lam == pytest.approx(1.0)
    # 6 nodes of degree 2: 5/21, the best of the 23 classes (brute force, the slow test)
    assert design_topology(6, 2).lam == pytest.approx(5 / 21)


def test_moore_distance_sum():
    assert moore_distance_sum(8, 2) == 2 * 1 + 4 * 2 + 1 * 3
    assert moore_distance_sum(10, 3, bidirectional=True) == 3 + 6 * 2   # Petersen
    assert moore_distance_sum(5, 1) == 1 + 2 + 3 + 4
    assert moore_distance_sum(5, 1, bidirectional=True) == float("inf")


@pytest.fixture(scope="module")
def best_6_2():
    return design_topology(6, 2).lam


@pytest.mark.parametrize("seed", [0, 3])
def test_iterative_is_regular_reproducible_and_below_the_optimum(seed, best_6_2):
    res = iterative_design(6, 2, seed=seed)
    assert res.status_name == "NOT_PROVEN" and res.method == "iterative"
    check_design(res, 6, 2)
    assert res.lam <= best_6_2 + 1e-9
    if seed == 0:
        again = iterative_design(6, 2, seed=seed)
        assert again.edges == res.edges and again.lam == res.lam


def test_bad_input():
    with pytest.raises(SpecError, match="at most nodes - 1"):
        design_topology(4, 4)
    with pytest.raises(SpecError, match="must be even"):
        design_topology(5, 3, bidirectional=True)
    with pytest.raises(SpecError, match="nodes <= 12"):
        design_topology(13, 2)
    with pytest.raises(ValueError):
        iterative_design(1, 1)


def test_the_reported_eight_node_optimum_has_lambda_three_twentieths():
    # design_topology(8, 2) proved this optimal (about half an hour: not rerun here); its
    # throughput, checked here, is what docs/alltoall.md reports
    edges = [(0, 1), (0, 2), (1, 4), (1, 6), (2, 3), (2, 7), (3, 4), (3, 5), (4, 5), (4, 7),
             (5, 1), (5, 2), (6, 0), (6, 3), (7, 0), (7, 6)]
    assert lam(8, edges) == pytest.approx(3 / 20, rel=1e-6)
    assert distance_sum(8, edges) == 106 and moore_distance_sum(8, 2) * 8 == 104
