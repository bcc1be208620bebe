"""Bine trees (De Sensi, Pasqualoni, Piarulli, Bonato, Ba, Turisini, Domke and Hoefler, "Bine
Trees: Enhancing Collective Operations by Optimizing Communication Locality", SC 2025; public
code HLC-Lab/bine-trees, libpico).

Bine ("binomial negabinary") trees and butterflies are binomial trees and butterflies whose
partners are found in *negabinary* (base -2): two ranks talk when their negabinary digits differ
in a run of low digits, so their distance is ``rho(k) = sum_{i<=k} (-2)^i = 1, -1, 3, -5, 11,
...`` (Swing's distances, :func:`~topocoll.synth.swing.swing_rho`), about ``2^k / 3`` instead of
``2^k``: close on a ring or torus, though not neighbours, so the transfers are *routed*
(``routing="shortest"``; see :class:`~topocoll.schedule.model.Schedule`).

Trees (broadcast, reduce)
-------------------------
With ``L = log2 p``, ``v = r - root (mod p)`` and ``d`` the ``L`` low negabinary digits of
``v``, the broadcast of the reference code (``bine_bcast_small``) runs ``L`` steps, largest
distance first: at step ``s`` a rank that holds the data sends it to the rank whose ``d`` differs
in the ``k = L - s`` low digits (``d xor (2^k - 1)``), and a rank receives when those ``k``
digits of its ``d`` are all equal. Those partners are the Swing butterfly's peers of step
``k - 1`` (:func:`bine_tree_steps`), so the tree is the Swing butterfly's steps in reverse
order, kept to the ranks that hold the data. Largest distance first, as the reference code and
MPICH's binomial broadcast go: the one long hop comes when one rank sends, not when ``p/2``
do. Relabelled by ``t(v) = d xor (d >> 1)`` (:func:`bine_tree_labels`) it is the binomial
tree of MPICH's broadcast: at step ``s`` the ranks with ``t`` divisible by ``2^(L-s)`` send
to ``t + 2^(L-1-s)``. A reduce is the broadcast reversed in time on the transposed topology
(:func:`~topocoll.schedule.transforms.reverse`).

Butterflies (reduce_scatter, allgather, allreduce)
--------------------------------------------------
Bine's butterfly (``bine_reduce_large``, ``bine_allgather``) has Swing's peers: at step ``s``
even ranks add ``rho(s)`` and odd ranks subtract it. Every rank must hand its peer the same
shards as in Swing (a butterfly leaves no choice: those the peer covers in the steps left), so
in topocoll, where a shard is named by the rank it ends on, the Bine butterfly *is* Swing's
bandwidth variant (:func:`~topocoll.synth.swing.swing_schedule`) and this module builds it
there. What Bine adds is where the shards lie in memory: shard ``x`` at block
``nu(x)`` (:func:`bine_layout`), so that every step's shards are one contiguous run of blocks
(``nu(x)`` and ``nu(peer)`` share their ``s + 1`` highest bits) and no rank copies or
permutes blocks.

Tori and meshes (and rings, hypercubes, or any topology given ``dims``) are walked dimension
after dimension as :mod:`.swing` does; a node count or dimension that is not a power of two is
folded as there: rank ``r >= q`` (``q`` the largest power of two ``<= p``) hands its part to
``r - q`` first and takes the result from it last.

>>> from topocoll.topology import topology
>>> s = bine_schedule(topology("ring:8"), "broadcast", root=0)
>>> s.num_steps, s.routing, s.meta["shape"]
(3, 'shortest', 'tree')
>>> bine_layout(8)
[0, 4, 6, 1, 3, 7, 5, 2]
"""

import numpy as np

from ..collectives import COPY
from ..collectives import collective as _collective
from ..errors import InputTypeError, UnsupportedError
from ..schedule.model import Schedule, transfer_array
from ..schedule.routing import routing_needed
from ..schedule.transforms import reverse
from .options import node_root, require_collective
from ..schedule.traffic import traffic_of
from .swing import _digits, _peer_steps, _swing_dims, swing_schedule, swing_traffic

