"""Bluefog's call form of neighbor averaging: one rank's weights and send list, not a matrix.

Bluefog (``bluefog.torch.neighbor_allreduce``) lets every rank describe its own part of the
iteration: ``self_weight``, ``neighbor_weights = {source rank: weight}`` (what it receives and
how it weighs it) and ``send_neighbors`` (the ranks it sends to). :func:`bluefog_plan` turns
these into the :class:`~topocoll.runtime.mixing.MixingPlan` that
``as_mixing(topology).plan(k, rank)`` gives for a matrix, so
:func:`~topocoll.runtime.neighbor_allreduce` exchanges and combines both forms with the same
code (and the same bits: ``x_i <- self_weight x_i + sum_j w_j x_j``, sources in ascending
order).

A matrix is consistent by construction: both ends of every message read the same ``W``. Per-
rank lists are not, so by default every call first checks them across the group: one
``all_gather`` of a packed row per rank (a flag byte and two ``n``-bit rows: whom it sends to,
whom it receives from; about ``n^2 / 4`` bytes arrive at every rank, 4 KiB at 128 ranks and
4 MiB at 4096) and an ``O(n^2)`` bit comparison. Every rank sees the same rows, so every rank
reaches the same verdict: either all exchange, or all raise, and a send that nobody receives
(or a receive nobody sends) is a :class:`~topocoll.errors.ProcessGroupError` naming the pair,
never a hang. Where ``send_neighbors`` is omitted the same gather tells each rank who reads it
(Bluefog takes its static topology's out-neighbours there; topocoll has no global topology).
``check=False`` (Bluefog's ``enable_topo_check=False``) skips the gather: nothing is checked
and ``send_neighbors`` must be given.

:func:`one_peer_exp_send_recv` yields Bluefog's dynamic one-peer exponential-2 schedule
(``GetDynamicOnePeerSendRecvRanks`` over its default exponential-2 graph) for one rank.

>>> g = one_peer_exp_send_recv(8, 3)
>>> [next(g) for _ in range(4)]
[([4], [2]), ([5], [1]), ([7], [7]), ([4], [2])]
>>> bluefog_plan(0, 2, 0.5, {1: 0.5}, [1], check=False)
MixingPlan(self_weight=0.5, sources=(1,), weights=(0.5,), destinations=(1,))
"""

import math
import numbers

import numpy as np

from ..errors import InputTypeError, ProcessGroupError, TopocollError, TopologyError
from ..units import real_number, whole_number
from .launch import missing_ranks
from .mixing import MixingPlan, as_mixing

__all__ = ["bluefog_plan", "call_plan", "one_peer_exp_send_recv"]

_BAD, _INFER = 1, 2        # flag bits of a rank's gathered row


def one_peer_exp_send_recv(size, rank):
    """Bluefog's dynamic one-peer exponential-2 schedule for ``rank``: an endless generator of
    ``(send_ranks, recv_ranks)``, one pair of lists per iteration.

    In iteration ``k`` rank ``i`` sends to ``i + 2^t`` and receives from ``i - 2^t`` (mod
    ``size``), ``t = k mod m``, ``m = ceil(log2 size)``: the sequence of Bluefog's
    ``GetDynamicOnePeerSendRecvRanks(ExponentialTwoGraph(size), i)``, and the lists of
    ``gossip_topology("one-peer-exponential-graph", size)``. With Bluefog's weights
    ``1/(len(recv) + 1) = 1/2`` it reaches the exact mean after ``log2 size`` iterations when
    ``size`` is a power of two. A world of one yields ``([], [])`` (Bluefog divides by zero).

    Parameters
    ----------
    size : int
        Ranks in the group, >= 1.
    rank : int
        This rank, in ``0 .. size - 1``.

    Returns
    -------
    generator of (list of int, list of int)

    Examples
    --------
    >>> g = one_peer_exp_send_recv(4, 0)
    >>> next(g), next(g), next(g)
    (([1], [3]), ([2], [2]), ([1], [3]))
    """
    size = whole_number(size, "size")
    rank = whole_number(rank, "rank", 0, most=size - 1)
    return _one_peer_exp(size, rank)


def _one_peer_exp(size, rank):
    offsets = (size - 1).bit_length()     # the powers of two below size: 1, 2, ..., 2^(m-1)
    k = 0
    while True:
        if offsets == 0:
            yield [], []
        else:
            shift = 1 << (k % offsets)
            yield [(rank + shift) % size], [(rank - shift) % size]
        k += 1


