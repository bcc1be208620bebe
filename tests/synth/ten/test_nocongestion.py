"""TACOS's TACCL-like baseline: TEN synthesis with uncapacitated links, priced with congestion."""

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings

import topocoll as tc
from topocoll.schedule import simulate
from topocoll.synth.ten import synthesize, ten_problem
from topocoll.synth.ten.nocongestion import uncongested_events, uncongested_synthesize
from topocoll.errors import UnsupportedError
from topocoll.topology import Topology, topology
from tests.helpers import strongly_connected_digraphs

B = 1e9


def _star(leaves):
    """Node 0 joined to every leaf by a cable: every route between leaves crosses it."""
    a = np.arange(1, leaves + 1)
    return Topology(leaves + 1, np.r_[a, 0 * a], np.r_[0 * a, a], bandwidth=B, latency=0.0,
                    name=f"star{leaves}")


@settings(max_examples=30, deadline=None)
@given(strongly_connected_digraphs(max_nodes=7))
def test_every_chunk_arrives_at_its_distance(topo):
    p = ten_problem(topo, "allgather", size=topo.num_nodes * 1e6)
    ev, span = uncongested_events(*p.arrays())
    g = nx.MultiDiGraph()
    g.add_weighted_edges_from(zip(topo.src.tolist(), topo.dst.tolist(),
                                  p.link_steps.tolist()))
    dist = np.array([[nx.shortest_path_length(g, u, v, weight="weight")
                      for v in range(topo.num_nodes)] for u in range(topo.num_nodes)])
    assert span == dist.max()                     # the diameter in slots
    # replay: every send leaves a holder, and node n first gets chunk c at dist[c, n]
    got = np.where(p.pre, 0, -1)
    for c, link, start in ev.tolist():
        u, v = int(topo.src[link]), int(topo.dst[link])
        assert 0 <= got[c, u] <= start
        assert got[c, v] == -1                    # no node receives a chunk twice
        got[c, v] = start + int(p.link_steps[link])
    assert (got == dist).all()
    assert len(ev) == topo.num_nodes * (topo.num_nodes - 1)


@pytest.mark.parametrize("n", [4, 5, 7])
def test_uniring_is_congestion_free_and_optimal(n):
    s = uncongested_synthesize(f"uniring:{n}", "allgather")
    assert tc.verify(s).valid and s.meta["makespan_slots"] == n - 1
    ilp = synthesize(f"uniring:{n}", "allgather", method="ilp")
    assert ilp.meta["makespan_slots"] == n - 1
    size = n * 1e6
    assert simulate(s, size, alpha=0, link_bandwidth=B).time == pytest.approx((n - 1) * 1e6 / B)


@pytest.mark.parametrize("leaves", [3, 4, 5])
def test_star_claims_two_slots_but_takes_more(leaves):
    # each leaf's chunk reaches the centre in slot 0, then every other leaf in slot 1: the
    # uncapacitated model claims 2 chunk times; the centre's link to a leaf carries its
    # chunk at step 1 and the other leaves' leaves - 1 chunks at step 2
    t = _star(leaves)
    n = leaves + 1
    size = n * 1e6
    s = uncongested_synthesize(t, "allgather", size=size)
    assert tc.verify(s).valid
    assert s.meta["makespan_slots"] == 2
    chunk = 1e6 / B
    assert s.meta["uncongested_time"] == pytest.approx(2 * chunk)
    assert simulate(s, size).time == pytest.approx(leaves * chunk)
    # the capacitated optimum: the centre's out-link to a leaf must carry n - 1 chunks, the
    # first no earlier than slot 0: leaves slots, as the ILP proves
    ilp = synthesize(t, "allgather", method="ilp", size=size)
    assert ilp.meta["makespan_slots"] == leaves and ilp.meta["ilp_optimal"]


@pytest.mark.parametrize("coll,root", [("allreduce", None), ("reduce_scatter", None),
                                       ("broadcast", 3), ("reduce", 2), ("gather", 1),
                                       ("scatter", 0), ("alltoall", None)])
def test_every_collective_verifies(coll, root):
    s = uncongested_synthesize("mesh:3x3", coll, root=root, chunks=2)
    assert tc.verify(s).valid and s.algorithm == "tacclike"
    assert s.meta["congestion"] is False


def test_on_a_mesh_the_gap_shows_and_the_tacos_schedule_is_no_slower():
    t = topology("mesh:4x4", bandwidth="100GB/s", latency="0.5us")
    size = "1MB"
    s = tc.generate(t, "allreduce", "tacclike", size=size)
    ten = synthesize(t, "allreduce", size=size)
    real = simulate(s, size).time
    assert real > 1.2 * s.meta["uncongested_time"]          # contention the model ignored
    assert simulate(ten, size).time < real
    assert s.meta["makespan_slots"] == 12                   # 2 x diameter 6


def test_switches_unwound_first_and_bad_roots():
    s = uncongested_synthesize("switchswitch:4,2", "allgather", unwind_degree="0:max,1:1")
    assert tc.verify(s).valid and s.num_nodes == 8
    with pytest.raises(UnsupportedError, match="root"):
        uncongested_synthesize("ring:4", "broadcast", root=9)
    with pytest.raises(UnsupportedError, match="takes no root"):
        uncongested_synthesize("ring:4", "allgather", root=1)
