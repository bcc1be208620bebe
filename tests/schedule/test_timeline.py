"""Where time goes in the link model: which link carried each transfer, what set its start,
the critical path, per-link busy time and the intervals; every expected value is worked out by
hand in the comments."""

import numpy as np
import pytest

from topocoll.collectives import REDUCE
from topocoll.schedule import Schedule, transfer_array, verify
from topocoll.schedule.linkmodel import simulate, simulate_many
from topocoll.schedule.timeline import timeline_rows
from topocoll.synth import generate
from topocoll.topology import topology
from topocoll.topology.model import Topology

HOP = 1.000001      # 1 GB over 1 GB/s plus 1 us


@pytest.fixture(scope="module")
def ring4():
    """Ring allgather on uniring:4, 1e9 B/s, 1 us, M = 4 GB: every transfer moves a 1 GB shard
    and takes 1 s + 1 us; step k runs from (k - 1) * HOP to k * HOP on every link."""
    topo = topology("uniring:4", bandwidth=1e9, latency=1e-6)
    s = generate(topo, "allgather", "ring")
    return s, simulate(s, 4e9)


def test_ring_allgather_transfers_start_and_end_on_the_step_grid(ring4):
    s, r = ring4
    t = s.transfers
    assert s.num_transfers == 12
    assert np.allclose(r.start, (t["step"] - 1) * HOP, rtol=0, atol=1e-12)
    assert np.allclose(r.end, t["step"] * HOP, rtol=0, atol=1e-12)
    assert np.allclose(r.link_busy, [3.000003] * 4, rtol=0, atol=1e-12)
    assert r.link_transfers.tolist() == [3, 3, 3, 3]


def test_each_transfer_records_the_link_that_carried_it(ring4):
    s, r = ring4
    t = s.transfers
    # uniring:4 has links 0: 0->1, 1: 1->2, 2: 2->3, 3: 3->0, so link index == src
    assert r.link.tolist() == t["src"].tolist()
    assert s.topology.src[r.link].tolist() == t["src"].tolist()
    assert s.topology.dst[r.link].tolist() == t["dst"].tolist()


def test_ring_critical_path_is_one_shard_going_round(ring4):
    s, r = ring4
    t = s.transfers
    path = r.critical_path()
    assert len(path) == 3
    assert t["step"][path].tolist() == [1, 2, 3]
    # one shard hops on: each transfer starts where the last one arrived
    assert len(set(t["shard"][path].tolist())) == 1
    assert t["src"][path][1:].tolist() == t["dst"][path][:-1].tolist()
    report = r.to_dict(detail=True)["critical_path"]
    # step 2 on a link: the link frees and the data arrives at the same moment; data wins ties
    assert [e["waited_for"] for e in report] == ["start", "data", "data"]
    assert [e["start"] for e in report] == pytest.approx([0.0, HOP, 2 * HOP], abs=1e-12)
    assert report[-1]["end"] == pytest.approx(3.000003, abs=1e-12)
    assert [e["transfer"] for e in report] == path.tolist()


def test_link_report_lists_every_used_link(ring4):
    _, r = ring4
    links = r.to_dict(detail=True)["link_busy"]
    assert [(d["link"], d["src"], d["dst"], d["transfers"]) for d in links] == \
        [(0, 0, 1, 3), (1, 1, 2, 3), (2, 2, 3, 3), (3, 3, 0, 3)]
    assert [d["busy"] for d in links] == pytest.approx([3.000003] * 4, abs=1e-12)
    assert [d["utilization"] for d in links] == pytest.approx([1.0] * 4)
    # the summary keys (naming the alpha convention), and without detail nothing is added
    assert set(r.to_dict()) == {"size", "time", "alpha_per", "transfers", "links_used", "links",
                                "mean_utilization_used", "max_link_busy"}


