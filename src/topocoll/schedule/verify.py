"""The verifier: an independent model checker for schedules of all eight collectives.

It simulates the schedule on the collective's pre- and postconditions (``collectives.py``) and
nothing else: it never calls a generator. Shards are cut into *atoms*, the elementary intervals
between every ``lo``/``hi`` that any transfer uses, so every transfer moves whole atoms.

* Non-combining collectives (copy only): the state of a (node, atom) is the step at which the
  node first holds it. A send needs ``held_at(src) <= step - 1``.
* Combining collectives: the state of a (node, atom) is the *set* of nodes whose contributions it
  holds, a bitset. ``reduce`` adds the sender's set, which must be disjoint from the receiver's
  and from every other set added into the same piece in that step (else a contribution is counted
  twice); ``copy`` overwrites.

Work is vectorised over all transfers of a step and batched over shards to bound memory.

>>> from topocoll.topology import topology
>>> from topocoll.schedule.model import Schedule, transfer_array
>>> ring = topology("uniring:3")
>>> ok = transfer_array([1, 1, 1, 2, 2, 2], [0, 1, 2, 1, 2, 0], [1, 2, 0, 2, 0, 1],
...                     [0, 1, 2, 0, 1, 2], 0.0, 1.0)
>>> verify(Schedule(ring, "allgather", ok)).valid
True
>>> bad = ok[[0, 1, 2, 3, 4]]  # drop one transfer: node 1 never gets shard 2
>>> report = verify(Schedule(ring, "allgather", bad))
>>> report.valid, report.counts
(False, {'incomplete': 1})
"""

import functools

import numpy as np

from ..collectives import REDUCE
from ..errors import InputTypeError, UnsupportedError
from ..topology.routes import routes_of
from .compact import CompactSchedule
from .io import as_schedule
from .model import Schedule, transfer_problems
from .symmetric import SymmetricSchedule
from .violations import VerifyReport, Violation

__all__ = ["verify", "VerifyReport", "Violation", "first_missing"]

_NEVER = np.iinfo(np.int32).max
STATE_BUDGET = 1 << 27   # bytes of simulation state per shard batch
ENTRY_BUDGET = 1 << 22   # (transfer, atom) entries per shard batch


class _Collector:
    """Gathers violations as arrays, then renders the earliest few as messages."""

    def __init__(self):
        self.parts = []  # (kind, transfer-index array, extra dict of arrays)

    def add(self, kind, transfers, **extra):
        transfers = np.asarray(transfers, dtype=np.int64)
        if transfers.size:
            self.parts.append((kind, transfers, {k: np.asarray(v) for k, v in extra.items()}))


def _piece(lo, hi):
    return f"[{lo:.6g}, {hi:.6g})"


class _Atoms:
    """Every shard cut at every boundary any transfer uses; atom ``a`` of shard ``s`` is
    ``[atom_lo[a], atom_hi[a])`` and atoms of one shard are consecutive."""

    def __init__(self, t, num_shards):
        lo, hi = t["lo"], t["hi"]
        values = np.unique(np.concatenate([np.unique(lo), np.unique(hi), [0.0, 1.0]]))
        r = values.size
        r0, r1 = np.searchsorted(values, [0.0, 1.0])
        shard = t["shard"].astype(np.int64)
        key_lo = shard * r + np.searchsorted(values, lo)
        key_hi = shard * r + np.searchsorted(values, hi)
        every = np.arange(num_shards, dtype=np.int64) * r
        keys = np.unique(np.concatenate([np.unique(key_lo), np.unique(key_hi),
                                         every + r0, every + r1]))
        key_shard = keys // r
        # Each shard ends in exactly one boundary (1.0), so boundary j starts atom j - shard(j).
        small = np.int32 if keys.size < 2**31 else np.int64
        self.first = (np.searchsorted(keys, key_lo) - shard).astype(small)
        del key_lo
        self.last = (np.searchsorted(keys, key_hi) - shard).astype(small)
        del key_hi, shard
        starts = np.flatnonzero(keys % r != r1)
        self.shard = key_shard[starts]
        self.lo = values[keys[starts] % r]
        self.hi = values[keys[starts + 1] % r]
        self.count = starts.size
        self.shard_start = np.searchsorted(self.shard, np.arange(num_shards + 1))


