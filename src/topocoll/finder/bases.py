"""The base-topology database: small regular topologies with their best known schedules.

Every entry is a topology spec whose BFB allreduce (reduce-scatter then allgather) is generated
once, checked once with :func:`topocoll.verify`, measured (steps and T_B of each phase in units
of M/B, every node's egress bandwidth split evenly over its links) and stored in the results
cache; a cache hit is never re-verified. Entries are computed lazily, only for the sizes and
degrees a search visits.

The catalogue (Zhao et al. (NSDI 2025), Table 9 and appendix E; at most :data:`MAX_BASE_NODES`
nodes): complete graphs, complete bipartite graphs K(n,n), Hamming graphs H(k,q) and hypercubes,
bidirectional and unidirectional rings, optimal degree-4 circulants, Kautz digraphs, the
distance-regular graphs of :data:`~topocoll.topology.families.DISTANCE_REGULAR_GRAPHS`, small
tori, and three more families of Table 9:

* directed circulants ``dcirculant:N:1,A2,..`` of degree 2..4 and least diameter, for every N
  (offsets and exact BFB costs shipped in :mod:`~topocoll.finder.circulant_table`: all
  bandwidth-optimal, and far fewer steps than bidirectional circulants of the same degree);
* generalized Kautz digraphs ``genkautz:N,D`` where they are D-regular (D+1 divides N, so no
  self-loop is dropped), costs from the shipped :mod:`~topocoll.finder.genkautz_table`;
* modified de Bruijn digraphs ``moddebruijn:N,D`` for N = D^k (diameter k, every degree D),
  costs from the exact evaluator :func:`~topocoll.finder.bfbcost.bfb_cost`;

and the bases the optimizer found offline (family ``"optimized"``, shipped in
:mod:`~topocoll.finder.optimized_bases`: Cayley digraphs of metacyclic groups such as
``metacyclic:8,2,7:0.1,5.0,6.0,7.1``, 16 nodes of degree 4 at diameter 2, which no circulant
reaches; ``optimized=False`` leaves them out). The search reads their costs from the table like
the other shipped rows; a candidate built on one has its schedule built from the base's BFB
allreduce and verified when it is evaluated, and the tests rebuild every row and require the
verified measurement to equal it (:func:`measure_base` with source ``"bfb"``).

Every other entry is a BFB schedule built and verified once. The rest of Table 9:

* the Diamond ``diamond:8`` (its Figure 16; :mod:`~topocoll.topology.families.diamond`): the
  8-node degree-2 digraph of largest all-to-all throughput, BFB 3 steps and T_B 1.0 per
  phase (``dcirculant:8:1,3`` has 3 steps and the optimal 7/8, so it never wins a search);
* the other small modified de Bruijn digraphs (its Figure 17, the "DBJMod" variants):
  ``moddebruijn:N,D`` for every N from D+2 to :data:`MODDEBRUIJN_MAX` that is not a power of D,
  costs from the exact evaluator like those of N = D^k (the redirection of the self-loops
  keeps every node at degree D for any N; these often have fewer steps than any circulant of
  their size: ``moddebruijn:10,2`` 3 steps against 4);
* de Bruijn digraphs with their self-loops, ``debruijn:D,K`` (D^K nodes up to
  :data:`MAX_BASE_NODES`): the topology drops the D loops, but the D constant strings keep the
  port of theirs, idle, so every link gets 1/D of its node's bandwidth, not 1/(D-1) (see
  :func:`compute_base`). The loop nodes have one usable in-link less, so T_B approaches 2 for
  D = 2 (``debruijn:2,3``: 1.75, i.e. 2(N-1)/N), and the modified de Bruijn digraph of the
  same size, which uses the idle ports, matches it (D >= 3) or beats it (D = 2) in steps and
  T_B, so it is never the search's choice. The search never expands these
  (:data:`LOOPED_FAMILIES`): the expansions assume a topology without self-loops.

>>> [e.spec for e in catalogue(2) if e.nodes == 6]
['uniring:6', 'ring:6', 'kautz:2,2', 'dcirculant:6:1,2', 'genkautz:6,2', 'moddebruijn:6,2']
"""

import math
from dataclasses import asdict, dataclass

import numpy as np

from ..errors import InvalidScheduleError
from ..results import as_progress
from ..topology.families import DISTANCE_REGULAR_GRAPHS
from .circulant_table import table as circulant_table
from .genkautz_table import lookup as lookup_genkautz
from . import tables
from .bfbcost import bfb_cost

