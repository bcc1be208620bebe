"""Won et al., "TACOS: Topology-Aware Collective Algorithm Synthesizer" (MICRO 2024): the
paper's evaluation rebuilt from topocoll's own runs.

Every part prints one markdown table, ``| item | paper | ours | ours/paper | note |``: the
paper's number where its text gives one (``n/a: lost in our copy`` where the extracted text lost
it), ours, and their ratio, then ``schedules verified: k/k``. Every schedule is checked with
``topocoll.verify`` and timed in topocoll's link model (``topocoll.simulate``: alpha-beta per
link, contention included); TACOS timed its schedules in ASTRA-sim's congestion-aware
analytical backend. Switches are unwound TACOS's way (scale-up at max degree, scale-out at
degree 1). Baselines: Ring = ``rankring`` (one unidirectional logical ring over the ranks,
routed), Direct = ``direct`` (every rank to every rank, routed), TACCL-like = ``tacclike``
(TEN synthesis without the congestion constraint, then priced with contention). Routing is xy
on meshes, shortest paths elsewhere. Links: 0.5 us latency. Rows labelled "stored and
forwarded" price the same routed Ring and Direct schedules with every message stored and
forwarded whole at each hop, as ASTRA-sim's congestion-aware backend moves chunks
(``store_forward.py``: links in a fixed order, or first come first served); topocoll's link
model forwards routed transfers cut-through. Synthesized schedules are unrouted: unchanged.

    python benchmarks/seeds/tacos.py                  # every part (many minutes: ILPs)
    python benchmarks/seeds/tacos.py --quick          # small twins (about a minute idle)
    python benchmarks/seeds/tacos.py --only fig19,table3
    python benchmarks/seeds/tacos.py --only fig19 --size 1GiB --alpha-per transfer
    python benchmarks/seeds/tacos.py --only table2 --sides 8 10 12 --et-limit 600

The paper's message sizes are lost in our copy: ``--size`` (default 1MB, latency-bound; 1GiB is
bandwidth-bound). ``--alpha-per transfer`` charges every transfer the link latency (the TEN's
convention) instead of once per back-to-back message (topocoll's default).

Parts: fig5 (scatter on a 4-NPU unidirectional ring: 3 steps), fig6 (Ring and Direct on
100-NPU ring, fully connected and 10x10 mesh, plus the synthesized mesh schedule), fig10
(switch unwinding degrees), fig19 (all-reduce on mesh 5x5, DragonFly 4x5, Switch_Switch 8x4:
TEN-ILP, TEN-greedy, TACCL-like, Direct, Ring), fig20 (ILP all-gather on a 3x3 mesh: no link
shared), fig21 (10x10 mesh all-reduce with 1..64 chunks), table1 (Ring_FC_Switch 1..64 nodes),
table2 (Ring_Ring: early termination against time clustering), table3 (4x4 mesh with two
failed NPUs), table4 (broadcast and gather on a 6x6 mesh), table5 (three tenants on a 6x6 mesh),
synth (greedy synthesis time against size, median of 3).
"""

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from hardware import machine  # noqa: E402  benchmarks/hardware.py
from store_forward import first_come_first_served, stored_and_forwarded  # noqa: E402

import numpy as np  # noqa: E402

import topocoll as tc  # noqa: E402
from topocoll.schedule import simulate  # noqa: E402
from topocoll.units import parse_size  # noqa: E402
from topocoll.topology.unwind import unwind_switches  # noqa: E402

LAT = "0.5us"
LOST = "n/a: lost in our copy"
NOT_IN = "n/a: not in the paper"
VERIFIED = {"ok": 0, "all": 0}
#: How the link model charges latency (``--alpha-per``): "message" (topocoll's default: transfers
#: that go back to back on a link form one message and pay alpha once) or "transfer" (every
#: transfer pays, the TEN's own convention of a slot per chunk).
SIM = {"alpha_per": "message"}

