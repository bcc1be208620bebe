"""Topology files: JSON and GraphML round trips, networkx interchange, and bad files."""

import copy
import json

import networkx as nx
import numpy as np
import pytest

from topocoll.errors import FileAccessError, InputTypeError, ScheduleFormatError, TopologyError
from topocoll.defaults import LINK_BANDWIDTH, LINK_LATENCY
from topocoll.topology import (Topology, generalized_kautz_graph, kautz_graph, load_topology,
                               save_topology, topology_from_dict, torus_graph)

from tests.helpers import pipe_name


def links(t):
    """The multiset of links with their values, order-free."""
    return sorted(zip(t.src.tolist(), t.dst.tolist(), t.bandwidth.tolist(), t.latency.tolist()))


def mixed():
    """A topology with parallel links, different bandwidths and latencies, a switch and meta."""
    return Topology(4, [0, 0, 1, 2, 3, 3, 1], [1, 1, 2, 3, 0, 1, 0],
                    [1e9, 2e9, 3.5e9, 1e10, 12.5e9, 7e8, 1.25e9],
                    [1e-6, 1e-6, 0.0, 2e-5, 1e-5, 3e-7, 4e-6],
                    name="hand-made", switches=[2], meta={"note": "test", "n": 4})


TOPOLOGIES = [mixed, lambda: torus_graph([2, 3], double_size2=True),
              lambda: generalized_kautz_graph(50, 3), lambda: kautz_graph(2, 3, bandwidth=5e9)]


# ------------------------------------------------------------------ round trips
@pytest.mark.parametrize("make", TOPOLOGIES)
def test_json_round_trip_is_exact(make, tmp_path):
    t = make()
    path = tmp_path / "t.json"
    save_topology(t, path)
    back = load_topology(path)
    assert back.num_nodes == t.num_nodes and back.name == t.name
    assert np.array_equal(back.src, t.src) and np.array_equal(back.dst, t.dst)
    assert np.array_equal(back.bandwidth, t.bandwidth)
    assert np.array_equal(back.latency, t.latency)
    assert back.switches == t.switches
    assert back.meta == json.loads(json.dumps(t.meta))


def test_json_file_follows_the_contract(tmp_path):
    path = tmp_path / "t.json"
    save_topology(mixed(), path)
    data = json.loads(path.read_text())
    assert data["format"] == "topocoll.topology" and data["version"] == 1
    assert data["nodes"] == 4 and data["name"] == "hand-made" and data["switches"] == [2]
    assert data["links"][2] == {"src": 1, "dst": 2, "bandwidth": 3.5e9, "latency": 0.0}
    lines = path.read_text().splitlines()
    assert sum('"src"' in line for line in lines) == 7       # one link per line
    assert topology_from_dict(data).num_links == 7


def test_json_meta_with_numpy_values_is_written_as_plain_json(tmp_path):
    t = Topology(2, [0, 1], [1, 0], meta={"arr": np.arange(3), "x": np.float64(1.5),
                                          "bad": object()})
    path = tmp_path / "t.json"
    save_topology(t, path)
    assert load_topology(path).meta == {"arr": [0, 1, 2], "x": 1.5}


@pytest.mark.parametrize("make", TOPOLOGIES)
def test_graphml_round_trip_keeps_links_switches_and_name(make, tmp_path):
    t = make()
    path = tmp_path / "t.graphml"
    save_topology(t, path)
    back = load_topology(path)
    assert back.num_nodes == t.num_nodes and back.name == t.name
    assert links(back) == links(t)
    assert back.switches == t.switches
    assert back.meta == json.loads(json.dumps(t.meta))


def test_networkx_round_trip():
    t = mixed()
    g = t.to_networkx()
    assert isinstance(g, nx.MultiDiGraph) and g.number_of_edges() == 7
    back = Topology.from_networkx(g)
    assert links(back) == links(t) and back.switches == t.switches


