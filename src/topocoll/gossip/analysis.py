"""Convergence analysis of gossip topologies (docs/math.md section 7).

Averaging ``x <- W_k x`` reaches the mean from every start iff the matrices (or their product over
a period) are row and column stochastic and the product's other eigenvalues lie strictly inside
the unit circle. The rate is ``rho = ||W - 11^T/n||_2``; for a dynamic topology, the rate of
the period product ``P = W_{p-1} ... W_1 W_0``, and ``rho(P)^(1/p)`` per iteration.

>>> from topocoll.gossip import gossip_topology
>>> summary = analyze(gossip_topology("one-peer-exp", 8))
>>> summary.success, summary.period, summary.rho, summary.exact_average_after
(True, 3, 0.0, 3)
>>> round(rho(gossip_topology("exponential-graph", 16).matrix()), 12)
0.6
"""

from dataclasses import dataclass

import numpy as np

from ..errors import InputTypeError, SpecError, TopocollError, UnsupportedError
from ..results import Result, Status
from .model import GossipTopology
from .registry import GOSSIP_TOPOLOGIES, gossip_topology, resolve_gossip_name

__all__ = ["mixing_matrix", "period_product", "is_row_stochastic", "is_column_stochastic",
           "is_doubly_stochastic", "stochasticity", "rho", "period_rho", "exact_average_after",
           "consensus_errors", "analyze", "GossipAnalysis", "rho_table", "same_mixing", "plot_consensus",
           "DEFAULT_TOL", "EXACT_TOL", "TABLE_SIZES", "TABLE_PARAMS", "MAX_ITERATIONS"]

#: Most iterations :func:`consensus_errors` runs: a million products with the mixing matrix
#: (the error of any topology that averages is far below rounding long before).
MAX_ITERATIONS = 10**6
#: Tolerance of the stochasticity checks (row and column sums equal to 1).
DEFAULT_TOL = 1e-9
#: An error of the product below this counts as the exact mean (rounding only) ...
EXACT_TOL = 1e-12
#: ... provided it fell there in one iteration from above this: geometric convergence at any
#: realistic rate never drops by six orders of magnitude in one iteration.
_EXACT_FROM = 1e-6
#: World sizes of :func:`rho_table` by default.
TABLE_SIZES = (4, 8, 16, 32, 64, 128, 256)
#: Parameters :func:`rho_table` uses for topologies that need some.
TABLE_PARAMS = {"alternating-exp-ring": {"local_size": 4}, "inner-outer-ring": {"local_size": 4},
                "inner-outer-exponential": {"local_size": 4}}


def _topo(topology):
    if not isinstance(topology, GossipTopology):
        raise InputTypeError(f"expected a GossipTopology, got {type(topology).__name__}")
    return topology


def _square(w):
    w = np.asarray(w, dtype=np.float64)
    if w.ndim != 2 or w.shape[0] != w.shape[1]:
        raise InputTypeError(f"expected a square matrix, got shape {w.shape}")
    return w


def mixing_matrix(topology, k=0):
    """The mixing matrix of iteration ``k`` (same as ``topology.matrix(k)``)."""
    return _topo(topology).matrix(k)


def period_product(topology, start=0):
    """``P = W_{start+p-1} ... W_{start+1} W_start``: one period applied from iteration ``start``.

    >>> from topocoll.gossip import gossip_topology
    >>> period_product(gossip_topology("one-peer-exp", 4)).tolist()[0]
    [0.25, 0.25, 0.25, 0.25]
    """
    t = _topo(topology)
    t.require_dense()
    p = np.eye(t.size)
    for k in range(start, start + t.period):
        p = t.matrix(k) @ p
    return p


def is_row_stochastic(w, tol=DEFAULT_TOL):
    """True if every row sums to 1 (within ``tol``) and no weight is negative."""
    w = _square(w)
    return bool(np.all(np.abs(w.sum(axis=1) - 1.0) <= tol) and np.all(w >= -tol))


def is_column_stochastic(w, tol=DEFAULT_TOL):
    """True if every column sums to 1 (within ``tol``) and no weight is negative."""
    return is_row_stochastic(_square(w).T, tol)


