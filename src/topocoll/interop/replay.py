"""Run an MSCCL program symbolically and read off the schedule it performs.

Every thread block executes its steps in order, as the runtime does: a step first waits for
its dependency (``depid``/``deps``: the named block has finished a step numbered at least
``deps`` that is marked ``hasdep``), a receive waits for the matching send on its channel, and
sends never wait for the receiver (the runtime's connections buffer them). Buffers hold symbolic
values: which chunk of which shard, and in combining collectives which ranks' contributions
are summed in. The run ends when every block is done, or when none can move: then the program
would hang, and the blocked steps are named.

Each send-receive pair becomes a transfer of the schedule. Its step is the earliest the data
allows (one after the step that delivered what it sends, and never before an earlier step of
the same thread block), or the ``tcstep`` the exporter wrote where that is not earlier.

>>> from topocoll.topology import topology
>>> from topocoll.synth import generate
>>> from topocoll.interop.export import export_msccl
>>> prog = export_msccl(generate(topology("ring:4"), "allgather", "bfb")).program
>>> run = replay(prog)
>>> run.hang, run.problems, run.schedule.num_steps
([], [], 2)
"""

from dataclasses import dataclass, field

import numpy as np

from ..collectives import COPY, REDUCE
from ..errors import ScheduleFormatError
from ..schedule.model import TRANSFER_DTYPE, Schedule, transfer_array
from ..topology.model import Topology
from .export import HINT, SEND_HINT
from .layout import Layout, collective_of_runtime_name

__all__ = ["replay", "Replay", "program_layout"]

_SENDS = {"s", "rcs", "rrs", "rrcs"}
_RECVS = {"r", "rcs", "rrs", "rrc", "rrcs"}
_REDUCES = {"rrs", "rrc", "rrcs", "re"}
_WRITES = {"r", "rcs", "rrc", "rrcs", "cpy", "re"}
_READS_SRC = {"s", "rrs", "rrc", "rrcs", "cpy", "re"}


def _int(element, name, program, default=None):
    raw = element.attrs.get(name)
    if raw is None:
        if default is not None:
            return default
        raise ScheduleFormatError(f"{program.where(element)}: <{_tag(element)}> has no {name}")
    try:
        return int(raw)
    except ValueError:
        raise ScheduleFormatError(f"{program.where(element)}: {name}={raw!r} is not an "
                                  "integer") from None


def _tag(element):
    return getattr(element, "tag", None) or type(element).__name__.lower()


