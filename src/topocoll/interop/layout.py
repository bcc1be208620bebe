"""Where a collective's data lives in MSCCL's three per-rank buffers: the one buffer layout of
every collective. The exporter, the lint and the replay use it with ``K`` chunks per shard; the
torch runtime (:func:`topocoll.runtime.plan.layout`) uses it with one chunk per shard and adds
element sizes.

MSCCL divides each rank's input (``i``), output (``o``) and scratch (``s``) buffer into chunks;
a program moves chunks between them. With ``K`` chunks per shard (docs/format.md: a shard is
what one node contributes or receives), chunk ``j`` of shard ``x`` is the byte range
``[j/K, (j+1)/K)`` of that shard, and the collectives lay their shards out as msccl-tools does:

================  ======================  ==========================  ==================
collective        input chunks            output chunks               shards
================  ======================  ==========================  ==================
allgather         ``K``: own shard        ``N*K``: shard ``x`` at xK  ``N``
reduce_scatter    ``N*K``: every shard    ``K``: own shard            ``N``
allreduce         ``N*K``                 ``N*K``                     ``N``
broadcast         ``K`` (the root's)      ``K``                       1
reduce            ``K``                   ``K`` (the root's)          1
scatter           ``N*K`` (the root's)    ``K``: own shard            ``N``
gather            ``K``: own shard        ``N*K`` (the root's)        ``N``
alltoall          ``N*K``: to ``y`` at yK ``N*K``: from ``x`` at xK   ``N*N``
================  ======================  ==========================  ==================

>>> lay = Layout("alltoall", 3, 2, None)
>>> lay.input_chunks, lay.output_chunks
(6, 6)
>>> g = (2 * 3 + 1) * 2              # chunk 0 of shard 2*N+1, which goes from rank 2 to 1
>>> lay.input_of(2, g), lay.input_of(1, g), lay.output_of(1, g)
(2, None, 4)

An allreduce may cut its buffer into any number ``C`` of chunks, a multiple of the ranks or
not (TACCL writes 3 chunks on 2 ranks, msccl-tools 1 chunk on 3): then ``k = C/N`` is a
fraction, chunk ``c`` covers ``[c/C, (c+1)/C)`` of the buffer and :meth:`Layout.pieces` says
which parts of which shards that is (a chunk may span two shards):

>>> lay = Layout("allreduce", 2, Fraction(3, 2), None)
>>> lay.input_chunks, [[(x, str(lo), str(hi)) for x, lo, hi in lay.pieces(c)] for c in range(3)]
(3, [[(0, '0', '2/3')], [(0, '2/3', '1'), (1, '0', '1/3')], [(1, '1/3', '1')]])
"""

from fractions import Fraction

from ..collectives import collective as _collective
from ..errors import UnsupportedError

__all__ = ["Layout", "RUNTIME_NAMES", "RUNTIME_SPELLINGS", "collective_of_runtime_name"]

#: our collective name -> the ``coll`` attribute the runtime understands
RUNTIME_NAMES = {"allgather": "allgather", "reduce_scatter": "reducescatter",
                 "allreduce": "allreduce", "broadcast": "broadcast", "reduce": "reduce",
                 "alltoall": "alltoall", "gather": "gather", "scatter": "scatter"}

RUNTIME_SPELLINGS = {"reduce_scatter": "reduce_scatter", "reducescatter": "reduce_scatter",
              "all_gather": "allgather", "all_reduce": "allreduce",
              "all_to_all": "alltoall", "alltoall": "alltoall"}


def collective_of_runtime_name(name):
    """Our collective for a ``coll`` attribute, in the runtime's or an older tool's spelling."""
    key = str(name).strip().lower()
    key = RUNTIME_SPELLINGS.get(key, key)
    try:
        return _collective(key)
    except UnsupportedError:
        raise UnsupportedError(f"coll={name!r} is not a collective topocoll models (one of "
                               f"{', '.join(sorted(set(RUNTIME_NAMES.values())))})") from None


