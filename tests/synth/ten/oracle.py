"""Independent oracles for the TEN ILP tests: an event checker and an exhaustive search.

Neither shares code with ``topocoll.synth.ten.ilp``: the checker replays the events slot by slot,
the search enumerates every choice of chunk per free link per slot (breadth first, so the first
slot at which the postcondition holds is the optimal makespan).
"""

import itertools

import numpy as np

NEVER = 10**9


def check_events(num_nodes, src, dst, steps, pre, post, events, makespan=None):
    """Every rule a schedule breaks, as a list of strings (empty = valid)."""
    errors = []
    names = events.dtype.names or ()
    if set(names) != {"chunk", "link", "start"}:
        return [f"fields {names}"]
    for f in names:
        if events.dtype[f] != np.int64:
            errors.append(f"field {f} is {events.dtype[f]}")
    start = events["start"]
    if np.any(np.diff(start) < 0):
        errors.append("events not sorted by start")
    held = np.where(pre, 0, NEVER)          # slot from which each node holds each chunk
    # replay in start order; an arrival at slot a may feed a send starting at slot a
    for c, l, s in sorted(events.tolist(), key=lambda e: e[2]):
        if not (0 <= l < len(src)) or not (0 <= c < pre.shape[0]) or s < 0:
            errors.append(f"event {(c, l, s)} out of range")
            continue
        if held[c, src[l]] > s:
            errors.append(f"node {src[l]} sends chunk {c} at slot {s} before holding it")
        held[c, dst[l]] = min(held[c, dst[l]], s + steps[l])
    for l in range(len(src)):
        starts = np.sort(start[events["link"] == l])
        if np.any(np.diff(starts) < steps[l]):
            errors.append(f"link {l} carries two chunks at once")
    missing = np.argwhere(post & (held >= NEVER))
    if missing.size:
        errors.append(f"(chunk, node) {tuple(missing[0])} never delivered")
    last = max((s + steps[l] for c, l, s in events.tolist()), default=0)
    if makespan is not None and makespan != last:
        errors.append(f"makespan {makespan} but last arrival at slot {last}")
    return errors


def brute_force_makespan(num_nodes, src, dst, steps, pre, post, limit=40):
    """Optimal makespan by breadth-first search over (holdings, chunks in flight) states."""
    num_chunks = pre.shape[0]
    goal = [sum(1 << n for n in range(num_nodes) if post[c, n]) for c in range(num_chunks)]
    hold0 = tuple(sum(1 << n for n in range(num_nodes) if pre[c, n]) for c in range(num_chunks))
    flight0 = tuple(None for _ in src)       # per link: (slots left, chunk) or None

    def done(hold):
        return all(h & g == g for h, g in zip(hold, goal))

    if done(hold0):
        return 0
    level = {(hold0, flight0)}
    for t in range(1, limit + 1):
        nxt = set()
        for hold, flight in level:
            options = []
            for l in range(len(src)):
                if flight[l] is not None:
                    options.append([flight[l]])
                    continue
                opts = [None]
                for c in range(num_chunks):
                    coming = any(f is not None and f[1] == c and dst[j] == dst[l]
                                 for j, f in enumerate(flight))
                    if hold[c] >> src[l] & 1 and not hold[c] >> dst[l] & 1 and not coming:
                        opts.append((steps[l], c))
                options.append(opts)
            for choice in itertools.product(*options):
                h = list(hold)
                fl = []
                for l, f in enumerate(choice):
                    if f is None:
                        fl.append(None)
                    elif f[0] == 1:
                        h[f[1]] |= 1 << dst[l]
                        fl.append(None)
                    else:
                        fl.append((f[0] - 1, f[1]))
                state = (tuple(h), tuple(fl))
                if done(state[0]):
                    return t
                nxt.add(state)
        level = nxt
    raise RuntimeError("no schedule within the limit")
