"""Fixtures for the CLI tests: run ``topocoll`` through its real entry point in a subprocess."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from tests.helpers import DATA

TIMEOUT = 120


class Result:
    """What one ``topocoll`` run left behind."""

    def __init__(self, args, proc):
        self.args = args
        self.returncode = proc.returncode
        self.stdout = proc.stdout
        self.stderr = proc.stderr

    @property
    def stdout_lines(self):
        return [line for line in self.stdout.splitlines() if line.strip()]

    @property
    def stderr_lines(self):
        return [line for line in self.stderr.splitlines() if line.strip()]

    def json(self):
        return json.loads(self.stdout)

    def __repr__(self):
        return (f"topocoll {' '.join(self.args)} -> exit {self.returncode}\n"
                f"--- stdout ---\n{self.stdout}\n--- stderr ---\n{self.stderr}")


def run_cli(args, cwd, stdin=None):
    """Run ``python -m topocoll.cli.main ARGS`` in ``cwd``; no run may print a traceback."""
    args = [str(a) for a in args]
    env = dict(os.environ)
    env.pop("COLUMNS", None)
    proc = subprocess.run([sys.executable, "-m", "topocoll.cli.main", *args], cwd=cwd,
                          input=stdin, capture_output=True, text=True, timeout=TIMEOUT, env=env)
    result = Result(args, proc)
    assert "Traceback" not in result.stdout + result.stderr, result
    return result


@pytest.fixture
def run(tmp_path):
    """``run(*args)`` runs the CLI with the test's tmp_path as working directory."""

    def _run(*args, stdin=None):
        return run_cli(args, tmp_path, stdin=stdin)
    return _run


@pytest.fixture(scope="session")
def examples_dir():
    """``tests/data``, the schedule fixture files."""
    return DATA


@pytest.fixture(scope="session")
def ring8_generated(tmp_path_factory):
    """``schedule ring:8 -c allgather -a bfb -o s.json`` run once; (result, path to s.json)."""
    where = tmp_path_factory.mktemp("ring8")
    result = run_cli(["schedule", "ring:8", "-c", "allgather", "-a", "bfb", "-o", "s.json"],
                     where)
    return result, where / "s.json"


@pytest.fixture
def ring8_schedule(ring8_generated, tmp_path):
    """A fresh copy of the ring:8 BFB allgather schedule, as ``tmp_path / 's.json'``."""
    result, path = ring8_generated
    assert result.returncode == 0, result
    target = tmp_path / "s.json"
    shutil.copyfile(path, target)
    return target

