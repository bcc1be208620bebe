"""The link model of TACOS: an independent timing of any schedule.

Every directed link serves the transfers that use it one at a time, in step order (within a
step, in the schedule's order). A transfer moves ``(hi - lo) * shard_bytes`` bytes; it starts
when its link is free *and* its sender holds the data, keeps the link busy for
``latency + bytes / bandwidth`` (the latency only where the alpha convention charges it, below)
and the receiver holds the data when it ends. "Holds" follows
the schedule's own causality: a transfer in step ``s`` reads what its sender received in steps
before ``s`` (a copy is ready at its first arrival, a partial sum when every earlier
contribution into it has arrived). Parallel links between one pair are separate servers; a
transfer takes the one on which it would finish first.

This is how synthesized schedules are timed: it never looks at what the synthesizer claimed,
only at the transfers, so it times BFB or ring schedules just as well.

Which transfers pay the latency alpha is a convention, ``alpha_per`` (docs/math.md section 8):

``"message"`` (the default)
    Transfers of one schedule, one step and one link that run back to back (each one's data
    ready by the time the link frees) form one message, and a message pays alpha once. With one
    link per node pair the finish time is then never above the step model's ``T_L + T_B``.
``"step"``
    A link pays alpha once per step (per schedule): the first transfer of the step on it pays,
    the rest do not even after the link idled. The step model's own charge; the same theorem.
``"transfer"``
    Every transfer pays alpha: TACOS's per-chunk charge, kept for side-by-side runs.

With alpha = 0 the three agree.

``gamma`` (seconds per byte, default 0) prices reductions: a node reduces the chunks it receives
one at a time in arrival order, ``gamma x bytes`` each, before the partial sum can be sent on;
``time`` includes the last reduction (:func:`~topocoll.schedule.reduction.reduce_finish`).

>>> from topocoll.topology import topology
>>> from topocoll.synth import generate
>>> ring = topology("uniring:4", bandwidth=1e9, latency=1e-6)
>>> r = simulate(generate(ring, "allgather", "ring"), 4e9)   # 1 GB shards, 1 s per hop
>>> round(r.time, 6), r.num_transfers
(3.000003, 12)
"""

from dataclasses import dataclass, field

import numpy as np

from ..collectives import REDUCE
from ..errors import InputTypeError, InvalidScheduleError, TopologyError, UnsupportedError
from ..units import parse_bandwidth, parse_size, parse_time
from .io import as_schedule
from .reduction import parse_gamma, reduce_finish
from .routing import TransferHops, hop_pairs, serve_further_hops
from .symmetric import SymmetricSchedule

__all__ = ["simulate", "simulate_many", "LinkModelResult", "WAITED", "INTERVAL_DTYPE",
           "ALPHA_CONVENTIONS", "DEFAULT_ALPHA_PER"]

#: The alpha conventions of the link model (see the module docstring), and the default.
ALPHA_CONVENTIONS = ("message", "step", "transfer")
DEFAULT_ALPHA_PER = "message"


def _alpha_per(value):
    if value is None:
        return DEFAULT_ALPHA_PER
    if not isinstance(value, str):
        raise InputTypeError(f"alpha_per must be a string, got {type(value).__name__}")
    if value.removeprefix("per-") not in ALPHA_CONVENTIONS:
        raise UnsupportedError(f"alpha_per must be one of {', '.join(ALPHA_CONVENTIONS)}, "
                               f"got {value!r}")
    return value.removeprefix("per-")


#: what set a transfer's start (``LinkModelResult.waited``): nothing (it began at time 0 with
#: data held from the start), its link (busy with the previous transfer), or its data
_START, _LINK, _DATA = 0, 1, 2
WAITED = ("start", "link", "data")

#: the fields of :meth:`LinkModelResult.intervals`
INTERVAL_DTYPE = np.dtype([("link", np.int64), ("start", np.float64), ("end", np.float64),
                           ("step", np.int64), ("shard", np.int64), ("transfer", np.int64)])


