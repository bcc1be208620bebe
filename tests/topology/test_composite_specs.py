"""Composite specs: every name the finder prints is a spec that builds the digraph the finder
evaluated (same nodes, same links in the same order), the grammar round-trips and builds what
the operators predict, and malformed specs fail in one line naming the rule and the position."""

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import topocoll as tc
from topocoll.errors import SpecError
from topocoll.finder import Cache, Search, build_allreduce
from topocoll.finder.build import leaf_topology, recipe_spec, recipe_topology
from topocoll.finder.recipes import ArcsRecipe
from topocoll.finder.search import circulant_rule
from topocoll.synth.generators import generate
from topocoll.topology import transforms
from topocoll.topology.composite import (OPERATORS, Composite, decode_heads, format_spec,
                                         parse_composite, rewired_spec)
from topocoll.topology.specs import describe_operators, parse_spec, topology


def same_digraph(a, b):
    return (a.num_nodes == b.num_nodes and np.array_equal(a.src, b.src)
            and np.array_equal(a.dst, b.dst))


def one_line_error(spec, match):
    with pytest.raises(SpecError, match=match) as info:
        topology(spec)
    assert "\n" not in str(info.value)
    return str(info.value)


# ---------------------------------------------------------------------- the finder's names
@pytest.fixture(scope="module")
def small_finds():
    """Every frontier candidate for N in 6..64 and d in 1..4, by name."""
    found = {}
    for d in range(1, 5):
        search = Search(d, Cache(enabled=False))
        for n in range(6, 65):
            for c in search.target(n):
                found.setdefault(c.name, c)
    return found


def _shape(name):
    """The operators of a name with the leaves' arguments dropped: one candidate per shape."""
    return re.sub(r":[^,()]*(,[0-9][^,()]*)*", "", name)


def test_every_small_find_name_is_a_spec_building_the_same_digraph(small_finds):
    composite = [name for name in small_finds if "(" in name]
    assert len(small_finds) > 300 and len(composite) > 50
    assert any(name.count("line(") >= 3 for name in composite)
    for name, c in small_finds.items():
        built = topology(name)
        assert built.name == name, (name, built.name)        # names are canonical
        assert recipe_spec(c.recipe) == name
        assert same_digraph(built, recipe_topology(c.recipe)), name
        assert (built.num_nodes, int(built.out_degree().max())) == (c.nodes, c.degree), name


def test_the_schedule_find_builds_runs_on_the_topology_of_its_name(small_finds):
    shapes = {}
    for name in sorted(small_finds, key=lambda s: (small_finds[s].nodes, s)):
        shapes.setdefault(_shape(name), name)
    assert {"line(dcirculant)", "line(line(ring))", "line(line(line(dcirculant)))"} <= set(shapes)
    for name in shapes.values():
        schedule = build_allreduce(small_finds[name])
        assert same_digraph(schedule.topology, topology(name)), name
        assert tc.verify(schedule).valid, name
        again = generate(name, "allreduce")                  # the name alone is enough
        assert same_digraph(again.topology, schedule.topology), name
        assert tc.verify(again).valid, name


@pytest.mark.parametrize("degree,nodes,operator", [
    (6, 8, "degree("), (6, 54, "line(degree("), (6, 72, "line(degree("), (5, 18, "product("),
    (5, 21, "product("), (6, 90, "line(product("), (6, 100, "product("), (6, 36, "twistedtorus:")])
def test_larger_finds_with_products_and_degree_expansions(degree, nodes, operator):
    found = Search(degree, Cache(enabled=False)).target(nodes)
    names = [c.name for c in found]
    assert any(name.startswith(operator) for name in names), names
    for c in found:
        assert recipe_spec(c.recipe) == c.name
        built = topology(c.name)
        assert built.name == c.name and same_digraph(built, recipe_topology(c.recipe)), c.name


def test_power_cells_and_the_circulant_rule_name_specs():
    search = Search(6, Cache(enabled=False))
    (c,) = [c for c in search.cell(27, 6) if c.name.startswith("power(")]
    assert c.name == "power(complete:3,n=3)"
    assert same_digraph(topology(c.name), recipe_topology(c.recipe))
    assert same_digraph(build_allreduce(c).topology, topology(c.name))
    for n in (16, 110, 124, 147):                  # offsets above n/2 used to be printed
        spec, _ = circulant_rule(n, 6)
        assert topology(spec).name == spec


