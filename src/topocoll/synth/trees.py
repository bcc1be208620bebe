"""Double binary tree (DBT) allreduce, as in NCCL (Sanders, Speck and Traeff's two-tree idea;
seed 002 reference [35], [58]; baseline (3) of section 8.3).

Tree 1 is NCCL's in-order binary tree on ranks ``0..N-1`` (``ncclGetBtree``): rank r > 0 with
lowest set bit ``b`` has parent ``(r xor b) | 2b``, or ``r xor b`` when that is ``>= N``; rank 0
is the root and has one child. Tree 2 (``ncclGetDtree``) is tree 1 mirrored (``r -> N-1-r``) for
even N and shifted by one rank (``r -> r+1 mod N``) for odd N, so that the leaves of one tree (the
odd ranks of tree 1) are the inner nodes of the other.

The topology ``dbt:N`` (:func:`dbt_topology`) holds one cable (a link each way) per tree edge;
an edge in both trees gets two parallel cables, so each tree owns its links and every node has
at most 4 of them (inner in one tree: parent and two children; leaf in the other).

Schedule (shard model of DESIGN.md: N shards of M/N): tree 1 handles ``[0, 1/2)`` of every shard,
tree 2 ``[1/2, 1)``. Each half is cut into ``chunks`` = K equal chunks (option, default 1). Up:
chunk c is reduced into the parent by a node at depth h in step ``H - h + 1 + c`` (H = the tree's
depth), so the root holds chunk c fully reduced after step ``H + c``; down: the root copies it
to its children in step ``H + c + 1`` and a node at depth h receives it in step ``H + c + h``.
One step per tree level each way, pipelined over the chunks; the two trees run at the same time.

Both trees have depth ``H = ceil(log2 N)`` (NCCL's tree: 0 -> 2^(H-1) -> ... -> 1; mirroring
and shifting keep the shape). Steps ``S = 2H + K - 1``; every used link carries ``M/(2K)``
bytes per step, so ``T_B = S * M/(2 K b)`` (for N >= 3; N = 2 has both trees on one doubled
cable: half that), ``T_L = S alpha``. One level per step (K = 1) gives
``T_B = 2H * M/(2b) = H M/b``; large K approaches ``M/(2b)``, against the allreduce bound
``2 (N-1)/N * M/B`` with node bandwidth B <= 4b.

>>> s = dbt_schedule(dbt_topology(8), "allreduce")
>>> s.num_steps, s.meta["depths"]
(6, [3, 3])
"""

import numpy as np

from ..collectives import COPY, REDUCE
from ..errors import UnsupportedError
from ..schedule.model import Schedule, transfer_array
from ..topology.model import DEFAULT_BANDWIDTH, DEFAULT_LATENCY, Topology
from ..units import parse_bandwidth, parse_time
from .classic import int_option, require_collective, require_links, take_options

__all__ = ["dbt_schedule", "dbt_topology", "dbt_trees", "btree_parents", "DBT_COLLECTIVES"]

DBT_COLLECTIVES = ("allreduce",)


def btree_parents(n):
    """Parent of every rank in NCCL's binary tree on ``n`` ranks (``-1`` for the root 0).

    >>> btree_parents(8).tolist()
    [-1, 2, 4, 2, 0, 6, 4, 6]
    """
    parent = np.full(n, -1, dtype=np.int64)
    r = np.arange(1, n, dtype=np.int64)
    bit = r & -r
    up = (r ^ bit) | (bit << 1)
    parent[1:] = np.where(up >= n, r ^ bit, up)
    return parent


def dbt_trees(n):
    """The parent arrays of NCCL's two trees on ``n >= 2`` ranks (roots 0 and N-1 or 1).

    >>> [p.tolist() for p in dbt_trees(4)]
    [[-1, 2, 0, 2], [1, 3, 1, -1]]
    """
    if n < 2:
        raise UnsupportedError(f"dbt needs at least 2 nodes, got {n}")
    first = btree_parents(n)
    ranks = np.arange(n)
    if n % 2:   # shift by one rank
        p = first[(ranks - 1) % n]
        second = np.where(p < 0, -1, (p + 1) % n)
    else:       # mirror
        p = first[n - 1 - ranks]
        second = np.where(p < 0, -1, n - 1 - p)
    return first, second


def _depths(parent):
    depth = np.zeros(parent.size, dtype=np.int64)
    cur = parent.copy()
    while np.any(cur >= 0):
        live = cur >= 0
        depth[live] += 1
        cur[live] = parent[cur[live]]
    return depth


def _tree_edges(n):
    """Child -> parent links of both trees, concatenated (tree 1 then tree 2)."""
    child, parent = [], []
    for p in dbt_trees(n):
        c = np.flatnonzero(p >= 0)
        child.append(c)
        parent.append(p[c])
    return np.concatenate(child), np.concatenate(parent)


def dbt_topology(n, *, bandwidth=DEFAULT_BANDWIDTH, latency=DEFAULT_LATENCY):
    """The double-binary-tree topology ``dbt:N``: a cable (two links) per edge of each tree.

    >>> t = dbt_topology(8)
    >>> t.name, t.num_links, int(t.out_degree(multi=True).max())
    ('dbt:8', 28, 4)
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise UnsupportedError(f"dbt needs an integer number of nodes, got {n!r}")
    n = int(n)
    child, parent = _tree_edges(n)
    if isinstance(bandwidth, str):
        bandwidth = parse_bandwidth(bandwidth)
    if isinstance(latency, str):
        latency = parse_time(latency, what="latency")
    return Topology(n, np.r_[child, parent], np.r_[parent, child], bandwidth, latency,
                    name=f"dbt:{n}", meta={"family": "dbt", "n": n})


def dbt_schedule(topology, collective, **options):
    """Double binary tree allreduce on ``dbt:N`` (or any topology with both trees' links).

    Option ``chunks`` = K >= 1 (default 1). Closed forms in the module docstring:
    ``steps = 2 ceil(log2 N) + K - 1``, ``T_B = steps * M/(2 K b)`` (N >= 3).
    """
    coll = require_collective(collective, DBT_COLLECTIVES, "dbt")
    opts = take_options("dbt", options, {"chunks": int_option(1)})
    chunks = opts.get("chunks", 1)
    n = topology.num_nodes
    if n < 2:
        raise UnsupportedError(f"dbt needs at least 2 nodes, got {n}")
    child, parent = _tree_edges(n)
    require_links(topology, np.r_[child, parent], np.r_[parent, child], "dbt",
                  "the links of NCCL's double binary tree in both directions (dbt_topology(N))")
    shards = np.arange(n)
    parts, depths = [], []
    for tree, par in enumerate(dbt_trees(n)):
        depth = _depths(par)
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
