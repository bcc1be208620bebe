"""The main job: BFB allreduce on a handful of topologies of one size, verified and priced next
to the lower bounds and the classic ring allreduce.

>>> rows = survey(16, specs=["torus:4x4"], sizes=[2**20])
>>> [(r["topology"], r["algorithm"], r["verified"]) for r in rows]
[('torus:4x4', 'bfb', True), ('ring:16', 'biring', True), ('uniring:16', 'ring', True)]
"""

import math


from ..errors import SpecError
from ..schedule.cost import evaluate
from ..schedule.verify import verify
from ..synth import generate
from ..topology.metrics import diameter, moore_depth
from ..topology.registry import topology

__all__ = ["survey", "default_specs"]


def _torus_dims(n, k):
    """The most even k factors of n (largest first), or None if n has no such split."""
    best = None
    def search(rest, left, lo, acc):
        nonlocal best
        if left == 1:
            if rest >= lo:
                dims = sorted(acc + [rest], reverse=True)
                if best is None or dims[0] - dims[-1] < best[0] - best[-1]:
                    best = dims
            return
        f = lo
        while f ** left <= rest:
            if rest % f == 0:
                search(rest // f, left - 1, f, acc + [f])
            f += 1
    search(n, k, 2, [])
    return best


def default_specs(num_nodes, degree=4):
    """A handful of topologies with ``num_nodes`` nodes: tori, hypercube, circulant,
    generalized Kautz and the bidirectional ring (those that exist at that size)."""
    n = int(num_nodes)
    if n < 4:
        raise SpecError(f"survey needs at least 4 nodes, got {n}")
    specs = []
    for k in (2, 3):
        dims = _torus_dims(n, k)
        if dims:
            specs.append("torus:" + "x".join(map(str, dims)))
    if n & (n - 1) == 0:
        specs.append(f"hypercube:{int(math.log2(n))}")
    if n >= 6:
        specs.append(f"optcirculant:{n}")  # C(n, {a, a+1}) of smallest diameter
    specs.append(f"genkautz:{n},{degree}")
    specs.append(f"ring:{n}")
    return specs


def _row(schedule, spec, sizes, alpha, node_bandwidth):
    topo = schedule.topology
    report = verify(schedule)
    evals = [evaluate(schedule, m, check=False) for m in sizes]
    degree = int(topo.out_degree().max())
    moore = moore_depth(topo.num_nodes, degree)
    row = {"topology": spec, "algorithm": schedule.algorithm, "nodes": topo.num_nodes,
           "degree": degree, "verified": report.valid, "steps": evals[0].steps,
           "diameter": diameter(topo), "moore_steps": 2 * moore, "T_L": evals[0].T_L,
           "sizes": []}
    spread = (topo.num_nodes - 1) / topo.num_nodes
    for m, e in zip(sizes, evals):
        # the best any degree-d topology could do: Moore-bound steps and bandwidth-optimal T_B
        bound = 2 * moore * alpha + 2 * spread * m / node_bandwidth
        row["sizes"].append({"size": m, "T_B": e.T_B, "time": e.time, "bw_lower_bound":
                             e.bw_lower_bound, "time_lower_bound": bound,
                             "ratio": e.time / bound})
    return row


def survey(num_nodes=64, *, specs=None, sizes=(2**20, 2**28), alpha=1e-5,
           node_bandwidth=12.5e9, degree=4, progress=None):
    """BFB allreduce on each topology, plus the bidirectional and the classic ring allreduce,
    verified and priced.

    Every link gets latency ``alpha`` and each node's ``node_bandwidth`` is split over its
    out-links. Returns one dict per schedule (see :func:`_row` keys), ring baseline last.
    """
    specs = list(specs) if specs is not None else default_specs(num_nodes, degree)
    rows = []
    jobs = [(spec, "bfb") for spec in specs] + [(f"ring:{num_nodes}", "biring"),
                                                (f"uniring:{num_nodes}", "ring")]
    for i, (spec, algorithm) in enumerate(jobs):
        topo = topology(spec, latency=alpha).with_node_bandwidth(node_bandwidth)
        schedule = generate(topo, "allreduce", algorithm)
        rows.append(_row(schedule, spec, list(sizes), alpha, node_bandwidth))
        if progress:
            progress(i + 1, len(jobs))
    return rows