def test_rewired_bases_of_the_optimizer_are_specs():
    from topocoll.finder import Workload
    from topocoll.finder.bfbcost import bfb_phases
    from topocoll.finder.optimize import Skeleton, BaseScorer, SkeletonTrack

    sk = Skeleton(24, 3, (("line",),))
    topo = topology("randomdigraph:24,3:4")
    order = np.argsort(topo.src, kind="stable")
    heads = topo.dst[order].reshape(24, 3).astype(np.int64)
    opt = BaseScorer(Workload.single("1MiB"), 1e-5, 12.5e9)
    track = SkeletonTrack(sk, "randomdigraph:24,3:4", np.random.default_rng(3))
    cost = bfb_phases(topo.with_node_bandwidth(1.0))
    start, _ = opt.time_of(sk, cost["steps"], 0.5 * (cost["t_b_ag"] + cost["t_b_rs"]))
    track.offer(start, None, heads)
    for _ in range(15):
        opt.rewire(track, 8)
    best = track.best[1]
    leaf = best.recipe.base
    assert isinstance(leaf, ArcsRecipe) and leaf.name.startswith("rewired:24,3:")
    assert best.name == f"line({leaf.name})"
    assert same_digraph(topology(leaf.name), leaf_topology(leaf))
    assert decode_heads(24, 3, leaf.name.split(":")[2]).tolist() == [list(r) for r in leaf.heads]
    schedule = build_allreduce(best)
    assert same_digraph(schedule.topology, topology(best.name))
    assert tc.verify(schedule).valid


@settings(max_examples=30)
@given(st.integers(2, 300), st.integers(1, 4), st.integers(0, 2**32 - 1))
def test_rewired_spec_round_trips(n, d, seed):
    rng = np.random.default_rng(seed)
    heads = np.stack([(i + 1 + rng.choice(n - 1, size=d)) % n for i in range(n)])
    spec = rewired_spec(heads)
    t = topology(spec)
    assert t.name == spec and t.num_nodes == n
    assert t.src.tolist() == np.repeat(np.arange(n), d).tolist()
    assert t.dst.tolist() == heads.ravel().tolist()


# ---------------------------------------------------------------------- the grammar
BASES = {  # spec: (nodes, out-degree = in-degree of every node, counting parallel links)
    "uniring:3": (3, 1), "ring:4": (4, 2), "complete:3": (3, 2), "kautz:2,2": (6, 2),
    "dcirculant:5:1,2": (5, 2), "hamming:2,3": (9, 4), "metacyclic:8,2,7:1.0,3.1": (16, 2),
    "rewired:4,2:AQICAwMAAAE": (4, 2),
}


def _predict(node):
    if isinstance(node, str):
        return BASES[node]
    parts = [_predict(s) for s in node.specs]
    (n, d), params = parts[0], dict(node.params)
    if node.op == "line":
        return n * d, d
    if node.op == "degree":
        return n * params["m"], d * params["m"]
    if node.op == "power":
        return n ** params["n"], d * params["n"]
    if node.op == "bidir":
        return n, 2 * d
    return int(np.prod([p[0] for p in parts])), sum(p[1] for p in parts)      # product


def _extend(inner):
    return st.one_of(
        inner.map(lambda x: Composite("line", (x,))),
        inner.map(lambda x: Composite("bidir", (x,))),
        st.tuples(inner, st.integers(1, 3)).map(lambda a: Composite("degree", (a[0],),
                                                                    (("m", a[1]),))),
        st.tuples(inner, st.integers(1, 2)).map(lambda a: Composite("power", (a[0],),
                                                                   (("n", a[1]),))),
        st.lists(inner, min_size=2, max_size=3).map(lambda xs: Composite("product",
                                                                         tuple(xs))))


SPECS = st.recursive(st.sampled_from(sorted(BASES)), _extend, max_leaves=4)


@st.composite
def spaced(draw, node):
    """The spec's text with random whitespace around tokens and random operator case."""
    def ws():
        return draw(st.sampled_from(["", "", " ", "  ", "\t"]))

    def text(n):
        if isinstance(n, str):
            return ws() + n + ws()
        op = draw(st.sampled_from([n.op, n.op.upper(), n.op.capitalize()]))
        items = [text(s) for s in n.specs]
        items += [f"{ws()}{k}{ws()}={ws()}{v}{ws()}" for k, v in n.params]
        return ws() + op + ws() + "(" + ",".join(items) + ")" + ws()
    return text(node)


@settings(max_examples=60)
@given(st.data())
def test_random_nestings_round_trip_and_build_what_they_predict(data):
    node = data.draw(SPECS)
    if isinstance(node, str):
        assert parse_composite(node) == node
        return
    nodes, degree = _predict(node)
    text = format_spec(node)
    assert parse_composite(text) == node
    assert parse_composite(data.draw(spaced(node))) == node
    if nodes > 3000 or nodes * degree > 30000:
        return
    t = topology(data.draw(spaced(node)))
    assert t.name == text
    assert t.num_nodes == nodes
    assert set(t.out_degree(multi=True).tolist()) == {degree}
    assert set(t.in_degree(multi=True).tolist()) == {degree}


