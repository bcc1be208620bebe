"""Two more parts of the emulated testbeds of ``testbeds.py``: Fig. 15 (appendix I) and
Fig. 8(a) (section 8.4) of Zhao et al., "Efficient Direct-Connect Topologies for Collective
Communications" (NSDI 2025), measured on emulated networks at ``--rate`` (25 Mbit/s, the
testbed's 25 Gbps a thousand times slower), one rank per node, over gloo.

``fig15``
    BFB against NCCL's ring (``rankring``: a ring in rank order, routed over the topology's
    shortest paths) and recursive halving-doubling (``rhd`` on the hypercube; on the twisted
    hypercube, which lacks the links ``x <-> x xor 2^j``, ``rd``: the same halving-doubling
    with partners ``r xor 2^s`` in rank order, routed over shortest paths), beside
    torch's own ``all_reduce`` (gloo's ring in rank order), on the emulated ``hypercube:3`` and
    ``twistedhypercube:3``, at every ``--sizes``. Printed per topology: BFB's runtime lower by
    ``1 - BFB / best baseline`` at the largest size (the paper: 60%), measured and in the
    calibrated link model, and which case wins at the smallest size (the paper: roughly equal,
    BFB better on the twisted hypercube).
``fig8a``
    Data-parallel training on the emulated 12-node testbed, one iteration per DNN of
    :data:`topocoll.studies.models.MODELS` (``--dnns``; gradients and ready times of
    :func:`~topocoll.studies.models.model_profile`: the FLOPs model of an A100 at 40%,
    train-sim's default), for each allreduce: ours (BFB on ``optcirculant:12``, the
    ``testbed`` part's finder pick at N = 12), ShiftedRing and ShiftedBFBRing on
    ``shiftedring:12``, DBT on ``dbt:12``.

    *Scaling.* Every allreduce's bytes are divided by :data:`SCALE` = 1000 (25 Gbps /
    25 Mbit/s), so that its bandwidth time on the emulated links is the testbed's; the compute
    timeline (ready times, compute time) is therefore used as it is, in testbed seconds:
    dividing the bytes by 1000 *is* the thousand-fold scaling, applied to network time, which
    puts both on the testbed's clock (slowing compute by 1000 as well would hide every
    allreduce behind it).

    *Calls.* The sequence of allreduce calls is the one the wait-free rules produce
    (:func:`topocoll.studies.training.simulate_iteration`, train-sim's rules) when a call
    costs what it costs on this network, found by passes: pass 1 runs the calls
    under the calibrated link model's price of that schedule (``schedule_model_time``); each
    next pass runs the calls under an affine price ``a + b M`` fitted (least squares) to every
    call of that schedule measured so far (all DNNs, all passes), until a pass's grouping is
    the one its own fit gives for every row (``stable``: a fixed point), at most
    :data:`MAX_PASSES` passes. The last pass is **reported**. A call's bytes are
    rounded down to whole fp32 values.

    *Runs.* The three networks are up at once. A pass runs in ``--repeats`` rounds; in each
    round every network in turn (the order rotated round by round) runs, in one group of
    ranks, every sequence of its schedules and DNNs back to back, every call after a barrier,
    once to warm up and once measured, so that a change of the host's load (other work on its
    two cores) falls on every network alike. A call's time is the median over the rounds of
    the slowest rank.

    *Reported* per DNN and schedule: the **total allreduce time** (the sum of the calls'
    times) and the **minibatch time**, replayed from the measured call times on the reported
    pass's grouping: call k starts at ``max(end of call k-1, ready time of the last gradient it
    carries)`` and lasts its measured time; the minibatch ends at ``max(compute time, end of
    the last call)``. Beside them the link model's own iteration (``simulate_iteration`` with
    the model's prices: its allreduce busy time and iteration time, pass 1's grouping), pass
    1's measured total, the host roofline of ``testbeds.py`` when it is calibrated (each call
    the larger of the link model and the runtime's CPU model), and our
    improvement ``1 - ours / baseline`` over each baseline, per DNN and averaged over the DNNs
    (the paper: 30% and 50% lower allreduce time, 10% and 25% lower minibatch time against
    ShiftedRing and DBT). ``--max-calls K`` runs only the first K calls of each sequence (for
    tests; the totals are then of those calls).

Both parts need root (or unprivileged user namespaces) and torch; ``testbeds.py --parts fig15
fig8a`` runs them.
"""

