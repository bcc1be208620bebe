"""``topocoll convert``: a schedule file from one form into the other (explicit, symmetric)."""

import click

from ..results import Status, document
from .common import (check_output_option, on_stdout, print_json, progress_bar)

__all__ = ["convert"]


@click.command()
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("-o", "--output", required=True, help="Write the converted schedule here ('-' "
              "for stdout; .gz compresses).")
@click.option("--form", required=True, type=click.Choice(["explicit", "symmetric"]),
              help="explicit: every transfer listed; symmetric: one representative per orbit "
              "of the topology's translations (refused unless the schedule is invariant).")
@click.option("--json", "as_json", is_flag=True, help="Print JSON: the forms, the counts and "
              "where the file went.")
def convert(file, output, form, as_json):
    """Convert a schedule FILE between the explicit and the symmetric form.

    ``--form explicit`` expands a symmetric file (under the memory guard: it holds every
    transfer); ``--form symmetric`` keeps the transfers into node 0 of an explicit file on a
    topology with a translation group (torus, hypercube, circulant, ring, Hamming), after
    checking that every translation of every transfer is in the file (docs/format.md,
    "Symmetric schedules"). A file already in the form asked for is written as it is.

    --json prints one object: the status keys (success, status, status_name, message: the line
    the command prints otherwise), file, output, from (the form read), form, collective, nodes,
    steps, transfers, representatives and symmetry (null for explicit output).
    """
    from ..schedule.io import load_schedule, save_schedule
    from ..schedule.symmetric import symmetric_schedule

    check_output_option(output, None)
    to_stdout = on_stdout(output)
    update, bar = progress_bar(f"convert {file}")
    with bar:
        update("reading", 0, None)
        s = load_schedule(file)
        before = s.form
        update(f"converting {s.num_transfers} transfers to the {form} form", 0, None)
        out = symmetric_schedule(s) if form == "symmetric" else s.unfolded()
        update(f"writing {output}", 0, None)
        save_schedule(out, output)
    facts = out.form_facts()
    reps = facts.get("representatives")
    where = "" if to_stdout else f", written to {output}"
    line = (f"{out.algorithm} {out.collective.name} on {out.topology.name}: {before} -> "
            f"{out.form}, {out.num_transfers} transfers"
            f"{f' ({reps} representatives)' if reps is not None else ''}{where}")
    if as_json:
        print_json(document(Status.SUCCESS, line, file=file, output=output, **{"from": before},
                             form=out.form, collective=out.collective.name,
                             nodes=out.num_nodes, steps=out.num_steps,
                             transfers=out.num_transfers, representatives=reps,
                             symmetry=facts.get("symmetry")),
                    err=to_stdout)
        return
    click.echo(line, err=to_stdout)
