"""``topocoll run``: local processes started by the command itself, and under torchrun."""

import json
import os
import platform
import subprocess
import sys

import pytest

from tests.cli.test_cli import assert_one_line_error


@pytest.fixture
def ring3(run, tmp_path):
    result = run("schedule", "ring:3", "-c", "allreduce", "-o", "s.json")
    assert result.returncode == 0, result
    return tmp_path / "s.json"


def test_run_checks_and_times_against_torch(run, ring3):
    result = run("run", ring3, "--check", "--iters", "2", "--size", "4KiB", "--json")
    assert result.returncode == 0, result
    doc = result.json()
    assert doc["correct"] is True and doc["ranks"] == 3 and doc["collective"] == "allreduce"
    assert doc["time"] > 0 and doc["baseline_time"] > 0
    assert doc["busbw"] == pytest.approx(doc["bytes"] / doc["time"] * 4 / 3)
    assert doc["ratio"] == pytest.approx(doc["baseline_time"] / doc["time"])
    # one tensor per collective, refilled before each call, unless asked otherwise
    assert doc["reuse"] is True
    assert doc["cpu_per_gib"] > 0 and doc["baseline_cpu_per_gib"] > 0
    # three local ranks share this host: the packets go through shared memory by default
    # (on x86-64, whose ordering of stores the transport relies on)
    x86 = platform.machine() in ("x86_64", "AMD64")
    assert doc["transport"] == ("shared_memory" if x86 else "network")


def test_run_over_the_network_when_asked(run, ring3):
    doc = run("run", ring3, "--check", "--iters", "1", "--size", "4KiB", "--transport",
              "network", "--json").json()
    assert doc["transport"] == "network" and doc["correct"] is True


def test_run_with_fresh_tensors_says_so_and_counts_cpu(run, ring3):
    result = run("run", ring3, "--iters", "2", "--size", "64KiB", "--fresh-tensors")
    assert result.returncode == 0, result
    assert "a fresh tensor per call" in result.stderr + result.stdout
    assert "CPU s per GiB" in result.stderr + result.stdout
    assert "packets over " in result.stderr + result.stdout
    doc = run("run", ring3, "--iters", "2", "--size", "64KiB", "--fresh-tensors",
              "--json").json()
    assert doc["reuse"] is False and doc["cpu_per_gib"] > 0


def test_run_of_a_gathered_collective_in_bfloat16(run, tmp_path):
    assert run("synth", "ring:3", "-c", "gather:2", "-o", "g.json").returncode == 0
    result = run("run", "g.json", "--check", "--iters", "1", "--dtype", "bfloat16", "--size",
                 "3KiB", "--json")
    assert result.returncode == 0 and result.json()["correct"] is True, result


def test_run_refuses_a_process_count_that_does_not_match(run, ring3):
    assert_one_line_error(run("run", ring3, "--nproc", "4"), "for 3 nodes", "--nproc 3",
                          code=2)


def test_run_refuses_an_invalid_schedule_before_starting(run, examples_dir):
    result = run("run", examples_dir / "invalid-causality.json")
    assert_one_line_error(result, "invalid", code=1)


def test_run_under_torchrun(ring3, tmp_path):
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                           "--nproc-per-node", "3", "-m", "topocoll.cli.main", "run",
                           str(ring3), "--check", "--iters", "2", "--size", "4KiB", "--json"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    doc = json.loads(proc.stdout)              # only rank 0 prints
    assert doc["correct"] is True and doc["ranks"] == 3


def test_a_world_beyond_the_cores_is_started_only_when_asked_for(run, monkeypatch, tmp_path):
    """The file ``make run`` writes is a 1024-node schedule: ``run`` must not start 1024
    processes because nobody said --nproc."""
    assert run("schedule", "torus:4x4", "-c", "allreduce", "-o", "t.json").returncode == 0
    cores = os.cpu_count() or 1
    if cores < 16:
        assert_one_line_error(run("run", "t.json"), "more than this machine's",
                              "give --nproc 16", code=2)
    monkeypatch.setenv("TOPOCOLL_MEMORY_LIMIT", "1GiB")
    result = run("run", "t.json", "--nproc", "16")
    assert_one_line_error(result, "16 local torch processes needs about 4GiB", code=2)


@pytest.mark.parametrize("size, needle", [
    ("3B", "size 3B is less than one float32 element"),
    ("1PiB", "buffers on 3 local ranks needs about"),
])
def test_sizes_that_would_be_rounded_or_cannot_fit_are_refused_up_front(run, ring3, size,
                                                                        needle):
    assert_one_line_error(run("run", ring3, "--size", size), needle, code=2)


def test_sizes_round_down_to_whole_elements_per_shard_and_say_so():
    from topocoll.errors import UnsupportedError
    from topocoll.runtime.measure import buffer_elements, rounded_bytes

    assert buffer_elements("allgather", 3, 48, "float32") == 4
    assert buffer_elements("reduce_scatter", 3, 48, "float64") == 6
    assert buffer_elements("allreduce", 3, 6, "float16") == 3
    assert buffer_elements("allgather", 3, 65536, "float32") == 5461
    assert rounded_bytes("allgather", 3, 65536, "float32") == 65532
    assert rounded_bytes("allreduce", 3, 65536, "float32") == 65536
    for collective, nbytes in (("allgather", 8), ("alltoall", 4), ("allreduce", 2)):
        with pytest.raises(UnsupportedError, match="use at least"):
            buffer_elements(collective, 3, nbytes, "float32")


def test_without_torch_run_says_how_to_install_it(tmp_path, ring3, monkeypatch):
    from click.testing import CliRunner

    from topocoll.cli.main import cli

    monkeypatch.setitem(sys.modules, "torch", None)
    result = CliRunner().invoke(cli, ["run", str(ring3)])
    assert result.exit_code == 2 and "pip install 'topocoll[torch]'" in result.output
    assert "Traceback" not in result.output and "ModuleNotFoundError" not in result.output


def test_a_rank_failure_is_one_line_with_its_reason():
    from topocoll.cli.common import first_failure

    report = ("rank 0 raised:\nTraceback (most recent call last):\n  File \"x\", line 1\n"
              "RuntimeError: out of memory allocating 1PiB\nrank 1 raised (after losing a "
              "peer):\nConnectionError: peer gone")
    assert first_failure(report) == ("rank 0 raised: RuntimeError: out of memory "
                                      "allocating 1PiB")
    assert first_failure("rank 2 died with exit code 9\nrank 0 raised:\nx") == \
        "rank 2 died with exit code 9"
