"""Weighted spanning out-trees that pack to the optimum, chosen for a pipeline of K chunks
(docs/math.md section 9).

Two column generations over the tree program of :mod:`.master`:

1. **Fluid packing.** Minimise the most loaded link (one interval holding every depth). It
   starts from breadth-first (shortest-path) trees and prices trees by Edmonds' algorithm
   (:mod:`.arborescence`) under the link prices, also with a penalty on links off the root's
   shortest paths, and re-hangs nodes on shallower parents where that costs nothing; trees
   deeper than a cap H are refused. H starts at the diameter and grows until the packing
   reaches the exact optimum of :mod:`.bound`; if it does not within ``depth_slack`` extra
   levels, the cap is lifted and the pricing is exact, so the optimum is always reached.
2. **Pipeline.** Minimise the step-model ``T_B`` of the trees pipelined in K chunks (every
   interval of depths its own bound). Its pricing: the cheapest shortest-path tree of every
   root (exact among shortest-path trees: each node takes its cheapest in-link from the
   previous layer, the price of a link depending on its depth), and every used tree re-wired
   the same way within its own layers. The breadth-first trees' best mixture is BFB's
   optimum, so the result is never worse than BFB at any K; the fluid trees let it approach
   the optimum as K grows: ``T_B(K) = T_fluid + E / K`` for K >= H, where E is the extra cost of
   the H - 1 steps that fill and drain the pipeline.

With ``chunks=None`` K is chosen: 1 if one step per level is already within ``tolerance`` of
the optimum, else the smallest power of two (from the depth H up to ``max_chunks``) that is.

>>> from topocoll.topology import topology
>>> f = pack_trees(topology("kautz:2,3"), chunks=64)
>>> f.chunks, f.fluid_depth, round(f.ratio, 3)       # T_B = 1.007 x the optimum
(64, 4, 1.007)
>>> f = pack_trees(topology("torus:4x4"))           # BFB's balance: optimal in one chunk
>>> f.chunks, f.max_depth, f.ratio
(1, 4, 1.0)
"""

from dataclasses import dataclass, field

import numpy as np

from ...errors import UnsupportedError
from ...units import parse_size
from ...topology import topology as _topology
from ...topology.metrics import distance_matrix, require_strongly_connected
from ..bfb import bfb_allgather
from .arborescence import min_arborescences
from .bound import PackingBound, tree_packing_bound
from .master import TreeMaster, step_intervals

__all__ = ["Forest", "pack_trees", "tree_depths", "shortest_path_trees", "DEFAULT_TOLERANCE",
           "DEFAULT_MAX_CHUNKS", "DEFAULT_DEPTH_SLACK"]

DEFAULT_TOLERANCE = 0.01     # automatic K: T_B within 1% of the optimum
DEFAULT_MAX_CHUNKS = 256
DEFAULT_DEPTH_SLACK = 3      # levels beyond the diameter before the depth cap is lifted
_PENALTIES = (1.0, 4.0)      # off-shortest-path penalties, relative to the mean link price
_MAX_ROUNDS = 200            # pricing rounds per column generation
_REL = 1e-9                  # relative optimality tolerance of the column generations
_MIN_WEIGHT = 1e-9           # trees lighter than this (fraction of a shard) are dropped
_STALL, _STALL_REL = 5, 1e-7  # stop a pipeline column generation that gained this little


