"""Fixtures for the CLI tests: run ``topocoll`` through its entry point (see :func:`run_cli`)."""

import contextlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys

import pytest

from tests.helpers import DATA

TIMEOUT = 120


class Result:
    """What one ``topocoll`` run left behind."""

    def __init__(self, args, returncode, stdout, stderr, subprocess_=False):
        self.args = args
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr
        self.subprocess = subprocess_

    @property
    def stdout_lines(self):
        return [line for line in self.stdout.splitlines() if line.strip()]

    @property
    def stderr_lines(self):
        return [line for line in self.stderr.splitlines() if line.strip()]

    def json(self):
        return json.loads(self.stdout)

    def __repr__(self):
        where = "a subprocess" if self.subprocess else "this process"
        return (f"topocoll {' '.join(self.args)} (in {where}) -> exit {self.returncode}\n"
                f"--- stdout ---\n{self.stdout}\n--- stderr ---\n{self.stderr}")


def run_cli(args, cwd, stdin=None, timeout=TIMEOUT):
    """Run ``topocoll ARGS`` in ``cwd``; no run may print a traceback.

    A run goes through :func:`topocoll.cli.main.main` in this process (a subprocess costs a
    second or more of imports per run), unless it needs a process of its own: standard input
    fed through a real pipe, a name for one of the process's descriptors (``/dev/stdout``,
    ``/dev/fd/N``, ``/proc/...``: in here they would be pytest's capture, not the run's),
    ``run`` (starts torch ranks) and ``--workers`` (a process pool) run as
    ``python -m topocoll.cli.main ARGS``, as do all runs should the consoles have been set up for
    a terminal (``pytest -s``). :func:`run_subprocess` always starts the real entry point."""
    args = [str(a) for a in args]
    if _needs_a_process(args, stdin):
        return run_subprocess(args, cwd, stdin=stdin, timeout=timeout)
    code, stdout, stderr = _run_in_process(args, cwd, timeout)
    result = Result(args, code, stdout, stderr)
    assert "Traceback" not in result.stdout + result.stderr, result
    return result


def run_subprocess(args, cwd, stdin=None, timeout=TIMEOUT):
    """Run ``python -m topocoll.cli.main ARGS`` in ``cwd``; no run may print a traceback."""
    args = [str(a) for a in args]
    env = dict(os.environ)
    env.pop("COLUMNS", None)
    proc = subprocess.run([sys.executable, "-m", "topocoll.cli.main", *args], cwd=cwd,
                          input=stdin, capture_output=True, text=True, timeout=timeout, env=env)
    result = Result(args, proc.returncode, proc.stdout, proc.stderr, subprocess_=True)
    assert "Traceback" not in result.stdout + result.stderr, result
    return result


def _needs_a_process(args, stdin):
    """Whether ``topocoll ARGS`` must run in a subprocess to be run as a user runs it."""
    from topocoll.cli import common

    # the consoles as the CLI sets them up for a pipe (cli/common.py): no colour, 220 columns
    piped = all(console.color_system is None and not console.is_terminal
                for console in (common.out_console, common.err_console)) \
        and common.out_console.width == 220
    return (stdin is not None or not piped or args[:1] == ["run"] or "--workers" in args
            or any(a.startswith(("/dev/std", "/dev/fd/", "/proc/")) for a in args))


class _Hang(BaseException):
    """No answer in time (not an OSError, which the CLI would report as a one-line error)."""


def _run_in_process(args, cwd, timeout=TIMEOUT):
    """(exit code, stdout, stderr) of ``topocoll ARGS`` run in this process, with standard
    input empty (as ``/dev/null``) and no COLUMNS, as in :func:`run_subprocess`."""
    from topocoll.cli.main import main

    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="utf-8", write_through=True)   # has .buffer, as stdout
    err = io.StringIO()
    stdin = io.TextIOWrapper(io.BytesIO(b""), encoding="utf-8")
    columns = os.environ.pop("COLUMNS", None)

    def alarm(signum, frame):
        raise _Hang(f"no answer after {timeout} s")
    previous = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(timeout)
    old, old_stdin = os.getcwd(), sys.stdin
    try:
        os.chdir(cwd)
        sys.stdin = stdin
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main(args)
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
        sys.stdin = old_stdin
        os.chdir(old)
        if columns is not None:
            os.environ["COLUMNS"] = columns
    out.flush()
    return code, raw.getvalue().decode("utf-8", "replace"), err.getvalue()


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



def leaf_commands(group=None, prefix=()):
    """``(("gossip", "info"), command)`` for every command under ``group`` (default: the whole
    ``topocoll`` group), sub-groups walked: what the option and JSON checks iterate over."""
    import click

    if group is None:
        from topocoll.cli.main import cli as group
    ctx = click.Context(group)
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if isinstance(command, click.Group):
            yield from leaf_commands(command, prefix + (name,))
        else:
            yield prefix + (name,), command
