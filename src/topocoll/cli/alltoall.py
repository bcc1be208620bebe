"""``topocoll alltoall``: all-to-all throughput (link or hop-bounded path LP), bounds, the
Pareto frontier over the hop bound, and a hop-by-hop schedule file."""


import click
from rich.table import Table

from .. import defaults, units
from ..schedule.cost import evaluate as _evaluate
from ..schedule.io import save_schedule
from ..schedule.verify import verify as _verify
from ..throughput import alltoall_schedule, hop_frontier as pareto_frontier, throughput
from ..units import format_size, format_time
from .common import (EXIT_INVALID, check_output_option, duration_callback, Fail, load_topology_arg,
                     on_stdout, out_console, print_json, progress_bar, renamed_option,
                     topo_options, unit_callback)

__all__ = ["alltoall"]


@click.command()
@click.argument("topo")
@click.option("--max-hops", type=click.IntRange(0), help="Path LP: every pair uses paths of at "
              "most its shortest distance + L links (0: shortest paths only).")
@renamed_option("-a", "--algorithm", "method", old=("--method",),
                type=click.Choice(["symmetric", "link", "path", "colgen", "balance"]),
              help="LP formulation [default: symmetric on tori, rings, circulants, hypercubes "
              "and other translation-symmetric topologies; otherwise link, or from 60000 "
              "link-LP columns (N x links) on balance (shortest paths balanced to the distance "
              "bound, where it is tight) and then colgen (path column generation seeded by "
              "multiplicative weights); path with --max-hops; with -o, path or colgen].")
@click.option("--tolerance", type=click.FloatRange(0, 1, min_open=True, max_open=True),
              callback=lambda ctx, param, value: _finite(value, "--tolerance"),
              help="Relative gap to "
              "the certificate at which the solver may stop [default: 1e-4 for colgen and "
              "balance, 1e-6 otherwise].")
@click.option("--size", default=units.format_size(defaults.SIZE), show_default=True,
              callback=unit_callback(units.parse_size, "--size"),
              help="Per-node buffer M; each pair moves M/N bytes.")
@topo_options
@click.option("--solver", type=click.Choice(["auto", "ipm", "pdlp"]), default="auto",
              show_default=True,
              help="HiGHS solver.")
@click.option("--time-limit", metavar="DURATION",
              callback=duration_callback("--time-limit", allow_zero=False),
              help="Wall-clock limit for the solver, e.g. 30s or 5min.")
@click.option("--frontier", is_flag=True, help="Also the Pareto frontier: throughput for "
              "L = 0, 1, ... until it reaches the unbounded optimum, with the time of each L's "
              "hop-by-hop schedule at --size and --alpha; the fastest is marked.")
@click.option("-o", "--output", help="Write a hop-by-hop alltoall schedule (path LP routes in "
              "whole chunks) here ('-' for stdout).")
@click.option("--chunks", type=click.IntRange(1), help="Chunks per commodity for -o [default: "
              "the optimum's common denominator, at most 64].")
@click.option("--routing", type=click.Choice(["optimal", "shortest", "valiant"]),
              default="optimal", show_default=True, help="Also the throughput of an oblivious "
              "routing, against the LP optimum: shortest (every pair split evenly over its "
              "shortest paths) or valiant (via a uniformly random intermediate, two shortest-"
              "path phases).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def alltoall(*, topo, max_hops, method, tolerance, size, link_bandwidth, node_bandwidth,
             alpha, solver, time_limit, frontier, output, chunks, routing,
             as_json):
    """Uniform all-to-all throughput of TOPO: lambda, its time, a certificate and the bounds.

    lambda is the rate in bytes/s of every ordered pair, the time of an all-to-all of M bytes
    per node (M/N)/lambda; also a dual certificate, the bounds, link utilization and optionally
    a schedule."""
    check_output_option(output, None)
    to_stdout = on_stdout(output)
    t = load_topology_arg(topo, link_bandwidth, alpha, node_bandwidth)
    if method is None and max_hops is None and output:
        from ..throughput.solve import COLGEN_COLUMNS

        method = "colgen" if t.num_nodes * t.pairs[0].size >= COLGEN_COLUMNS else "path"
    if method is None and max_hops is not None:
        method = "path"
    if method in ("link", "symmetric", "colgen", "balance") and max_hops is not None:
        raise Fail("--max-hops needs the path LP (--algorithm path)")
    if method in ("link", "symmetric") and output:
        raise Fail("-o needs routes: use the path LP or the column generation (--algorithm path "
                   "or colgen, or --max-hops)")
    update, bar = progress_bar(f"{method or 'all-to-all'} LP on {t.name}")
    with bar:
        res = throughput(t, max_hops=max_hops, method=method, solver=solver,
                         tolerance=tolerance, time_limit=time_limit, progress=update)
    if not res.success:
        raise Fail(f"{t.name}: {res.message}")
    doc = res.to_dict(size)
    doc["links"] = t.num_links
    if routing != "optimal":
        doc["routing"] = _routed(t, routing, res.lam, size)
    points = None
    if frontier:
        points = pareto_frontier(t, solver=solver, size=size)
        for p in points:
            p["time"] = size / t.num_nodes / p["lambda"] if p["lambda"] > 0 else None
        doc["frontier"] = points
    sched = None
    if output:
        sched = alltoall_schedule(res, t, chunks=chunks)
        report = _verify(sched)
        if not report.valid:  # a generator bug: never hand out a wrong schedule
            raise Fail(f"generated schedule failed verification: {report.summary()}",
                       EXIT_INVALID)
        ev = _evaluate(sched, size, check=False)
        doc["schedule"] = {"file": output, "steps": sched.num_steps,
                           "transfers": sched.num_transfers, "chunks": sched.meta["chunks"],
                           "quantization_loss": sched.meta["quantization_loss"],
                           "lambda_quantized": sched.meta["lambda_quantized"],
                           "T_L": ev.T_L, "T_B": ev.T_B, "time": ev.time,
                           "T_B_over_lp_time": ev.T_B / doc["time"], "verified": True}
        save_schedule(sched, output)
    if as_json:
        print_json(doc, err=to_stdout)
        return
    _print_text(res, doc, size, points, err=to_stdout)


