"""Gossip as decent_dp runs it: one ``all_reduce`` per edge of each iteration.

decent_dp describes iteration ``k`` of a gossip topology as *edges*: groups of ranks that
partition the ranks, each with a weight ``w``; every rank ``i`` of an edge of ``m`` ranks gets::

    x_i <- w x_i + (1 - w) / (m - 1) * sum_{j in edge, j != i} x_j

which is ``W_k x`` for the mixing matrix whose rows inside an edge hold ``w`` on the diagonal,
``(1 - w) / (m - 1)`` on every other rank of the edge and nothing outside it. :func:`mixing_edges`
reads a matrix (or a topology's ``W_k``) back as those edges, or says in one line why it is not
of that shape; :func:`edge_allreduce` averages with them, one ``all_reduce`` on the edge's
process group (made once, kept for the group's life), where
:func:`~topocoll.runtime.neighbor_allreduce` sends point-to-point messages.

The sum is combined as ``c * sum + (w - c) * x_i`` (``c = (1 - w) / (m - 1)``; the second term
is skipped when ``w == c``, as for uniform edges), the same value as the formula above. The
order of the ``all_reduce``'s sum is gloo's, so the bits may differ from
:func:`~topocoll.runtime.neighbor_allreduce`'s (in the last places); for two-rank edges of
weight 1/2 they are the same. A rank alone in its edge does not communicate.

Edge groups are made with ``torch.distributed.new_group`` when an iteration first needs them
and kept in this module's table per parent group (weakly, as
:mod:`~topocoll.runtime.neighborhood` keeps its own). Every process makes every edge's group
that is not made yet, in the order of the edges (torch's rule), so every rank must call with the
same topology and iterations in the same order, and the group must hold every process (torch
names a group made by only some processes after the groups each has made, so groups made per
edge inside a smaller group would disagree: :class:`~topocoll.errors.UnsupportedError`). An
edge of every rank is the group itself.

>>> mixing_edges([[0.5, 0.5, 0.0], [0.5, 0.5, 0.0], [0.0, 0.0, 1.0]])
(Edge(ranks=(0, 1), weight=0.5), Edge(ranks=(2,), weight=1.0))
"""

import weakref
from typing import NamedTuple

import numpy as np

from ..errors import InputTypeError, ProcessGroupError, TopologyError, UnsupportedError
from .grouptable import GroupTable
from .launch import group_info, missing_ranks, report_iteration
from .mixing import Mixing, as_mixing
from .neighbor import check_call

__all__ = ["Edge", "EdgeHandle", "mixing_edges", "edge_allreduce", "post_edge"]

#: Weights closer than this (relative to 1) are the same weight.
TOLERANCE = 1e-12

# per parent process group: {edge ranks: its process group}, kept while the group lives
_MADE = GroupTable()
# id of a checked matrix -> (a weak reference to it, its edges): Mixing keeps its matrices.
_READ = {}


class Edge(NamedTuple):
    """One all_reduce group of an iteration: its ``ranks`` (ascending) and ``weight`` ``w``,
    the share of its own tensor each rank keeps (the rest is split evenly among the others)."""

    ranks: tuple
    weight: float

    @property
    def neighbor_weight(self):
        """``(1 - w) / (m - 1)``: the weight of every other rank of the edge (0 alone)."""
        m = len(self.ranks)
        return 0.0 if m == 1 else (1.0 - self.weight) / (m - 1)


def _same(a, b):
    return abs(a - b) <= TOLERANCE * max(1.0, abs(a), abs(b))


def _names(ranks):
    ranks = [str(r) for r in ranks]
    return ranks[0] if len(ranks) == 1 else ", ".join(ranks[:-1]) + " and " + ranks[-1]


def _check_row(w, i, members, what):
    """Raise unless row ``i`` of ``w`` is one edge's row: ``members`` share one weight and the
    diagonal completes it to 1."""
    others = [j for j in members if j != i]
    if not others:
        return
    weights = [w[i, j] for j in others]
    for j, wj in zip(others, weights):
        if not _same(wj, weights[0]):
            raise TopologyError(f"rank {i} weighs ranks {others[0]} and {j} differently "
                                f"({weights[0]:g} and {wj:g}) in {what}: not one all_reduce "
                                "group")
    if not _same(w[i, i] + len(others) * weights[0], 1.0):
        raise TopologyError(f"rank {i}'s weights sum to {w[i, i] + sum(weights):g}, not 1, in "
                            f"{what}: not w x_i + (1 - w)/(m - 1) * (the others) of one "
                            "all_reduce group")