@dataclass
class LinkModelResult:
    """Timing of one schedule in the link model.

    Attributes
    ----------
    time : float
        When the last transfer ends (seconds); 0 for an empty schedule.
    start, end : float arrays
        Per transfer (in the schedule's order), when it starts and ends.
    link_busy : float array
        Per topology link, the seconds it spends carrying data.
    size : float
        The buffer size M (bytes).
    link : int array
        Per transfer, the topology link (index into ``topology.src`` / ``dst``) that carried
        it (one of the parallel links of its pair).
    pred : int array
        Per transfer, the transfer that set its start (-1: none): the previous transfer on its
        link when the link was busy longer than the data took to arrive, else the transfer
        that delivered the last of the data it sends (for a partial sum, the latest
        contribution). Ties go to the data.
    pred_tenant : int array
        Per transfer, whose transfer ``pred`` is (the schedule's index in
        :func:`simulate_many`; another tenant only when its transfer held the link).
    waited : int8 array
        Per transfer, what set its start: 0 nothing (time 0), 1 the link, 2 the data
        (``WAITED`` names them).
    tenant : int
        This schedule's index in :func:`simulate_many` (0 for :func:`simulate`).
    schedule : Schedule or SymmetricSchedule
        The schedule timed (its topology names the links). For a symmetric schedule the
        per-transfer arrays are per representative (each stands for its N translations, which
        start and end at the same times); ``link_busy`` covers every link.
    alpha_per : str
        Which transfers paid the link latency: ``"message"``, ``"step"`` or ``"transfer"``
        (``ALPHA_CONVENTIONS``).
    mirror : int array or None
        Symmetric schedules: per topology link, the link into node 0 of the same label and
        position, whose transfers it repeats translated.

    Examples
    --------
    >>> from topocoll.topology import topology
    >>> from topocoll.synth import generate
    >>> ring = topology("uniring:3", bandwidth=1e9, latency=0.0)
    >>> r = simulate(generate(ring, "allgather", "ring"), 3e9)   # 1 s per transfer
    >>> [float(x) for x in r.end[r.critical_path()]]
    [1.0, 2.0]
    >>> [e["waited_for"] for e in r.to_dict(detail=True)["critical_path"]]
    ['start', 'data']
    """

    time: float
    start: np.ndarray = field(repr=False)
    end: np.ndarray = field(repr=False)
    link_busy: np.ndarray = field(repr=False)
    size: float = 0.0
    link: np.ndarray = field(default=None, repr=False)
    pred: np.ndarray = field(default=None, repr=False)
    pred_tenant: np.ndarray = field(default=None, repr=False)
    waited: np.ndarray = field(default=None, repr=False)
    tenant: int = 0
    schedule: object = field(default=None, repr=False)
    alpha_per: str = DEFAULT_ALPHA_PER
    mirror: np.ndarray = field(default=None, repr=False)

    @property
    def num_transfers(self):
        return int(self.start.size)

    @property
    def link_utilization(self):
        """Per link, busy time / total time (0 for an empty schedule)."""
        if self.time <= 0:
            return np.zeros_like(self.link_busy)
        return self.link_busy / self.time

    @property
    def link_transfers(self):
        """Per topology link, how many transfers it carried."""
        count = np.bincount(self.link, minlength=self.link_busy.size)
        return count if self.mirror is None else count[self.mirror]

    def critical_path(self):
        """The chain of transfers that sets the finish time, first to last (transfer indices).

        It ends at the transfer that ends last (the first such in the schedule's order) and
        follows ``pred`` back; it stops at a transfer that began at time 0, or (several
        tenants) at one whose link was held by another tenant's transfer.
        """
        if self.num_transfers == 0:
            return np.zeros(0, dtype=np.int64)
        path = [int(np.argmax(self.end))]
        while True:
            i = path[-1]
            j = int(self.pred[i])
            if j < 0 or int(self.pred_tenant[i]) != self.tenant:
                break
            path.append(j)
        return np.array(path[::-1], dtype=np.int64)

    def intervals(self):
        """Every transfer as a busy interval of its link, sorted by link and start: a structured
        array with fields ``link, start, end, step, shard, transfer`` (``INTERVAL_DTYPE``)."""
        t = self.schedule.transfers
        out = np.empty(self.num_transfers, dtype=INTERVAL_DTYPE)
        out["link"], out["start"], out["end"] = self.link, self.start, self.end
        out["step"], out["shard"] = t["step"], t["shard"]
        out["transfer"] = np.arange(self.num_transfers)
        return out[np.lexsort((out["transfer"], out["start"], out["link"]))]

    def link_report(self):
        """Per used link, in link order: ``{"link", "src", "dst", "busy", "utilization",
        "transfers"}`` (seconds and busy / total time)."""
        topo = self.schedule.topology
        used = np.flatnonzero(self.link_busy > 0)
        util = self.link_utilization
        count = self.link_transfers
        return [{"link": int(i), "src": int(topo.src[i]), "dst": int(topo.dst[i]),
                 "busy": float(self.link_busy[i]), "utilization": float(util[i]),
                 "transfers": int(count[i])} for i in used]

    def critical_path_report(self):
        """The critical path as ``{"transfer", "step", "src", "dst", "shard", "start", "end",
        "waited_for"}`` entries, first to last; ``waited_for`` is ``"start"``, ``"link"`` or
        ``"data"`` (see ``pred``)."""
        t = self.schedule.transfers
        return [{"transfer": int(i), "step": int(t["step"][i]), "src": int(t["src"][i]),
                 "dst": int(t["dst"][i]), "shard": int(t["shard"][i]),
                 "start": float(self.start[i]), "end": float(self.end[i]),
                 "waited_for": WAITED[int(self.waited[i])]} for i in self.critical_path()]

    def to_dict(self, detail=False):
        """A JSON-ready summary (no per-transfer arrays); with ``detail``, also
        ``link_busy`` (:meth:`link_report`) and ``critical_path``
        (:meth:`critical_path_report`)."""
        used = self.link_busy > 0
        util = self.link_utilization
        total = self.num_transfers if self.mirror is None else self.schedule.num_transfers
        doc = {"size": float(self.size), "time": float(self.time), "alpha_per": self.alpha_per,
               "transfers": total, "links_used": int(used.sum()),
               "links": int(self.link_busy.size),
               "mean_utilization_used": float(util[used].mean()) if used.any() else 0.0,
               "max_link_busy": float(self.link_busy.max(initial=0.0))}
        if self.mirror is not None:
            doc.update(form="symmetric", representatives=self.num_transfers)
        if detail:
            doc["link_busy"] = self.link_report()
            doc["critical_path"] = self.critical_path_report()
        return doc