__all__ = ["BaseEntry", "BaseDatabase", "CatalogueItem", "catalogue", "compute_base",
           "measure_base", "MAX_BASE_NODES", "MODDEBRUIJN_MAX", "LOOPED_FAMILIES"]

#: Largest base computed with BFB (bigger members of the families use closed forms).
MAX_BASE_NODES = 256
_RING_MAX = 32
_UNIRING_MAX = 16
_CIRCULANT_MAX = 32
_TORUS_MAX = 64
#: Largest modified de Bruijn digraph of a size that is not a power of its degree in the catalogue.
MODDEBRUIJN_MAX = 64
#: Families whose catalogue entries keep (idle) self-loop ports: never expanded by the search.
LOOPED_FAMILIES = frozenset({"debruijn"})


@dataclass(frozen=True)
class CatalogueItem:
    """A base topology known by its spec before it is built.

    ``source``: how its entry is measured: ``"bfb"`` (a verified BFB schedule), ``"table"``
    (a shipped row of exact costs) or ``"cost"`` (the exact BFB cost evaluator).
    """

    spec: str
    family: str
    nodes: int
    degree: int
    source: str = "bfb"


@dataclass(frozen=True)
class BaseEntry:
    """A measured base: its verified BFB allreduce's phases, T_B in units of M/B.

    ``steps`` is the number of steps of each phase (both equal the diameter); ``t_b_rs`` and
    ``t_b_ag`` are the reduce-scatter's and the allgather's bandwidth times; ``t_b`` is their
    mean (what one phase costs on average); ``bw_optimal``: both phases meet (N-1)/N.
    """

    spec: str
    family: str
    nodes: int
    degree: int
    steps: int
    t_b_rs: float
    t_b_ag: float
    bw_optimal: bool
    transfers: int = 0

    @property
    def t_b(self):
        return 0.5 * (self.t_b_rs + self.t_b_ag)

    def to_dict(self):
        return asdict(self)


def _hamming(k, q):
    return f"hypercube:{k}" if q == 2 else f"hamming:{k},{q}"


def catalogue(max_degree, max_nodes=MAX_BASE_NODES, *, optimized=True):
    """Every base of degree at most ``max_degree`` and at most ``max_nodes`` nodes, in a fixed
    order (simplest families first); ``optimized``: with the optimizer's shipped bases."""
    items = []
    seen = set()

    def add(spec, family, nodes, degree, source="bfb"):
        if degree <= max_degree and 2 <= nodes <= max_nodes and spec not in seen:
            seen.add(spec)
            items.append(CatalogueItem(spec, family, nodes, degree, source))

    for n in range(2, max_degree + 2):
        add(f"complete:{n}", "complete", n, n - 1)
    for n in range(2, max_degree + 1):
        add(f"bipartite:{n}", "bipartite", 2 * n, n)
    for q in range(2, max_degree + 2):
        k = 2
        while k * (q - 1) <= max_degree and q**k <= max_nodes:
            add(_hamming(k, q), "hamming", q**k, k * (q - 1))
            k += 1
    for n in range(3, _RING_MAX + 1):
        add(f"ring:{n}", "ring", n, 2)
    for n in range(3, _UNIRING_MAX + 1):
        add(f"uniring:{n}", "uniring", n, 1)
    for n in range(6, _CIRCULANT_MAX + 1):
        add(f"optcirculant:{n}", "optcirculant", n, 4)
    for d in range(2, max_degree + 1):
        k = 2
        while (d + 1) * d ** (k - 1) <= max_nodes:
            add(f"kautz:{d},{k}", "kautz", (d + 1) * d ** (k - 1), d)
            k += 1
    for name, facts in DISTANCE_REGULAR_GRAPHS.items():
        add(f"drg:{name}", "drg", facts["nodes"], facts["degree"])
    for dims in _small_tori(max_degree):
        add("torus:" + "x".join(map(str, dims)), "torus", math.prod(dims), 2 * len(dims))
    for (n, k), row in sorted(circulant_table().items()):
        add(row["spec"], "dcirculant", n, k, "table")
    for d in range(2, max_degree + 1):
        for n in range(d + 1, max_nodes + 1, d + 1):
            if lookup_genkautz(n, d) is not None:
                add(f"genkautz:{n},{d}", "genkautz", n, d, "table")
        k = 2
        while d**k <= max_nodes:
            add(f"moddebruijn:{d**k},{d}", "moddebruijn", d**k, d, "cost")
            add(f"debruijn:{d},{k}", "debruijn", d**k, d)
            k += 1
    _seed_bases(add, max_degree)
    if optimized:

        for row in tables.optimized_bases().values():
            add(row["spec"], "optimized", row["nodes"], row["degree"], "table")
    items.sort(key=lambda it: (it.nodes, it.degree))
    return items


