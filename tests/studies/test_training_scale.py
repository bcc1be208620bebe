"""train-sim at thousands of nodes: what replaces building and verifying the whole schedule is
checked here against building and verifying it on small cases.

* the baselines' closed forms (:func:`baseline_closed_form`) equal the price of the generated,
  verified ShiftedRing and DBT schedules;
* an expanded candidate's cost by construction (:func:`predict_chain` on its verified base)
  equals the built expansion's recorded prediction, which the built schedule meets (exactly
  for degree expansions and powers, as an upper bound for line graphs) and which the verified
  explicit evaluation of the finder's choice meets exactly on the families train-sim chooses;
* the CLI says how every cost was obtained.
"""

import json

import pytest

import topocoll as tc
from tests.cli.conftest import run_cli
from topocoll.errors import TopocollError, UnsupportedError
from topocoll.finder import Workload, find
from topocoll.finder.core import BY_CONSTRUCTION, EXPLICIT
from topocoll.finder.evaluation import expansion_chain
from topocoll.finder.recipes import DegreeRecipe, LineRecipe, PowerRecipe, SpecRecipe
from topocoll.schedule.cost import step_costs
from topocoll.studies.models import model_profile
from topocoll.studies.allreduce_costs import CLOSED_FORM, baseline_closed_form, baseline_cost
from topocoll.synth import generate
from topocoll.synth.bfb import bfb_allreduce
from topocoll.synth.expansions import (cartesian_power_expansion, degree_expansion_schedule,
                                       line_graph_expansion, measure, predict_chain)
from topocoll.topology import topology

PRICE = {"alpha": "10us", "bandwidth": "100Gbps"}
#: The default cluster, 100Gbps on every link (DBT's nodes have different out-degrees).
PER_LINK = {"alpha": "10us"}


# ---------------------------------------------------------------------- baselines
@pytest.mark.parametrize("name,prices", [("ShiftedRing", PRICE), ("DBT", PRICE),
                                         ("ShiftedRing", PER_LINK), ("DBT", PER_LINK)])
def test_closed_form_baselines_equal_the_generated_schedules(name, prices):
    _closed_equals_generated(name, prices,
                             [*range(3, 34), 63, 64, 65, 100] if prices is PRICE else
                             [5, 8, 13, 16, 33, 64])


def _closed_equals_generated(name, prices, sizes):
    for n in sizes:
        try:
            want = baseline_cost(name, n, **prices)
        except TopocollError as exc:          # no shiftedring:4 or :6: the same error
            with pytest.raises(type(exc)):
                baseline_closed_form(name, n, **prices)
            continue
        got = baseline_closed_form(name, n, **prices)
        assert type(got) is type(want), (name, n)
        assert got.name == name and got.steps == want.steps, (name, n)
        assert got.latency == pytest.approx(want.latency, rel=1e-12), (name, n)
        assert got.per_byte == pytest.approx(want.per_byte, rel=1e-12), (name, n)
        for size in (2**10, 2**20, 2**26, 4e8):     # pipelined DBT: every chunk count too
            assert got(size) == pytest.approx(want(size), rel=1e-12), (name, n, size)
        if hasattr(want, "pieces"):
            assert [p[:2] for p in got.pieces] == [p[:2] for p in want.pieces], (name, n)
            assert [x for p in got.pieces for x in p[2:]] == pytest.approx(
                [x for p in want.pieces for x in p[2:]], rel=1e-12), (name, n)


@pytest.mark.parametrize("name,family,algorithm", [("ShiftedRing", "shiftedring", "shiftedring"),
                                                   ("DBT", "dbt", "dbt")])
def test_the_generated_baselines_verify(name, family, algorithm):
    for n in (5, 8, 13, 16):
        schedule = generate(topology(f"{family}:{n}"), "allreduce", algorithm)
        assert tc.verify(schedule).valid, (name, n)


def test_closed_form_shifted_ring_by_hand():
    c = baseline_closed_form("ShiftedRing", 4096, alpha=1.0, bandwidth=1.0)
    assert c.steps == 2 * 4095 and c.per_byte == pytest.approx(2 * 4095 / 4096)


def test_closed_form_rejects_unknown_baselines():
    with pytest.raises(UnsupportedError, match="unknown baseline"):
        baseline_closed_form("Ring", 16, **PRICE)


# ---------------------------------------------------------------------- expansions
CHAINS = [
    ("complete:4", [("line", {})]),
    ("kautz:2,2", [("line", {}), ("line", {})]),
    ("bipartite:3", [("line", {}), ("line", {})]),
    ("circulant:7:1,2", [("degree", {"m": 2})]),
    ("complete:3", [("power", {"n": 2})]),
    ("complete:3", [("line", {}), ("degree", {"m": 2})]),
]
MAKE = {"line": lambda s, p: line_graph_expansion(s),
        "degree": lambda s, p: degree_expansion_schedule(s, p["m"]),
        "power": lambda s, p: cartesian_power_expansion(s, p["n"])}


@pytest.mark.parametrize("spec,chain", CHAINS)
def test_predict_chain_is_the_built_expansions_prediction(spec, chain):
    base = bfb_allreduce(topology(spec))
    built = base
    for kind, params in chain:
        built = MAKE[kind](built, params)
    assert tc.verify(built).valid
    steps, t_b, exact = predict_chain(base, chain)
    assert exact == all(kind != "line" for kind, _ in chain)
    assert (steps, t_b) == pytest.approx((built.meta["predicted"]["steps"],
                                          built.meta["predicted"]["t_b"]), rel=1e-12)
    got_steps, got_tb = measure(built)
    assert got_steps == steps                      # steps always exact
    if exact:
        assert got_tb == pytest.approx(t_b, rel=1e-12)
    else:
        assert got_tb <= t_b * (1 + 1e-12)


