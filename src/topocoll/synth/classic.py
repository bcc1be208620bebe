"""Classic baselines that Zhao et al. (NSDI 2025), section 8, compare BFB against, each on its
own topology: ShiftedRing and ShiftedBFBRing (TopoOpt's two superposed rings) and recursive
halving-doubling on a hypercube. The traditional torus schedule is in :mod:`.torus_rings`, the
double binary tree in :mod:`.trees`; the helpers that build a collective from an allgather
are here.

Every schedule is built as columns (:func:`~topocoll.schedule.model.transfer_array`); a
reduce-scatter is the allgather reversed in time (docs/math.md section 3; every topology here is
bidirectional), an allreduce the reduce-scatter followed by the allgather.

Costs below use N nodes, buffer M, link bandwidth b, per-step latency alpha.

>>> from topocoll.topology import topology
>>> shifted_ring_schedule(topology("circulant:9:1,2"), "allreduce").num_steps
16
>>> shifted_bfb_ring_schedule(topology("circulant:9:1,2"), "allreduce").num_steps
8
>>> rhd_schedule(topology("hypercube:3"), "allreduce").num_steps
6
"""

import math

import numpy as np

from ..collectives import COPY
from ..errors import SpecError, UnsupportedError
from ..schedule.model import Schedule, transfer_array
from ..schedule.transforms import concatenate, reverse
from .options import require_collective, require_links
from ..topology.families import default_shift

__all__ = ["shifted_ring_schedule", "shifted_bfb_ring_schedule", "rhd_schedule",
           "SHIFTED_RING_COLLECTIVES", "RHD_COLLECTIVES"]

SHIFTED_RING_COLLECTIVES = ("allgather", "reduce_scatter", "allreduce")
RHD_COLLECTIVES = ("allgather", "reduce_scatter", "allreduce")


# ---------------------------------------------------------------------------- shared helpers
def from_allgather(topology, transfers, collective, algorithm, meta=None):
    """The ``collective`` schedule from allgather ``transfers`` on a bidirectional ``topology``:
    the allgather itself, its time reversal (reduce-scatter), or both in sequence (allreduce)."""
    ag = Schedule(topology, "allgather", transfers, algorithm=algorithm, meta=meta)
    if collective.name == "allgather":
        return ag
    rs = reverse(ag, "reduce_scatter", topology, algorithm=algorithm)
    if collective.name == "reduce_scatter":
        return rs
    return concatenate(rs, ag, "allreduce", algorithm=algorithm)


def ring_allgather_columns(order, lo, hi):
    """Classic bidirectional ring allgather on the cycle ``order`` (position -> node).

    Shard pieces ``[lo, mid)`` travel forward and ``[mid, hi)`` backward, N-1 hops each, one hop
    per step: steps 1..N-1, each directed ring link carries half the piece in every step.
    """
    order = np.asarray(order, dtype=np.int64)
    n = order.size
    mid = (lo + hi) / 2
    step = np.repeat(np.arange(1, n), n)
    pos = np.tile(np.arange(n), n - 1)
    parts = []
    for direction, a, b in ((+1, lo, mid), (-1, mid, hi)):
        sender = (pos + direction * (step - 1)) % n
        parts.append(transfer_array(step, order[sender], order[(sender + direction) % n],
                                    order[pos], a, b, COPY))
    return np.concatenate(parts)