def test_undirected_graphml_edges_become_two_links_with_default_values(tmp_path):
    g = nx.Graph()
    g.add_nodes_from([2, 10, 1, 0])            # file order is not numeric order
    g.add_edge(0, 1)
    g.add_edge(1, 2, bandwidth=5e9)
    g.add_edge(2, 10, latency=2e-6)
    path = tmp_path / "u.graphml"
    nx.write_graphml(g, path)
    t = load_topology(path)
    assert t.num_nodes == 4 and t.num_links == 6
    # ids are relabelled in numeric order: 0, 1, 2, 10 -> 0, 1, 2, 3
    assert links(t) == sorted([
        (0, 1, LINK_BANDWIDTH, LINK_LATENCY), (1, 0, LINK_BANDWIDTH, LINK_LATENCY),
        (1, 2, 5e9, LINK_LATENCY), (2, 1, 5e9, LINK_LATENCY),
        (2, 3, LINK_BANDWIDTH, 2e-6), (3, 2, LINK_BANDWIDTH, 2e-6)])
    assert t.name == "u"                        # no graph name: the file's stem


def test_graphml_with_named_nodes_keeps_file_order_and_drops_self_loops(tmp_path):
    g = nx.MultiDiGraph(name="lab")
    g.add_nodes_from(["spine", "leaf-b", "leaf-a"])
    g.nodes["spine"]["switch"] = True
    g.add_edge("leaf-a", "spine")
    g.add_edge("spine", "leaf-b")
    g.add_edge("spine", "leaf-b")               # parallel
    g.add_edge("leaf-b", "leaf-b")              # self-loop
    path = tmp_path / "lab.graphml"
    nx.write_graphml(g, path)
    t = load_topology(path)
    assert t.name == "lab" and t.switches == (0,)
    assert sorted(zip(t.src.tolist(), t.dst.tolist())) == [(0, 1), (0, 1), (2, 0)]
    assert t.meta["dropped_self_loops"] == 1


# ------------------------------------------------------------------ bad objects
def good():
    return {"format": "topocoll.topology", "version": 1, "name": "x", "nodes": 4,
            "links": [{"src": 0, "dst": 1, "bandwidth": 1e9, "latency": 1e-6},
                      {"src": 1, "dst": 2, "bandwidth": 1e9, "latency": 1e-6},
                      {"src": 2, "dst": 3, "bandwidth": 1e9, "latency": 1e-6},
                      {"src": 3, "dst": 0, "bandwidth": 1e9, "latency": 1e-6}]}


def _set(path, value):
    def mutate(d):
        *parents, last = path
        for key in parents:
            d = d[key]
        if value is KeyError:
            del d[last]
        else:
            d[last] = value
    return mutate


