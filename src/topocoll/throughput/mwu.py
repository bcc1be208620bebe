"""Multiplicative weights for the uniform all-to-all: near-optimal dual lengths, fast.

A batched Garg-Koenemann / Fleischer sweep. Every step routes every source's traffic along its
shortest-path tree under the current link lengths (one all-sources Dijkstra), scaled so that
the busiest link fills once, and multiplies each link's length by ``1 + eps * flow / c``.
Lengths grow where traffic crowds, so the trees spread out, and every step's lengths give the
weak-duality bound ``sum_e c_e l_e / sum dist_l`` on ``lambda`` for free (the Dijkstra's
distances are that bound's denominator).

The lengths converge much faster than the flow: on random 4-regular graphs of 256 nodes a
hundred steps bound ``lambda`` within about 1e-4, while the averaged flow stalls 4e-3 to 8e-3
below it (``benchmarks/alltoall_methods.py``). After the main steps, *refining* steps with the
step size cut to a third, a tenth and a thirtieth settle the lengths: the trees stop flipping
between routes of nearly equal length, and the bound gains (at 1024 nodes of degree 4, from
7e-4 to 2e-4 above the optimum). So :func:`mwu_lengths` keeps the best lengths and the trees
of the last steps of both phases (the main phase's are diverse, the refined ones settled), and
column generation (:mod:`~topocoll.throughput.colgen`) turns them into an exact, certified
optimum.

>>> from topocoll.topology import topology
>>> run = mwu_lengths(topology("ring:8", bandwidth=1.0), steps=20, refine=9)
>>> round(run.bound, 6), len(run.trees)   # lambda = 8/N^2; 8 + 8 kept trees and the best one
(0.125, 17)
"""

from dataclasses import dataclass

import numpy as np

from ..errors import InputTypeError
from ..units import whole_number
from .dual import link_ids, shortest_path_trees

__all__ = ["MwuRun", "mwu_lengths", "tree_loads", "DEFAULT_STEPS", "DEFAULT_REFINE"]

#: Steps of :func:`mwu_lengths` unless asked (enough for the column generation to start close
#: to the optimum on the random regular graphs measured in ``benchmarks/alltoall.py``).
DEFAULT_STEPS = 100
#: Refining steps after them, in three equal parts at a third, a tenth and a thirtieth of the
#: step size (at 1024 nodes of degree 4 they cut the pairs whose route is in doubt from 18% to
#: 4% and the bound's excess from 7e-4 to 2e-4).
DEFAULT_REFINE = 90
#: The refining steps' sizes, as fractions of ``eps``.
REFINE_FRACTIONS = (1 / 3, 1 / 10, 1 / 30)


@dataclass
class MwuRun:
    """The outcome of :func:`mwu_lengths`.

    Attributes
    ----------
    lengths : numpy.ndarray
        The lengths (one per entry of ``topology.pairs``) with the least bound seen.
    bound : float
        ``sum_e c_e l_e / sum dist_l`` at those lengths: an upper bound on ``lambda`` (B/s).
    steps : int
        Steps taken.
    trees : list of numpy.ndarray
        Shortest-path trees of the last ``keep`` main steps, of the last ``keep`` refining steps
        (if any) and of ``lengths`` (last), as N x N predecessor arrays (``trees[k][s, v]``
        precedes v on source s's path; -1 at s).
    """

    lengths: np.ndarray
    bound: float
    steps: int
    trees: list


def tree_loads(pred, eid, num_links):
    """Link loads of one unit from every source to every other node along the trees ``pred``
    (N x N predecessors): the flow into v on source s's tree is the number of nodes below v.
    ``eid[u, v]`` is the pair-link of ``u -> v``."""
    k, n = pred.shape
    rows, nodes = np.nonzero(pred >= 0)
    flat = rows * n + nodes
    below = np.zeros(k * n)
    cur_rows, cur = rows, nodes
    while cur.size:                      # every path moves one link up per pass
        below += np.bincount(cur_rows * n + cur, minlength=k * n)
        cur = pred[cur_rows, cur]
        up = cur >= 0
        cur_rows, cur = cur_rows[up], cur[up]
    return np.bincount(eid[pred[rows, nodes], nodes], weights=below[flat],
                       minlength=num_links)


def mwu_lengths(topology, *, steps=DEFAULT_STEPS, eps=0.3, keep=8, refine=0, progress=None):
    """Near-optimal dual lengths of the all-to-all LP and the trees they route on.

    Parameters
    ----------
    topology : Topology
        Strongly connected, without switches.
    steps : int
        All-sources shortest-path sweeps (each one Dijkstra from every node).
    eps : float
        Length update ``l_e *= 1 + eps * flow_e / c_e`` (0.3 reached a given bound fastest
        among 0.3, 0.1 and 0.03 in ``benchmarks/alltoall_methods.py``).
    keep : int
        Trees of the last steps to keep, per phase (plus the trees of the best lengths).
    refine : int
        Refining sweeps after ``steps``, in three equal parts with the step size at a third, a
        tenth and a thirtieth of ``eps`` (0: none; the column generation uses
        :data:`DEFAULT_REFINE`).
    progress : callable, optional
        ``progress(step, steps + refine)``.

    Returns
    -------
    MwuRun
    """
    steps, keep = whole_number(steps, "steps"), whole_number(keep, "keep")
    refine = whole_number(refine, "refine", 0)
    if not 0 < float(eps) <= 1:
        raise InputTypeError(f"eps must be in (0, 1], got {eps!r}")
    psrc, pdst, cap, _ = topology.pairs
    n, m = topology.num_nodes, psrc.size
    c = cap / float(cap.max())
    eid = link_ids(topology)
    lengths = 1.0 / c
    best, best_lengths = np.inf, lengths
    total = steps + refine
    sizes = np.full(total, float(eps))
    if refine:
        parts = np.array_split(np.arange(steps, total), len(REFINE_FRACTIONS))
        for part, fraction in zip(parts, REFINE_FRACTIONS):
            sizes[part] = eps * fraction
    main, trees = [], []
    for step in range(total):
        dist, pred = shortest_path_trees(psrc, pdst, n, lengths)
        bound = float(c @ lengths) / float(dist.sum())
        if bound < best:
            best, best_lengths = bound, lengths.copy()
        trees.append(pred.astype(np.int32))
        del trees[:-keep]
        if step == steps - 1 and refine:
            main, trees = trees, []
        flow = tree_loads(pred, eid, m)
        flow /= float(np.max(flow / c))          # the busiest link fills once
        lengths = lengths * (1.0 + sizes[step] * flow / c)
        lengths /= float(lengths.max())           # the bound is scale-free; keep numbers tame
        if progress:
            progress(step + 1, total)
    _, pred = shortest_path_trees(psrc, pdst, n, best_lengths)
    trees = main + trees + [pred.astype(np.int32)]
    return MwuRun(lengths=best_lengths, bound=best * float(cap.max()), steps=total,
                  trees=trees)
