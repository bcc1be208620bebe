"""All-to-all LPs against closed forms (docs/math.md section 6), duality certificates checked
independently, primal feasibility of the returned flows and routes, and the bounds."""

from itertools import combinations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from topocoll.errors import InputTypeError, TopologyError, UnsupportedError
from topocoll.throughput import (certificate, link_throughput, hop_frontier,
                                     path_throughput, throughput)
from topocoll.topology import Topology, distance_matrix, topology
from topocoll.topology.cuts import (agnostic_bound, bisection_bound, distance_bound,
                                    injection_bound, moore_distance_sum)

from tests.helpers import strongly_connected_digraphs

REL = 1e-6
FEW = settings(max_examples=12, deadline=None,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

CLOSED_FORMS = [
    ("ring:6", 8 / 36), ("ring:8", 8 / 64), ("ring:5", 8 / 24), ("ring:7", 8 / 48),
    ("uniring:5", 2 / 20), ("uniring:8", 2 / 56),
    ("hypercube:3", 2 / 8), ("hypercube:4", 2 / 16), ("hypercube:5", 2 / 32),
    ("torus:4x4", 8 / (4 * 16)), ("torus:6x6", 8 / (6 * 36)), ("torus:4x4x4", 8 / (4 * 64)),
    ("complete:5", 1.0), ("complete:8", 1.0),
    ("bipartite:2", 2 / 4), ("bipartite:3", 3 / 7), ("bipartite:4", 4 / 10),
    ("bipartite:5", 5 / 13),
]


def unit(spec):
    return topology(spec, bandwidth=1.0)


def check_link_flows(t, res):
    """Independent primal check: capacities and flow conservation of every commodity."""
    psrc, pdst, cap, _ = t.pairs
    n = t.num_nodes
    f = res.flows
    assert f.shape == (n, psrc.size) and np.all(f >= 0)
    assert np.all(f.sum(axis=0) <= cap * (1 + REL) + 1e-12)
    inflow = np.zeros((n, n))
    outflow = np.zeros((n, n))
    for s in range(n):
        inflow[s] = np.bincount(pdst, weights=f[s], minlength=n)
        outflow[s] = np.bincount(psrc, weights=f[s], minlength=n)
    net = inflow - outflow
    off = ~np.eye(n, dtype=bool)
    np.testing.assert_allclose(net[off], res.lam, rtol=1e-5, atol=1e-9 * cap.max())
    np.testing.assert_allclose(np.diag(net), -(n - 1) * res.lam, rtol=1e-5,
                               atol=1e-9 * cap.max())


def check_routes(t, res, max_hops):
    """Independent check of path-LP routes: real paths, within the hop bound, shares sum to 1,
    and lambda is feasible for them."""
    psrc, pdst, cap, _ = t.pairs
    p = res.paths
    n = t.num_nodes
    dist = distance_matrix(t)
    for i in range(len(p)):
        edges = p.edges[p.ptr[i]:p.ptr[i + 1]]
        assert psrc[edges[0]] == p.src[i] and pdst[edges[-1]] == p.dst[i]
        assert np.all(pdst[edges[:-1]] == psrc[edges[1:]])
        if max_hops is not None:
            assert edges.size <= dist[p.src[i], p.dst[i]] + max_hops
    total = np.zeros((n, n))
    np.add.at(total, (p.src, p.dst), p.share)
    off = ~np.eye(n, dtype=bool)
    np.testing.assert_allclose(total[off], 1.0, rtol=1e-9)
    load = np.zeros(psrc.size)
    for i in range(len(p)):
        load[p.edges[p.ptr[i]:p.ptr[i + 1]]] += p.share[i] * res.lam
    assert np.all(load <= cap * (1 + 1e-9))


@pytest.mark.parametrize(("spec", "expected"), CLOSED_FORMS)
def test_link_lp_closed_forms(spec, expected):
    t = unit(spec)
    res = link_throughput(t)
    assert res.status == 0
    assert res.lam == pytest.approx(expected, rel=REL)
    # the certificate is recomputed from the dual lengths, and it is tight
    assert res.dual_bound == pytest.approx(expected, rel=REL)
    assert certificate(t, res.lengths) == pytest.approx(res.dual_bound, rel=1e-9)
    assert res.dual_bound >= res.lam * (1 - 1e-9)
    check_link_flows(t, res)
    assert res.time("1MiB") == pytest.approx(2**20 / t.num_nodes / expected, rel=REL)


@pytest.mark.parametrize("spec", ["ring:7", "hypercube:4", "torus:4x4", "complete:6",
                                  "bipartite:4", "uniring:6"])
def test_distance_bound_exact_on_arc_transitive(spec):
    t = unit(spec)
    assert distance_bound(t) == pytest.approx(link_throughput(t, bounds=False).lam, rel=REL)


def test_bipartite_shortest_paths_suffice():
    # 2-hop paths within a side reach n/(3n-2)
    for n in (3, 4, 5):
        r = path_throughput(unit(f"bipartite:{n}"), max_hops=0)
        assert r.lam == pytest.approx(n / (3 * n - 2), rel=REL)
        assert r.longest_path == 2


@FEW
@given(strongly_connected_digraphs(max_nodes=7))
def test_path_lp_unbounded_equals_link_lp_and_certificates(t):
    link = link_throughput(t, bounds=False)
    path = path_throughput(t, bounds=False)
    assert link.status == path.status == 0
    assert path.lam == pytest.approx(link.lam, rel=1e-5)
    check_link_flows(t, link)
    check_routes(t, path, None)
    # weak duality, checked independently: ANY lengths bound lambda from above
    rng = np.random.default_rng(0)
    for _ in range(3):
        lengths = rng.uniform(0.01, 1.0, size=t.pairs[0].size)
        assert certificate(t, lengths) >= link.lam * (1 - 1e-7)


@FEW
@given(strongly_connected_digraphs(max_nodes=7), st.integers(0, 2))
def test_hop_bound_is_monotone_and_respected(t, extra):
    r = path_throughput(t, max_hops=extra, bounds=False)
    more = path_throughput(t, max_hops=extra + 1, bounds=False)
    link = link_throughput(t, bounds=False)
    assert r.status == 0
    check_routes(t, r, extra)
    assert r.lam <= more.lam * (1 + 1e-6)
    assert more.lam <= link.lam * (1 + 1e-6)
    # hop-bounded certificate: lengths from the duals bound the hop-bounded optimum
    assert r.dual_bound >= r.lam * (1 - 1e-9)


def _brute_bisection(t):
    n = t.num_nodes
    psrc, pdst, cap, _ = t.pairs
    best = np.inf
    for k in {n // 2, n - n // 2}:
        for side in combinations(range(n), k):
            s = np.zeros(n, dtype=bool)
            s[list(side)] = True
            best = min(best, cap[s[psrc] & ~s[pdst]].sum() / (k * (n - k)))
    return best


@FEW
@given(strongly_connected_digraphs(max_nodes=9))
def test_bounds_hold_and_exact_bisection_is_minimal(t):
    lam = link_throughput(t, bounds=False).lam
    exact = bisection_bound(t)
    assert exact.method == "exact"
    assert exact.bound == pytest.approx(_brute_bisection(t), rel=1e-12)
    spectral = bisection_bound(t, exact_limit=0)
    assert spectral.method == "spectral"
    # a spectral cut is a real cut: a valid, never tighter, bound
    assert spectral.bound >= exact.bound * (1 - 1e-12)
    side = spectral.side
    psrc, pdst, cap, _ = t.pairs
    k = int(side.sum())
    assert spectral.cut == pytest.approx(cap[side[psrc] & ~side[pdst]].sum())
    assert spectral.bound == pytest.approx(spectral.cut / (k * (t.num_nodes - k)))
    for b in (exact.bound, spectral.bound, distance_bound(t), agnostic_bound(t),
              injection_bound(t)):
        assert lam <= b * (1 + 1e-6)


def test_spectral_bisection_large_graph_is_valid():
    t = unit("randomregular:200,4")
    b = bisection_bound(t)
    assert b.method == "spectral" and b.side.sum() == 100
    assert b.width_lower is not None and b.width_lower <= 2 * b.cut + 1e-9
    psrc, pdst, cap, _ = t.pairs
    assert b.cut == pytest.approx(cap[b.side[psrc] & ~b.side[pdst]].sum())
    # Fiedler + swaps finds a far better cut than a random half on an expander? at least no
    # worse than the average random bisection
    rng = np.random.default_rng(1)
    cuts = []
    for _ in range(20):
        s = np.zeros(200, dtype=bool)
        s[rng.permutation(200)[:100]] = True
        cuts.append(cap[s[psrc] & ~s[pdst]].sum())
    assert b.cut <= np.mean(cuts)


def test_moore_distance_sum_and_agnostic_bound():
    assert moore_distance_sum(2, 1) == 1
    assert moore_distance_sum(5, 2) == 2 + 2 * 2
    # a Moore graph attains the agnostic bound: the Petersen graph (N=10, d=3, diameter 2)
    t = topology("drg:petersen", bandwidth=1.0)
    assert link_throughput(t, bounds=False).lam == pytest.approx(agnostic_bound(t), rel=REL)


def test_pareto_frontier_reaches_the_link_optimum():
    t = unit("genkautz:12,2")
    points = hop_frontier(t)
    lams = [p["lambda"] for p in points]
    assert all(a <= b * (1 + 1e-6) for a, b in zip(lams, lams[1:]))
    assert points[-1]["max_hops"] is None
    assert points[-2]["lambda"] == pytest.approx(points[-1]["lambda"], rel=1e-5)
    assert points[0]["lambda"] < points[-1]["lambda"] * (1 - 1e-3)


def test_bandwidth_scales_lambda_and_heterogeneous_links():
    t = topology("torus:4x4", bandwidth=25e9)
    assert throughput(t, bounds=False).lam == pytest.approx(0.125 * 25e9, rel=REL)
    assert throughput("torus:4x4", bandwidth=1, bounds=False).lam == pytest.approx(0.125,
                                                                                  rel=REL)
    # doubling one direction of a uniring's links doubles lambda
    fast = Topology(5, [0, 1, 2, 3, 4], [1, 2, 3, 4, 0], bandwidth=2.0)
    assert throughput(fast, bounds=False).lam == pytest.approx(2 * 2 / 20, rel=REL)


def test_disconnected_and_bad_input():
    t = Topology(4, [0, 1, 2], [1, 0, 3], bandwidth=1.0)
    r = throughput(t)
    assert r.status == 4 and r.lam == 0.0 and r.time(1) == float("inf")
    with pytest.raises(UnsupportedError):
        throughput(unit("ring:4"), method="link", max_hops=1)
    with pytest.raises(UnsupportedError, match="max_hops .* must be >= 0"):
        throughput(unit("ring:4"), max_hops=-1)
    with pytest.raises(InputTypeError, match="max_hops .* must be an integer"):
        throughput(unit("ring:4"), max_hops=1.5)
    with pytest.raises(TopologyError):
        throughput(Topology(1, [], []))


def test_utilization_is_per_link_and_consistent():
    t = topology("bipartite:3", bandwidth=1.0)
    r = throughput(t)
    assert r.utilization.shape == (t.num_links,)
    assert r.utilization.max() == pytest.approx(1.0, rel=1e-6)
    assert r.link_load.sum() == pytest.approx(
        r.lam * distance_matrix(t).sum(), rel=1e-5)   # shortest routes only on K(3,3)


def test_pdlp_solver_agrees():
    r = throughput(unit("hypercube:3"), solver="pdlp", bounds=False, tolerance=1e-3)
    assert r.lam == pytest.approx(0.25, rel=1e-3)
