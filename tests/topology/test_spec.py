"""Spec strings: the families table of docs/format.md, options, files, overrides, and every kind of
nonsense."""

import dataclasses

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topocoll.errors import (FileAccessError, InputTypeError, ScheduleFormatError, SpecError,
                             UnitError)
from topocoll.topology import (FAMILIES, Topology, circulant_graph, describe_families, diameter,
                               parse_spec, save_topology, topology, torus_graph)
from topocoll.topology.families import checks

# spec -> (canonical name, nodes, links, family)
TABLE = {
    "ring:8": ("ring:8", 8, 16, "ring"),
    "uniring:8": ("uniring:8", 8, 8, "uniring"),
    "torus:4x6x3": ("torus:4x6x3", 72, 432, "torus"),
    "torus:2x4:double": ("torus:2x4:double", 8, 32, "torus"),
    "mesh:5x5": ("mesh:5x5", 25, 80, "mesh"),
    "hypercube:6": ("hypercube:6", 64, 384, "hypercube"),
    "complete:8": ("complete:8", 8, 56, "complete"),
    "circulant:16:1,4": ("circulant:16:1,4", 16, 64, "circulant"),
    "kautz:2,3": ("kautz:2,3", 12, 24, "kautz"),
    "genkautz:50,3": ("genkautz:50,3", 50, 148, "genkautz"),
    "debruijn:2,5": ("debruijn:2,5", 32, 62, "debruijn"),
    "bipartite:4": ("bipartite:4", 8, 32, "bipartite"),
    "hamming:3,4": ("hamming:3,4", 64, 576, "hamming"),
}


@pytest.mark.parametrize("spec", sorted(TABLE))
def test_design_table_specs_parse(spec):
    name, nodes, links, family = TABLE[spec]
    t = topology(spec)
    assert isinstance(t, Topology)
    assert (t.name, t.num_nodes, t.num_links, t.meta["family"]) == (name, nodes, links, family)


def test_parse_spec_gives_builder_arguments():
    assert parse_spec("torus:4x6x3")[1] == {"dims": (4, 6, 3)}
    assert parse_spec("torus:2x4:double")[1] == {"dims": (2, 4), "double_size2": True}
    assert parse_spec("circulant:16:1,4")[1] == {"n": 16, "offsets": (1, 4)}
    assert parse_spec("kautz:2,3")[1] == {"d": 2, "k": 3}
    assert parse_spec("genkautz:50,3")[1] == {"n": 50, "d": 3}
    assert parse_spec("hamming:3,4")[1] == {"d": 3, "q": 4}
    assert parse_spec("hypercube:6")[1] == {"k": 6}
    family, kwargs = parse_spec("ring:8")
    assert family is FAMILIES["ring"] and kwargs == {"n": 8}


def test_spec_builds_the_same_links_as_the_builder():
    a, b = topology("torus:2x4:double"), torus_graph([2, 4], double_size2=True)
    assert np.array_equal(a.src, b.src) and np.array_equal(a.dst, b.dst)
    c, d = topology("circulant:16:15,4"), circulant_graph(16, [1, 4])
    assert c.name == "circulant:16:1,4" and np.array_equal(c.dst, d.dst)


def test_whitespace_and_case_are_forgiven():
    assert topology("  Torus:4X4 ").name == "torus:4x4"
    assert topology("kautz: 2, 3").name == "kautz:2,3"
    assert topology("torus:2x2:DOUBLE").num_links == 16


