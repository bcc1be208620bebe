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
from .model import as_schedule

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
    schedule : Schedule
        The schedule timed (its topology names the links).
    alpha_per : str
        Which transfers paid the link latency: ``"message"``, ``"step"`` or ``"transfer"``
        (``ALPHA_CONVENTIONS``).

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
        return np.bincount(self.link, minlength=self.link_busy.size)

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
        doc = {"size": float(self.size), "time": float(self.time), "alpha_per": self.alpha_per,
               "transfers": self.num_transfers, "links_used": int(used.sum()),
               "links": int(self.link_busy.size),
               "mean_utilization_used": float(util[used].mean()) if used.any() else 0.0,
               "max_link_busy": float(self.link_busy.max(initial=0.0))}
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


class _Tenant:
    """Per-schedule data state: when each (node, atom) is ready to be sent on."""

    def __init__(self, schedule, size):
        t = schedule.transfers
        n = schedule.num_nodes
        coll = schedule.collective
        shards = coll.num_shards(n)
        self.schedule = schedule
        self.combining = coll.combining
        # atoms: elementary intervals of every shard between the lo/hi that transfers use;
        # breakpoints are sorted once and every lo/hi finds its index through the sort
        m = t.size
        bp_shard = np.r_[t["shard"], t["shard"], np.arange(shards), np.arange(shards)]
        bp_pos = np.r_[t["lo"], t["hi"], np.zeros(shards), np.ones(shards)]
        order = np.lexsort((bp_pos, bp_shard))
        ss, sp = bp_shard[order], bp_pos[order]
        new = np.r_[True, (ss[1:] != ss[:-1]) | (sp[1:] != sp[:-1])]
        group = np.cumsum(new) - 1
        index = np.empty(order.size, dtype=np.int64)
        index[order] = group
        a, b = index[:m], index[m:2 * m]
        ks, kp = ss[new], sp[new]
        self.count = b - a
        if np.any(self.count < 1):
            i = int(np.flatnonzero(self.count < 1)[0])
            raise InvalidScheduleError(f"transfer {i} moves an empty byte range")
        self.first = a
        self.atom_shard = ks
        self.atom_len = np.r_[np.diff(kp), 0.0]
        self.shard_bytes = coll.shard_fraction(n) * float(size)
        # (node, atom) keys that the simulation touches: sender and receiver sides
        rep = np.repeat(np.arange(t.size), self.count)
        atoms = np.repeat(a - np.cumsum(self.count) + self.count, self.count) + \
            np.arange(rep.size)
        self.rep, self.atoms = rep, atoms
        num_atoms = ks.size
        self.num_atoms = num_atoms
        send_key = t["src"].astype(np.int64)[rep] * num_atoms + atoms
        recv_key = t["dst"].astype(np.int64)[rep] * num_atoms + atoms
        self.keys, inv = np.unique(np.r_[send_key, recv_key], return_inverse=True)
        self.send_idx, self.recv_idx = inv[:rep.size], inv[rep.size:]
        self.copy_ready = np.full(self.keys.size, np.inf)
        self.red_ready = np.zeros(self.keys.size) if self.combining else None
        # which transfer made each (node, atom) ready: the first copy to arrive, the last
        # contribution of a partial sum (-1: held from the start)
        self.copy_from = np.full(self.keys.size, -1, dtype=np.int64)
        self.red_from = np.full(self.keys.size, -1, dtype=np.int64) if self.combining else None
        if not coll.combining:
            owner = coll.start_owner(n, schedule.root)
            key_node, key_atom = self.keys // num_atoms, self.keys % num_atoms
            held = owner[self.atom_shard[key_atom]] == key_node
            self.copy_ready[held] = 0.0
        self.bytes = (t["hi"] - t["lo"]) * self.shard_bytes
        # per transfer, its range of (transfer, atom) rows
        self.row_start = np.r_[0, np.cumsum(self.count)[:-1]]

    def ready(self, idx):
        """When the senders of transfers ``idx`` hold what they send, and per transfer the
        transfer whose arrival made it so (-1: the data was there from the start)."""
        t = self.schedule.transfers
        starts = self.row_start[idx]
        counts = self.count[idx]
        rows = np.repeat(starts - np.cumsum(counts) + counts, counts) + np.arange(counts.sum())
        k = self.send_idx[rows]
        vals = self.copy_ready[k]
        came = self.copy_from[k]
        if self.combining:
            is_reduce = np.repeat(t["op"][idx] == REDUCE, counts)
            use_red = is_reduce | ~np.isfinite(vals)
            vals = np.where(use_red, self.red_ready[k], vals)
            came = np.where(use_red, self.red_from[k], came)
        seg = np.r_[0, np.cumsum(counts)[:-1]]
        out = np.maximum.reduceat(vals, seg) if vals.size else np.zeros(0)
        # the first row of each transfer that reaches its maximum names the latest arrival
        hit = np.where(vals == np.repeat(out, counts), np.arange(vals.size), vals.size)
        first = np.minimum.reduceat(hit, seg) if vals.size else np.zeros(0, dtype=np.int64)
        if np.any(~np.isfinite(out)):
            i = int(idx[np.flatnonzero(~np.isfinite(out))[0]])
            tr = t[i]
            raise InvalidScheduleError(
                f"transfer {i} (step {tr['step']}, {tr['src']}->{tr['dst']}, shard "
                f"{tr['shard']}) sends data its sender never received; verify the schedule")
        return out, came[first] if vals.size else np.zeros(0, dtype=np.int64)

    def deliver(self, idx, end):
        t = self.schedule.transfers
        starts = self.row_start[idx]
        counts = self.count[idx]
        rows = np.repeat(starts - np.cumsum(counts) + counts, counts) + np.arange(counts.sum())
        k = self.recv_idx[rows]
        e = np.repeat(end, counts)
        who = np.repeat(idx, counts)
        is_reduce = np.repeat(t["op"][idx] == REDUCE, counts)
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


