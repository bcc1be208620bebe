"""Composite topology specs: operators applied to specs, nested to any depth, and the explicit
digraphs the finder's optimizer makes.

Every name the finder prints (``line(dcirculant:8:1,3)``, ``degree(complete:4,m=2)``,
``power(ring:3,n=2)``, ``product(complete:2,hamming:2,3)``, ``line(rewired:16,4:...)``) is a
spec that :func:`topocoll.topology.topology` builds, and it builds the very digraph the finder
evaluated: the operators are the transforms of :mod:`topocoll.topology.transforms` that the
expansions of :mod:`topocoll.synth.expansions` use, so node numbering and link order agree.

Grammar (whitespace is allowed around every token; operator names are case-insensitive;
positions in error messages count characters from 0)::

    spec      = composite | leaf
    composite = "line"    "(" spec ")"
              | "degree"  "(" spec "," "m" "=" INT ")"
              | "power"   "(" spec "," "n" "=" INT ")"
              | "product" "(" spec "," spec { "," spec } ")"
              | "bidir"   "(" spec ")"
              | "zigzag"  "(" spec "," spec ")"
    leaf      = FAMILY ":" ARGS                   (a family spec, e.g. dcirculant:8:1,3)
              | FILE                              (a .json/.graphml topology file)

A leaf's arguments may hold commas (``hamming:2,3``), so inside a composite a leaf ends at a
``)`` or at the first ``,`` that is followed by another spec (``NAME:``, ``NAME(`` or a file
name) or by a parameter (``NAME=``).

>>> node = parse_composite("line( degree(complete:4, m=2) )")
>>> node.op, node.specs[0]
('line', Composite(op='degree', specs=('complete:4',), params=(('m', 2),)))
>>> format_spec(node)
'line(degree(complete:4,m=2))'
>>> parse_composite("product(complete:2,hamming:2,3)").specs
('complete:2', 'hamming:2,3')
>>> try:
...     parse_composite("line(ring:4")
... except SpecError as err:
...     print(str(err).split(": ", 1)[1])
unbalanced parenthesis: the '(' at position 4 is never closed
"""

import base64
import binascii
import math
import os
import re
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..errors import SpecError
from ..units import MAX_DIGITS
from . import transforms
from .families.checks import as_int, at_least, check_size, make_topology



def shown_spec(text, limit=80):
    """``text`` quoted for an error message, cut to ``limit`` characters: a hostile spec of
    thousands of characters still gives a one-line error.

    >>> shown_spec("ring:4")
    "'ring:4'"
    >>> shown_spec("ring:" + "9" * 500, limit=20)
    "'ring:999999999...' (505 characters)"
    """
    quoted = repr(text)
    if len(quoted) <= limit:
        return quoted
    return f"{quoted[:limit - 5]}...' ({len(text)} characters)"

__all__ = ["Operator", "Composite", "OPERATORS", "parse_composite", "format_spec",
           "is_composite", "build_composite", "predicted_size", "rewired_spec", "rewired_graph",
           "decode_heads"]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")
_INT = re.compile(r"[+-]?\d+")
_FILE_SUFFIXES = (".json", ".graphml", ".json.gz", ".graphml.gz")


@dataclass(frozen=True)
class Operator:
    """One operator of the composite spec grammar.

    Attributes
    ----------
    name : str
        The word before ``(``, e.g. ``"degree"``.
    params : str
        What goes inside the parentheses, e.g. ``"SPEC,m=M"``.
    summary : str
        One line saying what it builds.
    example : str
        A spec using it, e.g. ``"degree(complete:4,m=2)"``.
    transform : str
        The function of :mod:`topocoll.topology.transforms` that builds it, or
        ``"module.function"`` of :mod:`topocoll.topology.families` (``zigzag.zigzag_product``).
    keys : tuple of str
        The parameters after the specs, each required (``("m",)``).
    min_specs, max_specs : int
        How many specs it takes (``max_specs`` None: no limit).
    """

    name: str
    params: str
    summary: str
    example: str
    transform: str
    keys: tuple = ()
    min_specs: int = 1
    max_specs: int = 1

    @property
    def usage(self):
        return f"use {self.name}({self.params}), e.g. {self.example}"

    @property
    def builder(self) -> Callable:
        if "." in self.transform:   # "module.function" of the families package
            import importlib        # deferred: the family module is loaded only when used

            module, name = self.transform.rsplit(".", 1)
            return getattr(importlib.import_module(f"{__package__}.families.{module}"), name)
        return getattr(transforms, self.transform)


