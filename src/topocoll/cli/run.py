"""``topocoll run``: run a schedule file or an MSCCL XML program on torch.distributed, check it
against torch's own collective and time both."""

import functools
import os

import click
from rich.table import Table

from .. import units
from ..errors import ProcessGroupError, ResourceLimitError, TopocollError
from ..limits import require_memory
from ..results import Status, document
from .common import (EXIT_INVALID, duration_callback, Fail, err_console, first_failure,
                     out_console, print_json, renamed_option, unit_callback)
from .emulate import network_kwargs, network_options, prepare, running

__all__ = ["run"]

#: Worlds up to this size start without --nproc even on fewer cores (any machine runs them);
#: beyond it and the machine's cores, the user asks for the processes by number.
_SMALL_WORLD = 4
#: Memory of one local rank: a Python interpreter with torch loaded, before any tensor.
_PROCESS_BYTES = 256 << 20
_DTYPES = ("float32", "float64", "float16", "bfloat16", "int32", "int64")


@click.command()
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--nproc", type=click.IntRange(1), help="Local processes to start [default: the "
              "schedule's node count]; ignored under torchrun, which starts them itself.")
@click.option("--size", default="4MiB", show_default=True,
              callback=unit_callback(units.parse_size, "--size"), help="Buffer size M (the whole "
              "buffer: an allgather's output, a reduce-scatter's input).")
@click.option("--dtype", type=click.Choice(_DTYPES), default="float32", show_default=True)
@click.option("--backend", type=click.Choice(["gloo", "nccl"]), default="gloo",
              show_default=True)
@renamed_option("--iterations", "iters", old=("--iters",), type=click.IntRange(1), default=20,
                show_default=True,
              help="Timed calls (the median is reported).")
@click.option("--check", is_flag=True, help="Compare the result with torch's own collective on "
              "the same data; exit 1 on a mismatch.")
@click.option("--no-baseline", is_flag=True, help="Do not time torch's collective.")
@renamed_option("--time-limit", "timeout", old=("--timeout",), default="10min", show_default=True,
                metavar="DURATION", callback=duration_callback("--time-limit", allow_zero=False),
                help="Wall-clock limit of a local run, e.g. 90s or 10min; it then gives up, naming "
               "the ranks that did not finish.")
@click.option("--peer-timeout", "peer_timeout", metavar="DURATION",
              callback=duration_callback("--peer-timeout", allow_zero=False),
              help="How long a rank waits for a peer's packet before the run ends naming the "
                   "peer, its process and the step, e.g. 30s [default: no limit; --time-limit "
                   "ends a local run].")
@renamed_option("--slice-size", "slice_bytes", old=("--slice-bytes",),
                callback=unit_callback(units.parse_size, "--slice-size"),
              help="Most bytes of one packet of the dataflow engine [default: 1MiB].")
@click.option("--window", type=click.IntRange(1), help="Staging buffers per peer of the "
              "dataflow engine [default: 4].")
@click.option("--engine", type=click.Choice(["auto", "dataflow", "steps"]), default="auto",
              show_default=True, help="dataflow: packets leave as soon as their data is final; "
              "steps: one batch of whole messages per step (what NCCL needs); auto: steps on "
              "nccl, else dataflow.")
@click.option("--transport", type=click.Choice(["auto", "network", "shared_memory"]),
              default="auto", show_default=True, help="How the dataflow engine's packets "
              "travel: shared memory where every rank shares this host (its namespaces too), "
              "else the process group's network (auto); or either, forced.")
@click.option("--fresh-tensors", is_flag=True, help="Give every timed call a fresh copy of the "
              "input [default: one tensor per collective, refilled before each call, as "
              "training reuses its gradient buckets].")
@click.option("--emulate", is_flag=True, help="Run on an emulated network of the schedule's "
              "topology (namespaces, shaped links, routes; see 'topocoll emulate'), and price "
              "both collectives in the calibrated model of that network.")
