"""The optimizer: never slower than its seed, degrees and strong connectivity kept,
deterministic for a seed and an evaluation count, its time the evaluated time of its verified
schedule; the rewiring walk's invariants; pluggable schedule algorithms."""

import numpy as np
import pytest

import topocoll as tc
from topocoll.finder import Workload, find, optimize
from topocoll.finder import build as build_module
from topocoll.finder.bfbcost import bfb_phases
from topocoll.finder.optimize import Skeleton, BaseScorer, SkeletonTrack, skeleton_of
from topocoll.finder.search import Candidate, Search, expand_candidate
from topocoll.schedule.model import Schedule

MIB = 2**20


def _check(result, degree):
    topo = result.schedule.topology
    assert tc.verify(result.schedule).valid
    assert set(topo.out_degree().tolist()) == set(topo.in_degree().tolist()) == {degree}
    assert tc.is_strongly_connected(topo)
    assert tc.evaluate(result.schedule, MIB).time == pytest.approx(result.evaluated_time,
                                                                   rel=1e-12)
    assert result.evaluation["verified"] and result.evaluated_time <= result.seed_time


@pytest.mark.parametrize("nodes,evaluations", [(64, 300), (48, 200), (32, 150)])
def test_never_worse_regular_connected_and_its_time_is_the_verified_one(nodes, evaluations):
    r = optimize(nodes, 4, "1MiB", max_evaluations=evaluations, seed=1)
    _check(r, 4)
    assert r.evaluations <= evaluations and r.stopped in ("evaluations", "exhausted")


def test_improves_the_frontier_at_64_nodes():
    # a 16-node Cayley digraph of diameter 2 (non-abelian: no circulant gets there) under
    # one line graph beats line(optcirculant:16), the frontier's best
    # (seeded by the frontier without the optimizer's shipped bases, which hold that base;
    # the paper's convention, 100Gbps per node, under which the ranking is quoted)
    seed_frontier = Search(4, optimized_bases=False).target(64)
    r = optimize(64, 4, "1MiB", node_bandwidth="100Gbps", max_evaluations=1000, seed=0,
                 frontier=seed_frontier)
    _check(r, 4)
    assert r.improved and r.evaluated_time < r.seed_time * 0.98
    assert r.seed.name == "line(optcirculant:16)"
    assert r.best.name.startswith("line(metacyclic:") and r.best.steps == 3


def test_deterministic_for_a_seed():
    runs = [optimize(48, 4, "1MiB", max_evaluations=120, seed=s) for s in (5, 5, 6)]
    a, b, _ = runs
    assert a.best.name == b.best.name and a.evaluated_time == b.evaluated_time
    assert a.evaluations == b.evaluations and a.skeletons == b.skeletons


def test_split_search_is_the_same_here_on_processes_and_on_a_dask_cluster(cluster):
    # the skeletons as tasks: each its share of the candidates, wherever it runs
    runs = [optimize(48, 4, "1MiB", max_evaluations=121, seed=5, **where)
            for where in ({"workers": 1}, {"workers": 2},
                          {"scheduler": cluster.scheduler_address})]
    here = runs[0]
    _check(here, 4)
    assert len(here.skeletons) >= 2 and 0 < here.evaluations <= 121
    for other in runs[1:]:
        _check(other, 4)
        assert (other.best.name, other.evaluated_time, other.evaluations, other.exact_evaluations,
                other.skeletons, other.stopped) == \
            (here.best.name, here.evaluated_time, here.evaluations, here.exact_evaluations,
             here.skeletons, here.stopped)


def test_split_search_with_no_candidates_returns_the_seed():
    r = optimize(40, 4, "1MiB", max_evaluations=0, workers=1)
    assert not r.improved and r.evaluations == 0 and r.stopped == "evaluations"
    assert tc.verify(r.schedule).valid


def test_zero_evaluations_returns_the_seed():
    r = optimize(40, 4, "1MiB", max_evaluations=0)
    assert not r.improved and r.best is r.seed and r.evaluated_time == r.seed_time
    assert r.evaluations == 0 and r.confirmed == [] and tc.verify(r.schedule).valid


