"""Step traffic: what a schedule sends in each step between each ordered pair of nodes.

The step model reads nothing else of a schedule (docs/math.md section 1): step t costs the
largest load of a link over its bandwidth plus the latency of the longest route used, and a
link's load is the sum of the bytes of the transfers that cross it. Which shards the bytes
belong to matters to the verifier, not to the price. :class:`StepTraffic` keeps only those
sums, one row per (step, src, dst), as a share of the buffer size M; :func:`step_costs
<topocoll.schedule.cost.step_costs>` prices it exactly as it prices the schedule it came from.

That lets a generator price a schedule too large to hold as transfers: an allreduce on a
64x64 torus by Swing's latency variant has ``N^2 log2 N`` = 201 million transfer rows (6.6 GB)
and 49,152 traffic rows. A generator that writes its rows to a *sink* makes either from the
same code: :class:`RowSink` keeps the rows (the schedule), :class:`TrafficSink` sums them as
they come (the traffic), so the two cannot disagree.

>>> from topocoll.synth import generate
>>> s = generate("ring:4", "allgather", "ring")
>>> traffic = traffic_of(s)
>>> traffic.num_steps, traffic.step.tolist(), traffic.src.tolist()[:4]
(3, [1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3], [0, 1, 2, 3])
>>> traffic.share.tolist()[:4]
[0.25, 0.25, 0.25, 0.25]
"""

import numpy as np

from ..collectives import COPY, collective as _collective
from ..errors import InputTypeError, ScheduleFormatError
from ..topology.model import Topology
from ..topology.routes import ROUTINGS
from .io import as_schedule
from .model import TRANSFER_DTYPE, TransferRows, transfer_array
from .routing import unlinked

__all__ = ["StepTraffic", "RowSink", "TrafficSink", "traffic_of"]


class StepTraffic:
    """Per (step, src, dst): the share of the buffer sent that step from src to dst.

    Parameters
    ----------
    topology : Topology
    collective : str
    step, src, dst : int arrays
        One row per ordered pair and step (rows sorted by step, then src, then dst).
    share : float array
        Bytes sent, as a fraction of the buffer size M.
    routing : str, optional
        None: every row crosses the link ``src -> dst``; else the routing policy
        (:data:`~topocoll.topology.routes.ROUTINGS`) its bytes follow.
    algorithm : str
    meta : dict, optional
    root : int, optional
        The root of a rooted collective.

    Not a schedule: it names no shards, so nothing can verify it. What it came from can be
    (a generator's rows on a smaller network, or the schedule itself).
    """

    __slots__ = ("topology", "collective", "step", "src", "dst", "share", "routing",
                 "algorithm", "meta", "root")

    def __init__(self, topology, collective, step, src, dst, share, *, routing=None,
                 algorithm="", meta=None, root=None):
        if not isinstance(topology, Topology):
            raise InputTypeError(f"topology must be a Topology, got {type(topology).__name__}")
        if routing is not None and routing not in ROUTINGS:
            raise ScheduleFormatError(f"routing must be one of {', '.join(ROUTINGS)} or None, "
                                      f"got {routing!r}")
        self.topology = topology
        self.collective = _collective(collective)
        columns = [np.asarray(c, dtype=np.int64).ravel() for c in (step, src, dst)]
        share = np.asarray(share, dtype=np.float64).ravel()
        if len({c.size for c in columns} | {share.size}) != 1:
            raise ScheduleFormatError("traffic: step, src, dst and share must be of one length")
        n = topology.num_nodes
        for name, c in zip(("src", "dst"), columns[1:]):
            if c.size and (c.min() < 0 or c.max() >= n):
                raise ScheduleFormatError(f"traffic: {name} must be a node 0..{n - 1}")
        if share.size and not (share > 0).all():
            raise ScheduleFormatError("traffic: every share must be > 0")
        self.step, self.src, self.dst = columns
        self.share = share
        self.routing = routing
        self.algorithm = str(algorithm)
        self.meta = dict(meta or {})
        self.root = None if root is None else int(root)

    @property
    def size(self):
        """Rows held: one per (step, ordered pair) used."""
        return int(self.share.size)

    @property
    def num_steps(self):
        """Distinct steps used."""
        return int(np.unique(self.step).size)

    def replace(self, **changes):
        """A copy with some of the constructor's arguments changed (``topology`` with other
        link rates, say)."""
        fields = {name: getattr(self, name) for name in self.__slots__}
        unknown = set(changes) - set(fields)
        if unknown:
            raise InputTypeError(f"StepTraffic has no field {sorted(unknown)[0]!r}")
        fields.update(changes)
        return StepTraffic(fields.pop("topology"), fields.pop("collective"), fields.pop("step"),
                           fields.pop("src"), fields.pop("dst"), fields.pop("share"), **fields)

    def __repr__(self):
        return (f"StepTraffic({self.collective.name!r}, {self.algorithm!r} on "
                f"{self.topology.name!r}, steps={self.num_steps}, rows={self.size}, "
                f"routing={self.routing!r})")


