"""Where the time goes: a link-model timing drawn as a Gantt chart of the links.

One row per directed link that carries data, one bar per transfer from its start to its end,
colored by step (or shard); the transfers of the critical path
(:meth:`~topocoll.schedule.linkmodel.LinkModelResult.critical_path`) are outlined in black.
A narrow panel beside it shows each row's utilization (busy time / finish time).

Large networks: with more than ``max_rows`` (64) used links, or with ``color_by="busy"``, a
panel is a heat map instead. The links are sorted by busy time (busiest at the top) and, when
there are more than ``HEAT_ROWS`` (40) of them, cut into ``HEAT_ROWS`` consecutive groups of
nearly equal size; each group is one row whose color is the fraction of its links busy in each
of 400 time bins (colour bar "busy fraction"), and the critical path is drawn as black segments
on its groups' rows. The figure stays readable and draws in about a second whatever the number
of transfers.

Every panel says what its colors mean: a colour bar labelled with the step (or shard, or busy
fraction), or a legend where the colors are a few categories (shards); the time axis is in
us, ms or s, whichever fits the finish time, and says which.

matplotlib is imported only when drawing (see :mod:`topocoll.plotting`).

>>> import os, tempfile
>>> from topocoll.topology import topology
>>> from topocoll.synth import generate
>>> from topocoll.schedule.linkmodel import simulate
>>> r = simulate(generate(topology("uniring:4"), "allgather", "ring"), "1MiB")
>>> path = os.path.join(tempfile.mkdtemp(), "timeline.png")
>>> plot_timeline(r, path) == path
True
>>> open(path, "rb").read(8) == b"\\x89PNG\\r\\n\\x1a\\n"
True
"""

import os

import numpy as np

from ..errors import InputTypeError, UnsupportedError
from ..fileio import open_output
from ..plotting import add_colorbar, busy_fraction, busy_heatmap, check_plot_target, gantt, \
    new_figure, save_figure, time_scale, wrap_title
from ..units import format_time
from .linkmodel import LinkModelResult

__all__ = ["plot_timeline", "timeline_rows", "MAX_ROWS", "HEAT_ROWS"]

#: above this many used links a timeline panel becomes a heat map of link groups
MAX_ROWS = 64
#: the most rows a heat map has: more links are grouped, busiest first, into this many rows
HEAT_ROWS = 40
_BINS = 400
#: at most this many shards are told apart by a legend; more get a colour bar
_MAX_LEGEND = 10


def timeline_rows(result, max_rows=MAX_ROWS, *, order="link"):
    """How the used links become rows: ``(row_of_link, labels, capacity)``.

    ``row_of_link`` maps every topology link to its row (-1: unused), ``labels`` names the rows
    and ``capacity`` says how many links each row holds. Up to ``max_rows`` used links get a row
    each (``"src->dst"``); more are cut into ``max_rows`` consecutive groups. ``order`` says how
    the links are sorted first: ``"link"`` by ``(src, dst)`` (groups labelled by their source
    nodes, ``"from 4-7"``) or ``"busy"`` by busy time, busiest first (groups labelled by their
    ranks, ``"#1-4"``).

    Examples
    --------
    >>> from topocoll.topology import topology
    >>> from topocoll.synth import generate
    >>> from topocoll.schedule.linkmodel import simulate
    >>> r = simulate(generate(topology("uniring:3"), "allgather", "ring"), 3.0)
    >>> row, labels, capacity = timeline_rows(r)
    >>> labels, capacity.tolist()
    (['0->1', '1->2', '2->0'], [1, 1, 1])
    >>> timeline_rows(r, max_rows=2)[1:]
    (['from 0-1', 'from 2'], array([2, 1]))
    >>> timeline_rows(r, max_rows=2, order="busy")[1]
    ['#1-2', '#3']
    """
    if max_rows < 1:
        raise InputTypeError(f"max_rows must be at least 1, not {max_rows}")
    if order not in ("link", "busy"):
        raise UnsupportedError(f"order must be 'link' or 'busy', not {order!r}")
    topo = result.schedule.topology
    used = np.flatnonzero(np.bincount(result.link, minlength=topo.num_links) > 0)
    if order == "busy":
        busy = np.asarray(result.link_busy, dtype=float)[used]
        used = used[np.lexsort((used, topo.dst[used], topo.src[used], -busy))]
    else:
        used = used[np.lexsort((used, topo.dst[used], topo.src[used]))]
    row_of_link = np.full(topo.num_links, -1, dtype=np.int64)
    pair = topo.src[used].astype(np.int64) * topo.num_nodes + topo.dst[used]
    parallel = np.unique(pair).size < pair.size
    if used.size <= max_rows:
        row_of_link[used] = np.arange(used.size)
        labels = [f"{topo.src[i]}->{topo.dst[i]}" + (f" #{i}" if parallel else "")
                  for i in used]
        return row_of_link, labels, np.ones(used.size, dtype=np.int64)
    groups = np.array_split(np.arange(used.size), max_rows)
    labels = []
    for r, g in enumerate(groups):
        row_of_link[used[g]] = r
        if order == "busy":
            a, b = int(g[0]) + 1, int(g[-1]) + 1
            labels.append(f"#{a}" if a == b else f"#{a}-{b}")
        else:
            a, b = int(topo.src[used[g[0]]]), int(topo.src[used[g[-1]]])
            labels.append(f"from {a}" if a == b else f"from {a}-{b}")
    return row_of_link, labels, np.array([g.size for g in groups], dtype=np.int64)


