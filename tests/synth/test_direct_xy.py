"""TACOS's Direct baseline, the Ring baseline (rankring) and dimension-order (xy) routing."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import topocoll as tc
from topocoll.errors import UnsupportedError
from topocoll.schedule import simulate
from topocoll.schedule.io import load_schedule, save_schedule
from topocoll.schedule.model import Schedule
from topocoll.synth.direct import direct_schedule
from topocoll.synth.routed_baselines import rankring_schedule
from topocoll.topology import topology
from topocoll.topology.routes import dimension_order_routes, shortest_routes

M = 6e6
B = 1e9


@pytest.mark.parametrize("spec", ["ring:5", "mesh:3x4", "torus:3x3", "complete:4", "kautz:2,2",
                                  "torus:2x2x2", "hypercube:3"])
@pytest.mark.parametrize("coll", ["allgather", "reduce_scatter", "allreduce"])
def test_direct_verifies(spec, coll):
    s = direct_schedule(topology(spec), coll)
    assert tc.verify(s).valid
    n = s.num_nodes
    assert s.num_transfers == n * (n - 1) * (2 if coll == "allreduce" else 1)
    assert s.num_steps == (2 if coll == "allreduce" else 1)
    # every transfer moves a whole shard
    assert np.all(s.transfers["lo"] == 0) and np.all(s.transfers["hi"] == 1)


def test_direct_is_unrouted_on_a_complete_graph_and_breaks_when_a_row_goes():
    s = direct_schedule(topology("complete:5"), "allreduce")
    assert s.routing is None
    assert tc.evaluate(s, M, alpha=0, link_bandwidth=B).time == pytest.approx(2 * M / 5 / B)
    assert not tc.verify(s.replace(transfers=s.transfers[1:])).valid


@pytest.mark.parametrize("n", [3, 5, 7, 9])
def test_direct_allgather_on_an_odd_ring_closed_form(n):
    # link i -> i+1 carries the pairs at clockwise distance d <= (n-1)/2 crossing it:
    # sum_d d = (n^2 - 1)/8 shards of M/n
    s = direct_schedule(topology(f"ring:{n}"), "allgather")
    want = M / n * (n * n - 1) / 8 / B
    assert tc.evaluate(s, M, alpha=0, link_bandwidth=B).time == pytest.approx(want)
    assert simulate(s, M, alpha=0, link_bandwidth=B).time == pytest.approx(want)


@pytest.mark.parametrize("k", [3, 5])
def test_direct_allgather_on_an_odd_torus_with_xy_closed_form(k):
    # xy: a dimension-0 link carries the row-ring pairs crossing it times the k target
    # columns, k (k^2 - 1)/8 shards of M/k^2; dimension 1 the same
    s = direct_schedule(topology(f"torus:{k}x{k}"), "allgather", routing="xy")
    assert s.routing == "xy" and tc.verify(s).valid
    want = M / (k * k) * k * (k * k - 1) / 8 / B
    assert tc.evaluate(s, M, alpha=0, link_bandwidth=B).time == pytest.approx(want)


@pytest.mark.parametrize("n", [4, 6])
def test_rankring_is_tacos_ring_on_a_ring(n):
    s = rankring_schedule(topology(f"ring:{n}"), "allreduce", routing="xy")
    assert s.routing is None          # every r -> r+1 is a link: nothing to route
    want = 2 * (n - 1) / n * M / B
    assert tc.evaluate(s, M, alpha=0, link_bandwidth=B).time == pytest.approx(want)


def test_ring_beats_direct_on_a_ring_and_loses_on_a_complete_graph():
    n = 9
    for spec, ring_wins in ((f"ring:{n}", True), (f"complete:{n}", False)):
        t = topology(spec)
        r = tc.evaluate(rankring_schedule(t, "allreduce"), M, alpha=0, link_bandwidth=B).time
        d = tc.evaluate(direct_schedule(t, "allreduce"), M, alpha=0, link_bandwidth=B).time
        assert (r < d) == ring_wins
    # complete graph: ring 2(n-1)/n M/B, direct 2 M/(n B): ratio n - 1
    assert r / d == pytest.approx(n - 1)


@settings(max_examples=25, deadline=None)
@given(dims=st.lists(st.integers(1, 5), min_size=1, max_size=3), wrap=st.booleans())
def test_xy_routes_are_the_lowest_numbered_shortest_routes_on_lattices(dims, wrap):
    if int(np.prod(dims)) < 2:
        return
    spec = ("torus:" if wrap else "mesh:") + "x".join(map(str, dims))
    t = topology(spec)
    a, b = shortest_routes(t), dimension_order_routes(t)
    assert (a.next_link == b.next_link).all() and (a.hops == b.hops).all()
    # and each route really corrects the first differing coordinate first
    n = t.num_nodes
    u, v = 0, n - 1
    path = b.node_path(u, v)
    coords = [np.unravel_index(p, dims) for p in path]
    changed = [next(i for i in range(len(dims)) if c0[i] != c1[i])
               for c0, c1 in zip(coords, coords[1:])]
    assert changed == sorted(changed)


def test_xy_is_refused_off_lattices_and_on_broken_lattices():
    with pytest.raises(UnsupportedError, match="mesh, torus or ring"):
        direct_schedule(topology("hypercube:3"), "allgather", routing="xy")
    with pytest.raises(UnsupportedError, match="mesh, torus or ring"):
        rankring_schedule(topology("kautz:2,2"), "allgather", routing="xy")
    s = direct_schedule(topology("mesh:3x3"), "allgather")
    with pytest.raises(UnsupportedError, match="needs a mesh, torus or ring"):
        Schedule(topology("hypercube:3"), "allgather", s.transfers[:0], routing="xy")
    broken = tc.fail_links(topology("mesh:3x3"), "0-1") if hasattr(tc, "fail_links") else None
    if broken is None:
        from topocoll.topology.unwind import fail_links
        broken = fail_links(topology("mesh:3x3"), "0-1")
    with pytest.raises(UnsupportedError, match="lacks a lattice link"):
        direct_schedule(broken, "allgather", routing="xy")
    with pytest.raises(UnsupportedError, match="routing must be one of"):
        direct_schedule(topology("mesh:3x3"), "allgather", routing="ecmp")


def test_xy_schedule_file_round_trip(tmp_path):
    s = direct_schedule(topology("torus:3x3"), "allreduce", routing="xy")
    path = tmp_path / "direct.json"
    save_schedule(s, path)
    back = load_schedule(path)
    assert back.routing == "xy" and tc.verify(back).valid
    assert tc.evaluate(back, M).time == pytest.approx(tc.evaluate(s, M).time)


def test_generate_and_step_traffic():
    s = tc.generate("mesh:3x3", "allreduce", "direct", routing="xy")
    assert s.algorithm == "direct" and s.routing == "xy"
    r = tc.generate("mesh:3x3", "allreduce", "rankring", routing="xy")
    assert r.routing == "xy" and tc.verify(r).valid
    same = tc.generate("mesh:3x3", "allreduce", "rankring")
    assert tc.evaluate(r, M).time == pytest.approx(tc.evaluate(same, M).time)