def _expand(first, last):
    """For transfers covering atoms ``[first, last)``: (transfer position, atom) per entry."""
    counts = last - first
    pos = np.repeat(np.arange(first.size), counts)
    offsets = np.arange(pos.size) - np.repeat(np.cumsum(counts) - counts, counts)
    return pos, first[pos] + offsets


def _batches(shards_sorted, atoms, num_shards, per_atom_bytes):
    """Consecutive shard ranges whose entries and state fit the budgets."""
    entries_per_shard = np.bincount(shards_sorted, minlength=num_shards).astype(np.int64)
    atoms_per_shard = np.diff(atoms.shard_start)
    cost_e = np.cumsum(entries_per_shard)
    cost_s = np.cumsum(atoms_per_shard * per_atom_bytes)
    s0 = 0
    while s0 < num_shards:
        base_e = cost_e[s0 - 1] if s0 else 0
        base_s = cost_s[s0 - 1] if s0 else 0
        s1 = min(int(np.searchsorted(cost_e, base_e + ENTRY_BUDGET, side="right")),
                 int(np.searchsorted(cost_s, base_s + STATE_BUDGET, side="right")))
        s1 = max(s1, s0 + 1)
        yield s0, min(s1, num_shards)
        s0 = s1


def first_missing(present, n, k):
    """The first ``k`` of ``0..n-1`` not in the sorted unique array ``present``, in
    O(len(present) + k) (never an array of ``n``)."""
    out = []
    expected = 0
    for value in present.tolist() + [n]:
        while expected < value and len(out) < k:
            out.append(expected)
            expected += 1
        if len(out) >= k:
            break
        expected = value + 1
    return np.array(out, dtype=np.int64)


def verify(schedule, *, max_errors=10, shards=None):
    """Check a schedule against its collective; return a :class:`VerifyReport`.

    Catches malformed transfers, transfers over links that do not exist, sends of data the
    sender does not hold yet (causality), contributions counted twice, conflicting writes into
    one piece in one step, and an incomplete end state. ``schedule`` is a :class:`Schedule`, a
    :class:`~topocoll.schedule.symmetric.SymmetricSchedule` (checked from its representatives:
    docs/math.md section 10) or a schedule file's path. ``shards``, a list of
    shard numbers, restricts the simulation and the end state to those shards (the rules of
    single transfers are checked on all).
    """
    schedule = as_schedule(schedule, accept=(SymmetricSchedule, CompactSchedule))
    return _verify_form(schedule, max_errors, shards)


def _shard_selection(schedule, shards):
    """The shards to simulate (sorted, unique), or None for all; a shard that is not one of
    the schedule's refused."""
    if shards is None:
        return None
    shards = np.unique(np.asarray(shards, dtype=np.int64))
    if shards.size and (shards[0] < 0 or shards[-1] >= schedule.num_shards):
        raise InputTypeError(f"shards must be shard numbers 0..{schedule.num_shards - 1}")
    return shards


@functools.singledispatch
def _verify_form(schedule, max_errors, shards):
    """The verifier of ``schedule``'s form (one registered below per form class)."""
    raise UnsupportedError(f"verify has no rules for the {schedule.form!r} form "
                           f"({type(schedule).__name__})")


@_verify_form.register
def _verify_explicit(schedule: Schedule, max_errors, shards):
    shards = _shard_selection(schedule, shards)
    topo = schedule.topology
    t = schedule.transfers
    found = _Collector()
    warnings = []
    good, tg = _row_checks(schedule, t, found)
    _gap_warning(np.unique(tg["step"]), warnings)
    if _isolated(topo, found, max_errors):
        return _report(schedule, found, t, good, None, max_errors, warnings)
    atoms = _simulate(schedule, tg, good, found, shards)
    return _report(schedule, found, t, good, atoms, max_errors, warnings)


