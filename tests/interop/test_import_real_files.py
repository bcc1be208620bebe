"""Importing MSCCL XML in the shapes TACCL, TE-CCL, ASTRA-sim's inputs and msccl-tools write:
<copy> elements with their offsets, run before the thread blocks; the
older dialect's in-place default; allreduces whose chunk count is not a multiple of the ranks.

The fixtures (tests/data/msccl/imp-*.xml) are hand-written in those tools' shapes.
"""

import re
from pathlib import Path

import numpy as np
import pytest

from topocoll.interop import import_msccl, parse_msccl, replay
from topocoll.interop.replay import program_modes
from topocoll.runtime.plan import simulate_plans
from topocoll.schedule import verify

MSCCL = Path(__file__).resolve().parents[1] / "data" / "msccl"


def definition(name, inputs):
    n = len(inputs)
    if name == "allgather":
        return [np.concatenate(inputs)] * n
    assert name == "allreduce"
    return [sum(inputs)] * n


def check(imported, collective, steps, *, valid, unit=12):
    """Lint says correct (and valid where the file is in the current dialect); the schedule
    verifies, has ``steps`` steps, and computes the collective's definition on numbers."""
    report = imported.lint
    assert report.correct is True, report.problems
    assert report.valid is valid, report.errors
    s = imported.schedule
    assert s.collective.name == collective
    assert s.num_steps == steps
    assert verify(s).valid
    n = s.num_nodes
    rng = np.random.default_rng(5)
    numel = unit * (1 if collective == "allgather" else n)
    inputs = [rng.integers(0, 1000, numel).astype(np.int64) for _ in range(n)]
    for got, want in zip(simulate_plans(s, inputs), definition(collective, inputs)):
        assert np.array_equal(got, want)
    return s


def old_dialect_rules(report):
    """The runtime rules an older-dialect file breaks: at least the attributes it lacks."""
    rules = {f.rule for f in report.errors}
    assert any(f.rule == "attributes" and "outofplace" in f.message for f in report.errors)
    return rules


# -- 1. <copy> elements: their offsets, before the thread blocks ------------------------------

def test_taccl_copies_import_as_a_correct_in_place_allgather():
    imported = import_msccl(MSCCL / "imp-taccl-allgather8-copies.xml")
    s = check(imported, "allgather", 7, valid=False)
    # what the runtime would say about the older dialect (lint.py may also flag the copies)
    assert old_dialect_rules(imported.lint) <= {"attributes", "element", "copy"}
    # a ring: every rank sends to the next one, 2 chunks = the whole shard per step
    assert sorted(zip(s.topology.src.tolist(), s.topology.dst.tolist())) == \
        [(r, (r + 1) % 8) for r in range(8)]
    assert s.num_transfers == 8 * 7


def test_taccl_copies_are_applied_with_their_offsets_before_the_blocks_out_of_place():
    # out of place the <copy> elements are what puts each rank's input into the output, from
    # where the ring's first sends read it: they must run first and at their offsets
    text = (MSCCL / "imp-taccl-allgather8-copies.xml").read_text()
    oop = text.replace('inplace="1"', 'inplace="0"')
    check(import_msccl(oop), "allgather", 7, valid=False)
    run = replay(parse_msccl(oop))
    assert not run.inplace and run.ok
    # the copies' offsets matter: rank 3's copy to the wrong place leaves its shard missing
    wrong = oop.replace('<copy i_off="1" o_off="7"/>', '<copy i_off="1" o_off="6"/>')
    report = import_msccl(wrong).lint
    assert report.correct is False
    assert any("rank 3 output chunk 7" in p for p in report.problems)


