"""Schedule transforms: reverse in time, concatenate, relabel nodes, merge touching pieces.

>>> from topocoll.topology import topology
>>> from topocoll.schedule.model import Schedule, transfer_array
>>> ring = topology("uniring:3")
>>> from topocoll.schedule.verify import verify
>>> ag = Schedule(ring.transpose(), "allgather", transfer_array(   # links 1->0, 2->1, 0->2
...     [1, 1, 1, 2, 2, 2], [1, 2, 0, 0, 1, 2], [0, 1, 2, 2, 0, 1], [1, 2, 0, 1, 2, 0], 0.0, 1.0))
>>> rs = reverse(ag, "reduce_scatter", ring)
>>> verify(ag).valid, verify(rs).valid, rs.transfers[0].tolist()
(True, True, (1, 1, 2, 0, 0.0, 1.0, 1))
"""

import functools

import numpy as np

from ..collectives import COPY, REDUCE, collective as _collective
from ..errors import TopologyError, UnsupportedError
from .model import Schedule
from .symmetric import SymmetricSchedule, normalize

__all__ = ["reverse", "concatenate", "relabel", "merge_pieces", "reverse_symmetric",
           "concatenate_symmetric"]


@functools.singledispatch
def reverse(schedule, collective, topology=None, *, algorithm=None):
    """Run ``schedule`` backwards on the transposed topology.

    Every transfer ``(step t, u -> v)`` becomes ``(step S+1-t, v -> u)`` where ``S`` is the last
    step; its op becomes ``reduce`` if the new collective combines, else ``copy``. An allgather on
    G^T becomes a reduce-scatter on G, a broadcast a reduce, a scatter a gather.

    ``topology`` is the topology of the result (by default the transpose of the schedule's).
    A symmetric schedule gives a symmetric one (:func:`reverse_symmetric`, registered for
    its class).
    """
    coll = _collective(collective)
    topo = schedule.topology.transpose() if topology is None else topology
    if topo.num_nodes != schedule.topology.num_nodes:
        raise TopologyError(f"reverse: topology has {topo.num_nodes} nodes, the schedule "
                            f"{schedule.topology.num_nodes}")
    t = schedule.transfers.copy()
    last = schedule.last_step
    t["step"] = last + 1 - t["step"]
    t["src"], t["dst"] = schedule.transfers["dst"], schedule.transfers["src"]
    t["op"] = REDUCE if coll.combining else COPY
    return Schedule(topo, coll, t[::-1].copy(), root=schedule.root,
                    algorithm=algorithm or schedule.algorithm, meta=dict(schedule.meta),
                    routing=schedule.routing)


def concatenate(first, second, collective, *, algorithm=None):
    """``first`` then ``second`` on the same nodes; steps of ``second`` shifted past ``first``'s.

    The result lives on ``first``'s topology; e.g. reduce-scatter then allgather is an allreduce.
    Two symmetric schedules give a symmetric one
    (:func:`concatenate_symmetric`); beside another form, a symmetric one is unfolded.
    """
    if isinstance(first, SymmetricSchedule) and isinstance(second, SymmetricSchedule):
        return concatenate_symmetric(first, second, collective, algorithm=algorithm)
    first, second = first.unfolded(), second.unfolded()
    if first.topology.num_nodes != second.topology.num_nodes:
        raise TopologyError("concatenate: the schedules have different numbers of nodes")
    coll = _collective(collective)
    if coll.num_shards(first.num_nodes) != first.num_shards or \
            coll.num_shards(first.num_nodes) != second.num_shards:
        raise UnsupportedError(f"concatenate: {first.collective.name} and "
                               f"{second.collective.name} do not share the shards of {coll.name}")
    routings = {s.routing for s in (first, second)} - {None}
    if len(routings) > 1:
        raise UnsupportedError(f"concatenate: routings {' and '.join(sorted(routings))} differ")
    t2 = second.transfers.copy()
    t2["step"] += first.last_step
    # a direct transfer is its own route, so one routed part makes the whole routed
    return Schedule(first.topology, coll, np.concatenate([first.transfers, t2]),
                    root=first.root if coll.rooted else None,
                    algorithm=algorithm or first.algorithm,
                    meta={**second.meta, **first.meta}, routing=min(routings, default=None))


