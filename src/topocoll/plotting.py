"""matplotlib helpers shared by every job that draws (compare, find, gossip).

matplotlib is an optional dependency (``pip install 'topocoll[plot]'``) and is imported only
inside these functions, with the Agg canvas: no display is needed and the global backend is
left alone.
"""

import os

from .errors import PlotUnavailableError, UnsupportedError

__all__ = ["require_matplotlib", "check_plot_target", "new_axes", "save_figure"]


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


def save_figure(fig, path, *, dpi=100):
    """Lay out ``fig`` and write it to ``path`` (the suffix picks the format: .png, .svg, .pdf);
    a format matplotlib cannot write raises ``UnsupportedError`` naming the file."""
    fig.tight_layout()
    try:
        fig.savefig(path, dpi=dpi)
    except ValueError as exc:
        raise UnsupportedError(f"cannot write the plot {os.fspath(path)!r}: "
                               f"{str(exc).splitlines()[0]}") from None
    return path