@dataclass
class Forest:
    """Weighted spanning out-trees of a topology and their pipeline.

    Attributes
    ----------
    topology : Topology
    roots : numpy.ndarray
        Root of each tree.
    parents : numpy.ndarray
        ``(trees, N)``: index into ``topology.pairs`` of the link into each node (-1 at the
        root).
    depths : numpy.ndarray
        ``(trees, N)``: depth of each node (0 at the root).
    weights : numpy.ndarray
        Fraction of its root's shard each tree carries (each root's sum to 1).
    chunks : int
        K: each tree's piece is sent as K chunks, one step apart.
    per_byte : float
        Step-model ``T_B`` of the pipelined allgather per byte of M.
    optimum : PackingBound
        The exact optimum (:func:`~.bound.tree_packing_bound`).
    fluid_depth : int
        Depth cap at which the fluid packing reached the optimum.
    fluid_ratio : float
        Most loaded link of the fluid packing over the optimum (1.0: the optimum is reached).
    rounds : int
        Pricing rounds of all column generations.
    history : dict
        ``{K: T_B per byte}`` for every K that was solved.
    """

    topology: object
    roots: np.ndarray
    parents: np.ndarray
    depths: np.ndarray
    weights: np.ndarray
    chunks: int
    per_byte: float
    optimum: PackingBound
    fluid_depth: int
    fluid_ratio: float
    rounds: int
    history: dict = field(default_factory=dict)

    @property
    def num_trees(self):
        return int(self.roots.size)

    @property
    def max_depth(self):
        return int(self.depths.max()) if self.depths.size else 0

    @property
    def ratio(self):
        """``T_B`` over the exact optimum."""
        return self.per_byte / self.optimum.per_byte

    def link_loads(self):
        """Shard fractions each link pair carries in total (all chunks)."""
        keep = self.parents >= 0
        w = np.broadcast_to(self.weights[:, None], self.parents.shape)[keep]
        return np.bincount(self.parents[keep], weights=w, minlength=self.topology.pairs[0].size)


class _Net:
    """What the column generations need of a topology, computed once."""

    def __init__(self, topology, optimum):
        self.topology = topology
        self.n = topology.num_nodes
        self.psrc, self.pdst, pbw, _ = topology.pairs
        self.scale = float(pbw.max())
        self.caps = pbw / self.scale
        side = optimum.critical
        out = side[self.psrc] & ~side[self.pdst]
        self.optimum = float(side.sum()) / float(self.caps[out].sum())   # in caps units
        self.dist = np.asarray(distance_matrix(topology), dtype=np.int64)
        self.diameter = int(self.dist.max())
        self.slack = None

    def off_path(self):
        """(roots, pairs): how many hops a link adds over the shortest path to its head."""
        if self.slack is None:
            self.slack = (self.dist[:, self.psrc] + 1 - self.dist[:, self.pdst]).astype(float)
        return self.slack

    def per_byte(self, objective, chunks):
        return objective / (chunks * self.n * self.scale)


def tree_depths(parents, psrc):
    """Depth of every node in every tree (rows of ``parents``: the pair into each node, -1 at
    the root), by pointer jumping.

    >>> tree_depths(np.array([[-1, 0, 1]]), np.array([0, 1])).tolist()   # a path 0 -> 1 -> 2
    [[0, 1, 2]]
    """
    parents = np.asarray(parents, dtype=np.int64)
    t, n = parents.shape
    rows = np.arange(t)[:, None]
    is_root = parents < 0
    up = np.where(is_root, np.arange(n)[None, :], psrc[np.maximum(parents, 0)])
    depth = (~is_root).astype(np.int64)
    for _ in range(int(np.ceil(np.log2(max(n, 2)))) + 1):
        depth = depth + depth[rows, up]
        up = up[rows, up]
    return depth


def _cheapest_in_layers(tree, pair, cost, heads, shape):
    """For every (tree, head), the candidate of least cost: returns ``(parents, costs)``."""
    order = np.lexsort((pair, cost, heads, tree))
    first = order[np.r_[True, (tree[order][1:] != tree[order][:-1]) |
                        (heads[order][1:] != heads[order][:-1])]] if order.size else order
    parents = np.full(shape, -1, dtype=np.int64)
    parents[tree[first], heads[first]] = pair[first]
    costs = np.bincount(tree[first], weights=cost[first], minlength=shape[0])
    return parents, costs


def shortest_path_trees(dist, psrc, pdst, depth_cost=None):
    """The cheapest shortest-path (breadth-first) tree of every root.

    A link whose head is at distance h + 1 from the root costs ``depth_cost[h, pair]`` (default
    0: ties go to the lowest pair); every node takes its cheapest in-link from the previous
    layer, which is exact among shortest-path trees. Returns ``(parents, depths, costs)``.
    """
    n = dist.shape[0]
    du = dist[:, psrc]
    root, pair = np.nonzero(dist[:, pdst] == du + 1)
    h = du[root, pair]
    if depth_cost is None:
        cost = np.zeros(root.size)
    else:
        cost = depth_cost[np.minimum(h, depth_cost.shape[0] - 1), pair]
    parents, costs = _cheapest_in_layers(root, pair, cost, pdst[pair], (n, n))
    return parents, np.asarray(dist, dtype=np.int64), costs