def relabel(schedule, mapping, topology=None):
    """Rename node ``v`` to ``mapping[v]`` (a permutation); shards owned by nodes follow them.

    For collectives whose shards belong to nodes (all but broadcast and reduce), shard ``x``
    becomes ``mapping[x]`` (alltoall: ``x*N+y`` becomes ``mapping[x]*N+mapping[y]``).
    """
    mapping = np.asarray(mapping, dtype=np.int64)
    n = schedule.num_nodes
    if mapping.shape != (n,) or not np.array_equal(np.sort(mapping), np.arange(n)):
        raise TopologyError(f"relabel: mapping must be a permutation of 0..{n - 1}")
    t = schedule.transfers.copy()
    t["src"] = mapping[t["src"]]
    t["dst"] = mapping[t["dst"]]
    name = schedule.collective.name
    if name == "alltoall":
        t["shard"] = mapping[t["shard"] // n] * n + mapping[t["shard"] % n]
    elif name not in ("broadcast", "reduce"):
        t["shard"] = mapping[t["shard"]]
    root = None if schedule.root is None else int(mapping[schedule.root])
    return schedule.replace(topology=topology or schedule.topology, transfers=t, root=root)


def merge_pieces(schedule):
    """Transfers of one step, link, shard and op whose byte ranges touch, merged into one.

    The result is ordered by step and, within a step, by where each merged transfer first
    appeared: the order of the transfers on each link is kept, which the link model (a queue
    per link) depends on.

    >>> from topocoll.topology import topology
    >>> from topocoll.schedule.model import transfer_array
    >>> s = Schedule(topology("ring:2"), "allgather", transfer_array(
    ...     [1, 1, 1], [0, 0, 1], [1, 1, 0], [0, 0, 1], [0.5, 0.0, 0.0], [1.0, 0.5, 1.0]))
    >>> merge_pieces(s).transfers[["src", "lo", "hi"]].tolist()
    [(0, 0.0, 1.0), (1, 0.0, 1.0)]
    """
    t = schedule.transfers
    if t.size < 2:
        return schedule
    order = np.lexsort((t["lo"], t["op"], t["shard"], t["dst"], t["src"], t["step"]))
    u = t[order]
    same = ((u["step"][1:] == u["step"][:-1]) & (u["src"][1:] == u["src"][:-1])
            & (u["dst"][1:] == u["dst"][:-1]) & (u["shard"][1:] == u["shard"][:-1])
            & (u["op"][1:] == u["op"][:-1]) & (np.abs(u["lo"][1:] - u["hi"][:-1]) < 1e-12))
    starts = np.flatnonzero(np.r_[True, ~same])
    merged = u[starts].copy()
    merged["hi"] = np.maximum.reduceat(u["hi"], starts)
    first = np.minimum.reduceat(order, starts)
    keep = np.lexsort((first, merged["step"]))
    return schedule.replace(transfers=merged[keep])


@reverse.register
def reverse_symmetric(schedule: SymmetricSchedule, collective, topology=None, *, algorithm=None):
    """:func:`reverse` of a symmetric schedule, symmetric: the
    representatives reversed (every row then leaves node 0), then put back into node 0 by
    :func:`~topocoll.schedule.symmetric.normalize` (the group of a topology is a group of its transpose)."""
    rev = reverse(schedule.representatives(), collective, topology, algorithm=algorithm)
    return SymmetricSchedule(rev.topology, rev.collective, schedule.group,
                             normalize(rev.transfers, schedule.group),
                             algorithm=rev.algorithm, meta=rev.meta)


def concatenate_symmetric(first, second, collective, *, algorithm=None):
    """:func:`concatenate` of two symmetric schedules of one
    group: ``second``'s steps shifted past ``first``'s."""
    if tuple(first.group.dims) != tuple(second.group.dims):
        raise TopologyError(f"concatenate: groups {list(first.group.dims)} and "
                            f"{list(second.group.dims)} differ")
    both = concatenate(first.representatives(), second.representatives(), collective,
                       algorithm=algorithm)
    return SymmetricSchedule(both.topology, both.collective, first.group, both.transfers,
                             algorithm=both.algorithm, meta=both.meta)
