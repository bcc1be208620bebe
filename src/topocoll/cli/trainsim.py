"""``topocoll train-sim``: training iterations, compute overlapped with collectives, on our
topology next to the bounds, ShiftedRing and DBT; ``--measure`` measures a torch model's
layers first."""

import click
from rich.markup import escape
from rich.table import Table

from .. import defaults, units
from ..studies.resolve import resolve_profile, resolve_workload
from ..units import format_size, format_time
from .common import (cluster_bandwidth_options, check_plot, RenamedChoice, duration_callback,
                     err_console, EXIT_INVALID, Fail, one_bandwidth, parse_range, progress_bar,
                     ProgressLines, out_console, print_json, renamed_option, batch_options,
                     unit_callback)

__all__ = ["train_sim", "resolve_profile", "resolve_workload"]

#: --dtype: the names ``run --dtype`` (and torch) use -> the names of studies.models.DTYPE_BYTES
_DTYPES = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}

#: Largest N whose chosen allreduce is built and verified whole unless --verify-full says so;
#: above it an expanded candidate is priced by construction from its verified base (the
#: finder's ``EXPLICIT_NODES``, spelt here so that ``--help`` starts without the finder).
EXPLICIT_NODES = 1024


@click.command("train-sim")
@renamed_option("--workload", "model", old=("--model",), required=True,
                help="The model trained: resnet50, bert-large, gpt2-medium, vit-b16 (FLOPs "
                     "model), a torch model to --measure (resnet18, resnet50, mlp), or a "
                     "profile FILE (JSON or an ASTRA-sim workload; see docs/training.md).")
@click.option("--measure", is_flag=True,
              help="Measure the --workload torch model's layers on this machine's CPU with "
                   "torch (needs torch) instead of the FLOPs model.")
@click.option("-o", "--output", type=click.Path(dir_okay=False, allow_dash=True),
              help="Write the workload's JSON layer profile to FILE (with --measure: the "
                   "measured profile); without --nodes, --topology or --schedule, only that.")
@click.option("-n", "--nodes", callback=lambda ctx, param, value: None if value is None else
              parse_range(value, "--nodes"), metavar="N[,N..]",
              help="Cluster size N (default: the schedule's or topology's; required otherwise), "
                   "or several: 16..256, 16..256:16 or 16,32,64 (one row each, simulated as "
                   "tasks on --workers or --scheduler).")
@click.option("-d", "--degree", type=int, help="Links per node d for the finder and the lower "
              "bound [default: 4, or the topology's largest out-degree].")
@click.option("--schedule", "schedule_file", type=click.Path(dir_okay=False, allow_dash=True),
              help="Our allreduce: a schedule FILE, priced by the step model.")
@click.option("--topology", "spec", help="Our allreduce: BFB on this topology (a spec or file).")
@click.option("--comm-model", type=click.Choice(["step", "link"]), default="step",
              show_default=True, help="Price our allreduce (--schedule or --topology) with the "
              "alpha-beta step model or time it in the link model at every allreduce size; "
              "the bound and the baselines use the step model.")
@click.option("--alpha", default=units.format_time(defaults.ALPHA), show_default=True,
              callback=unit_callback(units.parse_time, "--alpha"), help="Latency of every link.")
@cluster_bandwidth_options("the bound's B is then d x this")
@click.option("--policy", type=click.Choice(["wait-free", "buckets", "concurrent"]),
              help="How collectives share the network: one at a time under the NSDI 2025 "
                   "paper's wait-free rules or PyTorch DDP's buckets, or all at once sharing "
                   "bandwidth as ASTRA-sim's streams [default: wait-free; buckets with "
                   "--bucket-size].")
@renamed_option("--bucket-size", "bucket", old=("--bucket",),
                callback=unit_callback(units.parse_size, "--bucket-size"),
                help="DDP bucket size (implies --policy buckets) "
               f"[default with buckets: {units.format_size(defaults.BUCKET_SIZE)}].")
@click.option("--iterations", type=int, default=3, show_default=True,
              help="Training iterations simulated; iterations 2.. give the steady state.")
@click.option("--batch", type=int, help="Samples per GPU (built-in models and --measure "
              "[default: the model's; 8 with --measure]).")
@click.option("--gpu-flops", type=float, help="Peak FLOP/s of one GPU (built-in models) "
              f"[default: {defaults.GPU_FLOPS:g}, an A100].")
@click.option("--efficiency", type=float, help="Fraction of the peak achieved (built-in models) "
              f"[default: {defaults.GPU_EFFICIENCY:g}].")
@click.option("--dtype", type=RenamedChoice(list(_DTYPES), old={v: k for k, v in _DTYPES.items()}),
              callback=lambda ctx, param, value: _DTYPES.get(value),
              help="Gradient type (built-in models) [default: float32].")
@click.option("--cycle-time", metavar="DURATION", callback=duration_callback("--cycle-time"),
              help="Length of one cycle of an ASTRA-sim workload "
                   f"[default: {units.format_time(defaults.CYCLE_TIME)}].")
