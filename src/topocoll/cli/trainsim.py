"""``topocoll train-sim``: training iterations, compute overlapped with collectives, on our
topology next to the bounds, ShiftedRing and DBT; ``--measure`` measures a torch model's
layers first."""

import os

import click
from rich.markup import escape
from rich.table import Table

from .. import defaults, units
from ..errors import TopocollError
from ..units import format_size, format_time
from .common import (cluster_bandwidth_options, check_plot, RenamedChoice, duration_callback,
                     err_console, Fail, one_bandwidth, ProgressLines, out_console, print_json,
                     renamed_option, unit_callback)

__all__ = ["train_sim", "resolve_profile", "resolve_workload", "workload_profile"]

#: --dtype: the names ``run --dtype`` (and torch) use -> the names of studies.models.DTYPE_BYTES
_DTYPES = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}


def resolve_profile(model, *, batch=None, gpu_flops=None, efficiency=None, dtype=None,
                    cycle_time=None):
    """The profile of ``model``: a built-in model's name or a profile file (JSON or ASTRA-sim
    text); the model options apply to built-in models only."""
    from ..studies.models import model_profile
    from ..studies.profiles import load_profile

    if _built_in(model, batch, gpu_flops, efficiency, dtype, cycle_time):
        return model_profile(model, batch=batch, gpu_flops=gpu_flops, efficiency=efficiency,
                             bytes_per_param=dtype)
    return load_profile(model, cycle_time=cycle_time)


def _built_in(model, batch, gpu_flops, efficiency, dtype, cycle_time, known_also=""):
    """True if ``model`` names a built-in model, False if a profile file; refuses the options
    that do not apply to the one it is, and a name that is neither."""
    from ..studies.models import MODELS

    if model in MODELS:
        if cycle_time is not None:
            raise Fail("--cycle-time applies to ASTRA-sim workload files, not to built-in models")
        return True
    if model != "-" and not os.path.exists(model):
        raise Fail(f"--workload {model}: neither a known model ({', '.join(MODELS)}"
                   f"{known_also}) nor a file")
    given = [name for name, v in (("--batch", batch), ("--gpu-flops", gpu_flops),
                                  ("--efficiency", efficiency), ("--dtype", dtype))
             if v is not None]
    if given:
        raise Fail(f"{given[0]} applies to the built-in models ({', '.join(MODELS)}), not to a "
                   "profile file")
    return False


def workload_profile(model, bucket_size=None):
    """The finder's workload for a model or profile file: its gradient sizes in forward order,
    fused into buckets of ``bucket_size`` (None: one allreduce per layer)."""
    from ..finder import Workload

    profile = resolve_profile(model)
    return Workload.from_layers(profile.forward_order_bytes(), bucket_size)


#: Largest N whose chosen allreduce is built and verified whole unless --verify-full says so;
#: above it an expanded candidate is priced by construction from its verified base.
EXPLICIT_NODES = 1024

#: How a baseline's cost was obtained with --verify-full (its schedule generated and priced).
GENERATED = "generated explicit"


def _baseline(name, nodes, *, alpha, bandwidth, store, full=False):
    """A baseline's allreduce cost and how it was obtained, through the finder's cache
    (``bandwidth``: the convention, ``{"bandwidth": B}`` per node or ``{"link_bandwidth":
    L}`` per link). By default from the baseline's structure (closed form, equal to the
    generated schedule's price); ``full``: the schedule generated and priced."""
    from ..studies.training import (CLOSED_FORM, AllreduceCost, baseline_closed_form,
                                    baseline_cost)

    method = GENERATED if full else CLOSED_FORM
    # an affine price is latency and per-byte time; a pipelined one (DBT) its loads
    convention = ",".join(f"{k}={v!r}" for k, v in sorted(bandwidth.items()) if v is not None)
    key = f"{name}:{nodes}:{'generated' if full else 'closed'}:{alpha!r}:{convention}"
    doc = store.get("baseline", key)
    if doc is None:
        price = baseline_cost if full else baseline_closed_form
        cost = price(name, nodes, alpha=alpha, **bandwidth)
        if isinstance(cost, AllreduceCost):
            doc = {"steps": cost.steps, "latency": cost.latency, "per_byte": cost.per_byte,
                   "method": method}
        else:
            doc = {"pipelined": cost.to_dict(), "method": method}
        store.put("baseline", key, doc)
    if "pipelined" in doc:
        from ..schedule.cost import PipelinedCost

        return PipelinedCost.from_dict(doc["pipelined"]), method
    return AllreduceCost(name, doc["latency"], doc["per_byte"], doc["steps"]), method