def is_doubly_stochastic(w, tol=DEFAULT_TOL):
    """True if ``w`` is row and column stochastic.

    >>> is_doubly_stochastic([[0.5, 0.5], [0.5, 0.5]]), is_doubly_stochastic([[1, 0], [1, 0]])
    (True, False)
    """
    return is_row_stochastic(w, tol) and is_column_stochastic(w, tol)


def stochasticity(topology, tol=DEFAULT_TOL):
    """Which properties hold in every iteration: ``{"row_stochastic", "column_stochastic",
    "symmetric", "nonnegative"}`` -> bool."""
    t = _topo(topology)
    mats = t.matrices()
    return {"row_stochastic": all(is_row_stochastic(w, tol) for w in mats),
            "column_stochastic": all(is_column_stochastic(w, tol) for w in mats),
            "symmetric": all(np.allclose(w, w.T, atol=tol, rtol=0) for w in mats),
            "nonnegative": all(bool(np.all(w >= -tol)) for w in mats)}


def rho(w):
    """``||W - 11^T/n||_2``: the worst-case contraction of the distance to the mean.

    >>> rho(np.full((4, 4), 0.25))
    0.0
    """
    w = _square(w)
    value = float(np.linalg.norm(w - 1.0 / w.shape[0], 2))
    return 0.0 if value < EXACT_TOL else value


def period_rho(topology, start=0):
    """``rho`` of the period product (equal to ``rho(W)`` for a static topology)."""
    return rho(period_product(topology, start))


def exact_average_after(topology, max_iterations=None, progress=None, *, seed=0):
    """The number of iterations after which every start is exactly at the mean, or ``None``.

    Applies ``W_0, W_1, ...`` and stops at the first ``t`` with ``W_{t-1} ... W_0 = 11^T/n``.
    The product is tested on eight random start vectors (``seed``), which detects ``P != J``
    with probability 1 at ``O(n^2)`` per iteration instead of ``O(n^3)``. In floating point
    "exactly" means: the largest deviation from the mean, relative to the start's, drops below
    :data:`EXACT_TOL` in one iteration from above ``1e-6`` (finite-time averaging collapses the
    error; geometric convergence shrinks it by about ``rho`` per iteration and is reported as
    ``None``).

    Parameters
    ----------
    max_iterations : int, optional
        Give up after this many (default ``max(64, 4 * period)``).
    progress : callable, optional
        ``progress(done, total)``.
    seed : int
        Seed of the random test vectors.

    Examples
    --------
    >>> from topocoll.gossip import gossip_topology
    >>> exact_average_after(gossip_topology("one-peer-exp", 16))
    4
    >>> exact_average_after(gossip_topology("one-peer-exp", 12)) is None
    True
    """
    t = _topo(topology)
    t.require_dense()
    limit = max(64, 4 * t.period) if max_iterations is None else \
        _iterations(max_iterations, "max_iterations")
    if t.size == 1:
        return 0
    mats = [t.matrix(k) for k in range(t.period)]
    x = np.random.default_rng(seed).standard_normal((t.size, 8))
    mean = x.mean(axis=0)
    scale = np.abs(x - mean).max()
    before = 1.0
    for step in range(1, limit + 1):
        x = mats[(step - 1) % t.period] @ x
        err = float(np.abs(x - mean).max() / scale)
        if progress is not None:
            progress(step, limit)
        if err <= EXACT_TOL:
            return step if before > _EXACT_FROM else None
        if not np.isfinite(err):
            return None
        before = err
    return None