@click.option("--verify-full", is_flag=True,
              help="Build and verify the finder's whole allreduce and generate the baselines' "
                   f"schedules, at any N [default: only up to {EXPLICIT_NODES} nodes; above, an "
                   "expanded topology is priced by construction from its verified base, and the "
                   "baselines always by closed form].")
@click.option("--no-cache", is_flag=True, help="Neither read nor write the results cache.")
@batch_options("With several --nodes: local processes that simulate the sizes [default: "
                   "one per core; 1: this process].",
               "With several --nodes: simulate the sizes on the Dask cluster whose "
                   "scheduler is at ADDRESS (tcp://HOST:8786).")
@click.option("--plot", type=click.Path(dir_okay=False),
              help="Draw our iterations' timeline (compute and collectives) to this file.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def train_sim(*, model, measure, output, nodes, degree, schedule_file, spec, comm_model, alpha,
              link_bandwidth, node_bandwidth, policy, bucket, iterations, batch, gpu_flops,
              efficiency, dtype, cycle_time, verify_full, no_cache, workers, scheduler, plot,
              as_json):
    """Simulate data-parallel or hybrid training: compute overlapped with collectives.

    A model's layers compute forward, input gradient and weight gradient; gradients (and, in
    hybrid workloads, activations) go out as collectives that share the network under the
    wait-free rules (Zhao et al., NSDI 2025, section 8.4), PyTorch DDP's buckets, or all at
    once; each layer's next forward waits for its gradient, as ASTRA-sim's loop does. Our
    collectives (a schedule file, BFB on a topology, or the finder's best topology for N, d
    and this workload) run next to the bounds, ShiftedRing and DBT on N nodes.
    """
    from ..fileio import check_output
    from ..studies.trainsim import check_options

    one_bandwidth(link_bandwidth, node_bandwidth)
    sizes = _check_sizes(nodes, schedule_file=schedule_file, spec=spec, plot=plot,
                         where=(workers, scheduler))
    nodes = sizes[0] if sizes else None
    check_options(nodes, degree, schedule=schedule_file, topology=spec, comm_model=comm_model,
                  policy=policy, bucket_size=bucket, cycle_time=cycle_time,
                  iterations=iterations)
    simulate = nodes is not None or schedule_file is not None or spec is not None
    if not simulate and output is None:
        raise Fail("--nodes is required unless --schedule or --topology gives the cluster "
                   "(or -o writes a profile only)")
    check_output(output)
    if output == "-" and (as_json or simulate):
        raise Fail("-o - writes the profile to stdout; the results would go there too: give "
                   "-o a FILE")
    check_plot(plot)
    workload = resolve_workload(model, measure=measure, batch=batch, gpu_flops=gpu_flops,
                                efficiency=efficiency, dtype=dtype, cycle_time=cycle_time)
    if output is not None:
        _write_profile(workload, output, as_json=as_json, simulate=simulate)
        if not simulate:
            return
    options = {"nodes": nodes, "degree": degree, "comm_model": comm_model, "alpha": alpha,
               "node_bandwidth": node_bandwidth, "link_bandwidth": link_bandwidth,
               "policy": policy, "bucket_size": bucket, "iterations": iterations,
               "verify_full": verify_full}
    if len(sizes) > 1:
        _run_sizes(workload, sizes, options, where=(workers, scheduler), no_cache=no_cache,
                   as_json=as_json)
        return
    result = _run(workload, options, schedule_file=schedule_file, spec=spec, no_cache=no_cache)
    if plot:
        from ..studies.loop import plot_training

        plot_training(result.run, plot, title=f"{workload.name} on {result.ours['allreduce']}, "
                                              f"{result.nodes} nodes: {result.message}")
    if as_json:
        print_json({**result.to_dict(), "plot": plot})
        return
    _table(result, plot)


def _check_sizes(nodes, *, schedule_file, spec, plot, where):
    """The sizes of ``--nodes`` (empty without it), refusing what cannot go with several."""
    from ..studies.trainsim_sizes import MAX_SIZES

    sizes = nodes or []
    if len(sizes) > MAX_SIZES:   # before the workload is read and the progress starts
        raise Fail(f"--nodes: at most {MAX_SIZES} sizes at once, got {len(sizes)}")
    if len(sizes) > 1:
        fixed = "--schedule" if schedule_file is not None else "--topology" if spec else None
        if fixed:
            raise Fail(f"{fixed} gives one cluster; several --nodes take the finder's "
                       "topology for each N")
        if plot:
            raise Fail("--plot draws one run's timeline: give one --nodes")
    elif where != (None, None):
        raise Fail("--workers and --scheduler apply to several --nodes (e.g. -n 16..64)")
    return sizes


