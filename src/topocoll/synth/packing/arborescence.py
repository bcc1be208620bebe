"""Minimum-cost spanning out-trees (arborescences) for every root at once.

Edmonds' (Chu-Liu/Edmonds) algorithm, run without a root: every node takes its cheapest
in-link, every cycle of chosen links is contracted into one node (the costs of the links into
it reduced by the cost of the chosen link they would replace), until one node is left. For a
strongly connected graph this contraction hierarchy serves every root: the cheapest
arborescence rooted at r keeps, in every contracted cycle, all chosen links but the one into
the member the cycle is entered at (the member holding r, or the head of the link that enters
the cycle). Expanding the hierarchy top-down gives all roots' trees with a few array operations
per level, vectorised over the roots.

>>> src = np.array([0, 1, 2, 1, 2, 0])
>>> dst = np.array([1, 2, 0, 0, 1, 2])
>>> trees, cost = min_arborescences(3, src, dst, np.array([1.0, 1, 1, 5, 5, 5]))
>>> trees.tolist(), cost.tolist()        # link index into each node; -1 at the root
([[-1, 0, 1], [2, -1, 1], [2, 0, -1]], [2.0, 2.0, 2.0])
"""

import numpy as np

from ...errors import NotStronglyConnectedError

__all__ = ["contraction_hierarchy", "expand", "min_arborescences"]

_ROOT_BATCH_CELLS = 1 << 22   # (root, node) cells per batch of the expansion


def contraction_hierarchy(num_nodes, src, dst, cost, tiebreak=None):
    """Contract cheapest-in-link cycles until no node has an in-link left (one node per
    strongly connected component).

    Returns ``(rounds, size, top)``: ``size`` is the number of hierarchy nodes (the original
    nodes 0..N-1 and one per contracted cycle); ``top[v]`` the hierarchy id of the final node
    holding original node v; ``rounds`` a list, bottom-up, of one tuple per contraction round
    ``(members, chosen, cycle, member_of)``: hierarchy ids of the nodes contracted in that
    round, the link (index into ``src``/``dst``) each had chosen, the hierarchy id of the
    cycle each joined, and ``member_of[v]``: the hierarchy id of the node of that round that
    holds original node v. Ties between equally cheap links go to the smaller ``tiebreak``,
    then to the smaller index.
    """
    import scipy.sparse as sp  # imported when first needed (start-up time)
    from scipy.sparse.csgraph import connected_components

    n = int(num_nodes)
    cost = np.asarray(cost, dtype=float)
    tiebreak = np.zeros(cost.size) if tiebreak is None else np.asarray(tiebreak, dtype=float)
    links = np.arange(cost.size)
    u, v, c = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64), cost.copy()
    member_of = np.arange(n)      # round node of each original node
    hid = np.arange(n)            # hierarchy id of each round node
    size = n
    rounds = []
    # each node's cheapest in-link: only nodes made in the last round need a new one (the
    # others keep theirs: contraction removes no link into a node outside a cycle)
    pred = np.arange(n)           # tail of the chosen link (itself: none)
    chosen = np.full(n, -1, dtype=np.int64)
    need = np.ones(n, dtype=bool)
    while True:
        sel = np.flatnonzero(need[v])
        order = sel[np.lexsort((links[sel], tiebreak[links[sel]], c[sel], v[sel]))]
        first = order[np.r_[True, v[order][1:] != v[order][:-1]]] if order.size else order
        pred[v[first]] = u[first]
        chosen[v[first]] = links[first]
        # reduced costs: a link into a node costs what it saves over the node's chosen link
        reduce = np.zeros(n)
        reduce[v[first]] = c[first]
        c = c - reduce[v]
        functional = sp.csr_matrix((np.ones(n, dtype=np.int8), (np.arange(n), pred)),
                                   shape=(n, n))
        count, group = connected_components(functional, directed=True, connection="strong")
        sizes = np.bincount(group, minlength=count)
        in_cycle = sizes[group] > 1
        if not in_cycle.any():
            break
        cyclic = np.flatnonzero(in_cycle)
        new_hid = np.empty(count, dtype=np.int64)
        new_hid[group[~in_cycle]] = hid[~in_cycle]
        cycles = sizes > 1
        new_hid[cycles] = size + np.arange(int(cycles.sum()))
        size += int(cycles.sum())
        rounds.append((hid[cyclic], chosen[cyclic], new_hid[group[cyclic]], hid[member_of]))
        u, v = group[u], group[v]
        keep = u != v
        u, v, c, links = u[keep], v[keep], c[keep], links[keep]
        member_of = group[member_of]
        hid = new_hid
        # survivors keep their choice (its tail renamed); cycles choose afresh
        new_pred = np.arange(count)
        new_chosen = np.full(count, -1, dtype=np.int64)
        alone = np.flatnonzero(~in_cycle)
        has = chosen[alone] >= 0
        new_pred[group[alone[has]]] = group[pred[alone[has]]]
        new_chosen[group[alone]] = chosen[alone]
        pred, chosen = new_pred, new_chosen
        need = cycles
        n = count
    return rounds, size, hid[member_of]


