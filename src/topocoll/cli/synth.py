"""``topocoll synth`` (TEN synthesis, TACOS) and ``topocoll simulate`` (link-model timing)."""

import click

from .. import defaults, units
from ..schedule.compact import CompactSchedule
from ..schedule.io import load_schedule, save_schedule
from ..schedule.linkmodel import (ALPHA_CONVENTIONS, DEFAULT_ALPHA_PER, simulate as _link_model,
                                  simulate_many)
from ..synth.ten import METHODS, TEN_COLLECTIVES, synthesize
from ..synth.ten.options import ILP_ONLY, TEN_OPTIONS
from ..errors import InvalidScheduleError, ResourceLimitError
from ..studies.multitenant import check_synthesized, run_tenants
from ..topology.families.lattice import with_dimension_bandwidth
from ..units import format_size, format_time
from ..results import Status, document
from .common import (EXIT_INVALID, check_output_option, check_output_folder, check_plot,
                     duration_callback, Fail, load_topology_arg, on_stdout, out_console,
                     print_json, progress_bar, renamed_option, topo_options, unit_callback,
                     workers_callback, gamma_option)

__all__ = ["synth", "simulate"]


# Every option of the TEN table is a flag here, its default and help the table's (a test
# holds them to it).
def _default(name):
    return TEN_OPTIONS[name].default


def _help(name, more=""):
    """A flag's help: the TEN option's one-line doc as a sentence, then ``more``."""
    doc = TEN_OPTIONS[name].doc
    return f"{doc[0].upper()}{doc[1:]}.{' ' + more if more else ''}"


def _check(schedule, no_verify):
    try:  # a synthesizer bug: say so rather than hand out a wrong schedule
        return check_synthesized(schedule, verify=not no_verify)
    except InvalidScheduleError as exc:
        raise Fail(str(exc), EXIT_INVALID) from None


@click.command()
@click.argument("topo")
@click.option("-c", "--collective", "collectives", multiple=True, required=True,
              help=f"One of {', '.join(TEN_COLLECTIVES)}; NAME:ROOT for a root. Repeat for "
                   "several tenants sharing the network (e.g. -c allgather -c broadcast:3).")
@click.option("--root", type=int, help="Root of a rooted collective (default 0).")
@renamed_option("-a", "--algorithm", "method", old=("--method",),
                default=_default("method"), show_default=True,
                type=click.Choice(METHODS), help=_help("method"))
@click.option("--chunks", default=_default("chunks"), show_default=True,
              type=click.IntRange(1), help=_help("chunks"))
@click.option("--seed", default=_default("seed"), show_default=True,
              type=click.IntRange(0), help=_help("seed"))
@click.option("--restarts", default=_default("restarts"), type=click.IntRange(1),
              help=_help("restarts", "The runs stop at the lower bound."))
@click.option("--workers", default=_default("workers"), type=click.IntRange(1),
              callback=workers_callback, help=_help("workers"))
@click.option("--repair/--no-repair", default=_default("repair"), help=_help("repair"))
@renamed_option("--symmetry/--no-symmetry", "symmetric", old=("--symmetric/--no-symmetric",),
                default=_default("symmetric"), help=_help("symmetric"))
@click.option("--form", type=click.Choice(["auto", "explicit", "symmetric", "compact"]),
              default="auto", show_default=True,
              help="Allgather, reduce-scatter, allreduce on a network with a translation "
                   "symmetry: symmetric holds the translated schedule as its transfers into "
                   "node 0 (N times fewer); compact (collectives that only copy) holds every "
                   "transfer in narrow columns (8 bytes each instead of 37; written as the "
                   "explicit file); auto makes symmetric, else compact, where the explicit "
                   "form would exceed 2**25 transfers.")
@click.option("--unwind-degree", default=_default("unwind_degree"), metavar="K|LEVEL:K,...",
              help=_help("unwind_degree"))
@click.option("--fail-links", default=_default("fail_links"), help=_help("fail_links"))
@click.option("--fail-nodes", default=_default("fail_nodes"), help=_help("fail_nodes"))
@click.option("--time-limit", default=_default("time_limit"), metavar="DURATION",
              callback=duration_callback("--time-limit", allow_zero=False),
              help=_help("time_limit", "E.g. 30s or 5min."))
@click.option("--node-limit", default=_default("node_limit"), type=click.IntRange(0),
              help=_help("node_limit"))
@click.option("--max-solves", default=_default("max_solves"), type=click.IntRange(1),
              help=_help("max_solves"))
@click.option("--window", default=_default("window"), type=click.IntRange(1),
              help=_help("window"))
