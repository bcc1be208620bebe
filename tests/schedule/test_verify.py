"""The verifier: hand-made schedules for every collective, every kind of violation, mutation
tests on generated schedules, and the fixture files in tests/data."""

import json

import numpy as np
import pytest

import topocoll as tc
from topocoll.collectives import COPY, REDUCE
from topocoll.schedule import Schedule, transfer_array, verify
from topocoll.topology import topology

from tests.helpers import schedule_fixtures


def make(spec, collective, rows, root=None):
    """rows: (step, src, dst, shard, lo, hi, op)."""
    cols = list(zip(*rows)) if rows else [[]] * 7
    t = transfer_array(*[np.asarray(c) for c in cols]) if rows else np.zeros(0, tc.schedule.TRANSFER_DTYPE)
    return Schedule(topology(spec), collective, t, root=root)


# --------------------------------------------------------------------------- fixtures
@pytest.mark.parametrize("path", schedule_fixtures(), ids=lambda p: p.stem)
def test_fixture_verifies_as_its_meta_says(path):
    meta = json.loads(path.read_text())["meta"]
    assert meta["expect"] in ("valid", "invalid")
    assert meta["note"].startswith(meta["expect"] + ":")
    report = verify(tc.load_schedule(path))
    assert report.valid is (meta["expect"] == "valid"), report.summary()
    if meta["expect"] == "invalid":
        assert meta["kind"] in report.counts
        assert report.errors[0].kind == meta["kind"]
    else:
        assert "kind" not in meta and report.error_count == 0


def test_fixtures_cover_the_four_kinds():
    seen = set()
    for path in schedule_fixtures():
        doc = json.loads(path.read_text())
        meta = doc["meta"]
        seen.add((meta["expect"], meta.get("kind") or doc["collective"]))
    assert {("valid", "allgather"), ("valid", "allreduce"), ("invalid", "causality"),
            ("invalid", "double_count")} <= seen


# --------------------------------------------------------------------------- hand-made, all eight
C, R = COPY, REDUCE

HAND_VALID = {
    # uniring:3 classic allgather
    "allgather": ("uniring:3", [(1, 0, 1, 0, 0, 1, C), (1, 1, 2, 1, 0, 1, C), (1, 2, 0, 2, 0, 1, C),
                               (2, 1, 2, 0, 0, 1, C), (2, 2, 0, 1, 0, 1, C), (2, 0, 1, 2, 0, 1, C)],
                  None),
    "reduce_scatter": ("uniring:3", [(1, 1, 2, 0, 0, 1, R), (1, 2, 0, 1, 0, 1, R),
                                     (1, 0, 1, 2, 0, 1, R), (2, 2, 0, 0, 0, 1, R),
                                     (2, 0, 1, 1, 0, 1, R), (2, 1, 2, 2, 0, 1, R)], None),
    "broadcast": ("ring:4", [(1, 0, 1, 0, 0, 1, C), (1, 0, 3, 0, 0, 1, C), (2, 1, 2, 0, 0, .5, C),
                             (2, 3, 2, 0, .5, 1, C)], 0),
    "reduce": ("ring:4", [(1, 2, 1, 0, 0, .5, R), (1, 2, 3, 0, .5, 1, R), (2, 1, 0, 0, 0, 1, R),
                          (2, 3, 0, 0, 0, 1, R)], 0),
    "scatter": ("ring:4", [(1, 0, 1, 1, 0, 1, C), (1, 0, 3, 3, 0, 1, C), (1, 0, 1, 2, 0, 1, C),
                           (2, 1, 2, 2, 0, 1, C)], 0),
    "gather": ("ring:4", [(1, 1, 0, 1, 0, 1, C), (1, 3, 0, 3, 0, 1, C), (1, 2, 1, 2, 0, 1, C),
                          (2, 1, 0, 2, 0, 1, C)], 0),
    "alltoall": ("ring:2", [(1, 0, 1, 1, 0, 1, C), (1, 1, 0, 2, 0, 1, C)], None),
}


@pytest.mark.parametrize("collective", sorted(HAND_VALID))
def test_hand_made_valid(collective):
    spec, rows, root = HAND_VALID[collective]
    report = verify(make(spec, collective, rows, root))
    assert report.valid, report.summary()


