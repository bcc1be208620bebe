"""MSCCL XML programs: the element tree, a reader that keeps line numbers, and a writer.

An MSCCL program (the format msccl-executor-nccl, RCCL's MSCCL path and the simulators that
read MSCCL files execute) is one ``<algo>`` element holding a ``<gpu>`` per rank; a GPU holds
thread blocks (``<tb>``), and a thread block runs its ``<step>`` elements in order::

    <algo name="ring" proto="Simple" nchannels="1" nchunksperloop="3" ngpus="3" coll="allgather"
          inplace="1" outofplace="1" minBytes="0" maxBytes="9223372036854775807">
      <gpu id="0" i_chunks="1" o_chunks="3" s_chunks="0">
        <tb id="0" send="1" recv="-1" chan="0">
          <step s="0" type="s" srcbuf="i" srcoff="0" dstbuf="o" dstoff="0" cnt="1" depid="-1"
                deps="-1" hasdep="0"/>
    ...

This module only reads and writes the tree: :mod:`~topocoll.interop.lint` says whether the
runtime accepts it, :mod:`~topocoll.interop.replay` what it computes. The reader is tolerant
(missing attributes stay missing, so that lint can name them); the writer emits exactly the text
the runtime's own hand-written parser reads: no XML declaration, double quotes, one space between
attributes, plain decimal integers.

>>> prog = parse_msccl('<algo name="x" ngpus="1" coll="allgather">\\n<gpu id="0"/>\\n</algo>')
>>> prog.attrs["coll"], len(prog.gpus), prog.gpus[0].line
('allgather', 1, 2)
"""

import re
import xml.parsers.expat
from dataclasses import dataclass, field

from ..errors import ScheduleFormatError

__all__ = ["Program", "Gpu", "ThreadBlock", "Step", "parse_msccl", "format_msccl",
           "ALGO_ATTRS", "GPU_ATTRS", "TB_ATTRS", "STEP_ATTRS", "NO_LIMIT", "STEP_TYPES",
           "SENDS", "RECVS", "REDUCES", "READS", "WRITES"]

#: Attributes of each element in the order the writer puts them (the runtime requires all).
ALGO_ATTRS = ("name", "proto", "nchannels", "nchunksperloop", "ngpus", "coll", "inplace",
              "outofplace", "minBytes", "maxBytes")
GPU_ATTRS = ("id", "i_chunks", "o_chunks", "s_chunks")
TB_ATTRS = ("id", "send", "recv", "chan")
STEP_ATTRS = ("s", "type", "srcbuf", "srcoff", "dstbuf", "dstoff", "cnt", "depid", "deps",
              "hasdep")
#: ``maxBytes`` that admits every message size: the largest 64-bit signed integer.
NO_LIMIT = 2**63 - 1

#: The step types the runtime executes, and what each does: sends to the block's send peer,
#: receives from its recv peer, reduces, reads ``srcbuf``/``srcoff``, writes ``dstbuf``/``dstoff``.
STEP_TYPES = ("s", "r", "rcs", "rrs", "rrc", "rrcs", "cpy", "re", "nop")
SENDS = frozenset({"s", "rcs", "rrs", "rrcs"})
RECVS = frozenset({"r", "rcs", "rrs", "rrc", "rrcs"})
REDUCES = frozenset({"rrs", "rrc", "rrcs", "re"})
READS = frozenset({"s", "rrs", "rrc", "rrcs", "cpy", "re"})
WRITES = frozenset({"r", "rcs", "rrc", "rrcs", "cpy", "re"})


@dataclass
class Step:
    """One ``<step>`` (or an older dialect's ``<copy>``): attributes as read, and its line."""

    attrs: dict
    line: int = 0
    tag: str = "step"

    def get(self, name, default=None):
        return self.attrs.get(name, default)


@dataclass
class ThreadBlock:
    attrs: dict
    steps: list = field(default_factory=list)
    line: int = 0


@dataclass
class Gpu:
    attrs: dict
    blocks: list = field(default_factory=list)
    copies: list = field(default_factory=list)   # older dialect: <copy> elements of the GPU
    line: int = 0


@dataclass
class Program:
    """An MSCCL program: the ``<algo>`` attributes and its GPUs, each element with its line."""

    attrs: dict
    gpus: list = field(default_factory=list)
    line: int = 0
    #: what came before ``<algo>`` in the text: "" (nothing), "declaration", "other"
    preamble: str = ""
    #: the file's name, for messages
    source: str = "<xml>"
    #: ``(line, tag, message)``: text the runtime's hand-written parser misreads although it is
    #: well-formed XML (single quotes, attributes split over lines or by tabs)
    quirks: list = field(default_factory=list)

    def where(self, element):
        return f"{self.source}:{element.line}"


