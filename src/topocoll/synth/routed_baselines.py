"""Topology-unaware baselines: the collectives a library runs in plain rank order on *any*
network, whose transfers the network then forwards along its routes.

A communication library that knows nothing of the topology pairs ranks by their numbers; on a
torus, a mesh or an irregular fabric most of those pairs share no link, and the routers carry
the messages (``routing="shortest"``: see :class:`~topocoll.schedule.model.Schedule` and
docs/format.md, "Routed transfers"). These schedules are what such a library sends, so that
they can be priced, with the congestion of their routes, beside schedules made for the
topology.

* :func:`rankring_schedule` (``rankring``): the ring in rank order, rank ``r`` sending to
  ``r + 1 mod N`` (what NCCL and gloo run on a torus). On ``uniring:N`` it is the ``ring``
  generator's schedule, transfer for transfer.
* :func:`rd_schedule` (``rd``): recursive doubling (latency variant: ``log2 N`` steps of the
  whole vector, partner ``r xor 2^s``) or recursive halving then recursive doubling (bandwidth
  variant, MPICH/Rabenseifner: partners ``r xor N/2, ..., r xor 1`` then back); node counts
  that are not powers of two are folded as :mod:`.swing` folds them.
* :func:`pat_schedule` (``pat``): NCCL's PAT (Parallel Aggregated Trees, NCCL 2.23; S.
  Jeaugey, "PAT: a new algorithm for all-gather and reduce-scatter operations at scale", 2025):
  Bruck's allgather with the dimensions walked far first, ``ceil(log2 N)`` steps for any N.

Every schedule is routed only where some transfer does not cross a single link; a transfer
between nodes with no path between them is refused (:class:`~topocoll.errors.
NotStronglyConnectedError`).

>>> from topocoll.topology import topology
>>> s = rankring_schedule(topology("torus:4x4"), "allreduce")
>>> s.num_steps, s.routing
(30, 'shortest')
>>> rd_schedule(topology("hypercube:3"), "allreduce").routing is None
True
>>> pat_schedule(topology("ring:6"), "allgather").num_steps
3
"""

import numpy as np

from ..collectives import COPY, REDUCE
from ..errors import InputTypeError, NotStronglyConnectedError, UnsupportedError
from ..schedule.model import Schedule
from ..schedule.routing import routing_needed, unlinked
from ..schedule.traffic import RowSink, TrafficSink
from ..topology.model import Topology
from ..topology.routes import routes_of
from .direct import check_routing
from .options import require_collective
from .swing import responsibility

__all__ = [
    "PAT_COLLECTIVES",
    "RANKRING_COLLECTIVES",
    "RD_COLLECTIVES",
    "RD_VARIANTS",
    "pat_offsets",
    "pat_schedule",
    "pat_traffic",
    "rankring_schedule",
    "rankring_traffic",
    "rd_peers",
    "rd_schedule",
    "rd_traffic",
    "rd_transfers",
]

RANKRING_COLLECTIVES = ("allgather", "reduce_scatter", "allreduce")
RD_COLLECTIVES = ("allgather", "reduce_scatter", "allreduce")
RD_VARIANTS = ("bandwidth", "latency")
PAT_COLLECTIVES = ("allgather", "reduce_scatter")


# ---------------------------------------------------------------------------- shared
def _nodes(topology, algorithm):
    """The node count of ``topology``, checked: a :class:`Topology` of at least 2 nodes."""
    if not isinstance(topology, Topology):
        raise InputTypeError(f"{algorithm}: topology must be a Topology, got "
                             f"{type(topology).__name__}")
    topology.require_no_switches(algorithm)
    n = topology.num_nodes
    if n < 2:
        raise UnsupportedError(f"{algorithm} needs at least 2 nodes; {topology.name} has {n}")
    return n


def _routed(topology, coll, transfers, algorithm, meta=None, policy="shortest"):
    """The schedule of ``transfers``: routed (by ``policy``, ``"shortest"`` or ``"xy"``) only
    where some transfer does not cross a single link; every routed pair must have a path."""
    src, dst = transfers["src"], transfers["dst"]
    routing = routing_needed(topology, transfers) and policy
    if routing is not None:
        far = unlinked(topology, src, dst)
        hops = routes_of(topology, routing).hops[src[far], dst[far]]
        if (hops < 0).any():
            i = int(np.flatnonzero(hops < 0)[0])
            u, v = int(src[far][i]), int(dst[far][i])
            raise NotStronglyConnectedError(
                f"{algorithm} sends between ranks in rank order, so it needs a path between "
                f"every pair it uses (a strongly connected topology); {topology.name} has no "
                f"path {u} -> {v}", pair=(u, v))
    return Schedule(topology, coll, transfers, algorithm=algorithm, routing=routing,
                    meta=meta)


