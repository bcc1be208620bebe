"""The effective matrix of hierarchical averaging, ``W_k kron (1/L) 1 1^T``, against explicit
products on random data; its rho against a direct SVD; ``gossip info
--hierarchical-local-size``."""

import json

import numpy as np
import pytest
import scipy.sparse as sp

from topocoll.cli.main import main
from topocoll.errors import SpecError, TopologyError
from topocoll.gossip import (GraphTopology, HierarchicalTopology, analyze, gossip_topology,
                             hierarchical_matrix, hierarchical_topology)

SHAPES = [(1, 3), (2, 1), (2, 2), (3, 2), (2, 4), (5, 3), (4, 4)]     # (machines M, local L)


def random_machine(m, k=0, seed=3):
    """A random doubly stochastic M x M matrix (a mix of permutations), so that rho < 1."""
    rng = np.random.default_rng([seed, m, k])
    w = 0.3 * np.eye(m)
    for share in rng.dirichlet(np.ones(3)) * 0.7:
        w += share * np.eye(m)[rng.permutation(m)]
    return w


def hierarchical_step(w, local_size, x):
    """One step done by hand: every rank of machine m gets sum_j W[m, j] * (machine j's mean)."""
    m = w.shape[0]
    means = x.reshape(m, local_size, -1).mean(axis=1)
    return np.repeat(w @ means, local_size, axis=0)


def direct_rho(product):
    n = product.shape[0]
    return np.linalg.svd(product - np.full((n, n), 1.0 / n), compute_uv=False)[0]


