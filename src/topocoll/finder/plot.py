"""Draw a finder result: the Pareto frontier as steps against T_B, the choice marked.

matplotlib is imported only when drawing (see :mod:`topocoll.plotting`).
"""

from ..errors import UnsupportedError
from ..plotting import new_axes, save_figure, wrap_title
from ..units import format_time

__all__ = ["plot_frontier"]


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
