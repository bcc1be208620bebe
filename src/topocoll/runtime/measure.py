"""Time a schedule against torch's own collective on the same process group, and check it.

Bus bandwidth is defined as nccl-tests define it, so that numbers compare across sizes and rank
counts: with ``S`` the bytes of the whole buffer (the output of an allgather, the input of a
reduce-scatter, the tensor of an allreduce; for scatter, gather and alltoall the ``N`` shards
together) and ``t`` the time per call, ``algbw = S / t`` and ``busbw = algbw * factor`` with

==================================  ===================
collective                          factor
==================================  ===================
allreduce                           ``2 (N - 1) / N``
allgather, reduce_scatter, alltoall,
scatter, gather                     ``(N - 1) / N``
broadcast, reduce                   ``1``
==================================  ===================

The check runs both collectives on the same data, integer-valued so that every order of
summation gives the same bits in every dtype: the result must be equal, element for element.
"""

import resource
import time
import warnings

import numpy as np

from ..errors import ProcessGroupError, UnsupportedError
from ..units import format_size, parse_size
from .executor import ScheduleCollective
from .launch import missing_ranks
from .sources import load_runnable

__all__ = ["bus_factor", "measure_schedule", "measure_file", "buffer_elements", "rounded_bytes",
           "local_memory",
           "DTYPES", "DTYPE_BYTES"]

#: Bytes of one element of each type ``topocoll run --dtype`` accepts.
DTYPE_BYTES = {"float32": 4, "float64": 8, "float16": 2, "bfloat16": 2, "int32": 4, "int64": 8}
#: Element types ``topocoll run --dtype`` accepts.
DTYPES = tuple(DTYPE_BYTES)


def bus_factor(collective, n):
    """The nccl-tests factor from algorithm bandwidth to bus bandwidth."""
    if collective == "allreduce":
        return 2.0 * (n - 1) / n
    if collective in ("broadcast", "reduce"):
        return 1.0
    return (n - 1) / n


def buffer_elements(collective, n, nbytes, dtype):
    """Elements of the input tensor for a buffer of ``nbytes`` (the ``S`` of the module text)
    of ``dtype`` on ``n`` ranks.

    The buffer is a whole number of elements, and for the collectives whose buffer is ``n``
    shards (allgather, reduce-scatter, scatter, gather, all-to-all) a whole number of elements
    per shard: ``nbytes`` is rounded down to that (:func:`rounded_bytes` says to what, so the
    caller can say so), and a size below one such unit is refused.

    >>> buffer_elements("allgather", 4, 1024, "float32")      # one shard of 256 bytes
    64
    >>> buffer_elements("allreduce", 3, 3, "float32")
    Traceback (most recent call last):
    ...
    topocoll.errors.UnsupportedError: size 3B is less than one float32 element (4 bytes); use at least 4B
    """
    itemsize = DTYPE_BYTES[dtype]
    unit = _unit(collective, n, itemsize)
    nbytes = int(nbytes)
    if nbytes < unit:
        what = (f"{n} shards of one {dtype} element ({itemsize} bytes each)" if unit > itemsize
                else f"one {dtype} element ({itemsize} bytes)")
        raise UnsupportedError(f"size {format_size(nbytes)} is less than {what}; use at least "
                               f"{format_size(unit)}")
    total = nbytes // unit * unit // itemsize
    return total // n if collective in ("allgather", "gather") else total


def rounded_bytes(collective, n, nbytes, dtype):
    """The bytes :func:`buffer_elements` actually runs for ``nbytes``: rounded down to whole
    elements (per shard, where the buffer is ``n`` shards)."""
    unit = _unit(collective, n, DTYPE_BYTES[dtype])
    return int(nbytes) // unit * unit


#: Collectives whose buffer is ``n`` shards: their sizes are whole elements per shard.
SHARDED = ("allgather", "gather", "reduce_scatter", "scatter", "alltoall")


def _unit(collective, n, itemsize):
    return itemsize * (n if collective in SHARDED else 1)


def local_memory(collective, n, nbytes):
    """Bytes that ``n`` local ranks hold for a buffer of ``nbytes``: per rank its input, its
    output, the check's and the baseline's copies and the engine's staging (about 6 buffers;
    an allgather's input is one shard of it)."""
    return 6 * int(nbytes) * n