@click.option("--time-step", default=_default("time_step"), metavar="DURATION",
              callback=duration_callback("--time-step"), help=_help("time_step"))
@click.option("--size", default=units.format_size(_default("size")),
              show_default=True, callback=unit_callback(units.parse_size, "--size"),
              help=_help("size"))
@topo_options
@click.option("--dim-bandwidth", help="Mesh or torus: one link bandwidth per dimension, first "
              "dimension first, e.g. 25GiB/s,50GiB/s on mesh:6x6 (links within a row 50 GiB/s, "
              "between rows 25 GiB/s).")
@click.option("-o", "--output", help="Schedule file ('-' for stdout); with several tenants a "
              "folder that gets one file per tenant.")
@click.option("--no-verify", is_flag=True, help="Skip the independent check of the result.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def synth(*, topo, collectives, root, method, chunks, seed, restarts, workers, repair, symmetric,
          form, unwind_degree, fail_links, fail_nodes, time_limit, node_limit, max_solves, window,
          time_step, size, link_bandwidth,
          node_bandwidth, alpha, dim_bandwidth, output, no_verify, as_json):
    """Synthesize a schedule on TOPO through the time-expanded network (TACOS).

    This command is the door to TEN synthesis; ``topocoll schedule TOPO -a ten -O KEY=VALUE``
    (and ``generate(topo, coll, "ten", **options)`` in Python) is a shortcut to the same
    synthesizer, its options the flags here (-O method=ilp is -a ilp).

    --json prints one object with one tenant or several: the status keys (success, status,
    status_name, message), topology, nodes, time_step, time (link-model finish of all
    tenants), tenants (one row each: collective, root, transfers, steps, finish_slots,
    link_model_time, verified) and files; with one tenant also the schedule's facts (form:
    explicit or symmetric, whose transfers count the full schedule's) and the synthesizer's
    meta (makespan_slots, chunk_lower_bound, lower_bound_ratio, ...).
    """
    limits = dict(time_limit=time_limit, node_limit=node_limit, max_solves=max_solves,
                  window=window)
    _check_synth_options(collectives, method, output, repair=repair, symmetric=symmetric,
                         form=form, ilp=[("--" + name.replace("_", "-"), limits[name])
                                         for name in ILP_ONLY])
    t = _synth_topology(topo, link_bandwidth, alpha, node_bandwidth, dim_bandwidth)
    common = dict(chunks=chunks, size=size, seed=seed, unwind_degree=unwind_degree,
                  fail_links=fail_links, fail_nodes=fail_nodes, time_step=time_step)
    if len(collectives) > 1:
        if root is not None:
            raise Fail("with several tenants give roots as NAME:ROOT, not --root")
        if max_solves is not None or window is not None:
            raise Fail("--max-solves and --window apply to one collective only (several "
                       "tenants are one ILP per horizon)")
        if method == "ilp":
            common.update(method="ilp", time_limit=time_limit, node_limit=node_limit)
        _tenants(t, collectives, common, output, no_verify, as_json)
        return
    name, root = _collective_root(collectives[0], root)
    update, bar = progress_bar(f"ten-{method} {name} on {t.name}")
    with bar:
        s = synthesize(t, name, method=method, root=root, restarts=restarts, workers=workers,
                       repair=repair, symmetric=symmetric, form=form, progress=update,
                       **limits, **common)
        if not no_verify:
            update(f"verifying {s.num_transfers} transfers", 0, None)
        status = _check(s, no_verify)
        if output:
            update(f"writing {output}", 0, None)
        _write(s, output)
        update("timing in the link model", 0, None)
        m = dict(s.meta, link_model_time=_timed(s, size))   # timed independently
    _report_synth(s, m, status, output, as_json)


def _timed(schedule, size):
    """The link-model time of ``schedule``; None for a compact schedule whose explicit form,
    which the link model needs, is over the memory limit or over
    :data:`~topocoll.schedule.symmetric.EXPLICIT_TRANSFER_LIMIT` transfers (the size from
    which ``--form auto`` keeps it compact; said in the report)."""
    from ..schedule.symmetric import EXPLICIT_TRANSFER_LIMIT

    lazy = isinstance(schedule, CompactSchedule)   # its explicit form is built to be timed
    if lazy and schedule.num_transfers > EXPLICIT_TRANSFER_LIMIT:
        return None
    try:
        return _link_model(schedule, size).time
    except ResourceLimitError:
        if not lazy:
            raise
        return None


