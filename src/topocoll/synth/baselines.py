"""Classic baseline schedules on their own topologies: the unidirectional ring and the
bidirectional ring (half of every shard each way).

>>> from topocoll.topology import topology
>>> ring_allreduce(topology("uniring:5")).num_steps
8
>>> bidirectional_ring_allgather(topology("ring:6")).num_steps
5
"""

import numpy as np

from ..collectives import COPY, REDUCE
from ..errors import UnsupportedError
from ..schedule.model import Schedule, transfer_array
from ..schedule.transforms import concatenate
from .options import require_collective

__all__ = ["ring_schedule", "biring_schedule", "ring_allgather", "ring_reduce_scatter",
           "ring_allreduce", "bidirectional_ring_allgather", "bidirectional_ring_reduce_scatter",
           "bidirectional_ring_allreduce", "RING_COLLECTIVES"]

RING_COLLECTIVES = ("allgather", "reduce_scatter", "allreduce")


def _require_ring(topology, direction, algorithm):
    n = topology.num_nodes
    if n < 2:
        raise UnsupportedError(f"{algorithm} needs at least 2 nodes")
    nodes = np.arange(n)
    nxt = (nodes + direction) % n
    missing = np.flatnonzero(topology.pair_index(nodes, nxt) < 0)
    if missing.size:
        u = int(missing[0])
        sign = "+" if direction > 0 else "-"
        raise UnsupportedError(f"{algorithm} needs links i -> i{sign}1 mod N; {topology.name} "
                               f"has no link {u}->{int(nxt[u])}")


def _ring_pass(n, direction, lo, hi, op, shift):
    """Every shard x travels N-1 hops in ``direction``, starting at node x + shift*direction."""
    step = np.repeat(np.arange(1, n), n)
    shard = np.tile(np.arange(n), n - 1)
    src = (shard + direction * (shift + step - 1)) % n
    return transfer_array(step, src, (src + direction) % n, shard, lo, hi, op)


def ring_allgather(topology):
    """Classic ring allgather: shard x goes x -> x+1 -> ... in N-1 steps."""
    _require_ring(topology, +1, "ring")
    t = _ring_pass(topology.num_nodes, +1, 0.0, 1.0, COPY, 0)
    return Schedule(topology, "allgather", t, algorithm="ring")


def ring_reduce_scatter(topology):
    """Classic ring reduce-scatter: shard x starts at x+1 and is reduced along the ring to x."""
    _require_ring(topology, +1, "ring")
    t = _ring_pass(topology.num_nodes, +1, 0.0, 1.0, REDUCE, 1)
    return Schedule(topology, "reduce_scatter", t, algorithm="ring")


def ring_allreduce(topology):
    """Classic ring allreduce: ring reduce-scatter then ring allgather, 2(N-1) steps."""
    return concatenate(ring_reduce_scatter(topology), ring_allgather(topology), "allreduce",
                       algorithm="ring")


def _both_ways(topology, op, shift, collective):
    _require_ring(topology, +1, "biring")
    _require_ring(topology, -1, "biring")
    n = topology.num_nodes
    t = np.concatenate([_ring_pass(n, +1, 0.0, 0.5, op, shift),
                        _ring_pass(n, -1, 0.5, 1.0, op, shift)])
    return Schedule(topology, collective, t, algorithm="biring")


def bidirectional_ring_allgather(topology):
    """Bidirectional ring allgather: half of each shard each way round, N-1 steps."""
    return _both_ways(topology, COPY, 0, "allgather")


def bidirectional_ring_reduce_scatter(topology):
    """Bidirectional ring reduce-scatter: half of each shard each way round, N-1 steps."""
    return _both_ways(topology, REDUCE, 1, "reduce_scatter")


def bidirectional_ring_allreduce(topology):
    """Bidirectional ring allreduce: 2(N-1) steps."""
    return concatenate(bidirectional_ring_reduce_scatter(topology),
                       bidirectional_ring_allgather(topology), "allreduce", algorithm="biring")


def ring_schedule(topology, collective, *, root=None, progress=None):
    """The classic ring ``collective`` (allgather, reduce_scatter or allreduce) on ``uniring:N``
    (or any topology with the links ``i -> i+1 mod N``)."""
    coll = require_collective(collective, RING_COLLECTIVES, "ring")
    return {"allgather": ring_allgather, "reduce_scatter": ring_reduce_scatter,
            "allreduce": ring_allreduce}[coll.name](topology)


def biring_schedule(topology, collective, *, root=None, progress=None):
    """The bidirectional ring ``collective`` on ``ring:N`` (links ``i -> i+-1 mod N``)."""
    coll = require_collective(collective, RING_COLLECTIVES, "biring")
    return {"allgather": bidirectional_ring_allgather,
            "reduce_scatter": bidirectional_ring_reduce_scatter,
            "allreduce": bidirectional_ring_allreduce}[coll.name](topology)
