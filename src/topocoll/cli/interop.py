"""``topocoll export`` (a schedule as MSCCL XML), ``import`` (MSCCL XML as a schedule) and
``lint`` (will the runtime accept an MSCCL file, and is it correct?)."""

import sys

import click

from ..schedule.io import load_schedule, save_schedule
from .common import (EXIT_INVALID, check_output_option, Fail, load_topology_arg, on_stdout,
                     print_json, progress_bar)

__all__ = ["export", "import_", "lint", "lint_file"]

_FORMATS = ("msccl-xml", "msccl-xml-astra")


def _size(text, what):
    from ..units import parse_size

    value = parse_size(text, what=what) if not text.isdigit() else int(text)
    if value != int(value) or value < 0:
        raise Fail(f"{what} must be a whole number of bytes, got {text!r}")
    return int(value)


@click.command()
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--format", "fmt", type=click.Choice(_FORMATS), default="msccl-xml",
              show_default=True, help="msccl-xml: what msccl-executor-nccl and RCCL run; "
              "msccl-xml-astra: the unfused form ASTRA-sim's converter reads (same as --astra).")
@click.option("-o", "--output", required=True, help="Write the XML here ('-' for stdout).")
@click.option("--astra", is_flag=True, help="The form ASTRA-sim's MSCCL-to-Chakra converter "
              "accepts: only s, r, rrc and nop steps, srcoff = dstoff, in-place.")
@click.option("--proto", type=click.Choice(["Simple", "LL", "LL128"]), default="Simple",
              show_default=True, help="The NCCL protocol the runtime uses.")
@click.option("--channels", type=click.IntRange(1, 32), default=1, show_default=True,
              help="Copies of the program on separate channels, each moving a slice of every "
              "chunk.")
@click.option("--chunks", type=click.IntRange(1), help="Chunks per shard (default: the fewest "
              "that represent every transfer exactly; fewer round transfers, and the loss is "
              "reported).")
@click.option("--min-bytes", default="0", show_default=True,
              help="Smallest message the runtime should use the program for.")
@click.option("--max-bytes", default=None, help="Largest message (default: no limit).")
@click.option("--unfused", is_flag=True, help="Keep receives and sends apart (no rcs/rrcs "
              "steps that forward data as it arrives).")
@click.option("--name", help="The program's name (default: algorithm and topology).")
@click.option("--no-step-hints", is_flag=True, help="Leave out the tcstep attribute that lets "
              "import give back the schedule's exact steps.")
@click.option("--json", "as_json", is_flag=True, help="Print a summary as JSON.")
def export(*, file, fmt, output, astra, proto, channels, chunks, min_bytes, max_bytes, unfused,
           name, no_step_hints, as_json):
    """Export schedule FILE as an MSCCL XML program for the GPU runtimes and simulators.

    \b
    topocoll export s.json -o s.xml                      msccl-executor-nccl, RCCL
    topocoll export s.json --astra -o s.xml              ASTRA-sim (then Chakra's et_converter)
    topocoll export s.json -o s.xml --proto LL --channels 4 --max-bytes 1MiB
    """
    from ..interop import export_msccl, write_msccl
    from ..interop.mscclxml import NO_LIMIT

    check_output_option(output, (".xml",))
    lo = _size(min_bytes, "--min-bytes")
    hi = NO_LIMIT if max_bytes is None else _size(max_bytes, "--max-bytes")
    astra = astra or fmt == "msccl-xml-astra"
    update, bar = progress_bar(f"export {file}")
    with bar:
        update("reading", 0, None)
        s = load_schedule(file)
        update(f"checking and translating {s.num_transfers} transfers", 0, None)
        res = export_msccl(s, proto=proto, channels=channels, chunks=chunks, min_bytes=lo,
                           max_bytes=hi, name=name, astra=astra, unfused=unfused,
                           step_hints=not no_step_hints)
        update(f"writing {output}", 0, None)
        write_msccl(res.program, output)
    to_stdout = on_stdout(output)
    if as_json:
        print_json(dict(res.to_dict(), output=output), err=to_stdout)
        return
    where = "" if to_stdout else f" -> {output}"
    click.echo(f"{s.algorithm} {s.collective.name} on {s.topology.name}: {res.message}{where}",
               err=to_stdout)
    if astra and res.warning:
        click.echo(f"warning: {res.warning}", err=True)
    if astra and not to_stdout:
        import os

        from ..interop.export import astra_command

        path = os.path.abspath(output)
        click.echo("next: in a checkout of ASTRA-sim's Chakra, convert it to Chakra traces "
                   f"({os.path.splitext(path)[0]}.<rank>.et):\n  "
                   + astra_command(path, os.path.splitext(path)[0]), err=True)


def _read_program(file):
    from ..interop import read_msccl

    return read_msccl(file)


def _topology_option(spec):
    return None if spec is None else load_topology_arg(spec)


