"""The direct-connect paper's testbeds, emulated: its 12-node optical testbed (Fig 6, Table 5)
and its torus CPU clusters (Fig 10), at scaled link rates, measured against the model.

Zhao et al. (NSDI 2025) ran allreduce on 12 servers whose 4x25 Gbps NIC ports an optical
patch panel wires into any bidirectional degree-4 topology, and on tori of up to 54 CPU nodes
of a supercomputer. Here every topology is built as an emulated network
(``topocoll.emulate``: namespaces, veth cables shaped with tbf, shortest-path routes), every
link at ``--rate`` (25 Mbit/s: the testbed's 25 Gbps a thousand times slower, so that the
host's two cores keep up), one rank per node, and each schedule runs on
``topocoll.runtime.ScheduleCollective`` over gloo, beside torch's own ``all_reduce``.

Parts:

* ``testbed`` (Fig 6, Table 5): for every N of ``--nodes`` (default 5, 8, 10, 12) the
  finder's bidirectional degree-4 pick for that N at the network's calibrated constants (the
  paper's "our topology", restricted to bidirectional topologies as the testbed was) with its
  BFB allreduce, and the paper's baselines on the same N: ShiftedRing (two bidirectional rings,
  each ring-allreducing half the data), ShiftedBFBRing (BFB on the same topology), DBT
  (NCCL's double binary tree); sizes ``--sizes``;
* ``torus`` (Fig 10, section 8.5.2): BFB and the traditional torus schedule (``torusrings``)
  on equal and unequal tori of 9-18 nodes (``--tori``; 3x6 is the paper's 18-node torus);
  the paper's 54 nodes need more cores than this machine's two (``--tori 3x3x6`` where a
  16-core host is at hand: at 54 ranks the host's CPU, not the links, would set the times);
* ``fig15`` (appendix I) and ``fig8a`` (training, section 8.4), not in the default parts:
  BFB against NCCL's ring and recursive halving-doubling on the 8-node hypercube and twisted
  hypercube, and one training iteration of each DNN topocoll models on the 12-node testbed
  (``benchmarks/seeds/testbed_extra.py`` says how);
* every point is priced three times: by the calibrated link model
  (``topocoll.emulate.prediction``), by the runtime model (the larger of the link model and a
  host model of the runtime's CPU work, ``per_call + per_message x messages``, calibrated
  on tiny collectives on two rings that are not among the measured networks: the runtime
  is bound by the links or by the two cores its ranks share; the 1.10x target is this
  model's; ``--byte-model`` adds the host's work per byte sent or received, calibrated on
  large allreduces on the same rings with fast links: what sets the time of many ranks on few
  cores, e.g. the 54-node torus here, but additive where that work overlaps the link time, so
  off by default), and by the paper's alpha-beta cost model with its constants fitted from these runs
  (Appendix H: ``T = c + steps x alpha + T_B B / beta``, least squares over every point
  of our schedules: ``topocoll.studies.regression``), with the fit's average and largest relative error, as the paper reports them.

Each case is a call on a reused tensor, every call after a barrier, cases alternating call by
call; a case's time is the median over its calls of the slowest rank (``--repeats`` calls, more
at small sizes: about ``--min-seconds`` of each case, at most 41), shown with the spread of
those calls (interquartile range over the median). The runtime calibration runs again after
the parts: how far its cases moved says whether the host kept its pace during the run. The runtime
sends packets of ``--packet`` bytes (``auto``: about 5 ms of a link, 16 KiB at 25 Mbit/s, as
a 1 MiB slice is a fraction of a millisecond of the testbed's links; :func:`packet_bytes`
says why). Needs root (or unprivileged user namespaces) and torch.

    sudo python benchmarks/seeds/testbeds.py                       # both parts (about 20 min)
    python benchmarks/seeds/testbeds.py --parts testbed --nodes 8 --sizes 64KiB 1MiB
    python benchmarks/seeds/testbeds.py --json out.json
"""

import argparse
import json
import math
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from hardware import machine          # noqa: E402  (benchmarks/ on the path first)
from emulate import _worker   # noqa: E402

import numpy as np  # noqa: E402

from topocoll.topology import topology  # noqa: E402
from runtime_model import (CALIBRATION_NETWORKS, FAST_RATE, PACKET_SECONDS,  # noqa: E402
                           byte_calibration, packet_bytes, program_bytes, program_messages,
                           runtime_calibration)
from topocoll.units import parse_bandwidth, parse_size  # noqa: E402

#: The testbed's baselines: (label, topology spec for N nodes, generator).
BASELINES = [("ShiftedRing", "shiftedring:{n}", "shiftedring"),
             ("ShiftedBFBRing", "shiftedring:{n}", "shiftedbfbring"),
             ("DBT", "dbt:{n}", "dbt")]
