"""``topocoll gossip``: decentralized averaging topologies, their convergence and their cost."""

import functools

import click
from rich.markup import escape
from rich.table import Table

from .. import defaults, units
from ..errors import SpecError
from ..units import format_size, format_time
from ..results import Status, document
from .common import (check_plot, duration_callback, Fail, first_failure, LazyChoice,
                     TopocollGroup, out_console, print_json, progress_bar, renamed_option,
                     unit_callback)
from .emulate import network_kwargs, network_options, prepare, running

__all__ = ["gossip"]

#: What one torch process holds before its buffers (as 'run' counts it).
_PROCESS_BYTES = 256 << 20

# The gossip package (numpy) is imported inside the commands: 'gossip run --network' must move
# this process into a user namespace, where it needs one, before numpy starts its threads.


def _group_modes():
    from ..gossip.cost import GROUP_MODES

    return GROUP_MODES


def _parse_topology(text, options):
    """``NAME[:KEY=VALUE,...]`` plus the ``-O`` options that NAME takes."""
    from ..gossip import parse_param_value, resolve_gossip_name

    name, _, inline = text.partition(":")
    entry = resolve_gossip_name(name)
    accepted = entry.parameters()
    params = {key: value for key, value in options.items() if key in accepted}
    for item in filter(None, (p.strip() for p in inline.split(","))):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise SpecError(f"{text!r}: parameters are KEY=VALUE, got {item!r}")
        params[key.strip()] = parse_param_value(value)
    return entry.name, params


def _options(extra):
    from ..gossip import parse_param_value

    options = {}
    for item in extra:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise SpecError(f"--option {item!r}: expected KEY=VALUE")
        options[key.strip()] = parse_param_value(value)
    return options


def _build_all(names, nodes, extra):
    from ..gossip import gossip_topology, resolve_gossip_name

    options = _options(extra)
    parsed = [_parse_topology(text, options) for text in names]
    for key in options:
        if not any(key in resolve_gossip_name(name).parameters() for name, _ in parsed):
            raise SpecError(f"--option {key}: none of the topologies takes a parameter {key!r}")
    return [gossip_topology(name, nodes, **params) for name, params in parsed]


@click.group(cls=TopocollGroup)
def gossip():
    """Decentralized (gossip) averaging: topologies, convergence and cost.

    \b
    topocoll gossip list                                   the registered topologies
    topocoll gossip info one-peer-exp --nodes 8            rho, period, exact average, degrees
    topocoll gossip info ring exp --nodes 16 --plot c.png  consensus error against iterations
    topocoll gossip cost ring --topology torus:4x4         one iteration on a physical network
    topocoll gossip run one-peer-exp --network switch:16   measured on an emulated network

    A TOPOLOGY is a registered name, optionally with parameters: alternating-exp-ring:local_size=4
    (or -O local_size=4, applied to every topology that takes it).
    """


@gossip.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def list_topologies(as_json):
    """List the registered gossip topologies and their parameters."""
    from ..gossip import describe_gossip_topologies

    rows = describe_gossip_topologies()
    if as_json:   # {status keys, "topologies": [{name, aliases, params, summary}, ...]}
        print_json(document(Status.SUCCESS, f"{len(rows)} gossip topologies", topologies=rows))
        return
    table = Table(title="gossip topologies (TOPOLOGY[:KEY=VALUE,...])")
    for col in ("name", "aliases", "parameters", "what it is"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["name"], ", ".join(r["aliases"]), escape(r["params"]),
                      escape(r["summary"]))
    out_console.print(table)


@gossip.command()
@click.argument("topologies", metavar="TOPOLOGY...", nargs=-1, required=True)
@click.option("-n", "--nodes", required=True, type=click.IntRange(1), help="World size n.")
@click.option("-O", "--option", "extra", multiple=True, metavar="KEY=VALUE",
              help="A topology parameter, e.g. -O local_size=4 (repeatable).")
@click.option("--plot", type=click.Path(dir_okay=False),
              help="Also draw the consensus error against iterations of every TOPOLOGY into "
                   "this file (.png, .svg, .pdf; needs matplotlib).")