def call_plan(topology, iteration, rank, size, *, self_weight=None, neighbor_weights=None,
              send_neighbors=None, check=None, enable_topo_check=None, name=None, group=None,
              timeout=None):
    """The :class:`~topocoll.runtime.mixing.MixingPlan` of one
    :func:`~topocoll.runtime.neighbor_allreduce` call, whichever form it uses: the topology's
    (``as_mixing(topology, size).plan(iteration, rank)``) or Bluefog's keywords
    (:func:`bluefog_plan`). Refuses a call that gives both, or neither.

    Parameters
    ----------
    topology : GossipTopology, callable, array_like or None
        The matrix form; None for Bluefog's.
    iteration, rank, size : int
        The call's iteration, this rank and the group's size.
    self_weight, neighbor_weights, send_neighbors, check, enable_topo_check, name, group, \
timeout
        As :func:`~topocoll.runtime.neighbor_allreduce` takes them.

    Returns
    -------
    MixingPlan
    """
    label = _label(name)
    given = [key for key, value in (("self_weight", self_weight),
                                    ("neighbor_weights", neighbor_weights),
                                    ("send_neighbors", send_neighbors)) if value is not None]
    if topology is not None:
        if given:
            raise InputTypeError(f"{label}: give a topology or Bluefog's self_weight, "
                                 f"neighbor_weights and send_neighbors, not both (got a "
                                 f"topology and {', '.join(given)})")
        if isinstance(topology, numbers.Real) and not isinstance(topology, bool):
            raise InputTypeError(f"{label}: a number is not a topology; Bluefog's self_weight "
                                 f"and neighbor_weights are keyword arguments")
        return as_mixing(topology, size).plan(iteration, rank)
    if not given:
        raise InputTypeError(f"{label}: needs a topology, or Bluefog's self_weight and "
                             f"neighbor_weights (topocoll has no global topology to default to)")
    if check is not None and enable_topo_check is not None and bool(check) != \
            bool(enable_topo_check):
        raise InputTypeError(f"{label}: check={check!r} and its alias enable_topo_check="
                             f"{enable_topo_check!r} disagree")
    on = enable_topo_check if check is None else check
    return bluefog_plan(rank, size, self_weight, neighbor_weights, send_neighbors,
                        check=True if on is None else bool(on), name=name, group=group,
                        timeout=timeout)


def bluefog_plan(rank, size, self_weight, neighbor_weights, send_neighbors=None, *, check=True,
                 name=None, group=None, timeout=None):
    """The plan of ``rank`` from Bluefog's arguments (see the module).

    Parameters
    ----------
    rank, size : int
        This rank and the group's size.
    self_weight : float
        Weight of this rank's own value (Bluefog's rule: given exactly when
        ``neighbor_weights`` is).
    neighbor_weights : dict
        ``{source rank: weight}``: the ranks this rank receives from (not itself), each
        message applied with its weight, a zero weight included.
    send_neighbors : list of int, optional
        The ranks this rank sends to (not itself, no repeats; empty: none). Omitted: the
        ranks whose ``neighbor_weights`` name this one, learned by the check's gather.
    check : bool
        Gather every rank's lists and refuse a send without its receive (or the reverse) on
        every rank alike (collective: every rank must pass the same ``check``). Costs one
        ``all_gather`` of ``1 + 2 ceil(n/8)`` bytes per rank per call.
    name : str, optional
        Bluefog's name of the call; only labels error messages.
    group : ProcessGroup, optional
        The group of the check's gather (default: the world).
    timeout : float, optional
        Seconds the check waits for every rank (default: the group's timeout).

    Returns
    -------
    MixingPlan

    Raises
    ------
    InputTypeError
        A missing or extra argument (Bluefog's rules), or one of the wrong kind.
    TopologyError
        A rank outside ``0 .. size - 1``, this rank in its own lists, a repeated send, a
        non-finite weight.
    ProcessGroupError
        (with ``check``) Another rank gave bad arguments, or a send and a receive do not
        match (the message names the pair); every rank raises, none exchanges.
    """
    label = _label(name)
    try:
        parsed = _parse(rank, size, self_weight, neighbor_weights, send_neighbors, label, check)
    except TopocollError:
        if check:      # join the gather all the same: the other ranks must not wait for us
            try:
                _gather_rows(_row(size, None, None, bad=True), group, timeout, label)
            except ProcessGroupError:
                pass    # this rank's own error says more
        raise
    own, weights, sends = parsed
    if check:
        sends = _checked_sends(rank, size, weights, sends, group, timeout, label)
    return MixingPlan(own, tuple(weights), tuple(weights.values()), tuple(sends))


def _label(name):
    return "neighbor_allreduce" + (f" {name!r}" if name is not None else "")