def test_composites_are_the_transforms():
    base = topology("dcirculant:8:1,3")
    assert same_digraph(topology("line(dcirculant:8:1,3)"), transforms.line_graph(base))
    assert same_digraph(topology("degree( dcirculant:8:1,3 , m = 2 )"),
                        transforms.degree_expansion(base, 2))
    assert same_digraph(topology("power(dcirculant:8:1,3,n=2)"),
                        transforms.cartesian_power(base, 2))
    assert same_digraph(topology("product(ring:3,dcirculant:8:1,3,hamming:2,3)"),
                        transforms.cartesian_product(topology("ring:3"), base,
                                                     topology("hamming:2,3")))
    assert same_digraph(topology("bidir(dcirculant:8:1,3)"), transforms.bidirectional_union(base))
    t = topology("line(ring:4)", bandwidth="1Gbps", latency="3us")
    assert set(t.bandwidth.tolist()) == {1.25e8} and set(t.latency.tolist()) == {3e-6}


def test_a_file_is_a_leaf(tmp_path):
    path = tmp_path / "t.json"
    tc.save_topology(topology("dcirculant:8:1,3"), path)
    assert same_digraph(topology(f"line({path})"), topology("line(dcirculant:8:1,3)"))
    assert same_digraph(topology(f"product(ring:3,{path})"),
                        topology("product(ring:3,dcirculant:8:1,3)"))


@pytest.mark.parametrize("spec,match", [
    ("line(ring:4", r"unbalanced parenthesis: the '\(' at position 4 is never closed"),
    ("line(line(ring:4)", r"unbalanced parenthesis: the '\(' at position 4 is never closed"),
    ("line(ring:4))", r"unbalanced parenthesis: the '\)' at position 12 closes nothing"),
    ("lien(ring:4)", r"unknown operator 'lien' at position 0; the operators are line, degree"),
    ("line(sqaure(ring:4))", r"unknown operator 'sqaure' at position 5"),
    ("degree(ring:4)", r"degree is missing its parameter m=\.\.\. before position 13"),
    ("power(ring:4, m=2)", r"unknown parameter 'm' of power at position 14"),
    ("degree(ring:4,m=2,m=3)", r"parameter m of degree given twice, at position 18"),
    ("degree(ring:4,m=two)", r"parameter m of degree needs a whole number at position 16"),
    ("degree(ring:4,m=0)", r"parameter m of degree must be >= 1, got 0 at position 16"),
    ("degree(m=2)", r"degree needs a spec before its parameters, at position 7"),
    ("line()", r"expected a spec at position 5"),
    ("line(ring:4,ring:5)", r"line takes 1 spec, got another at position 12"),
    ("product(ring:4)", r"product needs at least 2 specs, got 1"),
    ("line(ring:(4))", r"unexpected '\(' at position 10 inside the family spec 'ring:'"),
    ("line(ring:4) ring:5", r"unexpected 'r' at position 13 after the spec"),
    ("line(ring:1)", r"'line\(ring:1\)': leaf 'ring:1': ring needs n >= 2, got 1"),
    ("line(foo:3)", r"'line\(foo:3\)': unknown topology family 'foo'"),
    ("power(ring:1000,n=4)", r"would have 1000000000000 nodes; generators stop at"),
    ("rewired:4,2:AQIC", r"rewired:4,2 needs CODE of 8 heads"),
    ("rewired:4,2:AQ!C", r"URL-safe base64"),
    ("rewired:2,1:AAA", r"node 0 a link to itself"),
])
def test_malformed_specs_fail_in_one_line_naming_rule_and_position(spec, match):
    message = one_line_error(spec, match)
    assert message.startswith("bad topology spec")


def test_parse_spec_points_composites_to_parse_composite_and_operators_are_listed():
    with pytest.raises(SpecError, match="composite spec .* parse_composite"):
        parse_spec("line(ring:4)")
    rows = describe_operators()
    assert [r["name"] for r in rows] == list(OPERATORS)
    for row in rows:
        assert row["example"].startswith(row["name"] + "(")
        assert topology(row["example"]).name == row["example"]


# ---------------------------------------------------------------------- the CLI
def test_the_cli_takes_a_name_find_printed(tmp_path):
    from tests.cli.conftest import run_cli

    out = tmp_path / "s.json"
    r = run_cli(["schedule", "line(dcirculant:8:1,3)", "-c", "allreduce", "-o", str(out)],
                tmp_path)
    assert r.returncode == 0, r
    assert tc.verify(tc.load_schedule(out)).valid
    r = run_cli(["info", "line( line(dcirculant:8:1,3) )"], tmp_path)
    assert r.returncode == 0, r
    assert "32" in r.stdout
    r = run_cli(["info", "line(dcirculant:8:1,3"], tmp_path)
    assert r.returncode != 0 and "unbalanced parenthesis" in r.stderr
