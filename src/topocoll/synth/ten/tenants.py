"""Multi-tenant TEN synthesis: several collectives at once on one network (TACOS Table V).

All tenants share the links: a link carries one chunk of one tenant at a time. Every tenant
uses chunks of the same size ``M / (N * C)`` (broadcast and reduce cut their single shard into
``N * C`` chunks), so the TEN slots are common.

* Non-combining tenants (allgather, broadcast, scatter, gather, alltoall) are matched together
  by one greedy run over the union of their chunks.
* Combining tenants (reduce_scatter, reduce) are, as alone, the reversal of a non-combining
  collective on the transposed topology. They are matched together in reversed time inside a
  horizon ``H``, where the slots the forward tenants occupy are blocked: a reversed send on link
  ``l`` during reversed slots ``[s, s+k)`` runs forward during ``[H-s-k, H-s)``. ``H`` starts at
  the larger of the two groups' spans and grows until the reversed group fits.

Each tenant's schedule verifies on its own; time them together with the link-model simulator
(:func:`topocoll.schedule.linkmodel.simulate_many`), which takes the shared links into account.

>>> res = synthesize_tenants("mesh:4x4", ["allgather", "broadcast:2", "reduce:9"])
>>> [s.collective.name for s in res.schedules]
['allgather', 'broadcast', 'reduce']
>>> from topocoll.schedule import verify
>>> all(verify(s).valid for s in res.schedules)
True
>>> len(res.finish_slots), res.meta["horizon_slots"] >= max(res.finish_slots)
(3, True)
"""

from dataclasses import dataclass, field

import numpy as np

from ... import defaults
from ...collectives import REDUCE, collective as _collective
from ...errors import UnsupportedError
from ...schedule.model import Schedule, transfer_array
from ...units import parse_size
from .greedy import greedy_events
from .problem import chunk_conditions, discretize, prepare_topology

__all__ = ["synthesize_tenants", "TenantsResult", "parse_tenant", "COMBINING_BASE",
           "stack_tenants", "tenant_transfers"]

#: The non-combining collective each combining tenant is the reversal of.
COMBINING_BASE = {"reduce_scatter": "allgather", "reduce": "broadcast"}


def parse_tenant(spec):
    """``"broadcast:3"`` -> ``("broadcast", 3)``; ``"allgather"`` -> ``("allgather", None)``.

    Tuples ``(name, root)`` pass through.
    """
    if isinstance(spec, (tuple, list)):
        name, root = spec
    else:
        name, _, root_text = str(spec).partition(":")
        root = None
        if root_text.strip():
            if not root_text.strip().isdigit():
                raise UnsupportedError(f"tenant {spec!r}: the root after ':' must be a node id")
            root = int(root_text)
    coll = _collective(name)
    if coll.name == "allreduce":
        raise UnsupportedError("allreduce cannot be a tenant: give reduce_scatter and allgather "
                               "as two tenants, or synthesize it alone")
    if coll.rooted and root is None:
        root = 0
    if not coll.rooted and root is not None:
        raise UnsupportedError(f"tenant {spec!r}: {coll.name} takes no root")
    return coll, root


@dataclass
class TenantsResult:
    """Schedules of several collectives synthesized together on one network.

    Attributes
    ----------
    schedules : list of Schedule
        One per tenant, in the order given; each verifies on its own.
    finish_slots : list of int
        Each tenant's last TEN slot.
    time_step : float
        Seconds per TEN slot.
    """

    schedules: list
    finish_slots: list
    time_step: float
    meta: dict = field(default_factory=dict)

    def to_dict(self, finish_times=None):
        """JSON-ready; with ``finish_times`` (each tenant's link-model finish, from
        :func:`~topocoll.schedule.linkmodel.simulate_many`) also those and their maximum."""
        rows = [{"collective": s.collective.name, "root": s.root, "transfers": s.num_transfers,
                 "steps": s.num_steps, "finish_slots": fs}
                for s, fs in zip(self.schedules, self.finish_slots)]
        out = {"tenants": rows, "time_step": self.time_step, **self.meta}
        if finish_times is not None:
            for row, ft in zip(rows, finish_times):
                row["link_model_time"] = float(ft)
            out["time"] = float(max(finish_times, default=0.0))
        return out


