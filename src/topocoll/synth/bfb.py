"""BFB (breadth-first broadcast) schedules (docs/math.md section 2; Zhao et al., "Efficient
Direct-Connect Topologies for Collective Communications", NSDI 2025, section 6).

In step t every node v receives, from its in-neighbours, the shards of the nodes at distance t
from it; the shard of u may come from any in-neighbour w at distance t-1 from u. How much of each
shard each w sends is chosen, for every (v, t) independently, to minimise the most loaded in-link
of v relative to its bandwidth: a small linear program.

Sources of one (v, t) problem that can use exactly the same senders are interchangeable, so they
are merged into one group whose demand is their count; sources with a single possible sender need
no decision at all. The remaining problems of a step are stacked into one block-diagonal linear
program (minimising the sum of the per-problem maxima, which are independent) and solved with
HiGHS' dual simplex through ``highspy`` (:mod:`topocoll.highs`; :mod:`.bfb_lp`), so that a
schedule pays no ``scipy.optimize`` import. Where a solution splits shards, whole shards replace
them in every step where they cost the same: a maximum flow (:mod:`.bfb_rounding`) looks for
whole senders within the step's fractional bottleneck.

On a topology with a translation group (:mod:`topocoll.topology.symmetry`) only node 0's
problems are solved: the distances they need, from every origin to node 0 and to its
in-neighbours, come from one breadth-first search towards each of those nodes, never from the
``N x N`` matrix, so the work and memory grow like N times the degree. With ``symmetric=True``
the result stays in that form, a :class:`~topocoll.schedule.symmetric.SymmetricSchedule` of
node 0's receptions (torus:128x128 and hypercube:14 in seconds); otherwise node 0's transfers
are translated to every node.

>>> from topocoll.topology import topology
>>> s = bfb_allgather(topology("ring:8"))
>>> s.num_steps, s.num_transfers
(4, 64)
"""

import os

import numpy as np

from ..errors import UnsupportedError
from ..schedule.cost import step_costs
from ..schedule.model import Schedule, TRANSFER_DTYPE
from ..schedule.symmetric import SymmetricSchedule
from ..schedule.transforms import (concatenate, concatenate_symmetric, reverse,
                                   reverse_symmetric)
from ..topology.metrics import require_strongly_connected
from ..topology.symmetry import translation_group
from ..units import parse_size
from .allreduce_forms import VIAS, alltoall_allreduce, reduce_broadcast_allreduce
from .bfb_candidates import in_positions, sorted_candidates
from .bfb_lp import link_costs, solve_free_groups
from .bfb_rounding import piece_maker

__all__ = ["bfb_allgather", "bfb_reduce_scatter", "bfb_allreduce", "bfb_broadcast", "bfb_reduce",
           "bfb_schedule", "BFB_COLLECTIVES"]

BFB_COLLECTIVES = ("allgather", "reduce_scatter", "allreduce", "broadcast", "reduce")

_DROP = 1e-12         # relative share below which a sender is not used


def _bfb_broadcasts(topology, origins, *, receivers=None, progress=None, workers=1, size=None):
    """Solve the BFB problems in which shard s spreads breadth-first from node ``origins[s]``
    to every node (or only those of ``receivers``). Returns ``pieces(chunks=None, *,
    bounded=False)`` (:func:`~.bfb_rounding.piece_maker`), which turns the solution into
    transfers ordered by step, receiver and shard.

    ``progress(done, total)`` is called after each batch of load-balancing problems."""
    psrc, pdst, pbw, _ = topology.pairs
    inpos = in_positions(psrc, pdst)
    shard, pair, step, v = sorted_candidates(topology, origins, receivers, inpos)
    units = _Units(shard, pair, step, v, inpos, topology.num_nodes)
    cand_group, cand_pair, cand_block = units.candidates(pair)
    share = _shares(units, cand_group, cand_pair, cand_block, cost=link_costs(topology, size),
                    num_pairs=psrc.size, progress=progress, workers=workers)
    fields = {"psrc": psrc, "u_step": units.u_step, "u_v": units.u_v,
              "u_shard": shard[units.unit_start]}
    return piece_maker(share, units.demand, cand_group, cand_pair, units.group_of_unit,
                       group_block=units.group_block, pbw=pbw, units=fields)


