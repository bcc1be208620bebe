"""The link model of TACOS: an independent timing of any schedule.

Every directed link serves the transfers that use it one at a time, in step order (within a
step, in the schedule's order). A transfer moves ``(hi - lo) * shard_bytes`` bytes; it starts
when its link is free *and* its sender holds the data, keeps the link busy for
``latency + bytes / bandwidth`` and the receiver holds the data when it ends. "Holds" follows
the schedule's own causality: a transfer in step ``s`` reads what its sender received in steps
before ``s`` (a copy is ready at its first arrival, a partial sum when every earlier
contribution into it has arrived). Parallel links between one pair are separate servers; a
transfer takes the one on which it would finish first.

This is how synthesized schedules are timed: it never looks at what the synthesizer claimed,
only at the transfers, so it times BFB or ring schedules just as well.

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
from ..errors import InputTypeError, InvalidScheduleError, TopologyError
from ..units import parse_bandwidth, parse_size, parse_time
from .model import as_schedule

__all__ = ["simulate", "simulate_many", "LinkModelResult"]


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
    """

    time: float
    start: np.ndarray = field(repr=False)
    end: np.ndarray = field(repr=False)
    link_busy: np.ndarray = field(repr=False)
    size: float = 0.0

    @property
    def num_transfers(self):
        return int(self.start.size)

    @property
    def link_utilization(self):
        """Per link, busy time / total time (0 for an empty schedule)."""
        if self.time <= 0:
            return np.zeros_like(self.link_busy)
        return self.link_busy / self.time

    def to_dict(self):
        """A JSON-ready summary (no per-transfer arrays)."""
        used = self.link_busy > 0
        util = self.link_utilization
        return {"size": float(self.size), "time": float(self.time),
                "transfers": self.num_transfers, "links_used": int(used.sum()),
                "links": int(self.link_busy.size),
                "mean_utilization_used": float(util[used].mean()) if used.any() else 0.0,
                "max_link_busy": float(self.link_busy.max(initial=0.0))}


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
        if not coll.combining:
            owner = coll.start_owner(n, schedule.root)
            key_node, key_atom = self.keys // num_atoms, self.keys % num_atoms
            held = owner[self.atom_shard[key_atom]] == key_node
            self.copy_ready[held] = 0.0
        self.bytes = (t["hi"] - t["lo"]) * self.shard_bytes
        # per transfer, its range of (transfer, atom) rows
        self.row_start = np.r_[0, np.cumsum(self.count)[:-1]]

    def ready(self, idx):
        """When the senders of transfers ``idx`` hold what they send."""
        t = self.schedule.transfers
        starts = self.row_start[idx]
        counts = self.count[idx]
        rows = np.repeat(starts - np.cumsum(counts) + counts, counts) + np.arange(counts.sum())
        k = self.send_idx[rows]
        vals = self.copy_ready[k]
        if self.combining:
            is_reduce = np.repeat(t["op"][idx] == REDUCE, counts)
            vals = np.where(is_reduce | ~np.isfinite(vals), self.red_ready[k], vals)
        seg = np.r_[0, np.cumsum(counts)[:-1]]
        out = np.maximum.reduceat(vals, seg) if vals.size else np.zeros(0)
        if np.any(~np.isfinite(out)):
            i = int(idx[np.flatnonzero(~np.isfinite(out))[0]])
            tr = t[i]
            raise InvalidScheduleError(
                f"transfer {i} (step {tr['step']}, {tr['src']}->{tr['dst']}, shard "
                f"{tr['shard']}) sends data its sender never received; verify the schedule")
        return out

    def deliver(self, idx, end):
        t = self.schedule.transfers
        starts = self.row_start[idx]
        counts = self.count[idx]
        rows = np.repeat(starts - np.cumsum(counts) + counts, counts) + np.arange(counts.sum())
        k = self.recv_idx[rows]
        e = np.repeat(end, counts)
        is_reduce = np.repeat(t["op"][idx] == REDUCE, counts)
        np.minimum.at(self.copy_ready, k[~is_reduce], e[~is_reduce])
        if self.combining and is_reduce.any():
            np.maximum.at(self.red_ready, k[is_reduce], e[is_reduce])


def simulate_many(schedules, size, *, alpha=None, link_bandwidth=None):
    """Time several schedules that share one network's links (multi-tenant).

    All schedules must live on topologies with the same links (same ``src, dst`` columns); their
    steps share one clock, so a link serves the transfers of step 1 of every schedule before
    those of step 2 (schedules in the order given within a step).

    Returns
    -------
    list of LinkModelResult
        One per schedule; ``link_busy`` counts only that schedule's transfers.
    """
    schedules = list(schedules)
    if not schedules:
        raise InputTypeError("simulate_many needs at least one schedule")
    size = parse_size(size)
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
    bounds = np.flatnonzero(np.r_[True, all_step[1:] != all_step[:-1], True])
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        ten, idx = all_ten[lo:hi], all_idx[lo:hi]
        ready = np.empty(hi - lo)
        nbytes = np.empty(hi - lo)
        pair = np.empty(hi - lo, dtype=np.int64)
        for i, tenant in enumerate(tenants):
            m = ten == i
            if m.any():
                ready[m] = tenant.ready(idx[m])
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
        for r in range(int(rank.max()) + 1):
            sel = np.flatnonzero(rank == r)
            p = pair[sel]
            begin = np.maximum(free[p], ready[sel][:, None])
            fin = begin + lat_tab[p] + nbytes[sel][:, None] / bw_tab[p]
            choice = np.argmin(fin, axis=1)
            ar = np.arange(sel.size)
            start[sel] = begin[ar, choice]
            end[sel] = fin[ar, choice]
            free[p, choice] = fin[ar, choice]
            link[sel] = table[p, choice]
        for i, tenant in enumerate(tenants):
            m = ten == i
            if m.any():
                starts[i][idx[m]] = start[m]
                ends[i][idx[m]] = end[m]
                np.add.at(busy[i], link[m], end[m] - start[m])
                tenant.deliver(idx[m], end[m])
    return [LinkModelResult(float(e.max()) if e.size else 0.0, st, e, b, size)
            for st, e, b in zip(starts, ends, busy)]


def simulate(schedule, size, *, alpha=None, link_bandwidth=None):
    """Time one schedule in the link model (see the module docstring).

    Parameters
    ----------
    schedule : Schedule or path
        Any schedule that passes :func:`~topocoll.schedule.verify`, or its file.
    size : float or str
        Buffer size M, e.g. ``"1GiB"``.
    alpha, link_bandwidth : float or str, optional
        Replace every link's latency / bandwidth.

    Returns
    -------
    LinkModelResult
    """
    return simulate_many([as_schedule(schedule)], size, alpha=alpha,
                         link_bandwidth=link_bandwidth)[0]