# ------------------------------------------------------------------ the paper's numbers
#: Fig. 6 (section III-B): speed-ups the text states on 100 NPUs.
FIG6 = {"ring: Direct / Ring": 12.88, "fc: Ring / Direct": 99.0,
        "mesh: Ring / Syn": 3.94, "mesh: Direct / Syn": 5.52}
#: Fig. 19 (section VIII-A): average speed-up of TACOS-ILP and TACOS-Greedy "over baselines".
FIG19 = {"ten-ilp": 3.73, "ten-greedy": 3.17}
#: Table I: nodes -> (ILP, ILP synth s, Greedy synth s, TACCL-like, Ring, Direct), all
#: normalized to TACOS-Greedy's collective time; None where the paper has no entry.
TABLE1 = {1: (1.00, 0.070, 0.00029, 1.00, 1.44, 3.74),
          2: (1.00, 0.79, 0.00063, 2.89, 3.78, 7.44),
          4: (1 / 1.45, 20.01, 0.00890, 4.10, 11.28, 7.48),
          8: (1 / 1.58, 70.16, 0.09792, 4.27, 26.47, 7.54),
          16: (None, None, 1.08, 2.60, 36.00, 4.79),
          32: (None, None, 16.50, None, 72.24, 4.66),
          64: (None, None, 366.0, None, 146.21, 4.64)}
TABLE1_DIRECT_MEAN = 4.80
#: Table II: R (R x R Ring_Ring) -> (time clustering / early termination, TC synth s, TACCL-like,
#: Ring, Direct), normalized to early termination; early-termination limit in minutes.
TABLE2 = {8: (1.06, 13.88, 1.56, 8.00, 13.81, 10), 10: (1.17, 58.18, 1.57, 8.74, 19.61, 15),
          12: (1.23, 168.26, 1.57, 9.67, 27.33, 20)}
#: Fig. 21: mean speed-up of TACOS-Greedy over Ring and Direct; synthesis time at 1600 MB.
FIG21 = {"ring": 4.51, "direct": 11.00, "synth_1600MB_s": 57.87}
#: Table III: (ILP, ILP synth s, Greedy, Greedy synth s, TACCL-like, Ring, Direct) over ILP.
TABLE3 = (1.00, 4.92, 1.00, 0.00353, 1.00, 5.38, 5.08)
#: Table IV: collective -> (ILP synth s, TACCL-like, Direct), normalized to TACOS-ILP.
TABLE4 = {"broadcast": (0.10, 1.00, 3.90), "gather": (56.13, 1.11, 1.67)}
#: Table V: (Greedy, Greedy synth s, TACCL-like, Direct) normalized to TACOS-ILP (6.73 s).
TABLE5 = (1.25, 0.00367, 1.50, 3.63)
TABLE5_ILP_S = 6.73


# ------------------------------------------------------------------ helpers
def checked(schedule, label):
    VERIFIED["all"] += 1
    if not tc.verify(schedule).valid:
        raise SystemExit(f"{label}: invalid schedule")
    VERIFIED["ok"] += 1
    return schedule


def timed(make, label, size):
    """(link-model time, synthesis seconds) of the verified schedule ``make()`` builds."""
    start = time.perf_counter()
    s = make()
    took = time.perf_counter() - start
    checked(s, label)
    return simulate(s, size, **SIM).time, took, s


def row(item, paper, ours, note=""):
    return (item, paper, ours, note)


def fmt(x):
    if x is None:
        return "-"
    if isinstance(x, str):
        return x
    return f"{x:.4g}"


def print_table(title, rows):
    print(f"\n### {title}\n")
    print("| item | paper | ours | ours/paper | note |")
    print("|---|---|---|---|---|")
    for item, paper, ours, note in rows:
        ratio = (f"{ours / paper:.3f}" if isinstance(paper, (int, float))
                 and isinstance(ours, (int, float)) and paper else "-")
        print(f"| {item} | {fmt(paper) if paper is not None else LOST} | {fmt(ours)} | {ratio} "
              f"| {note} |")
    print(f"\nschedules verified: {VERIFIED['ok']}/{VERIFIED['all']}")