def _links_of(schedule, alpha, link_bandwidth):
    topo = schedule.topology
    lat = topo.latency if alpha is None else np.full(topo.num_links, parse_time(alpha))
    bw = topo.bandwidth if link_bandwidth is None else \
        np.full(topo.num_links, parse_bandwidth(link_bandwidth))
    return topo, np.asarray(lat, dtype=float), np.asarray(bw, dtype=float)


#: the dense numbering of :func:`number_values` is used while its table stays within this many
#: entries per value numbered (plus a constant); past it, a sort numbers the values
DENSE_FACTOR = 4


def number_values(parts, bound):
    """Number the distinct values of the int64 arrays ``parts`` (all in ``0..bound-1``) in
    increasing order: the count of distinct values and, per part, each value's number (int32
    where it fits). A table over ``0..bound-1`` when it is small, else a sort.

    >>> count, (a, b) = number_values([np.array([7, 3]), np.array([3, 9])], 10)
    >>> count, a.tolist(), b.tolist()
    (3, [1, 0], [0, 2])
    """
    total = sum(int(p.size) for p in parts)
    if bound <= DENSE_FACTOR * total + (1 << 20):
        mark = np.zeros(bound, dtype=bool)
        for p in parts:
            mark[p] = True
        lookup = np.cumsum(mark, dtype=np.int32 if bound < 2**31 else np.int64)
        del mark
        lookup -= 1
        return (int(lookup[-1]) + 1 if bound else 0), [lookup[p] for p in parts]
    keys = np.unique(np.concatenate(parts))
    dtype = np.int32 if keys.size < 2**31 else np.int64
    return keys.size, [np.searchsorted(keys, p).astype(dtype, copy=False) for p in parts]


