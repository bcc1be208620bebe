"""The column generation (``method="colgen"``) and the multiplicative weights that seed it:
closed forms, the certificate and the routes checked independently of the solver, agreement
with the whole link LP on random digraphs, limits and refusals, and schedules of its routes."""

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from scipy.sparse.csgraph import floyd_warshall

from topocoll.errors import InputTypeError, TopocollError, UnsupportedError
from topocoll.schedule.linkmodel import simulate
from topocoll.schedule.verify import verify
from topocoll.throughput import (alltoall_routes, colgen_throughput, link_throughput,
                                 mwu_lengths, throughput)
from topocoll.throughput import lp as lp_module
from topocoll.throughput.schedule import pipelined_alltoall_schedule
from topocoll.throughput.solve import COLGEN_COLUMNS
from topocoll.topology import Topology, topology

from tests.helpers import strongly_connected_digraphs
from tests.throughput.test_lp import CLOSED_FORMS, check_routes, unit

FEW = settings(max_examples=15, deadline=None,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def independent_bound(t, lengths):
    """``sum c l / sum dist_l`` with the distances from Floyd-Warshall on a dense matrix (the
    solvers use Dijkstra on sparse graphs)."""
    psrc, pdst, cap, _ = t.pairs
    n = t.num_nodes
    lengths = np.asarray(lengths) / float(np.max(lengths))     # the bound is scale-free
    w = sp.csr_matrix((np.maximum(lengths, 1e-15), (psrc, pdst)), shape=(n, n))
    dist = floyd_warshall(w, directed=True)
    return float(cap @ lengths) / float(dist.sum())


@pytest.mark.parametrize(("spec", "expected"), CLOSED_FORMS)
def test_closed_forms(spec, expected):
    t = unit(spec)
    res = colgen_throughput(t, bounds=False)
    assert res.status == 0 and res.method == "colgen"
    assert res.gap <= 1e-4
    # lambda is feasible for the routes, the bound holds for any lengths: the closed form
    # lies between them
    assert res.lam <= expected * (1 + 1e-9)
    assert independent_bound(t, res.lengths) >= expected * (1 - 1e-9)
    assert res.lam == pytest.approx(expected, rel=1e-4)
    check_routes(t, res, None)


@FEW
@given(strongly_connected_digraphs(max_nodes=9))
def test_same_lambda_as_the_link_lp_with_an_independent_certificate(t):
    link = link_throughput(t, bounds=False)
    res = colgen_throughput(t, bounds=False, mwu_steps=10, keep=3)
    assert res.status == 0
    bound = independent_bound(t, res.lengths)
    assert bound == pytest.approx(res.dual_bound, rel=1e-9)
    assert res.lam <= link.lam * (1 + 1e-7) <= bound * (1 + 1e-6)
    assert res.lam >= link.lam * (1 - 1e-4)
    check_routes(t, res, None)


def test_a_larger_random_graph_is_certified_and_matches_the_link_lp():
    t = topology("randomregular:48,4")
    res = colgen_throughput(t, bounds=False, tolerance=1e-6)
    link = link_throughput(t, bounds=False)
    assert res.status == 0 and res.gap <= 1e-6
    assert res.lam == pytest.approx(link.lam, rel=2e-6)
    assert independent_bound(t, res.lengths) >= link.lam * (1 - 1e-9)
    check_routes(t, res, None)
    # most pairs travel on one path: that is what keeps the master LP small
    single = np.bincount(res.paths.src * 48 + res.paths.dst, minlength=48 * 48) == 1
    assert single.sum() > 0.3 * 48 * 47


def test_heterogeneous_links():
    base = topology("randomregular:20,3:5")
    bw = np.where(base.src < base.dst, 2.0, 1.0)     # the two directions at 2:1
    t = Topology(base.num_nodes, base.src, base.dst, bw, np.zeros(base.num_links),
                 name="mixed")
    res = colgen_throughput(t, bounds=False, tolerance=1e-7)
    link = link_throughput(t, bounds=False)
    assert res.lam == pytest.approx(link.lam, rel=1e-6)
    assert independent_bound(t, res.lengths) >= res.lam


def test_mwu_bounds_lambda_from_above_and_its_trees_reach_everyone():
    t = topology("randomregular:24,3:2", bandwidth=1.0)
    lam = link_throughput(t, bounds=False).lam
    run = mwu_lengths(t, steps=100, keep=4)
    assert len(run.trees) == 5 and run.steps == 100
    assert run.bound >= lam * (1 - 1e-9)
    assert run.bound == pytest.approx(independent_bound(t, run.lengths), rel=1e-9)
    # the weights approach the optimum (this graph: 4.4% above it after 100 steps)
    assert run.bound <= lam * 1.1
    n = t.num_nodes
    for pred in run.trees:
        assert np.all(pred[np.arange(n), np.arange(n)] < 0)
        assert np.all((pred >= 0) | np.eye(n, dtype=bool))
        rows, nodes = np.nonzero(pred >= 0)
        assert np.all(t.pair_index(pred[rows, nodes], nodes) >= 0)   # real links


def test_refining_steps_keep_both_phases_trees_and_never_loosen_the_bound():
    t = topology("randomregular:32,3:4", bandwidth=1.0)
    lam = link_throughput(t, bounds=False).lam
    plain = mwu_lengths(t, steps=40, keep=3)
    refined = mwu_lengths(t, steps=40, keep=3, refine=30)
    assert refined.steps == 70 and len(refined.trees) == 3 + 3 + 1
    # the first 40 steps are the same, so the best of 70 is at most the best of 40
    assert lam * (1 - 1e-9) <= refined.bound <= plain.bound
    assert refined.bound == pytest.approx(independent_bound(t, refined.lengths), rel=1e-9)
    for bad in (-1, True, 2.5):
        with pytest.raises(TopocollError, match="refine"):
            mwu_lengths(t, refine=bad)


@pytest.mark.parametrize("options", [{"max_new": 1, "max_rounds": 400},
                                     {"slack": 0.0, "mwu_refine": 0}, {"max_paths": 1},
                                     {"slack": 1.0, "mwu_steps": 5, "mwu_refine": 3}])
def test_pricing_cap_and_candidate_filters_still_reach_the_optimum(options):
    # one new pair a round, no pair free at the start, or every alternative kept: the rounds
    # make up for the seed, and the certificate is checked independently
    t = topology("randomregular:24,3:7", bandwidth=1.0)
    lam = link_throughput(t, bounds=False).lam
    res = colgen_throughput(t, bounds=False, tolerance=1e-6, **options)
    assert res.status == 0, res.message
    assert res.lam == pytest.approx(lam, rel=1e-5)
    assert independent_bound(t, res.lengths) >= res.lam * (1 - 1e-9)
    check_routes(t, res, None)


def test_default_method_by_size_and_tolerance():
    small = topology("randomregular:16,3")
    assert throughput(small, bounds=False).method == "link"
    big = topology("randomregular:128,4")
    assert big.num_nodes * big.pairs[0].size >= COLGEN_COLUMNS
    res = throughput(big, bounds=False)
    assert res.method == "colgen" and res.tolerance == 1e-4 and res.status == 0
    assert res.paths is not None
    assert throughput("torus:16x16", bounds=False).method == "symmetric"
    assert alltoall_routes(small).method == "path"


def test_disconnected_and_bad_input():
    t = Topology(4, np.array([0, 1, 2]), np.array([1, 2, 3]), np.ones(3), np.zeros(3))
    res = colgen_throughput(t, bounds=False)
    assert res.status == 4 and res.lam == 0.0
    ring = unit("ring:6")
    for bad in ({"mwu_steps": 0}, {"max_new": 0}, {"max_paths": 0}):
        with pytest.raises(UnsupportedError, match=">= 1"):
            colgen_throughput(ring, **bad)
    for bad in ({"keep": 1.5}, {"max_rounds": True}):
        with pytest.raises(InputTypeError, match="must be an integer"):
            colgen_throughput(ring, **bad)
    with pytest.raises(UnsupportedError, match="mwu_refine"):
        colgen_throughput(ring, mwu_refine=-1)
    for name, bad in (("slack", -0.1), ("slack", float("inf"))):
        with pytest.raises(InputTypeError, match=name):
            colgen_throughput(ring, **{name: bad})
    with pytest.raises(InputTypeError, match="eps"):
        mwu_lengths(ring, eps=0)


def test_round_limit_and_time_limit_keep_a_valid_flow(monkeypatch):
    t = topology("randomregular:40,4:3")
    one = colgen_throughput(t, bounds=False, mwu_steps=3, keep=1, max_rounds=1,
                            tolerance=1e-12)
    assert one.status == 2 and one.rounds == 1 and one.lam > 0
    check_routes(t, one, None)
    assert independent_bound(t, one.lengths) >= one.lam
    # a fake clock: the limit runs out after the first master LP
    now = [0.0]

    def clock():
        now[0] += 40.0
        return now[0]

    monkeypatch.setattr(lp_module, "clock", clock)
    out = colgen_throughput(t, bounds=False, mwu_steps=3, keep=1, tolerance=1e-12,
                            time_limit=100.0)
    assert out.status == 1 and out.lam > 0 and "time limit" in out.message
    check_routes(t, out, None)


@pytest.mark.parametrize("spec", ["randomregular:32,4:1", "debruijn:2,5"])
def test_pipelined_schedule_of_its_routes_is_within_ten_percent(spec):
    t = topology(spec)
    res = colgen_throughput(t, bounds=False)
    s = pipelined_alltoall_schedule(res, t)
    assert verify(s).valid
    size = 2**34           # latency well under 5% of the time
    lp_time = size / t.num_nodes / res.lam
    assert simulate(s, size).time <= 1.10 * lp_time


def test_cli_colgen_with_tolerance_and_routes(tmp_path):
    import json

    from click.testing import CliRunner

    from topocoll.cli.main import cli
    from topocoll.schedule.io import load_schedule

    runner = CliRunner()
    out = tmp_path / "a2a.json"
    res = runner.invoke(cli, ["alltoall", "randomregular:24,4:1", "--method", "colgen",
                              "--tolerance", "1e-7", "--json", "-o", str(out)])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["method"] == "colgen" and doc["status"] == 0 and doc["gap"] <= 1e-7
    link = link_throughput(topology("randomregular:24,4:1"), bounds=False)
    assert doc["lambda"] == pytest.approx(link.lam, rel=1e-6)
    assert doc["schedule"]["verified"] and verify(load_schedule(str(out))).valid
    bad = runner.invoke(cli, ["alltoall", "ring:6", "--method", "colgen", "--max-hops", "1"])
    assert bad.exit_code != 0 and "--max-hops" in bad.output
    with pytest.raises(Exception, match="no hop bound"):
        throughput(unit("ring:6"), method="colgen", max_hops=1)


def test_cli_rewire_reports_the_bounds_before_and_after():
    import json

    from click.testing import CliRunner

    from topocoll.cli.main import cli
    from topocoll.topology.cuts import throughput_bounds

    res = CliRunner().invoke(cli, ["rewire", "jellyfish:16,3", "--max-swaps", "40", "--budget",
                                   "0", "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    size, n = doc["size"], 16
    before = throughput_bounds(topology("jellyfish:16,3"))
    d0, d1 = doc["time_lower_bounds"]["distance"]
    assert d0 == pytest.approx(size / n / before["distance"], rel=1e-12)
    # both are lower bounds of the certified times they sit under
    assert d0 <= doc["initial"] * (1 + 1e-9) and d1 <= doc["final"] * (1 + 1e-9)
    b0, b1 = doc["time_lower_bounds"]["bisection"]
    assert b0 <= doc["initial"] * (1 + 1e-9) and b1 <= doc["final"] * (1 + 1e-9)


def test_vertex_routes_split_at_most_one_pair_per_link():
    t = topology("randomregular:40,4:2")
    spread = colgen_throughput(t, bounds=False, tolerance=1e-7)
    vert = colgen_throughput(t, bounds=False, tolerance=1e-7, vertex=True)
    assert vert.lam == pytest.approx(spread.lam, rel=1e-6)
    check_routes(t, vert, None)

    def split(res):
        pairs = res.paths.src * t.num_nodes + res.paths.dst
        return int(np.count_nonzero(np.bincount(pairs) > 1))

    # a basic solution: each extra path of a pair needs a binding capacity row in the basis
    assert split(vert) <= t.pairs[0].size
    assert len(vert.paths) - t.num_nodes * (t.num_nodes - 1) <= t.pairs[0].size
    assert len(vert.paths) <= len(spread.paths)