def plot_timeline(results, path, *, color_by="step", max_rows=MAX_ROWS, titles=None,
                  heat_rows=HEAT_ROWS):
    """Draw link-model timings as Gantt charts of the links and write them to ``path``.

    Parameters
    ----------
    results : LinkModelResult or list of them
        One panel each, stacked on one time axis (several tenants of :func:`simulate_many`).
    path : str or path
        The file; its suffix picks the format (.png, .svg, .pdf). Written through
        :func:`topocoll.fileio.open_output` (atomic replacement, FIFOs and devices).
    color_by : {"step", "shard", "busy"}
        What the colors show: the bars' step or shard (a colour bar, or a legend for a few
        shards), or ``"busy"``: every panel is a heat map of the fraction of time each link
        (group) is busy.
    max_rows : int
        Above this many used links a panel becomes a heat map of link groups (module
        docstring).
    titles : list of str, optional
        One per panel (default: collective, algorithm and topology).
    heat_rows : int
        The most rows a heat map has (more links are grouped, busiest first).

    Returns
    -------
    path
    """
    if isinstance(results, LinkModelResult):
        results = [results]
    results = list(results)
    if not results:
        raise InputTypeError("plot_timeline needs at least one link-model result")
    if color_by not in ("step", "shard", "busy"):
        raise UnsupportedError(f"color_by must be 'step', 'shard' or 'busy', not {color_by!r}")
    check_plot_target(path)
    shown = os.fspath(path)
    fmt = os.path.splitext(shown)[1].lstrip(".").lower() or "png"
    layouts = []
    for r in results:
        used = int(np.count_nonzero(np.bincount(r.link, minlength=r.link_busy.size)))
        heat = color_by == "busy" or used > max_rows
        layouts.append((heat, timeline_rows(r, heat_rows, order="busy") if heat
                        else timeline_rows(r, max_rows)))
    heights = [max(2.6, 0.16 * max(len(lay[1]), 1) + 1.9) for _, lay in layouts]
    width = 11.0
    fig = new_figure((width, min(sum(heights), 40.0)))
    scale_height = min(sum(heights), 40.0) / sum(heights)
    grid = fig.add_gridspec(len(results), 3, width_ratios=[6, 0.12, 1.1],
                            height_ratios=heights)
    finish = max((r.time for r in results), default=0.0)
    scale, unit = time_scale(finish)
    for k, (r, (heat, layout)) in enumerate(zip(results, layouts)):
        ax = fig.add_subplot(grid[k, 0])
        cax = fig.add_subplot(grid[k, 1])
        side = fig.add_subplot(grid[k, 2], sharey=ax)
        title = titles[k] if titles is not None else _title(r)
        _panel(fig, ax, cax, side, r, layout=layout, heat=heat, color_by=color_by,
               finish=finish, title=title, scale=scale, unit=unit,
               title_inches=width * 6 / 7.22, panel_inches=heights[k] * scale_height)
    with open_output(path, compress=False) as fh:
        save_figure(fig, fh, format=fmt, name=shown)
    return path


def _title(result):
    s = result.schedule
    return f"{s.collective.name} {s.algorithm} on {s.topology.name}"


