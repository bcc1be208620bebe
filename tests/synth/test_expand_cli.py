"""The ``expand`` generator (``topocoll schedule SPEC -a expand``): a composite spec's schedule
by expansion of its leaf's BFB schedule. It verifies, and its steps and T_B are the finder's
predictions for the same recipe (docs/math.md section 4)."""

import json

import pytest
from click.testing import CliRunner

import topocoll as tc
from topocoll.cli.main import cli
from topocoll.finder import Candidate, compute_base
from topocoll.finder.recipes import SpecRecipe
from topocoll.finder.search import expand_candidate
from topocoll.schedule.io import load_schedule
from topocoll.synth import generate
from topocoll.synth.expansions import measure, predict
from topocoll.topology import save_topology, topology

# (spec, leaf, [(kind, params), ...] innermost first)
RECIPES = [
    ("line(line(kautz:2,2))", "kautz:2,2", [("line", {}), ("line", {})]),
    ("degree(complete:4,m=2)", "complete:4", [("degree", {"m": 2})]),
    ("power(ring:3,n=2)", "ring:3", [("power", {"n": 2})]),
    ("line(degree(kautz:2,2,m=2))", "kautz:2,2", [("degree", {"m": 2}), ("line", {})]),
    ("degree(line(optcirculant:8),m=2)", "optcirculant:8", [("line", {}), ("degree", {"m": 2})]),
]


def _finder_prediction(leaf, chain):
    """The finder's candidate for the recipe, from its verified measured base."""
    e = compute_base(leaf)
    c = Candidate(e.spec, e.nodes, e.degree, e.steps, e.t_b, SpecRecipe(e.spec), "base", True,
                  e.bw_optimal)
    for kind, params in chain:
        c = expand_candidate(c, kind, **params)
    return c


@pytest.mark.parametrize("spec, leaf, chain", RECIPES, ids=[r[0] for r in RECIPES])
def test_expanded_allreduce_verifies_and_meets_the_finders_prediction(spec, leaf, chain):
    s = generate(spec, "allreduce", "expand")
    assert s.topology.name == spec and tc.verify(s).valid
    c = _finder_prediction(leaf, chain)
    assert s.num_nodes == c.nodes and int(s.topology.out_degree().max()) == c.degree
    steps, t_b = measure(s)
    assert steps == 2 * c.steps
    if c.exact:
        assert t_b == pytest.approx(2 * c.t_b, rel=1e-9)
    else:                                   # a line graph: the prediction is an upper bound
        assert t_b <= 2 * c.t_b * (1 + 1e-9)
    assert (steps, t_b) == (s.meta["predicted"]["steps"],
                            pytest.approx(s.meta["predicted"]["t_b"], rel=1e-9))


@pytest.mark.parametrize("collective", ["allgather", "reduce_scatter"])
def test_each_phase_verifies(collective):
    s = generate("line(degree(kautz:2,2,m=2))", collective, "expand")
    assert s.collective.name == collective and tc.verify(s).valid
    assert measure(s)[0] == s.meta["predicted"]["steps"]


def test_bidir_keeps_the_base_costs():
    base = generate("uniring:5", "allgather", "bfb")
    s = generate("bidir(uniring:5)", "allgather", "expand")
    assert tc.verify(s).valid and s.topology.is_bidirectional()
    assert measure(s) == pytest.approx(predict("bidirectional", *measure(base), 5))


def test_cli_writes_a_verified_file_and_reports_the_closed_forms(tmp_path):
    out = tmp_path / "s.json"
    res = CliRunner().invoke(cli, ["schedule", "line(line(kautz:2,2))", "-c", "allreduce",
                                   "-a", "expand", "-o", str(out), "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["verified"] and doc["spec"] == "line(line(kautz:2,2))" and doc["leaf"] == "bfb"
    assert doc["measured"]["steps"] == doc["predicted"]["steps"] == 8
    s = load_schedule(str(out))
    assert tc.verify(s).valid and s.num_nodes == 24
    assert tc.evaluate(s, "1MiB").steps == 8


def test_a_topology_file_with_its_spec_given(tmp_path):
    path = tmp_path / "t.json"
    save_topology(topology("degree(complete:4,m=2)").with_links(name="mine"), str(path))
    res = CliRunner().invoke(cli, ["schedule", str(path), "-c", "allreduce", "-a", "expand",
                                   "-O", "spec=degree(complete:4,m=2)"])
    assert res.exit_code == 0, res.output
    assert "verified" in res.stdout


@pytest.mark.parametrize("args, words", [
    (["ring:4"], "composite spec"),
    (["line(ring:4"], "never closed"),
    (["degree(complete:4)"], "m="),
    (["ring:4", "-O", "spec=line(uniring:4)"], "another digraph"),
    (["line(ring:4)", "-O", "leaf=expand"], "expand itself"),
    (["line(ring:4)", "-O", "leaf=nosuch"], "nosuch"),
    (["line(ring:4)", "-c", "broadcast"], "broadcast"),
])
def test_bad_recipes_get_one_line_errors(args, words):
    argv = ["schedule", *args, "-a", "expand"]
    if "-c" not in args:
        argv += ["-c", "allreduce"]
    res = CliRunner().invoke(cli, argv)
    assert res.exit_code != 0
    err = res.stderr.strip()
    assert err.startswith("error:") and len(err.splitlines()) == 1, err
    assert words in err
    assert "Traceback" not in res.output
