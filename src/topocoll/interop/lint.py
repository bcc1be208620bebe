"""Say, before anyone runs it, whether the MSCCL runtime accepts a program and whether it is right.

Two kinds of findings, each naming the element and its line:

* **runtime rules** (docs/interop.md lists them): what msccl-executor-nccl's parser refuses or
  what makes its kernel hang: the first element must be ``<algo>`` with all ten attributes, plain
  decimal integers, ranks ``0..ngpus-1`` once each, thread block ids contiguous from 0 with peers
  other than the rank itself and at most one block per channel and peer in each direction, steps
  with all ten attributes numbered ``0, 1, 2, ...``, types from ``s r rcs rrs rrc rrcs cpy re
  nop``, at most 64 steps per block, ``cnt < 72``, offsets inside the buffers, a dependency that
  names an existing step marked ``hasdep="1"``, ``nop`` steps that carry a dependency and are
  followed by a step with one, and sends and receives of each channel and pair of ranks that
  match in number and size; every number within the integer the runtime stores it in
  (:data:`~topocoll.interop.export.WIDTHS`: ``depid`` is 8 bits), and no tab character in the
  markup (the runtime's reader takes only spaces and newlines). ``<copy>`` elements, which the
  runtime skips, are a warning (``warnings``);
* **correctness**: the program is run symbolically (:mod:`~topocoll.interop.replay`): a
  program that cannot finish hangs; then the output buffers must hold what the collective
  promises, and the schedule read off it must pass :func:`~topocoll.schedule.verify`. The run
  is the runtime's: step hints (``tcstep``) are ignored and each transfer's step comes from the
  thread blocks' order and dependencies (:func:`_runtime_steps`); hints only refine the steps of
  the schedule returned.

>>> from topocoll.topology import topology
>>> from topocoll.synth import generate
>>> from topocoll.interop.export import export_msccl
>>> report = lint_msccl(export_msccl(generate(topology("ring:4"), "allgather", "bfb")).program)
>>> report.valid, report.errors
(True, [])
"""

import math
import re
from dataclasses import dataclass, field

import numpy as np

from ..errors import TopocollError
from ..results import Result, Status
from ..schedule.verify import first_missing, verify
from .buffers import buffer_capacity
from .export_limits import CAPACITY, LIMITS, PROTOCOLS, WIDTHS
from .layout import Layout as _Layout
from .layout import RUNTIME_SPELLINGS, RUNTIME_NAMES
from .mscclxml import (ALGO_ATTRS, GPU_ATTRS, READS, RECVS, REDUCES, SENDS, STEP_ATTRS,
                       STEP_TYPES, TB_ATTRS, WRITES, parse_msccl)
from . import replay as _replay_module
from .export_writer import HINT, SEND_HINT
from .mscclxml import Gpu, Program, Step, ThreadBlock
from .replay import program_layout, program_modes, replay
from .threadblocks import read_blocks, run_blocks

__all__ = ["lint_msccl", "LintReport", "Finding", "STEP_TYPES", "buffer_capacity"]

_DECIMAL = re.compile(r"-?(0|[1-9][0-9]*)\Z")
_INTS = {"algo": ("nchannels", "nchunksperloop", "ngpus", "inplace", "outofplace", "minBytes",
                  "maxBytes"),
         "gpu": ("id", "i_chunks", "o_chunks", "s_chunks"),
         "tb": ("id", "send", "recv", "chan"),
         "step": ("s", "srcoff", "dstoff", "cnt", "depid", "deps", "hasdep")}


@dataclass(frozen=True)
class Finding:
    """One broken rule: where (line, element) and what."""

    rule: str
    line: int
    element: str
    message: str

    def to_dict(self):
        return {"rule": self.rule, "line": self.line, "element": self.element,
                "message": self.message}

    def __str__(self):
        return f"line {self.line}: <{self.element}>: {self.message}"