def _print_lint(report, file):
    verdict = "valid" if report.valid else "invalid"
    click.echo(f"{verdict}: {file}: {report.message}")
    if report.errors:
        click.echo(f"  runtime rules broken ({len(report.errors)}; the runtime would refuse the "
                   "file or hang):")
        for f in report.errors:
            click.echo(f"  - [{f.rule}] {file}:{f.line}: <{f.element}>: {f.message}")
    warnings = getattr(report, "warnings", None) or []
    if warnings:
        click.echo(f"  warnings ({len(warnings)}; the runtime accepts the file):")
        for f in warnings:
            click.echo(f"  - [{f.rule}] {file}:{f.line}: <{f.element}>: {f.message}")
    if report.problems:
        click.echo("  not a correct collective:")
        for p in report.problems:
            click.echo(f"  - {p}")
    if report.schedule is not None and report.correct:
        s = report.schedule
        click.echo(f"  {s.collective.name} on {s.num_nodes} ranks: {s.num_steps} steps, "
                   f"{s.num_transfers} transfers")
    if getattr(report, "min_capacity", None) is not None:
        click.echo(f"  connection buffers: needs {report.min_capacity} chunk(s) per "
                   f"connection, the protocol holds {report.capacity}")


def lint_file(file, topology, as_json, capacity=None):
    """Lint ``file`` and exit: 0 if valid, 1 if not (shared by ``lint`` and ``verify``)."""
    from ..interop import lint_msccl

    topo = _topology_option(topology)
    program = _read_program(file)
    report = lint_msccl(program, topology=topo, capacity=capacity)
    if as_json:
        print_json(report.to_dict())
    else:
        _print_lint(report, file)
    sys.exit(0 if report.valid else EXIT_INVALID)


@click.command()
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--topology", help="The network (spec or file) to check the schedule on "
              "(default: the links the program uses).")
@click.option("--capacity", type=click.IntRange(1), help="Chunks one connection holds before "
              "a send blocks [default: the file's protocol's: Simple 2, LL and LL128 8].")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def lint(file, topology, capacity, as_json):
    """Check an MSCCL XML FILE: will the runtime accept it, and is it a correct collective?

    Lists every runtime rule the file breaks, naming the element and line, then runs the
    program symbolically: a program that cannot finish hangs; the outputs must hold what the
    collective promises and the schedule it performs must verify. Exit 0 iff both hold."""
    lint_file(file, topology, as_json, capacity)


@click.command("import")
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("-o", "--output", required=True, help="Write the schedule file here ('-' for "
              "stdout).")
@click.option("--topology", help="The network (spec or file) to place the schedule on "
              "(default: the links the program uses, at the default bandwidth and latency).")
@click.option("--json", "as_json", is_flag=True, help="Print the lint report as JSON.")
def import_(file, output, topology, as_json):
    """Import an MSCCL XML FILE (msccl-tools, TACCL, TE-CCL, TACOS) as a schedule file.

    The program is run symbolically to read off its transfers and steps, so that any
    third-party schedule can be verified, priced and simulated. It is linted on the way; the
    schedule is written whenever the program can be run, and the exit status is 1 if the runtime
    would refuse it or it is not a correct collective."""
    from ..interop import lint_msccl

    check_output_option(output)
    topo = _topology_option(topology)
    update, bar = progress_bar(f"import {file}")
    with bar:
        update("reading", 0, None)
        program = _read_program(file)
        update("running the program", 0, None)
        report = lint_msccl(program, topology=topo)
        if report.schedule is None:
            raise Fail(f"{file}: cannot be run: {'; '.join(report.problems[:3])}", EXIT_INVALID)
        update(f"writing {output}", 0, None)
        save_schedule(report.schedule, output)
    to_stdout = on_stdout(output)
    if as_json:
        print_json(dict(report.to_dict(), output=output), err=to_stdout)
    else:
        s = report.schedule
        click.echo(f"{s.collective.name} on {s.num_nodes} ranks: {s.num_steps} steps, "
                   f"{s.num_transfers} transfers" + ("" if to_stdout else f" -> {output}"),
                   err=to_stdout)
        if not report.valid:   # the findings are the report (stdout); one line on stderr
            _print_lint_err(report, file, err=to_stdout)
    if not report.valid:
        first = (f"[{report.errors[0].rule}] {report.errors[0].message}" if report.errors
                 else f"not correct: {report.problems[0]}" if report.problems else "invalid")
        count = len(report.errors) + len(report.problems)
        click.echo(f"error: {file}: {count} finding(s), the first {first}; the schedule was "
                   f"written{'' if to_stdout else ' to ' + output} all the same", err=True)
    sys.exit(0 if report.valid else EXIT_INVALID)


def _print_lint_err(report, file, err=True):
    for f in report.errors[:10]:
        click.echo(f"  runtime rule [{f.rule}] {file}:{f.line}: <{f.element}>: {f.message}",
                   err=err)
    for p in report.problems[:10]:
        click.echo(f"  not correct: {p}", err=err)
