"""What the runtime runs (:mod:`topocoll.runtime.sources`): schedules, schedule files and MSCCL
XML programs, told apart by their content; XML programs exported by topocoll, hand-written in
msccl-tools' style and from the repository's fixtures run on gloo and equal torch's result;
programs the lint rejects are refused with one line naming the file and the first finding."""

import gzip
import os

import pytest

from tests.helpers import DATA
from topocoll.errors import (FileAccessError, InputTypeError, InvalidScheduleError,
                             ScheduleFormatError, UnsupportedError)
from topocoll.interop import export_msccl, write_msccl
from topocoll.interop.lint import LintReport
from topocoll.runtime import run_local
from topocoll.runtime.measure import measure_file
from topocoll.runtime.sources import (MSCCL_XML, SCHEDULE_FILE, load_runnable, loads_runnable,
                                      runnable_format)
from topocoll.schedule.io import load_schedule, save_schedule
from topocoll.schedule.verify import verify
from topocoll.synth import generate
from topocoll.throughput import alltoall_schedule, path_throughput
from topocoll.topology import topology

#: A 4-rank ring allgather written by hand in msccl-tools' style (the file says how it works).
RING4_ALLGATHER = (DATA / "msccl" / "ring4-allgather-inplace.xml").read_text()

#: Breaks a runtime rule: rank 1's second step is numbered 5 (line 17).
MISNUMBER = ('<step s="1" type="rcs" srcbuf="o" srcoff="0"',
             '<step s="5" type="rcs" srcbuf="o" srcoff="0"')
#: Accepted by the runtime but wrong: rank 3 stores its last chunk at chunk 1, not chunk 0.
MISPLACE = ('<step s="3" type="r" srcbuf="o" srcoff="0" dstbuf="o" dstoff="0"',
            '<step s="3" type="r" srcbuf="o" srcoff="1" dstbuf="o" dstoff="1"')


def broken(*changes):
    """:data:`RING4_ALLGATHER` with each ``(old, new)`` of ``changes`` made (once each)."""
    text = RING4_ALLGATHER
    for old, new in changes:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    return text


def alltoall4():
    """The alltoall of the path LP's routes on ring:4."""
    ring = topology("ring:4")
    return alltoall_schedule(path_throughput(ring), ring)


def exported(tmp_path, name, schedule):
    """``schedule`` exported as MSCCL XML to ``tmp_path / name``; the path."""
    path = tmp_path / name
    write_msccl(export_msccl(schedule), path)
    return path


# ------------------------------------------------------------------- what a source is
def test_a_schedule_is_returned_as_is():
    s = generate("ring:4", "allreduce")
    assert load_runnable(s) is s


def test_a_schedule_file_loads_as_load_schedule_reads_it(tmp_path):
    s = generate("hypercube:2", "allgather", "bfb")
    save_schedule(s, tmp_path / "s.json")
    got = load_runnable(tmp_path / "s.json")          # a PathLike
    want = load_schedule(tmp_path / "s.json")
    assert got.transfers.tolist() == want.transfers.tolist()
    assert (got.algorithm, got.collective.name, got.topology.name) == \
        ("bfb", "allgather", "hypercube:2")
    # gzip is recognised by its content, not by a name: no .gz, no .json
    (tmp_path / "s.data").write_bytes(gzip.compress((tmp_path / "s.json").read_bytes()))
    assert load_runnable(str(tmp_path / "s.data")).transfers.tolist() == \
        want.transfers.tolist()


def test_xml_is_told_by_its_content_not_its_name(tmp_path):
    path = exported(tmp_path, "program.json", generate("ring:4", "allreduce"))   # a lying name
    s = load_runnable(path)
    assert s.algorithm.startswith("msccl:") and s.collective.name == "allreduce"
    (tmp_path / "gz").write_bytes(gzip.compress(path.read_bytes()))
    assert load_runnable(tmp_path / "gz").transfers.tolist() == s.transfers.tolist()
    assert runnable_format(path.read_bytes()) == MSCCL_XML
    assert runnable_format(b'\n {"format": "topocoll.schedule"}') == SCHEDULE_FILE