def _parse(rank, size, self_weight, neighbor_weights, send_neighbors, label, check):
    """``(self_weight, {source: weight} ascending, sorted sends or None)``, by Bluefog's rules."""
    if self_weight is None or neighbor_weights is None:
        missing = "self_weight" if self_weight is None else "neighbor_weights"
        raise InputTypeError(f"{label}: self_weight and neighbor_weights go together (Bluefog's "
                             f"rule; send_neighbors needs both), {missing} is missing")
    if not isinstance(neighbor_weights, dict):
        raise InputTypeError(f"{label}: neighbor_weights must be a dict {{source rank: "
                             f"weight}}, got {type(neighbor_weights).__name__}")
    own = _weight(self_weight, f"{label}: self_weight")
    weights = {}
    for source, weight in neighbor_weights.items():
        j = _peer(source, rank, size, f"{label}: neighbor_weights")
        weights[j] = _weight(weight, f"{label}: neighbor_weights[{j}]")
    if send_neighbors is None:
        if not check:
            raise InputTypeError(f"{label}: send_neighbors is needed with check=False (no "
                                 f"gather tells this rank who reads it)")
        return own, dict(sorted(weights.items())), None
    if isinstance(send_neighbors, (str, bytes, dict)) or not hasattr(send_neighbors, "__iter__"):
        raise InputTypeError(f"{label}: send_neighbors must be a list of ranks, got "
                             f"{type(send_neighbors).__name__}")
    sends = [_peer(d, rank, size, f"{label}: send_neighbors") for d in send_neighbors]
    if len(set(sends)) != len(sends):
        twice = sorted({d for d in sends if sends.count(d) > 1})
        raise TopologyError(f"{label}: send_neighbors names rank {twice[0]} twice (each rank "
                            f"once)")
    return own, dict(sorted(weights.items())), sorted(sends)


def _weight(value, what):
    try:
        return real_number(value, what)
    except InputTypeError:
        raise
    except TopocollError:       # NaN or an infinity
        raise TopologyError(f"{what} must be finite, got {value!r}") from None


def _peer(value, rank, size, what):
    """A rank of another process of the group, from ``what``."""
    try:
        j = whole_number(value, what, None)
    except InputTypeError:
        raise InputTypeError(f"{what} holds {value!r}, not a rank (an integer)") from None
    if not 0 <= j < size:
        raise TopologyError(f"{what} names rank {j}, outside the group's 0..{size - 1}")
    if j == rank:
        raise TopologyError(f"{what} names this rank ({rank}) itself; its own weight is "
                            f"self_weight, and it sends to itself nothing")
    return j


def _row(size, sends, sources, bad=False):
    """This rank's gathered row: a flag byte, then the send and receive bits, packed."""
    width = math.ceil(size / 8)
    row = np.zeros(1 + 2 * width, dtype=np.uint8)
    if bad:
        row[0] = _BAD
        return row
    bits = np.zeros((2, size), dtype=bool)
    if sends is None:
        row[0] = _INFER
    else:
        bits[0, list(sends)] = True
    bits[1, list(sources)] = True
    row[1:] = np.packbits(bits, axis=1).ravel()
    return row


def _gather_rows(row, group, timeout, label):
    """Every rank's row (an ``(n, len(row))`` uint8 array), by one all_gather."""
    import torch
    import torch.distributed as dist

    mine = torch.from_numpy(row)
    rows = [torch.empty_like(mine) for _ in range(dist.get_world_size(group))]
    missing = missing_ranks(dist.all_gather(rows, mine, group=group, async_op=True), timeout)
    if missing is not None:
        raise ProcessGroupError(f"{label}: the check of the send and receive lists did not hear "
                                f"from every rank{missing}")
    return torch.stack(rows).numpy()


def _checked_sends(rank, size, weights, sends, group, timeout, label):
    """This rank's destinations once every rank's lists are known to match (else raise, the
    same verdict on every rank)."""
    rows = _gather_rows(_row(size, sends, weights), group, timeout, label)
    bad = np.flatnonzero(rows[:, 0] & _BAD)
    if bad.size:
        raise ProcessGroupError(f"{label}: rank{'s' if bad.size > 1 else ''} "
                                f"{', '.join(map(str, bad))} gave bad arguments (see "
                                f"{'their' if bad.size > 1 else 'its'} own error); no rank "
                                f"exchanged")
    width = math.ceil(size / 8)
    send = np.unpackbits(rows[:, 1:1 + width], axis=1, count=size).astype(bool)
    recv = np.unpackbits(rows[:, 1 + width:], axis=1, count=size).astype(bool)
    infer = (rows[:, 0] & _INFER).astype(bool)
    send[infer] = recv.T[infer]          # recv[b, a]: b receives from a
    wrong = np.argwhere(send != recv.T)  # (a, b): a -> b on one side only
    if len(wrong):
        mine = [p for p in wrong if rank in p]
        a, b = (mine or wrong)[0]
        what = (f"rank {a} sends to rank {b}, but rank {b}'s neighbor_weights has no rank {a}"
                if send[a, b] else
                f"rank {b}'s neighbor_weights has rank {a}, but rank {a}'s send_neighbors "
                f"leaves out rank {b}")
        raise ProcessGroupError(f"{label}: {what} ({len(wrong)} unmatched pair"
                                f"{'s' if len(wrong) > 1 else ''} in all; no rank exchanged)")
    return [int(d) for d in np.flatnonzero(send[rank])]
