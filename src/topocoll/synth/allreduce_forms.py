"""Allreduce built two more ways than reduce-scatter + allgather (docs/math.md, "Allreduce
forms"): a BFB reduce to one root followed by a BFB broadcast from it, and one all-to-all of
whole buffers along shortest routes, each buffer reduced where it lands.

Both are schedules of the allreduce collective (N shards, every node starts with its own
contribution to each), so the verifier checks them as it checks any allreduce. The ``bfb``
generator makes them with its option ``via`` (:data:`VIAS`); :func:`allreduce_form_cost` gives
their step-model cost in closed form.

>>> from topocoll.topology import topology
>>> from topocoll.schedule.verify import verify
>>> from topocoll.synth import generate
>>> s = generate("hypercube:3", "allreduce", "bfb", via="reduce_broadcast")
>>> s.num_steps, s.meta["via"], verify(s).valid
(6, 'reduce_broadcast', True)
>>> a = alltoall_allreduce(topology("ring:5"))
>>> a.num_steps, a.routing, verify(a).valid
(1, 'shortest', True)
"""

import numpy as np

from ..collectives import REDUCE
from ..errors import UnsupportedError
from ..limits import require_memory
from ..schedule.model import BUILD_BYTES_PER_TRANSFER, Schedule, TRANSFER_DTYPE
from ..schedule.routing import transfer_hops
from ..topology.metrics import distance_matrix, require_strongly_connected

__all__ = ["VIAS", "reduce_broadcast_allreduce", "alltoall_allreduce", "buffer_to_shards",
           "allreduce_form_cost"]

#: How the ``bfb`` generator builds an allreduce (its option ``via``): reduce-scatter then
#: allgather (the default), reduce to a root then broadcast, or one all-to-all of buffers.
VIAS = ("reduce_scatter", "reduce_broadcast", "alltoall")

_SNAP = 1e-9    # a buffer offset this close to a shard boundary is that boundary


def buffer_to_shards(transfers, n):
    """Transfers of a one-shard collective (broadcast, reduce: ``[lo, hi)`` of the whole
    buffer) as transfers of the ``n`` shards of an allreduce.

    The buffer is shards ``0 .. n-1`` end to end, so ``[lo, hi)`` covers shards
    ``floor(lo n) .. ceil(hi n) - 1``, each piece clipped to its shard; the bytes on every link
    stay the same.

    >>> from topocoll.schedule.model import transfer_array
    >>> t = buffer_to_shards(transfer_array([1], [0], [1], [0], [0.25], [1.0]), 2)
    >>> t[["shard", "lo", "hi"]].tolist()
    [(0, 0.5, 1.0), (1, 0.0, 1.0)]
    """
    lo, hi = _snap(transfers["lo"] * n), _snap(transfers["hi"] * n)
    first = np.floor(lo).astype(np.int64)
    counts = np.ceil(hi).astype(np.int64) - first
    pos = np.repeat(np.arange(transfers.size), counts)
    shard = first[pos] + np.arange(pos.size) - np.repeat(np.cumsum(counts) - counts, counts)
    out = transfers[pos].copy()
    out["shard"] = shard
    out["lo"] = np.clip(lo[pos] - shard, 0.0, 1.0)
    out["hi"] = np.clip(hi[pos] - shard, 0.0, 1.0)
    return out


def _snap(x):
    near = np.rint(x)
    return np.where(np.abs(x - near) < _SNAP, near, x)


def reduce_broadcast_allreduce(reduce, broadcast):
    """Allreduce as ``reduce`` (a schedule of the reduce to a root, e.g.
    :func:`~topocoll.synth.bfb.bfb_reduce`) then ``broadcast`` (the broadcast from the same
    root on the same topology): the broadcast's steps follow the reduce's, and every transfer
    of a buffer range becomes the shard pieces it covers (the same bytes on every link).

    The BFB reduce takes the in-eccentricity of the root in steps, the broadcast its
    out-eccentricity: twice the radius at a centre of a bidirectional topology.

    >>> from topocoll.synth.bfb import bfb_broadcast, bfb_reduce
    >>> from topocoll.topology import topology
    >>> t = topology("ring:6")
    >>> s = reduce_broadcast_allreduce(bfb_reduce(t, 2), bfb_broadcast(t, 2))
    >>> s.num_steps, s.meta["root"], s.num_shards
    (6, 2, 6)
    """
    if reduce.root != broadcast.root or reduce.topology is not broadcast.topology:
        raise UnsupportedError("reduce and broadcast must share their root and topology")
    n = reduce.topology.num_nodes
    second = buffer_to_shards(broadcast.transfers, n)
    second["step"] += reduce.last_step
    transfers = np.concatenate([buffer_to_shards(reduce.transfers, n), second])
    return Schedule(reduce.topology, "allreduce", transfers, algorithm=reduce.algorithm,
                    meta={"via": "reduce_broadcast", "root": int(reduce.root)})