def _row_checks(schedule, t, found, offset=0):
    """The rules of single rows (malformed, missing link) of ``t``, rows ``offset`` on of the
    schedule; returns the indices (into ``t``) of the well-formed rows and those rows."""
    topo = schedule.topology
    coll = schedule.collective
    n = topo.num_nodes
    malformed = transfer_problems(t, n, coll.num_shards(n), coll.combining)
    bad = np.zeros(t.size, dtype=bool)
    if malformed:
        idx = np.array([p[0] for p in malformed])
        bad[idx] = True
        found.parts.append(("malformed", idx + offset, {"why": np.array(
            [f"transfers[{i + offset}].{f}: {m}" for i, f, m in malformed], dtype=object)}))
    good = np.flatnonzero(~bad)
    del bad
    if good.size < 2**31:
        good = good.astype(np.int32)
    tg = t[good] if malformed else t   # no copy of a well-formed schedule

    if schedule.routing is None:
        missing = topo.pair_index(tg["src"], tg["dst"]) < 0
        found.add("missing_link", good[missing].astype(np.int64) + offset)
    else:                      # a routed transfer needs a path, which the policy then takes
        hops = routes_of(topo, schedule.routing).hops
        unrouted = hops[tg["src"], tg["dst"]] < 0
        found.add("no_route", good[unrouted].astype(np.int64) + offset)
    return good, tg


def _gap_warning(steps, warnings):
    """The warning for step numbers up to the last of ``steps`` (distinct, sorted) that
    carry no transfer."""
    if steps.size:
        gaps = int(steps[-1]) - steps.size
        if gaps:
            warnings.append(f"{gaps} of steps 1..{int(steps[-1])} carry no transfer")


def _isolated(topo, found, max_errors):
    """Record nodes that no link touches; True if there are any."""
    n = topo.num_nodes
    if n > 1:   # a node no link touches can never take part: say so before any N x N work
        # (and before any N-sized array: a file may declare a billion nodes and four links)
        touched = np.unique(np.concatenate([topo.src, topo.dst]))
        if touched.size < n:
            lonely = first_missing(touched, n, max_errors)
            found.add("isolated", np.full(lonely.size, -1), node=lonely,
                      touched=np.array([touched.size]), count=np.array([n - touched.size]))
            return True
    return False


def _simulate(schedule, tg, good, found, shards=None):
    """Run the per-shard simulation of the well-formed transfers ``tg`` (``good`` maps them to
    the schedule's rows) over every shard, or only over ``shards`` (sorted: the end state is
    checked for those alone); return the atoms."""
    n = schedule.topology.num_nodes
    coll = schedule.collective
    num_shards = coll.num_shards(n)
    atoms = _Atoms(tg, num_shards)
    small = np.int32 if max(tg.size, num_shards) < 2**31 else np.int64
    shards_sorted = tg["shard"].astype(small)
    order = np.argsort(shards_sorted, kind="stable").astype(small)
    shards_sorted = shards_sorted[order]
    words = (n + 63) // 64
    per_atom = n * (words * 8 if coll.combining else 4)
    if shards is None:
        batches = _batches(shards_sorted, atoms, num_shards, per_atom)
    else:
        batches = ((int(c), int(c) + 1) for c in shards)
    for s0, s1 in batches:
        lo_i, hi_i = np.searchsorted(shards_sorted, [s0, s1])
        sel = order[lo_i:hi_i]
        a0, a1 = atoms.shard_start[s0], atoms.shard_start[s1]
        pos, atom = _expand(atoms.first[sel], atoms.last[sel])
        entry = sel[pos]
        te = {name: tg[name][entry] for name in ("step", "src", "dst", "op")}
        simulate = _simulate_combining if coll.combining else _simulate_copies
        simulate(te, entry, atom - a0, atoms, a0=a0, a1=a1, schedule=schedule, found=found,
                 good=good)
    return atoms


def _end_state(held_full, atoms, a0, a1, schedule, found):
    """Record (node, atom) pairs that must be complete at the end but are not.

    ``held_full`` is a boolean (N, atoms in batch) matrix of complete pieces."""
    n = schedule.topology.num_nodes
    target = schedule.collective.end_target(n, schedule.root)
    atom_shard = atoms.shard[a0:a1]
    starts = np.flatnonzero(np.r_[True, atom_shard[1:] != atom_shard[:-1]])
    if target is None:
        missing = ~held_full
        pairs = int(np.logical_or.reduceat(missing, starts, axis=1).sum()) if starts.size else 0
        # only a sample is rendered: take the first rows that lack something, not all of them
        rows = np.flatnonzero(missing.any(axis=1))[:_SAMPLE]
        node, local = np.nonzero(missing[rows])
        node, local = rows[node][:_SAMPLE], local[:_SAMPLE]
    else:
        local = np.arange(a1 - a0)
        node = target[atom_shard]
        keep = ~held_full[node, local]
        pairs = int(np.logical_or.reduceat(keep, starts).sum()) if starts.size else 0
        node, local = node[keep][:_SAMPLE], local[keep][:_SAMPLE]
    if node.size:
        found.add("incomplete", np.full(node.size, -1), node=node, atom=local + a0,
                  pairs=np.array([pairs]))