def _run_sizes(workload, sizes, options, *, where, no_cache, as_json):
    """Several sizes as batch tasks: a table of one row per N, or the JSON document; exit 1
    when any size failed."""
    from ..studies.trainsim_sizes import train_sim_sizes

    options = {k: v for k, v in options.items() if k != "nodes"}
    update, bar = progress_bar("train-sim")
    with bar:
        result = train_sim_sizes(workload, sizes, workers=where[0], scheduler=where[1],
                                 cache=not no_cache, progress=update, **options)
    if as_json:
        print_json(result.to_dict())
    else:
        _sizes_table(workload, result)
    if not result.success:
        raise Fail(result.message, EXIT_INVALID)


def _sizes_table(workload, result):
    """One row per size: our allreduce and steady iteration, then each baseline's."""
    names = next((list(doc["baselines"]) for doc in result.sizes if "baselines" in doc), [])
    table = Table(title=f"{escape(workload.name)}: steady iteration time by cluster size; x bound "
                        "= our collective busy time / the two-phase bound's")
    for col in ("N", "d", "our allreduce", "ours", *names, "x bound"):
        table.add_column(col, justify="left" if col == "our allreduce" else "right")
    for doc in result.sizes:
        if "error" in doc:
            table.add_row(str(doc["nodes"]), "-", escape(doc["error"]),
                          *["-"] * (len(names) + 2))
            continue
        ours = doc["ours"]
        cells = [_steady(ours)] + [_steady(doc["baselines"][name]) for name in names]
        table.add_row(str(doc["nodes"]), str(doc["degree"]), escape(ours["allreduce"]), *cells,
                      "-" if ours["comm_ratio"] is None else f"{ours['comm_ratio']:.3f}")
    out_console.print(table)
    out_console.print(workload.description, markup=False)
    out_console.print(result.message, markup=False)


def _steady(row):
    if "error" in row:
        return "-"
    steady = row["steady_iteration_time"]
    return format_time(row["iteration_time"] if steady is None else steady)


def _write_profile(workload, output, *, as_json, simulate):
    """Write the workload's JSON profile to ``output``; without a simulation, say so."""
    import json

    from ..fileio import open_output

    text = json.dumps(workload.to_document(), indent=1) + "\n"
    with open_output(output) as fh:
        fh.write(text.encode())
    if simulate:
        return
    if as_json:
        from ..results import Status, document

        print_json(document(Status.SUCCESS, f"profile written to {output}", output=output,
                            workload=workload.summary()))
    else:       # the result; on stderr when the profile itself went to stdout
        (err_console if output == "-" else out_console).print(
            f"{workload.description}\nprofile written to {output}", markup=False)


def _run(workload, options, *, schedule_file, spec, no_cache):
    """The library job (the finder's choice included) under progress lines."""
    from ..finder import Cache
    from ..studies.trainsim import train_sim as simulate

    store = Cache(enabled=not no_cache)
    lines = ProgressLines("train-sim")
    with lines, store:
        return simulate(workload, schedule=schedule_file, topology=spec, cache=store,
                        progress=lines.update, **options)


def _table(result, plot):
    """The rows as a table on stdout, then how the compute and the prices were made."""
    from ..studies.trainsim import compute_words

    workload, summary, baselines = result.workload, result.ours, result.baselines
    how = result.policy if result.policy != "buckets" else \
        f"DDP buckets of {format_size(result.bucket_size)}"
    table = Table(title=f"{escape(workload.name)} on {result.nodes} nodes of degree "
                        f"{result.degree}, alpha {format_time(result.alpha)}, "
                        f"{result.bandwidth}, {how}; "
                        "x bound = collective busy time / the two-phase bound's")
    cols = ("", "allreduce", "first iteration", "steady iteration", "compute", "exposed comm",
            "collective busy", "collectives", "x bound")
    for col in cols:
        table.add_column(col, justify="left" if col in ("", "allreduce") else "right")
    for label, r in [("ours", summary), *baselines.items()]:
        if "error" in r:
            table.add_row(label, escape(r["allreduce"]), *["-"] * (len(cols) - 2))
            continue
        steady = r["steady_iteration_time"]
        table.add_row(label, escape(r["allreduce"]), format_time(r["iteration_time"]),
                      "-" if steady is None else format_time(steady),
                      format_time(r["compute_time"]), format_time(r["exposed_comm"]),
                      format_time(r["comm_time"]), str(r["collectives"]),
                      "-" if r["comm_ratio"] is None else f"{r['comm_ratio']:.3f}")
    out_console.print(table)
    out_console.print(f"compute: {compute_words(workload)}", markup=False)
    out_console.print(workload.description, markup=False)
    pricing = result.pricing
    ours_how = pricing["method"] + ("" if pricing["exact"] else " (steps exact, T_B an upper "
                                    "bound: line graph)")
    out_console.print(f"priced: ours {ours_how}; " + "; ".join(
        f"{name} {m}" for name, m in result.methods.items()), markup=False)
    for name, r in [("ours", summary), *baselines.items()]:
        if r.get("other_collectives"):
            out_console.print(f"{name}: other collectives: {r['other_collectives']}", markup=False)
    for name, why in result.skipped.items():
        out_console.print(f"{name}: not available: {why}", markup=False)
    if plot:
        out_console.print(f"plot written to {plot}", markup=False)
