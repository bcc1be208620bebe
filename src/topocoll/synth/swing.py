"""Swing allreduce (De Sensi, Bonato, Saam and Hoefler, "Swing: Short-cutting Rings for Higher
Bandwidth Allreduce", NSDI 2024; public code libswing / libpico, HLC-Lab).

Swing is recursive doubling (or halving-doubling) with other partners: at step ``s`` rank ``r``
talks to

``pi(r, s) = r + rho(s)`` (``r`` even) or ``r - rho(s)`` (``r`` odd), modulo ``p``,

with ``rho(s) = sum_{i=0..s} (-2)^i = 1, -1, 3, -5, 11, -21, ...``: the peers are close on a
ring or torus (distance ``|rho(s)| ~ 2^s / 3`` instead of ``2^s``) but not neighbours, so the
schedule's transfers are *routed* (``routing="shortest"``: the network forwards each along its
dimension-order route; see :class:`~topocoll.schedule.model.Schedule`).

Variants
--------
* ``bandwidth``: a reduce-scatter of ``L = log2 p`` steps (at step ``s`` each rank reduces into
  ``pi(r, s)`` the shards ``pi(r, s)`` is responsible for in the steps left), then the
  allgather, the same peers in reverse order copying the reduced shards back. Each rank sends
  ``(p-1)/p`` of the vector in each phase; ``2 L`` steps.
* ``latency``: ``L`` steps, each rank reducing its whole vector into ``pi(r, s)``
  (recursive-doubling shape); ``L`` steps, ``L`` whole vectors sent per rank.

Tori and meshes (and rings, hypercubes, or any topology given the option ``dims``): step ``s``
uses the dimensions in turn (those with steps left), each with its own step counter; the peer
moves along that dimension only, by ``rho`` of that counter within the dimension's size, with
the sign from the parity of the coordinate there. Node ids are mixed-radix, first dimension
most significant, as :mod:`.torus_rings` reads them.

A rank count that is not a power of two (or a dimension that is not) is *folded*: with ``q``
the largest power of two ``<= p``, rank ``r >= q`` first hands its data to rank ``r - q``
(one step), ranks ``0..q-1`` run Swing in one dimension of ``q`` (rank ``r < q`` standing for
the shards of ``r`` and ``r + q``), and a last step hands the result back to ``r + q``.

*Multiport* (option ``multiport``, as in the paper): the vector is cut into ``2D`` parts, part
``j`` walking the dimensions from dimension ``j`` on and part ``D + j`` the same with mirrored
peers, all in the same steps, so that every port of a torus node carries a part.

>>> from topocoll.topology import topology
>>> s = swing_schedule(topology("torus:8x8"), "allreduce", variant="bandwidth")
>>> s.num_steps, s.routing, s.meta["dims"]
(12, 'shortest', [8, 8])
>>> swing_peers(8, 0), swing_peers(8, 1)
([1, 0, 3, 2, 5, 4, 7, 6], [7, 2, 1, 4, 3, 6, 5, 0])
"""

import numpy as np

from ..collectives import COPY, REDUCE
from ..errors import UnsupportedError
from ..schedule.model import Schedule
from ..schedule.routing import routing_needed
from ..schedule.traffic import RowSink, TrafficSink
from .options import require_collective

__all__ = [
    "LATENCY_THRESHOLD",
    "SWING_COLLECTIVES",
    "SWING_VARIANTS",
    "responsibility",
    "swing_peers",
    "swing_rho",
    "swing_schedule",
    "swing_traffic",
    "swing_transfers",
]

SWING_COLLECTIVES = ("allgather", "reduce_scatter", "allreduce")
SWING_VARIANTS = ("bandwidth", "latency")
#: Buffers smaller than this (bytes) take the latency-optimal variant when ``variant`` is not
#: given (libswing switches the same way, by buffer size).
LATENCY_THRESHOLD = 64 * 1024


def swing_rho(s):
    """``rho(s) = sum_{i=0..s} (-2)^i``: the signed distance to the peer at step ``s``.

    >>> [swing_rho(s) for s in range(6)]
    [1, -1, 3, -5, 11, -21]
    """
    return sum((-2) ** i for i in range(s + 1))


def swing_peers(p, s):
    """The peer ``pi(r, s)`` of every rank ``r`` of a 1-dimensional ``p`` at step ``s``:
    ``r + rho(s)`` for even ``r``, ``r - rho(s)`` for odd ``r``, modulo ``p``.

    >>> swing_peers(4, 1)
    [3, 2, 1, 0]
    """
    r = np.arange(p)
    return (np.where(r % 2 == 0, r + swing_rho(s), r - swing_rho(s)) % p).tolist()