@dataclass(kw_only=True)
class LintReport(Result):
    """Findings on one program.

    Attributes
    ----------
    errors : list of Finding
        Runtime rules broken (the runtime refuses the file or hangs on it).
    warnings : list of Finding
        What the runtime accepts but does not do as written (``<copy>`` elements it skips).
    correct : bool or None
        Whether the program performs its collective (None if it could not be run).
    problems : list of str
        What is wrong with what it computes (hangs, double counts, wrong outputs, and the
        verifier's violations of the schedule read off it).
    schedule : Schedule or None
        The schedule read off the program.
    min_capacity : int or None
        The fewest units (a step of ``cnt`` chunks is ``cnt``) a connection (sender, receiver,
        channel) must hold for the program to complete (docs/interop.md, "Bounded buffers");
        ``None`` if it hangs even with unbounded buffers or could not be run.
    capacity : int or None
        The capacity it was checked against (the protocol's, :data:`~topocoll.interop.export.
        CAPACITY`, unless ``lint_msccl(capacity=...)`` gave one).
    """

    errors: list = field(default_factory=list)
    warnings: list = field(default_factory=list)
    correct: bool | None = None
    problems: list = field(default_factory=list)
    schedule: object = field(default=None, repr=False)
    collective: str = ""
    ngpus: int = 0
    min_capacity: int | None = None
    capacity: int | None = None

    @property
    def valid(self):
        """The runtime accepts it and it is a correct collective."""
        return not self.errors and bool(self.correct)

    def to_dict(self):
        d = super().to_dict()
        d.update({"valid": self.valid, "runtime_errors": [f.to_dict() for f in self.errors],
                  "warnings": [f.to_dict() for f in self.warnings],
                  "correct": self.correct, "problems": list(self.problems),
                  "collective": self.collective, "ngpus": self.ngpus,
                  "min_capacity": self.min_capacity, "capacity": self.capacity})
        if self.schedule is not None:
            d["steps"] = self.schedule.num_steps
            d["transfers"] = self.schedule.num_transfers
        return d


class _Rules:
    def __init__(self, limit):
        self.found = []
        self.warnings = []
        self.limit = limit

    def add(self, rule, element, tag, message):
        if len(self.found) < self.limit:
            self.found.append(Finding(rule, element.line, tag, message))

    def add_at(self, rule, line, tag, message):
        if len(self.found) < self.limit:
            self.found.append(Finding(rule, line, tag, message))

    def warn(self, rule, element, tag, message):
        self.warnings.append(Finding(rule, element.line, tag, message))


def _int(attrs, name):
    try:
        return int(attrs[name])
    except (KeyError, ValueError):
        return None


_TAB_TAG = re.compile(rb"<\s*/?\s*([A-Za-z_]+)")


def _lexical(text, rules):
    """The runtime's hand-written reader takes only spaces and newlines between attributes and
    between elements: a tab anywhere in the markup (indentation included) is refused."""
    data = text.encode() if isinstance(text, str) else bytes(text)
    if b"\t" not in data:
        return
    body = data.split(b"\n")
    lines = [i + 1 for i, line in enumerate(body) if b"\t" in line]
    for n in lines[:5]:
        m = _TAB_TAG.search(body[n - 1])
        tag = m.group(1).decode() if m else "algo"
        rules.add_at("tab", n, tag, "a tab character: the runtime's parser reads only spaces and "
                     "newlines as whitespace in the markup (indent with spaces)")
    if len(lines) > 5:
        rules.add_at("tab", lines[5], "algo", f"{len(lines) - 5} more line(s) with tab characters")


def _source_text(program):
    """The bytes of the file a parsed program came from, if it names one that still exists (the
    tree keeps no whitespace outside tags, and tabs there are the runtime's concern too)."""
    import os

    source = getattr(program, "source", None)
    if not source or source.startswith("<") or not os.path.isfile(source):
        return None
    try:
        from ..fileio import read_input

        return read_input(source, starts=b"<", what="MSCCL XML file")
    except (OSError, TopocollError):
        return None


def _static(program, rules):
    if program.preamble:
        rules.add("first-element", program, "algo",
                  "the file must start with <algo>: the runtime reads the first element's "
                  "attributes" + (" and an XML declaration comes first" if
                                  program.preamble == "declaration" else ""))
    for line, tag, message in program.quirks:
        if len(rules.found) < rules.limit:
            rules.found.append(Finding("text", line, tag, message))
    _attribute_rules(program, rules)
    _algo_rules(program, rules)
    nch, ngpus = _int(program.attrs, "nchannels"), _int(program.attrs, "ngpus")
    if len(program.gpus) > LIMITS["subs"]:
        rules.add("size", program, "algo", f"{len(program.gpus)} <gpu> elements; the parser holds "
                                           f"{LIMITS['subs']}")
    ids = [_int(g.attrs, "id") for g in program.gpus]
    if ngpus is not None:
        _rank_rules(program, ids, ngpus, rules)
    sends, recvs = {}, {}
    for g, rank in zip(program.gpus, ids):
        _gpu(program, g, rank, ngpus, nch, rules, sends, recvs)
    _matching_rules(sends, recvs, rules)


