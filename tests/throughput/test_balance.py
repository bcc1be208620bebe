"""Shortest paths balanced to the distance bound (``method="balance"``): closed forms, the
sampled paths, soundness against the exact link LP on random digraphs (it never claims the
bound where the optimum is below it), the fall-back to the column generation, limits and
refusals, and the CLI."""

import json

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given

from topocoll.cli.main import cli
from topocoll.errors import TopocollError
from topocoll.results import Status
from topocoll.throughput import (balanced_throughput, link_throughput, shortest_path_sample,
                                 throughput)
from topocoll.throughput import balance as balance_module
from topocoll.throughput.balance import worth_balancing
from topocoll.throughput.solve import COLGEN_COLUMNS
from topocoll.topology import topology
from topocoll.topology.metrics import distance_matrix

from tests.helpers import strongly_connected_digraphs
from tests.throughput.test_colgen import FEW, independent_bound
from tests.throughput.test_lp import CLOSED_FORMS, check_routes, unit


def check_shortest(t, res):
    """Every route is a shortest path (the balance never leaves them)."""
    dist = distance_matrix(t)
    np.testing.assert_array_equal(res.paths.hops, dist[res.paths.src, res.paths.dst])


@pytest.mark.parametrize(("spec", "expected"), CLOSED_FORMS)
def test_closed_forms_at_the_distance_bound(spec, expected):
    t = unit(spec)
    res = balanced_throughput(t, bounds=False)
    assert res.status == 0 and res.method == "balance" and res.gap <= 1e-4
    assert res.lam <= expected * (1 + 1e-9)
    assert independent_bound(t, res.lengths) >= expected * (1 - 1e-9)
    assert res.lam == pytest.approx(expected, rel=1e-6)
    check_routes(t, res, None)
    check_shortest(t, res)


@pytest.mark.parametrize("spec", ["hypercube:4", "torus:5x5", "randomregular:30,4:3",
                                  "kautz:2,3", "bipartite:4"])
def test_sampled_paths_are_distinct_shortest_paths(spec):
    t = topology(spec)
    psrc, pdst, _, _ = t.pairs
    pair, ptr, edges = shortest_path_sample(t, 6, seed=1)
    n = t.num_nodes
    xs, ys = np.nonzero(~np.eye(n, dtype=bool))
    dist = distance_matrix(t)
    assert np.all(np.diff(pair) >= 0) and set(pair.tolist()) == set(range(xs.size))
    assert np.all(np.bincount(pair) <= 6)
    seen = set()
    for p in range(pair.size):
        e = edges[ptr[p]:ptr[p + 1]]
        x, y = xs[pair[p]], ys[pair[p]]
        assert psrc[e[0]] == x and pdst[e[-1]] == y
        assert np.all(pdst[e[:-1]] == psrc[e[1:]])
        assert e.size == dist[x, y]
        key = (int(pair[p]), tuple(e.tolist()))
        assert key not in seen
        seen.add(key)


def test_enough_draws_find_every_shortest_path():
    # in the d-cube a pair at distance k has k! shortest paths
    t = topology("hypercube:4")
    pair, _, _ = shortest_path_sample(t, 200, seed=0)
    count = np.bincount(pair)
    xs, ys = np.nonzero(~np.eye(16, dtype=bool))
    weight = np.array([bin(int(x) ^ int(y)).count("1") for x, y in zip(xs, ys)])
    np.testing.assert_array_equal(count, [[1, 1, 2, 6, 24][k] for k in weight])


@FEW
@given(strongly_connected_digraphs(max_nodes=9))
def test_never_claims_the_bound_below_the_optimum(t):
    """Soundness: the flow is valid and on shortest paths; success means the link LP's exact
    optimum equals it; a success is claimed only where the distance bound is the optimum."""
    link = link_throughput(t, bounds=False)
    res = balanced_throughput(t, bounds=False)
    assert res.status in (Status.SUCCESS, Status.NOT_PROVEN)
    check_routes(t, res, None)
    check_shortest(t, res)
    assert res.lam <= link.lam * (1 + 1e-7)
    assert independent_bound(t, res.lengths) == pytest.approx(res.dual_bound, rel=1e-9)
    if res.status == Status.SUCCESS:
        assert res.lam == pytest.approx(link.lam, rel=1e-4)
    if link.dual_bound < res.dual_bound * (1 - 1e-3):
        assert res.status == Status.NOT_PROVEN
    if not worth_balancing(t):            # its probe's lengths prove the bound is not reached
        assert link.lam < res.dual_bound / (1 + 1e-4)


@pytest.mark.parametrize(("spec", "expected"), CLOSED_FORMS + [
    ("randomregular:64,6:1", None), ("randomregular:96,8:2", None), ("hamming:3,4", None)])