class RowSink:
    """Collects a generator's transfer rows: :meth:`add` them part by part, then take
    :meth:`transfers` (one array, in the order added)."""

    def __init__(self):
        self._parts = []

    def add(self, step, src, dst, shard, lo=0.0, hi=1.0, op=COPY):
        """Rows from columns (scalars broadcast, as :func:`transfer_array`); an empty part is
        skipped."""
        if np.size(src) and np.size(shard):
            self._parts.append(transfer_array(step, src, dst, shard, lo, hi, op))

    def transfers(self):
        return np.concatenate(self._parts) if self._parts else np.zeros(0, TRANSFER_DTYPE)


class TrafficSink:
    """Sums a generator's transfer rows per (step, src, dst) as they are added, holding only
    the sums: the same :meth:`add` as :class:`RowSink`, then :meth:`traffic`.

    Parameters
    ----------
    num_nodes : int
    shard_fraction : float
        One shard's size as a fraction of the buffer
        (:meth:`~topocoll.collectives.Collective.shard_fraction`).
    """

    def __init__(self, num_nodes, shard_fraction):
        self.num_nodes = int(num_nodes)
        self.shard_fraction = float(shard_fraction)
        self._keys, self._share = [], []

    def add(self, step, src, dst, shard, lo=0.0, hi=1.0, op=COPY):
        given = np.asarray(step)
        # one step for every row (the usual call), told without sorting the rows
        single = given.size > 0 and given.min() == given.max()
        step, src, dst, shard, lo, hi = np.broadcast_arrays(
            given, *(np.asarray(c) for c in (src, dst, shard, lo, hi)))
        if not src.size:
            return
        n = self.num_nodes
        pair = src.astype(np.int64).ravel() * n + dst.astype(np.int64).ravel()
        share = (hi - lo).astype(np.float64).ravel() * self.shard_fraction
        if single and n * n <= min(1 << 26, 8 * pair.size):
            # one step with many rows: sum by pair in one pass
            sums = np.bincount(pair, weights=share, minlength=n * n)
            used = np.flatnonzero(sums)
            self._keys.append(int(given.min()) * n * n + used)
            self._share.append(sums[used])
            return
        keys, inverse = np.unique(step.astype(np.int64).ravel() * n * n + pair,
                                  return_inverse=True)
        self._keys.append(keys)
        self._share.append(np.bincount(inverse, weights=share, minlength=keys.size))

    def traffic(self, topology, collective, *, routing="auto", algorithm="", meta=None,
                root=None):
        """The sums as a :class:`StepTraffic`; ``routing="auto"``: ``"shortest"`` if some
        pair has no link, else None (as a routed generator decides)."""
        n = self.num_nodes
        keys = np.concatenate(self._keys) if self._keys else np.zeros(0, np.int64)
        share = np.concatenate(self._share) if self._share else np.zeros(0)
        keys, inverse = np.unique(keys, return_inverse=True)
        share = np.bincount(inverse, weights=share, minlength=keys.size)
        step, pair = keys // (n * n), keys % (n * n)
        src, dst = pair // n, pair % n
        if routing == "auto":
            routing = "shortest" if unlinked(topology, src, dst).any() else None
        return StepTraffic(topology, collective, step, src, dst, share, routing=routing,
                           algorithm=algorithm, meta=meta, root=root)


def traffic_of(schedule):
    """The :class:`StepTraffic` the step model reads of ``schedule`` (any form; for a symmetric
    schedule that of its representatives, the pairs into node 0, which the step model prices
    as the whole: docs/math.md section 10)."""
    schedule = as_schedule(schedule, accept=(TransferRows,)).representatives()
    t = schedule.transfers
    sink = TrafficSink(schedule.num_nodes, schedule.collective.shard_fraction(schedule.num_nodes))
    sink.add(t["step"], t["src"], t["dst"], t["shard"], t["lo"], t["hi"])
    return sink.traffic(schedule.topology, schedule.collective, routing=schedule.routing,
                        algorithm=schedule.algorithm, meta=schedule.meta, root=schedule.root)