def _ours(schedule_file, spec, *, nodes, degree, sizes, bucket, alpha, bandwidth, store,
          progress, comm_model="step", full=None):
    """Our allreduce cost, the (nodes, degree) it runs on, the finder's result (or None), how
    the cost was obtained (``{"method": .., "exact": ..}``) and the topology of a schedule or
    ``--topology`` (None for the finder's choice). ``sizes``: the allreduce sizes the finder
    optimizes for, in forward order. ``bandwidth``: the convention, ``{"bandwidth": B}`` or
    ``{"link_bandwidth": L}``. ``full``: build and verify the finder's choice whole (None:
    when N <= :data:`EXPLICIT_NODES`)."""
    from ..finder.core import EXPLICIT
    from ..schedule.verify import verify
    from ..studies.training import AllreduceCost, priced_network, schedule_cost

    if schedule_file is not None or spec is not None:
        if schedule_file is not None:
            from ..schedule.io import load_schedule

            schedule = load_schedule(schedule_file)
            name = f"{schedule.topology.name} {schedule.algorithm}"
        else:
            from ..synth import generate
            from ..topology import topology

            topo = priced_network(topology(spec), alpha=alpha, **bandwidth)
            progress(f"BFB allreduce on {spec}", 0, None)
            schedule = generate(topo, "allreduce", "bfb")
            name = f"{spec} bfb"
        if schedule.collective.name != "allreduce":
            raise Fail(f"--schedule {schedule_file}: train-sim needs an allreduce schedule, got "
                       f"{schedule.collective.name}")
        n = schedule.topology.num_nodes
        if nodes is not None and nodes != n:
            raise Fail(f"--nodes {nodes} but the {'schedule' if schedule_file else 'topology'} "
                       f"has {n} nodes")
        actual = int(schedule.topology.out_degree().max())
        if degree is not None and degree < actual:
            raise Fail(f"--degree {degree} but {schedule.topology.name} has nodes of degree "
                       f"{actual}: the bound for degree {degree} does not hold for it (leave "
                       "--degree out)")
        d = degree if degree is not None else actual
        progress(f"verifying {schedule.num_transfers} transfers", 0, None)
        verify(schedule).raise_if_invalid()
        how = {"method": EXPLICIT, "exact": True}
        if comm_model == "link":
            from ..studies.training import LinkModelCost

            return LinkModelCost(schedule, alpha=alpha, name=name, **bandwidth), n, d, \
                None, how, schedule.topology
        return schedule_cost(schedule, alpha=alpha, name=name, **bandwidth), n, d, \
            None, how, schedule.topology
    from ..finder import Workload, find

    d = min(4, nodes - 1) if degree is None else degree   # complete:N is the most there is
    workload = Workload.from_layers(sizes, bucket)
    if full is None:
        full = nodes <= EXPLICIT_NODES
    result = find(nodes, d, workload, alpha=alpha, node_bandwidth=bandwidth.get("bandwidth"),
                  link_bandwidth=bandwidth.get("link_bandwidth"), cache=store,
                  progress=progress, method="explicit" if full else "construction")
    if not result.success or result.evaluation is None:
        raise Fail(f"the finder found no topology: {result.message}")
    ev = result.evaluation
    cost = AllreduceCost.from_step_model(ev["steps"], 2.0 * ev["T_B_per_phase"], alpha=alpha,
                                         bandwidth=result.node_bandwidth,
                                         name=f"{result.best.name} bfb")
    how = {"method": ev.get("method", EXPLICIT), "exact": bool(ev.get("exact", True))}
    if "base" in ev:
        how["base"] = ev["base"]
    return cost, nodes, d, result, how, None