class _Units:
    """The units of sorted candidates (a unit is one shard arriving at one node: (step, v,
    shard)) and their groups: units of one (step, v) problem with the same set of possible
    senders are interchangeable, one group whose demand is their count."""

    def __init__(self, shard, pair, step, v, inpos, n):
        unit_key_change = np.r_[True, (step[1:] != step[:-1]) | (v[1:] != v[:-1]) |
                                (shard[1:] != shard[:-1])]
        self.unit_start = unit_start = np.flatnonzero(unit_key_change)
        num_units = unit_start.size
        self.senders = np.diff(np.r_[unit_start, shard.size])
        if int(inpos.max(initial=0)) < 63:
            bits = np.left_shift(np.int64(1), inpos[pair])
            mask = np.add.reduceat(bits, unit_start) if num_units else bits
        else:
            mask = np.arange(num_units, dtype=np.int64)  # no merging above 63 in-neighbours
        self.u_step, self.u_v = u_step, u_v = step[unit_start], v[unit_start]
        g_order = np.lexsort((mask, u_v, u_step))
        g_change = np.r_[True, (u_step[g_order][1:] != u_step[g_order][:-1]) |
                         (u_v[g_order][1:] != u_v[g_order][:-1]) |
                         (mask[g_order][1:] != mask[g_order][:-1])]
        self.group_of_unit = np.empty(num_units, dtype=np.int64)
        self.group_of_unit[g_order] = np.cumsum(g_change) - 1
        self.rep_unit = g_order[g_change]
        self.demand = np.bincount(self.group_of_unit).astype(float)
        block_key = u_step * n + u_v
        self.group_block = block_key[self.rep_unit]

    def candidates(self, pair):
        """``(group, pair, block)`` of every candidate sender of each group, taken from its
        representative unit."""
        rep_first = self.unit_start[self.rep_unit]
        rep_len = self.senders[self.rep_unit]
        cand_group = np.repeat(np.arange(self.rep_unit.size), rep_len)
        cand_index = np.repeat(rep_first, rep_len) + (
            np.arange(cand_group.size) - np.repeat(np.cumsum(rep_len) - rep_len, rep_len))
        return cand_group, pair[cand_index], self.group_block[cand_group]


def _shares(units, cand_group, cand_pair, cand_block, *, cost, num_pairs, progress, workers):
    """Each candidate's share of its group's shards: the whole of a group with one possible
    sender, else the load-balancing LPs' (shares below :data:`_DROP` dropped)."""
    demand, rep_len = units.demand, units.senders[units.rep_unit]
    single = rep_len[cand_group] == 1
    y = np.where(single, demand[cand_group], 0.0)
    fixed_keys = cand_block[single] * num_pairs + cand_pair[single]
    fk, fk_inv = np.unique(fixed_keys, return_inverse=True)
    fixed_sum = np.bincount(fk_inv, weights=demand[cand_group[single]], minlength=fk.size)
    fixed_load = dict(zip(fk.tolist(), fixed_sum.tolist()))
    free = ~single
    y[free] = solve_free_groups(units.group_block, demand, cand_group[free], cand_pair[free],
                                cand_block[free], cost=cost, fixed_load=fixed_load,
                                progress=progress, workers=workers)
    share = np.clip(y, 0.0, None) / demand[cand_group]
    share[share < _DROP] = 0.0
    return share / np.bincount(cand_group, weights=share, minlength=demand.size)[cand_group]


def _workers(workers):
    if workers is None:
        return max(1, min(os.cpu_count() or 1, 8))
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise UnsupportedError(f"workers must be a positive integer, got {workers!r}")
    return workers


