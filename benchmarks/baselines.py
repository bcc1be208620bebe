"""The field's newest collectives beside topocoll's: Swing, Bine, PAT, recursive doubling and
the rank-order ring (routed: their peers are not neighbours, and the network forwards their
messages), against BFB, spanning-tree packing, torus rings and TEN, on tori.

Every schedule is made once per shape, verified by the independent verifier, and priced in the
step model (``T_L + T_B * M`` from its per-step costs, so every size is one multiply) with
``alpha = 1 us`` per hop and the same bandwidth on every link; routed transfers pay every link
of their route (docs/math.md section 11). The link model times the schedules at the sizes named
by ``--link-sizes``.

Above ``ROWS_NODE_LIMIT`` nodes (torus:64x64) the newcomers' schedules hold up to 201 million
transfers: they are priced from their traffic summed as the generator makes the rows
(``topocoll.step_traffic``, exactly the step model's price of the schedule; the same generators'
rows are verified on every smaller shape here and in the tests), BFB is made in its symmetric
form and verified, and the generators that can only make rows there are left out (said per
row); the link model needs rows, so it is not run there. Each row: the time of every algorithm and, last, the best of topocoll's
own (bfb, trees, torusrings, ten) over the best of the newcomers (swing, bine, pat) -- below 1:
topocoll's is faster.

    python benchmarks/baselines.py               # every shape (a few minutes)
    python benchmarks/baselines.py --quick       # torus:8x8 and 4x4x4 only
    python benchmarks/baselines.py --json out.json --plot docs/baselines.png
"""

import argparse
import json
import sys
import time

import numpy as np

import topocoll as tc
from topocoll.errors import TopocollError
from topocoll.schedule.cost import step_costs
from topocoll.schedule.traffic import StepTraffic
from topocoll.synth import ALGORITHMS
from topocoll.units import format_size, format_time, parse_size

ALPHA = 1e-6
LINK_BW = 100e9 / 8
SHAPES = ("torus:8x8", "torus:16x16", "torus:64x64", "torus:4x4x4", "torus:8x8x8",
          "twistedtorus:4x4x8")
QUICK = ("torus:8x8", "torus:4x4x4")
SIZES = ("32B", "1KiB", "32KiB", "1MiB", "32MiB", "128MiB")
OURS = ("bfb", "trees", "torusrings", "ten")
THEIRS = ("swing", "swing-1port", "swing-latency", "bine", "pat")
# name shown -> (generator, options)
ALLREDUCE = {"bfb": ("bfb", {}), "trees": ("trees", {}), "torusrings": ("torusrings", {}),
             "ten": ("ten", {}),
             "swing": ("swing", {"variant": "bandwidth", "multiport": True}),
             "swing-1port": ("swing", {"variant": "bandwidth"}),
             "swing-latency": ("swing", {"variant": "latency"}), "bine": ("bine", {}),
             "rankring": ("rankring", {}), "rd": ("rd", {"variant": "bandwidth"}),
             "rd-latency": ("rd", {"variant": "latency"})}
ALLGATHER = {"bfb": ("bfb", {}), "trees": ("trees", {}), "torusrings": ("torusrings", {}),
             "swing": ("swing", {"variant": "bandwidth", "multiport": True}),
             "swing-1port": ("swing", {"variant": "bandwidth"}), "bine": ("bine", {}),
             "pat": ("pat", {}), "rankring": ("rankring", {}), "rd": ("rd", {})}
TEN_NODE_LIMIT = 64     # TEN's greedy on larger tori takes minutes: left out there, and said
ROWS_NODE_LIMIT = 512   # above: traffic for the newcomers, the symmetric form for BFB
SYMMETRIC = ("bfb",)    # ours with a symmetric form made directly (seconds on 4096 nodes)


def make(shape, collective, name, generator, options):
    """``(schedule or its StepTraffic, seconds to make, how it was checked)``, or
    ``(None, why, None)``."""
    if generator not in ALGORITHMS:
        return None, "not built", None
    topo = tc.build_topology(shape).with_links(latency=ALPHA, bandwidth=LINK_BW)
    if generator == "ten" and topo.num_nodes > TEN_NODE_LIMIT:
        return None, f"over {TEN_NODE_LIMIT} nodes", None
    large = topo.num_nodes > ROWS_NODE_LIMIT
    started = time.perf_counter()
    try:
        if large and ALGORITHMS[generator].summed is not None:
            made = tc.step_traffic(topo, collective, generator, **options)
            return made, time.perf_counter() - started, "traffic (rows verified up to " \
                f"{ROWS_NODE_LIMIT} nodes)"
        if large and generator not in SYMMETRIC:
            return None, f"over {ROWS_NODE_LIMIT} nodes: makes rows only (torusrings' " \
                "allreduce on 64x64: 134 million, 8 min)", None
        made = tc.generate(topo, collective, generator,
                           form="symmetric" if large else "explicit", **options)
    except TopocollError as exc:
        return None, str(exc).split(";")[0][:60], None
    took = time.perf_counter() - started
    report = tc.verify(made)
    if not report.valid:
        return None, f"INVALID: {report.summary()[:60]}", None
    return made, took, f"verified ({made.form})"