def _data(numel, dtype, rank, seed, device="cpu"):
    import torch

    rng = np.random.default_rng([seed, rank])
    return torch.from_numpy(rng.integers(-3, 4, size=numel, dtype=np.int8)).to(device, dtype)


def _torch_collective(name, n, rank, root):
    """``fn(x) -> result`` with torch's own collective (None if torch has none for it)."""
    import torch
    import torch.distributed as dist

    def allgather(x):
        out = torch.empty(x.numel() * n, dtype=x.dtype, device=x.device)
        dist.all_gather_into_tensor(out, x)
        return out

    def reduce_scatter(x):
        out = torch.empty(x.numel() // n, dtype=x.dtype, device=x.device)
        with warnings.catch_warnings():   # renamed in torch 2.13; the old name still works
            warnings.simplefilter("ignore", FutureWarning)
            dist.reduce_scatter_tensor(out, x)
        return out

    def allreduce(x):
        dist.all_reduce(x)
        return x

    def broadcast(x):
        dist.broadcast(x, src=root)
        return x

    def reduce(x):
        dist.reduce(x, dst=root)
        return x

    def scatter(x):
        out = torch.empty(x.numel() // n, dtype=x.dtype, device=x.device)
        dist.scatter(out, list(x.chunk(n)) if rank == root else None, src=root)
        return out

    def gather(x):
        out = [torch.empty_like(x) for _ in range(n)] if rank == root else None
        dist.gather(x, out, dst=root)
        return torch.cat(out) if out is not None else None

    def alltoall(x):
        out = torch.empty_like(x)
        dist.all_to_all_single(out, x)
        return out

    return locals()[name]


def _cpu_seconds():
    """CPU seconds (user + system) this process has used, every thread of it (gloo's too)."""
    use = resource.getrusage(resource.RUSAGE_SELF)
    return use.ru_utime + use.ru_stime


def _time(fns, base, iters, warmup, device, reuse=True, timeout=None):
    """Per function of ``fns``: the median seconds per call and the median CPU seconds per
    call of all ranks together. The calls alternate (``a b b a a b ...``), so that both see
    the same machine, and each time sample is the slowest rank's time of that call (every call
    starts after a barrier).

    ``reuse``: every function gets one tensor, refilled from ``base`` (untimed) before each
    call, as training reuses its gradient buckets; else a fresh copy of ``base`` per call.
    ``timeout``: seconds a barrier waits for every rank (None: no limit)."""
    import torch
    import torch.distributed as dist

    kept = [base.clone() for _ in fns] if reuse else None
    # the barrier before each call: an all_reduce of one value, whose wait a timeout bounds
    # (gloo's barrier waits on its own and its wait ignores one)
    token = torch.zeros(1, device=device)

    def data(j):
        if not reuse:
            return base.clone()
        kept[j].copy_(base)
        return kept[j]

    for _ in range(warmup):
        for j, fn in enumerate(fns):
            fn(data(j))
    samples = [[] for _ in fns]
    cpu = [[] for _ in fns]
    for i in range(iters):
        order = range(len(fns)) if i % 2 == 0 else reversed(range(len(fns)))
        for j in order:
            x = data(j)
            missing = missing_ranks(dist.all_reduce(token, async_op=True), timeout)
            if missing is not None:
                raise ProcessGroupError(f"timed call {i + 1}: not every rank reached the "
                                        f"barrier before it{missing}")
            used = _cpu_seconds()
            start = time.perf_counter()
            fns[j](x)
            samples[j].append(time.perf_counter() - start)
            cpu[j].append(_cpu_seconds() - used)
    slowest = torch.tensor(samples, dtype=torch.float64, device=device)
    dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
    spent = torch.tensor(cpu, dtype=torch.float64, device=device)
    dist.all_reduce(spent, op=dist.ReduceOp.SUM)
    return ([float(np.median(row)) for row in slowest.cpu().numpy()],
            [float(np.median(row)) for row in spent.cpu().numpy()])


def measure_schedule(schedule, size="4MiB", *, dtype="float32", iters=20, warmup=3,
                     check=True, baseline=True, seed=0, group=None, reuse=True, **options):
    """Run ``schedule`` on this process group: its check against torch's collective, its time
    per call and bus bandwidth, and torch's. Every rank calls it; every rank gets the same
    dictionary (``correct``, ``time``, ``busbw``, ``cpu_per_gib``, ``baseline_time``,
    ``baseline_busbw``, ``baseline_cpu_per_gib``, ``ratio``, ``reuse``, and what was run).

    Times are medians over ``iters`` calls of the slowest rank's time per call; our calls and
    torch's alternate. ``reuse`` (the default) calls each collective on one tensor, refilled
    before each call, as training calls a collective on its reused gradient buckets; False
    gives every call a fresh copy. ``cpu_per_gib``: the median CPU seconds (user and system,
    every thread) of all ranks together per call, per GiB of the buffer ``bytes``. ``options``
    go to :class:`~topocoll.runtime.ScheduleCollective` (``slice_bytes``, ``window``,
    ``engine``)."""
    import torch
    import torch.distributed as dist

    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    torch_dtype = getattr(torch, dtype)
    # NCCL moves CUDA tensors only: the data goes to this process's current GPU
    device = (torch.device("cuda", torch.cuda.current_device())
              if dist.get_backend(group) == "nccl" else torch.device("cpu"))
    collective = ScheduleCollective(schedule, group=group, **options)
    name = schedule.collective.name
    n = schedule.topology.num_nodes
    rank = dist.get_rank(group)
    root = schedule.root
    itemsize = torch.empty(0, dtype=torch_dtype).element_size()
    numel = buffer_elements(name, n, parse_size(size), dtype)
    ours = lambda x: collective(x)   # noqa: E731
    theirs = _torch_collective(name, n, rank, root) if baseline else None
    out = {"collective": name, "algorithm": schedule.algorithm,
           "topology": schedule.topology.name, "ranks": n, "dtype": dtype,
           "input_elements": numel, "transport": collective.transport}
    if check:
        x = _data(numel, torch_dtype, rank, seed, device)
        mine = ours(x.clone())
        with warnings.catch_warnings():   # torch's deprecation notices are not our output
            warnings.simplefilter("ignore", FutureWarning)
            ref = _torch_collective(name, n, rank, root)(x.clone())
        defined = name not in ("reduce", "gather") or rank == root   # elsewhere: unspecified
        same = not defined or (mine is not None and ref is not None and torch.equal(mine, ref))
        flag = torch.tensor([0 if same else 1], device=device)
        dist.all_reduce(flag)   # correct only if every rank agrees
        out["correct"] = bool(flag.item() == 0)
        out["mismatched_ranks"] = int(flag.item())
    total_bytes = numel * itemsize
    if name in ("allgather", "gather"):
        total_bytes *= n
    base = _data(numel, torch_dtype, rank, seed, device)
    factor = bus_factor(name, n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        times, cpu = _time([ours] + ([theirs] if theirs is not None else []), base, iters,
                           warmup, device, reuse=reuse, timeout=options.get("timeout"))
    t = times[0]
    gib = total_bytes / (1 << 30)
    out.update(bytes=total_bytes, time=t, busbw=total_bytes / t * factor, reuse=bool(reuse),
               cpu_per_gib=cpu[0] / gib)
    if theirs is not None:
        tb = times[1]
        out.update(baseline_time=tb, baseline_busbw=total_bytes / tb * factor,
                   baseline_cpu_per_gib=cpu[1] / gib,
                   ratio=(total_bytes / t) / (total_bytes / tb))
    else:
        out.update(baseline_time=None, baseline_busbw=None, baseline_cpu_per_gib=None,
                   ratio=None)
    return out


def measure_file(rank, world_size, path, size, *, dtype, iters, check, baseline, options=None):
    """:func:`measure_schedule` of a schedule file or MSCCL XML file
    (:func:`~topocoll.runtime.sources.load_runnable`): the worker ``topocoll run`` starts on
    each local process (importable, so that spawned processes find it); ``options`` go to
    :class:`~topocoll.runtime.ScheduleCollective`. ``rank, world_size, path, size`` are
    positional (what :func:`~topocoll.runtime.launch.run_local` passes); the rest are
    keyword-only (bind them with :func:`functools.partial` for ``run_local``)."""
    return measure_schedule(load_runnable(path), size, dtype=dtype, iters=iters, check=check,
                            baseline=baseline, **(options or {}))