def _attribute_rules(program, rules):
    """Every element's attributes: present, plain decimal integers, short enough, few enough and
    within the integers the runtime stores them in; ``<copy>`` elements are a warning."""
    for tag, elements in (("algo", [program]),
                          ("gpu", program.gpus),
                          ("tb", [tb for g in program.gpus for tb in g.blocks]),
                          ("step", [st for g in program.gpus for tb in g.blocks
                                    for st in tb.steps])):
        required = {"algo": ALGO_ATTRS, "gpu": GPU_ATTRS, "tb": TB_ATTRS, "step": STEP_ATTRS}[tag]
        for el in elements:
            missing = [k for k in required if k not in el.attrs]
            if missing:
                rules.add("attributes", el, tag, f"missing attribute(s) {', '.join(missing)}")
            for k in _INTS[tag]:
                v = el.attrs.get(k)
                if v is not None and not _DECIMAL.match(v):
                    rules.add("integer", el, tag, f"{k}={v!r} is not a plain decimal integer")
            for k, v in el.attrs.items():
                # the parser refuses a name once a character lands at index MAX_STR_LEN - 1
                if len(k) > 254 or len(str(v)) > 255:
                    rules.add("length", el, tag, f"{k[:40]}: names are at most 254 characters, "
                                                 "values at most 255")
            if len(el.attrs) > 16:
                rules.add("attributes", el, tag, f"{len(el.attrs)} attributes; the runtime "
                                                 "reads at most 16")
    for g in program.gpus:
        if g.copies:
            rules.warn("copy", g.copies[0], "copy",
                       f"rank {g.attrs.get('id', '?')}: {len(g.copies)} <copy> element(s) (an "
                       "older dialect): the runtime's parser skips elements it does not know, so "
                       "it does not run them; use cpy steps")
    for tag, elements in (("tb", [tb for g in program.gpus for tb in g.blocks]),
                          ("step", [st for g in program.gpus for tb in g.blocks
                                    for st in tb.steps])):
        for el in elements:
            for k, v in el.attrs.items():
                if k in WIDTHS and _DECIMAL.match(v or ""):
                    lo, hi, where = WIDTHS[k]
                    if not lo <= int(v) <= hi:
                        wrapped = (int(v) - lo) % (hi - lo + 1) + lo
                        rules.add("width", el, tag, f"{k}={v} does not fit the runtime's {where} "
                                  f"({lo}..{hi}): it would be stored as {wrapped}")


def _algo_rules(program, rules):
    """The ``<algo>`` element's values: protocol, collective, flags, sizes and channels."""
    a = program.attrs
    if a.get("proto") is not None and a["proto"] not in PROTOCOLS:
        rules.add("proto", program, "algo", f"proto={a['proto']!r} must be one of "
                                            f"{', '.join(PROTOCOLS)}")
    coll = a.get("coll")
    if coll is not None and coll not in set(RUNTIME_NAMES.values()) | {"send", "recv",
                                                                       "alltoallv"}:
        better = RUNTIME_NAMES.get(RUNTIME_SPELLINGS.get(coll.lower(), coll.lower()))
        rules.add("coll", program, "algo", f"coll={coll!r} is not a collective the runtime "
                  "knows" + (f" (it spells it {better!r})" if better else ""))
    for k in ("inplace", "outofplace"):
        if a.get(k) not in (None, "0", "1"):
            rules.add("flag", program, "algo", f"{k} must be 0 or 1")
    minb, maxb = _int(a, "minBytes"), _int(a, "maxBytes")
    # maxBytes="0" means no upper limit in the runtime (msccl_lifecycle.cc)
    if minb is not None and maxb is not None and (minb < 0 or maxb < 0
                                                  or (maxb != 0 and maxb < minb)):
        rules.add("sizes", program, "algo", f"minBytes={minb} and maxBytes={maxb} admit no size")
    loop = _int(a, "nchunksperloop")
    if loop is not None and loop < 1:
        rules.add("sizes", program, "algo", f"nchunksperloop={loop} must be at least 1 (the "
                  "runtime divides the buffer by it)")
    nch = _int(a, "nchannels")
    if nch is not None and not 1 <= nch <= LIMITS["channels"]:
        rules.add("channels", program, "algo", f"nchannels={nch} must be 1..{LIMITS['channels']}")