def _summed(rows, topology, coll, algorithm, *args):
    """What the sink-writing ``rows(out, topology, coll, *args)`` sends per step and pair
    (:class:`~topocoll.schedule.traffic.StepTraffic`), summed as the rows are made."""
    n = _nodes(topology, algorithm)
    out = TrafficSink(n, coll.shard_fraction(n))
    meta = rows(out, topology, coll, *args)
    return out.traffic(topology, coll, algorithm=algorithm, meta=meta)


# ---------------------------------------------------------------------------- rankring
def _ring_pass(out, n, first, op, shift):
    """Every shard x travels N-1 hops along ``r -> r+1``, leaving node ``x + shift`` at step
    ``first`` (the ``ring`` generator's order of rows, so that the two compare row by row),
    added to the sink ``out`` a step at a time."""
    shard = np.arange(n)
    for step in range(1, n):
        src = (shard + shift + step - 1) % n
        out.add(step + first - 1, src, (src + 1) % n, shard, op=op)


def rankring_traffic(topology, collective, *, root=None, routing="shortest"):
    """What :func:`rankring_schedule` sends per step and pair, summed as its rows are made
    (the step model's price of a ring too large to hold as rows).

    >>> from topocoll.topology import topology
    >>> rankring_traffic(topology("torus:8x8"), "allreduce").size     # one pair a rank a step
    8064
    """
    coll = require_collective(collective, RANKRING_COLLECTIVES, "rankring")
    if check_routing(routing, "rankring") == "xy":
        routes_of(topology, "xy")       # refused at once off a mesh, torus or ring
    return _summed(_rankring_rows, topology, coll, "rankring")


def _rankring_rows(out, topology, coll):
    """Add the rows of :func:`rankring_schedule` to the sink ``out``."""
    n = _nodes(topology, "rankring")
    if coll.name != "allgather":
        _ring_pass(out, n, 1, REDUCE, 1)
    if coll.name != "reduce_scatter":
        _ring_pass(out, n, n if coll.name == "allreduce" else 1, COPY, 0)
    return {}


def rankring_schedule(topology, collective, *, root=None, progress=None, routing="shortest"):
    """The ring in rank order: rank ``r`` sends to rank ``r + 1 mod N`` whatever the topology,
    the network forwarding each message along its route. It is the Ring baseline of Won et al.
    (TACOS, MICRO 2024: a logical ring over all NPUs, routed over the physical network; beside
    it their Direct baseline is :func:`~topocoll.synth.direct.direct_schedule`).

    Parameters
    ----------
    topology : Topology
        Any strongly connected topology (only the pairs ``r -> r+1 mod N`` need a path).
    collective : str
        ``allgather`` (shard x goes round from x), ``reduce_scatter`` (shard x is reduced round
        from x+1 to x) or ``allreduce`` (the two in sequence).
    routing : {"shortest", "xy"}
        The routes of the pairs that share no link (``"xy"``: dimension order, on a mesh,
        torus or ring only).

    Returns
    -------
    Schedule
        Algorithm ``"rankring"``: ``N - 1`` steps per phase, each rank sending ``(N-1)/N`` of
        the vector per phase; routed unless every ``r -> r+1`` is a link (on ``uniring:N`` and
        ``ring:N`` it is the ``ring`` generator's schedule).

    Examples
    --------
    >>> from topocoll.topology import topology
    >>> s = rankring_schedule(topology("mesh:2x3"), "allgather")
    >>> s.num_steps, s.routing, s.num_transfers
    (5, 'shortest', 30)
    """
    coll = require_collective(collective, RANKRING_COLLECTIVES, "rankring")
    policy = check_routing(routing, "rankring")
    out = RowSink()
    _rankring_rows(out, topology, coll)
    return _routed(topology, coll, out.transfers(), "rankring", policy=policy)


