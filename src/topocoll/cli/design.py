"""``topocoll alltoall-design``: the d-regular topology on N nodes with the highest uniform
all-to-all throughput (the topology ILP), or the iterative one-commodity heuristic."""

import click

from .. import defaults, units
from ..topology import save_topology
from ..units import format_time
from .common import (Fail, check_output_option, duration_callback, on_stdout, out_console,
                     print_json, unit_callback)

__all__ = ["alltoall_design"]


@click.command("alltoall-design")
@click.option("-n", "--nodes", type=click.IntRange(2), required=True, help="Number of nodes N "
              "(at most 12 for the ILP, 32 for iterative).")
@click.option("-d", "--degree", type=click.IntRange(1), required=True,
              help="Links out of and into every node.")
@click.option("-a", "--algorithm", "method", type=click.Choice(["ilp", "iterative"]),
              default="ilp", show_default=True, help="ilp: the topology ILP (proven optimal); "
              "iterative: one commodity at a time (a heuristic).")
@click.option("--bidirectional", is_flag=True, help="Links in both directions (ILP only).")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
              help="Seed of the commodity order (iterative).")
@click.option("--link-bandwidth", default=units.format_bandwidth(defaults.LINK_BANDWIDTH),
              show_default=True, callback=unit_callback(units.parse_bandwidth,
                                                        "--link-bandwidth"),
              help="Bandwidth of every link.")
@click.option("--time-limit", metavar="DURATION",
              callback=duration_callback("--time-limit", allow_zero=False),
              help="Wall-clock limit for the ILP, e.g. 30s or 5min (the best topology found "
                   "is returned, status LIMIT).")
@click.option("-o", "--output", help="Write the topology (.json or .graphml, optionally + .gz; "
              "'-' for JSON on stdout).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def alltoall_design(*, nodes, degree, method, bidirectional, seed, link_bandwidth, time_limit,
                    output, as_json):
    """The d-regular topology on N nodes with the highest all-to-all throughput (ILP)."""
    from ..throughput.topology_ilp import design_topology, iterative_design  # heavy: deferred

    check_output_option(output, (".json", ".graphml"))
    to_stdout = on_stdout(output)
    if method == "ilp":
        res = design_topology(nodes, degree, bidirectional=bidirectional,
                              bandwidth=link_bandwidth, time_limit=time_limit)
    else:
        if bidirectional:
            raise Fail("--bidirectional needs --algorithm ilp")
        res = iterative_design(nodes, degree, seed=seed, bandwidth=link_bandwidth)
    if res.topology is None:
        raise Fail(res.message)
    if output:
        save_topology(res.topology, output)
    doc = {**res.to_dict(), "nodes": nodes, "degree": degree, "bidirectional": bidirectional,
           "output": output}
    if as_json:
        print_json(doc, err=to_stdout)
        return
    echo = ((lambda s: click.echo(s, err=True)) if to_stdout
            else (lambda s: out_console.print(s, markup=False, soft_wrap=True)))
    bound = "-" if doc["upper_bound"] is None else f"{doc['upper_bound']:.6g} B/s"
    echo(f"{method} on {nodes} nodes of degree {degree}: {res.status_name}; lambda "
         f"{res.lam:.6g} B/s per ordered pair (proven bound {bound}) in "
         f"{format_time(res.seconds)}, {res.solves} MILP(s)")
    echo("links: " + " ".join(f"{u}->{v}" for u, v in res.edges))
    if output:
        echo(f"written to {output}")
