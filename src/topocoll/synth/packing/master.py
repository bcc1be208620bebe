"""The linear program over weighted spanning trees (the master of the column generation).

Every tree is rooted at some node and carries a fraction of its root's shard; the weights of
each root's trees sum to 1. A tree's shard piece is cut into K chunks that follow each other
one step apart: chunk c crosses a link whose head is at depth h + 1 in step c + h (h = 0 for
the root's own links). In step s the links of depth h carry the chunks ``s - h`` that exist,
so step s sees the depths ``h`` with ``0 <= s - h < K``: an interval. Steps with the same
interval cost the same; the program has one bound ``U_a`` per distinct interval ``a`` (with its
number of steps ``m_a``):

    minimise    sum_a m_a U_a
    subject to  sum_T w_T [e in T at a depth in a] <= c_e U_a     for every interval a, link e
                sum_{T rooted at u} w_T = 1                        for every root u

which is ``K N / M`` times the step-model ``T_B`` of the pipelined schedule (docs/math.md
section 9). With one interval holding every depth and ``m = 1`` it is the fluid packing
problem, whose optimum is the cut bound of :mod:`.bound`.
"""

import numpy as np

from ...errors import UnsupportedError
from ...highs import solver

__all__ = ["step_intervals", "TreeMaster"]


def step_intervals(depth, chunks):
    """The distinct intervals of link depths ``(lo, hi, steps)`` of a pipeline of ``chunks``
    chunks over trees of at most ``depth`` levels of links (``chunks=None``: the fluid limit,
    one interval of every depth).

    >>> step_intervals(3, 4)      # steps 0..5: {0}, {0,1}, {0,1,2} twice, {1,2}, {2}
    [(0, 0, 1), (0, 1, 1), (0, 2, 2), (1, 2, 1), (2, 2, 1)]
    """
    if chunks is None:
        return [(0, depth - 1, 1)]
    # step s covers depths max(0, s - K + 1) .. min(D - 1, s); listed by runs of s in closed
    # form (O(D) entries, no loop over the K chunks: K may be large)
    d, k = depth, chunks
    out = [(0, s, 1) for s in range(min(d, k))]                # filling: 0..s
    if k > d:
        out[-1] = (0, d - 1, k - d + 1)                        # full: every depth, K - D + 1 steps
    else:
        out += [(s - k + 1, s, 1) for s in range(k, d)]        # a window of K depths slides
    out += [(s - k + 1, d - 1, 1) for s in range(max(d, k), d + k - 1)]   # draining
    return sorted(out)