def simulate_many(schedules, size, *, alpha=None, link_bandwidth=None, alpha_per=None):
    """Time several schedules that share one network's links (multi-tenant).

    All schedules must live on topologies with the same links (same ``src, dst`` columns); their
    steps share one clock, so a link serves the transfers of step 1 of every schedule before
    those of step 2 (schedules in the order given within a step). ``alpha_per`` is the alpha
    convention (module docstring); a message or a step's charge is per schedule: another
    schedule's transfer on the link always pays.

    Returns
    -------
    list of LinkModelResult
        One per schedule; ``link_busy`` counts only that schedule's transfers.
    """
    schedules = list(schedules)
    if not schedules:
        raise InputTypeError("simulate_many needs at least one schedule")
    size = parse_size(size)
    alpha_per = _alpha_per(alpha_per)
    topo, lat, bw = _links_of(schedules[0], alpha, link_bandwidth)
    for s in schedules[1:]:
        other = s.topology
        if other.num_nodes != topo.num_nodes or not np.array_equal(other.src, topo.src) \
                or not np.array_equal(other.dst, topo.dst):
            raise TopologyError("simulate_many: the schedules live on different networks")
    tenants = [_Tenant(s, size) for s in schedules]
    n = topo.num_nodes
    # pairs and their parallel links (a table padded with -1)
    pair_key = topo.src * n + topo.dst
    upair, pair_of_link = np.unique(pair_key, return_inverse=True)
    order = np.argsort(pair_of_link, kind="stable")
    counts = np.bincount(pair_of_link, minlength=upair.size)
    width = int(counts.max()) if counts.size else 1
    table = np.full((upair.size, max(width, 1)), -1, dtype=np.int64)
    first = np.cumsum(counts) - counts
    table[pair_of_link[order], np.arange(order.size) - first[pair_of_link[order]]] = order
    free = np.where(table >= 0, 0.0, np.inf)
    lat_tab = np.where(table >= 0, lat[table], 0.0)
    bw_tab = np.where(table >= 0, bw[table], 1.0)
    # every transfer of every tenant, keyed by (step, tenant, index)
    all_step = np.concatenate([s.transfers["step"].astype(np.int64) for s in schedules])
    all_ten = np.concatenate([np.full(s.num_transfers, i) for i, s in enumerate(schedules)])
    all_idx = np.concatenate([np.arange(s.num_transfers) for s in schedules])
    glob = np.lexsort((all_idx, all_ten, all_step))
    all_step, all_ten, all_idx = all_step[glob], all_ten[glob], all_idx[glob]
    pairs = []
    for s in schedules:
        p = np.searchsorted(upair, s.transfers["src"].astype(np.int64) * n + s.transfers["dst"])
        p = np.minimum(p, upair.size - 1) if upair.size else p
        bad = (upair[p] != s.transfers["src"].astype(np.int64) * n + s.transfers["dst"]) \
            if upair.size else np.ones(s.num_transfers, dtype=bool)
        if np.any(bad):
            i = int(np.flatnonzero(bad)[0])
            tr = s.transfers[i]
            raise TopologyError(f"transfer {i} uses link {tr['src']}->{tr['dst']}, which the "
                                "topology does not have")
        pairs.append(p)
    starts = [np.zeros(s.num_transfers) for s in schedules]
    ends = [np.zeros(s.num_transfers) for s in schedules]
    busy = [np.zeros(topo.num_links) for _ in schedules]
    links = [np.zeros(s.num_transfers, dtype=np.int64) for s in schedules]
    preds = [np.full(s.num_transfers, -1, dtype=np.int64) for s in schedules]
    pred_tens = [np.zeros(s.num_transfers, dtype=np.int64) + i for i, s in enumerate(schedules)]
    waits = [np.zeros(s.num_transfers, dtype=np.int8) for s in schedules]
    # per link slot, the last transfer it carried: its tenant and index (-1: none yet)
    last_ten = np.zeros(table.shape, dtype=np.int64)
    last_idx = np.full(table.shape, -1, dtype=np.int64)
    last_step = np.full(table.shape, -1, dtype=np.int64)
    bounds = np.flatnonzero(np.r_[True, all_step[1:] != all_step[:-1], True])
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        ten, idx = all_ten[lo:hi], all_idx[lo:hi]
        step = all_step[lo]
        ready = np.empty(hi - lo)
        feeder = np.empty(hi - lo, dtype=np.int64)
        nbytes = np.empty(hi - lo)
        pair = np.empty(hi - lo, dtype=np.int64)
        for i, tenant in enumerate(tenants):
            m = ten == i
            if m.any():
                ready[m], feeder[m] = tenant.ready(idx[m])
                nbytes[m] = tenant.bytes[idx[m]]
                pair[m] = pairs[i][idx[m]]
        # FIFO per pair: the r-th transfer of a pair in this step waits for the (r-1)-th
        o = np.argsort(pair, kind="stable")
        sp = pair[o]
        grp = np.r_[0, np.flatnonzero(sp[1:] != sp[:-1]) + 1]
        rank = np.empty(o.size, dtype=np.int64)
        rank[o] = np.arange(o.size) - np.repeat(grp, np.diff(np.r_[grp, o.size]))
        start = np.empty(hi - lo)
        end = np.empty(hi - lo)
        link = np.empty(hi - lo, dtype=np.int64)
        pred = np.empty(hi - lo, dtype=np.int64)
        pred_ten = np.empty(hi - lo, dtype=np.int64)
        wait = np.empty(hi - lo, dtype=np.int8)
        for r in range(int(rank.max()) + 1):
            sel = np.flatnonzero(rank == r)
            p = pair[sel]
            begin = np.maximum(free[p], ready[sel][:, None])
            charge = lat_tab[p]
            if alpha_per != "transfer":
                # same schedule, same step on this link: no new latency for a step's charge,
                # nor for a message that goes on back to back (data ready when the link frees)
                cont = (last_step[p] == step) & (last_ten[p] == ten[sel][:, None])
                if alpha_per == "message":
                    cont &= ready[sel][:, None] <= free[p]
                charge = np.where(cont, 0.0, charge)
            fin = begin + charge + nbytes[sel][:, None] / bw_tab[p]
            choice = np.argmin(fin, axis=1)
            ar = np.arange(sel.size)
            start[sel] = begin[ar, choice]
            end[sel] = fin[ar, choice]
            # what bound the start: the data (ties go to the data), else the link, else
            # nothing (time 0 with the data held from the start)
            by_link = free[p, choice] > ready[sel]
            by_data = ~by_link & (feeder[sel] >= 0)
            wait[sel] = np.where(by_link, _LINK, np.where(by_data, _DATA, _START))
            pred[sel] = np.where(by_link, last_idx[p, choice], np.where(by_data, feeder[sel], -1))
            pred_ten[sel] = np.where(by_link, last_ten[p, choice], ten[sel])
            free[p, choice] = fin[ar, choice]
            last_idx[p, choice] = idx[sel]
            last_ten[p, choice] = ten[sel]
            last_step[p, choice] = step
            link[sel] = table[p, choice]
        for i, tenant in enumerate(tenants):
            m = ten == i
            if m.any():
                starts[i][idx[m]] = start[m]
                ends[i][idx[m]] = end[m]
                links[i][idx[m]] = link[m]
                preds[i][idx[m]] = pred[m]
                pred_tens[i][idx[m]] = pred_ten[m]
                waits[i][idx[m]] = wait[m]
                np.add.at(busy[i], link[m], end[m] - start[m])
                tenant.deliver(idx[m], end[m])
    return [LinkModelResult(float(e.max()) if e.size else 0.0, st, e, b, size, link=ln,
                            pred=pr, pred_tenant=pt, waited=w, tenant=i, schedule=s,
                            alpha_per=alpha_per)
            for i, (s, st, e, b, ln, pr, pt, w) in enumerate(
                zip(schedules, starts, ends, busy, links, preds, pred_tens, waits))]


def simulate(schedule, size, *, alpha=None, link_bandwidth=None, alpha_per=None):
    """Time one schedule in the link model (see the module docstring).

    Parameters
    ----------
    schedule : Schedule or path
        Any schedule that passes :func:`~topocoll.schedule.verify`, or its file.
    size : float or str
        Buffer size M, e.g. ``"1GiB"``.
    alpha, link_bandwidth : float or str, optional
        Replace every link's latency / bandwidth.
    alpha_per : str, optional
        Which transfers pay a link's latency: ``"message"`` (default), ``"step"`` or
        ``"transfer"`` (TACOS's per-chunk charge); ``"per-message"`` etc. are accepted too.

    Returns
    -------
    LinkModelResult
    """
    return simulate_many([as_schedule(schedule)], size, alpha=alpha,
                         link_bandwidth=link_bandwidth, alpha_per=alpha_per)[0]
