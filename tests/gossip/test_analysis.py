"""Convergence analysis against closed forms: rho of the exponential graph, the ring, complete
graphs and the star; exact averaging of one-peer exponential; consensus decay bounded by rho."""

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from topocoll.errors import InputTypeError, SpecError, UnsupportedError
from topocoll.gossip import (GraphTopology, analyze, consensus_errors, exact_average_after,
                             gossip_topology, is_column_stochastic, is_doubly_stochastic,
                             is_row_stochastic, period_product, period_rho, rho,
                             rho_table, same_mixing, stochasticity)
from topocoll.gossip.analysis import MAX_ITERATIONS

J_TOL = 1e-12


def mean_matrix(n):
    return np.full((n, n), 1.0 / n)


# ----------------------------------------------------------------------------- closed forms

@given(st.integers(1, 48).map(lambda h: 2 * h))
def test_exponential_graph_rho_closed_form_for_even_n(n):
    # docs/math.md section 7: weights 1/(1+ceil(log2 n)) give rho = 1 - 2/(ceil(log2 n)+1), n even
    m = math.ceil(math.log2(n))
    assert rho(gossip_topology("exponential-graph", n).matrix()) == pytest.approx(
        1 - 2 / (m + 1), abs=1e-12)


@given(st.integers(1, 40).map(lambda h: 2 * h + 1))
def test_exponential_graph_rho_closed_form_fails_for_odd_n(n):
    # The claim is for even n only: at odd n the eigenvalue (m-1)/(m+1) at frequency n/2 does
    # not exist and rho is strictly smaller (n=3: 0, n=9: 0.4418 instead of 0.6).
    m = math.ceil(math.log2(n))
    assert rho(gossip_topology("exponential-graph", n).matrix()) < 1 - 2 / (m + 1) - 1e-6


def test_exponential_graph_anchor_values():
    assert rho(gossip_topology("exponential-graph", 8).matrix()) == pytest.approx(0.5)
    assert rho(gossip_topology("exponential-graph", 16).matrix()) == pytest.approx(0.6)
    assert rho(gossip_topology("exponential-graph", 9).matrix()) == pytest.approx(0.4418, abs=1e-4)


@given(st.integers(3, 80))
def test_ring_graph_rho_closed_form(n):
    w = gossip_topology("ring-graph", n).matrix()
    assert rho(w) == pytest.approx((1 + 2 * math.cos(2 * math.pi / n)) / 3, abs=1e-12)


@given(st.integers(3, 80))
def test_star_graph_rho_is_one_minus_one_over_n(n):
    assert rho(gossip_topology("star-graph", n).matrix()) == pytest.approx(1 - 1 / n, abs=1e-12)


@given(st.integers(1, 64))
def test_complete_graphs_are_exact_after_one_iteration(n):
    for name in ("complete", "fully-connected-graph"):
        t = gossip_topology(name, n)
        assert rho(t.matrix()) == 0.0
        assert exact_average_after(t) == (0 if n == 1 else 1)
    if n > 1:
        assert same_mixing(gossip_topology("complete", n),
                           gossip_topology("fully-connected-graph", n))


@pytest.mark.parametrize("k", range(1, 9))
def test_one_peer_exp_reaches_the_exact_mean_in_log2_n_iterations(k):
    n = 2 ** k
    for name in ("one-peer-exp", "one-peer-exponential-graph"):
        t = gossip_topology(name, n)
        assert exact_average_after(t) == k
        p = np.eye(n)
        for i in range(k - 1):
            p = t.matrix(i) @ p
        assert np.abs(p - mean_matrix(n)).max() > 0.5 / n  # not one iteration earlier
        np.testing.assert_allclose(t.matrix(k - 1) @ p, mean_matrix(n), atol=J_TOL)


@settings(max_examples=20)
@given(st.integers(3, 60).filter(lambda n: n & (n - 1)))
def test_one_peer_exp_never_exact_for_other_n(n):
    # Products of weight-1/2 steps hold multiples of 2^-t, never 1/n: only the limit is exact.
    for name in ("one-peer-exp", "one-peer-exponential-graph"):
        t = gossip_topology(name, n)
        p = period_product(t)
        scaled = p * 2 ** t.period
        np.testing.assert_allclose(scaled, np.round(scaled), atol=1e-9)
        assert exact_average_after(t) is None
        assert 0 < period_rho(t) < 1  # but it converges