#: Tori of 9-18 nodes, equal and unequal dimensions (the paper's Fig 10 runs both kinds; 3x6 is
#: our shape of its 18-node torus); none with a dimension of size 2, whose two cables to one
#: neighbour are one veth here.
TORI = ["3x3", "4x4", "3x4", "3x5", "3x6"]
TARGET = 1.10
#: Most calls of a case at one size (``--min-seconds`` asks for more calls at small sizes).
MAX_CALLS = 41


def finder_picks(nodes, rate):
    """The finder's bidirectional degree-4 pick for each N at the host's calibrated constants
    (alpha and goodput are the host's, the same on every network: measured once, on a ring)."""
    from topocoll.emulate import EmulatedNetwork
    from topocoll.finder import find

    with EmulatedNetwork(f"ring:{min(nodes)}", link_bandwidth=rate) as net:
        cal = net.calibration()
    goodput = parse_bandwidth(rate) * cal.goodput_ratio
    return {n: find(n, 4, "1MiB", alpha=cal.alpha, link_bandwidth=goodput, evaluate=False,
                    cache=False, bidirectional=True).best.name for n in nodes}


def _cases(spec, generators):
    """``[(label, "allreduce", schedule)]`` for each ``(label, generator)`` that applies, plus
    torch's own all_reduce."""
    from topocoll.synth import generate

    cases = []
    for label, algorithm in generators:
        try:
            cases.append((label, "allreduce", generate(spec, "allreduce", algorithm)))
        except Exception as exc:   # a generator that does not apply here: said, not hidden
            print(f"  ({algorithm} on {spec}: {exc})", file=sys.stderr)
    cases.append(("torch all_reduce", "allreduce", None))
    return cases


def calls_for(args, estimates):
    """Calls of every case at one size: ``args.repeats``, or more where the slowest case's
    estimated call (seconds) is short, so that each case runs about ``args.min_seconds``
    (at most :data:`MAX_CALLS`): a median of many short calls is as steady as one of a few
    long ones."""
    want = getattr(args, "min_seconds", 0.0) / max(max(estimates), 1e-6)
    return max(args.repeats, min(MAX_CALLS, math.ceil(want)))


def slowest_quartiles(per_rank, label):
    """The first quartile, median and third quartile over the calls of the slowest rank's
    time per call (each call's time is the slowest rank's)."""
    count = len(per_rank[0][label])
    series = [max(r[label][i] for r in per_rank) for i in range(count)]
    return tuple(float(q) for q in np.percentile(series, [25, 50, 75]))


def measure(spec, cases, args, part, extra=None):
    """Run ``cases`` on the emulated ``spec`` at every size; one row per case and size, with
    the median over calls of the slowest rank (``time``), the calls and their spread
    (interquartile range over the median)."""
    from topocoll.emulate import EmulatedNetwork
    from topocoll.emulate.host import HostMonitor
    from topocoll.emulate.prediction import schedule_model_time, torch_model_time
    from topocoll.runtime import run_local
    from topocoll.studies.regression import schedule_row

    rows = []
    per_call, per_message = getattr(args, "runtime", (None, None))
    per_byte = getattr(args, "per_byte", None)
    with EmulatedNetwork(spec, link_bandwidth=args.rate) as net:
        cal = net.calibration()
        for size in args.sizes:
            nbytes = int(parse_size(size))
            priced = []
            for label, collective, schedule in cases:
                model = (torch_model_time(collective, net.plan, cal, nbytes)
                         if schedule is None else
                         schedule_model_time(schedule, net.plan, cal, nbytes))
                shape = {}
                if schedule is not None and per_call is not None:
                    # the runtime is bound by the links or by the host's cores, whichever
                    # is slower: a roofline of the two models
                    shape["messages"] = program_messages(schedule, nbytes)
                    shape["cpu_model"] = per_call + per_message * shape["messages"]
                    if per_byte is not None:
                        shape["bytes_moved"] = program_bytes(schedule, nbytes, args.packet)
                        shape["cpu_model"] += per_byte * shape["bytes_moved"]
                    shape["runtime_model"] = max(model, shape["cpu_model"])
                priced.append((model, shape))
            calls = calls_for(args, [s.get("runtime_model", m) for m, s in priced])
            with HostMonitor() as load:
                per_rank = run_local(_worker, net.num_ranks,
                                     (cases, nbytes, calls, 1, args.packet),
                                     network=net, start_method="fork", timeout=3600)
            for (label, collective, schedule), (model, shape) in zip(cases, priced):
                q1, seconds, q3 = slowest_quartiles(per_rank, label)
                if schedule is not None:
                    shape.update(schedule_row(schedule, nbytes, seconds))
                rows.append({"part": part, "topology": spec, "case": label, "size": nbytes,
                             "time": seconds, "model": model, "idle": load.idle,
                             "calls": calls, "spread": (q3 - q1) / seconds, **shape,
                             **(extra or {})})
    return rows


