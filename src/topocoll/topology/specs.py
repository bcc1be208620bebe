"""Topology spec strings: one registry of families and one parser, shared by the CLI and the API.

Grammar: ``FAMILY:ARGS[:OPTIONAL...][:OPTION...]``, where ``ARGS`` is one colon-separated field
for most families (``ring:8``, ``torus:4x6x3``, ``kautz:2,3``) and two for
``circulant:N:A1,A2,...``. A few families take optional trailing fields
(``twistedtorus:4x8:3``, ``randomregular:16,3:7``). Options are single words after the arguments
(``torus:2x4:double``). A spec naming a ``.json`` or ``.graphml`` file (or any path with a
separator) is read with :mod:`topocoll.topology.io`.

The families, as ``topocoll topologies`` lists them:

* lattices and classics: ``ring:N``, ``uniring:N``, ``torus:D1xD2x...[:double]``,
  ``mesh:D1xD2x...``, ``hypercube:K``, ``complete:N``, ``circulant:N:A1,A2,...``,
  ``bipartite:N``, ``hamming:D,Q``;
* the baselines' own topologies: ``shiftedring:N[,S]`` (TopoOpt) and ``dbt:N`` (NCCL's double
  binary tree);
* shift-register digraphs: ``kautz:D,K`` (Kautz), ``genkautz:N,D`` (generalized Kautz,
  Imase-Itoh), ``debruijn:D,K`` (de Bruijn);
* generative families: ``twistedtorus:D1xD2x...[:T]`` (TPU v4), ``twistedhypercube:K``
  (crossed cube), ``optcirculant:N`` (least-diameter C(N,{a,a+1})),
  ``randomregular:N,D[:SEED]`` and ``randomdigraph:N,D[:SEED]``;
* Cayley digraphs (:mod:`~topocoll.topology.families.cayley`): ``dcirculant:N:A1,A2,...``
  (directed circulant) and ``metacyclic:M,K,R:Y1.J1,...`` (group Z_M x|_R Z_K);
* distance-regular graphs: ``drg:NAME`` (Table 7 of Zhao et al., NSDI 2025: ``drg:octahedron`` ...
  ``drg:gh33-incidence``, see :data:`~topocoll.topology.families.DISTANCE_REGULAR_GRAPHS`),
  ``paley:Q``, ``odd:K``, ``doubledodd:K``, ``johnson:N,K``;
* all-to-all expanders (:mod:`~topocoll.topology.families.alltoall`):
  ``jellyfish:N,D[,SEED]``, ``xpander:N,D[,SEED]``, ``slimfly:Q``, ``polarfly:Q``,
  ``moddebruijn:N,D``; Ramanujan and Cayley graphs ``lps:P,Q`` (= ``spectralfly:P,Q``) and
  ``borelcayley:P,K[:A,B,C,D]``; hierarchical ``bundlefly:Q,R`` and
  ``dragonfly:A,H[,G[,P]][:consecutive]``;
* the Diamond ``diamond:8`` (:mod:`~topocoll.topology.families.diamond`), the 8-node
  degree-2 digraph of largest all-to-all throughput;
* switched clusters: ``switch:N[,G[,S]]`` (N endpoints on one switch, or on G leaf switches under
  a spine, its uplinks S times slower; the switches forward and hold no rank);
* TACOS's hierarchical systems (:mod:`~topocoll.topology.families.hierarchical`):
  ``ringfcswitch:R,F,S[,D2,D3]``, ``switchswitch:A,B[,D]``;
* explicit digraphs: ``rewired:N,D:CODE`` (the heads of every node, encoded; the bases the
  finder's optimizer rewires, see :func:`~topocoll.topology.composite.rewired_spec`).

Composite specs (:mod:`~topocoll.topology.composite`) apply the operators ``line(SPEC)``,
``degree(SPEC,m=M)``, ``power(SPEC,n=P)``, ``product(SPEC,SPEC,...)`` and ``bidir(SPEC)`` to
specs, nested to any depth: every name the finder prints is one
(``line(line(dcirculant:8:1,3))``), and builds the topology the finder evaluated.

>>> topology("torus:4x6x3")
Topology('torus:4x6x3', nodes=72, links=432)
>>> topology("ring:8", bandwidth="100Gbps", latency="2us").latency.tolist()[:2]
[2e-06, 2e-06]
>>> [f["name"] for f in describe_families()][:3]
['ring', 'uniring', 'torus']
>>> topology("twistedtorus:4x4x8")
Topology('twistedtorus:4x4x8', nodes=128, links=768)
>>> topology("drg:pg23-incidence").meta["intersection_array"]
[[4, 3, 3], [1, 1, 4]]
>>> topology("line(dcirculant:8:1,3)")
Topology('line(dcirculant:8:1,3)', nodes=16, links=32)
>>> [op["name"] for op in describe_operators()]
['line', 'degree', 'power', 'product', 'bidir', 'zigzag']
"""