@network_options
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def run(*, file, nproc, size, dtype, backend, iters, check, no_baseline, timeout, peer_timeout,
        slice_bytes, window, engine, transport, fresh_tensors, emulate, link_bandwidth, scale, mtu, latency,
        no_capacity_check, as_json):
    """Run a schedule FILE on torch.distributed; time it against torch's own collective.

    Prints the time per call and the bus bandwidth, ours and torch's; --check compares the
    results. FILE is a topocoll schedule (JSON) or an MSCCL XML program (msccl-tools, TACCL,
    ForestColl, topocoll export), told apart by its content; an XML program runs only if
    'topocoll lint' passes it. FILE may be gzip-compressed, and '-' (standard input) when the
    command starts the processes itself.

    \b
    topocoll run s.json --nproc 4 --check      # starts 4 local processes itself
    topocoll run algo.xml --check              # an MSCCL XML program, on CPUs (gloo)
    topocoll run s.json --emulate --link-bandwidth 25Mbps --check --json
                                               # on an emulated network, beside the model
    torchrun --standalone --nproc-per-node 4 -m topocoll.cli.main run s.json
    torchrun --nnodes 2 --nproc-per-node 8 --rdzv-backend c10d \\
        --rdzv-endpoint HOST:29500 -m topocoll.cli.main run s.json   # on each machine
    """
    options = {"engine": engine, "transport": transport}
    if fresh_tensors:
        options["reuse"] = False
    if slice_bytes is not None:
        options["slice_bytes"] = int(slice_bytes)
    if window is not None:
        options["window"] = window
    if peer_timeout is not None:
        options["timeout"] = float(peer_timeout)
    torchrun = "RANK" in os.environ and "WORLD_SIZE" in os.environ
    shaping = network_kwargs(link_bandwidth, scale, mtu, latency, no_capacity_check)
    if not emulate and any(v is not None for v in (link_bandwidth, scale, latency)):
        raise Fail("--link-bandwidth, --scale and --latency shape an emulated network: add "
                   "--emulate")
    if emulate and (torchrun or backend != "gloo"):
        raise Fail("--emulate starts its own gloo ranks inside the network: not under "
                   "torchrun, and with --backend gloo")
    if emulate:
        prepare()   # first: numpy's threads would keep this process from a user namespace
    schedule, kind, once = _load_schedule(file, torchrun)
    if emulate:
        result = _run_emulated(schedule, shaping, size, dtype, iters, check, not no_baseline,
                               options, nproc, timeout)
        result["format"] = kind
        _report(result, as_json, check)
        return
    n = schedule.topology.num_nodes
    cores = os.cpu_count() or 1
    if not torchrun and nproc is None and n > max(cores, _SMALL_WORLD):
        raise Fail(f"the schedule is for {n} nodes, more than this machine's {cores} cores: "
                   f"give --nproc {n} to start {n} processes here anyway, or start it with "
                   "torchrun")
    size, note = _fit_size(schedule, size, dtype, torchrun)
    measure = (size, dtype, iters, check, not no_baseline, options)
    if torchrun:
        result = _run_under_torchrun(schedule, measure, backend, note)
        if result is None:
            return
    else:
        result = _run_here(schedule, measure, nproc, backend, note,
                           source=None if once else os.path.abspath(file), timeout=timeout)
    result["size"] = size
    result["format"] = kind
    _report(result, as_json, check)


def _load_schedule(file, torchrun):
    """Read FILE once and verify it: ``(schedule, format, once)``, ``once`` when FILE is
    standard input or a pipe (readable by one process only)."""
    from ..fileio import is_special
    from ..runtime.launch import require_torch
    from ..runtime.sources import loads_runnable, read_runnable, runnable_format
    from ..schedule.verify import verify

    try:
        require_torch()   # before reading FILE: the one line to fix comes first
    except TopocollError as exc:
        raise Fail(str(exc)) from None
    # standard input or a FIFO can be read once, by one process: not by every torchrun rank
    once = file == "-" or is_special(file)
    if torchrun and once:
        raise Fail(f"{file}: under torchrun every rank reads FILE itself; give a regular "
                   "file, not standard input or a pipe")
    # read once (standard input and pipes cannot be read twice), told apart by the content
    data = read_runnable(file)
    kind = runnable_format(data)
    schedule = loads_runnable(data, source="<stdin>" if file == "-" else file)
    del data
    verify(schedule).raise_if_invalid()      # before any process starts
    return schedule, kind, once