BAD = [
    ("torus:0x4", r"torus dimensions must be >= 1, got 0"),
    ("torus:-1x3", r"torus dimensions must be >= 1, got -1"),
    ("torus:1x1", r"at least 2 nodes in total"),
    ("ring:1", r"ring needs n >= 2, got 1"),
    ("uniring:1", r"uniring needs n >= 2, got 1"),
    ("circulant:10:0", r"circulant offsets must be in 1\.\.n-1 = 1\.\.9, got 0"),
    ("circulant:10:3,7", r"offsets 3 and 7 are the same links"),
    ("circulant:16", r"circulant is missing its arguments; use circulant:N:A1,A2"),
    ("circulant:16:1,x", r"'x' is not a whole number"),
    ("foo:3", r"unknown topology family 'foo'.*known families: bipartite, borelcayley, "
     r"bundlefly, circulant, complete"),
    ("torus:", r"torus is missing its arguments; use torus:D1xD2x\.\.\..*e\.g\. torus:4x6x3"),
    ("torus", r"torus is missing its arguments"),
    ("torus:4x", r"'' is not a whole number"),
    ("torus:4.5x2", r"'4\.5' is not a whole number"),
    ("hypercube:x", r"'x' is not a whole number; use hypercube:K, e\.g\. hypercube:6"),
    ("hypercube:0", r"hypercube needs dimension k >= 1, got 0"),
    ("hypercube:40", r"would have 1099511627776 nodes"),
    ("ring:8:bogus", r"unknown option 'bogus'; ring takes no options"),
    ("torus:4x4:bogus", r"unknown option 'bogus'; torus takes options: double"),
    ("kautz:2", r"expected 2 numbers separated by ',' \(D,K\)"),
    ("kautz:2,3,4", r"expected 2 numbers"),
    ("kautz:1,3", r"kautz needs degree d >= 2, got 1"),
    ("genkautz:1,3", r"genkautz needs n >= 2 nodes, got 1"),
    ("debruijn:2,0", r"debruijn needs string length k >= 1, got 0"),
    ("hamming:3,1", r"hamming needs alphabet size q >= 2, got 1"),
    ("bipartite:0", r"bipartite needs n >= 1 nodes per side, got 0"),
    ("complete:1", r"complete needs n >= 2, got 1"),
    ("", r"empty topology spec"),
    ("   ", r"empty topology spec"),
]


@pytest.mark.parametrize("spec, message", BAD)
def test_nonsense_raises_one_line_spec_error_naming_the_rule(spec, message):
    with pytest.raises(SpecError, match=message) as info:
        topology(spec)
    assert "\n" not in str(info.value)
    assert isinstance(info.value, ValueError)


def test_spec_errors_name_the_spec():
    with pytest.raises(SpecError, match=r"'ring:1'"):
        topology("ring:1")
    with pytest.raises(SpecError, match=r"'hypercube:x'"):
        topology("hypercube:x")


def test_unknown_family_lists_every_known_family():
    with pytest.raises(SpecError) as info:
        topology("foo:3")
    for name in FAMILIES:
        assert name in str(info.value)


def test_bandwidth_and_latency_numbers_and_unit_strings():
    t = topology("ring:4", bandwidth="100Gbps", latency="10us")
    assert np.all(t.bandwidth == 12.5e9) and np.allclose(t.latency, 1e-5)
    u = topology("ring:4", bandwidth=1e9, latency=0)
    assert np.all(u.bandwidth == 1e9) and np.all(u.latency == 0)
    v = topology("ring:4", latency="2us")
    assert np.all(v.bandwidth == 12.5e9) and np.allclose(v.latency, 2e-6)
    with pytest.raises(UnitError):
        topology("ring:4", bandwidth="fast")
    with pytest.raises(UnitError):
        topology("ring:4", bandwidth=-1)


def test_topology_object_passes_through_or_gets_new_links():
    t = torus_graph([3, 3])
    assert topology(t) is t
    u = topology(t, bandwidth="25GB/s")
    assert u is not t and np.all(u.bandwidth == 25e9) and np.all(u.latency == t.latency)
    assert u.name == t.name and np.array_equal(u.dst, t.dst)
    assert np.all(t.bandwidth == 12.5e9)   # the original is untouched


def test_networkx_graph_is_converted():
    t = topology(nx.cycle_graph(5), latency=1e-6)
    assert t.num_nodes == 5 and t.num_links == 10 and np.all(t.latency == 1e-6)


def test_other_types_are_refused():
    with pytest.raises(InputTypeError):
        topology(42)
    with pytest.raises(InputTypeError):
        parse_spec(None)


