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
  match in number and size;
* **correctness**: the program is run symbolically (:mod:`~topocoll.interop.replay`): a
  program that cannot finish hangs; then the output buffers must hold what the collective
  promises, and the schedule read off it must pass :func:`~topocoll.schedule.verify`.

>>> from topocoll.topology import topology
>>> from topocoll.synth import generate
>>> from topocoll.interop.export import export_msccl
>>> report = lint_msccl(export_msccl(generate(topology("ring:4"), "allgather", "bfb")).program)
>>> report.valid, report.errors
(True, [])
"""

import re
from dataclasses import dataclass, field

from ..errors import TopocollError
from ..results import Result, Status
from ..schedule.verify import verify
from .export import LIMITS, PROTOCOLS
from .layout import RUNTIME_SPELLINGS, RUNTIME_NAMES
from .mscclxml import (ALGO_ATTRS, GPU_ATTRS, READS, RECVS, SENDS, STEP_ATTRS, STEP_TYPES,
                       TB_ATTRS, WRITES, parse_msccl)
from .replay import replay

__all__ = ["lint_msccl", "LintReport", "Finding", "STEP_TYPES"]

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
    correct : bool or None
        Whether the program performs its collective (None if it could not be run).
    problems : list of str
        What is wrong with what it computes (hangs, double counts, wrong outputs, and the
        verifier's violations of the schedule read off it).
    schedule : Schedule or None
        The schedule read off the program.
    """

    errors: list = field(default_factory=list)
    correct: bool | None = None
    problems: list = field(default_factory=list)
    schedule: object = field(default=None, repr=False)
    collective: str = ""
    ngpus: int = 0

    @property
    def valid(self):
        """The runtime accepts it and it is a correct collective."""
        return not self.errors and bool(self.correct)

    def to_dict(self):
        d = super().to_dict()
        d.update({"valid": self.valid, "runtime_errors": [f.to_dict() for f in self.errors],
                  "correct": self.correct, "problems": list(self.problems),
                  "collective": self.collective, "ngpus": self.ngpus})
        if self.schedule is not None:
            d["steps"] = self.schedule.num_steps
            d["transfers"] = self.schedule.num_transfers
        return d


class _Rules:
    def __init__(self, limit):
        self.found = []
        self.limit = limit

    def add(self, rule, element, tag, message):
        if len(self.found) < self.limit:
            self.found.append(Finding(rule, element.line, tag, message))


def _int(attrs, name):
    try:
        return int(attrs[name])
    except (KeyError, ValueError):
        return None


