"""TACOS's Direct baseline: every node sends each shard straight to every node that needs it,
the network routing the messages (Won et al., TACOS, MICRO 2024, sections III-B and VII-C).

A collective library's Direct algorithm ignores the topology: for an all-gather every rank
sends its shard to every other rank at once, for a reduce-scatter every rank sends rank ``y``
its contribution to shard ``y`` (reduced on arrival), and an all-reduce is the two in sequence.
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
from .options import require_collective

__all__ = ["DIRECT_COLLECTIVES", "direct_schedule", "direct_traffic", "direct_transfers",
           "check_routing"]

DIRECT_COLLECTIVES = ("allgather", "reduce_scatter", "allreduce")


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


def _direct_rows(out, topology, coll):
    """Add the rows of :func:`direct_schedule` to the sink ``out``: step 1 the reduce-scatter
    (every ``x -> y`` carries x's part of shard y), then the all-gather (every ``x -> y``
    carries shard x)."""
    n = _nodes(topology)
    src, dst = np.nonzero(~np.eye(n, dtype=bool))
    step = 1
    if coll.name != "allgather":
        out.add(step, src, dst, dst, op=REDUCE)
        step += 1
    if coll.name != "reduce_scatter":
        out.add(step, src, dst, src, op=COPY)
    return {}


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
        (step 1: ``x`` reduces its part of shard ``y`` into ``y``) or ``allreduce`` (the two,
        steps 1 and 2).
    routing : {"shortest", "xy"}
        The routes of the transfers between nodes that share no link: shortest paths, or
        dimension order (a mesh, torus or ring only).

    Returns
    -------
    Schedule
        Algorithm ``"direct"``: ``N (N - 1)`` transfers of a whole shard per phase; routed
        unless every pair is a link (``complete:N``).

    Examples
    --------
    >>> from topocoll.topology import topology
    >>> s = direct_schedule(topology("ring:5"), "reduce_scatter")
    >>> s.num_steps, s.routing, s.collective.name
    (1, 'shortest', 'reduce_scatter')
    """
    coll = require_collective(collective, DIRECT_COLLECTIVES, "direct")
    routing = check_routing(routing, "direct")
    out = RowSink()
    _direct_rows(out, topology, coll)
    t = out.transfers()
    return Schedule(topology, coll, t, algorithm="direct",
                    routing=_policy(topology, t["src"], t["dst"], routing))


def direct_traffic(topology, collective, *, root=None, routing="shortest"):
    """What :func:`direct_schedule` sends per step and pair, summed as its rows are made.

    >>> from topocoll.topology import topology
    >>> direct_traffic(topology("torus:8x8"), "allreduce").size
    8064
    """
    coll = require_collective(collective, DIRECT_COLLECTIVES, "direct")
    routing = check_routing(routing, "direct")
    n = _nodes(topology)
    out = TrafficSink(n, coll.shard_fraction(n))
    _direct_rows(out, topology, coll)
    src, dst = np.nonzero(~np.eye(n, dtype=bool))
    return out.traffic(topology, coll, routing=_policy(topology, src, dst, routing),
                       algorithm="direct", meta={})


def direct_transfers(topology, collective, *, root=None, routing="shortest"):
    """The rows :func:`direct_schedule` makes: ``N (N - 1)`` per phase.

    >>> from topocoll.topology import topology
    >>> direct_transfers(topology("ring:4"), "allreduce")
    24
    """
    coll = require_collective(collective, DIRECT_COLLECTIVES, "direct")
    n = topology.num_nodes
    return n * (n - 1) * (2 if coll.name == "allreduce" else 1)
