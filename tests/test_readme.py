"""The README's and the guides' (docs/*.md) examples run: Python blocks execute, every
``$ topocoll ...`` line exits 0, and the README's first two commands are ``make run`` and
``make test``."""

import re
import shlex
from pathlib import Path

import pytest

from tests.cli.conftest import run_cli

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
def test_cli_examples(path, tmp_path, monkeypatch):
    # Lines run in order in one directory, so a later line may read what an earlier one wrote;
    # each through the CLI's entry point, in this process unless it needs its own (run_cli).
    commands = [line[2:] for body in blocks("console", path) for line in body.splitlines()
                if line.startswith("$ topocoll ")]
    assert len(commands) >= (6 if path == README else 1)
    monkeypatch.setenv("TOPOCOLL_CACHE_DIR", str(tmp_path / "cache"))  # not the user's cache
    if any(_emulates(c) for c in commands):
        from tests.emulate.conftest import WHY_NOT

        if WHY_NOT is not None:
            pytest.skip(f"emulation: {WHY_NOT}")
    for command in commands:
        done = run_cli(shlex.split(command)[1:], tmp_path, timeout=300)  # no traceback either
        assert done.returncode == 0, (command, done)
        assert done.stdout.strip(), (command, done)


def _emulates(command):
    """Whether a ``$ topocoll`` line builds an emulated network (needs root)."""
    words = shlex.split(command)
    return words[1:2] == ["emulate"] or "--emulate" in words or (
        words[1:3] == ["gossip", "run"] and ("--network" in words or "--topology" in words))