def _rank_rules(program, ids, ngpus, rules):
    """The ``<gpu>`` ids: each rank ``0..ngpus-1`` exactly once."""
    seen = set()
    for g, i in zip(program.gpus, ids):
        if i is None:
            continue
        if not 0 <= i < ngpus:
            rules.add("gpu-id", g, "gpu", f"id {i} is not a rank 0..{ngpus - 1}")
        elif i in seen:
            rules.add("gpu-id", g, "gpu", f"rank {i} appears twice")
        seen.add(i)
    absent = first_missing(np.array(sorted(seen), dtype=np.int64), ngpus, 9).tolist()
    if absent:
        rules.add("gpu-id", program, "algo", f"ngpus={ngpus} but rank(s) "
                  f"{', '.join(map(str, absent[:8]))}{' ...' if len(absent) > 8 else ''} "
                  "have no <gpu> (they would run nothing and their peers would hang)")


def _matching_rules(sends, recvs, rules):
    """Sends and receives of each channel and pair of ranks match in number and size."""
    for key in sorted(set(sends) | set(recvs)):
        s, r = sends.get(key, []), recvs.get(key, [])
        src, dst, chan = key
        if [c for c, _ in s] != [c for c, _ in r]:
            el = (s or r)[0][1]
            rules.add("matching", el, "step",
                      f"rank {src} sends {len(s)} time(s) to rank {dst} on channel {chan} "
                      f"(cnt {[c for c, _ in s][:6]}) but rank {dst} receives {len(r)} time(s) "
                      f"(cnt {[c for c, _ in r][:6]}): sends and receives must match in order")


def _gpu(program, g, rank, ngpus, nch, rules, sends, recvs):
    sizes, bids = _gpu_header(program, g, rank, rules)
    per_chan = {}
    steps_of = {b: tb.steps for b, tb in zip(bids, g.blocks) if b is not None}
    depended = set()
    for tb, bid in zip(g.blocks, bids):
        send, recv, chan = _block_rules(tb, bid, rank, ngpus, nch, per_chan, rules)
        for i, st in enumerate(tb.steps):
            kind, cnt = _step_rules(st, i, send, recv, sizes, rules)
            _dependency_rules(tb, i, bid, steps_of, depended, rules)
            if chan is not None and cnt is not None and rank is not None:
                if kind in SENDS and send is not None and send >= 0:
                    sends.setdefault((rank, send, chan), []).append((cnt, st))
                if kind in RECVS and recv is not None and recv >= 0:
                    recvs.setdefault((recv, rank, chan), []).append((cnt, st))
    for chan, pc in per_chan.items():
        for name in ("send", "recv"):
            if len(pc[name]) > LIMITS["blocks_per_channel"]:
                rules.add("channel", g, "gpu", f"{len(pc[name])} {name} peers on channel {chan}; "
                          f"the runtime allows {LIMITS['blocks_per_channel']}")
    for depid, deps in sorted(depended):
        st = steps_of[depid][deps]
        if st.attrs.get("hasdep") != "1":
            rules.add("hasdep", st, "step", f"block {depid} step {deps} is waited for but not "
                      "marked hasdep=\"1\" (its waiters would hang)")
    for tb in g.blocks:
        for st in tb.steps:
            if st.attrs.get("hasdep") not in (None, "0", "1"):
                rules.add("hasdep", st, "step", "hasdep must be 0 or 1")


def _gpu_header(program, g, rank, rules):
    """A ``<gpu>``'s buffer sizes, element count and thread block ids: ``(sizes, block ids)``."""
    sizes = {"i": _int(g.attrs, "i_chunks"), "o": _int(g.attrs, "o_chunks"),
             "s": _int(g.attrs, "s_chunks")}
    if sizes["s"] is not None and sizes["s"] < 0:
        rules.add("buffers", g, "gpu", "s_chunks must not be negative")
    if len(g.blocks) > LIMITS["subs"]:
        rules.add("size", g, "gpu", f"{len(g.blocks)} thread blocks; at most {LIMITS['subs']}")
    elements = 1 + len(program.gpus) + len(g.blocks) + sum(len(tb.steps) for tb in g.blocks)
    # the parser checks for a full table before every read, closing tags too: one index
    # short of MAX_NODES is the most a rank's part may use
    if elements >= LIMITS["nodes"]:
        rules.add("size", g, "gpu", f"rank {rank}'s part of the file has {elements} elements; the "
                                    f"runtime's parser holds {LIMITS['nodes'] - 1}")
    bids = [_int(tb.attrs, "id") for tb in g.blocks]
    valid_bids = {b for b in bids if b is not None}
    if sorted(valid_bids) != list(range(len(valid_bids))) or len(valid_bids) != len(bids):
        if len(set(b for b in bids if b is not None)) != len([b for b in bids if b is not None]):
            rules.add("tb-id", g, "gpu", "thread block ids repeat")
        else:
            rules.add("tb-id", g, "gpu", f"thread block ids must be 0..{len(bids) - 1} without "
                                         f"gaps, got {sorted(valid_bids)[:10]}")
    return sizes, bids


