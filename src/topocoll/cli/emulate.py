"""``topocoll emulate``: build a topology as an emulated network, look inside, take it down."""

import contextlib
import os
import signal
import time

import click
from rich.table import Table

from .. import units
from ..results import Status, document
from .common import (Fail, err_console, out_console, print_json, progress_bar, unit_callback)

__all__ = ["emulate", "network_options", "network_kwargs", "prepare", "running"]


def network_options(func):
    """The options that shape an emulated network (``emulate``, ``run --emulate``,
    ``gossip run``)."""
    options = [
        click.option("--link-bandwidth", callback=unit_callback(units.parse_bandwidth,
                                                                "--link-bandwidth"),
                     help="Emulated rate of the fastest link, e.g. 25Mbps (others keep their "
                     "ratio to it) [default: 25Mbps, less where the host cannot carry it]."),
        click.option("--scale", type=click.FloatRange(min=0, min_open=True),
                     help="Emulated rate = the topology's bandwidth x SCALE (instead of "
                     "--link-bandwidth)."),
        click.option("--mtu", type=click.IntRange(1280, 65535), default=65000,
                     show_default=True, help="MTU of every link (large frames keep the host's "
                     "cores out of the measurement)."),
        click.option("--latency", callback=unit_callback(units.parse_time, "--latency"),
                     help="Delay per link, e.g. 1ms (needs the kernel's netem qdisc)."),
        click.option("--no-capacity-check", is_flag=True, help="Do not probe the host before "
                     "building (its cores may then set the pace, not the links)."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def network_kwargs(link_bandwidth, scale, mtu, latency, no_capacity_check):
    """Keyword arguments of :class:`~topocoll.emulate.EmulatedNetwork` from the options."""
    if link_bandwidth is not None and scale is not None:
        raise Fail("give --link-bandwidth or --scale, not both")
    return {"link_bandwidth": link_bandwidth, "scale": scale, "mtu": mtu, "latency": latency,
            "check_capacity": not no_capacity_check}


def prepare():
    """Before numpy is imported or any thread starts (numpy's thread pool, progress bars):
    privileges, or a user namespace."""
    from ..emulate.system import prepare_process

    return prepare_process()


@contextlib.contextmanager
def running(net):
    """Build ``net`` with a progress bar, say its notes, and take it down after the block."""
    update, bar = progress_bar("emulating")
    net.progress = update
    with bar:
        net.build()
    with net:
        for said in net.notes:
            err_console.print(f"note: {said}", markup=False)
        yield net


@click.command()
@click.argument("topology", required=False, metavar="TOPOLOGY")
@network_options
@click.option("--check", is_flag=True, help="Connect every node to every other once and "
              "measure one link's rate.")
@click.option("--calibrate", is_flag=True, help="Measure the model's constants (goodput, "
              "latency per message and per hop).")
@click.option("--shell", is_flag=True, help="Open a shell inside a node; the network goes when "
              "it exits.")
@click.option("--node", "shell_node", type=click.IntRange(0), default=0, show_default=True,
              help="The node --shell opens in.")
@click.option("--hold", is_flag=True, help="Keep the network until Ctrl-C, to look inside with "
              "the printed 'ip netns exec' lines.")
@click.option("--clean", is_flag=True, help="Remove the namespaces that killed runs left "
              "behind (topocoll's own only), then exit.")
@click.option("--force", is_flag=True, help="With --clean: also those of runs still alive.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def emulate(*, topology, link_bandwidth, scale, mtu, latency, no_capacity_check, check,
            calibrate, shell, shell_node, hold, clean, force, as_json):
    """Build TOPOLOGY as an emulated network (namespaces, shaped links, routes); take it down.

    Each node becomes a network namespace, each cable a veth pair shaped to its rate in each
    direction, and every node gets a route to every other along shortest paths (the nodes
    between forward). Switch nodes (switch:16, or "switches" in a topology file) forward and
    hold no rank. Needs root, or unprivileged user namespaces.

    \b
    topocoll emulate torus:4x4 --check              build, check every route, take down
    topocoll emulate torus:4x4 --calibrate --json   the model's constants on this host
    topocoll emulate switch:16 --shell              a shell inside node 0
    topocoll emulate torus:4x4 --hold               keep it; 'ip netns exec' lines on stderr
    topocoll emulate --clean                        remove what killed runs left behind
    topocoll run s.json --emulate --check           run a schedule on it (see 'run')
    """
    if clean:
        if topology is not None or check or calibrate or shell or hold:
            raise Fail("--clean removes what killed runs left behind, then exits: it takes no "
                       "TOPOLOGY, --check, --calibrate, --shell or --hold")
        _clean(force, as_json)
        return
    if topology is None:
        raise Fail("give a TOPOLOGY to emulate (a spec such as torus:4x4, or a file), or "
                   "--clean")
    if force:
        raise Fail("--force goes with --clean")
    if shell and hold:
        raise Fail("give --shell or --hold, not both")
    shaping = network_kwargs(link_bandwidth, scale, mtu, latency, no_capacity_check)
    prepare()   # first: numpy's threads would keep this process from a user namespace
    from ..emulate.network import EmulatedNetwork

    net = EmulatedNetwork(topology, **shaping)
    if shell and shell_node >= net.plan.num_nodes:
        raise Fail(f"--node {shell_node}: {net.topology.name} has nodes "
                   f"0..{net.plan.num_nodes - 1}")
    update, bar = progress_bar("building")
    net.progress = update
    with bar:
        net.build()
    try:
        out = {"build_seconds": net.build_seconds}
        _say_built(net, as_json)
        if check:
            out["check"] = _check(net)
        if calibrate:
            out["calibration"] = net.calibration().to_dict()
        if shell:
            out["shell_exit"] = _shell(net, shell_node)
        elif hold:
            _hold(net)
    finally:
        t0 = time.monotonic()
        net.close()
        out["teardown_seconds"] = time.monotonic() - t0
    _report(net, out, as_json)
    if check and out["check"]["failed"]:
        raise Fail(f"{len(out['check']['failed'])} routes do not reach their node, e.g. "
                   f"{out['check']['failed'][0][0]} -> {out['check']['failed'][0][1]}", 1)


def _say_built(net, as_json):
    for note in net.notes:
        err_console.print(f"note: {note}", markup=False)
    if not as_json:
        lines = net.shell_lines()
        err_console.print(f"{net.topology.name}: {net.plan.num_nodes} namespaces, "
                          f"{len(net.plan.cables)} cables, built in "
                          f"{net.build_seconds:.2f} s; inside a node:", markup=False)
        shown = lines if len(lines) <= 5 else lines[:4] + ["..."] + lines[-1:]
        for line in shown:
            err_console.print(f"  {line}", markup=False)


def _check(net):
    t0 = time.monotonic()
    failed = net.check()
    cable = next(c for c in net.plan.cables if c.linked_ab)
    measured = net.probe_link(cable.a, cable.b)
    return {"pairs": net.plan.num_nodes * (net.plan.num_nodes - 1),
            "failed": [list(p) for p in failed],
            "link": [cable.a, cable.b], "rate": cable.rate_ab, "measured_rate": measured,
            "measured_over_rate": measured / cable.rate_ab,
            "seconds": time.monotonic() - t0}


def _shell(net, node):
    shell = os.environ.get("SHELL") or "/bin/sh"
    err_console.print(f"a shell in node {node} ({net.plan.address(node)}); other nodes are "
                      "10.0.0.1 (node 0), 10.0.0.2 (node 1), ...; exit to take the network "
                      "down", markup=False)
    env = dict(os.environ, TOPOCOLL_NODE=str(node))
    proc = net.popen(node, [shell], env=env)
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)   # Ctrl-C is the shell's
    try:
        return proc.wait()
    finally:
        signal.signal(signal.SIGINT, previous)


def _hold(net):
    for line in net.shell_lines():
        err_console.print(line, markup=False)
    err_console.print("holding the network; Ctrl-C takes it down", markup=False)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass


def _report(net, out, as_json):
    doc = net.describe()
    doc.update(out)
    said = (f"{net.topology.name}: {net.plan.num_nodes} nodes, {len(net.plan.cables)} cables, "
            f"built in {out['build_seconds']:.2f} s, taken down in "
            f"{out['teardown_seconds']:.2f} s")
    check = out.get("check")
    if check:
        said += (f"; {check['pairs'] - len(check['failed'])} of {check['pairs']} routes reach "
                 f"their node; link {check['link'][0]}->{check['link'][1]} carries "
                 f"{check['measured_over_rate']:.3f}x its rate")
    if as_json:   # {status keys, the network's description, build/teardown seconds, ...}
        failed = bool(check and check["failed"])
        print_json(document(Status.INVALID if failed else Status.SUCCESS, said, doc))
        return
    out_console.print(said, markup=False)
    if "calibration" in out:
        c = out["calibration"]
        table = Table(title="calibration (the model's constants, measured)")
        for col in ("rate", "goodput", "goodput/rate", "alpha (1 hop)", "per further hop"):
            table.add_column(col, justify="right")
        table.add_row(units.format_bandwidth(c["rate"]), units.format_bandwidth(c["goodput"]),
                      f"{c['goodput_ratio']:.4f}", units.format_time(c["alpha"]),
                      units.format_time(c["hop_delay"])
                      + ("" if c["hop_delay_measured"] else " (est.)"))
        out_console.print(table)


def _clean(force, as_json):
    from ..emulate.runs import clean_leftovers
    from ..emulate.system import require_privileges

    if require_privileges() != "root":
        said = ("nothing to clean: without root, emulated networks live in a private user "
                "namespace and go with their process")
        removed = []
    else:
        removed = clean_leftovers(force=force)
        names = sum(len(r.namespaces) for r in removed)
        said = (f"removed {names} namespaces of {len(removed)} runs" if removed
                else "nothing to clean")
    if as_json:
        print_json(document(Status.SUCCESS, said, removed=[r.to_dict() for r in removed]))
    else:
        out_console.print(said, markup=False)
        for r in removed:
            out_console.print(f"  run {r.run} ({r.topology or 'unknown topology'}, process "
                              f"{r.pid if r.pid else '?'}): {len(r.namespaces)} namespaces",
                              markup=False)