class _Builder:
    def __init__(self, parser, source):
        self.parser = parser
        self.source = source
        self.program = None
        self.stack = []

    def _fail(self, message):
        raise ScheduleFormatError(f"{self.source}:{self.parser.CurrentLineNumber}: {message}")

    def start(self, tag, attrs):
        line = self.parser.CurrentLineNumber
        parent = self.stack[-1] if self.stack else None
        if parent is None:
            if tag != "algo":
                self._fail(f"the first element must be <algo>, not <{tag}>")
            node = self.program = Program(dict(attrs), line=line, source=self.source)
        elif isinstance(parent, Program):
            node = Gpu(dict(attrs), line=line) if tag == "gpu" else None
            if node is not None:
                parent.gpus.append(node)
        elif isinstance(parent, Gpu):
            if tag == "tb":
                node = ThreadBlock(dict(attrs), line=line)
                parent.blocks.append(node)
            elif tag == "copy":
                node = Step(dict(attrs), line=line, tag="copy")
                parent.copies.append(node)
            else:
                node = None
        elif isinstance(parent, ThreadBlock):
            node = Step(dict(attrs), line=line, tag=tag) if tag in ("step", "op") else None
            if node is not None:
                parent.steps.append(node)
        else:
            node = None
        if node is None:
            self._fail(f"unexpected element <{tag}> inside "
                       f"<{_tag_of(parent)}>")
        self.stack.append(node)

    def end(self, tag):
        self.stack.pop()


def _tag_of(node):
    return {Program: "algo", Gpu: "gpu", ThreadBlock: "tb", Step: "step"}.get(type(node), "?")


def parse_msccl(text, *, source="<xml>"):
    """Read MSCCL XML text (str or bytes) into a :class:`Program`.

    Malformed or truncated XML raises :class:`~topocoll.errors.ScheduleFormatError` naming the
    line and what is wrong there.

    >>> parse_msccl('<algo name="x">\\n<gpu id="0">\\n')
    Traceback (most recent call last):
    ...
    topocoll.errors.ScheduleFormatError: <xml>:3: not well-formed XML: no element found (the file ends inside <gpu> opened on line 2)
    """
    data = text.encode() if isinstance(text, str) else bytes(text)
    parser = xml.parsers.expat.ParserCreate()
    builder = _Builder(parser, source)
    parser.StartElementHandler = builder.start
    parser.EndElementHandler = builder.end
    try:
        parser.Parse(data, True)
    except xml.parsers.expat.ExpatError as exc:
        message = xml.parsers.expat.ErrorString(exc.code)
        open_ = builder.stack[-1] if builder.stack else None
        hint = ""
        if open_ is not None:
            hint = (f" (the file ends inside <{_tag_of(open_)}> opened on line {open_.line})"
                    if "no element found" in message else
                    f" (inside <{_tag_of(open_)}> opened on line {open_.line})")
        raise ScheduleFormatError(f"{source}:{exc.lineno}: not well-formed XML: {message}{hint}") \
            from None
    if builder.program is None:
        raise ScheduleFormatError(f"{source}: no <algo> element")
    head = _COMMENTS.sub(b"", data).lstrip()
    builder.program.preamble = ("" if head.startswith(b"<algo") else
                                "declaration" if head.startswith(b"<?xml") else "other")
    builder.program.quirks = _quirks(data)
    return builder.program


_COMMENTS = re.compile(rb"\A(\s*<!--.*?-->)+", re.S)
_TAG = re.compile(rb"<(algo|gpu|tb|step)\b([^>]*)>")


def _quirks(data):
    found = []
    line, pos = 1, 0
    for m in _TAG.finditer(data):
        body = m.group(2)
        if not (b"'" in body or b"\n" in body or b"\r" in body or b"\t" in body or b" =" in body
                or b"= " in body):
            continue
        line += data.count(b"\n", pos, m.start())
        pos = m.start()
        tag = m.group(1).decode()
        if re.search(rb"=\s*'", body):
            found.append((line, tag, "attribute values must be in double quotes (the runtime's "
                                     "parser reads a single-quoted value wrongly)"))
        if re.search(rb"[\n\r\t]", body.rstrip(b"/ ")) or re.search(rb"\s=|=\s", body):
            found.append((line, tag, "attributes must be separated by single spaces on the "
                                     "element's line, with no space around '=' (the runtime's "
                                     "parser stops reading attributes otherwise)"))
    return found


def _attr_text(attrs, order):
    keys = [k for k in order if k in attrs] + [k for k in attrs if k not in order]
    return " ".join(f'{k}="{_escape(attrs[k])}"' for k in keys)


def _escape(value):
    return str(value).replace("&", "&amp;").replace("<", "&lt;").replace('"', "&quot;")


def format_msccl(program):
    """The XML text of ``program`` as the runtime reads it (see the module docstring)."""
    out = [f"<algo {_attr_text(program.attrs, ALGO_ATTRS)}>"]
    for gpu in program.gpus:
        out.append(f"  <gpu {_attr_text(gpu.attrs, GPU_ATTRS)}>")
        for tb in gpu.blocks:
            out.append(f"    <tb {_attr_text(tb.attrs, TB_ATTRS)}>")
            out.extend(f"      <step {_attr_text(st.attrs, STEP_ATTRS)}/>" for st in tb.steps)
            out.append("    </tb>")
        out.append("  </gpu>")
    out.append("</algo>")
    return "\n".join(out) + "\n"
