"""The export's cheap pre-check (:mod:`.export`): refuse in seconds a schedule whose MSCCL
program the full translation would refuse after minutes, and never one it would accept.

The block-assignment pass (:mod:`.export_blocks`) tries ``cap`` = 64 transfers per link and
channel, then 48, 36, 27, ... (each 3/4 of the last) while some thread block has more than 64
steps once the ``nop`` steps for extra dependencies are added; it stops with an error when a
rank has more than 128 thread blocks that other blocks wait for (``depid`` is 8 bits) or more
than 32 channels would be needed. This module replays that search on arrays instead of one
object per operation: the same operations (a send and a receive per run of chunks, in the same
order), the same data dependencies (a send waits for the last write of what it reads, a receive
for the last write and the reads since of what it overwrites), and per ``cap`` the same blocks,
``nop`` steps, waited-for blocks and channels. It refuses only where that replay ends in the
export's own error, with the same numbers.

Where the replay might not be exact it says nothing (returns ``None``) and the full
translation decides: it covers the in-place buffer of an allreduce (one cell per rank and
chunk), not the ASTRA form, and only a ``cap`` at which no receive block can be fused with a
send block (``rcs``/``rrcs``; :func:`_may_fuse` says when a merge can never be kept).

:func:`precheck_elements` answers a second question from the same arrays, before the rest: can a
rank's part of the program fit the runtime's parser (fewer than ``LIMITS["nodes"]`` elements:
one ``<algo>``, every ``<gpu>``, the rank's own ``<tb>`` and ``<step>`` elements)? Every send and
receive of the rank is a step, except that a fused pair (``rcs``/``rrcs``) is one; ``nop`` steps
only add. A send is fused only into the receive that is its one dependency, with the same
``cnt`` (:func:`~.export_fusion.fusable`), and a receive takes at most one send, so the fused
pairs of a rank are at most its receives that are the only dependency of a send of the same
``cnt``. A rank has at least one thread block per channel of each of its out-links or of each of
its in-links, whichever are more (a fused block serves one of each; unfused, one block per
channel of every link), and a link of ``L`` transfers uses at least ``L / 64`` channels (the
block pass only lowers the cap). Those counts give a lower bound, whatever the
fusion pass, the block pass and the connection-capacity check then decide: where it reaches
the limit the translation certainly refuses, and the pre-check says so first, as "at least".

>>> from topocoll.topology import topology
>>> from topocoll.synth import generate
>>> s = generate(topology("ring:4"), "allreduce", "ring")
>>> precheck(s, 1, 1, room=2) is None      # fits: nothing to say
True
"""

from typing import NamedTuple

import numpy as np

from ..collectives import REDUCE
from ..errors import UnsupportedError
from .export_limits import LIMITS, WIDTHS, next_block_cap

#: ranks whose element bound :func:`element_bound` computes at once (the busiest first; the
#: batch grows four-fold while none reaches the limit)
_FIRST_BATCH = 4

__all__ = ["precheck", "precheck_elements", "element_bound", "element_bounds", "ElementBound",
           "cap_outcome", "operations", "Outcome"]


def _sorted_rows(schedule, k, m):
    """Rows in the export's order (stable by step) and, per (row, instance) piece, the first
    shard-chunk and length."""
    t = schedule.transfers
    t = t[np.argsort(t["step"], kind="stable")]
    c0 = np.round(t["lo"] * k).astype(np.int64)
    length = np.maximum(np.round(t["hi"] * k).astype(np.int64) - c0, 0)
    kk = k * m
    inst = np.tile(np.arange(m, dtype=np.int64), len(t))
    row = np.repeat(np.arange(len(t), dtype=np.int64), m)
    first = t["shard"].astype(np.int64)[row] * kk + c0[row] * m + inst * length[row]
    return t, row, inst, first, length[row]