def _block_rules(tb, bid, rank, ngpus, nch, per_chan, rules):
    """A ``<tb>``'s peers, channel (one block per channel, peer and direction, recorded in
    ``per_chan``) and step count: ``(send, recv, chan)``."""
    t = tb.attrs
    send, recv, chan = _int(t, "send"), _int(t, "recv"), _int(t, "chan")
    if rank is not None and rank in (send, recv):
        rules.add("peer", tb, "tb", f"send/recv peer equals the rank itself ({rank})")
    for name, peer in (("send", send), ("recv", recv)):
        if peer is not None and (peer < -1 or (ngpus is not None and peer >= ngpus)):
            rules.add("peer", tb, "tb", f"{name}={peer} is not -1 or a rank 0..{ngpus - 1}")
    if chan is not None and (chan < 0 or chan >= (nch if nch is not None else LIMITS["channels"])
                             or chan >= LIMITS["channels"]):
        rules.add("channel", tb, "tb", f"chan={chan} must be 0..{(nch or 32) - 1} (nchannels)")
    if chan is not None:
        pc = per_chan.setdefault(chan, {"send": {}, "recv": {}})
        for name, peer in (("send", send), ("recv", recv)):
            if peer is not None and peer >= 0:
                if peer in pc[name]:
                    rules.add("one-block", tb, "tb", f"a second thread block {name}s to/from "
                              f"rank {peer} on channel {chan} (block {pc[name][peer]} already "
                              "does): the runtime keeps one connection per channel and peer")
                pc[name].setdefault(peer, bid)
    if len(tb.steps) > LIMITS["steps"]:
        rules.add("steps", tb, "tb", f"{len(tb.steps)} steps; the runtime runs at most "
                                     f"{LIMITS['steps']} per thread block")
    return send, recv, chan


def _step_rules(st, i, send, recv, sizes, rules):
    """A ``<step>``'s number, type, buffers, count, peers and offsets: ``(type, cnt)``."""
    a = st.attrs
    kind = a.get("type")
    s = _int(a, "s")
    if s is not None and s != i:
        rules.add("step-number", st, "step", f"s={s} but this is step {i} of its block "
                                             "(s must count 0, 1, 2, ...)")
    if kind is not None and kind not in STEP_TYPES:
        rules.add("type", st, "step", f"type={kind!r} is not one of {' '.join(STEP_TYPES)}")
    for buf in ("srcbuf", "dstbuf"):
        if a.get(buf) is not None and a[buf] not in ("i", "o", "s"):
            rules.add("buffer", st, "step", f"{buf}={a[buf]!r} must be i, o or s")
    cnt = _int(a, "cnt")
    if cnt is not None and kind != "nop" and not 1 <= cnt < LIMITS["count"]:
        rules.add("count", st, "step", f"cnt={cnt} must be 1..{LIMITS['count'] - 1}")
    if kind in SENDS and (send is None or send < 0):
        rules.add("peer", st, "step", f"a {kind} step in a thread block without a send peer")
    if kind in RECVS and (recv is None or recv < 0):
        rules.add("peer", st, "step", f"a {kind} step in a thread block without a recv peer")
    for side, checked in (("src", READS), ("dst", WRITES)):
        buf, off = a.get(f"{side}buf"), _int(a, f"{side}off")
        if kind in checked and buf in sizes and off is not None and cnt is not None and \
                sizes[buf] is not None and (off < 0 or off + cnt > sizes[buf]):
            rules.add("offset", st, "step",
                      f"{side}buf={buf} {side}off={off} cnt={cnt} leaves the buffer of "
                      f"{sizes[buf]} chunk(s)")
    return kind, cnt