@pytest.mark.parametrize(("m", "local_size"), SHAPES)
def test_effective_matrix_is_the_step_done_by_hand(m, local_size):
    rng = np.random.default_rng([m, local_size])
    w = rng.random((m, m))                          # any weights, not only stochastic ones
    x = rng.standard_normal((m * local_size, 5))
    eff = hierarchical_matrix(w, local_size)
    assert eff.shape == (m * local_size, m * local_size)
    np.testing.assert_allclose(eff @ x, hierarchical_step(w, local_size, x), rtol=1e-12)
    for i, j in [(0, 0), (m * local_size - 1, 0), (0, m * local_size - 1)]:
        assert eff[i, j] == pytest.approx(w[i // local_size, j // local_size] / local_size)
    sparse = hierarchical_matrix(sp.csr_array(w), local_size)
    assert sp.issparse(sparse) and np.allclose(sparse.toarray(), eff)


@pytest.mark.parametrize(("m", "local_size"), SHAPES)
def test_dynamic_topology_follows_the_machines_step_by_step(m, local_size):
    period = 3
    machine = GraphTopology("random", [random_machine(m, k) for k in range(period)])
    t = HierarchicalTopology(machine, local_size)
    assert (t.size, t.period, t.machines, t.local_size) == (m * local_size, period, m,
                                                             local_size)
    x = np.random.default_rng(m).standard_normal((m * local_size, 4))
    y = x.copy()
    for k in range(2 * period):                   # two periods: the wrap-around too
        x = t.matrix(k) @ x
        y = hierarchical_step(random_machine(m, k % period), local_size, y)
        np.testing.assert_allclose(x, y, rtol=1e-10, atol=1e-14)
        assert np.allclose(t.sparse_matrix(k).toarray(), t.matrix(k))


@pytest.mark.parametrize(("m", "local_size"), [s for s in SHAPES if s[0] > 1])
def test_rho_is_the_direct_svd_and_the_machines_rho(m, local_size):
    period = 2
    machine = GraphTopology("random", [random_machine(m, k, seed=8) for k in range(period)])
    t = HierarchicalTopology(machine, local_size)
    product = np.eye(t.size)
    for k in range(period):
        product = hierarchical_matrix(random_machine(m, k, seed=8), local_size) @ product
    facts = analyze(t)
    assert 0 < facts.rho < 1
    assert facts.rho == pytest.approx(direct_rho(product), abs=1e-10)
    assert facts.rho == pytest.approx(analyze(machine).rho, abs=1e-10)
    assert facts.rho_iterations == pytest.approx(
        [direct_rho(hierarchical_matrix(random_machine(m, k, seed=8), local_size))
         for k in range(period)], abs=1e-10)
    assert facts.success and facts.column_stochastic


def test_static_ring_of_machines_keeps_the_ring_rho_with_local_averaging():
    ring = gossip_topology("ring-graph", 6)
    t = HierarchicalTopology(ring, 4)
    assert t.is_static and t.params["machines"] == 6 and t.params["ranks_per_machine"] == 4
    assert analyze(t).rho == pytest.approx(direct_rho(np.kron(ring.matrix(), np.full((4, 4),
                                                                                     0.25))))
    # a plain ring on 24 ranks mixes far slower: the machines' own averaging is free
    assert analyze(gossip_topology("ring-graph", 24)).rho > analyze(t).rho + 0.1


def test_one_peer_exp_over_machines_averages_exactly_after_log2_m():
    t = hierarchical_topology("one-peer-exp", 16, 4)
    assert t.machine.size == 4 and t.size == 16 and t.name == "hierarchical:one-peer-exp"
    facts = analyze(t)
    assert facts.exact_average_after == 2 and facts.rho == pytest.approx(0.0, abs=1e-12)
    # while one-peer-exp on the 16 ranks themselves needs 4
    assert analyze(gossip_topology("one-peer-exp", 16)).exact_average_after == 4


def test_a_plain_matrix_is_a_static_machine_topology():
    t = HierarchicalTopology([[0.5, 0.5], [0.5, 0.5]], 2)
    assert t.is_static and np.allclose(t.matrix(), np.full((4, 4), 0.25))


def test_bad_shapes_are_refused():
    with pytest.raises(SpecError, match="local size 3 must divide n = 8"):
        hierarchical_topology("ring", 8, 3)
    with pytest.raises(TopologyError, match="square"):
        hierarchical_matrix(np.ones((2, 3)), 2)
    with pytest.raises(SpecError):                      # a ring needs 2 machines at least
        hierarchical_topology("ring", 4, 4)


# ----------------------------------------------------------------------------- the command

def run(capsys, *args):
    with pytest.raises(SystemExit) as exc:
        main(list(args))
    out, err = capsys.readouterr()
    return exc.value.code or 0, out, err


def test_info_reports_the_hierarchical_rho(capsys):
    code, out, err = run(capsys, "gossip", "info", "ring-graph", "-n", "12",
                         "--hierarchical-local-size", "3", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["hierarchical_local_size"] == 3 and doc["nodes"] == 12
    (facts,) = doc["topologies"]
    assert facts["name"] == "hierarchical:ring-graph" and facts["nodes"] == 12
    assert facts["params"]["machines"] == 4 and facts["params"]["ranks_per_machine"] == 3
    ring = gossip_topology("ring-graph", 4).matrix()
    assert facts["rho"] == pytest.approx(direct_rho(np.kron(ring, np.full((3, 3), 1 / 3))))
    code, out, _ = run(capsys, "gossip", "info", "ring-graph", "-n", "12", "--json")
    plain = json.loads(out)
    assert plain["hierarchical_local_size"] is None
    assert plain["topologies"][0]["rho"] > facts["rho"]
    code, out, _ = run(capsys, "gossip", "info", "one-peer-exp", "-n", "16",
                       "--hierarchical-local-size", "4")
    assert code == 0 and "hierarchical:one-peer-exp" in out and "2 iterations" in out


def test_info_names_the_rule_when_local_size_does_not_divide(capsys):
    code, out, err = run(capsys, "gossip", "info", "ring", "-n", "8",
                         "--hierarchical-local-size", "3")
    assert code == 2 and out == ""
    assert err.strip().splitlines() == [
        "error: --hierarchical-local-size 3 must divide --nodes 8 (machines of 3 ranks)"]
