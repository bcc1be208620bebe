"""The front door: what ``topocoll`` exports, the ``topology`` subpackage, one definition per
public name where two once existed, and the one prediction of expanded schedules against the
schedules themselves."""

import ast
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import pytest

import topocoll
from topocoll.synth.bfb import bfb_allgather
from topocoll.synth.expansions import expand_schedule, measure, predict
from topocoll.topology import topology

SRC = Path(__file__).resolve().parents[1] / "src" / "topocoll"


# ---------------------------------------------------------------------- exports
@pytest.mark.parametrize("name", ["find", "compare", "rewire", "build_topology"])
def test_the_searches_and_the_builder_are_exported(name):
    assert name in topocoll.__all__
    assert callable(getattr(topocoll, name))


def test_every_exported_name_resolves():
    for name in topocoll.__all__:
        assert getattr(topocoll, name) is not None, name
    from topocoll.finder import find
    from topocoll.studies.compare import compare
    from topocoll.throughput.rewire import rewire

    assert (topocoll.find, topocoll.compare, topocoll.rewire) == (find, compare, rewire)


PACKAGES = sorted(p.parent.relative_to(SRC).as_posix().replace("/", ".")
                  for p in SRC.rglob("__init__.py") if p.parent != SRC and p.parent.name != "cli")


@pytest.mark.parametrize("package", PACKAGES)
def test_every_package_front_door_is_lazy_and_its_names_resolve(package):
    # one style of front door: a name -> module map read on first use; what an __init__ still
    # imports at once says why on the line above
    path = SRC / package.replace(".", "/") / "__init__.py"
    tree = ast.parse(path.read_text())
    assigned = {t.id for node in tree.body if isinstance(node, ast.Assign)
                for t in ast.walk(node.targets[0]) if isinstance(t, ast.Name)}
    assert "__getattr__" in assigned, f"{package}: not a lazy front door"
    lines = path.read_text().splitlines()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            assert lines[node.lineno - 2].lstrip().startswith("#"), \
                f"{package}: the eager import on line {node.lineno} says not why"
    module = __import__(f"topocoll.{package}", fromlist=["__all__"])
    for name in module.__all__:
        assert getattr(module, name) is not None, f"{package}.{name}"


def _fresh(code):
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


def test_topology_is_the_subpackage_whatever_is_imported_first():
    # in a fresh interpreter each time: the import order must not matter
    assert _fresh("import topocoll.topology as tt; print(tt.Topology.__name__)") == ["Topology"]
    assert _fresh("import topocoll, topocoll.topology as tt; "
                  "print(topocoll.topology is tt, tt.Topology is topocoll.Topology)") == \
        ["True", "True"]
    assert _fresh("import topocoll; t = topocoll.build_topology('ring:4'); "
                  "import topocoll.topology as tt; "
                  "print(isinstance(t, tt.Topology), topocoll.topology.topology('ring:4').name)"
                  ) == ["True", "ring:4"]


def test_build_topology_is_the_subpackages_builder():
    import topocoll.topology as tt

    assert topocoll.build_topology is tt.topology
    assert topocoll.build_topology("ring:4").num_nodes == 4
    with pytest.raises(TypeError):
        topocoll.topology("ring:4")          # a module: the builder has its own name


# ---------------------------------------------------------------------- one definition each
def definitions(root=SRC):
    """Module-level function and class names -> the modules under ``root`` that define them."""
    found = defaultdict(list)
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                found[node.name].append(path.relative_to(root).as_posix())
    return found


#: names that once had two definitions, and the home of each now
ONCE = ("plot_timeline", "pareto_frontier", "predict", "Layout", "whole_number", "real_number",
        "as_progress", "quantize", "quantize_paths", "hop_frontier", "plot_iteration")


@pytest.mark.parametrize("name", ONCE)
def test_one_definition(name):
    """Ideas that once lived in two or three places have one definition (wherever it is)."""
    assert len(definitions()[name]) == 1


def test_the_definitions_scan_sees_duplicates(tmp_path):
    (tmp_path / "a.py").write_text("def predict():\n    pass\n\n\nclass Layout:\n    pass\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.py").write_text("def predict(x):\n    def inner():\n        pass\n")
    found = definitions(tmp_path)
    assert found["predict"] == ["a.py", "sub/b.py"] and found["Layout"] == ["a.py"]
    assert "inner" not in found


def test_one_buffer_layout_serves_the_exporter_and_the_runtime():
    from topocoll.interop.layout import Layout
    from topocoll.runtime.plan import layout

    for name in ("allgather", "reduce_scatter", "allreduce", "broadcast", "reduce", "scatter",
                 "gather", "alltoall"):
        lay = layout(name, 3, 6, root=1)
        assert isinstance(lay.buffers, Layout) and lay.buffers.collective.name == name
        chunks = Layout(name, 3, 1, 1)
        for rank in range(3):
            assert lay.buffers.inputs(rank) == chunks.inputs(rank)
            assert lay.buffers.outputs(rank) == chunks.outputs(rank)