def _chunk_items(schedule, k, m):
    """One item per chunk moved, in the export's order: ``(row, inst, g)`` and whether the
    sender's copy and (reduce) the receiver's partial sum are already in the output buffer."""
    t, prow, pinst, pfirst, plen = _sorted_rows(schedule, k, m)
    total = int(plen.sum())
    piece = np.repeat(np.arange(len(prow), dtype=np.int64), plen)
    starts = np.cumsum(plen) - plen
    g = pfirst[piece] + (np.arange(total, dtype=np.int64) - starts[piece])
    row = prow[piece]
    src = t["src"].astype(np.int64)[row]
    dst = t["dst"].astype(np.int64)[row]
    step = t["step"].astype(np.int64)[row]
    n = schedule.num_nodes
    chunks = int(g.max()) + 1 if total else 1
    # a chunk moves from input ("i", g) to output ("o", g) when its rank first receives it
    first_step = np.full(n * chunks, np.iinfo(np.int64).max, dtype=np.int64)
    first_item = np.full(n * chunks, np.iinfo(np.int64).max, dtype=np.int64)
    np.minimum.at(first_step, dst * chunks + g, step)
    np.minimum.at(first_item, dst * chunks + g, np.arange(total, dtype=np.int64))
    src_out = first_step[src * chunks + g] < step
    local_out = first_item[dst * chunks + g] < np.arange(total, dtype=np.int64)
    reduce = t["op"][row] == REDUCE
    return dict(piece=piece, starts=starts, g=g, row=row, inst=pinst[piece], src=src, dst=dst,
                step=step, src_out=src_out, local_out=local_out, reduce=reduce, chunks=chunks)


def _runs(it):
    """Run id of every chunk item: the export's :func:`~.export_deps.runs` (a run continues
    while both places advance by one, at most ``cnt`` = 71 chunks)."""
    total = len(it["g"])
    idx = np.arange(total, dtype=np.int64)
    new = np.ones(total, dtype=bool)
    if total > 1:
        same_piece = it["piece"][1:] == it["piece"][:-1]
        same_place = (it["src_out"][1:] == it["src_out"][:-1]) & (
            ~it["reduce"][1:] | (it["local_out"][1:] == it["local_out"][:-1]))
        new[1:] = ~(same_piece & same_place)
    seg_start = np.maximum.accumulate(np.where(new, idx, 0))
    new |= (idx - seg_start) % (LIMITS["count"] - 1) == 0
    return np.cumsum(new) - 1, new


def _operations(schedule, k, m):
    """Sends and receives as arrays (operation ``i`` of ``2R``): rank, peer, instance, whether
    it sends, its place in the export's total order, its place in its link's sequence and its
    ``cnt``; and per chunk item the send and the receive that move it."""
    it = _chunk_items(schedule, k, m)
    run, new = _runs(it)
    nruns = int(run[-1]) + 1 if len(run) else 0
    heads = np.flatnonzero(new)
    rsrc, rdst, rinst, rstep = (it[x][heads] for x in ("src", "dst", "inst", "step"))
    cnt = np.bincount(run, minlength=nruns)
    # within a step every send comes before every receive, each in run order
    bounds = np.flatnonzero(np.r_[True, rstep[1:] != rstep[:-1]]) if nruns else np.zeros(0, int)
    step_of = np.cumsum(np.r_[False, rstep[1:] != rstep[:-1]]) if nruns else np.zeros(0, int)
    ends = np.r_[bounds[1:], nruns]
    r = np.arange(nruns, dtype=np.int64)
    order = np.r_[r + bounds[step_of], r + ends[step_of]]
    n = schedule.num_nodes
    link = (rsrc * n + rdst) * m + rinst
    srt = np.argsort(link, kind="stable")
    ordinal = np.empty(nruns, dtype=np.int64)
    grp_start = np.r_[True, link[srt][1:] != link[srt][:-1]] if nruns else np.zeros(0, bool)
    pos = np.arange(nruns)
    ordinal[srt] = pos - np.maximum.accumulate(np.where(grp_start, pos, 0))
    ops = dict(rank=np.r_[rsrc, rdst], peer=np.r_[rdst, rsrc], inst=np.r_[rinst, rinst],
               send=np.r_[np.ones(nruns, bool), np.zeros(nruns, bool)], order=order,
               ordinal=np.r_[ordinal, ordinal], cnt=np.r_[cnt, cnt], step=np.r_[rstep, rstep],
               n=n, m=m)
    return ops, it, run, nruns


def operations(schedule, k, m):
    """The sends and receives of ``schedule`` lowered with ``k`` chunks per shard and ``m``
    channel copies, as arrays (``rank``, ``peer``, ``inst``, ``send``, ``order``, ``ordinal``,
    ``cnt``, ``step``), and their dependencies ``(dependents, dependencies)``."""
    ops, it, run, nruns = _operations(schedule, k, m)
    if not nruns:
        return ops, (np.zeros(0, np.int64), np.zeros(0, np.int64))
    return ops, _dependencies(ops, it, run, nruns)


