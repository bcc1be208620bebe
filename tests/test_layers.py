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
    "limits": 2, "defaults": 2, "readcost": 2, "batch": 3,
    "fileio": 3,
    "topology": 4, "highs": 4, "plotting": 4,
    "schedule": 5,
    "throughput": 6,
    "synth": 7, "gossip": 7, "interop": 7,
    "finder": 8, "emulate": 8,
    "runtime": 9, "studies": 9,
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
    ("from ..runtime import run_local\n", ("studies", "probe"), "runtime"),
    ("from ..schedule import simulate_many\n", ("synth", "probe"), "simulate"),
])
def test_upward_imports_are_caught(source, rel, needle):
    found = violations(source, rel)
    assert found and needle in found[0]


# --- inside the packages: no import circle, and every deferred import says why ----------------

def _module_name(path):
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _sibling_imports(path):
    """``(target module, line, deferred, text)`` for the imports of ``path`` that reach another
    module of the package (relative imports), at the top or inside a function."""
    source = path.read_text()
    lines = source.splitlines()
    tree = ast.parse(source)
    name = _module_name(path)
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    inside = {id(node) for fn in ast.walk(tree)
              if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
              for node in ast.walk(fn)}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.ImportFrom) and node.level):
            continue
        base = package[:len(package) - node.level + 1]
        module = base + (node.module.split(".") if node.module else [])
        for alias in node.names:
            target = ".".join(module + [alias.name])
            if target not in MODULE_NAMES:
                target = ".".join(module)
            yield target, node.lineno, id(node) in inside, lines[node.lineno - 1]


MODULE_NAMES = {_module_name(p) for p in MODULES}


def _package_graph():
    """Edges between the non-``__init__`` modules of one top-level package (subpackages
    included): a package's lazy front door is not part of its floors."""
    edges = {}
    for path in MODULES:
        if path.name == "__init__.py":
            continue
        name = _module_name(path)
        for target, _, _, _ in _sibling_imports(path):
            if target != name and target.split(".")[0] == name.split(".")[0] \
                    and target in MODULE_NAMES and not (SRC / (target.replace(".", "/") +
                                                              "/__init__.py")).exists():
                edges.setdefault(name, set()).add(target)
    return edges


def _circles(edges):
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on.add(start)
        while work:
            v, children = work[-1]
            for w in children:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


def floors():
    """Each module's floor inside its package: 0 for a module that imports no sibling, else one
    above the highest sibling it imports (defined because there is no circle)."""
    edges = _package_graph()
    memo = {}

    def floor(m, seen=()):
        if m not in memo:
            memo[m] = 1 + max((floor(t, seen + (m,)) for t in edges.get(m, ())), default=-1)
        return memo[m]
    return {m: floor(m) for m in MODULE_NAMES if "." in m}


def test_no_import_circle_inside_a_package():
    assert _circles(_package_graph()) == []


def test_the_floors_inside_packages_are_what_the_code_says():
    table = floors()
    # a few the design depends on (docs/architecture.md)
    assert table["schedule.model"] < table["schedule.io"] < table["schedule.verify"]
    assert table["schedule.symmetric"] < table["schedule.transforms"]
    assert table["topology.transforms"] < table["topology.composite"] < table["topology.specs"]
    assert table["interop.buffers"] < table["interop.lint"]
    assert table["interop.export_limits"] < table["interop.export"]
    assert table["finder.evaluation"] < table["finder.optimize"] < table["finder.core"]
    assert table["finder.tables"] < table["finder.bases"] < table["finder.optimized_bases"]
    assert table["studies.workloads"] < table["studies.profiles"]
    assert table["emulate.system"] < table["emulate.netlink"] < table["emulate.network"]


def test_a_deferred_sibling_import_says_why():
    """An import of a sibling module inside a function defers something heavy (scipy, HiGHS, a
    reader only some inputs need); its line says what."""
    bare = [f"{p.relative_to(SRC)}:{line}: {text.strip()}"
            for p in MODULES for target, line, deferred, text in _sibling_imports(p)
            if deferred and target.split(".")[0] == _module_name(p).split(".")[0]
            and "#" not in text]
    assert bare == []


def test_the_circle_check_can_fail():
    assert _circles({"a.x": {"a.y"}, "a.y": {"a.z"}, "a.z": {"a.x"}}) == [["a.x", "a.y", "a.z"]]
    assert _circles({"a.x": {"a.y"}, "a.y": set()}) == []
