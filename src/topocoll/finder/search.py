"""The bottom-up search: candidates, their predicted costs, and the Pareto frontier.

A candidate is a topology of N nodes and degree d (distinct out-neighbours) with an allreduce
schedule, described by a *recipe* (:mod:`~topocoll.finder.recipes`):

* ``SpecRecipe(S)``: a topology spec whose schedule is BFB. Bases of the database
  (:mod:`~topocoll.finder.bases`, measured), bandwidth-optimal families through closed forms
  (complete and complete bipartite graphs, Hamming graphs and hypercubes, rings, optimal degree-4
  circulants, large distance-regular graphs: BFB takes ``diameter`` steps and T_B = (N-1)/N, proven
  in Zhao et al. (NSDI 2025), appendix E), tori, and, at the target only, the generalized Kautz
  digraph (its BFB cost computed by :mod:`~topocoll.finder.bfbcost`, up to degree 10), for even
  degrees of 6 or more a circulant with geometric offsets, and at degree 6 the best 3D twisted
  torus (TPU v4);
* ``LineRecipe(R)``, ``DegreeRecipe(R, m)``, ``PowerRecipe(R, n)``: an expansion of recipe R
  (:mod:`topocoll.synth.expansions`), predicted by docs/math.md section 4 (with
  :func:`~topocoll.synth.expansions.predict`, the one implementation of this table; the search
  expands by degree with ``m >= 2`` only):

  ======  ========  =====  ============  =====================================
  kind    nodes     degree steps         T_B (units of M/B)
  ======  ========  =====  ============  =====================================
  line    d*N       d      s + 1         t + 1/N (an upper bound)
  degree  m*N       m*d    s + 1         t + (m-1)/(m*N)
  power   N^n       n*d    n*s           t * N/(N-1) * (N^n-1)/N^n
  bidir   N         2*d    s             t  (``BidirRecipe``: bidirectional searches only)
  ======  ========  =====  ============  =====================================

* ``ProductRecipe((R1, R2, ...))``: the Cartesian product of bandwidth-optimal BFB atoms with BFB
  on the product, which is bandwidth-optimal with the sum of the factors' steps (Zhao et al.
  (NSDI 2025), Theorem 13). Products of rings are named as tori.

``steps`` and ``t_b`` are per phase: an allreduce is a reduce-scatter then an allgather, and
costs ``2 * steps`` steps and ``2 * t_b`` (the mean of the two phases, equal on every
reverse-symmetric topology; they differ only for generalized Kautz digraphs).

The search keeps, for every (nodes, degree) it visits, only the Pareto frontier over
(steps, t_b): the predictions are monotone in both, so a dominated candidate never expands into
a non-dominated one, and pruning early loses nothing. Candidates with fewer than d links per
node are allowed at the target (each link then gets B/d' of the node bandwidth: d/d' parallel
links in hardware).

>>> pareto_frontier([(3, 1.0), (2, 2.0), (3, 0.5), (2, 2.0), (4, 0.5)])
[(2, 2.0), (2, 2.0), (3, 0.5)]
>>> s = Search(4)
>>> [(c.name, c.steps) for c in s.target(16)][:3]
[('metacyclic:8,2,7:0.1,5.0,6.0,7.1', 2), ('optcirculant:16', 3)]
>>> [(c.name, c.steps) for c in Search(4, optimized_bases=False).target(16)][:3]
[('genkautz:16,4', 2), ('optcirculant:16', 3)]
"""

import math
from dataclasses import dataclass, field

import numpy as np

from ..errors import UnsupportedError
from ..results import as_progress
from ..synth.expansions import predict
from ..topology.families import DISTANCE_REGULAR_GRAPHS
from .bases import LOOPED_FAMILIES, MAX_BASE_NODES, BaseDatabase
from .bfbcost import MAX_IN_DEGREE, genkautz_cost
from .genkautz_table import lookup as lookup_genkautz
from .cache import Cache
from .recipes import (BidirRecipe, ProductRecipe, Recipe, SpecRecipe, as_recipe, expansion,
                      recipe_from_json, recipe_to_json)

