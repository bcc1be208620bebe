"""topocoll.plotting: the matplotlib helpers every job that draws shares."""

import os
import sys

import pytest

import topocoll as tc
from topocoll.errors import PlotUnavailableError, UnsupportedError
from topocoll.plotting import busy_fraction, check_plot_target, gantt, new_axes, \
    require_matplotlib, save_figure
from topocoll.schedule.linkmodel import simulate, simulate_many
from topocoll.schedule.timeline import plot_timeline
from topocoll.synth import generate
from topocoll.topology import topology


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


# ------------------------------------------------------------------ link-model timelines
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_busy_fraction_by_hand():
    # row 0: busy [0, 1) and [3, 4); row 1 (two links): [1, 3) on one of them; bins [0,2), [2,4)
    out = busy_fraction([0, 0, 1], [0.0, 3.0, 1.0], [1.0, 4.0, 3.0], 2, [0.0, 2.0, 4.0],
                        capacity=[1, 2])
    assert out.tolist() == [[0.5, 0.5], [0.25, 0.25]]
    # an interval across several bins: [0.5, 3.5) over bins of 1 s
    assert busy_fraction([0], [0.5], [3.5], 1, [0.0, 1.0, 2.0, 3.0, 4.0]).tolist() == \
        [[0.5, 1.0, 1.0, 0.5]]


def test_gantt_draws_one_bar_per_interval_and_outlines():
    fig, ax = new_axes((3, 2))
    bars = gantt(ax, [0, 1, 1], [0.0, 0.0, 2.0], [1.0, 2.0, 3.0], [1, 1, 2],
                 outlined=[True, False, True])
    assert len(bars.get_paths()) == 3
    outlines = [c for c in ax.collections if c is not bars]
    assert len(outlines) == 1 and len(outlines[0].get_paths()) == 2
    assert ax.get_xlim()[1] == pytest.approx(3.03)


def _timed(spec, collective, algorithm):
    s = generate(topology(spec, bandwidth=1e9, latency=1e-6), collective, algorithm)
    return simulate(s, "1MiB")


def test_timeline_png_of_a_small_schedule(tmp_path):
    target = tmp_path / "ring.png"
    assert plot_timeline(_timed("uniring:4", "allgather", "ring"), target) == target
    assert target.read_bytes()[:8] == PNG_MAGIC


def test_timeline_png_of_a_large_schedule_is_a_heat_map(tmp_path):
    r = _timed("torus:16x16", "allgather", "bfb")      # 1024 links: 64 grouped rows
    target = tmp_path / "torus.png"
    plot_timeline(r, target)
    assert target.read_bytes()[:8] == PNG_MAGIC


def test_timeline_svg_with_one_panel_per_tenant(tmp_path):
    s = generate(topology("ring:6"), "allgather", "ring")
    b = generate(topology("ring:6"), "broadcast", "bfb")
    target = tmp_path / "two.svg"
    plot_timeline(simulate_many([s, b], "1MiB"), target, color_by="shard", titles=["a", "b"])
    text = target.read_text()
    assert text.lstrip().startswith("<?xml") and text.count("utilization") == 2


def test_timeline_refuses_bad_requests(tmp_path):
    r = _timed("uniring:3", "allgather", "ring")
    with pytest.raises(UnsupportedError, match="color_by"):
        plot_timeline(r, tmp_path / "x.png", color_by="rank")
    with pytest.raises(UnsupportedError, match="format"):
        plot_timeline(r, tmp_path / "x.nope")
    assert not list(tmp_path.iterdir())


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs Linux's /dev/full")
@pytest.mark.parametrize("args", [["compare", "ring:8", "torus:2x4", "--plot", "/dev/full"],
                                  ["gossip", "info", "ring", "--nodes", "8", "--plot",
                                   "/dev/full"]])
def test_a_plot_that_cannot_be_written_is_an_error_not_written(args, tmp_path):
    from tests.cli.conftest import run_cli

    result = run_cli(args, tmp_path)
    assert result.returncode == 2, result
    assert "No space left on device" in result.stderr and "written" not in result.stderr


def test_a_failed_plot_keeps_the_old_file(tmp_path, monkeypatch):
    from topocoll.errors import UnsupportedError

    old = tmp_path / "p.png"
    old.write_bytes(b"old plot")
    fig, _ = new_axes((2, 2))
    monkeypatch.setattr(type(fig), "savefig", lambda *a, **k: (_ for _ in ()).throw(
        ValueError("broken backend")))
    with pytest.raises(UnsupportedError, match="broken backend"):
        save_figure(fig, old)
    assert old.read_bytes() == b"old plot"
    assert [p.name for p in tmp_path.iterdir()] == ["p.png"]    # no temporary left behind
