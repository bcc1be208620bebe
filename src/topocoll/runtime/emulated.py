"""Schedules and neighbor averaging measured on an emulated network, beside the model.

:func:`measure_on_network` runs a schedule (or MSCCL program) and torch's own collective on the
same ranks of a built :class:`topocoll.emulate.EmulatedNetwork`, and adds what the model
predicts for that network with its calibrated constants; :func:`measure_gossip` does the same
for one neighbor averaging against ``all_reduce`` (on a network, or on this host's loopback
without one). Both report the host's idle CPU during the run: an emulation measures the network
only while the host has cores to spare.

The keys of a result: ``time`` (ours, seconds per call, median over calls of the slowest
rank), ``baseline_time`` (torch's), ``model_time`` and ``baseline_model_time`` (the model's,
None where it has none), ``measured_over_model`` and ``baseline_measured_over_model``, and
``network``, ``calibration`` and ``host``.
"""

import functools
import statistics
import time

from ..emulate.host import HostMonitor, describe_host
from ..emulate.prediction import (gossip_model_time, hierarchical_model_time,
                                  schedule_model_time, torch_model_time)
from ..units import parse_size
from .hierarchical import hierarchical_neighbor_allreduce
from .launch import run_local
from .measure import measure_schedule
from .neighbor import neighbor_allreduce
from .neighborhood import neighborhood

__all__ = ["measure_on_network", "measure_gossip", "model_fields"]


def _ratio(a, b):
    return None if a is None or b is None or b <= 0 else a / b


def _host(load):
    return dict(describe_host(), **load.to_dict())


def _measure_worker(rank, world_size, schedule, size, *, dtype, iters, warmup, check, baseline,
                    options):
    return measure_schedule(schedule, size, dtype=dtype, iters=iters, warmup=warmup,
                            check=check, baseline=baseline, **(options or {}))


def model_fields(schedule, network, nbytes):
    """``model_time`` and ``baseline_model_time`` of ``schedule`` and of torch's collective on
    ``network`` (built, so that it is calibrated), and their calibration."""
    cal = network.calibration()
    return {"model_time": schedule_model_time(schedule, network.plan, cal, nbytes),
            "baseline_model_time": torch_model_time(schedule.collective.name, network.plan,
                                                    cal, nbytes),
            "calibration": cal.to_dict()}


def measure_on_network(schedule, network, size="4MiB", *, dtype="float32", iters=5, warmup=1,
                       check=True, baseline=True, timeout=600.0, **options):
    """Run ``schedule`` on the ranks of the built ``network`` (the schedule's own topology)
    against torch's collective, and price both in the model.

    Parameters
    ----------
    schedule : Schedule
        A verified schedule of ``network.topology``.
    network : EmulatedNetwork
        Built (inside its ``with`` block).
    size : int or str
        The buffer M (as ``topocoll run --size``).
    dtype, iters, warmup, check, baseline
        As :func:`~topocoll.runtime.measure.measure_schedule`.
    timeout : float
        Seconds the ranks may take together.
    **options
        :class:`~topocoll.runtime.ScheduleCollective` options (``slice_bytes``, ``window``,
        ``engine``).

    Returns
    -------
    dict
        :func:`~topocoll.runtime.measure.measure_schedule`'s keys and those of the module
        text.
    """
    fields = model_fields(schedule, network, 1)   # calibrates (and checks the topology) first
    worker = functools.partial(_measure_worker, dtype=dtype, iters=iters, warmup=warmup,
                               check=check, baseline=baseline, options=options)
    with HostMonitor() as load:
        result = run_local(worker, network.num_ranks, (schedule, size), network=network,
                           timeout=timeout, start_method="fork")[0]
    fields = model_fields(schedule, network, result["bytes"])
    result.update(fields)
    result["measured_over_model"] = _ratio(result["time"], result["model_time"])
    result["baseline_measured_over_model"] = _ratio(result.get("baseline_time"),
                                                    result["baseline_model_time"])
    result["network"] = network.describe()
    result["host"] = _host(load)
    return result