def _dependency_rules(tb, i, bid, steps_of, depended, rules):
    """Step ``i`` of ``tb``: its dependency names an earlier existing step (recorded in
    ``depended``), and a ``nop`` carries one and is followed by a step with one."""
    st = tb.steps[i]
    a = st.attrs
    kind = a.get("type")
    depid, deps = _int(a, "depid"), _int(a, "deps")
    if depid is not None and depid >= 0:
        if depid not in steps_of:
            rules.add("dependency", st, "step", f"depid={depid} names no thread block")
        elif deps is None or not 0 <= deps < len(steps_of[depid]):
            rules.add("dependency", st, "step", f"deps={deps} names no step of block "
                                                f"{depid}")
        else:
            if depid == bid and deps >= i:
                rules.add("dependency", st, "step", "waits for a later step of its own "
                                                    "block (it would hang)")
            depended.add((depid, deps))
    if kind == "nop":
        if depid is None or depid < 0:
            rules.add("nop", st, "step", "a nop must carry a dependency (the runtime "
                      "counts nops only through the dependencies they carry)")
        nxt = tb.steps[i + 1] if i + 1 < len(tb.steps) else None
        if nxt is None or (nxt.attrs.get("type") != "nop" and
                           (_int(nxt.attrs, "depid") is None or
                            _int(nxt.attrs, "depid") < 0)):
            rules.add("nop", st, "step", "a nop must be followed by a step with a "
                      "dependency of its own (the runtime attaches nops' dependencies to it)")


def _runtime_steps(program, inplace, max_passes=200):
    """Schedule steps for the program's transfers from what the runtime runs, ignoring any step
    hints: ``{id(step element): (receive step, send step)}``, or ``None`` if the program cannot
    be run (the replay then says why) or no consistent steps exist.

    Every thread block runs its steps in order, a step waits for its dependency and a receive
    for its send, as in :func:`~topocoll.interop.replay.replay` (the same interleaving). A
    transfer's step is the least that respects, on each rank's storage cells in that order:
    a read after a write comes a step later, a write after a write a step later, a write after a
    read no earlier (reads before writes in a step); local ``cpy``/``re`` steps sit between
    steps. Transfers along one thread block never go back. Solved by iterating to the least
    fixpoint (a send's step is only known once its receive ran)."""
    try:
        coll, n, k, _ = program_layout(program)
        root_of = getattr(_replay_module, "_root_of", None)
        root = root_of(program, coll, n, None) if (root_of and coll.rooted) else (
            0 if coll.rooted else None)
        lay = _Layout(coll, n, k, root)
        blocks = read_blocks(program)
    except (KeyError, ValueError, TypeError, TopocollError):
        return None
    steps = {}        # transfer (the send op's key) -> step
    marks = {id(op.el): [None, None] for b in blocks for op in b.ops}   # (receive, send) steps
    for _ in range(max_passes):
        solver = _StepPass(lay, inplace, steps, marks)
        run_blocks(blocks, solver.step)
        if not solver.changed:
            break
    else:
        return None
    return {key: tuple(pair) for key, pair in marks.items()}


class _StepPass:
    """One pass of :func:`_runtime_steps` over the program's run: each transfer's least step
    given the steps the previous pass found (``steps``, updated in place; ``changed`` says
    whether any moved). A send queues its key ``(rank, block, op)``."""

    def __init__(self, lay, inplace, steps, marks):
        self.lay, self.inplace, self.steps, self.marks = lay, inplace, steps, marks
        self.changed = False
        self.wrote, self.read = {}, {}   # cell -> time of the last write / latest read since
        self.last = {}                   # (rank, bid, side) -> latest step on that block side
        self.send_min = {}

    def cells(self, rank, buf, off, cnt):
        if self.inplace:
            return [(rank,) + self.lay.alias(rank, buf, off + i) for i in range(cnt)]
        return [(rank, buf, off + i) for i in range(cnt)]

    def step(self, blk, op, incoming):
        """:func:`~.threadblocks.run_blocks`'s ``on_step``."""
        rank, kind = blk.rank, op.kind
        recv_step = None
        dst = []
        if kind in RECVS:
            recv_step, dst = self.receive(blk, op, incoming)
        elif kind in ("cpy", "re"):
            self.local(rank, op)
        if kind in SENDS and blk.send >= 0:
            return self.send(blk, op, recv_step, dst)
        return None

    def receive(self, blk, op, x):
        rank, bid, kind = blk.rank, blk.bid, op.kind
        wrote, read, last = self.wrote, self.read, self.last
        dst = self.cells(rank, op.dstbuf, op.dstoff, op.cnt) if kind in WRITES else []
        src = self.cells(rank, op.srcbuf, op.srcoff, op.cnt) if kind in REDUCES else []
        t = max([self.send_min[x], self.steps.get(x, 1), last.get((rank, bid, "r"), 1)]
                + [math.floor(wrote.get(c, 0)) + 1 for c in dst + src]
                + [math.ceil(read.get(c, 0)) for c in dst])
        if t != self.steps.get(x):
            self.steps[x] = t
            self.changed = True
        last[(rank, bid, "r")] = t
        last[x[:2] + ("s",)] = max(last.get(x[:2] + ("s",), 1), t)
        for c in src:
            read[c] = max(read.get(c, 0), t)
        for c in dst:
            wrote[c] = t
            read[c] = 0
        self.marks[id(op.el)][0] = t
        return t, dst

    def local(self, rank, op):
        """A ``cpy`` or ``re`` step: between steps of the schedule."""
        wrote, read, kind = self.wrote, self.read, op.kind
        src = self.cells(rank, op.srcbuf, op.srcoff, op.cnt)
        dst = self.cells(rank, op.dstbuf, op.dstoff, op.cnt)
        rd = src + (dst if kind == "re" else [])
        tau = max([0.5] + [math.floor(wrote.get(c, 0)) + 0.5 for c in rd + dst]
                  + [math.floor(read.get(c, 0)) + 0.5 for c in dst])
        for c in rd:
            read[c] = max(read.get(c, 0), tau)
        for c in dst:
            wrote[c] = tau
            read[c] = 0

    def send(self, blk, op, recv_step, dst):
        rank, bid, kind = blk.rank, blk.bid, op.kind
        x = (rank, bid, id(op))
        if kind == "s":
            src = self.cells(rank, op.srcbuf, op.srcoff, op.cnt)
            lo = max([1] + [math.floor(self.wrote.get(c, 0)) + 1 for c in src])
        else:
            src = dst if kind in WRITES else []
            lo = recv_step + 1
        lo = max(lo, self.last.get((rank, bid, "s"), 1))
        self.send_min[x] = lo
        t = max(lo, self.steps.get(x, lo))
        self.last[(rank, bid, "s")] = t
        for c in src:
            self.read[c] = max(self.read.get(c, 0), t)
        self.marks[id(op.el)][1] = t
        return x