def test_a_fast_geometric_rate_is_not_called_exact():
    # exponential-graph at n=6 has rho = 0.5: the error passes 1e-12 after ~40 iterations,
    # geometrically, which must not count as a finite-time exact average.
    t = gossip_topology("exponential-graph", 6)
    assert rho(t.matrix()) == pytest.approx(0.5)
    errors = consensus_errors(t, 60, seed=1)
    assert errors[60] < 1e-12
    assert exact_average_after(t, max_iterations=60) is None


def test_exactness_is_checked_against_the_mean_not_just_consensus():
    # Row stochastic only: reaches consensus (on rank 0's value) in one step, not the mean.
    t = GraphTopology("copy-rank-0", np.tile([1.0, 0.0, 0.0], (3, 1)))
    facts = stochasticity(t)
    assert facts["row_stochastic"] and not facts["column_stochastic"]
    assert exact_average_after(t) is None
    errors = consensus_errors(t, 3, x0=[3.0, 0.0, 0.0], relative=False)
    assert errors[-1] == pytest.approx(math.sqrt(3) * 2)  # everyone at 3, mean 1


# ----------------------------------------------------------------------------- consensus

TOPOLOGIES = ["ring", "one-peer-exp", "exponential-graph", "symmetric-exponential-graph",
              "ring-graph", "mesh-graph", "star-graph", "one-peer-exponential-graph",
              "alternating-exp-ring", "inner-outer-exponential"]


@settings(max_examples=25)
@given(st.sampled_from(TOPOLOGIES), st.integers(2, 24), st.integers(0, 2**31), st.integers(1, 3))
def test_consensus_error_decays_at_most_like_rho(name, n, seed, columns):
    params = {}
    if name in ("alternating-exp-ring", "inner-outer-exponential"):
        params = {"local_size": 2 if n % 2 == 0 else 1}
    t = gossip_topology(name, n, **params)
    x0 = np.random.default_rng(seed).standard_normal((n, columns))
    periods = 6
    errors = consensus_errors(t, periods * t.period, x0)
    assert errors[0] == 1.0
    r = period_rho(t)
    for m in range(periods + 1):
        assert errors[m * t.period] <= r ** m * (1 + 1e-9) + 1e-12
    # every single iteration is a contraction for a doubly stochastic W: ||W - J|| <= 1
    assert np.all(np.diff(errors) <= 1e-12)
    # and the simulation keeps the mean
    w_total = np.eye(n)
    for k in range(periods * t.period):
        w_total = t.matrix(k) @ w_total
    x_end = w_total @ x0
    np.testing.assert_allclose(x_end.mean(axis=0), x0.mean(axis=0), atol=1e-9)


def test_consensus_errors_input_checks():
    t = gossip_topology("ring", 4)
    with pytest.raises(InputTypeError, match="4 rows"):
        consensus_errors(t, 3, x0=[1.0, 2.0])
    with pytest.raises(UnsupportedError, match="iterations must be >= 0, got -1"):
        consensus_errors(t, -1)
    with pytest.raises(InputTypeError, match="iterations must be an integer"):
        consensus_errors(t, 2.0)
    a = consensus_errors(t, 5, seed=3)
    b = consensus_errors(t, 5, seed=3)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, consensus_errors(t, 5, seed=4))


# ----------------------------------------------------------------------------- checks

def test_stochasticity_checks_reject_mutated_matrices():
    w = gossip_topology("mesh-graph", 9).matrix()
    assert is_doubly_stochastic(w)
    broken = w.copy()
    broken[0, 1] += 0.01
    assert not is_row_stochastic(broken)
    moved = w.copy()
    moved[0, 0] -= 0.01
    moved[0, 8] += 0.01  # row sum kept, column sums broken
    assert is_row_stochastic(moved) and not is_column_stochastic(moved)
    negative = np.array([[1.5, -0.5], [-0.5, 1.5]])
    assert not is_doubly_stochastic(negative)
    assert not stochasticity(GraphTopology("moved", moved))["column_stochastic"]