def _check_synth_options(collectives, method, output, *, repair, symmetric, form, ilp):
    """Refuse option combinations ``topocoll synth`` cannot run (``ilp``: the ILP-only
    options as ``(flag, value)`` pairs) and an output it cannot write."""
    ilp_only = [flag for flag, value in ilp if value is not None]
    for flag, value in (("repair", repair), ("symmetric", symmetric)):
        if value is not None and (method != "greedy" or len(collectives) > 1):
            raise Fail(f"--{'' if value else 'no-'}{flag} applies to one collective "
                       "with --method greedy only")
    if form != "auto" and len(collectives) > 1:
        raise Fail(f"--form {form} applies to one collective only")
    if ilp_only and method != "ilp":
        raise Fail(f"{', '.join(ilp_only)} appl{'ies' if len(ilp_only) == 1 else 'y'} to "
                   "--method ilp only")
    if len(collectives) == 1:
        check_output_option(output, None)
    else:
        check_output_folder(output, command="synth with several tenants")


def _synth_topology(topo, link_bandwidth, alpha, node_bandwidth, dim_bandwidth):
    """The topology TOPO with the bandwidth options applied."""
    t = load_topology_arg(topo, link_bandwidth, alpha, node_bandwidth)
    if dim_bandwidth is not None:
        if link_bandwidth is not None or node_bandwidth is not None:
            raise Fail("give --dim-bandwidth or --link-bandwidth/--node-bandwidth, not both")
        t = with_dimension_bandwidth(t, [b.strip() for b in dim_bandwidth.split(",")])
    return t


def _collective_root(collective, root):
    """Name and root of a single -c NAME[:ROOT] (the root may come from --root instead)."""
    name, colon, root_text = collective.partition(":")
    if colon and not root_text:
        raise Fail(f"--collective {collective!r}: a node id must follow ':' (or leave "
                   "the ':' out)")
    if root_text:
        if root is not None:
            raise Fail("give the root once: NAME:ROOT or --root")
        if not root_text.isdigit():
            raise Fail(f"--collective {collective!r}: the root after ':' must be a node id")
        root = int(root_text)
    return name, root


def _report_synth(s, m, status, output, as_json):
    """Print one tenant's synthesis line, or its JSON document (``m``: the schedule's meta
    with the link-model time)."""
    to_stdout = on_stdout(output)
    timed = m["link_model_time"] is not None
    ratio = m["link_model_time"] / m["chunk_lower_bound"] \
        if m["chunk_lower_bound"] and timed else None
    where = f", written to {output}" if output and not to_stdout else ""
    bound = (f" (chunk-model lower bound {format_time(m['chunk_lower_bound'])}, "
             f"{ratio:.3f}x)" if ratio else "")
    spread = ""
    if len(m.get("restart_makespans", ())) > 1:
        spans = m["restart_makespans"]
        spread = f"; restarts {min(spans)}..{max(spans)} slots"
    extra = ""
    if "ilp_status" in m:
        extra = f"; ILP: {m['ilp_message']}"
    if timed:
        bound = f"link-model time {format_time(m['link_model_time'])}{bound}"
    else:
        bound = (f"TEN time {format_time(m['ten_time'])}, chunk-model lower bound "
                 f"{format_time(m['chunk_lower_bound'])} (link model not run: it needs the "
                 "explicit form, too large here)")
    line = (f"{s.algorithm} {s.collective.name} on {s.topology.name}: "
            f"{m['makespan_slots']} slots of {format_time(m['time_step'])}, "
            f"{bound}, {s.num_transfers} transfers"
            f"{s.form_note()}, "
            f"{status}{where}{spread}{extra}")
    if as_json:   # the tenants' shape (one tenant) plus the schedule's own facts and meta
        tenant = {"collective": s.collective.name, "root": s.root,
                  "transfers": s.num_transfers, "steps": s.num_steps,
                  "finish_slots": m["makespan_slots"], "link_model_time": m["link_model_time"],
                  "verified": status == "verified"}
        doc = {"topology": s.topology.name, "nodes": s.num_nodes, "time_step": m["time_step"],
               "time": m["link_model_time"], "tenants": [tenant],
               "files": [output] if output else [], "collective": s.collective.name,
               "root": s.root, "algorithm": s.algorithm, "transfers": s.num_transfers,
               "steps": s.num_steps, "verified": status == "verified", "output": output,
               "lower_bound_ratio": ratio, "form": s.form}
        doc.update((k, v) for k, v in m.items() if k not in doc)
        print_json(document(m.get("ilp_status", Status.SUCCESS), line, doc), err=to_stdout)
    else:
        click.echo(line, err=to_stdout)


def _write(schedule, output):
    if output:
        save_schedule(schedule, output)