def _read_matrix(w, what):
    """The edges of one checked ``(n, n)`` matrix (see :func:`mixing_edges`)."""
    n = w.shape[0]
    support = [frozenset(np.flatnonzero(w[i]).tolist()) | {i} for i in range(n)]
    edges, seen = [], set()
    for i in range(n):
        for j in sorted(support[i]):
            if support[j] != support[i]:
                if i not in support[j]:
                    raise TopologyError(f"rank {i} weighs rank {j} but rank {j} does not weigh "
                                        f"rank {i} in {what}: not one all_reduce group")
                k = min(support[i] ^ support[j])
                a, b = (i, j) if k in support[i] else (j, i)
                raise TopologyError(f"rank {a} weighs rank {k} but rank {b} does not, though "
                                    f"ranks {i} and {j} weigh each other, in {what}: the "
                                    "groups overlap, not one all_reduce group")
        _check_row(w, i, sorted(support[i]), what)
        if i not in seen:
            seen |= support[i]
            edges.append(Edge(tuple(sorted(support[i])), float(w[i, i])))
    return tuple(edges)


def mixing_edges(topology, iteration=0, size=None):
    """``W_k`` read as decent_dp's edges: the partition of the ranks into all_reduce groups.

    Parameters
    ----------
    topology : GossipTopology, Mixing, callable or array_like
        Anything :func:`~topocoll.runtime.as_mixing` accepts (a fixed matrix among them).
    iteration : int
        ``k``: which ``W_k``.
    size : int, optional
        The number of ranks (needed for a callable ``k -> W``).

    Returns
    -------
    tuple of Edge
        Every rank in exactly one edge; edges in the order of their lowest rank.

    Raises
    ------
    TopologyError
        ``W_k`` is not of that shape; the one-line message names the rank and why (two
        weights of one row differ, a weight leaves the group, a row does not sum to 1).

    Examples
    --------
    >>> from topocoll.gossip import gossip_topology
    >>> [e.ranks for e in mixing_edges(gossip_topology("one-peer-exp", 4), 1)]
    [(0, 2), (1, 3)]
    >>> mixing_edges([[0.5, 0.25, 0.25], [0.5, 0.5, 0.0], [0.5, 0.0, 0.5]])
    Traceback (most recent call last):
    ...
    topocoll.errors.TopologyError: rank 0 weighs rank 2 but rank 1 does not, though ranks 0 \
and 1 weigh each other, in static(3) W_0: the groups overlap, not one all_reduce group
    """
    mixing = topology if isinstance(topology, Mixing) else as_mixing(topology, size)
    w = mixing.matrix(iteration)
    known = _READ.get(id(w))
    if known is not None and known[0]() is w:
        return known[1]
    edges = _read_matrix(w, f"{mixing.name} W_{iteration}")
    try:
        _READ[id(w)] = (weakref.ref(w, lambda ref, key=id(w): _READ.pop(key, None)), edges)
    except TypeError:     # not weakly referable: read again next time
        pass
    return edges


def edge_group(edges, rank, size, group=None):
    """The process group of ``rank``'s edge among ``edges`` (None alone; the group itself for an
    edge of every rank), made on first use: every edge's group at once (collective)."""
    import torch.distributed as dist

    if size != dist.get_world_size():
        raise UnsupportedError(f"edge all_reduce on a group of {size} of the "
                               f"{dist.get_world_size()} processes: torch names a group made by "
                               "only some processes after the groups each has made, so edge "
                               "groups made inside a smaller group disagree; use a group of "
                               "every process (or point-to-point neighbor_allreduce)")
    mine = next(e for e in edges if rank in e.ranks)
    if len(mine.ranks) == size:
        return group
    pg = group if group is not None else dist.group.WORLD
    made = _MADE.get(pg, dict)
    # every process makes every edge's group, in order, even one alone (torch's rule)
    for e in edges:
        if 1 < len(e.ranks) < size and e.ranks not in made:
            ranks = dist.get_process_group_ranks(pg)        # global ranks, in group-rank order
            made[e.ranks] = dist.new_group([ranks[r] for r in e.ranks])
    return made.get(mine.ranks)


def kept_edge_groups():
    """How many edge process groups this process keeps (of groups still alive)."""
    return sum(len(made) for made in _MADE.values())