def bfb_ring_allgather_columns(order, lo, hi):
    """BFB bidirectional ring allgather (Zhao et al. (NSDI 2025), appendix E.1) on the cycle
    ``order``.

    Every shard piece ``[lo, hi)`` goes both ways round at once, one hop per step, for
    ``floor((N-1)/2)`` steps; for even N the node opposite the owner then gets ``[lo, mid)`` from
    one neighbour and ``[mid, hi)`` from the other in step N/2. Steps: ``floor(N/2)``; every used
    link carries one piece per step, except half a piece in that last step for even N.
    """
    order = np.asarray(order, dtype=np.int64)
    n = order.size
    half = (n - 1) // 2
    parts = []
    if half:
        step = np.repeat(np.arange(1, half + 1), n)
        pos = np.tile(np.arange(n), half)
        for direction in (+1, -1):
            sender = (pos + direction * (step - 1)) % n
            parts.append(transfer_array(step, order[sender], order[(sender + direction) % n],
                                        order[pos], lo, hi, COPY))
    if n % 2 == 0:
        pos = np.arange(n)
        far = (pos + n // 2) % n
        mid = (lo + hi) / 2
        for direction, a, b in ((+1, lo, mid), (-1, mid, hi)):
            parts.append(transfer_array(n // 2, order[(far - direction) % n], order[far],
                                        order[pos], a, b, COPY))
    return np.concatenate(parts)


# ---------------------------------------------------------------------------- shifted rings
def _check_shift(n, s, algorithm):
    if not 2 <= s <= n - 2 or math.gcd(s, n) != 1:
        raise UnsupportedError(f"{algorithm} needs a shift s with 2 <= s <= N-2 and "
                               f"gcd(s, N) = 1; got s={s} for N={n}")
    return s


def _shift_for(topology, shift, algorithm):
    """The shift to use on ``topology``: the option, else a circulant's second offset, else the
    default; then every link of both rings must exist."""
    n = topology.num_nodes
    if n < 5:
        raise UnsupportedError(f"{algorithm} needs N = 5 or N >= 7 nodes (two link-disjoint "
                               f"rings i -> i+1 and i -> i+s, gcd(s, N) = 1); got N={n}")
    meta = topology.meta
    if shift is not None:
        s = _check_shift(n, shift, algorithm)
    elif meta.get("family") == "circulant" and meta.get("n") == n:
        offsets = list(meta.get("offsets", []))
        if len(offsets) != 2 or offsets[0] != 1 or math.gcd(offsets[1], n) != 1:
            raise UnsupportedError(f"{algorithm} needs circulant:N:1,s with gcd(s, N) = 1 "
                                   f"(two Hamiltonian rings); got {topology.name}")
        s = offsets[1]
    else:
        try:
            s = default_shift(n)
        except SpecError as exc:
            raise UnsupportedError(f"{algorithm}: {exc}") from None
    nodes = np.arange(n)
    for a in (1, s):
        require_links(topology, np.r_[nodes, nodes], np.r_[(nodes + a) % n, (nodes - a) % n],
                      algorithm, f"the rings i <-> i+1 and i <-> i+s (s={s}) in both directions")
    return s


def _shifted(topology, collective, algorithm, columns, shift):
    coll = require_collective(collective, SHIFTED_RING_COLLECTIVES, algorithm)
    n = topology.num_nodes
    s = _shift_for(topology, None if shift is None else int(shift), algorithm)
    first = np.arange(n)
    second = (np.arange(n) * s) % n
    t = np.concatenate([columns(first, 0.0, 0.5), columns(second, 0.5, 1.0)])
    return from_allgather(topology, t, coll, algorithm, meta={"shift": s})


def shifted_ring_schedule(topology, collective, *, shift=None, root=None, progress=None):
    """ShiftedRing: two superposed bidirectional rings, the ring ``i -> i+1`` and the shifted
    ring ``i -> i+s`` (``gcd(s, N) = 1``), each carrying half of every shard with the classic
    bidirectional ring schedule, so each direction of each ring carries a quarter (Wang et al.,
    "TopoOpt: Co-optimizing Network Topology and Parallelization Strategy for Distributed
    Training Jobs", NSDI 2023; compared in Zhao et al., NSDI 2025, section 8.3).

    Topology: ``shiftedring:N[,S]`` = ``circulant:N:1,s`` (or any topology with those links);
    option ``shift=s`` (default: the circulant's second offset, else
    :func:`~topocoll.topology.families.default_shift`).

    Allgather and reduce-scatter: ``N-1`` steps, ``T_L = (N-1) alpha``,
    ``T_B = (N-1)/N * M/(4b)`` (bandwidth-optimal: node bandwidth B = 4b). Allreduce: twice both.
    """
    return _shifted(topology, collective, "shiftedring", ring_allgather_columns, shift)


def shifted_bfb_ring_schedule(topology, collective, *, shift=None, root=None, progress=None):
    """ShiftedBFBRing (Zhao et al. (NSDI 2025), section 8.3 and appendix E.1): the ShiftedRing
    topology with the BFB bidirectional-ring schedule on each ring, half of every shard per ring:
    each shard piece goes both ways round at once, so it needs half the steps.

    Allgather and reduce-scatter: ``floor(N/2)`` steps, ``T_L = floor(N/2) alpha``,
    ``T_B = (N-1)/N * M/(4b)`` (bandwidth-optimal). Allreduce: twice both.
    Options as :func:`shifted_ring_schedule`.
    """
    return _shifted(topology, collective, "shiftedbfbring", bfb_ring_allgather_columns, shift)


# ---------------------------------------------------------------------------- hypercube RHD
def _hypercube_order(topology, algorithm):
    n = topology.num_nodes
    if n < 2 or n & (n - 1):
        raise UnsupportedError(f"{algorithm} needs N = 2^k nodes (a hypercube:k); "
                               f"{topology.name} has N={n}")
    k = n.bit_length() - 1
    nodes = np.arange(n)
    flips = nodes[:, None] ^ (1 << np.arange(k))[None, :]
    require_links(topology, np.repeat(nodes, k), flips, algorithm,
                  "the hypercube links x <-> x xor 2^j")
    return k


def rhd_allgather_columns(k):
    """Recursive doubling on ``2^k`` nodes: in step j+1 (j = 0..k-1) node x sends the 2^j shards
    it holds (those of the nodes that agree with x on bits >= j) to its partner x xor 2^j."""
    parts = []
    for j in range(k):
        x = np.arange(1 << k)[:, None]
        shard = (((x >> j) << j) | np.arange(1 << j)[None, :]).ravel()
        src = np.repeat(np.arange(1 << k), 1 << j)
        parts.append(transfer_array(j + 1, src, src ^ (1 << j), shard, 0.0, 1.0, COPY))
    return np.concatenate(parts)


def rhd_schedule(topology, collective, *, root=None, progress=None):
    """Recursive halving-doubling (Rabenseifner; MPICH) on a hypercube ``hypercube:k`` (or any
    topology with the links ``x <-> x xor 2^j``), N = 2^k.

    Reduce-scatter by recursive halving: in step i (i = 1..k) node x exchanges with its partner
    across dimension k-i (distance N/2, N/4, ..., 1) and reduces into it the half of its
    remaining shards that the partner's side owns. Allgather by recursive doubling, the same
    exchanges in reverse order (distance 1, 2, ..., N/2), each sending everything gathered so far.
    Allreduce: both.

    Only one of the k links of a node is used per step. Allgather and reduce-scatter: ``k``
    steps, ``T_L = k alpha``, ``T_B = sum_j 2^j (M/N)/b = (N-1)/N * M/b`` -- optimal for a node
    with one port of bandwidth b, k times the bound ``(N-1)/N * M/(k b)`` of a hypercube node.
    Allreduce: ``2k`` steps, ``T_B = 2 (N-1)/N * M/b``. No options.
    """
    coll = require_collective(collective, RHD_COLLECTIVES, "rhd")
    k = _hypercube_order(topology, "rhd")
    return from_allgather(topology, rhd_allgather_columns(k), coll, "rhd")
