"""Where the time goes: a link-model timing drawn as a Gantt chart of the links.

One row per directed link that carries data, one bar per transfer from its start to its end,
colored by step (or shard); the transfers of the critical path
(:meth:`~topocoll.schedule.linkmodel.LinkModelResult.critical_path`) are outlined in black.
A narrow panel beside it shows each row's utilization (busy time / finish time).

Large networks: with more than ``max_rows`` (64) used links, the links are sorted by
``(src, dst)`` and cut into ``max_rows`` consecutive groups of nearly equal size (so a group
holds the out-links of a few neighbouring source nodes); each group is one row of a heat map
whose color is the fraction of the group's links busy in each of 400 time bins, and the
critical path is drawn as black segments on its groups' rows. The figure stays readable and
draws in about a second whatever the number of transfers.

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
from ..plotting import busy_fraction, busy_heatmap, check_plot_target, gantt, new_figure, \
    save_figure
from ..units import format_time

__all__ = ["plot_timeline", "link_timeline", "timeline_rows", "MAX_ROWS"]

#: above this many used links, links are grouped into this many heat-map rows
MAX_ROWS = 64
_BINS = 400


def link_timeline(result):
    """Per transfer, its link's busy interval: ``result.intervals()`` (fields ``link, start,
    end, step, shard, transfer``, sorted by link and start)."""
    return result.intervals()


def timeline_rows(result, max_rows=MAX_ROWS):
    """How the used links become rows: ``(row_of_link, labels, capacity)``.

    ``row_of_link`` maps every topology link to its row (-1: unused), ``labels`` names the rows
    and ``capacity`` says how many links each row holds. Up to ``max_rows`` used links get a row
    each (``"src->dst"``, in ``(src, dst)`` order); more are cut into ``max_rows`` consecutive
    groups (labelled by their source nodes, ``"from 4-7"``).

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
    """
    if max_rows < 1:
        raise InputTypeError(f"max_rows must be at least 1, not {max_rows}")
    topo = result.schedule.topology
    used = np.flatnonzero(np.bincount(result.link, minlength=topo.num_links) > 0)
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
        a, b = int(topo.src[used[g[0]]]), int(topo.src[used[g[-1]]])
        labels.append(f"from {a}" if a == b else f"from {a}-{b}")
    return row_of_link, labels, np.array([g.size for g in groups], dtype=np.int64)


def plot_timeline(results, path, *, color_by="step", max_rows=MAX_ROWS, titles=None):
    """Draw link-model timings as Gantt charts of the links and write them to ``path``.

    Parameters
    ----------
    results : LinkModelResult or list of them
        One panel each, stacked on one time axis (several tenants of :func:`simulate_many`).
    path : str or path
        The file; its suffix picks the format (.png, .svg, .pdf). Written through
        :func:`topocoll.fileio.open_output` (atomic replacement, FIFOs and devices).
    color_by : {"step", "shard"}
        What the bars' colors show.
    max_rows : int
        Above this many used links a panel becomes a heat map of link groups (module
        docstring).
    titles : list of str, optional
        One per panel (default: collective, algorithm and topology).

    Returns
    -------
    path
    """
    from .linkmodel import LinkModelResult

    if isinstance(results, LinkModelResult):
        results = [results]
    results = list(results)
    if not results:
        raise InputTypeError("plot_timeline needs at least one link-model result")
    if color_by not in ("step", "shard"):
        raise UnsupportedError(f"color_by must be 'step' or 'shard', not {color_by!r}")
    check_plot_target(path)
    shown = os.fspath(path)
    fmt = os.path.splitext(shown)[1].lstrip(".").lower() or "png"
    layouts = [timeline_rows(r, max_rows) for r in results]
    heights = [max(1.6, 0.16 * max(len(lab), 1) + 1.0) for _, lab, _ in layouts]
    fig = new_figure((10, min(sum(heights), 40.0)))
    grid = fig.add_gridspec(len(results), 2, width_ratios=[6, 1], height_ratios=heights)
    finish = max((r.time for r in results), default=0.0)
    for k, (r, (row_of_link, labels, capacity)) in enumerate(zip(results, layouts)):
        ax = fig.add_subplot(grid[k, 0])
        side = fig.add_subplot(grid[k, 1], sharey=ax)
        title = titles[k] if titles is not None else _title(r)
        _panel(ax, side, r, row_of_link, labels, capacity, color_by, finish, title)
    with open_output(path, compress=False) as fh:
        save_figure(fig, fh, format=fmt, name=shown)
    return path


def _title(result):
    s = result.schedule
    return f"{s.collective.name} {s.algorithm} on {s.topology.name}"


def _panel(ax, side, result, row_of_link, labels, capacity, color_by, finish, title):
    t = result.schedule.transfers
    row = row_of_link[result.link]
    path = result.critical_path()
    on_path = np.zeros(result.num_transfers, dtype=bool)
    on_path[path] = True
    rows = len(labels)
    grouped = bool(np.any(capacity > 1))
    if grouped:
        edges = np.linspace(0.0, finish if finish > 0 else 1.0, _BINS + 1)
        busy_heatmap(ax, busy_fraction(row, result.start, result.end, rows, edges, capacity),
                     edges)
        if path.size:
            ax.hlines(row[path], result.start[path], result.end[path], colors="black",
                      linewidth=2.0)
        what = f"{int(capacity.sum())} links in {rows} groups; color: fraction busy"
    else:
        gantt(ax, row, result.start, result.end, t[color_by], outlined=on_path)
        ax.set_xlim(0.0, finish * 1.01 if finish > 0 else 1.0)
        what = f"color: {color_by}; outlined: critical path"
    ax.set_yticks(np.arange(rows))
    ax.set_yticklabels(labels, fontsize=6 if rows > 24 else 8)
    ax.set_xlabel("time (s)")
    ax.set_title(f"{title}: finish {format_time(result.time)}, critical path {path.size} "
                 f"transfers ({what})", fontsize=8)
    # utilization per row: busy seconds over finish time and the row's links
    busy = np.bincount(row, weights=result.end - result.start, minlength=rows)
    util = busy / (capacity * result.time) if result.time > 0 else np.zeros(rows)
    side.barh(np.arange(rows), util, color="tab:gray")
    side.set_xlim(0.0, 1.0)
    side.set_xlabel("utilization", fontsize=8)
    used = result.link_busy > 0
    mean = float(result.link_utilization[used].mean()) if used.any() else 0.0
    side.set_title(f"mean {mean:.0%}", fontsize=8)
    side.tick_params(labelleft=False)
    ax.set_ylim(rows - 0.5, -0.5)
