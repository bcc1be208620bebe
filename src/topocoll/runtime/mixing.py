"""One view of "the mixing matrix of iteration k" over every form a caller may hand in.

The gossip runtime accepts a :class:`topocoll.gossip.GossipTopology` (anything with a
``matrix(k)`` method and a ``size``), a plain callable ``k -> W`` or one fixed matrix.
:func:`as_mixing` turns each into a :class:`Mixing`, which checks every ``W_k`` (square, of the
process group's size, finite) and answers what rank ``i`` needs in iteration ``k``: its own
weight, the ranks it receives from with their weights (row ``i`` of ``W_k``) and the ranks it
sends to (column ``i`` of ``W_k``). Both ends of every message read the same matrix, so a send
is posted exactly when the receiver expects it.

>>> import numpy as np
>>> m = as_mixing(np.array([[0.5, 0.5, 0.0], [0.0, 0.5, 0.5], [0.5, 0.0, 0.5]]))
>>> m.size, m.period
(3, 1)
>>> m.plan(0, 1)
MixingPlan(self_weight=0.5, sources=(2,), weights=(0.5,), destinations=(0,))
"""

from typing import NamedTuple

import numpy as np

from ..errors import InputTypeError, ProcessGroupError, TopologyError
from ..units import whole_number

__all__ = ["Mixing", "MixingPlan", "as_mixing", "combine"]

# Matrices of periodic topologies are kept per residue class only up to this period, so that a
# long-period schedule cannot grow the cache without bound.
_MAX_CACHED_PERIOD = 1024


class MixingPlan(NamedTuple):
    """What one rank does in one iteration: ``x_i <- self_weight x_i + sum w_j x_j``.

    ``sources`` are the ranks ``j != i`` with ``W[i, j] != 0`` in ascending order with their
    ``weights``; ``destinations`` the ranks ``j != i`` with ``W[j, i] != 0``, ascending.
    """

    self_weight: float
    sources: tuple
    weights: tuple
    destinations: tuple


class Mixing:
    """The sequence ``W_0, W_1, ...`` of mixing matrices of one gossip topology.

    Parameters
    ----------
    matrix_fn : callable
        ``k -> W_k`` (anything ``numpy.asarray`` turns into an ``(n, n)`` real matrix).
    size : int
        ``n``, the number of ranks.
    period : int or None
        ``W_k`` depends on ``k mod period`` only; ``None`` if unknown (then nothing is cached).
    name : str
        A label for messages.

    Examples
    --------
    >>> m = Mixing(lambda k: np.eye(2) if k % 2 else np.full((2, 2), 0.5), 2, period=2)
    >>> m.matrix(3).tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    >>> m.plan(4, 0).sources
    (1,)
    """

    def __init__(self, matrix_fn, size, period=None, name="mixing"):
        if not callable(matrix_fn):
            raise InputTypeError(f"matrix_fn must be callable, got {type(matrix_fn).__name__}")
        self._fn = matrix_fn
        self.size = whole_number(size, "size")
        self.period = None if period is None else whole_number(period, "period")
        self.name = str(name)
        self._cache = {}

    def __repr__(self):
        return f"Mixing(name={self.name!r}, size={self.size}, period={self.period})"

    def _key(self, k):
        k = whole_number(k, "iteration", 0)
        return k % self.period if self.period is not None else None

    def matrix(self, k):
        """``W_k`` as a read-only float64 ``(n, n)`` array, checked.

        Raises :class:`~topocoll.errors.TopologyError` if it is not square of the right size or
        has a non-finite entry.
        """
        key = self._key(k)
        if key is not None and key in self._cache:
            return self._cache[key][0]
        w = np.array(self._fn(int(k) if key is None else key), dtype=np.float64)
        if w.shape != (self.size, self.size):
            raise TopologyError(f"mixing matrix W_{k} of {self.name} must have shape "
                                f"({self.size}, {self.size}), got {w.shape}")
        if not np.isfinite(w).all():
            raise TopologyError(f"mixing matrix W_{k} of {self.name} has a non-finite entry")
        w.setflags(write=False)
        if key is not None and self.period <= _MAX_CACHED_PERIOD:
            self._cache[key] = (w, {})
        return w

    def plan(self, k, rank):
        """The :class:`MixingPlan` of ``rank`` in iteration ``k``."""
        rank = whole_number(rank, "rank", 0, most=self.size - 1)
        w = self.matrix(k)
        key = self._key(k)
        plans = self._cache[key][1] if key in self._cache else {}
        if rank not in plans:
            row, col = w[rank], w[:, rank]
            src = np.flatnonzero(row)
            src = src[src != rank]
            dst = np.flatnonzero(col)
            dst = dst[dst != rank]
            plans[rank] = MixingPlan(float(row[rank]), tuple(int(j) for j in src),
                                     tuple(float(row[j]) for j in src),
                                     tuple(int(j) for j in dst))
        return plans[rank]


