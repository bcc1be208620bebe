"""Files through the command line: every command that writes a file treats symlinks, FIFOs,
devices and standard output alike and checks its output before the work; every command that
reads a schedule or topology file reads ``-`` and pipes (docs/format.md, "File formats")."""

import json
import os
import stat
import threading

import pytest

from tests.cli.test_cli import assert_one_line_error
from tests.cli.test_fuzz_cli import run_in_process

# A command of each kind that writes one file with -o, and what that file is.
WRITERS = {
    "schedule": (["schedule", "ring:4", "-c", "allgather"], "topocoll.schedule"),
    "synth": (["synth", "ring:4", "-c", "allgather"], "topocoll.schedule"),
    "alltoall": (["alltoall", "ring:4"], "topocoll.schedule"),
    "rewire": (["rewire", "randomregular:8,3:1", "--max-swaps", "1"], "topocoll.topology"),
}
# The same with --json (schedule has no --json).
JSON_WRITERS = [name for name in WRITERS if name != "schedule"]


def _format_of(text):
    return json.loads(text)["format"]


@pytest.fixture
def topology_json(run, tmp_path):
    """A torus:3x3 topology file, ``t.json``, and its text."""
    assert run("rewire", "torus:3x3", "--max-swaps", "1", "-o", "t.json").returncode == 0
    return (tmp_path / "t.json").read_text()


@pytest.fixture
def schedule_json(run, tmp_path):
    """A ring:3 allreduce schedule file, ``s.json``, and its text."""
    assert run("schedule", "ring:3", "-c", "allreduce", "-o", "s.json").returncode == 0
    return (tmp_path / "s.json").read_text()


# ------------------------------------------------------------------ where the file goes
@pytest.mark.parametrize("name", WRITERS)
def test_a_symlink_output_is_written_through_to_its_target(run, tmp_path, name):
    args, kind = WRITERS[name]
    (tmp_path / "target.json").write_text("old")
    (tmp_path / "link.json").symlink_to("target.json")
    result = run(*args, "-o", "link.json")
    assert result.returncode == 0, result
    assert (tmp_path / "link.json").is_symlink()
    assert os.readlink(tmp_path / "link.json") == "target.json"
    assert _format_of((tmp_path / "target.json").read_text()) == kind


@pytest.mark.parametrize("name", WRITERS)
def test_a_fifo_output_is_streamed_into_not_replaced(run, tmp_path, name):
    args, kind = WRITERS[name]
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    result = run(*args, "-o", fifo)
    reader.join(60)
    if reader.is_alive():            # the command never opened it: release the reader
        # (checking ``got`` instead races with a reader still reading what was written, and
        # a blocking open for writing then waits forever for a reader that has finished)
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        reader.join(5)
    assert result.returncode == 0, result
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    assert _format_of(got[0]) == kind


@pytest.mark.parametrize("name", ["schedule", "rewire"])
def test_dev_null_output_stays_a_device(tmp_path, name):
    # in this process, where a regression cannot replace the device (see tests/conftest.py)
    args, _ = WRITERS[name]
    code, out, err = run_in_process([*args, "-o", "/dev/null"], tmp_path)
    assert code == 0, err
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_a_full_device_is_a_one_line_error_and_stays_a_device(tmp_path):
    code, out, err = run_in_process(["schedule", "torus:4x4", "-c", "allreduce", "-o",
                                     "/dev/full"], tmp_path)
    assert code == 2 and err.strip().splitlines() == [
        "error: /dev/full: cannot write: No space left on device"], err
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


@pytest.mark.parametrize("name", WRITERS)
def test_a_descriptor_output_is_streamed_into(run, tmp_path, name):
    """``-o /dev/stdout`` is standard output: the file alone on it, the report on stderr
    (the report used to land on top of the file's first bytes)."""
    args, kind = WRITERS[name]
    result = run(*args, "-o", "/dev/stdout")
    assert result.returncode == 0, result
    assert _format_of(result.stdout) == kind
    assert result.stderr.strip(), result


