"""Start-up of the everyday jobs: ``topocoll verify`` of a small schedule file loads neither
scipy nor networkx nor matplotlib (the package imports them where they are used), and the
generator names behind ``schedule -a`` are still the registry's, read when first needed."""

import subprocess
import sys

import pytest

from topocoll.cli.main import cli

_HEAVY = ("scipy", "networkx", "matplotlib", "highspy", "torch")

_PROBE = """
import sys
from topocoll.cli.main import main
try:
    main({args!r})
except SystemExit as exc:
    code = exc.code
print("EXIT:%s" % code)
print("HEAVY:" + ",".join(sorted(m for m in {heavy!r} if m in sys.modules)))
"""


def _run(args, *, pre=""):
    """(exit status, heavy libraries loaded) after ``topocoll ARGS`` in a fresh interpreter."""
    code = pre + _PROBE.format(args=list(args), heavy=_HEAVY)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120)
    lines = out.stdout.strip().splitlines()
    return lines[-2].removeprefix("EXIT:"), lines[-1].removeprefix("HEAVY:")


@pytest.fixture(scope="module")
def small_schedule(tmp_path_factory):
    from topocoll.schedule import save_schedule
    from topocoll.synth import generate

    path = tmp_path_factory.mktemp("startup") / "ring4.json"
    save_schedule(generate("ring:4", "allgather", "ring"), str(path))
    return str(path)


def test_verify_loads_no_scipy_networkx_or_matplotlib(small_schedule):
    status, heavy = _run(["verify", small_schedule])
    assert status == "0"           # it did verify the file, and found it valid
    assert heavy == ""


@pytest.mark.parametrize("job", [["synth", "mesh:3x3", "-c", "allgather"], ["evaluate", None]])
def test_small_synth_and_evaluate_load_no_scipy(job, small_schedule):
    """Their shortest paths come from numpy (topocoll.topology.paths) on small networks."""
    status, heavy = _run([small_schedule if a is None else a for a in job])
    assert status == "0" and heavy == ""


def test_the_probe_sees_scipy_when_it_is_loaded(small_schedule):
    status, heavy = _run(["verify", small_schedule], pre="import scipy.sparse\n")
    assert status == "0" and "scipy" in heavy.split(",")


def test_schedule_algorithm_choices_are_the_registry(run):
    from topocoll.synth import ALGORITHMS

    command = cli.get_command(None, "schedule")
    option = next(p for p in command.params if p.name == "algorithm")
    assert list(option.type.choices) == sorted(ALGORITHMS)
    r = run("schedule", "ring:4", "-c", "allgather", "-a", "nosuch")
    assert r.returncode == 2 and "nosuch" in r.stderr and "bfb" in r.stderr, r


@pytest.mark.parametrize("package", ["topocoll.topology", "topocoll.topology.families",
                                     "topocoll.schedule", "topocoll.synth", "topocoll.synth.ten",
                                     "topocoll.synth.packing"])
def test_lazy_packages_still_export_every_name(package):
    """A lazy ``__init__`` (names imported on first use) resolves every name of its __all__,
    lists them in dir(), and names in its table only what __all__ exports."""
    import importlib

    module = importlib.import_module(package)
    missing = [name for name in module.__all__ if not hasattr(module, name)]
    assert missing == []
    assert set(module.__all__) <= set(dir(module))
    lazy = {name for names in getattr(module, "_LAZY", {}).values() for name in names}
    assert lazy <= set(module.__all__)
    with pytest.raises(AttributeError):
        module.no_such_name   # noqa: B018


def test_a_name_and_a_submodule_of_one_name_keep_the_name():
    """``topocoll.schedule.verify`` is the function (as before the package was lazy), and
    submodules are still attributes of their package once imported or first used."""
    import topocoll.schedule
    import topocoll.topology

    assert callable(topocoll.schedule.verify) and topocoll.schedule.verify.__name__ == "verify"
    assert topocoll.topology.families.torus_graph([2, 2]).num_nodes == 4
