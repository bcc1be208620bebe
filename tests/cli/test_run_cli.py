"""``topocoll run``: local processes started by the command itself, and under torchrun."""

import json
import os
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
