"""Topology spec strings: one registry of families and one parser, shared by the CLI and the API.

Grammar: ``FAMILY:ARGS[:OPTION...]``, where ``ARGS`` is one colon-separated field for most
families (``ring:8``, ``torus:4x6x3``, ``kautz:2,3``) and two for ``circulant:N:A1,A2,...``.
Options are single words after the arguments (``torus:2x4:double``). A spec naming a ``.json``
or ``.graphml`` file (or any path with a separator) is read with :mod:`topocoll.topology.io`.

>>> topology("torus:4x6x3")
Topology('torus:4x6x3', nodes=72, links=432)
>>> topology("ring:8", bandwidth="100Gbps", latency="2us").latency.tolist()[:2]
[2e-06, 2e-06]
>>> [f["name"] for f in describe_families()][:3]
['ring', 'uniring', 'torus']
"""

import os
import re
from dataclasses import dataclass, field
from typing import Callable

from ..errors import InputTypeError, SpecError
from ..units import parse_bandwidth, parse_time
from . import families as fam
from .io import load_topology
from .model import DEFAULT_BANDWIDTH, DEFAULT_LATENCY, Topology

__all__ = ["Family", "FAMILIES", "topology", "parse_spec", "describe_families"]

_INT = re.compile(r"^[+-]?\d+$")
_FILE_SUFFIXES = (".json", ".graphml")


class _ArgError(Exception):
    """A malformed argument field; the registry turns it into a SpecError naming the spec."""


@dataclass(frozen=True)
class Family:
    """One topology family of the registry.

    Attributes
    ----------
    name : str
        The spec prefix, e.g. ``"torus"``.
    params : str
        Argument syntax after ``name:``, e.g. ``"D1xD2x...[:double]"``.
    summary : str
        One line saying what the family is.
    example : str
        A spec that builds a member, e.g. ``"torus:4x6x3"``.
    builder : callable
        The generator, e.g. :func:`~topocoll.topology.families.torus_graph`.
    parse : callable
        Turns the argument fields (a tuple of ``fields`` strings) into the builder's keyword
        arguments; raises on malformed text.
    fields : int
        How many colon-separated argument fields follow the name.
    options : tuple of (str, str, object)
        ``(option word, builder keyword, value)`` for each option the family accepts.
    """

    name: str
    params: str
    summary: str
    example: str
    builder: Callable = field(repr=False)
    parse: Callable = field(repr=False)
    fields: int = 1
    options: tuple = ()


def _int(text):
    text = text.strip()
    if not _INT.match(text):
        raise _ArgError(f"{text!r} is not a whole number")
    return int(text)


def _ints(text, sep, count=None, names=None):
    parts = text.split(sep)
    if count is not None and len(parts) != count:
        raise _ArgError(f"expected {count} numbers separated by {sep!r} ({names}), "
                        f"got {text.strip()!r}")
    return tuple(_int(p) for p in parts)


def _one(key):
    return lambda fields: {key: _int(fields[0])}


def _pair(first, second):
    def parse(fields):
        a, b = _ints(fields[0], ",", 2, f"{first.upper()},{second.upper()}")
        return {first: a, second: b}
    return parse


def _dims(fields):
    return {"dims": _ints(fields[0].lower(), "x")}


def _circulant(fields):
    return {"n": _int(fields[0]), "offsets": _ints(fields[1], ",")}


def _families(*items):
    return {f.name: f for f in items}


#: Every family the spec parser knows, by name, in the order ``topocoll topologies`` lists them.
FAMILIES = _families(
    Family("ring", "N", "bidirectional ring of N nodes, degree 2", "ring:8",
           fam.ring_graph, _one("n")),
    Family("uniring", "N", "unidirectional ring i -> i+1 mod N", "uniring:8",
           fam.uniring_graph, _one("n")),
    Family("torus", "D1xD2x...[:double]",
           "torus (wrap-around grid), any dimensions and sizes; ':double' gives size-2 "
           "dimensions two links each way", "torus:4x6x3",
           fam.torus_graph, _dims, options=(("double", "double_size2", True),)),
    Family("mesh", "D1xD2x...", "grid without wrap-around, any dimensions and sizes", "mesh:5x5",
           fam.mesh_graph, _dims),
    Family("hypercube", "K", "hypercube: 2^K nodes, degree K", "hypercube:6",
           fam.hypercube_graph, _one("k")),
    Family("complete", "N", "complete graph: a link each way between every pair", "complete:8",
           fam.complete_graph, _one("n")),
    Family("circulant", "N:A1,A2,...", "circulant graph C(N,{A1,...}): i <-> i+A mod N",
           "circulant:16:1,4", fam.circulant_graph, _circulant, fields=2),
    Family("kautz", "D,K", "Kautz digraph K(D,K): (D+1)*D^(K-1) nodes, degree D, diameter K",
           "kautz:2,3", fam.kautz_graph, _pair("d", "k")),
    Family("genkautz", "N,D",
           "generalized Kautz (Imase-Itoh) digraph: N nodes, i -> -D*i-j mod N, j=1..D",
           "genkautz:50,3", fam.generalized_kautz_graph, _pair("n", "d")),
    Family("debruijn", "D,K", "de Bruijn digraph: D^K nodes, degree D, diameter K",
           "debruijn:2,5", fam.de_bruijn_graph, _pair("d", "k")),
    Family("bipartite", "N", "complete bipartite graph K(N,N): 2N nodes", "bipartite:4",
           fam.complete_bipartite_graph, _one("n")),
    Family("hamming", "D,Q", "Hamming graph H(D,Q): Q^D nodes, degree D*(Q-1), diameter D",
           "hamming:3,4", fam.hamming_graph, _pair("d", "q")),
)