__all__ = [
    "BINE_COLLECTIVES",
    "bine_layout",
    "bine_schedule",
    "bine_traffic",
    "bine_tree_labels",
    "bine_tree_steps",
    "from_negabinary",
    "negabinary",
]

BINE_COLLECTIVES = ("allgather", "reduce_scatter", "allreduce", "broadcast", "reduce")

# 0b1010...10: adding it, then xor-ing it, turns two's complement into negabinary and back
# (the reference code's binary_to_negabinary / negabinary_to_binary, here on 64 bits)
_NEGA_MASK = int("10" * 32, 2)


def negabinary(x, bits):
    """The ``bits`` lowest negabinary (base -2) digits of the integer ``x``, as an integer
    whose binary digits they are. They depend only on ``x`` modulo ``2^bits``.

    >>> [format(negabinary(x, 3), "03b") for x in (0, 1, 2, 3, -1, -2)]
    ['000', '001', '110', '111', '011', '010']
    """
    x = int(x) % (1 << bits)       # low digits of x and of x mod 2^bits are the same
    return ((_NEGA_MASK + x) ^ _NEGA_MASK) & ((1 << bits) - 1)


def from_negabinary(digits):
    """The integer whose negabinary digits are the binary digits of ``digits`` (at most 63).

    >>> [from_negabinary(d) for d in (0b1, 0b11, 0b111, 0b1111)]
    [1, -1, 3, -5]
    """
    return (_NEGA_MASK ^ int(digits)) - _NEGA_MASK


def _bit_reverse(x, bits):
    return int(format(x, f"0{bits}b")[::-1], 2) if bits else 0


def _log2(q):
    """``log2 q`` of a power of two ``q >= 1``."""
    return q.bit_length() - 1


def bine_layout(q):
    """Bine's block layout ``nu`` on ``q = 2^L`` ranks (``nu(r, p)`` of the paper and of the
    reference code's ``utils.h``): the block of the buffer where rank ``r``'s shard lies.

    Rule: ``d`` the ``L`` low negabinary digits of ``r`` (odd ``r``) or of ``-r`` (even
    ``r``), then ``nu = reverse_L(d xor (d >> 1))``. In the butterfly's step ``s`` a rank
    sends its peer the shards ``x`` whose ``nu(x)`` shares the ``s + 1`` highest of ``L`` bits
    with ``nu(peer)``: one contiguous run of ``2^(L-1-s)`` blocks.

    >>> bine_layout(4)
    [0, 2, 3, 1]
    """
    _require_power_of_two(q, "bine_layout")
    bits = _log2(q)
    digits = [negabinary(r if r % 2 else -r, bits) for r in range(q)]
    return [_bit_reverse(d ^ (d >> 1), bits) for d in digits]


def bine_tree_labels(q):
    """The labels ``t(v)`` under which the Bine tree on ``q = 2^L`` ranks (root 0) is the
    binomial tree of MPICH's broadcast: ``d`` the ``L`` low negabinary digits of ``v``,
    ``t = d xor (d >> 1)``; at step ``s`` the ranks with ``t`` divisible by ``2^(L-s)`` send to
    ``t + 2^(L-1-s)``.

    >>> bine_tree_labels(8)
    [0, 1, 5, 4, 6, 7, 3, 2]
    """
    _require_power_of_two(q, "bine_tree_labels")
    bits = _log2(q)
    return [d ^ (d >> 1) for d in (negabinary(v, bits) for v in range(q))]


def _require_power_of_two(q, what):
    if isinstance(q, bool) or not isinstance(q, (int, np.integer)):
        raise InputTypeError(f"{what}: the rank count must be an integer, got {q!r}")
    if q < 1 or q & (q - 1):
        raise UnsupportedError(f"{what} needs a power of two ranks (Bine's rule: L negabinary "
                               f"digits name 2^L ranks); got {q}")


