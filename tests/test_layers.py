"""The house's import directions (docs/architecture.md): every module imports only from rooms
on lower floors than its own, whether at the top of the file or inside a function."""

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "topocoll"

#: room -> floor; a room may import only from rooms on lower floors (and from itself)
FLOOR = {
    "errors": 0, "lazy": 0,
    "units": 1, "results": 1, "collectives": 1,
    "limits": 2, "defaults": 2,
    "fileio": 3,
    "topology": 4, "highs": 4, "plotting": 4,
    "schedule": 5,
    "throughput": 6,
    "synth": 7, "gossip": 7, "interop": 7,
    "finder": 8, "studies": 8, "emulate": 8,
    "runtime": 9,
    "cli": 10,
    "__init__": 11,
}

#: modules a room must not use even though their room is below it
FORBIDDEN = {
    # generators do their job without the simulator
    "synth": ("schedule.linkmodel", "schedule.simulate"),
}


def _imports(source, rel):
    """(target under topocoll as a list of names, line) for every topocoll import in the
    module at ``rel`` (its path parts under the package, without ``.py``)."""
    package = rel[:-1]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "topocoll" or alias.name.startswith("topocoll."):
                    yield alias.name.split(".")[1:], node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(package[:len(package) - node.level + 1])
                module = base + (node.module.split(".") if node.module else [])
            elif node.module == "topocoll" or (node.module or "").startswith("topocoll."):
                module = node.module.split(".")[1:]
            else:
                continue
            # "from .a import b" yields a.b (b may be a module or a name); "from .. import x"
            # yields x, a room (or the package's __version__)
            for alias in node.names:
                yield module + [alias.name], node.lineno


def violations(source, rel):
    """Messages for every import in the module at ``rel`` that points up or sideways."""
    room = rel[0] if rel != ("__init__",) else "__init__"
    out = []
    for target, line in _imports(source, rel):
        other = target[0] if target else "__init__"
        where = f"{'/'.join(rel)}.py:{line}"
        if other in ("__version__", room):
            continue
        if other not in FLOOR:
            out.append(f"{where} imports unknown room {other}")
        elif FLOOR[other] >= FLOOR[room]:
            out.append(f"{where} ({room}, floor {FLOOR[room]}) imports {'.'.join(target)} "
                       f"({other}, floor {FLOOR[other]})")
        dotted = ".".join(target)
        out += [f"{where} imports {dotted}" for banned in FORBIDDEN.get(room, ())
                if dotted.startswith(banned)]
    return out


MODULES = sorted(SRC.rglob("*.py"))


def test_every_room_has_a_floor():
    rooms = {p.name.removesuffix(".py") for p in SRC.iterdir()
             if p.suffix == ".py" or (p.is_dir() and (p / "__init__.py").exists())}
    assert rooms == set(FLOOR)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(SRC)))
def test_imports_point_down(path):
    rel = path.relative_to(SRC).with_suffix("").parts
    assert violations(path.read_text(), rel) == []


@pytest.mark.parametrize("source, rel, needle", [
    ("def f():\n    from ..synth import generate\n", ("topology", "probe"), "synth"),
    ("from topocoll.studies import compare\n", ("gossip", "probe"), "studies"),
    ("from ..schedule.linkmodel import simulate\n", ("synth", "probe"), "linkmodel"),
    ("from ...schedule import linkmodel\n", ("synth", "ten", "probe"), "schedule"),
    ("from .. import finder\n", ("throughput", "probe"), "finder"),
    ("from ..schedule import simulate_many\n", ("synth", "probe"), "simulate"),
])
def test_upward_imports_are_caught(source, rel, needle):
    found = violations(source, rel)
    assert found and needle in found[0]
