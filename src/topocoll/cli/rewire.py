"""``topocoll rewire``: greedy degree-preserving edge swaps that lower all-to-all time."""

import click
from rich.table import Table

from .. import defaults, units
from ..topology import save_topology
from ..throughput.rewire import OBJECTIVES, STRATEGIES, rewire as rewire_topology
from ..units import format_time
from .common import (check_output_option, duration_callback, err_console, load_topology_arg,
                     on_stdout, out_console, print_json, progress_bar, renamed_option,
                     topo_options, unit_callback)

__all__ = ["rewire"]


def _value(objective, value):
    return format_time(value) if objective == "alltoall" else f"{value:g}"


@click.command()
@click.argument("topo")
@topo_options
@click.option("--objective", type=click.Choice(list(OBJECTIVES)), default="alltoall",
              show_default=True,
              help="alltoall: all-to-all time from the flow LP; distance: sum of hop distances.")
@renamed_option("--time-limit", "budget", old=("--budget",), default="10s", show_default=True,
                metavar="DURATION", callback=duration_callback("--time-limit"),
                help="Wall-clock limit, e.g. 10s, 500ms or 2min; 0 for none (runs to a local "
                     "minimum or --max-swaps).")
@click.option("--strategy", type=click.Choice(list(STRATEGIES)), default="first",
              show_default=True, help="first: keep the first improving swap; best: scan every "
              "swap and keep the best (steepest descent); anneal: simulated annealing over "
              "--max-swaps random candidates (default 500), seeded by --seed.")
@click.option("--max-swaps", type=click.IntRange(min=0),
              help="Stop after trying this many candidate swaps.")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True,
              help="Seed of the candidate order.")
@click.option("--size", default=units.format_size(defaults.SIZE), show_default=True,
              callback=unit_callback(units.parse_size, "--size"),
              help="Per-node buffer for the all-to-all time (scales it; ranking unchanged).")
@click.option("--prescreen", is_flag=True,
              help="Skip swaps that lengthen the sum of hop distances without evaluating them "
                   "(heuristic; more LP solves go to promising swaps).")
@click.option("--warmup", metavar="DURATION", callback=duration_callback("--warmup"),
              help="Time spent first on cheap sum-of-distance swaps (default: half the "
                   "--time-limit for --objective alltoall).")
@click.option("-o", "--output", help="Write the rewired topology (.json or .graphml, optionally "
              "+ .gz; '-' for JSON on stdout).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def rewire(*, topo, link_bandwidth, node_bandwidth, alpha, objective, strategy, budget,
           max_swaps, seed, size, prescreen, warmup, output, as_json):
    """Rewire TOPO by degree-preserving edge swaps, keeping a swap when the objective drops.

    Bidirectional topologies swap cables (a-b, c-d -> a-c, b-d), directed ones swap arc heads
    (a->b, c->d -> a->d, c->b); results stay simple and strongly connected.
    """
    check_output_option(output, (".json", ".graphml"))
    to_stdout = on_stdout(output)
    t = load_topology_arg(topo, link_bandwidth, alpha, node_bandwidth)
    fn = OBJECTIVES[objective](size) if objective == "alltoall" else OBJECTIVES[objective]()
    # --budget 0 means no time limit
    callback, bar = progress_bar("rewiring")
    with bar:
        result = rewire_topology(t, objective=fn, budget=budget or None, max_swaps=max_swaps, seed=seed,
                         progress=callback, prescreen=prescreen, warmup=warmup,
                         strategy=strategy)
    if output:
        save_topology(result.topology, output)
    bounds = _time_bounds(t, result.topology, size) if objective == "alltoall" else None
    if as_json:
        core = result.to_dict()
        doc = {**{k: core.pop(k) for k in ("success", "status", "status_name", "message")},
               "topology": t.name, "objective": objective, "seed": seed, "prescreen": prescreen,
               **core}
        if objective == "alltoall":
            doc["size"] = size
            doc["time_lower_bounds"] = bounds
        doc["output"] = output
        print_json(doc, err=to_stdout)
        return
    table = Table(title=f"rewire {t.name} ({objective}, {strategy}, seed {seed})")
    table.add_column("")
    table.add_column("value", justify="right")
    rows = [("initial", _value(objective, result.initial)),
            ("final", _value(objective, result.final)),
            ("improvement", f"{100 * result.improvement:.2f}%"),
            ("swaps accepted / tried", f"{result.accepted} / {result.tried}"),
            ("of which in the distance warm-up", str(result.warmup_swaps)),
            ("objective evaluations", str(result.evaluated)),
            ("skipped by bound", str(result.pruned)),
            ("stopped", result.stopped),
            ("time", format_time(result.seconds))]
    for key, (before, after) in (bounds or {}).items():
        rows.append((f"{key} bound: time >= (initial -> final)",
                     f"{format_time(before)} -> {format_time(after)}"))
        rows.append((f"final over its {key} bound", f"{result.final / after:.4f}"))
    if output:
        rows.append(("written", output))
    for row in rows:
        table.add_row(*row)
    (err_console if to_stdout else out_console).print(table)


def _time_bounds(before, after, size):
    """All-to-all time lower bounds (distance, bisection) of the topology before and after."""
    from ..topology.cuts import throughput_bounds

    out = {}
    b0, b1 = throughput_bounds(before), throughput_bounds(after)
    for key in ("distance", "bisection"):
        if b0.get(key, 0) > 0 and b1.get(key, 0) > 0:
            out[key] = (size / before.num_nodes / b0[key], size / after.num_nodes / b1[key])
    return out
