"""Hand-written MSCCL fixtures for the feature classes the importer must read, each with a
variant broken on purpose:

* multi-instance files (``inst2-*.xml``): what msccl-tools' ncclize writes for ``instances=k``
  with its default interleaved replication: every thread block repeated once per instance on
  channel ``nchannels * i + chan``, input and output chunk ``c`` of instance ``i`` at
  ``c * k + i`` (scratch batched: ``c + i * s_chunks``), blocks renumbered in (send, recv,
  chan) order, dependencies naming the same instance's block, ``nchunksperloop`` and the
  buffers ``k`` times the one-instance program's;
* the LL and LL128 protocols (``ll-*.xml``, ``ll128-*.xml``), whose connections hold 8 units
  where Simple's hold 2: fused steps that keep more than 2 units in flight complete under LL
  and are a ``buffers`` error under Simple;
* fused steps (``rrs``, ``rrcs``, ``rcs``) in one block per rank, in both.

The older dialect with ``<copy>``, files without ``outofplace`` and odd chunk counts are in
test_import_real_files.py.
"""

import re
from pathlib import Path

import numpy as np
import pytest

from topocoll.interop import import_msccl, lint_msccl, parse_msccl, read_msccl
from topocoll.interop.export import CAPACITY
from topocoll.interop.lint import buffer_capacity
from topocoll.interop.mscclxml import Gpu, Program, Step, ThreadBlock, format_msccl
from topocoll.interop.replay import program_modes, replay
from topocoll.runtime.plan import simulate_plans
from topocoll.schedule import verify

MSCCL = Path(__file__).resolve().parents[1] / "data" / "msccl"

#: name -> (collective, ranks, steps, transfers, smallest capacity, modes)
GOOD = {
    "inst2-ring4-allgather.xml": ("allgather", 4, 3, 12, 1, [True]),
    "inst2-ring3-allreduce.xml": ("allreduce", 3, 4, 12, 2, [False, True]),
    "ll-ring3-allreduce-needs4.xml": ("allreduce", 3, 4, 12, 4, [False, True]),
    "ll128-ring4-allgather.xml": ("allgather", 4, 3, 12, 3, [False]),
}


def rules(report):
    return {f.rule for f in report.errors}


def transfers(schedule):
    """The schedule's transfers as a sorted list of plain tuples."""
    t = schedule.transfers
    return sorted(zip(t["step"].tolist(), t["src"].tolist(), t["dst"].tolist(),
                      t["shard"].tolist(), np.round(t["lo"], 9).tolist(),
                      np.round(t["hi"], 9).tolist(), t["op"].tolist()))


def computes(schedule, collective):
    """Run the schedule on numbers: every rank ends with the collective's definition."""
    n = schedule.num_nodes
    rng = np.random.default_rng(11)
    numel = 12 * (1 if collective == "allgather" else n)
    inputs = [rng.integers(0, 1000, numel).astype(np.int64) for _ in range(n)]
    want = np.concatenate(inputs) if collective == "allgather" else sum(inputs)
    return all(np.array_equal(got, want) for got in simulate_plans(schedule, inputs))


# -- instances in ncclize's form ---------------------------------------------------------------

def instantiate(program, k, *, interleaved=True):
    """``program`` replicated ``k`` times as msccl-tools' ncclize writes ``instances=k``
    (``interleaved``: its default ``interleaved_replication=True``; else batched)."""
    nch = int(program.attrs["nchannels"])
    gpus = []
    for g in program.gpus:
        size = {b: int(g.attrs[f"{b}_chunks"]) for b in "ios"}

        def moved(buf, off, cnt, i):
            if buf == "s" or not interleaved:
                return off + i * size[buf]
            if cnt != 1:
                raise ValueError("interleaved replication moves single chunks only")
            return off * k + i

        made = []          # (sort key, base id, instance, ThreadBlock)
        for tb in g.blocks:
            for i in range(k):
                steps = []
                for st in tb.steps:
                    a = dict(st.attrs)
                    cnt = int(a["cnt"])
                    for side in ("src", "dst"):
                        a[f"{side}off"] = str(moved(a[f"{side}buf"], int(a[f"{side}off"]), cnt, i))
                    steps.append(Step(a))
                t = dict(tb.attrs, chan=str(nch * i + int(tb.attrs["chan"])))
                made.append(((int(t["send"]), int(t["recv"]), int(t["chan"])),
                             int(tb.attrs["id"]), i, ThreadBlock(t, steps)))
        made.sort(key=lambda m: m[0])
        new_id = {(b, i): pos for pos, (_, b, i, _) in enumerate(made)}
        blocks = []
        for pos, (_, b, i, tb) in enumerate(made):
            tb.attrs["id"] = str(pos)
            for st in tb.steps:
                if int(st.attrs["depid"]) >= 0:
                    st.attrs["depid"] = str(new_id[(int(st.attrs["depid"]), i)])
            blocks.append(tb)
        gpus.append(Gpu(dict(g.attrs, **{f"{b}_chunks": str(size[b] * k) for b in "ios"}),
                        blocks))
    attrs = dict(program.attrs, nchannels=str(nch * k),
                 nchunksperloop=str(int(program.attrs["nchunksperloop"]) * k))
    return Program(attrs, gpus)


