"""matplotlib helpers shared by every job that draws (compare, find, gossip, simulate).

matplotlib is an optional dependency (``pip install 'topocoll[plot]'``) and is imported only
inside these functions, with the Agg canvas: no display is needed and the global backend is
left alone.
"""

import os

from .errors import PlotUnavailableError, UnsupportedError
from .fileio import open_output

__all__ = ["require_matplotlib", "check_plot_target", "new_axes", "new_figure", "save_figure",
           "gantt", "busy_fraction", "busy_heatmap", "time_scale", "wrap_title", "add_colorbar"]


def require_matplotlib():
    """Import matplotlib or raise :class:`~topocoll.errors.PlotUnavailableError` saying how to
    install it."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise PlotUnavailableError("plotting needs matplotlib, which is not installed; "
                                   "pip install 'topocoll[plot]'") from None


def check_plot_target(path):
    """Raise now, before any work, if a plot cannot be written to ``path``: matplotlib missing,
    a file suffix it cannot write, or a folder that does not exist."""
    require_matplotlib()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    path = os.fspath(path)
    suffix = os.path.splitext(path)[1].lstrip(".").lower()
    formats = FigureCanvasAgg(Figure()).get_supported_filetypes()
    if suffix and suffix not in formats:
        raise UnsupportedError(f"cannot write the plot {path!r}: unknown format {suffix!r}; use "
                               f".png, .svg or .pdf")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise UnsupportedError(f"cannot write the plot {path!r}: no folder {folder!r}")


def new_axes(figsize):
    """A figure of ``figsize`` inches on the Agg canvas and its one axes: ``(figure, axes)``."""
    require_matplotlib()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize)
    FigureCanvasAgg(fig)
    return fig, fig.add_subplot()


def new_figure(figsize):
    """An empty figure of ``figsize`` inches on the Agg canvas (add axes or a grid to it)."""
    require_matplotlib()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize)
    FigureCanvasAgg(fig)
    return fig


def save_figure(fig, path, *, dpi=100, format=None, name=None):
    """Lay out ``fig`` and write it to ``path`` (the suffix picks the format: .png, .svg, .pdf);
    a format matplotlib cannot write raises ``UnsupportedError`` naming the file.

    ``path`` may be an open binary file; then ``format`` says which format and ``name`` how
    errors name the file."""
    fig.tight_layout()
    if hasattr(path, "write"):
        _savefig(fig, path, dpi, format, name)
        return path
    # through open_output, like every other file: a full disk or a failing device is an error,
    # not "plot written", and a failure keeps the old file
    shown = os.fspath(path)
    if format is None:
        format = os.path.splitext(shown)[1].lstrip(".").lower() or "png"
    with open_output(shown, compress=False) as fh:
        _savefig(fig, fh, dpi, format, shown if name is None else name)
    return path


def _savefig(fig, fh, dpi, format, name):
    try:
        fig.savefig(fh, dpi=dpi, format=format)
    except ValueError as exc:
        raise UnsupportedError(f"cannot write the plot {name!r}: "
                               f"{str(exc).splitlines()[0]}") from None


def gantt(ax, row, start, end, value, *, outlined=None, cmap="viridis", vmin=None, vmax=None):
    """Draw one bar per interval ``[start, end)`` on row ``row`` (rows are 0, 1, ... from the
    top), colored by ``value`` through ``cmap``; intervals where ``outlined`` is true get a
    black outline. All bars form one collection, so a hundred thousand draw quickly.

    Returns the collection (a ``ScalarMappable``: give it to ``colorbar``).

    Examples
    --------
    >>> fig, ax = new_axes((3, 2))
    >>> bars = gantt(ax, [0, 1], [0.0, 1.0], [1.0, 2.5], [1, 2], outlined=[False, True])
    >>> len(bars.get_paths()), bool(ax.get_ylim()[0] > ax.get_ylim()[1])   # row 0 on top
    (2, True)
    """
    import numpy as np
    from matplotlib.collections import PolyCollection

    row = np.asarray(row, dtype=float)
    start = np.asarray(start, dtype=float)
    end = np.asarray(end, dtype=float)
    value = np.asarray(value, dtype=float)
    lo, hi = row - 0.4, row + 0.4
    verts = np.stack([np.stack([start, lo], 1), np.stack([end, lo], 1),
                      np.stack([end, hi], 1), np.stack([start, hi], 1)], 1)
    bars = PolyCollection(verts, array=value, cmap=cmap, linewidths=0.0)
    if value.size:
        bars.set_clim(value.min() if vmin is None else vmin,
                      value.max() if vmax is None else vmax)
    ax.add_collection(bars)
    if outlined is not None:
        keep = np.asarray(outlined, dtype=bool)
        if keep.any():
            ax.add_collection(PolyCollection(verts[keep], facecolors="none",
                                             edgecolors="black", linewidths=1.2))
    top = float(row.max()) if row.size else 0.0
    ax.set_ylim(top + 0.6, -0.6)
    ax.set_xlim(0.0, float(end.max()) * 1.01 if end.size and end.max() > 0 else 1.0)
    return bars


def busy_fraction(row, start, end, num_rows, edges, capacity=None):
    """Per row and time bin, the fraction of the bin its intervals keep busy.

    Parameters
    ----------
    row : int array
        Per interval, its row (0 .. ``num_rows - 1``).
    start, end : float arrays
        The intervals.
    num_rows : int
    edges : float array
        The time bins' edges (increasing).
    capacity : int array, optional
        Per row, how many servers it stands for (links grouped into it): busy time is divided by
        ``capacity * bin width``. Default 1.

    Returns
    -------
    float array of shape (num_rows, len(edges) - 1)

    Examples
    --------
    >>> busy_fraction([0, 0, 1], [0.0, 3.0, 1.0], [1.0, 4.0, 3.0], 2, [0.0, 2.0, 4.0]).tolist()
    [[0.5, 0.5], [0.5, 0.5]]
    """
    import numpy as np

    row = np.asarray(row, dtype=np.int64)
    start = np.asarray(start, dtype=float)
    end = np.asarray(end, dtype=float)
    edges = np.asarray(edges, dtype=float)
    cap = np.ones(num_rows) if capacity is None else np.asarray(capacity, dtype=float)
    out = np.zeros((num_rows, edges.size - 1))
    for r in range(num_rows):
        # busy time before t: sum over starts < t of (t - s) minus over ends < t of (t - e)
        s = np.sort(start[row == r])
        e = np.sort(end[row == r])
        cs, ce = np.r_[0.0, np.cumsum(s)], np.r_[0.0, np.cumsum(e)]
        ks = np.searchsorted(s, edges)
        ke = np.searchsorted(e, edges)
        before = (ks * edges - cs[ks]) - (ke * edges - ce[ke])
        out[r] = np.diff(before) / (np.diff(edges) * cap[r])
    return np.clip(out, 0.0, 1.0)


def busy_heatmap(ax, fraction, edges, *, cmap="viridis"):
    """Draw ``fraction`` (rows x time bins, from :func:`busy_fraction`) as a heat map over the
    time ``edges``, row 0 at the top, 0 to 1; returns the image (for ``colorbar``, whose label
    should say "busy fraction": see :func:`add_colorbar`)."""
    image = ax.imshow(fraction, aspect="auto", interpolation="nearest", cmap=cmap, vmin=0.0,
                      vmax=1.0, extent=(edges[0], edges[-1], fraction.shape[0] - 0.5, -0.5))
    return image


#: the units a time axis may use, largest first: (name, seconds)
_TIME_UNITS = (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9))


def time_scale(seconds):
    """The unit a time axis reaching ``seconds`` should use: ``(factor, unit)``, where
    ``value * factor`` is in ``unit`` and the axis' largest tick is at least 1 in it.

    >>> time_scale(0.0427), time_scale(2.5), time_scale(3e-5), time_scale(0.0)
    ((1000.0, 'ms'), (1.0, 's'), (1000000.0, 'us'), (1.0, 's'))
    """
    seconds = abs(float(seconds))
    if seconds > 0:
        for name, size in _TIME_UNITS:
            if seconds >= size:
                return 1.0 / size, name
        name, size = _TIME_UNITS[-1]
        return 1.0 / size, name
    return 1.0, "s"


def wrap_title(text, width_inches, fontsize):
    """``text`` with its lines wrapped to fit ``width_inches`` at ``fontsize`` points (about
    0.55 em per character), so that a long title is not cut at the figure's edge.

    >>> wrap_title("a " * 40, 2.0, 8).count("\\n") > 0, wrap_title("short", 6.0, 8)
    (True, 'short')
    """
    import textwrap

    chars = max(int(width_inches * 72.0 / (0.55 * fontsize)), 10)
    return "\n".join(textwrap.fill(line, chars, break_on_hyphens=False) if line else line
                     for line in str(text).split("\n"))


def add_colorbar(fig, mappable, label, *, ax=None, cax=None, integer=False):
    """A colour bar for ``mappable`` (beside ``ax``, or in ``cax``) labelled ``label``; with
    ``integer`` its ticks are whole numbers (steps, shards). Returns the colour bar."""
    bar = fig.colorbar(mappable, ax=ax, cax=cax)
    bar.set_label(label, fontsize=8)
    bar.ax.tick_params(labelsize=7)
    if integer:
        from matplotlib.ticker import MaxNLocator

        bar.locator = MaxNLocator(integer=True, nbins=8)
        bar.update_ticks()
    return bar