#: The operators, in the order ``topocoll topologies`` lists them.
OPERATORS = {op.name: op for op in (
    Operator("line", "SPEC", "line graph L(G): a node per link of G, d*N nodes of degree d",
             "line(dcirculant:8:1,3)", "line_graph"),
    Operator("degree", "SPEC,m=M", "degree expansion: M copies of every node, every link "
             "replaced by M*M links; M*N nodes of degree M*d", "degree(complete:4,m=2)",
             "degree_expansion", keys=("m",)),
    Operator("power", "SPEC,n=P", "Cartesian power G^P: N^P nodes of degree P*d",
             "power(ring:3,n=2)", "cartesian_power", keys=("n",)),
    Operator("product", "SPEC,SPEC,...", "Cartesian product of two or more specs (node ids mixed "
             "radix, first factor most significant)", "product(complete:2,hamming:2,3)",
             "cartesian_product", min_specs=2, max_specs=None),
    Operator("bidir", "SPEC", "bidirectional union G + G^T: every link and its reverse",
             "bidir(uniring:4)", "bidirectional_union"),
    Operator("zigzag", "SPEC,SPEC", "zig-zag product (Reingold-Vadhan-Wigderson) of a "
             "D-regular G and a d-regular H on D nodes: N*D nodes of degree d^2",
             "zigzag(complete:5,ring:4)", "zigzag.zigzag_product", min_specs=2, max_specs=2),
)}


@dataclass(frozen=True)
class Composite:
    """A parsed composite spec: ``op`` applied to ``specs`` (each a Composite or a leaf spec
    string) with integer ``params`` (``(("m", 2),)``)."""

    op: str
    specs: tuple
    params: tuple = ()

    def __str__(self):
        return format_spec(self)


def format_spec(node):
    """The canonical text of a parsed spec (no whitespace, operators in lower case): the name
    :func:`~topocoll.topology.topology` gives the topology it builds when the leaves are
    canonical.

    >>> format_spec(Composite("power", ("ring:3",), (("n", 2),)))
    'power(ring:3,n=2)'
    """
    if isinstance(node, str):
        return node.strip()
    inner = [format_spec(s) for s in node.specs] + [f"{k}={v}" for k, v in node.params]
    return f"{node.op}({','.join(inner)})"


def is_composite(text):
    """Whether ``text`` is meant as a composite spec: a known operator followed by ``(``, or
    any word followed by ``(`` with the text ending in ``)`` (an unknown operator, refused by
    :func:`parse_composite` with a message naming it).

    >>> is_composite("line(ring:4)"), is_composite("ring:4"), is_composite("run(1).json")
    (True, False, False)
    """
    text = text.strip()
    m = _NAME.match(text)
    if m is None:
        return False
    rest = text[m.end():].lstrip()
    if not rest.startswith("("):
        return False
    return m.group().lower() in OPERATORS or text.endswith(")")


