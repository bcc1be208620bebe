"""``topocoll sweep``: the finder over a grid of sizes and degrees, on local processes or a
Dask cluster."""

import csv
import io
import os

import click
from rich.table import Table

from .. import defaults, units
from ..finder.build import ALGORITHMS as _FINDER_ALGORITHMS
from ..units import format_time
from .common import (EXIT_INVALID, Fail, check_output_folder, cluster_bandwidth_options,
                     duration_callback, err_console, one_bandwidth, out_console, print_json,
                     parse_range, progress_bar, batch_options, unit_callback)

__all__ = ["sweep", "parse_range"]

#: The files ``-o DIR`` writes (the plots need matplotlib).
FILES = ("atlas.json", "atlas.csv", "ratio.png", "families.png")


def _ranges(ctx, param, value):
    return None if value is None else parse_range(value, f"--{param.name}")


@click.command()
@click.option("-n", "--nodes", required=True, callback=_ranges, metavar="RANGE",
              help="Cluster sizes N: 16..256, 16..1024:16 or 16,32,64.")
@click.option("-d", "--degree", required=True, callback=_ranges, metavar="RANGE",
              help="Port counts d: 2..8 or 2,4.")
@click.option("--size", default="1MiB", show_default=True,
              callback=unit_callback(units.parse_size, "--size"), help="Allreduce buffer size M.")
@click.option("--alpha", default=units.format_time(defaults.ALPHA), show_default=True,
              callback=unit_callback(units.parse_time, "--alpha"), help="Latency of every link.")
@cluster_bandwidth_options("as find")
@click.option("--no-evaluate", is_flag=True, help="Predictions only: build and verify nothing.")
@click.option("-a", "--algorithm", "algorithms", multiple=True,
              type=click.Choice(list(_FINDER_ALGORITHMS)),
              help="Schedule algorithm for the leaves (repeatable) [default: bfb].")
@click.option("--no-cache", is_flag=True, help="Neither read nor write the results cache "
              "(nothing resumes).")
@batch_options("Local processes [default: one per core; 1: this process].",
               "Run on the Dask cluster whose scheduler is at ADDRESS (tcp://HOST:8786) "
                   "instead of local processes.")
@click.option("--chunk", type=click.IntRange(1), help="Sizes per task [default: 16, or 4 when "
              "evaluating].")
@click.option("--time-limit", "time_limit", metavar="DURATION",
              callback=duration_callback("--time-limit", allow_zero=False),
              help="Stop after this long; cells not answered by then are failures (the "
                   "answered ones stay cached, so a rerun resumes).")
@click.option("--cell-time-limit", "cell_time_limit", metavar="DURATION",
              callback=duration_callback("--cell-time-limit", allow_zero=False),
              help="Time one cell may take (its frontier, pick and evaluation), e.g. 2min; a "
                   "cell past it fails with that reason and the sweep goes on [default: none].")
@click.option("--bidirectional", is_flag=True,
              help="Only bidirectional topologies in every cell (every link with its "
                   "reverse, as find --bidirectional); cached apart from unrestricted cells.")
@click.option("-o", "--output", "outdir", type=click.Path(file_okay=False),
              help="Write " + ", ".join(FILES) + " into this folder.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON: settings, cells, computed, "
              "reused, failed, pool, files.")
