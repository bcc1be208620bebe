"""Symmetric schedules: one orbit representative per orbit of a translation group.

On a topology that is a Cayley graph of an abelian group (tori, hypercubes, circulants, rings,
Hamming graphs: :func:`topocoll.topology.symmetry.translation_group`), a schedule of allgather,
reduce-scatter or allreduce that commutes with the translations ``x -> x + v`` is fixed by the
transfers *into node 0*: the full (explicit) schedule is the union over every ``v`` of those rows
translated by ``v`` (``src + v``, ``dst + v``, ``shard + v``; step, byte range and op kept).
A :class:`SymmetricSchedule` holds only those representatives: N times fewer rows, so a
16,384-node schedule whose explicit form would not fit in memory is verified
(:func:`~topocoll.schedule.verify.verify`), priced (:func:`~topocoll.schedule.cost.evaluate`)
and timed (:func:`~topocoll.schedule.linkmodel.simulate`) from them alone (docs/math.md
section 10).

>>> from topocoll.synth import generate
>>> explicit = generate("torus:4x4", "allgather", "bfb")
>>> s = symmetric_schedule(explicit)
>>> s.form, s.group.dims, s.num_representatives, s.num_transfers == explicit.num_transfers
('symmetric', (4, 4), 20, True)
>>> sorted(map(tuple, s.expand().sorted().transfers.tolist())) == \\
...     sorted(map(tuple, explicit.sorted().transfers.tolist()))
True
"""

import numpy as np

from ..collectives import collective as _collective
from ..errors import (InputTypeError, InvalidScheduleError, ScheduleFormatError, TopologyError,
                      UnsupportedError)
from ..limits import require_memory
from ..topology.model import Topology
from ..topology.symmetry import TranslationGroup, candidates, invariant, translation_group
from .model import BUILD_BYTES_PER_TRANSFER, TRANSFER_DTYPE, Schedule, TransferRows, \
    coerce_transfers, transfer_problems

__all__ = ["SymmetricSchedule", "symmetric_schedule", "normalize", "translate",
           "group_invariant", "EXPLICIT_TRANSFER_LIMIT", "SYMMETRIC_COLLECTIVES"]

#: The collectives a symmetric schedule may hold: shard c is node c's, so a translation by v
#: maps shard c to shard c + v.
SYMMETRIC_COLLECTIVES = ("allgather", "reduce_scatter", "allreduce")

#: ``generate(..., form="auto")`` makes the symmetric form when the explicit one would hold
#: more transfers than this (and the topology has a translation group).
EXPLICIT_TRANSFER_LIMIT = 1 << 25


def _as_group(group, topology):
    if isinstance(group, TranslationGroup):
        dims = tuple(int(d) for d in group.dims)
    elif isinstance(group, (list, tuple)) and all(
            isinstance(d, (int, np.integer)) and not isinstance(d, bool) for d in group):
        dims = tuple(int(d) for d in group)
    else:
        raise InputTypeError(f"group must be a TranslationGroup or a list of dimensions, got "
                             f"{type(group).__name__}")
    if not dims or min(dims) < 1 or int(np.prod(dims, dtype=object)) != topology.num_nodes:
        raise TopologyError(f"symmetry: group dims {list(dims)} do not multiply to the "
                            f"{topology.num_nodes} nodes of {topology.name}")
    return TranslationGroup(dims)


def _claiming(topology, group):
    """``topology``, or a copy whose ``meta["symmetry"]`` names the group's labelling when
    :func:`~topocoll.topology.symmetry.translation_group` would not try it (a topology read from
    a file has lost its family's): what depends on the symmetry (the diameter in one
    breadth-first search, the bounds) then finds it, still verified on the links."""
    dims = tuple(group.dims)
    if any(tuple(d for d in c if d > 1) == dims for c in candidates(topology)):
        return topology
    meta = dict(topology.meta) if isinstance(topology.meta, dict) else {}
    meta["symmetry"] = {"kind": "mixed_radix", "dims": list(dims)}
    return Topology(topology.num_nodes, topology.src, topology.dst, topology.bandwidth,
                    topology.latency, name=topology.name, switches=topology.switches, meta=meta)


def group_invariant(topology, group):
    """True if every translation of ``group`` maps the topology's links onto links of equal
    bandwidth and latency (checked on every link)."""
    return invariant(topology, group)


def translate(transfers, group, v):
    """The rows of ``transfers`` translated by the group element(s) ``v`` (broadcast over rows):
    ``src + v``, ``dst + v``, ``shard + v``."""
    out = transfers.copy()
    out["src"] = group.add(transfers["src"].astype(np.int64), v)
    out["dst"] = group.add(transfers["dst"].astype(np.int64), v)
    out["shard"] = group.add(transfers["shard"], v)
    return out


