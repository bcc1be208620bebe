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
  on equal and unequal tori of at most 16 nodes (``--tori``); the paper's reach to 54 nodes
  needs more cores than this machine's two (``--tori 3x3x6`` where a 16-core host is at hand);
* every point is priced twice: by the calibrated link model (``topocoll.emulate.prediction``)
  and by the paper's alpha-beta cost model with its constants fitted from these runs
  (Appendix H: ``T = c + steps x alpha + T_B B / beta``, least squares over every point
  of our schedules: ``topocoll.studies.regression``), with the fit's average and largest relative error, as the paper reports them.

Each case is a call on a reused tensor, every call after a barrier, cases alternating call by
call; a case's time is the median over ``--repeats`` calls of the slowest rank. Needs root (or
unprivileged user namespaces) and torch.

    sudo python benchmarks/seeds/testbeds.py                       # both parts (about 20 min)
    python benchmarks/seeds/testbeds.py --parts testbed --nodes 8 --sizes 64KiB 1MiB
    python benchmarks/seeds/testbeds.py --json out.json
"""

import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from hardware import machine          # noqa: E402  (benchmarks/ on the path first)
from emulate import _worker, _slowest_median   # noqa: E402

from topocoll.topology import topology  # noqa: E402
from topocoll.units import parse_bandwidth, parse_size  # noqa: E402

#: The testbed's baselines: (label, topology spec for N nodes, generator).
BASELINES = [("ShiftedRing", "shiftedring:{n}", "shiftedring"),
             ("ShiftedBFBRing", "shiftedring:{n}", "shiftedbfbring"),
             ("DBT", "dbt:{n}", "dbt")]
#: Tori of at most 16 nodes, equal and unequal dimensions (the paper's Fig 10 runs both kinds);
#: none with a dimension of size 2, whose two cables to one neighbour are one veth here.
TORI = ["3x3", "4x4", "3x4", "3x5"]
TARGET = 1.10


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


def measure(spec, cases, args, part, extra=None):
    """Run ``cases`` on the emulated ``spec`` at every size; one row per case and size."""
    from topocoll.emulate import EmulatedNetwork
    from topocoll.emulate.host import HostMonitor
    from topocoll.emulate.prediction import schedule_model_time, torch_model_time
    from topocoll.runtime import run_local
    from topocoll.studies.regression import schedule_row

    rows = []
    with EmulatedNetwork(spec, link_bandwidth=args.rate) as net:
        cal = net.calibration()
        for size in args.sizes:
            nbytes = int(parse_size(size))
            with HostMonitor() as load:
                per_rank = run_local(_worker, net.num_ranks, (cases, nbytes, args.repeats, 1),
                                     network=net, start_method="fork", timeout=3600)
            for label, collective, schedule in cases:
                model = (torch_model_time(collective, net.plan, cal, nbytes)
                         if schedule is None else
                         schedule_model_time(schedule, net.plan, cal, nbytes))
                seconds = _slowest_median(per_rank, label)
                shape = {} if schedule is None else schedule_row(schedule, nbytes, seconds)
                rows.append({"part": part, "topology": spec, "case": label, "size": nbytes,
                             "time": seconds, "model": model, "idle": load.idle, **shape,
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
    for label, points in (("latency (smallest size)", [r for r in ours if r["size"] == smallest]),
                          ("bandwidth (largest size)", [r for r in ours if r["size"] == largest]),
                          ("every point", ours)):
        try:
            fit = fit_cost_model(points)
        except ValueError as exc:            # too few distinct points for a regime: said
            print(f"\n{label}: {exc}")
            continue
        print(f"\nthe paper's cost model fitted from {len(points)} points, {label}: per call "
              f"{(fit.overhead or 0) * 1e3:.2f} ms, alpha {fit.alpha * 1e3:.3f} ms per step, "
              f"node bandwidth {fit.beta * 8 / 1e6:.1f} Mbit/s; relative error average "
              f"{fit.mean_relative_error:.2%}, largest {fit.max_relative_error:.2%}")
    head = (f"{'part':<8} {'topology':<26} {'case':<34} {'size':>8} {'time':>9} "
            f"{'link model':>10} {'meas/link':>9} {'fitted':>9} {'meas/fit':>8} {'target':>6}")
    print(head)
    print("-" * len(head))
    for r in rows:
        fitted = ratio = None
        if "steps" in r and r["case"] != "DBT":
            r["fitted"] = fitted = fit.predict(r["steps"], r["bw_bytes"])
            ratio = r["time"] / fitted
        miss = "<" if ratio is not None and not 1 / TARGET <= ratio <= TARGET else ""
        shown = (f"{fitted:>8.3f}s {ratio:>8.3f} {TARGET:>5.2f}{miss}" if ratio is not None
                 else f"{'':>9} {'':>8} {'':>6}")
        print(f"{r['part']:<8} {r['topology'][:26]:<26} {r['case'][:34]:<34} "
              f"{r['size']:>8} {r['time']:>8.3f}s {r['model']:>9.3f}s "
              f"{r['time'] / r['model']:>9.3f} {shown}")
    return fit


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parts", nargs="+", default=["testbed", "torus"],
                        choices=["testbed", "torus"])
    parser.add_argument("--nodes", nargs="+", type=int, default=[5, 8, 10, 12])
    parser.add_argument("--tori", nargs="+", default=TORI)
    parser.add_argument("--sizes", nargs="+", default=["1KiB", "64KiB", "1MiB", "4MiB"])
    parser.add_argument("--rate", default="25Mbps")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", help="write every row to this file")
    args = parser.parse_args()
    from topocoll.emulate import prepare_process

    prepare_process()   # before numpy starts threads: root, or a user namespace
    print(f"emulated testbeds, links at {args.rate}, {args.repeats} calls, median of the "
          f"slowest rank ({machine()})")
    rows = []
    if "testbed" in args.parts:
        rows += testbed_part(args)
    if "torus" in args.parts:
        rows += torus_part(args)
    fit = fit_and_print(rows)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": machine(), "rows": rows,
                       "fit": fit.to_dict()},
                      f, indent=1)
    print(f"\nmedian measured / link model: "
          f"{statistics.median(r['time'] / r['model'] for r in rows):.3f}")


if __name__ == "__main__":
    main()
