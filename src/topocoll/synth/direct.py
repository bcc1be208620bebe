"""TACOS's Direct baseline: every node sends each shard straight to every node that needs it,
the network routing the messages (Won et al., TACOS, MICRO 2024, sections III-B and VII-C).

A collective library's Direct algorithm ignores the topology: for an all-gather every rank
sends its shard to every other rank at once, for a reduce-scatter every rank sends rank ``y``
its contribution to shard ``y`` (reduced on arrival), and an all-reduce is the two in sequence.
The rooted collectives are one step too (TACOS's Tables IV and V): a broadcast sends the root's
whole buffer to every node, a scatter shard ``y`` to node ``y``, a gather every node's shard
to the root and a reduce every node's whole buffer to the root (reduced on arrival).
On a fully connected network that is one step per phase on every link at once; elsewhere the
routes pile up on the links between (TACOS's Fig. 6: 12.9x slower than Ring on a 100-node ring).
The schedules are routed (docs/format.md, "Routed transfers") along ``"shortest"`` routes or,
on a mesh, torus or ring, the dimension-order ``"xy"`` routes TACOS uses on its meshes (the same
routes there); their congestion is what the step and link models price.

TACOS's other baseline, Ring (a logical ring over all NPUs in rank order, routed over the
physical network), is the ``rankring`` generator
(:func:`~topocoll.synth.routed_baselines.rankring_schedule`).

>>> from topocoll.topology import topology
>>> s = direct_schedule(topology("mesh:3x3"), "allreduce", routing="xy")
>>> s.num_steps, s.routing, s.num_transfers
(2, 'xy', 144)
>>> direct_schedule(topology("complete:4"), "allgather").routing is None
True
"""

import numpy as np

from ..collectives import COPY, REDUCE
from ..errors import InputTypeError, UnsupportedError
from ..schedule.model import Schedule
from ..schedule.routing import unlinked
from ..schedule.traffic import RowSink, TrafficSink
from ..topology.model import Topology
from ..topology.routes import ROUTINGS, routes_of
from .options import node_root, require_collective

__all__ = ["DIRECT_COLLECTIVES", "direct_schedule", "direct_traffic", "direct_transfers",
           "check_routing"]

DIRECT_COLLECTIVES = ("allgather", "reduce_scatter", "allreduce", "broadcast", "reduce", "scatter",
                      "gather")


def check_routing(routing, algorithm):
    """``routing`` checked: one of :data:`~topocoll.topology.routes.ROUTINGS`.

    >>> check_routing("xy", "direct")
    'xy'
    >>> check_routing("ecmp", "direct")
    Traceback (most recent call last):
    ...
    topocoll.errors.UnsupportedError: direct: routing must be one of shortest, xy, got 'ecmp'
    """
    if routing not in ROUTINGS:
        raise UnsupportedError(f"{algorithm}: routing must be one of {', '.join(ROUTINGS)}, "
                               f"got {routing!r}")
    return routing


def _nodes(topology):
    if not isinstance(topology, Topology):
        raise InputTypeError(f"direct: topology must be a Topology, got "
                             f"{type(topology).__name__}")
    topology.require_no_switches("direct")
    topology.require_nodes(2, "direct")
    return topology.num_nodes


def _root(coll, root, n):
    """The root of a rooted ``coll`` (default 0), checked; None for the others."""
    if not coll.rooted:
        return None
    return node_root(root, n, "direct")


def _rooted_rows(out, n, coll, root):
    """The one step of a rooted collective: the root to every other node (broadcast: the
    buffer, scatter: shard y to y) or every other node to the root (gather: shard x from x,
    reduce: the buffer, reduced on arrival)."""
    others = np.delete(np.arange(n, dtype=np.int64), root)
    ours = np.full(n - 1, root, dtype=np.int64)
    src, dst = (ours, others) if coll.name in ("broadcast", "scatter") else (others, ours)
    shard = {"broadcast": 0, "reduce": 0, "scatter": dst, "gather": src}[coll.name]
    out.add(1, src, dst, shard, op=REDUCE if coll.name == "reduce" else COPY)
    return src, dst


