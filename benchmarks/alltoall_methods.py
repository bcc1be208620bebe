"""All-to-all throughput methods: how long each takes to reach a certified gap.

For the issue "column generation or multiplicative weights for the uniform all-to-all": on
random 4-regular graphs of 64, 128, 256 and 512 nodes this measures

* a multiplicative-weights (MWU) solver of the uniform maximum concurrent flow, the
  Garg-Koenemann algorithm with Fleischer's phases and Karakostas' grouping of commodities by
  source, implemented here (``mwu_concurrent_flow``): the wall time until its *certified* gap
  ``dual / primal - 1`` falls to 1e-1, 1e-2, 1e-3 and 1e-4 (or the gap it reached within its
  time limit), for eps 0.3, 0.1 and 0.03, the fastest eps per target shown; and its number of
  shortest-path trees next to the theoretical ``eps^-2 m ln m`` scaling;
* ``topocoll.throughput.throughput(t, method=m, bounds=False)`` for every ``m`` in
  ``METHODS`` that applies ("symmetric" only on graphs with a translation symmetry, never
  "path"; "colgen" whenever it exists), each under a time limit;

and checks that the MWU's certified interval ``[primal, dual]`` and the LP's overlap (their
lambdas agree within the gaps).

The MWU: lengths ``l_e = 1/c_e`` (capacities in units of the largest); every pair's demand per
phase is ``d``, the lambda of routing everything on the first shortest-path trees (so the
optimum is at least ``d``, Garg-Koenemann's ``beta >= 1``). Variant ``mwu`` (Fleischer): a phase
visits the sources in order; source ``s`` runs one Dijkstra under the current lengths and sends
what it still owes every destination along its shortest-path tree, scaled down so that no link
carries more than its capacity in the step (then another Dijkstra for the rest), and every link
of the tree gets ``l_e *= 1 + eps * flow_e / c_e``. Variant ``mwu-batch``: the same step for all
sources at once under the same lengths (one all-sources Dijkstra per step, whose distances
also give the certificate for free); the analysis holds as well (every step routes on
shortest paths and loads no link beyond its capacity). Primal: after ``p`` phases every pair has
sent ``p d``, so ``lambda_primal = p d / max_e(load_e / c_e)`` (the accumulated flow scaled to be
feasible), and the same for the phases since each of a geometric series of earlier phase
counts (dropping the early phases routed under poor lengths; any of these flows is feasible
once scaled); the best counts. Dual: ``topocoll.throughput.certificate`` with the current
lengths at phase ends (for ``mwu`` as often as keeps it under a quarter of the run time); the
best so far counts, and the reported dual is topocoll's certificate of the best lengths. The
times include the certificates. The ``delta`` of the theory only sets the stopping rule, which
the certified gap replaces (lengths are rescaled, which changes nothing else).

Times are wall-clock seconds in one process; a run under 10 s that met its target is repeated (3 runs, median;
the MWU is deterministic, so only its times vary). The load average is printed: other work on
the machine slows every method alike.

    python benchmarks/alltoall_methods.py            # 64..512 nodes, about 14 minutes
    python benchmarks/alltoall_methods.py --quick    # 64 and 128 nodes, under 2 minutes
"""

import argparse
import math
import os
import statistics
import time

import numpy as np
import scipy.sparse as sp
from scipy.sparse import csgraph

from topocoll.throughput import certificate, throughput
from topocoll.throughput.solve import METHODS
from topocoll.topology import topology
from topocoll.topology.symmetry import translation_group

TARGETS = (1e-1, 1e-2, 1e-3, 1e-4)
#: eps 0.01 reached no more than 1e-1 in 10 s at 64 and 256 nodes, behind 0.03 (trial runs)
EPSILONS = (0.3, 0.1, 0.03)
#: name, batch: Fleischer's sequential phases, and all sources under the same lengths
VARIANTS = (("mwu", False), ("mwu-batch", True))
#: per size: seconds for each MWU run and for each LP method (link LP: 270 s at 256 nodes
#: and 2119 s at 512 on an idle machine, docs/alltoall.md)
FULL = {64: (10, 60), 128: (15, 120), 256: (20, 240), 512: (30, 30)}
QUICK = {64: (4, 30), 128: (4, 40)}
REPEAT_UNDER = 10.0   # seconds: shorter runs are repeated
REPEATS = 3