def _static(program, rules):
    a = program.attrs
    if program.preamble:
        rules.add("first-element", program, "algo",
                  "the file must start with <algo>: the runtime reads the first element's "
                  "attributes" + (" and an XML declaration comes first" if
                                  program.preamble == "declaration" else ""))
    for line, tag, message in program.quirks:
        if len(rules.found) < rules.limit:
            rules.found.append(Finding("text", line, tag, message))
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
                if len(k) > 255 or len(str(v)) > 255:
                    rules.add("length", el, tag, f"{k}: names and values are at most 255 "
                                                 "characters")
            if len(el.attrs) > 16:
                rules.add("attributes", el, tag, f"{len(el.attrs)} attributes; the runtime "
                                                 "reads at most 16")
    for g in program.gpus:
        if g.copies:
            rules.add("element", g.copies[0], "copy", "<copy> elements are an older dialect the "
                                                      "runtime ignores; use cpy steps")
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
    if minb is not None and maxb is not None and (minb < 0 or maxb < minb):
        rules.add("sizes", program, "algo", f"minBytes={minb} and maxBytes={maxb} admit no size")
    nch = _int(a, "nchannels")
    if nch is not None and not 1 <= nch <= LIMITS["channels"]:
        rules.add("channels", program, "algo", f"nchannels={nch} must be 1..{LIMITS['channels']}")
    ngpus = _int(a, "ngpus")
    if len(program.gpus) > LIMITS["subs"]:
        rules.add("size", program, "algo", f"{len(program.gpus)} <gpu> elements; the parser holds "
                                           f"{LIMITS['subs']}")
    ids = [_int(g.attrs, "id") for g in program.gpus]
    if ngpus is not None:
        seen = set()
        for g, i in zip(program.gpus, ids):
            if i is None:
                continue
            if not 0 <= i < ngpus:
                rules.add("gpu-id", g, "gpu", f"id {i} is not a rank 0..{ngpus - 1}")
            elif i in seen:
                rules.add("gpu-id", g, "gpu", f"rank {i} appears twice")
            seen.add(i)
        absent = sorted(set(range(ngpus)) - seen)
        if absent:
            rules.add("gpu-id", program, "algo", f"ngpus={ngpus} but rank(s) "
                      f"{', '.join(map(str, absent[:8]))}{' ...' if len(absent) > 8 else ''} "
                      "have no <gpu> (they would run nothing and their peers would hang)")
    sends, recvs = {}, {}
    for g, rank in zip(program.gpus, ids):
        _gpu(program, g, rank, ngpus, nch, rules, sends, recvs)
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
    sizes = {"i": _int(g.attrs, "i_chunks"), "o": _int(g.attrs, "o_chunks"),
             "s": _int(g.attrs, "s_chunks")}
    if sizes["s"] is not None and sizes["s"] < 0:
        rules.add("buffers", g, "gpu", "s_chunks must not be negative")
    if len(g.blocks) > LIMITS["subs"]:
        rules.add("size", g, "gpu", f"{len(g.blocks)} thread blocks; at most {LIMITS['subs']}")
    elements = 1 + len(program.gpus) + len(g.blocks) + sum(len(tb.steps) for tb in g.blocks)
    if elements > LIMITS["nodes"]:
        rules.add("size", g, "gpu", f"rank {rank}'s part of the file has {elements} elements; the "
                                    f"runtime's parser holds {LIMITS['nodes']}")
    bids = [_int(tb.attrs, "id") for tb in g.blocks]
    valid_bids = {b for b in bids if b is not None}
    if sorted(valid_bids) != list(range(len(valid_bids))) or len(valid_bids) != len(bids):
        if len(set(b for b in bids if b is not None)) != len([b for b in bids if b is not None]):
            rules.add("tb-id", g, "gpu", "thread block ids repeat")
        else:
            rules.add("tb-id", g, "gpu", f"thread block ids must be 0..{len(bids) - 1} without "
                                         f"gaps, got {sorted(valid_bids)[:10]}")
    per_chan = {}
    steps_of = {b: tb.steps for b, tb in zip(bids, g.blocks) if b is not None}
    depended = set()
    for tb, bid in zip(g.blocks, bids):
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
        for i, st in enumerate(tb.steps):
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


def lint_msccl(program, *, topology=None, max_errors=50):
    """Check an MSCCL program against the runtime's rules and for correctness.

    Parameters
    ----------
    program : Program, str or bytes
        A parsed program or the XML text.
    topology : Topology, optional
        The network the imported schedule is placed on (default: the links it uses).

    Returns
    -------
    LintReport
        ``status`` 0 when the runtime accepts the file and it is a correct collective, else 3.
    """
    if not hasattr(program, "gpus"):
        program = parse_msccl(program)
    rules = _Rules(max_errors)
    _static(program, rules)
    problems = []
    correct = None
    schedule = None
    collective = program.attrs.get("coll", "")
    try:
        modes = []
        if program.attrs.get("outofplace", "1") != "0":
            modes.append(False)
        if program.attrs.get("inplace") == "1":
            modes.append(True)
        for inplace in modes or [False]:
            run = replay(program, inplace=inplace, topology=topology)
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
    except TopocollError as exc:
        problems.append(f"cannot run the program: {exc}")
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
    return LintReport(status=status, message=message, errors=rules.found, correct=correct,
                      problems=problems, schedule=schedule, collective=collective, ngpus=ngpus)
