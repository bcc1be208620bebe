"""``topocoll train-sim``: one data-parallel training iteration, compute overlapped with
gradient allreduces, on our topology next to the two-phase bound, ShiftedRing and DBT."""

import os

import click
from rich.markup import escape
from rich.table import Table

from .. import defaults, units
from ..errors import TopocollError
from ..units import format_size, format_time
from .common import _check_plot, _Choice, _duration, _Fail, _Lines, _out, _print_json, _renamed, \
    _unit

__all__ = ["train_sim", "resolve_profile", "workload_profile"]

#: --dtype: the names ``run --dtype`` (and torch) use -> the names of studies.models.DTYPE_BYTES
_DTYPES = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}


def resolve_profile(model, *, batch=None, gpu_flops=None, efficiency=None, dtype=None,
                    cycle_time=None):
    """The profile of ``model``: a built-in model's name or a profile file (JSON or ASTRA-sim
    text); the model options apply to built-in models only."""
    from ..studies.models import MODELS, model_profile
    from ..studies.profiles import load_profile

    if model in MODELS:
        if cycle_time is not None:
            raise _Fail("--cycle-time applies to ASTRA-sim workload files, not to built-in models")
        return model_profile(model, batch=batch, gpu_flops=gpu_flops, efficiency=efficiency,
                             bytes_per_param=dtype)
    if model != "-" and not os.path.exists(model):
        raise _Fail(f"--workload {model}: neither a known model ({', '.join(MODELS)}) nor a file")
    given = [name for name, v in (("--batch", batch), ("--gpu-flops", gpu_flops),
                                  ("--efficiency", efficiency), ("--dtype", dtype)) if v is not None]
    if given:
        raise _Fail(f"{given[0]} applies to the built-in models ({', '.join(MODELS)}), not to a "
                    "profile file")
    return load_profile(model, cycle_time=cycle_time)


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


def _baseline(name, nodes, alpha, bandwidth, store, full=False):
    """A baseline's allreduce cost and how it was obtained, through the finder's cache:
    ``steps`` and ``T_B`` in units of M/B determine it at any latency and bandwidth (every link
    has latency alpha). By default from the baseline's structure (closed form, equal to the
    generated schedule's price); ``full``: the schedule generated and priced."""
    from ..studies.training import (CLOSED_FORM, AllreduceCost, baseline_closed_form,
                                    baseline_cost)

    method = GENERATED if full else CLOSED_FORM
    # an affine price is steps and T_B; a pipelined one (DBT) depends on alpha and B as well
    key = f"{name}:{nodes}:{'generated' if full else 'closed'}:{alpha!r}:{bandwidth!r}"
    doc = store.get("baseline", key)
    if doc is None:
        price = baseline_cost if full else baseline_closed_form
        cost = price(name, nodes, alpha=alpha, bandwidth=bandwidth)
        if isinstance(cost, AllreduceCost):
            doc = {"steps": cost.steps, "t_b": cost.per_byte * bandwidth, "method": method}
        else:
            doc = {"pipelined": cost.to_dict(), "method": method}
        store.put("baseline", key, doc)
    if "pipelined" in doc:
        from ..schedule.cost import PipelinedCost

        return PipelinedCost.from_dict(doc["pipelined"]), method
    return AllreduceCost.from_step_model(doc["steps"], doc["t_b"], alpha=alpha,
                                         bandwidth=bandwidth, name=name), method