def _iterations(value, name):
    """A count of iterations checked up front: whole, >= 0, at most :data:`MAX_ITERATIONS`."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise InputTypeError(f"{name} must be a non-negative integer, got {value!r}")
    if value > MAX_ITERATIONS:
        raise UnsupportedError(f"{name} must be at most {MAX_ITERATIONS:,} (each is a "
                               f"product with the mixing matrix), got {value:,}")
    return int(value)


def consensus_errors(topology, iterations, x0=None, *, seed=None, start=0, relative=True):
    """Simulate averaging and return the distance to the initial mean after each iteration.

    Parameters
    ----------
    topology : GossipTopology
    iterations : int
        Number of iterations to run.
    x0 : array_like, shape (n,) or (n, d), optional
        Start values; random normal (from ``seed``) when omitted.
    seed : int, optional
        Seed of the random start.
    start : int
        Index of the first iteration (the phase of a dynamic topology).
    relative : bool
        Divide by the start's distance to the mean (so the curve starts at 1).

    Returns
    -------
    numpy.ndarray, shape (iterations + 1,)
        ``e[k] = ||x_k - mean(x_0)||_2`` (Frobenius for several columns).

    Examples
    --------
    >>> from topocoll.gossip import gossip_topology
    >>> e = consensus_errors(gossip_topology("one-peer-exp", 8), 3, seed=0)
    >>> float(e[0]), bool(e[3] < 1e-12)
    (1.0, True)
    """
    t = _topo(topology)
    iterations = _iterations(iterations, "iterations")
    if x0 is None:
        x = np.random.default_rng(seed).standard_normal(t.size)
    else:
        x = np.array(x0, dtype=np.float64)
        if x.ndim not in (1, 2) or x.shape[0] != t.size:
            raise InputTypeError(f"x0 needs {t.size} rows (one per rank), got shape {x.shape}")
    mean = x.mean(axis=0)
    mats = [t.matrix(k) for k in range(t.period)]
    errors = np.empty(iterations + 1)
    errors[0] = np.linalg.norm(x - mean)
    for k in range(iterations):
        x = mats[(start + k) % t.period] @ x
        errors[k + 1] = np.linalg.norm(x - mean)
    if relative and errors[0] > 0:
        errors /= errors[0]
    return errors


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


def analyze(topology, *, max_iterations=None, tol=DEFAULT_TOL):
    """The facts ``topocoll gossip info`` prints, as a :class:`GossipAnalysis`.

    ``status`` is 0 when the topology averages: every ``W_k`` is row and column stochastic and
    the period product contracts (``rho < 1``); else 4, and ``message`` names the rule broken.

    Examples
    --------
    >>> from topocoll.gossip import gossip_topology
    >>> a = analyze(gossip_topology("ring-graph", 8))
    >>> a.status_name, round(a.rho, 6), a.exact_average_after
    ('SUCCESS', 0.804738, None)
    """
    t = _topo(topology)
    t.require_dense()
    r = period_rho(t)
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
                          rho_iterations=[rho(w) for w in t.matrices()],
                          exact_average_after=exact, row_stochastic=facts["row_stochastic"],
                          column_stochastic=facts["column_stochastic"],
                          symmetric=facts["symmetric"], degree=degree, groups=groups)


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


def same_mixing(a, b, tol=1e-12):
    """True if two topologies apply the same matrices in every iteration (periods may differ;
    compared over their least common multiple). Unlike Bluefog's ``IsTopologyEquivalent`` it
    needs no networkx matrix API.

    >>> from topocoll.gossip import gossip_topology
    >>> same_mixing(gossip_topology("complete", 5), gossip_topology("fully-connected-graph", 5))
    True
    """
    a, b = _topo(a), _topo(b)
    if a.size != b.size:
        return False
    span = np.lcm(a.period, b.period)
    return all(np.allclose(a.matrix(k), b.matrix(k), atol=tol, rtol=0) for k in range(span))


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


def plot_consensus(topologies, path, iterations=50, *, seed=0, title=None):
    """Draw the relative consensus error against iterations (log scale), one line per topology,
    and write it to ``path`` (``.png``, ``.svg``, ``.pdf``). Every topology starts from the same
    random values (``seed``); errors below ``1e-16`` are drawn at ``1e-16``.
    """
    from ..plotting import check_plot_target, new_axes, save_figure

    check_plot_target(path)
    topologies = [_topo(t) for t in topologies]
    if not topologies:
        raise SpecError("plot_consensus needs at least one topology")
    fig, ax = new_axes((7, 4.5))
    steps = np.arange(_iterations(iterations, "iterations") + 1)
    for t in topologies:
        x0 = np.random.default_rng(seed).standard_normal(t.size)
        err = np.maximum(consensus_errors(t, iterations, x0), 1e-16)
        over = "" if t.is_static else f" over {t.period} iterations"
        ax.plot(steps, err, linewidth=1.6,
                label=f"{t.name} (n={t.size}, rho={period_rho(t):.3g}{over})")
    ax.set_yscale("log")
    ax.set_xlabel("iteration")
    ax.set_ylabel("||x_k - mean|| / ||x_0 - mean||")
    ax.set_title(title or "consensus error of gossip averaging")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    save_figure(fig, path)