def _tenants(t, collectives, common, output, no_verify, as_json):
    from rich.table import Table  # imported here: start-up time

    update, bar = progress_bar(f"ten-{common.get('method', 'greedy')} tenants on {t.name}")
    with bar:   # synthesized, verified, timed sharing the links, written
        run = run_tenants(t, collectives, verify=not no_verify, output=output, progress=update,
                          **common)
    res, statuses, finish, files = run.result, run.statuses, run.finish_times, run.files
    if as_json:   # {status keys, topology, nodes, time_step, time, tenants: [...], files, ...}
        doc = run.to_dict()
        print_json(document(
            Status.SUCCESS, f"{len(res.schedules)} tenants on {res.meta['topology']}: all done "
            f"after {format_time(doc['time'])} in the link model, sharing its links",
            topology=res.meta["topology"], nodes=t.num_nodes, time_step=doc.pop("time_step"),
            time=doc.pop("time"), tenants=doc.pop("tenants"), files=files,
            **{k: v for k, v in doc.items() if k != "topology"}))
        return
    table = Table(title=f"{len(res.schedules)} tenants on {res.meta['topology']}, one shared "
                        f"network, slots of {format_time(res.time_step)}")
    for col in ("#", "collective", "root", "transfers", "finish slot", "link-model finish",
                "status"):
        table.add_column(col, justify="right")
    for i, (s, fs, ft, st) in enumerate(zip(res.schedules, res.finish_slots, finish, statuses)):
        table.add_row(str(i), s.collective.name, "-" if s.root is None else str(s.root),
                      str(s.num_transfers), str(fs), format_time(ft), st)
    out_console.print(table)
    out_console.print(f"all tenants done after {format_time(max(finish, default=0.0))}",
                      markup=False)
    if files:
        out_console.print("wrote " + ", ".join(files), markup=False)


@click.command()
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--size", default=units.format_size(defaults.SYNTHESIS_SIZE), show_default=True,
              callback=unit_callback(units.parse_size, "--size"), help="Buffer size M.")
@click.option("--alpha", callback=unit_callback(units.parse_time, "--alpha"),
              help="Replace every link's latency.")
@click.option("--link-bandwidth", callback=unit_callback(units.parse_bandwidth, "--link-bandwidth"),
              help="Replace every link's bandwidth.")
@renamed_option("--comm-model", "model", old=("--model",), default="link", show_default=True,
                type=click.Choice(["step", "link", "both"]),
              help="Price in the link model, the alpha-beta step model, or both side by side.")
@click.option("--alpha-per", "alpha_per", type=click.Choice(list(ALPHA_CONVENTIONS)),
              default=DEFAULT_ALPHA_PER, show_default=True,
              help="Which transfers pay a link's latency in the link model: one per message "
                   "(back-to-back transfers of a step on a link), once per step per link (the "
                   "step model's charge), or every transfer (TACOS's per-chunk charge).")
@click.option("--plot", "plot", type=click.Path(dir_okay=False),
              help="Write the link-model timeline (a Gantt chart of the links, critical path "
                   "outlined; one panel per file) to this file (.png, .svg, .pdf; needs "
                   "matplotlib).")
@gamma_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def simulate(files, size, alpha, link_bandwidth, model, alpha_per, plot, gamma, as_json):
    """Time schedule FILES in the link model (TACOS); several files share one network.

    This command is the door to the link model; the link-model time column of ``topocoll
    evaluate`` is a shortcut to ``--comm-model both`` here.

    --json prints one object for one file or several: the status keys (success, status,
    status_name, message), model, alpha_per (the link model's alpha convention; the step
    model charges alpha per step), size, time (the latest finish), plot and schedules, one
    entry per file (file, collective, algorithm, time, the per-link busy times and critical
    path in the link model, step_model for the step model), gamma (seconds per byte).
    --gamma prices reductions in both models (docs/math.md, the reduction cost gamma).
    """
    from ..schedule.cost import evaluate as _step_model
    from ..schedule.timeline import plot_timeline

    if plot is not None and model == "step":
        raise Fail("--plot draws the link-model timeline; use --comm-model link or both")
    check_plot(plot)  # fail before the work, not after it
    update, bar = progress_bar("simulate")
    with bar:
        update("reading", 0, None)
        schedules = [load_schedule(f) for f in files]
        results = None
        if model != "step":
            update("timing in the link model", 0, None)
            results = simulate_many(schedules, size, alpha=alpha, link_bandwidth=link_bandwidth,
                                    alpha_per=alpha_per, gamma=gamma)
        # the step model beside it (each schedule alone on the network)
        update("verifying and pricing in the step model", 0, None)
        steps = [_step_model(s, size, alpha=alpha, link_bandwidth=link_bandwidth, gamma=gamma)
                 for s in schedules]
        if plot:
            update(f"drawing {plot}", 0, None)
            plot_timeline(results, plot, titles=[f"{f}: {s.collective.name} {s.algorithm}"
                                                 for f, s in zip(files, schedules)])
    if as_json:
        _print_simulate_json(files, schedules, results, steps, model=model, alpha_per=alpha_per,
                             size=size, plot=plot)
        return
    out_console.print(_simulate_table(files, schedules, results, steps, model=model,
                                      alpha_per=alpha_per, size=size))
    if plot:
        out_console.print(f"plot written to {plot}", markup=False)