def testbed_part(args):
    picks = finder_picks(args.nodes, args.rate)
    rows = []
    for n in args.nodes:
        print(f"N = {n}: the finder's bidirectional degree-4 pick is {picks[n]}",
              file=sys.stderr)
        rows += measure(picks[n], _cases(picks[n], [(f"ours ({picks[n]})", "bfb")]), args,
                        "testbed", {"nodes": n})
        for label, spec, algorithm in BASELINES:
            spec = spec.format(n=n)
            try:
                topology(spec)
            except ValueError as exc:          # e.g. no shifted ring on 6 nodes: said
                print(f"  ({label} on {n} nodes: {exc})", file=sys.stderr)
                continue
            rows += measure(spec, _cases(spec, [(label, algorithm)]), args, "testbed",
                            {"nodes": n})
    return rows


def torus_part(args):
    rows = []
    for dims in args.tori:
        spec = f"torus:{dims}"
        rows += measure(spec, _cases(spec, [("BFB", "bfb"), ("torusrings", "torusrings")]),
                        args, "torus")
    return rows


def fit_and_print(rows):
    """Appendix H's regression over every point of our schedules (torch's ring is the anchor,
    not a point), then every point against both models."""
    from topocoll.studies.regression import fit_cost_model

    # the paper fits its bandwidth-optimal schedules; DBT's chain of dependent messages is
    # priced per message by no alpha-beta model (docs/emulate.md), so it is shown, not fitted
    ours = [r for r in rows if "steps" in r and r["case"] != "DBT"]
    smallest, largest = min(r["size"] for r in ours), max(r["size"] for r in ours)
    fit = None              # the fit over every point prices the rows
    for label, points in (("latency (smallest size)", [r for r in ours if r["size"] == smallest]),
                          ("bandwidth (largest size)", [r for r in ours if r["size"] == largest]),
                          ("every point", ours)):
        try:
            this = fit_cost_model(points)
        except ValueError as exc:            # too few distinct points for a regime: said
            print(f"\n{label}: {exc}")
            continue
        print(f"\nthe paper's cost model fitted from {len(points)} points, {label}: per call "
              f"{(this.overhead or 0) * 1e3:.2f} ms, alpha {this.alpha * 1e3:.3f} ms per step, "
              f"node bandwidth {this.beta * 8 / 1e6:.1f} Mbit/s; relative error average "
              f"{this.mean_relative_error:.2%}, largest {this.max_relative_error:.2%}")
        if label == "every point":
            fit = this
    head = (f"{'part':<8} {'topology':<26} {'case':<34} {'size':>8} {'time':>9} "
            f"{'link model':>10} {'meas/link':>9} {'runtime':>9} {'meas/rt':>8} "
            f"{'fitted':>9} {'meas/fit':>8} {'target':>6} {'calls':>5} {'spread':>6}")
    print(head)
    print("-" * len(head))
    for r in rows:
        fitted = None
        if fit is not None and "steps" in r and r["case"] != "DBT":
            r["fitted"] = fitted = fit.predict(r["steps"], r["bw_bytes"])
        runtime = r.get("runtime_model")
        # the target is the runtime model's (the link model where the host was not calibrated)
        ratio = r["time"] / (runtime or r["model"]) if "steps" in r else None
        miss = "<" if ratio is not None and not 1 / TARGET <= ratio <= TARGET else ""
        shown_rt = (f"{runtime:>8.3f}s {r['time'] / runtime:>8.3f}" if runtime
                    else f"{'':>9} {'':>8}")
        shown_fit = (f"{fitted:>8.3f}s {r['time'] / fitted:>8.3f}" if fitted
                     else f"{'':>9} {'':>8}")
        shown_target = f"{TARGET:>5.2f}{miss}" if ratio is not None else ""
        print(f"{r['part']:<8} {r['topology'][:26]:<26} {r['case'][:34]:<34} "
              f"{r['size']:>8} {r['time']:>8.3f}s {r['model']:>9.3f}s "
              f"{r['time'] / r['model']:>9.3f} {shown_rt} {shown_fit} {shown_target:<6} "
              f"{r.get('calls', ''):>5} {r.get('spread', 0.0):>6.1%}")
    within = [r for r in rows if r.get("runtime_model")]
    if within:
        hits = sum(1 / TARGET <= r["time"] / r["runtime_model"] <= TARGET for r in within)
        print(f"\nwithin {TARGET:.2f}x of the runtime model: {hits} of {len(within)} points "
              f"of our schedules and the baselines' (torch's all_reduce is the anchor, not a "
              f"point)")
    return fit