def test_the_probe_never_rules_out_a_tight_bound(spec, expected):
    assert worth_balancing(unit(spec))


@pytest.mark.parametrize("spec", ["mesh:6x6", "kautz:2,3", "debruijn:2,5",
                                  "randomregular:128,4:1"])
def test_the_probe_rules_out_graphs_below_the_bound(spec):
    t = unit(spec)
    assert not worth_balancing(t)
    assert link_throughput(t, bounds=False).lam < balanced_throughput(
        t, bounds=False).dual_bound * (1 - 1e-4)


def test_the_probe_does_not_try_paths_that_would_not_fit(monkeypatch):
    t = unit("randomregular:128,8:1")
    assert worth_balancing(t)
    monkeypatch.setattr(balance_module, "MAX_AUTO_PATH_LINKS", 1000)
    assert not worth_balancing(t)
    assert throughput(t, bounds=False).method == "colgen"


@pytest.mark.parametrize("spec", ["randomregular:64,6:1", "randomregular:96,8:2",
                                  "randomregular:48,8:2", "hamming:3,4"])
def test_tight_graphs_agree_with_the_link_lp(spec):
    t = unit(spec)
    res = balanced_throughput(t, bounds=False)
    link = link_throughput(t, bounds=False)
    assert res.status == 0
    assert res.lam == pytest.approx(link.lam, rel=1e-4)
    check_routes(t, res, None)


@pytest.mark.parametrize("spec", ["randomregular:40,3:1", "randomregular:64,6:2", "kautz:2,3",
                                  "debruijn:2,4", "torus:6x7"])
def test_where_the_bound_is_not_tight_a_valid_flow_and_the_reason(spec):
    t = unit(spec)
    res = balanced_throughput(t, bounds=False)
    assert res.status == Status.NOT_PROVEN and res.success
    assert "not at the distance bound" in res.message
    assert res.lam < res.dual_bound * (1 - 1e-3)
    check_routes(t, res, None)


def test_throughput_tries_the_balance_first_and_falls_back():
    tight = unit("randomregular:128,8:1")
    assert tight.num_nodes * tight.pairs[0].size >= COLGEN_COLUMNS
    res = throughput(tight, bounds=False)
    assert res.method == "balance" and res.status == 0
    loose = unit("randomregular:128,4:1")
    assert loose.num_nodes * loose.pairs[0].size >= COLGEN_COLUMNS
    res = throughput(loose, bounds=False)
    assert res.method == "colgen" and res.status == 0
    assert res.lam < balanced_throughput(loose, bounds=False).dual_bound * (1 - 1e-3)
    # an explicit method is taken as asked
    assert throughput(tight, method="colgen", bounds=False).method == "colgen"


def test_time_limit_returns_the_flow_so_far():
    res = balanced_throughput(unit("randomregular:64,8:1"), time_limit=1e-9, bounds=False)
    assert res.status == Status.LIMIT and res.success and res.rounds == 0
    assert "time limit" in res.message


def test_bad_arguments_and_disconnected():
    t = unit("ring:6")
    for kwargs in ({"samples": 0}, {"samples": 2.5}, {"max_steps": -1}, {"tolerance": 0},
                   {"tolerance": 1.5}):
        with pytest.raises(TopocollError):     # bad kinds: InputTypeError; small counts too
            balanced_throughput(t, **kwargs)
    from topocoll.topology import Topology

    res = balanced_throughput(Topology(3, [0, 1], [1, 2], 1.0, 1e-6, name="path3"))
    assert res.status == Status.INFEASIBLE and res.lam == 0.0


def test_cli_method_balance_json():
    runner = CliRunner()
    out = runner.invoke(cli, ["alltoall", "randomregular:48,8:2", "--method", "balance",
                              "--json"])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.stdout)
    assert doc["method"] == "balance" and doc["status"] == 0 and doc["gap"] <= 1e-4
    bad = runner.invoke(cli, ["alltoall", "ring:6", "--method", "balance", "--max-hops", "1"])
    assert bad.exit_code != 0 and "Traceback" not in bad.output


def test_a_balance_that_does_not_fit_leaves_it_to_the_column_generation(monkeypatch):
    t = unit("randomregular:128,8:1")
    monkeypatch.setenv("TOPOCOLL_MEMORY_LIMIT", "40MB")
    from topocoll.errors import ResourceLimitError

    with pytest.raises(ResourceLimitError, match="balanced shortest paths"):
        balanced_throughput(t, bounds=False)
    res = throughput(t, bounds=False)
    assert res.method == "colgen" and res.status == 0
