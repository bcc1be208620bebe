"""Earliest arrivals, distances and the combinatorial makespan bound of the TEN ILP
(:mod:`.ilp`; docs/math.md section 5).

Slots are int64 and :data:`INF` stands for "never". Links are FIFO, so waiting never helps and a
Bellman-Ford fixed point gives the exact earliest slot each node can hold each chunk.

>>> import numpy as np
>>> src, dst, steps = np.array([0, 1, 2]), np.array([1, 2, 0]), np.ones(3, np.int64)
>>> distances(3, src, dst, steps).tolist()                      # ring 0 -> 1 -> 2 -> 0
[[0, 1, 2], [2, 0, 1], [1, 2, 0]]
>>> pre, need = np.eye(3, dtype=bool), ~np.eye(3, dtype=bool)
>>> first = earliest(np.where(pre, 0, INF), src, dst, steps)
>>> slot_lower_bound(first, need, src, dst, steps)
2
"""

import numpy as np

from ...errors import NotStronglyConnectedError

__all__ = ["INF", "earliest", "distances", "to_needed", "check_reachable", "slot_lower_bound"]

#: "Never" as a slot: large, but far from int64 overflow when slots are added.
INF = 1 << 40


def earliest(avail, src, dst, steps, free=None):
    """Earliest slot each (row, node) can be held, starting from ``avail`` (:data:`INF` = not
    held) with sends on link ``l`` starting no earlier than ``free[l]``: Bellman-Ford over all
    rows at once (links are FIFO, so waiting never helps and the fixed point is exact)."""
    e = avail.astype(np.int64).copy()
    if src.size == 0 or e.size == 0:
        return e
    floor = np.zeros(src.size, dtype=np.int64) if free is None else free
    for _ in range(avail.shape[1]):
        held = e[:, src]
        arrive = np.maximum(held, floor) + steps
        arrive[held >= INF] = INF
        new = e.copy()
        np.minimum.at(new.T, dst, arrive.T)
        if np.array_equal(new, e):
            break
        e = new
    return e


def distances(num_nodes, src, dst, steps):
    """Node-to-node distances in slots (:data:`INF` if unreachable)."""
    start = np.full((num_nodes, num_nodes), INF, dtype=np.int64)
    np.fill_diagonal(start, 0)
    return earliest(start, src, dst, steps)


def to_needed(need, dist):
    """``g[c, n]`` = slots from ``n`` to the nearest node needing chunk ``c`` (``need[c, m]``),
    from the node distances ``dist``."""
    if need.size == 0:
        return np.zeros(need.shape, dtype=np.int64)
    return np.where(need[:, None, :], dist[None, :, :], INF).min(axis=2)


def check_reachable(first, need):
    """Raise :class:`~topocoll.errors.NotStronglyConnectedError` (with ``.pair``) if a needed
    ``(chunk, node)`` is never reached: ``first`` from :func:`earliest`."""
    bad = np.argwhere(need & (first >= INF))
    if bad.size:
        c, n = (int(v) for v in bad[0])
        raise NotStronglyConnectedError(
            f"chunk {c} can never reach node {n}: no path from its holders", pair=(c, n))


def slot_lower_bound(first, need, src, dst, steps):
    """A proven lower bound on the makespan in slots, from the earliest holds ``first``
    (:func:`earliest`) and the needed ``(chunk, node)`` pairs: the latest needed earliest
    arrival, raised for every node to the first horizon at which its in-links can deliver all
    the chunks it misses (link ``l`` delivers at most ``(T - s_l) // k_l`` of them, ``s_l`` the
    earliest slot its sender can hold one of them); 0 when nothing is needed."""
    if not need.any():
        return 0
    bound = int(first[need].max())
    for n in np.flatnonzero(need.any(axis=0)):
        chunks = np.flatnonzero(need[:, n])
        links = np.flatnonzero(dst == n)
        start = first[chunks][:, src[links]].min(axis=0)
        k = steps[links]
        t = bound
        while np.maximum(0, (t - start) // k).sum() < chunks.size:
            t += 1
        bound = t
    return bound