def _fit_size(schedule, size, dtype, torchrun):
    """The buffer size rounded to whole elements, and the note saying so (or None); a size
    below one element per shard, or that cannot fit, is refused before any process."""
    from ..runtime.measure import SHARDED, buffer_elements, local_memory, rounded_bytes

    n = schedule.topology.num_nodes
    try:
        buffer_elements(schedule.collective.name, n, size, dtype)
        runs = rounded_bytes(schedule.collective.name, n, size, dtype)
        note = None
        if runs != int(size):   # said (once every check has passed), not silent
            per = " per shard" if schedule.collective.name in SHARDED else ""
            note = (f"note: --size {units.format_size(size)} is not a whole number of {dtype} "
                    f"elements{per}; running {runs} bytes")
            size = runs
        require_memory(local_memory(schedule.collective.name, 1 if torchrun else n, size),
                       f"{units.format_size(size)} buffers on "
                       f"{'this rank' if torchrun else f'{n} local ranks'}")
    except TopocollError as exc:
        raise Fail(str(exc)) from None
    return size, note


def _run_under_torchrun(schedule, measure, backend, note):
    """Measure as one rank of a torchrun world; the result on rank 0, else None.

    ``measure``: ``(size, dtype, iters, check, baseline, options)``.
    """
    import torch
    import torch.distributed as dist

    from ..runtime.measure import measure_schedule

    size, dtype, iters, check, baseline, options = measure
    n = schedule.topology.num_nodes
    if note and int(os.environ.get("RANK", 0)) == 0:
        err_console.print(note, markup=False)

    if int(os.environ["WORLD_SIZE"]) != n:
        raise Fail(f"the schedule is for {n} nodes but torchrun started "
                   f"{os.environ['WORLD_SIZE']} processes")
    if backend == "nccl":
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", 0)))
    dist.init_process_group(backend)
    try:
        result = measure_schedule(schedule, size, dtype=dtype, iters=iters, check=check,
                                  baseline=baseline, **options)
    finally:
        dist.destroy_process_group()
    if int(os.environ["RANK"]) != 0:
        return None
    return result


def _run_here(schedule, measure, nproc, backend, note, *, source, timeout):
    """Start the local processes and measure; rank 0's result. ``source``: the path the
    processes read the schedule from, or None to hand them the one read here."""
    from ..runtime.launch import run_local
    from ..runtime.measure import measure_file

    n = schedule.topology.num_nodes
    nproc = n if nproc is None else nproc
    if nproc != n:
        raise Fail(f"the schedule is for {n} nodes; --nproc {nproc} would not run it "
                   f"(give --nproc {n})")
    try:   # every process is a Python interpreter with torch loaded
        require_memory(n * _PROCESS_BYTES, f"{n} local torch processes")
    except ResourceLimitError as exc:
        raise Fail(str(exc)) from None
    if backend == "nccl":
        raise Fail("--backend nccl needs one GPU per process: start it with torchrun")
    if note:
        err_console.print(note, markup=False)
    # the processes read a regular file themselves; what could be read only once they
    # get from here, already read
    worker, source = ((_measure_loaded, schedule) if source is None else (measure_file, source))
    size, dtype, iters, check, baseline, options = measure
    # a partial of a module-level function pickles, so spawned processes receive it
    worker = functools.partial(worker, dtype=dtype, iters=iters, check=check, baseline=baseline,
                               options=options)
    try:
        return run_local(worker, n, (source, size), timeout=timeout)[0]
    except ProcessGroupError as exc:
        raise Fail(first_failure(str(exc))) from None


def _run_emulated(schedule, shaping, size, dtype, iters, check, baseline, options, nproc,
                  timeout):
    """Build the schedule's topology as an emulated network and measure on it."""
    from ..emulate.network import EmulatedNetwork
    from ..runtime.emulated import measure_on_network

    n = schedule.topology.num_nodes
    if nproc is not None and nproc != n:
        raise Fail(f"the schedule is for {n} nodes; on an emulated network each runs one rank "
                   f"(--nproc {nproc} would not run it)")
    size, note = _fit_size(schedule, size, dtype, False)
    try:
        require_memory(n * _PROCESS_BYTES, f"{n} local torch processes")
    except ResourceLimitError as exc:
        raise Fail(str(exc)) from None
    net = EmulatedNetwork(schedule.topology, **shaping)
    if note:
        err_console.print(note, markup=False)
    with running(net):
        try:
            result = measure_on_network(schedule, net, size, dtype=dtype, iters=iters,
                                        check=check, baseline=baseline, timeout=timeout,
                                        **options)
        except ProcessGroupError as exc:
            raise Fail(first_failure(str(exc))) from None
    result["size"] = size
    if result["host"]["idle"] < 0.1:
        err_console.print(f"note: the host was {result['host']['idle']:.0%} idle during the "
                          "run: its cores, not the links, may have set the pace",
                          markup=False)
    return result