def _with_steps(program, steps, copies=True):
    """A copy of ``program`` whose sends and receives carry ``steps`` as their step hints (any
    hints of its own removed); without ``steps``, just without hints."""
    def step_of(st):
        a = {k: v for k, v in st.attrs.items() if k not in (HINT, SEND_HINT)}
        r, s = (steps or {}).get(id(st), (None, None))
        kind = a.get("type")
        if kind in SENDS and kind not in RECVS and s is not None:
            a[HINT] = str(s)
        elif kind in RECVS and r is not None:
            a[HINT] = str(r)
            if kind in SENDS and s is not None:
                a[SEND_HINT] = str(s)
        return Step(a, line=st.line, tag=st.tag)

    gpus = [Gpu(dict(g.attrs), [ThreadBlock(dict(tb.attrs), [step_of(st) for st in tb.steps],
                                            line=tb.line) for tb in g.blocks],
                [step_of(c) for c in g.copies] if copies else [], line=g.line)
            for g in program.gpus]
    return Program(dict(program.attrs), gpus, line=program.line, preamble=program.preamble,
                   source=program.source, quirks=list(program.quirks))


def _has_hints(program):
    return any(HINT in st.attrs or SEND_HINT in st.attrs
               for g in program.gpus for tb in g.blocks for st in tb.steps)


def lint_msccl(program, *, topology=None, max_errors=50, capacity=None):
    """Check an MSCCL program against the runtime's rules and for correctness.

    Parameters
    ----------
    program : Program, str or bytes
        A parsed program or the XML text.
    topology : Topology, optional
        The network the imported schedule is placed on (default: the links it uses).
    capacity : int, optional
        Units a connection holds before its sender blocks (default: the ``proto``'s,
        :data:`~topocoll.interop.export.CAPACITY`); a program that needs more is a ``buffers``
        error naming the blocks that wait on each other.

    Returns
    -------
    LintReport
        ``status`` 0 when the runtime accepts the file and it is a correct collective, else 3.
    """
    text = None
    if not hasattr(program, "gpus"):
        text = program
        program = parse_msccl(program)
    else:
        text = getattr(program, "text", None) or getattr(program, "raw", None)
        if text is None:
            text = _source_text(program)
    rules = _Rules(max_errors)
    if text is not None:
        _lexical(text, rules)
    _static(program, rules)
    problems, correct, schedule, collective, modes = _correctness(program, topology)
    if capacity is not None and (isinstance(capacity, bool) or not isinstance(capacity, int)
                                 or capacity < 1):
        raise TopocollError(f"capacity must be a positive integer, got {capacity!r}")
    if capacity is None:
        capacity = CAPACITY.get(program.attrs.get("proto", "Simple"), CAPACITY["Simple"])
    min_capacity = None
    if not rules.found:
        min_capacity = _buffer_rule(program, capacity, rules)
    if correct and rules.warnings and any(g.copies for g in program.gpus):
        _copy_warning(program, modes, collective, topology, rules)
    status = Status.SUCCESS if not rules.found and correct else Status.INVALID
    if not rules.found and correct:
        message = "the runtime accepts it and it is a correct " + collective
    else:
        parts = []
        if rules.found:
            parts.append(f"{len(rules.found)} runtime rule(s) broken")
        if correct is False or correct is None:
            parts.append("not a correct " + (collective or "collective"))
        message = "; ".join(parts)
    try:
        ngpus = int(program.attrs.get("ngpus", len(program.gpus)))
    except ValueError:
        ngpus = len(program.gpus)
    return LintReport(status=status, message=message, errors=rules.found,
                      warnings=rules.warnings, correct=correct,
                      problems=problems, schedule=schedule, collective=collective, ngpus=ngpus,
                      min_capacity=min_capacity, capacity=capacity)


