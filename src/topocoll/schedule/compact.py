"""Compact schedules: whole chunks copied, held in narrow columns.

A schedule of a non-combining collective whose every transfer copies one whole chunk (shard
``s`` cut into ``C`` equal chunks: ``lo = p / C``, ``hi = (p + 1) / C``) is fixed by four or
five integers a transfer: step, src, dst, shard and the chunk ``p``. The TEN greedy makes such
schedules, and on a network without a translation symmetry they can be far larger than the
symmetric form could help with: the all-gather of a 128x128 mesh has 268 million transfers, 9.9
GB as :data:`~topocoll.schedule.model.TRANSFER_DTYPE` rows. A :class:`CompactSchedule` holds
each column in the smallest unsigned integer type that holds its values (8 bytes a transfer
there), its rows sorted by step. It is the same schedule, only held differently:

* :func:`~topocoll.schedule.verify.verify` checks it block by block with the rules of the
  explicit form (the same verdict and counts: tested against the explicit verifier);
* :func:`~topocoll.schedule.io.save_schedule` writes it as the ordinary explicit file, block by
  block (the file format has one layout; reading it back gives an explicit
  :class:`~topocoll.schedule.model.Schedule`);
* everything else takes its :meth:`~CompactSchedule.expand`-ed explicit form (memory guard
  first).

>>> from topocoll.synth import generate
>>> explicit = generate("ring:6", "allgather", "ring")
>>> c = compact_schedule(explicit)
>>> c.form, c.num_transfers, c.nbytes < explicit.transfers.nbytes
('compact', 30, True)
>>> c.expand().transfers.tolist() == explicit.transfers.tolist()
True
"""

import numpy as np

from ..collectives import COPY, collective as _collective
from ..errors import InputTypeError, ScheduleFormatError, UnsupportedError
from ..limits import require_memory
from ..topology.model import Topology
from ..units import whole_number
from .io import as_schedule
from .model import TRANSFER_DTYPE, Schedule, TransferRows, transfer_array

__all__ = ["CompactSchedule", "compact_schedule", "compact_columns", "BLOCK_ROWS"]

#: Rows a block of :meth:`CompactSchedule.blocks` holds by default (37 MB as transfer rows).
BLOCK_ROWS = 1 << 20

_COLUMNS = ("step", "src", "dst", "shard", "part")


def compact_columns(step, src, dst, shard, part=None):
    """The columns of a compact schedule from integer arrays: each in the smallest unsigned
    type that holds its values (``part`` omitted: every transfer is a whole shard).

    >>> c = compact_columns([1, 2], [0, 1], [1, 2], [0, 0])
    >>> [c[name].dtype.name for name in ("step", "src", "dst", "shard")], "part" in c
    (['uint8', 'uint8', 'uint8', 'uint8'], False)
    """
    out = {}
    for name, column in zip(_COLUMNS, (step, src, dst, shard, part)):
        if column is None:
            continue
        column = np.asarray(column).ravel()
        if column.size and column.dtype.kind not in "iu":
            raise InputTypeError(f"{name} must be an integer array, got {column.dtype}")
        if column.size and column.min() < 0:
            raise ScheduleFormatError(f"{name} must be >= 0 in a compact schedule, got "
                                      f"{int(column.min())}")
        high = int(column.max()) if column.size else 0
        out[name] = column.astype(np.min_scalar_type(high), copy=False)
    return out