import contextlib
import statistics
import sys

__all__ = ["fig15_part", "fig8a_part", "fig15_summary", "fig8a_summary", "add_arguments",
           "wait_free_calls", "replay", "price_fit", "FIG15_SPECS", "FIG8A_CASES", "SCALE",
           "MAX_PASSES"]

#: Appendix I's two 8-node topologies.
FIG15_SPECS = ("hypercube:3", "twistedhypercube:3")
#: Fig. 15: BFB's runtime lower than the best baseline at large sizes.
FIG15_LOWER = 0.60
#: Fig. 8(a)'s allreduces: (label, topology spec for N nodes, generator). Ours is the testbed
#: part's finder pick at N = 12 (``find(12, 4, bidirectional=True)``), ``optcirculant:12``.
FIG8A_CASES = [("ours", "optcirculant:{n}", "bfb"),
               ("ShiftedRing", "shiftedring:{n}", "shiftedring"),
               ("ShiftedBFBRing", "shiftedring:{n}", "shiftedbfbring"),
               ("DBT", "dbt:{n}", "dbt")]
#: Fig. 8(a), section 8.4: our mean improvement (allreduce, minibatch) over each baseline.
FIG8A_PAPER = {"ShiftedRing": (0.30, 0.10), "DBT": (0.50, 0.25)}
#: The testbed's link rate over the emulated one (25 Gbps / 25 Mbit/s): bytes are divided by it.
SCALE = 1000
#: Most passes of Fig. 8(a)'s calls (the first under the link model's prices).
MAX_PASSES = 4


def add_arguments(parser):
    """The options of these two parts, on ``testbeds.py``'s parser."""
    parser.add_argument("--dnns", nargs="+", default=None,
                        help="fig8a: the DNNs (default: every model topocoll has)")
    parser.add_argument("--max-calls", type=int, default=None,
                        help="fig8a: run only the first K allreduces of each sequence")
    parser.add_argument("--fig8a-nodes", type=int, default=12,
                        help="fig8a: nodes of the testbed (the paper's: 12)")


# ------------------------------------------------------------------------------- Fig. 15
def _fig15_generators(spec):
    from topocoll.synth import generate

    try:
        generate(spec, "allreduce", "rhd")
        halving = ("RH&D (rhd)", "rhd")
    except Exception as exc:     # the twisted hypercube: said, and rd instead
        print(f"  (rhd on {spec}: {exc}; rd instead)", file=sys.stderr)
        halving = ("RH&D routed (rd)", "rd")
    return [("BFB", "bfb"), ("NCCL ring (rankring)", "rankring"), halving]


def _verified(cases):
    """The schedules' labels, each checked with ``topocoll.verify`` (an invalid one raises)."""
    from topocoll import verify

    labels = set()
    for label, _, schedule in cases:
        if schedule is not None:
            verify(schedule).raise_if_invalid()
            labels.add(label)
    return labels


def fig15_part(args, measure, cases):
    """Fig. 15 on the emulated hypercube and twisted hypercube; ``measure`` and ``cases`` are
    ``testbeds.py``'s. Rows as ``measure`` makes them (``part`` "fig15"), schedules' rows
    with ``verified`` True; the summary is printed."""
    rows = []
    for spec in FIG15_SPECS:
        print(f"fig15: {spec}", file=sys.stderr)
        built = cases(spec, _fig15_generators(spec))
        good = _verified(built)
        got = measure(spec, built, args, "fig15")
        for r in got:
            if r["case"] in good:
                r["verified"] = True
        rows += got
    for line in fig15_summary(rows):
        print(line)
    return rows