BAD_OBJECTS = [
    (_set(["nodes"], KeyError), r"^topology\.nodes: missing$"),
    (_set(["links"], KeyError), r"^topology\.links: missing$"),
    (_set(["nodes"], 0), r"^topology\.nodes: must be a whole number >= 1, got 0$"),
    (_set(["nodes"], "4"), r"^topology\.nodes: must be a whole number >= 1, got a string$"),
    (_set(["nodes"], True), r"^topology\.nodes: must be a whole number"),
    (_set(["links"], {}), r"^topology\.links: must be a list, got an object$"),
    (_set(["links", 2], 7), r"^topology\.links\[2\]: must be an object, got a number$"),
    (_set(["links", 3, "src"], KeyError), r"^topology\.links\[3\]\.src: missing$"),
    (_set(["links", 3, "bandwidth"], "fast"), r"^topology\.links\[3\]\.bandwidth: must be a "
                                              r"positive number, got a string$"),
    (_set(["links", 3, "bandwidth"], -1), r"^topology\.links\[3\]\.bandwidth: must be a positive "
                                          r"number, got -1$"),
    (_set(["links", 3, "bandwidth"], 0), r"^topology\.links\[3\]\.bandwidth: must be a positive"),
    (_set(["links", 3, "bandwidth"], "fast"), r"links\[3\]\.bandwidth: must be a positive number,"
                                              r" got a string"),
    (_set(["links", 3, "bandwidth"], float("inf")), r"links\[3\]\.bandwidth: must be a positive"),
    (_set(["links", 1, "latency"], -1e-6), r"^topology\.links\[1\]\.latency: must be a "
                                           r"non-negative number"),
    (_set(["links", 1, "latency"], float("nan")), r"links\[1\]\.latency: must be a non-negative"),
    (_set(["links", 1, "latency"], None), r"links\[1\]\.latency: must be a non-negative number, "
                                          r"got null"),
    (_set(["links", 1, "dst"], 4), r"^topology\.links\[1\]\.dst: must be a node id in 0\.\.3, "
                                   r"got 4$"),
    (_set(["links", 1, "src"], -1), r"^topology\.links\[1\]\.src: must be a node id in 0\.\.3"),
    (_set(["links", 1, "src"], 1.0), r"links\[1\]\.src: must be a node id in 0\.\.3, got a number"),
    (_set(["links", 1, "dst"], 1), r"^topology\.links\[1\]: 1->1 is a self-loop"),
    (_set(["format"], "topocoll.schedule"), r"^topology\.format: must be 'topocoll\.topology'"),
    (_set(["version"], 2), r"^topology\.version: this topocoll reads version 1, got 2$"),
    (_set(["name"], 5), r"^topology\.name: must be a string"),
    (_set(["switches"], [1, 9]), r"^topology\.switches\[1\]: must be a node id in 0\.\.3, got 9$"),
    (_set(["switches"], 1), r"^topology\.switches: must be a list"),
    (_set(["meta"], []), r"^topology\.meta: must be an object"),
]


@pytest.mark.parametrize("mutate, message", BAD_OBJECTS)
def test_bad_objects_name_the_offending_field(mutate, message):
    data = copy.deepcopy(good())
    topology_from_dict(data)                   # the unmutated object is fine ...
    mutate(data)
    with pytest.raises(ScheduleFormatError, match=message):   # ... the mutated one is not
        topology_from_dict(data)


def test_where_prefixes_the_field_path():
    data = good()
    data["links"][0]["bandwidth"] = -5
    with pytest.raises(ScheduleFormatError, match=r"^schedule\.topology\.links\[0\]\.bandwidth"):
        topology_from_dict(data, where="schedule.topology")
    with pytest.raises(ScheduleFormatError, match=r"^topology: must be an object, got a list$"):
        topology_from_dict([1, 2])


def test_minimal_object_without_optional_fields():
    t = topology_from_dict({"nodes": 2, "links": [
        {"src": 0, "dst": 1, "bandwidth": 3, "latency": 0}]})
    assert t.num_links == 1 and t.bandwidth[0] == 3.0 and t.switches == ()
    assert topology_from_dict({"nodes": 1, "links": []}).num_nodes == 1


# ------------------------------------------------------------------ bad files
def test_missing_file(tmp_path):
    with pytest.raises(FileAccessError, match=r"missing\.json: cannot read: No such file"):
        load_topology(tmp_path / "missing.json")
    with pytest.raises(FileAccessError, match=r"missing\.graphml: cannot read: No such file"):
        load_topology(tmp_path / "missing.graphml")


