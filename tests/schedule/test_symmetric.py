"""Symmetric schedules: the verdict, the price and the link-model time from the
representatives equal those of the expansion (docs/math.md section 10), and the form survives
files, reversal and concatenation."""

import functools
import gzip
import json

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import topocoll as tc
from topocoll.errors import (InvalidScheduleError, ScheduleFormatError, TopologyError,
                             UnsupportedError)
from topocoll.schedule import (SymmetricSchedule, concatenate, dumps_schedule, evaluate,
                               load_schedule, loads_schedule, normalize, reverse, save_schedule,
                               simulate, symmetric_schedule, verify)
from topocoll.schedule.model import transfer_array
from topocoll.topology import topology
from topocoll.topology.symmetry import translation_group

TOPOLOGIES = ("torus:3x3", "torus:4x4", "torus:2x3x2", "hypercube:2", "hypercube:3",
              "hypercube:4", "circulant:8:1,3", "circulant:12:1,5", "ring:5", "uniring:5")
COLLECTIVES = ("allgather", "reduce_scatter", "allreduce")
CASES = [(t, c) for t in TOPOLOGIES for c in COLLECTIVES]


@functools.lru_cache(maxsize=None)
def _explicit(spec, coll):
    return tc.generate(topology(spec, bandwidth=1e9, latency=1e-6), coll, "bfb")


def _rows(schedule):
    t = schedule.transfers
    return t[np.lexsort((t["op"], t["hi"], t["lo"], t["shard"], t["dst"], t["src"], t["step"]))]


@pytest.mark.parametrize("spec, coll", CASES)
def test_symmetric_verdict_equals_the_explicit_one(spec, coll):
    explicit = _explicit(spec, coll)
    s = symmetric_schedule(explicit)
    assert s.form == "symmetric" and np.all(s.transfers["dst"] == 0)
    assert s.num_transfers == explicit.num_transfers and s.num_steps == explicit.num_steps
    assert np.array_equal(_rows(s.expand()), _rows(explicit))
    mine, theirs = verify(s), verify(s.expand())
    assert mine.valid and theirs.valid
    assert mine.to_dict()["representatives"] == s.num_representatives
    # a deleted representative: both fail, with the same counts
    for drop in (0, s.num_representatives - 1):
        cut = s.replace(transfers=np.delete(s.transfers, drop))
        mine, theirs = verify(cut), verify(cut.expand())
        assert not mine.valid and not theirs.valid
        assert mine.counts == theirs.counts and mine.error_count == theirs.error_count


def _perturb(s, data):
    """One representative changed in one field, keeping every row well formed."""
    t = s.transfers.copy()
    n = s.num_nodes
    i = data.draw(st.integers(0, t.size - 1))
    field = data.draw(st.sampled_from(["step", "src", "shard", "range", "op", "drop", "dup"]))
    if field == "step":
        t["step"][i] = data.draw(st.integers(1, s.last_step + 1))
    elif field == "src":
        t["src"][i] = data.draw(st.integers(1, n - 1))
    elif field == "shard":
        t["shard"][i] = data.draw(st.integers(0, n - 1))
    elif field == "range":
        lo = data.draw(st.sampled_from([0.0, 0.25, 0.5]))
        t["lo"][i], t["hi"][i] = lo, lo + data.draw(st.sampled_from([0.25, 0.5]))
    elif field == "op" and s.collective.combining:
        t["op"][i] = 1 - t["op"][i]
    elif field == "dup":
        t = np.concatenate([t, t[i:i + 1]])
    else:
        t = np.delete(t, i)
    return s.replace(transfers=t)


@settings(max_examples=60)
@given(case=st.sampled_from([("torus:3x3", c) for c in COLLECTIVES]
                            + [("hypercube:3", c) for c in COLLECTIVES]
                            + [("circulant:8:1,3", "allreduce"), ("uniring:5", "allgather")]),
       data=st.data())
def test_perturbed_representatives_fail_in_both_verifiers_together(case, data):
    s = _perturb(symmetric_schedule(_explicit(*case)), data)
    mine, theirs = verify(s), verify(s.expand())
    assert mine.valid == theirs.valid
    assert mine.counts == theirs.counts


