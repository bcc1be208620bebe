"""The Schedule model: a collective on a topology as transfers in steps, held in numpy columns.

A 1024-node allgather has millions of transfers, so transfers live in one structured array
(:data:`TRANSFER_DTYPE`) rather than in Python objects.
"""


import numpy as np

from ..collectives import COPY, OP_NAMES, REDUCE, collective as _collective
from ..errors import InputTypeError, ScheduleFormatError, UnsupportedError
from ..topology.model import Topology
from ..topology.routes import ROUTINGS, lattice_dims

__all__ = ["Schedule", "TransferRows", "TRANSFER_DTYPE", "transfer_array", "transfer_problems",
           "BUILD_BYTES_PER_TRANSFER", "coerce_transfers"]

#: Bytes a generator holds per transfer while it builds a schedule (the row and the index
#: arrays that make it; measured peak about 100): what memory guards multiply by.
BUILD_BYTES_PER_TRANSFER = 128
TRANSFER_DTYPE = np.dtype([("step", "<i4"), ("src", "<i4"), ("dst", "<i4"), ("shard", "<i8"),
                           ("lo", "<f8"), ("hi", "<f8"), ("op", "i1")])


def _store(out, name, column):
    """``out[name] = column``, refusing integers that the field's width would wrap around."""
    column = np.asarray(column)
    kind = TRANSFER_DTYPE[name]
    if kind.kind == "i" and column.size and column.dtype.kind in "iu":
        info = np.iinfo(kind)
        low, high = column.min(), column.max()
        if low < info.min or high > info.max:
            bad = high if high > info.max else low
            raise ScheduleFormatError(f"transfers: {name} {int(bad)} does not fit a "
                                      f"{info.bits}-bit integer (at most {info.max})")
    out[name] = np.ravel(column)


def transfer_array(step, src, dst, shard, lo, hi, op=COPY):
    """Build a transfer array from columns (scalars broadcast).

    A step or node number too large for its field raises :class:`ScheduleFormatError` instead
    of wrapping around.

    >>> transfer_array(2**31, 0, 1, 0, 0.0, 1.0)
    Traceback (most recent call last):
    ...
    topocoll.errors.ScheduleFormatError: transfers: step 2147483648 does not fit a 32-bit integer (at most 2147483647)
    """
    columns = np.broadcast_arrays(*(np.asarray(c) for c in (step, src, dst, shard, lo, hi, op)))
    out = np.empty(columns[0].shape[0] if columns[0].ndim else 1, dtype=TRANSFER_DTYPE)
    for name, col in zip(TRANSFER_DTYPE.names, columns):
        _store(out, name, col)
    return out


def transfer_problems(transfers, num_nodes, num_shards, combining, limit=None):
    """Rule violations of single transfers, as ``(index, field, message)`` in index order.

    These are the checks that need nothing but the transfer itself and the sizes: a step of at
    least 1, endpoints that are nodes, no self-sends, a shard that exists, a byte range with
    ``0 <= lo < hi <= 1``, and ``reduce`` only in combining collectives.
    """
    t = transfers
    rules = [
        ("step", t["step"] < 1, "step must be >= 1"),
        ("src", (t["src"] < 0) | (t["src"] >= num_nodes), f"src must be a node 0..{num_nodes - 1}"),
        ("dst", (t["dst"] < 0) | (t["dst"] >= num_nodes), f"dst must be a node 0..{num_nodes - 1}"),
        ("dst", t["src"] == t["dst"], "dst must differ from src (no self-sends)"),
        ("shard", (t["shard"] < 0) | (t["shard"] >= num_shards),
         f"shard must be 0..{num_shards - 1}"),
        ("lo", ~np.isfinite(t["lo"]) | (t["lo"] < 0), "lo must be in [0, 1)"),
        ("hi", ~np.isfinite(t["hi"]) | (t["hi"] > 1), "hi must be in (0, 1]"),
        ("hi", ~(t["lo"] < t["hi"]), "hi must be greater than lo"),
        ("op", (t["op"] != COPY) & (t["op"] != REDUCE), "op must be copy or reduce"),
    ]
    if not combining:
        rules.append(("op", t["op"] == REDUCE, "op reduce is only allowed in combining collectives"))
    found = []
    for field, mask, message in rules:
        idx = np.flatnonzero(mask)
        if limit is not None:
            idx = idx[:limit]
        found.extend((int(i), field, message) for i in idx)
    found.sort(key=lambda p: p[0])
    return found if limit is None else found[:limit]