def alltoall_allreduce(topology):
    """Allreduce as one all-to-all of whole buffers: in one step every node sends each of its
    ``N`` shards to every other node along the shortest route (``routing="shortest"``), and
    each node reduces what arrives into its own contribution.

    The transfers are routed: a relay forwards a buffer without reducing it into its own
    (a schedule's node holds one partial sum per shard, so a buffer relayed hop by hop
    through it would be merged into that sum). ``N^2 (N-1)`` transfers.

    >>> from topocoll.topology import topology
    >>> s = alltoall_allreduce(topology("hypercube:2"))
    >>> s.num_transfers, s.meta["via"]
    (48, 'alltoall')
    """
    require_strongly_connected(topology, "BFB allreduce via all-to-all")
    n = topology.num_nodes
    count = n * n * (n - 1)
    require_memory(count * BUILD_BYTES_PER_TRANSFER,
                   f"the all-to-all allreduce on {n} nodes ({count:,} transfers)")
    src, dst = np.nonzero(~np.eye(n, dtype=bool))
    t = np.zeros(count, dtype=TRANSFER_DTYPE)
    t["step"] = 1
    t["src"] = np.repeat(src, n)
    t["dst"] = np.repeat(dst, n)
    t["shard"] = np.tile(np.arange(n), src.size)
    t["hi"] = 1.0
    t["op"] = REDUCE
    return Schedule(topology, "allreduce", t, algorithm="bfb", routing="shortest",
                    meta={"via": "alltoall"})


def allreduce_form_cost(topology, via, root=0):
    """Step-model ``(T_L, T_B per byte of M)`` of the ``bfb`` allreduce made ``via``
    ``"reduce_broadcast"`` or ``"alltoall"``, from the topology alone (docs/math.md,
    "Allreduce forms"); the schedule is never made.

    ``reduce_broadcast``: the broadcast's step t reaches the layer ``L_t`` of nodes at
    distance t from ``root``; a node v of it gets the whole buffer from its parents (in-links
    from ``L_{t-1}``), split in proportion to their bandwidth, so step t costs
    ``max_v 1 / c_t(v)`` per byte, ``c_t(v)`` the parents' summed bandwidth, and the largest
    parent link latency; the reduce is the same on the transposed topology.
    ``alltoall``: one step, ``T_L`` the longest route's latency, ``T_B`` the largest
    ``pi(l) / b(l)`` over node pairs l, ``pi(l)`` the ordered pairs whose route crosses l.

    >>> from topocoll.topology import topology
    >>> allreduce_form_cost(topology("hypercube:3").with_links(latency=1.0, bandwidth=1.0),
    ...                     "reduce_broadcast")
    (6.0, 3.6666666666666665)
    >>> allreduce_form_cost(topology("ring:7").with_links(latency=1.0, bandwidth=1.0),
    ...                     "alltoall")
    (3.0, 6.0)
    """
    if via == "reduce_broadcast":
        dist = distance_matrix(topology)
        t_l_b, t_b_b = _layer_cost(topology, dist[root], reverse=False)
        t_l_r, t_b_r = _layer_cost(topology, dist[:, root], reverse=True)
        return t_l_b + t_l_r, t_b_b + t_b_r
    if via == "alltoall":
        return _alltoall_cost(topology)
    raise UnsupportedError(f"allreduce_form_cost: via must be reduce_broadcast or alltoall, "
                           f"got {via!r}")


def _layer_cost(topology, dist, *, reverse):
    """(T_L, T_B per byte) of a BFB broadcast whose BFS layers are ``dist`` (``reverse``: a
    reduce, links pointing from layer t to layer t-1)."""
    psrc, pdst, pbw, plat = topology.pairs
    far, near = (psrc, pdst) if reverse else (pdst, psrc)
    used = dist[far] == dist[near] + 1           # parent links of the node ``far``
    cap = np.bincount(far[used], weights=pbw[used], minlength=topology.num_nodes)
    t_l = t_b = 0.0
    for step in range(1, int(dist.max()) + 1):
        layer = dist == step
        t_b += float(np.max(1.0 / cap[layer]))
        t_l += float(np.max(plat[used & (dist[far] == step)]))
    return t_l, t_b


def _alltoall_cost(topology):
    """(T_L, T_B per byte) of :func:`alltoall_allreduce`: one whole buffer per ordered pair."""
    n = topology.num_nodes
    src, dst = np.nonzero(~np.eye(n, dtype=bool))
    who, link, _ = transfer_hops(topology, "shortest", src, dst)
    _, _, pbw, plat = topology.pairs
    pair = topology.pair_index(topology.src[link], topology.dst[link])
    load = np.bincount(pair, minlength=pbw.size)
    route_latency = np.bincount(who, weights=plat[pair], minlength=src.size)
    return float(route_latency.max()), float(np.max(load / pbw))