def routing_of(spec):
    return "xy" if str(spec).startswith("mesh") else "shortest"


def baselines(t, spec, size, *, collective="allreduce", ring=True, direct=True, taccl=True):
    """{name: (time, synth s)} for the baselines that apply."""
    out = {}
    routing = routing_of(spec)
    if taccl:
        out["tacclike"] = timed(lambda: tc.generate(t, collective, "tacclike", size=size),
                                f"tacclike {spec}", size)
    if direct:
        out["direct"] = timed(lambda: tc.generate(t, collective, "direct", routing=routing),
                              f"direct {spec}", size)
    if ring:
        out["ring"] = timed(lambda: tc.generate(t, collective, "rankring", routing=routing),
                            f"ring {spec}", size)
    return out


def dragonfly_4x5(bandwidth="400GB/s", global_bandwidth=200e9):
    """TACOS's DragonFly 4x5: 5 groups of 4 all-to-all NPUs, one global cable per group pair,
    400 GB/s inside a group and 200 GB/s on global cables."""
    t = tc.build_topology("dragonfly:4,1,5", bandwidth=bandwidth, latency=LAT)
    bw = np.array(t.bandwidth, dtype=float)
    glob = (np.asarray(t.src) // 4) != (np.asarray(t.dst) // 4)
    bw[glob] = global_bandwidth
    return t.with_links(bandwidth=bw)


# ------------------------------------------------------------------ parts
def part_fig5(args):
    t = tc.build_topology("uniring:4", bandwidth="100GB/s", latency=LAT)
    s = checked(tc.synthesize(t, "scatter", size="1MB"), "scatter uniring:4")
    return [row("topology-aware scatter, 4-NPU unidirectional ring: steps", 3, s.num_steps,
                "TEN greedy"),
            row("speed-up over the topology-unaware scatter (5 steps)", 1.67,
                5 / s.num_steps, "5 steps: the paper's Fig. 5(a)")]


def part_fig6(args):
    size = "1GiB"
    rows, times, hop = [], {}, {}
    for spec in ("ring:100", "complete:100", "mesh:10x10"):
        t = tc.build_topology(spec, bandwidth="100GB/s", latency=LAT)
        b = baselines(t, spec, size, taccl=False)
        times[spec] = {k: v[0] for k, v in b.items()}
        hop[spec] = {(k, f): saf(v[2], size, f) for k, v in b.items() for _, f in SAF}
        if spec.startswith("mesh"):
            syn = timed(lambda: tc.synthesize(t, "allreduce", size=size), "greedy mesh:10x10",
                        size)
            times[spec]["syn"] = syn[0]
            hop[spec].update({("syn", f): saf(syn[2], size, f) for _, f in SAF})
    rows.append(row("ring: Direct / Ring", FIG6["ring: Direct / Ring"],
                    times["ring:100"]["direct"] / times["ring:100"]["ring"]))
    rows.append(row("fc: Ring / Direct", FIG6["fc: Ring / Direct"],
                    times["complete:100"]["ring"] / times["complete:100"]["direct"]))
    m = times["mesh:10x10"]
    rows.append(row("mesh: Ring / Syn", FIG6["mesh: Ring / Syn"], m["ring"] / m["syn"],
                    "Syn = TEN greedy"))
    rows.append(row("mesh: Direct / Syn", FIG6["mesh: Direct / Syn"], m["direct"] / m["syn"],
                    "Syn = TEN greedy"))
    for k, (spec, num, den) in zip(FIG6, (("ring:100", "direct", "ring"),
                                          ("complete:100", "ring", "direct"),
                                          ("mesh:10x10", "ring", "syn"),
                                          ("mesh:10x10", "direct", "syn"))):
        for label, f in SAF:
            rows.append(row(f"{k}, {label}", FIG6[k],
                            hop[spec][num, f] / hop[spec][den, f], SAF_NOTE))
    rows.append(row("message size", LOST, "1 GiB", "ours: bandwidth-bound regime"))
    return rows


def part_fig10(args):
    t = tc.build_topology("switch:4", bandwidth="120GB/s", latency=LAT)
    rows = []
    for d in (1, 2, 3):
        u = unwind_switches(t, d)
        bw = sorted(set(np.round(np.asarray(u.bandwidth) / 1e9, 3).tolist()))
        rows.append(row(f"degree {d}: directed links", 4 * d, u.num_links))
        rows.append(row(f"degree {d}: link bandwidth GB/s", 120 / d, bw[0] if len(bw) == 1
                        else str(bw)))
    return rows


FIG19_SYSTEMS = [("mesh:5x5", lambda: tc.build_topology("mesh:5x5", bandwidth="100GB/s",
                                                        latency=LAT)),
                 ("dragonfly 4x5", dragonfly_4x5),
                 ("switchswitch:8,4", lambda: unwind_switches(
                     tc.build_topology("switchswitch:8,4", bandwidth="300GB/s", latency=LAT),
                     "0:max,1:1")),
                 # not a Fig. 19 system (kept out of the means): docs/baselines.md's third row
                 ("ringfcswitch:2,4,2 (extra)", lambda: ringfc(2))]
FIG19_QUICK = [("mesh:3x3", lambda: tc.build_topology("mesh:3x3", bandwidth="100GB/s",
                                                      latency=LAT)),
               ("switchswitch:4,2", lambda: unwind_switches(
                   tc.build_topology("switchswitch:4,2", bandwidth="300GB/s", latency=LAT),
                   "0:max,1:1"))]


def part_fig19(args):
    size, rows, speed = args.size, [], {"ten-ilp": [], "ten-greedy": []}
    for spec, build in (FIG19_QUICK if args.quick else FIG19_SYSTEMS):
        t = build()
        res = {"ten-ilp": timed(lambda: tc.synthesize(t, "allreduce", size=size, method="ilp",
                                                      time_limit=args.ilp_limit),
                                f"ilp {spec}", size),
               "ten-greedy": timed(lambda: tc.synthesize(t, "allreduce", size=size),
                                   f"greedy {spec}", size)}
        res.update(baselines(t, spec, size))
        best = res["ten-ilp"][0]
        claim = res["tacclike"][2].meta["uncongested_time"]
        rows.append(row(f"{spec} ({t.num_nodes} NPUs): TEN-ILP us", LOST, best * 1e6,
                        f"ILP {res['ten-ilp'][1]:.1f} s; "
                        f"{res['ten-ilp'][2].meta.get('ilp_message', '')[:60]}"))
        for name in ("ten-greedy", "tacclike", "direct", "ring"):
            note = (f"its model claimed {claim / best:.2f}x" if name == "tacclike" else "")
            rows.append(row(f"{spec}: {name} / TEN-ILP", LOST, res[name][0] / best, note))
        for name in ([] if "extra" in spec else speed):
            speed[name] += [res[b][0] / res[name][0] for b in ("ring", "direct")]
    for name, paper in FIG19.items():
        rows.append(row(f"mean speed-up of {name} over Ring and Direct", paper,
                        statistics.mean(speed[name]), "mean over systems x {Ring, Direct}"))
    return rows


def part_fig20(args):
    t = tc.build_topology("mesh:3x3", bandwidth="100GB/s", latency=LAT)
    s = checked(tc.synthesize(t, "allgather", size="1MB", method="ilp",
                              time_limit=args.ilp_limit), "ilp allgather mesh:3x3")
    sim = simulate(s, "1MB", **SIM).time
    return [row("3x3 mesh all-gather: link-model time / TEN time (1 = no link shared)", 1.0,
                sim / s.meta["ten_time"], s.meta.get("ilp_message", "")[:70]),
            row("steps", LOST, s.num_steps)]


def part_fig21(args):
    t = tc.build_topology("mesh:10x10", bandwidth="100GB/s", latency=LAT)
    counts = (1, 2) if args.quick else (1, 2, 4, 8, 16, 32, 64)
    rows, over = [], {"ring": [], "direct": []}
    hop = {(name, f): [] for name in over for _, f in SAF}
    base = baselines(t, "mesh:10x10", "25MB", taccl=False)  # per-byte: rescaled below
    took = 0.0
    for c in counts:
        size = 25e6 * c
        syn, took, _ = timed(lambda: tc.synthesize(t, "allreduce", size=size, chunks=c),
                             f"greedy mesh:10x10 C={c}", size)
        for name in over:
            sched = base[name][2]
            ratio = simulate(sched, size, **SIM).time / syn
            over[name].append(ratio)
            rows.append(row(f"C = {c} ({25 * c} MB): {name} / TEN greedy", LOST, ratio))
            for label, f in SAF:
                hop[name, f].append(saf(sched, size, f) / syn)
                rows.append(row(f"C = {c} ({25 * c} MB): {name} / TEN greedy, {label}", LOST,
                                hop[name, f][-1], SAF_NOTE))
        rows.append(row(f"C = {c}: greedy synthesis s", FIG21["synth_1600MB_s"] if c == 64
                        else LOST, took, "under load" if c == 64 else ""))
    for name in over:
        rows.append(row(f"mean speed-up over {name}", FIG21[name], statistics.mean(over[name]),
                        f"C in {counts}"))
        for label, f in SAF:
            rows.append(row(f"mean speed-up over {name}, {label}", FIG21[name],
                            statistics.mean(hop[name, f]), f"C in {counts}; {SAF_NOTE}"))
    return rows


def ringfc(nodes):
    t = tc.build_topology(f"ringfcswitch:2,4,{nodes}", bandwidth="200GB/s", latency=LAT)
    return unwind_switches(t, "2:1") if t.switches else t


def part_table1(args):
    size, rows, direct = args.size, [], []
    nodes = (1, 2, 4) if args.quick else (1, 2, 4, 8, 16, 32, 64)
    for n in nodes:
        t = ringfc(n)
        p = TABLE1[n]
        g, gs, _ = timed(lambda: tc.synthesize(t, "allreduce", size=size), f"greedy {n}", size)
        if n <= (2 if args.quick else 8):
            il, ils, _ = timed(lambda: tc.synthesize(t, "allreduce", size=size, method="ilp",
                                                     time_limit=args.ilp_limit), f"ilp {n}",
                               size)
            rows.append(row(f"{n} nodes ({t.num_nodes}): ILP / Greedy", p[0], il / g,
                            f"ILP {ils:.2f} s (paper {fmt(p[1])} s)"))
        big = n > (4 if args.quick else 16)
        b = baselines(t, "ringfc", size, taccl=not big)
        for k, name in ((3, "tacclike"), (4, "ring"), (5, "direct")):
            if name in b:
                rows.append(row(f"{n} nodes: {name} / Greedy", p[k], b[name][0] / g))
        rows += [row(f"{n} nodes: ring / Greedy, {label}", p[4],
                     saf(b["ring"][2], size, f) / g, SAF_NOTE) for label, f in SAF]
        direct.append(b["direct"][0] / g)
        rows.append(row(f"{n} nodes: Greedy synthesis s", p[2], gs, "one run, under load"))
    rows.append(row("mean Direct / Greedy", TABLE1_DIRECT_MEAN, statistics.mean(direct),
                    f"nodes {nodes}"))
    return rows


def part_table2(args):
    rows = []
    sides = (4,) if args.quick else args.sides
    for r in sides:
        t = tc.build_topology(f"torus:{r}x{r}", bandwidth="100GB/s", latency=LAT)
        size = args.size
        p = TABLE2.get(r)
        et, ets, ets_s = timed(lambda: tc.synthesize(t, "allreduce", size=size, method="ilp",
                                                 time_limit=args.et_limit),
                           f"early termination {r}", size)
        tcl, tcs, tcs_s = timed(lambda: tc.synthesize(t, "allreduce", size=size, method="ilp",
                                                  window=args.window,
                                                  time_limit=args.et_limit),
                            f"time clustering {r}", size)
        g, gs, _ = timed(lambda: tc.synthesize(t, "allreduce", size=size), f"greedy {r}", size)
        b = baselines(t, "torus", size)
        rows.append(row(f"{r}x{r}: early termination us", NOT_IN, et * 1e6,
                        f"ILP limit {args.et_limit:.0f} s, took {ets:.1f} s "
                        f"(paper {p[5] if p else '-'} min); "
                        f"{ets_s.meta.get('ilp_message', '')[:50]}"))
        rows.append(row(f"{r}x{r}: time clustering / ET", p[0] if p else NOT_IN, tcl / et,
                        f"window {args.window}; {tcs:.1f} s (paper {fmt(p[1]) if p else '-'} s); "
                        f"{tcs_s.meta.get('ilp_message', '')[:50]}"))
        rows.append(row(f"{r}x{r}: TEN greedy / ET", NOT_IN, g / et, f"{gs:.2f} s"))
        for k, name in ((2, "tacclike"), (3, "ring"), (4, "direct")):
            rows.append(row(f"{r}x{r}: {name} / ET", p[k] if p else NOT_IN, b[name][0] / et))
    return rows


def part_table3(args):
    size, fail = args.size, "7,9"
    t = tc.build_topology("mesh:4x4", bandwidth="100GB/s", latency=LAT)
    il, ils, s = timed(lambda: tc.synthesize(t, "allreduce", size=size, method="ilp",
                                             fail_nodes=fail, time_limit=args.ilp_limit),
                       "ilp failed mesh", size)
    g, gs, _ = timed(lambda: tc.synthesize(t, "allreduce", size=size, fail_nodes=fail),
                     "greedy failed mesh", size)
    from topocoll.synth.ten.problem import prepare_topology
    sub = prepare_topology(t, fail_nodes=fail)
    b = baselines(sub, "failed-mesh", size)
    p = TABLE3
    return [row("NPUs left", 14, sub.num_nodes),
            row("ILP synthesis s", p[1], ils, s.meta.get("ilp_message", "")[:60]),
            row("Greedy / ILP", p[2], g / il),
            row("Greedy synthesis s", p[3], gs, "under load"),
            row("TACCL-like / ILP", p[4], b["tacclike"][0] / il),
            row("Ring / ILP", p[5], b["ring"][0] / il, "shortest-path routing around holes"),
            row("Direct / ILP", p[6], b["direct"][0] / il, "shortest-path routing")] + [
        row(f"{name.capitalize()} / ILP, {label}", p[k], saf(b[name][2], size, f) / il,
            SAF_NOTE) for k, name in ((5, "ring"), (6, "direct")) for label, f in SAF]


def hop_by_hop(schedule):
    """``schedule`` (one step of copies: a rooted Direct) with every routed transfer cut into
    one unrouted transfer per hop, hop k in step k (a step's transfers in the schedule's
    order, first come first served): each message stored and forwarded whole at every hop,
    where topocoll's link model forwards a routed transfer cut-through."""
    from topocoll.schedule.model import transfer_array
    from topocoll.topology.routes import routes_of

    routes, parts = routes_of(schedule.topology, schedule.routing), []
    for row_ in schedule.transfers:
        path = routes.node_path(int(row_["src"]), int(row_["dst"]))
        parts.extend(transfer_array(k + 1, u, v, row_["shard"], row_["lo"], row_["hi"],
                                    row_["op"]) for k, (u, v) in enumerate(zip(path, path[1:])))
    t = np.concatenate(parts)
    return schedule.replace(transfers=t[np.argsort(t["step"], kind="stable")], routing=None)


def saf(schedule, size, fcfs=False):
    """``schedule``'s time with routed messages stored and forwarded at each hop (links in
    ``hop_by_hop``'s order, or with ``fcfs`` first come first served: ``store_forward``); an
    unrouted schedule (every synthesized one) has one hop per transfer: its own time."""
    if schedule.routing is None:
        return simulate(schedule, size, **SIM).time
    price = first_come_first_served if fcfs else stored_and_forwarded
    return price(schedule, size, SIM["alpha_per"])


#: the store-and-forward pricings (``saf``): row label, first come first served
SAF = (("stored and forwarded", False), ("stored and forwarded, first come first served", True))
SAF_NOTE = "routed messages stored and forwarded at each hop"


def part_table4(args):
    size, rows = args.size, []
    t = tc.build_topology("mesh:6x6", bandwidth="100GB/s", latency=LAT)
    colls = ("broadcast",) if args.quick else ("broadcast", "gather")
    for coll in colls:
        p = TABLE4[coll]
        il, ils, s = timed(lambda: tc.synthesize(t, coll, size=size, method="ilp",
                                                 time_limit=args.ilp_limit), f"ilp {coll}",
                           size)
        ta = timed(lambda: tc.generate(t, coll, "tacclike", size=size), f"tacclike {coll}",
                   size)[0]
        rows.append(row(f"{coll}: ILP synthesis s", p[0], ils,
                        s.meta.get("ilp_message", "")[:60]))
        rows.append(row(f"{coll}: TACCL-like / ILP", p[1], ta / il))
        di = timed(lambda: tc.generate(t, coll, "direct", routing="xy"), f"direct {coll}",
                   size)[0]
        rows.append(row(f"{coll}: Direct / ILP", p[2], di / il, "root 0 (a corner), xy routes"))
        # messages stored and forwarded whole at each hop, as distinct messages: a broadcast's
        # 35 copies of M are priced as a scatter of 36 M (35 distinct shards of M), else the
        # link model forwards a copy of the one buffer as soon as a node first holds it
        as_msgs, scale = ("scatter", t.num_nodes) if coll == "broadcast" else (coll, 1)
        hop = timed(lambda: hop_by_hop(tc.generate(t, as_msgs, "direct", routing="xy")),
                    f"direct hop by hop {coll}", scale * parse_size(size))[0]
        rows.append(row(f"{coll}: Direct / ILP, messages stored and forwarded", p[2], hop / il,
                        "each hop a transfer, messages first come first served"))
    return rows


def part_table5(args):
    from topocoll.schedule.linkmodel import simulate_many
    from topocoll.synth.ten import ilp_tenants, synthesize_tenants

    size = args.size
    t = tc.build_topology("mesh:6x6", bandwidth="100GB/s", latency=LAT)
    tenants = ["broadcast:2", "reduce:17", "allgather"]
    start = time.perf_counter()
    res = synthesize_tenants(t, tenants, size=size)
    gs = time.perf_counter() - start
    for s in res.schedules:
        checked(s, "tenant")
    g = max(r.time for r in simulate_many(res.schedules, size, **SIM))
    taccl = [checked(tc.generate(t, name, "tacclike", size=size, root=root), "tacclike tenant")
             for name, root in (("broadcast", 2), ("reduce", 17), ("allgather", None))]
    ta = max(r.time for r in simulate_many(taccl, size, **SIM))
    direct = [checked(tc.generate(t, name, "direct", routing="xy", root=root), "direct tenant")
              for name, root in (("broadcast", 2), ("reduce", 17), ("allgather", None))]
    di = max(r.time for r in simulate_many(direct, size, **SIM))
    start = time.perf_counter()
    ires = ilp_tenants(t, tenants, size=size, time_limit=args.ilp_limit)
    ils = time.perf_counter() - start
    il = max(r.time for r in simulate_many([checked(s, "ilp tenant") for s in ires.schedules],
                                           size, **SIM))
    m = ires.meta
    how = (f"{m['horizon_slots']} slots, greedy {m['greedy_horizon_slots']}, lower bound "
           f"{m['lower_bound_slots']}" + ("" if m["source"] == "ilp" else
                                          "; none better in the limit: the greedy's"))
    return [row("ILP synthesis s", TABLE5_ILP_S, ils, f"joint ILP: {how}; under load"),
            row("Greedy / ILP", TABLE5[0], g / il),
            row("TACCL-like / ILP", TABLE5[2], ta / il),
            row("Direct / ILP", TABLE5[3], di / il, "xy routes, priced together"),
            row("TACCL-like / Greedy", TABLE5[2] / TABLE5[0], ta / g,
                "paper: both over TACOS-ILP (1.50 / 1.25)"),
            row("Greedy synthesis s", TABLE5[1], gs, "under load"),
            row("Direct / Greedy", TABLE5[3] / TABLE5[0], di / g,
                "paper: both over TACOS-ILP (3.63 / 1.25); xy routes, priced together")]


def part_synth(args):
    """Greedy synthesis time, median of 3: topocoll's default (best of up to 16 seeded runs plus
    an ILP repair of the last slots on mixed links, budgets permitting) and one plain greedy run
    (``restarts=1, repair=False``), TACOS's own Greedy being one run."""
    nodes = (1, 2, 4) if args.quick else (1, 2, 4, 8, 16, 32, 64)
    rows = []
    for n in nodes:
        t = ringfc(n)
        for label, opts in (("default", {}), ("one run", {"restarts": 1, "repair": False})):
            runs = []
            for _ in range(3):
                start = time.perf_counter()
                s = tc.synthesize(t, "allreduce", size="1MB", **opts)
                runs.append(time.perf_counter() - start)
                checked(s, f"greedy {n}")
            rows.append(row(f"Ring_FC_Switch {n} nodes ({t.num_nodes} NPUs): greedy s, {label}",
                            TABLE1[n][2], statistics.median(runs),
                            f"median of 3, {s.meta['makespan_slots']} slots; 2 shared cores, "
                            "under load"))
    return rows


PARTS = {"fig5": part_fig5, "fig6": part_fig6, "fig10": part_fig10, "fig19": part_fig19,
         "fig20": part_fig20, "fig21": part_fig21, "table1": part_table1,
         "table2": part_table2, "table3": part_table3, "table4": part_table4,
         "table5": part_table5, "synth": part_synth}
QUICK_SKIP = ()


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", help="comma-separated parts: " + ",".join(PARTS))
    ap.add_argument("--size", default="1MB",
                    help="all-reduce size M of fig19 and the tables (lost in our copy of the "
                    "paper; 1MB is latency-bound, 1GiB bandwidth-bound)")
    ap.add_argument("--alpha-per", choices=("message", "transfer"), default="message",
                    help="link-model latency convention (see SIM)")
    ap.add_argument("--ilp-limit", type=float, default=60.0,
                    help="wall-clock seconds per ILP synthesis (TACOS: 1 hour)")
    ap.add_argument("--et-limit", type=float, default=300.0,
                    help="Table II's early-termination limit, seconds (TACOS: 10-20 min)")
    ap.add_argument("--sides", type=int, nargs="+", default=[8],
                    help="Table II's R x R Ring_Ring sizes (the paper: 8 10 12)")
    ap.add_argument("--window", type=int, default=4, help="Table II's time-clustering window")
    args = ap.parse_args(argv)
    SIM["alpha_per"] = args.alpha_per
    if args.quick:
        args.ilp_limit = min(args.ilp_limit, 10.0)
        args.et_limit = min(args.et_limit, 10.0)
    names = args.only.split(",") if args.only else [
        p for p in PARTS if not (args.quick and p in QUICK_SKIP)]
    bad = [n for n in names if n not in PARTS]
    if bad:
        ap.error(f"unknown part(s) {bad}; known: {', '.join(PARTS)}")
    print(f"TACOS (Won et al., MICRO 2024) rebuilt; M = {args.size} (fig19, tables), "
          f"alpha per {args.alpha_per}; "
          f"{machine()}{'; quick' if args.quick else ''}")
    for name in names:
        start = time.perf_counter()
        rows = PARTS[name](args)
        print_table(f"{name} ({time.perf_counter() - start:.1f} s)", rows)


if __name__ == "__main__":
    main()
