"""Compact schedules: the same transfers as the explicit form in narrow columns; the verifier's
block-by-block check gives the explicit verifier's verdict, counts and messages, on valid and
on broken schedules; files are byte-identical to the explicit form's."""

import functools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from topocoll.errors import InputTypeError, ScheduleFormatError, UnsupportedError
from topocoll.schedule import (CompactSchedule, compact_schedule, dumps_schedule,
                               loads_schedule, save_schedule, verify)
from importlib import import_module
from topocoll.schedule.compact import compact_columns
from topocoll.synth import generate
from topocoll.synth.ten import synthesize
from topocoll.topology import topology

CASES = [("mesh:4x5", "allgather", {}), ("torus:4x4", "broadcast", {"root": 5}),
         ("hypercube:3", "alltoall", {}), ("mesh:3x4", "scatter", {"root": 2}),
         ("ring:5", "allgather", {"chunks": 3}), ("randomregular:10,3", "gather", {"root": 1}),
         ("kautz:2,2", "allgather", {"chunks": 2})]
# the reversed collectives (reduce_scatter, reduce) and allreduce combine: not compact
VERDICT_KEYS = ("valid", "counts", "error_count", "steps", "transfers", "warnings")


@functools.lru_cache(maxsize=None)
def _synth(spec, coll, items):
    return synthesize(spec, coll, form="compact", **dict(items))


def _case(spec, coll, kw):
    return _synth(spec, coll, tuple(sorted(kw.items())))


def _same_report(a, b):
    da, db = a.to_dict(), b.to_dict()
    for key in VERDICT_KEYS:
        assert da[key] == db[key], key
    assert [e["message"] for e in da["errors"]] == [e["message"] for e in db["errors"]]


@pytest.mark.parametrize("spec, coll, kw", CASES)
def test_compact_synthesis_is_the_explicit_one(spec, coll, kw):
    c = _case(spec, coll, kw)
    e = synthesize(spec, coll, form="explicit", **kw)
    assert c.form == "compact" and e.form == "explicit"
    assert c.expand().transfers.tolist() == e.transfers.tolist()
    assert (c.num_steps, c.last_step, c.num_transfers) == (e.num_steps, e.last_step,
                                                          e.num_transfers)
    assert c.nbytes < e.transfers.nbytes / 4
    assert verify(c).valid
    _same_report(verify(c), verify(e))


@pytest.mark.parametrize("spec, coll, kw", CASES)
def test_compact_file_is_the_explicit_file(spec, coll, kw, monkeypatch):
    from topocoll.schedule import io

    c = _case(spec, coll, kw)
    text = dumps_schedule(c.expand())
    assert dumps_schedule(c) == text
    monkeypatch.setattr(io, "WRITE_CHUNK", 7)        # many blocks: the commas between them
    assert dumps_schedule(c) == dumps_schedule(c.expand())
    assert loads_schedule(dumps_schedule(c)).transfers.tolist() == \
        c.expand().transfers.tolist()
    back = loads_schedule(text)
    assert back.form == "explicit" and back.transfers.tolist() == c.expand().transfers.tolist()


def test_compact_schedule_of_an_explicit_one_round_trips():
    e = generate("torus:3x3", "allgather", "bfb")
    c = compact_schedule(e)
    order = np.argsort(e.transfers["step"], kind="stable")
    assert c.expand().transfers.tolist() == e.transfers[order].tolist()
    assert [c.columns[k].dtype for k in ("step", "src", "dst", "shard")] == [np.uint8] * 4


def _mutations():
    cols = ("step", "src", "dst", "shard", "part", "drop", "swap")
    return st.tuples(st.sampled_from(range(len(CASES))), st.sampled_from(cols),
                     st.floats(0, 1, exclude_max=True), st.integers(-3, 40))


@settings(max_examples=60, deadline=None)
@given(_mutations())
def test_broken_compact_schedules_get_the_explicit_verdict(mutation):
    """Every way of breaking a schedule (a changed field, a dropped row, two rows' steps
    swapped) gives the explicit verifier's verdict, counts and messages."""
    case, field, where, value = mutation
    c = _case(*CASES[case])
    cols = {k: v.astype(np.int64) for k, v in c.columns.items()}
    i = int(where * c.num_transfers)
    if field == "drop":
        cols = {k: np.delete(v, i) for k, v in cols.items()}
    elif field == "swap":
        j = (i + 1 + value % 5) % c.num_transfers
        cols["src"][[i, j]] = cols["src"][[j, i]]
    elif field in cols:
        cols[field][i] = max(0, cols[field][i] + value) if field == "step" else \
            max(0, value)
        if field == "step":
            order = np.argsort(cols["step"], kind="stable")
            cols = {k: v[order] for k, v in cols.items()}
    broken = c.replace(columns=compact_columns(**cols))
    _same_report(verify(broken), verify(broken.expand()))