def schedule_trees(schedule):
    """The weighted trees of an allgather schedule in which every node receives every byte of
    every shard exactly once (as BFB's): the bytes between two consecutive ``lo``/``hi`` values
    of a shard travel down one tree. Returns ``(roots, parents, depths, weights)``;
    consecutive pieces with the same tree are merged. Raises :class:`UnsupportedError` if some
    byte reaches a node twice or never."""
    topo = schedule.topology
    n = topo.num_nodes
    t = schedule.transfers
    shard = t["shard"].astype(np.int64)
    values = np.r_[t["lo"], t["hi"], 0.0, 1.0]
    xs = np.unique(values)
    width = xs.size
    rank_lo, rank_hi = np.searchsorted(xs, t["lo"]), np.searchsorted(xs, t["hi"])
    ends = np.unique(np.r_[shard * width + rank_lo, shard * width + rank_hi,
                           np.arange(n) * width, np.arange(n) * width + width - 1])
    start = np.searchsorted(ends, shard * width + rank_lo)
    stop = np.searchsorted(ends, shard * width + rank_hi)
    count = stop - start
    piece = np.repeat(start, count) + np.arange(count.sum()) - np.repeat(np.cumsum(count) - count,
                                                                         count)
    who = np.repeat(np.arange(t.size), count)
    pieces = ends.size - 1
    owner = ends // width
    real = owner[:-1] == owner[1:]                 # a piece lies inside one shard
    weights = xs[ends[1:] % width] - xs[ends[:-1] % width]
    parents = np.full((pieces, n), -1, dtype=np.int64)
    parents[piece, t["dst"][who]] = topo.pair_index(t["src"][who], t["dst"][who])
    hits = np.bincount(piece * n + t["dst"][who], minlength=pieces * n).reshape(pieces, n)
    want = np.ones((pieces, n), dtype=np.int64)
    want[np.arange(pieces), owner[:-1]] = 0
    if np.any(hits[real] != want[real]):
        raise UnsupportedError("trees: the breadth-first schedule does not deliver every byte "
                               "exactly once; it cannot be read as trees")
    keep = np.flatnonzero(real)
    roots, parents, weights = owner[:-1][keep], parents[keep], weights[keep]
    # merge neighbouring pieces of one shard that use the same tree
    same = np.r_[False, (roots[1:] == roots[:-1]) & np.all(parents[1:] == parents[:-1], axis=1)]
    group = np.cumsum(~same) - 1
    merged = np.bincount(group, weights=weights)
    lead = np.flatnonzero(~same)
    parents = parents[lead]
    return roots[lead], parents, tree_depths(parents, topo.pairs[0]), merged


def _rewire(parents, depths, psrc, pdst, depth_cost):
    """Every tree re-wired within its own layers: each node takes its cheapest in-link from a
    node one level up. Returns ``(parents, costs)``."""
    tree, pair = np.nonzero(depths[:, pdst] == depths[:, psrc] + 1)
    h = depths[tree, psrc[pair]]
    cost = depth_cost[np.minimum(h, depth_cost.shape[0] - 1), pair]
    return _cheapest_in_layers(tree, pair, cost, pdst[pair], parents.shape)


def _shallower(parents, psrc, pdst, cost, tol=1e-12):
    """Re-hang nodes on shallower parents where that costs no more, until nothing changes.

    A node moves only to a parent strictly shallower than its old one, so following the new
    parents the old depths fall at every link: no cycle can form even when all move at once."""
    parents = parents.copy()
    while True:
        depth = tree_depths(parents, psrc)
        current = np.where(parents >= 0, cost[np.maximum(parents, 0)], 0.0)
        via = depth[:, psrc] + 1
        ok = (via < depth[:, pdst]) & (cost[None, :] <= current[:, pdst] + tol) & \
            (parents[:, pdst] >= 0)
        if not ok.any():
            return parents, depth
        r, p = np.nonzero(ok)
        order = np.lexsort((via[r, p], pdst[p], r))
        r, p = r[order], p[order]
        first = np.r_[True, (r[1:] != r[:-1]) | (pdst[p][1:] != pdst[p][:-1])]
        parents[r[first], pdst[p[first]]] = p[first]


