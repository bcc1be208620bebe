"""``topocoll schedule`` (make one), ``verify`` (check one) and ``evaluate`` (price one)."""

import sys

import click
from rich.table import Table

from .. import defaults, units
from ..schedule.cost import evaluate as _evaluate
from ..errors import FileAccessError, ScheduleFormatError
from ..schedule.io import load_schedule, save_schedule
from ..schedule.linkmodel import simulate as _link_model
from ..schedule.verify import verify as _verify
from ..synth import ALGORITHMS, generate
from ..units import format_size, format_time
from .common import EXIT_INVALID, _check_output, _Fail, _load_topology, _on_stdout, _out, \
    _print_json, _progress, _topo_options, _unit

__all__ = ["schedule", "verify", "evaluate"]


@click.command()
@click.argument("topo")
@click.option("-c", "--collective", required=True, help="allgather, reduce_scatter, allreduce, "
              "broadcast, reduce, scatter, gather or alltoall.")
@click.option("-a", "--algorithm", type=click.Choice(sorted(ALGORITHMS) + ["lp"]),
              help="Schedule generator [default: bfb; lp for alltoall: the path LP's routes, "
              "pipelined to near the LP's time].")
@click.option("--root", type=int, help="Root node of a rooted collective (default 0).")
@_topo_options
@click.option("-o", "--output", help="Write the schedule file here ('-' for stdout).")
@click.option("--chunks", type=click.IntRange(1), help="bfb: cut every shard into K equal chunks; "
              "every transfer moves whole chunks (reports the loss against the fractional "
              "optimum).")
@click.option("--size", callback=_unit(units.parse_size, "--size"), help="bfb: buffer size M; "
              "balance latency + load per link for this size (heterogeneous links). lp "
              "(alltoall): at most as many rounds as keep link latencies within 5% of the LP "
              "time at this size.")
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
    _check_output(output, None)
    to_stdout = _on_stdout(output)
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
    if algorithm is None:
        algorithm = "lp" if collective.strip().lower() == "alltoall" else "bfb"
    update, bar = _progress(f"{algorithm} {collective} on {t.name}")
    status = "not verified"
    with bar:
        if algorithm == "lp":
            s = _pipelined_alltoall(t, collective, options, update)
        else:
            s = generate(t, collective, algorithm, root=root, progress=update, **options)
        if not no_verify:
            update(f"verifying {s.num_transfers} transfers", 0, None)
            report = _verify(s)
            if not report.valid:  # a generator bug: say so rather than hand out a wrong one
                raise _Fail(f"generated schedule failed verification: {report.summary()}",
                            EXIT_INVALID)
            status = "verified"
        if output:
            update(f"writing {output}", 0, None)
            save_schedule(s, output)
    where = f", written to {output}" if output and not to_stdout else ""
    notes = ""
    if "chunk_loss" in s.meta:
        notes = (f"; {s.meta['chunks']} chunks per shard cost {100 * s.meta['chunk_loss']:.2f}% "
                 f"bandwidth time over the fractional optimum (bound "
                 f"{100 * s.meta['chunk_loss_bound']:.2f}%)")
    if s.meta.get("lp_time_per_byte"):
        from ..schedule.cost import step_costs

        ratio = float(step_costs(s)[2].sum()) / s.meta["lp_time_per_byte"]
        rounds = s.meta["rounds"]
        most = (rounds + s.meta["longest_path"] - 1) / rounds
        notes += (f"; {rounds} rounds, step-model T_B {ratio:.3f} x the LP time (bound "
                  f"{most:.3f})")
    if s.algorithm == "trees" and "optimum" in s.meta:
        from ..schedule.cost import bandwidth_lower_bound

        node = bandwidth_lower_bound(s.collective, t, s.root) / float(s.meta["optimum"])
        notes += (f"; {s.meta['trees']} trees of depth <= {s.meta['max_depth']}, "
                  f"{s.meta['chunks']} chunks: T_B {s.meta['ratio']:.4f} x the exact optimum "
                  f"T* (the node-bandwidth bound is {node:.4f} x T*)")
    click.echo(f"{s.algorithm} {s.collective.name} on {t.name}: {s.num_steps} steps, "
               f"{s.num_transfers} transfers, {status}{where}{notes}", err=to_stdout)


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
        from .interop import lint_file

        lint_file(file, None, as_json)
    update, bar = _progress(f"verify {file}")
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
    if as_json:
        _print_json(report.to_dict())
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


def _pipelined_alltoall(t, collective, options, update):
    """The all-to-all schedule of the LP's optimal routes, pipelined (option ``rounds``)."""
    from ..collectives import collective as _collective
    from ..throughput import alltoall_routes
    from ..throughput.schedule import pipelined_alltoall_schedule

    if _collective(collective).name != "alltoall":
        raise _Fail(f"algorithm lp makes alltoall, not {collective}")
    rounds = options.pop("rounds", None)
    size = options.pop("size", None)
    if options:
        raise _Fail(f"algorithm lp takes the options rounds and size, not "
                    f"{', '.join(options)}")
    try:
        rounds = None if rounds is None else int(rounds)
    except ValueError:
        raise _Fail(f"-O rounds={rounds}: expected a whole number") from None
    update("all-to-all LP", 0, None)
    res = alltoall_routes(t, progress=update)
    if not res.success:
        raise _Fail(f"{t.name}: {res.message}")
    update("pipelining the routes", 0, None)
    return pipelined_alltoall_schedule(res, t, rounds=rounds, size=size)


def _format_invalid(message, as_json):
    """Report a file that breaks the format rules as an invalid schedule, then exit 1."""
    if as_json:
        _print_json({"valid": False, "collective": None, "nodes": None, "steps": None,
                     "transfers": None, "error_count": 1, "counts": {"format": 1},
                     "errors": [{"kind": "format", "message": message}], "warnings": []})
    else:
        click.echo(f"invalid: {message}")
    sys.exit(EXIT_INVALID)


@click.command()
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--size", "sizes", multiple=True, default=(units.format_size(defaults.SIZE),), show_default=True,
              callback=_unit(units.parse_size, "--size"), help="Buffer size M (repeatable).")
@_topo_options
@click.option("--json", "as_json", is_flag=True, help="Print JSON (one object per size).")
def evaluate(file, sizes, link_bandwidth, node_bandwidth, alpha, as_json):
    """Price a schedule file: T_L, T_B, time, lower bounds and optimality flags."""
    update, bar = _progress(f"evaluate {file}")
    with bar:
        update("reading", 0, None)
        s = load_schedule(file)
        if node_bandwidth is not None:
            s = s.replace(topology=s.topology.with_node_bandwidth(node_bandwidth))
        update(f"verifying and pricing {s.num_transfers} transfers", 0, None)
        results = [_evaluate(s, m, alpha=alpha, link_bandwidth=link_bandwidth) for m in sizes]
        update("timing in the link model", 0, None)
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