def _translate(t0, group, n):
    """Map node 0's transfers to every node v by the translation x -> x + v."""
    t0 = t0[np.argsort(t0["step"], kind="stable")]
    v = np.tile(np.arange(n, dtype=np.int64), t0.size)
    out = np.empty(t0.size * n, dtype=TRANSFER_DTYPE)
    for name in ("step", "lo", "hi", "op"):
        out[name] = np.repeat(t0[name], n)
    out["dst"] = v
    out["src"] = group.add(np.repeat(t0["src"].astype(np.int64), n), v)
    out["shard"] = group.add(np.repeat(t0["shard"], n), v)
    return out


def _check_options(size, chunks):
    if size is not None:
        size = parse_size(size, what="size")
    if chunks is not None and (isinstance(chunks, bool) or not isinstance(chunks, (int, np.integer))
                               or chunks < 1):
        raise UnsupportedError(f"chunks must be a positive integer, got {chunks!r}")
    return size, (None if chunks is None else int(chunks))


def bfb_allgather(topology, *, progress=None, symmetry=True, workers=None, size=None,
                  chunks=None, symmetric=False):
    """BFB allgather on a strongly connected topology; ``steps`` equals the diameter.

    Parameters
    ----------
    topology : Topology
    symmetry : bool
        Exploit translation symmetry (tori, hypercubes, circulants, Hamming graphs, ...: see
        :mod:`topocoll.topology.symmetry`): solve the problems of node 0 and map them to every
        node. Otherwise problems are solved in batches on ``workers`` processes.
    workers : int, optional
        Processes for the load-balancing problems (default: every core).
    size : float or str, optional
        Buffer size M. When given, each link's latency joins its load in the per-(node, step)
        problems (the heterogeneous LP of Zhao et al.), and links whose latency alone would set the
        step time are left unused.
    chunks : int, optional
        Cut every shard into this many equal chunks: every transfer moves whole chunks. The
        bandwidth cost against the fractional optimum is in ``meta["chunk_loss"]`` (relative),
        with its bound ``meta["chunk_loss_bound"]``.
    progress : callable, optional
        ``progress(done, total)`` over batches of problems.
    symmetric : bool
        Return a :class:`~topocoll.schedule.symmetric.SymmetricSchedule`: node 0's receptions
        only (the orbit representatives), in O(N) time and memory, the explicit schedule never
        built (it expands to exactly the explicit one). Needs ``symmetry`` and a translation
        group; ``generate(..., form="symmetric")`` asks for it.

    >>> from topocoll.topology import topology
    >>> s = bfb_allgather(topology("torus:128x128"), symmetric=True)
    >>> s.form, s.num_steps, s.num_transfers
    ('symmetric', 128, 271564800)
    """
    require_strongly_connected(topology, "BFB allgather")
    size, chunks = _check_options(size, chunks)
    group = _group(topology, symmetry, _check_symmetric(symmetric))
    local, meta = _allgather_transfers(topology, group, progress=progress, workers=workers,
                                       size=size, chunks=chunks)
    if symmetric:
        return SymmetricSchedule(topology, "allgather", group, local, algorithm="bfb", meta=meta)
    transfers = local if group is None else _translate(local, group, topology.num_nodes)
    return Schedule(topology, "allgather", transfers, algorithm="bfb", meta=meta)


def _check_symmetric(symmetric):
    if not isinstance(symmetric, (bool, np.bool_)):
        raise UnsupportedError(f"BFB: symmetric must be True or False, got {symmetric!r}")
    return bool(symmetric)


def _group(topology, symmetry, symmetric):
    """The translation group BFB uses (None: solve every node's problems)."""
    if symmetric and not symmetry:
        raise UnsupportedError("BFB: the symmetric form needs symmetry (symmetry=False given)")
    group = translation_group(topology) if symmetry else None
    if symmetric and group is None:
        raise UnsupportedError(f"BFB: {topology.name} has no translation group, so no "
                               "symmetric form (tori, hypercubes, circulants, Hamming graphs "
                               "have one)")
    return group