def _seed_bases(add, max_degree):
    """The Diamond (a verified BFB schedule) and the modified de Bruijn digraphs of sizes that
    are not powers of their degree (the exact cost evaluator, like those of sizes D^k: a
    verified schedule each would double a cold sweep's time; the tests compare every one with
    its verified BFB allreduce)."""
    add("diamond:8", "diamond", 8, 2)
    for d in range(2, max_degree + 1):
        powers = {d**k for k in range(1, MODDEBRUIJN_MAX.bit_length() + 1)}
        for n in range(d + 2, MODDEBRUIJN_MAX + 1):
            if n not in powers:
                add(f"moddebruijn:{n},{d}", "moddebruijn", n, d, "cost")


def _small_tori(max_degree):
    out = []

    def rec(prefix, lo, prod):
        if len(prefix) >= 2:
            out.append(tuple(prefix))
        if 2 * (len(prefix) + 1) > max_degree:
            return
        a = lo
        while prod * a <= _TORUS_MAX:
            rec(prefix + [a], a, prod * a)
            a += 1
    rec([], 3, 1)
    return out


def compute_base(spec, family=None):
    """Generate, verify and measure one base (the expensive part of a cache miss).

    Raises :class:`~topocoll.errors.InvalidScheduleError` if the schedule fails verification
    (a generator bug: never stored).
    """
    from ..schedule.cost import step_costs
    from ..schedule.verify import verify
    from ..synth.bfb import bfb_allreduce
    from ..topology.metrics import diameter
    from ..topology.specs import topology

    topo, degree = _unit_priced(topology(spec), spec)
    schedule = bfb_allreduce(topo)
    report = verify(schedule)
    if not report.valid:
        raise InvalidScheduleError(f"BFB allreduce on base {spec} failed verification: "
                                   f"{report.summary()}", report=report)
    steps, _, beta = step_costs(schedule)
    d = diameter(topo)
    rs = float(beta[steps <= d].sum())
    ag = float(beta[steps > d].sum())
    n = topo.num_nodes
    bound = (n - 1) / n
    return BaseEntry(spec=spec, family=family or spec.split(":")[0], nodes=n,
                     degree=degree, steps=d, t_b_rs=rs, t_b_ag=ag,
                     bw_optimal=bool(max(rs, ag) <= bound * (1 + 1e-9)),
                     transfers=schedule.num_transfers)


def _unit_priced(topo, spec):
    """``(topology, degree)``: every node's egress bandwidth 1 split evenly over its ports.

    A regular topology has one port per link. A shift-register digraph whose self-loops were
    dropped (``meta["dropped_self_loops"]``, e.g. ``debruijn:D,K``) keeps the port of each loop,
    idle (a loop carries nothing): every node has D ports and every link gets 1/D, also at the
    loop nodes, whose one link less is then priced as it is in hardware. Anything else that is
    not regular is refused (:class:`~topocoll.errors.InvalidScheduleError`).
    """
    loops = int(topo.meta.get("dropped_self_loops") or 0)
    if loops:
        d = int(topo.meta["d"])
        out_deg, in_deg = topo.out_degree(multi=True), topo.in_degree(multi=True)
        short = np.count_nonzero(out_deg == d - 1)
        if (out_deg.min() < d - 1 or out_deg.max() > d or in_deg.min() < d - 1
                or in_deg.max() > d or short != loops):
            raise InvalidScheduleError(f"base {spec}: not {d} ports per node with its "
                                       f"{loops} self-loops counted")
        return topo.with_links(bandwidth=1.0 / d), d
    from ..topology.metrics import degree_summary   # deferred like compute_base's imports

    deg = degree_summary(topo)
    if not deg["regular"]:
        raise InvalidScheduleError(f"base {spec} is not regular")
    return topo.with_node_bandwidth(1.0), deg["out_max"]


def _entry_from_costs(spec, family, n, degree, steps, ag, rs):
    bound = (n - 1) / n
    return BaseEntry(spec=spec, family=family, nodes=n, degree=degree, steps=int(steps),
                     t_b_rs=float(rs), t_b_ag=float(ag),
                     bw_optimal=bool(max(rs, ag) <= bound * (1 + 1e-9)))