# ------------------------------------------------------------------ exactly one document
@pytest.mark.parametrize("target", ["-", "/dev/stdout"])
@pytest.mark.parametrize("name", JSON_WRITERS)
def test_with_the_file_on_stdout_stdout_is_one_json_document(run, name, target):
    args, kind = WRITERS[name]
    result = run(*args, "-o", target, "--json")
    assert result.returncode == 0, result
    assert _format_of(result.stdout) == kind      # json.loads refuses a second document
    report = json.loads(result.stderr[result.stderr.index("{"):])
    assert "format" not in report


@pytest.mark.parametrize("target", ["-", "/dev/stdout"])
def test_schedule_to_stdout_puts_its_report_on_stderr(run, target):
    result = run("schedule", "ring:4", "-c", "allgather", "-o", target)
    assert result.returncode == 0, result
    assert _format_of(result.stdout) == "topocoll.schedule"
    assert "verified" in result.stderr, result


@pytest.mark.parametrize("args", [
    ["find", "-n", "8", "-d", "2", "--no-cache"],
    ["synth", "ring:4", "-c", "allgather", "-c", "broadcast:1"]], ids=["find", "tenants"])
def test_commands_writing_a_folder_print_one_json_document(run, tmp_path, args):
    result = run(*args, "-o", "out", "--json")
    assert result.returncode == 0, result
    doc = json.loads(result.stdout)
    assert doc["files"] and all(os.path.isfile(tmp_path / f) for f in
                                (doc["files"].values() if isinstance(doc["files"], dict)
                                 else doc["files"]))


# ------------------------------------------------------------------ outputs checked first
# A bad topology and a bad output: the output is named, so it was checked first.
BAD_OUTPUTS = [("", "name is empty"), (".", "is a directory"),
               ("nofolder/x.json", "folder nofolder does not exist")]


@pytest.mark.parametrize("output, message", BAD_OUTPUTS, ids=["empty", "directory", "no-folder"])
@pytest.mark.parametrize("command", [
    ["schedule", "nosuchfamily:4", "-c", "allgather"],
    ["synth", "nosuchfamily:4", "-c", "allgather"],
    ["alltoall", "nosuchfamily:4"],
    ["rewire", "nosuchfamily:4"]], ids=["schedule", "synth", "alltoall", "rewire"])
def test_a_bad_output_is_refused_before_the_work(run, command, output, message):
    assert_one_line_error(run(*command, "-o", output), message, code=2)


def test_rewire_refuses_an_unknown_suffix_before_the_work(run):
    assert_one_line_error(run("rewire", "nosuchfamily:4", "-o", "out.txt"),
                          "out.txt: unknown file type", code=2)


@pytest.mark.parametrize("output, message", [
    ("", "name is empty"), ("-", "give a folder"), ("/dev/null", "not a folder"),
    ("plain.txt", "not a folder"), ("plain.txt/sub", "is not a folder")],
    ids=["empty", "stdout", "device", "file", "under-a-file"])
@pytest.mark.parametrize("command", [
    ["find", "-n", "8", "-d", "2", "--sizes", "missing.txt"],
    ["synth", "nosuchfamily:4", "-c", "allgather", "-c", "broadcast:1"]],
    ids=["find", "tenants"])
def test_a_bad_output_folder_is_refused_before_the_work(run, tmp_path, command, output,
                                                        message):
    (tmp_path / "plain.txt").write_text("x")
    assert_one_line_error(run(*command, "-o", output), message, code=2)


def test_find_refuses_a_folder_where_one_of_its_files_goes(run, tmp_path):
    (tmp_path / "out" / "topology.json").mkdir(parents=True)
    result = run("find", "-n", "8", "-d", "2", "--sizes", "missing.txt", "-o", "out")
    assert_one_line_error(result, "topology.json", "is a directory", code=2)


@pytest.mark.parametrize("command", [["compare", "ring:4"], ["gossip", "info", "ring", "-n", "4"]],
                         ids=["compare", "gossip"])
def test_an_empty_plot_name_is_an_error_not_no_plot(run, command):
    assert_one_line_error(run(*command, "--plot", ""), "--plot name is empty", code=2)