def _tree_loads(pred, demand, eid, num_links):
    """Link loads of sending ``demand`` from each row's source to every other node along the
    shortest-path trees ``pred`` (K x N predecessor rows of csgraph.dijkstra, sources
    ``pred[k, s] < 0``): the flow into ``v`` is ``demand`` times the destinations below ``v``."""
    k, n = pred.shape
    rows, nodes = np.nonzero(pred >= 0)
    flat = rows * n + nodes
    sub = np.zeros(k * n)
    cur_rows, cur = rows, nodes
    while cur.size:                      # one pass per tree level: every path moves up a link
        sub += np.bincount(cur_rows * n + cur, minlength=k * n)
        cur = pred[cur_rows, cur]
        up = cur >= 0
        cur_rows, cur = cur_rows[up], cur[up]
    return np.bincount(eid[pred[rows, nodes], nodes], weights=demand * sub[flat],
                       minlength=num_links)


def mwu_concurrent_flow(topo, eps, *, time_limit, target=1e-4, batch=False):
    """Garg-Koenemann / Fleischer maximum concurrent flow for uniform all-to-all, commodities
    grouped by source. ``batch``: every source's tree under the same lengths, one all-sources
    Dijkstra per step (whose distances also give the certificate). Returns a dict with the trace
    ``[(seconds, phases, trees, primal, dual)]`` (lambda in the topology's units), the final
    primal and dual, phases and trees."""
    start = time.perf_counter()
    psrc, pdst, cap, _ = topo.pairs
    n = topo.num_nodes
    # links in CSR order, so that the graph's data array is the lengths
    order = np.lexsort((pdst, psrc))
    psrc, pdst = psrc[order], pdst[order]
    m = psrc.size
    unit = float(cap.max())
    c = cap[order] / unit
    eid = np.full((n, n), -1, dtype=np.int64)
    eid[psrc, pdst] = np.arange(m)
    indptr = np.concatenate([[0], np.cumsum(np.bincount(psrc, minlength=n))])
    graph = sp.csr_matrix((1.0 / c, pdst.astype(np.int32), indptr), shape=(n, n))
    lengths = graph.data                 # a view: updates reach the graph
    # per-pair demand of a phase: the lambda of the first shortest-path trees (beta >= 1)
    _, preds = csgraph.dijkstra(graph, directed=True, return_predecessors=True)
    demand = float(np.min(c / _tree_loads(preds, 1.0, eid, m)))
    load = np.zeros(m)
    phases = trees = 0
    best_primal, best_dual, best_lengths = 0.0, math.inf, None
    trace, marks = [], []                # marks: (phases, load) to average the later phases
    cert_seconds = 0.0

    others = [np.flatnonzero(np.arange(n) != s) for s in range(n)]

    def route(flow, e):
        load[e] += flow
        lengths[e] *= 1.0 + eps * flow / c[e]

    while True:
        if batch:
            owed = 1.0
            while owed > 1e-12:
                dist, preds = csgraph.dijkstra(graph, directed=True, return_predecessors=True)
                trees += n
                total = float(dist.sum())
                if math.isfinite(total) and c @ lengths / total < best_dual:
                    best_dual, best_lengths = float(c @ lengths / total), lengths.copy()
                flow = _tree_loads(preds, owed * demand, eid, m)
                frac = min(1.0, 1.0 / float(np.max(flow / c)))
                owed -= owed * frac
                route(flow * frac, slice(None))
        else:
            for s in range(n):
                owed = 1.0
                while owed > 1e-12:
                    _, pred = csgraph.dijkstra(graph, directed=True, indices=s,
                                               return_predecessors=True)
                    trees += 1
                    # the tree's links (into every v != s) and the destinations below each
                    pred[s] = n              # a sink above the root ends every path
                    cur = others[s]
                    sub = np.zeros(n + 1)
                    while cur.size:
                        sub += np.bincount(cur, minlength=n + 1)
                        cur = pred[cur]
                        cur = cur[cur < n]
                    v = others[s]
                    e = eid[pred[v], v]
                    flow = (owed * demand) * sub[v]
                    frac = min(1.0, 1.0 / float(np.max(flow / c[e])))
                    owed -= owed * frac
                    route(flow * frac, e)
        phases += 1
        top = float(lengths.max())
        if top > 1e100:                  # rescale (the update is scale-free)
            lengths /= top
            np.maximum(lengths, 1e-200, out=lengths)
        now = time.perf_counter() - start
        # primal and (sequential) certificate at phase ends, the certificate's cost kept
        # under a quarter of the run
        if batch or not trace or 4 * cert_seconds <= now or now >= time_limit:
            if not batch:
                t0 = time.perf_counter()
                dual = certificate(topo, lengths) / unit
                cert_seconds += time.perf_counter() - t0
                if dual < best_dual:
                    best_dual, best_lengths = dual, lengths.copy()
            # the whole flow, and the flow of the phases since earlier marks
            best_primal = max(best_primal, phases * demand / float(np.max(load / c)))
            for p0, l0 in marks:
                best_primal = max(best_primal,
                                  (phases - p0) * demand / float(np.max((load - l0) / c)))
            if not marks or phases >= 1.05 * marks[-1][0]:   # geometrically spaced
                marks.append((phases, load.copy()))
            now = time.perf_counter() - start
            trace.append((now, phases, trees, best_primal * unit, best_dual * unit))
            if best_dual / best_primal - 1 <= target or now >= time_limit:
                break
    # the best lengths through topocoll's certificate (the reported dual)
    t0 = time.perf_counter()
    inv = np.empty(m, dtype=np.int64)
    inv[order] = np.arange(m)
    dual = certificate(topo, best_lengths[inv]) / unit
    return {"trace": trace, "primal": best_primal * unit, "dual": dual * unit,
            "phases": phases, "trees": trees, "seconds": trace[-1][0], "demand": demand * unit,
            "cert_seconds": cert_seconds, "check_dual": best_dual * unit}