def _panel(fig, ax, cax, side, result, *, layout, heat, color_by, finish, title, scale, unit,
           title_inches, panel_inches):
    row_of_link, labels, capacity = layout
    row = row_of_link[result.link]
    start, end = result.start * scale, result.end * scale
    path = result.critical_path()
    rows = len(labels)
    if heat:
        handles, what = _heat_panel(fig, ax, cax, result, row, start, end, path, capacity,
                                    finish=finish, scale=scale)
    else:
        handles, what = _gantt_panel(fig, ax, cax, result, row, start, end, path, rows,
                                     color_by=color_by, finish=finish, scale=scale)
    ax.set_yticks(np.arange(rows))
    ax.set_yticklabels(labels, fontsize=6 if rows > 24 else 8)
    ax.set_xlabel(f"time ({unit})")
    ax.set_title(wrap_title(f"{title}\nfinish {format_time(result.time)}, critical path "
                            f"{path.size} transfers; {what}", title_inches, 9), fontsize=9)
    # below the time axis' label: about 0.45 inch under the axes, whatever their height
    below = 0.5 / max(panel_inches - 1.5, 0.5)
    ax.legend(handles=handles, loc="upper center", bbox_to_anchor=(0.5, -below),
              ncol=len(handles) if len(handles) <= 8 else 6, fontsize=7, frameon=False)
    _utilization(side, result, row, rows, capacity)
    ax.set_ylim(rows - 0.5, -0.5)


def _heat_panel(fig, ax, cax, result, row, start, end, path, capacity, *, finish, scale):
    """A heat map of the rows' busy fraction with the critical path drawn over it; returns the
    legend's handles and what the title says about the rows."""
    from matplotlib.lines import Line2D

    rows = capacity.size
    edges = np.linspace(0.0, finish if finish > 0 else 1.0, _BINS + 1)
    image = busy_heatmap(ax, busy_fraction(row, result.start, result.end, rows, edges,
                                           capacity), edges * scale)
    add_colorbar(fig, image, "busy fraction (0 idle, 1 always busy)", cax=cax)
    if path.size:
        ax.hlines(row[path], start[path], end[path], colors="red", linewidth=2.0)
    handles = [Line2D([], [], color="red", linewidth=2.0, label="critical path")]
    grouped = bool(np.any(capacity > 1))
    n = int(capacity.sum())
    what = (f"{n} links, busiest first, in {rows} rows of up to {int(capacity.max())}"
            if grouped else f"{n} links, busiest first")
    ax.set_ylabel("links ranked by busy time" if grouped else "link (src->dst)",
                  fontsize=8)
    return handles, what


def _gantt_panel(fig, ax, cax, result, row, start, end, path, rows, *, color_by, finish,
                 scale):
    """One bar per transfer colored by ``color_by``, the critical path outlined; returns the
    legend's handles and what the title says about the rows."""
    from matplotlib import colormaps
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    on_path = np.zeros(result.num_transfers, dtype=bool)
    on_path[path] = True
    handles = []
    value = np.asarray(result.schedule.transfers[color_by], dtype=np.int64)
    distinct = np.unique(value)
    if color_by == "shard" and distinct.size <= _MAX_LEGEND:
        # a few categories: one colour each, told apart by a legend
        index = np.searchsorted(distinct, value)
        palette = colormaps["tab10"].colors[:distinct.size]
        gantt(ax, row, start, end, index, outlined=on_path, cmap=ListedColormap(palette),
              vmin=-0.5, vmax=distinct.size - 0.5)
        handles += [Patch(facecolor=c, label=f"shard {v}") for c, v in zip(palette,
                                                                            distinct)]
        cax.set_visible(False)
    else:
        lo, hi = (int(distinct.min()), int(distinct.max())) if distinct.size else (0, 0)
        cmap = colormaps["viridis"].resampled(max(hi - lo + 1, 2))
        bars = gantt(ax, row, start, end, value, outlined=on_path, cmap=cmap,
                     vmin=lo - 0.5, vmax=hi + 0.5)
        add_colorbar(fig, bars, color_by, cax=cax, integer=True)
    handles.append(Patch(facecolor="none", edgecolor="black", linewidth=1.2,
                         label="critical path (outlined)"))
    ax.set_xlim(0.0, finish * scale * 1.01 if finish > 0 else 1.0)
    ax.set_ylabel("link (src->dst)", fontsize=8)
    return handles, f"{rows} links"


def _utilization(side, result, row, rows, capacity):
    """The side panel: each row's busy seconds over the finish time and its links."""
    busy = np.bincount(row, weights=result.end - result.start, minlength=rows)
    util = busy / (capacity * result.time) if result.time > 0 else np.zeros(rows)
    side.barh(np.arange(rows), util, color="tab:gray")
    side.set_xlim(0.0, 1.0)
    side.set_xlabel("utilization\n(busy / finish)", fontsize=8)
    used = result.link_busy > 0
    mean = float(result.link_utilization[used].mean()) if used.any() else 0.0
    side.set_title(f"mean {mean:.0%}", fontsize=8)
    side.tick_params(labelleft=False)
