"""The ``topocoll`` command: thin sub-commands over the API.

Bad input ends with a one-line ``error: ...`` on stderr and exit status 2; ``verify`` exits 1
for a schedule that is invalid. Tables go to stdout, progress to stderr, ``--json`` prints JSON.
"""

import os
import sys

import click
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from .. import units
from ..studies.compare import check_plot_target, compare as _compare, describe_settings, fastest, \
    plot_comparison
from ..finder import Workload, find as _find, load_workload, plot_frontier
from ..schedule.cost import evaluate as _evaluate
from ..schedule.io import load_schedule, save_schedule
from ..schedule.verify import verify as _verify
from ..studies.survey import survey as _survey
from ..synth import ALGORITHMS, generate
from ..topology import (degree_summary, describe_families, diameter, moore_depth,
                        save_topology)
from ..topology.metrics import unreachable_pair
from ..units import format_size, format_time
from .common import (EXIT_INVALID, _Fail, _Group, _NullContext, _err, _load_topology, _out,
                     _print_json, _progress, _topo_options, _unit)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="topocoll")
def cli():
    """Design network topologies and collective schedules; verify and price them.

    \b
    topocoll topologies                                   families and their parameters
    topocoll info TOPO                                    size, degree, diameter, Moore depth
    topocoll schedule TOPO -c allreduce -a bfb -o s.json  make a schedule
    topocoll verify s.json                                exit 0 iff valid; says why not
    topocoll evaluate s.json --size 1MiB                  T_L, T_B, time, bounds, flags
    topocoll survey                                       the main job on built-in defaults
    topocoll compare torus:8x8 ring:64 s.json             schedules side by side, same network
    topocoll find --nodes 1024 --degree 4 -o out         best topology + schedule for a cluster
    topocoll synth TOPO -c allgather -o s.json            TEN (TACOS) synthesis, any network
    topocoll simulate s.json --size 1GiB                  link-model (TACOS) timing
    topocoll alltoall TOPO --json                         all-to-all throughput LP and bounds
    topocoll rewire TOPO -o t.json                        degree-keeping swaps for all-to-all
    topocoll gossip info one-peer-exp --nodes 16          gossip topologies, rho, cost
    """


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def topologies(as_json):
    """List the topology families and their spec syntax."""
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


@cli.command()
@click.argument("topo")
@_topo_options
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def info(topo, link_bandwidth, node_bandwidth, alpha, as_json):
    """Facts about a topology: nodes, links, degrees, diameter, Moore depth."""
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


@cli.command()
@click.argument("topo")
@click.option("-c", "--collective", required=True, help="allgather, reduce_scatter, allreduce, "
              "broadcast, reduce, scatter, gather or alltoall.")
@click.option("-a", "--algorithm", default="bfb", show_default=True,
              type=click.Choice(sorted(ALGORITHMS)), help="Schedule generator.")
@click.option("--root", type=int, help="Root node of a rooted collective (default 0).")
@_topo_options
@click.option("-o", "--output", help="Write the schedule file here ('-' for stdout).")
@click.option("--chunks", type=click.IntRange(1), help="bfb: cut every shard into K equal chunks; "
              "every transfer moves whole chunks (reports the loss against the fractional "
              "optimum).")
@click.option("--size", callback=_unit(units.parse_size, "--size"), help="bfb: buffer size M; "
              "balance latency + load per link for this size (heterogeneous links).")
@click.option("--workers", type=click.IntRange(1), help="bfb: processes for the load-balancing "
              "problems (default: every core).")
@click.option("--no-symmetry", is_flag=True, help="bfb: solve every node's problems even on "
              "vertex-transitive topologies.")
@click.option("-O", "--option", "extra", multiple=True, metavar="KEY=VALUE",
              help="Another algorithm option, e.g. -O shift=3 for shiftedring (repeatable).")