def test_analyze_reports_what_info_prints():
    f = analyze(gossip_topology("one-peer-exp", 8))
    assert f.success and f.status == 0 and "exactly after 3" in f.message
    assert f.period == 3 and f.rho == 0.0 and f.exact_average_after == 3
    assert f.degree == [{"iteration": k, "in_min": 1, "in_max": 1, "out_min": 1, "out_max": 1}
                        for k in range(3)]
    assert f.groups == [4, 4, 4]
    assert f.rho_iterations == pytest.approx([1.0, 1.0, 1.0])
    d = f.to_dict()
    assert list(d)[:4] == ["success", "status", "status_name", "message"]
    assert d["groups"] == [4, 4, 4] and d["exact_average_after"] == 3
    g = analyze(gossip_topology("star-graph", 5))
    assert g.success and g.exact_average_after is None and g.static
    assert g.degree[0]["in_max"] == 4 and g.degree[0]["in_min"] == 1
    assert g.groups is None and "groups" not in g.to_dict()


@pytest.mark.parametrize("matrix, rule", [
    (np.eye(4), "rho = 1"),                                        # nobody mixes
    (np.kron(np.eye(2), np.full((2, 2), 0.5)), "rho = 1"),         # two halves never meet
    (np.array([[0.5, 0.5, 0], [0.5, 0.5, 0], [0.5, 0, 0.5]]), "column"),   # the mean drifts
    (np.array([[0.5, 0.4, 0], [0.5, 0.5, 0], [0, 0.1, 1.0]]), "row"),
])
def test_topologies_that_never_average_are_infeasible(matrix, rule):
    a = analyze(GraphTopology("broken", matrix))
    assert a.status == 4 and not a.success and not a.averages
    assert "never averages" in a.message and rule in a.message
    assert a.to_dict()["status_name"] == "INFEASIBLE"


def test_rho_table_rows():
    rows = rho_table(sizes=(4, 6, 8))
    names = {r["name"] for r in rows}
    assert {"one-peer-exp", "alternating-exp-ring", "exponential-graph"} <= names
    assert "metropolis-hastings" not in names  # needs a network
    by = {(r["name"], r["nodes"]): r for r in rows}
    assert by[("exponential-graph", 8)]["rho"] == pytest.approx(0.5)
    assert by[("one-peer-exp", 8)]["exact_average_after"] == 3
    assert by[("one-peer-exp", 6)]["exact_average_after"] is None
    # local_size 4 does not divide 6: the row says why instead of a number
    assert by[("alternating-exp-ring", 6)]["rho"] is None
    assert "local_size must divide n" in by[("alternating-exp-ring", 6)]["error"]
    assert all(r["doubly_stochastic"] for r in rows if r["error"] is None)
    for r in rows:
        if r["error"] is None:
            assert r["rho"] == pytest.approx(period_rho(gossip_topology(r["name"], r["nodes"],
                                                                        **r["params"])))
    with pytest.raises(SpecError):
        rho_table(["nope"], sizes=(4,))
    quick = rho_table(["ring"], sizes=(8,), exact=False)
    assert quick[0]["exact_average_after"] is None and quick[0]["rho"] > 0


@pytest.mark.parametrize("call", [
    lambda t: consensus_errors(t, MAX_ITERATIONS + 1),
    lambda t: exact_average_after(t, 10**9),
])
def test_iteration_counts_are_bounded_before_any_work(call):
    from topocoll.errors import UnsupportedError

    with pytest.raises(UnsupportedError, match="at most 1,000,000"):
        call(gossip_topology("ring", 16))


def test_the_iteration_bound_itself_is_allowed(monkeypatch):
    import topocoll.gossip.consensus as consensus

    monkeypatch.setattr(consensus, "MAX_ITERATIONS", 7)
    assert consensus_errors(gossip_topology("one-peer-exp", 4), 7).shape == (8,)
    with pytest.raises(Exception, match="at most 7"):
        consensus_errors(gossip_topology("one-peer-exp", 4), 8)