def bine_tree_steps(dims, root=0):
    """The Bine broadcast tree from ``root`` on ranks of dimension sizes ``dims`` (powers of
    two): one ``(senders, receivers)`` pair of arrays per step.

    Each dimension's steps are Swing's butterfly steps in that dimension in reverse order
    (largest distance first), the dimensions in turn as :mod:`.swing` walks them, on
    coordinates taken relative to the root's (``v = r - root`` in each dimension), and only
    the ranks that already hold the data send. Raises
    :class:`~topocoll.errors.UnsupportedError` if a step would reach a rank twice (not a
    tree).

    >>> [(s.tolist(), r.tolist()) for s, r in bine_tree_steps((8,))]
    [([0], [3]), ([0, 3], [7, 4]), ([0, 3, 7, 4], [1, 2, 6, 5])]
    """
    dims = tuple(int(k) for k in dims)
    p = int(np.prod(dims))
    coords, strides = _digits(p, dims)
    # relative rank v -> node: every coordinate moved by the root's (a torus translation)
    node = sum(((c + c[root]) % k) * st for c, k, st in zip(coords, dims, strides))
    holds = np.zeros(p, dtype=bool)
    holds[0] = True
    senders = np.zeros(1, dtype=np.int64)
    steps = []
    for peers in _peer_steps(dims)[::-1]:
        receivers = peers[senders]
        if holds[receivers].any() or np.unique(receivers).size != receivers.size:
            raise UnsupportedError(f"bine needs a tree (every rank reached once); a step on "
                                   f"{'x'.join(map(str, dims))} reaches a rank twice")
        holds[receivers] = True
        steps.append((node[senders], node[receivers]))
        senders = np.r_[senders, receivers]
    return steps


def _bine_dims(topology, dims):
    """The dimensions the generator walks (as :mod:`.swing` chooses them), the option checked
    against the node count under this generator's name."""
    p = topology.num_nodes
    if dims is not None and int(np.prod(dims)) != p:
        raise UnsupportedError(f"bine: dims {'x'.join(map(str, dims))} make "
                               f"{int(np.prod(dims))} nodes, {topology.name} has {p}")
    return _swing_dims(topology, dims)


def _broadcast(topology, root, dims):
    """The Bine tree broadcast (folded where needed) on ``topology``: transfers, q, shape."""
    p = topology.num_nodes
    shape = _bine_dims(topology, dims)
    q = 1 << (p.bit_length() - 1)
    if q != p or any(k & (k - 1) for k in shape):
        shape = (q,)        # fold: the q working ranks as one dimension
    shape = tuple(k for k in shape if k > 1) or (q,)
    rows, step = [], 1
    top = root
    if root >= q:           # the root's data goes to its stand-in r - q first
        top = root - q
        rows.append(transfer_array(step, root, top, 0, 0.0, 1.0, COPY))
        step += 1
    for senders, receivers in bine_tree_steps(shape, top):
        rows.append(transfer_array(step, senders, receivers, 0, 0.0, 1.0, COPY))
        step += 1
    extra = np.setdiff1d(np.arange(q, p), [root])
    if extra.size:          # fold out: r - q hands the data to r >= q
        rows.append(transfer_array(step, extra - q, extra, 0, 0.0, 1.0, COPY))
    return np.concatenate(rows), q, shape


def _tree_schedule(topology, coll, root, dims):
    """Broadcast: the tree; reduce: the broadcast on the transposed topology, reversed."""
    if coll.name == "reduce":
        down = _tree_schedule(topology.transpose(), _collective("broadcast"), root, dims)
        return reverse(down, coll, topology, algorithm="bine")
    t, q, shape = _broadcast(topology, root, dims)
    return Schedule(topology, coll, t, root=root, algorithm="bine",
                    routing=routing_needed(topology, t),
                    meta={"shape": "tree", "folded": int(topology.num_nodes - q),
                          "dims": list(shape)})