def _ours(schedule_file, spec, nodes, degree, profile, bucket, alpha, bandwidth, store,
          progress, comm_model="step", full=None):
    """Our allreduce cost, the (nodes, degree) it runs on, the finder's result (or None) and
    how the cost was obtained (``{"method": .., "exact": ..}``). ``full``: build and verify
    the finder's choice whole (None: when N <= :data:`EXPLICIT_NODES`)."""
    from ..finder.core import EXPLICIT
    from ..schedule.verify import verify
    from ..studies.training import AllreduceCost, schedule_cost

    if schedule_file is not None or spec is not None:
        if schedule_file is not None:
            from ..schedule.io import load_schedule

            schedule = load_schedule(schedule_file)
            name = f"{schedule.topology.name} {schedule.algorithm}"
        else:
            from ..synth import generate
            from ..topology import topology

            topo = topology(spec).with_node_bandwidth(bandwidth)
            progress(f"BFB allreduce on {spec}", 0, None)
            schedule = generate(topo, "allreduce", "bfb")
            name = f"{spec} bfb"
        if schedule.collective.name != "allreduce":
            raise _Fail(f"--schedule {schedule_file}: train-sim needs an allreduce schedule, got "
                        f"{schedule.collective.name}")
        n = schedule.topology.num_nodes
        if nodes is not None and nodes != n:
            raise _Fail(f"--nodes {nodes} but the {'schedule' if schedule_file else 'topology'} "
                        f"has {n} nodes")
        actual = int(schedule.topology.out_degree().max())
        if degree is not None and degree < actual:
            raise _Fail(f"--degree {degree} but {schedule.topology.name} has nodes of degree "
                        f"{actual}: the bound for degree {degree} does not hold for it (leave "
                        "--degree out)")
        d = degree if degree is not None else actual
        progress(f"verifying {schedule.num_transfers} transfers", 0, None)
        verify(schedule).raise_if_invalid()
        if comm_model == "link":
            from ..studies.training import LinkModelCost

            return LinkModelCost(schedule, alpha=alpha, bandwidth=bandwidth, name=name), n, d, \
                None, {"method": EXPLICIT, "exact": True}
        return schedule_cost(schedule, alpha=alpha, bandwidth=bandwidth, name=name), n, d, \
            None, {"method": EXPLICIT, "exact": True}
    from ..finder import Workload, find

    d = min(4, nodes - 1) if degree is None else degree   # complete:N is the most there is
    workload = Workload.from_layers(profile.forward_order_bytes(), bucket)
    if full is None:
        full = nodes <= EXPLICIT_NODES
    result = find(nodes, d, workload, alpha=alpha, node_bandwidth=bandwidth, cache=store,
                  progress=progress, method="explicit" if full else "construction")
    if not result.success or result.evaluation is None:
        raise _Fail(f"the finder found no topology: {result.message}")
    ev = result.evaluation
    cost = AllreduceCost.from_step_model(ev["steps"], 2.0 * ev["T_B_per_phase"], alpha=alpha,
                                         bandwidth=bandwidth, name=f"{result.best.name} bfb")
    how = {"method": ev.get("method", EXPLICIT), "exact": bool(ev.get("exact", True))}
    if "base" in ev:
        how["base"] = ev["base"]
    return cost, nodes, d, result, how


@click.command("train-sim")
@_renamed("--workload", "model", old=("--model",), required=True,
          help="The model trained: resnet50, bert-large, gpt2-medium, vit-b16, or a profile "
               "FILE (JSON or an ASTRA-sim DATA workload; see docs/training.md).")
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
              callback=_unit(units.parse_time, "--alpha"), help="Latency of every link.")
@click.option("--node-bandwidth", default=units.format_bandwidth(defaults.NODE_BANDWIDTH),
              show_default=True, callback=_unit(units.parse_bandwidth, "--node-bandwidth"),
              help="Egress bandwidth B of each node, split evenly over its links.")
@click.option("--policy", type=click.Choice(["wait-free", "buckets"]),
              help="How allreduces overlap compute: the NSDI 2025 paper's wait-free rules, or "
                   "PyTorch DDP's fixed buckets [default: wait-free; buckets with --bucket-size].")
@_renamed("--bucket-size", "bucket", old=("--bucket",),
          callback=_unit(units.parse_size, "--bucket-size"),
          help="DDP bucket size (implies --policy buckets) "
               f"[default with buckets: {units.format_size(defaults.BUCKET_SIZE)}].")
