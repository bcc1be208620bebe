"""``topocoll compare`` (schedules side by side) and ``topocoll survey`` (its preset)."""

import sys

import click
from rich.markup import escape
from rich.table import Table

from .. import defaults, units
from ..studies.compare import compare as _compare, describe_settings, fastest, plot_comparison
from ..studies.survey import survey as _survey
from ..synth import ALGORITHMS
from ..units import format_size, format_time
from .common import (cluster_bandwidth_options, EXIT_INVALID, check_plot, one_bandwidth,
                     out_console, print_json, progress_bar, batch_options,
                     unit_callback, gamma_option)

__all__ = ["compare", "survey"]


@click.command()
@click.argument("entries", metavar="TOPO-OR-SCHEDULE...", nargs=-1, required=True)
@click.option("-c", "--collective", default="allreduce", show_default=True,
              help="Collective generated for topology entries (schedule files keep their own).")
@click.option("-a", "--algorithm", "algorithms", multiple=True, default=("bfb",),
              show_default=True, type=click.Choice(sorted(ALGORITHMS)),
              help="Generator run on every topology entry (repeatable: one row each).")
@click.option("--size", "sizes", multiple=True, default=tuple(map(units.format_size, defaults.COMPARE_SIZES)),
              show_default=True, callback=unit_callback(units.parse_size, "--size"),
              help="Buffer size M (repeatable).")
@click.option("--alpha", default=units.format_time(defaults.ALPHA), show_default=True,
              callback=unit_callback(units.parse_time, "--alpha"), help="Latency of every link.")
@cluster_bandwidth_options("as evaluate")
@gamma_option
@click.option("--plot", "plot", type=click.Path(dir_okay=False),
              help="Also draw time against size (log-log) into this file, e.g. compare.png "
                   "(needs matplotlib: pip install 'topocoll[plot]').")
@batch_options("Local processes that make, verify and price the rows [default: 1, this "
                   "process].",
               "Make, verify and price the rows on the Dask cluster whose scheduler is at "
                   "ADDRESS (tcp://HOST:8786).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def compare(*, entries, collective, algorithms, sizes, alpha, node_bandwidth, link_bandwidth, plot,
            workers, scheduler, gamma, as_json):
    """Verify and price schedules side by side on the same latency and bandwidth.

    Each TOPO-OR-SCHEDULE is a schedule file (.json with "format": "topocoll.schedule") or a
    topology spec or file, for which a schedule is made with every --algorithm. Prints T_L, T_B,
    time and time over the lower bound (steps bound x alpha + T_B bound) at each --size, and the
    fastest entry at each size. --gamma prices reductions as evaluate does (T_gamma column;
    time = T_L + T_B + T_gamma; the bound leaves it out). Exits 1 if any schedule fails
    verification (it is listed, not priced), 2 on bad input.
    """
    one_bandwidth(link_bandwidth, node_bandwidth)
    check_plot(plot)  # fail before the work, not after it
    update, bar = progress_bar("compare")
    with bar:
        result = _compare(entries, sizes=sizes, collective=collective,
                          algorithms=algorithms, alpha=alpha, node_bandwidth=node_bandwidth,
                          link_bandwidth=link_bandwidth, progress=update, workers=workers,
                          scheduler=scheduler, gamma=gamma)
    settings = describe_settings(alpha, node_bandwidth, link_bandwidth, gamma=gamma)
    if plot:
        plot_comparison(result.rows, plot)
    if as_json:
        print_json({**result.to_dict(), "plot": plot})
    else:
        _print_comparison(result.rows, sizes, settings, plot, bool(gamma))
    if not result.success:
        sys.exit(EXIT_INVALID)


def _print_comparison(rows, sizes, settings, plot, reducing=False):
    colls = sorted({r.collective for r in rows})
    what = colls[0] if len(colls) == 1 else "mixed collectives"
    table = Table(title=f"{what}, {settings} on every entry; x bound = time / (steps bound x "
                        "alpha + T_B bound); * fastest at that size")
    for col in ("entry", "N", "d", "verified", "steps", "T_L"):
        table.add_column(col, justify="left" if col == "entry" else "right")
    if len(colls) > 1:
        table.add_column("collective")
    for m in sizes:
        label = format_size(m)
        table.add_column(f"T_B@{label}", justify="right")
        if reducing:
            table.add_column(f"T_gamma@{label}", justify="right")
        table.add_column(f"time@{label}", justify="right")
        table.add_column("x bound", justify="right")
    for r in rows:
        verified = {True: "yes", False: "NO"}.get(r.verified, "-")
        cells = [escape(r.name), _dash(r.nodes), _dash(r.degree), verified,
                 "-" if r.steps is None else str(r.steps),
                 "-" if r.T_L is None else format_time(r.T_L)]
        if len(colls) > 1:
            cells.append(r.collective)
        if r.priced:
            for c in r.sizes:
                ratio = "-" if c.ratio is None else f"{c.ratio:.2f}"
                cells += [format_time(c.T_B), *((format_time(c.T_gamma),) if reducing else ()),
                          format_time(c.time) + (" *" if c.fastest else ""), ratio]
        else:
            cells += [r.verdict] + ["-"] * ((3 + reducing) * len(sizes) - 1)
        table.add_row(*cells)
    out_console.print(table)
    for i, m in enumerate(sizes):
        best = fastest(rows, i)
        if best is None:
            continue
        c = best.sizes[i]
        others = sorted((r for r in rows if r.priced and r is not best),
                        key=lambda r: r.sizes[i].time)
        line = (f"fastest at {format_size(m)}: {best.name}, {format_time(c.time)}"
                + ("" if c.ratio is None else f" ({c.ratio:.2f}x its lower bound)"))
        if others:
            nxt = others[0]
            slower = nxt.sizes[i].time / c.time
            pct = 100 * (slower - 1)
            by = (f"{pct:.2g}% slower" if pct < 10 else f"{slower:.2f}x slower") \
                if pct > 1e-7 else "as fast"
            line += f"; next {nxt.name}, {by}"
        out_console.print(line, markup=False)
    for r in rows:
        if not r.priced:
            out_console.print(f"{r.verdict}: {r.name}: {r.reason}", markup=False)
    if plot:
        out_console.print(f"plot written to {plot}", markup=False)