# ---------------------------------------------------------------------- predictions
EXPANSIONS = [("line", {}), ("degree", {"m": 1}), ("degree", {"m": 2}), ("degree", {"m": 3}),
              ("power", {"n": 1}), ("power", {"n": 2}), ("bidirectional", {})]


@pytest.mark.parametrize("kind,params", EXPANSIONS,
                         ids=[f"{k}-{','.join(map(str, p.values()))}" for k, p in EXPANSIONS])
@pytest.mark.parametrize("spec", ["ring:5", "kautz:2,2", "complete:4"])
def test_predict_agrees_with_the_evaluated_expansion(spec, kind, params):
    base = bfb_allgather(topology(spec))
    steps, t_b = measure(base)
    x = expand_schedule(kind, base, **params)
    assert topocoll.verify(x).valid
    got = measure(x)
    want = predict(kind, steps, t_b, base.num_nodes, **params)
    if kind == "line":                   # the line graph's T_B is a bound; its steps are exact
        assert got[0] == want[0] and got[1] <= want[1] + 1e-9
    else:
        assert got[0] == want[0] and got[1] == pytest.approx(want[1], rel=1e-12)
    assert (x.meta["predicted"]["steps"], x.meta["predicted"]["t_b"]) == \
        pytest.approx(want, rel=1e-12)


def test_degree_expansion_with_m_1_adds_no_step():
    base = bfb_allgather(topology("ring:5"))
    assert measure(expand_schedule("degree", base, m=1)) == pytest.approx(measure(base))
    assert predict("degree", 2, 0.8, 5, m=1) == (2, 0.8)


def test_the_finder_predicts_with_the_same_function():
    from topocoll.finder import search

    assert search.predict is predict


# ---------------------------------------------------------------------- progress
def test_progress_callbacks_of_every_accepted_shape():
    from topocoll.finder import find_range
    from topocoll.results import as_progress

    seen = {"two": [], "old": [], "new": []}

    def new(done, total, stage=None):
        seen["new"].append((stage, done, total))

    find_range([8, 9], 2, cache=False, progress=lambda done, total: seen["two"].append(
        (done, total)))
    find_range([8, 9], 2, cache=False, progress=lambda stage, done, total: seen["old"].append(
        (stage, done, total)))
    find_range([8, 9], 2, cache=False, progress=new)
    # the sizes, one by one, after any bases measured on the way (their own stage)
    assert [x for x in seen["two"] if x[1] == 2] == [(1, 2), (2, 2)]
    frontiers = [("frontiers", 1, 2), ("frontiers", 2, 2)]
    assert [x for x in seen["old"] if x[0] == "frontiers"] == frontiers
    assert [x for x in seen["new"] if x[0] == "frontiers"] == frontiers
    assert all(isinstance(stage, str) and isinstance(done, int)
               for stage, done, _ in seen["old"] + seen["new"])
    wrapped = as_progress(new)
    assert as_progress(wrapped) is wrapped and as_progress(None) is None
    # the command line's progress lines take (done, total) or (stage, done, total)
    calls = []
    lines = as_progress(lambda done, total, *more: calls.append((done, total, *more)))
    lines(1, 2)
    lines(3, None, "measuring")
    assert calls == [(1, 2), ("measuring", 3, None)]


# ---------------------------------------------------------------------- tests use public names
def private_uses(source):
    """``(line, what)`` for each private name of topocoll a test module reaches: imported,
    read as a module attribute, or patched by name."""
    tree = ast.parse(source)
    modules, found = set(), []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules |= {a.asname or a.name.split(".")[0] for a in node.names
                        if a.name.startswith("topocoll")}
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("topocoll"):
            for alias in node.names:
                if alias.name.startswith("_"):
                    found.append((node.lineno, f"{node.module}.{alias.name}"))
                modules.add(alias.asname or alias.name)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                and node.value.id in modules and node.attr.startswith("_") \
                and not node.attr.startswith("__"):
            found.append((node.lineno, f"{node.value.id}.{node.attr}"))
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "setattr" \
                and len(node.args) >= 2 and isinstance(node.args[0], ast.Name) \
                and node.args[0].id in modules and isinstance(node.args[1], ast.Constant) \
                and str(node.args[1].value).startswith("_"):
            found.append((node.lineno, f"{node.args[0].id}.{node.args[1].value}"))
    return found


TESTS = Path(__file__).resolve().parent


@pytest.mark.parametrize("path", sorted(TESTS.rglob("test_*.py")),
                         ids=lambda p: str(p.relative_to(TESTS)))
def test_tests_reach_public_names_only(path):
    assert private_uses(path.read_text()) == []


@pytest.mark.parametrize("source", [
    "from topocoll.schedule.io import _header\n",
    "import topocoll.schedule.io as io\nio._header\n",
    "from topocoll.schedule import io\ndef t(monkeypatch):\n"
    "    monkeypatch.setattr(io, '_header', None)\n",
])
def test_the_private_name_scan_can_fail(source):
    assert private_uses(source) != []