def test_hand_made_allreduce_is_rs_then_ag():
    rs = HAND_VALID["reduce_scatter"][1]
    ag = [(s + 2, a, b, (x + 2) % 3 if False else x, lo, hi, op)
          for (s, a, b, x, lo, hi, op) in HAND_VALID["allgather"][1]]
    # allgather phase: shard x must start where reduce-scatter left it (node x)
    assert verify(make("uniring:3", "allreduce", rs + ag)).valid


@pytest.mark.parametrize("collective", sorted(HAND_VALID))
def test_hand_made_each_drop_fails(collective):
    spec, rows, root = HAND_VALID[collective]
    for i in range(len(rows)):
        report = verify(make(spec, collective, rows[:i] + rows[i + 1:], root))
        assert not report.valid
        # a lost piece is missing at the end, or a later forward of it has nothing to send
        assert set(report.counts) & {"incomplete", "causality"}


def test_empty_schedule_incomplete_counts_pairs():
    report = verify(make("ring:4", "allgather", []))
    assert not report.valid
    assert report.counts == {"incomplete": 12}   # 4 nodes x 3 foreign shards


def test_single_node_needs_nothing():
    t = tc.Topology(1, [], [], name="single")
    assert verify(Schedule(t, "allreduce", np.zeros(0, tc.schedule.TRANSFER_DTYPE))).valid


# --------------------------------------------------------------------------- each violation kind
def test_causality_is_reported_with_step_nodes_shard():
    rows = [(1, 1, 2, 0, 0, 1, C)]  # node 1 does not hold shard 0 at step 1
    report = verify(make("uniring:3", "allgather", rows))
    err = report.errors[0]
    assert (err.kind, err.step, err.src, err.dst, err.shard) == ("causality", 1, 1, 2, 0)
    assert "does not hold" in err.message


def test_partial_piece_causality():
    # node 1 holds [0, .5) of shard 0 only, then forwards [0, 1)
    rows = [(1, 0, 1, 0, 0, .5, C), (2, 1, 2, 0, 0, 1, C)]
    report = verify(make("uniring:3", "allgather", rows))
    assert report.counts.get("causality") == 1
    assert report.errors[0].step == 2


def test_same_step_forwarding_is_not_allowed():
    rows = [(1, 0, 1, 0, 0, 1, C), (1, 1, 2, 0, 0, 1, C)]
    assert verify(make("uniring:3", "allgather", rows)).counts.get("causality") == 1


def test_missing_link():
    rows = HAND_VALID["allgather"][1] + [(3, 0, 2, 0, 0, 1, C)]  # uniring has no 0->2
    report = verify(make("uniring:3", "allgather", rows))
    assert report.counts == {"missing_link": 1}
    assert "0->2" in report.errors[0].message


def test_double_count_from_receiver_overlap():
    rows = HAND_VALID["reduce_scatter"][1] + [(3, 0, 1, 1, 0, 1, R)]
    report = verify(make("uniring:3", "reduce_scatter", rows))
    assert report.counts.get("double_count") == 1
    assert report.errors[0].step == 3


def test_double_count_within_one_step():
    # nodes 1 and 3 both hold node 2's contribution and both reduce into node 0 in one step
    rows = [(1, 2, 1, 0, 0, 1, R), (1, 2, 3, 0, 0, 1, R), (2, 1, 0, 0, 0, 1, R),
            (2, 3, 0, 0, 0, 1, R)]
    report = verify(make("ring:4", "reduce", rows, root=0))
    assert report.counts.get("double_count") >= 1
    assert report.errors[0].step == 2


def test_double_count_on_a_sub_piece_only():
    rows = [(1, 2, 1, 0, 0, .5, R), (1, 2, 3, 0, .25, 1, R), (2, 1, 0, 0, 0, 1, R),
            (2, 3, 0, 0, 0, 1, R)]
    report = verify(make("ring:4", "reduce", rows, root=0))
    assert "double_count" in report.counts


def test_conflicting_copy_and_reduce():
    rows = [(1, 1, 0, 0, 0, 1, C), (1, 3, 0, 0, 0, 1, R)]
    report = verify(make("ring:4", "reduce", rows, root=0))
    assert "conflict" in report.counts