@click.command()
@click.option("-n", "--nodes", default=64, show_default=True, type=click.IntRange(4),
              help="Cluster size N.")
@click.option("--topology", "specs", multiple=True, help="Topology spec (repeatable; default: "
              "tori, hypercube, circulant, generalized Kautz and ring of N nodes).")
@click.option("--size", "sizes", multiple=True,
              default=tuple(map(units.format_size, defaults.SURVEY_SIZES)), show_default=True,
              callback=unit_callback(units.parse_size, "--size"),
              help="Buffer size M (repeatable).")
@click.option("--alpha", default=units.format_time(defaults.ALPHA), show_default=True,
              callback=unit_callback(units.parse_time, "--alpha"), help="Per-step latency.")
@cluster_bandwidth_options("as evaluate")
@gamma_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def survey(nodes, specs, sizes, alpha, link_bandwidth, node_bandwidth, gamma, as_json):
    """BFB allreduce on several topologies of N nodes next to bounds and the ring allreduce.

    --gamma prices reductions as evaluate does (T_gamma column; time = T_L + T_B + T_gamma;
    the bounds leave it out).
    """
    one_bandwidth(link_bandwidth, node_bandwidth)
    update, bar = progress_bar("survey")
    with bar:
        result = _survey(nodes, specs=specs or None, sizes=sizes, alpha=alpha,
                         node_bandwidth=node_bandwidth, link_bandwidth=link_bandwidth,
                         progress=update, gamma=gamma)
    rows = result.rows
    if as_json:
        print_json(result.to_dict())
        if any(r.verdict == "invalid" for r in rows):
            sys.exit(EXIT_INVALID)
        return
    table = Table(title=f"allreduce on {nodes} nodes, "
                        f"{describe_settings(alpha, node_bandwidth, link_bandwidth, gamma=gamma)} "
                        "(any d: what no schedule on any topology of degree d beats, Moore-depth steps + "
                        "the agnostic bandwidth bound; compare's 'x bound' is over the entry's "
                        "own topology's bound)")
    for col in ("topology", "algo", "d", "verified", "steps", "T_L"):
        table.add_column(col, justify="right")
    for m in sizes:
        label = format_size(m)
        table.add_column(f"T_B@{label}", justify="right")
        if gamma:
            table.add_column(f"T_gamma@{label}", justify="right")
        table.add_column(f"time@{label}", justify="right")
        table.add_column(f"any d@{label}", justify="right")
        table.add_column("x any d", justify="right")
    for r in rows:
        cells = [escape(r.topology or r.name), r.algorithm or "-", _dash(r.degree),
                 "yes" if r.verified else "NO",
                 "-" if r.steps is None else str(r.steps),
                 "-" if r.T_L is None else format_time(r.T_L)]
        for c in r.sizes:
            cells += [format_time(c.T_B), *((format_time(c.T_gamma),) if gamma else ()),
                      format_time(c.time), format_time(c.degree_lower_bound),
                      f"{c.degree_ratio:.2f}"]
        if not r.priced:
            cells += [r.verdict] + ["-"] * ((4 + bool(gamma)) * len(sizes) - 1)
        table.add_row(*cells)
    out_console.print(table)
    ring = rows[-1]
    for i, m in enumerate(sizes):
        best = fastest(rows, i)
        if best is None or not ring.priced:
            continue
        speedup = ring.sizes[i].time / best.sizes[i].time
        out_console.print(f"{format_size(m)}: fastest is {best.topology} ({best.algorithm}), "
                   f"{speedup:.2f}x the classic ring allreduce", markup=False)
    for r in rows:
        if r.verdict == "invalid":
            out_console.print(f"invalid: {r.name}: {r.reason}", markup=False)
    if any(r.verdict == "invalid" for r in rows):
        sys.exit(EXIT_INVALID)


def _dash(value):
    return "-" if value is None else str(value)