def test_rewiring_keeps_degrees_connectivity_and_never_loses():
    sk = Skeleton(24, 3, (("line",),))
    topo = tc.build_topology("randomdigraph:24,3:4")
    order = np.argsort(topo.src, kind="stable")
    heads = topo.dst[order].reshape(24, 3).astype(np.int64)
    opt = BaseScorer(Workload.single("1MiB"), 1e-5, 12.5e9)
    track = SkeletonTrack(sk, "randomdigraph:24,3:4", np.random.default_rng(3))
    cost = bfb_phases(topo.with_node_bandwidth(1.0))
    start, _ = opt.time_of(sk, cost["steps"], 0.5 * (cost["t_b_ag"] + cost["t_b_rs"]))
    track.offer(start, None, heads)
    times = [start]
    for _ in range(15):
        opt.rewire(track, 8)
        times.append(track.best[0])
        walk = track.walk[1]
        assert sorted(np.bincount(walk.ravel(), minlength=24).tolist()) == [3] * 24
        assert all(len(set(row)) == 3 and i not in row for i, row in enumerate(walk.tolist()))
    assert times == sorted(times, reverse=True) and times[-1] < times[0]
    # the best base's reported time is its exact cost through the skeleton
    best = track.best[1]
    leaf = best.recipe[1]
    assert leaf[0] == "arcs"
    base = build_module.leaf_topology(leaf)
    assert tc.is_strongly_connected(base)
    c = bfb_phases(base)
    again, _ = opt.time_of(sk, c["steps"], 0.5 * (c["t_b_ag"] + c["t_b_rs"]))
    assert again == pytest.approx(track.best[0], rel=1e-12)
    built = build_module.build_allreduce(best)
    assert tc.verify(built).valid and built.num_nodes == 72


def test_skeletons_wrap_like_the_search():
    c = Candidate("optcirculant:16", 16, 4, 3, 15 / 16, ("spec", "optcirculant:16"))
    big = expand_candidate(expand_candidate(c, "line"), "degree", m=2)
    sk = skeleton_of(big)
    assert (sk.nodes, sk.degree, sk.chain) == (16, 4, (("line",), ("degree", 2)))
    assert sk.wrap(c) == big


def test_find_optimize_and_the_cli_flags():
    # the shipped 16-node base already gives find its best: the optimizer may only match it
    plain = find(64, 4, "1MiB", cache=False)
    r = find(64, 4, "1MiB", cache=False, optimize=True, max_evaluations=1000)
    assert r.evaluated_time <= plain.evaluated_time and r.optimization["evaluations"] > 0
    assert r.success and tc.verify(r.schedule).valid
    assert r.to_dict()["optimization"]["evaluations"] <= 1000


def test_cli(tmp_path):
    from tests.cli.conftest import run_cli

    r = run_cli(["find", "-n", 64, "-d", 4, "--optimize", "--max-evaluations", 1000, "--json"],
                tmp_path)
    assert r.returncode == 0, r
    doc = r.json()
    assert doc["optimization"]["evaluations"] <= 1000
    assert doc["best"]["name"].startswith("line(metacyclic")
    bad = run_cli(["find", "-n", 64, "-d", 4, "--budget", "5s"], tmp_path)
    assert bad.returncode != 0 and "--optimize" in bad.stderr
    bad = run_cli(["find", "-n", 64, "-d", 4, "--workers", 2], tmp_path)
    assert bad.returncode != 0 and "--optimize" in bad.stderr
    bad = run_cli(["find", "-n", 64, "-d", 4, "--optimize", "--workers", 2, "--scheduler",
                   "tcp://127.0.0.1:1"], tmp_path)
    assert bad.returncode != 0 and "not both" in bad.stderr
    split = run_cli(["find", "-n", 32, "-d", 4, "--optimize", "--max-evaluations", 60,
                     "--workers", 2, "--json"], tmp_path)
    assert split.returncode == 0, split
    assert 0 < split.json()["optimization"]["evaluations"] <= 60


# ---------------------------------------------------------------------- algorithms
def _dropping(topology, **options):
    """A broken algorithm: BFB less its last transfer (the verifier must refuse it)."""
    s = build_module.ALGORITHMS["bfb"](topology, **options)
    return Schedule(s.topology, "allreduce", s.transfers[:-1], algorithm="dropping")


def test_a_plugged_in_algorithm_is_verified_and_the_fastest_valid_one_kept(monkeypatch):
    monkeypatch.setitem(build_module.ALGORITHMS, "dropping", _dropping)
    r = find(16, 4, "1MiB", cache=False, algorithms=("dropping", "bfb"))
    assert r.success and r.evaluation["algorithm"] == "bfb"
    only_bad = find(16, 4, "1MiB", cache=False, algorithms=("dropping",))
    assert not only_bad.success and "verification" in only_bad.message
    with pytest.raises(tc.TopocollError, match="unknown schedule algorithm"):
        find(16, 4, "1MiB", cache=False, algorithms=("nope",))