def fig15_summary(rows):
    """Lines: per topology, BFB's runtime lower than the best other case at the largest size
    (measured and model) and every case at the smallest size, the winner named."""
    lines = [f"\nFig. 15: BFB against NCCL's ring and RH&D (paper: {FIG15_LOWER:.0%} lower at "
             "large sizes; at small sizes about equal, BFB ahead on the twisted hypercube)"]
    for spec in dict.fromkeys(r["topology"] for r in rows):
        mine = [r for r in rows if r["topology"] == spec]
        sizes = sorted({r["size"] for r in mine})
        at = {size: {r["case"]: r for r in mine if r["size"] == size} for size in sizes}
        big = at[sizes[-1]]
        others = {k: r for k, r in big.items() if k != "BFB"}
        best = min(others, key=lambda k: others[k]["time"])
        best_model = min(others, key=lambda k: others[k]["model"])
        lower = 1 - big["BFB"]["time"] / others[best]["time"]
        lower_model = 1 - big["BFB"]["model"] / others[best_model]["model"]
        lines.append(f"{spec} at {sizes[-1]} B: BFB {big['BFB']['time']:.3f} s, best baseline "
                     f"{best} {others[best]['time']:.3f} s: BFB lower by {lower:.1%} "
                     f"(link model: {lower_model:.1%} against {best_model})")
        small = at[sizes[0]]
        win = min(small, key=lambda k: small[k]["time"])
        lines.append(f"{spec} at {sizes[0]} B: " + ", ".join(
            f"{k} {r['time'] * 1e3:.1f} ms" for k, r in small.items()) + f"; fastest: {win}")
    return lines


# ------------------------------------------------------------------------------- Fig. 8(a)
def wait_free_calls(profile, price, scale=SCALE):
    """The wait-free rules' allreduces of ``profile`` (``simulate_iteration``) when a call of
    M testbed bytes takes ``price(M / scale)`` seconds: ``[{"bytes", "ready", "layers"}]`` in
    the order they run, ``bytes`` the emulated call's (``M / scale`` rounded down to whole fp32
    values, at least one), ``ready`` the ready time of the last gradient the call carries;
    and the simulated iteration."""
    from topocoll.studies.training import simulate_iteration

    ready = {x.name: x.ready for x in profile.layers}
    result = simulate_iteration(profile, lambda m: price(_fp32(m / scale)), policy="wait-free")
    calls = [{"bytes": _fp32(a.bytes / scale), "ready": max(ready[name] for name in a.layers),
              "layers": len(a.layers)} for a in result.allreduces]
    return calls, result