# ------------------------------------------------------------------ '-' and pipes as inputs
@pytest.mark.parametrize("args, steps", [
    (["verify", "-", "--json"], lambda doc: doc["steps"]),
    (["evaluate", "-", "--json"], lambda doc: doc["sizes"][0]["steps"]),
    (["simulate", "-", "--json"], lambda doc: doc["schedules"][0]["steps"]),
    (["compare", "-", "--json"], lambda doc: doc["rows"][0]["steps"]),
    (["verify", "/dev/stdin", "--json"], lambda doc: doc["steps"]),
    (["compare", "/dev/stdin", "--json"], lambda doc: doc["rows"][0]["steps"])],
    ids=["verify", "evaluate", "simulate", "compare", "verify-devstdin", "compare-devstdin"])
def test_schedule_inputs_read_standard_input(run, schedule_json, args, steps):
    result = run(*args, stdin=schedule_json)
    assert result.returncode == 0, result
    assert steps(result.json()) == 2               # ring:3 BFB allreduce: 1 + 1 steps


@pytest.mark.parametrize("args, nodes", [
    (["info", "-", "--json"], lambda doc: doc["nodes"]),
    (["info", "/dev/stdin", "--json"], lambda doc: doc["nodes"]),
    (["schedule", "-", "-c", "allgather", "-o", "-"], lambda doc: doc["topology"]["nodes"]),
    (["synth", "-", "-c", "allgather", "-o", "-"], lambda doc: doc["topology"]["nodes"]),
    (["alltoall", "-", "--json"], lambda doc: doc["nodes"]),
    (["rewire", "-", "--max-swaps", "1", "-o", "-"], lambda doc: doc["nodes"]),
    (["gossip", "cost", "ring", "--network", "-", "--json"],
     lambda doc: doc["topologies"][0]["network_nodes"])],
    ids=["info", "info-devstdin", "schedule", "synth", "alltoall", "rewire", "gossip"])
def test_topology_inputs_read_standard_input(run, topology_json, args, nodes):
    result = run(*args, stdin=topology_json)
    assert result.returncode == 0, result
    assert nodes(result.json()) == 9


def test_a_graphml_topology_on_a_pipe_is_told_by_its_first_byte(run, tmp_path):
    assert run("rewire", "ring:5", "--max-swaps", "1", "-o", "t.graphml").returncode == 0
    text = (tmp_path / "t.graphml").read_text()
    for name in ("-", "/dev/stdin"):
        result = run("info", name, "--json", stdin=text)
        assert result.returncode == 0 and result.json()["nodes"] == 5, result


def test_run_reads_a_schedule_on_standard_input(run, schedule_json):
    result = run("run", "-", "--check", "--iters", "1", "--size", "3KiB", "--json",
                 stdin=schedule_json)
    assert result.returncode == 0, result
    assert result.json()["correct"] is True and result.json()["ranks"] == 3


def test_run_under_torchrun_refuses_standard_input(run, schedule_json, monkeypatch):
    """Every torchrun rank reads FILE itself: one standard input cannot feed them all."""
    monkeypatch.setenv("RANK", "0")
    monkeypatch.setenv("WORLD_SIZE", "3")
    result = run("run", "-", stdin=schedule_json)
    assert_one_line_error(result, "torchrun", "standard input", code=2)


# ------------------------------------------------------------------ reading limits
def test_dev_zero_is_refused_at_its_first_byte(run, monkeypatch):
    # a limit well under memory: reading to the limit would say "read limit", not this
    monkeypatch.setenv("TOPOCOLL_MAX_FILE_BYTES", str(64 << 20))
    human = run("verify", "/dev/zero")
    assert human.returncode == 1 and "not a JSON schedule file" in human.stdout, human
    doc = run("verify", "/dev/zero", "--json")
    assert doc.returncode == 1 and doc.json()["counts"] == {"format": 1}, doc
    assert_one_line_error(run("info", "/dev/zero"), "not a topology file", code=2)
    assert_one_line_error(run("evaluate", "/dev/zero"), "not a JSON schedule file", code=2)


def test_the_read_limit_is_named_in_the_error(run, schedule_json, monkeypatch):
    monkeypatch.setenv("TOPOCOLL_MAX_FILE_BYTES", "100")
    assert_one_line_error(run("verify", "s.json"), "read limit of 100 bytes",
                          "TOPOCOLL_MAX_FILE_BYTES", code=2)
    assert_one_line_error(run("info", "-", stdin='{"nodes": 2, "links": []' + " " * 200 + "}"),
                          "TOPOCOLL_MAX_FILE_BYTES", code=2)