__all__ = ["Candidate", "Search", "pareto_frontier", "optcirculant_diameter",
           "twisted_torus_diameter", "twisted_torus_3d", "circulant_rule", "TOL",
           "GENKAUTZ_LIVE_MAX", "expand_candidate", "bidir_candidate"]

#: Relative tolerance of T_B comparisons inside the search (equal within it: a tie).
TOL = 1e-9
#: Largest N whose generalized Kautz digraph's exact BFB cost is computed at the target when it
#: is neither shipped (:mod:`~topocoll.finder.genkautz_table`) nor cached: the work grows as N^2
#: (seconds at 8192 nodes, ten minutes at 16384); beyond it the candidate is left out.
GENKAUTZ_LIVE_MAX = 8192


# ---------------------------------------------------------------------- Pareto frontier
def pareto_frontier(points, key=None, *, tol=0.0, keep_ties=True):
    """The points no other point dominates, in order of increasing first coordinate.

    ``q`` dominates ``p`` if ``q`` is no worse in both coordinates and better in one (smaller
    is better). ``key(point) -> (a, b)`` extracts the coordinates (default: the point itself).
    ``tol``: relative tolerance on the second coordinate. ``keep_ties``: keep every point of a
    group of equal points (they do not dominate each other); otherwise only the first.
    """
    key = key or (lambda p: p)
    items = sorted(enumerate(points), key=lambda ip: (key(ip[1])[0], key(ip[1])[1], ip[0]))
    out = []
    best_before = math.inf          # smallest b among strictly smaller a
    i = 0
    while i < len(items):
        a = key(items[i][1])[0]
        j = i
        while j < len(items) and key(items[j][1])[0] == a:
            j += 1
        group = items[i:j]
        low = key(group[0][1])[1]
        for _, p in group:
            b = key(p)[1]
            slack = tol * max(abs(b), 1.0)
            if b > low + slack:                          # a point with equal a and smaller b
                continue
            if best_before <= b + slack:                 # a point with smaller a, b no worse
                continue
            if not keep_ties and out and key(out[-1])[0] == a:
                continue
            out.append(p)
        best_before = min(best_before, low)
        i = j
    return out


# ---------------------------------------------------------------------- candidates
@dataclass(frozen=True)
class Candidate:
    """One topology with its predicted allreduce cost per phase.

    Attributes
    ----------
    name : str
        The name of the topology it builds (``"line(line(optcirculant:16))"``,
        ``"torus:32x32"``, ``"genkautz:1024,4"``).
    nodes, degree : int
        Size and distinct out-neighbours per node.
    steps : int
        Steps of each phase (the allreduce takes twice as many).
    t_b : float
        Bandwidth time of each phase in units of M/B (the allreduce takes twice as much).
    recipe : Recipe
        How to build it (see the module docstring and :mod:`~topocoll.finder.recipes`; a
        recipe's JSON or tuple form is taken too).
    kind : str
        ``"base"`` (measured in the database), ``"family"`` (closed form), ``"computed"``
        (BFB cost computed without a schedule), ``"product"`` or ``"expanded"``.
    exact : bool
        False when the prediction is only an upper bound (line graphs) or rests on a conjecture.
    bw_optimal : bool
        T_B equals the bound (N-1)/N.
    """

    name: str
    nodes: int
    degree: int
    steps: int
    t_b: float
    recipe: Recipe = field(repr=False)
    kind: str = "family"
    exact: bool = True
    bw_optimal: bool = False

    def __post_init__(self):
        object.__setattr__(self, "recipe", as_recipe(self.recipe))

    @property
    def allreduce_steps(self):
        return 2 * self.steps

    def time(self, workload, *, alpha, bandwidth):
        """Predicted allreduce time of ``workload`` (a :class:`~.workload.Workload`)."""
        return workload.time(self.steps, self.t_b, alpha=alpha, bandwidth=bandwidth)

    def to_dict(self):
        return {"name": self.name, "nodes": self.nodes, "degree": self.degree,
                "steps": self.steps, "T_B": self.t_b, "recipe": recipe_to_json(self.recipe),
                "kind": self.kind, "exact": self.exact, "bw_optimal": self.bw_optimal}

    @classmethod
    def from_dict(cls, doc):
        return cls(name=doc["name"], nodes=doc["nodes"], degree=doc["degree"],
                   steps=doc["steps"], t_b=doc["T_B"], recipe=recipe_from_json(doc["recipe"]),
                   kind=doc["kind"], exact=doc["exact"], bw_optimal=doc["bw_optimal"])