@click.option("--no-verify", is_flag=True, help="Skip the independent check of the result.")
def schedule(topo, collective, algorithm, root, link_bandwidth, node_bandwidth, alpha, output,
             chunks, size, workers, no_symmetry, extra, no_verify):
    """Make a schedule for COLLECTIVE on TOPO (a spec such as torus:4x4, or a file)."""
    t = _load_topology(topo, link_bandwidth, alpha, node_bandwidth)
    options = {}
    for item in extra:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise _Fail(f"--option {item!r}: expected KEY=VALUE")
        options[key.strip()] = value.strip()
    for key, value in (("chunks", chunks), ("size", size), ("workers", workers)):
        if value is not None:
            options[key] = value
    if no_symmetry:
        options["symmetry"] = False
    update, bar = _progress(f"{algorithm} {collective} on {t.name}")
    with bar:
        s = generate(t, collective, algorithm, root=root, progress=update, **options)
    status = "not verified"
    if not no_verify:
        report = _verify(s)
        if not report.valid:  # a generator bug: say so rather than hand out a wrong schedule
            raise _Fail(f"generated schedule failed verification: {report.summary()}",
                        EXIT_INVALID)
        status = "verified"
    if output == "-":
        save_schedule(s, sys.stdout.buffer)
        sys.stdout.flush()
    elif output:
        save_schedule(s, output)
    where = f", written to {output}" if output and output != "-" else ""
    notes = ""
    if "chunk_loss" in s.meta:
        notes = (f"; {s.meta['chunks']} chunks per shard cost {100 * s.meta['chunk_loss']:.2f}% "
                 f"bandwidth time over the fractional optimum (bound "
                 f"{100 * s.meta['chunk_loss_bound']:.2f}%)")
    click.echo(f"{s.algorithm} {s.collective.name} on {t.name}: {s.num_steps} steps, "
               f"{s.num_transfers} transfers, {status}{where}{notes}", err=output == "-")


@cli.command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--max-errors", default=10, show_default=True, type=click.IntRange(1),
              help="How many violations to list.")
def verify(file, as_json, max_errors):
    """Check a schedule file; exit 0 iff it is valid, else list the first violations."""
    s = load_schedule(file)
    report = _verify(s, max_errors=max_errors)
    if as_json:
        _print_json(report.to_dict())
    else:
        click.echo(report.summary())
        if not report.valid:
            counts = ", ".join(f"{k}: {v}" for k, v in report.counts.items())
            click.echo(f"  {report.error_count} violations ({counts}); first ones:")
            for e in report.errors:
                click.echo(f"  - [{e.kind}] {e.message}")
        for w in report.warnings:
            click.echo(f"  note: {w}")
    sys.exit(0 if report.valid else EXIT_INVALID)


@cli.command()
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--size", "sizes", multiple=True, default=("1MiB",), show_default=True,
              callback=_unit(units.parse_size, "--size"), help="Buffer size M (repeatable).")
@_topo_options
@click.option("--json", "as_json", is_flag=True, help="Print JSON (one object per size).")
def evaluate(file, sizes, link_bandwidth, node_bandwidth, alpha, as_json):
    """Price a schedule file: T_L, T_B, time, lower bounds and optimality flags."""
    s = load_schedule(file)
    if node_bandwidth is not None:
        s = s.replace(topology=s.topology.with_node_bandwidth(node_bandwidth))
    from ..schedule.linkmodel import simulate as _link_model  # TACOS link model beside the steps
    results = [_evaluate(s, m, alpha=alpha, link_bandwidth=link_bandwidth) for m in sizes]
    link_times = [_link_model(s, m, alpha=alpha, link_bandwidth=link_bandwidth).time
                  for m in sizes]
    if as_json:
        docs = [dict(r.to_dict(), link_model_time=lt) for r, lt in zip(results, link_times)]
        _print_json(docs[0] if len(docs) == 1 else docs)
        return
    e0 = results[0]
    _out.print(f"{e0.algorithm} {e0.collective} on {e0.topology}: {e0.nodes} nodes, degree "
               f"{e0.degree}, {e0.steps} steps (diameter {e0.diameter}, Moore depth "
               f"{e0.moore_steps}), T_L {format_time(e0.T_L)}")
    table = Table()
    for col in ("size", "T_B", "time", "T_B bound", "T_B / bound", "bw-optimal",
                "link-model time"):
        table.add_column(col, justify="right")
    for e, lt in zip(results, link_times):
        table.add_row(format_size(e.size), format_time(e.T_B), format_time(e.time),
                      format_time(e.bw_lower_bound), f"{e.bw_ratio:.4f}",
                      "yes" if e.bw_optimal else "no", format_time(lt))
    _out.print(table)
    flags = [name for name, ok in (("diameter-optimal", e0.diameter_optimal),
                                   ("Moore-optimal", e0.moore_optimal)) if ok]
    _out.print("flags: " + (", ".join(flags) if flags else "none"))


