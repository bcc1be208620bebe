"""The runtime's rules over an MSCCL program's markup and elements (the first kind of
:func:`~.lint.lint_msccl`'s findings; docs/interop.md lists them): what msccl-executor-nccl's
parser refuses or what makes its kernel hang, each finding naming the element and its line.

>>> from topocoll.interop.mscclxml import parse_msccl
>>> found = Findings(50)
>>> static_rules(parse_msccl('<algo name="x" proto="Fast"/>'), found)
>>> [f.rule for f in found.found][:2]
['attributes', 'proto']
"""

import os
import re
from dataclasses import dataclass

import numpy as np

from ..errors import TopocollError
from ..fileio import read_input
from ..schedule.verify import first_missing
from .export_limits import LIMITS, PROTOCOLS, WIDTHS
from .layout import RUNTIME_SPELLINGS, RUNTIME_NAMES
from .mscclxml import (ALGO_ATTRS, GPU_ATTRS, READS, RECVS, SENDS, STEP_ATTRS, STEP_TYPES,
                       TB_ATTRS, WRITES)

__all__ = ["Finding", "Findings", "lexical_rules", "source_text", "static_rules"]

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


class Findings:
    """The findings of one lint: ``found``, the broken rules (at most ``limit``), and
    ``warnings``."""

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


def lexical_rules(text, rules):
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


def source_text(program):
    """The bytes of the file a parsed program came from, if it names one that still exists (the
    tree keeps no whitespace outside tags, and tabs there are the runtime's concern too)."""
    source = getattr(program, "source", None)
    if not source or source.startswith("<") or not os.path.isfile(source):
        return None
    try:
        return read_input(source, starts=b"<", what="MSCCL XML file")
    except (OSError, TopocollError):
        return None


def static_rules(program, rules):
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

