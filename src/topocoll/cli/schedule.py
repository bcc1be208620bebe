"""``topocoll schedule`` (make one), ``verify`` (check one) and ``evaluate`` (price one)."""

import sys

import click

from .. import defaults, units
from ..errors import FileAccessError, ScheduleFormatError
from ..schedule.forms import FORMS
from ..schedule.io import load_schedule, save_schedule
from ..schedule.verify import verify as _verify
from ..units import format_size, format_time
from ..results import Status, document
from .common import (EXIT_INVALID, check_output_option, Fail, LazyChoice, load_topology_arg,
                     on_stdout, out_console, print_json, progress_bar, topo_options, unit_callback,
                     workers_callback, gamma_option)

__all__ = ["schedule", "verify", "evaluate", "FORMS"]


#: The fields of an evaluation that do not depend on the size (the top of evaluate's --json).
_SIZE_FREE = ("collective", "algorithm", "topology", "nodes", "degree", "steps", "T_L",
              "diameter", "steps_lower_bound", "diameter_optimal", "moore_steps",
              "moore_optimal")


def _algorithm_names():
    """The generators' names, for ``-a`` (the table imports every generator: when needed)."""
    from ..synth import ALGORITHMS

    return sorted(ALGORITHMS)


def _show_options(ctx, param, value):
    """``--show-options NAME``: print a generator's options (``all``: every generator's), as
    ``topocoll.show_options`` gives them, and stop (before TOPO is asked for, as --help)."""
    if value is None or ctx.resilient_parsing:
        return
    from ..synth import show_options

    if value != "all" and value not in _algorithm_names():
        raise click.BadParameter(f"{value!r} is not a generator; one of all, "
                                 f"{', '.join(_algorithm_names())}", ctx, param)
    click.echo(show_options(None if value == "all" else value))
    ctx.exit(0)


@click.command()
@click.argument("topo")
@click.option("--show-options", metavar="ALGORITHM", expose_value=False, is_eager=True,
              callback=_show_options, help="Print an algorithm's options (their defaults and "
              "what they do; 'all' for every algorithm) and exit.")
@click.option("-c", "--collective", required=True, help="allgather, reduce_scatter, allreduce, "
              "broadcast, reduce, scatter, gather or alltoall.")
@click.option("-a", "--algorithm", type=LazyChoice(_algorithm_names),
              help="Schedule generator [default: bfb; lp for alltoall: the path LP's routes, "
              "pipelined to near the LP's time]. ten is a shortcut to `topocoll synth` (its "
              "options as -O KEY=VALUE).")
@click.option("--root", type=int, help="Root node of a rooted collective (default 0).")
@topo_options
@click.option("-o", "--output", help="Write the schedule file here ('-' for stdout).")
@click.option("--chunks", type=click.IntRange(1), help="bfb: cut every shard into K equal chunks; "
              "every transfer moves whole chunks (reports the loss against the fractional "
              "optimum).")
@click.option("--size", callback=unit_callback(units.parse_size, "--size"),
              help="bfb: buffer size M; "
              "balance latency + load per link for this size (heterogeneous links). lp "
              "(alltoall): at most as many rounds as keep link latencies within 5% of the LP "
              f"time at this size, which is also the size it is priced at [default for lp: "
              f"{units.format_size(defaults.SIZE)}].")
@click.option("--workers", type=click.IntRange(1), callback=workers_callback,
              help="bfb: processes for the load-balancing problems (default: every core).")
@click.option("--no-symmetry", is_flag=True, help="bfb: solve every node's problems even on "
              "vertex-transitive topologies.")
@click.option("-O", "--option", "extra", multiple=True, metavar="KEY=VALUE",
              help="Another algorithm option, e.g. -O shift=3 for shiftedring, -O rounds=4 "
                   "for lp, -O method=ilp for ten (repeatable; each generator's options with "
                   "their defaults: --show-options NAME).")
@click.option("--no-verify", is_flag=True, help="Skip the independent check of the result.")
@click.option("--form", type=click.Choice(FORMS), default="auto", show_default=True,
              help="explicit: every transfer; symmetric: one representative per orbit of the "
              "topology's translations (allgather, reduce_scatter, allreduce; see "
              "docs/format.md); compact: whole-chunk copies in narrow columns (collectives that "
              "only copy; written as the explicit file); auto: symmetric (or, for ten, compact) "
              "only where the explicit form would be too large.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON: what was made, where, and "
              "the generator's meta.")