def test_dropping_a_row_makes_the_verifier_fail():
    c = _case("mesh:4x5", "allgather", {})
    cols = {k: v[1:] for k, v in c.columns.items()}
    report = verify(c.replace(columns=cols))
    assert not report.valid and report.error_count >= 1


def test_shard_batches_give_the_same_report(monkeypatch):
    c = _case("hypercube:3", "alltoall", {})
    cols = {k: v.copy() for k, v in c.columns.items()}
    cols["src"][10] = (int(cols["src"][10]) + 3) % 8
    broken = c.replace(columns=cols)
    whole = verify(broken)
    monkeypatch.setattr(import_module("topocoll.schedule.verify"), "_COMPACT_STATE_BUDGET", 8 * 4)  # one shard a batch
    assert not whole.valid
    _same_report(verify(broken), whole)
    _same_report(verify(broken, shards=[3, 5]), verify(broken.expand(), shards=[3, 5]))


def test_compact_schedule_rules():
    t = topology("mesh:1x3")
    cols = compact_columns([1, 1, 2, 2], [0, 1, 1, 0], [1, 0, 2, 2], [0, 1, 0, 0])
    s = CompactSchedule(t, "allgather", cols)
    assert s.num_steps == 2 and not verify(s).valid
    _same_report(verify(s), verify(s.expand()))
    with pytest.raises(ScheduleFormatError, match="sorted by step"):
        CompactSchedule(t, "allgather", dict(cols, step=cols["step"][::-1]))
    with pytest.raises(UnsupportedError, match="copies only"):
        CompactSchedule(t, "allreduce", cols)
    with pytest.raises(ScheduleFormatError, match="missing part"):
        CompactSchedule(t, "allgather", cols, parts=2)
    with pytest.raises(ScheduleFormatError, match="unexpected part"):
        CompactSchedule(t, "allgather", dict(cols, part=cols["src"]))
    with pytest.raises(InputTypeError, match="hold integers"):
        CompactSchedule(t, "allgather", dict(cols, shard=np.zeros(4)))
    with pytest.raises(ScheduleFormatError, match="one entry per transfer"):
        CompactSchedule(t, "allgather", dict(cols, shard=cols["shard"][:3]))
    with pytest.raises(ScheduleFormatError, match="needs an integer root"):
        CompactSchedule(t, "broadcast", cols)
    with pytest.raises(ScheduleFormatError, match=">= 0"):
        compact_columns([1], [-1], [0], [0])
    with pytest.raises(UnsupportedError, match="no transfer array"):
        s.transfers
    with pytest.raises(UnsupportedError, match="reduces"):
        compact_schedule(generate("ring:4", "allreduce", "ring").replace(
            collective="allgather"))


def test_compact_schedule_refuses_uneven_cuts():
    e = generate("ring:4", "allgather", "ring")
    t = e.transfers.copy()
    t["hi"][0] = 0.5
    with pytest.raises(UnsupportedError, match="equal cut"):
        compact_schedule(e.replace(transfers=t))


def test_expanding_is_guarded(monkeypatch):
    from topocoll.errors import ResourceLimitError

    c = _case("mesh:4x5", "allgather", {})
    monkeypatch.setenv("TOPOCOLL_MEMORY_LIMIT", "1MiB")
    big = c.replace(columns={k: np.repeat(v, 200) for k, v in c.columns.items()})
    with pytest.raises(ResourceLimitError, match="explicit allgather"):
        big.expand()


def test_save_schedule_streams_to_a_gzip_file(tmp_path):
    from topocoll.schedule import load_schedule

    c = _case("ring:5", "allgather", {"chunks": 3})
    save_schedule(c, tmp_path / "s.json.gz")
    back = load_schedule(tmp_path / "s.json.gz")
    assert back.transfers.tolist() == c.expand().transfers.tolist() and verify(back).valid