def _allgather_transfers(topology, group, *, progress, workers, size, chunks):
    """BFB allgather transfers and meta: every node's, or with a translation ``group`` only the
    orbit representatives (node 0's receptions, in step order), which cost O(N) to find."""
    n = topology.num_nodes
    options = {"size": size, "progress": progress}
    if group is None:
        options.update(workers=_workers(workers))
    else:
        options.update(receivers=np.array([0]))
    pieces = _bfb_broadcasts(topology, np.arange(n), **options)
    local = pieces(None)
    beta = _betas(topology, local)
    meta = {"symmetry": list(group.dims) if group is not None else None}
    if chunks is not None:
        rounded = pieces(chunks)
        fractional, whole_chunks = beta.sum(), _betas(topology, rounded).sum()
        _, _, pbw, _ = topology.pairs
        meta.update(chunks=chunks, chunk_loss=float(whole_chunks / fractional - 1),
                    chunk_loss_bound=float(beta.size / (n * chunks * pbw.min()) / fractional))
        local = rounded
    elif _has_split_shards(local):
        # some shards are split: in every step where whole shards do as well (each link's
        # optimal load is a whole number of shards, as in most steps on tori and hypercubes),
        # take them: the same cost in fewer transfers
        whole, short = pieces(bounded=True)
        steps = np.unique(local["step"])
        whole_steps, whole_beta = _step_betas(topology, whole)
        fits = np.isclose(whole_beta, beta[np.searchsorted(steps, whole_steps)], rtol=1e-12,
                          atol=0)
        same = np.setdiff1d(whole_steps[fits], short)
        local = np.concatenate([whole[np.isin(whole["step"], same)],
                                local[~np.isin(local["step"], same)]])
        local = local[np.argsort(local["step"], kind="stable")]
    if size is not None:
        meta["size"] = size
    return local, meta


def _has_split_shards(t):
    """True if some (step, receiver, shard) has several pieces (rows are grouped by those)."""
    same = (t["step"][1:] == t["step"][:-1]) & (t["dst"][1:] == t["dst"][:-1]) & \
        (t["shard"][1:] == t["shard"][:-1])
    return bool(same.any())


def _betas(topology, transfers):
    """Per-step bandwidth time of some transfers (all of a step's busiest link's, when the
    transfers are one node's under symmetry)."""
    return _step_betas(topology, transfers)[1]


def _step_betas(topology, transfers):
    """(steps, bandwidth times) of the non-empty steps (see :func:`_betas`)."""
    steps, _, beta = step_costs(Schedule(topology, "allgather", transfers))
    return steps, beta


def bfb_reduce_scatter(topology, **options):
    """BFB reduce-scatter: the BFB allgather of the transposed topology, reversed in time.

    Takes the options of :func:`bfb_allgather`."""
    require_strongly_connected(topology, "BFB reduce-scatter")
    ag = bfb_allgather(topology.transpose(), **options)
    return _reverse(ag, "reduce_scatter", topology)


def _reverse(schedule, collective, topology):
    """Reverse in time, keeping the form (a symmetric schedule's representatives are reversed
    and translated back to ``dst == 0``)."""
    if isinstance(schedule, SymmetricSchedule):
        return reverse_symmetric(schedule, collective, topology, algorithm="bfb")
    return reverse(schedule, collective, topology, algorithm="bfb")


def bfb_allreduce(topology, **options):
    """BFB allreduce: BFB reduce-scatter, then BFB allgather (options of
    :func:`bfb_allgather`)."""
    rs = bfb_reduce_scatter(topology, **options)
    if topology.is_bidirectional() and _same_links(topology):
        ag = _reverse(rs, "allgather", topology)
    else:
        ag = bfb_allgather(topology, **options)
    if isinstance(rs, SymmetricSchedule):
        return concatenate_symmetric(rs, ag, "allreduce", algorithm="bfb")
    return concatenate(rs, ag, "allreduce", algorithm="bfb")


def _same_links(topology):
    """True if u -> v and v -> u always have the same bandwidth, so G^T = G as a network."""
    psrc, pdst, pbw, plat = topology.pairs
    back = topology.pair_index(pdst, psrc)
    return bool(np.all(back >= 0) and np.allclose(pbw[back], pbw, rtol=0, atol=0)
                and np.array_equal(plat[back], plat))


