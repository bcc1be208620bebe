"""TACOS's hierarchical systems (ringfcswitch, switchswitch) and per-level switch unwinding."""

import networkx as nx
import numpy as np
import pytest

from topocoll.errors import SpecError, TopologyError, UnsupportedError
from topocoll.schedule import verify
from topocoll.synth.ten import synthesize
from topocoll.topology import topology
from topocoll.topology.unwind import parse_unwind_degree, switch_levels, unwind_switches


def _npu_graph(t):
    """NPU-to-NPU adjacency: direct links, and NPUs sharing a switch."""
    g = nx.Graph()
    n = t.num_nodes - len(t.switches)
    g.add_nodes_from(range(n))
    sw = set(t.switches)
    for a, b in zip(t.src.tolist(), t.dst.tolist()):
        if a not in sw and b not in sw:
            g.add_edge(a, b)
    for s in sw:
        ends = sorted({int(v) for v in t.dst[t.src == s]})
        g.add_edges_from((u, v) for i, u in enumerate(ends) for v in ends[i + 1:])
    return g


@pytest.mark.parametrize("r,f,s", [(2, 4, 1), (2, 4, 3), (3, 2, 2), (1, 3, 4), (4, 1, 2)])
def test_ringfcswitch_is_the_product_of_its_levels(r, f, s):
    t = topology(f"ringfcswitch:{r},{f},{s}", bandwidth=200.0)
    want = nx.cartesian_product(
        nx.cartesian_product(nx.cycle_graph(r) if r > 2 else nx.path_graph(r),
                             nx.complete_graph(f)), nx.complete_graph(s))
    # first dimension fastest: NPU id = i_ring + R * (i_fc + F * i_node)
    relabel = {((a, b), c): a + r * (b + f * c) for (a, b), c in want.nodes}
    assert nx.utils.graphs_equal(_npu_graph(t), nx.relabel_nodes(want, relabel))
    assert len(t.switches) == (r * f if s > 1 else 0)
    bw = {(int(a), int(b)): float(w) for a, b, w in zip(t.src, t.dst, t.bandwidth)}
    npus = r * f * s
    for (a, b), w in bw.items():
        if a >= npus or b >= npus:
            assert w == 50.0
        elif a // r == b // r:
            assert w == 200.0           # same ring
        else:
            assert w == 100.0


def test_switchswitch_levels_and_bandwidths():
    t = topology("switchswitch:8,4", bandwidth=300.0)
    levels = switch_levels(t)
    assert sorted(levels.values()) == [0] * 4 + [1] * 8
    for s, lv in levels.items():
        ends = sorted(int(v) for v in t.dst[t.src == s])
        if lv == 0:                     # a node's 8 NPUs
            assert ends == list(range(ends[0], ends[0] + 8)) and ends[0] % 8 == 0
        else:                           # one in-node index across the 4 nodes
            assert ends == [ends[0] + 8 * i for i in range(4)]
        assert set(t.bandwidth[t.src == s].tolist()) == {300.0 if lv == 0 else 25.0}


def test_bad_specs():
    with pytest.raises(SpecError, match="ringfcswitch needs at least 2 NPUs"):
        topology("ringfcswitch:1,1,1")
    with pytest.raises(SpecError, match="expected"):
        topology("switchswitch:8")
    with pytest.raises(SpecError, match="D must be >= 1"):
        topology("switchswitch:8,2,0")


def test_switch_levels_by_distance():
    assert switch_levels(topology("switch:8,2")) == {8: 0, 9: 0, 10: 1}


def test_per_level_unwinding_tacos_style():
    t = topology("switchswitch:4,3", bandwidth=120.0)
    u = unwind_switches(t, {0: None, 1: 1})
    out = np.bincount(u.src, minlength=12)
    assert (out == 3 + 1).all()         # K4 inside the node, one ring link across nodes
    fast = u.bandwidth > 30
    assert np.allclose(u.bandwidth[fast], 40.0) and np.allclose(u.bandwidth[~fast], 10.0)
    # the same as a list, and as the option string; a level not named is max
    assert unwind_switches(t, [None, 1]).num_links == u.num_links
    assert unwind_switches(t, "0:max,1:1").num_links == u.num_links
    assert unwind_switches(t, {1: 1}).num_links == u.num_links
    assert unwind_switches(t, {0: 1, 1: 1}).num_links == 12 * 2
    assert unwind_switches(t, {0: 2, 1: 2}).num_links == unwind_switches(t, 2).num_links


def test_parse_unwind_degree_refusals():
    for bad in ("0:0", "a:1", {-1: 1}, [0], 0):
        with pytest.raises(TopologyError):
            parse_unwind_degree(bad)


def test_synthesis_on_per_level_unwound_switchswitch():
    s = synthesize("switchswitch:4,2", "allgather", unwind_degree="0:max,1:1")
    assert verify(s).valid
    assert s.meta["unwind_degree"] == {"0": "max", "1": 1}
    with pytest.raises(UnsupportedError, match="unwind_degree"):
        synthesize("switchswitch:4,2", "allgather", unwind_degree="0:zero")


def test_switch_levels_survive_a_topology_file(tmp_path):
    from topocoll import save_topology

    t = topology("switchswitch:2,3")
    save_topology(t, tmp_path / "t.json")
    back = topology(str(tmp_path / "t.json"))
    assert switch_levels(back) == switch_levels(t)
    a, b = unwind_switches(t, "0:1"), unwind_switches(back, "0:1")
    assert a.num_links == b.num_links == 6 * 1 + 6 * 2


def test_two_level_switch_by_distance_levels():
    # switch:8,2: the leaves (level 0) unwound first pass the spine on; spine at degree 1
    t = topology("switch:8,2")
    u = unwind_switches(t, {0: None, 1: 1})
    assert u.num_nodes == 8 and u.meta["unwind_degree"] == {"0": "max", "1": 1}
    # each leaf: K4 among its endpoints (12 links); the spine, handed the 8 endpoints by the
    # leaves, a degree-1 ring over them (8 links)
    assert u.num_links == 2 * 12 + 8
    assert unwind_switches(t).num_links == 2 * 12 + 8 * 7