def _routed(t, routing, optimum, size):
    """The ``routing`` entry of the JSON document: an oblivious routing's throughput."""
    from ..throughput.valiant import valiant_throughput   # deferred: only with --routing

    v = valiant_throughput(t)
    lam = v.lam if routing == "valiant" else v.lam_shortest
    return {"name": routing, "lambda": lam, "time": size / v.num_nodes / lam,
            "fraction_of_optimum": lam / optimum if optimum > 0 else None}


def _rate(value):
    return "-" if value is None else f"{value:.6g} B/s"


def _print_text(res, doc, size, points, err):
    echo = ((lambda s: click.echo(s, err=True)) if err
            else (lambda s: out_console.print(s, markup=False)))
    hops = ("any path" if res.method in ("link", "symmetric", "colgen", "balance")
            or res.max_hops is None
            else f"paths of at most dist + {res.max_hops} links")
    echo(f"all-to-all on {doc['topology']}: {doc['nodes']} nodes, {doc['links']} links; "
         f"{res.method} LP ({hops}), {res.status_name}")
    echo(f"lambda {_rate(res.lam)} per ordered pair (certified upper bound "
         f"{_rate(res.dual_bound)}, gap {res.gap:.2g}); all-to-all of {format_size(size)} per "
         f"node: {format_time(doc['time'])}")
    table = Table(title="bounds on lambda (bytes/s per pair) and the times they allow")
    for col in ("bound", "lambda <=", "time >=", "lambda / bound"):
        table.add_column(col, justify="left" if col == "bound" else "right")
    rows = [("distance (capacity / sum of distances)", "distance"),
            (f"bisection ({doc.get('bisection_method', '?')})", "bisection"),
            ("topology-agnostic (Moore)", "agnostic"), ("injection (node bandwidth)", "injection")]
    for label, key in rows:
        b = res.bounds.get(key)
        if b is None:
            continue
        table.add_row(label, f"{b:.6g}", format_time(doc[f"time_lower_bound_{key}"]),
                      f"{res.lam / b:.4f}")
    if not err:
        out_console.print(table)
    if "routing" in doc:
        r = doc["routing"]
        echo(f"{r['name']} routing: lambda {_rate(r['lambda'])} per ordered pair, "
             f"{r['fraction_of_optimum']:.4f} of the optimum; all-to-all of {format_size(size)} "
             f"per node: {format_time(r['time'])}")
    echo(f"link utilization: max {doc['utilization_max']:.4f}, mean "
         f"{doc['utilization_mean']:.4f}" + (f"; {doc['paths']} paths, longest "
                                             f"{doc['longest_path']} links"
                                             if "paths" in doc else ""))
    if points:
        ft = Table(title="Pareto frontier: throughput against the hop bound")
        for col in ("L (extra hops)", "lambda", "of optimum", "longest path", "mean hops",
                    "LP time", "schedule", "steps", "schedule time", ""):
            ft.add_column(col, justify="right")
        for p in points:
            timed = "schedule_time" in p
            ft.add_row("unbounded" if p["max_hops"] is None else str(p["max_hops"]),
                       f"{p['lambda']:.6g}", f"{p['fraction']:.4f}",
                       "-" if p["longest_path"] is None else str(p["longest_path"]),
                       "-" if p["mean_hops"] is None else f"{p['mean_hops']:.3f}",
                       format_time(p["time"]),
                       p["schedule"] if timed else "-",
                       str(p["schedule_steps"]) if timed else "-",
                       format_time(p["schedule_time"]) if timed else "-",
                       "best" if p.get("best") else "")
        if not err:
            out_console.print(ft)
    s = doc.get("schedule")
    if s:
        echo(f"schedule: {s['steps']} steps, {s['transfers']} transfers, {s['chunks']} chunks "
             f"per commodity (quantization loss {100 * s['quantization_loss']:.3g}%), verified, "
             f"written to {s['file']}; step-model T_B {format_time(s['T_B'])} = "
             f"{s['T_B_over_lp_time']:.3f} x the LP time")


def _finite(value, name):
    # FloatRange lets nan through (every comparison with it is false)
    if value is not None and value != value:
        raise click.BadParameter(f"{name} must be a number in (0, 1), got nan")
    return value