def _bound(nodes):
    return (nodes - 1) / nodes


def family_candidate(spec, nodes, degree, steps, *, exact=True):
    """The candidate of a family's spec with a known number of BFB steps (at the bound T_B)."""
    return Candidate(spec, nodes, degree, int(steps), _bound(nodes), SpecRecipe(spec), "family",
                     exact, True)


# ---------------------------------------------------------------------- closed forms
def optcirculant_diameter(n):
    """Diameter of ``optcirculant:N``: the least D with ``2D^2 + 2D + 1 >= N``.

    >>> optcirculant_diameter(16), optcirculant_diameter(25), optcirculant_diameter(1024)
    (3, 3, 23)
    """
    d = max(0, (math.isqrt(2 * n - 1) - 1) // 2)
    while 2 * d * d + 2 * d + 1 < n:
        d += 1
    return d


def twisted_torus_diameter(a, b, twist=None):
    """Diameter of the 2D twisted torus ``twistedtorus:AxB`` (``a < b``, twist ``b // 2``):
    the Cayley graph of Z^2 / <(a, -twist), (0, b)>, so the distance of (x, y) is the least
    ``|x + i*a| + |y - i*twist|_b`` over integers i.

    >>> twisted_torus_diameter(4, 8), twisted_torus_diameter(6, 12)
    (4, 6)
    """
    t = b // 2 if twist is None else twist
    x = np.arange(a)[:, None, None]
    y = np.arange(b)[None, :, None]
    reach = b // (2 * a) + 2
    i = np.arange(-reach - 1, reach + 1)[None, None, :]
    dy = (y - i * t) % b
    dist = np.abs(x + i * a) + np.minimum(dy, b - dy)
    return int(dist.min(axis=2).max())


def twisted_torus_3d(n):
    """The 3D twisted torus ``twistedtorus:AxBxC`` (sizes >= 3, not all equal, default twist)
    of least diameter on ``n`` nodes, as ``(spec, diameter)``, or None. It is a Cayley graph,
    so the eccentricity of node 0 is its diameter.

    >>> twisted_torus_3d(128)
    ('twistedtorus:4x4x8', 6)
    """
    from ..topology.metrics import eccentricity
    from ..topology.specs import topology

    best = None
    for a in range(3, round(n ** (1 / 3)) + 2):
        if n % a:
            continue
        for b in range(a, math.isqrt(n // a) + 1):
            if (n // a) % b:
                continue
            c = n // (a * b)
            if c < b or a == c:
                continue
            spec = f"twistedtorus:{a}x{b}x{c}"
            diam = eccentricity(topology(spec), 0)
            if best is None or diam < best[1]:
                best = (spec, diam)
    return best


def _circulant_diameter(n, offsets):
    """Eccentricity of node 0 in C(n, offsets) (vertex-transitive: the diameter)."""
    steps = np.unique(np.concatenate([np.asarray(offsets), -np.asarray(offsets)]) % n)
    seen = np.zeros(n, dtype=bool)
    seen[0] = True
    frontier = np.array([0])
    depth = 0
    while not seen.all():
        nxt = np.unique((frontier[:, None] + steps[None, :]) % n)
        nxt = nxt[~seen[nxt]]
        if nxt.size == 0:
            return None
        seen[nxt] = True
        frontier = nxt
        depth += 1
    return depth


def circulant_rule(n, degree):
    """A circulant of even ``degree`` >= 6 on ``n`` nodes: offsets ``1, s, s^2, ...`` (degree/2
    of them) with the s of least diameter among ``2 .. 2 n^(2/degree)``. Returns ``(spec,
    diameter)`` or None. Its BFB is bandwidth-optimal by Conjecture 1 of Zhao et al. (NSDI 2025)
    (proven for degree 4 only).

    >>> circulant_rule(100, 6)
    ('circulant:100:1,6,36', 5)
    """
    k = degree // 2
    if degree % 2 or k < 3 or n <= degree:
        return None
    best = None
    top = max(3, int(2 * n ** (1.0 / k)) + 1)
    for s in range(2, top + 1):
        offsets = [pow(s, i, n) for i in range(k)]
        residues = {o % n for o in offsets} | {(-o) % n for o in offsets}
        if len(residues) != degree or 0 in residues:
            continue
        diam = _circulant_diameter(n, offsets)
        if diam is not None and (best is None or diam < best[1]):
            canonical = sorted(min(o % n, n - o % n) for o in offsets)   # the spec's own name
            best = ("circulant:%d:%s" % (n, ",".join(map(str, canonical))), diam)
    return best


def _divisors(n):
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


def _integer_root(n, p):
    r = round(n ** (1.0 / p))
    for c in (r - 1, r, r + 1):
        if c >= 2 and c**p == n:
            return c
    return None


# ---------------------------------------------------------------------- the search
class Search:
    """Memoized bottom-up search for one maximum degree.

    Parameters
    ----------
    degree : int
        The cluster's degree d: intermediate candidates and final ones have at most d.
    cache : Cache, optional
        Results cache for the base database and computed costs (default: memory only).
    products : bool
        Include Cartesian products of bandwidth-optimal atoms (tori among them).
    progress : callable, optional
        ``progress(done, total, stage)`` during expensive work
        (:func:`~topocoll.results.as_progress`).
    optimized_bases : bool
        Offer the optimizer's shipped bases (:mod:`~topocoll.finder.optimized_bases`; default). The
        optimizer's table is regenerated without them.
    bidirectional : bool
        Only bidirectional topologies (every link ``u -> v`` has its reverse ``v -> u``; Zhao
        et al. (NSDI 2025), appendix F): atoms whose built topology passes
        :meth:`~topocoll.topology.model.Topology.is_bidirectional`, and the expansions that
        keep the property (degree expansion, Cartesian powers and products); line graphs are
        left out (the line graph of a bidirectional graph is not bidirectional: ``(u,v) ->
        (v,w)`` has no reverse unless ``w = u``) except inside the unions ``bidir(G)`` of
        :meth:`unions`. Default: every topology.
    """

    def __init__(self, degree, cache=None, *, products=True, progress=None,
                 optimized_bases=True, bidirectional=False):
        self.degree = int(degree)
        self.bidirectional = bool(bidirectional)
        self._two_way = {}
        self._reverse = {}
        self._directed = None
        if self.degree < 1:
            raise UnsupportedError(f"the degree must be >= 1, got {self.degree}")
        self.cache = cache if cache is not None else Cache(enabled=False)
        self.products = bool(products)
        self.progress = as_progress(progress)
        self.bases = BaseDatabase(self.cache, self.degree, progress=self.progress,
                                  optimized=optimized_bases)
        self._cells = {}
        self._bw = {}
        self._atoms = {}

    # ------------------------------------------------------------------ atoms
    def atoms(self, n, d):
        """Bases and closed-form family members at exactly ``(n, d)``, simplest first."""
        key = (n, d)
        if key in self._atoms:
            return self._atoms[key]
        out = []
        specs = set()
        for e in self._entries(n, d):
            out.append(Candidate(e.spec, n, d, e.steps, e.t_b, SpecRecipe(e.spec), "base", True,
                                 e.bw_optimal))
            specs.add(e.spec)

        def family(spec, steps, exact=True):
            if spec not in specs and self.allowed(spec):
                specs.add(spec)
                out.append(family_candidate(spec, n, d, steps, exact=exact))

        if d == n - 1 and n >= 2:
            family(f"complete:{n}", 1)
        if n % 2 == 0 and d == n // 2 and d >= 2:
            family(f"bipartite:{d}", 2)
        if d == 2 and n >= 3:
            family(f"ring:{n}", n // 2)
        if d == 1 and n >= 3:
            family(f"uniring:{n}", n - 1)
        if d == 4 and n >= 6:
            family(f"optcirculant:{n}", optcirculant_diameter(n))
        for q in range(2, d + 2):
            if d % (q - 1) == 0:
                k = d // (q - 1)
                if k >= 2 and q**k == n:
                    family(f"hypercube:{k}" if q == 2 else f"hamming:{k},{q}", k)
        # 2D twisted tori (and tori) are abelian Cayley graphs of degree 4: at most
        # 2D^2 + 2D + 1 nodes lie within D steps, and optcirculant:N (N >= 6) reaches that
        # bound, so at degree 4 they can only tie with it; they are not listed. Twisted tori of
        # three dimensions compete at degree 6 (see generative).
        if n > MAX_BASE_NODES:
            for name, facts in DISTANCE_REGULAR_GRAPHS.items():
                if facts["nodes"] == n and facts["degree"] == d:
                    family(f"drg:{name}", facts["diameter"])
        self._atoms[key] = out
        return out

    def allowed(self, spec):
        """Whether the topology of ``spec`` may be a candidate: always, or under
        ``bidirectional`` only when its built topology is bidirectional (memoized)."""
        if not self.bidirectional:
            return True
        if spec not in self._two_way:
            from ..topology.specs import topology

            self._two_way[spec] = topology(spec).is_bidirectional()
        return self._two_way[spec]

    def _entries(self, n, d):
        """The measured bases at ``(n, d)`` this search may use (under ``bidirectional``
        only the bidirectional ones, checked before anything is measured)."""
        db = self.bases
        return [db.entry(item) for item in db.items(n, d) if self.allowed(item.spec)]

    # ------------------------------------------------------------------ products
    def bw_best(self, n, d):
        """The bandwidth-optimal atom or product of such atoms with the fewest steps at
        ``(n, d)``, or None. Only atoms whose BFB schedule is bandwidth-optimal qualify, so a
        product's BFB is bandwidth-optimal too (Zhao et al. (NSDI 2025), Theorem 13)."""
        key = (n, d)
        if key in self._bw:
            return self._bw[key]
        best = None
        for c in self.atoms(n, d):
            spec_atom = c.bw_optimal and isinstance(c.recipe, SpecRecipe)
            if spec_atom and (best is None or c.steps < best.steps):
                best = c
        if self.products:
            for a in _divisors(n):
                b = n // a
                if a < 2 or b < a:
                    continue
                for d1 in range(1, d):
                    left, right = self.bw_best(a, d1), self.bw_best(b, d - d1)
                    if left is None or right is None:
                        continue
                    steps = left.steps + right.steps
                    if best is None or steps < best.steps:
                        best = _product(left, right, n, d, steps)
        self._bw[key] = best
        return best

    # ------------------------------------------------------------------ cells
    def cell(self, n, d):
        """The Pareto frontier of everything at exactly ``(n, d)``: atoms, the best product
        and expansions of smaller cells."""
        key = (n, d)
        if key in self._cells:
            return self._cells[key]
        found = list(self.atoms(n, d))
        if self.products:
            p = self.bw_best(n, d)
            # kind, not recipe: a product of rings is named (and built) as a torus spec
            if p is not None and p.kind == "product":
                found.append(p)
        if d >= 2 and n % d == 0 and n // d >= 2 and not self.bidirectional:
            for c in self._expandable(n // d, d):
                found.append(expand_candidate(c, "line"))
        for m in _divisors(d):
            if m >= 2 and n % m == 0 and n // m >= 2:
                for c in self._expandable(n // m, d // m):
                    found.append(expand_candidate(c, "degree", m=m))
        for p in _divisors(d):
            if p >= 2:
                r = _integer_root(n, p)
                if r is not None:
                    for c in self._expandable(r, d // p):
                        found.append(expand_candidate(c, "power", n=p))
        frontier = _cell_frontier(found)
        self._cells[key] = frontier
        return frontier

    def _expandable(self, n, d):
        """The frontier of ``(n, d)`` less the looped bases (never expanded)."""
        return [c for c in self.cell(n, d) if not _looped(c)]

    # ------------------------------------------------------------------ targets
    def generative(self, n):
        """Candidates built directly at the target ``(n, degree)`` that are not cells of the
        recursion: the generalized Kautz digraph and, for even degrees >= 6, a circulant."""
        d = self.degree
        out = []
        cost = None
        if 2 <= d and min(d, n - 1) <= MAX_IN_DEGREE \
                and self.allowed(f"genkautz:{n},{d}"):       # 2^d subsets per receiver
            cost = self.genkautz(n, d)
        if cost is not None:
            t_b = 0.5 * (cost["t_b_ag"] + cost["t_b_rs"])
            out.append(Candidate(f"genkautz:{n},{d}", n, d, cost["steps"], t_b,
                                 SpecRecipe(f"genkautz:{n},{d}"), "computed", cost["exact"],
                                 t_b <= _bound(n) * (1 + TOL)))
        rule = circulant_rule(n, d)
        if rule is not None and self.allowed(rule[0]):
            out.append(family_candidate(rule[0], n, d, rule[1], exact=False))
        if d == 6:
            twisted = twisted_torus_3d(n)
            if twisted is not None and self.allowed(twisted[0]):
                out.append(family_candidate(twisted[0], n, d, twisted[1]))
        return out

    def genkautz(self, n, d):
        """The generalized Kautz digraph's BFB costs (shipped, cached or computed), or None
        above :data:`GENKAUTZ_LIVE_MAX` nodes when neither shipped nor cached."""
        key = f"genkautz:{n},{d}"
        doc = lookup_genkautz(n, d) or self.cache.get("cost", key)
        if doc is None and n > GENKAUTZ_LIVE_MAX:
            return None
        if doc is None:
            if self.progress:
                self.progress(0, None, f"BFB cost of {key}")
            doc = genkautz_cost(n, d)
            self.cache.put("cost", key, doc)
        return doc

    def target(self, n):
        """The Pareto frontier at ``n`` nodes over every degree up to ``degree``."""
        n = int(n)
        if n < 2:
            raise UnsupportedError(f"the finder needs at least 2 nodes, got {n}")
        # generative candidates first: on a tie (line(moddebruijn:256,4) and genkautz:1024,4
        # have the same costs) the one built directly at the target is kept
        found = list(self.generative(n))
        for d in range(self.degree, 0, -1):
            found.extend(self.cell(n, d))
        found.extend(self.unions(n))
        return pareto_frontier(found, key=lambda c: (c.steps, c.t_b), tol=TOL, keep_ties=False)

    def unions(self, n):
        """Under ``bidirectional``: ``bidir(G)`` for every candidate G of the unrestricted
        cells at ``n`` nodes and degree at most d/2 whose leaves are reverse-symmetric and
        which is not bidirectional already (Zhao et al. (NSDI 2025), appendix F: G + G^T keeps
        G's steps and T_B at twice its degree). Otherwise nothing. Only cells, not the
        generative candidates of degree d/2: every G is then a candidate of the unrestricted
        search at degree d too, so the restricted choice is never predicted faster."""
        if not self.bidirectional or self.degree < 2:
            return []
        if self._directed is None:
            self._directed = Search(self.degree // 2, self.cache, products=self.products,
                                    progress=self.progress)
        found = [c for d in range(self.degree // 2, 0, -1) for c in self._directed.cell(n, d)]
        return [bidir_candidate(c) for c in pareto_frontier(found, key=lambda c: (c.steps, c.t_b),
                                                            tol=TOL, keep_ties=False)
                if self._reversible(c.recipe) and not _stays_bidirectional(c.recipe, self)]

    def _reversible(self, recipe):
        """Whether every leaf of ``recipe`` is reverse-symmetric (memoized; leaves of more
        than 500 nodes are not searched); expansions and products keep the property."""
        if isinstance(recipe, ProductRecipe):
            return all(self._reversible(f) for f in recipe.factors)
        if not isinstance(recipe, SpecRecipe):
            return hasattr(recipe, "base") and self._reversible(recipe.base)
        if recipe.spec not in self._reverse:
            from ..synth.expansions import reverse_isomorphism   # networkx: only here
            from .build import leaf_topology   # build imports the synth layer: only here

            try:
                reverse_isomorphism(leaf_topology(recipe))
                self._reverse[recipe.spec] = True
            except UnsupportedError:
                self._reverse[recipe.spec] = False
        return self._reverse[recipe.spec]


def _looped(c):
    """A base whose topology keeps idle self-loop ports (``debruijn:D,K``, see
    :data:`~topocoll.finder.bases.LOOPED_FAMILIES`): a candidate at its own size only, never
    expanded (the expansions' rules assume no self-loops)."""
    return isinstance(c.recipe, SpecRecipe) and c.name.split(":")[0] in LOOPED_FAMILIES


def _cell_frontier(found):
    """The Pareto frontier of the expandable candidates, and each looped base that none of
    them matches or beats: a looped base never hides an expandable point from the cells above."""
    key = lambda c: (c.steps, c.t_b)  # noqa: E731
    front = pareto_frontier([c for c in found if not _looped(c)], key=key, tol=TOL,
                            keep_ties=False)
    extra = [c for c in found if _looped(c) and not any(
        f.steps <= c.steps and f.t_b <= c.t_b * (1 + TOL) for f in front)]
    return sorted(front + extra, key=key) if extra else front


def expand_candidate(c, kind, **params):
    steps, t_b = predict(kind, c.steps, c.t_b, c.nodes, **params)
    if kind == "line":
        nodes, degree, name = c.nodes * c.degree, c.degree, f"line({c.name})"
        exact = False
    elif kind == "degree":
        m = params["m"]
        nodes, degree, name = c.nodes * m, c.degree * m, f"degree({c.name},m={m})"
        exact = c.exact
    else:
        p = params["n"]
        nodes, degree, name = c.nodes**p, c.degree * p, f"power({c.name},n={p})"
        exact = c.exact
    optimal = c.bw_optimal and kind != "line"
    return Candidate(name, nodes, degree, steps, _bound(nodes) if optimal else t_b,
                     expansion(kind, c.recipe, **params), "expanded", exact, optimal)


def bidir_candidate(c):
    """``bidir(c)``: the union of candidate ``c`` with its transpose, twice its degree, the
    same steps and T_B (:func:`~topocoll.synth.expansions.predict` of kind
    ``"bidirectional"``)."""
    steps, t_b = predict("bidirectional", c.steps, c.t_b, c.nodes)
    return Candidate(f"bidir({c.name})", c.nodes, 2 * c.degree, steps, t_b, BidirRecipe(c.recipe),
                     "expanded", c.exact, c.bw_optimal)


def _stays_bidirectional(recipe, search):
    """Whether a recipe's topology is bidirectional already (bidirectional leaves, no line
    graph): its union with the transpose would only double its links."""
    if isinstance(recipe, ProductRecipe):
        return all(_stays_bidirectional(f, search) for f in recipe.factors)
    if isinstance(recipe, SpecRecipe):
        return search.allowed(recipe.spec)
    return recipe.kind not in ("line", "arcs") and _stays_bidirectional(recipe.base, search)


def _factors(c):
    return list(c.recipe.factors) if isinstance(c.recipe, ProductRecipe) else [c.recipe]


def _product(left, right, n, d, steps):
    factors = _factors(left) + _factors(right)
    specs = [f.spec for f in factors]
    dims = []
    for spec in specs:
        family, _, arg = spec.partition(":")
        if family == "ring":
            dims.append(int(arg))
        elif spec == "complete:2":
            dims.append(2)
        else:
            dims = None
            break
    if dims and any(x >= 3 for x in dims):
        name = "torus:" + "x".join(map(str, dims))
        return Candidate(name, n, d, steps, _bound(n), SpecRecipe(name), "product", True, True)
    name = "product(" + ",".join(specs) + ")"
    return Candidate(name, n, d, steps, _bound(n), ProductRecipe(tuple(factors)), "product",
                     True, True)