class CompactSchedule(TransferRows):
    """A schedule of a non-combining collective whose transfers each copy one whole chunk,
    held as narrow integer columns sorted by step (see the module's notes).

    Parameters
    ----------
    topology : Topology
        The network (endpoint-only).
    collective : str
        A collective that does not combine (allgather, broadcast, scatter, gather, alltoall).
    columns : dict of integer arrays
        ``step``, ``src``, ``dst``, ``shard`` and, where ``parts > 1``, ``part``: one entry
        per transfer, ``step`` non-decreasing (:func:`compact_columns` narrows them).
    parts : int
        Chunks per shard C: transfer ``i`` carries ``[part / C, (part + 1) / C)``.
    root : int, optional
        The root of a rooted collective.
    algorithm : str
    meta : dict, optional

    Examples
    --------
    >>> from topocoll.topology import topology
    >>> cols = compact_columns([1, 1, 2, 2], [0, 1, 1, 0], [1, 0, 2, 2], [0, 1, 0, 0])
    >>> s = CompactSchedule(topology("mesh:1x3"), "allgather", cols)
    >>> s.num_steps, s.num_transfers, s.last_step
    (2, 4, 2)
    """

    __slots__ = ("topology", "collective", "columns", "parts", "root", "algorithm", "meta")

    #: The form of the schedule (:class:`Schedule` says ``"explicit"``).
    form = "compact"

    def __init__(self, topology, collective, columns, *, parts=1, root=None, algorithm="",
                 meta=None):
        if not isinstance(topology, Topology):
            raise InputTypeError(f"topology must be a Topology, got {type(topology).__name__}")
        topology.require_no_switches("a schedule")
        coll = _collective(collective)
        if coll.combining:
            raise UnsupportedError(f"a compact schedule holds copies only; {coll.name} combines")
        parts = whole_number(parts, "parts")
        if not isinstance(columns, dict):
            raise InputTypeError("columns must be a dict of integer arrays")
        need = _COLUMNS[:4] + (("part",) if parts > 1 else ())
        missing = [name for name in need if name not in columns]
        extra = sorted(set(columns) - set(need))
        if missing or extra:
            raise ScheduleFormatError(f"columns must be {', '.join(need)}; "
                                      + (f"missing {', '.join(missing)}" if missing else
                                         f"unexpected {', '.join(extra)}"))
        cols = {name: np.asarray(columns[name]).ravel() for name in need}
        sizes = {c.size for c in cols.values()}
        if len(sizes) != 1:
            raise ScheduleFormatError("columns must have one entry per transfer each")
        for name, c in cols.items():
            if c.dtype.kind not in "iu":
                raise InputTypeError(f"column {name} must hold integers, got {c.dtype}")
        step = cols["step"]
        if step.size > 1 and not bool(np.all(step[1:] >= step[:-1])):
            raise ScheduleFormatError("a compact schedule's rows must be sorted by step")
        if coll.rooted:
            if root is None or isinstance(root, bool) or not isinstance(root, (int, np.integer)):
                raise ScheduleFormatError(f"root: a {coll.name} schedule needs an integer root "
                                          "node")
            if not 0 <= int(root) < topology.num_nodes:
                raise ScheduleFormatError(f"root: must be a node 0..{topology.num_nodes - 1}, "
                                          f"got {root}")
            root = int(root)
        elif root is not None:
            raise ScheduleFormatError(f"root: only rooted collectives take a root, not "
                                      f"{coll.name}")
        self.topology = topology
        self.collective = coll
        self.columns = cols
        self.parts = int(parts)
        self.root = root
        self.algorithm = str(algorithm)
        self.meta = dict(meta or {})

    @property
    def num_transfers(self):
        return int(self.columns["step"].size)

    @property
    def nbytes(self):
        """Bytes the columns hold."""
        return sum(int(c.nbytes) for c in self.columns.values())

    @property
    def num_steps(self):
        """Distinct step numbers that carry a transfer (see :class:`TransferRows`)."""
        step = self.columns["step"]
        if not step.size:
            return 0
        changes = 0
        for lo in range(0, step.size, BLOCK_ROWS):   # each block overlaps the next by a row
            part = step[lo:lo + BLOCK_ROWS + 1]
            changes += int(np.count_nonzero(part[1:] != part[:-1]))
        return changes + 1

    @property
    def last_step(self):
        step = self.columns["step"]
        return int(step[-1]) if step.size else 0

    @property
    def transfers(self):
        raise UnsupportedError("a compact schedule has no transfer array: use blocks() or "
                               "expand()")

    def steps(self):
        """The step column (narrow unsigned integers)."""
        return self.columns["step"]

    def rows(self, index):
        """Rows ``index`` (an integer array, or a slice) as :data:`TRANSFER_DTYPE` transfers."""
        if not isinstance(index, slice):
            index = np.asarray(index, dtype=np.int64)
        c = self.columns
        part = c["part"][index].astype(np.int64) if self.parts > 1 else 0
        return transfer_array(c["step"][index].astype(np.int64),
                              c["src"][index].astype(np.int64),
                              c["dst"][index].astype(np.int64),
                              c["shard"][index].astype(np.int64),
                              np.divide(part, self.parts), np.divide(part + 1, self.parts),
                              COPY)

    def blocks(self, rows=None):
        """``(first row, transfers)`` for consecutive blocks of at most ``rows`` rows
        (default :data:`BLOCK_ROWS`), as :data:`TRANSFER_DTYPE` arrays (one block in memory at
        a time)."""
        rows = rows or BLOCK_ROWS
        for lo in range(0, self.num_transfers, rows):
            yield lo, self.rows(slice(lo, lo + rows))

    def expand(self):
        """The explicit :class:`Schedule` (memory guard first)."""
        require_memory(self.num_transfers * TRANSFER_DTYPE.itemsize + self.nbytes,
                       f"the explicit {self.collective.name} schedule on {self.num_nodes} "
                       f"nodes ({self.num_transfers:,} transfers)")
        out = np.empty(self.num_transfers, dtype=TRANSFER_DTYPE)
        for lo, block in self.blocks():
            out[lo:lo + block.size] = block
        return Schedule(self.topology, self.collective, out, root=self.root,
                        algorithm=self.algorithm, meta=dict(self.meta))

    def explicit(self):
        return self.expand()

    def form_note(self):
        return f" (compact: {self.nbytes / max(1, self.num_transfers):.0f} bytes each)"

    def op_names(self):
        return np.full(self.num_transfers, "copy", dtype=object)

    def __repr__(self):
        return (f"CompactSchedule({self.collective.name!r}, {self.algorithm!r} on "
                f"{self.topology.name!r}, steps={self.num_steps}, "
                f"transfers={self.num_transfers}, {self.nbytes / max(1, self.num_transfers):.0f}"
                " bytes each)")