def bine_schedule(topology, collective, *, root=None, progress=None, dims=None):
    """The Bine schedule (see the module) of ``collective`` on ``topology``.

    Parameters
    ----------
    topology : Topology
        Any endpoint topology; tori, meshes, rings and hypercubes are walked by their
        dimensions (node ids mixed-radix, first dimension most significant), anything else as
        one dimension of its nodes in id order unless ``dims`` is given.
    collective : str
        ``broadcast`` and ``reduce`` (Bine trees); ``allreduce``, ``reduce_scatter`` and
        ``allgather`` (the Bine butterfly, Swing's peers and shards).
    root : int, optional
        The root of a broadcast or reduce (default 0).
    progress : callable, optional
        Unused (the schedule is built at once).
    dims : tuple of int, optional
        Dimension sizes (product: the node count) for a topology that is not a torus by name.

    Returns
    -------
    Schedule
        Algorithm ``"bine"``, ``routing="shortest"`` unless every transfer crosses one link
        (then None); meta ``shape`` (``"tree"`` or ``"butterfly"``), ``folded`` (ranks folded
        in: ``p - q``) and ``dims`` (the dimensions walked: ``[q]`` when folded).

    Steps with ``q = 2^L`` working ranks: broadcast and reduce ``L``, each step the whole
    buffer from every rank that holds it, plus one to hand the folded ranks the data (unless
    the root is the only one) and one more when the root is a folded rank; reduce_scatter and
    allgather ``L``, allreduce ``2 L``, each rank sending ``(q-1)/q`` of the vector per phase
    (two more steps when folded).

    Examples
    --------
    >>> from topocoll.topology import topology
    >>> s = bine_schedule(topology("ring:6"), "reduce", root=5)
    >>> s.num_steps, s.meta["folded"], s.root
    (4, 2, 5)
    """
    coll = require_collective(collective, BINE_COLLECTIVES, "bine")
    p = topology.num_nodes
    if p < 2:
        raise UnsupportedError(f"bine needs at least 2 nodes; {topology.name} has {p}")
    if coll.rooted:
        return _tree_schedule(topology, coll, node_root(root, p, "bine"), dims)
    if root is not None:
        raise UnsupportedError(f"bine: {coll.name} takes no root")
    _bine_dims(topology, dims)
    # the Bine butterfly is Swing's (module docstring): same peers, same shards per step
    made = swing_schedule(topology, coll, variant="bandwidth", dims=dims)
    t = made.transfers
    if coll.name == "allgather":     # a folded rank owns its shard: no need to hand it back
        t = t[t["shard"] != t["dst"]]
    return made.replace(transfers=t, algorithm="bine",
                        meta={"shape": "butterfly", "folded": made.meta["folded"],
                              "dims": made.meta["dims"]})


def bine_traffic(topology, collective, *, root=None, dims=None):
    """What :func:`bine_schedule` (same arguments) sends per step and pair
    (:class:`~topocoll.schedule.traffic.StepTraffic`): the butterfly's summed as Swing's rows
    are made (it is Swing's, whose allgather sends no rank its own shard), a tree's from the
    schedule (``N - 1`` rows a step at most).

    >>> from topocoll.topology import topology
    >>> bine_traffic(topology("torus:16x16"), "allreduce").num_steps
    16
    """
    coll = require_collective(collective, BINE_COLLECTIVES, "bine")
    if coll.rooted or topology.num_nodes < 2 or root is not None:
        return traffic_of(bine_schedule(topology, coll, root=root, dims=dims))
    _bine_dims(topology, dims)
    made = swing_traffic(topology, coll, variant="bandwidth", dims=dims)
    return made.replace(algorithm="bine", meta={"shape": "butterfly",
                                                "folded": made.meta["folded"],
                                                "dims": made.meta["dims"]})