def expand(hierarchy, dst, entries, num_nodes):
    """Trees from a contraction hierarchy: ``entries`` (roots x original nodes... see below).

    ``entries`` is an array ``(R, num_nodes)`` of bools or a list: for each of R trees, the
    original node at which each top is entered (its root). Returns ``(R, num_nodes)``: the
    link into each node, -1 at the roots. Work is proportional to the contracted nodes (at
    most 2N) times R.
    """
    rounds, size, top = hierarchy
    count = len(entries)
    out = np.full((count, num_nodes), -1, dtype=np.int64)
    batch = max(1, _ROOT_BATCH_CELLS // max(size, 1))
    for start in range(0, count, batch):
        part = entries[start:start + batch]
        # entry[r, h]: the original node at which hierarchy node h is entered in tree r
        entry = np.zeros((len(part), size), dtype=np.int64)
        for i, roots in enumerate(part):
            entry[i, top[roots]] = roots
        for members, chosen, cycle, member_of in reversed(rounds):
            head = dst[chosen]
            cycle_entry = entry[:, cycle]
            inside = member_of[cycle_entry] == members[None, :]
            entry[:, members] = np.where(inside, cycle_entry, head[None, :])
            r, x = np.nonzero(~inside)
            out[start + r, head[x]] = chosen[x]
    return out


def min_arborescences(num_nodes, src, dst, cost, roots=None, tiebreak=None):
    """The cheapest spanning out-tree of every root (default: every node).

    Parameters
    ----------
    num_nodes : int
    src, dst : arrays of int
        Links (no self-loops); the graph must be strongly connected.
    cost : array of float
        Cost of each link, shared by all roots (``(links,)``: one contraction serves every
        root), or one row per root (``(len(roots), links)``: the roots' copies of the graph are
        contracted together).
    roots : array of int, optional
    tiebreak : array of float, optional
        Secondary cost deciding between equally cheap links (shared by all roots).

    Returns
    -------
    trees : numpy.ndarray
        ``(len(roots), num_nodes)``: the index of the link into each node, -1 at the root.
    costs : numpy.ndarray
        The cost of each tree.
    """
    n = int(num_nodes)
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    cost = np.asarray(cost, dtype=float)
    roots = np.arange(n) if roots is None else np.asarray(roots, dtype=np.int64)
    if cost.ndim == 1:
        hierarchy = contraction_hierarchy(n, src, dst, cost, tiebreak)
        _require_one_top(hierarchy, n)
        trees = expand(hierarchy, dst, [np.array([r]) for r in roots], n)
        return trees, _tree_costs(trees, cost)
    # one copy of the graph per root, with the root's costs; one hierarchy for all copies
    count, links = roots.size, src.size
    shift = (np.arange(count) * n)[:, None]
    tie = None if tiebreak is None else np.tile(tiebreak, count)
    hierarchy = contraction_hierarchy(count * n, (src + shift).ravel(), (dst + shift).ravel(),
                                      cost.ravel(), tie)
    _require_one_top(hierarchy, n, count)
    big = expand(hierarchy, (dst + shift).ravel(), [roots + np.arange(count) * n], count * n)[0]
    trees = big.reshape(count, n)
    trees = np.where(trees >= 0, trees - np.arange(count)[:, None] * links, -1)
    return trees, _tree_costs(trees, cost)


def _require_one_top(hierarchy, n, copies=1):
    top = hierarchy[2].reshape(copies, n)
    if np.any(top != top[:, :1]):
        v = int(np.flatnonzero(top[0] != top[0, 0])[0]) if np.any(top[0] != top[0, 0]) else 0
        raise NotStronglyConnectedError(
            f"spanning trees need a strongly connected topology, but nodes 0 and {v} are not "
            "in the same strongly connected component", pair=(0, v))


def _tree_costs(trees, cost):
    if cost.ndim == 1:
        return np.where(trees >= 0, cost[np.maximum(trees, 0)], 0.0).sum(axis=1)
    rows = np.arange(trees.shape[0])[:, None]
    return np.where(trees >= 0, cost[rows, np.maximum(trees, 0)], 0.0).sum(axis=1)