def _fluid_candidates(net, price, cap):
    """Trees priced by Edmonds' algorithm under the link prices, then with penalties on links
    off the shortest paths (for roots whose tree is too deep), made shallower at no cost.
    Yields ``(roots, parents, depths, costs)``."""
    n = net.n
    parents, _ = min_arborescences(n, net.psrc, net.pdst, price)
    parents, depths = _shallower(parents, net.psrc, net.pdst, price)
    roots = np.arange(n)
    yield roots, parents, depths, _price(parents, price)
    deep = roots[depths.max(axis=1) > cap]
    if deep.size == 0:
        return
    scale = float(price.mean()) or 1.0
    for penalty in _PENALTIES:
        cost = price[None, :] + penalty * scale * net.off_path()[deep]
        parents, _ = min_arborescences(n, net.psrc, net.pdst, cost, roots=deep)
        parents, depths = _shallower(parents, net.psrc, net.pdst, price)
        yield deep, parents, depths, _price(parents, price)


def _price(parents, price):
    return np.where(parents >= 0, price[np.maximum(parents, 0)], 0.0).sum(axis=1)


def _fluid(net, pool, cap, report):
    """Fluid column generation with trees of depth at most ``cap``; returns the master."""
    master = TreeMaster(net.caps, net.n, step_intervals(cap, None))
    master.add(*pool)
    for _ in range(_MAX_ROUNDS):
        objective, _, prices, mu = master.solve()
        report()
        if objective <= net.optimum * (1 + _REL):
            break
        added = 0
        for roots, parents, depths, costs in _fluid_candidates(net, prices[0], cap):
            better = costs - mu[roots] < -_REL * objective
            added += master.add(roots[better], parents[better], depths[better])
        if not added:
            break
    return master


def _used(master, weights):
    keep = weights > _MIN_WEIGHT
    return master.roots[keep], master.parents[keep], master.depths[keep]


def _merge(*pools):
    return tuple(np.concatenate(parts) for parts in zip(*pools))


def _pipeline_round(net, master, objective, weights, prices, mu):
    """Add the columns of one pricing round of the pipeline program; returns how many."""
    depth_cost = master.depth_prices(prices)
    parents, depths, costs = shortest_path_trees(net.dist, net.psrc, net.pdst, depth_cost)
    roots = np.arange(net.n)
    better = costs - mu < -_REL * objective
    added = master.add(roots[better], parents[better], depths[better])
    used = np.flatnonzero(weights > _MIN_WEIGHT)
    if used.size:
        roots = master.roots[used]
        parents, costs = _rewire(master.parents[used], master.depths[used], net.psrc,
                                 net.pdst, depth_cost)
        better = costs - mu[roots] < -_REL * objective
        added += master.add(roots[better], parents[better], master.depths[used][better])
    return added


def _solve_pipeline(net, master, chunks, report):
    """Column generation on a pipeline master until the optimum's bound is met, no column
    helps, or the objective stalls; returns ``(objective, weights)``."""
    floor = net.optimum * chunks * (1 + _REL)
    seen = []
    for _ in range(_MAX_ROUNDS):
        objective, weights, prices, mu = master.solve()
        report()
        seen.append(objective)
        if objective <= floor or (len(seen) > _STALL and
                                  seen[-_STALL - 1] - objective <= _STALL_REL * objective):
            break
        if not _pipeline_round(net, master, objective, weights, prices, mu):
            break
    return objective, weights


def pipelined_cost(net, roots, parents, depths, weights, chunks):
    """The program's objective (``sum_a m_a U_a``) of given weighted trees at K chunks."""
    intervals = step_intervals(max(int(depths.max()), 1), chunks)
    tree, node = np.nonzero(parents >= 0)
    level = depths[tree, node] - 1
    total = 0.0
    for lo, hi, steps in intervals:
        inside = (level >= lo) & (level <= hi)
        load = np.bincount(parents[tree[inside], node[inside]], weights=weights[tree[inside]],
                           minlength=net.caps.size)
        total += steps * float((load / net.caps).max())
    return total