def _fp32(nbytes):
    return max(4, int(nbytes) // 4 * 4)


def replay(calls, times, compute_time):
    """Minibatch time of the wait-free grouping ``calls`` with call k taking ``times[k]``:
    call k starts at ``max(end of call k-1, calls[k]["ready"])``; the minibatch ends when both
    the compute and the last call have ended.

    >>> replay([{"ready": 1.0}, {"ready": 2.0}], [1.5, 0.5], 2.25)
    3.0
    """
    end = 0.0
    for call, seconds in zip(calls, times):
        end = max(end, call["ready"]) + seconds
    return max(compute_time, end)


def _sequence_worker(rank, n, programs, repeats, warmup, slice_bytes=None):
    """Run each program ``(key, schedule, [numel, ...])``'s calls back to back, every call after
    a barrier, the programs alternating repeat by repeat; ``slice_bytes`` the runtime's packet
    (default: its own). Seconds per call, per repeat, by key."""
    import time as clock

    import torch
    import torch.distributed as dist

    from topocoll.runtime import ScheduleCollective

    built, runs = {}, []
    for key, schedule, numels in programs:
        if id(schedule) not in built:
            built[id(schedule)] = ScheduleCollective(schedule, check=False,   # verified before
                                                     slice_bytes=slice_bytes)
        buffers = {m: torch.ones(m) for m in set(numels)}
        runs.append((key, built[id(schedule)], [buffers[m] for m in numels]))
    times = {key: [] for key, _, _ in runs}
    for i in range(warmup + repeats):
        for key, run, xs in (runs if i % 2 == 0 else runs[::-1]):
            calls = []
            for x in xs:
                x.fill_(1.0)
                dist.barrier()
                t0 = clock.perf_counter()
                run(x)
                calls.append(clock.perf_counter() - t0)
            if i >= warmup:
                times[key].append(calls)
    return times


def _run_rounds(nets, args):
    """Run every network's sequences (``[(net, {key: (schedule, calls)})]``) in
    ``args.repeats`` rounds, the networks in turn, their order rotated each round, each run one
    repeat after a warm-up one, so that a change of the host's load (other work on its cores)
    falls on every network alike. Sets every call's ``time``: the median over the rounds of
    the slowest rank. Returns the host's mean idle share during the runs."""
    from topocoll.emulate.host import HostMonitor
    from topocoll.runtime import run_local

    times = [{key: [[] for _ in calls] for key, (_, calls) in seqs.items()} for _, seqs in nets]
    idle = []
    for r in range(args.repeats):
        for i in [(r + j) % len(nets) for j in range(len(nets))]:
            net, seqs = nets[i]
            programs = [(key, schedule, [c["bytes"] // 4 for c in calls])
                        for key, (schedule, calls) in seqs.items()]
            with HostMonitor() as load:
                per_rank = run_local(_sequence_worker, net.num_ranks,
                                     (programs, 1, 1, getattr(args, "packet", None)),
                                     network=net, start_method="fork", timeout=3600)
            idle.append(load.idle)
            for key, got in times[i].items():
                for k, column in enumerate(got):
                    column.append(max(p[key][0][k] for p in per_rank))
    for (_, seqs), got in zip(nets, times):
        for key, (_, calls) in seqs.items():
            for c, column in zip(calls, got[key]):
                c["time"] = statistics.median(column)
    return statistics.mean(idle)


def price_fit(calls):
    """``(a, b)``: the least-squares line ``a + b M`` through the calls' measured times, both
    terms at least 0 (one size, or a falling line: the mean time as ``a``).

    >>> price_fit([{"bytes": 0, "time": 1.0}, {"bytes": 10, "time": 3.0}])
    (1.0, 0.2)
    """
    xs, ys = [c["bytes"] for c in calls], [c["time"] for c in calls]
    if len(set(xs)) < 2:
        return statistics.mean(ys), 0.0
    slope, intercept = statistics.linear_regression(xs, ys)
    if slope < 0 or intercept < 0:
        return ((statistics.mean(ys), 0.0) if slope < 0 else
                (0.0, sum(x * y for x, y in zip(xs, ys)) / sum(x * x for x in xs)))
    return intercept, slope


def _cut(calls, args):
    return calls[:args.max_calls] if args.max_calls else calls


def _setup_rows(net, cases, dnns, args):
    """Calibrate the built ``net``; one row per case and DNN with pass 1's calls: the wait-free
    calls under the link model's price of that schedule on this network."""
    from topocoll.emulate.prediction import schedule_model_time
    from topocoll.studies.models import model_profile

    cal = net.calibration()
    rows = []
    for label, algorithm, schedule in cases:
        for dnn in dnns:
            calls, sim = wait_free_calls(model_profile(dnn), lambda m, s=schedule:
                                         schedule_model_time(s, net.plan, cal, m))
            rows.append({"part": "fig8a", "topology": net.plan.topology.name,
                         "case": f"{label} ({dnn})", "label": label, "generator": algorithm,
                         "dnn": dnn, "verified": True, "schedule": schedule, "net": net,
                         "cal": cal, "compute": sim.compute_time, "calls": _cut(calls, args),
                         "calibration": cal.to_dict()})
    return rows


def _passes(nets, args):
    """``nets``: ``[(net, rows)]``. Run pass after pass (see the module text) until every
    row's grouping is its own fit's, at most :data:`MAX_PASSES`. Returns (passes, idle)."""
    from topocoll.emulate.prediction import schedule_model_time
    from topocoll.studies.models import model_profile

    every = [r for _, rows in nets for r in rows]
    history = {}
    for passes in range(1, MAX_PASSES + 1):
        for r in every:
            for c in r["calls"]:
                c["model"] = schedule_model_time(r["schedule"], r["net"].plan, r["cal"],
                                                 c["bytes"])
            _host_model(r["calls"], r["schedule"], args)
        idle = _run_rounds([(net, {(r["label"], r["dnn"]): (r["schedule"], r["calls"])
                                   for r in rows}) for net, rows in nets], args)
        for r in every:
            r.setdefault("model_calls", r["calls"])     # pass 1: the link model's grouping
            history.setdefault((r["topology"], r["label"]), []).extend(r["calls"])
        for r in every:             # the next pass's calls: the price measured so far
            r["price_fit"] = fit = price_fit(history[r["topology"], r["label"]])
            again = _cut(wait_free_calls(model_profile(r["dnn"]),
                                         lambda m, f=fit: f[0] + f[1] * m)[0], args)
            r["stable"] = [c["bytes"] for c in again] == [c["bytes"] for c in r["calls"]]
            r["next_calls"] = again
        print(f"fig8a: pass {passes}: " + ", ".join(
            f"{r['case']} {len(r['calls'])} calls" for r in every), file=sys.stderr)
        if passes == MAX_PASSES or all(r["stable"] for r in every):
            return passes, idle
        for r in every:
            r["calls"] = r.pop("next_calls")


def _host_model(calls, schedule, args):
    """With ``testbeds.py``'s host model of the runtime (``args.runtime``: seconds per call and
    per message of all ranks together; ``runtime_model.py``), each call's ``cpu_model`` and
    ``runtime_model`` (the larger of it and the link model), as ``measure`` prices a case."""
    from runtime_model import program_messages   # benchmarks/seeds/ on the path

    per_call, per_message = getattr(args, "runtime", None) or (None, None)
    if per_call is None:
        return
    for c in calls:
        c["cpu_model"] = per_call + per_message * program_messages(schedule, c["bytes"])
        c["runtime_model"] = max(c["model"], c["cpu_model"])


def _totals(r, idle, passes):
    """The row's sums and replays (see the module text); the objects dropped."""
    for key in ("schedule", "net", "cal"):
        r.pop(key)
    r.pop("next_calls", None)
    calls, model_calls = r["calls"], r["model_calls"]
    r["size"] = sum(c["bytes"] for c in calls)
    r["time"] = sum(c["time"] for c in calls)
    r["minibatch"] = replay(calls, [c["time"] for c in calls], r["compute"])
    r["model"] = sum(c["model"] for c in model_calls)
    r["minibatch_model"] = replay(model_calls, [c["model"] for c in model_calls], r["compute"])
    r["first_pass_time"] = sum(c["time"] for c in model_calls)
    if all("runtime_model" in c for c in calls):
        r["runtime_model"] = sum(c["runtime_model"] for c in calls)
    r["passes"], r["idle"] = passes, idle
    return r


def fig8a_part(args, measure=None, cases=None):
    """Fig. 8(a) on the emulated testbed: one row per DNN and allreduce (``part`` "fig8a";
    ``time`` the total allreduce time, ``minibatch`` the replayed minibatch time, their link
    model twins ``model`` and ``minibatch_model``, ``calls`` every call). ``cases`` is
    ``testbeds.py``'s ``_cases`` (``measure`` is not used: the calls form a sequence)."""
    from topocoll.emulate import EmulatedNetwork
    from topocoll.studies.models import MODELS
    from topocoll.topology import topology

    if cases is None:
        raise TypeError("fig8a_part needs testbeds.py's _cases")
    dnns = args.dnns or list(MODELS)
    unknown = [d for d in dnns if d not in MODELS]
    if unknown:
        raise ValueError(f"unknown DNN {unknown[0]!r}; topocoll has {', '.join(MODELS)}")
    n = args.fig8a_nodes
    by_spec = {}
    for label, spec, algorithm in FIG8A_CASES:
        spec = spec.format(n=n)
        topology(spec)      # a spec that does not exist at this N raises here, named
        built = [c for c in cases(spec, [(label, algorithm)]) if c[2] is not None]
        _verified(built)
        by_spec.setdefault(spec, []).extend((c[0], algorithm, c[2]) for c in built)
    with contextlib.ExitStack() as stack:   # every network up at once: runs interleave
        nets = []
        for spec, labelled in by_spec.items():
            net = stack.enter_context(EmulatedNetwork(spec, link_bandwidth=args.rate))
            nets.append((net, _setup_rows(net, labelled, dnns, args)))
        passes, idle = _passes(nets, args)
    rows = [_totals(r, idle, passes) for _, net_rows in nets for r in net_rows]
    for line in fig8a_summary(rows):
        print(line)
    return rows


def fig8a_summary(rows):
    """Lines: per DNN every allreduce's totals, then our improvement over each baseline per DNN
    and averaged over the DNNs, beside the paper's."""
    lines = [f"\nFig. 8(a): training on the emulated testbed (bytes / {SCALE}, compute as is; "
             "calls: link model's grouping, then the measured price's)",
             f"{'DNN':<12} {'allreduce':<15} {'calls':>6} {'bytes':>8} {'allreduce':>10} "
             f"{'pass 1':>8} {'model':>8} {'roofline':>8} {'minibatch':>10} {'model':>8} "
             f"{'compute':>8} stable (passes)"]
    dnns = list(dict.fromkeys(r["dnn"] for r in rows))
    of = {(r["dnn"], r["label"]): r for r in rows}
    for r in rows:
        calls = f"{len(r['model_calls'])}>{len(r['calls'])}"
        roof = f"{r['runtime_model']:>7.3f}s" if "runtime_model" in r else f"{'-':>8}"
        lines.append(f"{r['dnn']:<12} {r['label']:<15} {calls:>6} {r['size']:>8} "
                     f"{r['time']:>9.3f}s {r['first_pass_time']:>7.3f}s {r['model']:>7.3f}s "
                     f"{roof} {r['minibatch']:>9.3f}s {r['minibatch_model']:>7.3f}s "
                     f"{r['compute']:>7.3f}s {'yes' if r['stable'] else 'no'} ({r['passes']})")
    for base in dict.fromkeys(r["label"] for r in rows):
        if base == "ours":
            continue
        both = [d for d in dnns if (d, "ours") in of and (d, base) in of]
        gains = [tuple(1 - of[(d, "ours")][k] / of[(d, base)][k]
                       for k in ("time", "minibatch", "model", "minibatch_model")) for d in both]
        if not gains:
            continue
        mean = [statistics.mean(g[i] for g in gains) for i in range(4)]
        paper = FIG8A_PAPER.get(base)
        said = (f" (paper: {paper[0]:.0%} and {paper[1]:.0%})" if paper else "")
        lines.append(f"ours over {base}: allreduce lower by {mean[0]:.1%}, minibatch by "
                     f"{mean[1]:.1%}{said}; link model {mean[2]:.1%} and {mean[3]:.1%}; per "
                     "DNN " + ", ".join(f"{d} {g[0]:.1%}/{g[1]:.1%}" for d, g in zip(both, gains)))
    return lines