def _breakpoints(t, shards):
    """Every shard's breakpoints (0, 1 and each ``lo``/``hi`` a transfer uses), numbered in
    (shard, position) order: per transfer the numbers of its ``lo`` and ``hi``, the shard of
    each breakpoint and their count. An atom is named by the breakpoint that starts it."""
    values = np.unique(np.concatenate([t["lo"], t["hi"], [0.0, 1.0]]))
    r = values.size
    shard = t["shard"].astype(np.int64) * r
    key_lo = shard + np.searchsorted(values, t["lo"])
    key_hi = shard + np.searchsorted(values, t["hi"])
    del shard
    every = np.arange(shards, dtype=np.int64) * r
    ends = np.concatenate([every + np.searchsorted(values, 0.0),
                           every + np.searchsorted(values, 1.0)])
    count, (a, b, e) = number_values([key_lo, key_hi, ends], shards * r)
    point_shard = np.empty(count, dtype=np.int64)
    point_shard[e] = np.r_[np.arange(shards), np.arange(shards)]
    point_shard[a] = t["shard"]
    point_shard[b] = t["shard"]
    return a, b, point_shard, count


def _spread(values, counts):
    """``values`` repeated ``counts`` times each (``counts`` None: once each)."""
    return values if counts is None else np.repeat(values, counts)


class _Tenant:
    """Per-schedule data state: when each (node, atom) is ready to be sent on."""

    def __init__(self, schedule, size, gamma=0.0, one_queue=False):
        t = schedule.transfers
        n = schedule.num_nodes
        coll = schedule.collective
        self.schedule = schedule
        # reductions: per node when its last one ends (a symmetric history's nodes stand for
        # one node each, which receives every translate: one queue)
        self.gamma, self.one_queue, self.reduced_until = gamma, one_queue, 0.0
        self.reduce_free = np.zeros(1 if one_queue else n)
        self.combining = coll.combining
        # atoms: elementary intervals of every shard between the lo/hi that transfers use;
        # one row per (transfer, atom) it moves, the rows of a transfer consecutive
        a, b, self.atom_shard, self.num_atoms = _breakpoints(t, coll.num_shards(n))
        count = b - a
        del b
        if np.any(count < 1):
            i = int(np.flatnonzero(count < 1)[0])
            raise InvalidScheduleError(f"transfer {i} moves an empty byte range")
        self.shard_bytes = coll.shard_fraction(n) * float(size)
        if np.all(count == 1):   # one row per transfer: rows are transfer indices
            self.count = self.row_start = rep = None
            atoms = a
        else:
            self.count = count
            self.row_start = np.r_[0, np.cumsum(count)[:-1]]
            rep = np.repeat(np.arange(t.size), count)
            atoms = np.repeat(a - self.row_start, count) + np.arange(rep.size)
        del a, count
        # (node, atom) keys that the simulation touches, numbered: sender and receiver sides
        src, dst = t["src"], t["dst"]
        if rep is not None:
            src, dst = src[rep], dst[rep]
        self.num_keys, (self.send_idx, self.recv_idx) = number_values(
            [src.astype(np.int64) * self.num_atoms + atoms,
             dst.astype(np.int64) * self.num_atoms + atoms], n * self.num_atoms)
        self.copy_ready = np.full(self.num_keys, np.inf)
        self.red_ready = np.zeros(self.num_keys) if self.combining else None
        # which transfer made each (node, atom) ready: the first copy to arrive, the last
        # contribution of a partial sum (-1: held from the start)
        who = np.int32 if t.size < 2**31 else np.int64
        self.copy_from = np.full(self.num_keys, -1, dtype=who)
        self.red_from = np.full(self.num_keys, -1, dtype=who) if self.combining else None
        if not coll.combining:
            owner = coll.start_owner(n, schedule.root)[self.atom_shard][atoms]
            self.copy_ready[self.send_idx[owner == src]] = 0.0
            self.copy_ready[self.recv_idx[owner == dst]] = 0.0

    def _rows(self, idx):
        """The rows of transfers ``idx`` and how many each has (None: one each)."""
        if self.count is None:
            return idx, None
        starts = self.row_start[idx]
        counts = self.count[idx]
        rows = np.repeat(starts - np.cumsum(counts) + counts, counts) + np.arange(counts.sum())
        return rows, counts

    def nbytes(self, idx):
        """The bytes each of transfers ``idx`` moves."""
        t = self.schedule.transfers
        return (t["hi"][idx] - t["lo"][idx]) * self.shard_bytes

    def ready(self, idx):
        """When the senders of transfers ``idx`` hold what they send, and per transfer the
        transfer whose arrival made it so (-1: the data was there from the start)."""
        t = self.schedule.transfers
        rows, counts = self._rows(idx)
        k = self.send_idx[rows]
        vals = self.copy_ready[k]
        came = self.copy_from[k]
        if self.combining:
            is_reduce = _spread(t["op"][idx] == REDUCE, counts)
            use_red = is_reduce | ~np.isfinite(vals)
            vals = np.where(use_red, self.red_ready[k], vals)
            came = np.where(use_red, self.red_from[k], came)
        if counts is None:
            out = vals
        else:
            seg = np.r_[0, np.cumsum(counts)[:-1]]
            out = np.maximum.reduceat(vals, seg) if vals.size else np.zeros(0)
            # the first row of each transfer that reaches its maximum names the latest arrival
            hit = np.where(vals == np.repeat(out, counts), np.arange(vals.size), vals.size)
            first = np.minimum.reduceat(hit, seg) if vals.size else np.zeros(0, dtype=np.int64)
            came = came[first] if vals.size else np.zeros(0, dtype=np.int64)
        if np.any(~np.isfinite(out)):
            i = int(idx[np.flatnonzero(~np.isfinite(out))[0]])
            tr = t[i]
            raise InvalidScheduleError(
                f"transfer {i} (step {tr['step']}, {tr['src']}->{tr['dst']}, shard "
                f"{tr['shard']}) sends data its sender never received; verify the schedule")
        return out, came.astype(np.int64)

    def deliver(self, idx, end):
        t = self.schedule.transfers
        red = t["op"][idx] == REDUCE
        if self.gamma > 0 and red.any():   # a partial sum is ready once reduced
            end = end.copy()
            node = np.zeros(int(red.sum()), dtype=np.int64) if self.one_queue else \
                t["dst"][idx[red]].astype(np.int64)
            end[red] = reduce_finish(node, end[red], self.nbytes(idx[red]), self.reduce_free,
                                     self.gamma)
            self.reduced_until = max(self.reduced_until, float(end[red].max()))
        rows, counts = self._rows(idx)
        k = self.recv_idx[rows]
        e = _spread(end, counts)
        who = _spread(idx, counts)
        is_reduce = _spread(t["op"][idx] == REDUCE, counts)
        copy = ~is_reduce
        kc, ec = k[copy], e[copy]
        before = self.copy_ready[kc]
        np.minimum.at(self.copy_ready, kc, ec)
        won = (ec < before) & (ec == self.copy_ready[kc])
        self.copy_from[kc[won]] = who[copy][won]
        if self.combining and is_reduce.any():
            kr, er = k[is_reduce], e[is_reduce]
            before = self.red_ready[kr]
            np.maximum.at(self.red_ready, kr, er)
            won = (er > before) & (er == self.red_ready[kr])
            self.red_from[kr[won]] = who[is_reduce][won]


