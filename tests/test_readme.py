"""The README's examples run: Python blocks execute, every ``$ topocoll ...`` line exits 0, and
its first two commands are ``make run`` and ``make test``."""

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCK = re.compile(r"```(\w+)\n(.*?)```", re.S)


def blocks(kind):
    return [body for lang, body in BLOCK.findall(README.read_text()) if lang == kind]


def test_first_two_commands_are_make_run_and_make_test():
    first = blocks("console")[0].splitlines()
    assert first[0].split("#")[0].strip() == "make run"
    assert first[1].split("#")[0].strip() == "make test"


@pytest.mark.parametrize("index", range(len(blocks("python"))))
def test_python_examples(index, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TOPOCOLL_CACHE_DIR", str(tmp_path / "cache"))
    exec(compile(blocks("python")[index], f"README python block {index}", "exec"), {})


def test_cli_examples(tmp_path):
    commands = [line[2:] for body in blocks("console") for line in body.splitlines()
                if line.startswith("$ topocoll ")]
    assert len(commands) >= 6
    env = {**os.environ, "TOPOCOLL_CACHE_DIR": str(tmp_path / "cache")}  # not the user's cache
    for command in commands:
        args = shlex.split(command)[1:]
        done = subprocess.run([sys.executable, "-m", "topocoll.cli.main", *args], cwd=tmp_path,
                              capture_output=True, text=True, timeout=300, env=env)
        assert done.returncode == 0, (command, done.stderr)
        assert done.stdout.strip(), command
        assert "Traceback" not in done.stderr