import os
import re
from dataclasses import dataclass, field
from typing import Callable

from ..errors import InputTypeError, SpecError
from ..units import MAX_DIGITS, parse_bandwidth, parse_time
from .composite import (OPERATORS, build_composite, is_composite, parse_composite, rewired_graph,
                        shown_spec)
from ..defaults import LINK_BANDWIDTH, LINK_LATENCY
from .model import Topology

__all__ = ["Family", "FAMILIES", "topology", "parse_spec", "parse_composite", "describe_families",
           "describe_operators"]

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
        The generator, e.g. :func:`~topocoll.topology.families.torus_graph` (a stand-in that
        imports it when first called; ``builder.resolve()`` is the function itself).
    parse : callable
        Turns the argument fields (a tuple of ``fields`` strings) into the builder's keyword
        arguments; raises on malformed text.
    fields : int
        How many colon-separated argument fields follow the name.
    options : tuple of (str, str, object)
        ``(option word, builder keyword, value)`` for each option the family accepts.
    optional : int
        How many more argument fields may follow the required ones (``twistedtorus:4x8:3``);
        a field that is one of the option words is read as the option instead.
    """

    name: str
    params: str
    summary: str
    example: str
    builder: Callable = field(repr=False)
    parse: Callable = field(repr=False)
    fields: int = 1
    options: tuple = ()
    optional: int = 0


def _int(text):
    text = text.strip()
    if not _INT.match(text):
        raise _ArgError(f"{text!r} is not a whole number")
    if len(text) > MAX_DIGITS:   # int() itself refuses thousands of digits with a traceback
        raise _ArgError(f"a number of {len(text)} digits; parameters have at most "
                        f"{MAX_DIGITS}")
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


def _n_and_shift(fields):
    parts = _ints(fields[0], ",")
    if len(parts) not in (1, 2):
        raise _ArgError(f"expected N or N,S, got {fields[0].strip()!r}")
    return {"n": parts[0], **({"shift": parts[1]} if len(parts) == 2 else {})}


def _twisted_torus(fields):
    kwargs = _dims(fields)
    if len(fields) > 1:
        kwargs["twist"] = _int(fields[1])
    return kwargs


def _metacyclic(fields):
    m, k, r = _ints(fields[0], ",", 3, "M,K,R")
    gens = []
    for item in fields[1].split(","):
        gens.append(_ints(item, ".", 2, "Y.J"))
    return {"m": m, "k": k, "r": r, "generators": gens}


def _random(fields):
    n, d = _ints(fields[0], ",", 2, "N,D")
    kwargs = {"n": n, "d": d}
    if len(fields) > 1:
        kwargs["seed"] = _int(fields[1])
    return kwargs


def _seeded(fields):
    """``N,D[,SEED]`` (also ``N,D:SEED``, like ``randomregular``)."""
    parts = _ints(fields[0], ",")
    if len(parts) not in (2, 3):
        raise _ArgError(f"expected N,D or N,D,SEED, got {fields[0].strip()!r}")
    kwargs = {"n": parts[0], "d": parts[1]}
    if len(parts) == 3:
        kwargs["seed"] = parts[2]
    if len(fields) > 1:
        if len(parts) == 3:
            raise _ArgError("the seed is given twice")
        kwargs["seed"] = _int(fields[1])
    return kwargs


def _n_groups(fields):
    parts = _ints(fields[0], ",")
    if len(parts) not in (1, 2, 3):
        raise _ArgError(f"expected N, N,G or N,G,S, got {fields[0].strip()!r}")
    return dict(zip(("n", "groups", "slowdown"), parts))


def _counts(names):
    """A parser of ``A,B,...`` with the first ``len(names) - optional`` numbers required."""
    def parse(fields):
        parts = _ints(fields[0], ",")
        if not 2 <= len(parts) <= len(names):
            raise _ArgError(f"expected {','.join(names)} (the last ones optional), got "
                            f"{fields[0].strip()!r}")
        return dict(zip(names, parts))
    return parse


def _borel(fields):
    p, k = _ints(fields[0], ",", 2, "P,K")
    kwargs = {"p": p, "k": k}
    if len(fields) > 1:
        a, b, c, d = _ints(fields[1], ",", 4, "A,B,C,D")
        kwargs["generators"] = ((a, b), (c, d))
    return kwargs


def _dragonfly(fields):
    parts = _ints(fields[0], ",")
    if len(parts) not in (2, 3, 4):
        raise _ArgError(f"expected A,H or A,H,G or A,H,G,P, got {fields[0].strip()!r}")
    return dict(zip(("a", "h", "g", "p"), parts))


def _rewired(fields):
    n, d = _ints(fields[0], ",", 2, "N,D")
    return {"n": n, "d": d, "code": fields[1].strip()}


def _word(key):
    def parse(fields):
        word = fields[0].strip().lower()
        if not re.match(r"^[a-z0-9][a-z0-9-]*$", word):
            raise _ArgError(f"{fields[0].strip()!r} is not a name")
        return {key: word}
    return parse


class _Generator:
    """A family's generator, imported from ``topocoll.topology.families`` (or its submodule
    ``module``) when first called: a job loads only the family modules it builds (start-up
    time)."""

    __slots__ = ("name", "module")

    def __init__(self, name, module=""):
        self.name, self.module = name, module

    def resolve(self):
        """The generator function itself."""
        import importlib

        package = f"{__package__}.families"
        return getattr(importlib.import_module(f"{package}.{self.module}" if self.module
                                               else package), self.name)

    def __call__(self, *args, **kwargs):
        return self.resolve()(*args, **kwargs)

    def __repr__(self):
        return f"<generator {self.name}>"


def _gen(name, module=""):
    return _Generator(name, module)


#: The names ``drg:NAME`` takes, in the order of
#: :data:`~topocoll.topology.families.DISTANCE_REGULAR_GRAPHS` (a test keeps them equal; spelled
#: out here so that listing the families does not import the distance-regular module).
DRG_NAMES = ("octahedron", "paley9", "k55-minus-matching", "heawood-distance3", "petersen-line",
              "4cube", "heawood-line", "pg23-incidence", "ag24-minus-parallel-class", "odd4",
              "tutte8cage-line", "doubled-odd4", "gq33-incidence", "tutte12cage-line",
              "gh33-incidence", "petersen", "heawood", "tutte8cage", "tutte12cage")


def _families(*items):
    return {f.name: f for f in items}


#: Every family the spec parser knows, by name, in the order ``topocoll topologies`` lists them.
FAMILIES = _families(
    Family("ring", "N", "bidirectional ring of N nodes, degree 2", "ring:8",
           _gen("ring_graph"), _one("n")),
    Family("uniring", "N", "unidirectional ring i -> i+1 mod N", "uniring:8",
           _gen("uniring_graph"), _one("n")),
    Family("torus", "D1xD2x...[:double]",
           "torus (wrap-around grid), any dimensions and sizes; ':double' gives size-2 "
           "dimensions two links each way", "torus:4x6x3",
           _gen("torus_graph"), _dims, options=(("double", "double_size2", True),)),
    Family("mesh", "D1xD2x...", "grid without wrap-around, any dimensions and sizes", "mesh:5x5",
           _gen("mesh_graph"), _dims),
    Family("hypercube", "K", "hypercube: 2^K nodes, degree K", "hypercube:6",
           _gen("hypercube_graph"), _one("k")),
    Family("complete", "N", "complete graph: a link each way between every pair", "complete:8",
           _gen("complete_graph"), _one("n")),
    Family("circulant", "N:A1,A2,...", "circulant graph C(N,{A1,...}): i <-> i+A mod N",
           "circulant:16:1,4", _gen("circulant_graph"), _circulant, fields=2),
    Family("dcirculant", "N:A1,A2,...",
           "directed circulant DC(N,{A1,...}): i -> i+A mod N, in- and out-degree = #offsets",
           "dcirculant:16:1,6", _gen("directed_circulant_graph", "cayley"), _circulant, fields=2),
    Family("metacyclic", "M,K,R:Y1.J1,Y2.J2,...",
           "Cayley digraph of Z_M x|_R Z_K ((x,i)(y,j) = (x+R^i y, i+j), R^K = 1 mod M): "
           "g -> g*(Y,J) for each generator", "metacyclic:8,2,7:1.0,3.1,0.1,6.0",
           _gen("metacyclic_graph", "cayley"), _metacyclic, fields=2),
    Family("kautz", "D,K", "Kautz digraph K(D,K): (D+1)*D^(K-1) nodes, degree D, diameter K",
           "kautz:2,3", _gen("kautz_graph"), _pair("d", "k")),
    Family("genkautz", "N,D",
           "generalized Kautz (Imase-Itoh) digraph: N nodes, i -> -D*i-j mod N, j=1..D",
           "genkautz:50,3", _gen("generalized_kautz_graph"), _pair("n", "d")),
    Family("debruijn", "D,K", "de Bruijn digraph: D^K nodes, degree D, diameter K",
           "debruijn:2,5", _gen("de_bruijn_graph"), _pair("d", "k")),
    Family("bipartite", "N", "complete bipartite graph K(N,N): 2N nodes", "bipartite:4",
           _gen("complete_bipartite_graph"), _one("n")),
    Family("shiftedring", "N[,S]",
           "TopoOpt's shifted ring: circulant C(N,{1,S}), the rings i <-> i+1 and i <-> i+S, "
           "gcd(S, N) = 1 (default the smallest such S >= 2); N = 5 or N >= 7",
           "shiftedring:10", _gen("shifted_ring_graph"), _n_and_shift),
    Family("dbt", "N",
           "NCCL's double binary tree: a cable per edge of each of the two trees, degree <= 4",
           "dbt:8", _gen("dbt_graph"), _one("n")),
    Family("hamming", "D,Q", "Hamming graph H(D,Q): Q^D nodes, degree D*(Q-1), diameter D",
           "hamming:3,4", _gen("hamming_graph"), _pair("d", "q")),
    Family("twistedtorus", "D1xD2x...[:T]",
           "twisted torus (TPU v4): wrap-arounds of the shorter dimensions shift by T "
           "(default longest/2) along the longest; degree 2 per dimension, sizes >= 3",
           "twistedtorus:4x4x8", _gen("twisted_torus_graph"), _twisted_torus, optional=1),
    Family("twistedhypercube", "K",
           "twisted hypercube (Efe's crossed cube): 2^K nodes, degree K, diameter "
           "ceil((K+1)/2)", "twistedhypercube:5", _gen("twisted_hypercube_graph"), _one("k")),
    Family("optcirculant", "N",
           "circulant C(N,{a,a+1}) of least diameter ceil((sqrt(2N-1)-1)/2), degree 4, N >= 5",
           "optcirculant:25", _gen("optimal_circulant_graph"), _one("n")),
    Family("randomregular", "N,D[:SEED]",
           "connected random D-regular bidirectional graph, reproducible by SEED (default 0); "
           "N*D even", "randomregular:16,3", _gen("random_regular_graph"), _random, optional=1),
    Family("randomdigraph", "N,D[:SEED]",
           "strongly connected random digraph, in- and out-degree D (union of D random "
           "permutations), reproducible by SEED", "randomdigraph:16,2",
           _gen("random_regular_digraph"), _random, optional=1),
    Family("drg", "NAME",
           "distance-regular graph by name: Table 7 of Zhao et al., NSDI 2025 (" +
           ", ".join(DRG_NAMES[:-4]) + ") and " + ", ".join(DRG_NAMES[-4:]),
           "drg:odd4", _gen("distance_regular_graph"), _word("graph")),
    Family("paley", "Q",
           "Paley graph over GF(Q), Q a prime power = 1 mod 4: x <-> x + nonzero squares; "
           "degree (Q-1)/2, diameter 2", "paley:13", _gen("paley_graph"), _one("q")),
    Family("odd", "K",
           "odd graph O_K: (K-1)-subsets of 2K-1 points, adjacent iff disjoint; degree K, "
           "diameter K-1", "odd:4", _gen("odd_graph"), _one("k")),
    Family("doubledodd", "K",
           "doubled odd graph D(O_K): (K-1)- and K-subsets of 2K-1 points by inclusion; "
           "degree K, diameter 2K-1", "doubledodd:4", _gen("doubled_odd_graph"), _one("k")),
    Family("johnson", "N,K",
           "Johnson graph J(N,K): K-subsets of N points, adjacent iff they share K-1; "
           "degree K(N-K), diameter min(K,N-K)", "johnson:6,3", _gen("johnson_graph"),
           _pair("n", "k")),
    Family("jellyfish", "N,D[,SEED]",
           "Jellyfish: connected random D-regular graph (= randomregular:N,D:SEED), "
           "reproducible by SEED; N*D even", "jellyfish:64,4",
           _gen("jellyfish_graph", "alltoall"), _seeded, optional=1),
    Family("xpander", "N,D[,SEED]",
           "Xpander: random K-lift of the complete graph K_(D+1), N = K(D+1) nodes, degree D, "
           "reproducible by SEED", "xpander:64,7", _gen("xpander_graph", "alltoall"), _seeded,
           optional=1),
    Family("slimfly", "Q",
           "Slim Fly (McKay-Miller-Siran graph), Q a prime power = 4w+delta, delta in "
           "{-1,0,1}: 2Q^2 nodes, degree (3Q-delta)/2, diameter 2", "slimfly:5",
           _gen("slimfly_graph", "alltoall"), _one("q")),
    Family("polarfly", "Q",
           "PolarFly (Erdos-Renyi polarity graph ER_Q), Q a prime power: Q^2+Q+1 nodes, "
           "degree Q+1 (Q at the Q+1 absolute points), diameter 2", "polarfly:7",
           _gen("polarfly_graph", "alltoall"), _one("q")),
    Family("moddebruijn", "N,D",
           "modified de Bruijn digraph: i -> D*i+j mod N, self-loops redirected among the loop "
           "nodes so every in- and out-degree is D", "moddebruijn:16,2",
           _gen("modified_de_bruijn_graph", "alltoall"), _pair("n", "d")),
    Family("diamond", "[8]",
           "the Diamond: the 8-node degree-2 digraph of largest all-to-all throughput (Table 9 "
           "of Zhao et al., NSDI 2025), diameter 3", "diamond:8",
           _gen("diamond_graph", "diamond"),
           lambda fields: {"n": _int(fields[0])} if fields else {}, fields=0, optional=1),
    Family("lps", "P,Q",
           "LPS Ramanujan graph X^(P,Q), P,Q distinct odd primes: Cayley graph of PSL(2,Q) "
           "(Q(Q^2-1)/2 nodes) or PGL(2,Q) (Q(Q^2-1), bipartite) by the Legendre symbol (P/Q); "
           "degree P+1", "lps:3,5", _gen("lps_graph", "lps"), _pair("p", "q")),
    Family("spectralfly", "P,Q",
           "SpectralFly: the LPS graph lps:P,Q as a network (same links, own name)",
           "spectralfly:5,7", _gen("spectralfly_graph", "lps"), _pair("p", "q")),
    Family("borelcayley", "P,K[:A,B,C,D]",
           "Borel-Cayley graph: Cayley graph of {t -> x t + y : x^K = 1} over Z_P, P prime, K "
           "dividing P-1; P*K nodes, degree 4 (generators (A,B), (C,D); default (alpha,1), "
           "(alpha,0))", "borelcayley:7,3", _gen("borel_cayley_graph", "borel"), _borel,
           optional=1),
    Family("bundlefly", "Q,R",
           "BundleFly: star product of slimfly:Q (structure) and paley:R (supernodes), "
           "bundles multiply by a non-square; 2Q^2*R nodes, diameter <= 4 (3 measured)",
           "bundlefly:3,5", _gen("bundlefly_graph", "bundlefly"), _pair("q", "r")),
    Family("dragonfly", "A,H[,G[,P]][:consecutive]",
           "DragonFly: G (default A*H+1) groups of A all-to-all routers, H global ports each, one "
           "global cable per group pair (palmtree, or ':consecutive'); P endpoints per router "
           "make the routers switches", "dragonfly:4,2", _gen("dragonfly_graph", "dragonfly"),
           _dragonfly, options=(("consecutive", "arrangement", "consecutive"),
                                ("palmtree", "arrangement", "palmtree"))),
    Family("switch", "N[,G[,S]]",
           "switched cluster: N endpoints on one switch (a forwarding-only node), or on G "
           "leaf switches of N/G endpoints joined by a spine switch whose uplinks are S times "
           "slower (default 1); a cable per attachment",
           "switch:16", _gen("switch_graph", "switched"), _n_groups),
    Family("ringfcswitch", "R,F,S[,D2,D3]",
           "TACOS Ring_FC_Switch: S nodes of R x F NPUs (rings of R, fully connected groups of "
           "F), the nodes joined by R*F switches; levels D2, D3 times slower than the rings "
           "(default 2,4: 200/100/50 GB/s)", "ringfcswitch:2,4,4",
           _gen("ringfcswitch_graph", "hierarchical"),
           _counts(("ring", "fc", "nodes", "fc_slowdown", "switch_slowdown"))),
    Family("switchswitch", "A,B[,D]",
           "TACOS Switch_Switch (DGX-like): B nodes of A NPUs on a switch each, A scale-out "
           "switches of B NPUs, D times slower (default 12: 300/25 GB/s)", "switchswitch:8,4",
           _gen("switchswitch_graph", "hierarchical"), _counts(("npus", "nodes", "slowdown"))),
    Family("rewired", "N,D:CODE",
           "explicit digraph: node i links to the D heads in row i of CODE (URL-safe base64 of "
           "the heads, big-endian, as few bytes each as hold N-1); the finder's optimizer "
           "names the bases it rewires so", "rewired:4,2:AQICAwMAAAE", rewired_graph, _rewired,
           fields=2),
)


def _load(path):
    from .io import load_topology   # here, not at the top: spec strings never need it

    return load_topology(path)


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
    if is_composite(text):
        raise SpecError(f"bad topology spec {shown_spec(spec)}: parse_spec reads one family spec, and this "
                        "is a composite spec (an operator applied to specs); read it with "
                        "parse_composite")
    name, *rest = text.split(":")
    family = FAMILIES.get(name.strip().lower())
    if family is None:
        raise SpecError(f"unknown topology family {name.strip()[:40]!r} in {shown_spec(spec)}; known families: "
                        f"{', '.join(sorted(FAMILIES))} (or a .json/.graphml file)")
    args, options = rest[:family.fields], rest[family.fields:]
    words = {word for word, _, _ in family.options}
    while (options and len(args) < family.fields + family.optional
           and options[0].strip().lower() not in words):
        args.append(options.pop(0))
    if len(args) < family.fields or any(not a.strip() for a in args):
        raise SpecError(f"bad topology spec {shown_spec(spec)}: {family.name} is missing its arguments; "
                        f"{_usage(family)}")
    try:
        kwargs = family.parse(tuple(args))
    except _ArgError as err:
        raise SpecError(f"bad topology spec {shown_spec(spec)}: {err}; {_usage(family)}") from None
    known = {word: (key, value) for word, key, value in family.options}
    for option in options:
        word = option.strip().lower()
        if word not in known:
            takes = (f"{family.name} takes options: {', '.join(known)}" if known
                     else f"{family.name} takes no options")
            raise SpecError(f"bad topology spec {shown_spec(spec)}: unknown option {option.strip()!r}; "
                            f"{takes}")
        key, value = known[word]
        kwargs[key] = value
    return family, kwargs


def _looks_like_file(text):
    if text == "-":   # standard input
        return True
    if text.lower().removesuffix(".gz").endswith(_FILE_SUFFIXES) or "/" in text or os.sep in text:
        return True
    return ":" not in text and os.path.isfile(text)


def topology(spec, *, bandwidth=None, latency=None):
    """The :class:`Topology` for a spec string, a topology file, a networkx graph or a Topology.

    Parameters
    ----------
    spec : str, path, Topology or networkx graph
        A family spec (``"torus:4x6x3"``, see :data:`FAMILIES`), a composite spec
        (``"line(dcirculant:8:1,3)"``, see :mod:`~topocoll.topology.composite`), a
        ``.json``/``.graphml`` file, a Topology (returned as is), or a networkx graph
        (converted).
    bandwidth, latency : float or str, optional
        When given, every link gets this bandwidth (bytes/s, or e.g. ``"100Gbps"``) or latency
        (s, or e.g. ``"10us"``). Otherwise generated topologies get the defaults
        (:data:`LINK_BANDWIDTH`, :data:`LINK_LATENCY`) and files keep their own values.

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
        return override(_load(spec))
    if not isinstance(spec, str):
        import networkx as nx

        if isinstance(spec, nx.Graph):
            return override(Topology.from_networkx(spec))
        raise InputTypeError("a topology is given as a spec string, a file path, a Topology or a "
                             f"networkx graph, not {type(spec).__name__}")
    text = spec.strip()
    if is_composite(text) and not os.path.exists(text):
        node = parse_composite(text)         # every syntax error before anything is built
        try:
            return override(build_composite(
                node, lambda leaf: topology(leaf, bandwidth=bandwidth, latency=latency)))
        except SpecError as err:
            msg = str(err).removeprefix("bad topology spec ")
            raise SpecError(f"bad topology spec {shown_spec(spec)}: "
                            f"{'leaf ' if msg != str(err) else ''}{msg}") from None
    if _looks_like_file(text):
        return override(_load(text))
    family, kwargs = parse_spec(text)
    try:
        return family.builder(**kwargs,
                              bandwidth=LINK_BANDWIDTH if bw is None else bw,
                              latency=LINK_LATENCY if lat is None else lat)
    except SpecError as err:
        raise SpecError(f"bad topology spec {shown_spec(spec)}: {err}") from None


def describe_families():
    """One dict per family (``name``, ``params``, ``summary``, ``example``), for listings.

    >>> describe_families()[2]["params"]
    'D1xD2x...[:double]'
    """
    return [{"name": f.name, "params": f.params, "summary": f.summary, "example": f.example}
            for f in FAMILIES.values()]


def describe_operators():
    """One dict per operator of composite specs (``name``, ``params``, ``summary``,
    ``example``), for listings next to :func:`describe_families`.

    >>> describe_operators()[1]["example"]
    'degree(complete:4,m=2)'
    """
    return [{"name": op.name, "params": op.params, "summary": op.summary, "example": op.example}
            for op in OPERATORS.values()]