@pytest.mark.parametrize("make", [
    lambda: generate("ring:4", "allreduce", "ring"), lambda: generate("hypercube:2", "allgather"),
    alltoall4, lambda: generate("ring:3", "reduce_scatter")],
    ids=["ring-allreduce", "bfb-allgather", "lp-alltoall", "bfb-reduce-scatter"])
def test_an_exported_schedule_comes_back_through_xml(tmp_path, make):
    schedule = make()
    back = load_runnable(exported(tmp_path, "s.xml", schedule))
    assert back.collective.name == schedule.collective.name
    assert back.num_nodes == schedule.num_nodes and back.num_steps == schedule.num_steps
    assert verify(back).valid
    assert back.algorithm == f"msccl:topocoll-{schedule.algorithm}-{schedule.topology.name}"


def test_a_hand_written_program_loads(tmp_path):
    (tmp_path / "ring.xml").write_text(RING4_ALLGATHER)
    s = load_runnable(tmp_path / "ring.xml")
    assert (s.collective.name, s.num_nodes, s.num_steps, s.num_transfers) == \
        ("allgather", 4, 3, 12)
    assert s.algorithm == "msccl:allgather_ring_hand" and verify(s).valid
    # the same from text, as the CLI does with standard input
    assert loads_runnable(RING4_ALLGATHER, source="<stdin>").transfers.tolist() == \
        s.transfers.tolist()


def test_a_topology_places_an_xml_program(tmp_path):
    (tmp_path / "ring.xml").write_text(RING4_ALLGATHER)
    assert load_runnable(tmp_path / "ring.xml", topology="uniring:4").topology.name == \
        "uniring:4"
    # a network of another size cannot hold it: refused, naming the file
    with pytest.raises(InvalidScheduleError, match=r"^\S*ring\.xml: not a correct"):
        load_runnable(tmp_path / "ring.xml", topology="ring:5")


# ------------------------------------------------------------------- what is refused
def one_line(exc):
    text = str(exc.value)
    assert "\n" not in text, text
    return text


def refusal(tmp_path, *changes):
    """(path, error) of :data:`RING4_ALLGATHER` with ``changes`` (see :func:`broken`) in a file
    that load_runnable must refuse in one line."""
    path = tmp_path / "bad.xml"
    path.write_text(broken(*changes))
    with pytest.raises(InvalidScheduleError) as exc:
        load_runnable(path)
    assert isinstance(exc.value.report, LintReport) and not exc.value.report.valid
    return path, one_line(exc)


def test_a_program_the_runtime_would_refuse_is_refused_naming_the_first_finding(tmp_path):
    path, text = refusal(tmp_path, MISNUMBER)
    assert text.startswith(f"{path}: the MSCCL runtime would refuse it: [step-number] line 17: "
                           "<step>: s=5 but this is step 1 of its block")
    assert "more finding" not in text          # the only one
    # with the wrong result too: the runtime rule comes first, and the others are counted
    path, text = refusal(tmp_path, MISNUMBER, MISPLACE)
    assert "[step-number] line 17" in text
    assert text.endswith(f"(and 2 more finding(s): topocoll lint {path} lists them)")


def test_a_program_that_computes_the_wrong_thing_is_refused(tmp_path):
    path, text = refusal(tmp_path, MISPLACE)
    assert text.startswith(f"{path}: not a correct allgather: in-place: rank 3 output chunk 0")


def test_the_old_dialect_is_refused_as_the_runtime_would(tmp_path):
    with pytest.raises(InvalidScheduleError, match=r"\[attributes\] line 5: <algo>: missing"):
        load_runnable(DATA / "msccl" / "ring3-allgather-old-dialect.xml")


