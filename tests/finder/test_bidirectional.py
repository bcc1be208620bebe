"""The finder restricted to bidirectional topologies (Zhao et al., NSDI 2025, appendix F):
every frontier point is bidirectional, the unrestricted answer is unchanged, the restricted
pick is never predicted faster than the unrestricted one (it is chosen from a subset), and the
unions bidir(G) of reverse-symmetric digraphs verify at G's steps and T_B."""

import json

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings, strategies as st

import topocoll as tc
from topocoll.cli.main import cli
from topocoll.finder import Cache, Search, find
from topocoll.finder import build_allreduce
from topocoll.finder.build import recipe_isomorphism, recipe_topology
from topocoll.finder.recipes import BidirRecipe, LineRecipe
from topocoll.synth.expansions import measure

GRID = [(12, 3), (16, 4), (64, 4), (8, 6), (10, 5), (100, 6), (12, 8), (256, 4)]


def _line_outside_bidir(recipe):
    """A line graph that no bidir(...) encloses (its topology would not be bidirectional)."""
    while hasattr(recipe, "base"):
        if isinstance(recipe, BidirRecipe):
            return False
        if isinstance(recipe, LineRecipe):
            return True
        recipe = recipe.base
    return False


@pytest.mark.parametrize("n, d", GRID)
def test_every_frontier_point_is_bidirectional(n, d):
    front = Search(d, Cache(enabled=False), bidirectional=True).target(n)
    assert front
    for c in front:
        topo = recipe_topology(c.recipe)
        assert topo.num_nodes == n and int(topo.out_degree().max()) <= d
        assert topo.is_bidirectional(), c.name
        assert not _line_outside_bidir(c.recipe), c.name


def test_unrestricted_frontiers_hold_directed_topologies_the_flag_leaves_out():
    """The restriction bites: at 16 nodes of degree 4 the unrestricted choice is a directed
    Cayley digraph, and it is not on the restricted frontier."""
    free = Search(4, Cache(enabled=False)).target(16)
    assert not recipe_topology(free[0].recipe).is_bidirectional()
    two_way = {c.name for c in Search(4, Cache(enabled=False), bidirectional=True).target(16)}
    assert free[0].name not in two_way


@pytest.mark.parametrize("n, d", GRID)
def test_restricted_frontier_dominates_the_bidirectional_unrestricted_points(n, d):
    """Every bidirectional point of the unrestricted frontier lies in the restricted search
    space, so some restricted point is at least as good in steps and T_B."""
    free = Search(d, Cache(enabled=False)).target(n)
    two_way = Search(d, Cache(enabled=False), bidirectional=True).target(n)
    for c in free:
        if recipe_topology(c.recipe).is_bidirectional():
            assert any(b.steps <= c.steps and b.t_b <= c.t_b * (1 + 1e-9) for b in two_way), \
                c.name


def test_without_the_flag_the_answer_is_unchanged():
    plain = find(64, 4, "1MiB", cache=False, evaluate=False)
    off = find(64, 4, "1MiB", cache=False, evaluate=False, bidirectional=False)
    assert [c.to_dict() for c in plain.frontier] == [c.to_dict() for c in off.frontier]
    assert plain.best.name == off.best.name and off.bidirectional_checked is None
    assert plain.best.name.startswith("line(")          # a directed pick, as before


@settings(max_examples=25, deadline=None)
@given(n=st.integers(4, 300), d=st.integers(2, 6), size=st.sampled_from(["4KiB", "1MiB",
                                                                         "256MiB"]))
def test_restricted_pick_is_never_predicted_faster(n, d, size):
    if d > n - 1:
        return
    store = Cache(enabled=False)
    free = find(n, d, size, cache=store, evaluate=False)
    two_way = find(n, d, size, cache=store, evaluate=False, bidirectional=True)
    assert two_way.predicted_time >= free.predicted_time * (1 - 1e-9)
    assert two_way.bidirectional_checked is True