class _Parser:
    """Recursive descent over one spec string; ``pos`` indexes ``text``."""

    def __init__(self, text):
        self.text = text
        self.pos = 0

    def fail(self, message):
        raise SpecError(f"bad topology spec {shown_spec(self.text)}: {message}")

    def skip(self, pos=None):
        pos = self.pos if pos is None else pos
        while pos < len(self.text) and self.text[pos].isspace():
            pos += 1
        return pos

    def _word_then(self, pos, chars):
        """Whether a NAME followed (after whitespace) by one of ``chars`` starts at ``pos``."""
        pos = self.skip(pos)
        m = _NAME.match(self.text, pos)
        if m is None:
            return False
        end = self.skip(m.end())
        return end < len(self.text) and self.text[end] in chars

    def starts_item(self, pos):
        """Whether the text after a ``,`` at ``pos - 1`` starts a new spec or a parameter
        (rather than continuing a leaf's arguments, as in ``hamming:2,3``)."""
        if self._word_then(pos, ":(="):
            return True
        piece = re.match(r"[^,()]*", self.text[pos:]).group().strip()
        return "/" in piece or os.sep in piece or piece.lower().endswith(_FILE_SUFFIXES)

    def spec(self):
        self.pos = start = self.skip()
        m = _NAME.match(self.text, start)
        if m is not None:
            paren = self.skip(m.end())
            if paren < len(self.text) and self.text[paren] == "(":
                return self.composite(m.group(), start, paren)
        return self.leaf()

    def leaf(self):
        start, i, text = self.pos, self.pos, self.text
        while i < len(text):
            c = text[i]
            if c == ")" or (c == "," and self.starts_item(i + 1)):
                break
            if c == "(":
                self.fail(f"unexpected '(' at position {i} inside the family spec "
                          f"{text[start:i].strip()!r}; only the operators "
                          f"{', '.join(OPERATORS)} take parentheses")
            i += 1
        leaf = text[start:i].strip()
        if not leaf:
            self.fail(f"expected a spec at position {start}, got "
                      f"{text[start] if start < len(text) else 'the end'!r}")
        self.pos = i
        return leaf

    def param(self, op, seen):
        start = self.pos = self.skip()
        m = _NAME.match(self.text, start)
        key = m.group().lower()
        if key not in op.keys:
            takes = (f"its parameter is {', '.join(op.keys)}" if op.keys
                     else "it takes no parameters")
            self.fail(f"unknown parameter {m.group()!r} of {op.name} at position {start} "
                      f"({takes}); {op.usage}")
        if key in seen:
            self.fail(f"parameter {key} of {op.name} given twice, at position {start}")
        eq = self.skip(m.end())                       # the '=' (checked by starts_item)
        val_at = self.skip(eq + 1)
        v = _INT.match(self.text, val_at)
        if v is None:
            self.fail(f"parameter {key} of {op.name} needs a whole number at position {val_at}; "
                      f"{op.usage}")
        if len(v.group()) > MAX_DIGITS:
            self.fail(f"parameter {key} of {op.name} has {len(v.group())} digits; at most "
                      f"{MAX_DIGITS}")
        value = int(v.group())
        if value < 1:
            self.fail(f"parameter {key} of {op.name} must be >= 1, got {value} at position "
                      f"{val_at}")
        self.pos = v.end()
        seen[key] = value

    def composite(self, word, start, paren):
        op = OPERATORS.get(word.lower())
        if op is None:
            self.fail(f"unknown operator {word!r} at position {start}; the operators are "
                      f"{', '.join(OPERATORS)}")
        self.pos = paren + 1
        specs, params = [], {}
        while True:
            at = self.skip()
            if self._word_then(at, "="):
                if not specs:
                    self.fail(f"{op.name} needs a spec before its parameters, at position {at}; "
                              f"{op.usage}")
                self.param(op, params)
            elif params:
                self.fail(f"expected a parameter KEY=VALUE at position {at}: the specs come "
                          f"first; {op.usage}")
            else:
                if op.max_specs is not None and len(specs) == op.max_specs:
                    self.fail(f"{op.name} takes {op.max_specs} spec, got another at position "
                              f"{at}; {op.usage}")
                specs.append(self.spec())
            self.pos = self.skip()
            if self.pos >= len(self.text):
                self.fail(f"unbalanced parenthesis: the '(' at position {paren} is never closed")
            c = self.text[self.pos]
            self.pos += 1
            if c == ")":
                break
            if c != ",":
                self.fail(f"expected ',' or ')' at position {self.pos - 1}, got {c!r}")
        close = self.pos - 1
        if len(specs) < op.min_specs:
            self.fail(f"{op.name} needs at least {op.min_specs} specs, got {len(specs)} before "
                      f"position {close}; {op.usage}")
        missing = [k for k in op.keys if k not in params]
        if missing:
            self.fail(f"{op.name} is missing its parameter {missing[0]}=... before position "
                      f"{close}; {op.usage}")
        return Composite(op.name, tuple(specs), tuple((k, params[k]) for k in op.keys))

    def parse(self):
        node = self.spec()
        end = self.skip()
        if end < len(self.text):
            c = self.text[end]
            if c == ")":
                self.fail(f"unbalanced parenthesis: the ')' at position {end} closes nothing")
            self.fail(f"unexpected {c!r} at position {end} after the spec")
        return node