def test_a_schedule_that_is_not_invariant_is_refused():
    explicit = _explicit("torus:3x3", "allgather")
    t = explicit.transfers
    other = np.flatnonzero(t["dst"] != 0)[0]
    with pytest.raises(UnsupportedError, match="not invariant"):
        symmetric_schedule(explicit.replace(transfers=np.delete(t, other)))
    moved = t.copy()
    moved["step"][other] += 1
    with pytest.raises(UnsupportedError, match="not invariant"):
        symmetric_schedule(explicit.replace(transfers=moved))
    with pytest.raises(UnsupportedError, match="not broadcast"):
        symmetric_schedule(tc.generate("ring:4", "broadcast", "bfb"))
    with pytest.raises(UnsupportedError, match="no translation group"):
        symmetric_schedule(tc.generate("genkautz:12,2", "allgather", "bfb"))


def test_a_group_that_is_no_symmetry_is_refused_and_reported():
    explicit = _explicit("torus:3x3", "allgather")
    with pytest.raises(TopologyError, match="do not map the links"):
        symmetric_schedule(explicit, group=[9])
    reps = symmetric_schedule(explicit).transfers
    s = SymmetricSchedule(explicit.topology, "allgather", [9], reps)
    report = verify(s)
    assert not report.valid and report.counts == {"not_invariant": 1}
    with pytest.raises(TopologyError, match="do not multiply"):
        SymmetricSchedule(explicit.topology, "allgather", [2, 3], reps)


def test_the_form_holds_representatives_of_three_collectives_only():
    ring = topology("uniring:3")
    with pytest.raises(ScheduleFormatError, match="dst must be 0"):
        SymmetricSchedule(ring, "allgather", [3], transfer_array(1, 0, 1, 0, 0.0, 1.0))
    with pytest.raises(UnsupportedError, match="not broadcast"):
        SymmetricSchedule(ring, "broadcast", [3], transfer_array(1, 2, 0, 0, 0.0, 1.0))
    bad = SymmetricSchedule(ring, "allgather", [3], transfer_array(0, 2, 0, 2, 0.0, 1.0))
    assert verify(bad).counts == {"malformed": 3, "incomplete": 6}   # 2 nodes lack each shard
    with pytest.raises(InvalidScheduleError, match="step must be >= 1"):
        bad.expand()


@pytest.mark.parametrize("spec, coll", [(t, c) for t in ("torus:4x4", "torus:2x3x2",
                                                         "hypercube:4", "circulant:12:1,5")
                                        for c in COLLECTIVES])
def test_price_and_link_model_from_the_representatives(spec, coll):
    s = symmetric_schedule(_explicit(spec, coll))
    x = s.expand()
    for kwargs in ({}, {"alpha": "3us", "link_bandwidth": "7GB/s"}):
        mine, theirs = evaluate(s, "1MiB", **kwargs), evaluate(x, "1MiB", **kwargs)
        for key in ("time", "T_L", "T_B"):
            assert getattr(mine, key) == pytest.approx(getattr(theirs, key), rel=1e-12)
        assert mine.steps == theirs.steps and mine.bw_optimal == theirs.bw_optimal
    for per in ("message", "step", "transfer"):
        mine, theirs = simulate(s, "1MiB", alpha_per=per), simulate(x, "1MiB", alpha_per=per)
        assert mine.time == pytest.approx(theirs.time, rel=1e-12)
        np.testing.assert_allclose(mine.link_busy, theirs.link_busy, rtol=1e-12)
        assert np.array_equal(mine.link_transfers, theirs.link_transfers)
        assert mine.to_dict()["transfers"] == theirs.to_dict()["transfers"]


def test_link_model_on_unequal_dimensions():
    """A torus whose two dimensions differ in bandwidth is still invariant."""
    base = topology("torus:4x3")
    fast = np.abs(base.dst - base.src) % 3 != 0   # links within the second dimension
    topo = base.with_links(bandwidth=np.where(fast, 4e9, 1e9), latency=2e-6)
    s = symmetric_schedule(tc.generate(topo, "allreduce", "bfb"))
    x = s.expand()
    assert verify(s).valid and verify(x).valid
    assert simulate(s, "4MiB").time == pytest.approx(simulate(x, "4MiB").time, rel=1e-12)
    assert evaluate(s, "4MiB").time == pytest.approx(evaluate(x, "4MiB").time, rel=1e-12)