def first_instance(program, k):
    """The one-instance program of an interleaved ``k``-instance file: its blocks on the first
    ``nchannels / k`` channels, chunk ``c * k`` read back as ``c``."""
    nch = int(program.attrs["nchannels"]) // k
    gpus = []
    for g in program.gpus:
        kept = [tb for tb in g.blocks if int(tb.attrs["chan"]) < nch]
        new_id = {tb.attrs["id"]: str(pos) for pos, tb in enumerate(kept)}
        blocks = []
        for tb in kept:
            steps = []
            for st in tb.steps:
                a = dict(st.attrs)
                for side in ("src", "dst"):
                    if a[f"{side}buf"] != "s":
                        assert int(a[f"{side}off"]) % k == 0, (g.attrs["id"], a)
                        a[f"{side}off"] = str(int(a[f"{side}off"]) // k)
                if a["depid"] != "-1":
                    a["depid"] = new_id[a["depid"]]
                steps.append(Step(a))
            blocks.append(ThreadBlock(dict(tb.attrs, id=new_id[tb.attrs["id"]]), steps))
        gpus.append(Gpu(dict(g.attrs, **{f"{b}_chunks": str(int(g.attrs[f"{b}_chunks"]) // k)
                                         for b in "ios"}), blocks))
    attrs = dict(program.attrs, nchannels=str(nch),
                 nchunksperloop=str(int(program.attrs["nchunksperloop"]) // k))
    return Program(attrs, gpus)


def shape(program):
    """What the runtime reads of a program's GPUs (attributes only, no lines or comments)."""
    return [(g.attrs, [(tb.attrs, [st.attrs for st in tb.steps]) for tb in g.blocks])
            for g in program.gpus]


# -- every good fixture ------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(GOOD))
def test_each_fixture_imports_as_its_collective_and_lints_valid(name):
    coll, n, steps, count, need, modes = GOOD[name]
    imported = import_msccl(MSCCL / name)
    report = imported.lint
    assert report.valid, (report.errors[:3], report.problems[:3])
    assert report.errors == [] and report.warnings == [] and report.correct is True
    assert report.collective == coll and report.ngpus == n
    s = imported.schedule
    assert s.collective.name == coll and s.num_nodes == n
    assert verify(s).valid
    assert (s.num_steps, s.num_transfers) == (steps, count)
    assert computes(s, coll)
    assert program_modes(imported.program) == modes
    for inplace in modes:
        run = replay(imported.program, inplace=inplace)
        assert run.ok and not run.wrong_outputs, (inplace, run.problems, run.wrong_outputs)
    proto = imported.program.attrs["proto"]
    assert report.capacity == CAPACITY[proto]
    assert report.min_capacity == need <= CAPACITY[proto]


def test_the_fixtures_cover_every_protocol_and_the_fused_step_types():
    programs = [read_msccl(MSCCL / name) for name in GOOD]
    assert {p.attrs["proto"] for p in programs} == {"Simple", "LL", "LL128"}
    kinds = {st.attrs["type"] for p in programs for g in p.gpus for tb in g.blocks
             for st in tb.steps}
    assert {"rrs", "rrcs", "rcs", "cpy"} <= kinds
    assert any(int(p.attrs["nchannels"]) > 1 for p in programs)


# -- multi-instance files ------------------------------------------------------------------------

def test_the_allreduce_file_is_the_fused_ring_replicated_twice():
    one = read_msccl(MSCCL / "ring3-allreduce-fused.xml")
    two = read_msccl(MSCCL / "inst2-ring3-allreduce.xml")
    assert shape(instantiate(one, 2)) == shape(two)
    assert (two.attrs["nchannels"], two.attrs["nchunksperloop"]) == ("2", "6")
    # the same transfers as the one-instance program, each carrying both instances' halves
    assert transfers(import_msccl(two).schedule) == transfers(import_msccl(one).schedule)


def test_the_allgather_file_is_its_first_instance_replicated_twice():
    two = read_msccl(MSCCL / "inst2-ring4-allgather.xml")
    one = first_instance(two, 2)
    assert shape(instantiate(one, 2)) == shape(two)
    # its dependencies name the block of their own instance: each send block waits on the
    # receive block of its channel
    for g in two.gpus:
        chan = {tb.attrs["id"]: tb.attrs["chan"] for tb in g.blocks}
        for tb in g.blocks:
            for st in tb.steps:
                if st.attrs["depid"] != "-1":
                    assert chan[st.attrs["depid"]] == tb.attrs["chan"]
    report = lint_msccl(one)
    assert report.valid, (report.errors[:3], report.problems[:3])
    assert transfers(report.schedule) == transfers(import_msccl(two).schedule)
    # and the hand-written single-block ring allgather moves the same data at the same steps
    assert transfers(report.schedule) == \
        transfers(import_msccl(MSCCL / "ring4-allgather-inplace.xml").schedule)


@pytest.mark.parametrize("name", ["ring3-allreduce-fused.xml", "ring4-allgather-inplace.xml",
                                  "ring3-reducescatter.xml", "lint-good-ring3-allreduce.xml",
                                  "imp-msccl-chain3-allreduce-2chunks.xml",
                                  "inst2-ring4-allgather.xml"])
@pytest.mark.parametrize("k", [2, 3])
def test_replicated_programs_import_as_the_same_schedule(name, k):
    base = read_msccl(MSCCL / name)
    want = import_msccl(base)
    assert want.lint.valid, (want.lint.errors[:3], want.lint.problems[:3])
    got = lint_msccl(parse_msccl(format_msccl(instantiate(base, k))))
    assert got.valid, (got.errors[:3], got.problems[:3])
    assert got.collective == want.lint.collective and got.ngpus == want.lint.ngpus
    assert transfers(got.schedule) == transfers(want.schedule)


def test_batched_replication_is_right_for_allreduce_and_wrong_for_allgather():
    # batched (interleaved_replication=False): instance i's chunks follow instance i-1's. An
    # allreduce does not mind where a chunk sits; an allgather's shards must stay together
    for name in ("allpairs3-allreduce.xml", "ring3-allreduce-fused.xml"):
        report = lint_msccl(instantiate(read_msccl(MSCCL / name), 2, interleaved=False))
        assert report.valid, (name, report.errors[:3], report.problems[:3])
    ag = lint_msccl(instantiate(read_msccl(MSCCL / "ring4-allgather-inplace.xml"), 2,
                                interleaved=False))
    assert ag.errors == [] and ag.correct is False
    assert any("output chunk" in p for p in ag.problems), ag.problems


def test_a_second_instance_that_sends_the_wrong_chunk_is_not_correct():
    report = import_msccl(MSCCL / "inst2-ring4-allgather-wrong-chunk.xml").lint
    assert report.errors == [] and report.correct is False and not report.valid
    # rank 2's second instance forwarded chunk 4 (the first instance's): everyone else's
    # chunk 5 is wrong, rank 2's own is its input
    wrong = sorted(int(m.group(1)) for p in report.problems
                   for m in [re.search(r"rank (\d) output chunk 5 holds chunk 4, not chunk 5", p)]
                   if m)
    assert wrong == [0, 1, 3], report.problems
    # the only difference from the good file
    good, bad = ([line for line in (MSCCL / name).read_text().splitlines() if "<step" in line]
                 for name in ("inst2-ring4-allgather.xml", "inst2-ring4-allgather-wrong-chunk.xml"))
    diff = [(a, b) for a, b in zip(good, bad) if a != b]
    assert len(good) == len(bad) and len(diff) == 1
    assert 'srcoff="5"' in diff[0][0] and 'srcoff="4"' in diff[0][1]


def test_two_instances_on_one_channel_are_refused():
    path = MSCCL / "inst2-ring3-allreduce-shared-channel.xml"
    report = lint_msccl(read_msccl(path))
    assert not report.valid and report.correct is False
    found = [f for f in report.errors if f.rule == "one-block"]
    assert found and all(f.element == "tb" for f in found)
    line = next(i + 1 for i, text in enumerate(path.read_text().splitlines())
                if '<tb id="1" send="2" recv="0" chan="0">' in text)
    assert {f.line for f in found} == {line}
    assert "matching" in rules(report)


# -- LL and LL128 --------------------------------------------------------------------------------

def test_ll_fused_ring_needs_4_units_and_ll_holds_them():
    text = (MSCCL / "ll-ring3-allreduce-needs4.xml").read_text()
    program = parse_msccl(text)
    assert program.attrs["proto"] == "LL"
    assert buffer_capacity(program) == (4, [])
    for cap in (4, 8, None):
        assert lint_msccl(text, capacity=cap).valid
    tight = lint_msccl(text, capacity=3)
    assert tight.correct is True and not tight.valid and rules(tight) == {"buffers"}
    assert tight.min_capacity == 4
    # LL128 holds as much as LL
    assert lint_msccl(text.replace('proto="LL"', 'proto="LL128"')).valid


def test_the_same_program_under_simple_is_a_buffers_error():
    path = MSCCL / "ll-ring3-allreduce-needs4-simple.xml"
    report = lint_msccl(read_msccl(path))
    # what it computes is right; the runtime would hang on it
    assert report.correct is True and not report.valid
    (finding,) = report.errors
    assert finding.rule == "buffers" and finding.element == "step"
    assert report.capacity == CAPACITY["Simple"] == 2 and report.min_capacity == 4
    # every rank stands at its third send, waiting for room
    for rank in range(3):
        assert f"rank {rank} block 0 step 2 (s) waits for room" in finding.message
    line = next(i + 1 for i, text in enumerate(path.read_text().splitlines())
                if 's="2" type="s"' in text)
    assert finding.line == line
    # it is the LL file but for the protocol (and its name)
    ll = (MSCCL / "ll-ring3-allreduce-needs4.xml").read_text()
    swapped = lint_msccl(ll.replace('proto="LL"', 'proto="Simple"'))
    assert [(f.rule, f.message) for f in swapped.errors] == [(finding.rule, finding.message)]
    assert lint_msccl(read_msccl(path), capacity=4).valid


def test_ll128_allgather_needs_3_units():
    text = (MSCCL / "ll128-ring4-allgather.xml").read_text()
    report = lint_msccl(text)
    assert report.valid and report.capacity == 8 and report.min_capacity == 3
    simple = lint_msccl(text.replace('proto="LL128"', 'proto="Simple"'))
    assert simple.correct is True and rules(simple) == {"buffers"}
    assert "waits for room" in simple.errors[0].message


def test_a_reduce_in_the_ll128_allgather_is_not_correct():
    report = import_msccl(MSCCL / "ll128-ring4-allgather-reduces.xml").lint
    assert report.errors == [] and report.correct is False
    assert any("a reducing step (rrcs) in allgather" in p for p in report.problems), \
        report.problems


# -- through the command -------------------------------------------------------------------------

def test_import_and_lint_of_the_fixtures_through_the_cli(tmp_path):
    from tests.cli.conftest import run_cli
    from topocoll.schedule import load_schedule

    res = run_cli(["import", MSCCL / "inst2-ring3-allreduce.xml", "-o", "inst2.json"], tmp_path)
    assert res.returncode == 0, res
    back = load_schedule(tmp_path / "inst2.json")
    assert back.collective.name == "allreduce" and back.num_nodes == 3 and verify(back).valid
    assert transfers(back) == transfers(import_msccl(MSCCL / "inst2-ring3-allreduce.xml").schedule)
    res = run_cli(["lint", MSCCL / "ll-ring3-allreduce-needs4-simple.xml"], tmp_path)
    assert res.returncode == 1 and "[buffers]" in res.stdout, res
    res = run_cli(["lint", MSCCL / "ll-ring3-allreduce-needs4.xml"], tmp_path)
    assert res.returncode == 0 and res.stdout.startswith("valid:"), res