def compact_schedule(schedule):
    """The :class:`CompactSchedule` of an explicit schedule whose transfers each copy one whole
    chunk of an equal cut (rows sorted by step, stably).

    Raises
    ------
    UnsupportedError
        If the collective combines, a transfer reduces, the byte ranges are not the chunks
        of one equal cut of every shard, or the schedule is routed.
    """

    schedule = as_schedule(schedule)
    if schedule.routing is not None:
        raise UnsupportedError("a compact schedule holds transfers over links; this one is "
                               f"routed ({schedule.routing})")
    t = schedule.transfers
    coll = schedule.collective
    if coll.combining:
        raise UnsupportedError(f"a compact schedule holds copies only; {coll.name} combines")
    if np.any(t["op"] != COPY):
        raise UnsupportedError("a compact schedule holds copies only; this one reduces")
    parts = 1
    if t.size:
        width = float((t["hi"] - t["lo"]).min())
        parts = int(round(1.0 / width)) if width > 0 else 0
    part = np.rint(t["lo"] * parts).astype(np.int64) if parts else np.zeros(0, np.int64)
    if parts < 1 or not (np.array_equal(t["lo"], part / parts) and
                         np.array_equal(t["hi"], (part + 1) / parts)):
        raise UnsupportedError("a compact schedule holds whole chunks of one equal cut of each "
                               "shard; these byte ranges are not")
    order = np.argsort(t["step"], kind="stable")
    columns = compact_columns(t["step"][order], t["src"][order], t["dst"][order],
                              t["shard"][order], part[order] if parts > 1 else None)
    return CompactSchedule(schedule.topology, coll, columns, parts=parts, root=schedule.root,
                           algorithm=schedule.algorithm, meta=schedule.meta)