def stack_tenants(tenants, n, chunks):
    """The tenants' chunks stacked: ``(pre, post, offsets, per_shard)``, each tenant's rows
    from ``offsets[j]``, ``per_shard[j]`` chunks per shard (broadcast, reduce: ``N * chunks``)."""
    pres, posts, offsets, per_shard = [], [], [0], []
    for coll, root in tenants:
        c = chunks * n if coll.name in ("broadcast", "reduce") else chunks
        base = _collective(COMBINING_BASE.get(coll.name, coll.name))
        pre, post = chunk_conditions(base, n, c, root)
        pres.append(pre)
        posts.append(post)
        offsets.append(offsets[-1] + pre.shape[0])
        per_shard.append(c)
    return np.concatenate(pres), np.concatenate(posts), offsets, per_shard


def tenant_transfers(events, offset, count, per_shard, src, dst, step, op):
    """One tenant's transfer rows: its ``count`` chunks from ``offset`` in ``events``, each a
    ``1 / per_shard`` piece of its shard, sent along ``src``/``dst`` at ``step``."""
    mine = (events["chunk"] >= offset) & (events["chunk"] < offset + count)
    ev = events[mine]
    local = ev["chunk"] - offset
    part = local % per_shard
    t = transfer_array(step[mine], src[ev["link"]], dst[ev["link"]], local // per_shard,
                       part / per_shard, (part + 1) / per_shard, op)
    return t[np.argsort(t["step"], kind="stable")]


def _earliest_fit(ev, steps, occupied, low, high):
    """Least horizon in ``[low, high]`` at which the reversed sends avoid the forward ones."""
    if ev.size == 0:
        return low
    k = steps[ev["link"]]
    rows = np.repeat(ev["link"], k)
    offs = np.arange(k.sum()) - np.repeat(np.cumsum(k) - k, k)
    rel = np.repeat(-ev["start"] - k, k) + offs        # forward slot = horizon + rel
    span = occupied.shape[1]
    for h in range(low, high + 1):
        cols = h + rel
        inside = cols < span
        if not occupied[rows[inside], cols[inside]].any():
            return h
    return high


def synthesize_tenants(topology, tenants, *, chunks=1, size=defaults.SYNTHESIS_SIZE, seed=0,
                       unwind_degree=None, fail_links=None, fail_nodes=None, time_step=None,
                       progress=None):
    """Synthesize several collectives that run at the same time on one network.

    Parameters
    ----------
    topology : Topology or str
    tenants : list of str or (name, root)
        E.g. ``["allgather", "broadcast:2", "reduce:17"]``; allreduce is not a tenant.
    chunks, size, seed, unwind_degree, fail_links, fail_nodes, time_step
        As in :func:`topocoll.synth.ten.synthesize`.

    Returns
    -------
    TenantsResult
    """
    tenants = [parse_tenant(t) for t in tenants]
    if not tenants:
        raise UnsupportedError("give at least one tenant collective")
    topo = prepare_topology(topology, unwind_degree, fail_links, fail_nodes)
    n = topo.num_nodes
    for coll, root in tenants:
        if root is not None and not 0 <= root < n:
            raise UnsupportedError(f"{coll.name}: root must be a node 0..{n - 1}, got {root}")
    size = parse_size(size)
    chunk_bytes = size / (n * chunks)
    steps, f = discretize(topo.latency + chunk_bytes / topo.bandwidth, time_step)
    fwd = [i for i, (c, _) in enumerate(tenants) if not c.combining]
    rev = [i for i, (c, _) in enumerate(tenants) if c.combining]
    links = (topo.src, topo.dst, steps)
    transfers = [None] * len(tenants)
    finish = [0] * len(tenants)
    occupied = np.zeros((topo.src.size, 0), dtype=bool)
    if fwd:
        occupied = _forward(tenants, fwd, links, n, chunks, seed, progress, transfers, finish)
    occ_span = occupied.shape[1]
    horizon = occ_span
    if rev:
        horizon = _reversed(tenants, rev, links, n, chunks, seed, occupied, transfers, finish)
    schedules = [Schedule(topo, coll, t, root=root, algorithm="ten-greedy-tenants",
                          meta={"tenant": i, "seed": int(seed), "chunks": int(chunks),
                                "size": float(size), "time_step": f,
                                "makespan_slots": int(finish[i])})
                 for i, ((coll, root), t) in enumerate(zip(tenants, transfers))]
    return TenantsResult(schedules, finish, f,
                         meta={"horizon_slots": int(max(horizon, occ_span)),
                               "topology": topo.name})


