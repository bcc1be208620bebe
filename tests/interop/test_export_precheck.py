"""The export's pre-check (topocoll.interop.export_precheck) replays the block pass exactly and
refuses only what the full translation refuses.

The runtime's limits are far beyond what small schedules reach, so the hypothesis tests shrink
them (steps per thread block, the width of ``depid``) for both the pre-check and the export: the
block pass then tries several ``cap`` values and refuses some schedules, on schedules small
enough to translate in milliseconds.
"""

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import topocoll.interop.export as export_module
from topocoll.errors import UnsupportedError
from topocoll.interop import export_blocks, export_msccl
from topocoll.interop.export import CAPACITY, LIMITS, WIDTHS, exact_chunks, quantize
from topocoll.interop.export_precheck import cap_outcome, operations, precheck
from topocoll.schedule.io import as_schedule
from topocoll.schedule.transforms import merge_pieces
from topocoll.synth import generate
from topocoll.topology import topology

DATA = Path(__file__).resolve().parent.parent / "data"
SPECS = ["ring:6", "torus:3x3", "hypercube:3", "mesh:3x3", "torus:2x4", "complete:5",
         "circulant:8:1,2"]


def _waited(blocks):
    """Per rank, the blocks some step waits for (a step's or a nop's dependency)."""
    return [len({d.block for _, _, _, out in rb for _, d in out if d is not None})
            for rb in blocks]


def _real_caps(monkeypatch):
    """Record what the export's block pass does at each cap it tries."""
    seen = []
    real = export_blocks.assign_blocks

    def spy(builder, cap, fuse, room=None):
        try:
            blocks = real(builder, cap, fuse, room)
        except UnsupportedError as exc:
            seen.append((cap, str(exc)))
            raise
        longest = max((len(out) for rb in blocks for *_, out in rb), default=0)
        used = 1 + max((chan for rb in blocks for _, _, chan, _ in rb), default=0)
        seen.append((cap, (max(_waited(blocks), default=0), longest, used)))
        return blocks

    monkeypatch.setattr(export_module, "assign_blocks", spy)
    return seen


def _lowered(s, chunks, channels):
    k = chunks or exact_chunks(s)
    if chunks is not None and k % (exact_chunks(s) or k + 1):
        s = quantize(s, k)[0]
    return merge_pieces(s), k


@settings(max_examples=20, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(spec=st.sampled_from(SPECS), alg=st.sampled_from(["bfb", "ten"]),
       chunks=st.sampled_from([None, 2, 3]), channels=st.integers(1, 2),
       proto=st.sampled_from(["Simple", "LL"]), unfused=st.booleans(),
       steps=st.sampled_from([6, 9, 16, 64]), depid=st.sampled_from([2, 4, 8, 127]))
def test_precheck_replays_the_block_pass(monkeypatch, spec, alg, chunks, channels, proto,
                                         unfused, steps, depid):
    monkeypatch.setitem(LIMITS, "steps", steps)
    monkeypatch.setitem(WIDTHS, "depid", (-128, depid, WIDTHS["depid"][2]))
    s = generate(topology(spec), "allreduce", alg)
    seen = _real_caps(monkeypatch)
    # the full translation, without the pre-check
    monkeypatch.setattr(export_module, "precheck", lambda *args, **kwargs: None)
    try:
        export_msccl(s, chunks=chunks, channels=channels, proto=proto, unfused=unfused,
                     check=False)
        accepted = True
    except UnsupportedError:
        accepted = False
    ms, k = _lowered(s, chunks, channels)
    room = None if unfused else CAPACITY[proto]
    try:
        precheck(ms, k, channels, room=room)
        refused = None
    except UnsupportedError as exc:
        refused = str(exc)
    if refused is not None:
        # refused only where the block pass refuses, with the same rule, rank and count
        assert not accepted and seen and isinstance(seen[-1][1], str)
        assert refused.split(";")[0] == seen[-1][1].split(";")[0]
    ops, deps = operations(ms, k, channels)
    for cap, real in seen:
        mine = cap_outcome(ops, deps, cap, room)
        if mine is None:
            break                        # a fusion might be kept: the pre-check says nothing
        if isinstance(real, str):        # the block pass refused: the replay says so too
            assert mine.worst_rank is not None and f"rank {mine.worst_rank} " in real
        else:
            assert mine.worst_rank is None
            assert (mine.waited, mine.longest, mine.used) == real


def test_refusal_names_the_rule_and_the_numbers(monkeypatch):
    """With 4 steps per block and depid 0..2 a BFB allreduce on a 3x3 torus runs out of waited-
    for block ids; the pre-check says so before the translation, with the export's own
    numbers."""
    monkeypatch.setitem(LIMITS, "steps", 4)
    monkeypatch.setitem(WIDTHS, "depid", (-128, 2, WIDTHS["depid"][2]))
    s = generate(topology("torus:3x3"), "allreduce", "bfb")
    seen = _real_caps(monkeypatch)
    with pytest.raises(UnsupportedError, match=r"rank \d+ has \d+ thread blocks that other "
                                               r"blocks wait for.*depid.*found before"):
        export_msccl(s, unfused=True)
    assert seen == []                   # refused before the block pass ran
    ms, k = _lowered(s, None, 1)
    # without the pre-check the block pass ends in the same error, same rank and count
    monkeypatch.setattr(export_module, "precheck", lambda *a, **kw: None)
    with pytest.raises(UnsupportedError) as full:
        export_msccl(s, unfused=True)
    assert seen and isinstance(seen[-1][1], str)
    try:
        precheck(ms, k, 1, room=None)
    except UnsupportedError as exc:
        assert str(exc).startswith(str(full.value).split(";")[0])


def test_exports_that_succeed_still_succeed(monkeypatch):
    """Small exports, fused and not, on 1 and 2 channels, and the schedule fixtures, give the
    same file with the pre-check as without it (it must never refuse one that fits)."""
    cases = [generate(topology(spec), coll, alg) for spec, coll, alg in
             [("torus:3x3", "allreduce", "bfb"), ("ring:6", "allreduce", "ring"),
              ("hypercube:3", "allreduce", "ten"), ("complete:5", "allreduce", "dbt"),
              ("torus:3x3", "allgather", "bfb")]]
    cases += [as_schedule(path) for path in sorted(DATA.glob("valid-*.json"))]
    assert len(cases) > 5
    real = export_module.precheck
    for s in cases:
        for channels in (1, 2):
            for unfused in (False, True):
                monkeypatch.setattr(export_module, "precheck", real)
                res = export_msccl(s, channels=channels, unfused=unfused)
                monkeypatch.setattr(export_module, "precheck", lambda *args, **kwargs: None)
                assert res.success
                assert res.text == export_msccl(s, channels=channels, unfused=unfused).text
    for s in cases[:4]:
        assert precheck(merge_pieces(s), exact_chunks(s), 1, room=2) is None


def test_operations_follow_the_export():
    """The arrays hold one send and one receive per run of chunks, as the export's builder."""
    s = generate(topology("ring:4"), "allreduce", "ring")
    ops, (dep_of, dep_on) = operations(merge_pieces(s), exact_chunks(s), 1)
    res = export_msccl(s, unfused=True)
    steps = [st for g in res.program.gpus for tb in g.blocks for st in tb.steps
             if st.attrs["type"] != "nop"]
    assert len(ops["rank"]) == len(steps)
    assert np.all(ops["order"][dep_on] < ops["order"][dep_of])   # waits point back