def schedule(*, topo, collective, algorithm, root, link_bandwidth, node_bandwidth, alpha, output,
             chunks, size, workers, no_symmetry, extra, no_verify, form, as_json):
    """Make a schedule for COLLECTIVE on TOPO (a spec such as torus:4x4, or a file).

    Every generator of ``topocoll.synth.generate`` is an --algorithm here. Two of them have a
    command of their own, the door to the job, with its options as flags: ``-a ten -O KEY=VALUE``
    is a shortcut to ``topocoll synth`` (TEN synthesis, e.g. ``-O method=ilp`` is ``synth -a
    ilp``). ``-a lp`` pipelines the routes of the all-to-all path LP; the LP itself (its
    throughput, bounds, frontier, and a hop-by-hop schedule with -o) is ``topocoll alltoall``.

    --json prints one object: the status keys (success, status, status_name, message: the line
    the command prints otherwise), collective, algorithm, topology, nodes, root, steps,
    transfers, form (symmetric: also representatives and symmetry), verified, output and the
    generator's meta; lp adds size, lp_time, T_L, T_B, time and their ratios to the LP time at
    that size.
    """
    from ..synth import generate  # imported when first needed (start-up time)
    from ..synth.summary import generator_summary

    check_output_option(output, None)
    to_stdout = on_stdout(output)
    t = load_topology_arg(topo, link_bandwidth, alpha, node_bandwidth)
    options = {}
    for item in extra:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise Fail(f"--option {item!r}: expected KEY=VALUE")
        options[key.strip()] = value.strip()
    for key, value in (("chunks", chunks), ("size", size), ("workers", workers)):
        if value is not None:
            options[key] = value
    if no_symmetry:
        options["symmetry"] = False
    if algorithm is None:
        algorithm = "lp" if collective.strip().lower() == "alltoall" else "bfb"
    if algorithm == "lp":   # one size M: the rounds are chosen for it and the report is at it
        options.setdefault("size", defaults.SIZE)
    update, bar = progress_bar(f"{algorithm} {collective} on {t.name}")
    status = "not verified"
    with bar:
        s = generate(t, collective, algorithm, root=root, progress=update, form=form, **options)
        if not no_verify:
            update(f"verifying {s.num_transfers} transfers", 0, None)
            report = _verify(s)
            if not report.valid:  # a generator bug: say so rather than hand out a wrong one
                raise Fail(f"generated schedule failed verification: {report.summary()}",
                           EXIT_INVALID)
            status = "verified"
        if output:
            update(f"writing {output}", 0, None)
            save_schedule(s, output)
    where = f", written to {output}" if output and not to_stdout else ""
    summary = generator_summary(s, t, size=options.get("size"))   # the generator's own meta
    line = (f"{s.algorithm} {s.collective.name} on {t.name}: {s.num_steps} steps, "
            f"{s.num_transfers} transfers{s.form_note()}, {status}{where}{summary.text}")
    if as_json:   # {status keys, collective, algorithm, topology, ..., verified, output, meta}
        print_json(document(summary.status, line, collective=s.collective.name,
                             algorithm=s.algorithm, topology=t.name, nodes=s.num_nodes, root=s.root,
                             steps=s.num_steps, transfers=s.num_transfers, **s.form_facts(),
                             verified=status == "verified", output=output, **summary.facts,
                             meta=dict(s.meta)), err=to_stdout)
        return
    click.echo(line, err=to_stdout)


@click.command()
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--max-errors", default=10, show_default=True, type=click.IntRange(1),
              help="How many violations to list.")
def verify(file, as_json, max_errors):
    """Check a schedule file; exit 0 iff it is valid, else list the first violations.

    FILE may be '-' (standard input) and may be gzip-compressed. A file that breaks the format
    rules is reported as invalid (exit 1) like any other violation; one that cannot be read at
    all is bad input (exit 2). An MSCCL XML file (.xml) is linted as ``topocoll lint`` does."""
    if str(file).lower().endswith(".xml"):
        from .interop import lint_file  # the MSCCL tools load only for XML

        lint_file(file, None, as_json)
    update, bar = progress_bar(f"verify {file}")
    with bar:
        update("reading", 0, None)
        try:
            s = load_schedule(file)
        except FileAccessError:
            raise
        except ScheduleFormatError as exc:
            _format_invalid(str(exc), as_json)
        update(f"checking {s.num_transfers} transfers", 0, None)
        report = _verify(s, max_errors=max_errors)
    if as_json:   # {status keys (SUCCESS or INVALID), valid, counts, errors, warnings, ...}
        print_json(document(Status.SUCCESS if report.valid else Status.INVALID,
                             report.summary(), report.to_dict()))
    else:
        click.echo(report.summary())
        if not report.valid:
            counts = ", ".join(f"{k}: {v}" for k, v in report.counts.items())
            noun = "violation" if report.error_count == 1 else "violations"
            click.echo(f"  {report.error_count} {noun} ({counts}); first ones:")
            for e in report.errors:
                click.echo(f"  - [{e.kind}] {e.message}")
        for w in report.warnings:
            click.echo(f"  note: {w}")
    sys.exit(0 if report.valid else EXIT_INVALID)


def _format_invalid(message, as_json):
    """Report a file that breaks the format rules as an invalid schedule, then exit 1."""
    if as_json:
        print_json(document(Status.INVALID, f"invalid: {message}", valid=False,
                             collective=None, nodes=None, steps=None, transfers=None,
                             error_count=1, counts={"format": 1},
                             errors=[{"kind": "format", "message": message}], warnings=[]))
    else:
        click.echo(f"invalid: {message}")
    sys.exit(EXIT_INVALID)