def test_copies_spelled_with_step_attributes_also_run_first():
    # the same program with <copy srcbuf srcoff dstbuf dstoff cnt/> (one copy of both chunks)
    text = (MSCCL / "imp-taccl-allgather8-copies.xml").read_text().replace(
        'inplace="1"', 'inplace="0"')

    def one_copy(m):
        r = int(m.group(1))
        return (f'<gpu id="{r}" i_chunks="2" o_chunks="16" s_chunks="0">\n    <copy srcbuf="i" '
                f'srcoff="0" dstbuf="o" dstoff="{2 * r}" cnt="2"/>')

    text = re.sub(r'<gpu id="(\d+)" i_chunks="2" o_chunks="16" s_chunks="0">\s*'
                  r'<copy [^>]*/>\s*<copy [^>]*/>', one_copy, text)
    assert text.count('<copy srcbuf="i"') == 8 and 'i_off="' not in text
    check(import_msccl(text), "allgather", 7, valid=False)


# -- 2. the older dialect is in place -----------------------------------------------------------

def test_taccl_allgather_without_outofplace_is_in_place_and_keeps_all_its_steps():
    imported = import_msccl(MSCCL / "imp-taccl-allgather4-inplace.xml")
    s = check(imported, "allgather", 2, valid=False)
    assert old_dialect_rules(imported.lint) == {"attributes"}
    assert s.num_transfers == 4 + 4 * 2      # 4 sends of one shard, then 4 of two
    assert replay(imported.program).inplace


def test_astra_sim_hierarchical_allgather_imports_with_its_steps():
    imported = import_msccl(MSCCL / "imp-astra-allgather-hier8.xml")
    s = check(imported, "allgather", 4, valid=False)
    assert old_dialect_rules(imported.lint) == {"attributes"}
    # 3 ring steps inside each node, then one step between the nodes (4 shards each)
    assert s.num_transfers == 8 * 3 + 8 * 4


def test_the_modes_a_program_declares():
    def modes(attrs):
        return program_modes(parse_msccl(f'<algo coll="allgather" ngpus="1" {attrs}/>'))
    assert modes('inplace="1" outofplace="1"') == [False, True]
    assert modes('inplace="1" outofplace="0"') == [True]
    assert modes('inplace="0" outofplace="1"') == [False]
    assert modes('inplace="1"') == [True]        # TACCL, ASTRA-sim's inputs
    assert modes('') == [True]
    assert modes('inplace="0"') == [False]       # the older dialect saying out of place
    # the older dialect out of place still works where its copies provide the input
    report = import_msccl(MSCCL / "ring3-allgather-old-dialect.xml").lint
    assert report.correct is True


# -- 3. any chunking of an allreduce ------------------------------------------------------------

def test_taccl_allreduce_with_3_chunks_on_2_ranks():
    imported = import_msccl(MSCCL / "imp-taccl-allreduce2-3chunks.xml")
    s = check(imported, "allreduce", 2, valid=False)
    # chunk 1 of 3 spans the two shards: [2/3, 1) of shard 0 and [0, 1/3) of shard 1
    t = s.transfers
    first = t[(t["step"] == 1) & (t["src"] == 1)]
    assert [(int(x), lo, hi) for x, lo, hi in zip(first["shard"], first["lo"], first["hi"])] \
        == [(0, 0.0, 1.0), (1, 0.0, pytest.approx(1 / 3))]
    # out of place its copies put the input into the output first
    text = (MSCCL / "imp-taccl-allreduce2-3chunks.xml").read_text()
    check(import_msccl(text.replace('inplace="1"', 'inplace="0"')), "allreduce", 2, valid=False)


@pytest.mark.parametrize("name, chunks", [("imp-msccl-chain3-allreduce-1chunk.xml", 1),
                                          ("imp-msccl-chain3-allreduce-2chunks.xml", 2)])
def test_msccl_tools_chain_allreduce_with_fewer_chunks_than_ranks(name, chunks):
    imported = import_msccl(MSCCL / name)
    s = check(imported, "allreduce", 4, valid=True)
    # reduced along 0->1->2, sent back 2->1->0; each chunk touches every shard it covers
    assert sorted(set(zip(s.transfers["src"].tolist(), s.transfers["dst"].tolist()))) == \
        [(0, 1), (1, 0), (1, 2), (2, 1)]
    covered = {int(x) for x in s.transfers["shard"]}
    assert covered == {0, 1, 2}