def simulate_many(schedules, size, *, alpha=None, link_bandwidth=None, alpha_per=None,
                  gamma=None):
    """Time several schedules that share one network's links (multi-tenant).

    All schedules must live on topologies with the same links (same ``src, dst`` columns); their
    steps share one clock, so a link serves the transfers of step 1 of every schedule before
    those of step 2 (schedules in the order given within a step). ``gamma``: the reduction
    cost (module docstring; a schedule's nodes reduce its own chunks). ``alpha_per`` is the alpha
    convention (module docstring); a message or a step's charge is per schedule: another
    schedule's transfer on the link always pays. A symmetric schedule alone is timed from its
    representatives; beside others, expanded (under the memory guard).

    Returns
    -------
    list of LinkModelResult
        One per schedule; ``link_busy`` counts only that schedule's transfers.
    """
    schedules = list(schedules)
    if not schedules:
        raise InputTypeError("simulate_many needs at least one schedule")
    if len(schedules) > 1:   # tenants share links: a symmetric one is timed expanded
        schedules = [s.unfolded() for s in schedules]
    size = parse_size(size)
    alpha_per = _alpha_per(alpha_per)
    topo, lat, bw = _links_of(schedules[0], alpha, link_bandwidth)
    for s in schedules[1:]:
        other = s.topology
        if other.num_nodes != topo.num_nodes or not np.array_equal(other.src, topo.src) \
                or not np.array_equal(other.dst, topo.dst):
            raise TopologyError("simulate_many: the schedules live on different networks")
    step_of, bounds, glob, offsets = _step_order(schedules)   # first: before the big arrays
    gamma = parse_gamma(gamma)
    tenants = [_Tenant(s.timed_rows(), size, gamma, s.group is not None) for s in schedules]
    net = _Network(topo, lat, bw, alpha_per)
    hops = [TransferHops(net, s) for s in schedules]
    out = _Outcome(schedules, topo.num_links)
    for step, lo, hi in zip(step_of, bounds[:-1], bounds[1:]):
        g = glob[lo:hi]
        ten = np.searchsorted(offsets, g, side="right") - 1
        idx = g - offsets[ten]
        ready = np.empty(hi - lo)
        feeder = np.empty(hi - lo, dtype=np.int64)
        nbytes = np.empty(hi - lo)
        for i, tenant in enumerate(tenants):
            m = ten == i
            if m.any():
                ready[m], feeder[m] = tenant.ready(idx[m])
                nbytes[m] = tenant.nbytes(idx[m])
        done = net.serve(int(step), ten, idx, ready, feeder, nbytes, hop_pairs(hops, ten, idx, 0))
        final = serve_further_hops(net, lat, hops, out, int(step), ten, idx, nbytes, done)
        for i, tenant in enumerate(tenants):
            m = ten == i
            if m.any():
                out.store(i, idx[m], *(column[m] for column in done), final=final[m])
                tenant.deliver(idx[m], final[m])
    mirrors = [_mirror_links(topo, s.group, net.upair, net.pair_of_link, net.table)
               if s.group is not None else None for s in schedules]
    results = out.results(schedules, mirrors, size, alpha_per)
    for r, tenant in zip(results, tenants):
        r.time = max(r.time, tenant.reduced_until)
    return results


