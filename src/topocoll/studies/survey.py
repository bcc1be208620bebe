"""A preset of compare: BFB allreduce on a handful of topologies of one size, verified and
priced next to the lower bounds and the classic ring allreduce.

>>> result = survey(16, specs=["torus:4x4"], sizes=[2**20])
>>> [(r.topology, r.algorithm, r.verified) for r in result.rows]
[('torus:4x4', 'bfb', True), ('ring:16', 'biring', True), ('uniring:16', 'ring', True)]
"""

import math

from .. import defaults
from ..errors import SpecError
from .compare import compare

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


def survey(num_nodes=64, *, specs=None, sizes=defaults.SURVEY_SIZES, alpha=defaults.ALPHA,
           node_bandwidth=None, link_bandwidth=None, degree=4, progress=None, gamma=None):
    """BFB allreduce on a handful of topologies of one size next to the bidirectional and the
    classic ring allreduce: a preset of :func:`~topocoll.studies.compare.compare`.

    Every link gets latency ``alpha`` and bandwidth ``link_bandwidth`` (default 100 Gbps, the
    one default cluster), or each node's ``node_bandwidth`` split over its out-links (the NSDI
    2025 paper's convention; not with ``link_bandwidth``). Returns compare's
    :class:`~topocoll.studies.compare.CompareResult`, its rows ending with the classic ring;
    each size's ``degree_ratio`` is
    the time over the best any topology of that size and degree could do (Moore-depth steps
    and bandwidth-optimal ``T_B``). ``gamma`` (seconds per byte reduced, or a reduction
    throughput such as ``"100GB/s"``; default none, reductions free) adds compare's reduction
    term ``T_gamma`` to every time; the bounds leave it out.
    """
    specs = list(specs) if specs is not None else default_specs(num_nodes, degree)
    entries = [(spec, "bfb") for spec in specs] + [(f"ring:{num_nodes}", "biring"),
                                                   (f"uniring:{num_nodes}", "ring")]
    return compare(entries, sizes=sizes, collective="allreduce", alpha=alpha,
                   node_bandwidth=node_bandwidth, link_bandwidth=link_bandwidth,
                   progress=progress, gamma=gamma)