def as_mixing(topology, size=None):
    """A :class:`Mixing` from a gossip topology, a callable ``k -> W`` or a fixed matrix.

    Parameters
    ----------
    topology : GossipTopology, callable, array_like or Mixing
        Anything with ``matrix(k)`` and ``size`` (a :class:`topocoll.gossip.GossipTopology`;
        its ``period`` and ``name`` are used when present), a callable ``k -> (n, n)`` matrix,
        or one ``(n, n)`` matrix (a static topology; numpy array, nested list or torch tensor).
    size : int, optional
        The process group's size; a topology of another size raises
        :class:`~topocoll.errors.ProcessGroupError`.

    Examples
    --------
    >>> as_mixing([[1.0]]).matrix(5).tolist()
    [[1.0]]
    >>> as_mixing(np.eye(4), size=2)
    Traceback (most recent call last):
    ...
    topocoll.errors.ProcessGroupError: topology has 4 nodes but the process group has 2 ranks
    """
    if isinstance(topology, Mixing):
        mixing = topology
    elif hasattr(topology, "matrix") and callable(topology.matrix) and hasattr(topology, "size"):
        mixing = Mixing(topology.matrix, topology.size, period=getattr(topology, "period", None),
                        name=getattr(topology, "name", type(topology).__name__))
    elif callable(topology):
        if size is None:
            raise InputTypeError("a callable k -> W needs the size (the process group's size)")
        mixing = Mixing(topology, size, name=getattr(topology, "__name__", "callable"))
    else:
        if hasattr(topology, "detach"):  # a torch tensor: avoid importing torch here
            topology = topology.detach().cpu().numpy()
        try:
            w = np.array(topology, dtype=np.float64)
        except (TypeError, ValueError):
            raise InputTypeError("topology must be a GossipTopology, a callable k -> W or an "
                                 f"(n, n) matrix, got {type(topology).__name__}") from None
        if w.ndim != 2 or w.shape[0] != w.shape[1] or w.shape[0] < 1:
            raise TopologyError(f"a mixing matrix must be square (n, n), got shape {w.shape}")
        mixing = Mixing(lambda k, w=w: w, w.shape[0], period=1, name=f"static({w.shape[0]})")
    if size is not None and mixing.size != size:
        raise ProcessGroupError(f"topology has {mixing.size} nodes but the process group has "
                                f"{size} ranks")
    return mixing


def combine(plan, x, recvs, out):
    """``out = W[i,i] x + sum_j W[i,j] x_j`` for one slice of torch tensors, in the order
    :mod:`~topocoll.runtime.neighbor` documents (so every slicing and every transport gives
    the same bits); ``recvs`` (one per source of ``plan``) are scratch: scaled in place."""
    import torch

    first = True
    if plan.self_weight != 0.0:
        torch.mul(x, plan.self_weight, out=out)
        first = False
    for w, xj in zip(plan.weights, recvs):
        # Two rounded operations rather than add(..., alpha=w): a fused multiply-add would
        # differ from the documented order in the last bit.
        if first:
            torch.mul(xj, w, out=out)
            first = False
        else:
            out.add_(xj.mul_(w))
    return out.zero_() if first else out