def _forward(tenants, fwd, links, n, chunks, seed, progress, transfers, finish):
    """Match the non-combining tenants ``fwd`` together in one greedy run; fill in their
    ``transfers`` and ``finish`` slots. Returns the links' occupied slots ``(L, span)``."""
    src, dst, steps = links
    group = [tenants[i] for i in fwd]
    pre, post, offsets, per_shard = stack_tenants(group, n, chunks)
    res = greedy_events(n, src, dst, steps, pre, post, seed=seed, progress=progress)
    ev = res.events
    occupied = np.zeros((src.size, res.makespan), dtype=bool)
    if ev.size:
        k = steps[ev["link"]]
        rows = np.repeat(ev["link"], k)
        cols = np.repeat(ev["start"], k) + np.arange(k.sum()) - np.repeat(np.cumsum(k) - k, k)
        occupied[rows, cols] = True
    for j, i in enumerate(fwd):
        count = offsets[j + 1] - offsets[j]
        transfers[i] = tenant_transfers(ev, offsets[j], count, per_shard[j], src, dst,
                                  ev["start"] + 1, 0)
        mine = (ev["chunk"] >= offsets[j]) & (ev["chunk"] < offsets[j + 1])
        finish[i] = int((ev["start"][mine] + steps[ev["link"][mine]]).max(initial=0))
    return occupied


def _reversed(tenants, rev, links, n, chunks, seed, occupied, transfers, finish):
    """Match the combining tenants ``rev`` together in reversed time around the forward
    tenants' ``occupied`` slots; fill in their ``transfers`` and ``finish`` slots. Returns the
    horizon."""
    src, dst, steps = links
    group = [(_collective(COMBINING_BASE[c.name]), r) for c, r in (tenants[i] for i in rev)]
    pre, post, offsets, per_shard = stack_tenants(group, n, chunks)
    res, horizon = _fit_reversed(n, links, pre, post, seed, occupied)
    ev = res.events
    horizon = _earliest_fit(ev, steps, occupied, res.makespan, horizon)
    fstart = horizon - ev["start"] - steps[ev["link"]]
    for j, i in enumerate(rev):
        count = offsets[j + 1] - offsets[j]
        transfers[i] = tenant_transfers(ev, offsets[j], count, per_shard[j], src, dst,
                                  fstart + 1, REDUCE)
        mine = (ev["chunk"] >= offsets[j]) & (ev["chunk"] < offsets[j + 1])
        finish[i] = int(horizon - ev["start"][mine].min()) if mine.any() else 0
    return horizon


def _fit_reversed(n, links, pre, post, seed, occupied):
    """The reversed greedy run inside a horizon ``H`` where the forward tenants' slots are
    blocked, ``H`` growing from the larger of the two groups' spans until the run fits.
    Returns ``(greedy result, H)``."""
    src, dst, steps = links
    occ_span = occupied.shape[1]
    alone = greedy_events(n, dst, src, steps, pre, post, seed=seed)
    horizon = max(occ_span, alone.makespan)
    limit = occ_span + alone.makespan
    while True:
        if horizon >= limit:
            # the forward tenants' slots lie past the lone reversed run: no conflict
            return alone, horizon
        blocked = np.zeros((src.size, horizon), dtype=bool)
        if occ_span:
            # reversed slot x is forward slot H-1-x
            blocked[:, horizon - occ_span:] = occupied[:, ::-1]
        res = greedy_events(n, dst, src, steps, pre, post, seed=seed, blocked=blocked)
        if res.makespan <= horizon:
            return res, horizon
        horizon = min(max(horizon + 1, res.makespan), limit)
