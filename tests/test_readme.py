"""The README's and the guides' (docs/*.md) examples run: Python blocks execute, every
``$ topocoll ...`` line exits 0, and the README's first two commands are ``make run`` and
``make test``."""

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = [README, *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"```(\w+)\n(.*?)```", re.S)


def blocks(kind, path=README):
    return [body for lang, body in BLOCK.findall(path.read_text()) if lang == kind]


def _cases(kind):
    return [pytest.param(path, i, id=f"{path.name}-{i}")
            for path in DOCS for i in range(len(blocks(kind, path)))]


def test_first_two_commands_are_make_run_and_make_test():
    first = blocks("console")[0].splitlines()
    assert first[0].split("#")[0].strip() == "make run"
    assert first[1].split("#")[0].strip() == "make test"


@pytest.mark.parametrize(("path", "index"), _cases("python"))
def test_python_examples(path, index, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TOPOCOLL_CACHE_DIR", str(tmp_path / "cache"))
    exec(compile(blocks("python", path)[index], f"{path.name} python block {index}", "exec"), {})


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.name)
def test_cli_examples(path, tmp_path):
    # Lines run in order in one directory, so a later line may read what an earlier one wrote.
    commands = [line[2:] for body in blocks("console", path) for line in body.splitlines()
                if line.startswith("$ topocoll ")]
    assert len(commands) >= (6 if path == README else 1)
    env = {**os.environ, "TOPOCOLL_CACHE_DIR": str(tmp_path / "cache")}  # not the user's cache
    for command in commands:
        args = shlex.split(command)[1:]
        done = subprocess.run([sys.executable, "-m", "topocoll.cli.main", *args], cwd=tmp_path,
                              capture_output=True, text=True, timeout=300, env=env)
        assert done.returncode == 0, (command, done.stderr)
        assert done.stdout.strip(), command
        assert "Traceback" not in done.stderr