def test_truncated_and_non_json_files(tmp_path):
    path = tmp_path / "cut.json"
    text = json.dumps(good())
    path.write_text(text[: len(text) // 2])
    with pytest.raises(ScheduleFormatError, match=r"cut\.json: not valid JSON \(.* at line 1"):
        load_topology(path)
    path.write_text(" \n")
    with pytest.raises(ScheduleFormatError, match=r"cut\.json: empty, not a JSON topology file"):
        load_topology(path)
    path.write_bytes(b"\xff\xfe\x00binary")
    with pytest.raises(ScheduleFormatError, match=r"cut\.json: not a JSON topology file \(it "
                                                  r"starts with byte b'\\xff'\)"):
        load_topology(path)
    path.write_bytes(b'{"name": "\xff"}')
    with pytest.raises(ScheduleFormatError, match=r"cut\.json: not a text file"):
        load_topology(path)


def test_bad_field_in_file_names_file_and_field(tmp_path):
    data = good()
    data["links"][3]["bandwidth"] = -1
    path = tmp_path / "neg.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ScheduleFormatError,
                       match=r"neg\.json: topology\.links\[3\]\.bandwidth: must be a positive"):
        load_topology(path)


def test_file_without_name_is_named_after_the_file(tmp_path):
    data = good()
    del data["name"]
    path = tmp_path / "my-net.json"
    path.write_text(json.dumps(data))
    assert load_topology(path).name == "my-net"


def test_bad_graphml_files(tmp_path):
    path = tmp_path / "bad.graphml"
    path.write_text("<graphml><graph><node id='0'/>")         # truncated XML
    with pytest.raises(ScheduleFormatError, match=r"bad\.graphml: not readable GraphML"):
        load_topology(path)
    path.write_text("not xml at all")
    with pytest.raises(ScheduleFormatError, match=r"bad\.graphml: not a GraphML file"):
        load_topology(path)
    g = nx.DiGraph()
    g.add_edge("a", "b", bandwidth=-3.0)
    nx.write_graphml(g, path)
    with pytest.raises(ScheduleFormatError,
                       match=r"bad\.graphml: edge a->b: bandwidth must be a positive number"):
        load_topology(path)
    g = nx.DiGraph()
    g.add_edge("a", "b", latency="soon")
    nx.write_graphml(g, path)
    with pytest.raises(ScheduleFormatError, match=r"edge a->b: latency must be a non-negative"):
        load_topology(path)
    nx.write_graphml(nx.DiGraph(), path)
    with pytest.raises(ScheduleFormatError, match=r"bad\.graphml: the graph has no nodes"):
        load_topology(path)


def test_unknown_suffixes_and_unwritable_paths(tmp_path):
    with pytest.raises(ScheduleFormatError, match=r"unknown topology file type '\.yaml'"):
        load_topology(tmp_path / "t.yaml")
    with pytest.raises(ScheduleFormatError, match=r"unknown topology file type '\.csv'"):
        save_topology(torus_graph([3, 3]), tmp_path / "t.csv")
    with pytest.raises(FileAccessError, match=r"t\.json: folder .*no-such-dir does not exist"):
        save_topology(torus_graph([3, 3]), tmp_path / "no-such-dir" / "t.json")
    with pytest.raises(InputTypeError):
        save_topology("torus:3x3", tmp_path / "t.json")
    with pytest.raises(InputTypeError):
        load_topology(3.5)


def test_model_rejects_what_the_reader_would():
    # the reader's checks agree with the model's own (TopologyError for direct construction)
    with pytest.raises(TopologyError, match=r"self-loop"):
        Topology(3, [0, 1], [1, 1])
    with pytest.raises(TopologyError, match=r"bandwidth must be finite and positive"):
        Topology(2, [0], [1], bandwidth=-1.0)
    with pytest.raises(TopologyError, match=r"outside 0\.\.1"):
        Topology(2, [0], [2])


def test_links_without_bandwidth_or_latency_get_the_defaults():

    t = topology_from_dict({"nodes": 2, "links": [{"src": 0, "dst": 1}, {"src": 1, "dst": 0,
                                                                        "latency": 2e-6}]})
    assert t.bandwidth.tolist() == [LINK_BANDWIDTH, LINK_BANDWIDTH]
    assert t.latency.tolist() == [LINK_LATENCY, 2e-6]


# ------------------------------------------------------------------ rules of the file checks
def test_a_graphml_edge_to_an_undeclared_node_is_refused(tmp_path):
    path = tmp_path / "t.graphml"
    path.write_text('<?xml version="1.0"?>\n<graphml xmlns="http://graphml.graphdrawing.org/xmlns">'
                    '<graph edgedefault="undirected"><node id="0"/><node id="1"/>'
                    '<edge source="0" target="1"/><edge source="1" target="7"/>'
                    '</graph></graphml>\n')
    with pytest.raises(ScheduleFormatError,
                       match=r"t\.graphml: edge 1->7: node '7' is not declared \(every edge "
                             r"endpoint needs a <node> element\)"):
        load_topology(path)


def test_a_switch_listed_twice_is_refused(tmp_path):
    doc = {"nodes": 4, "links": [{"src": 0, "dst": 1}], "switches": [3, 3]}
    with pytest.raises(ScheduleFormatError, match=r"^topology\.switches\[1\]: node 3 is listed "
                                                  r"more than once$"):
        topology_from_dict(doc)
    (tmp_path / "t.json").write_text(json.dumps(doc))
    with pytest.raises(ScheduleFormatError, match=r"t\.json: topology\.switches\[1\]"):
        load_topology(tmp_path / "t.json")


# ------------------------------------------------------------------ files of every kind
@pytest.mark.parametrize("suffix", [".json", ".graphml"])
def test_a_topology_on_a_pipe_is_told_by_its_first_byte(tmp_path, suffix):
    import gzip
    import os

    t = mixed()
    save_topology(t, tmp_path / f"t{suffix}")
    raw = (tmp_path / f"t{suffix}").read_bytes()
    for data in (raw, gzip.compress(raw)):
        name, read_fd, thread = pipe_name(data)
        try:
            back = load_topology(name)
        finally:
            os.close(read_fd)
            thread.join(60)
        assert links(back) == links(t) and back.switches == t.switches


def test_compressed_topologies_are_written_by_name_and_read_by_content(tmp_path):
    t = mixed()
    for name in ("t.json.gz", "t.graphml.gz"):
        save_topology(t, tmp_path / name)
        raw = (tmp_path / name).read_bytes()
        assert raw[:2] == b"\x1f\x8b"
        plain = name.removesuffix(".gz")          # the name no longer says gzip: still read
        (tmp_path / plain).write_bytes(raw)
        assert links(load_topology(tmp_path / plain)) == links(t)


def test_saving_a_topology_writes_through_symlinks_and_keeps_the_old_file_on_failure(
        tmp_path, monkeypatch):
    import contextlib
    import importlib

    module = importlib.import_module("topocoll.topology.io")   # the package's name is a function

    (tmp_path / "link.json").symlink_to("target.json")
    save_topology(mixed(), tmp_path / "link.json")
    assert (tmp_path / "link.json").is_symlink()
    assert links(load_topology(tmp_path / "target.json")) == links(mixed())
    before = (tmp_path / "target.json").read_bytes()
    real = module.open_output

    @contextlib.contextmanager
    def failing(path):
        with real(path) as fh:
            fh.write(b"{half")
            raise OSError(28, "No space left on device")
            yield fh
    monkeypatch.setattr(module, "open_output", failing)
    with pytest.raises(FileAccessError, match="link.json: cannot write: No space left"):
        save_topology(torus_graph([3, 3]), tmp_path / "link.json")
    assert (tmp_path / "target.json").read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.json", "target.json"]


def test_devices_get_the_topology_streamed_in():
    import os
    import stat

    save_topology(mixed(), "/dev/null")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    with pytest.raises(FileAccessError, match="/dev/full: cannot write: No space left"):
        save_topology(mixed(), "/dev/full")
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


def test_a_stream_that_is_no_topology_is_refused_at_its_first_byte(monkeypatch):
    monkeypatch.setenv("TOPOCOLL_MAX_FILE_BYTES", str(64 << 20))
    with pytest.raises(ScheduleFormatError, match=r"/dev/zero: not a topology file \(JSON or "
                                                  r"GraphML\)"):
        load_topology("/dev/zero")


def test_the_read_limit_holds_for_topology_files(tmp_path, monkeypatch):
    save_topology(torus_graph([3, 3]), tmp_path / "t.json")
    monkeypatch.setenv("TOPOCOLL_MAX_FILE_BYTES", "100")
    with pytest.raises(FileAccessError, match="read limit of 100 bytes .*"
                                                  "TOPOCOLL_MAX_FILE_BYTES"):
        load_topology(tmp_path / "t.json")