def bfb_broadcast(topology, root, *, progress=None, size=None, chunks=None):
    """BFB broadcast from ``root``: the root's buffer spreads breadth-first, balanced per step."""
    size, chunks = _check_options(size, chunks)
    transfers = _bfb_broadcasts(topology, np.array([root]), progress=progress, size=size)(chunks)
    return Schedule(topology, "broadcast", transfers, root=root, algorithm="bfb")


def bfb_reduce(topology, root, **options):
    """BFB reduce to ``root``: the BFB broadcast on the transposed topology, reversed."""
    bc = bfb_broadcast(topology.transpose(), root, **options)
    return reverse(bc, "reduce", topology, algorithm="bfb")


_MAKERS = {"allgather": bfb_allgather, "reduce_scatter": bfb_reduce_scatter,
           "allreduce": bfb_allreduce}


def bfb_schedule(topology, collective, *, root=None, progress=None, symmetry=True, workers=None,
                 size=None, chunks=None, symmetric=False, via="reduce_scatter"):
    """BFB schedule for ``collective`` (one of :data:`BFB_COLLECTIVES`); options as in
    :func:`bfb_allgather` (``symmetric=True`` for allgather, reduce-scatter and allreduce
    only: the hook of ``generate(..., form="symmetric")``).

    ``via`` (allreduce only; one of :data:`~topocoll.synth.allreduce_forms.VIAS`) builds the
    allreduce as reduce-scatter + allgather (the default), as a reduce to ``root``
    (default 0) + broadcast, or as one all-to-all of buffers
    (:mod:`topocoll.synth.allreduce_forms`).

    >>> from topocoll.topology import topology
    >>> bfb_schedule(topology("ring:5"), "allreduce", via="reduce_broadcast", root=1).num_steps
    4
    """
    name = collective if isinstance(collective, str) else collective.name
    if via not in (None, "reduce_scatter"):
        return _allreduce_via(topology, name, via, root=root, progress=progress, size=size,
                              chunks=chunks, symmetric=symmetric)
    options = {"progress": progress, "symmetry": symmetry, "workers": workers, "size": size,
               "chunks": chunks, "symmetric": _check_symmetric(symmetric)}
    if name in _MAKERS:
        return _MAKERS[name](topology, **options)
    if symmetric:
        raise UnsupportedError(f"BFB {name} has one root, so no symmetric form")
    rooted = {"progress": progress, "size": size, "chunks": chunks}  # one root: no symmetry
    if name == "broadcast":
        return bfb_broadcast(topology, root, **rooted)
    if name == "reduce":
        return bfb_reduce(topology, root, **rooted)
    raise UnsupportedError(f"algorithm bfb makes {', '.join(BFB_COLLECTIVES)}; "
                           f"not {name}")


def _allreduce_via(topology, name, via, *, root, symmetric, **options):
    """The allreduce of :func:`bfb_schedule` made ``via`` reduce + broadcast or all-to-all."""
    if via not in VIAS:
        raise UnsupportedError(f"algorithm bfb: option via must be one of {', '.join(VIAS)}, "
                               f"got {via!r}")
    if name != "allreduce":
        raise UnsupportedError(f"algorithm bfb: option via={via} builds an allreduce, not {name}")
    if symmetric:
        raise UnsupportedError(f"BFB allreduce via {via} has no symmetric form")
    if via == "reduce_broadcast":
        root = 0 if root is None else root
        require_strongly_connected(topology, "BFB allreduce via reduce + broadcast")
        if not 0 <= int(root) < topology.num_nodes:
            raise UnsupportedError(f"root must be a node 0..{topology.num_nodes - 1}, got {root}")
        return reduce_broadcast_allreduce(bfb_reduce(topology, int(root), **options),
                                          bfb_broadcast(topology, int(root), **options))
    if any(value is not None for key, value in options.items() if key != "progress"):
        raise UnsupportedError("BFB allreduce via alltoall takes no size or chunks: it sends "
                               "whole buffers in one step")
    return alltoall_allreduce(topology)
