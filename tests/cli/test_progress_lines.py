"""Progress when stderr is not a terminal: plain lines, a line per phase, silence for quick
jobs (so that bad input keeps its one-line error), and stdout untouched."""

import json

import pytest

from topocoll.cli import common

from tests.cli.test_fuzz_cli import run_in_process


class _AtOnce:
    """A stand-in for threading.Timer that fires when started: the quiet period is over."""

    def __init__(self, seconds, function):
        self.function = function
        self.daemon = True

    def start(self):
        self.function()

    def cancel(self):
        pass


class _Never(_AtOnce):
    def start(self):
        pass


def test_lines_per_phase_and_quarter_once_awake(capsys, monkeypatch):
    monkeypatch.setattr(common.threading, "Timer", _Never)
    lines = common.ProgressLines("job")
    with lines:
        lines.update(1, 8)                        # quiet period: nothing yet
        assert capsys.readouterr().err == ""
        lines.wake()                              # what is under way
        for done in range(2, 9):
            lines.update(done, 8)
        lines.update("stage two", 0, None)
        lines.update("stage two", 0, None)        # same phase: no new line
    err = capsys.readouterr().err.splitlines()
    assert err[:5] == ["job: 1/8", "job: 2/8", "job: 4/8", "job: 6/8", "job: 8/8"]
    assert err[5] == "job: stage two ..."
    assert err[6].startswith("job: done in ") and len(err) == 7


def test_a_quick_job_prints_nothing(capsys, monkeypatch):
    monkeypatch.setattr(common.threading, "Timer", _Never)
    with common.ProgressLines("job") as lines:
        for done in range(5):
            lines.update(done, 4)
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("command", [
    ["schedule", "torus:4x4", "-c", "allreduce", "-o", "s.json"],
    ["synth", "ring:6", "-c", "allgather", "--json"],
    ["alltoall", "ring:6", "--json"],
    ["find", "--nodes", "12", "--degree", "2", "--no-cache", "--json"],
    ["compare", "ring:6", "torus:2x3", "--json"],
    ["rewire", "randomregular:8,3:1", "--max-swaps", "3", "--json"],
])
def test_long_jobs_report_their_phases_on_stderr_only(tmp_path, monkeypatch, command):
    monkeypatch.setattr(common.threading, "Timer", _AtOnce)
    code, out, err = run_in_process(command, tmp_path)
    assert code == 0, err
    last = err.splitlines()[-1] if err.strip() else ""
    assert ": done in " in last, err
    label = last.rsplit(": done in ", 1)[0]
    progress = [line for line in err.splitlines() if line.startswith(label + ": ")]
    assert len(progress) >= 2, err
    if "--json" in command:
        json.loads(out)                           # stdout holds the document alone


def test_an_early_error_stays_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr(common.threading, "Timer", _Never)
    code, out, err = run_in_process(["synth", "torus:4x4", "-c", "allgather", "--time-step",
                                     "1e-15"], tmp_path)
    assert code == 2 and err.strip().splitlines() == [err.strip()]


def test_a_stage_that_only_counts_is_no_new_phase(capsys, monkeypatch):
    """A batch whose tasks fail counts them in its stage ("3 failed"): a line at each quarter,
    not one per failure (a sweep of a million failing cells once printed 65,000)."""
    monkeypatch.setattr(common.threading, "Timer", _Never)
    with common.ProgressLines("cells") as lines:
        lines.wake()
        for done in range(1, 101):
            lines.update(f"{done} failed", done, 100)
    err = capsys.readouterr().err.splitlines()
    assert err[:6] == ["cells: working ...", "cells: 1 failed 1/100", "cells: 25 failed 25/100",
                       "cells: 50 failed 50/100", "cells: 75 failed 75/100",
                       "cells: 100 failed 100/100"]
    assert err[6].startswith("cells: done in ") and len(err) == 7
