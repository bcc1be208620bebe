"""The traditional torus schedule (Sack and Gropp, "Collective algorithms for multiported torus
networks", ACM TOPC 2015, sections 6.2 and 8.5.2): ring collectives dimension after
dimension.

Allgather on ``torus:k_1 x ... x k_D``: a classic bidirectional ring allgather (half of every
piece each way round, ``k-1`` steps) along one dimension, then along the next with everything
gathered so far, and so on. Reduce-scatter is the same in reverse (dimension order reversed,
reducing); allreduce is both.

*Multiported* (the default, as in [57]): every shard is cut into D' parts (D' = dimensions of
size >= 2) and part j visits the dimensions in the rotated order j, j+1, ..., so that on an equal-
sided torus the D' parts use different dimensions in every step and all links are busy. With
``multiport=False`` the whole shard goes dimension 1 first, then 2, ... (one dimension busy at a
time).

Node ids are mixed-radix, first dimension most significant (``topology/families/lattice.py``).

>>> from topocoll.topology import topology
>>> s = torus_rings_schedule(topology("torus:3x3"), "allgather")
>>> s.num_steps, s.meta["dims"]
(4, [3, 3])
"""

import numpy as np

from ..collectives import COPY
from ..errors import UnsupportedError
from ..schedule.model import transfer_array
from .classic import from_allgather
from .options import require_collective, require_links

__all__ = ["torus_rings_schedule", "torus_rings_transfers", "TORUS_RINGS_COLLECTIVES"]

TORUS_RINGS_COLLECTIVES = ("allgather", "reduce_scatter", "allreduce")


def _torus_dims(topology, dims, algorithm):
    """The torus dimensions: the option, else the topology's family parameters; then the links."""
    meta = topology.meta
    n = topology.num_nodes
    if dims is None:
        family = meta.get("family")
        if family == "torus":
            dims = tuple(int(k) for k in meta["dims"])
        elif family in ("ring",):
            dims = (int(meta["n"]),)
        elif family == "hypercube":
            dims = (2,) * int(meta["k"])
        else:
            raise UnsupportedError(f"{algorithm} needs a torus (torus:D1xD2x...) or the option "
                                   f"dims=D1xD2x...; {topology.name} is neither")
    if int(np.prod(dims)) != n:
        raise UnsupportedError(f"{algorithm}: dims {'x'.join(map(str, dims))} make "
                               f"{int(np.prod(dims))} nodes, {topology.name} has {n}")
    ids, digits, strides = _digits(n, dims)
    for k, c, stride in zip(dims, digits, strides):
        if k > 1:
            for step in (+1, -1):
                require_links(topology, ids, ids + ((c + step) % k - c) * stride, algorithm,
                              "the torus links along every dimension (mixed-radix node ids, "
                              "first dimension most significant)")
    return dims


def _digits(n, dims):
    strides = np.ones(len(dims), dtype=np.int64)
    for i in range(len(dims) - 2, -1, -1):
        strides[i] = strides[i + 1] * dims[i + 1]
    ids = np.arange(n, dtype=np.int64)
    return ids, [(ids // s) % k for s, k in zip(strides, dims)], strides


def torus_rings_columns(dims, *, multiport=True):
    """Allgather transfers of the traditional torus schedule on ``dims`` (see the module)."""
    n = int(np.prod(dims))
    ids, digits, strides = _digits(n, dims)
    active = [i for i, k in enumerate(dims) if k > 1]
    parts = len(active) if multiport else 1
    out = []
    for j in range(parts):
        order = active[j:] + active[:j]
        lo, hi = j / parts, (j + 1) / parts
        mid = (lo + hi) / 2
        block = np.zeros(1, dtype=np.int64)      # offsets of the shards one node holds
        base = ids.copy()                        # node id with the gathered digits zeroed
        first_step = 1
        for d in order:
            k, c, stride = dims[d], digits[d], strides[d]
            t = np.arange(1, k)[:, None]                                   # (k-1, 1)
            ways = ((+1, lo, mid), (-1, mid, hi)) if k > 2 else ((+1, lo, hi),)
            for direction, a, b in ways:
                origin_digit = (c[None, :] - direction * (t - 1)) % k     # (k-1, N)
                origin_base = base[None, :] + (origin_digit - c[None, :]) * stride
                shard = origin_base[:, :, None] + block[None, None, :]      # (k-1, N, |block|)
                src = np.broadcast_to(ids[None, :, None], shard.shape)
                dst = src + (((c + direction) % k - c) * stride)[None, :, None]
                step = np.broadcast_to((first_step + t - 1)[:, :, None], shard.shape)
                out.append(transfer_array(step.ravel(), src.ravel(), dst.ravel(), shard.ravel(),
                                          a, b, COPY))
            first_step += k - 1
            base = base - c * stride
            block = (block[:, None] + np.arange(k)[None, :] * stride).ravel()
    return np.concatenate(out)


def torus_rings_transfers(topology, collective, *, multiport=True, dims=None, root=None):
    """The rows :func:`torus_rings_schedule` (same arguments) makes, at most, counted without
    making them (the memory guard's ask): every shard reaches every other node once per part
    and ring direction (``2 D`` parts with ``multiport``, else 2), twice for an allreduce.

    >>> from topocoll.topology import topology
    >>> torus_rings_transfers(topology("torus:4x4x4"), "allgather")
    24192
    """
    coll = require_collective(collective, TORUS_RINGS_COLLECTIVES, "torusrings")
    dims = _torus_dims(topology, None if dims is None else tuple(int(k) for k in dims),
                       "torusrings")
    p = topology.num_nodes
    parts = 2 * (len(dims) if multiport else 1)
    return parts * p * (p - 1) * (2 if coll.name == "allreduce" else 1)


def torus_rings_schedule(topology, collective, *, multiport=True, dims=None, root=None,
                         progress=None):
    """Traditional (dimension-ordered ring) torus schedule on ``torus:k_1x...xk_D``.

    Options: ``multiport`` (default true: D' rotated parts per shard, see the module) and
    ``dims`` (dimension sizes, for a topology that is not a torus by name but has the links).

    Steps per phase: ``sum_i (k_i - 1)`` (allreduce twice), ``T_L = sum_i (k_i - 1) alpha`` --
    BFB needs ``sum_i floor(k_i/2)``.

    ``T_B`` (link bandwidth b; ``c_i = 2`` links per direction pair, ``c_i = 1`` for a size-2
    dimension with a single cable, ``P_i = k_1 ... k_{i-1}``):

    * ``multiport=False``: ``T_B = sum_i (k_i - 1) P_i (M/N) / (c_i b)``; with every ``k_i > 2``
      this is ``(N-1)/N * M/(2b)``, D times the bound ``(N-1)/N * M/(2 D b)``.
    * multiport on an equal-sided torus ``k^D``: the D parts always use different dimensions, so
      ``T_B = (N-1)/N * M/(c D b)`` = the bandwidth lower bound (node bandwidth ``c D b``).
    * multiport on unequal sides: parts overlap in a dimension at times; valid, not optimal
      (e.g. ``torus:3x5``: ``T_B = M/(3b)`` against the bound ``14/15 * M/(4b)``).

    Allreduce: twice the allgather's ``T_B``.
    """
    coll = require_collective(collective, TORUS_RINGS_COLLECTIVES, "torusrings")
    dims = _torus_dims(topology, None if dims is None else tuple(int(k) for k in dims),
                       "torusrings")
    multiport = bool(multiport)
    t = torus_rings_columns(dims, multiport=multiport)
    return from_allgather(topology, t, coll, "torusrings",
                          meta={"dims": list(dims), "multiport": multiport})