@click.option("--iterations", default=50, show_default=True, type=click.IntRange(1),
              help="Iterations drawn by --plot.")
@click.option("--seed", default=0, show_default=True, type=int,
              help="Seed of the random start values of --plot.")
@click.option("--hierarchical-local-size", "hierarchical_local_size", type=click.IntRange(1),
              metavar="L", help="Analyse hierarchical averaging (Bluefog's): the n ranks are "
              "n/L machines of L ranks, each TOPOLOGY is built on the machines, and a step is "
              "W_k kron (1/L) 11^T. Not -O local_size, a parameter of some topologies.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON: one object, each "
              "TOPOLOGY's facts in its list topologies.")
def info(topologies, nodes, extra, plot, iterations, seed, hierarchical_local_size, as_json):
    """Convergence facts of gossip TOPOLOGY on n ranks: rho, period, exact averaging, degrees.

    rho is ||P - 11^T/n||_2 of the product P of one period (of W itself when static);
    exact_average_after is the number of iterations after which every start sits exactly at the
    mean (null: only in the limit).

    --hierarchical-local-size L analyses hierarchical averaging over n/L machines of L ranks
    (machine-major): each TOPOLOGY is the machines' topology, and a step averages inside every
    machine, then mixes the machines, W_k kron (1/L) 11^T on the n ranks; its rho is the
    machine topology's.

    --json prints one object for one TOPOLOGY or several: the status keys (the worst of the
    topologies'), nodes, plot, hierarchical_local_size (null without it) and topologies, one
    entry each (its own status keys, rho, period, exact_average_after, degrees, ...).
    """
    check_plot(plot)  # fail before the work, not after it
    topos = _build_info(topologies, nodes, extra, hierarchical_local_size)
    from ..gossip import analyze, plot_consensus

    facts = [analyze(t).to_dict() for t in topos]
    if plot:
        plot_consensus(topos, plot, iterations, seed=seed)
    if as_json:   # one object for one TOPOLOGY or several: their facts in "topologies"
        worst = max(facts, key=lambda f: f["status"])
        print_json(document(worst["status"], "; ".join(f["message"] for f in facts),
                             nodes=nodes, plot=plot,
                             hierarchical_local_size=hierarchical_local_size, topologies=facts))
        return
    for f in facts:
        _print_info(f)
    if plot:
        out_console.print(f"plot written to {plot}", markup=False)