def _step_order(schedules):
    """Every transfer of every tenant in (step, tenant, index) order: each step's number and
    bounds in that order, each transfer's place in the tenants' concatenation, and where each
    tenant starts in it."""
    sizes = [s.transfers.size for s in schedules]
    offsets = np.r_[0, np.cumsum(sizes)[:-1]].astype(np.int64)
    steps = np.concatenate([s.transfers["step"] for s in schedules])
    # a stable sort by step keeps the concatenation's (tenant, index) order within a step
    glob = np.argsort(steps, kind="stable")
    if steps.size < 2**31:
        glob = glob.astype(np.int32)
    steps = steps[glob]
    if not steps.size:   # no transfer: no step (time 0)
        return steps, np.zeros(1, dtype=np.int64), glob, offsets
    bounds = np.flatnonzero(np.r_[True, steps[1:] != steps[:-1], True])
    return steps[bounds[:-1]], bounds, glob, offsets


class _Network:
    """The links: pairs, their parallel links (a table padded with -1) and each link slot's
    state (when it frees, its last transfer's tenant, index and step)."""

    def __init__(self, topo, lat, bw, alpha_per):
        n = topo.num_nodes
        self.n, self.alpha_per = n, alpha_per
        pair_key = topo.src * n + topo.dst
        self.upair, self.pair_of_link = np.unique(pair_key, return_inverse=True)
        order = np.argsort(self.pair_of_link, kind="stable")
        counts = np.bincount(self.pair_of_link, minlength=self.upair.size)
        width = int(counts.max()) if counts.size else 1
        table = np.full((self.upair.size, max(width, 1)), -1, dtype=np.int64)
        first = np.cumsum(counts) - counts
        table[self.pair_of_link[order],
              np.arange(order.size) - first[self.pair_of_link[order]]] = order
        self.table = table
        self.free = np.where(table >= 0, 0.0, np.inf)
        self.lat_tab = np.where(table >= 0, lat[table], 0.0)
        self.bw_tab = np.where(table >= 0, bw[table], 1.0)
        # per link slot, the last transfer it carried: its tenant and index (-1: none yet)
        self.last_ten = np.zeros(table.shape, dtype=np.int64)
        self.last_idx = np.full(table.shape, -1, dtype=np.int64)
        self.last_step = np.full(table.shape, -1, dtype=np.int64)

    def pairs_of(self, t):
        """Per transfer of ``t``, its pair's row in the table (int32 where it fits)."""
        upair = self.upair
        key = t["src"].astype(np.int64) * self.n + t["dst"]
        p = np.searchsorted(upair, key)
        p = np.minimum(p, upair.size - 1) if upair.size else p
        bad = (upair[p] != key) if upair.size else np.ones(t.size, dtype=bool)
        if np.any(bad):
            i = int(np.flatnonzero(bad)[0])
            tr = t[i]
            raise TopologyError(f"transfer {i} uses link {tr['src']}->{tr['dst']}, which the "
                                "topology does not have")
        return p.astype(np.int32) if upair.size < 2**31 else p

    def serve(self, step, ten, idx, ready, feeder, nbytes, pair, floor=None):
        """Put one step's transfers on their links, FIFO per pair: the r-th transfer of a pair
        in this step waits for the (r-1)-th. ``floor``: per transfer, the earliest its charge
        may start ending from (a routed transfer's tail reaching this hop). Returns per
        transfer start, end, link, pred, pred tenant and what it waited for."""
        if floor is None:
            floor = np.full(idx.size, -np.inf)
        o = np.argsort(pair, kind="stable")
        sp = pair[o]
        grp = np.r_[0, np.flatnonzero(sp[1:] != sp[:-1]) + 1]
        rank = np.empty(o.size, dtype=np.int64)
        rank[o] = np.arange(o.size) - np.repeat(grp, np.diff(np.r_[grp, o.size]))
        done = (np.empty(o.size), np.empty(o.size), np.empty(o.size, dtype=np.int64),
                np.empty(o.size, dtype=np.int64), np.empty(o.size, dtype=np.int64),
                np.empty(o.size, dtype=np.int8))
        for r in range(int(rank.max()) + 1):
            sel = np.flatnonzero(rank == r)
            self._serve_rank(step, sel, (pair[sel], ten[sel], idx[sel], ready[sel],
                                         feeder[sel], nbytes[sel], floor[sel]), done)
        return done

    def _serve_rank(self, step, sel, columns, done):
        """Transfers ``sel`` (one per pair; ``columns``: their pair, tenant, index, ready
        time, feeder and bytes) each take the parallel link of their pair on which they
        finish first."""
        p, ten, idx, ready, feeder, nbytes, floor = columns
        start, end, link, pred, pred_ten, wait = done
        free = self.free
        begin = np.maximum(free[p], ready[:, None])
        charge = self.lat_tab[p]
        if self.alpha_per != "transfer":
            # same schedule, same step on this link: no new latency for a step's charge,
            # nor for a message that goes on back to back (data ready when the link frees)
            cont = (self.last_step[p] == step) & (self.last_ten[p] == ten[:, None])
            if self.alpha_per == "message":
                cont &= ready[:, None] <= free[p]
            charge = np.where(cont, 0.0, charge)
        fin = begin + charge + nbytes[:, None] / self.bw_tab[p]
        fin = np.maximum(fin, floor[:, None] + charge)     # -inf but on a route's later hops
        choice = np.argmin(fin, axis=1)
        ar = np.arange(sel.size)
        start[sel] = begin[ar, choice]
        end[sel] = fin[ar, choice]
        # what bound the start: the data (ties go to the data), else the link, else
        # nothing (time 0 with the data held from the start)
        by_link = free[p, choice] > ready
        by_data = ~by_link & (feeder >= 0)
        wait[sel] = np.where(by_link, _LINK, np.where(by_data, _DATA, _START))
        pred[sel] = np.where(by_link, self.last_idx[p, choice], np.where(by_data, feeder, -1))
        pred_ten[sel] = np.where(by_link, self.last_ten[p, choice], ten)
        free[p, choice] = fin[ar, choice]
        self.last_idx[p, choice] = idx
        self.last_ten[p, choice] = ten
        self.last_step[p, choice] = step
        link[sel] = self.table[p, choice]


