"""``topocoll find``: the best topology and allreduce schedule for a cluster."""

import contextlib
import os

import click
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from .. import defaults, units
from ..finder import Workload, find as run_find, load_workload, plot_frontier
from ..finder.build import ALGORITHMS as _FINDER_ALGORITHMS
from ..schedule.io import save_schedule
from ..topology import save_topology
from ..units import format_time
from .common import (cluster_bandwidth_options, EXIT_INVALID, check_output_folder,
                     duration_callback, Fail, ProgressLines, err_console, one_bandwidth,
                     out_console, print_json, renamed_option, batch_options,
                     unit_callback)

__all__ = ["find"]


@click.command()
@click.option("-n", "--nodes", required=True, type=int, help="Cluster size N (>= 2).")
@click.option("-d", "--degree", required=True, type=int,
              help="Links (ports) per node d (>= 1); candidates use at most d neighbours.")
@click.option("--alpha", default=units.format_time(defaults.ALPHA), show_default=True,
              callback=unit_callback(units.parse_time, "--alpha"), help="Latency of every link.")
@cluster_bandwidth_options("the cost model's B is then d x this")
@click.option("--size", "sizes", multiple=True, callback=unit_callback(units.parse_size, "--size"),
              help="Allreduce buffer size M (repeatable: one allreduce each) "
                   f"[default: {units.format_size(defaults.SIZE)}].")
@renamed_option("--size-file", "sizes_file", old=("--sizes",),
                type=click.Path(dir_okay=False, allow_dash=True),
              help="Workload file: a JSON list of a model's layer sizes in bytes (bucketed, see "
                   "--bucket-size), {\"sizes\": [[SIZE, WEIGHT], ...]}, or lines SIZE [WEIGHT].")
@click.option("--workload", "workload_model",
              help="A model's gradients as the workload: resnet50, bert-large, gpt2-medium, "
                   "vit-b16, or a profile FILE (JSON or ASTRA-sim DATA; docs/training.md).")
@click.option("--bucket-size", callback=unit_callback(units.parse_size, "--bucket-size"),
              help="With a layer list or --workload: fuse gradients into buckets of this size, one allreduce "
                   "per bucket (PyTorch DDP uses 25MiB) [default: one allreduce per layer].")
@click.option("-o", "--output", "outdir",
              help="Write topology.json, allreduce.json (the verified schedule) and "
                   "frontier.png into this folder (created if missing).")
@click.option("--compress", is_flag=True, help="With -o: write the schedule gzip-compressed, as "
              "allreduce.json.gz (about a seventh of the size; every command reads it).")
@click.option("--no-evaluate", is_flag=True,
              help="Predictions only: do not build, verify and evaluate the choice.")
@click.option("--no-cache", is_flag=True, help="Neither read nor write the results cache.")
@click.option("--optimize", is_flag=True,
              help="Then search for better bases of the best candidates' expansion recipes "
                   "(Cayley digraphs, degree-preserving rewiring) and keep the fastest verified "
                   "schedule (docs/finder.md).")
@renamed_option("--time-limit", "budget", old=("--budget",), metavar="DURATION",
                callback=duration_callback("--time-limit"),
                help="With --optimize: search time, e.g. 300s or 5min (confirming the best "
                   "finds comes on top) [default: 2000 candidates].")
@click.option("--max-evaluations", type=int,
              help="With --optimize: candidate bases to score (deterministic for a --seed).")
@click.option("--seed", type=int, default=0, show_default=True,
              help="With --optimize: random seed.")
@batch_options("With --optimize: search each skeleton as a task on this many local "
                   "processes (1: this process; each gets an equal share of the candidates and "
                   "time) [default: the skeletons take turns here].",
               "With --optimize: search the skeletons on the Dask cluster whose scheduler "
                   "is at ADDRESS (tcp://HOST:8786), as --workers does on local processes.")
@click.option("-a", "--algorithm", "algorithms", multiple=True, type=click.Choice(list(_FINDER_ALGORITHMS)),
              help="Schedule algorithm for the chosen candidate (repeatable: the fastest "
              "verified one is kept; trees: spanning-tree packing) [default: bfb].")