def _check_shipped(entry, row):
    """An optimized base's verified measurement must be the table's (else the table or the
    code drifted: never used)."""
    got = (entry.nodes, entry.degree, entry.steps, entry.t_b_ag, entry.t_b_rs)
    want = (row["nodes"], row["degree"], row["steps"], row["t_b_ag"], row["t_b_rs"])
    if got[:3] != want[:3] or any(abs(a - b) > 1e-9 * max(1.0, abs(b))
                                  for a, b in zip(got[3:], want[3:])):
        raise InvalidScheduleError(f"shipped optimized base {entry.spec}: its verified BFB "
                                   f"allreduce measures (nodes, degree, steps, T_B ag, rs) "
                                   f"{got}, the table says {want}")


def measure_base(item):
    """The entry of one catalogue item, the way its ``source`` says (a verified BFB schedule,
    a shipped row of exact costs, or the exact cost evaluator). An optimized base with source
    ``"bfb"`` is built, verified and measured, and must measure what its shipped row says
    (:class:`~topocoll.errors.InvalidScheduleError` otherwise)."""
    if item.source == "bfb":
        entry = compute_base(item.spec, item.family)
        if item.family == "optimized":

            _check_shipped(entry, tables.optimized_bases()[item.spec])
        return entry
    if item.family == "dcirculant":
        row = circulant_table()[item.nodes, item.degree]
        return _entry_from_costs(item.spec, item.family, item.nodes, item.degree, row["steps"],
                                 row["t_b_ag"], row["t_b_rs"])
    if item.family == "optimized":

        row = tables.optimized_bases()[item.spec]
        return _entry_from_costs(item.spec, item.family, item.nodes, item.degree, row["steps"],
                                 row["t_b_ag"], row["t_b_rs"])
    if item.family == "genkautz":
        row = lookup_genkautz(item.nodes, item.degree)
        return _entry_from_costs(item.spec, item.family, item.nodes, item.degree, row["steps"],
                                 row["t_b_ag"], row["t_b_rs"])
    from ..topology.specs import topology
    topo = topology(item.spec)
    ag, rs = bfb_cost(topo), bfb_cost(topo, transpose=True)
    return _entry_from_costs(item.spec, item.family, item.nodes, item.degree, ag["steps"],
                             ag["t_b"], rs["t_b"])


class BaseDatabase:
    """Measured bases by ``(nodes, degree)``, computed on first use and kept in ``cache``.

    Parameters
    ----------
    cache : Cache
        Where entries are stored (kind ``"base"``, key the spec).
    max_degree : int
        Only bases of at most this degree.
    progress : callable, optional
        ``progress(done, total, stage)`` while bases are computed
        (:func:`~topocoll.results.as_progress`).
    optimized : bool
        Include the optimizer's shipped bases (:mod:`~topocoll.finder.optimized_bases`).
    """

    def __init__(self, cache, max_degree, *, progress=None, optimized=True):
        self.cache = cache
        self.max_degree = int(max_degree)
        self.progress = as_progress(progress)
        self.computed = 0
        self._index = {}
        for item in catalogue(self.max_degree, optimized=optimized):
            self._index.setdefault((item.nodes, item.degree), []).append(item)
        self._entries = {}

    def items(self, nodes, degree):
        """Catalogue items at ``(nodes, degree)`` (nothing computed)."""
        return list(self._index.get((nodes, degree), ()))

    def entry(self, item):
        """The measured entry of one catalogue item (cached)."""
        if item.spec in self._entries:
            return self._entries[item.spec]
        if item.source == "table":          # shipped with the package: nothing to cache
            entry = self._entries[item.spec] = measure_base(item)
            return entry
        doc = self.cache.get("base", item.spec)
        if doc is None:
            if self.progress:
                self.progress(self.computed, None, f"measuring base {item.spec}")
            entry = measure_base(item)
            self.cache.put("base", item.spec, entry.to_dict())
            self.computed += 1
        else:
            entry = BaseEntry(**doc)
        self._entries[item.spec] = entry
        return entry

    def entries(self, nodes, degree):
        """Measured bases at ``(nodes, degree)``, computing the missing ones."""
        return [self.entry(item) for item in self.items(nodes, degree)]

    def all(self):
        """Every base of the catalogue, measured."""
        return [self.entry(item) for items in self._index.values() for item in items]
