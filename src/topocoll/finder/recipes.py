"""Recipes: how the finder builds a candidate's topology and its allreduce schedule.

A recipe is a small tree of immutable records, one class per kind:

* :class:`SpecRecipe` ``(spec)``: a topology spec, scheduled by a leaf algorithm (BFB);
* :class:`ArcsRecipe` ``(name, nodes, heads)``: an explicit digraph from the optimizer
  (``heads[u]``: the out-neighbours of node ``u``; ``name`` is a ``rewired:`` spec of it);
* :class:`ProductRecipe` ``(factors)``: the Cartesian product of spec recipes;
* :class:`LineRecipe` ``(base)``, :class:`DegreeRecipe` ``(base, m)``, :class:`PowerRecipe`
  ``(base, n)``, :class:`BidirRecipe` ``(base)``: an expansion of the recipe ``base``
  (:mod:`topocoll.synth.expansions`).

Each record is a tuple whose first item, ``kind``, names its kind (``"spec"``, ``"arcs"``,
``"product"``, ``"line"``, ``"degree"``, ``"power"``, ``"bidir"``), followed by its fields: records hash,
compare, sort and pickle as the tagged tuples they replace, and equal them. Read them by field
name (or ``match``). :func:`recipe_to_json` and :func:`recipe_from_json` are their JSON form
(results cache entries); :func:`as_recipe` takes a record or its JSON or tuple form.

>>> r = DegreeRecipe(LineRecipe(SpecRecipe("ring:3")), m=2)
>>> r.base.base.spec, r.m
('ring:3', 2)
>>> recipe_to_json(r)
['degree', ['line', ['spec', 'ring:3']], 2]
>>> as_recipe(("degree", ("line", ("spec", "ring:3")), 2)) == r
True
>>> import pickle
>>> pickle.loads(pickle.dumps(r)) == r, hash(r) == hash(as_recipe(recipe_to_json(r)))
(True, True)
>>> r
DegreeRecipe(base=LineRecipe(base=SpecRecipe(spec='ring:3')), m=2)
"""

from typing import NamedTuple

from ..errors import UnsupportedError

__all__ = ["SpecRecipe", "ArcsRecipe", "ProductRecipe", "LineRecipe", "DegreeRecipe",
           "PowerRecipe", "BidirRecipe", "Recipe", "LEAVES", "EXPANSIONS", "expansion", "as_recipe",
           "recipe_to_json", "recipe_from_json"]


class _Tagged:
    """Mixed in before a named tuple whose first field is ``kind``: the class's ``KIND``
    fills it in, so constructing, pickling, copying and printing take the other fields only."""

    __slots__ = ()
    KIND = ""

    def __new__(cls, *fields, **named):
        return super().__new__(cls, cls.KIND, *fields, **named)

    def __getnewargs__(self):
        return tuple(getattr(self, name) for name in self._fields[1:])

    def __repr__(self):
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._fields[1:])
        return f"{type(self).__name__}({fields})"


class _SpecFields(NamedTuple):
    kind: str
    spec: str


class _ArcsFields(NamedTuple):
    kind: str
    name: str
    nodes: int
    heads: tuple[tuple[int, ...], ...]


class _ProductFields(NamedTuple):
    kind: str
    factors: tuple["SpecRecipe", ...]


class _LineFields(NamedTuple):
    kind: str
    base: "Recipe"


class _DegreeFields(NamedTuple):
    kind: str
    base: "Recipe"
    m: int


class _PowerFields(NamedTuple):
    kind: str
    base: "Recipe"
    n: int


class _BidirFields(NamedTuple):
    kind: str
    base: "Recipe"


class SpecRecipe(_Tagged, _SpecFields):
    """A topology spec (``"optcirculant:16"``) whose allreduce a leaf algorithm builds."""

    __slots__ = ()
    __match_args__ = ("spec",)
    KIND = "spec"


class ArcsRecipe(_Tagged, _ArcsFields):
    """An explicit digraph of ``nodes`` nodes: ``heads[u]`` (a tuple of ints) lists the
    out-neighbours of node ``u`` in link order; ``name`` is a spec that rebuilds it."""

    __slots__ = ()
    __match_args__ = ("name", "nodes", "heads")
    KIND = "arcs"


class ProductRecipe(_Tagged, _ProductFields):
    """The Cartesian product of ``factors``, a tuple of :class:`SpecRecipe`."""

    __slots__ = ()
    __match_args__ = ("factors",)
    KIND = "product"


