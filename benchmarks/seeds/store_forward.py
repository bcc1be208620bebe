"""Routed schedules priced with every message stored and forwarded whole at each hop.

topocoll's link model (``topocoll.simulate``) forwards a routed transfer cut-through: its
bytes stream over every link of the route at once, so a routed message costs about what a
one-hop message does. ASTRA-sim's congestion-aware analytical backend, in which Won et al.
(TACOS, MICRO 2024) timed their schedules, moves a chunk one link at a time: a chunk that
reaches a device which is not its destination is queued on the next link of its route. The two
pricers here time a schedule that way, for the TACOS rebuild (``tacos.py``):

``stored_and_forwarded``
    links serve in a fixed order: a step's hop-k transfers before its hop-(k + 1) ones, steps in
    order, within both the schedule's order (the order ``tacos.hop_by_hop`` gives the link
    model). On a schedule without routing it equals ``simulate``.
``first_come_first_served``
    every link a work-conserving queue served in arrival order (ties: step, hop, schedule
    order), steps ordering nothing: a message leaves as soon as its data is ready.

Both keep ``simulate``'s data readiness (a copy is ready at its first arrival, a partial sum at
its last contribution from earlier steps) and latency conventions (``alpha_per``: "transfer",
every hop of every message pays the link latency; "message", a transfer that follows the
previous one of its step back to back on a link does not). Whole-shard transfers only (Ring and
Direct's). They are priced here, not as unrouted schedules through ``simulate``, because the
relayed messages of a reduction would share the relay's (node, shard) data state there.
"""

import heapq
from collections import defaultdict

import numpy as np

from topocoll.collectives import REDUCE
from topocoll.schedule.routing import transfer_hops
from topocoll.units import parse_size

__all__ = ["stored_and_forwarded", "first_come_first_served"]


def _prepare(schedule, size):
    """Transfers in step order, their routes' links, the per-link latency and bandwidth and the
    bytes of one message."""
    t, topo = schedule.transfers, schedule.topology
    if np.any((t["lo"] != 0) | (t["hi"] != 1)):
        raise SystemExit("store_forward: whole-shard transfers only")
    t = t[np.argsort(t["step"], kind="stable")]
    who, link, hop = transfer_hops(topo, schedule.routing, t["src"], t["dst"])
    paths = [[] for _ in range(t.size)]
    o = np.lexsort((hop, who))
    for w, lk in zip(who[o].tolist(), link[o].tolist()):
        paths[w].append(lk)
    coll, n = schedule.collective, schedule.num_nodes
    held = set() if coll.combining else {
        (int(o), k) for k, o in enumerate(coll.start_owner(n, schedule.root))}
    return (t, paths, np.asarray(topo.latency, float).tolist(),
            np.asarray(topo.bandwidth, float).tolist(),
            coll.shard_fraction(n) * parse_size(size), held)


def stored_and_forwarded(schedule, size, alpha_per="message"):
    """Time of ``schedule`` with messages stored and forwarded, links in a fixed order (module
    docstring)."""
    t, paths, lat, bw, nbytes, held = _prepare(schedule, size)
    free, last = [0.0] * len(lat), [None] * len(lat)
    copy, red = {key: 0.0 for key in held}, {}   # (node, shard): first copy / last sum arrival
    steps, src, dst = t["step"].tolist(), t["src"].tolist(), t["dst"].tolist()
    shard, is_red = t["shard"].tolist(), (t["op"] == REDUCE).tolist()
    bounds = np.r_[0, np.flatnonzero(np.diff(t["step"])) + 1, t.size].tolist()
    end = 0.0
    for a, b in zip(bounds, bounds[1:]):
        at = [red.get((src[i], shard[i]), 0.0) if is_red[i] or (src[i], shard[i]) not in copy
              else copy[(src[i], shard[i])] for i in range(a, b)]
        for k in range(max(len(paths[i]) for i in range(a, b))):
            for i in range(a, b):
                if k < len(paths[i]):
                    lk = paths[i][k]
                    cont = (alpha_per != "transfer" and last[lk] == (steps[i], k)
                            and at[i - a] <= free[lk])
                    free[lk] = (max(free[lk], at[i - a]) + (0.0 if cont else lat[lk])
                                + nbytes / bw[lk])
                    last[lk], at[i - a] = (steps[i], k), free[lk]
        for i in range(a, b):
            key, end = (dst[i], shard[i]), max(end, at[i - a])
            if is_red[i]:
                red[key] = max(red.get(key, 0.0), at[i - a])
            else:
                copy[key] = min(copy.get(key, np.inf), at[i - a])
    return end