def test_files_are_loaded_by_name_and_path(tmp_path, monkeypatch):
    original = topology("kautz:2,3", bandwidth=3e9)
    for suffix in (".json", ".graphml"):
        path = tmp_path / f"k{suffix}"
        save_topology(original, path)
        for spec in (str(path), path):
            t = topology(spec)
            assert t.num_nodes == 12 and np.all(t.bandwidth == 3e9)
            assert sorted(zip(t.src.tolist(), t.dst.tolist())) == \
                sorted(zip(original.src.tolist(), original.dst.tolist()))
        assert np.all(topology(path, bandwidth=1.0).bandwidth == 1.0)
    monkeypatch.chdir(tmp_path)
    assert topology("k.json").num_nodes == 12          # relative name, no separator
    assert topology("./k.graphml").num_nodes == 12


def test_missing_file_is_a_file_access_error_not_a_spec_error(tmp_path):
    with pytest.raises(FileAccessError, match=r"nope\.json: cannot read: No such file"):
        topology(str(tmp_path / "nope.json"))
    with pytest.raises(ScheduleFormatError, match=r"unknown topology file type '\.txt'"):
        topology(str(tmp_path / "x.txt"))


def test_describe_families_lists_every_family_with_a_working_example():
    rows = describe_families()
    assert [r["name"] for r in rows] == list(FAMILIES)
    assert {r["name"] for r in rows} >= {"ring", "uniring", "torus", "mesh", "hypercube",
                                         "complete", "circulant", "kautz", "genkautz",
                                         "debruijn", "bipartite", "hamming"}
    for row in rows:
        assert set(row) == {"name", "params", "summary", "example"}
        assert row["summary"] and "\n" not in row["summary"]
        assert row["example"].startswith(row["name"] + ":")
        assert topology(row["example"]).name == row["example"]   # examples are canonical


def test_family_records_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        FAMILIES["ring"].name = "loop"


# ---------------------------------------------------------------- property tests
@settings(max_examples=30, deadline=None)
@given(st.lists(st.integers(1, 6), min_size=1, max_size=4).filter(
    lambda dims: int(np.prod(dims)) >= 2), st.booleans())
def test_torus_specs_round_trip_through_their_names(dims, double):
    spec = "torus:" + "x".join(map(str, dims)) + (":double" if double else "")
    t = topology(spec)
    assert t.num_nodes == int(np.prod(dims))
    again = topology(t.name)
    assert np.array_equal(again.src, t.src) and np.array_equal(again.dst, t.dst)
    assert diameter(t) == sum(k // 2 for k in dims)


TOKENS = st.sampled_from(list(FAMILIES) + ["foo", "", "x", ",", ":", "double", "bogus", "-",
                                           "0", "1", "2", "3", "7", "12", "4x4", "2,3", " "])


@settings(max_examples=300, deadline=None)
@given(st.lists(TOKENS, min_size=1, max_size=6))
def test_junk_specs_give_a_topology_or_a_spec_error(tokens):
    spec = "".join(tokens)
    if spec.strip() == "-":   # standard input, which the test runner does not let us read
        with pytest.raises(FileAccessError, match="<stdin>: cannot read"):
            topology(spec)
        return
    with pytest.MonkeyPatch.context() as mp:   # keep accidental giants cheap: refuse them
        mp.setattr(checks, "MAX_LINKS", 20_000)
        try:
            t = topology(spec)
        except SpecError as err:
            assert str(err) and "\n" not in str(err)
            return
    assert isinstance(t, Topology) and not np.any(t.src == t.dst)
    assert t.num_links <= 20_000
    assert topology(t.name).num_links == t.num_links


@pytest.mark.parametrize("spec", ["ring:" + "9" * 5000, "line(ring:" + "9" * 5000 + ")",
                                  "degree(ring:4,m=" + "9" * 5000 + ")",
                                  "torus:4x" + "7" * 4400])
def test_numbers_of_thousands_of_digits_are_one_short_line(spec):
    from topocoll.errors import SpecError
    from topocoll.topology.specs import topology as build

    with pytest.raises(SpecError, match="digits") as err:
        build(spec)
    message = str(err.value)
    assert "\n" not in message and len(message) < 300 and f"({len(spec)} characters)" in message