def program_layout(program, root=None):
    """``(collective, ranks, chunks per shard, Layout)`` of a program, from ``coll``, ``ngpus``
    and the buffer sizes of its GPUs (the largest input and output chunk counts)."""
    coll = collective_of_runtime_name(program.attrs.get("coll", ""))
    n = _int(program, "ngpus", program, default=len(program.gpus))
    if n < 1:
        raise ScheduleFormatError(f"{program.where(program)}: ngpus must be at least 1")
    ins = max([_int(g, "i_chunks", program, default=0) for g in program.gpus] + [0])
    outs = max([_int(g, "o_chunks", program, default=0) for g in program.gpus] + [0])
    name = coll.name
    per_shard = {"allgather": outs // n if outs else ins,
                 "reduce_scatter": ins // n if ins else outs,
                 "allreduce": max(ins, outs) // n, "broadcast": max(ins, outs),
                 "reduce": max(ins, outs), "scatter": outs or ins // n,
                 "gather": ins or outs // n, "alltoall": max(ins, outs) // n}[name]
    k = per_shard
    if k < 1:
        raise ScheduleFormatError(f"{program.where(program)}: i_chunks/o_chunks give no whole "
                                  f"chunk per shard for {name} on {n} ranks")
    lay = Layout(coll, n, k, root)
    if (name == "allgather" and outs and outs != n * k) or \
            (name in ("allreduce", "alltoall") and max(ins, outs) != n * k):
        raise ScheduleFormatError(f"{program.where(program)}: {name} on {n} ranks needs buffers "
                                  f"of a multiple of {n} chunks, got i_chunks={ins}, "
                                  f"o_chunks={outs}")
    return coll, n, k, lay


@dataclass
class Replay:
    """What a program does: the schedule, and what went wrong.

    ``problems`` are ``(line, message)`` pairs: reductions that add a contribution twice or mix
    chunks, reads of empty buffers, sends whose receive does not match. ``hang`` lists the
    blocked steps if the program cannot finish. ``wrong_outputs`` names output chunks that do
    not hold what the collective promises when the program ends.
    """

    schedule: Schedule = None
    problems: list = field(default_factory=list)
    hang: list = field(default_factory=list)
    wrong_outputs: list = field(default_factory=list)
    inplace: bool = False
    hinted: bool = False

    @property
    def ok(self):
        return not (self.problems or self.hang or self.wrong_outputs)


def _root_of(program, coll, n, given):
    if not coll.rooted:
        return None
    if given is not None:
        return int(given)
    raw = program.attrs.get("root")
    if raw is not None:
        return int(raw)
    # the root is the rank that starts (scatter, broadcast) or ends (gather, reduce) with data:
    # for broadcast/scatter, the only rank that sends before it receives
    firsts = {}
    for gpu in program.gpus:
        rank = int(gpu.attrs.get("id", -1))
        for tb in gpu.blocks:
            for st in tb.steps:
                kind = st.attrs.get("type")
                if kind in _SENDS:
                    firsts.setdefault(rank, set()).add("send")
                if kind in _RECVS:
                    firsts.setdefault(rank, set()).add("recv")
    if coll.name in ("broadcast", "scatter"):
        cands = [r for r, kinds in firsts.items() if kinds == {"send"}]
    else:
        cands = [r for r, kinds in firsts.items() if kinds == {"recv"}]
    return cands[0] if len(cands) == 1 else 0


def replay(program, *, inplace=False, topology=None, root=None, max_problems=20):
    """Execute ``program`` symbolically (see the module docstring).

    Parameters
    ----------
    program : Program
    inplace : bool
        Run it as an in-place call (input and output one buffer, as the layout aliases them).
    topology : Topology, optional
        The network for the schedule; by default the links the program uses, with the default
        bandwidth and latency.
    root : int, optional
        The root of a rooted collective; by default the ``root`` attribute or the rank that
        only sends (broadcast, scatter) or only receives (reduce, gather).

    Returns
    -------
    Replay
    """
    coll, n, k, _ = program_layout(program)
    root = _root_of(program, coll, n, root)
    lay = Layout(coll, n, k, root)
    combining = coll.combining
    full = (1 << n) - 1
    out = Replay(inplace=inplace)

    def note(element, message):
        if len(out.problems) < max_problems:
            out.problems.append((element.line, f"{program.where(element)}: {message}"))

    # buffers: rank -> cell -> (value, ready step); value is g or (g, bits)
    mem = [dict() for _ in range(n)]

    def cell(rank, buf, off):
        return lay.alias(rank, buf, off) if inplace else (buf, off)

    for r in range(n):
        for g in range(lay.num_chunks):
            idx = lay.input_of(r, g)
            if idx is not None:
                mem[r][cell(r, "i", idx)] = ((g, 1 << r) if combining else g, 0)
    gpus = {}
    for gpu in program.gpus:
        rank = _int(gpu, "id", program)
        if not 0 <= rank < n:
            note(gpu, f"gpu id {rank} is not a rank 0..{n - 1}")
            continue
        gpus[rank] = gpu
    blocks = []       # (rank, bid, tb, steps)
    for rank, gpu in sorted(gpus.items()):
        steps_of_copies = list(gpu.copies)
        for tb in gpu.blocks:
            blocks.append([rank, _int(tb, "id", program), tb, tb.steps, 0])
        if steps_of_copies:   # older dialect: the GPU's <copy> elements run first
            blocks.append([rank, None, None, steps_of_copies, 0])
    flags = {}        # (rank, bid) -> largest s finished with hasdep
    last_step = {}    # (rank, bid) -> schedule step of the block's latest transfer
    fifo = {}         # (src, dst, chan) -> list of [values, step-ready, element, cnt, hint]
    head = {}
    rows = []         # (step, src, dst, g, op)
    hinted = True

    def read(rank, buf, off, cnt, element):
        vals = []
        for i in range(cnt):
            got = mem[rank].get(cell(rank, buf, off + i))
            if got is None:
                note(element, f"reads {buf}[{off + i}] on rank {rank}, which holds no data yet")
                return None
            vals.append(got)
        return vals

    def combine(a, b, element, rank):
        (ga, ba), (gb, bb) = a, b
        if ga != gb:
            note(element, f"rank {rank} reduces chunk {ga} with chunk {gb}")
        if ba & bb:
            note(element, f"rank {rank} adds a contribution twice (ranks "
                          f"{[i for i in range(n) if (ba & bb) >> i & 1]})")
        return (ga, ba | bb)

    progress = True
    while progress:
        progress = False
        for blk in blocks:
            rank, bid, tb, steps, pc = blk
            while pc < len(steps):
                st = steps[pc]
                kind = st.attrs.get("type", "cpy" if st.tag == "copy" else None)
                depid = int(st.attrs.get("depid", -1))
                if depid >= 0 and flags.get((rank, depid), -1) < int(st.attrs.get("deps", -1)):
                    break
                chan = int(tb.attrs.get("chan", 0)) if tb is not None else 0
                cnt = int(st.attrs.get("cnt", 1))
                hint = st.attrs.get(HINT)
                recv_peer = int(tb.attrs.get("recv", -1)) if tb is not None else -1
                send_peer = int(tb.attrs.get("send", -1)) if tb is not None else -1
                incoming = None
                if kind in _RECVS:
                    key = (recv_peer, rank, chan)
                    q = fifo.get(key, [])
                    h = head.get(key, 0)
                    if h >= len(q):
                        break
                    incoming = q[h]
                    head[key] = h + 1
                    if incoming[3] != cnt:
                        note(st, f"receives cnt={cnt} but the matching send on rank "
                                 f"{recv_peer} (line {incoming[2].line}) sends cnt={incoming[3]}")
                srcbuf, dstbuf = st.attrs.get("srcbuf", "i"), st.attrs.get("dstbuf", "o")
                srcoff, dstoff = int(st.attrs.get("srcoff", 0)), int(st.attrs.get("dstoff", 0))
                result = None
                ready = 0
                if kind == "nop" or kind is None:
                    pass
                elif kind == "s":
                    result = read(rank, srcbuf, srcoff, cnt, st)
                elif incoming is not None or kind in ("cpy", "re"):
                    local = read(rank, srcbuf, srcoff, cnt, st) if kind in _READS_SRC else None
                    if kind in ("cpy", "re"):
                        result = local
                        if kind == "re" and local is not None:
                            cur = read(rank, dstbuf, dstoff, cnt, st)
                            if cur is not None:
                                result = [(combine(a[0], b[0], st, rank), max(a[1], b[1]))
                                          for a, b in zip(local, cur)]
                    else:
                        # steps never go back along one connection's sequence (a fused
                        # block's sends run ahead of its receives, so each side counts alone)
                        step = max(1 + incoming[1], last_step.get((rank, bid, "recv"), 0),
                                   last_step.get(incoming[5] + ("send",), 0))
                        if incoming[4] is not None and hint is not None and \
                                int(hint) >= step and int(incoming[4]) == int(hint):
                            step = int(hint)
                        else:
                            hinted = False
                        last_step[(rank, bid, "recv")] = step
                        last_step[incoming[5] + ("send",)] = step
                        vals = incoming[0]
                        op = REDUCE if kind in _REDUCES else COPY
                        if vals is not None:
                            for v, _ in vals:
                                rows.append((step, recv_peer, rank, v[0] if combining else v, op))
                        if kind in _REDUCES:
                            if not combining:
                                note(st, f"a reducing step ({kind}) in {coll.name}, which does "
                                         "not combine")
                                result = vals
                            elif vals is not None and local is not None:
                                result = [(combine(a[0], b[0], st, rank), step)
                                          for a, b in zip(vals, local)]
                        else:
                            result = [(v, step) for v, _ in vals] if vals is not None else None
                        ready = step
                if result is not None and kind in _WRITES:
                    for i, v in enumerate(result):
                        mem[rank][cell(rank, dstbuf, dstoff + i)] = (v[0], v[1] if kind in ("cpy", "re") else ready)
                if kind in _SENDS and send_peer >= 0:
                    vals = result
                    ready_at = max((v[1] for v in vals), default=0) if vals else 0
                    if kind != "s":
                        ready_at = ready
                    push_hint = hint if kind == "s" else st.attrs.get(SEND_HINT)
                    fifo.setdefault((rank, send_peer, chan), []).append(
                        [vals, ready_at, st, cnt, push_hint, (rank, bid)])
                if int(st.attrs.get("hasdep", 0)) == 1 and bid is not None:
                    flags[(rank, bid)] = max(flags.get((rank, bid), -1), int(st.attrs.get("s", pc)))
                pc += 1
                blk[4] = pc
                progress = True
    for rank, bid, tb, steps, pc in blocks:
        if pc < len(steps):
            st = steps[pc]
            depid = int(st.attrs.get("depid", -1))
            why = (f"waits for block {depid} step {st.attrs.get('deps')}"
                   if depid >= 0 and flags.get((rank, depid), -1) < int(st.attrs.get("deps", -1))
                   else "waits for a send that never comes")
            out.hang.append((st.line, f"{program.where(st)}: rank {rank} block {bid} step "
                                      f"{st.attrs.get('s', pc)} {why}"))
    for (src, dst, chan), q in fifo.items():
        if head.get((src, dst, chan), 0) < len(q) and not out.hang:
            st = q[head.get((src, dst, chan), 0)][2]
            note(st, f"rank {src} sends to rank {dst} on channel {chan} but no receive matches")
    # postcondition on the buffers
    target = coll.end_target(n, root)
    for r in range(n):
        for g in range(lay.num_chunks):
            idx = lay.output_of(r, g)
            if idx is None:
                continue
            got = mem[r].get(cell(r, "o", idx))
            want = (g, full) if combining else g
            if got is None or got[0] != want:
                if len(out.wrong_outputs) < max_problems:
                    have = "nothing" if got is None else _describe(got[0], n, combining)
                    out.wrong_outputs.append(f"rank {r} output chunk {idx} holds {have}, not "
                                             f"{_describe(want, n, combining)}")
    del target
    out.hinted = hinted and bool(rows)
    out.schedule = _schedule(rows, coll, n, k, lay, root, topology, program)
    return out


def _describe(value, n, combining):
    if combining:
        g, bits = value
        ranks = [i for i in range(n) if bits >> i & 1]
        return f"chunk {g} summed over {len(ranks)} of {n} ranks"
    return f"chunk {value}"


def _schedule(rows, coll, n, k, lay, root, topology, program):
    if rows:
        arr = np.array(rows, dtype=np.int64)
        step, src, dst, g, op = arr.T
    else:
        step = src = dst = g = op = np.zeros(0, dtype=np.int64)
    shard, j = np.divmod(g, k)
    t = transfer_array(step, src, dst, shard, j / k, (j + 1) / k, op) if rows else \
        np.zeros(0, dtype=TRANSFER_DTYPE)
    if topology is None:
        pairs = np.unique(np.c_[src, dst], axis=0) if rows else np.zeros((0, 2), dtype=np.int64)
        topology = Topology(n, pairs[:, 0], pairs[:, 1],
                            name=f"msccl:{program.attrs.get('name', 'program')}")
    sched = Schedule(topology, coll, t, root=root if coll.rooted else None,
                     algorithm=f"msccl:{program.attrs.get('name', 'program')}")
    from .export import _merge_pieces

    return _merge_pieces(sched)