@cli.command()
@click.option("--nodes", default=64, show_default=True, type=click.IntRange(4),
              help="Cluster size N.")
@click.option("--topology", "specs", multiple=True, help="Topology spec (repeatable; default: "
              "tori, hypercube, circulant, generalized Kautz and ring of N nodes).")
@click.option("--size", "sizes", multiple=True, default=("1MiB", "256MiB"), show_default=True,
              callback=_unit(units.parse_size, "--size"), help="Buffer size M (repeatable).")
@click.option("--alpha", default="10us", show_default=True,
              callback=_unit(units.parse_time, "--alpha"), help="Per-step latency.")
@click.option("--node-bandwidth", default="100Gbps", show_default=True,
              callback=_unit(units.parse_bandwidth, "--node-bandwidth"),
              help="Egress bandwidth of each node, split over its links.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def survey(nodes, specs, sizes, alpha, node_bandwidth, as_json):
    """BFB allreduce on several topologies of N nodes next to bounds and the ring allreduce."""
    update, bar = _progress("survey")
    with bar:
        rows = _survey(nodes, specs=specs or None, sizes=sizes, alpha=alpha,
                       node_bandwidth=node_bandwidth, progress=update)
    if as_json:
        _print_json(rows)
        return
    table = Table(title=f"allreduce on {nodes} nodes, alpha {format_time(alpha)}, "
                        f"{units.format_bandwidth(node_bandwidth)} per node "
                        "(bound: Moore-depth steps + bandwidth-optimal T_B for that degree)")
    for col in ("topology", "algo", "d", "verified", "steps", "T_L"):
        table.add_column(col, justify="right")
    for m in sizes:
        label = format_size(m)
        table.add_column(f"T_B@{label}", justify="right")
        table.add_column(f"time@{label}", justify="right")
        table.add_column(f"bound@{label}", justify="right")
        table.add_column(f"x bound", justify="right")
    ring = rows[-1]
    for r in rows:
        cells = [r["topology"], r["algorithm"], str(r["degree"]), "yes" if r["verified"] else "NO",
                 str(r["steps"]), format_time(r["T_L"])]
        for c in r["sizes"]:
            cells += [format_time(c["T_B"]), format_time(c["time"]),
                      format_time(c["time_lower_bound"]), f"{c['ratio']:.2f}"]
        table.add_row(*cells)
    _out.print(table)
    best = {i: min(rows, key=lambda r: r["sizes"][i]["time"]) for i in range(len(sizes))}
    for i, m in enumerate(sizes):
        b = best[i]
        speedup = ring["sizes"][i]["time"] / b["sizes"][i]["time"]
        _out.print(f"{format_size(m)}: fastest is {b['topology']} ({b['algorithm']}), "
                   f"{speedup:.2f}x the classic ring allreduce")


@cli.command()
@click.argument("entries", metavar="TOPO-OR-SCHEDULE...", nargs=-1, required=True)
@click.option("-c", "--collective", default="allreduce", show_default=True,
              help="Collective generated for topology entries (schedule files keep their own).")
@click.option("-a", "--algorithm", "algorithms", multiple=True, default=("bfb",),
              show_default=True, type=click.Choice(sorted(ALGORITHMS)),
              help="Generator run on every topology entry (repeatable: one row each).")
@click.option("--size", "sizes", multiple=True, default=("1KiB", "1MiB", "64MiB", "1GiB"),
              show_default=True, callback=_unit(units.parse_size, "--size"),
              help="Buffer size M (repeatable).")
@click.option("--alpha", default="10us", show_default=True,
              callback=_unit(units.parse_time, "--alpha"), help="Latency of every link.")
@click.option("--node-bandwidth", callback=_unit(units.parse_bandwidth, "--node-bandwidth"),
              help="Egress bandwidth of each node, split evenly over its out-links "
                   "[default: 100Gbps unless --link-bandwidth is given].")
@click.option("--link-bandwidth", callback=_unit(units.parse_bandwidth, "--link-bandwidth"),
              help="Bandwidth of every link instead of --node-bandwidth.")
@click.option("--plot", "plot", type=click.Path(dir_okay=False),
              help="Also draw time against size (log-log) into this file, e.g. compare.png "
                   "(needs matplotlib: pip install 'topocoll[plot]').")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def compare(entries, collective, algorithms, sizes, alpha, node_bandwidth, link_bandwidth, plot,
            as_json):
    """Verify and price schedules side by side on the same latency and bandwidth.

    Each TOPO-OR-SCHEDULE is a schedule file (.json with "format": "topocoll.schedule") or a
    topology spec or file, for which a schedule is made with every --algorithm. Prints T_L, T_B,
    time and time over the lower bound (steps bound x alpha + T_B bound) at each --size, and the
    fastest entry at each size. Exits 1 if any schedule fails verification (it is listed, not
    priced), 2 on bad input.
    """
    if node_bandwidth is not None and link_bandwidth is not None:
        raise _Fail("give --node-bandwidth or --link-bandwidth, not both")
    if plot:
        check_plot_target(plot)  # fail before the work, not after it
    update, bar = _progress("compare")
    with bar:
        rows = _compare(entries, sizes=sizes, collective=collective, algorithms=algorithms,
                        alpha=alpha, node_bandwidth=node_bandwidth,
                        link_bandwidth=link_bandwidth, progress=update)
    settings = describe_settings(alpha, node_bandwidth, link_bandwidth)
    if plot:
        plot_comparison(rows, plot)
    invalid = [r for r in rows if r.status == "invalid"]
    if as_json:
        winners = [fastest(rows, i) for i in range(len(sizes))]
        _print_json({"collective": collective, "alpha": alpha,
                     "node_bandwidth": rows[0].node_bandwidth,
                     "link_bandwidth": link_bandwidth, "sizes": list(sizes),
                     "valid": not invalid, "rows": [r.to_dict() for r in rows],
                     "fastest": [{"size": m, "name": w.name if w else None}
                                 for m, w in zip(sizes, winners)],
                     "plot": plot})
    else:
        _print_comparison(rows, sizes, settings, plot)
    if invalid:
        sys.exit(EXIT_INVALID)


def _print_comparison(rows, sizes, settings, plot):
    colls = sorted({r.collective for r in rows})
    what = colls[0] if len(colls) == 1 else "mixed collectives"
    table = Table(title=f"{what}, {settings} on every entry; x bound = time / (steps bound x "
                        "alpha + T_B bound); * fastest at that size")
    for col in ("entry", "N", "d", "verified", "steps", "T_L"):
        table.add_column(col, justify="left" if col == "entry" else "right")
    if len(colls) > 1:
        table.add_column("collective")
    for m in sizes:
        label = format_size(m)
        table.add_column(f"T_B@{label}", justify="right")
        table.add_column(f"time@{label}", justify="right")
        table.add_column("x bound", justify="right")
    for r in rows:
        verified = {True: "yes", False: "NO"}.get(r.verified, "-")
        cells = [escape(r.name), str(r.nodes), str(r.degree), verified,
                 "-" if r.steps is None else str(r.steps),
                 "-" if r.T_L is None else format_time(r.T_L)]
        if len(colls) > 1:
            cells.append(r.collective)
        if r.priced:
            for c in r.sizes:
                ratio = "-" if c.ratio is None else f"{c.ratio:.2f}"
                cells += [format_time(c.T_B), format_time(c.time) + (" *" if c.fastest else ""),
                          ratio]
        else:
            cells += [r.status] + ["-"] * (3 * len(sizes) - 1)
        table.add_row(*cells)
    _out.print(table)
    for i, m in enumerate(sizes):
        best = fastest(rows, i)
        if best is None:
            continue
        c = best.sizes[i]
        others = sorted((r for r in rows if r.priced and r is not best),
                        key=lambda r: r.sizes[i].time)
        line = (f"fastest at {format_size(m)}: {best.name}, {format_time(c.time)}"
                + ("" if c.ratio is None else f" ({c.ratio:.2f}x its lower bound)"))
        if others:
            nxt = others[0]
            slower = nxt.sizes[i].time / c.time
            pct = 100 * (slower - 1)
            by = (f"{pct:.2g}% slower" if pct < 10 else f"{slower:.2f}x slower") \
                if pct > 1e-7 else "as fast"
            line += f"; next {nxt.name}, {by}"
        _out.print(line, markup=False)
    for r in rows:
        if not r.priced:
            _out.print(f"{r.status}: {r.name}: {r.reason}", markup=False)
    if plot:
        _out.print(f"plot written to {plot}", markup=False)


@cli.command()
@click.option("-n", "--nodes", required=True, type=int, help="Cluster size N (>= 2).")
@click.option("-d", "--degree", required=True, type=int,
              help="Links (ports) per node d (>= 1); candidates use at most d neighbours.")
@click.option("--alpha", default="10us", show_default=True,
              callback=_unit(units.parse_time, "--alpha"), help="Latency of every link.")
@click.option("--node-bandwidth", default="100Gbps", show_default=True,
              callback=_unit(units.parse_bandwidth, "--node-bandwidth"),
              help="Egress bandwidth B of each node, split evenly over its links.")
@click.option("--size", "sizes", multiple=True, callback=_unit(units.parse_size, "--size"),
              help="Allreduce buffer size M (repeatable: one allreduce each) [default: 1MiB].")
@click.option("--sizes", "sizes_file", type=click.Path(dir_okay=False),
              help="Workload file: a JSON list of a model's layer sizes in bytes (bucketed, see "
                   "--bucket-size), {\"sizes\": [[SIZE, WEIGHT], ...]}, or lines SIZE [WEIGHT].")
@click.option("--bucket-size", callback=_unit(units.parse_size, "--bucket-size"),
              help="With a layer list: fuse gradients into buckets of this size, one allreduce "
                   "per bucket (PyTorch DDP uses 25MiB) [default: one allreduce per layer].")
@click.option("-o", "--output", "outdir", type=click.Path(file_okay=False),
              help="Write topology.json, allreduce.json (the verified schedule) and "
                   "frontier.png into this folder (created if missing).")
@click.option("--no-evaluate", is_flag=True,
              help="Predictions only: do not build, verify and evaluate the choice.")
@click.option("--no-cache", is_flag=True, help="Neither read nor write the results cache.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def find(nodes, degree, alpha, node_bandwidth, sizes, sizes_file, bucket_size, outdir,
         no_evaluate, no_cache, as_json):
    """The best topology and allreduce schedule for N nodes of degree d and a workload.

    Searches base topologies, expansions and generative families, keeps the Pareto frontier of
    (steps, T_B), picks the fastest for the workload, then builds its allreduce, verifies it
    and evaluates it. Prints the frontier, the choice, its predicted and evaluated time and
    the ratio to the lower bound 2*(Moore steps*alpha + (N-1)/N*M/B).
    """
    if nodes < 2:
        raise _Fail(f"--nodes must be at least 2, got {nodes}")
    if degree < 1:
        raise _Fail(f"--degree must be at least 1, got {degree}")
    if sizes and sizes_file:
        raise _Fail("give --size or --sizes, not both")
    if bucket_size is not None and not sizes_file:
        raise _Fail("--bucket-size applies to a layer list given with --sizes")
    if sizes_file:
        workload = load_workload(sizes_file, bucket_size=bucket_size)
    elif sizes:
        workload = (Workload.single(sizes[0]) if len(sizes) == 1
                    else Workload.weighted([(m, 1) for m in sizes]))
    else:
        workload = Workload.single("1MiB")
    plot_ok = True
    if outdir:
        try:
            os.makedirs(outdir, exist_ok=True)
        except OSError as exc:
            raise _Fail(f"cannot create {outdir}: {exc.strerror}") from None
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            plot_ok = False
    update, bar = _find_progress()
    with bar:
        result = _find(nodes, degree, workload, alpha=alpha, node_bandwidth=node_bandwidth,
                       evaluate=not no_evaluate or bool(outdir), keep_schedule=bool(outdir),
                       cache=not no_cache, progress=update)
    for note in result.warnings:
        click.echo(f"warning: {note}", err=True)
    files = {}
    if outdir and result.schedule is not None:
        files["topology"] = os.path.join(outdir, "topology.json")
        files["schedule"] = os.path.join(outdir, "allreduce.json")
        save_topology(result.schedule.topology, files["topology"])
        save_schedule(result.schedule, files["schedule"])
        if plot_ok:
            files["plot"] = os.path.join(outdir, "frontier.png")
            plot_frontier(result, files["plot"])
        else:
            click.echo("warning: no frontier plot: matplotlib is not installed "
                       "(pip install 'topocoll[plot]')", err=True)
    if as_json:
        doc = result.to_dict()
        doc["files"] = files
        _print_json(doc)
    else:
        _print_find(result, files)
    if not result.success:
        raise _Fail(result.message, EXIT_INVALID)


def _find_progress():
    """A stage-by-stage progress line on stderr when it is a terminal."""
    if not _err.is_terminal:
        return None, _NullContext()
    bar = Progress(TextColumn("{task.description}"), BarColumn(), TimeElapsedColumn(),
                   console=_err, transient=True)
    task = bar.add_task("searching", total=None)

    def update(stage, done, total):
        bar.update(task, description=escape(stage), completed=done, total=total)
    return update, bar


def _print_find(result, files):
    settings = (f"alpha {format_time(result.alpha)}, "
                f"{units.format_bandwidth(result.node_bandwidth)} per node; "
                f"{result.workload.description}")
    table = Table(title=f"Pareto frontier for {result.nodes} nodes of degree {result.degree} "
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
    _out.print(table)
    best = result.best
    if best is None:
        return
    line = (f"choice: {best.name}, predicted {format_time(result.predicted_time)}")
    if result.evaluated_time is not None:
        ev = result.evaluation
        line += (f", evaluated {format_time(result.evaluated_time)} (allreduce of "
                 f"{ev['steps']} steps, {ev['transfers']} transfers, verified"
                 f"{', from the cache' if ev['source'] == 'cache' else ''})")
    line += f"; lower bound {format_time(result.lower_bound)}"
    ratio = result.ratio if result.ratio is not None else result.predicted_ratio
    line += f": {ratio:.3f}x"
    _out.print(line, markup=False)
    if result.status == 2:
        _out.print(result.message, markup=False)
    if files:
        _out.print("wrote " + ", ".join(files.values()), markup=False)


# Sub-commands of the later jobs live in their own modules (cli/<job>.py), each defining one
# click command or group; they register here. Imported last: they use cli/common.py only.
from .alltoall import alltoall as _alltoall  # noqa: E402
from .gossip import gossip as _gossip  # noqa: E402
from .rewire import rewire as _rewire  # noqa: E402
from .synth import simulate as _simulate, synth as _synth  # noqa: E402

for _command in (_synth, _simulate, _alltoall, _rewire, _gossip):
    cli.add_command(_command)


def main(argv=None):
    """Entry point of the ``topocoll`` console script: errors are one line, never a traceback."""
    try:
        code = cli.main(args=argv, prog_name="topocoll", standalone_mode=False)
    except click.exceptions.Exit as exc:
        code = exc.exit_code
    except click.ClickException as exc:  # usage errors and ours: one line, no usage banner
        message = exc.format_message() if not isinstance(exc, _Fail) else exc.message
        click.echo(f"error: {message}", err=True)
        code = exc.exit_code
    except click.exceptions.Abort:
        click.echo("error: aborted", err=True)
        code = 130
    except KeyboardInterrupt:
        click.echo("error: interrupted", err=True)
        code = 130
    sys.exit(code or 0)


if __name__ == "__main__":
    main()