class _Outcome:
    """The per-tenant result arrays, filled step by step."""

    def __init__(self, schedules, num_links):
        sizes = [s.transfers.size for s in schedules]
        self.starts = [np.zeros(m) for m in sizes]
        self.ends = [np.zeros(m) for m in sizes]
        self.busy = [np.zeros(num_links) for _ in schedules]
        self.links = [np.zeros(m, dtype=np.int64) for m in sizes]
        self.preds = [np.full(m, -1, dtype=np.int64) for m in sizes]
        # alone, a tenant's predecessors are all its own: the zeros are never written
        self.shared = len(schedules) > 1
        self.pred_tens = [np.full(m, i, dtype=np.int64) if self.shared else
                          np.zeros(m, dtype=np.int64) for i, m in enumerate(sizes)]
        self.waits = [np.zeros(m, dtype=np.int8) for m in sizes]

    def store(self, i, idx, start, end, link, pred, pred_ten, wait, final=None):
        """Record tenant ``i``'s transfers ``idx`` of one step: the first hop's start, end,
        link and wait; ``final``, when the last hop ends (routed transfers)."""
        self.starts[i][idx] = start
        self.ends[i][idx] = end if final is None else final
        self.links[i][idx] = link
        self.preds[i][idx] = pred
        if self.shared:
            self.pred_tens[i][idx] = pred_ten
        self.waits[i][idx] = wait
        np.add.at(self.busy[i], link, end - start)

    def add_busy(self, ten, link, seconds):
        """Busy time of further hops (routed transfers), per tenant."""
        for i in np.unique(ten):
            m = ten == i
            np.add.at(self.busy[i], link[m], seconds[m])

    def results(self, schedules, mirrors, size, alpha_per):
        return [LinkModelResult(float(e.max()) if e.size else 0.0, st, e,
                                b if mr is None else b[mr], size, link=ln,
                                pred=pr, pred_tenant=pt, waited=w, tenant=i, schedule=s,
                                alpha_per=alpha_per, mirror=mr)
                for i, (s, st, e, b, ln, pr, pt, w, mr) in enumerate(
                    zip(schedules, self.starts, self.ends, self.busy, self.links, self.preds,
                        self.pred_tens, self.waits, mirrors))]


