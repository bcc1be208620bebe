"""The bases of Table 9 of Zhao et al. (NSDI 2025) added to the catalogue: the Diamond, the
modified de Bruijn digraphs of every size (not only D^k) and de Bruijn digraphs with their
self-loops, each measured from a verified BFB schedule, and the search's handling of loops."""

import dataclasses
import re

import numpy as np
import pytest

import topocoll as tc
from topocoll.finder import BaseDatabase, Cache, Search, catalogue, compute_base
from topocoll.finder.bases import LOOPED_FAMILIES, MODDEBRUIJN_MAX, measure_base
from topocoll.finder.bfbcost import bfb_phases


def _item(spec, degree=4):
    return next(i for i in catalogue(degree) if i.spec == spec)


def test_the_catalogue_lists_the_three_additions():
    specs = {i.spec: i for i in catalogue(4)}
    assert specs["diamond:8"].source == "bfb" and specs["diamond:8"].degree == 2
    for d in (2, 3, 4):
        powers = {d**k for k in range(1, 8)}
        got = {i.nodes for i in specs.values() if i.family == "moddebruijn" and i.degree == d}
        assert got >= set(range(d + 2, MODDEBRUIJN_MAX + 1)) - powers
        k = 2
        while d**k <= 256:
            assert specs[f"debruijn:{d},{k}"].nodes == d**k
            k += 1
    assert "debruijn" in LOOPED_FAMILIES


def test_diamond_entry_is_its_verified_bfb_allreduce():
    e = measure_base(_item("diamond:8", 2))
    assert (e.nodes, e.degree, e.steps, e.bw_optimal) == (8, 2, 3, False)
    assert (e.t_b_rs, e.t_b_ag) == pytest.approx((1.0, 1.0))
    # it is catalogued but dominated: the BFB-optimal 8-node degree-2 digraph is the circulant
    front = Search(2, Cache(enabled=False)).target(8)
    assert [(c.name, c.steps, c.t_b) for c in front] == [("dcirculant:8:1,3", 3, 0.875)]


@pytest.mark.parametrize("spec", ["moddebruijn:10,2", "moddebruijn:13,2", "moddebruijn:20,3",
                                  "moddebruijn:14,4", "moddebruijn:45,4", "moddebruijn:5,3",
                                  "moddebruijn:8,5", "moddebruijn:58,5", "moddebruijn:13,6",
                                  "moddebruijn:12,7", "moddebruijn:15,8"])
def test_moddebruijn_variants_cost_what_their_verified_bfb_measures(spec):
    # (the larger degrees are the variants the atlas picks at d = 5..8, docs/sweep.md)
    item = _item(spec, 8)
    assert item.source == "cost"
    entry = measure_base(item)                   # the exact evaluator, no schedule
    verified = compute_base(spec)                # builds and verifies the BFB allreduce
    assert entry.steps == verified.steps == tc.diameter(tc.build_topology(spec))
    assert (entry.t_b_ag, entry.t_b_rs) == pytest.approx((verified.t_b_ag, verified.t_b_rs),
                                                         rel=1e-9)
    assert entry.bw_optimal == verified.bw_optimal


def test_every_moddebruijn_variant_costs_what_its_verified_bfb_measures():
    # all 171 up to degree 4 (about 10 s: in the SLOW set)
    items = [i for i in catalogue(4, max_nodes=MODDEBRUIJN_MAX)
             if i.family == "moddebruijn" and i.source == "cost"]
    assert len(items) >= 171
    for item in items:
        entry, verified = measure_base(item), compute_base(item.spec)
        assert entry.steps == verified.steps, item.spec
        assert (entry.t_b_ag, entry.t_b_rs) == pytest.approx(
            (verified.t_b_ag, verified.t_b_rs), rel=1e-9), item.spec


def test_every_moddebruijn_variant_is_regular_and_strongly_connected():
    for item in catalogue(4, max_nodes=MODDEBRUIJN_MAX):
        if item.family == "moddebruijn":
            t = tc.build_topology(item.spec)
            assert set(t.out_degree().tolist()) == set(t.in_degree().tolist()) == {item.degree}
            assert not np.any(t.src == t.dst) and tc.is_strongly_connected(t)


def test_a_variant_beats_every_circulant_of_its_size_in_steps():
    # moddebruijn:10,2 has 3 steps (T_B 1.4), the best directed circulant 4 (0.9): a new point
    entry = measure_base(_item("moddebruijn:10,2"))
    best = measure_base(_item("dcirculant:10:1,3"))
    assert (entry.steps, best.steps) == (3, 4) and entry.t_b == pytest.approx(1.4)


# ---------------------------------------------------------------------- de Bruijn with loops
@pytest.mark.parametrize("k", [2, 3, 4, 5])
def test_binary_de_bruijn_with_loops_costs_its_loop_node_bound(k):
    # 0...0 has one usable in-link (1/2 of a node's bandwidth: its loop port is idle) and
    # 2^(t-1) sources at distance t, so BFB's T_B >= sum_t 2^t / N = 2 (N-1)/N; BFB meets it
    n = 2**k
    e = measure_base(_item(f"debruijn:2,{k}", 2))
    assert (e.nodes, e.degree, e.steps, e.bw_optimal) == (n, 2, k, False)
    assert (e.t_b_ag, e.t_b_rs) == pytest.approx((2 * (n - 1) / n,) * 2, rel=1e-9)


def test_loop_ports_are_priced_not_given_away():
    # splitting the egress over the links alone would give 0...0's single out-link all of
    # it, and the reduce-scatter (whose bottleneck is that link) would look cheaper
    t = tc.build_topology("debruijn:2,3")
    naive = bfb_phases(t)                        # with_node_bandwidth: 1/(D-1) at loop nodes
    priced = compute_base("debruijn:2,3")
    assert naive["t_b_rs"] == pytest.approx(1.5)
    assert priced.t_b_rs == priced.t_b_ag == pytest.approx(1.75)


def test_each_de_bruijn_is_matched_or_beaten_by_the_modified_one():
    db = BaseDatabase(Cache(enabled=False), 4)
    for item in catalogue(4):
        if item.family != "debruijn":
            continue
        loop = db.entry(item)
        mod = db.entry(_item(f"moddebruijn:{item.nodes},{item.degree}"))
        assert mod.steps <= loop.steps and mod.t_b <= loop.t_b * (1 + 1e-9), item.spec


def test_the_search_never_expands_a_looped_base(monkeypatch):
    # make debruijn:2,3 look unbeatable: it joins its cell, yet nothing is built from it
    real = BaseDatabase.entry

    def entry(self, item):
        e = real(self, item)
        return dataclasses.replace(e, t_b_rs=0.5, t_b_ag=0.5) if item.spec == "debruijn:2,3" \
            else e
    monkeypatch.setattr(BaseDatabase, "entry", entry)
    s = Search(2, Cache(enabled=False))
    assert "debruijn:2,3" in [c.name for c in s.cell(8, 2)]
    assert "dcirculant:8:1,3" in [c.name for c in s.cell(8, 2)]      # not hidden by it
    names = [c.name for n in (16, 32, 64) for c in s.cell(n, 2)]
    assert names and not any(re.search(r"(^|[(,])debruijn:", n) for n in names)
    assert "line(dcirculant:8:1,3)" in names
    assert s.target(8)[0].name == "debruijn:2,3"