def calibrate_host(args):
    """The host model (``args.runtime``; ``args.per_byte`` with ``--byte-model``), printed;
    returns the calibration's rows."""
    per_call, per_message, cal_rows = runtime_calibration(args)
    args.runtime = (per_call, per_message)
    print(f"host model of the runtime (tiny collectives on the emulated "
          f"{' and '.join(CALIBRATION_NETWORKS)}): {per_call * 1e3:.2f} ms per call + "
          f"{per_message * 1e6:.1f} us per message (all ranks' together)")
    for label, messages, seconds in cal_rows:
        print(f"  {label:<30} {messages:>5} messages {seconds * 1e3:8.2f} ms, model "
              f"{(per_call + per_message * messages) * 1e3:8.2f} ms")
    if args.byte_model:
        args.per_byte, byte_rows = byte_calibration(args, per_call, per_message)
        print(f"host work per byte sent or received (allreduces at {FAST_RATE}): "
              f"{args.per_byte * 1e9:.3f} ns")
        for label, moved, seconds in byte_rows:
            print(f"  {label:<36} {moved / 1e6:9.1f} MB {seconds * 1e3:9.1f} ms")
    return cal_rows


def host_drift(args, first):
    """The runtime calibration again after the runs, against ``first`` (the rows it made
    before them): whether the host kept its pace over the run (the model keeps the first)."""
    per_call, per_message, rows = runtime_calibration(args)
    ratios = [again[2] / before[2] for again, before in zip(rows, first)]
    print(f"\nhost model again after the runs: {per_call * 1e3:.2f} ms per call + "
          f"{per_message * 1e6:.1f} us per message; its calibration cases took "
          f"{min(ratios):.2f}-{max(ratios):.2f}x their first times "
          f"(median {statistics.median(ratios):.2f})")
    return {"per_call": per_call, "per_message": per_message, "ratios": ratios}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", nargs="+", default=["testbed", "torus"],
                        choices=["testbed", "torus", "fig15", "fig8a"])
    parser.add_argument("--nodes", nargs="+", type=int, default=[5, 8, 10, 12])
    parser.add_argument("--tori", nargs="+", default=TORI)
    parser.add_argument("--sizes", nargs="+", default=["1KiB", "64KiB", "1MiB", "4MiB"])
    parser.add_argument("--rate", default="25Mbps")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", help="write every row to this file")
    parser.add_argument("--packet", default="auto",
                        help="the runtime's packet (slice_bytes): bytes, or auto (about "
                             f"{PACKET_SECONDS * 1e3:g} ms of one link)")
    parser.add_argument("--no-host-model", action="store_true",
                        help="skip the runtime calibration (price by the link model only)")
    parser.add_argument("--byte-model", action="store_true",
                        help="add the host's work per byte to the host model, calibrated on "
                             f"large allreduces on the calibration rings at {FAST_RATE} (for "
                             "many ranks on few cores; see the module text)")
    parser.add_argument("--min-seconds", type=float, default=1.0,
                        help="run each case about this long at each size (more calls at "
                             f"small sizes, at most {MAX_CALLS}; never fewer than --repeats)")
    import testbed_extra    # Fig. 15 and Fig. 8(a): benchmarks/seeds/testbed_extra.py
    testbed_extra.add_arguments(parser)
    args = parser.parse_args()
    from topocoll.emulate import prepare_process

    prepare_process()   # before numpy starts threads: root, or a user namespace
    args.packet = (packet_bytes(args.rate) if args.packet == "auto"
                   else int(parse_size(args.packet)))
    print(f"emulated testbeds, links at {args.rate}, {args.repeats} calls, median of the "
          f"slowest rank ({machine()})")
    print(f"runtime packets of {args.packet} bytes")
    cal_rows = None if args.no_host_model else calibrate_host(args)
    rows = []
    if "testbed" in args.parts:
        rows += testbed_part(args)
    if "torus" in args.parts:
        rows += torus_part(args)
    if "fig15" in args.parts:
        rows += testbed_extra.fig15_part(args, measure, _cases)
    if "fig8a" in args.parts:
        rows += testbed_extra.fig8a_part(args, measure, _cases)
    fit = fit_and_print(rows) if any("steps" in r for r in rows) else None
    drift = None if args.no_host_model else host_drift(args, cal_rows)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": machine(), "rows": rows, "packet_bytes": args.packet,
                       "host_model": getattr(args, "runtime", None), "host_drift": drift,
                       "per_byte": getattr(args, "per_byte", None),
                       "fit": fit and fit.to_dict()},
                      f, indent=1)
    print(f"\nmedian measured / link model: "
          f"{statistics.median(r['time'] / r['model'] for r in rows):.3f}")


if __name__ == "__main__":
    main()