def test_intervals_are_sorted_by_link_then_start(ring4):
    s, r = ring4
    iv = r.intervals()
    assert iv["link"].tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3]
    assert iv["step"].tolist() == [1, 2, 3] * 4
    assert np.allclose(iv["start"], [0.0, HOP, 2 * HOP] * 4, atol=1e-12)
    assert np.allclose(iv["end"], [HOP, 2 * HOP, 3 * HOP] * 4, atol=1e-12)
    t = s.transfers
    assert np.array_equal(iv["shard"], t["shard"][iv["transfer"]])


def test_a_queued_link_puts_the_link_on_the_critical_path():
    # scatter from 0 on uniring:3, 1 B/s, no latency, M = 3 B: 1 B shards, 1 s per transfer.
    # step 1: 0->1 shard 1 [0, 1], then 0->1 shard 2 queues behind it [1, 2];
    # step 2: 1->2 shard 2 waits for that data [2, 3]
    topo = topology("uniring:3", bandwidth=1.0, latency=0.0)
    s = Schedule(topo, "scatter", transfer_array([1, 1, 2], [0, 0, 1], [1, 1, 2], [1, 2, 2],
                                                 0.0, 1.0), root=0)
    assert verify(s).valid
    r = simulate(s, 3.0)
    assert r.start.tolist() == [0.0, 1.0, 2.0] and r.end.tolist() == [1.0, 2.0, 3.0]
    assert r.critical_path().tolist() == [0, 1, 2]
    assert [e["waited_for"] for e in r.critical_path_report()] == ["start", "link", "data"]
    assert r.pred.tolist() == [-1, 0, 1]
    assert r.link_busy.tolist() == [2.0, 1.0, 0.0]
    assert [d["link"] for d in r.link_report()] == [0, 1]      # link 2->0 unused


def test_a_partial_sum_waits_for_its_later_contribution():
    # reduce to 2: 3->1 (5 s at 2 B/s) and 0->1 (10 s at 1 B/s) in step 1, then 1->2 carries
    # the sum (1 s at 10 B/s) from t = max(5, 10) = 10 to 11, after the second transfer
    topo = Topology(4, [0, 3, 1, 2, 2], [1, 1, 2, 0, 3], bandwidth=[1.0, 2.0, 10.0, 1.0, 1.0],
                    latency=0.0)
    t = transfer_array([1, 1, 2], [3, 0, 1], [1, 1, 2], [0, 0, 0], 0.0, 1.0, REDUCE)
    s = Schedule(topo, "reduce", t, root=2)
    assert verify(s).valid
    r = simulate(s, 10.0)
    assert r.start.tolist() == [0.0, 0.0, 10.0] and r.end.tolist() == [5.0, 10.0, 11.0]
    assert r.critical_path().tolist() == [1, 2]
    assert [e["waited_for"] for e in r.critical_path_report()] == ["start", "data"]
    assert r.link.tolist() == [1, 0, 2]


def test_heterogeneous_links_and_latencies():
    # broadcast from 0 on uniring:3 with bandwidths 1, 2, 4 B/s and latencies 0.5, 0.25, 0 s,
    # M = 4 B: 0->1 takes 0.5 + 4/1 = 4.5 s, 1->2 then 0.25 + 4/2 = 2.25 s, ending at 6.75
    topo = topology("uniring:3").with_links(bandwidth=np.array([1.0, 2.0, 4.0]),
                                            latency=np.array([0.5, 0.25, 0.0]))
    s = Schedule(topo, "broadcast", transfer_array([1, 2], [0, 1], [1, 2], [0, 0], 0.0, 1.0),
                 root=0)
    assert verify(s).valid
    r = simulate(s, 4.0)
    assert r.start.tolist() == [0.0, 4.5] and r.end.tolist() == [4.5, 6.75]
    assert r.link_busy.tolist() == [4.5, 2.25, 0.0]
    assert r.link_utilization.tolist() == [4.5 / 6.75, 2.25 / 6.75, 0.0]
    assert r.critical_path().tolist() == [0, 1]