@pytest.mark.parametrize("n, d", [(12, 3), (8, 6), (36, 4), (256, 4)])
def test_the_pick_is_built_verified_and_bidirectional(n, d):
    r = find(n, d, "1MiB", cache=False, keep_schedule=True, bidirectional=True)
    assert r.success and r.bidirectional_checked
    assert r.schedule.topology.is_bidirectional()
    assert int(r.schedule.topology.out_degree().max()) <= d
    assert tc.verify(r.schedule).valid
    if r.best.exact:
        assert r.evaluated_time == pytest.approx(r.predicted_time, rel=1e-9)
    else:                                   # a line graph inside bidir(...): an upper bound
        assert r.evaluated_time <= r.predicted_time * (1 + 1e-9)


@pytest.mark.parametrize("n", [256, 1024])
def test_unions_with_the_transpose_beat_the_circulant_at_degree_4(n):
    """Appendix F: bidir(G) of a reverse-symmetric degree-2 digraph keeps G's steps, far
    below the optimal circulant's (its diameter grows as sqrt(N))."""
    front = Search(4, Cache(enabled=False), bidirectional=True).target(n)
    unions = [c for c in front if isinstance(c.recipe, BidirRecipe)]
    circulant = [c for c in front if c.name == f"optcirculant:{n}"]
    assert unions and circulant and min(c.steps for c in unions) < circulant[0].steps
    for c in unions:
        g = recipe_topology(c.recipe.base)
        phi = recipe_isomorphism(c.recipe.base)          # G -> G^T, composed through lines
        assert sorted(phi.tolist()) == list(range(n))
        assert np.all(g.pair_index(phi[g.dst], phi[g.src]) >= 0)


def test_a_union_schedule_verifies_at_the_predicted_cost():
    front = Search(4, Cache(enabled=False), bidirectional=True).target(256)
    c = next(c for c in front if isinstance(c.recipe, BidirRecipe))
    s = build_allreduce(c)
    assert s.topology.is_bidirectional() and tc.verify(s).valid
    steps, t_b = measure(s)
    assert steps == c.allreduce_steps and t_b <= 2 * c.t_b * (1 + 1e-9)


def test_with_optimize_the_choice_stays_bidirectional():
    # the optimizer proposes bidirectional bases only (tests/finder/test_bidirectional_range.py)
    r = find(16, 4, cache=False, optimize=True, bidirectional=True, max_evaluations=100)
    assert r.success and r.bidirectional_checked is True
    assert r.schedule.topology.is_bidirectional() and tc.verify(r.schedule).valid


def test_cli_flag_json_and_optimize():
    runner = CliRunner()
    res = runner.invoke(cli, ["find", "-n", "12", "-d", "3", "--bidirectional", "--json",
                              "--no-cache"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["bidirectional"] is True and doc["bidirectional_checked"] is True
    assert doc["best"]["name"] == "torus:2x6"
    opt = runner.invoke(cli, ["find", "-n", "12", "-d", "3", "--bidirectional", "--optimize",
                              "--max-evaluations", "50", "--no-cache", "--json"])
    assert opt.exit_code == 0, opt.output
    assert json.loads(opt.stdout)["bidirectional_checked"] is True


def test_restricted_frontiers_are_cached_apart(tmp_path):
    store = Cache(tmp_path / "c.sqlite")
    first = find(256, 4, cache=store, evaluate=False, bidirectional=True)
    again = find(256, 4, cache=store, evaluate=False, bidirectional=True)
    free = find(256, 4, cache=store, evaluate=False)
    assert not first.from_cache["frontier"] and again.from_cache["frontier"]
    assert [c.to_dict() for c in again.frontier] == [c.to_dict() for c in first.frontier]
    assert isinstance(again.best.recipe, BidirRecipe)
    assert not free.from_cache["frontier"] and free.best.name != first.best.name