def _dependencies(ops, it, run, nruns):
    """Unique ``(dependent, dependency)`` pairs of operations: a send waits for the last write of
    each chunk it reads; a receive for the last write and the reads since of each chunk it
    overwrites (one storage cell per rank and chunk: the in-place allreduce)."""
    chunks = it["chunks"]
    send_op, recv_op = run, run + nruns
    cell = np.r_[it["src"] * chunks + it["g"], it["dst"] * chunks + it["g"]]
    op = np.r_[send_op, recv_op]
    write = np.r_[np.zeros(len(run), bool), np.ones(len(run), bool)]
    srt = np.lexsort((ops["order"][op], cell))
    cell, op, write = cell[srt], op[srt], write[srt]
    size = len(op)
    pos = np.arange(size)
    start = np.maximum.accumulate(np.where(np.r_[True, cell[1:] != cell[:-1]], pos, 0))
    last_w = np.maximum.accumulate(np.where(write, pos, -1))      # at or before
    prev_w = np.r_[-1, last_w[:-1]]
    prev_w = np.where(prev_w >= start, prev_w, -1)                 # strictly before, same cell
    nxt = np.where(write, pos, size)[::-1]
    next_w = np.minimum.accumulate(nxt)[::-1]
    next_w = np.r_[next_w[1:], size]                               # strictly after
    end = np.r_[np.flatnonzero(cell[1:] != cell[:-1]) + 1, size]
    end = end[np.cumsum(np.r_[False, cell[1:] != cell[:-1]])]
    has_prev = prev_w >= 0
    pairs = [np.c_[op[has_prev], op[prev_w[has_prev]]]]
    reads = ~write & (next_w < end)
    pairs.append(np.c_[op[next_w[reads]], op[reads]])
    both = np.concatenate(pairs)
    both = both[both[:, 0] != both[:, 1]]
    key = np.unique(both[:, 0] * (2 * nruns) + both[:, 1])
    return key // (2 * nruns), key % (2 * nruns)