def _forest(net, roots, parents, depths, weights, *, chunks, objective, optimum, fluid, rounds,
            history):
    keep = weights > _MIN_WEIGHT
    roots, parents, depths, w = roots[keep], parents[keep], depths[keep], weights[keep]
    # each root's weights sum to 1 exactly (the solver's are within its tolerance)
    w = w / np.bincount(roots, weights=w, minlength=net.n)[roots]
    order = np.argsort(roots, kind="stable")
    return Forest(net.topology, roots[order], parents[order], depths[order], w[order], chunks,
                  net.per_byte(objective, chunks), optimum, fluid[0], fluid[1], rounds, history)


def _from_master(net, master, weights, *, chunks, objective, optimum, fluid, rounds, history):
    return _forest(net, master.roots, master.parents, master.depths, weights, chunks=chunks,
                   objective=objective, optimum=optimum, fluid=fluid, rounds=rounds,
                   history=history)


def _check(chunks, tolerance, max_chunks, depth_slack):
    def whole(value, name, low):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
            raise UnsupportedError(f"trees: {name} must be a whole number >= {low}, "
                                   f"got {value!r}")
        return int(value)
    if chunks is not None:
        chunks = whole(chunks, "chunks", 1)
    max_chunks = whole(max_chunks, "max_chunks", 1)
    depth_slack = whole(depth_slack, "depth_slack", 0)
    if not isinstance(tolerance, (int, float)) or isinstance(tolerance, bool) or \
            not 0 <= tolerance < 1:
        raise UnsupportedError(f"trees: tolerance must be a number in [0, 1), got "
                               f"{tolerance!r}")
    return chunks, float(tolerance), max_chunks, depth_slack


def _fluid_stage(net, seed, depth_slack, report):
    """Fluid packing, the depth cap rising from the diameter (by ``depth_slack``, then
    uncapped). Returns ``(pool, fluid, depth)``: the trees no deeper than ``depth`` (the
    fluid optimum's depth or the seed's), and ``(fluid depth, fluid cost / optimum)``."""
    sp_parents, sp_depths, _ = shortest_path_trees(net.dist, net.psrc, net.pdst)
    pool = _merge(seed, (np.arange(net.n), sp_parents, sp_depths))
    cap = net.diameter
    while True:
        limit = cap if cap <= net.diameter + depth_slack else net.n - 1
        master = _fluid(net, pool, limit, report)
        objective, weights, _, _ = master.solve()
        pool = _merge(pool, _used(master, weights))
        if objective <= net.optimum * (1 + _REL) or limit == net.n - 1:
            break
        cap += 1
    depth = int(_used(master, weights)[2].max())
    fluid = (depth, objective / net.optimum)
    depth = max(depth, int(seed[2].max()))
    keep = pool[2].max(axis=1) <= depth
    pool = tuple(part[keep] for part in pool)
    return pool, fluid, depth


