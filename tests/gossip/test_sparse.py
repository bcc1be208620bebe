"""The sparse analysis path (CSR matrices, period product as a sequence of products, Lanczos and
shift-invert for rho) against the dense one, closed forms at sizes the dense path cannot
reach cheaply, and the memory it needs."""

import math
import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings, strategies as st

import topocoll.gossip.spectrum as spectrum
from topocoll.errors import ResourceLimitError, UnsupportedError
from topocoll.gossip import (GOSSIP_TOPOLOGIES, GraphTopology, analyze, consensus_errors,
                             exact_average_after, gossip_topology, period_rho, rho,
                             same_mixing, stochasticity)
from topocoll.gossip.analysis import period_operator
from topocoll.limits import ENV

RHO_TOL = 1e-8


def build(name, n):
    """Every registered topology at ``n >= 2`` ranks, with parameters that fit ``n``."""
    params = {}
    if name in ("alternating-exp-ring", "inner-outer-ring", "inner-outer-exponential"):
        params = {"local_size": 2 if n % 2 == 0 else 1}
    elif name == "metropolis-hastings":
        params = {"network": f"ring:{n}"}
    return gossip_topology(name, n, **params)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(sorted(GOSSIP_TOPOLOGIES)), st.integers(2, 64))
def test_sparse_analysis_equals_the_dense_one(name, n):
    t = build(name, n)
    for k in range(t.period):
        w = t.sparse_matrix(k)
        assert sp.issparse(w) and w.format == "csr"
        np.testing.assert_array_equal(w.toarray(), t.matrix(k))
    dense = analyze(t, method="dense")
    fast = analyze(t, method="sparse")
    assert fast.rho == pytest.approx(dense.rho, abs=RHO_TOL)
    assert fast.rho_iterations == pytest.approx(dense.rho_iterations, abs=RHO_TOL)
    for key in ("status", "exact_average_after", "row_stochastic", "column_stochastic",
                "symmetric", "degree", "groups", "period"):
        assert getattr(fast, key) == getattr(dense, key), key
    # the dense degree count, independently of the sparse one
    w = t.matrix(0)
    off = (w != 0) & ~np.eye(n, dtype=bool)
    assert dense.degree[0]["in_max"] == off.sum(axis=1).max()
    assert dense.degree[0]["out_min"] == off.sum(axis=0).min()


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(["ring", "one-peer-exp", "exponential-graph", "mesh-graph",
                        "one-peer-exponential-graph", "inner-outer-exponential"]),
       st.integers(2, 40), st.integers(0, 2**31))
def test_consensus_on_sparse_matrices_equals_dense_products(name, n, seed):
    t = build(name, n)
    x0 = np.random.default_rng(seed).standard_normal((n, 2))
    errors = consensus_errors(t, 3 * t.period, x0, relative=False)
    x, mean = x0.copy(), x0.mean(axis=0)
    for k in range(3 * t.period):
        x = t.matrix(k) @ x
        assert errors[k + 1] == pytest.approx(np.linalg.norm(x - mean), rel=1e-12, abs=1e-14)


@pytest.mark.parametrize("n", [600, 1000, 2000])
def test_sparse_ring_rho_is_the_closed_form(n):
    # decent_dp's ring (period 2, n even): rho(W_1 W_0) = cos(2 pi / n); at n = 2000,
    # 1 - rho = 4.9e-6 and the top singular values are 1.5e-5 apart
    t = gossip_topology("ring", n)
    assert period_rho(t) == pytest.approx(math.cos(2 * math.pi / n), abs=1e-12)


def test_shift_invert_stage_finds_the_rho_that_lanczos_cannot(monkeypatch):
    n = 3000
    t = gossip_topology("ring-graph", n)
    want = (1 + 2 * math.cos(2 * math.pi / n)) / 3
    calls = []
    inner = spectrum.shift_invert_vector
    monkeypatch.setattr(spectrum, "shift_invert_vector", lambda *a: calls.append(1) or inner(*a))
    monkeypatch.setattr(spectrum, "LANCZOS_PRODUCTS", 5)
    assert period_rho(t, method="sparse") == pytest.approx(want, abs=1e-12)
    assert calls == [1]
    # without it, and without room for the dense path, the analysis says so
    monkeypatch.setattr(spectrum, "shift_invert_vector", lambda *a: None)
    monkeypatch.setenv(ENV, "16MiB")
    with pytest.raises(UnsupportedError, match="did not converge within 5 products"):
        period_rho(t, method="sparse")