#: Most iterations train-sim simulates (each is every layer's compute and collectives).
MAX_ITERATIONS = 100
#: Largest --batch that --measure runs (the inputs and activations live in this machine's memory).
MAX_MEASURE_BATCH = 1024


def resolve_workload(model, *, measure=False, batch=None, gpu_flops=None, efficiency=None,
                     dtype=None, cycle_time=None):
    """The training workload of ``model``: measured with torch (``measure``), a built-in
    model's FLOPs model, or a profile file (JSON or ASTRA-sim text)."""
    from ..studies.measure import TORCH_MODELS, measure_model
    from ..studies.models import model_workload
    from ..studies.workloads import load_training_workload

    if measure:
        if model not in TORCH_MODELS:
            raise Fail(f"--measure needs a torch model to run ({', '.join(TORCH_MODELS)}), "
                       f"got {model!r}")
        for name, value in (("--gpu-flops", gpu_flops), ("--efficiency", efficiency),
                            ("--dtype", dtype), ("--cycle-time", cycle_time)):
            if value is not None:
                raise Fail(f"{name} applies to the FLOPs model, not to --measure")
        batch = 8 if batch is None else batch
        if not 1 <= batch <= MAX_MEASURE_BATCH:
            raise Fail(f"--batch with --measure must be between 1 and {MAX_MEASURE_BATCH}, got "
                       f"{batch}")
        return measure_model(model, batch=batch)
    if _built_in(model, batch, gpu_flops, efficiency, dtype, cycle_time,
                 known_also=f"; with --measure: {', '.join(TORCH_MODELS)}"):
        return model_workload(model, batch=batch, gpu_flops=gpu_flops, efficiency=efficiency,
                              bytes_per_param=dtype)
    return load_training_workload(model, cycle_time=cycle_time)


def _finder_sizes(workload):
    """The allreduce sizes the finder optimizes for, in forward order: every allreduce the
    loop sends, or, with none, every collective's size."""
    sent = [c for x in workload.layers for c in workload.collectives_of(x)]
    sizes = [c[2] for c in sent if c[1] == "allreduce"]
    return sizes or [c[2] for c in sent]


def _prices(kinds, nodes, degree, *, alpha, bandwidth, ours, topo, found, costs):
    """Every row's dict collective -> price for the ``kinds`` the workload sends, and how each
    non-allreduce price was made."""
    from ..studies.prices import (alltoall_distance_cost, bound_prices, phase_prices,
                                  ring_prices, schedule_prices)
    from ..studies.training import node_bandwidth_of
    from ..topology import topology

    other = [k for k in kinds if k != "allreduce"]
    rows = {"ours": {"allreduce": ours}}
    rows.update({name: {"allreduce": cost} for name, cost in costs.items()})
    if not other:
        return rows, {}
    how = {}
    if topo is not None:
        rows["ours"].update(schedule_prices(topo, other, alpha=alpha, label=topo.name,
                                            **bandwidth))
        how["ours"] = "BFB schedules on the topology" + (
            "; all-to-all by the distance bound" if "alltoall" in other else "")
    else:
        ev = found.evaluation
        # the finder's B: d links of L per node (or the given node bandwidth)
        rows["ours"].update(phase_prices(ev["steps"] / 2, ev["T_B_per_phase"], alpha=alpha,
                                         bandwidth=found.node_bandwidth,
                                         name=f"{found.best.name} bfb"))
        if "alltoall" in other:
            rows["ours"]["alltoall"] = alltoall_distance_cost(
                topology(found.best.name), alpha=alpha, bandwidth=found.node_bandwidth)
        how["ours"] = "one phase of the BFB allreduce; all-to-all by the distance bound"
    rows["two-phase bound"].update(bound_prices(nodes, degree, alpha=alpha, **bandwidth))
    how["two-phase bound"] = "one-phase bound; all-to-all Moore distance bound"
    for name, family in (("ShiftedRing", "shiftedring"), ("DBT", "dbt")):
        if name not in rows:
            continue
        net = topology(f"{family}:{nodes}")
        rows[name].update(ring_prices(nodes, alpha=alpha,
                                      bandwidth=node_bandwidth_of(net, **bandwidth)))
        if "alltoall" in other:
            rows[name]["alltoall"] = alltoall_distance_cost(net, alpha=alpha, **bandwidth)
        how[name] = "ring phases (NCCL's all-gather and reduce-scatter); all-to-all by the " \
                    "distance bound"
    return {k: {t: v for t, v in r.items() if t in kinds} for k, r in rows.items()}, how