@pytest.mark.parametrize("content, needle", [
    (b"hello", "not a schedule file (JSON) or MSCCL XML program (it starts with byte b'h')"),
    (b"", "empty, not a schedule file (JSON) or MSCCL XML program"),
    (b"  \n", "empty, not a schedule file (JSON) or MSCCL XML program"),
    (gzip.compress(b"\x00\x01"), "not a schedule file (JSON) or MSCCL XML program"),
    (b'<algo name="x"', "not well-formed XML"),
    (b'<gpu id="0"/>', "the first element must be <algo>"),
    (b'{"format": "topocoll.schedule"', "not valid JSON"),
])
def test_garbage_is_a_format_error_naming_the_file(tmp_path, content, needle):
    path = tmp_path / "garbage"
    path.write_bytes(content)
    with pytest.raises(ScheduleFormatError) as exc:
        load_runnable(path)
    text = one_line(exc)
    assert text.startswith(str(path)) and needle in text, text


def test_loads_runnable_names_its_source():
    with pytest.raises(ScheduleFormatError, match=r"^<stdin>: not a schedule file"):
        loads_runnable(b"garbage", source="<stdin>")
    with pytest.raises(ScheduleFormatError, match=r"^<stdin>: .*not valid JSON"):
        loads_runnable(b"{", source="<stdin>")


def test_what_load_runnable_does_not_take(tmp_path):
    with pytest.raises(InputTypeError, match="got int"):
        load_runnable(3)
    with pytest.raises(UnsupportedError, match="loads_runnable"):
        load_runnable("-")
    save_schedule(generate("ring:3", "allgather"), tmp_path / "s.json")
    with pytest.raises(UnsupportedError, match="carries its own topology"):
        load_runnable(tmp_path / "s.json", topology="ring:3")
    with pytest.raises(UnsupportedError, match="carries its own topology"):
        load_runnable(generate("ring:3", "allgather"), topology="ring:3")
    with pytest.raises(FileAccessError, match="missing.xml: cannot read"):
        load_runnable(tmp_path / "missing.xml")


# ------------------------------------------------------------------- running on gloo
def _measure_each(rank, world_size, paths):
    """Every file through ``topocoll run``'s worker: loaded by this rank, checked against
    torch's collective on the same data."""
    out = []
    for path in paths:
        result = measure_file(rank, world_size, path, "64KiB", dtype="float32", iters=1, check=True,
                              baseline=False)
        out.append((os.path.basename(path), result["collective"], result["correct"]))
    return out


def test_xml_programs_run_and_equal_torch_on_four_ranks(tmp_path):
    (tmp_path / "hand.xml").write_text(RING4_ALLGATHER)
    paths = [tmp_path / "hand.xml",
             exported(tmp_path, "ring.xml", generate("ring:4", "allreduce", "ring")),
             exported(tmp_path, "bfb.xml", generate("hypercube:2", "allgather", "bfb")),
             exported(tmp_path, "a2a.xml", alltoall4())]
    results = run_local(_measure_each, 4, ([str(p) for p in paths],), start_method="fork",
                        timeout=240)
    want = [("hand.xml", "allgather", True), ("ring.xml", "allreduce", True),
            ("bfb.xml", "allgather", True), ("a2a.xml", "alltoall", True)]
    assert results == [want] * 4


def test_the_hand_written_fixtures_run_and_equal_torch_on_three_ranks():
    """Fused steps (rrs, rrcs, rcs), receives into scratch added later (re), reduce-scatter."""
    names = ["ring3-allreduce-fused.xml", "allpairs3-allreduce.xml", "ring3-reducescatter.xml"]
    results = run_local(_measure_each, 3, ([str(DATA / "msccl" / n) for n in names],),
                        start_method="fork", timeout=240)
    want = [(names[0], "allreduce", True), (names[1], "allreduce", True),
            (names[2], "reduce_scatter", True)]
    assert results == [want] * 3