def _gates(t, held):
    """Per transfer how many arrivals make its data ready (0: ready at time 0) and, per
    transfer, the transfers whose data its arrival may make ready (``simulate``'s rule: a copy
    sent from a (node, shard) that got a copy in an earlier step waits for the first such copy,
    anything else for every partial sum sent into it in an earlier step)."""
    steps, src, dst = t["step"].tolist(), t["src"].tolist(), t["dst"].tolist()
    shard, is_red = t["shard"].tolist(), (t["op"] == REDUCE).tolist()
    into = defaultdict(list)
    for j in range(t.size):
        into[(dst[j], shard[j])].append(j)
    need, any_one, waiters = [0] * t.size, [False] * t.size, defaultdict(list)
    for i in range(t.size):
        key = (src[i], shard[i])
        earlier = [j for j in into.get(key, ()) if steps[j] < steps[i]]
        copies = [j for j in earlier if not is_red[j]]
        if key in held and not is_red[i]:
            continue
        gate = copies if copies and not is_red[i] else [j for j in earlier if is_red[j]]
        need[i], any_one[i] = (1 if copies and not is_red[i] else len(gate)), bool(
            copies and not is_red[i])
        for j in gate:
            waiters[j].append(i)
    return need, any_one, waiters


def first_come_first_served(schedule, size, alpha_per="message"):
    """Time of ``schedule`` with messages stored and forwarded and every link a work-conserving
    first-come-first-served queue (module docstring)."""
    t, paths, lat, bw, nbytes, held = _prepare(schedule, size)
    need, any_one, waiters = _gates(t, held)
    steps = t["step"].tolist()
    queue = [[] for _ in lat]
    busy, last = [False] * len(lat), [None] * len(lat)
    events, seq = [], 0           # (time, kind, seq, a, b): kind 0 link done, 1 arrival, 2 try

    def push(time, kind, a, b=0):
        nonlocal seq
        seq += 1
        heapq.heappush(events, (time, kind, seq, a, b))

    for i in range(t.size):
        if need[i] == 0:
            push(0.0, 1, i, 0)
    end = 0.0
    while events:
        now, kind, _, a, b = heapq.heappop(events)
        if kind == 1:             # message a reaches the queue of its hop b's link
            lk = paths[a][b]
            heapq.heappush(queue[lk], (now, steps[a], b, a))
            push(now, 2, lk)
        elif kind == 2:           # link a may start its next message
            if busy[a] or not queue[a]:
                continue
            came, step, hop, i = heapq.heappop(queue[a])
            cont = alpha_per != "transfer" and last[a] == (step, now) and came <= now
            busy[a] = True
            push(now + (0.0 if cont else lat[a]) + nbytes / bw[a], 0, a, i)
        else:                     # link a done with message b
            busy[a] = False
            last[a] = (steps[b], now)
            push(now, 2, a)
            hop = paths[b].index(a) + 1
            if hop < len(paths[b]):
                push(now, 1, b, hop)
                continue
            end = max(end, now)
            for i in waiters[b]:
                if need[i] > 0:
                    need[i] = 0 if any_one[i] else need[i] - 1
                    if need[i] == 0:
                        push(now, 1, i, 0)
    return end