def test_reverse_and_concatenate_stay_symmetric():
    topo = topology("torus:3x4")
    ag_t = symmetric_schedule(tc.generate(topo.transpose(), "allgather", "bfb"))
    rs = reverse(ag_t, "reduce_scatter", topo, algorithm="bfb")
    assert rs.form == "symmetric" and np.all(rs.transfers["dst"] == 0)
    ag = reverse(rs, "allgather", topo, algorithm="bfb")
    ar = concatenate(rs, ag, "allreduce", algorithm="bfb")
    assert ar.form == "symmetric" and verify(ar).valid
    assert np.array_equal(_rows(rs.expand()),
                          _rows(tc.generate(topo, "reduce_scatter", "bfb")))
    assert np.array_equal(_rows(ar.expand()), _rows(tc.generate(topo, "allreduce", "bfb")))


def test_normalize_puts_every_row_into_node_zero():
    group = translation_group(topology("torus:3x4"))
    t = transfer_array([1, 2], [5, 7], [6, 11], [3, 7], 0.0, 1.0)
    out = normalize(t, group)
    assert np.all(out["dst"] == 0)
    back = group.add(out["src"], t["dst"])
    assert np.array_equal(back, t["src"])
    assert np.array_equal(group.add(out["shard"], t["dst"]), t["shard"])


def test_restricting_the_verifier_to_some_shards():
    explicit = _explicit("torus:3x3", "allgather")
    t = explicit.transfers
    cut = explicit.replace(transfers=t[~((t["shard"] == 4) & (t["dst"] == 0))])
    assert not verify(cut).valid
    assert verify(cut, shards=[0, 1, 2]).valid
    assert not verify(cut, shards=[4]).valid


def test_files_round_trip_in_the_symmetric_form(tmp_path):
    s = symmetric_schedule(_explicit("torus:4x4", "allreduce"))
    for name in ("s.json", "s.json.gz"):
        path = tmp_path / name
        save_schedule(s, path)
        back = load_schedule(path)
        assert back.form == "symmetric" and back.group == s.group
        assert translation_group(back.topology) == s.group   # the file's labelling is claimed
        assert np.array_equal(back.transfers, s.transfers) and verify(path).valid
    with gzip.open(tmp_path / "s.json.gz") as fh:
        assert fh.read(1) == b"{"
    doc = json.loads(dumps_schedule(s))
    assert doc["form"] == "symmetric"
    assert doc["symmetry"] == {"kind": "translation", "dims": [4, 4]}
    assert len(doc["transfers"]) == s.num_representatives
    assert "form" not in json.loads(dumps_schedule(s.expand()))   # explicit files unchanged
    loaded = loads_schedule(json.dumps(doc))   # the general (non-canonical) reader too
    assert np.array_equal(loaded.transfers, s.transfers)


@pytest.mark.parametrize("change, message", [
    ({"symmetry": {"kind": "translation", "dims": [3, 4]}}, "do not multiply"),
    ({"symmetry": {"kind": "mirror", "dims": [4, 4]}}, "symmetry.kind"),
    ({"symmetry": {"kind": "translation", "dims": [4, 4], "x": 1}}, "symmetry.x"),
    ({"form": "folded"}, "form: must be"),
    ({"symmetry": None}, "symmetry: must be an object"),
])
def test_bad_symmetric_headers_name_the_field(change, message):
    doc = json.loads(dumps_schedule(symmetric_schedule(_explicit("torus:4x4", "allgather"))))
    doc.update(change)
    with pytest.raises(ScheduleFormatError, match=message):
        loads_schedule(json.dumps(doc))


def test_explicit_files_may_not_carry_a_symmetry():
    doc = json.loads(dumps_schedule(_explicit("ring:5", "allgather")))
    doc["symmetry"] = {"kind": "translation", "dims": [5]}
    with pytest.raises(ScheduleFormatError, match="symmetry: unknown field"):
        loads_schedule(json.dumps(doc))
    doc = json.loads(dumps_schedule(symmetric_schedule(_explicit("ring:5", "allgather"))))
    doc["transfers"][0]["dst"] = 1
    with pytest.raises(ScheduleFormatError, match=r"transfers\[0\]\.dst"):
        loads_schedule(json.dumps(doc))


def test_an_empty_symmetric_schedule_is_timed_and_judged_like_its_expansion():
    ring = topology("ring:4")
    s = SymmetricSchedule(ring, "allgather", [4], transfer_array([], [], [], [], 0.0, 1.0))
    assert s.num_transfers == 0 and s.expand().num_transfers == 0
    assert verify(s).counts == verify(s.expand()).counts == {"incomplete": 12}
    assert simulate(s, "1MiB").time == simulate(s.expand(), "1MiB").time == 0.0