def _report(result, as_json, check):
    """Print the result (a table, or one JSON document); exit 1 when --check found a
    difference."""
    if as_json:   # {status keys (INVALID when --check finds a difference), time, busbw, ...}
        wrong = "correct" in result and not result["correct"]
        said = (f"{result['algorithm']} {result['collective']} on {result['ranks']} ranks: "
                f"{units.format_time(result['time'])} per call")
        if result.get("ratio") is not None:
            said += f", bus bandwidth {result['ratio']:.3f}x torch's"
        if result.get("measured_over_model") is not None:
            said += f", {result['measured_over_model']:.3f}x the model's time"
        if "correct" in result:
            said += "; RESULT DIFFERS from torch's" if wrong else "; result equal to torch's"
        print_json(document(Status.INVALID if wrong else Status.SUCCESS, said, result))
    else:
        print_run_table(result)
    if check and not result["correct"]:
        raise Fail(f"the result differs from torch's {result['collective']} on "
                   f"{result['mismatched_ranks']} rank(s)", EXIT_INVALID)


def _measure_loaded(rank, world_size, schedule, size, *, dtype, iters, check, baseline,
                    options=None):
    """:func:`~topocoll.runtime.measure.measure_schedule` of a schedule read by the parent
    (from standard input or a pipe): the worker of each local process, importable so that
    spawned processes find it."""
    from ..runtime.measure import measure_schedule

    return measure_schedule(schedule, size, dtype=dtype, iters=iters, check=check,
                            baseline=baseline, **(options or {}))


def print_run_table(r):
    from ..runtime.sources import MSCCL_XML

    fmt_t = units.format_time
    source = " (MSCCL XML)" if r.get("format") == MSCCL_XML else ""
    where = ""
    if "network" in r:
        rates = r["network"]["link_rates"]
        where = (f" (emulated, links at {units.format_bandwidth(max(rates))}, host "
                 f"{r['host']['idle']:.0%} idle)")
    over = f", packets over {r['transport'].replace('_', ' ')}" if r.get("transport") else ""
    table = Table(title=f"{r['algorithm']} {r['collective']}{source} on {r['topology']}"
                        f"{where}: {r['ranks']} ranks, {units.format_size(r['size'])} of "
                        f"{r['dtype']}{over}")
    modelled = "model_time" in r
    cpu = "cpu_per_gib" in r
    for col in ("", "time per call", "bus bandwidth") + (("CPU s per GiB",) if cpu else ()) \
            + (("model", "measured/model") if modelled else ()):
        table.add_column(col, justify="right")

    def cpu_cell(value):
        return () if not cpu else ("-" if value is None else f"{value:.3f}")

    def model_cells(model, ratio):
        if not modelled:
            return ()
        return ("-" if model is None else fmt_t(model), "-" if ratio is None else f"{ratio:.3f}")

    table.add_row("topocoll", fmt_t(r["time"]), units.format_bandwidth(r["busbw"]),
                  *cpu_cell(r.get("cpu_per_gib")),
                  *model_cells(r.get("model_time"), r.get("measured_over_model")))
    if r.get("baseline_time") is not None:
        table.add_row("torch", fmt_t(r["baseline_time"]),
                      units.format_bandwidth(r["baseline_busbw"]),
                      *cpu_cell(r.get("baseline_cpu_per_gib")),
                      *model_cells(r.get("baseline_model_time"),
                                   r.get("baseline_measured_over_model")))
    out_console.print(table)
    line = ""
    if r.get("ratio") is not None:
        line = f"bus bandwidth {r['ratio']:.3f}x torch's"
        if "reuse" in r:
            line += " (" + ("one tensor per collective, refilled" if r["reuse"]
                            else "a fresh tensor per call") + ")"

    if "correct" in r:
        line += ("; " if line else "") + ("result equal to torch's" if r["correct"]
                                          else "RESULT DIFFERS from torch's")
    if line:
        out_console.print(line, markup=False)
