"""The link model numbers its (node, atom) keys by a table or by a sort: both give one timing."""

import numpy as np

from topocoll.schedule import Schedule, transfer_array
from topocoll.schedule import linkmodel
from topocoll.schedule.linkmodel import simulate
from topocoll.synth import generate
from topocoll.topology import topology

_FIELDS = ("start", "end", "link_busy", "link", "pred", "pred_tenant", "waited")


def _timings(schedule, alpha_per):
    r = simulate(schedule, 1e6, alpha_per=alpha_per)
    return r.time, [getattr(r, f).tolist() for f in _FIELDS]


def _pieces_schedule():
    """Allgather on a 3-ring where the last hop of each shard moves two atoms at once (its
    pieces arrived in separate transfers), so transfers span several atoms."""
    ring = topology("ring:3", bandwidth=1e9, latency=1e-6)
    step, src, dst, shard, lo, hi = [], [], [], [], [], []
    for s in range(3):
        a, b = (s + 1) % 3, (s + 2) % 3
        for piece_lo, piece_hi in ((0.0, 0.5), (0.5, 1.0)):
            step.append(1), src.append(s), dst.append(a), shard.append(s)
            lo.append(piece_lo), hi.append(piece_hi)
        step.append(2), src.append(a), dst.append(b), shard.append(s), lo.append(0.0)
        hi.append(1.0)
    return Schedule(ring, "allgather", transfer_array(step, src, dst, shard, lo, hi))


def test_table_and_sort_numbering_agree(monkeypatch):
    cases = [_pieces_schedule(),
             generate(topology("ring:5", bandwidth=1e9, latency=1e-6), "allreduce", "ring"),
             generate(topology("mesh:2x3", bandwidth=1e9, latency=1e-6), "reduce_scatter",
                      "bfb")]
    for schedule in cases:
        for alpha_per in ("message", "transfer"):
            table = _timings(schedule, alpha_per)
            monkeypatch.setattr(linkmodel, "DENSE_FACTOR", -10**12)   # always sort
            assert _timings(schedule, alpha_per) == table
            monkeypatch.undo()


def test_multi_atom_transfer_waits_for_every_piece():
    s = _pieces_schedule()
    r = simulate(s, 3e9, alpha=0.0)   # 1 GB shards at 1 GB/s: a half shard takes 0.5 s
    t = s.transfers
    second = np.flatnonzero(t["step"] == 2)
    # both halves cross the same link back to back, so the whole shard is there at 1 s
    assert np.allclose(r.start[second], 1.0) and np.allclose(r.end[second], 2.0)


def test_number_counts_distinct_values():
    count, (a, b) = linkmodel.number_values([np.array([5, 5, 2]), np.array([9])], 10)
    assert count == 3 and a.tolist() == [1, 1, 0] and b.tolist() == [2]
