"""Build a candidate: its topology and its allreduce schedule, from the recipe.

The leaves of a recipe (:mod:`~topocoll.finder.recipes`: a spec, an explicit digraph from the
optimizer, or a product of specs) get their allreduce from a schedule *algorithm* of
:data:`ALGORITHMS` (default ``"bfb"``: :func:`topocoll.synth.bfb.bfb_allreduce`); expansions
take the leaf's allreduce through :mod:`topocoll.synth.expansions` (nothing is solved again).
Another algorithm plugs in by one entry of :data:`ALGORITHMS`, a function ``topology ->
allreduce Schedule`` (the topology's nodes have egress bandwidth 1 split over their links); the
finder then evaluates every candidate with each algorithm it is asked for and keeps the fastest
verified schedule. The result's nodes have egress bandwidth 1 split evenly over their links:
:func:`priced` gives it the cluster's latency and bandwidth.

Every recipe has a spec, :func:`recipe_spec` (the candidate's name), that
:func:`topocoll.topology.topology` builds into the very digraph the schedule runs on (same node
numbering, same links in the same order; :func:`recipe_topology` builds it without a schedule).

>>> from topocoll.finder.search import Candidate
>>> from topocoll.finder.recipes import LineRecipe, SpecRecipe
>>> c = Candidate("line(complete:3)", 6, 2, 2, 1.0, LineRecipe(SpecRecipe("complete:3")))
>>> s = build_allreduce(c)
>>> s.topology.name, s.collective.name, s.num_nodes
('line(complete:3)', 'allreduce', 6)
>>> recipe_spec(c.recipe)
'line(complete:3)'
"""

import numpy as np

from ..errors import UnsupportedError
from .recipes import (ArcsRecipe, BidirRecipe, DegreeRecipe, LineRecipe, PowerRecipe,
                      ProductRecipe, SpecRecipe, as_recipe)

__all__ = ["build_allreduce", "priced", "leaf_topology", "recipe_topology", "recipe_spec",
           "recipe_isomorphism", "ALGORITHMS"]


def _bfb(topology, **options):
    from ..synth.bfb import bfb_allreduce

    return bfb_allreduce(topology, **options)


def _trees(topology, progress=None, **_):
    from ..synth.packing import trees_schedule

    return trees_schedule(topology, "allreduce", progress=progress)


#: Schedule algorithms for the leaves of a recipe, by name: ``f(topology, **options) ->
#: allreduce Schedule`` (``options``: ``progress``, ``workers``; an algorithm may ignore them).
ALGORITHMS = {"bfb": _bfb, "trees": _trees}


def leaf_topology(recipe):
    """The topology of a leaf recipe (spec, arcs or product), every node's egress
    bandwidth 1 split evenly over its links (how it will be priced: it matters where nodes
    have fewer links, as in generalized Kautz digraphs)."""
    from ..topology.model import Topology
    from ..topology.specs import topology
    from ..topology.transforms import cartesian_product

    recipe = as_recipe(recipe)
    if isinstance(recipe, SpecRecipe):
        return topology(recipe.spec).with_node_bandwidth(1.0)
    if isinstance(recipe, ArcsRecipe):
        n = recipe.nodes
        heads = np.asarray(recipe.heads, dtype=np.int64)
        src = np.repeat(np.arange(n, dtype=np.int64), heads.shape[1])
        return Topology(n, src, heads.ravel(), name=recipe.name).with_node_bandwidth(1.0)
    if isinstance(recipe, ProductRecipe):
        factors = []
        for factor in recipe.factors:
            if not isinstance(factor, SpecRecipe):
                raise UnsupportedError(f"product factors must be specs, got {factor!r}")
            factors.append(topology(factor.spec))
        return cartesian_product(*factors).with_node_bandwidth(1.0)
    raise UnsupportedError(f"{recipe.kind!r} is not a leaf recipe")


def recipe_spec(recipe):
    """The spec of the topology a recipe builds: ``line(X)``, ``degree(X,m=M)``,
    ``power(X,n=P)``, ``product(A,B,...)`` around leaf specs (the optimizer's explicit
    digraphs are named by ``rewired:N,D:CODE`` specs). The grammar is
    :mod:`topocoll.topology.composite`.

    >>> factors = (SpecRecipe("ring:3"), SpecRecipe("hamming:2,3"))
    >>> recipe_spec(DegreeRecipe(ProductRecipe(factors), m=2))
    'degree(product(ring:3,hamming:2,3),m=2)'
    """
    match as_recipe(recipe):
        case SpecRecipe(spec=spec):
            return spec
        case ArcsRecipe(name=name):
            return name
        case ProductRecipe(factors=factors):
            return "product(" + ",".join(recipe_spec(f) for f in factors) + ")"
        case LineRecipe(base=base):
            return f"line({recipe_spec(base)})"
        case DegreeRecipe(base=base, m=m):
            return f"degree({recipe_spec(base)},m={m})"
        case PowerRecipe(base=base, n=n):
            return f"power({recipe_spec(base)},n={n})"
        case BidirRecipe(base=base):
            return f"bidir({recipe_spec(base)})"


