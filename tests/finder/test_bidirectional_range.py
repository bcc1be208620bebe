"""The bidirectional restriction (Zhao et al., NSDI 2025, appendix F) beyond one find: over a
range of N (find_range), in a sweep (whose cells it keys apart in the cache), and in the
optimizer (find --optimize --bidirectional proposes bidirectional bases only)."""

import json

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import topocoll as tc
from tests.cli.conftest import run_cli
from topocoll.finder import Workload, build_allreduce, find, find_range, sweep
from topocoll.finder.bidir_moves import inverse, inverse_closed, is_symmetric
from topocoll.finder.optimize import BaseScorer, Skeleton, SkeletonTrack, group_presentations
from topocoll.finder.recipes import SpecRecipe
from topocoll.topology import topology

SIZES = range(3, 33)
DEGREES = (2, 3, 4)


def _every_link_has_its_reverse(topo):
    links = set(zip(topo.src.tolist(), topo.dst.tolist()))
    return bool(links) and all((v, u) in links for u, v in links)


def _pick(candidates, workload="1MiB"):
    w = Workload.single(workload) if isinstance(workload, str) else workload
    return min(candidates, key=lambda c: (c.time(w, alpha=1e-5, bandwidth=50e9), c.name))


@pytest.fixture(scope="module")
def ranges():
    """``{d: (unrestricted, bidirectional)}`` frontiers over :data:`SIZES`, no cache."""
    return {d: (find_range(SIZES, d, cache=False),
                find_range(SIZES, d, cache=False, bidirectional=True)) for d in DEGREES}


# ---------------------------------------------------------------------- (a) find_range
@pytest.mark.parametrize("d", DEGREES)
def test_range_picks_are_bidirectional_and_verify(ranges, d):
    _, two_way = ranges[d]
    assert set(two_way) == set(SIZES)
    for n, front in two_way.items():
        assert front, n
        for c in front:                     # every frontier point, the pick among them
            if isinstance(c.recipe, SpecRecipe):
                assert _every_link_has_its_reverse(topology(c.recipe.spec)), c.name
        if n > 12:
            continue
        pick = _pick(front)
        schedule = build_allreduce(pick)
        assert _every_link_has_its_reverse(schedule.topology), pick.name
        assert schedule.topology.num_nodes == n
        assert tc.verify(schedule).valid, pick.name


def test_range_is_cached_apart_from_the_unrestricted_range(tmp_path):
    store = tmp_path / "c.sqlite"
    free = find_range([9, 10], 3, cache=store)
    two_way = find_range([9, 10], 3, cache=store, bidirectional=True)
    again = find_range([9, 10], 3, cache=store)
    assert [c.name for c in two_way[9]] == ["ring:9"]
    assert [c.name for c in free[9]] == [c.name for c in again[9]] == ["dcirculant:9:1,3,4"]
    assert not _every_link_has_its_reverse(build_allreduce(free[9][0]).topology)


def test_degree_one_has_no_bidirectional_topology_beyond_two_nodes():
    got = find_range([2, 3, 4], 1, cache=False, bidirectional=True)
    assert [c.name for c in got[2]] == ["complete:2"] and got[3] == [] and got[4] == []


# ---------------------------------------------------------------------- (b) never faster
@settings(max_examples=60, deadline=None)
@given(n=st.sampled_from(list(SIZES)), d=st.sampled_from(DEGREES),
       size=st.integers(1, 1 << 30), alpha=st.floats(1e-7, 1e-4))
def test_the_restricted_pick_is_never_predicted_faster(ranges, n, d, size, alpha):
    free, two_way = ranges[d]
    w = Workload.single(size)

    def best(front):
        return min(c.time(w, alpha=alpha, bandwidth=d * 12.5e9) for c in front)

    assert best(two_way[n]) >= best(free[n]) * (1 - 1e-12)


# ---------------------------------------------------------------------- (c) sweep cache keys
def test_a_bidirectional_sweep_never_reads_unrestricted_cells(tmp_path):
    store = tmp_path / "c.sqlite"
    args = ([7, 8], [3])
    free = sweep(*args, evaluate=False, cache=store, workers=1)
    two_way = sweep(*args, evaluate=False, cache=store, workers=1, bidirectional=True)
    assert (free.computed, two_way.computed, two_way.reused) == (2, 2, 0)
    assert [c["pick"] for c in two_way.cells] == ["ring:7", "hypercube:3"]
    assert [c["pick"] for c in free.cells] != [c["pick"] for c in two_way.cells]
    assert two_way.settings["bidirectional"] is True and "bidirectional" not in free.settings
    again_two = sweep(*args, evaluate=False, cache=store, workers=1, bidirectional=True)
    again_free = sweep(*args, evaluate=False, cache=store, workers=1)
    assert (again_two.reused, again_free.reused) == (2, 2)
    assert again_two.cells == two_way.cells and again_free.cells == free.cells