def _digits(p, dims):
    """Mixed-radix coordinates (first dimension most significant) and strides of ranks 0..p-1."""
    strides = np.ones(len(dims), dtype=np.int64)
    for i in range(len(dims) - 2, -1, -1):
        strides[i] = strides[i + 1] * dims[i + 1]
    ranks = np.arange(p, dtype=np.int64)
    return [(ranks // st) % k for st, k in zip(strides, dims)], strides


def _peer_steps(dims, first=0, mirror=False):
    """The peers of every step, ``(L, p)``: dimensions in turn from dimension ``first`` on,
    those with steps left, each by ``rho`` of its own step counter within its size; ``mirror``
    swaps the signs (even coordinates subtract), the other way round each ring."""
    p = int(np.prod(dims))
    coords, strides = _digits(p, dims)
    left = [int(k).bit_length() - 1 for k in dims]     # log2 of each (power-of-two) size
    counter = [0] * len(dims)
    sign = -1 if mirror else 1
    peers = []
    while any(left):
        for d in (np.arange(len(dims)) + first) % len(dims):
            if not left[d]:
                continue
            c, k, rho = coords[d], dims[d], sign * swing_rho(counter[d])
            moved = np.where(c % 2 == 0, c + rho, c - rho) % k
            peers.append(np.arange(p) + (moved - c) * strides[d])
            counter[d] += 1
            left[d] -= 1
    return np.array(peers, dtype=np.int64).reshape(len(peers), p)


def responsibility(peers):
    """The ranks each rank is responsible for from each step on: ``R[s][r]`` (a boolean row
    over the ranks) is ``r`` itself and every rank reachable from it through the peers of steps
    ``s..L-1``; ``R[L]`` is the identity.

    The reduce-scatter is exact only if the step sequence is a butterfly: ``R[s][r]`` must be
    the disjoint union of ``R[s+1][r]`` and ``R[s+1][pi(r, s)]``, so ``2^(L-s)`` ranks, and
    ``R[0][r]`` every rank. Anything else raises :class:`~topocoll.errors.UnsupportedError`.

    >>> R = responsibility(np.array([swing_peers(4, 0), swing_peers(4, 1)]))
    >>> np.flatnonzero(R[1][0]).tolist(), np.flatnonzero(R[0][0]).tolist()
    ([0, 3], [0, 1, 2, 3])
    """
    steps, p = peers.shape
    sets = [np.eye(p, dtype=bool)]
    for s in range(steps - 1, -1, -1):
        below = sets[0]
        mine, theirs = below, below[peers[s]]
        if (mine & theirs).any() or not (np.count_nonzero(mine | theirs, axis=1)
                                          == 2 ** (steps - s)).all():
            raise UnsupportedError(f"swing needs a butterfly (the ranks a rank is responsible "
                                   f"for must halve at every step); step {s} of {p} ranks "
                                   f"does not")
        sets.insert(0, mine | theirs)
    if not sets[0].all():
        raise UnsupportedError(f"swing needs a butterfly over all {p} ranks; its steps reach "
                               f"only some")
    return sets


def _swing_dims(topology, dims):
    """The dimension sizes Swing walks: the option, else the topology's family, else one
    dimension of every rank."""
    p = topology.num_nodes
    meta = topology.meta
    family = meta.get("family")
    if dims is None:
        if family in ("torus", "mesh"):
            dims = tuple(int(k) for k in meta["dims"])
        elif family in ("ring", "uniring") and "n" in meta:
            dims = (int(meta["n"]),)
        elif family == "hypercube":
            dims = (2,) * int(meta["k"])
        else:
            dims = (p,)
    dims = tuple(int(k) for k in dims)
    if int(np.prod(dims)) != p:
        raise UnsupportedError(f"swing: dims {'x'.join(map(str, dims))} make "
                               f"{int(np.prod(dims))} nodes, {topology.name} has {p}")
    return dims


def _choose_variant(variant, coll, size):
    """The variant to build: the one asked for, else latency for an allreduce of a buffer
    below :data:`LATENCY_THRESHOLD`, else bandwidth."""
    if variant is not None and variant not in SWING_VARIANTS:
        raise UnsupportedError(f"swing: variant must be one of {', '.join(SWING_VARIANTS)} "
                               f"(or none: by size), got {variant!r}")
    if variant is None:
        small = size is not None and size < LATENCY_THRESHOLD
        variant = "latency" if small and coll.name == "allreduce" else "bandwidth"
    if variant == "latency" and coll.name != "allreduce":
        raise UnsupportedError(f"swing: the latency variant makes allreduce only, not "
                               f"{coll.name} (use variant=bandwidth)")
    return variant


def _blocks(sets, p, q):
    """``(row, shard)`` pairs of the boolean rows ``sets`` (over the q working ranks): the
    shards of those ranks, rank ``x < q`` standing for shards ``x`` and ``x + q`` (if any)."""
    row, rank = np.nonzero(sets)
    extra = rank + q < p
    return np.r_[row, row[extra]], np.r_[rank, rank[extra] + q]


def _phases(out, coll, variant, peers, p, q, first, part=(0.0, 1.0)):
    """The Swing steps on the q working ranks, from step ``first`` on, each row carrying the
    byte range ``part`` of its shard, added to the sink ``out``; returns the next step."""
    lo, hi = part
    ranks = np.arange(q)
    steps = peers.shape[0]
    everything = np.ones((q, q), dtype=bool)
    if variant == "latency":
        for s in range(steps):
            row, shard = _blocks(everything, p, q)
            out.add(first + s, row, peers[s][row], shard, lo, hi, REDUCE)
        return first + steps
    sets = responsibility(peers)
    if coll.name != "allgather":
        for s in range(steps):      # reduce-scatter: what the peer keeps from now on
            row, shard = _blocks(sets[s + 1][peers[s]], p, q)
            out.add(first, ranks[row], peers[s][row], shard, lo, hi, REDUCE)
            first += 1
    if coll.name != "reduce_scatter":
        for s in range(steps - 1, -1, -1):    # allgather: what this rank holds reduced
            row, shard = _blocks(sets[s + 1], p, q)
            out.add(first, ranks[row], peers[s][row], shard, lo, hi, COPY)
            first += 1
    return first


def swing_schedule(topology, collective, *, root=None, progress=None, variant=None, size=None,
                   dims=None, multiport=False):
    """The Swing schedule (see the module) of ``collective`` on ``topology``.

    Parameters
    ----------
    topology : Topology
        Any endpoint topology; tori, meshes, rings and hypercubes are walked by their
        dimensions (node ids mixed-radix, first dimension most significant), anything else as
        one dimension of its nodes in id order unless ``dims`` is given.
    collective : str
        ``allreduce``; ``reduce_scatter`` and ``allgather`` are the bandwidth variant's halves.
    variant : {"bandwidth", "latency"}, optional
        Default (None): by buffer size as libswing does: ``latency`` for an allreduce with
        ``size`` below :data:`LATENCY_THRESHOLD` (64 KiB), ``bandwidth`` otherwise (and when no
        size is given).
    size : float, optional
        Buffer size in bytes; only chooses the variant.
    dims : tuple of int, optional
        Dimension sizes (product: the node count) for a topology that is not a torus by name.
    multiport : bool
        The paper's multiport Swing: every shard cut into ``2D`` equal parts (``D`` the
        dimensions walked), part ``j < D`` walking the dimensions from dimension ``j`` on, part
        ``D + j`` the same mirrored (even coordinates subtract ``rho``), all at once, so that
        every port is busy. Same steps; each part moves ``1/(2D)`` of the data.

    Returns
    -------
    Schedule
        Algorithm ``"swing"``, ``routing="shortest"`` unless every transfer crosses one link
        (then None); meta ``variant``, ``folded`` (ranks folded in: ``p - q``) and ``dims``
        (the dimensions Swing ran on: ``[q]`` when folded), ``multiport``.

    Steps: bandwidth ``2 log2 q`` (a reduce-scatter or allgather alone ``log2 q``), latency
    ``log2 q``; 2 more when folded.

    Examples
    --------
    >>> from topocoll.topology import topology
    >>> s = swing_schedule(topology("ring:6"), "allreduce", variant="latency")
    >>> s.num_steps, s.meta["folded"], s.meta["dims"]
    (4, 2, [4])
    """
    coll = require_collective(collective, SWING_COLLECTIVES, "swing")
    variant = _choose_variant(variant, coll, size)
    out = RowSink()
    meta = _swing_rows(out, topology, coll, variant, dims, multiport)
    t = out.transfers()
    return Schedule(topology, coll, t, algorithm="swing", routing=routing_needed(topology, t),
                    meta=meta)


def swing_traffic(topology, collective, *, root=None, variant=None, size=None, dims=None,
                  multiport=False):
    """What :func:`swing_schedule` (same arguments) sends per step and pair, summed as its
    rows are made (:class:`~topocoll.schedule.traffic.StepTraffic`): the step model's price
    of a Swing too large to hold as rows.

    >>> from topocoll.topology import topology
    >>> t = swing_traffic(topology("torus:32x32"), "allreduce", variant="latency")
    >>> t.num_steps, t.size, t.routing      # 10.5 million transfers as rows
    (10, 10240, 'shortest')
    """
    coll = require_collective(collective, SWING_COLLECTIVES, "swing")
    variant = _choose_variant(variant, coll, size)
    p = topology.num_nodes
    out = TrafficSink(p, coll.shard_fraction(p))
    meta = _swing_rows(out, topology, coll, variant, dims, multiport)
    return out.traffic(topology, coll, algorithm="swing", meta=meta)


def swing_transfers(topology, collective, *, root=None, variant=None, size=None, dims=None,
                    multiport=False):
    """The most rows :func:`swing_schedule` (same arguments) makes, counted without making
    them: what the memory guard of :func:`~topocoll.synth.generate` asks for.

    A latency step moves every working rank's whole vector (``q p`` rows), a bandwidth phase
    at most ``p^2``; multiport repeats it for each of its ``2D`` parts; folding adds ``2 (p - q)
    p``.

    >>> from topocoll.topology import topology
    >>> swing_transfers(topology("torus:8x8"), "allreduce", variant="latency")
    24576
    >>> swing_transfers(topology("torus:8x8"), "allreduce", variant="bandwidth")
    8192
    """
    coll = require_collective(collective, SWING_COLLECTIVES, "swing")
    variant = _choose_variant(variant, coll, size)
    p = topology.num_nodes
    shape, q = _working_shape(topology, dims)
    ways = 2 * len(shape) if multiport else 1
    if variant == "latency":
        body = (q.bit_length() - 1) * q * p
    else:
        body = p * p * (2 if coll.name == "allreduce" else 1)
    return ways * body + 2 * (p - q) * p


def _working_shape(topology, dims):
    """``(dimensions Swing runs on, q)``: ``q`` the largest power of two ``<= p``; one
    dimension of ``q`` where anything must be folded."""
    p = topology.num_nodes
    if p < 2:
        raise UnsupportedError(f"swing needs at least 2 nodes; {topology.name} has {p}")
    shape = _swing_dims(topology, dims)
    q = 1 << (p.bit_length() - 1)
    if q != p or any(k & (k - 1) for k in shape):
        shape = (q,)        # fold: the q working ranks as one dimension
    return tuple(k for k in shape if k > 1) or (q,), q


def _swing_rows(out, topology, coll, variant, dims, multiport):
    """Add the rows of the Swing schedule to the sink ``out``; returns the schedule's meta."""
    p = topology.num_nodes
    shape, q = _working_shape(topology, dims)
    extra = np.arange(q, p)
    step = 1
    if extra.size:         # fold in: rank r >= q hands its data to r - q
        if coll.name == "allgather":
            out.add(step, extra, extra - q, extra, op=COPY)
        else:
            src = np.repeat(extra, p)
            out.add(step, src, src - q, np.tile(np.arange(p), extra.size), op=REDUCE)
        step += 1
    ways = [(j, mirror) for mirror in (False, True) for j in range(len(shape))] \
        if multiport else [(0, False)]
    for part, (j, mirror) in enumerate(ways):
        after = _phases(out, coll, variant, _peer_steps(shape, j, mirror), p, q, step,
                        (part / len(ways), (part + 1) / len(ways)))
    step = after
    if extra.size:         # fold out: rank r - q hands the result back to r >= q
        if coll.name == "reduce_scatter":
            out.add(step, extra - q, extra, extra, op=COPY)
        else:
            dst = np.repeat(extra, p)
            shard = np.tile(np.arange(p), extra.size)
            keep = shard != dst if coll.name == "allgather" else slice(None)   # it has its own
            out.add(step, dst[keep] - q, dst[keep], shard[keep], op=COPY)
    return {"variant": variant, "folded": int(p - q), "dims": list(shape),
            "multiport": bool(multiport)}