class EdgeHandle:
    """An in-flight :func:`edge_allreduce`; :meth:`wait` returns the averaged tensor."""

    def __init__(self, work, summed, x, edge, out, *, iteration=None, timeout=None):
        self._work, self._sum, self._x, self._edge = work, summed, x, edge
        self._out, self._iteration, self._timeout = out, iteration, timeout
        self._result = None

    def is_completed(self):
        """True when the all_reduce is through (or there is none)."""
        return self._result is not None or self._work is None or self._work.is_completed()

    def _wait_transfers(self):
        """Finish the all_reduce without combining (the result is dropped)."""
        work, self._work = self._work, None
        if work is not None:
            _wait(work, self._edge, self._iteration, self._timeout)
        if self._iteration is not None:
            report_iteration(self._iteration)

    def wait(self):
        """Block until the all_reduce is through and return ``w x_i + c (sum - x_i)``
        (idempotent)."""
        if self._result is None:
            self._wait_transfers()
            self._result = _combine(self._edge, self._sum, self._x, self._out)
            self._sum = self._x = None
        return self._result

    def __del__(self):
        if getattr(self, "_work", None) is not None:
            try:
                self._work.wait()
            except Exception:   # the group is gone (shutdown)
                pass


def _wait(work, edge, iteration, timeout):
    missing = missing_ranks(work, timeout)
    if missing is not None:
        raise ProcessGroupError(f"edge all_reduce, iteration {iteration or 0}: the edge of "
                                f"ranks {_names(edge.ranks)} did not finish{missing}")


def _combine(edge, summed, x, out):
    """``out = c * summed + (w - c) * x`` (``summed`` is scratch); ``out`` None: a new one."""
    import torch

    w, c = edge.weight, edge.neighbor_weight
    if len(edge.ranks) == 1:        # alone: w x_i
        if out is None:
            return x * w
        return torch.mul(x, w, out=out)
    summed.mul_(c)
    if w != c:
        if out is not None and out.data_ptr() == x.data_ptr():
            return out.mul_(w - c).add_(summed)
        summed.add_(x * (w - c))
    if out is None:
        return summed
    return out.copy_(summed)


def post_edge(send, x, edge, sub, out, *, iteration=None, timeout=None):
    """Start ``all_reduce(send)`` on ``sub`` (``send`` is overwritten with the sum; ``x`` is
    this rank's tensor, read on ``wait``); an :class:`EdgeHandle`."""
    import torch.distributed as dist

    if iteration is not None:
        report_iteration(iteration, entering=True)
    work = None
    if len(edge.ranks) > 1:
        work = dist.all_reduce(send, op=dist.ReduceOp.SUM, group=sub, async_op=True)
    return EdgeHandle(work, send, x, edge, out, iteration=iteration, timeout=timeout)


def edge_allreduce(tensor, topology, iteration=0, *, group=None, out=None, async_op=False,
                   timeout=None):
    """decent_dp's gossip: rank ``i`` gets ``W_k[i, :] x`` by one all_reduce on its edge.

    Parameters
    ----------
    tensor : torch.Tensor
        This rank's ``x_i`` (floating point; same shape and dtype on every rank).
    topology : GossipTopology, callable or array_like
        As for :func:`~topocoll.runtime.neighbor_allreduce`; every ``W_k`` used must be edges
        (:func:`mixing_edges`).
    iteration : int
        ``k``: which ``W_k``.
    group : ProcessGroup, optional
        The group (default: the world); ranks in ``W`` are ranks of this group.
    out : torch.Tensor, optional
        Where to write the result (may be ``tensor`` itself); default a new tensor.
    async_op : bool
        Return an :class:`EdgeHandle` at once (the tensor is copied first); ``wait()`` returns
        the result.
    timeout : float, optional
        Seconds to wait for the edge's all_reduce (default: the process group's own).

    Returns
    -------
    torch.Tensor or EdgeHandle

    Raises
    ------
    TopologyError
        ``W_k`` is not decent_dp's edges (the message names the rank and why).
    ProcessGroupError
        No process group, a topology of another size, an edge that did not finish in time.
    UnsupportedError
        ``group`` does not hold every process (see the module).
    InputTypeError
        ``tensor`` is not a floating-point torch tensor; ``out`` does not match it.

    Examples
    --------
    >>> import torch
    >>> from topocoll.runtime import single_process_group
    >>> with single_process_group():
    ...     edge_allreduce(torch.tensor([2.0, 4.0]), [[1.0]]).tolist()
    [2.0, 4.0]
    """
    import torch

    check_call(tensor, out=out, tag=0, slice_bytes=None, timeout=timeout)
    rank, size = group_info(group)
    if isinstance(topology, str):
        raise InputTypeError("edge_allreduce takes a topology, not its name; build it with "
                             "topocoll.gossip.gossip_topology")
    edges = mixing_edges(as_mixing(topology, size), iteration)
    edge = next(e for e in edges if rank in e.ranks)
    sub = edge_group(edges, rank, size, group)
    with torch.no_grad():
        x = tensor.detach()
        if async_op:
            x = x.clone(memory_format=torch.contiguous_format)
        send = x.clone(memory_format=torch.contiguous_format)
        handle = post_edge(send, x, edge, sub, out, iteration=iteration, timeout=timeout)
        return handle if async_op else handle.wait()