# ---------------------------------------------------------------------------- rd
def rd_peers(q, variant="bandwidth"):
    """The partners of every step on ``q = 2^L`` ranks, ``(L, q)``: ``r xor 2^s`` for
    ``s = 0..L-1`` (latency: recursive doubling, near first), or ``r xor 2^(L-1-s)``
    (bandwidth: recursive halving, far first; its allgather walks them back).

    >>> rd_peers(4, "latency").tolist(), rd_peers(4).tolist()
    ([[1, 0, 3, 2], [2, 3, 0, 1]], [[2, 3, 0, 1], [1, 0, 3, 2]])
    """
    levels = q.bit_length() - 1
    bits = [1 << s for s in range(levels)]
    if variant == "bandwidth":
        bits.reverse()
    ranks = np.arange(q, dtype=np.int64)
    return np.array([ranks ^ b for b in bits], dtype=np.int64).reshape(levels, q)


def _stand_for(rows, p, q):
    """``(row, shard)`` pairs of the boolean rows over the q working ranks: rank ``x < q``
    stands for shards ``x`` and ``x + q`` (if any) of a folded schedule."""
    row, rank = np.nonzero(rows)
    extra = rank + q < p
    return np.r_[row, row[extra]], np.r_[rank, rank[extra] + q]


def _rd_steps(out, coll, variant, peers, p, q, step):
    """Add the transfers among the q working ranks from ``step`` on; returns the next step."""
    levels = peers.shape[0]
    if variant == "latency":
        for s in range(levels):      # the whole vector, reduced into the partner
            row, shard = _stand_for(np.ones((q, q), dtype=bool), p, q)
            out.add(step + s, row, peers[s][row], shard, op=REDUCE)
        return step + levels
    # sets[s][r]: the ranks whose shards r still reduces or holds from step s on (a butterfly)
    sets = responsibility(peers)
    if coll.name != "allgather":
        for s in range(levels):      # halving: hand the partner the half it keeps
            row, shard = _stand_for(sets[s + 1][peers[s]], p, q)
            out.add(step, row, peers[s][row], shard, op=REDUCE)
            step += 1
    if coll.name != "reduce_scatter":
        for s in range(levels - 1, -1, -1):      # doubling: everything held, back the same way
            row, shard = _stand_for(sets[s + 1], p, q)
            out.add(step, row, peers[s][row], shard, op=COPY)
            step += 1
    return step


def _rd_variant(variant, coll):
    """``variant`` checked against the collective."""
    if not isinstance(variant, str):
        raise InputTypeError(f"rd: variant must be a string ({', '.join(RD_VARIANTS)}), got "
                             f"{type(variant).__name__}")
    if variant not in RD_VARIANTS:
        raise UnsupportedError(f"rd: variant must be one of {', '.join(RD_VARIANTS)}, got "
                               f"{variant!r}")
    if variant == "latency" and coll.name != "allreduce":
        raise UnsupportedError(f"rd: the latency variant (recursive doubling of the whole "
                               f"vector) makes allreduce only, not {coll.name} (use "
                               f"variant=bandwidth)")
    return variant


def rd_schedule(topology, collective, *, root=None, progress=None, variant="bandwidth"):
    """Recursive doubling, or recursive halving and doubling, in rank order: partners by
    ``rank xor 2^s`` whatever the topology, the network forwarding each message.

    Parameters
    ----------
    topology : Topology
        Any strongly connected topology.
    collective : str
        ``allreduce``; ``reduce_scatter`` and ``allgather`` are the bandwidth variant's halves.
    variant : {"bandwidth", "latency"}
        ``latency``: ``L = log2 q`` steps (``q``: the largest power of two ``<= p`` nodes),
        at step ``s`` every rank reducing its whole vector into ``r xor 2^s`` (partners
        exchange, so both end with the sum over both halves of the cube). ``bandwidth`` (the
        default): recursive halving, at step ``s`` rank ``r`` reducing into ``r xor q/2^(s+1)``
        the shards that partner keeps from then on (half of its own each time), then recursive
        doubling, the same partners in reverse order, each rank copying everything it holds
        reduced; ``(p-1)/p`` of the vector per rank per phase when ``p = q``.

    Returns
    -------
    Schedule
        Algorithm ``"rd"``, meta ``variant`` and ``folded`` (``p - q``). With ``q`` the largest
        power of two ``<= p``, rank ``r >= q`` first hands everything to ``r - q`` (rank
        ``x < q`` then stands for shards ``x`` and ``x + q``) and gets the result back last, as
        :mod:`.swing` folds: 2 more steps. Steps: bandwidth ``2 L`` (a half alone ``L``),
        latency ``L``. On ``hypercube:k`` every partner is a neighbour and the bandwidth
        variant is the ``rhd`` schedule.

    Examples
    --------
    >>> from topocoll.topology import topology
    >>> s = rd_schedule(topology("ring:6"), "allreduce", variant="latency")
    >>> s.num_steps, s.meta["folded"], s.routing
    (4, 2, 'shortest')
    """
    coll = require_collective(collective, RD_COLLECTIVES, "rd")
    variant = _rd_variant(variant, coll)
    out = RowSink()
    meta = _rd_rows(out, topology, coll, variant)
    return _routed(topology, coll, out.transfers(), "rd", meta=meta)


