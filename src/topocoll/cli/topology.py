"""``topocoll topologies`` (the families) and ``topocoll info`` (facts about one topology)."""

import click
from rich.table import Table

from .common import _load_topology, _out, _print_json, _topo_options

__all__ = ["topologies", "info"]


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def topologies(as_json):
    """List the topology families and their spec syntax."""
    from ..topology import describe_families

    rows = describe_families()
    if as_json:
        _print_json(rows)
        return
    table = Table(title="topology families (spec: FAMILY:ARGS, or a .json/.graphml file)")
    for col in ("family", "parameters", "example", "what it is"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["name"], r["params"], r["example"], r["summary"])
    _out.print(table)


@click.command()
@click.argument("topo")
@_topo_options
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def info(topo, link_bandwidth, node_bandwidth, alpha, as_json):
    """Facts about a topology: nodes, links, degrees, diameter, Moore depth."""
    from ..topology import degree_summary, diameter, moore_depth
    from ..topology.metrics import unreachable_pair

    t = _load_topology(topo, link_bandwidth, alpha, node_bandwidth)
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
    if as_json:
        _print_json(facts)
        return
    for key, value in facts.items():
        _out.print(f"{key:>22}: {value}")
