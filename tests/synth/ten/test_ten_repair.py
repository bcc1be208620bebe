"""The release-time term of the chunk bound (a bound: never above an exact optimum, and tight
where the capacity terms are not) and the ILP repair of the greedy's last slots (valid,
deterministic, and what brings the cases below to the bound)."""

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import assume, given, settings, strategies as st

from topocoll.cli.main import cli
from topocoll.errors import UnsupportedError
from topocoll.schedule import simulate, verify
from topocoll.synth.ten import (chunk_conditions, chunk_lower_bound, events_to_schedule,
                                synthesize, ten_problem)
from topocoll.synth.ten.cutbound import pair_forward_bound
from topocoll.synth.ten.greedy import greedy_events
from topocoll.synth.ten.ilp import ilp_events
from topocoll.synth.ten.releasebound import release_time_bound
from topocoll.synth.ten.repair import repair_events, replay_time
from topocoll.topology import Topology, topology
from topocoll.topology.families.lattice import with_dimension_bandwidth

from tests.helpers import random_cables, strongly_connected_digraphs

GIB = 2**30
#: Branch-and-bound nodes per ILP model when a test needs a proven optimum of a drawn case.
EXACT_NODE_LIMIT = 200


def dims(spec, gib_per_s, latency="0.5us"):
    return with_dimension_bandwidth(topology(spec, latency=latency),
                                    [g * GIB for g in gib_per_s])


@pytest.mark.parametrize("spec,speeds", [("torus:3x3", (50, 25)), ("torus:2x5", (50, 25)),
                                         ("torus:3x5", (25, 100))])
def test_release_bound_is_tight_where_capacity_is_not(spec, speeds):
    # the ILP proves the makespan minimal; it equals the release-time bound, one or two slots
    # above the capacity terms
    s = synthesize(dims(spec, speeds), "allgather", size=GIB, method="ilp")
    m = s.meta
    assert m["ilp_optimal"]
    assert m["makespan_slots"] == m["chunk_lower_bound_slots"]
    assert m["capacity_lower_bound"] < m["chunk_lower_bound"] - 0.5 * m["time_step"]
    assert simulate(s, GIB).time >= m["chunk_lower_bound"] * (1 - 1e-9)


@settings(max_examples=40, deadline=None)
@given(strongly_connected_digraphs(max_nodes=5), st.sampled_from(["allgather", "broadcast",
                                                                    "scatter", "gather"]),
       st.integers(1, 2), st.integers(0, 2**32 - 1))
def test_release_and_forward_bounds_never_exceed_the_exact_optimum(topo, coll, chunks, seed):
    # integer chunk times: slot schedules with one slot a second are exact, so the ILP's
    # proven optimum is the least makespan of any schedule in the link model. A few drawn
    # cases are hard to prove (a gather of 10 chunks on 5 nodes took 117 s): the ILP gets a
    # node budget (a count, the same on any machine) and only proven optima are compared.
    cost = np.random.default_rng(seed).integers(1, 5, topo.num_links).astype(float)
    pre, post = chunk_conditions(coll, topo.num_nodes, chunks,
                                 root=0 if coll != "allgather" else None)
    res = ilp_events(topo.num_nodes, topo.src, topo.dst, cost.astype(np.int64), pre, post,
                     node_limit=EXACT_NODE_LIMIT)
    assume(res.optimal)
    for term in (release_time_bound, pair_forward_bound):
        assert term(topo, cost, pre, post) <= res.makespan + 1e-9, term.__name__


@pytest.mark.parametrize("spec,seed,others", [("mesh:2x3", 1, 8.0), ("mesh:2x4", 3, 12.0)])
def test_forward_bound_is_tight_where_the_others_are_not(spec, seed, others):
    # 1 s and 4 s cables: a pair joined by a fast cable whose last entries cannot be forwarded
    # inside it; the ILP proves one second more than the other terms minimal (measured: so in
    # all ten such meshes 2x3 and 2x4 of seeds 0-29)
    topo = random_cables(topology(spec, latency=0.0), (1.0, 4.0), seed)
    n = topo.num_nodes
    p = ten_problem(topo, "allgather", size=4.0 * n)              # 4-byte chunks
    assert sorted(set(p.link_cost.tolist())) == [1.0, 4.0]
    capacity = chunk_lower_bound(p, release=False)
    assert release_time_bound(topo, p.link_cost, p.pre, p.post, capacity) == capacity == others
    forward = pair_forward_bound(topo, p.link_cost, p.pre, p.post)
    assert forward == chunk_lower_bound(p) == others + 1
    res = ilp_events(n, topo.src, topo.dst, p.link_cost.astype(np.int64), p.pre, p.post)
    assert res.optimal and res.makespan == forward


@pytest.mark.parametrize("spec,choices,seed,capacity,bound", [
    ("mesh:8x8", (25, 100), 2, 13135.5, 13292.25), ("mesh:5x5", (25, 50, 100), 1, 12808.0,
                                                    13204.5)])