def sweep(*, nodes, degree, size, alpha, link_bandwidth, node_bandwidth, no_evaluate,
          algorithms, no_cache, workers, scheduler, chunk, time_limit, cell_time_limit,
          bidirectional, outdir, as_json):
    """The finder for every N and d of a grid: pick, bound ratio and runner-up per cell.

    For each cell (N, d): the Pareto frontier, the pick (the fastest predicted candidate) with
    its allreduce built, verified and evaluated (unless --no-evaluate), its steps, T_L and
    T_B, the ratio to the two-phase bound and the runner-up. Cells run in chunks on local
    processes, or on a Dask cluster with --scheduler; every answered cell goes into the
    results cache as it ends, so a killed sweep resumes where it stopped. A cell that fails is
    kept with its reason and the rest go on; the exit status is 1 if any failed.

    \b
    topocoll sweep --nodes 16..256 --degree 2..6 --no-evaluate -o atlas/
    topocoll sweep --nodes 16..1024 --degree 2..8 --scheduler tcp://head:8786 -o atlas/
    """
    from ..finder.sweep import sweep as run_sweep

    one_bandwidth(link_bandwidth, node_bandwidth)
    check_output_folder(outdir, FILES, command="sweep")
    update, bar = progress_bar("cells", remaining=True)   # the stage says how many failed
    with bar:
        result = run_sweep(nodes, degree, size, alpha=alpha, node_bandwidth=node_bandwidth,
                           link_bandwidth=link_bandwidth, evaluate=not no_evaluate,
                           algorithms=algorithms or ("bfb",), cache=not no_cache,
                           workers=workers, scheduler=scheduler, chunk=chunk,
                           time_limit=time_limit,
                           cell_time_limit=cell_time_limit, progress=update,
                           bidirectional=bidirectional)
    files = _write(result, outdir) if outdir is not None else []
    if as_json:
        print_json({**result.to_dict(), "files": files})
    else:
        _print(result, files)
    if result.failed:
        raise Fail(f"{result.failed} of {len(result.cells)} cells failed (their reasons are in "
                   "the atlas)", EXIT_INVALID)


def _write(result, outdir):
    """The atlas as JSON and CSV, and the two maps where matplotlib is there."""
    from ..errors import PlotUnavailableError
    from ..finder.plot import plot_sweep_families, plot_sweep_ratio
    from ..finder.sweep import CSV_COLUMNS
    from ..fileio import open_output, output_set

    def write_text(path, text):
        with open_output(path, compress=False) as fh:
            fh.write(text.encode())

    os.makedirs(outdir, exist_ok=True)
    written = []
    text = io.StringIO()
    rows = csv.writer(text, lineterminator="\n")
    rows.writerow(CSV_COLUMNS)
    rows.writerows(result.csv_rows())
    # all or none: a full disk at a map must not leave a new atlas beside the old maps
    with output_set():
        write_text(os.path.join(outdir, "atlas.json"), result.atlas())
        write_text(os.path.join(outdir, "atlas.csv"), text.getvalue())
        written += [os.path.join(outdir, f) for f in FILES[:2]]
        try:
            for name, plot in (("ratio.png", plot_sweep_ratio),
                               ("families.png", plot_sweep_families)):
                if any(c.get("status") != "failed" for c in result.cells):
                    plot(result, os.path.join(outdir, name))
                    written.append(os.path.join(outdir, name))
        except PlotUnavailableError as exc:
            err_console.print(f"note: {exc}; the maps were not drawn", markup=False)
    return written


def _print(result, files):
    answered = [c for c in result.cells if c.get("status") != "failed"]
    table = Table(title=f"{len(result.cells)} cells: {result.computed} computed, "
                        f"{result.reused} from the cache, {result.failed} failed"
                        + (f" ({result.pool})" if result.pool else ""))
    for col, justify in (("d", "right"), ("N", "right"), ("pick", "left"), ("family", "left"),
                         ("steps", "right"), ("time", "right"), ("x bound", "right"),
                         ("runner-up", "left")):
        table.add_column(col, justify=justify)
    shown = answered if len(answered) <= 40 else _extremes(answered)
    for c in shown:
        up = c.get("runner_up") or {}
        table.add_row(str(c["degree"]), str(c["nodes"]), c["pick"], c["family"],
                      str(c["steps"]), format_time(c["time"]), f"{c['ratio']:.3f}",
                      f"{up.get('name', '-')}" + (f" ({up['ratio']:.3f})" if up else ""))
    out_console.print(table)
    for c in result.cells:   # part of the report: stderr keeps the one error line
        if c.get("status") == "failed":
            out_console.print(f"failed: N={c['nodes']} d={c['degree']}: {c['error']}",
                              markup=False)
    for path in files:
        out_console.print(f"wrote {path}", markup=False)
    click.echo(result.message)


def _extremes(cells):
    """The best and worst cell (ratio to the bound) of every degree, for a long sweep."""
    out = []
    for d in sorted({c["degree"] for c in cells}):
        row = [c for c in cells if c["degree"] == d]
        best = min(row, key=lambda c: c["ratio"])
        worst = max(row, key=lambda c: c["ratio"])
        out += [best] if best is worst else [best, worst]
    return out
