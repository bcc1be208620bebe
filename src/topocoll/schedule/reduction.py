"""The reduction cost gamma: seconds per byte a node spends combining what it receives
(docs/math.md section "The reduction cost gamma").

A ``reduce`` transfer of ``b`` bytes into node ``v`` makes ``v`` combine ``b`` bytes with its
partial sum. Computation and communication do not overlap at a node (Zhao et al., NSDI 2025,
appendix B.4): in the step model each step adds ``gamma x R_t``, ``R_t`` the most bytes any node
reduces in step t, so ``T_gamma = gamma x sum_t R_t``; in the link model a node reduces the
chunks it receives one after another, each taking ``gamma x bytes`` after it arrives, before the
partial sum can be sent on (:func:`reduce_finish`). ``gamma = 0`` (the default everywhere)
leaves every price as it was.

The facts (docs/math.md): ``T_gamma <= gamma x B x T_B^red`` (theorem 8 of Zhao et al.; ``B``
the largest bandwidth into a node, ``T_B^red`` the bandwidth time of the steps that reduce) and
``T_gamma >= gamma (N-1) M / N`` for every combining collective; for a bandwidth-optimal
allreduce that reduce-scatters then allgathers, both are equalities and
``T_B + T_gamma = 2 (N-1) M / (N B')`` with ``B' = B / (1 + gamma B / 2)``
(:func:`allreduce_gamma_time`).

>>> from topocoll.topology import topology
>>> from topocoll.synth import generate
>>> s = generate(topology("uniring:4", bandwidth=1e9), "allreduce", "ring")
>>> steps, per_byte = reduction_step_loads(s)
>>> steps.tolist(), per_byte.tolist()        # each of 3 steps reduces M/4 at every node
([1, 2, 3], [0.25, 0.25, 0.25])
>>> round(allreduce_gamma_time(4, 4e9, 1e9, 1e-10), 12)   # 6 s of links + 0.3 s of reducing
6.3
"""

import numpy as np

from ..collectives import REDUCE
from ..errors import UnitError
from ..units import parse_bandwidth

__all__ = ["reduction_step_loads", "reduction_time", "parse_gamma", "reduce_finish",
           "allreduce_gamma_time", "node_in_bandwidth"]


def parse_gamma(value, *, what="gamma"):
    """Seconds per byte reduced, from a reduction throughput (``"100GB/s"``: gamma is its
    inverse) or a number of seconds per byte (``1e-11``, ``"1e-11"``, ``0``). None gives 0.

    >>> parse_gamma("100GB/s"), parse_gamma(2e-11), parse_gamma(None)
    (1e-11, 2e-11, 0.0)
    """
    if value is None:
        return 0.0
    if isinstance(value, str) and "/s" not in value and "ps" not in value:
        try:
            value = float(value)
        except ValueError:
            raise UnitError(f"{what} {value!r} is neither a reduction throughput such as "
                            "100GB/s nor seconds per byte") from None
    if isinstance(value, str):
        return 1.0 / parse_bandwidth(value, what=what)
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
        raise UnitError(f"{what} must be seconds per byte or a throughput, not {value!r}")
    value = float(value)
    if not np.isfinite(value) or value < 0:
        raise UnitError(f"{what} must be finite and non-negative seconds per byte, got {value!r}")
    return value


def reduction_step_loads(schedule):
    """Per step that reduces: ``(step, R_t per byte of M)``, ``R_t`` the most bytes any node
    receives into a reduction in that step. A symmetric schedule's representatives stand for
    one transfer into every node each, so a node reduces their sum."""
    none = np.zeros(0, dtype=np.int64), np.zeros(0)
    if not schedule.collective.combining:      # copies only (compact forms too)
        return none
    rows = schedule.representatives()
    t = rows.transfers
    red = t[t["op"] == REDUCE]
    if red.size == 0:
        return none
    frac = rows.collective.shard_fraction(rows.num_nodes)
    nbytes = (red["hi"] - red["lo"]) * frac
    step = red["step"].astype(np.int64)
    orbits = schedule.group is not None      # symmetric: every node receives every orbit once
    key = step if orbits else step * rows.num_nodes + red["dst"]
    ukey, inverse = np.unique(key, return_inverse=True)
    per_node = np.bincount(inverse, weights=nbytes, minlength=ukey.size)
    steps = ukey if orbits else ukey // rows.num_nodes
    starts = np.flatnonzero(np.r_[True, steps[1:] != steps[:-1]])
    return steps[starts], np.maximum.reduceat(per_node, starts)


def reduction_time(schedule, size, gamma):
    """``T_gamma`` (seconds) of ``schedule`` for a buffer of ``size`` bytes: ``gamma`` times
    the sum over steps of the most bytes a node reduces in the step."""
    gamma = parse_gamma(gamma)
    if gamma == 0:
        return 0.0
    return float(reduction_step_loads(schedule)[1].sum()) * float(size) * gamma


def node_in_bandwidth(topology):
    """The largest total bandwidth into one node (bytes/s): ``B`` of theorem 8."""
    if topology.num_links == 0:
        return 0.0
    return float(np.bincount(topology.dst, weights=topology.bandwidth,
                             minlength=topology.num_nodes).max())


def allreduce_gamma_time(nodes, size, node_bandwidth, gamma):
    """``T_B + T_gamma`` of a bandwidth-optimal allreduce of ``size`` bytes on ``nodes`` nodes
    whose bandwidth is ``node_bandwidth`` each (corollary 8.1 of Zhao et al.):
    ``2 (N-1) M / (N B')`` with ``B' = B / (1 + gamma B / 2)``."""
    n, m, b = int(nodes), float(size), float(node_bandwidth)
    b_prime = b / (1.0 + parse_gamma(gamma) * b / 2.0)
    return 2.0 * (n - 1) * m / (n * b_prime)


def reduce_finish(node, arrive, nbytes, free, gamma):
    """When each of the chunks ``arrive``-ing at ``node`` (one step's reduce transfers) is
    reduced: each node reduces one chunk at a time in arrival order, ``gamma x nbytes`` each,
    from when it arrives and the node's previous reduction ends. ``free`` (per node, when its
    last reduction ends) is updated in place. Returns the finish times in the given order.

    >>> free = np.zeros(2)
    >>> reduce_finish(np.array([0, 0, 1]), np.array([1.0, 1.0, 2.0]),
    ...               np.array([10.0, 10.0, 10.0]), free, 0.1).tolist()
    [2.0, 3.0, 3.0]
    """
    out = np.empty(arrive.size)
    if arrive.size == 0:
        return out
    order = np.lexsort((np.arange(arrive.size), arrive, node))
    sn = node[order]
    first = np.r_[0, np.flatnonzero(sn[1:] != sn[:-1]) + 1]
    rank = np.arange(order.size) - np.repeat(first, np.diff(np.r_[first, order.size]))
    for r in range(int(rank.max()) + 1):   # each node appears once per rank
        sel = order[rank == r]
        v = node[sel]
        done = np.maximum(arrive[sel], free[v]) + gamma * nbytes[sel]
        free[v] = done
        out[sel] = done
    return out
