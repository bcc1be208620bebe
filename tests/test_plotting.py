"""topocoll.plotting: the matplotlib helpers every job that draws shares."""

import sys

import pytest

import topocoll as tc
from topocoll.errors import PlotUnavailableError, UnsupportedError
from topocoll.plotting import check_plot_target, new_axes, require_matplotlib, save_figure


def test_a_figure_round_trip(tmp_path):
    fig, ax = new_axes((3, 2))
    ax.plot([1, 2], [3, 4])
    target = tmp_path / "f.svg"
    check_plot_target(target)
    assert save_figure(fig, target) == target
    assert target.read_text().lstrip().startswith("<?xml")


def test_bad_targets_are_refused_before_any_work(tmp_path):
    with pytest.raises(UnsupportedError, match="format"):
        check_plot_target(tmp_path / "x.nope")
    with pytest.raises(UnsupportedError, match="folder"):
        check_plot_target(tmp_path / "missing" / "x.png")
    fig, _ = new_axes((3, 2))
    with pytest.raises(UnsupportedError, match="x.nope"):
        save_figure(fig, tmp_path / "x.nope")


def test_missing_matplotlib_says_how_to_install(monkeypatch):
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # makes `import matplotlib` fail
    with pytest.raises(PlotUnavailableError, match=r"pip install 'topocoll\[plot\]'") as info:
        require_matplotlib()
    assert isinstance(info.value, ImportError) and isinstance(info.value, tc.TopocollError)