@click.option("--bidirectional", is_flag=True,
              help="Only bidirectional topologies (every link with its reverse: bidirectional "
                   "bases, their degree expansions, powers and products, and unions bidir(G) "
                   "of reverse-symmetric digraphs with their transpose); the choice's topology "
                   "is checked. With --optimize: bidirectional bases only.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def find(*, nodes, degree, alpha, link_bandwidth, node_bandwidth, sizes, sizes_file,
         workload_model, bucket_size, outdir, compress, no_evaluate, no_cache, optimize, budget,
         max_evaluations, seed, workers, scheduler, algorithms, bidirectional, as_json):
    """The best topology and allreduce schedule for N nodes of degree d and a workload.

    Searches base topologies, expansions and generative families, keeps the Pareto frontier of
    (steps, T_B), picks the fastest for the workload, then builds its allreduce, verifies it
    and evaluates it. Prints the frontier, the choice, its predicted and evaluated time and
    the ratio to the two-phase bound 2*(Moore steps*alpha + (N-1)/N*M/B), which no
    reduce-scatter followed by an allgather (every schedule find builds) beats.
    """
    one_bandwidth(link_bandwidth, node_bandwidth)
    _check_find_options(nodes, degree, sizes, sizes_file, workload_model, bucket_size,
                        outdir=outdir, compress=compress, budget=budget,
                        max_evaluations=max_evaluations, optimize=optimize,
                        no_evaluate=no_evaluate, where=(workers, scheduler))
    schedule_name = "allreduce.json" + (".gz" if compress else "")
    workload = _find_workload(workload_model, sizes_file, sizes, bucket_size)
    created, plot_ok = _make_outdir(outdir)
    update, bar = _find_progress()
    try:
        with bar:
            result = run_find(nodes, degree, workload, alpha=alpha, node_bandwidth=node_bandwidth,
                           link_bandwidth=link_bandwidth,
                           evaluate=not no_evaluate or bool(outdir),
                           keep_schedule=bool(outdir), cache=not no_cache, progress=update,
                           optimize=optimize, budget=budget, max_evaluations=max_evaluations,
                           seed=seed, algorithms=algorithms or ("bfb",), workers=workers,
                           scheduler=scheduler, bidirectional=bidirectional)
    except BaseException:
        # Ctrl-C or an error before anything was written: take back the folder made for it
        if created:
            with contextlib.suppress(OSError):
                os.rmdir(outdir)
        raise
    for note in result.warnings:
        click.echo(f"warning: {note}", err=True)
    files = _write_find_files(result, outdir, schedule_name, plot_ok)
    if as_json:
        doc = result.to_dict()
        doc["files"] = files
        print_json(doc)
    else:
        _print_find(result, files)
    if not result.success:
        raise Fail(result.message, EXIT_INVALID)


def _check_find_options(nodes, degree, sizes, sizes_file, workload_model, bucket_size, *,
                        outdir, compress, budget, max_evaluations, optimize, no_evaluate,
                        where=(None, None)):
    """Refuse option values and combinations that ``topocoll find`` cannot run."""
    if nodes < 2:
        raise Fail(f"--nodes must be at least 2, got {nodes}")
    if degree < 1:
        raise Fail(f"--degree must be at least 1, got {degree}")
    if sizes and sizes_file:
        raise Fail("give --size or --sizes, not both")
    if workload_model is not None and not workload_model.strip():
        raise Fail("--workload is empty: give a model name or a profile file")
    if workload_model and (sizes or sizes_file):
        raise Fail("give --workload or --size/--sizes, not both")
    if bucket_size is not None and not (sizes_file or workload_model):
        raise Fail("--bucket-size applies to a layer list given with --sizes or --workload")
    schedule_name = "allreduce.json" + (".gz" if compress else "")
    check_output_folder(outdir, ("topology.json", schedule_name, "frontier.png"),
                        command="find")
    if compress and not outdir:
        raise Fail("--compress applies to the files written with -o")
    if (budget is not None or max_evaluations is not None) and not optimize:
        raise Fail("--time-limit and --max-evaluations apply to --optimize")
    if where != (None, None) and not optimize:
        raise Fail("--workers and --scheduler apply to --optimize")
    if optimize and no_evaluate:
        raise Fail("--optimize builds and verifies schedules; it cannot go with --no-evaluate")
    if max_evaluations is not None and max_evaluations < 0:
        raise Fail(f"--max-evaluations must be at least 0, got {max_evaluations}")


def _find_workload(workload_model, sizes_file, sizes, bucket_size):
    """The :class:`~topocoll.finder.Workload` the options describe."""
    if workload_model:
        from ..studies.resolve import resolve_profile  # the models load only for --workload

        profile = resolve_profile(workload_model)
        return Workload.from_layers(profile.forward_order_bytes(), bucket_size)
    elif sizes_file:
        return load_workload(sizes_file, bucket_size=bucket_size)
    elif sizes:
        return (Workload.single(sizes[0]) if len(sizes) == 1
                else Workload.weighted([(m, 1) for m in sizes]))
    else:
        return Workload.single(defaults.SIZE)


