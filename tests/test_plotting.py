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


# ------------------------------------------------------------------ readable figures
# Every figure topocoll draws must be readable by a stranger: colour bars with a label where a
# colour encodes a number, a legend where it encodes a category, time axes in a unit that fits
# (and says which), titles that fit inside the figure. These tests look at the matplotlib
# objects each function hands to save_figure.

def _capture(monkeypatch, module):
    """Record the figures ``module.save_figure`` is given (still writing them)."""
    import topocoll.plotting as plotting

    figures = []
    real = plotting.save_figure

    def keep(fig, *args, **kwargs):
        figures.append(fig)
        return real(fig, *args, **kwargs)

    monkeypatch.setattr(module, "save_figure", keep)
    return figures


def _inside_figure(fig, artist):
    """``artist``'s drawn extent lies inside the figure (one pixel of slack)."""
    box = artist.get_window_extent(fig.canvas.get_renderer())
    frame = fig.bbox
    return (box.x0 >= frame.x0 - 1 and box.x1 <= frame.x1 + 1 and box.y0 >= frame.y0 - 1
            and box.y1 <= frame.y1 + 1)


def _main_axes(fig):
    """The axes with a time axis: those whose x label names a time unit."""
    return [a for a in fig.axes if a.get_xlabel().startswith("time (")]


def _timeline_figure(monkeypatch, tmp_path, results, **kwargs):
    import topocoll.schedule.timeline as timeline

    figures = _capture(monkeypatch, timeline)
    plot_timeline(results, tmp_path / "t.png", **kwargs)
    assert (tmp_path / "t.png").read_bytes()[:8] == PNG_MAGIC
    (fig,) = figures
    return fig


def test_timeline_steps_have_a_labelled_colour_bar_and_a_scaled_time_axis(monkeypatch,
                                                                         tmp_path):
    r = _timed("uniring:4", "allgather", "ring")          # finishes in microseconds
    assert 1e-6 < r.time < 1e-3
    fig = _timeline_figure(monkeypatch, tmp_path, r)
    (ax,) = _main_axes(fig)
    assert ax.get_xlabel() == "time (us)"
    assert ax.get_xlim()[1] == pytest.approx(r.time * 1e6 * 1.01)   # drawn in us, not s
    bars = ax.collections[0]
    assert bars.colorbar is not None and bars.colorbar.ax.get_ylabel() == "step"
    ticks = bars.colorbar.get_ticks()
    assert len(ticks) and all(float(t).is_integer() for t in ticks)     # whole steps
    assert ax.get_ylabel() == "link (src->dst)"
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any("critical path" in t for t in legend)
    assert _inside_figure(fig, ax.title)


def test_timeline_a_few_shards_get_a_legend(monkeypatch, tmp_path):
    s = generate(topology("ring:6"), "allgather", "ring")
    b = generate(topology("ring:6"), "broadcast", "bfb")
    fig = _timeline_figure(monkeypatch, tmp_path, simulate_many([s, b], "1MiB"),
                           color_by="shard")
    top = _main_axes(fig)[0]
    legend = [t.get_text() for t in top.get_legend().get_texts()]
    assert [t for t in legend if t.startswith("shard")] == [f"shard {k}" for k in range(6)]


def test_timeline_heat_map_of_many_links_is_sorted_grouped_and_labelled(monkeypatch,
                                                                       tmp_path):
    from topocoll.schedule.timeline import HEAT_ROWS

    r = _timed("torus:8x8", "broadcast", "bfb")            # 128 links used, very uneven
    fig = _timeline_figure(monkeypatch, tmp_path, r)
    (ax,) = _main_axes(fig)
    (image,) = ax.images
    rows = image.get_array().shape[0]
    assert rows <= HEAT_ROWS and len(ax.get_yticklabels()) == rows
    assert image.colorbar is not None
    assert image.colorbar.ax.get_ylabel().startswith("busy fraction")
    assert 1e-3 < r.time < 1.0 and ax.get_xlabel() == "time (ms)"
    assert "busy" in ax.get_ylabel()
    # rows are sorted busiest first: the busy fraction summed over time never increases
    busy = image.get_array().sum(axis=1)
    assert all(a >= b - 1e-9 for a, b in zip(busy[:-1], busy[1:]))
    assert busy[0] > busy[-1]
    assert ax.get_yticklabels()[0].get_text().startswith("#1")
    assert _inside_figure(fig, ax.title)


