"""Double binary tree (DBT) allreduce, as in NCCL (Sanders, Speck and Traeff's two-tree idea;
Sanders, Speck and Traeff, "Two-tree algorithms for full bandwidth broadcast, reduction and
scan", Parallel Computing 2009; baseline (3) of Zhao et al., NSDI 2025, section 8.3).

The two trees and the topology ``dbt:N`` that holds their links are defined in
:mod:`topocoll.topology.families.trees`.

Schedule (shard model of docs/format.md: N shards of M/N): tree 1 handles ``[0, 1/2)`` of every
shard, tree 2 ``[1/2, 1)``. Each half is cut into ``chunks`` = K equal chunks (option, default 1).
Up: chunk c is reduced into the parent by a node at depth h in step ``H - h + 1 + c`` (H = the
tree's depth), so the root holds chunk c fully reduced after step ``H + c``; down: the root copies
it to its children in step ``H + c + 1`` and a node at depth h receives it in step ``H + c + h``.
One step per tree level each way, pipelined over the chunks; the two trees run at the same time.

Both trees have depth ``H = ceil(log2 N)`` (NCCL's tree: 0 -> 2^(H-1) -> ... -> 1; mirroring
and shifting keep the shape). Steps ``S = 2H + K - 1``; every used link carries ``M/(2K)``
bytes per step, so ``T_B = S * M/(2 K b)`` (for N >= 3; N = 2 has both trees on one doubled
cable: half that), ``T_L = S alpha``. One level per step (K = 1) gives
``T_B = 2H * M/(2b) = H M/b``; large K approaches ``M/(2b)``, against the allreduce bound
``2 (N-1)/N * M/B`` with node bandwidth B <= 4b.

The K-chunk schedule is the ``chunks=1`` schedule pipelined (docs/math.md section 1, "Pipelined
schedules"): ``compare`` and train-sim's baseline price DBT at each size M with the K that
minimizes ``(2H + K - 1)(alpha + M/(2 K b))``, near ``K* = sqrt((2H - 1) M / (2 b alpha))``
(:func:`topocoll.schedule.cost.best_chunks`), as NCCL runs it, not as one unpipelined pass.

>>> from topocoll.topology import topology
>>> s = dbt_schedule(topology("dbt:8"), "allreduce")
>>> s.num_steps, s.meta["depths"]
(6, [3, 3])
"""

import numpy as np

from ..collectives import COPY, REDUCE
from ..errors import UnsupportedError
from ..schedule.model import Schedule, transfer_array
from ..topology.families.trees import dbt_tree_edges, dbt_trees
from .options import require_collective, require_links

__all__ = ["dbt_schedule", "DBT_COLLECTIVES"]

DBT_COLLECTIVES = ("allreduce",)


def tree_depths(parent):
    depth = np.zeros(parent.size, dtype=np.int64)
    cur = parent.copy()
    while np.any(cur >= 0):
        live = cur >= 0
        depth[live] += 1
        cur[live] = parent[cur[live]]
    return depth


def dbt_schedule(topology, collective, *, chunks=1, root=None, progress=None):
    """Double binary tree allreduce on ``dbt:N`` (or any topology with both trees' links).

    Option ``chunks`` = K >= 1 (default 1). Closed forms in the module docstring:
    ``steps = 2 ceil(log2 N) + K - 1``, ``T_B = steps * M/(2 K b)`` (N >= 3).
    """
    coll = require_collective(collective, DBT_COLLECTIVES, "dbt")
    if isinstance(chunks, bool) or not isinstance(chunks, (int, np.integer)) or chunks < 1:
        raise UnsupportedError(f"dbt: chunks must be a whole number >= 1, got {chunks!r}")
    chunks = int(chunks)
    n = topology.num_nodes
    if n < 2:
        raise UnsupportedError(f"dbt needs at least 2 nodes, got {n}")
    child, parent = dbt_tree_edges(n)
    require_links(topology, np.r_[child, parent], np.r_[parent, child], "dbt",
                  "the links of NCCL's double binary tree in both directions (dbt:N)")
    shards = np.arange(n)
    parts, depths = [], []
    for tree, par in enumerate(dbt_trees(n)):
        depth = tree_depths(par)
        height = int(depth.max())
        depths.append(height)
        kids = np.flatnonzero(par >= 0)
        c = np.arange(chunks)
        lo = (tree + c / chunks) / 2
        hi = (tree + (c + 1) / chunks) / 2
        # rows: (chunk, child, shard)
        shape = (chunks, kids.size, n)
        ck = np.broadcast_to(c[:, None, None], shape).ravel()
        node = np.broadcast_to(kids[None, :, None], shape).ravel()
        shard = np.broadcast_to(shards[None, None, :], shape).ravel()
        up_step = height - depth[node] + 1 + ck
        down_step = height + ck + depth[node]
        parts.append(transfer_array(up_step, node, par[node], shard, lo[ck], hi[ck], REDUCE))
        parts.append(transfer_array(down_step, par[node], node, shard, lo[ck], hi[ck], COPY))
    t = np.concatenate(parts)
    order = np.lexsort((t["shard"], t["dst"], t["src"], t["step"]))
    return Schedule(topology, coll, t[order], algorithm="dbt",
                    meta={"chunks": chunks, "depths": depths})