def test_lanczos_stage_alone_for_fast_mixing_topologies(monkeypatch):
    monkeypatch.setattr(spectrum, "shift_invert_vector", lambda *a: None)
    for name, n in (("exponential-graph", 256), ("exponential-graph", 300),
                    ("one-peer-exp", 300), ("star-graph", 200), ("mesh-graph", 100)):
        t = gossip_topology(name, n)
        assert period_rho(t, method="sparse") == pytest.approx(period_rho(t, method="dense"),
                                                               abs=RHO_TOL), name
    # closed forms: exponential graph, n even; star
    m = math.ceil(math.log2(1000))
    assert period_rho(gossip_topology("exponential-graph", 1000)) == pytest.approx(
        1 - 2 / (m + 1), abs=RHO_TOL)
    assert period_rho(gossip_topology("star-graph", 700)) == pytest.approx(1 - 1 / 700,
                                                                          abs=RHO_TOL)


def test_rho_of_a_sparse_matrix_and_the_methods():
    w = sp.csr_array(np.kron(np.eye(300), np.full((2, 2), 0.5)))    # 300 pairs never meet
    assert rho(w) == pytest.approx(1.0, abs=1e-12)
    assert rho(w, method="dense") == pytest.approx(1.0, abs=1e-12)
    mixing = gossip_topology("mesh-graph", 36).matrix()
    assert rho(mixing, method="sparse") == pytest.approx(rho(mixing), abs=RHO_TOL)
    with pytest.raises(Exception, match="method must be"):
        rho(mixing, method="fast")


def test_period_operator_applies_the_factors_in_order():
    t = gossip_topology("inner-outer-exponential", 12, local_size=3)
    x = np.random.default_rng(1).standard_normal(12)
    p = np.eye(12)
    for k in range(2, 2 + t.period):
        p = t.matrix(k) @ p
    op = period_operator(t, start=2)
    np.testing.assert_allclose(op @ x, p @ x, atol=1e-14)
    np.testing.assert_allclose(op.rmatvec(x), p.T @ x, atol=1e-14)


def test_sparse_graph_topologies_and_checks():
    w = sp.csr_array(np.array([[0.5, 0.5, 0], [0.5, 0.5, 0], [0.5, 0, 0.5]]))
    t = GraphTopology("drift", w)
    facts = stochasticity(t)
    assert facts["row_stochastic"] and not facts["column_stochastic"]
    assert not facts["symmetric"]
    assert t.in_neighbors(0, 2) == (0.5, {0: 0.5})
    assert t.out_neighbors(0, 0) == [1, 2]
    assert same_mixing(t, GraphTopology("drift", w.toarray()))
    assert not same_mixing(t, gossip_topology("fully-connected-graph", 3))
    assert exact_average_after(gossip_topology("one-peer-exp", 1024)) == 10


def test_the_sparse_path_never_makes_an_n_by_n_array(monkeypatch):
    # 4000 ranks: one dense matrix is 128 MB; the whole sparse analysis stays far below
    n = 4000
    monkeypatch.setenv(ENV, "64MiB")     # every dense path would be refused
    for name in ("ring", "one-peer-exp", "ring-graph", "one-peer-exponential-graph"):
        t = gossip_topology(name, n)
        with pytest.raises(ResourceLimitError, match=f"{n} ranks"):
            t.matrix(0)
        tracemalloc.start()
        try:
            result = analyze(t)
            consensus_errors(t, 5, seed=0)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        assert result.success, result.message
        assert peak < 16 * 2**20, (name, peak)
    complete = gossip_topology("complete", n)     # n^2 weights, sparse or not: refused
    with pytest.raises(ResourceLimitError, match=f"complete on {n} ranks .*non-zero"):
        analyze(complete)