def _make_outdir(outdir):
    """Create the -o folder if given: ``(created, plot_ok)``, whether it was made here and
    whether matplotlib can draw the frontier plot."""
    plot_ok = True
    created = False
    if outdir:
        try:
            created = not os.path.isdir(outdir)
            os.makedirs(outdir, exist_ok=True)
        except OSError as exc:
            raise Fail(f"cannot create {outdir}: {exc.strerror}") from None
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            plot_ok = False
    return created, plot_ok


def _write_find_files(result, outdir, schedule_name, plot_ok):
    """Write the chosen topology, schedule and frontier plot into -o; return their paths."""
    from ..fileio import output_set

    files = {}
    if outdir and result.schedule is not None:
        files["topology"] = os.path.join(outdir, "topology.json")
        files["schedule"] = os.path.join(outdir, schedule_name)
        # all or none: a full disk at the plot must not leave a new topology beside the old
        # schedule of another one
        with output_set():
            save_topology(result.schedule.topology, files["topology"])
            save_schedule(result.schedule, files["schedule"])
            if plot_ok:
                files["plot"] = os.path.join(outdir, "frontier.png")
                plot_frontier(result, files["plot"])
        if not plot_ok:
            click.echo("warning: no frontier plot: matplotlib is not installed "
                       "(pip install 'topocoll[plot]')", err=True)
    return files


def _find_progress():
    """A stage-by-stage progress line on stderr: a bar on a terminal, else plain lines."""
    if not err_console.is_terminal:
        lines = ProgressLines("find")
        return lines.update, lines
    bar = Progress(TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(),
                   console=err_console, transient=True)
    task = bar.add_task("searching", total=None)

    def update(stage, done, total):
        bar.update(task, description=escape(stage), completed=done, total=total)
    return update, bar


def _print_find(result, files):
    settings = f"alpha {format_time(result.alpha)}, {result.bandwidth}"
    if result.link_bandwidth is not None:
        settings += f" (B = {units.format_bandwidth(result.node_bandwidth)} per node)"
    settings += f"; {result.workload.description}"
    only = " (bidirectional topologies only)" if result.bidirectional else ""
    table = Table(title=f"Pareto frontier for {result.nodes} nodes of degree {result.degree}{only} "
                        f"({settings}); steps and T_B per phase, allreduce = 2 phases; "
                        "* the choice")
    for col in ("#", "topology", "N", "d", "steps", "T_B (M/B)", "kind", "predicted time",
                "x bound"):
        table.add_column(col, justify="left" if col in ("topology", "kind") else "right")
    for i, (c, t) in enumerate(zip(result.frontier, result.times), 1):
        mark = " *" if result.best is not None and c.name == result.best.name else ""
        kind = c.kind + ("" if c.exact else " (bound)" if c.kind == "expanded" else
                         " (conjecture)")
        table.add_row(str(i), escape(c.name) + mark, str(c.nodes), str(c.degree), str(c.steps),
                      f"{c.t_b:.5f}", kind, format_time(t), f"{t / result.lower_bound:.3f}")
    out_console.print(table)
    best = result.best
    if best is None:
        return
    line = (f"choice: {best.name}, predicted {format_time(result.predicted_time)}")
    if result.evaluated_time is not None:
        ev = result.evaluation
        how = (f"{ev['transfers']} transfers, verified" if ev["transfers"] is not None else
               f"{ev.get('method', 'verified')}" + (f" of {ev['base']['transfers']} transfers"
                                                    if "base" in ev else ""))
        line += (f", evaluated {format_time(result.evaluated_time)} (allreduce of "
                 f"{ev['steps']} steps, {how}"
                 f"{', from the cache' if ev['source'] == 'cache' else ''})")
    if result.bidirectional_checked:
        line += "; checked bidirectional"
    line += f"; two-phase bound {format_time(result.lower_bound)}"
    ratio = result.ratio if result.ratio is not None else result.predicted_ratio
    line += f": {ratio:.3f}x"
    out_console.print(line, markup=False)
    if result.status != 0 and result.evaluation is not None:   # a fallback: say from what
        out_console.print(result.message, markup=False)
    opt = result.optimization
    if opt is not None:
        verdict = (f"improved on {opt['seed']} ({format_time(opt['seed_time'])})"
                   if opt["improved"] else f"kept {opt['seed']}: nothing faster was verified")
        out_console.print(f"optimizer: {opt['evaluations']} candidates ({opt['exact_evaluations']} "
                   f"exact BFB costs) in {opt['seconds']['search']:.1f} s, stopped by "
                   f"{opt['stopped']}; {len(opt['confirmed'])} confirmed; {verdict}",
                   markup=False)
    if files:
        out_console.print("wrote " + ", ".join(files.values()), markup=False)