def _mirror_links(topo, group, upair, pair_of_link, table):
    """Per topology link ``u -> w``, the link into node 0 of the same label (``u - w -> 0``)
    and the same position among its pair's parallel links (docs/math.md section 10, theorem
    3: it carries the same transfers, translated)."""
    n = topo.num_nodes
    order = np.argsort(pair_of_link, kind="stable")
    counts = np.bincount(pair_of_link, minlength=upair.size)
    first = np.cumsum(counts) - counts
    position = np.empty(order.size, dtype=np.int64)
    position[order] = np.arange(order.size) - first[pair_of_link[order]]
    key = group.subtract(topo.src.astype(np.int64), topo.dst.astype(np.int64)) * n
    row = np.minimum(np.searchsorted(upair, key), max(upair.size - 1, 0))
    ok = upair[row] == key if upair.size else np.zeros(key.size, dtype=bool)
    mirror = np.where(ok & (position < table.shape[1]), table[row, np.minimum(
        position, table.shape[1] - 1)], -1)
    if np.any(mirror < 0):
        raise TopologyError(f"symmetry: group {list(group.dims)} does not map the links of "
                            f"{topo.name} onto links into node 0")
    return mirror


def simulate(schedule, size, *, alpha=None, link_bandwidth=None, alpha_per=None, gamma=None):
    """Time one schedule in the link model (see the module docstring).

    Parameters
    ----------
    schedule : Schedule, SymmetricSchedule or path
        Any schedule that passes :func:`~topocoll.schedule.verify`, or its file. A symmetric
        schedule is timed from its representatives alone (docs/math.md section 10, theorem
        3): the same times as its expansion.
    size : float or str
        Buffer size M, e.g. ``"1GiB"``.
    alpha, link_bandwidth : float or str, optional
        Replace every link's latency / bandwidth.
    alpha_per : str, optional
        Which transfers pay a link's latency: ``"message"`` (default), ``"step"`` or
        ``"transfer"`` (TACOS's per-chunk charge); ``"per-message"`` etc. are accepted too.
    gamma : float or str, optional
        Seconds per byte a node takes to reduce what it receives, or a reduction throughput
        (``"100GB/s"``); 0 by default.

    Returns
    -------
    LinkModelResult
    """
    return simulate_many([as_schedule(schedule, accept=(SymmetricSchedule,))], size, alpha=alpha,
                         link_bandwidth=link_bandwidth, alpha_per=alpha_per, gamma=gamma)[0]