def _gossip_worker(rank, world_size, topology, numel, iterations, warmup, slice_bytes,
                   transport, local_size=None):
    """Alternate one ``all_reduce`` (and the division by n) with one neighbor averaging of
    iteration k (hierarchical over machines of ``local_size`` ranks when given), each after a
    barrier; seconds of each call on this rank, and the transport the averaging took."""
    import torch
    import torch.distributed as dist

    x = torch.randn(numel, generator=torch.Generator().manual_seed(rank))
    ours, theirs = [], []
    for i in range(warmup + iterations):
        k = max(i - warmup, 0)
        for which in ((0, 1) if i % 2 == 0 else (1, 0)):
            dist.barrier()
            t0 = time.perf_counter()
            if which == 0:
                dist.all_reduce(x)
                x.div_(world_size)
            elif local_size is None:
                neighbor_allreduce(x, topology, k, out=x, slice_bytes=slice_bytes,
                                   transport=transport)
            else:
                hierarchical_neighbor_allreduce(x, topology, local_size=local_size, iteration=k,
                                                out=x, slice_bytes=slice_bytes,
                                                transport=transport)
            (theirs if which == 0 else ours).append(time.perf_counter() - t0)
    took = "network" if neighborhood(None, transport) is None else "shared_memory"
    return ours[warmup:], theirs[warmup:], took


def measure_gossip(topology, size="4MiB", *, network=None, iterations=None, warmup=1,
                   slice_bytes=None, timeout=600.0, transport="auto", local_size=None):
    """Time one neighbor averaging of ``topology`` (a
    :class:`~topocoll.gossip.GossipTopology`) against ``all_reduce`` on the same ranks, on
    ``network`` (a built :class:`~topocoll.emulate.EmulatedNetwork` with as many ranks) or, if
    None, on local processes over loopback (no model then).

    ``iterations`` defaults to twice the topology's period (at least 4): iteration ``k`` uses
    ``W_k``. ``transport`` is neighbor averaging's (see
    :func:`~topocoll.runtime.neighbor_allreduce`; on an emulated network it is always the
    network); the result's ``transport`` says which it took. Times are medians over iterations of the slowest rank's time. Returns the keys of
    the module text, with ``ratio`` = ``time / baseline_time`` and ``model_ratio``.

    With ``local_size`` L, ``topology`` is the machines' and the averaging is
    :func:`~topocoll.runtime.hierarchical_neighbor_allreduce` over ``topology.size`` machines
    of L ranks (machine-major), priced by
    :func:`~topocoll.emulate.prediction.hierarchical_model_time`; the result's
    ``hierarchical_local_size`` is L (None without).
    """
    n = topology.size * (1 if local_size is None else int(local_size))
    nbytes = int(parse_size(size)) // 4 * 4
    iterations = max(4, 2 * topology.period) if iterations is None else int(iterations)
    cal = network.calibration() if network is not None else None
    with HostMonitor() as load:
        per_rank = run_local(_gossip_worker, n,
                             (topology, nbytes // 4, iterations, warmup, slice_bytes,
                              transport, local_size),
                             network=network, timeout=timeout, start_method="fork")
    ours = [max(r[0][i] for r in per_rank) for i in range(iterations)]
    theirs = [max(r[1][i] for r in per_rank) for i in range(iterations)]
    out = {"topology": topology.name, "ranks": n, "bytes": nbytes, "iterations": iterations,
           "time": statistics.median(ours), "baseline_time": statistics.median(theirs),
           "model_time": None, "baseline_model_time": None, "transport": per_rank[0][2],
           "hierarchical_local_size": local_size}
    out["ratio"] = out["time"] / out["baseline_time"]
    if network is not None:
        models = [gossip_model_time(topology, k, network.plan, cal, nbytes)
                  if local_size is None else
                  hierarchical_model_time(topology, local_size, k, network.plan, cal, nbytes)
                  for k in range(iterations)]
        out["model_time"] = statistics.median(models)
        out["baseline_model_time"] = torch_model_time("allreduce", network.plan, cal, nbytes)
        out["network"] = network.describe()
        out["calibration"] = cal.to_dict()
    out["model_ratio"] = _ratio(out["model_time"], out["baseline_model_time"])
    out["measured_over_model"] = _ratio(out["time"], out["model_time"])
    out["baseline_measured_over_model"] = _ratio(out["baseline_time"],
                                                 out["baseline_model_time"])
    out["host"] = _host(load)
    return out