def test_timeline_64_links_by_busy_fraction_are_grouped_into_readable_rows(monkeypatch,
                                                                          tmp_path):
    from topocoll.schedule.timeline import HEAT_ROWS

    r = _timed("torus:4x4", "allreduce", "bfb")            # 64 links
    assert (r.link_busy > 0).sum() == 64
    fig = _timeline_figure(monkeypatch, tmp_path, r, color_by="busy")
    (ax,) = _main_axes(fig)
    (image,) = ax.images
    assert image.get_array().shape[0] <= HEAT_ROWS < 64
    assert image.colorbar.ax.get_ylabel().startswith("busy fraction")


def test_timeline_long_titles_are_wrapped_inside_the_figure(monkeypatch, tmp_path):
    r = _timed("uniring:4", "allgather", "ring")
    long = "a rather long title that names the schedule file, its collective " * 4
    fig = _timeline_figure(monkeypatch, tmp_path, r, titles=[long])
    (ax,) = _main_axes(fig)
    assert ax.title.get_text().count("\n") >= 2
    assert _inside_figure(fig, ax.title)


def test_time_scale_picks_the_unit_that_fits():
    from topocoll.plotting import time_scale

    assert time_scale(20e-3) == (1e3, "ms")
    assert time_scale(2.0) == (1.0, "s")
    assert time_scale(5e-6) == (1e6, "us")
    assert time_scale(1e-3) == (1e3, "ms")


def _iteration(layers=60):
    from topocoll.studies.training import Profile, simulate_iteration

    p = Profile.from_layers("toy", [(f"layer{k}", 10**6, 1e-3 * (k + 1))
                                    for k in range(layers)])
    return p, simulate_iteration(p, lambda size: 4e-3, policy="buckets", bucket_size=25 * 2**20)


def test_train_sim_iteration_plot_is_wrapped_scaled_and_has_a_legend(monkeypatch, tmp_path):
    import topocoll.plotting as plotting
    from topocoll.studies.training import plot_iteration

    profile, result = _iteration()
    figures = _capture(monkeypatch, plotting)
    title = ("resnet50 on optcirculant:16 bfb, 16 nodes: resnet50, buckets of 25MiB: iteration "
             "20.33ms = compute 12.58ms + exposed allreduce 7.744ms (4 allreduces, 15.57ms "
             "busy)")
    plot_iteration(result, tmp_path / "p.png", profile=profile, title=title)
    (fig,) = figures
    (ax,) = _main_axes(fig)
    assert ax.get_xlabel() == "time (ms)"
    assert ax.get_xlim()[1] == pytest.approx(result.iteration_time * 1e3 * 1.02)
    assert "\n" in ax.title.get_text() and _inside_figure(fig, ax.title)
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any(t.startswith("compute") for t in legend)
    assert any(t.startswith("allreduce") for t in legend)
    assert _inside_figure(fig, ax.get_legend())


def test_find_frontier_plot_has_units_and_a_legend(monkeypatch, tmp_path):
    import topocoll.finder.plot as finder_plot
    from topocoll.finder import find

    figures = _capture(monkeypatch, finder_plot)
    finder_plot.plot_frontier(find(24, 4, cache=False, evaluate=False), tmp_path / "f.png")
    (fig,) = figures
    (ax,) = fig.axes
    assert "units of M/B" in ax.get_ylabel() and "steps" in ax.get_xlabel()
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any("frontier" in t for t in legend) and any("lower bound" in t for t in legend)
    assert "predicted" in ax.get_legend().get_title().get_text()   # what the point labels say
    assert _inside_figure(fig, ax.title) and _inside_figure(fig, ax.get_legend())


def test_gossip_consensus_plot_labels_its_log_axis(monkeypatch, tmp_path):
    import topocoll.plotting as plotting
    from topocoll.gossip import plot_consensus
    from topocoll.gossip.registry import gossip_topology

    figures = _capture(monkeypatch, plotting)
    plot_consensus([gossip_topology("ring", 16), gossip_topology("exp", 16)],
                   tmp_path / "g.png", 20)
    (fig,) = figures
    (ax,) = fig.axes
    assert ax.get_yscale() == "log" and "log scale" in ax.get_ylabel()
    assert ax.get_xlabel().startswith("iteration")
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert len([t for t in legend if "n=16" in t]) == 2
    assert _inside_figure(fig, ax.title)
