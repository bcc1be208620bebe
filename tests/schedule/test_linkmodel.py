"""The link-model simulator against closed forms and its own rules, on schedules of any origin."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from topocoll.errors import InvalidScheduleError
from topocoll.schedule import Schedule, transfer_array, verify
from topocoll.schedule.linkmodel import simulate, simulate_many
from topocoll.synth import generate
from topocoll.synth.ten import synthesize
from topocoll.topology import topology

from tests.helpers import strongly_connected_digraphs


def test_unidirectional_ring_closed_form():
    n, bw, lat, size = 6, 2e9, 3e-6, 6e9
    ring = topology(f"uniring:{n}", bandwidth=bw, latency=lat)
    r = simulate(generate(ring, "allgather", "ring"), size)
    assert r.time == pytest.approx((n - 1) * (lat + size / n / bw), rel=1e-12)
    assert np.allclose(r.link_busy, (n - 1) * (lat + size / n / bw))


def _check_rules(schedule, result):
    """Independent check of the simulator's output: FIFO links and causality."""
    t = schedule.transfers
    start, end = result.start, result.end
    n = schedule.num_nodes
    # causality (copy only, whole-shard or chunk transfers): the sender got the bytes earlier
    for i in range(t.size):
        src, shard = t["src"][i], t["shard"][i]
        owner = schedule.collective.start_owner(n, schedule.root)[shard]
        if src == owner:
            continue
        feeds = (t["dst"] == src) & (t["shard"] == shard) & (t["step"] < t["step"][i]) & \
            (t["lo"] < t["hi"][i]) & (t["hi"] > t["lo"][i])
        assert feeds.any()
        # every byte needed has a delivery no later than the start
        assert start[i] >= end[feeds].min() - 1e-15
    # a pair with one link never carries two transfers at once
    pair = t["src"].astype(np.int64) * n + t["dst"]
    for p in np.unique(pair):
        idx = np.flatnonzero(pair == p)
        o = idx[np.argsort(start[idx])]
        assert np.all(start[o][1:] >= end[o][:-1] - 1e-15)


@settings(max_examples=10)
@given(strongly_connected_digraphs(max_nodes=6), st.integers(0, 50))
def test_rules_hold_for_synthesized_schedules(topo, seed):
    # one link per ordered pair so that "one at a time per pair" is the rule to check
    keys = np.unique(topo.src * topo.num_nodes + topo.dst, return_index=True)[1]
    simple = type(topo)(topo.num_nodes, topo.src[keys], topo.dst[keys], topo.bandwidth[keys],
                        topo.latency[keys])
    s = synthesize(simple, "allgather", chunks=2, size=100.0, seed=seed)
    _check_rules(s, simulate(s, 100.0))


def test_bfb_schedules_with_fractional_pieces():
    s = generate("torus:3x3", "allgather", "bfb")
    r = simulate(s, "1MiB")
    _check_rules(s, r)
    assert r.time > 0


def test_non_causal_schedule_is_refused():
    ring = topology("uniring:3")
    bad = transfer_array([1], [1], [2], [0], 0.0, 1.0)   # node 1 never got shard 0
    with pytest.raises(InvalidScheduleError):
        simulate(Schedule(ring, "allgather", bad), 1.0)


def test_reduce_waits_for_every_earlier_contribution():
    # uniring 0->1->2: reduce to 2; 0 sends its part to 1 (slow link), then 1 forwards the sum
    topo = topology("uniring:3").with_links(bandwidth=np.array([1.0, 10.0, 10.0]),
                                            latency=0.0)
    t = transfer_array([1, 2], [0, 1], [1, 2], [0, 0], 0.0, 1.0, 1)
    s = Schedule(topo, "reduce", t, root=2)
    assert verify(s).valid
    r = simulate(s, 10.0)
    assert r.start[1] == pytest.approx(10.0)           # waits for the 10 s transfer 0 -> 1
    assert r.time == pytest.approx(11.0)


def test_tenants_share_links():
    a = synthesize("ring:4", "allgather")
    b = synthesize("ring:4", "broadcast", root=1)
    alone = [simulate(a, "1GiB").time, simulate(b, "1GiB").time]
    joint = [r.time for r in simulate_many([a, b], "1GiB")]
    assert joint[0] >= alone[0] and joint[1] >= alone[1]
    assert max(joint) > max(alone)          # they do collide on the ring's links