def parse_composite(spec):
    """Parse a spec into a :class:`Composite` tree, or return it (stripped) if it is a leaf.

    Parameters
    ----------
    spec : str
        E.g. ``"line(line(dcirculant:8:1,3))"`` or ``"product(ring:4, ring:5)"``.

    Raises
    ------
    SpecError
        Unbalanced parenthesis, unknown operator, missing or unknown parameter, wrong number
        of specs; the message names the rule and the position.

    Examples
    --------
    >>> parse_composite("power(ring:3, n=2)")
    Composite(op='power', specs=('ring:3',), params=(('n', 2),))
    >>> try:
    ...     parse_composite("degree(genkautz:8,2)")
    ... except SpecError as err:
    ...     print(str(err).split(": ", 1)[1].split(";")[0])
    degree is missing its parameter m=... before position 19
    """
    if not isinstance(spec, str):
        raise SpecError(f"a composite spec must be a string, got {type(spec).__name__}")
    return _Parser(spec).parse()


def predicted_size(op, sizes, params):
    """``(nodes, links)`` of ``op`` applied to operands of ``sizes`` (a list of ``(nodes,
    links, sum_v indeg(v)*outdeg(v))``), before building anything.

    >>> predicted_size("power", [(3, 6, 12)], {"n": 2})
    (9, 36)
    """
    if op == "line":
        return sizes[0][1], sizes[0][2]
    if op == "degree":
        m = params["m"]
        return sizes[0][0] * m, sizes[0][1] * m * m
    if op == "power":
        n, links = sizes[0][0], sizes[0][1]
        return n ** params["n"], params["n"] * links * n ** (params["n"] - 1)
    if op == "product":
        total = math.prod(s[0] for s in sizes)
        return total, sum(s[1] * (total // s[0]) for s in sizes)
    if op == "zigzag":
        nodes = sizes[0][0] * sizes[1][0]
        return nodes, nodes * (sizes[1][1] // max(sizes[1][0], 1)) ** 2
    return sizes[0][0], 2 * sizes[0][1]                           # bidir


def _size_of(topo):
    outdeg = np.bincount(topo.src, minlength=topo.num_nodes)
    indeg = np.bincount(topo.dst, minlength=topo.num_nodes)
    return topo.num_nodes, topo.num_links, int(np.dot(outdeg, indeg))


def build_composite(node, leaf):
    """The topology of a parsed spec: leaves built by ``leaf(text)``, operators by their
    transforms. Sizes are checked against the generators' limits before each operator runs.

    >>> from topocoll.topology import topology
    >>> build_composite(parse_composite("line(uniring:4)"), topology).dst.tolist()
    [1, 2, 3, 0]
    """

    if isinstance(node, str):
        return leaf(node)
    parts = [build_composite(s, leaf) for s in node.specs]
    params = dict(node.params)
    nodes, links = predicted_size(node.op, [_size_of(p) for p in parts], params)
    check_size(format_spec(node), nodes, links)
    return OPERATORS[node.op].builder(*parts, **params)


# ---------------------------------------------------------------------- explicit digraphs
def _width(n):
    return max(1, ((int(n) - 1).bit_length() + 7) // 8)


def rewired_spec(heads):
    """The ``rewired:N,D:CODE`` spec of the digraph whose node ``i`` has links to the ``D``
    nodes of row ``i`` of ``heads`` (an ``(N, D)`` integer array), in that order: CODE is the
    heads, row by row, as unsigned big-endian integers of the fewest bytes that hold ``N - 1``,
    in unpadded URL-safe base64.

    >>> rewired_spec([[1, 2], [2, 3], [3, 0], [0, 1]])
    'rewired:4,2:AQICAwMAAAE'
    """
    heads = np.asarray(heads, dtype=np.int64)
    n, d = heads.shape
    w = _width(n)
    flat = heads.ravel()
    raw = np.stack([(flat >> (8 * (w - 1 - j))) & 255 for j in range(w)], axis=1)
    raw = raw.astype(np.uint8).tobytes()
    code = base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")
    return f"rewired:{n},{d}:{code}"


def decode_heads(n, d, code):
    """The ``(N, D)`` heads array of a ``rewired:N,D:CODE`` spec.

    >>> decode_heads(4, 2, "AQICAwMAAAE").tolist()
    [[1, 2], [2, 3], [3, 0], [0, 1]]
    """
    code = code.strip()
    if not re.fullmatch(r"[A-Za-z0-9_-]+", code):
        raise SpecError(f"rewired needs CODE in URL-safe base64 (A-Z a-z 0-9 - _), got "
                        f"{code[:20]!r}")
    try:
        raw = base64.urlsafe_b64decode(code + "=" * (-len(code) % 4))
    except (binascii.Error, ValueError):
        raise SpecError(f"rewired needs CODE in URL-safe base64, got {code[:20]!r}") from None
    w = _width(n)
    if len(raw) != n * d * w:
        raise SpecError(f"rewired:{n},{d} needs CODE of {n * d} heads of {w} byte(s) "
                        f"({n * d * w} bytes), got {len(raw)} bytes")
    cells = np.frombuffer(raw, dtype=np.uint8).reshape(n * d, w).astype(np.int64)
    heads = np.zeros(n * d, dtype=np.int64)
    for j in range(w):
        heads = heads * 256 + cells[:, j]
    return heads.reshape(n, d)


def rewired_graph(n, d, code, *, bandwidth=None, latency=None):
    """The explicit digraph ``rewired:N,D:CODE`` (:func:`rewired_spec`): node ``i`` links to
    row ``i`` of the heads, links ordered by node then row position. The finder's optimizer
    names the bases it rewires this way.

    >>> t = rewired_graph(4, 2, "AQICAwMAAAE")
    >>> t.name, t.num_nodes, t.src.tolist()[:4], t.dst.tolist()[:4]
    ('rewired:4,2:AQICAwMAAAE', 4, [0, 0, 1, 1], [1, 2, 2, 3])
    """
    from ..defaults import LINK_BANDWIDTH, LINK_LATENCY

    n = at_least(as_int(n, "rewired size"), 2, "rewired needs N >= 2")
    d = at_least(as_int(d, "rewired degree"), 1, "rewired needs D >= 1")
    check_size(f"rewired:{n},{d}", n, n * d)
    heads = decode_heads(n, d, code)
    src = np.repeat(np.arange(n, dtype=np.int64), d)
    bad = heads.ravel() >= n
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise SpecError(f"rewired:{n},{d} names node {int(heads.ravel()[i])} as a head of node "
                        f"{i // d}; heads must be < N = {n}")
    loops = heads.ravel() == src
    if loops.any():
        i = int(np.flatnonzero(loops)[0])
        raise SpecError(f"rewired:{n},{d} gives node {i // d} a link to itself; self-loops are "
                        "not allowed")
    name = rewired_spec(heads)
    return make_topology(name, n, src, heads.ravel(),
                         LINK_BANDWIDTH if bandwidth is None else bandwidth,
                         LINK_LATENCY if latency is None else latency,
                         {"family": "rewired", "n": n, "d": d})