@click.option("--batch", type=int, help="Samples per GPU (built-in models).")
@click.option("--gpu-flops", type=float, help="Peak FLOP/s of one GPU (built-in models) "
              f"[default: {defaults.GPU_FLOPS:g}, an A100].")
@click.option("--efficiency", type=float, help="Fraction of the peak achieved (built-in models) "
              f"[default: {defaults.GPU_EFFICIENCY:g}].")
@click.option("--dtype", type=_Choice(list(_DTYPES), old={v: k for k, v in _DTYPES.items()}),
              callback=lambda ctx, param, value: _DTYPES.get(value),
              help="Gradient type (built-in models) [default: float32].")
@click.option("--cycle-time", metavar="DURATION", callback=_duration("--cycle-time"),
              help="Length of one cycle of an ASTRA-sim workload "
                   f"[default: {units.format_time(defaults.CYCLE_TIME)}].")
@click.option("--verify-full", is_flag=True,
              help="Build and verify the finder's whole allreduce and generate the baselines' "
                   f"schedules, at any N [default: only up to {EXPLICIT_NODES} nodes; above, an "
                   "expanded topology is priced by construction from its verified base, and the "
                   "baselines always by closed form].")
@click.option("--no-cache", is_flag=True, help="Neither read nor write the results cache.")
@click.option("--plot", type=click.Path(dir_okay=False),
              help="Draw our iteration's timeline (compute and allreduces) to this file.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def train_sim(model, nodes, degree, schedule_file, spec, comm_model, alpha, node_bandwidth,
              policy, bucket, batch, gpu_flops, efficiency, dtype, cycle_time, verify_full,
              no_cache, plot, as_json):
    """Simulate one data-parallel training iteration: compute overlapped with allreduces.

    A model's gradients become ready layer by layer during backpropagation; each allreduce
    starts under the wait-free rules (Zhao et al., NSDI 2025, section 8.4) or PyTorch DDP's
    buckets. Our allreduce (a schedule file, BFB on a topology, or the finder's best topology
    for N, d and this workload) runs next to the two-phase bound, ShiftedRing and DBT on N nodes.
    """
    from ..finder import Cache
    from ..studies.training import (CLOSED_FORM, lower_bound_cost,
                                    plot_iteration as plot_timeline, simulate_iteration)

    if schedule_file is not None and spec is not None:
        raise _Fail("give --schedule or --topology, not both")
    if nodes is None and schedule_file is None and spec is None:
        raise _Fail("--nodes is required unless --schedule or --topology gives the cluster")
    if nodes is not None and nodes < 3:
        raise _Fail(f"--nodes must be at least 3, got {nodes}")
    if degree is not None and degree < 1:
        raise _Fail(f"--degree must be at least 1, got {degree}")
    if degree is not None and nodes is not None and degree >= nodes:
        raise _Fail(f"--degree {degree} on {nodes} nodes: a node has at most {nodes - 1} "
                    "other nodes to link to")
    if comm_model == "link" and schedule_file is None and spec is None:
        raise _Fail("--comm-model link times a schedule: give --schedule or --topology")
    if policy == "wait-free" and bucket is not None:
        raise _Fail("--bucket-size applies to --policy buckets, not wait-free")
    policy = policy or ("buckets" if bucket is not None else "wait-free")
    if policy == "buckets" and bucket is None:
        bucket = defaults.BUCKET_SIZE
    if bucket is not None and (bucket <= 0 or bucket != int(bucket)):
        raise _Fail(f"--bucket-size must be a positive whole number of bytes, got {bucket:g}")
    if cycle_time is not None and cycle_time <= 0:
        raise _Fail("--cycle-time must be positive")
    _check_plot(plot)
    profile = resolve_profile(model, batch=batch, gpu_flops=gpu_flops, efficiency=efficiency,
                              dtype=dtype, cycle_time=cycle_time)
    store = Cache(enabled=not no_cache)
    lines = _Lines("train-sim")
    with lines, store:
        ours, nodes, degree, found, pricing = _ours(schedule_file, spec, nodes, degree, profile,
                                                bucket, alpha, node_bandwidth, store,
                                                lines.update, comm_model,
                                                True if verify_full else None)
        if nodes < 3:
            raise _Fail(f"train-sim needs at least 3 nodes, got {nodes}")
        costs = {"two-phase bound": lower_bound_cost(nodes, degree, alpha=alpha,
                                                 bandwidth=node_bandwidth)}
        methods = {"two-phase bound": CLOSED_FORM}
        skipped = {}
        for name in ("ShiftedRing", "DBT"):
            lines.update(f"{name} allreduce on {nodes} nodes", 0, None)
            try:
                costs[name], methods[name] = _baseline(name, nodes, alpha, node_bandwidth,
                                                       store, verify_full)
            except TopocollError as exc:      # e.g. no shifted ring of 4 or 6 nodes
                skipped[name] = str(exc)
    options = {"policy": policy, "bucket_size": bucket if policy == "buckets" else None}
    result = simulate_iteration(profile, ours, **options)
    others = {name: simulate_iteration(profile, cost, **options) for name, cost in costs.items()}
    bound = others["two-phase bound"]
    if plot:
        plot_timeline(result, plot, profile=profile,
                      title=f"{profile.name} on {ours.name}, {nodes} nodes: {result.message}")

    def row(r, cost):
        return {"allreduce": cost.name, "steps": cost.steps, "iteration_time": r.iteration_time,
                "compute_time": r.compute_time, "exposed_comm": r.exposed_comm,
                "comm_time": r.comm_time, "allreduces": len(r.allreduces),
                "comm_ratio": r.comm_time / bound.comm_time,
                "iteration_ratio": r.iteration_time / bound.iteration_time}

    summary = {**row(result, ours), **pricing}
    baselines = {name: {**row(r, costs[name]), "method": methods[name]}
                 for name, r in others.items()}
    baselines.update({name: {"allreduce": name, "error": why} for name, why in skipped.items()})
    if as_json:
        doc = {**result.to_dict(), "comm_model": comm_model, "nodes": nodes, "degree": degree,
               "alpha": alpha,
               "node_bandwidth": node_bandwidth, "ours": summary, "baselines": baselines,
               "profile": {k: v for k, v in profile.to_dict().items() if k != "layers"},
               "finder": None if found is None else found.message, "plot": plot}
        doc["profile"]["layers"] = len(profile.layers)
        _print_json(doc)
        return
    how = ("wait-free" if policy == "wait-free"
           else f"DDP buckets of {format_size(bucket)}")
    table = Table(title=f"{escape(profile.name)} on {nodes} nodes of degree {degree}, "
                        f"alpha {format_time(alpha)}, "
                        f"{units.format_bandwidth(node_bandwidth)} per node, {how}; x bound = "
                        "total allreduce time / the two-phase bound's")
    for col in ("", "allreduce", "iteration", "compute", "exposed comm", "total allreduce",
                "allreduces", "x bound"):
        table.add_column(col, justify="left" if col in ("", "allreduce") else "right")
    for label, r in [("ours", summary), *baselines.items()]:
        if "error" in r:
            table.add_row(label, escape(r["allreduce"]), *["-"] * 6)
            continue
        table.add_row(label, escape(r["allreduce"]), format_time(r["iteration_time"]),
                      format_time(r["compute_time"]), format_time(r["exposed_comm"]),
                      format_time(r["comm_time"]), str(r["allreduces"]),
                      f"{r['comm_ratio']:.3f}")
    _out.print(table)
    _out.print(profile.description, markup=False)
    ours_how = pricing["method"] + ("" if pricing["exact"] else " (steps exact, T_B an upper bound: "
                                "line graph)")
    _out.print(f"priced: ours {ours_how}; " + "; ".join(
        f"{name} {methods[name]}" for name in costs if name in methods), markup=False)
    for name, why in skipped.items():
        _out.print(f"{name}: not available: {why}", markup=False)
    if plot:
        _out.print(f"plot written to {plot}", markup=False)