def _usage(family):
    return f"use {family.name}:{family.params}, e.g. {family.example}"


def parse_spec(spec):
    """Split a family spec into its :class:`Family` and the builder's keyword arguments.

    Examples
    --------
    >>> family, kwargs = parse_spec("torus:2x4:double")
    >>> family.name, kwargs
    ('torus', {'dims': (2, 4), 'double_size2': True})
    >>> parse_spec("circulant:16:1,4")[1]
    {'n': 16, 'offsets': (1, 4)}
    """
    if not isinstance(spec, str):
        raise InputTypeError(f"a topology spec must be a string, got {type(spec).__name__}")
    text = spec.strip()
    if not text:
        raise SpecError("empty topology spec; give e.g. torus:4x4 or a .json/.graphml file")
    name, *rest = text.split(":")
    family = FAMILIES.get(name.strip().lower())
    if family is None:
        raise SpecError(f"unknown topology family {name.strip()!r} in {spec!r}; known families: "
                        f"{', '.join(sorted(FAMILIES))} (or a .json/.graphml file)")
    args, options = rest[:family.fields], rest[family.fields:]
    if len(args) < family.fields or any(not a.strip() for a in args):
        raise SpecError(f"bad topology spec {spec!r}: {family.name} is missing its arguments; "
                        f"{_usage(family)}")
    try:
        kwargs = family.parse(tuple(args))
    except _ArgError as err:
        raise SpecError(f"bad topology spec {spec!r}: {err}; {_usage(family)}") from None
    known = {word: (key, value) for word, key, value in family.options}
    for option in options:
        word = option.strip().lower()
        if word not in known:
            takes = (f"{family.name} takes options: {', '.join(known)}" if known
                     else f"{family.name} takes no options")
            raise SpecError(f"bad topology spec {spec!r}: unknown option {option.strip()!r}; "
                            f"{takes}")
        key, value = known[word]
        kwargs[key] = value
    return family, kwargs


def _looks_like_file(text):
    if text.lower().endswith(_FILE_SUFFIXES) or "/" in text or os.sep in text:
        return True
    return ":" not in text and os.path.isfile(text)


def topology(spec, *, bandwidth=None, latency=None):
    """The :class:`Topology` for a spec string, a topology file, a networkx graph or a Topology.

    Parameters
    ----------
    spec : str, path, Topology or networkx graph
        A family spec (``"torus:4x6x3"``, see :data:`FAMILIES`), a ``.json``/``.graphml`` file,
        a Topology (returned as is), or a networkx graph (converted).
    bandwidth, latency : float or str, optional
        When given, every link gets this bandwidth (bytes/s, or e.g. ``"100Gbps"``) or latency
        (s, or e.g. ``"10us"``). Otherwise generated topologies get the defaults
        (:data:`DEFAULT_BANDWIDTH`, :data:`DEFAULT_LATENCY`) and files keep their own values.

    Raises
    ------
    SpecError
        Malformed or out-of-range spec, naming the rule that was broken.
    ScheduleFormatError
        Unreadable or malformed topology file, naming the file and the field.

    Examples
    --------
    >>> t = topology("kautz:2,3", bandwidth=1e9)
    >>> t.name, t.num_nodes, float(t.bandwidth[0])
    ('kautz:2,3', 12, 1000000000.0)
    >>> topology("ring:1")
    Traceback (most recent call last):
    ...
    topocoll.errors.SpecError: bad topology spec 'ring:1': ring needs n >= 2, got 1
    """
    bw = None if bandwidth is None else parse_bandwidth(bandwidth)
    lat = None if latency is None else parse_time(latency, what="latency")

    def override(topo):
        if bw is None and lat is None:
            return topo
        return topo.with_links(bandwidth=bw, latency=lat)

    if isinstance(spec, Topology):
        return override(spec)
    if isinstance(spec, os.PathLike):
        return override(load_topology(spec))
    if not isinstance(spec, str):
        import networkx as nx

        if isinstance(spec, nx.Graph):
            return override(Topology.from_networkx(spec))
        raise InputTypeError("a topology is given as a spec string, a file path, a Topology or a "
                             f"networkx graph, not {type(spec).__name__}")
    text = spec.strip()
    if _looks_like_file(text):
        return override(load_topology(text))
    family, kwargs = parse_spec(text)
    try:
        return family.builder(**kwargs,
                              bandwidth=DEFAULT_BANDWIDTH if bw is None else bw,
                              latency=DEFAULT_LATENCY if lat is None else lat)
    except SpecError as err:
        raise SpecError(f"bad topology spec {spec!r}: {err}") from None


def describe_families():
    """One dict per family (``name``, ``params``, ``summary``, ``example``), for listings.

    >>> describe_families()[2]["params"]
    'D1xD2x...[:double]'
    """
    return [{"name": f.name, "params": f.params, "summary": f.summary, "example": f.example}
            for f in FAMILIES.values()]