def time_to(trace, gap):
    """First (seconds, trees) in the trace at which the certified gap is at most ``gap``."""
    for sec, _, trees, primal, dual in trace:
        if dual / primal - 1 <= gap:
            return sec, trees
    return None


def measured(fn, limit=math.inf):
    """Run ``fn`` (returning (result, seconds)); repeat runs shorter than ``REPEAT_UNDER`` that
    ended before ``limit`` (a run stopped by its time limit is not timed), median seconds."""
    res, sec = fn()
    secs = [sec]
    if sec < min(REPEAT_UNDER, 0.99 * limit):
        for _ in range(REPEATS - 1):
            secs.append(fn()[1])
    return res, statistics.median(secs), len(secs)


def lp_methods(topo):
    out = []
    for m in METHODS:
        if m == "path":
            continue
        if m == "symmetric" and translation_group(topo) is None:
            continue
        out.append(m)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="64 and 128 nodes, under 2 minutes")
    args = ap.parse_args()
    sizes = QUICK if args.quick else FULL
    wall0 = time.perf_counter()
    print(f"load average at start {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores", flush=True)
    heads = "".join(f"{'gap ' + format(g, '.0e'):>22}" for g in TARGETS)
    header = f"{'topology':<20}{'method':<11}{'lambda':>11}{'gap':>9}{heads}"
    rows, iters, checks = [], [], []
    for n, (mwu_limit, lp_limit) in sizes.items():
        spec = f"randomregular:{n},4"
        topo = topology(spec)
        m = topo.pairs[0].size
        mwu_best = None
        for name, batch in VARIANTS:
            runs = {}
            for eps in EPSILONS:
                def go(eps=eps, batch=batch):
                    r = mwu_concurrent_flow(topo, eps, time_limit=mwu_limit, batch=batch)
                    return r, r["seconds"]
                r, _, nrun = measured(go, mwu_limit)
                runs[eps] = (r, nrun)
            # best eps per target: the first to reach it
            cells = []
            for g in TARGETS:
                hits = [(time_to(r["trace"], g), eps) for eps, (r, _) in runs.items()]
                hits = [(h[0], h[1], eps) for h, eps in hits if h is not None]
                if hits:
                    sec, _, eps = min(hits)
                    cells.append(f"{sec:.2f} s (eps {eps:g})")
                else:
                    best = min(r["dual"] / r["primal"] - 1 for r, _ in runs.values())
                    cells.append(f"{mwu_limit} s: {best:.1e}")
            best_eps = min(runs, key=lambda e: runs[e][0]["dual"] / runs[e][0]["primal"])
            rb = runs[best_eps][0]
            rows.append(f"{spec:<20}{name:<11}{rb['primal']:>11.6g}"
                        f"{rb['dual'] / rb['primal'] - 1:>9.1e}"
                        + "".join(f"{c:>22}" for c in cells))
            if mwu_best is None or rb["dual"] / rb["primal"] < mwu_best[1] / mwu_best[0]:
                mwu_best = (rb["primal"], rb["dual"], f"{name} eps {best_eps:g}")
            for eps, (r, nrun) in runs.items():
                theory = eps ** -2 * m * math.log(m)
                reach = [time_to(r["trace"], g) for g in TARGETS]
                iters.append(f"{spec:<20}{name:<10}{eps:>5g}{r['phases']:>7}{r['trees']:>9}"
                             f"{theory:>11.3g}{r['trees'] / theory:>7.2g}{r['seconds']:>6.1f}"
                             f"{r['dual'] / r['primal'] - 1:>9.2e}"
                             + "".join(f"{(str(h[1]) if h else '-'):>9}" for h in reach)
                             + f"{r['cert_seconds'] / r['seconds']:>6.0%}"
                             f"{abs(r['check_dual'] / r['dual'] - 1):>8.0e}{nrun:>5}")
        for meth in lp_methods(topo):
            def go(meth=meth):
                t0 = time.perf_counter()
                res = throughput(topo, method=meth, bounds=False, time_limit=lp_limit)
                return res, time.perf_counter() - t0
            res, sec, nrun = measured(go)
            lam, bound = res.lam, res.dual_bound
            gap = bound / lam - 1 if lam > 0 else math.inf
            cells = []
            for g in TARGETS:
                if gap <= g:
                    cells.append(f"{sec:.2f} s")
                else:
                    cells.append(f">{lp_limit} s: {res.status_name}" if not lam > 0 else
                                 f"{sec:.0f} s: {gap:.1e}")
            rows.append(f"{spec:<20}{meth:<11}{lam:>11.6g}{gap:>9.1e}"
                        + "".join(f"{c:>22}" for c in cells) + f"   ({nrun} run)")
            if lam > 0:
                # the certified intervals [primal, dual] must overlap
                lo, hi, how = mwu_best
                ok = lo <= bound * (1 + 1e-9) and lam <= hi * (1 + 1e-9)
                checks.append(f"{spec:<20}{meth:<7}mwu ({how}) [{lo:.7g}, {hi:.7g}]"
                              f"  {meth} [{lam:.7g}, {bound:.7g}]  mwu/lp - 1 = "
                              f"{lo / lam - 1:+.1e}  {'agree' if ok else 'DISAGREE'}")
        print(f"... {spec} done at {time.perf_counter() - wall0:.0f} s", flush=True)
    print()
    print("Wall time to a certified gap (MWU: best eps per target; 'a s: g' = stopped at the "
          "time limit a with gap g)")
    print(header)
    print("-" * len(header))
    print("\n".join(rows))
    print()
    print("MWU iterations: shortest-path trees (one per source per phase, more when a step "
          "saturates a link) against eps^-2 m ln m; @g: trees when the gap reached g; cert: "
          "share of the time in certificates; chk: topocoll certificate vs the run's own")
    ih = (f"{'topology':<20}{'variant':<10}{'eps':>5}{'phases':>7}{'trees':>9}{'eps^-2mlnm':>11}"
          f"{'ratio':>7}{'s':>6}{'gap':>9}" + "".join(f"{'@' + format(g, '.0e'):>9}"
                                                    for g in TARGETS)
          + f"{'cert':>6}{'chk':>8}{'runs':>5}")
    print(ih)
    print("-" * len(ih))
    print("\n".join(iters))
    print()
    print("Check: certified intervals of MWU and LP overlap")
    print("\n".join(checks))
    print(f"\ntotal {time.perf_counter() - wall0:.0f} s; METHODS = {METHODS}; load average at "
          f"end {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
