"""Spanning-tree schedules: the ``trees`` algorithm (docs/math.md section 9).

Allgather: every tree of a :class:`~.forest.Forest` owns a byte range of its root's shard (its
weight), cut into K equal chunks; chunk c crosses a tree link whose head is at depth h in step
c + h. Reduce-scatter: the allgather of in-trees, i.e. out-trees of the transposed topology,
reversed in time with reduce ops. Allreduce: reduce-scatter, then allgather.

The generator packs trees twice when it must (in-trees for reduce-scatter, out-trees for
allgather; once when the topology is its own transpose) and keeps, for each, the best of the
shortest-path mixtures (BFB's balance) and the optimal packings at the chosen K: see
:func:`~.forest.pack_trees`. ``meta`` records the exact optimum, the trees, their depth, K and
``T_B`` over the optimum.

>>> s = trees_schedule("kautz:2,3", "allgather", chunks=8)
>>> s.num_steps, s.meta["chunks"], s.meta["max_depth"], round(s.meta["ratio"], 4)
(11, 8, 4, 1.0568)
>>> from topocoll.schedule.verify import verify
>>> verify(s).valid
True
"""

import numpy as np

from ...limits import require_memory
from ...collectives import COPY
from ...schedule.model import BUILD_BYTES_PER_TRANSFER, Schedule, TRANSFER_DTYPE
from ...schedule.transforms import concatenate, reverse
from ...topology import topology as _topology
from ..options import require_collective
from .bound import PACKING_COLLECTIVES
from .forest import DEFAULT_DEPTH_SLACK, DEFAULT_MAX_CHUNKS, DEFAULT_TOLERANCE, pack_trees

__all__ = ["trees_schedule", "forest_allgather", "TREES_COLLECTIVES"]

TREES_COLLECTIVES = PACKING_COLLECTIVES


def forest_allgather(forest):
    """The pipelined allgather of a forest's trees as a :class:`Schedule`."""
    topo = forest.topology
    psrc = topo.pairs[0]
    k = forest.chunks
    roots, weights = forest.roots, forest.weights
    # byte ranges: the trees of a root, in order, share [0, 1); the last ends at exactly 1
    ends = np.cumsum(weights)
    first = np.r_[True, roots[1:] != roots[:-1]]
    heads = np.flatnonzero(first)
    before = np.repeat(ends[heads] - weights[heads], np.diff(np.r_[heads, roots.size]))
    hi_tree = ends - before
    hi_tree[np.r_[first[1:], True]] = 1.0
    lo_tree = np.where(first, 0.0, np.r_[0.0, hi_tree[:-1]])
    tree, node = np.nonzero(forest.parents >= 0)
    level = forest.depths[tree, node]              # the chunk c crosses in step c + level
    count = tree.size
    require_memory(count * k * BUILD_BYTES_PER_TRANSFER,
                   f"the trees schedule of {count * k} transfers ({k} chunks per tree)")
    chunk = np.tile(np.arange(k), count)
    tree_c = np.repeat(tree, k)
    width = hi_tree[tree_c] - lo_tree[tree_c]
    lo = lo_tree[tree_c] + width * chunk / k
    hi = np.where(chunk == k - 1, hi_tree[tree_c], lo_tree[tree_c] + width * (chunk + 1) / k)
    out = np.empty(count * k, dtype=TRANSFER_DTYPE)
    out["step"] = np.repeat(level, k) + chunk
    out["src"] = psrc[np.repeat(forest.parents[tree, node], k)]
    out["dst"] = np.repeat(node, k)
    out["shard"] = roots[tree_c]
    out["lo"] = lo
    out["hi"] = hi
    out["op"] = COPY
    out = out[np.argsort(out["step"], kind="stable")]
    return Schedule(topo, "allgather", out, algorithm="trees", meta=_meta(forest))


def _meta(forest):
    return {"optimum": forest.optimum.per_byte, "optimum_exact": str(forest.optimum.factor),
            "optimum_proven": forest.optimum.exact, "trees": forest.num_trees,
            "max_depth": forest.max_depth, "chunks": forest.chunks,
            "T_B_per_byte": forest.per_byte, "ratio": forest.ratio,
            "fluid_depth": forest.fluid_depth, "fluid_ratio": forest.fluid_ratio,
            "chunks_tried": {str(k): v / forest.optimum.per_byte
                             for k, v in sorted(forest.history.items())}}


def _same_network(topo):
    """True if the topology equals its transpose as a network (same links, bandwidths)."""
    psrc, pdst, pbw, plat = topo.pairs
    back = topo.pair_index(pdst, psrc)
    return bool(np.all(back >= 0) and np.array_equal(pbw[back], pbw)
                and np.array_equal(plat[back], plat))


def trees_schedule(topology, collective, *, root=None, progress=None, chunks=None,
                   tolerance=DEFAULT_TOLERANCE, max_chunks=DEFAULT_MAX_CHUNKS,
                   depth_slack=DEFAULT_DEPTH_SLACK, size=None):
    """Spanning-tree schedule of ``collective`` (allgather, reduce_scatter or allreduce).

    Parameters
    ----------
    topology : Topology or str
        Strongly connected, endpoint-only; any link bandwidths.
    collective : str
    chunks : int, optional
        K, the chunks per tree. Default: the smallest power of two whose ``T_B`` is within
        ``tolerance`` of the optimum (at most ``max_chunks``; 1 where one step per level
        already is).
    tolerance, max_chunks, depth_slack, size
        See :func:`~.forest.pack_trees`; ``size`` (bytes): choose K for this buffer size, trading
        the steps' latency against ``T_B``.
    progress : callable, optional
        ``progress(done, total)``.

    Returns
    -------
    Schedule
        ``meta``: ``optimum`` (exact ``T_B`` per byte of M; ``optimum_exact`` as a fraction),
        ``trees``, ``max_depth``, ``chunks``, ``T_B_per_byte``, ``ratio`` (over the optimum),
        ``fluid_depth`` (depth at which the packing reached the optimum).
    """
    coll = require_collective(collective, TREES_COLLECTIVES, "trees")
    topo = _topology(topology)
    options = {"chunks": chunks, "tolerance": tolerance, "max_chunks": max_chunks,
               "depth_slack": depth_slack, "size": size, "progress": progress}
    if coll.name == "allgather":
        return forest_allgather(pack_trees(topo, **options))
    transposed = topo.transpose()
    rs_forest = pack_trees(transposed, **options)
    rs = reverse(forest_allgather(rs_forest), "reduce_scatter", topo, algorithm="trees")
    if coll.name == "reduce_scatter":
        return rs
    if _same_network(topo):
        ag = reverse(rs, "allgather", topo, algorithm="trees")
    else:
        ag = forest_allgather(pack_trees(topo, **options))
    out = concatenate(rs, ag, "allreduce", algorithm="trees")
    out.meta = _combined(rs.meta, ag.meta)
    return out


def _combined(rs, ag):
    """Allreduce meta: sums of the two halves' times, the larger depth, both parts."""
    optimum = rs["optimum"] + ag["optimum"]
    t_b = rs["T_B_per_byte"] + ag["T_B_per_byte"]
    return {"optimum": optimum, "trees": rs["trees"] + ag["trees"],
            "max_depth": max(rs["max_depth"], ag["max_depth"]),
            "chunks": max(rs["chunks"], ag["chunks"]), "T_B_per_byte": t_b,
            "ratio": t_b / optimum, "reduce_scatter": rs, "allgather": ag}
