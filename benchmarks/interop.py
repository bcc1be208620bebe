"""MSCCL XML export, import and lint: how long they take, what the files hold, and that the
round trip prices the same.

For BFB, ring, TEN, DBT and all-to-all schedules up to 128 ranks: the export's thread blocks and
steps with fused receives (``rcs``/``rrcs``, the default) against ``--unfused`` (the anchor:
msccl-tools' own fusion pass is what the runtime is tuned for; fewer steps means fewer
synchronisations per chunk), the channels needed to respect 64 steps per thread block, the
median export and import+lint seconds over 3 runs, and the round trip: the imported schedule's
T_B and link-model time over the original's (target: 1.000000 exactly), and the smallest
connection capacity each export needs to complete (``cap``, in units of one chunk per send step;
docs/interop.md, "Bounded buffers": the Simple protocol holds 2, LL and LL128 8; ``cap unf``
for the ``--unfused`` form).

    python benchmarks/interop.py

``--refusal FILE`` instead times how long ``export`` takes to refuse a schedule the runtime
cannot hold (the 1024-rank allreduce ``make run`` writes to ``out/allreduce.json.gz``): with the
pre-checks (``topocoll.interop.export_precheck``: the element bound and the block-pass replay,
median of 3 runs) and, with ``--without``, once without them (the full translation: minutes and
about 9 GB). Wall clock and CPU time (what an idle machine would show), the process's peak
memory after each row, the load average and the cores are printed.

    python benchmarks/interop.py --refusal out/allreduce.json.gz --without
"""

import os
import statistics
import sys
import time

from hardware import machine   # benchmarks/hardware.py, next to this script
from topocoll.interop import export_msccl, import_msccl
from topocoll.interop.export import CAPACITY
from topocoll.interop.lint import buffer_capacity
from topocoll.schedule.cost import evaluate
from topocoll.schedule.linkmodel import simulate
from topocoll.synth import generate
from topocoll.topology import topology

CASES = [
    ("torus:4x4", "allreduce", "bfb", None),
    ("torus:8x8", "allreduce", "bfb", None),
    ("hypercube:6", "allgather", "bfb", None),
    ("uniring:128", "allgather", "ring", None),
    ("dbt:31", "allreduce", "dbt", None),
    ("mesh:4x4", "allgather", "ten", None),
    ("torus:3x3", "alltoall", "ten", None),
    ("ring:16", "broadcast", "bfb", 0),
]


def _median(fn, runs=3):
    times, out = [], None
    for _ in range(runs):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def main():
    header = (f"{'schedule':34} {'ranks':>5} {'transfers':>9} {'blocks':>7} {'steps':>7} "
              f"{'unfused':>8} {'fused/unf':>9} {'chan':>4} {'export s':>8} {'import s':>8} "
              f"{'T_B ratio':>9} {'link ratio':>10} {'cap':>4} {'cap unf':>7}")
    print(header)
    print("-" * len(header))
    for spec, coll, alg, root in CASES:
        topo = topology(spec)
        s = generate(topo, coll, alg, root=root)
        t_exp, res = _median(lambda: export_msccl(s))
        plain = export_msccl(s, unfused=True)
        t_imp, back = _median(lambda: import_msccl(res.text, topology=topo))
        if not back.lint.valid:
            raise SystemExit(f"{spec} {coll}: the export does not lint: {back.lint.message}")
        a, b = evaluate(s, "1MiB"), evaluate(back.schedule, "1MiB")
        tb = b.T_B / a.T_B
        lm = simulate(back.schedule, "1MiB").time / simulate(s, "1MiB").time
        need = buffer_capacity(res.program)[0]
        need_plain = buffer_capacity(plain.program)[0]
        if need is None or need > CAPACITY[res.program.attrs["proto"]]:
            raise SystemExit(f"{spec} {coll}: the export needs connections of {need} units")
        print(f"{alg + ' ' + coll + ' ' + spec:34} {s.num_nodes:>5} {s.num_transfers:>9} "
              f"{res.blocks:>7} {res.steps:>7} {plain.steps:>8} {res.steps / plain.steps:>9.3f} "
              f"{res.channels:>4} {t_exp:>8.3f} {t_imp:>8.3f} {tb:>9.6f} {lm:>10.6f} "
              f"{need:>4} {need_plain:>7}")


def _refuse(path):
    """Seconds (wall, CPU) until ``export`` refuses ``path``, and its message."""
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        export_msccl(path)
        message = "accepted"
    except Exception as exc:          # the refusal is what is measured
        message = str(exc)
    return time.perf_counter() - wall, time.process_time() - cpu, message


def _peak_gb():
    """This process's peak resident memory so far, GB."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6


def refusal(path, without=False, runs=3):
    """The ``--refusal`` table (see the module docstring)."""
    import topocoll.interop.export as export_module

    print(machine(), flush=True)
    rows = []
    got = [_refuse(path) for _ in range(runs)]
    rows.append(("with pre-checks", statistics.median(g[0] for g in got),
                 statistics.median(g[1] for g in got), _peak_gb(), got[0][2]))
    if without:
        names = ("precheck", "precheck_elements")
        real = {name: getattr(export_module, name) for name in names}
        for name in names:
            setattr(export_module, name, lambda *args, **kwargs: None)
        try:
            wall, cpu, message = _refuse(path)
            rows.append(("without (full translation)", wall, cpu, _peak_gb(), message))
        finally:
            for name in names:
                setattr(export_module, name, real[name])
    print(f"{'export':28} {'wall s':>8} {'cpu s':>8} {'peak GB':>8}  message")
    for label, wall, cpu, peak, message in rows:
        print(f"{label:28} {wall:>8.1f} {cpu:>8.1f} {peak:>8.2f}  {message[:110]}")
    if without:
        print(f"{'cpu ratio (without / with)':28} {rows[1][2] / rows[0][2]:>17.1f}")
    print(f"load average at end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    if "--refusal" in sys.argv:
        refusal(sys.argv[sys.argv.index("--refusal") + 1], without="--without" in sys.argv)
    else:
        main()