@pytest.mark.parametrize("row,field", [
    ((0, 0, 1, 0, 0, 1, C), "step"),
    ((1, 0, 9, 0, 0, 1, C), "dst"),
    ((1, -1, 1, 0, 0, 1, C), "src"),
    ((1, 1, 1, 0, 0, 1, C), "dst"),
    ((1, 0, 1, 7, 0, 1, C), "shard"),
    ((1, 0, 1, 0, .5, .5, C), "hi"),
    ((1, 0, 1, 0, -.1, 1, C), "lo"),
    ((1, 0, 1, 0, 0, 1.5, C), "hi"),
    ((1, 0, 1, 0, 0, 1, R), "op"),
])
def test_malformed(row, field):
    report = verify(make("uniring:3", "allgather", HAND_VALID["allgather"][1] + [row]))
    assert report.counts.get("malformed") == 1
    assert f".{field}:" in report.errors[0].message


def test_report_lists_first_errors_by_step_and_counts_all():
    t = tc.generate("torus:4x4", "allgather")
    broken = t.replace(transfers=t.transfers[t.transfers["step"] != 2])
    report = verify(broken, max_errors=5)
    assert not report.valid
    assert len(report.errors) == 5
    assert report.error_count > 5
    steps = [e.step for e in report.errors if e.step is not None]
    assert steps == sorted(steps) and steps[0] == 3
    assert report.summary().startswith("invalid: step 3:")


# --------------------------------------------------------------------------- mutations
def _holders_before(t, i):
    """Whether the sender of transfer i received any overlapping piece of that shard earlier."""
    m = ((t["dst"] == t["src"][i]) & (t["shard"] == t["shard"][i]) & (t["step"] < t["step"][i])
         & (t["lo"] < t["hi"][i]) & (t["hi"] > t["lo"][i]))
    return bool(m.any())


MUTATION_CASES = [("torus:3x4", "allgather"), ("hypercube:3", "allreduce"),
                  ("genkautz:10,2", "reduce_scatter"), ("circulant:13:2,3", "allgather"),
                  ("ring:6", "allreduce")]


@pytest.mark.parametrize("spec,collective", MUTATION_CASES)
def test_mutations_break_valid_schedules(spec, collective):
    s = tc.generate(spec, collective, "bfb")
    assert verify(s).valid
    topo = s.topology
    t = s.transfers
    rng = np.random.default_rng(7)
    sample = rng.choice(t.size, size=min(25, t.size), replace=False)
    for i in sample:
        # drop
        assert not verify(s.replace(transfers=np.delete(t, i))).valid, ("drop", i)
        # redirect: a copy to another out-neighbour of its sender (the old receiver then
        # lacks the piece, since BFB delivers every piece once); a reduce to a node that is no
        # neighbour (moving a partial sum to another neighbour can be a valid schedule too)
        m = t.copy()
        src, dst = int(t["src"][i]), int(t["dst"][i])
        others = [w for w in range(topo.num_nodes) if w not in (src, dst)]
        nbrs = [w for w in others if topo.has_link(src, w)]
        far = [w for w in others if not topo.has_link(src, w)]
        choice = nbrs if t["op"][i] == COPY else far
        if choice:
            m["dst"][i] = choice[0]
            assert not verify(s.replace(transfers=m)).valid, ("redirect", i)
        # retime: a copy one step earlier than its data can be there; a reduce whose sender
        # still receives contributions before it sends, moved to step 1
        m = t.copy()
        if t["op"][i] == COPY:
            m["step"][i] -= 1
            assert not verify(s.replace(transfers=m)).valid, ("retime", i)
        elif _holders_before(t, i):
            m["step"][i] = 1
            assert not verify(s.replace(transfers=m)).valid, ("retime", i)


def test_mutation_to_missing_link_is_named():
    s = tc.generate("ring:8", "allgather")
    m = s.transfers.copy()
    m["dst"][0] = (m["src"][0] + 4) % 8
    report = verify(s.replace(transfers=m))
    assert "missing_link" in report.counts


# --------------------------------------------------------------------------- scale
def test_large_schedule_verifies_in_batches(monkeypatch):
    """Force many small shard batches; the verdict must not change."""
    import importlib

    vmod = importlib.import_module("topocoll.schedule.verify")

    s = tc.generate("torus:4x5", "allreduce")
    broken = s.replace(transfers=np.delete(s.transfers, 17))
    expected = verify(broken).counts
    monkeypatch.setattr(vmod, "ENTRY_BUDGET", 50)
    monkeypatch.setattr(vmod, "STATE_BUDGET", 64)
    assert verify(s).valid
    assert verify(broken).counts == expected