def normalize(transfers, group):
    """Every row translated by ``-dst``, so that ``dst == 0``: the representative of its orbit.

    Used after reversing a schedule in time (which swaps src and dst).

    >>> from topocoll.schedule.model import transfer_array
    >>> g = TranslationGroup((4,))
    >>> normalize(transfer_array(1, 0, 3, 2, 0.0, 1.0), g)[["src", "dst", "shard"]].tolist()
    [(1, 0, 3)]
    """
    transfers = coerce_transfers(transfers)
    out = transfers.copy()
    dst = transfers["dst"].astype(np.int64)
    out["src"] = group.subtract(transfers["src"].astype(np.int64), dst)
    out["shard"] = group.subtract(transfers["shard"], dst)
    out["dst"] = 0
    return out


class SymmetricSchedule(TransferRows):
    """A schedule held as the orbit representatives of a translation group (every row has
    ``dst == 0``); the full schedule is their union over all translations (:meth:`expand`).

    Parameters
    ----------
    topology : Topology
        The network (endpoint-only).
    collective : str
        ``allgather``, ``reduce_scatter`` or ``allreduce`` (:data:`SYMMETRIC_COLLECTIVES`).
    group : TranslationGroup or list of int
        A translation group of the topology (re-checked on its links when verifying).
    transfers : numpy structured array of TRANSFER_DTYPE
        The representatives: the transfers into node 0.
    algorithm : str
    meta : dict, optional

    Examples
    --------
    >>> from topocoll.topology import topology
    >>> from topocoll.schedule.model import transfer_array
    >>> ring = topology("uniring:3")
    >>> s = SymmetricSchedule(ring, "allgather", [3],
    ...                       transfer_array([1, 2], 2, 0, [2, 1], 0.0, 1.0), algorithm="hand")
    >>> s.num_steps, s.num_transfers, s.expand().num_transfers
    (2, 6, 6)
    """

    __slots__ = ("topology", "collective", "group", "transfers", "algorithm", "meta")

    #: The form of the schedule (an explicit :class:`Schedule` says ``"explicit"``).
    form = "symmetric"
    root = None

    def __init__(self, topology, collective, group, transfers, *, algorithm="", meta=None):
        if not isinstance(topology, Topology):
            raise InputTypeError(f"topology must be a Topology, got {type(topology).__name__}")
        topology.require_no_switches("a schedule")
        coll = _collective(collective)
        if coll.name not in SYMMETRIC_COLLECTIVES:
            raise UnsupportedError(f"symmetric schedules hold {', '.join(SYMMETRIC_COLLECTIVES)}"
                                   f"; not {coll.name}")
        self.group = _as_group(group, topology)
        self.topology = _claiming(topology, self.group)
        self.collective = coll
        transfers = coerce_transfers(transfers)
        off = np.flatnonzero(transfers["dst"] != 0)
        if off.size:
            raise ScheduleFormatError(f"transfers[{int(off[0])}].dst: a symmetric schedule holds "
                                      "orbit representatives, whose dst must be 0")
        self.transfers = transfers
        self.algorithm = str(algorithm)
        self.meta = dict(meta or {})

    @property
    def num_representatives(self):
        """Rows held: one per orbit."""
        return int(self.transfers.size)

    @property
    def num_transfers(self):
        """Transfers of the full schedule: representatives times nodes."""
        return int(self.transfers.size) * self.topology.num_nodes

    def representatives(self):
        """The representatives as a plain (partial) :class:`Schedule`: what the step model
        prices (docs/math.md section 10, theorem 2). Not a valid schedule itself."""
        return Schedule(self.topology, self.collective, self.transfers,
                        algorithm=self.algorithm, meta=self.meta)

    def history(self):
        """The full schedule's transfers of shard 0 (each representative translated by minus
        its shard), as a partial :class:`Schedule`, in the representatives' order."""
        t = self.transfers
        return Schedule(self.topology, self.collective,
                        translate(t, self.group, self.group.subtract(0, t["shard"])),
                        algorithm=self.algorithm)

    def timed_rows(self):
        return self.history()

    def explicit(self):
        return self.expand()

    def unfolded(self):
        return self.expand()

    def file_fields(self):
        return {"form": self.form,
                "symmetry": {"kind": "translation", "dims": [int(d) for d in self.group.dims]}}

    def form_facts(self):
        return {"form": self.form, "representatives": self.num_representatives,
                "symmetry": [int(d) for d in self.group.dims]}

    def form_note(self):
        return f" (symmetric: {self.num_representatives} representatives)"

    def expand(self):
        """The explicit :class:`Schedule` (memory guard first): the representatives sorted by
        step (stably), each followed by its translations to nodes 0..N-1."""
        n = self.num_nodes
        require_memory(self.num_transfers * BUILD_BYTES_PER_TRANSFER,
                       f"the explicit {self.collective.name} schedule on {n} nodes "
                       f"({self.num_transfers:,} transfers)")
        problems = transfer_problems(self.transfers, n, self.num_shards,
                                     self.collective.combining, limit=1)
        if problems:
            index, field, message = problems[0]
            raise InvalidScheduleError(f"transfers[{index}].{field}: {message} (a representative"
                                       " that breaks the rules has no translations)")
        t0 = self.transfers[np.argsort(self.transfers["step"], kind="stable")]
        out = np.empty(t0.size * n, dtype=TRANSFER_DTYPE)
        for name in ("step", "lo", "hi", "op"):
            out[name] = np.repeat(t0[name], n)
        v = np.tile(np.arange(n, dtype=np.int64), t0.size)
        out["dst"] = v
        out["src"] = self.group.add(np.repeat(t0["src"].astype(np.int64), n), v)
        out["shard"] = self.group.add(np.repeat(t0["shard"], n), v)
        return Schedule(self.topology, self.collective, out, algorithm=self.algorithm,
                        meta=dict(self.meta))

    def sorted(self):
        """A copy with the representatives ordered by step, src, shard, lo."""
        t = self.transfers
        return self.replace(transfers=t[np.lexsort((t["lo"], t["shard"], t["src"], t["step"]))])

    def __repr__(self):
        return (f"SymmetricSchedule({self.collective.name!r}, {self.algorithm!r} on "
                f"{self.topology.name!r}, group={list(self.group.dims)}, steps={self.num_steps}, "
                f"representatives={self.num_representatives}, transfers={self.num_transfers})")


