"""Routed transfers (``routing="shortest"``): a transfer may go to any node and the network
forwards it along the topology's route. The verifier asks for a path; the step model charges
every link of the route and the sum of its latencies; the link model moves the bytes
cut-through; files say the policy; a schedule whose transfers are all one hop is priced
exactly as the direct one."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import topocoll as tc
from tests.helpers import strongly_connected_digraphs
from topocoll.errors import ScheduleFormatError, UnsupportedError
from topocoll.schedule.compact import compact_schedule
from topocoll.schedule.io import dumps_schedule, loads_schedule
from topocoll.schedule.model import Schedule, transfer_array
from topocoll.schedule.symmetric import symmetric_schedule
from topocoll.schedule.transforms import concatenate, reverse
from topocoll.topology import Topology, topology
from topocoll.topology.routes import routes_of

GB = 1e9


def _direct_allgather(topo):
    """Every owner sends its shard straight to every other node in step 1 (routed)."""
    n = topo.num_nodes
    src, dst = np.nonzero(~np.eye(n, dtype=bool))
    return Schedule(topo, "allgather", transfer_array(1, src, dst, src, 0.0, 1.0),
                    algorithm="direct", routing="shortest")


def test_one_transfer_three_hops_by_hand():
    ring = topology("ring:6", bandwidth=1e9, latency=1e-6)
    s = Schedule(ring, "broadcast", transfer_array(1, 0, 3, 0, 0.0, 1.0), root=0,
                 routing="shortest")
    # 0 -> 1 -> 2 -> 3 (lowest-numbered link first); a broadcast's one shard is all M
    e = tc.evaluate(s, GB, check=False)
    assert e.steps == 1 and e.T_L == pytest.approx(3e-6) and e.T_B == pytest.approx(1.0)
    r = tc.simulate(s, GB)
    assert r.time == pytest.approx(3e-6 + 1.0)          # cut-through: one M/B, three alphas
    assert np.count_nonzero(r.link_busy) == 3
    assert r.link_busy.max() == pytest.approx(1.0 + 1e-6)


def test_two_routes_share_a_link_by_hand():
    ring = topology("uniring:4", bandwidth=1e9, latency=0.0)
    # 0 -> 2 (links 0->1, 1->2) and 1 -> 2 (link 1->2): link 1->2 carries both
    s = Schedule(ring, "allgather", transfer_array(1, [0, 1], [2, 2], [0, 1], 0.0, 1.0),
                 routing="shortest")
    e = tc.evaluate(s, 4 * GB, check=False)             # shards of 1 GB
    assert e.T_B == pytest.approx(2.0) and e.T_L == 0
    r = tc.simulate(s, 4 * GB)
    assert r.time == pytest.approx(2.0)
    assert sorted(np.round(r.link_busy, 9).tolist()) == [0.0, 0.0, 1.0, 2.0]


@pytest.mark.parametrize("spec, coll, algorithm", [
    ("torus:4x4", "allreduce", "bfb"), ("ring:7", "allgather", "ring"),
    ("hypercube:3", "allreduce", "rhd"), ("dbt:8", "allreduce", "dbt"),
    ("circulant:9:1,2", "reduce_scatter", "bfb")])
def test_one_hop_routes_are_priced_as_direct_transfers(spec, coll, algorithm):
    direct = tc.generate(spec, coll, algorithm, form="explicit")
    routed = direct.replace(routing="shortest")
    assert tc.verify(routed).valid
    for size in (1e3, 1e8):
        a, b = tc.evaluate(direct, size), tc.evaluate(routed, size)
        assert (a.T_L, a.T_B, a.bw_lower_bound) == (b.T_L, b.T_B, b.bw_lower_bound)
        x, y = tc.simulate(direct, size), tc.simulate(routed, size)
        assert x.time == y.time and np.array_equal(x.link_busy, y.link_busy)
    assert b.steps_lower_bound == 1 <= a.steps_lower_bound


def test_the_verifier_asks_routed_transfers_for_a_path():
    line = Topology(3, [0, 1, 1, 2], [1, 0, 2, 1], name="line3")
    ok = Schedule(line, "allgather", transfer_array(
        1, [0, 0, 1, 1, 2, 2], [1, 2, 0, 2, 0, 1], [0, 0, 1, 1, 2, 2], 0.0, 1.0),
        routing="shortest")
    assert tc.verify(ok).valid
    direct = ok.replace(routing=None)
    kinds = {v.kind for v in tc.verify(direct).errors}
    assert kinds == {"missing_link"}                    # 0 -> 2 and 2 -> 0 are not links
    cut = Topology(3, [0, 1, 1], [1, 0, 2], name="cut")            # nobody reaches 0 from 2
    report = tc.verify(ok.replace(topology=cut))
    assert not report.valid
    assert set(report.counts) >= {"no_route"}
    assert any("no path 2->0" in v.message for v in report.errors)


def test_a_broken_routed_schedule_fails():
    s = _direct_allgather(topology("torus:3x3"))
    assert tc.verify(s).valid
    t = s.transfers.copy()
    t["src"][0] = (t["src"][0] + 1) % 9                 # sends a shard its sender lacks
    t["src"][0] = t["src"][0] if t["src"][0] != t["dst"][0] else (t["src"][0] + 1) % 9
    assert not tc.verify(s.replace(transfers=t)).valid
    assert not tc.verify(s.replace(transfers=s.transfers[1:])).valid


def test_files_say_the_routing_and_direct_files_do_not_change():
    s = _direct_allgather(topology("ring:5"))
    text = dumps_schedule(s)
    assert '"routing": "shortest"' in text
    back = loads_schedule(text)
    assert back.routing == "shortest" and tc.verify(back).valid
    direct = tc.generate("ring:5", "allgather", "ring")
    assert "routing" not in dumps_schedule(direct)
    assert dumps_schedule(loads_schedule(dumps_schedule(direct))) == dumps_schedule(direct)
    with pytest.raises(ScheduleFormatError, match="routing: must be \"shortest\""):
        loads_schedule(text.replace('"routing": "shortest"', '"routing": "valiant"'))
    with pytest.raises(UnsupportedError, match="routing must be one of shortest"):
        s.replace(routing="valiant")


def test_forms_and_transforms_keep_or_refuse_the_routing():
    s = _direct_allgather(topology("torus:3x3"))
    with pytest.raises(UnsupportedError, match="routed"):
        symmetric_schedule(s)
    with pytest.raises(UnsupportedError, match="routed"):
        compact_schedule(s)
    rs = reverse(s, "reduce_scatter")
    assert rs.routing == "shortest" and tc.verify(rs).valid
    ar = concatenate(rs, s, "allreduce")
    assert ar.routing == "shortest" and tc.verify(ar).valid
    assert s.form_facts() == {"form": "explicit", "routing": "shortest"}
    assert s.form_note() == " (routed: shortest)"


@st.composite
def routed_allgathers(draw):
    """A random valid routed allgather: per shard, the nodes in a random order, each receiving
    from a random node earlier in it at a step after that node received."""
    topo = draw(strongly_connected_digraphs(max_nodes=8))
    n = topo.num_nodes
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    rows = []
    for shard in range(n):
        order = [shard] + [int(v) for v in rng.permutation([v for v in range(n) if v != shard])]
        got = {shard: 0}
        for v in order[1:]:
            u = int(rng.choice(list(got)))
            step = got[u] + 1 + int(rng.integers(0, 2))
            rows.append((step, u, v, shard))
            got[v] = step
    step, src, dst, shard = (list(c) for c in zip(*rows))
    return Schedule(topo, "allgather", transfer_array(step, src, dst, shard, 0.0, 1.0),
                    routing="shortest")


@settings(max_examples=60, deadline=None)
@given(routed_allgathers(), st.sampled_from([1e2, 1e6, 1e9]))
def test_random_routed_schedules_verify_and_respect_the_bounds(s, size):
    assert tc.verify(s).valid
    e = tc.evaluate(s, size)
    assert e.T_B >= e.bw_lower_bound * (1 - 1e-9)       # a route crosses every cut it spans
    assert e.steps >= e.steps_lower_bound == 1
    r = tc.simulate(s, size)
    assert r.time >= e.bw_lower_bound * (1 - 1e-9)
    pairs = s.topology.src.astype(np.int64) * s.num_nodes + s.topology.dst
    if np.unique(pairs).size == pairs.size:   # one link per pair: never above the step model
        assert r.time <= e.time * (1 + 1e-9)
    # cut-through: a transfer that pays every alpha takes at least its route's latencies
    each = tc.simulate(s, size, alpha_per="transfer")
    routes = routes_of(s.topology, "shortest")
    t = s.transfers
    for i in range(t.size):
        path = routes.link_path(t["src"][i], t["dst"][i])
        least = sum(s.topology.latency[k] for k in path)
        assert each.end[i] - each.start[i] >= least * (1 - 1e-9)