class LineRecipe(_Tagged, _LineFields):
    """The line-graph expansion of the recipe ``base``."""

    __slots__ = ()
    __match_args__ = ("base",)
    KIND = "line"

    @property
    def params(self):
        """The expansion's parameters, as :func:`topocoll.synth.expansions.predict` takes
        them."""
        return {}


class DegreeRecipe(_Tagged, _DegreeFields):
    """The degree expansion of the recipe ``base`` by ``m`` (``m`` times the nodes and the
    degree)."""

    __slots__ = ()
    __match_args__ = ("base", "m")
    KIND = "degree"

    @property
    def params(self):
        """The expansion's parameters, as :func:`topocoll.synth.expansions.predict` takes
        them."""
        return {"m": self.m}


class PowerRecipe(_Tagged, _PowerFields):
    """The Cartesian power of the recipe ``base`` with exponent ``n``."""

    __slots__ = ()
    __match_args__ = ("base", "n")
    KIND = "power"

    @property
    def params(self):
        """The expansion's parameters, as :func:`topocoll.synth.expansions.predict` takes
        them."""
        return {"n": self.n}


class BidirRecipe(_Tagged, _BidirFields):
    """The bidirectional union G + G^T of the recipe ``base`` (reverse-symmetric; Zhao et al.
    (NSDI 2025), appendix F): same nodes, twice the degree, the same steps and T_B."""

    __slots__ = ()
    __match_args__ = ("base",)
    KIND = "bidir"

    @property
    def params(self):
        """The expansion's parameters, as :func:`topocoll.synth.expansions.predict` takes
        them."""
        return {}


#: Any recipe.
Recipe = (SpecRecipe | ArcsRecipe | ProductRecipe | LineRecipe | DegreeRecipe | PowerRecipe
          | BidirRecipe)
#: The recipes a leaf algorithm schedules, and the expansions of another recipe.
LEAVES = (SpecRecipe, ArcsRecipe, ProductRecipe)
EXPANSIONS = (LineRecipe, DegreeRecipe, PowerRecipe, BidirRecipe)
_BY_KIND = {cls.KIND: cls for cls in LEAVES + EXPANSIONS}


def expansion(kind, base, **params):
    """The expansion ``kind`` (``"line"``, ``"degree"`` or ``"power"``) of the recipe ``base``,
    with its parameters (``m=``, ``n=``) by name."""
    cls = _BY_KIND.get(kind)
    if cls not in EXPANSIONS:
        raise UnsupportedError(f"unknown expansion {kind!r}")
    return cls(base, **params)


def recipe_to_json(recipe):
    """The JSON form of a recipe: nested lists, the kind first (``["line", ["spec", S]]``)."""
    match recipe:
        case ProductRecipe(factors=factors):
            return ["product", [recipe_to_json(f) for f in factors]]
        case SpecRecipe(spec=spec):
            return ["spec", spec]
        case ArcsRecipe(name=name, nodes=nodes, heads=heads):
            return ["arcs", name, nodes, [list(row) for row in heads]]
        case LineRecipe(base=base):
            return ["line", recipe_to_json(base)]
        case DegreeRecipe(base=base, m=m):
            return ["degree", recipe_to_json(base), m]
        case PowerRecipe(base=base, n=n):
            return ["power", recipe_to_json(base), n]
        case BidirRecipe(base=base):
            return ["bidir", recipe_to_json(base)]
    raise UnsupportedError(f"not a recipe: {recipe!r}")


def recipe_from_json(doc):
    """The recipe of its JSON form (or of the tagged tuples that recipes once were)."""
    kind = doc[0]
    if kind == "product":
        return ProductRecipe(tuple(recipe_from_json(f) for f in doc[1]))
    if kind == "spec":
        return SpecRecipe(doc[1])
    if kind == "arcs":
        return ArcsRecipe(doc[1], doc[2], tuple(tuple(row) for row in doc[3]))
    if kind in ("line", "degree", "power", "bidir"):
        return _BY_KIND[kind](recipe_from_json(doc[1]), *doc[2:])
    raise UnsupportedError(f"unknown recipe {kind!r}")


def as_recipe(recipe):
    """``recipe`` itself if it is a recipe record, else the record of its JSON or tuple form."""
    if isinstance(recipe, LEAVES + EXPANSIONS):
        return recipe
    return recipe_from_json(recipe)