def priced(schedule, sizes):
    """Step-model times at every size from one pass over the steps."""
    _, alpha, beta = step_costs(schedule)
    return {size: float(alpha.sum() + beta.sum() * parse_size(size)) for size in sizes}


def shape_rows(shape, collective, table, sizes, link_sizes):
    rows, notes = {}, {}
    for name, (generator, options) in table.items():
        s, took, checked = make(shape, collective, name, generator, options)
        if s is None:
            notes[name] = took
            continue
        timed = not isinstance(s, StepTraffic)     # the link model follows rows
        rows[name] = {"step": priced(s, sizes), "made_s": took, "steps": s.num_steps,
                      "routed": s.routing is not None, "checked": checked,
                      "link": {size: tc.simulate(s, size).time for size in link_sizes}
                      if timed else {}}
        print(f"  {shape} {collective} {name}: {s.num_steps} steps, made in {took:.1f} s, "
              f"{checked}", file=sys.stderr)
    return rows, notes


def render(shape, collective, rows, notes, sizes, model):
    names = [n for n in rows if rows[n][model]]
    if not names:
        print(f"\n{collective} on {shape}, {model} model: not run (no schedule held as rows)")
        return
    print(f"\n{collective} on {shape}, {model} model (alpha {format_time(ALPHA)} per hop, "
          f"{format_size(LINK_BW)}/s per link); ours/theirs = best of {', '.join(OURS)} over "
          f"best of {', '.join(THEIRS)}")
    print("| size | " + " | ".join(names) + " | ours/theirs |")
    print("|---" * (len(names) + 2) + "|")
    for size in sizes:
        times = {n: rows[n][model].get(size) for n in names}
        ours = [times[n] for n in OURS if times.get(n) is not None]
        theirs = [times[n] for n in THEIRS if times.get(n) is not None]
        ratio = f"{min(ours) / min(theirs):.3f}" if ours and theirs else "-"
        best = min((t for t in times.values() if t is not None), default=None)
        cells = [("**" + format_time(t) + "**" if t == best else format_time(t))
                 if t is not None else "-" for t in times.values()]
        print(f"| {size} | " + " | ".join(cells) + f" | {ratio} |")
    for name, why in notes.items():
        print(f"  {name}: {why}")


def plot(path, out, sizes):
    """One panel per shape: every allreduce's step-model time over BFB's, by size."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = [k for k in out if k.endswith("allreduce")]
    fig, axes = plt.subplots(1, len(keys), figsize=(3.6 * len(keys), 3.6), sharey=True,
                             squeeze=False)
    x = [parse_size(s) for s in sizes]
    names = list(dict.fromkeys(n for k in keys for n in out[k]["rows"]))
    color = {n: plt.get_cmap("tab20")(i % 20) for i, n in enumerate(names)}
    for ax, key in zip(axes[0], keys):
        rows = out[key]["rows"]
        base = rows["bfb"]["step"]
        for name, row in rows.items():
            ax.plot(x, [row["step"][s] / base[s] for s in sizes], marker="o", ms=3,
                    label=name, color=color[name], lw=2 if name in ("bfb", "swing") else 1)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_title(key.replace(" allreduce", ""), fontsize=9)
        ax.set_xlabel("buffer (bytes)")
        ax.axhline(1.0, color="k", lw=0.5)
    axes[0][0].set_ylabel("time / BFB's (step model)")
    handles = [plt.Line2D([], [], color=color[n], marker="o", ms=3) for n in names]
    axes[0][-1].legend(handles, names, fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1))
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--shapes", nargs="+", metavar="SHAPE",
                    help=f"these shapes only (default: {' '.join(SHAPES)})")
    ap.add_argument("--json", help="also write every number here")
    ap.add_argument("--link-sizes", default="1MiB,128MiB")
    ap.add_argument("--plot", help="draw every allreduce over BFB's, by size, to this file")
    args = ap.parse_args(argv)
    link_sizes = [s for s in args.link_sizes.split(",") if s]
    out = {}
    started = time.perf_counter()
    for shape in args.shapes or (QUICK if args.quick else SHAPES):
        for collective, table in (("allreduce", ALLREDUCE), ("allgather", ALLGATHER)):
            rows, notes = shape_rows(shape, collective, table, SIZES, link_sizes)
            render(shape, collective, rows, notes, SIZES, "step")
            render(shape, collective, rows, notes, link_sizes, "link")
            out[f"{shape} {collective}"] = {"rows": rows, "notes": notes}
    print(f"\n{time.perf_counter() - started:.0f} s on this machine", file=sys.stderr)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1, default=float)
    if args.plot:
        plot(args.plot, out, SIZES)
    return 0


if __name__ == "__main__":
    np.seterr(all="ignore")
    sys.exit(main())