def _build_info(names, nodes, extra, local_size):
    """The topologies of ``gossip info``: on ``nodes`` ranks, or with ``local_size`` their
    hierarchical steps (each built on the ``nodes / local_size`` machines)."""
    if local_size is None:
        return _build_all(names, nodes, extra)
    from ..gossip import HierarchicalTopology
    from ..gossip.hierarchical import require_hierarchical

    if nodes % local_size:
        raise SpecError(f"--hierarchical-local-size {local_size} must divide --nodes {nodes} "
                        f"(machines of {local_size} ranks)")
    for name in names:     # before the machines are built: a huge n is refused at once
        require_hierarchical(name.partition(":")[0], nodes, local_size)
    return [HierarchicalTopology(t, local_size)
            for t in _build_all(names, nodes // local_size, extra)]


def _print_info(f):
    params = ", ".join(f"{k}={v}" for k, v in f["params"].items())
    kind = "static" if f["static"] else f"dynamic, period {f['period']}"
    out_console.print(f"{f['name']}{f' ({params})' if params else ''} on {f['nodes']} ranks: "
               f"{f['model']}, {kind}", markup=False)
    exact = f["exact_average_after"]
    lines = {"rho": f"{f['rho']:.6g}" + ("" if f["static"] else " (period product)"),
             "rho_per_iteration": f"{f['rho_per_iteration']:.6g}",
             "period": str(f["period"]),
             "exact_average_after": "never (converges only in the limit)" if exact is None
             else f"{exact} iterations",
             "row_stochastic": _yes(f["row_stochastic"]),
             "column_stochastic": _yes(f["column_stochastic"]),
             "symmetric": _yes(f["symmetric"])}
    for key, value in lines.items():
        out_console.print(f"{key:>22}: {value}", markup=False)
    table = Table(title="per iteration (degrees count other ranks)")
    cols = ["iteration", "rho(W_k)", "in-degree", "out-degree"]
    if "groups" in f:
        cols.insert(1, "groups")
    for col in cols:
        table.add_column(col, justify="right")
    shown = f["degree"] if len(f["degree"]) <= 16 else f["degree"][:16]
    for d, r in zip(shown, f["rho_iterations"]):
        cells = [str(d["iteration"]), f"{r:.4g}", _span(d["in_min"], d["in_max"]),
                 _span(d["out_min"], d["out_max"])]
        if "groups" in f:
            cells.insert(1, str(f["groups"][d["iteration"]]))
        table.add_row(*cells)
    out_console.print(table)
    if len(f["degree"]) > len(shown):
        out_console.print(f"... {len(f['degree']) - len(shown)} more iterations (--json lists all)",
                   markup=False)


def _yes(flag):
    return "yes" if flag else "no"


def _span(lo, hi):
    return str(lo) if lo == hi else f"{lo}-{hi}"


@gossip.command()
@click.argument("topologies", metavar="TOPOLOGY...", nargs=-1, required=True)
@renamed_option("--topology", "network", old=("--network",), required=True,
                help="Physical network: a topology spec such as torus:4x4 or a topology file "
               "(switches route, endpoints hold ranks).")
@click.option("-n", "--nodes", type=click.IntRange(1), help="World size n [default: the "
              "network's endpoints x --ranks-per-node]; a multiple of the endpoints places "
              "n/endpoints ranks per node.")
@click.option("--size", default=units.format_size(defaults.SIZE), show_default=True,
              callback=unit_callback(units.parse_size, "--size"), help="Buffer size M per rank.")
@click.option("--alpha", callback=unit_callback(units.parse_time, "--alpha"),
              help="Latency of every link, e.g. 10us [default: the network's].")
@click.option("--link-bandwidth", callback=unit_callback(units.parse_bandwidth, "--link-bandwidth"),
              help="Bandwidth of every link, e.g. 100Gbps [default: the network's].")
@click.option("--node-bandwidth", callback=unit_callback(units.parse_bandwidth, "--node-bandwidth"),
              help="Split every node's egress bandwidth evenly over its links.")
@click.option("--ranks-per-node", type=click.IntRange(1),
              help="Ranks sharing one network node (their messages are free).")
@click.option("--group-mode", type=LazyChoice(_group_modes), default="allreduce",
              show_default=True, help="How a group of more than two ranks communicates: a ring "
              "allreduce (decent_dp) or every member to every other.")
@click.option("-O", "--option", "extra", multiple=True, metavar="KEY=VALUE",
              help="A topology parameter, e.g. -O local_size=4 (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON: one object, each "
              "TOPOLOGY's cost in its list topologies.")
def cost(*, topologies, network, nodes, size, alpha, link_bandwidth, node_bandwidth,
         ranks_per_node, group_mode, extra, as_json):
    """Time of one gossip iteration of TOPOLOGY on a physical network (alpha-beta, ECMP).

    Every message is split over all shortest paths; time = largest path latency x steps +
    bytes on the busiest link / its bandwidth. With several TOPOLOGY, one summary row each and
    the time to shrink the distance to the mean 10^6-fold (iterations from rho per iteration,
    or the exact-average count when smaller).

    --json prints one object for one TOPOLOGY or several: the status keys, network, nodes, size,
    group_mode and topologies, one entry each (per-iteration costs, mean_time, max_time,
    iterations_to_accuracy, time_to_accuracy, ...).
    """
    from ..gossip import gossip_cost
    from ..gossip.cost import iterations_to_accuracy
    from ..topology import topology as _network

    net = _network(network)
    endpoints = net.num_nodes - len(net.switches)
    if nodes is None:
        nodes = endpoints * (ranks_per_node or 1)
    elif ranks_per_node is None and nodes != endpoints:
        if nodes % endpoints:
            raise SpecError(f"--nodes {nodes} is not a multiple of the {endpoints} endpoints of "
                            f"{net.name}; give --ranks-per-node")
        ranks_per_node = nodes // endpoints
    topos = _build_all(topologies, nodes, extra)
    update, bar = progress_bar("gossip cost")
    results = []
    with bar:
        for t in topos:
            results.append(gossip_cost(t, net, size, alpha=alpha, link_bandwidth=link_bandwidth,
                                       node_bandwidth=node_bandwidth,
                                       ranks_per_node=ranks_per_node, group_mode=group_mode,
                                       progress=update))
    docs = []
    for t, c in zip(topos, results):
        doc = c.to_dict()
        doc.update(iterations_to_accuracy(t, c))
        docs.append(doc)
    if as_json:   # one object for one TOPOLOGY or several: their costs in "topologies"
        cheapest = min(docs, key=lambda d: d["mean_time"])
        print_json(document(Status.SUCCESS, f"{len(docs)} gossip "
                             f"topolog{'ies' if len(docs) > 1 else 'y'} on {net.name}: cheapest "
                             f"iteration {cheapest['topology']} "
                             f"({format_time(cheapest['mean_time'])})", network=net.name,
                             nodes=nodes, size=float(size), group_mode=group_mode,
                             topologies=docs))
        return
    settings = (f"{format_size(size)} per rank, {nodes} ranks on {net.name}"
                + (f" ({ranks_per_node} per node)" if ranks_per_node and ranks_per_node > 1
                   else "") + f", group mode {group_mode}")
    if len(docs) == 1:
        _print_cost(docs[0], settings)
    else:
        _print_costs(docs, settings)


def _print_cost(doc, settings):
    table = Table(title=f"{doc['topology']}: {settings}")
    for col in ("iteration", "messages", "bytes", "max hops", "steps", "busiest link",
                "link load", "T_alpha", "T_beta", "time"):
        table.add_column(col, justify="right")
    for it in doc["iterations"]:
        link = "-" if it["bottleneck"] is None else "->".join(map(str, it["bottleneck"]))
        table.add_row(str(it["iteration"]), str(it["messages"]), format_size(it["bytes"]),
                      str(it["max_hops"]), str(it["steps"]), link,
                      format_size(it["max_link_load"]), format_time(it["T_alpha"]),
                      format_time(it["T_beta"]), format_time(it["time"]))
    out_console.print(table)
    its = doc["iterations_to_accuracy"]
    out_console.print(f"mean per iteration: {format_time(doc['mean_time'])} (slowest "
               f"{format_time(doc['max_time'])}); distance to the mean / 10^6 after "
               f"{'never' if its is None else its} iterations: "
               f"{_time(doc['time_to_accuracy'])}", markup=False)


def _time(seconds):
    return "never" if seconds is None else format_time(seconds)


def _print_costs(docs, settings):
    table = Table(title=f"one gossip iteration, {settings}; to 1e-6: iterations (and time) to "
                        "shrink the distance to the mean 10^6-fold")
    for col in ("topology", "period", "mean time", "slowest", "busiest link load", "rho/iter",
                "to 1e-6", "time to 1e-6"):
        table.add_column(col, justify="left" if col == "topology" else "right")
    best = min((d for d in docs if d["time_to_accuracy"] is not None),
               key=lambda d: d["time_to_accuracy"], default=None)
    for d in docs:
        load = max(it["max_link_load"] for it in d["iterations"])
        its = d["iterations_to_accuracy"]
        table.add_row(escape(d["topology"]) + (" *" if d is best else ""), str(d["period"]),
                      format_time(d["mean_time"]), format_time(d["max_time"]), format_size(load),
                      f"{d['rho_per_iteration']:.4g}", "never" if its is None else str(its),
                      _time(d["time_to_accuracy"]))
    out_console.print(table)
    cheapest = min(docs, key=lambda d: d["mean_time"])
    line = f"cheapest iteration: {cheapest['topology']} ({format_time(cheapest['mean_time'])})"
    if best is not None:
        line += (f"; fastest to 1e-6: {best['topology']} "
                 f"({format_time(best['time_to_accuracy'])})")
    out_console.print(line, markup=False)


@gossip.command("run")
@click.argument("topology_name", metavar="TOPOLOGY")
@click.option("-n", "--nodes", type=click.IntRange(2), help="World size n [default: the "
              "network's endpoints; required without a network].")
@click.option("--topology", "--network", "network", help="Run on an emulated network of this "
              "topology (a spec such as switch:16 or torus:4x4, or a file): one rank per "
              "endpoint, beside the model of that network. Without it the ranks run on this "
              "host's loopback.")
@click.option("--size", default="4MiB", show_default=True,
              callback=unit_callback(units.parse_size, "--size"), help="Buffer size M per rank.")
@click.option("--iterations", type=click.IntRange(1), help="Timed iterations (iteration k "
              "averages with W_k) [default: twice the period, at least 4].")
@click.option("--slice-size", "slice_bytes", callback=unit_callback(units.parse_size,
                                                                    "--slice-size"),
              help="Bytes of one message slice of neighbor averaging [default: 1MiB].")
@click.option("--transport", type=click.Choice(["auto", "network", "shared_memory"]),
              default="auto", show_default=True, help="How neighbor averaging's slices travel: "
              "shared memory where every rank shares this host (its namespaces too: never on "
              "an emulated network), else the process group's network (auto); or either, "
              "forced.")
@click.option("--time-limit", "timeout", default="10min", show_default=True, metavar="DURATION",
              callback=duration_callback("--time-limit", allow_zero=False),
              help="Wall-clock limit of the run.")
@click.option("-O", "--option", "extra", multiple=True, metavar="KEY=VALUE",
              help="A topology parameter, e.g. -O local_size=4 (repeatable).")
@click.option("--hierarchical-local-size", "hierarchical_local_size", type=click.IntRange(1),
              metavar="L", help="Run hierarchical averaging: the n ranks are n/L machines of L "
              "ranks (machine-major), TOPOLOGY is built on the machines. Not -O local_size, a "
              "parameter of some topologies.")
@network_options
@click.option("--json", "as_json", is_flag=True, help="Print JSON: time (neighbor averaging), "
              "baseline_time (all_reduce), model_time, baseline_model_time, measured_over_model, "
              "ratio, model_ratio, transport, hierarchical_local_size, network, calibration, "
              "host.")
def run_gossip(*, topology_name, nodes, network, size, iterations, slice_bytes, transport,
               timeout, extra, hierarchical_local_size, link_bandwidth, scale, mtu, latency,
               no_capacity_check, as_json):
    """Time one neighbor averaging of TOPOLOGY against all_reduce on the same ranks.

    With --network the ranks run on an emulated network (see 'topocoll emulate'), and the
    model of that network prices both: one averaging sends each rank's buffer to each
    out-neighbour of W_k, all_reduce is torch's ring in rank order. Times are medians over
    iterations of the slowest rank's time.

    \b
    topocoll gossip run one-peer-exp --network switch:16 --link-bandwidth 25Mbps --size 4MiB
    topocoll gossip run ring-graph --network torus:4x4 --json
    topocoll gossip run exponential-graph --nodes 4          # on this host's loopback
    topocoll gossip run one-peer-exp --network switch:16,4,4 --hierarchical-local-size 4

    --hierarchical-local-size L times hierarchical_neighbor_allreduce instead: the ranks are
    n/L machines of L ranks (machine-major), TOPOLOGY is the machines' topology, and the model
    adds a reduce-scatter inside every machine, the exchange of 1/L of the buffer per rank
    between machines and an all-gather inside every machine.
    """
    shaping = network_kwargs(link_bandwidth, scale, mtu, latency, no_capacity_check)
    if network is None and any(v is not None for v in (link_bandwidth, scale, latency)):
        raise Fail("--link-bandwidth, --scale and --latency shape an emulated network: add "
                   "--network")
    if network is not None and transport == "shared_memory":
        raise Fail("--transport shared_memory: on an emulated network the ranks talk through "
                   "its links; give --transport network or auto")
    if network is not None:
        prepare()   # first: numpy's threads would keep this process from a user namespace
    from ..runtime.emulated import measure_gossip
    from ..runtime.launch import require_torch

    net = None
    if network is not None:
        from ..emulate.network import EmulatedNetwork

        net = EmulatedNetwork(network, **shaping)
        ranks = net.num_ranks
        if nodes is not None and nodes != ranks:
            raise Fail(f"--nodes {nodes}: the network {net.topology.name} has {ranks} "
                       "endpoints, one rank each")
        nodes = ranks
    elif nodes is None:
        raise Fail("give --nodes (the world size) or --network")
    _require_memory(nodes, size)
    topo = _build_run(topology_name, nodes, extra, hierarchical_local_size)
    require_torch()
    measure = functools.partial(measure_gossip, local_size=hierarchical_local_size)
    if net is None:
        result = _gossip_measure(measure, topo, size, None, iterations, slice_bytes,
                                 timeout, transport)
    else:
        with running(net):
            result = _gossip_measure(measure, topo, size, net, iterations, slice_bytes,
                                     timeout, transport)
    _print_run(result, as_json)


def _build_run(name, nodes, extra, local_size):
    """The topology 'gossip run' times: on the ``nodes`` ranks, or with ``local_size`` on
    their ``nodes / local_size`` machines."""
    if local_size is None:
        return _build_all([name], nodes, extra)[0]
    if nodes % local_size:
        raise SpecError(f"--hierarchical-local-size {local_size} must divide the {nodes} ranks "
                        f"(machines of {local_size} ranks)")
    return _build_all([name], nodes // local_size, extra)[0]


def _require_memory(nodes, size):
    """Refuse, before a namespace is made or a rank starts, ranks this host could not hold: a
    torch process each and about three buffers (its own, the averaging's sum, the slices
    received)."""
    from ..limits import require_memory

    require_memory(nodes * (_PROCESS_BYTES + 3 * int(size)),
                   f"{nodes} local torch processes with {format_size(size)} buffers")


def _gossip_measure(measure, topo, size, net, iterations, slice_bytes, timeout, transport):
    from ..errors import ProcessGroupError

    try:
        return measure(topo, size, network=net, iterations=iterations,
                       slice_bytes=None if slice_bytes is None else int(slice_bytes),
                       timeout=timeout, transport=transport)
    except ProcessGroupError as exc:
        raise Fail(first_failure(str(exc))) from None


def _print_run(r, as_json):
    where = f"on {r['network']['topology']} (emulated)" if "network" in r else "on loopback"
    local = r.get("hierarchical_local_size")
    kind = "neighbor averaging" if local is None else "hierarchical averaging"
    over = "" if local is None else f" over {r['ranks'] // local} machines of {local} ranks"
    said = (f"{r['topology']}{over}{'' if local is None else ' hierarchical'} averaging, "
            f"{r['ranks']} ranks {where}: "
            f"{format_time(r['time'])} per iteration, {r['ratio']:.3f}x all_reduce's time")
    if r.get("model_ratio") is not None:
        said += f" (model {r['model_ratio']:.3f}x)"
    if as_json:
        print_json(document(Status.SUCCESS, said, r))
        return
    table = Table(title=f"{r['topology']}{over} on {r['ranks']} ranks {where}, "
                        f"{format_size(r['bytes'])} per rank, {r['iterations']} iterations, "
                        f"slices over {r['transport'].replace('_', ' ')} "
                        f"(host {r['host']['idle']:.0%} idle)")
    for col in ("", "time", "model", "measured/model"):
        table.add_column(col, justify="right")

    def cells(t, m, ratio):
        return (format_time(t), "-" if m is None else format_time(m),
                "-" if ratio is None else f"{ratio:.3f}")
    table.add_row(kind, *cells(r["time"], r["model_time"],
                                               r["measured_over_model"]))
    table.add_row("all_reduce", *cells(r["baseline_time"], r["baseline_model_time"],
                                       r["baseline_measured_over_model"]))
    out_console.print(table)
    out_console.print(said, markup=False)