def coerce_transfers(transfers):
    """``transfers`` as a one-dimensional :data:`TRANSFER_DTYPE` array (fields converted and
    range-checked as :func:`transfer_array` does)."""
    transfers = np.asarray(transfers)
    if transfers.dtype != TRANSFER_DTYPE:
        if transfers.dtype.names is None or set(transfers.dtype.names) != set(TRANSFER_DTYPE.names):
            raise InputTypeError("transfers must be a structured array with fields "
                                 f"{', '.join(TRANSFER_DTYPE.names)}")
        converted = np.empty(transfers.shape, dtype=TRANSFER_DTYPE)
        for name in TRANSFER_DTYPE.names:
            _store(converted, name, transfers[name])
        transfers = converted
    if transfers.ndim != 1:
        raise InputTypeError("transfers must be one-dimensional")
    return transfers


class TransferRows:
    """What every form of a schedule offers, whether its rows are every transfer
    (:class:`Schedule`), one per orbit
    (:class:`~topocoll.schedule.symmetric.SymmetricSchedule`, whose steps are the full
    schedule's) or narrow whole-chunk copies
    (:class:`~topocoll.schedule.compact.CompactSchedule`).

    A form is a subclass: it says its :attr:`form` name and overrides the operations below
    where its rows are not the explicit ones (the defaults here are the explicit form's). The
    modules above that need more than these (the verifier, the transforms) dispatch on the
    class (docs/architecture.md, "a new form").
    """

    __slots__ = ()

    #: The form's name, as ``--form`` and the schedule file say it.
    form = None
    #: The translation group whose orbits the rows stand for (None: each row is one transfer).
    group = None
    #: How transfers between nodes that share no link travel (None: they may not; every
    #: transfer crosses one link). See :class:`Schedule`.
    routing = None

    def explicit(self):
        """The explicit :class:`Schedule` of every transfer (built under the memory guard by
        the forms that hold fewer rows)."""
        return self

    def unfolded(self):
        """A schedule with every transfer a row: the orbits of a symmetric schedule unfolded,
        the other forms (which list every transfer) as they are."""
        return self

    def representatives(self):
        """The rows the step model prices: every transfer, or one per orbit (whose pairs carry
        what every pair of their label carries: docs/math.md section 10, theorem 2)."""
        return self

    def timed_rows(self):
        """The rows the link model follows: every transfer, or the shard-0 history of a
        symmetric schedule, whose timings its translations mirror."""
        return self

    def rows(self, index):
        """Rows ``index`` (an integer array, or a slice) as :data:`TRANSFER_DTYPE` transfers."""
        return self.transfers[index]

    def blocks(self, rows=None):
        """``(first row, transfers)`` for consecutive blocks of rows (one block in memory at a
        time); the rows held here are one block."""
        yield 0, self.transfers

    def file_fields(self):
        """The form's own fields of the schedule file (none: the explicit form is the
        default)."""
        return {}

    def form_facts(self):
        """The form for a ``--json`` document."""
        return {"form": self.form}

    def form_note(self):
        """What a one-line summary says of the form (nothing for every transfer listed)."""
        return ""

    @property
    def num_nodes(self):
        return self.topology.num_nodes

    @property
    def num_shards(self):
        return self.collective.num_shards(self.topology.num_nodes)

    @property
    def num_steps(self):
        """The number of steps: distinct step numbers that carry a transfer.

        This is what the cost model charges for (one latency per step); step numbers that carry
        nothing cost nothing, so a schedule numbered 5 and 10 has 2 steps (see
        :attr:`last_step`, and docs/format.md).
        """
        steps = self.transfers["step"]
        if not steps.size:
            return 0
        low, high = int(steps.min()), int(steps.max())
        if low >= 0 and high < 1 << 24:
            return int(np.count_nonzero(np.bincount(steps, minlength=high + 1)))
        return int(np.unique(steps).size)

    @property
    def last_step(self):
        """The largest step number used (0 for an empty schedule)."""
        return int(self.transfers["step"].max()) if self.transfers.size else 0

    def replace(self, **changes):
        """A copy with some fields (those of ``__slots__``) changed."""
        fields = {name: getattr(self, name) for name in self.__slots__}
        fields.update(changes)
        return type(self)(**fields)

    def op_names(self):
        """The ``op`` column as strings."""
        return np.asarray(OP_NAMES, dtype=object)[self.transfers["op"]]