def _correctness(program, topology):
    """Run the program as the runtime does: ``(problems, correct, schedule, collective,
    modes)``; ``correct`` is ``None`` (and ``modes`` may be) when it cannot be run."""
    problems = []
    correct = None
    schedule = None
    modes = None
    collective = program.attrs.get("coll", "")
    try:
        modes = program_modes(program)
        hinted = _has_hints(program)
        for inplace in modes or [False]:
            # judge what the runtime runs: no hints, steps from the blocks' dependencies
            run = replay(_with_steps(program, _runtime_steps(program, inplace)),
                         inplace=inplace, topology=topology)
            label = "in-place" if inplace else "out-of-place"
            problems += [f"{label}: {m}" for _, m in run.hang[:10]]
            problems += [f"{label}: {m}" for _, m in run.problems[:10]]
            problems += [f"{label}: {m}" for m in run.wrong_outputs[:10]]
            if schedule is None:
                schedule = run.schedule
                unexpressed = run.unexpressed
        collective = schedule.collective.name
        if not problems:
            report = verify(schedule)
            problems += [f"schedule: {v.message}" for v in report.errors[:10]]
            if not report.valid and unexpressed:
                problems.append(f"schedule: {unexpressed} transfer(s) send less than their "
                                "sender holds in topocoll's model (a partial sum kept apart "
                                "from the rank's running sum), so the imported schedule "
                                "differs from the program there")
        correct = not problems
        if correct and hinted:
            # step hints only refine timing: the schedule keeps them where they are consistent
            run = replay(program, inplace=(modes or [False])[0], topology=topology)
            if run.ok and verify(run.schedule).valid:
                schedule = run.schedule
    except TopocollError as exc:
        problems.append(f"cannot run the program: {exc}")
    return problems, correct, schedule, collective, modes


def _buffer_rule(program, capacity, rules):
    """The least connection capacity the program needs (:func:`buffer_capacity`); a
    ``buffers`` error naming the blocks that wait on each other when ``capacity`` is short."""
    min_capacity, blocked = buffer_capacity(program, capacity=capacity)
    if blocked:
        first, pc, _ = blocked[0]
        ops = first[5]
        cycle = " -> ".join(f"rank {b[0]} block {b[1]} step {p} ({b[5][p][0]}) {why}"
                            for b, p, why in blocked[:8])
        rules.add("buffers", ops[pc][6], "step",
                  f"with connections that hold {capacity} unit(s) (proto="
                  f"{program.attrs.get('proto', 'Simple')}: a step of cnt chunks takes cnt) "
                  f"the program needs {min_capacity}: these thread blocks wait on each "
                  f"other forever: {cycle}")
    return min_capacity


def _copy_warning(program, modes, collective, topology, rules):
    """Add to the ``<copy>`` warning whether the program is still correct without them (what
    the runtime runs)."""
    bare = _with_steps(program, None, copies=False)
    try:
        run = replay(bare, inplace=(modes or [False])[-1], topology=topology)
        first = (run.hang + run.problems)[:1]
        why = first[0][1] if first else (run.wrong_outputs[:1] or [None])[0]
    except TopocollError as exc:
        why = str(exc)
    if why:
        w = rules.warnings[0]
        rules.warnings[0] = Finding(w.rule, w.line, w.element, w.message + "; without them "
                                    f"the program is not a correct {collective} ({why})")
