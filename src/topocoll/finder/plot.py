"""Draw a finder result: the Pareto frontier as steps against T_B, the choice marked.

matplotlib is imported only when drawing (see :mod:`topocoll.plotting`).
"""

from ..errors import UnsupportedError
from ..plotting import new_axes, save_figure, wrap_title
from ..units import format_time

__all__ = ["plot_frontier", "plot_sweep_ratio", "plot_sweep_families"]


def plot_frontier(result, path, *, title=None):
    """Write the frontier of a :class:`~topocoll.finder.core.FindResult` to ``path`` (.png,
    .svg or .pdf): one point per candidate (steps per phase against T_B in units of M/B), the
    chosen one starred, the lower bound (Moore depth, (N-1)/N) as a cross, and each point's
    predicted workload time in its label."""
    from ..topology.metrics import moore_depth

    if not result.frontier:
        raise UnsupportedError("nothing to plot: the frontier is empty")
    fig, ax = new_axes((9.5, 4.8))
    from matplotlib.ticker import MaxNLocator

    steps = [c.steps for c in result.frontier]
    t_b = [c.t_b for c in result.frontier]
    ax.plot(steps, t_b, "-o", color="tab:blue", markersize=5, linewidth=1.2,
            label="Pareto frontier (predicted)")
    middle = (min(steps) + max(steps)) / 2
    for i, (c, t) in enumerate(zip(result.frontier, result.times)):
        right = c.steps > middle                 # labels of the right half point leftwards
        below = i % 2 == 1                       # neighbours alternate above and below
        ax.annotate(f"{c.name}\n{format_time(t)}", (c.steps, c.t_b), fontsize=6.5,
                    xytext=(-4 if right else 4, -6 if below else 4),
                    textcoords="offset points", ha="right" if right else "left",
                    va="top" if below else "bottom")
    best = result.best
    if best is not None:
        ax.plot([best.steps], [best.t_b], "*", color="tab:red", markersize=16,
                label=f"choice: {best.name}")
        if result.evaluation is not None:
            ax.plot([result.evaluation["steps"] / 2], [result.evaluation["T_B_per_phase"]], "x",
                    color="tab:red", markersize=8, label="choice, evaluated")
    n, d = result.nodes, result.degree
    ax.plot([moore_depth(n, d)], [(n - 1) / n], "+", color="black", markersize=12,
            label="lower bound\n(Moore depth, (N-1)/N)")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.margins(x=0.2, y=0.12)
    ax.set_xlabel("steps per phase (count; an allreduce has two phases)")
    ax.set_ylabel("bandwidth term $T_B$ per phase\n(units of M/B: M bytes, B bytes/s per node)")
    ax.grid(True, linewidth=0.5, alpha=0.5)
    ax.set_title(wrap_title(title or (f"Pareto frontier: {n} nodes, degree {d}, alpha "
                                      f"{format_time(result.alpha)}, "
                                      f"{result.bandwidth}; "
                                      f"{result.workload.description}"), 6.5, 9), fontsize=9)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False,
              title="point labels: topology,\npredicted workload time", title_fontsize=7)
    return save_figure(fig, path, dpi=110)


def _grid(result, value):
    """``(sizes, degrees, matrix)`` of ``value(cell)`` over a sweep (NaN where none)."""
    import numpy as np

    sizes = sorted({c["nodes"] for c in result.cells})
    degrees = sorted({c["degree"] for c in result.cells})
    where = {(c["degree"], c["nodes"]): c for c in result.cells}
    grid = np.full((len(degrees), len(sizes)), np.nan, dtype=object)
    for i, d in enumerate(degrees):
        for j, n in enumerate(sizes):
            cell = where.get((d, n))
            if cell is not None and cell.get("status") != "failed":
                grid[i, j] = value(cell)
    return sizes, degrees, grid


def _axes_of(ax, sizes, degrees):
    ax.set_yticks(range(len(degrees)), [str(d) for d in degrees], fontsize=7)
    step = max(1, len(sizes) // 12)
    ticks = list(range(0, len(sizes), step))
    ax.set_xticks(ticks, [str(sizes[j]) for j in ticks], fontsize=7)
    ax.set_xlabel("nodes N")
    ax.set_ylabel("degree d")


def plot_sweep_ratio(result, path, *, title=None):
    """Heat map of a :class:`~topocoll.finder.sweep.SweepResult`: each cell's time over the
    two-phase bound (evaluated where built, else predicted) over (N, d); failed cells blank."""
    import numpy as np

    from ..plotting import add_colorbar

    sizes, degrees, grid = _grid(result, lambda c: c["ratio"])
    if not sizes:
        raise UnsupportedError("nothing to plot: the sweep has no cells")
    values = grid.astype(float)
    fig, ax = new_axes((max(6.0, min(16.0, 0.03 * len(sizes) + 4)), 1.2 + 0.45 * len(degrees)))
    image = ax.imshow(np.ma.masked_invalid(values), aspect="auto", cmap="viridis_r",
                      interpolation="nearest", origin="lower")
    _axes_of(ax, sizes, degrees)
    add_colorbar(fig, image, "time / two-phase bound", ax=ax)
    ax.set_title(wrap_title(title or "allreduce time over the two-phase bound", 8, 9),
                 fontsize=9)
    return save_figure(fig, path)


def plot_sweep_families(result, path, *, title=None, most=8):
    """Map of the winning family per cell of a sweep (the ``most`` commonest named, the rest
    "other"); failed cells blank."""
    import numpy as np

    sizes, degrees, grid = _grid(result, lambda c: c["family"])
    if not sizes:
        raise UnsupportedError("nothing to plot: the sweep has no cells")
    counts = {}
    for name in grid.ravel():
        if isinstance(name, str):
            counts[name] = counts.get(name, 0) + 1
    names = sorted(counts, key=lambda k: (-counts[k], k))[:most]
    if len(counts) > most:
        names.append("other")
    index = {name: i for i, name in enumerate(names)}
    codes = np.full(grid.shape, np.nan)
    for (i, j), name in np.ndenumerate(grid):
        if isinstance(name, str):
            codes[i, j] = index.get(name, index.get("other", 0))
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    colours = [f"C{i}" for i in range(len(names))]
    fig, ax = new_axes((max(7.0, min(17.0, 0.03 * len(sizes) + 5)), 1.4 + 0.45 * len(degrees)))
    ax.imshow(np.ma.masked_invalid(codes), aspect="auto", origin="lower",
              cmap=ListedColormap(colours), vmin=-0.5, vmax=len(names) - 0.5,
              interpolation="nearest")
    _axes_of(ax, sizes, degrees)
    ax.legend(handles=[Patch(color=c, label=n) for c, n in zip(colours, names)], fontsize=7,
              loc="center left", bbox_to_anchor=(1.01, 0.5))
    ax.set_title(wrap_title(title or "the winning family per cell", 8, 9), fontsize=9)
    return save_figure(fig, path)
