"""Files in and out: symlinks, FIFOs, atomic replacement, gzip, standard input, the read limit,
and outputs checked before the work."""

import gzip
import json
import os
import threading

import pytest

import topocoll as tc
from topocoll.errors import FileAccessError, ScheduleFormatError
from topocoll.fileio import check_output, open_output, read_input

from tests.cli.test_fuzz_cli import run_in_process


@pytest.fixture
def schedule():
    return tc.generate("ring:4", "allgather")


def test_a_symlink_is_written_through_and_stays_a_symlink(tmp_path, schedule):
    target = tmp_path / "real.json"
    target.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    tc.save_schedule(schedule, link)
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert tc.load_schedule(target).transfers.tolist() == schedule.transfers.tolist()


def test_a_dangling_symlink_creates_its_target(tmp_path, schedule):
    link = tmp_path / "link.json"
    link.symlink_to(tmp_path / "new.json")
    tc.save_schedule(schedule, link)
    assert link.is_symlink() and tc.verify(tmp_path / "new.json").valid


def test_a_fifo_is_streamed_into_not_replaced(tmp_path, schedule):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    tc.save_schedule(schedule, fifo)
    reader.join(60)
    assert fifo.is_fifo()
    assert tc.loads_schedule(got[0]).transfers.tolist() == schedule.transfers.tolist()


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path, schedule):
    path = tmp_path / "s.json"
    path.write_text("old content")
    with pytest.raises(RuntimeError):
        with open_output(path) as fh:
            fh.write(b"half a file")
            raise RuntimeError("the writer failed")
    assert path.read_text() == "old content"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.json"]


def test_replacing_a_file_keeps_its_permissions(tmp_path, schedule):
    path = tmp_path / "s.json"
    path.write_text("old")
    path.chmod(0o640)
    tc.save_schedule(schedule, path)
    assert path.stat().st_mode & 0o777 == 0o640


@pytest.mark.parametrize("name, message", [("", "name is empty"), (".", "is a directory"),
                                           ("nodir/s.json", "folder nodir does not exist")])
def test_bad_output_names_are_refused_up_front(tmp_path, monkeypatch, name, message):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileAccessError, match=message):
        check_output(name)


def test_gzip_round_trip_for_schedules_and_topologies(tmp_path, schedule):
    tc.save_schedule(schedule, tmp_path / "s.json.gz")
    raw = (tmp_path / "s.json.gz").read_bytes()
    assert raw[:2] == b"\x1f\x8b" and gzip.decompress(raw).startswith(b"{")
    assert tc.load_schedule(tmp_path / "s.json.gz").transfers.tolist() == \
        schedule.transfers.tolist()
    (tmp_path / "renamed.json").write_bytes(raw)          # gzip is told by content, not name
    assert tc.verify(tmp_path / "renamed.json").valid
    topo = tc.build_topology("torus:3x3")
    for name in ("t.json.gz", "t.graphml.gz"):
        tc.save_topology(topo, tmp_path / name)
        again = tc.load_topology(tmp_path / name)
        assert (again.num_nodes, again.num_links) == (9, 36)


