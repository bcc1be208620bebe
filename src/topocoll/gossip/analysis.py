"""Convergence analysis of gossip topologies (docs/math.md section 7).

Averaging ``x <- W_k x`` reaches the mean from every start iff the matrices (or their product over
a period) are row and column stochastic and the product's other eigenvalues lie strictly inside
the unit circle. The rate is ``rho = ||W - 11^T/n||_2``; for a dynamic topology, the rate of
the period product ``P = W_{p-1} ... W_1 W_0``, and ``rho(P)^(1/p)`` per iteration.

The pieces live in their own modules: the matrices and the stochasticity checks in
:mod:`~topocoll.gossip.matrices`, ``rho`` (dense up to :data:`DENSE_MAX` ranks, sparse above)
in :mod:`~topocoll.gossip.spectrum`, exact averaging and consensus errors in
:mod:`~topocoll.gossip.consensus`; this module gathers them into :func:`analyze` and
:func:`rho_table`, and every name stays importable from here.

>>> from topocoll.gossip import gossip_topology
>>> summary = analyze(gossip_topology("one-peer-exp", 8))
>>> summary.success, summary.period, summary.rho, summary.exact_average_after
(True, 3, 0.0, 3)
>>> round(rho(gossip_topology("exponential-graph", 16).matrix()), 12)
0.6
"""

from dataclasses import dataclass

from ..errors import TopocollError
from ..results import Result, Status
from .consensus import MAX_ITERATIONS, consensus_errors, exact_average_after, plot_consensus
from .matrices import (DEFAULT_TOL, as_gossip_topology, is_column_stochastic,
                       is_doubly_stochastic, is_row_stochastic, mixing_matrix, period_operator,
                       period_product, same_mixing, stochasticity)
from .mixing import GossipTopology
from .registry import GOSSIP_TOPOLOGIES, gossip_topology, resolve_gossip_name
from .spectrum import DENSE_MAX, EXACT_TOL, SPARSE_TOL, check_method, period_rho, rho

__all__ = ["mixing_matrix", "period_product", "period_operator", "is_row_stochastic",
           "is_column_stochastic", "is_doubly_stochastic", "stochasticity", "rho", "period_rho",
           "exact_average_after", "consensus_errors", "analyze", "GossipAnalysis", "rho_table",
           "same_mixing", "plot_consensus", "DEFAULT_TOL", "EXACT_TOL", "SPARSE_TOL",
           "DENSE_MAX", "TABLE_SIZES", "TABLE_PARAMS", "MAX_ITERATIONS"]

#: World sizes of :func:`rho_table` by default.
TABLE_SIZES = (4, 8, 16, 32, 64, 128, 256)
#: Parameters :func:`rho_table` uses for topologies that need some.
TABLE_PARAMS = {"alternating-exp-ring": {"local_size": 4}, "inner-outer-ring": {"local_size": 4},
                "inner-outer-exponential": {"local_size": 4}}


@dataclass
class GossipAnalysis(Result):
    """What :func:`analyze` finds: a :class:`~topocoll.results.Result` whose ``status`` is 0
    (``SUCCESS``) when the topology averages (every start reaches the mean) and 4
    (``INFEASIBLE``) when it never does, with ``message`` saying why.

    Attributes
    ----------
    name : str
    nodes : int
    model : str
        ``"groups"`` (decent_dp) or ``"graph"`` (Bluefog).
    static : bool
    period : int
    params : dict
    rho : float
        ``||P - 11^T/n||_2`` of the period product P (docs/math.md section 7).
    rho_per_iteration : float
        ``rho ** (1 / period)``.
    rho_iterations : list of float
        ``rho`` of each ``W_k``.
    exact_average_after : int or None
        Iterations after which every start sits exactly at the mean (``None``: only in the
        limit, or never).
    row_stochastic, column_stochastic, symmetric : bool
        Whether the property holds in every iteration.
    degree : list of dict
        Per iteration: ``iteration``, ``in_min``, ``in_max``, ``out_min``, ``out_max`` (other
        ranks only).
    groups : list of int or None
        Group topologies: the number of groups of more than one rank per iteration.
    """

    name: str
    nodes: int
    model: str
    static: bool
    period: int
    params: dict
    rho: float
    rho_per_iteration: float
    rho_iterations: list
    exact_average_after: int | None
    row_stochastic: bool
    column_stochastic: bool
    symmetric: bool
    degree: list
    groups: list | None = None

    @property
    def averages(self):
        """True if averaging reaches the mean from every start."""
        return self.status == Status.SUCCESS

    def to_dict(self):
        """The core result fields, then every attribute (``groups`` only for group
        topologies), JSON-ready."""
        out = {**super().to_dict(), "name": self.name, "nodes": self.nodes, "model": self.model,
               "static": self.static, "period": self.period, "params": dict(self.params),
               "rho": self.rho, "rho_per_iteration": self.rho_per_iteration,
               "rho_iterations": list(self.rho_iterations),
               "exact_average_after": self.exact_average_after,
               "row_stochastic": self.row_stochastic,
               "column_stochastic": self.column_stochastic, "symmetric": self.symmetric,
               "degree": [dict(d) for d in self.degree]}
        if self.groups is not None:
            out["groups"] = list(self.groups)
        return out