@click.command()
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--size", "sizes", multiple=True, default=(units.format_size(defaults.SIZE),), show_default=True,
              callback=unit_callback(units.parse_size, "--size"),
              help="Buffer size M (repeatable).")
@topo_options
@gamma_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON: one object, with one entry "
              "per size in its list sizes.")
def evaluate(file, sizes, link_bandwidth, node_bandwidth, alpha, gamma, as_json):
    """Price a schedule file: T_L, T_B, time, lower bounds and optimality flags.

    T_L, T_B and time are the step model's (alpha-beta: each step costs its largest link
    latency plus its largest bytes / bandwidth). The last column, link-model time, is the same
    schedule in the link model, where a link carries one transfer at a time for its latency +
    bytes / bandwidth and starts as soon as the data is there, with no step barriers: a
    shortcut to ``topocoll simulate FILE --comm-model both``, the command for the link model.
    --gamma prices reductions in both (T_gamma: each step adds gamma x the most bytes a node
    reduces in it; time = T_L + T_B + T_gamma).

    --json prints one object whatever the number of sizes: the status keys (success, status,
    status_name, message), file, the schedule's size-free facts (collective, algorithm,
    topology, nodes, degree, steps, T_L, diameter, moore_steps, optimality flags), its form
    (symmetric files: also representatives and symmetry; priced from the representatives) and
    "sizes",
    a list with one entry per --size (every field of the evaluation at that size, and
    link_model_time).
    """
    from ..schedule.cost import evaluate as _evaluate
    from ..schedule.linkmodel import simulate as _link_model

    update, bar = progress_bar(f"evaluate {file}")
    with bar:
        update("reading", 0, None)
        s = load_schedule(file)
        if node_bandwidth is not None:
            s = s.replace(topology=s.topology.with_node_bandwidth(node_bandwidth))
        update(f"verifying and pricing {s.num_transfers} transfers", 0, None)
        results = [_evaluate(s, m, alpha=alpha, link_bandwidth=link_bandwidth, gamma=gamma)
                   for m in sizes]
        update("timing in the link model", 0, None)
        link_times = [_link_model(s, m, alpha=alpha, link_bandwidth=link_bandwidth,
                                  gamma=gamma).time for m in sizes]
    e0 = results[0]
    bandwidth = _priced_bandwidth(s.topology, link_bandwidth, node_bandwidth)
    if as_json:   # one object for any number of sizes; each size's prices in "sizes"
        facts = {key: getattr(e0, key) for key in _SIZE_FREE}
        print_json(document(
            Status.SUCCESS, f"{e0.algorithm} {e0.collective} on {e0.topology}: {e0.steps} "
            f"steps, priced at {len(results)} size{'s' if len(results) > 1 else ''}",
            file=file, bandwidth=bandwidth, **facts, **s.form_facts(),
            sizes=[dict(r.to_dict(), link_model_time=lt) for r, lt in zip(results, link_times)]))
        return
    out_console.print(f"{e0.algorithm} {e0.collective} on {e0.topology}: {e0.nodes} nodes, degree "
               f"{e0.degree}, {e0.steps} steps (diameter {e0.diameter}, Moore depth "
               f"{e0.moore_steps}), T_L {format_time(e0.T_L)}{s.form_note()}")
    out_console.print(f"priced with {bandwidth}", markup=False)
    from rich.table import Table  # only for the table (start-up time of --json)

    table = Table()
    for col in ("size", "T_B") + (("T_gamma",) if gamma else ()) + (
            "time", "T_B bound", "T_B / bound", "bw-optimal", "link-model time"):
        table.add_column(col, justify="right")
    for e, lt in zip(results, link_times):
        table.add_row(format_size(e.size), format_time(e.T_B),
                      *((format_time(e.T_gamma),) if gamma else ()), format_time(e.time),
                      format_time(e.bw_lower_bound), f"{e.bw_ratio:.4f}",
                      "yes" if e.bw_optimal else "no", format_time(lt))
    out_console.print(table)
    flags = [name for name, ok in (("diameter-optimal", e0.diameter_optimal),
                                   ("Moore-optimal", e0.moore_optimal)) if ok]
    out_console.print("flags: " + (", ".join(flags) if flags else "none"))


def _priced_bandwidth(topology, link_bandwidth, node_bandwidth):
    """The bandwidth convention a price used, in words (every document names it: the
    file's own links, or what --link-bandwidth / --node-bandwidth set)."""
    if link_bandwidth is not None:
        return f"{units.format_bandwidth(link_bandwidth)} per link (--link-bandwidth)"
    if node_bandwidth is not None:
        return (f"{units.format_bandwidth(node_bandwidth)} per node, split over its links "
                "(--node-bandwidth)")
    return f"{topology.describe_bandwidth()} (the file's links)"
