"""``topocoll topologies`` (the families) and ``topocoll info`` (facts about one topology)."""

import click
from rich.table import Table

from ..results import Status, document
from .common import (load_topology_arg, out_console, print_json, topo_options)

__all__ = ["topologies", "info"]


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def topologies(as_json):
    """List the topology families and their spec syntax."""
    from ..topology import describe_families
    from ..topology.specs import describe_operators

    rows = describe_families()
    ops = describe_operators()
    if as_json:   # {status keys, "families": [...], "operators": [...]}, each {name, params,
        #          summary, example}
        print_json(document(Status.SUCCESS, f"{len(rows)} topology families, {len(ops)} "
                             "operators on specs", families=rows, operators=ops))
        return
    table = Table(title="topology families (spec: FAMILY:ARGS, or a .json/.graphml file)")
    for col in ("family", "parameters", "example", "what it is"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["name"], r["params"], r["example"], r["summary"])
    out_console.print(table)
    table = Table(title="composite specs: operators on specs, nested to any depth (the names "
                        "find prints; grammar in docs/format.md)")
    for col in ("operator", "parameters", "example", "what it builds"):
        table.add_column(col)
    for r in ops:
        table.add_row(r["name"], r["params"], r["example"], r["summary"])
    out_console.print(table)


@click.command()
@click.argument("topo")
@topo_options
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def info(topo, link_bandwidth, node_bandwidth, alpha, as_json):
    """Facts about a topology: nodes, links, degrees, diameter, Moore depth."""
    from ..topology import degree_summary, diameter, moore_depth
    from ..topology.metrics import unreachable_pair

    t = load_topology_arg(topo, link_bandwidth, alpha, node_bandwidth)
    deg = degree_summary(t)
    pair = unreachable_pair(t)
    facts = {"name": t.name, "nodes": t.num_nodes, "links": t.num_links, **deg,
             "strongly_connected": pair is None,
             "diameter": diameter(t) if pair is None else None,
             "moore_steps": moore_depth(t.num_nodes, deg["out_max"]),
             "egress_bandwidth_min": float(t.egress_bandwidth().min()),
             "switches": list(t.switches)}
    if pair is not None:
        facts["unreachable_pair"] = list(pair)
    facts.update({k: v for k, v in t.meta.items() if k not in facts})
    if as_json:   # {status keys, name, nodes, links, degrees, diameter, ...}: always SUCCESS
        said = ("strongly connected" if pair is None
                else f"not strongly connected: no path {pair[0]} -> {pair[1]}")
        print_json(document(Status.SUCCESS, f"{t.name}: {t.num_nodes} nodes, {t.num_links} "
                             f"links, {said}", facts))
        return
    for key, value in facts.items():
        out_console.print(f"{key:>22}: {value}")