def analyze(topology, *, max_iterations=None, tol=DEFAULT_TOL, method="auto"):
    """The facts ``topocoll gossip info`` prints, as a :class:`GossipAnalysis`.

    ``status`` is 0 when the topology averages: every ``W_k`` is row and column stochastic and
    the period product contracts (``rho < 1``); else 4, and ``message`` names the rule broken.
    Everything but ``rho`` works on the sparse matrices at every size; ``rho`` and
    ``rho_iterations`` follow ``method`` (see :func:`period_rho`), so no ``n x n`` array is made
    above :data:`DENSE_MAX` ranks.

    Examples
    --------
    >>> from topocoll.gossip import gossip_topology
    >>> a = analyze(gossip_topology("ring-graph", 8))
    >>> a.status_name, round(a.rho, 6), a.exact_average_after
    ('SUCCESS', 0.804738, None)
    """
    t = as_gossip_topology(topology)
    check_method(method)
    r = period_rho(t, method=method)
    facts = stochasticity(t, tol)
    degree = []
    for k in range(t.period):
        din, dout = t.degrees(k)
        degree.append({"iteration": k, "in_min": int(din.min()), "in_max": int(din.max()),
                       "out_min": int(dout.min()), "out_max": int(dout.max())})
    groups = None
    if t.model == "groups":
        groups = [sum(1 for ranks, _ in t.groups(k) if len(ranks) > 1) for k in range(t.period)]
    exact = exact_average_after(t, max_iterations)
    status, message = _verdict(t, r, facts, exact)
    return GossipAnalysis(status=status, message=message, name=t.name, nodes=t.size,
                          model=t.model, static=t.is_static, period=t.period,
                          params=dict(t.params), rho=r, rho_per_iteration=r ** (1.0 / t.period),
                          rho_iterations=[r] if t.is_static else
                          [period_rho(_Single(t, k), method=method) for k in range(t.period)],
                          exact_average_after=exact, row_stochastic=facts["row_stochastic"],
                          column_stochastic=facts["column_stochastic"],
                          symmetric=facts["symmetric"], degree=degree, groups=groups)


class _Single(GossipTopology):
    """Iteration ``k`` of a topology as a static one (for ``rho(W_k)``), sharing its matrix."""

    def __init__(self, topology, k):
        super().__init__(topology.name, topology.size, 1)
        self._of, self._k = topology, k

    def _build(self, k):
        return self._of._all()[self._k]

    def _build_sparse(self, k):
        return self._of._sparse_k(self._k)


def _verdict(t, r, facts, exact):
    """(status, message) of :func:`analyze`: does averaging reach the mean, and if not, why."""
    where = f"{t.name} on {t.size} ranks"
    if not facts["row_stochastic"]:
        return Status.INFEASIBLE, f"{where} never averages: some W_k has a row not summing to 1"
    if not facts["column_stochastic"]:
        return Status.INFEASIBLE, (f"{where} never averages: some W_k has a column not summing "
                                   "to 1 (the mean drifts)")
    if r >= 1 - DEFAULT_TOL:
        return Status.INFEASIBLE, (f"{where} never averages: rho = {r:.6g} >= 1 over a period "
                                   "(some ranks never mix)")
    when = f"exactly after {exact} iterations" if exact is not None else "in the limit"
    return Status.SUCCESS, f"{where} averages {when}: rho = {r:.6g} per period of {t.period}"


def rho_table(names=None, sizes=TABLE_SIZES, params=None, *, exact=True, progress=None):
    """``rho`` of every registered topology at every size: rows for the benchmark table.

    Parameters
    ----------
    names : sequence of str, optional
        Registered names (default: every registered topology that needs no parameter, plus
        those in :data:`TABLE_PARAMS`).
    sizes : sequence of int
        World sizes (default 4 to 256, powers of two).
    params : dict, optional
        ``{name: {param: value}}`` overriding :data:`TABLE_PARAMS`.
    exact : bool
        Also compute ``exact_average_after`` (the slowest part at large n).
    progress : callable, optional
        ``progress(done, total)`` over the (name, size) cells.

    Returns
    -------
    list of dict
        One row per (name, size): ``name``, ``nodes``, ``params``, ``period``, ``rho``,
        ``rho_per_iteration``, ``exact_average_after``, ``doubly_stochastic`` and ``error``
        (``None``, or why no topology of that kind exists for that size; numbers are then
        ``None``).

    Examples
    --------
    >>> rows = rho_table(["exponential-graph", "ring"], sizes=(8, 9))
    >>> [(r["name"], r["nodes"], round(r["rho"], 4)) for r in rows]
    [('exponential-graph', 8, 0.5), ('exponential-graph', 9, 0.4418), ('ring', 8, 0.7071), \
('ring', 9, 0.78)]
    """
    table_params = {**TABLE_PARAMS, **(params or {})}
    if names is None:
        names = [name for name, entry in GOSSIP_TOPOLOGIES.items()
                 if not entry.required() or name in table_params]
    sizes = list(sizes)
    rows = []
    total = len(names) * len(sizes)
    for name in names:
        resolve_gossip_name(name)  # an unknown name is an error, not a row of errors
        for n in sizes:
            extra = dict(table_params.get(name, {}))
            row = {"name": name, "nodes": int(n), "params": extra, "period": None, "rho": None,
                   "rho_per_iteration": None, "exact_average_after": None,
                   "doubly_stochastic": None, "error": None}
            try:
                t = gossip_topology(name, n, **extra)
            except TopocollError as exc:
                row["error"] = str(exc)
            else:
                r = period_rho(t)
                facts = stochasticity(t)
                row.update(period=t.period, rho=r, rho_per_iteration=r ** (1.0 / t.period),
                           doubly_stochastic=facts["row_stochastic"]
                           and facts["column_stochastic"],
                           exact_average_after=exact_average_after(t) if exact else None)
            rows.append(row)
            if progress is not None:
                progress(len(rows), total)
    return rows