def _blocks(ops, cap):
    """Thread block of every operation at ``cap`` (rank, channel, direction, peer: one id per
    block), its position in the block and its channel."""
    chan = ops["inst"] + ops["m"] * (ops["ordinal"] // cap)
    n, nch = ops["n"], int(chan.max(initial=0)) + 1
    key = ((ops["rank"] * nch + chan) * 2 + ops["send"]) * n + ops["peer"]
    _, block = np.unique(key, return_inverse=True)
    return block.ravel(), ops["ordinal"] % cap, chan


def _steps_per_block(ops, block, pos, dep_of, dep_on, nblocks):
    """Steps of every block: its operations plus a ``nop`` for every wait of an operation
    beyond its first, where an operation waits for another block only past the latest step
    of that block its own block already waited for (:func:`~.export_blocks.assign_blocks`)."""
    cross = block[dep_of] != block[dep_on]
    y, d = dep_of[cross], dep_on[cross]
    by, bd, order = block[y], block[d], ops["order"][y]
    srt = np.lexsort((order, bd, by))
    y, by, bd, p = y[srt], by[srt], bd[srt], pos[d][srt]
    # the latest step waited for per (operation, block)
    first = np.r_[True, (y[1:] != y[:-1]) | (bd[1:] != bd[:-1])] if len(y) else np.zeros(0, bool)
    gid = np.cumsum(first) - 1
    latest = np.full(int(gid[-1]) + 1 if len(gid) else 0, -1, dtype=np.int64)
    np.maximum.at(latest, gid, p)
    gy, gby, gbd = y[first], by[first], bd[first]
    # a wait is needed where it passes the running maximum of its (block, block waited for)
    seg = np.cumsum(np.r_[True, (gby[1:] != gby[:-1]) | (gbd[1:] != gbd[:-1])]) if len(gy) \
        else np.zeros(0, np.int64)
    width = 2 * LIMITS["steps"] + 2          # above every position (cap <= steps)
    running = np.maximum.accumulate(seg * width + latest) if len(gy) else latest
    before = np.r_[-1, running[:-1]] - seg * width
    before = np.where(np.r_[True, seg[1:] != seg[:-1]], -1, before)
    need = np.bincount(gy[latest > before], minlength=len(block))
    nops = np.maximum(need - 1, 0)
    return np.bincount(block, minlength=nblocks) + np.bincount(block, weights=nops,
                                                               minlength=nblocks).astype(np.int64)


class Outcome(NamedTuple):
    """What the block pass does at one ``cap``: the first rank with more waited-for blocks than
    ``depid`` holds (or ``None``), the most waited-for blocks of a rank, the most steps in one
    block and the channels used."""

    worst_rank: object
    waited: int
    longest: int
    used: int


def cap_outcome(ops, deps, cap, room=None):
    """The :class:`Outcome` of the block pass at ``cap``, or ``None`` where a receive block
    could be fused with a send block (then the replay would not be exact)."""
    dep_of, dep_on = deps
    block, pos, chan = _blocks(ops, cap)
    nblocks = int(block.max()) + 1 if len(block) else 0
    if room is not None and _may_fuse(ops, block, chan, dep_of, dep_on, room, nblocks):
        return None
    cross = block[dep_of] != block[dep_on]
    waited = np.unique(block[dep_on[cross]])
    rank_of = np.zeros(nblocks, dtype=np.int64)
    rank_of[block] = ops["rank"]
    per_rank = np.bincount(rank_of[waited], minlength=ops["n"])
    over = np.flatnonzero(per_rank > WIDTHS["depid"][1] + 1)
    worst = int(over[0]) if len(over) else None
    longest = int(_steps_per_block(ops, block, pos, dep_of, dep_on, nblocks).max(initial=0))
    return Outcome(worst, int(per_rank.max(initial=0)), longest, 1 + int(chan.max(initial=0)))


def _may_fuse(ops, block, chan, dep_of, dep_on, room, nblocks):
    """Whether the fusion pass could keep a merge of a receive block with a send block.

    It keeps one only if every send of the merged block finds room (:func:`~.export_fusion.
    held_ok`): the send's ``cnt`` plus those of the sends checked before it whose receives come
    later in the total order. A send is checked at its own place or, fused, at its receive's,
    which is earlier; either way before every receive of its schedule step. So the last send of
    a step checked finds all the others of that step held: a send block whose sends of one step
    carry more than ``room`` chunks is never merged. Nor is one without a send that may be
    fused (its one dependency a receive on its channel)."""
    ndeps = np.bincount(dep_of, minlength=len(block))
    one = ops["send"][dep_of] & (ndeps[dep_of] == 1) & ~ops["send"][dep_on] & (
        chan[dep_of] == chan[dep_on])
    fusable = np.zeros(nblocks, bool)
    fusable[block[dep_of[one]]] = True
    sends = ops["send"]
    width = int(ops["step"].max(initial=0)) + 1
    uniq, inv = np.unique(block[sends] * width + ops["step"][sends], return_inverse=True)
    per_step = np.bincount(inv.ravel(), weights=ops["cnt"][sends], minlength=len(uniq))
    crowded = np.zeros(nblocks, bool)
    crowded[(uniq // width)[per_step > room]] = True
    return bool(np.any(fusable & ~crowded))


def _waited_on(ops, deps, cap, rank):
    block = _blocks(ops, cap)[0]
    dep_of, dep_on = deps
    cross = (block[dep_of] != block[dep_on]) & (ops["rank"][dep_on] == rank)
    return len(np.unique(block[dep_on[cross]]))


def precheck(schedule, k, channels, room=None, astra=False):
    """Raise the export's own error, with its numbers, where the block pass would end in it
    (see the module docstring); ``None`` where it would not or the replay might not be exact.

    ``schedule`` is what the export lowers (rounded to ``k`` chunks per shard, pieces merged),
    ``channels`` the channel copies and ``room`` the connection capacity the fusion pass
    respects (``None``: no fusion, as ``--unfused``)."""
    if astra or schedule.collective.name != "allreduce" or not len(schedule.transfers):
        return None
    try:
        ops, deps = operations(schedule, k, channels)
    except (IndexError, ValueError):      # values out of range: the translation decides
        return None
    if not len(ops["rank"]):
        return None
    cap = LIMITS["steps"]
    while True:
        outcome = cap_outcome(ops, deps, cap, room)
        if outcome is None:
            return None
        worst, _, longest, used = outcome
        if worst is not None:
            waited = _waited_on(ops, deps, cap, worst)
            raise UnsupportedError(
                f"rank {worst} has {waited} thread blocks that other blocks wait for; the "
                f"runtime stores the block a step waits for (depid) in 8 bits "
                f"(0..{WIDTHS['depid'][1]}); use fewer --channels (found before translating: "
                f"at {cap} transfers per link and thread block, where the "
                f"{LIMITS['steps']}-step limit with the nop steps leads)")
        smaller = next_block_cap(longest, used, channels, cap)
        if smaller is None:
            return None
        cap = smaller


class ElementBound(NamedTuple):
    """A lower bound on one rank's elements in the exported program (:func:`element_bound`):
    ``least`` = 1 ``<algo>`` + ``n`` ``<gpu>`` + at least ``blocks`` thread blocks + ``ops``
    sends and receives, less at most ``fused`` fused pairs."""

    rank: int
    least: int
    n: int
    blocks: int
    ops: int
    fused: int


def _run_arrays(schedule, k, m):
    """Per run of chunks (one send and one receive each, :func:`_runs`): the chunk items, the
    run of every item, and per run its first item, ``cnt`` and place in the total order of its
    send and of its receive (within a step every send comes before every receive)."""
    it = _chunk_items(schedule, k, m)
    run, new = _runs(it)
    heads = np.flatnonzero(new)
    nruns = len(heads)
    cnt = np.bincount(run, minlength=nruns)
    rstep = it["step"][heads]
    change = np.r_[True, rstep[1:] != rstep[:-1]] if nruns else np.zeros(0, bool)
    bounds = np.flatnonzero(change)
    step_of = np.cumsum(change) - 1
    ends = np.r_[bounds[1:], nruns]
    r = np.arange(nruns, dtype=np.int64)
    return it, run, dict(heads=heads, cnt=cnt, send_order=r + bounds[step_of],
                         recv_order=r + ends[step_of], src=it["src"][heads],
                         dst=it["dst"][heads], inst=it["inst"][heads])


def _least_blocks(runs, n, m, fuse):
    """Per rank, the fewest thread blocks it can have: one per channel of each out-link and of
    each in-link (``fuse``: of either, whichever is more, as a fused block serves one of each),
    where a link of ``L`` transfers uses at least ``ceil(L / LIMITS["steps"])`` channels."""
    link = (runs["src"] * n + runs["dst"]) * m + runs["inst"]
    uniq, count = np.unique(link, return_counts=True)
    chans = -(-count // LIMITS["steps"])
    pair = uniq // m
    out = np.bincount(pair // n, weights=chans, minlength=n).astype(np.int64)
    into = np.bincount(pair % n, weights=chans, minlength=n).astype(np.int64)
    return np.maximum(out, into) if fuse else out + into


def _fusable_receives(it, run, runs, ranks):
    """Per rank (``ranks``: a mask), how many receives are the only dependency of a send of the
    same ``cnt``: a send waits for the last write before it of every chunk it reads (one
    storage cell per rank and chunk, as :func:`_dependencies`)."""
    nruns = len(runs["cnt"])
    chunks = it["chunks"]
    rd, wr = ranks[it["src"]], ranks[it["dst"]]
    cell = np.r_[it["src"][rd] * chunks + it["g"][rd], it["dst"][wr] * chunks + it["g"][wr]]
    op = np.r_[run[rd], run[wr] + nruns]
    order = np.r_[runs["send_order"][run[rd]], runs["recv_order"][run[wr]]]
    srt = np.lexsort((order, cell))
    cell, op = cell[srt], op[srt]
    write = op >= nruns
    pos = np.arange(len(op))
    start = np.maximum.accumulate(np.where(np.r_[True, cell[1:] != cell[:-1]], pos, 0))
    last_w = np.maximum.accumulate(np.where(write, pos, -1))
    hit = ~write & (last_w >= start)                 # a read whose chunk was written before
    key = np.unique(op[hit] * (2 * nruns) + op[last_w[hit]])
    send, dep = key // (2 * nruns), key % (2 * nruns)
    sole = np.bincount(send, minlength=nruns)[send] == 1
    recv = dep - nruns
    ok = sole & (runs["cnt"][send] == runs["cnt"][recv])
    fused = np.unique(recv[ok])
    return np.bincount(runs["dst"][fused], minlength=len(ranks))


class _Lowered(NamedTuple):
    n: int
    it: dict
    run: np.ndarray
    runs: dict
    ops: np.ndarray
    blocks: np.ndarray


def _lowered(schedule, k, channels, fuse):
    """The runs of :func:`_run_arrays` and per rank its sends and receives and its fewest
    thread blocks; ``None`` where the arrays do not follow the export (as :func:`precheck`:
    the allreduce's in-place buffer)."""
    if schedule.collective.name != "allreduce" or not len(schedule.transfers):
        return None
    n = schedule.num_nodes
    it, run, runs = _run_arrays(schedule, k, channels)
    ops = np.bincount(runs["src"], minlength=n) + np.bincount(runs["dst"], minlength=n)
    return _Lowered(n, it, run, runs, ops, _least_blocks(runs, n, channels, fuse))


def element_bounds(schedule, k, channels, fuse=True):
    """Per rank the parts of its :class:`ElementBound` as arrays ``(least, blocks, ops,
    fused)``, every rank looked at (:func:`element_bound` looks at the busiest only); ``None``
    where the arrays do not follow the export.

    >>> from topocoll.topology import topology
    >>> from topocoll.synth import generate
    >>> least, blocks, ops, fused = element_bounds(generate(topology("ring:4"), "allreduce",
    ...                                                     "ring"), 1, 1)
    >>> least.tolist(), blocks.tolist(), ops.tolist(), fused.tolist()
    ([13, 13, 13, 13], [1, 1, 1, 1], [12, 12, 12, 12], [5, 5, 5, 5])

    1 ``<algo>`` + 4 ``<gpu>`` + 1 block + 12 sends and receives - 5 fused pairs: the ring's
    program has exactly 13 elements per rank.
    """
    low = _lowered(schedule, k, channels, fuse)
    if low is None:
        return None
    fused = np.zeros(low.n, dtype=np.int64)
    if fuse:
        fused = _fusable_receives(low.it, low.run, low.runs, np.ones(low.n, dtype=bool))
    return 1 + low.n + low.blocks + low.ops - fused, low.blocks, low.ops, fused


def element_bound(schedule, k, channels, fuse=True):
    """The :class:`ElementBound` of the first rank whose bound reaches ``LIMITS["nodes"]``, or
    of the rank with the highest bound where none does; ``None`` where the arrays do not
    follow the export (see :func:`precheck`, which they share). Ranks are taken busiest first,
    and a rank that could not reach the limit even with no fused pair is skipped, so the
    answer comes from a few ranks where one is over (see the module docstring)."""
    low = _lowered(schedule, k, channels, fuse)
    if low is None:
        return None
    n, runs = low.n, low.runs
    most = 1 + n + low.blocks + low.ops
    fused = np.zeros(n, dtype=np.int64)
    if fuse:
        busiest = np.argsort(-most, kind="stable")
        left = busiest[most[busiest] >= LIMITS["nodes"]]
        fused = np.bincount(runs["dst"], minlength=n)      # every receive, until looked at
        size = _FIRST_BATCH
        while len(left):
            batch, left = left[:size], left[size:]
            mask = np.zeros(n, dtype=bool)
            mask[batch] = True
            fused[batch] = _fusable_receives(low.it, low.run, runs, mask)[batch]
            if np.any(most[batch] - fused[batch] >= LIMITS["nodes"]):
                break
            size *= 4
    least = most - fused
    rank = int(np.argmax(least))
    return ElementBound(rank, int(least[rank]), n, int(low.blocks[rank]), int(low.ops[rank]),
                        int(fused[rank]))


def precheck_elements(schedule, k, channels, fuse=True, astra=False):
    """Raise the export's element-count refusal, for a named rank and with its lower bound
    ("at least"), where :func:`element_bound` shows a rank's part cannot fit the runtime's
    parser; ``None`` otherwise (the translation decides). ``fuse``: whether the export may fuse
    (not ``--unfused``)."""
    if astra:
        return None
    try:
        bound = element_bound(schedule, k, channels, fuse)
    except (IndexError, ValueError):      # values out of range: the translation decides
        return None
    if bound is None or bound.least < LIMITS["nodes"]:
        return None
    b = bound
    fused = f", at most {b.fused} of them fused in pairs" if fuse else ""
    raise UnsupportedError(
        f"rank {b.rank}'s part of the program has at least {b.least} elements (1 <algo>, "
        f"{b.n} <gpu>, at least {b.blocks} thread blocks, a step per send or receive: "
        f"{b.ops}{fused}); the runtime's parser holds {LIMITS['nodes'] - 1}: MSCCL cannot run "
        f"this schedule on {b.n} ranks (found before translating)")