def _compute_words(workload):
    """Which compute model made the workload's times, in words (printed with every result)."""
    from ..studies.models import efficiency_text

    if workload.compute_model == "flops":
        return (f"FLOPs model ({efficiency_text()} unless --gpu-flops/--efficiency say "
                "otherwise; backward = 2 x forward)")
    if workload.compute_model == "measured":
        src = workload.source
        return (f"measured with torch {src.get('torch', '?')} on {src.get('cpu', '?')}, "
                f"{src.get('threads', '?')} thread(s), batch {src.get('batch', '?')}")
    if workload.compute_model == "astra-sim":
        return "ASTRA-sim workload file (cycles x --cycle-time)"
    return f"profile file ({workload.compute_model})"


def _write_profile(workload, output):
    import json

    from ..fileio import open_output

    text = json.dumps(workload.to_document(), indent=1) + "\n"
    with open_output(output) as fh:
        fh.write(text.encode())


def _check_options(nodes, degree, *, schedule_file, spec, comm_model, policy, bucket,
                   cycle_time, iterations):
    if schedule_file is not None and spec is not None:
        raise Fail("give --schedule or --topology, not both")
    if nodes is not None and nodes < 3:
        raise Fail(f"--nodes must be at least 3, got {nodes}")
    if degree is not None and degree < 1:
        raise Fail(f"--degree must be at least 1, got {degree}")
    if degree is not None and nodes is not None and degree >= nodes:
        raise Fail(f"--degree {degree} on {nodes} nodes: a node has at most {nodes - 1} "
                   "other nodes to link to")
    if comm_model == "link" and schedule_file is None and spec is None:
        raise Fail("--comm-model link times a schedule: give --schedule or --topology")
    if policy not in (None, "buckets") and bucket is not None:
        raise Fail(f"--bucket-size applies to --policy buckets, not {policy}")
    if bucket is not None and (bucket <= 0 or bucket != int(bucket)):
        raise Fail(f"--bucket-size must be a positive whole number of bytes, got {bucket:g}")
    if cycle_time is not None and cycle_time <= 0:
        raise Fail("--cycle-time must be positive")
    if not 1 <= iterations <= MAX_ITERATIONS:
        raise Fail(f"--iterations must be between 1 and {MAX_ITERATIONS}, got {iterations}")


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
@click.option("-n", "--nodes", type=int, help="Cluster size N (default: the schedule's or "
              "topology's; required otherwise).")
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
@click.option("--plot", type=click.Path(dir_okay=False),
              help="Draw our iterations' timeline (compute and collectives) to this file.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def train_sim(*, model, measure, output, nodes, degree, schedule_file, spec, comm_model, alpha,
              link_bandwidth, node_bandwidth, policy, bucket, iterations, batch, gpu_flops,
              efficiency, dtype, cycle_time, verify_full, no_cache, plot, as_json):
    """Simulate data-parallel or hybrid training: compute overlapped with collectives.

    A model's layers compute forward, input gradient and weight gradient; gradients (and, in
    hybrid workloads, activations) go out as collectives that share the network under the
    wait-free rules (Zhao et al., NSDI 2025, section 8.4), PyTorch DDP's buckets, or all at
    once; each layer's next forward waits for its gradient, as ASTRA-sim's loop does. Our
    collectives (a schedule file, BFB on a topology, or the finder's best topology for N, d
    and this workload) run next to the bounds, ShiftedRing and DBT on N nodes.
    """
    from ..fileio import check_output

    one_bandwidth(link_bandwidth, node_bandwidth)
    _check_options(nodes, degree, schedule_file=schedule_file, spec=spec,
                   comm_model=comm_model, policy=policy, bucket=bucket, cycle_time=cycle_time,
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
    policy = policy or ("buckets" if bucket is not None else "wait-free")
    if policy == "buckets" and bucket is None:
        bucket = defaults.BUCKET_SIZE
    workload = resolve_workload(model, measure=measure, batch=batch, gpu_flops=gpu_flops,
                                efficiency=efficiency, dtype=dtype, cycle_time=cycle_time)
    if output is not None:
        _write_profile(workload, output)
        if not simulate:
            if as_json:
                from ..results import Status, document

                print_json(document(Status.SUCCESS, f"profile written to {output}",
                                     output=output, workload=workload.summary()))
            else:       # the result; on stderr when the profile itself went to stdout
                (err_console if output == "-" else out_console).print(
                    f"{workload.description}\nprofile written to {output}", markup=False)
            return
    _simulate(workload, nodes, degree, schedule_file=schedule_file, spec=spec,
              comm_model=comm_model, alpha=alpha,
              bandwidth=_convention(node_bandwidth, link_bandwidth), policy=policy,
              bucket=bucket, iterations=iterations, verify_full=verify_full, no_cache=no_cache,
              plot=plot, as_json=as_json)


def _convention(node_bandwidth, link_bandwidth):
    """The bandwidth keywords of the pricing functions: ``{"bandwidth": B}`` with
    --node-bandwidth, else ``{"link_bandwidth": L}`` (default: 100 Gbps per link)."""
    node, link = defaults.bandwidth_convention(node_bandwidth, link_bandwidth)
    return {"bandwidth": node} if link is None else {"link_bandwidth": link}


def _describe(bandwidth):
    """The convention of :func:`_convention` in words, e.g. ``100Gbps per link``."""
    return defaults.describe_convention(bandwidth.get("bandwidth"),
                                        bandwidth.get("link_bandwidth"))


def _simulate(workload, nodes, degree, *, schedule_file, spec, comm_model, alpha,
              bandwidth, policy, bucket, iterations, verify_full, no_cache, plot, as_json):
    from ..finder import Cache
    from ..studies.loop import plot_training, simulate_training
    from ..studies.training import CLOSED_FORM, lower_bound_cost

    store = Cache(enabled=not no_cache)
    lines = ProgressLines("train-sim")
    with lines, store:
        ours, nodes, degree, found, pricing, topo = _ours(
            schedule_file, spec, nodes=nodes, degree=degree, sizes=_finder_sizes(workload),
            bucket=bucket if policy == "buckets" else None, alpha=alpha, bandwidth=bandwidth,
            store=store, progress=lines.update, comm_model=comm_model,
            full=True if verify_full else None)
        if nodes < 3:
            raise Fail(f"train-sim needs at least 3 nodes, got {nodes}")
        costs = {"two-phase bound": lower_bound_cost(nodes, degree, alpha=alpha, **bandwidth)}
        methods = {"two-phase bound": CLOSED_FORM}
        skipped = {}
        for name in ("ShiftedRing", "DBT"):
            lines.update(f"{name} allreduce on {nodes} nodes", 0, None)
            try:
                costs[name], methods[name] = _baseline(name, nodes, alpha=alpha,
                                                       bandwidth=bandwidth, store=store,
                                                       full=verify_full)
            except TopocollError as exc:      # e.g. no shifted ring of 4 or 6 nodes
                skipped[name] = str(exc)
        lines.update("pricing the other collectives", 0, None)
        prices, other_how = _prices(workload.collective_types(), nodes, degree, alpha=alpha,
                                    bandwidth=bandwidth, ours=ours, topo=topo,
                                    found=found, costs=costs)
    options = {"policy": policy, "bucket_size": bucket if policy == "buckets" else None,
               "iterations": iterations}
    results = {name: simulate_training(workload, p, **options) for name, p in prices.items()}
    result = results.pop("ours")
    if plot:
        plot_training(result, plot, title=f"{workload.name} on {ours.name}, {nodes} nodes: "
                                          f"{result.message}")
    bound = results["two-phase bound"]
    labels = {"ours": ours.name, **{name: costs[name].name for name in costs}}

    def row(name, r):
        cost = prices[name]["allreduce"]
        return {"allreduce": labels[name], "steps": getattr(cost, "steps", None),
                "iteration_time": r.first_iteration, "steady_iteration_time": r.steady_iteration,
                "compute_time": r.compute_time, "exposed_comm": r.exposed_comm,
                "steady_exposed_comm": r.steady_exposed_comm, "comm_time": r.comm_time,
                "collectives": len(r.first_runs()),
                "allreduces": sum(1 for x in r.first_runs() if x.type == "allreduce"),
                "comm_ratio": r.comm_time / bound.comm_time if bound.comm_time else None,
                "iteration_ratio": r.first_iteration / bound.first_iteration,
                "other_collectives": other_how.get(name)}

    summary = {**row("ours", result), **pricing}
    baselines = {name: {**row(name, r), "method": methods[name]} for name, r in results.items()}
    baselines.update({name: {"allreduce": name, "error": why} for name, why in skipped.items()})
    node_bandwidth, link_bandwidth = bandwidth.get("bandwidth"), bandwidth.get("link_bandwidth")
    info = {"nodes": nodes, "degree": degree, "alpha": alpha, "bandwidth": _describe(bandwidth),
            "policy": policy, "bucket": bucket, "found": found, "methods": methods,
            "skipped": skipped, "comm_model": comm_model, "plot": plot, "pricing": pricing}
    if as_json:
        print_json({**result.to_dict(), "comm_model": comm_model, "nodes": nodes,
                     "degree": degree, "alpha": alpha, "node_bandwidth": node_bandwidth,
                     "link_bandwidth": link_bandwidth, "bandwidth": _describe(bandwidth),
                     "compute_model": workload.compute_model,
                     "compute": _compute_words(workload), "ours": summary,
                     "baselines": baselines, "profile": workload.summary(),
                     "finder": None if found is None else found.message, "plot": plot})
        return
    _table(workload, summary, baselines, info)


def _table(workload, summary, baselines, info):
    how = ("wait-free" if info["policy"] == "wait-free" else "concurrent"
           if info["policy"] == "concurrent" else f"DDP buckets of {format_size(info['bucket'])}")
    table = Table(title=f"{escape(workload.name)} on {info['nodes']} nodes of degree "
                        f"{info['degree']}, alpha {format_time(info['alpha'])}, "
                        f"{info['bandwidth']}, {how}; "
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
    out_console.print(f"compute: {_compute_words(workload)}", markup=False)
    out_console.print(workload.description, markup=False)
    pricing = info["pricing"]
    ours_how = pricing["method"] + ("" if pricing["exact"] else " (steps exact, T_B an upper "
                                    "bound: line graph)")
    out_console.print(f"priced: ours {ours_how}; " + "; ".join(
        f"{name} {m}" for name, m in info["methods"].items()), markup=False)
    for name, r in [("ours", summary), *baselines.items()]:
        if r.get("other_collectives"):
            out_console.print(f"{name}: other collectives: {r['other_collectives']}", markup=False)
    for name, why in info["skipped"].items():
        out_console.print(f"{name}: not available: {why}", markup=False)
    if info["plot"]:
        out_console.print(f"plot written to {info['plot']}", markup=False)