def rd_traffic(topology, collective, *, root=None, variant="bandwidth"):
    """What :func:`rd_schedule` (same arguments) sends per step and pair, summed as its rows
    are made.

    >>> from topocoll.topology import topology
    >>> rd_traffic(topology("torus:32x32"), "allreduce", variant="latency").size
    10240
    """
    coll = require_collective(collective, RD_COLLECTIVES, "rd")
    return _summed(_rd_rows, topology, coll, "rd", _rd_variant(variant, coll))


def rd_transfers(topology, collective, *, root=None, variant="bandwidth"):
    """The most rows :func:`rd_schedule` (same arguments) makes, counted without making them
    (the memory guard's ask): a latency step moves every working rank's whole vector (``q p``
    rows), a bandwidth phase at most ``p^2``, folding ``2 (p - q) p``.

    >>> from topocoll.topology import topology
    >>> rd_transfers(topology("torus:4x4"), "allreduce", variant="latency")
    1024
    """
    coll = require_collective(collective, RD_COLLECTIVES, "rd")
    variant = _rd_variant(variant, coll)
    p = _nodes(topology, "rd")
    q = 1 << (p.bit_length() - 1)
    if variant == "latency":
        body = (q.bit_length() - 1) * q * p
    else:
        body = p * p * (2 if coll.name == "allreduce" else 1)
    return body + 2 * (p - q) * p


def _rd_rows(out, topology, coll, variant):
    """Add the rows of :func:`rd_schedule` to the sink ``out``; returns its meta."""
    p = _nodes(topology, "rd")
    q = 1 << (p.bit_length() - 1)
    extra = np.arange(q, p)
    every = np.arange(p)
    step = 1
    if extra.size:      # fold in: rank r >= q hands its data to r - q
        if coll.name == "allgather":
            out.add(step, extra, extra - q, extra, op=COPY)
        else:
            src = np.repeat(extra, p)
            out.add(step, src, src - q, np.tile(every, extra.size), op=REDUCE)
        step += 1
    step = _rd_steps(out, coll, variant, rd_peers(q, variant), p, q, step)
    if extra.size:      # fold out: rank r - q hands the result back to r >= q
        if coll.name == "reduce_scatter":
            out.add(step, extra - q, extra, extra, op=COPY)
        else:
            dst, shard = np.repeat(extra, p), np.tile(every, extra.size)
            # an allgather's rank r holds its own shard from the start: no need to send it
            keep = (shard != dst) if coll.name == "allgather" else slice(None)
            out.add(step, dst[keep] - q, dst[keep], shard[keep], op=COPY)
    return {"variant": variant, "folded": int(p - q)}


