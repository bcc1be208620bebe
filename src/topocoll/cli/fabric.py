"""``topocoll fabric``: one optical fabric cut into per-job subclusters, each with the finder's
topology and allreduce for its size."""

import os

import click
from rich.markup import escape
from rich.table import Table

from .. import defaults, units
from ..units import format_time
from .common import (EXIT_INVALID, Fail, check_output_folder, cluster_bandwidth_options,
                     one_bandwidth, out_console, print_json, unit_callback)

__all__ = ["fabric"]


@click.command()
@click.option("--jobs", required=True,
              help="Nodes of each job, comma-separated (e.g. 64,32,32); each job gets its own "
                   "node range of the fabric, in this order.")
@click.option("-d", "--degree", required=True, type=int,
              help="Ports per node d of the fabric (a job of n <= d nodes uses n-1).")
@click.option("--fabric-nodes", type=int,
              help="The fabric's size N; the jobs must fit, the rest stay idle "
                   "[default: the sum of the jobs].")
@click.option("--alpha", default=units.format_time(defaults.ALPHA), show_default=True,
              callback=unit_callback(units.parse_time, "--alpha"), help="Latency of every link.")
@cluster_bandwidth_options("the cost model's B is then d x this")
@click.option("--size", "sizes", multiple=True, callback=unit_callback(units.parse_size, "--size"),
              help="Allreduce buffer size M of every job (repeatable) "
                   f"[default: {units.format_size(defaults.SIZE)}].")
@click.option("--bidirectional", is_flag=True,
              help="Only bidirectional topologies for every job (as find --bidirectional).")
@click.option("--no-evaluate", is_flag=True,
              help="Predictions only: do not build, verify and evaluate the picks.")
@click.option("--no-cache", is_flag=True, help="Neither read nor write the results cache.")
@click.option("-o", "--output", "outdir",
              help="Write fabric.json (the union topology) and job-K.json (job K's verified "
                   "allreduce, its nodes numbered from 0) into this folder.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def fabric(*, jobs, degree, fabric_nodes, alpha, link_bandwidth, node_bandwidth, sizes,
           bidirectional, no_evaluate, no_cache, outdir, as_json):
    """Cut one fabric of degree d into per-job subclusters and pick each job's topology.

    Every job gets a disjoint range of the fabric's nodes (the first job nodes 0..n0-1, the
    next after it) and the topology and allreduce schedule `topocoll find` picks for its size.
    Prints each job's pick, its predicted and evaluated allreduce time, and the checks of the
    union topology: no node above d distinct out- or in-neighbours, disjoint jobs, no link
    between jobs.
    """
    from ..finder.fabric import partition_fabric
    from ..finder.workload import Workload

    one_bandwidth(link_bandwidth, node_bandwidth)
    if degree < 1:
        raise Fail(f"--degree must be at least 1, got {degree}")
    check_output_folder(outdir, ("fabric.json",), command="fabric")
    workload = (Workload.single(defaults.SIZE) if not sizes else Workload.single(sizes[0])
                if len(sizes) == 1 else Workload.weighted([(m, 1) for m in sizes]))
    result = partition_fabric(jobs, degree, workload, fabric_nodes=fabric_nodes, alpha=alpha,
                              node_bandwidth=node_bandwidth, link_bandwidth=link_bandwidth,
                              evaluate=not no_evaluate or bool(outdir),
                              keep_schedules=bool(outdir), cache=not no_cache,
                              bidirectional=bidirectional)
    files = _write(result, outdir)
    if as_json:
        print_json(dict(result.to_dict(), files=files))
    else:
        _print(result, files)
    if not result.success:
        raise Fail(result.message, EXIT_INVALID)


def _write(result, outdir):
    """fabric.json and one job-K.json per job into -o; their paths."""
    if not outdir:
        return {}
    from ..fileio import output_set
    from ..schedule.io import save_schedule
    from ..topology import save_topology

    try:
        os.makedirs(outdir, exist_ok=True)
    except OSError as exc:
        raise Fail(f"cannot create {outdir}: {exc.strerror}") from None
    files = {"fabric": os.path.join(outdir, "fabric.json")}
    with output_set():
        save_topology(result.topology, files["fabric"])
        for job in result.jobs:
            if job.result.schedule is not None:
                path = os.path.join(outdir, f"job-{job.job}.json")
                save_schedule(job.result.schedule, path)
                files[f"job-{job.job}"] = path
    return files


def _print(result, files):
    table = Table(title=f"{len(result.jobs)} job(s) on a fabric of {result.fabric_nodes} nodes "
                        f"of degree {result.degree} ({result.idle_nodes} idle)")
    for col in ("job", "nodes", "node range", "d", "topology", "steps", "predicted",
                "evaluated", "x bound"):
        table.add_column(col, justify="left" if col == "topology" else "right")
    for j in result.jobs:
        r = j.result
        ratio = r.ratio if r.ratio is not None else r.predicted_ratio
        table.add_row(str(j.job), str(j.nodes), f"{j.first}..{j.last}", str(j.degree),
                      escape(str(j.pick)),
                      "-" if r.best is None else str(r.best.allreduce_steps),
                      format_time(r.predicted_time),
                      "-" if r.evaluated_time is None else format_time(r.evaluated_time),
                      f"{ratio:.3f}")
    out_console.print(table)
    c = result.checks
    out_console.print(f"union {result.topology.num_nodes} nodes, {result.topology.num_links} "
                      f"links: max out/in degree {c['max_out_degree']}/{c['max_in_degree']} "
                      f"(<= {result.degree}: {'yes' if c['within_degree'] else 'NO'}), jobs "
                      f"disjoint: {'yes' if c['disjoint'] else 'NO'}, links within jobs: "
                      f"{'yes' if c['links_within_jobs'] else 'NO'}", markup=False)
    if files:
        out_console.print("wrote " + ", ".join(files.values()), markup=False)