def _simulate_copies(te, entry, atom, atoms, *, a0, a1, schedule, found, good):
    n = schedule.topology.num_nodes
    owner = schedule.collective.start_owner(n, schedule.root)
    width = a1 - a0
    arrival = np.full((n, width), _NEVER, dtype=np.int32)
    local_atoms = np.arange(width)
    arrival[owner[atoms.shard[a0:a1]], local_atoms] = 0
    step = te["step"]
    flat = arrival.reshape(-1)  # one-dimensional ufunc.at is the fast one
    np.minimum.at(flat, te["dst"].astype(np.int64) * width + atom, step)
    late = flat[te["src"].astype(np.int64) * width + atom] > step - 1
    if np.any(late):
        found.add("causality", good[np.unique(entry[late])])
    _end_state(arrival < _NEVER, atoms, a0, a1, schedule, found)


def _popcount(bits):
    return np.bitwise_count(bits).sum(axis=-1, dtype=np.int64)


def _lowest_bit(bits):
    """Index of the lowest set bit of each row of a (k, words) uint64 array (-1 if none)."""
    out = np.full(bits.shape[0], -1, dtype=np.int64)
    for row in range(bits.shape[0]):
        for w in range(bits.shape[1]):
            value = int(bits[row, w])
            if value:
                out[row] = w * 64 + (value & -value).bit_length() - 1
                break
    return out


def _simulate_combining(te, entry, atom, atoms, *, a0, a1, schedule, found, good):
    n = schedule.topology.num_nodes
    width = a1 - a0
    state, full = _own_bits(n, width)
    by_step = np.argsort(te["step"], kind="stable")
    steps = te["step"][by_step]
    bounds = np.flatnonzero(np.diff(steps)) + 1
    for chunk in np.split(by_step, bounds):
        src, dst, op = te["src"][chunk], te["dst"][chunk], te["op"][chunk]
        at = atom[chunk]
        ids = entry[chunk]
        sent = state[src, at]          # what each sender held at the end of the previous step
        had = state[dst, at]
        key = dst.astype(np.int64) * width + at
        reduce = op == REDUCE
        clash = np.zeros(reduce.size, dtype=bool)
        if reduce.any() and not reduce.all():
            clash = reduce & np.isin(key, key[~reduce])
        if np.any(clash):
            found.add("conflict", good[ids[clash]],
                      why=np.full(int(clash.sum()), "copy and reduce into one piece in one step"))
        _combine_copies(state, np.flatnonzero(~reduce), key, sent, dst, at, ids, found, good)
        _combine_reduces(state, np.flatnonzero(reduce & ~clash), key, sent, had, dst, at, ids,
                         found, good)
    complete = np.all(state == full, axis=2)
    _end_state(complete, atoms, a0, a1, schedule, found)


