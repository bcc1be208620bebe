"""``topocoll run FILE.xml``: MSCCL XML programs, exported by topocoll or written by hand, run
on local gloo processes and equal torch's result; from standard input too; a program the lint
rejects is refused in one line before any process starts."""

import pytest

from tests.cli.test_cli import assert_one_line_error
from tests.runtime.test_xml_sources import MISNUMBER, MISPLACE, RING4_ALLGATHER, broken

RUN = ("--check", "--iters", "2", "--size", "64KiB", "--json")


@pytest.mark.parametrize("make, collective", [
    (["schedule", "ring:4", "-c", "allreduce", "-a", "ring"], "allreduce"),
    (["schedule", "hypercube:2", "-c", "allgather", "-a", "bfb"], "allgather"),
    (["schedule", "ring:4", "-c", "alltoall"], "alltoall")],
    ids=["ring-allreduce", "bfb-allgather", "lp-alltoall"])
def test_an_exported_schedule_runs_from_its_xml(run, make, collective):
    assert run(*make, "-o", "s.json").returncode == 0
    assert run("export", "s.json", "-o", "s.xml").returncode == 0
    result = run("run", "s.xml", "--nproc", "4", *RUN)
    assert result.returncode == 0, result
    doc = result.json()
    assert doc["correct"] is True and doc["mismatched_ranks"] == 0, doc
    assert (doc["collective"], doc["ranks"], doc["format"]) == (collective, 4, "msccl-xml")
    assert doc["algorithm"].startswith("msccl:topocoll-")


def test_a_hand_written_program_runs_from_standard_input(run):
    """msccl-tools' style, piped in: read once by the command, then handed to the processes.
    Without --json: the title says where it came from, and --check exits 1 on a mismatch."""
    result = run("run", "-", "--check", "--iters", "2", "--size", "64KiB", "--no-baseline",
                 stdin=RING4_ALLGATHER)
    assert result.returncode == 0, result
    title = result.stdout_lines[0]
    assert title.startswith("msccl:allgather_ring_hand allgather (MSCCL XML) on "), result
    assert "4 ranks, 64KiB of float32" in title
    assert result.stdout_lines[-1] == "result equal to torch's", result


def test_a_schedule_file_is_not_called_xml():
    """The table's title names MSCCL XML only for XML (no processes: the table alone)."""
    from topocoll.cli import common
    from topocoll.cli.run import print_run_table

    row = {"algorithm": "bfb", "collective": "allgather", "topology": "ring:4", "ranks": 4,
           "size": 65536, "dtype": "float32", "time": 1e-3, "busbw": 1e9}
    titles = []
    for fmt in ("topocoll.schedule", "msccl-xml"):
        with common.out_console.capture() as out:
            print_run_table(dict(row, format=fmt))
        titles.append(out.get().splitlines()[0].strip())
    assert titles == ["bfb allgather on ring:4: 4 ranks, 64KiB of float32",
                      "bfb allgather (MSCCL XML) on ring:4: 4 ranks, 64KiB of float32"]


def test_a_program_the_runtime_would_refuse_is_one_line_and_exit_1(run, tmp_path):
    (tmp_path / "bad.xml").write_text(broken(MISNUMBER))
    assert_one_line_error(run("run", "bad.xml", *RUN), "bad.xml: the MSCCL runtime would refuse "
                          "it: [step-number] line 17: <step>: s=5", code=1)
    assert_one_line_error(run("run", "-", *RUN, stdin=broken(MISNUMBER)),
                          "<stdin>: the MSCCL runtime would refuse it: [step-number]", code=1)


def test_a_wrong_program_is_one_line_and_exit_1(run, tmp_path):
    (tmp_path / "wrong.xml").write_text(broken(MISPLACE))
    assert_one_line_error(run("run", "wrong.xml", *RUN),
                          "wrong.xml: not a correct allgather: in-place: rank 3 output chunk 0",
                          code=1)


@pytest.mark.parametrize("content, needle", [
    ("hello", "not a schedule file (JSON) or MSCCL XML program"),
    ('<algo name="x"', "g.xml:1: not well-formed XML")])
def test_garbage_is_one_line_and_exit_2(run, tmp_path, content, needle):
    (tmp_path / "g.xml").write_text(content)
    assert_one_line_error(run("run", "g.xml"), needle, code=2)