def recipe_topology(recipe):
    """The topology a recipe's allreduce runs on (leaves as in :func:`leaf_topology`, every
    expansion the transform :mod:`topocoll.synth.expansions` applies), without scheduling:
    the same digraph as ``topology(recipe_spec(recipe))``.

    >>> recipe_topology(LineRecipe(SpecRecipe("uniring:3"))).dst.tolist()
    [1, 2, 0]
    """
    from ..topology.transforms import (bidirectional_union, cartesian_power, degree_expansion,
                                       line_graph)

    match as_recipe(recipe):
        case LineRecipe(base=base):
            return line_graph(recipe_topology(base))
        case DegreeRecipe(base=base, m=m):
            return degree_expansion(recipe_topology(base), m)
        case PowerRecipe(base=base, n=n):
            return cartesian_power(recipe_topology(base), n)
        case BidirRecipe(base=base):
            return bidirectional_union(recipe_topology(base))
        case leaf:
            return leaf_topology(leaf)


def recipe_isomorphism(recipe):
    """An isomorphism from the recipe's topology G to its transpose (``u -> v`` in G iff
    ``phi(u) -> phi(v)`` in G^T), composed through the expansions from the leaves' (found by
    :func:`~topocoll.synth.expansions.reverse_isomorphism`, leaves of at most 500 nodes), so
    that an expanded digraph of any size gets one: a line graph maps its node ``u -> v`` to
    ``phi(v) -> phi(u)``, a degree expansion ``v_i`` to ``phi(v)_i``, powers and products map
    each coordinate. Raises :class:`~topocoll.errors.UnsupportedError` where a leaf is not
    reverse-symmetric (or a line graph's base has parallel links).

    >>> recipe_isomorphism(LineRecipe(SpecRecipe("kautz:2,2"))).shape
    (12,)
    """
    from ..synth.expansions import reverse_isomorphism

    match as_recipe(recipe):
        case LineRecipe(base=base):
            return _line_isomorphism(recipe_topology(base), recipe_isomorphism(base))
        case DegreeRecipe(base=base, m=m):
            phi = recipe_isomorphism(base)
            return (phi[:, None] * m + np.arange(m)[None, :]).ravel()
        case PowerRecipe(base=base, n=n):
            return _coordinatewise([recipe_isomorphism(base)] * n)
        case ProductRecipe(factors=factors):
            return _coordinatewise([recipe_isomorphism(f) for f in factors])
        case BidirRecipe(base=base):
            return np.arange(recipe_topology(base).num_nodes, dtype=np.int64)
        case leaf:
            return reverse_isomorphism(leaf_topology(leaf))


def _line_isomorphism(g, phi):
    """The isomorphism L(G) -> L(G)^T from one of G: link ``u -> v`` (an L-node) goes to the
    link ``phi(v) -> phi(u)``."""
    n = g.num_nodes
    keys = g.src * n + g.dst
    order = np.argsort(keys, kind="stable")
    if np.any(np.diff(keys[order]) == 0):
        raise UnsupportedError(f"{g.name} has parallel links: no isomorphism of its line graph")
    want = phi[g.dst] * n + phi[g.src]
    pos = np.searchsorted(keys[order], want)
    return order[np.minimum(pos, order.size - 1)]


def _coordinatewise(phis):
    """The isomorphism of a product (mixed radix, first factor most significant) that maps
    each coordinate by its factor's."""
    out = np.zeros(1, dtype=np.int64)
    for phi in phis:
        out = (out[:, None] * phi.size + phi[None, :]).ravel()
    return out


def _algorithm(name):
    if name not in ALGORITHMS:
        raise UnsupportedError(f"unknown schedule algorithm {name!r}; the finder knows "
                               f"{', '.join(ALGORITHMS)}")
    return ALGORITHMS[name]


def _build(recipe, options, algorithm):
    from ..synth import expansions

    match recipe:
        case LineRecipe(base=base):
            return expansions.line_graph_expansion(_build(base, options, algorithm))
        case DegreeRecipe(base=base, m=m):
            return expansions.degree_expansion_schedule(_build(base, options, algorithm), m)
        case PowerRecipe(base=base, n=n):
            return expansions.cartesian_power_expansion(_build(base, options, algorithm), n)
        case BidirRecipe(base=base):
            return expansions.bidirectional_expansion(_build(base, options, algorithm),
                                                      recipe_isomorphism(base))
        case leaf:
            return _algorithm(algorithm)(leaf_topology(leaf), **options)


def build_allreduce(candidate, *, algorithm="bfb", progress=None, workers=None):
    """The allreduce schedule of a :class:`~topocoll.finder.search.Candidate` (or a recipe,
    or its JSON or tuple form), on its topology with default links, its leaves scheduled by
    ``algorithm`` (a key of :data:`ALGORITHMS`). Not verified here (see :func:`priced`)."""
    recipe = as_recipe(getattr(candidate, "recipe", candidate))
    options = {}
    if progress is not None:
        options["progress"] = progress
    if workers is not None:
        options["workers"] = workers
    schedule = _build(recipe, options, algorithm)
    name = getattr(candidate, "name", None)
    if name is not None and schedule.topology.name != name:
        schedule = schedule.replace(topology=schedule.topology.with_links(name=name))
    return schedule


def priced(schedule, *, alpha, node_bandwidth):
    """The same schedule on its topology with every link's latency ``alpha`` and every node's
    egress bandwidth ``node_bandwidth`` split evenly over its out-links."""
    topo = schedule.topology.with_links(latency=alpha).with_node_bandwidth(node_bandwidth)
    return schedule.replace(topology=topo)