def test_parallel_links_record_which_one_was_taken():
    # two links 0->1 (index 0 at 1 B/s, index 1 at 3 B/s): an allgather of two 3 B shards
    # sends 0->1 on link 1 (1 s rather than 3) and 1->0 on link 2 (3 s)
    topo = Topology(2, [0, 0, 1], [1, 1, 0], bandwidth=[1.0, 3.0, 1.0], latency=0.0)
    s = Schedule(topo, "allgather", transfer_array([1, 1], [0, 1], [1, 0], [0, 1], 0.0, 1.0))
    r = simulate(s, 6.0)
    assert r.link.tolist() == [1, 2] and r.end.tolist() == [1.0, 3.0]
    # scatter of two 3 B shards from 0 in one step: the first takes link 1 [0, 1], the second
    # too (ending at 2 rather than 3 on link 0), queued behind the first; then 1->2 (1 B/s)
    two = Topology(3, [0, 0, 1, 2], [1, 1, 2, 0], bandwidth=[1.0, 3.0, 1.0, 1.0], latency=0.0)
    both = Schedule(two, "scatter", transfer_array([1, 1, 2], [0, 0, 1], [1, 1, 2], [1, 2, 2],
                                                   0.0, 1.0), root=0)
    assert verify(both).valid
    r = simulate(both, 9.0)                      # 3 B shards
    assert r.link.tolist() == [1, 1, 2]
    assert r.start.tolist() == [0.0, 1.0, 2.0] and r.end.tolist() == [1.0, 2.0, 5.0]
    assert r.critical_path_report()[1]["waited_for"] == "link"


def test_tenants_path_stops_where_another_tenant_held_the_link():
    # two broadcasts from 0 on uniring:2 (1 B/s, M = 1 B): the second tenant's 0->1 waits for
    # the first's [0, 1] and runs [1, 2]; its own path is that one transfer, waiting on "link"
    topo = topology("uniring:2", bandwidth=1.0, latency=0.0)
    a = Schedule(topo, "broadcast", transfer_array(1, 0, 1, 0, 0.0, 1.0), root=0)
    first, second = simulate_many([a, a], 1.0)
    assert second.start.tolist() == [1.0]
    assert second.pred_tenant.tolist() == [0] and second.pred.tolist() == [0]
    assert second.critical_path().tolist() == [0]
    assert second.critical_path_report()[0]["waited_for"] == "link"
    assert first.critical_path_report()[0]["waited_for"] == "start"


def test_critical_path_is_a_chain_on_a_large_bfb_schedule():
    s = generate(topology("torus:8x8", bandwidth=1e9, latency=1e-6), "allgather", "bfb")
    r = simulate(s, "1MiB")
    t = s.transfers
    path = r.critical_path()
    assert r.end[path[-1]] == r.time and r.start[path[0]] == 0.0
    for a, b in zip(path[:-1], path[1:]):
        assert r.start[b] == r.end[a]                   # no gap anywhere on the path
        if r.waited[b] == 1:                            # the same link, busy until then
            assert r.link[a] == r.link[b]
        else:                                           # the data came in on a
            assert r.waited[b] == 2 and t["dst"][a] == t["src"][b]
    assert np.allclose(np.bincount(r.link, weights=r.end - r.start, minlength=r.link_busy.size),
                       r.link_busy)


def test_timeline_rows_group_large_networks():
    s = generate(topology("torus:16x16"), "allgather", "bfb")
    r = simulate(s, "1MiB")
    row_of_link, labels, capacity = timeline_rows(r)
    # 1024 links, 4 out of every node, sorted by source: 64 groups of 16 = 4 source nodes each
    assert len(labels) == 64 and capacity.tolist() == [16] * 64
    assert labels[:2] == ["from 0-3", "from 4-7"] and labels[-1] == "from 252-255"
    assert np.array_equal(row_of_link, s.topology.src // 4)
