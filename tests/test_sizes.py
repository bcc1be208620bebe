"""Rooms stay small: no module of the package over MAX_MODULE_LINES lines and no function whose
body (its docstring not counted) is over MAX_FUNCTION_LINES lines, except the ones listed below
with the reason they are still long. The list may only shrink: a listed one that got short is
an error too, so the list says what is true."""

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "topocoll"
MAX_MODULE_LINES = 700
MAX_FUNCTION_LINES = 60

#: "path/to/module.py:function" -> why it is still over the limit
LONG_FUNCTIONS = {}

#: "path/to/module.py" -> why it is still over the limit
LONG_MODULES = {}


def body_lines(node):
    """Lines from the ``def`` to the function's end, its docstring left out."""
    first = node.body[0]
    docstring = (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                 and isinstance(first.value.value, str))
    start = first.end_lineno + 1 if docstring else node.lineno
    return node.end_lineno - start + 1


def functions(tree):
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node


def measured():
    modules, long_functions = {}, {}
    for path in sorted(SRC.rglob("*.py")):
        name = path.relative_to(SRC).as_posix()
        text = path.read_text()
        modules[name] = len(text.splitlines())
        for node in functions(ast.parse(text)):
            lines = body_lines(node)
            if lines > MAX_FUNCTION_LINES:
                long_functions[f"{name}:{node.name}"] = lines
    return modules, long_functions


MODULES, FUNCTIONS = measured()


def test_no_module_over_the_limit_unless_listed():
    over = {name for name, lines in MODULES.items() if lines > MAX_MODULE_LINES}
    assert over - set(LONG_MODULES) == set(), "new long modules"
    assert set(LONG_MODULES) - over == set(), "listed modules that are short now: unlist them"


def test_no_function_over_the_limit_unless_listed():
    assert set(FUNCTIONS) - set(LONG_FUNCTIONS) == set(), "new long functions"
    assert set(LONG_FUNCTIONS) - set(FUNCTIONS) == set(), \
        "listed functions that are short now (or gone): unlist them"


@pytest.mark.parametrize("source, expected", [
    ('def f():\n    """doc\n    more"""\n    return 1\n', 1),
    ("def f():\n    x = 1\n    return x\n", 3),
    ("def f():\n    '''one'''\n", 0),
])
def test_body_lines_leaves_the_docstring_out(source, expected):
    (node,) = functions(ast.parse(source))
    assert body_lines(node) == expected