def test_random_cable_meshes_within_1pct_of_the_forward_bound(spec, choices, seed, capacity,
                                                              bound):
    # 1.012 and 1.031 above the capacity bound; the pair {0, 1} of the 8x8 mesh takes
    # 62 chunks over three 25 GiB/s links (21 each by the bound), but the three that end last
    # cannot reach the other node of the pair: 21 slow-link times plus one fast-link time
    topo = random_cables(topology(spec, latency="0.5us"), np.array(choices) * GIB, seed)
    for seed in range(2):
        s = synthesize(topo, "allgather", size=GIB, seed=seed)
        assert verify(s).valid
        assert round(s.meta["capacity_lower_bound"] * 1e6, 2) == capacity
        assert round(s.meta["chunk_lower_bound"] * 1e6, 2) == bound
        assert bound * 1e-6 * (1 - 1e-9) <= simulate(s, GIB).time <= 1.01 * bound * 1e-6


@settings(max_examples=15, deadline=None)
@given(strongly_connected_digraphs(max_nodes=7), st.sampled_from(["allgather", "broadcast",
                                                                    "alltoall"]),
       st.integers(0, 1000))
def test_replay_time_is_the_link_model_time(topo, coll, seed):
    # one link per pair: the link model chooses among parallel links itself
    pairs = topo.src.astype(int) * topo.num_nodes + topo.dst
    keep = np.sort(np.unique(pairs, return_index=True)[1])
    topo = Topology(topo.num_nodes, topo.src[keep], topo.dst[keep],
                    np.broadcast_to(topo.bandwidth, pairs.shape)[keep],
                    np.broadcast_to(topo.latency, pairs.shape)[keep])
    p = ten_problem(topo, coll, size=GIB, root=0 if coll == "broadcast" else None)
    r = greedy_events(*p.arrays(), seed=seed)
    s = events_to_schedule(p, r.events)
    est = replay_time(topo.src, topo.dst, p.link_cost, p.pre, r.events)
    assert est == pytest.approx(simulate(s, GIB).time, rel=1e-9)


def test_repair_reaches_the_bound_on_the_8x4_torus():
    # 4:1 links: every greedy run ends at 14 slots, the bound is 13 (which the ILP reaches);
    # the translated schedule of the torus (tried first by default) is at 13 too: off here
    topo = dims("torus:8x4", (100, 25))
    plain = synthesize(topo, "allgather", size=GIB, repair=False, symmetric=False)
    s = synthesize(topo, "allgather", size=GIB, symmetric=False)
    assert plain.meta["makespan_slots"] == 14 and plain.meta["repair"] is None
    assert s.meta["makespan_slots"] == s.meta["chunk_lower_bound_slots"] == 13
    assert s.meta["repair"]["solves"] >= 1
    assert verify(s).valid
    assert simulate(s, GIB).time == pytest.approx(s.meta["chunk_lower_bound"], rel=1e-9)
    again = synthesize(topo, "allgather", size=GIB, symmetric=False)
    assert np.array_equal(s.transfers, again.transfers)
    two = synthesize(topo, "allgather", size=GIB, restarts=3, workers=2, symmetric=False)
    one = synthesize(topo, "allgather", size=GIB, restarts=3, workers=1, symmetric=False)
    assert np.array_equal(one.transfers, two.transfers)


def test_deadline_repair_at_10us_latency():
    # at 10 us a 25 GiB/s link takes 1.97 times a 50 GiB/s one, which slots round to 2 (1.6%
    # up); per-link deadlines bring the schedule from 0.6% above the bound to it
    topo = dims("mesh:4x6", (25, 50), latency="10us")
    plain = synthesize(topo, "allgather", size=GIB, repair=False)
    s = synthesize(topo, "allgather", size=GIB)
    bound = s.meta["chunk_lower_bound"]
    assert simulate(plain, GIB).time > 1.005 * bound
    assert verify(s).valid and s.meta["repair"]["solves"] >= 1
    assert bound * (1 - 1e-9) <= simulate(s, GIB).time <= 1.001 * bound


def test_repair_events_keeps_a_valid_schedule():
    # a greedy schedule with its last sends pushed late: the repair ends no later, stays valid
    topo = dims("torus:4x4", (100, 25))
    p = ten_problem(topo, "allgather", size=GIB)
    ev = greedy_events(*p.arrays(), seed=0).events.copy()
    last = ev["start"] >= ev["start"].max() - 1
    ev["start"][last] += 3
    span = int((ev["start"] + p.link_steps[ev["link"]]).max())
    assert verify(events_to_schedule(p, ev)).valid
    r = repair_events(*p.arrays(), ev, 0)
    assert r.makespan < span and r.solves >= 1
    assert verify(events_to_schedule(p, r.events)).valid


def test_repair_option_errors():
    with pytest.raises(UnsupportedError, match="greedy"):
        synthesize("ring:4", "allgather", method="ilp", repair=True)
    with pytest.raises(UnsupportedError, match="repair"):
        synthesize("ring:4", "allgather", repair="maybe")   # "yes" is true, as for -O
    res = CliRunner().invoke(cli, ["synth", "ring:4", "-c", "allgather", "--method", "ilp",
                                   "--repair"])
    assert res.exit_code != 0 and "--repair" in res.output