def _own_bits(n, width):
    """Each node's pieces holding its own contribution only (one bit per node, ``n`` bits in
    64-bit words), and the words of a piece holding every node's."""
    words = (n + 63) // 64
    state = np.zeros((n, width, words), dtype=np.uint64)
    nodes = np.arange(n)
    state[nodes, :, nodes // 64] = (np.uint64(1) << (nodes % 64).astype(np.uint64))[:, None]
    full = np.zeros(words, dtype=np.uint64)
    full[: n // 64] = np.uint64(0xFFFFFFFFFFFFFFFF)
    if n % 64:
        full[n // 64] = np.uint64((1 << (n % 64)) - 1)
    return state, full


def _combine_copies(state, cp, key, sent, dst, at, ids, found, good):
    """One step's copies ``cp``: all copies into one piece in one step must agree."""
    if cp.size:
        o = cp[np.argsort(key[cp], kind="stable")]
        k = key[o]
        starts = np.flatnonzero(np.r_[True, k[1:] != k[:-1]])
        first = o[np.repeat(starts, np.diff(np.r_[starts, o.size]))]
        differ = np.any(sent[o] != sent[first], axis=1)
        if np.any(differ):
            found.add("conflict", good[ids[o[differ]]],
                      why=np.full(int(differ.sum()), "different copies into one piece in one step"))
        state[dst[o[starts]], at[o[starts]]] = sent[o[starts]]


def _combine_reduces(state, rd, key, sent, had, dst, at, ids, found, good):
    """One step's reductions ``rd``: no contribution may arrive twice at one piece."""
    if rd.size:
        o = rd[np.argsort(key[rd], kind="stable")]
        k = key[o]
        starts = np.flatnonzero(np.r_[True, k[1:] != k[:-1]])
        bits = sent[o]
        union = np.bitwise_or.reduceat(bits, starts, axis=0)
        together = np.add.reduceat(_popcount(bits), starts)
        base = had[o[starts]]
        overlap_sim = _popcount(union) < together
        overlap_old = np.any(bits & had[o], axis=1)
        group_of = np.repeat(np.arange(starts.size), np.diff(np.r_[starts, o.size]))
        dup = overlap_old | overlap_sim[group_of]
        if np.any(dup):
            rows = o[dup]
            twice = np.where(overlap_old[dup][:, None], bits[dup] & had[rows],
                             union[group_of[dup]])
            who = np.full(rows.size, -1, dtype=np.int64)
            who[:64] = _lowest_bit(twice[:64])
            found.add("double_count", good[ids[rows]], who=who)
        state[dst[o[starts]], at[o[starts]]] = base | union

_SAMPLE = 1000   # missing pieces kept per batch to render the first few (all are counted)
_ORDER = {"isolated": -1, "malformed": 0, "missing_link": 1, "no_route": 1, "causality": 2,
          "double_count": 3, "conflict": 4, "incomplete": 5}


def _report(schedule, found, t, good, atoms, max_errors, warnings):
    coll = schedule.collective
    n = schedule.topology.num_nodes
    counts = {}
    rows = []  # (sort key, kind, transfer, extra index, part)
    for kind, transfers, extra in found.parts:
        if kind == "isolated":
            counts[kind] = int(extra["count"][0])
            for j in range(min(max_errors, extra["node"].size)):
                rows.append(((0, _ORDER[kind], j), kind, -1, j, extra))
            continue
        if kind == "incomplete":
            # counted per (node, shard) by the batch; listed from its sample: the first
            # missing piece of each pair
            pair_keys = extra["node"] * atoms.shard.size + atoms.shard[extra["atom"]]
            pairs, first = np.unique(pair_keys, return_index=True)
            counts[kind] = counts.get(kind, 0) + int(extra["pairs"][0])
            last = int(t["step"].max()) + 1 if t.size else 1
            for j in np.sort(first)[:max_errors]:
                rows.append(((last, _ORDER[kind], int(j)), kind, -1, int(j), extra))
        else:
            uniq, first = np.unique(transfers, return_index=True)
            counts[kind] = counts.get(kind, 0) + int(uniq.size)
            steps = t["step"][uniq].astype(np.int64)
            pick = np.lexsort((uniq, steps))[:max_errors]
            for j in pick:
                rows.append(((int(steps[j]), _ORDER[kind], int(uniq[j])), kind, int(uniq[j]),
                             int(first[j]), extra))
    rows.sort(key=lambda r: r[0])
    errors = [_violation(kind, ti, j, extra, schedule, atoms) for _, kind, ti, j, extra
              in rows[:max_errors]]
    total = sum(counts.values())
    return VerifyReport(valid=total == 0, collective=coll.name, nodes=n,
                        steps=schedule.num_steps, transfers=int(t.size), error_count=total,
                        counts=counts, errors=errors, warnings=warnings)


def _violation(kind, ti, j, extra, schedule, atoms):
    if kind == "isolated":
        node = int(extra["node"][j])
        n = schedule.topology.num_nodes
        return Violation(kind, f"node {node} has no link, so it can neither send nor receive "
                         f"and the end state cannot be reached (the topology declares {n} "
                         f"nodes; its links touch {int(extra['touched'][0])})", node=node)
    if kind == "incomplete":
        node = int(extra["node"][j])
        a = int(extra["atom"][j])
        shard = int(atoms.shard[a])
        what = "every contribution to" if schedule.collective.combining else ""
        return Violation(kind, f"end state: node {node} lacks {what + ' ' if what else ''}shard "
                         f"{shard} {_piece(atoms.lo[a], atoms.hi[a])}", shard=shard,
                         lo=float(atoms.lo[a]), hi=float(atoms.hi[a]), node=node)
    tr = schedule.rows([ti])[0]
    step, src, dst, shard = int(tr["step"]), int(tr["src"]), int(tr["dst"]), int(tr["shard"])
    lo, hi = float(tr["lo"]), float(tr["hi"])
    where = f"step {step}: {src}->{dst} shard {shard} {_piece(lo, hi)}"
    if kind == "malformed":
        message = str(extra["why"][j])
    elif kind == "missing_link":
        message = f"{where} uses link {src}->{dst}, which the topology does not have"
    elif kind == "no_route":
        message = (f"{where}: the topology has no path {src}->{dst} for the "
                   f"{schedule.routing} routing to take")
    elif kind == "causality":
        message = f"{where}: node {src} does not hold that data by the end of step {step - 1}"
    elif kind == "double_count":
        who = int(extra["who"][j]) if "who" in extra and j < extra["who"].size else -1
        whose = f"node {who}'s contribution" if who >= 0 else "a contribution"
        message = f"{where}: adds {whose} into node {dst} a second time"
    else:
        message = f"{where}: {extra['why'][j]}"
    return Violation(kind, message, step=step, src=src, dst=dst, shard=shard, lo=lo, hi=hi,
                     transfer=int(ti))


@_verify_form.register
def _verify_symmetric(schedule: SymmetricSchedule, max_errors, shards=None):
    """A symmetric schedule checked from its representatives (docs/math.md section 10,
    theorem 1): the group's invariance on the links, the rules of single rows on
    the representatives, then the *shard-0 history* (each representative translated by minus
    its shard) simulated on shard 0 alone.

    Counts are the full schedule's: a representative stands for its N translations, a node
    lacking a piece of shard 0 for N (node, shard) pairs. Violations name representative rows.
    ``shards`` is not read: shard 0's history stands for every shard.
    """
    from ..topology.symmetry import invariant

    topo, group = schedule.topology, schedule.group
    n = topo.num_nodes
    reps = schedule.transfers
    if not invariant(topo, group):
        message = (f"symmetry: translations of group {list(group.dims)} do not map the links of "
                   f"{topo.name} onto links of equal bandwidth and latency")
        return VerifyReport(valid=False, collective=schedule.collective.name, nodes=n,
                            steps=schedule.num_steps, transfers=schedule.num_transfers,
                            error_count=1, counts={"not_invariant": 1},
                            errors=[Violation("not_invariant", message)],
                            representatives=int(reps.size))
    found = _Collector()
    warnings = []
    good, tg = _row_checks(schedule, reps, found)
    _gap_warning(np.unique(tg["step"]), warnings)
    atoms = None
    if not _isolated(topo, found, max_errors):
        hist = tg.copy()
        shift = group.subtract(0, tg["shard"])
        hist["src"] = group.add(tg["src"].astype(np.int64), shift)
        hist["dst"] = shift
        hist["shard"] = 0
        atoms = _simulate(schedule, hist, good, found, shards=[0])
        for kind, rows, extra in found.parts:   # the node named, seen from the representative
            if kind == "double_count":
                who = extra["who"]
                extra["who"] = np.where(who >= 0, group.add(who, reps["shard"][rows]), -1)
    report = _report(schedule, found, reps, good, atoms, max_errors, warnings)
    report.counts = {kind: count if kind == "isolated" else count * n
                     for kind, count in report.counts.items()}
    report.error_count = sum(report.counts.values())
    report.transfers = schedule.num_transfers
    report.representatives = int(reps.size)
    return report


#: Bytes of arrival state a compact schedule's simulation holds at once (shards batched above).
_COMPACT_STATE_BUDGET = 1 << 31


class _GridAtoms:
    """The atoms of a compact schedule: every shard cut into its ``parts`` chunks."""

    def __init__(self, num_shards, parts):
        part = np.tile(np.arange(parts), num_shards)
        self.shard = np.repeat(np.arange(num_shards, dtype=np.int64), parts)
        self.lo = part / parts
        self.hi = (part + 1) / parts
        self.count = num_shards * parts
        self.shard_start = np.arange(num_shards + 1, dtype=np.int64) * parts


class _StepColumn:
    """What :func:`_report` reads of the transfers (``size`` and the ``"step"`` column), for
    a compact schedule that has no transfer array."""

    def __init__(self, steps):
        self.steps = steps
        self.size = steps.size

    def __getitem__(self, name):
        if name != "step":
            raise KeyError(name)
        return self.steps


@_verify_form.register
def _verify_compact(schedule: CompactSchedule, max_errors, shards):
    """A compact schedule checked block by block with the explicit form's rules: the rows
    (malformed, missing link) in one pass, then per batch of shards the copies' simulation
    (first arrival of each chunk at each node, then every send against it) in two passes."""
    shards = _shard_selection(schedule, shards)
    topo = schedule.topology
    n = topo.num_nodes
    coll = schedule.collective
    num_shards = coll.num_shards(n)
    parts = schedule.parts
    found = _Collector()
    bad = []
    used = []                                   # the steps of the well-formed rows
    for lo, block in schedule.blocks():
        good, tg = _row_checks(schedule, block, found, offset=lo)
        if good.size < block.size:
            bad.append(np.setdiff1d(np.arange(block.size), good) + lo)
        used.append(np.unique(tg["step"]))
    bad = np.concatenate(bad) if bad else np.zeros(0, dtype=np.int64)
    warnings = []
    _gap_warning(np.unique(np.concatenate(used)) if used else np.zeros(0), warnings)
    steps = _StepColumn(schedule.steps())
    if _isolated(topo, found, max_errors):
        return _report(schedule, found, steps, None, None, max_errors, warnings)
    atoms = _GridAtoms(num_shards, parts)
    per_shard = n * parts * 4
    if shards is None:
        size = max(1, _COMPACT_STATE_BUDGET // per_shard)
        batches = [(s0, min(s0 + size, num_shards)) for s0 in range(0, num_shards, size)]
    else:
        batches = [(int(c), int(c) + 1) for c in shards]
    owner = coll.start_owner(n, schedule.root)
    for s0, s1 in batches:
        width = (s1 - s0) * parts
        arrival = np.full((n, width), _NEVER, dtype=np.int32)
        local = np.arange(width)
        arrival[owner[s0 + local // parts], local] = 0
        flat = arrival.reshape(-1)
        for check in (False, True):     # first arrivals, then every send against them
            for lo, index, step, src, dst, atom in _compact_rows(schedule, bad, s0, s1):
                if not check:
                    np.minimum.at(flat, dst * width + atom, step)
                    continue
                late = flat[src * width + atom] > step - 1
                if np.any(late):
                    found.add("causality", index[late] + lo)
        _end_state(arrival < _NEVER, atoms, s0 * parts, s1 * parts, schedule, found)
        del arrival, flat
    return _report(schedule, found, steps, None, atoms, max_errors, warnings)


def _compact_rows(schedule, bad, s0, s1):
    """Per block of a compact schedule: ``(first row, rows, step, src, dst, atom)`` of its
    well-formed rows (not in ``bad``) whose shard is in ``s0..s1-1``; atoms count from
    shard ``s0``'s first."""
    cols = schedule.columns
    parts = schedule.parts
    total = schedule.num_transfers
    for lo in range(0, total, _COMPACT_BLOCK):
        hi = min(lo + _COMPACT_BLOCK, total)
        shard = cols["shard"][lo:hi].astype(np.int64)
        keep = (shard >= s0) & (shard < s1)
        if bad.size:
            inside = bad[(bad >= lo) & (bad < hi)] - lo
            keep[inside] = False
        index = np.flatnonzero(keep) if not keep.all() else np.arange(hi - lo)
        atom = (shard[index] - s0) * parts
        if parts > 1:
            atom += cols["part"][lo:hi][index]
        yield (lo, index, cols["step"][lo:hi][index].astype(np.int32),
               cols["src"][lo:hi][index].astype(np.int64),
               cols["dst"][lo:hi][index].astype(np.int64), atom)


_COMPACT_BLOCK = 1 << 22