def _print_simulate_json(files, schedules, results, steps, *, model, alpha_per, size, plot):
    rows = [_simulate_row(f, s, r, e, model, plot)
            for f, s, r, e in zip(files, schedules, results or [None] * len(files), steps)]
    finish = max(row["time"] for row in rows)
    where = ("in the step model" + (", each alone" if len(rows) > 1 else "")
             if model == "step" else
             "in the link model" + (", sharing one network" if len(rows) > 1 else ""))
    print_json(document(Status.SUCCESS, f"{len(rows)} schedule{'s' if len(rows) > 1 else ''}"
                         f" at {format_size(size)} {where}: done after "
                         f"{format_time(finish)}", model=model,
                         alpha_per="step" if model == "step" else alpha_per, size=float(size),
                         time=finish, plot=plot, gamma=steps[0].gamma, schedules=rows))


def _simulate_table(files, schedules, results, steps, *, model, alpha_per, size):
    """The table ``topocoll simulate`` prints: one row per file, in the model(s) asked for."""
    from rich.table import Table  # imported here: start-up time

    shared = " sharing one network" if len(files) > 1 and model != "step" else ""
    if model == "step":
        title = (f"step model at {format_size(size)}: step t costs its largest link latency + "
                 "its largest bytes/bandwidth over node pairs")
        cols = ("file", "collective", "algorithm", "transfers", "steps", "T_L", "T_B", "time")
    else:
        title = (f"link model at {format_size(size)}{shared}: a link carries one transfer at a "
                 f"time for bytes/bandwidth, plus its latency once per {alpha_per}")
        cols = ("file", "collective", "algorithm", "transfers", "links used", "finish",
                "busiest link", "critical path")
        cols += ("step model (alone)",) if model == "link" else \
            ("step model", "T_L", "T_B", "link/step")
    table = Table(title=title)
    for col in cols:
        table.add_column(col, justify="left" if col == "file" else "right")
    for i, (f, s, e) in enumerate(zip(files, schedules, steps)):
        row = [f, s.collective.name, s.algorithm, str(s.num_transfers)]
        if model == "step":
            row += [str(e.steps), format_time(e.T_L), format_time(e.T_B), format_time(e.time)]
        else:
            row += _link_model_cells(results[i], e, model)
        table.add_row(*row)
    return table


def _link_model_cells(result, evaluation, model):
    """A table row's link-model cells, then the step model's beside them."""
    e = evaluation
    d = result.to_dict()
    path = result.critical_path()
    waits = result.waited[path]
    row = [f"{d['links_used']}/{d['links']}", format_time(d["time"]),
           format_time(d["max_link_busy"]), f"{path.size} ({int((waits == 1).sum())} on links)"]
    if model == "link":
        row.append(f"{format_time(e.time)} ({e.steps} steps)")
    else:
        ratio = f"{d['time'] / e.time:.3f}" if e.time > 0 else "-"
        row += [f"{format_time(e.time)} ({e.steps} steps)", format_time(e.T_L),
                format_time(e.T_B), ratio]
    return row

def _simulate_row(file, schedule, result, evaluation, model, plot):
    """One file's JSON document: the link model's summary with its per-link busy times and
    critical path (``link``, ``both``), the step model's numbers (``step``, ``both``)."""
    doc = {"file": file, "collective": schedule.collective.name,
           "algorithm": schedule.algorithm, "model": model}
    step = {"time": evaluation.time, "T_L": evaluation.T_L, "T_B": evaluation.T_B,
            "T_gamma": evaluation.T_gamma, "steps": evaluation.steps}
    if model == "step":
        doc.update(size=float(evaluation.size), time=evaluation.time, alpha_per="step",
                   transfers=schedule.num_transfers, step_model=step)
    else:
        doc.update(result.to_dict(detail=True))
        if model == "both":
            doc["step_model"] = step
            doc["link_model_time"] = result.time
    doc.update(step_model_time=evaluation.time, steps=evaluation.steps, plot=plot)
    return doc