# ---------------------------------------------------------------------------- pat
def pat_offsets(n):
    """PAT's allgather plan on ``n`` ranks: ``[(d_s, offsets sent at step s), ...]`` for
    ``s = 0..L-1``, ``L = ceil(log2 n)``, ``d_s = 2^(L-1-s)``.

    Every rank holds the shards ``r + S_s`` (offsets mod n) before step ``s``, ``S_0 = {0}``.
    At step ``s`` rank ``r`` sends to ``r - d_s`` the shards ``r + x`` for the ``x`` in
    ``S_s`` whose ``x + d_s`` the receiver (holding ``r - d_s + S_s``) lacks, so
    ``S_{s+1} = S_s | (S_s + d_s)``: the sums of subsets of ``{2^(L-1), ..., 1}``, which
    reach every offset ``0..2^L - 1 >= n - 1``. No shard reaches a rank twice: each rank
    receives exactly ``n - 1`` shards.

    >>> [(d, x.tolist()) for d, x in pat_offsets(8)]
    [(4, [0]), (2, [0, 4]), (1, [0, 2, 4, 6])]
    >>> [(d, x.tolist()) for d, x in pat_offsets(6)]
    [(4, [0]), (2, [0]), (1, [0, 2, 4])]
    """
    levels = (n - 1).bit_length()
    held = np.zeros(n, dtype=bool)
    held[0] = True
    plan = []
    for s in range(levels):
        d = 1 << (levels - 1 - s)
        have = np.flatnonzero(held)
        new = ~held[(have + d) % n]
        plan.append((d, have[new]))
        held[(have[new] + d) % n] = True
    return plan


def pat_schedule(topology, collective, *, root=None, progress=None):
    """NCCL's PAT allgather or reduce-scatter in rank order (see the module): Bruck's
    algorithm with the dimensions reversed, the farthest partner first.

    Allgather: at step ``s`` (``s = 0..L-1``, ``L = ceil(log2 N)``) rank ``r`` sends to rank
    ``r - d_s mod N``, ``d_s = 2^(L-1-s)``, the shards it holds that the receiver lacks
    (:func:`pat_offsets`): on ``N = 2^L`` ranks it sends ``2^s`` shards, each rank ending with
    every shard after ``L`` steps. Unlike Bruck (near first) the long-distance transfers happen
    while they are small and the last, largest step goes to the next rank, and N need not be a
    power of two (no folding). Reduce-scatter: the allgather reversed in time, each rank
    reducing into ``r + d_s`` (``d`` = 1, 2, 4, ...) the partial sums of the shards whose trees
    pass through it.

    Bounded buffers: the shards a rank gathers are not contiguous in its output (offsets that
    are multiples of ``d_s``), so PAT stages them in an intermediate buffer of a fixed size
    ``B_max``, logarithmic in N and independent of the operation's size. Where an aggregated
    step would not fit, PAT splits it, aggregating at most ``B_max / chunk`` ranks' shards per
    send and walking the per-rank broadcast trees (the "parallel aggregated trees") in more,
    smaller sends; with a large enough buffer it is the schedule here. topocoll's schedules
    need not model buffers, so this is that unbounded-aggregation limit.

    Parameters
    ----------
    topology : Topology
        Any strongly connected topology, any N >= 2.
    collective : str
        ``allgather`` or ``reduce_scatter``.

    Returns
    -------
    Schedule
        Algorithm ``"pat"``: ``ceil(log2 N)`` steps, each rank sending ``(N-1)/N`` of the
        vector; routed unless every partner is a neighbour.

    Examples
    --------
    >>> from topocoll.topology import topology
    >>> s = pat_schedule(topology("torus:4x4"), "reduce_scatter")
    >>> s.num_steps, s.routing
    (4, 'shortest')
    """
    coll = require_collective(collective, PAT_COLLECTIVES, "pat")
    out = RowSink()
    _pat_rows(out, topology, coll)
    return _routed(topology, coll, out.transfers(), "pat")


def pat_traffic(topology, collective, *, root=None):
    """What :func:`pat_schedule` sends per step and pair, summed as its rows are made.

    >>> from topocoll.topology import topology
    >>> pat_traffic(topology("torus:32x32"), "allgather").size
    10240
    """
    coll = require_collective(collective, PAT_COLLECTIVES, "pat")
    return _summed(_pat_rows, topology, coll, "pat")


def _pat_rows(out, topology, coll):
    """Add the rows of :func:`pat_schedule` to the sink ``out``."""
    n = _nodes(topology, "pat")
    plan = pat_offsets(n)
    levels = len(plan)
    for s, (d, offsets) in enumerate(plan):
        sender = np.repeat(np.arange(n), offsets.size)
        shard = (sender + np.tile(offsets, n)) % n
        if coll.name == "allgather":
            out.add(s + 1, sender, (sender - d) % n, shard, op=COPY)
        else:       # the same transfer backwards: step L - s, from r - d_s into r
            out.add(levels - s, (sender - d) % n, sender, shard, op=REDUCE)
    return {}