def pack_trees(topology, chunks=None, *, tolerance=DEFAULT_TOLERANCE,
               max_chunks=DEFAULT_MAX_CHUNKS, depth_slack=DEFAULT_DEPTH_SLACK, size=None,
               progress=None):
    """Weighted spanning out-trees for a pipelined allgather (docs/math.md section 9).

    Parameters
    ----------
    topology : Topology or str
        Strongly connected, endpoint-only.
    chunks : int, optional
        K. Default: chosen (see the module docstring) from ``tolerance`` and ``max_chunks``.
    tolerance : float
        Automatic K: the relative excess of ``T_B`` over the optimum to reach (default 1%).
    max_chunks : int
        Automatic K: the largest K tried (default 256).
    depth_slack : int
        Levels beyond the diameter that the fluid packing may use before its depth cap is
        lifted (default 3).
    size : float, optional
        Automatic K for this buffer size M (bytes): the K (powers of two, at most
        ``max_chunks``) with the least predicted ``T_B + T_L``, where every step costs the
        largest link latency; more chunks lower ``T_B`` towards the optimum but add steps.
        Without it K is chosen by ``tolerance`` alone (large buffers).
    progress : callable, optional
        ``progress(done, total)``: max-flows of the bound, then solves of the programs.

    Returns
    -------
    Forest
    """
    topology = _topology(topology)
    chunks, tolerance, max_chunks, depth_slack = _check(chunks, tolerance, max_chunks,
                                                        depth_slack)
    size = None if size is None else parse_size(size, what="trees: size")
    topology.require_no_switches("trees")
    topology.require_nodes(2, "trees")
    require_strongly_connected(topology, "trees (spanning-tree packing)")
    optimum = tree_packing_bound(topology, "allgather", progress=progress)
    net = _Net(topology, optimum)

    # 0. BFB's trees: the best shortest-path mixture at one chunk; optimal on many graphs
    roots, parents, depths, weights = schedule_trees(bfb_allgather(topology, workers=1))
    seed = (roots, parents, depths)
    if pipelined_cost(net, roots, parents, depths, weights, 1) <= net.optimum * (1 + _REL):
        k = 1 if chunks is None else chunks
        cost = pipelined_cost(net, roots, parents, depths, weights, k)
        return _forest(net, roots, parents, depths, weights, chunks=k, objective=cost,
                       optimum=optimum, fluid=(net.diameter, 1.0), rounds=0,
                       history={k: net.per_byte(cost, k)})

    # 1. fluid packing, the depth cap rising from the diameter
    solves = _Solves(progress)
    pool, fluid, depth = _fluid_stage(net, seed, depth_slack, solves.report)

    # 2. the pipeline at K (or at the K chosen)
    pipeline = _Pipeline(net, depth, solves.report)
    if chunks is not None:
        objective, master, weights = pipeline.solve(chunks, pool)
        history = {chunks: net.per_byte(objective, chunks)}
    else:
        chunks, objective, master, weights, history = _choose_chunks(
            pipeline, pool, tolerance=tolerance, max_chunks=max_chunks, size=size)
    return _from_master(net, master, weights, chunks=chunks, objective=objective,
                        optimum=optimum, fluid=fluid, rounds=solves.count, history=history)


class _Solves:
    """Counts the programs solved, passing the count to ``progress(done, None)``."""

    def __init__(self, progress):
        self.progress = progress
        self.count = 0

    def report(self):
        self.count += 1
        if self.progress:
            self.progress(self.count, None)


class _Pipeline:
    """The pipeline programs over trees no deeper than ``depth``."""

    def __init__(self, net, depth, report):
        self.net, self.depth, self.report = net, depth, report

    def solve(self, k, pool):
        """``(objective, master, weights)`` of the pipeline at K = ``k`` over the trees of
        ``pool``."""
        master = TreeMaster(self.net.caps, self.net.n, step_intervals(self.depth, k))
        master.add(*pool)
        objective, weights = _solve_pipeline(self.net, master, k, self.report)
        return objective, master, weights


def _choose_chunks(pipeline, pool, *, tolerance, max_chunks, size):
    """The automatic K: without a size, K doubles until ``T_B`` is within ``tolerance`` of the
    optimum; with one, while the predicted ``T_B + T_L`` still falls and ``T_B`` is above the
    optimum. Returns ``(K, objective, master, weights, history)`` of the best K."""
    net, depth = pipeline.net, pipeline.depth
    history = {}
    target = net.optimum * (1 + tolerance)
    latency = float(net.topology.latency.max()) if net.topology.num_links else 0.0

    def key(objective, k):
        if size is None:
            return objective / k
        return net.per_byte(objective, k) * size + (depth + k - 1) * latency

    k = 1
    objective, master, weights = pipeline.solve(k, pool)
    history[k] = net.per_byte(objective, k)
    best = (key(objective, k), k, master, weights, objective)
    improved = True
    while k < max_chunks and (objective / k > target if size is None else
                              improved and objective / k > net.optimum * (1 + _REL)):
        k = min(max_chunks, max(2 * k, 1 << int(np.ceil(np.log2(max(depth, 2))))))
        pool = _merge(pool, _used(master, weights))
        objective, master, weights = pipeline.solve(k, pool)
        history[k] = net.per_byte(objective, k)
        improved = key(objective, k) < best[0] * (1 - _REL)
        if improved:
            best = (key(objective, k), k, master, weights, objective)
    _, k, master, weights, objective = best
    return k, objective, master, weights, history
