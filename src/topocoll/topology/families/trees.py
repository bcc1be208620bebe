"""Tree-based families: the links of NCCL's double binary tree (``dbt:N``).

Tree 1 is NCCL's in-order binary tree on ranks ``0..N-1`` (``ncclGetBtree``): rank r > 0 with
lowest set bit ``b`` has parent ``(r xor b) | 2b``, or ``r xor b`` when that is ``>= N``; rank 0
is the root and has one child. Tree 2 (``ncclGetDtree``) is tree 1 mirrored (``r -> N-1-r``) for
even N and shifted by one rank (``r -> r+1 mod N``) for odd N, so that the leaves of one tree (the
odd ranks of tree 1) are the inner nodes of the other. The topology holds one cable (a link each
way) per tree edge; an edge in both trees gets two parallel cables, so each tree owns its links
and every node has at most 4 of them (inner in one tree: parent and two children; leaf in the
other). The schedule that runs on it is :func:`topocoll.synth.trees.dbt_schedule`.
"""

import numpy as np

from ...defaults import LINK_BANDWIDTH, LINK_LATENCY
from .checks import as_int, at_least, check_size, make_topology

__all__ = ["dbt_graph", "dbt_trees", "btree_parents", "dbt_tree_edges"]


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
    n = at_least(as_int(n, "dbt size"), 2, "dbt needs n >= 2")
    first = btree_parents(n)
    ranks = np.arange(n)
    if n % 2:   # shift by one rank
        p = first[(ranks - 1) % n]
        second = np.where(p < 0, -1, (p + 1) % n)
    else:       # mirror
        p = first[n - 1 - ranks]
        second = np.where(p < 0, -1, n - 1 - p)
    return first, second


def dbt_tree_edges(n):
    """Child -> parent links of both trees, concatenated (tree 1 then tree 2)."""
    child, parent = [], []
    for p in dbt_trees(n):
        c = np.flatnonzero(p >= 0)
        child.append(c)
        parent.append(p[c])
    return np.concatenate(child), np.concatenate(parent)


def dbt_graph(n, *, bandwidth=LINK_BANDWIDTH, latency=LINK_LATENCY):
    """The double-binary-tree topology ``dbt:N``: a cable (two links) per edge of each tree.

    Parameters
    ----------
    n : int
        Number of nodes, ``>= 2``.
    bandwidth, latency : float or str
        Per-link bandwidth (bytes/s) and latency (s).

    Examples
    --------
    >>> t = dbt_graph(8)
    >>> t.name, t.num_links, int(t.out_degree(multi=True).max())
    ('dbt:8', 28, 4)
    """
    n = at_least(as_int(n, "dbt size"), 2, "dbt needs n >= 2")
    name = f"dbt:{n}"
    check_size(name, n, 4 * (n - 1))
    child, parent = dbt_tree_edges(n)
    return make_topology(name, n, np.r_[child, parent], np.r_[parent, child], bandwidth,
                         latency, {"family": "dbt", "n": n})