def test_chain_of_a_recipe_is_innermost_first():
    recipe = DegreeRecipe(LineRecipe(PowerRecipe(SpecRecipe("ring:3"), 2)), 3)
    assert expansion_chain(recipe) == (SpecRecipe("ring:3"),
                              [("power", {"n": 2}), ("line", {}), ("degree", {"m": 3})])
    assert expansion_chain(SpecRecipe("ring:3")) == (SpecRecipe("ring:3"), [])


def _workload():
    return Workload.from_layers(model_profile("resnet50").forward_order_bytes(), None)


def test_a_base_pick_has_no_construction_and_is_verified_explicitly():
    # at 64 nodes under the paper's convention (100Gbps per node) the pick is a shipped base
    # itself: nothing to construct from
    built = find(64, 4, _workload(), node_bandwidth="100Gbps", cache=False,
                 method="construction")
    assert "(" not in built.best.name
    assert built.evaluation["method"] == EXPLICIT and built.evaluation["transfers"] > 0


@pytest.mark.parametrize("nodes", [128, 256])
def test_by_construction_equals_verified_explicit_on_train_sim_choices(nodes):
    explicit = find(nodes, 4, _workload(), cache=False, method="explicit")
    built = find(nodes, 4, _workload(), cache=False, method="construction")
    assert built.best.name == explicit.best.name
    a, b = explicit.evaluation, built.evaluation
    assert a["method"] == EXPLICIT and a["exact"] and a["transfers"] > 0
    assert b["method"] == BY_CONSTRUCTION and b["verified"]
    assert b["base"]["transfers"] < a["transfers"]
    assert b["steps"] == a["steps"]
    # line graphs: an upper bound in general, attained on these line(...) chains
    assert b["T_B_per_phase"] >= a["T_B_per_phase"] * (1 - 1e-12)
    assert b["T_B_per_phase"] == pytest.approx(a["T_B_per_phase"], rel=1e-12)
    assert b["time"] == pytest.approx(a["time"], rel=1e-12)


def test_explicit_prices_every_size_like_evaluate():
    r = find(64, 4, [2**10, 2**20, 3 * 2**20], cache=False, keep_schedule=True)
    for entry in r.evaluation["sizes"]:
        e = tc.evaluate(r.schedule, entry["size"], check=False)
        assert entry["steps"] == e.steps
        assert entry["T_L"] == pytest.approx(e.T_L, rel=1e-12)
        assert entry["T_B"] == pytest.approx(e.T_B, rel=1e-12)


def test_by_construction_is_cached(tmp_path):
    from topocoll.finder import Cache

    with Cache(tmp_path / "c.sqlite") as store:
        first = find(512, 4, "1MiB", cache=store, method="construction")
        again = find(512, 4, "1MiB", cache=store, method="construction")
    assert first.evaluation["source"] == "fresh" and again.evaluation["source"] == "cache"
    assert again.evaluation["method"] == BY_CONSTRUCTION
    assert again.evaluated_time == first.evaluated_time


def test_unknown_method():
    with pytest.raises(UnsupportedError, match="evaluation method"):
        find(16, 4, "1MiB", cache=False, method="guess")


def test_base_step_costs_are_what_construction_measures():
    base = bfb_allreduce(topology("optcirculant:16"))
    steps, _, beta = step_costs(base)
    assert predict_chain(base, [])[:2] == pytest.approx(
        (steps.size, beta.sum() * float(base.topology.egress_bandwidth().min())))


# ---------------------------------------------------------------------- CLI
def _train_sim(tmp_path, *args):
    result = run_cli(("train-sim", "--workload", "resnet50", "--json", *args), tmp_path)
    assert result.returncode == 0, result
    return json.loads(result.stdout)


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TOPOCOLL_CACHE_DIR", str(tmp_path / "cache"))


def test_cli_large_cluster_is_priced_by_construction_and_closed_forms(tmp_path):
    doc = _train_sim(tmp_path, "--nodes", "2048")
    ours = doc["ours"]
    assert ours["method"] == BY_CONSTRUCTION and ours["exact"] is False
    assert ours["base"]["topology"] == "bipartite:4"
    assert {k: v["method"] for k, v in doc["baselines"].items()} == {
        "two-phase bound": CLOSED_FORM, "ShiftedRing": CLOSED_FORM, "DBT": CLOSED_FORM}
    assert ours["comm_ratio"] >= 1 - 1e-12
    assert doc["baselines"]["ShiftedRing"]["steps"] == 2 * 2047


def test_cli_small_cluster_is_verified_explicit_and_verify_full_agrees(tmp_path):
    plain = _train_sim(tmp_path, "--nodes", "64")
    full = _train_sim(tmp_path, "--nodes", "64", "--verify-full", "--no-cache")
    assert plain["ours"]["method"] == EXPLICIT and plain["ours"]["exact"] is True
    assert full["ours"]["method"] == EXPLICIT
    assert full["baselines"]["DBT"]["method"] == "generated explicit"
    assert plain["baselines"]["DBT"]["method"] == CLOSED_FORM
    for name in ("ShiftedRing", "DBT"):
        assert plain["baselines"][name]["comm_time"] == pytest.approx(
            full["baselines"][name]["comm_time"], rel=1e-12)
    assert plain["comm_time"] == pytest.approx(full["comm_time"], rel=1e-12)
