"""``topocoll alltoall-steps``: the step-indexed all-to-all LP (S steps, each
commodity's flow per step) and how its time compares with the steady-state throughput LP."""

import click
from rich.table import Table

from .. import defaults, units
from ..topology.metrics import diameter
from ..units import format_size, format_time
from .common import (Fail, duration_callback, load_topology_arg, out_console, print_json,
                     topo_options, unit_callback)

__all__ = ["alltoall_steps"]


@click.command("alltoall-steps")
@click.argument("topo")
@click.option("--steps", type=click.IntRange(1), help="Communication steps S [default: the "
              "diameter, the fewest that reach every pair].")
@click.option("--size", default=units.format_size(defaults.SIZE), show_default=True,
              callback=unit_callback(units.parse_size, "--size"),
              help="Per-node buffer M; each pair moves M/N bytes.")
@topo_options
@click.option("--time-limit", metavar="DURATION",
              callback=duration_callback("--time-limit", allow_zero=False),
              help="Wall-clock limit for the solver, e.g. 30s or 5min.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def alltoall_steps(*, topo, steps, size, link_bandwidth, node_bandwidth, alpha, time_limit,
                   as_json):
    """The step-indexed all-to-all LP of TOPO: a schedule of S steps and its time.

    Each ordered pair's flow per step and each step's duration (Basu et al.); next to it the
    steady-state throughput LP, which no schedule of any number of steps beats."""
    from ..throughput import step_lp, throughput  # deferred: the LP stack is heavy to import

    t = load_topology_arg(topo, link_bandwidth, alpha, node_bandwidth)
    if steps is None:
        steps = max(int(diameter(t)), 1)
    res = step_lp(t, steps, time_limit=time_limit)
    if not res.success:
        raise Fail(res.message)
    flow = throughput(t, bounds=False)
    doc = res.to_dict(size)
    doc["steady_state_lambda"] = flow.lam if flow.success else None
    doc["steady_state_time"] = flow.time(size) if flow.success else None
    doc["over_steady_state"] = (res.unit_time * flow.lam if flow.success and flow.lam > 0
                                else None)
    if as_json:
        print_json(doc)
        return
    echo = click.echo
    echo(f"step LP on {t.name}: {steps} steps, {res.status_name}; T = {res.unit_time:.6g} s "
         f"per byte of every pair")
    table = Table(title=f"steps of an all-to-all of {format_size(size)} per node")
    for col in ("step", "duration", "bytes moved (per pair-byte)"):
        table.add_column(col, justify="right")
    loads = res.step_loads().sum(axis=1)
    for k, (dt, moved) in enumerate(zip(res.step_times.tolist(), loads.tolist()), 1):
        table.add_row(str(k), format_time(dt * size / t.num_nodes), f"{moved:.6g}")
    out_console.print(table)
    bandwidth = format_time(res.unit_time * size / t.num_nodes)
    echo(f"time {format_time(doc['time'])} (bandwidth {bandwidth} + {steps} x alpha "
         f"{format_time(res.alpha)})")
    if doc["over_steady_state"] is not None:
        echo(f"steady-state LP: lambda {flow.lam:.6g} B/s, bandwidth time "
             f"{format_time(doc['steady_state_time'])}; step LP / steady state = "
             f"{doc['over_steady_state']:.4f}")
