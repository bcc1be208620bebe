"""The lint is split by job (the runtime's rules, the runtime's steps, the front door) and the
bounded-buffer run sits on the one thread-block interpreter: the parts import only public names
of each other, and the front door keeps its public names."""

import ast
from pathlib import Path

import pytest

import topocoll.interop.lint as lint

INTEROP = Path(__file__).resolve().parents[2] / "src" / "topocoll" / "interop"
PARTS = ["lint.py", "lint_rules.py", "lint_steps.py", "buffers.py", "threadblocks.py",
         "replay.py"]


def _private_names_reached(tree):
    """Private names a module takes from its siblings: ``from .x import _y`` or
    ``getattr(x, "_y")``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            yield from (alias.name for alias in node.names if alias.name.startswith("_"))
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) == "getattr":
            name = node.args[1] if len(node.args) > 1 else None
            if isinstance(name, ast.Constant) and str(name.value).startswith("_"):
                yield name.value


@pytest.mark.parametrize("part", PARTS)
def test_parts_reach_no_private_names_of_each_other(part):
    assert list(_private_names_reached(ast.parse((INTEROP / part).read_text()))) == []


def test_front_door_keeps_its_public_names():
    assert lint.__all__ == ["lint_msccl", "LintReport", "Finding", "STEP_TYPES",
                            "buffer_capacity"]
    for name in lint.__all__:
        assert hasattr(lint, name)


def test_lint_has_one_interpreter():
    # the bounded-buffer run is run_blocks with a capacity, not a second interpreter
    source = (INTEROP / "buffers.py").read_text()
    assert "run_blocks" in source and "class " not in source