def _direct_rows(out, topology, coll, root=None):
    """Add the rows of :func:`direct_schedule` to the sink ``out``: step 1 the reduce-scatter
    (every ``x -> y`` carries x's part of shard y), then the all-gather (every ``x -> y``
    carries shard x); a rooted collective's one step. Returns the pairs used, ``(src, dst)``."""
    n = _nodes(topology)
    if coll.rooted:
        return _rooted_rows(out, n, coll, _root(coll, root, n))
    src, dst = np.nonzero(~np.eye(n, dtype=bool))
    step = 1
    if coll.name != "allgather":
        out.add(step, src, dst, dst, op=REDUCE)
        step += 1
    if coll.name != "reduce_scatter":
        out.add(step, src, dst, src, op=COPY)
    return src, dst


def _policy(topology, src, dst, routing):
    """``routing`` where some pair has no link, else None (then the policy is not needed);
    the routes are made now, so that a refusal comes at once."""
    if not unlinked(topology, src, dst).any():
        return None
    routes_of(topology, routing)
    return routing


def direct_schedule(topology, collective, *, root=None, progress=None, routing="shortest"):
    """Direct sends: every node straight to every other, through routes (see the module).

    Parameters
    ----------
    topology : Topology
        Any strongly connected topology without switches (unwind them first), ``N >= 2``.
    collective : str
        ``allgather`` (step 1: ``x`` sends shard ``x`` to every ``y``), ``reduce_scatter``
        (step 1: ``x`` reduces its part of shard ``y`` into ``y``), ``allreduce`` (the two,
        steps 1 and 2), or a rooted one in step 1: ``broadcast`` (the root sends its buffer to
        every ``y``), ``scatter`` (the root sends shard ``y`` to ``y``), ``gather`` (``x``
        sends shard ``x`` to the root) or ``reduce`` (``x`` reduces its buffer into the root).
    root : int, optional
        The root of a rooted collective (default 0).
    routing : {"shortest", "xy"}
        The routes of the transfers between nodes that share no link: shortest paths, or
        dimension order (a mesh, torus or ring only).

    Returns
    -------
    Schedule
        Algorithm ``"direct"``: ``N (N - 1)`` transfers of a whole shard per phase (``N - 1``
        for a rooted collective); routed unless every pair used is a link.

    Examples
    --------
    >>> from topocoll.topology import topology
    >>> s = direct_schedule(topology("ring:5"), "reduce_scatter")
    >>> s.num_steps, s.routing, s.collective.name
    (1, 'shortest', 'reduce_scatter')
    >>> b = direct_schedule(topology("mesh:3x3"), "broadcast", root=4, routing="xy")
    >>> b.num_transfers, b.root, sorted(set(b.transfers["src"].tolist()))
    (8, 4, [4])
    """
    coll = require_collective(collective, DIRECT_COLLECTIVES, "direct")
    routing = check_routing(routing, "direct")
    out = RowSink()
    _direct_rows(out, topology, coll, root)
    t = out.transfers()
    return Schedule(topology, coll, t, algorithm="direct",
                    root=_root(coll, root, topology.num_nodes),
                    routing=_policy(topology, t["src"], t["dst"], routing))


def direct_traffic(topology, collective, *, root=None, routing="shortest"):
    """What :func:`direct_schedule` sends per step and pair, summed as its rows are made.

    >>> from topocoll.topology import topology
    >>> direct_traffic(topology("torus:8x8"), "allreduce").size
    8064
    >>> float(direct_traffic(topology("torus:8x8"), "gather", root=9).share.sum()) * 64
    63.0
    """
    coll = require_collective(collective, DIRECT_COLLECTIVES, "direct")
    routing = check_routing(routing, "direct")
    n = _nodes(topology)
    out = TrafficSink(n, coll.shard_fraction(n))
    src, dst = _direct_rows(out, topology, coll, root)
    return out.traffic(topology, coll, routing=_policy(topology, src, dst, routing),
                       algorithm="direct", meta={}, root=_root(coll, root, n))


def direct_transfers(topology, collective, *, root=None, routing="shortest"):
    """The rows :func:`direct_schedule` makes: ``N (N - 1)`` per phase, ``N - 1`` rooted.

    >>> from topocoll.topology import topology
    >>> ring = topology("ring:4")
    >>> direct_transfers(ring, "allreduce"), direct_transfers(ring, "reduce", root=2)
    (24, 3)
    """
    coll = require_collective(collective, DIRECT_COLLECTIVES, "direct")
    n = topology.num_nodes
    if coll.rooted:
        return n - 1
    return n * (n - 1) * (2 if coll.name == "allreduce" else 1)