class Schedule(TransferRows):
    """A collective schedule: transfers in steps on a topology.

    Parameters
    ----------
    topology : Topology
        The network; must be endpoint-only (no switches).
    collective : str
        One of the eight collectives.
    transfers : numpy structured array of :data:`TRANSFER_DTYPE`
        One row per transfer: ``step, src, dst, shard, lo, hi, op`` (``op`` 0 = copy, 1 = reduce).
    root : int, optional
        The root of a rooted collective (required for those, forbidden otherwise).
    algorithm : str
        What made the schedule.
    meta : dict, optional
        Free-form facts (solver statistics, notes).
    routing : str, optional
        None (the default): every transfer crosses one link, ``src -> dst``. A policy of
        :data:`~topocoll.topology.routes.ROUTINGS` (``"shortest"``, or ``"xy"``: dimension
        order, on a mesh, torus or ring only): a transfer may go to any
        node, and the network forwards it along that policy's route (docs/format.md, "Routed
        transfers"); the step and link models charge every link of the route.

    Examples
    --------
    >>> from topocoll.topology import topology
    >>> t = transfer_array(step=[1, 1], src=[0, 1], dst=[1, 0], shard=[0, 1], lo=0.0, hi=1.0)
    >>> s = Schedule(topology("ring:2"), "allgather", t, algorithm="hand")
    >>> s.num_steps, s.num_transfers
    (1, 2)
    """

    __slots__ = ("topology", "collective", "transfers", "root", "algorithm", "meta", "routing")

    #: Every transfer listed (a :class:`~topocoll.schedule.symmetric.SymmetricSchedule` says
    #: ``"symmetric"``).
    form = "explicit"

    def __init__(self, topology, collective, transfers, *, root=None, algorithm="custom",
                 meta=None, routing=None):
        if not isinstance(topology, Topology):
            raise InputTypeError(f"topology must be a Topology, got {type(topology).__name__}")
        topology.require_no_switches("a schedule")
        self.topology = topology
        self.collective = _collective(collective)
        self.transfers = coerce_transfers(transfers)
        if self.collective.rooted:
            if root is None or isinstance(root, bool) or not isinstance(root, (int, np.integer)):
                raise ScheduleFormatError(f"root: a {self.collective.name} schedule needs an integer "
                                          "root node")
            if not 0 <= int(root) < topology.num_nodes:
                raise ScheduleFormatError(f"root: must be a node 0..{topology.num_nodes - 1}, got {root}")
            root = int(root)
        elif root is not None:
            raise ScheduleFormatError(f"root: only rooted collectives take a root, not "
                                      f"{self.collective.name}")
        self.root = root
        self.algorithm = str(algorithm)
        self.meta = dict(meta or {})
        if routing is not None and routing not in ROUTINGS:
            raise UnsupportedError(f"routing must be one of {', '.join(ROUTINGS)} (or none: "
                                   f"every transfer on a link), got {routing!r}")
        if routing == "xy" and lattice_dims(topology) is None:
            raise UnsupportedError(f"routing xy (dimension order) needs a mesh, torus or ring; "
                                   f"{topology.name} is none")
        self.routing = routing

    @property
    def num_transfers(self):
        return int(self.transfers.size)

    def file_fields(self):
        return {} if self.routing is None else {"routing": self.routing}

    def form_facts(self):
        return {"form": self.form} if self.routing is None else \
            {"form": self.form, "routing": self.routing}

    def form_note(self):
        return "" if self.routing is None else f" (routed: {self.routing})"

    def sorted(self):
        """A copy with transfers ordered by step, src, dst, shard, lo."""
        t = self.transfers
        order = np.lexsort((t["lo"], t["shard"], t["dst"], t["src"], t["step"]))
        return self.replace(transfers=t[order])

    def __repr__(self):
        return (f"Schedule({self.collective.name!r}, {self.algorithm!r} on {self.topology.name!r}, "
                f"steps={self.num_steps}, transfers={self.num_transfers})")

