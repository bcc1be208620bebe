"""Translation symmetry: node ids that are elements of an abelian group ``Z_d1 x ... x Z_dk``
(mixed radix, first dimension most significant) under which the network is invariant.

Tori, hypercubes, circulants, rings, complete graphs and Hamming graphs are such Cayley graphs.
For them, a per-node problem solved at node 0 maps to node v by the translation ``x -> x + v``.
Every symmetry is *verified* on the links before it is returned, whatever a family claims.

>>> from topocoll.topology import topology
>>> translation_group(topology("torus:4x6")).dims
(4, 6)
>>> translation_group(topology("hypercube:3")).dims
(2, 2, 2)
>>> translation_group(topology("genkautz:12,2")) is None
True
"""

from dataclasses import dataclass

import numpy as np

__all__ = ["TranslationGroup", "translation_group", "invariant", "candidates"]


@dataclass(frozen=True)
class TranslationGroup:
    """The group ``Z_d1 x ... x Z_dk`` acting on node ids by coordinate-wise addition."""

    dims: tuple

    def _strides(self):
        strides = np.ones(len(self.dims), dtype=np.int64)
        for i in range(len(self.dims) - 2, -1, -1):
            strides[i] = strides[i + 1] * self.dims[i + 1]
        return strides

    def _combine(self, a, b, sign):
        a = np.asarray(a, dtype=np.int64)
        b = np.asarray(b, dtype=np.int64)
        out = np.zeros(np.broadcast_shapes(a.shape, b.shape), dtype=np.int64)
        for d, s in zip(self.dims, self._strides()):
            out += ((a // s + sign * (b // s)) % d) * s
        return out

    def add(self, x, v):
        """``x + v`` for node-id arrays (broadcasting)."""
        return self._combine(x, v, 1)

    def subtract(self, y, x):
        """``y - x`` for node-id arrays: the label of the link ``x -> y``."""
        return self._combine(y, x, -1)


def invariant(topology, group):
    """True if every translation maps links onto links of equal bandwidth and latency."""
    psrc, pdst, pbw, plat = topology.pairs
    n = topology.num_nodes
    labels = group.subtract(pdst, psrc)
    order = np.lexsort((psrc, labels))
    labels, bw, lat = labels[order], pbw[order], plat[order]
    starts = np.flatnonzero(np.r_[True, labels[1:] != labels[:-1]])
    counts = np.diff(np.r_[starts, labels.size])
    if np.any(counts != n):  # some node lacks a link of this label
        return False
    first = np.repeat(starts, counts)
    return bool(np.all(bw == bw[first]) and np.all(lat == lat[first]))


def candidates(topology):
    """Translation group shapes worth trying on ``topology`` (``dims`` tuples, the family's
    claim first); :func:`translation_group` verifies each."""
    n = topology.num_nodes
    claimed = topology.meta.get("symmetry") if isinstance(topology.meta, dict) else None
    if isinstance(claimed, dict):
        kind = claimed.get("kind")
        if kind == "mixed_radix" and "dims" in claimed:
            dims = tuple(int(d) for d in claimed["dims"])
            yield dims
        elif kind == "xor" and n & (n - 1) == 0:
            yield (2,) * (n.bit_length() - 1)
    meta = topology.meta if isinstance(topology.meta, dict) else {}
    if isinstance(meta.get("dims"), (list, tuple)):  # tori and the like; verified anyway
        yield tuple(int(d) for d in meta["dims"])
    if meta.get("family") == "hamming" and "d" in meta and "q" in meta:
        yield (int(meta["q"]),) * int(meta["d"])
    yield (n,)
    if n > 1 and n & (n - 1) == 0:
        yield (2,) * (n.bit_length() - 1)


def translation_group(topology):
    """A verified :class:`TranslationGroup` of the topology, or ``None`` if none is found.

    Tries the labelling the family claims in ``meta["symmetry"]``, then the cyclic group
    ``Z_N`` and, for N a power of two, ``Z_2^k``; each is checked on every link (O(links)).
    """
    if topology.num_nodes < 2 or topology.switches:
        return None
    seen = set()
    for dims in candidates(topology):
        dims = tuple(d for d in dims if d > 1) or (topology.num_nodes,)
        if int(np.prod(dims)) != topology.num_nodes or dims in seen:
            continue
        seen.add(dims)
        group = TranslationGroup(dims)
        if invariant(topology, group):
            return group
    return None


# the old private names, still imported by schedule/symmetric.py and schedule/verify.py