def _rows_key(t):
    return np.lexsort((t["op"], t["hi"], t["lo"], t["shard"], t["dst"], t["src"], t["step"]))


def symmetric_schedule(schedule, group=None):
    """The symmetric form of an explicit schedule; refused unless the schedule is invariant
    under the group (every translation of every row is a row, as often).

    ``group`` defaults to the first translation group of the topology (those
    :mod:`~topocoll.topology.symmetry` tries, verified on the links) under which the schedule
    is invariant. A :class:`SymmetricSchedule` is returned as it is.
    """
    if isinstance(schedule, SymmetricSchedule):
        return schedule
    if not isinstance(schedule, Schedule):
        raise InputTypeError(f"expected a Schedule, got {type(schedule).__name__}")
    if schedule.routing is not None:
        raise UnsupportedError("a symmetric schedule holds transfers over links; this one is "
                               f"routed ({schedule.routing})")
    topo = schedule.topology
    name = schedule.collective.name
    if name not in SYMMETRIC_COLLECTIVES:
        raise UnsupportedError(f"symmetric schedules hold {', '.join(SYMMETRIC_COLLECTIVES)}; "
                               f"not {name}")
    if group is None:
        groups = _groups(topo, schedule.meta.get("symmetry"))
        if not groups:
            raise UnsupportedError(f"{topo.name} has no translation group, so no schedule on it "
                                   "has a symmetric form")
    else:
        groups = [_as_group(group, topo)]
        if not group_invariant(topo, groups[0]):
            raise TopologyError(f"symmetry: translations of group {list(groups[0].dims)} do not "
                                f"map the links of {topo.name} onto links of equal bandwidth "
                                "and latency")
    t = schedule.transfers
    reps = t[t["dst"] == 0]
    if reps.size * topo.num_nodes == t.size:
        mine = t[_rows_key(t)]
        for candidate in groups:   # a torus:4x4 is a Cayley graph of Z_4^2 and of Z_2^4
            out = SymmetricSchedule(topo, name, candidate, reps, algorithm=schedule.algorithm,
                                    meta=schedule.meta)
            full = out.expand().transfers
            if np.array_equal(mine, full[_rows_key(full)]):
                return out
    dims = " or ".join(str(list(g.dims)) for g in groups)
    raise UnsupportedError(f"the {name} schedule is not invariant under the translations of "
                           f"group {dims}: it has no symmetric form")


def _groups(topology, claimed=None):
    """Every translation group of the topology that the symmetry module knows to try, and
    ``claimed`` (dims a generator recorded, e.g. BFB's ``meta["symmetry"]``: a topology read
    from a file has lost its family's labelling), verified on the links; the one
    :func:`translation_group` returns first."""
    first = translation_group(topology)
    found = [] if first is None else [first]
    extra = [tuple(claimed)] if isinstance(claimed, (list, tuple)) and all(
        isinstance(d, int) and not isinstance(d, bool) for d in claimed) else []
    for dims in [*extra, *candidates(topology)]:
        dims = tuple(d for d in dims if d > 1) or (topology.num_nodes,)
        if int(np.prod(dims)) != topology.num_nodes or any(g.dims == dims for g in found):
            continue
        group = TranslationGroup(dims)
        if group_invariant(topology, group):
            found.append(group)
    return found