class TreeMaster:
    """The master program, grown column by column (HiGHS, warm-started).

    Parameters
    ----------
    caps : array of float
        Capacity of each link pair (any common unit).
    num_nodes : int
    intervals : list of (lo, hi, steps)
        From :func:`step_intervals`.
    """

    def __init__(self, caps, num_nodes, intervals):
        self.caps = np.asarray(caps, dtype=float)
        self.num_pairs = self.caps.size
        self.num_nodes = num_nodes
        self.intervals = intervals
        self.max_depth = max(hi for _, hi, _ in intervals) + 1
        # depth h -> the intervals holding it
        self.holding = [np.array([i for i, (lo, hi, _) in enumerate(intervals) if lo <= h <= hi],
                                 dtype=np.int64) for h in range(self.max_depth)]
        self.h = solver(solver="simplex", simplex_strategy=4)
        num_rows = len(intervals) * self.num_pairs + num_nodes
        lower = np.r_[np.full(num_rows - num_nodes, -np.inf), np.ones(num_nodes)]
        upper = np.r_[np.zeros(num_rows - num_nodes), np.ones(num_nodes)]
        self.h.addRows(num_rows, lower, upper, 0, np.zeros(0, dtype=np.int32),
                       np.zeros(0, dtype=np.int32), np.zeros(0))
        # one U per interval: -c_e in the rows of its interval
        count = len(intervals)
        idx = (np.arange(count)[:, None] * self.num_pairs + np.arange(self.num_pairs)).ravel()
        vals = np.tile(-self.caps, count)
        starts = np.arange(count, dtype=np.int32) * self.num_pairs
        self.h.addCols(count, np.array([m for _, _, m in intervals], dtype=float),
                       np.zeros(count), np.full(count, np.inf), idx.size, starts,
                       idx.astype(np.int32), vals)
        self._roots, self._parents, self._depths = [], [], []
        self._cache = None
        self._keys = set()

    def _stacked(self):
        if self._cache is None:
            n = self.num_nodes
            self._cache = (np.concatenate(self._roots) if self._roots else np.zeros(0, int),
                           np.vstack(self._parents) if self._parents else np.zeros((0, n), int),
                           np.vstack(self._depths) if self._depths else np.zeros((0, n), int))
        return self._cache

    @property
    def roots(self):
        """Root of every tree, in column order."""
        return self._stacked()[0]

    @property
    def parents(self):
        """``(trees, N)``: the pair into each node, -1 at the root."""
        return self._stacked()[1]

    @property
    def depths(self):
        """``(trees, N)``: each node's depth."""
        return self._stacked()[2]

    @property
    def num_trees(self):
        return int(sum(r.size for r in self._roots))

    def add(self, roots, parents, depths):
        """Add trees (one per row of ``parents``: the pair into each node, -1 at the root;
        ``depths``: each node's depth) that are new and no deeper than the program allows.
        Returns how many were added."""
        roots = np.asarray(roots, dtype=np.int64)
        parents = np.asarray(parents, dtype=np.int64)
        depths = np.asarray(depths, dtype=np.int64)
        fits = depths.max(axis=1, initial=0) <= self.max_depth
        keep = []
        for i in np.flatnonzero(fits):
            key = parents[i].tobytes()
            if key not in self._keys:
                self._keys.add(key)
                keep.append(i)
        if not keep:
            return 0
        keep = np.array(keep)
        roots, parents, depths = roots[keep], parents[keep], depths[keep]
        count = roots.size
        tree, node = np.nonzero(parents >= 0)
        pair = parents[tree, node]
        level = depths[tree, node] - 1
        cols, rows = [], []
        for a, (lo, hi, _) in enumerate(self.intervals):
            inside = (level >= lo) & (level <= hi)
            cols.append(tree[inside])
            rows.append(a * self.num_pairs + pair[inside])
        cols.append(np.arange(count))
        rows.append(len(self.intervals) * self.num_pairs + roots)
        cols, rows = np.concatenate(cols), np.concatenate(rows)
        order = np.lexsort((rows, cols))
        starts = np.searchsorted(cols[order], np.arange(count))
        self.h.addCols(count, np.zeros(count), np.zeros(count), np.full(count, np.inf),
                       rows.size, starts.astype(np.int32), rows[order].astype(np.int32),
                       np.ones(rows.size))
        self._roots.append(roots)
        self._parents.append(parents)
        self._depths.append(depths)
        self._cache = None
        return count

    def solve(self):
        """Solve; returns ``(objective, weights of the trees, link prices per interval
        (intervals x pairs, >= 0), root prices)``."""
        self.h.run()
        status = self.h.getModelStatus()
        if status.name != "kOptimal":
            raise UnsupportedError(f"trees: HiGHS could not solve the tree program "
                                   f"({status.name})")
        sol = self.h.getSolution()
        x = np.asarray(sol.col_value)
        y = np.asarray(sol.row_dual)
        count = len(self.intervals)
        split = count * self.num_pairs
        prices = np.maximum(-y[:split], 0.0).reshape(count, self.num_pairs)
        return float(self.h.getInfo().objective_function_value), x[count:], prices, y[split:]

    def depth_prices(self, prices):
        """The price of a link used at each depth: ``(depths, pairs)``."""
        return np.stack([prices[self.holding[h]].sum(axis=0) for h in range(self.max_depth)])