class Layout:
    """Chunks of one collective on ``n`` ranks with ``k`` chunks per shard (see module doc).

    Shard-chunk ``g = shard * k + j`` names chunk ``j`` of a shard; ``input_of(rank, g)`` and
    ``output_of(rank, g)`` give its index in that rank's input/output buffer, or ``None``.
    An allreduce may have a fractional ``k`` (a :class:`~fractions.Fraction` with ``n * k``
    whole): then ``g`` is simply the buffer's chunk ``g`` (see :meth:`pieces`).
    """

    def __init__(self, collective, n, k=1, root=None):
        self.collective = _collective(collective)
        name = self.collective.name
        self.n, self.root = int(n), root
        k = Fraction(k)
        if k.denominator != 1 and (name != "allreduce" or (self.n * k).denominator != 1):
            raise UnsupportedError(f"{name} on {n} ranks needs a whole number of chunks per "
                                   f"shard, not {k}")
        self.k = k = int(k) if k.denominator == 1 else k
        self.num_shards = self.collective.num_shards(self.n)
        per_rank = {"allgather": (k, n * k), "reduce_scatter": (n * k, k),
                    "allreduce": (n * k, n * k), "broadcast": (k, k), "reduce": (k, k),
                    "scatter": (n * k, k), "gather": (k, n * k), "alltoall": (n * k, n * k)}
        self.input_chunks, self.output_chunks = (int(c) for c in per_rank[name])
        #: ranks whose input and output may be one buffer (the runtime's in-place call)
        self.inplace = name not in ("alltoall", "gather", "scatter")

    @property
    def num_chunks(self):
        """Shard-chunks in all: ``num_shards * k``."""
        return int(self.num_shards * self.k)

    @property
    def whole(self):
        """Whether every chunk lies in one shard (``k`` is a whole number)."""
        return isinstance(self.k, int)

    def pieces(self, g):
        """``(shard, lo, hi)`` of each part of shard-chunk ``g``: the chunk covers the fraction
        ``[g/k, (g+1)/k)`` of the shards laid end to end, so with a whole ``k`` one shard's
        ``[j/k, (j+1)/k)``, with a fractional one up to the ends of two or more shards.
        ``lo`` and ``hi`` are exact :class:`~fractions.Fraction` values."""
        a, b = Fraction(g) / self.k, Fraction(g + 1) / self.k
        out = []
        x = a.numerator // a.denominator
        while x < b:
            out.append((x, max(a, Fraction(x)) - x, min(b, Fraction(x + 1)) - x))
            x += 1
        return out

    def input_of(self, rank, g):
        """Index of shard-chunk ``g`` in ``rank``'s input buffer at the start, or ``None``."""
        name, n, k = self.collective.name, self.n, self.k
        shard, j = divmod(g, k)
        if name in ("allgather", "gather"):
            return j if shard == rank else None
        if name in ("reduce_scatter", "allreduce"):
            return g
        if name in ("broadcast", "reduce"):
            return j if (name == "reduce" or rank == self.root) else None
        if name == "scatter":
            return g if rank == self.root else None
        src, dst = divmod(shard, n)            # alltoall
        return dst * k + j if src == rank else None

    def output_of(self, rank, g):
        """Index of shard-chunk ``g`` in ``rank``'s output buffer at the end, or ``None``."""
        name, n, k = self.collective.name, self.n, self.k
        shard, j = divmod(g, k)
        if name in ("allgather", "allreduce"):
            return g
        if name in ("reduce_scatter", "scatter"):
            return j if shard == rank else None
        if name in ("broadcast",):
            return j
        if name in ("reduce", "gather"):
            return (j if name == "reduce" else g) if rank == self.root else None
        src, dst = divmod(shard, n)            # alltoall
        return src * k + j if dst == rank else None

    def inputs(self, rank):
        """``(g, index)`` of every shard-chunk in ``rank``'s input buffer at the start."""
        name, n, k = self.collective.name, self.n, self.k
        if name in ("allgather", "gather"):
            return [(rank * k + j, j) for j in range(k)]
        if name in ("reduce_scatter", "allreduce", "reduce"):
            return [(g, g) for g in range(self.input_chunks)]
        if name in ("broadcast", "scatter"):
            return [(g, g) for g in range(self.input_chunks)] if rank == self.root else []
        return [((rank * n + y) * k + j, y * k + j) for y in range(n) for j in range(k)]

    def outputs(self, rank):
        """``(g, index)`` of every shard-chunk ``rank``'s output buffer must hold at the end."""
        name, n, k = self.collective.name, self.n, self.k
        if name in ("allgather", "allreduce", "broadcast"):
            return [(g, g) for g in range(self.output_chunks)]
        if name in ("reduce_scatter", "scatter"):
            return [(rank * k + j, j) for j in range(k)]
        if name in ("reduce", "gather"):
            return [(g, g) for g in range(self.output_chunks)] if rank == self.root else []
        return [((x * n + rank) * k + j, x * k + j) for x in range(n) for j in range(k)]

    def alias(self, rank, buf, index):
        """The storage cell of ``(buf, index)`` when input and output are one buffer (in-place).

        In-place calls pass one buffer as both: allgather's input is the rank's slice of the
        output, reduce_scatter's output the rank's slice of the input, and the others share
        offsets. Hazards are tracked on these cells so that an export is right in both modes.
        """
        if not self.inplace or buf == "s":
            return (buf, index)
        name, k = self.collective.name, self.k
        if name == "allgather" and buf == "i":
            return ("o", rank * k + index)
        if name == "reduce_scatter" and buf == "o":
            return ("i", rank * k + index)
        if name in ("allreduce", "broadcast", "reduce") and buf == "i":
            return ("o", index)
        return (buf, index)