def test_an_evaluated_bidirectional_sweep_verifies_bidirectional_picks():
    r = sweep([6, 9], [1, 4], cache=False, workers=1, bidirectional=True)
    by = {(c["degree"], c["nodes"]): c for c in r.cells}
    assert by[(1, 6)]["status"] == "failed" and "bidirectional" in by[(1, 6)]["error"]
    for n in (6, 9):
        cell = by[(4, n)]
        assert cell["verified"] is True
        assert _every_link_has_its_reverse(topology(cell["pick"]))


# ---------------------------------------------------------------------- (d) the CLI
def test_sweep_cli_json_is_one_document(tmp_path):
    res = run_cli(["sweep", "-n", "7..8", "-d", "3", "--no-evaluate", "--bidirectional",
                   "--no-cache", "--json"], tmp_path)
    assert res.returncode == 0, res
    doc = json.loads(res.stdout)
    assert doc["settings"]["bidirectional"] is True
    assert [c["pick"] for c in doc["cells"]] == ["ring:7", "hypercube:3"]


def test_find_cli_optimize_bidirectional_json_is_one_document(tmp_path):
    res = run_cli(["find", "-n", "12", "-d", "3", "--bidirectional", "--optimize",
                   "--max-evaluations", "200", "--no-cache", "--json"], tmp_path)
    assert res.returncode == 0, res
    doc = json.loads(res.stdout)
    assert doc["bidirectional"] is True and doc["bidirectional_checked"] is True
    assert 0 < doc["optimization"]["evaluations"] <= 200
    assert _every_link_has_its_reverse(topology(doc["best"]["name"]))


# ---------------------------------------------------------------------- (e) the optimizer
@pytest.mark.parametrize("n, d", [(12, 3), (16, 4), (24, 3), (64, 4)])
def test_every_base_the_optimizer_scores_is_bidirectional(monkeypatch, n, d):
    scored = []
    original = BaseScorer.score

    def spy(self, skeleton, heads, **kw):
        scored.append(is_symmetric(heads))
        return original(self, skeleton, heads, **kw)

    monkeypatch.setattr(BaseScorer, "score", spy)
    r = find(n, d, cache=False, optimize=True, bidirectional=True, max_evaluations=300)
    assert r.success and r.bidirectional_checked is True
    assert len(scored) == r.optimization["evaluations"] > 0 and all(scored)
    assert _every_link_has_its_reverse(r.schedule.topology) and tc.verify(r.schedule).valid
    free = find(n, d, cache=False, evaluate=False)
    assert r.predicted_time >= free.predicted_time * (1 - 1e-12)


@settings(max_examples=80, deadline=None)
@given(n=st.integers(4, 40), d=st.integers(1, 5), seed=st.integers(0, 2**16))
def test_inverse_closed_generators_make_bidirectional_cayley_graphs(n, d, seed):
    rng = np.random.default_rng(seed)
    groups = group_presentations(n)
    m, k, r = groups[seed % len(groups)]
    gens = inverse_closed(m, k, r, d, rng)
    if gens is None:
        # only an odd degree can fail: every element then pairs off with its inverse
        assert d % 2 == 1 or d > n - 1
        return
    assert len(set(gens)) == d and (0, 0) not in gens
    assert sorted(inverse(m, k, r, g) for g in gens) == list(gens)
    assert _every_link_has_its_reverse(
        topology(f"metacyclic:{m},{k},{r}:" + ",".join(f"{y}.{j}" for y, j in gens)))


def test_symmetric_rewiring_keeps_every_state_bidirectional(monkeypatch):
    seen = []
    original = BaseScorer.score

    def spy(self, skeleton, heads, **kw):
        seen.append(is_symmetric(heads) and sorted(np.bincount(heads.ravel())) == [4] * 16)
        return original(self, skeleton, heads, **kw)

    monkeypatch.setattr(BaseScorer, "score", spy)
    scorer = BaseScorer(Workload.single("1MiB"), 1e-5, 50e9)
    track = SkeletonTrack(Skeleton(16, 4, ()), "torus:4x4", np.random.default_rng(1), True)
    topo = topology("torus:4x4")
    order = np.argsort(topo.src, kind="stable")
    track.offer(1.0, None, topo.dst[order].reshape(16, 4).astype(np.int64))
    assert scorer.rewire(track, 200) > 50
    assert is_symmetric(track.walk[1]) and not np.array_equal(track.walk[1], track.best[2])
    assert scorer.cayley(track, 50) > 0
    assert seen and all(seen)