def test_damaged_gzip_is_a_format_error(tmp_path, schedule):
    tc.save_schedule(schedule, tmp_path / "s.json.gz")
    raw = (tmp_path / "s.json.gz").read_bytes()
    (tmp_path / "cut.json.gz").write_bytes(raw[: len(raw) // 2])
    with pytest.raises(ScheduleFormatError, match="damaged gzip data"):
        tc.load_schedule(tmp_path / "cut.json.gz")


def test_content_that_cannot_start_json_is_refused_at_the_first_byte(tmp_path):
    zeros = tmp_path / "zeros.json"
    zeros.write_bytes(bytes(1 << 16))
    with pytest.raises(ScheduleFormatError, match=r"not a JSON schedule file .*b'\\x00'"):
        tc.load_schedule(zeros)


def test_the_read_limit_is_enforced_and_can_be_raised(tmp_path, monkeypatch, schedule):
    path = tmp_path / "s.json"
    tc.save_schedule(schedule, path)
    size = path.stat().st_size
    monkeypatch.setenv("TOPOCOLL_MAX_FILE_BYTES", str(size - 1))
    with pytest.raises(FileAccessError, match="read limit .*TOPOCOLL_MAX_FILE_BYTES"):
        tc.load_schedule(path)
    tc.save_schedule(schedule, tmp_path / "s.json.gz")   # the limit holds for what gunzips too
    with pytest.raises(FileAccessError, match="uncompressed content larger than the read limit"):
        tc.load_schedule(tmp_path / "s.json.gz")
    monkeypatch.setenv("TOPOCOLL_MAX_FILE_BYTES", str(size))
    assert tc.verify(path).valid


def test_blank_and_empty_inputs_say_so(tmp_path):
    for content in (b"", b"  \n\t"):
        (tmp_path / "e.json").write_bytes(content)
        with pytest.raises(ScheduleFormatError, match="empty, not a JSON schedule file"):
            read_input(tmp_path / "e.json", starts=b"{", what="JSON schedule file")


# --------------------------------------------------------------------- through the command line
def test_rewire_checks_its_output_before_the_work(tmp_path, monkeypatch):
    import topocoll.cli.rewire as module

    def never(*args, **kwargs):
        raise AssertionError("rewire ran although its output could not be written")
    monkeypatch.setattr(module, "rewire_topology", never)
    code, out, err = run_in_process(["rewire", "ring:6", "-o", "out.txt"], tmp_path)
    assert code == 2 and "out.txt: unknown file type" in err


@pytest.mark.parametrize("command", [
    ["synth", "ring:4", "-c", "allgather"], ["alltoall", "ring:4"],
    ["rewire", "randomregular:8,3:1", "--max-swaps", "1"]])
def test_with_the_file_on_stdout_the_json_report_goes_to_stderr(tmp_path, command):
    code, out, err = run_in_process(command + ["-o", "-", "--json"], tmp_path)
    assert code == 0, err
    doc = json.loads(out)                  # exactly one document on stdout: the file
    assert doc["format"] in ("topocoll.schedule", "topocoll.topology")
    report = json.loads(err[err.index("{"):])
    assert report.get("success") is True or report.get("status") == "verified"


@pytest.mark.parametrize("command", [
    ["schedule", "ring:4", "-c", "allgather"], ["synth", "ring:4", "-c", "allgather"],
    ["alltoall", "ring:4"], ["rewire", "randomregular:8,3:1", "--max-swaps", "1"]])
def test_with_the_file_on_stdout_the_human_report_goes_to_stderr(tmp_path, command):
    code, out, err = run_in_process(command + ["-o", "-"], tmp_path)
    assert code == 0, err
    assert json.loads(out)["format"] in ("topocoll.schedule", "topocoll.topology")
    assert err.strip()


def test_verify_and_info_read_standard_input(tmp_path, schedule, monkeypatch):
    import io
    import sys

    tc.save_schedule(schedule, tmp_path / "s.json")
    data = (tmp_path / "s.json").read_bytes()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    code, out, err = run_in_process(["verify", "-"], tmp_path)
    assert code == 0 and out.startswith("valid"), err
    tc.save_topology(tc.build_topology("torus:3x3"), tmp_path / "t.json")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO((tmp_path / "t.json")
                                                                  .read_bytes())))
    code, out, err = run_in_process(["info", "-", "--json"], tmp_path)
    assert code == 0 and json.loads(out)["nodes"] == 9, err


def test_compare_tells_schedules_from_topologies_on_stdin_and_in_gzip(tmp_path, schedule,
                                                                     monkeypatch):
    import io
    import sys

    from topocoll.studies.compare import compare

    tc.save_schedule(schedule, tmp_path / "s.json.gz")
    rows = compare([str(tmp_path / "s.json.gz")], sizes=["1MiB"]).rows
    assert rows[0].algorithm == schedule.algorithm and rows[0].verdict == "ok"
    tc.save_topology(tc.build_topology("ring:5"), tmp_path / "t.json")
    for path, kind in ((tmp_path / "s.json.gz", "schedule"), (tmp_path / "t.json", "topology")):
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(path.read_bytes())))
        code, out, err = run_in_process(["compare", "-", "--json"], tmp_path)
        assert code == 0, err
        doc = json.loads(out)
        nodes = {row["nodes"] for row in doc["rows"]}
        assert nodes == ({4} if kind == "schedule" else {5})


def test_a_name_ending_in_a_slash_is_a_folder_not_a_file(tmp_path):
    with pytest.raises(FileAccessError, match="names a folder"):
        check_output(str(tmp_path / "new.json") + "/")
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(FileAccessError, match="is a directory"):
        check_output(str(tmp_path) + "/")
