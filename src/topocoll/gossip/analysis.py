"""Convergence analysis of gossip topologies (docs/math.md section 7).

Averaging ``x <- W_k x`` reaches the mean from every start iff the matrices (or their product over
a period) are row and column stochastic and the product's other eigenvalues lie strictly inside
the unit circle. The rate is ``rho = ||W - 11^T/n||_2``; for a dynamic topology, the rate of
the period product ``P = W_{p-1} ... W_1 W_0``, and ``rho(P)^(1/p)`` per iteration.

Up to :data:`DENSE_MAX` ranks the analysis works on dense matrices (exact SVD). Above, it works
on the sparse (CSR) mixing matrices and never forms an ``n x n`` array: the period product is a
:class:`scipy.sparse.linalg.LinearOperator` that applies the factors in sequence, ``11^T/n`` is
applied as "subtract the mean", and ``rho`` is the largest singular value of that operator found
by Lanczos (``eigsh`` on ``A^T A``, ``A = P - 11^T/n``), with a shift-invert stage for slowly
mixing topologies (see :func:`rho`). ``method="dense"`` or ``"sparse"`` forces either path.

>>> from topocoll.gossip import gossip_topology
>>> summary = analyze(gossip_topology("one-peer-exp", 8))
>>> summary.success, summary.period, summary.rho, summary.exact_average_after
(True, 3, 0.0, 3)
>>> round(rho(gossip_topology("exponential-graph", 16).matrix()), 12)
0.6
"""

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as sla
from scipy.sparse.csgraph import reverse_cuthill_mckee

from ..errors import (InputTypeError, ResourceLimitError, SpecError, TopocollError,
                      UnsupportedError)
from ..limits import require_memory
from ..results import Result, Status
from .model import GossipTopology
from .registry import GOSSIP_TOPOLOGIES, gossip_topology, resolve_gossip_name

__all__ = ["mixing_matrix", "period_product", "period_operator", "is_row_stochastic",
           "is_column_stochastic", "is_doubly_stochastic", "stochasticity", "rho", "period_rho",
           "exact_average_after", "consensus_errors", "analyze", "GossipAnalysis", "rho_table",
           "same_mixing", "plot_consensus", "DEFAULT_TOL", "EXACT_TOL", "SPARSE_TOL",
           "DENSE_MAX", "TABLE_SIZES", "TABLE_PARAMS", "MAX_ITERATIONS"]

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
#: Largest world size whose ``rho`` is computed densely (``numpy.linalg.norm(., 2)``) by
#: default; above it the sparse path runs (``method="auto"``). A dense SVD of 512 x 512 takes
#: about 0.1 s; the sparse path is faster above and needs memory for the non-zeros only.
DENSE_MAX = 512
#: Convergence tolerance handed to ARPACK (``eigsh``) on the sparse path: the residual of the
#: top eigenpair of ``A^T A`` relative to its eigenvalue (ARPACK's own criterion).
SPARSE_TOL = 1e-12
#: Products with ``A^T A`` the plain Lanczos stage may spend before shift-invert takes over.
LANCZOS_PRODUCTS = 1000
#: The shift-invert stage forms the period product and ``P^T P`` in CSR up to this many
#: stored weights per rank.
PRODUCT_FILL = 64
#: Shift of the shift-invert stage: eigenvalues of ``P^T P`` of a doubly stochastic ``P`` lie in
#: ``[0, 1]``, so ``1 + SHIFT`` sits just above the one sought.
SHIFT = 1e-6
#: Lanczos vectors ARPACK keeps (``ncv``): its own work per restart grows with it.
_NCV = 20
#: Below this many ranks the sparse path builds ``A`` from ``n`` products with the unit vectors
#: (ARPACK needs more room than ``n`` this small gives).
_TINY = 8
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
    """``P = W_{start+p-1} ... W_{start+1} W_start``: one period applied from iteration ``start``,
    as a dense array (memory-guarded: it needs ``n x n`` floats; the analysis itself uses
    :func:`period_operator` above :data:`DENSE_MAX` ranks).

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


def _factors(topology, start=0):
    """The sparse ``W_start, ..., W_{start+p-1}``, in the order they are applied."""
    t = _topo(topology)
    return [t.sparse_matrix(k) for k in range(start, start + t.period)]


def _apply(factors, x):
    for w in factors:
        x = w @ x
    return x


def _apply_t(factors, y):
    for w in reversed(factors):
        y = w.T @ y
    return y


def period_operator(topology, start=0):
    """The period product ``P`` as a :class:`scipy.sparse.linalg.LinearOperator` that applies
    the sparse factors ``W_start, W_{start+1}, ...`` in sequence (``P^T`` in reverse): never an
    ``n x n`` array, ``O(sum nnz(W_k))`` per product.

    >>> from topocoll.gossip import gossip_topology
    >>> p = period_operator(gossip_topology("ring", 20000))
    >>> p.shape, float((p @ np.arange(20000.0))[0])
    ((20000, 20000), 9999.5)
    """
    t = _topo(topology)
    factors = _factors(t, start)
    n = t.size
    return sla.LinearOperator((n, n), matvec=lambda x: _apply(factors, x),
                              rmatvec=lambda y: _apply_t(factors, y),
                              matmat=lambda x: _apply(factors, x),
                              rmatmat=lambda y: _apply_t(factors, y), dtype=np.float64)


def _square_any(w):
    """A square dense array, or a square scipy sparse matrix as CSR."""
    if sp.issparse(w):
        if w.ndim != 2 or w.shape[0] != w.shape[1]:
            raise InputTypeError(f"expected a square matrix, got shape {w.shape}")
        return sp.csr_array(w, dtype=np.float64)
    return _square(w)


def _stored(w):
    """The stored weights of a sparse matrix, or every entry of a dense one."""
    return w.data if sp.issparse(w) else w


def is_row_stochastic(w, tol=DEFAULT_TOL):
    """True if every row sums to 1 (within ``tol``) and no weight is negative. ``w`` may be a
    scipy sparse matrix (sums over the stored weights: no dense copy).

    >>> import scipy.sparse as sp
    >>> is_row_stochastic(sp.eye_array(3)), is_row_stochastic(sp.eye_array(3) * 0.5)
    (True, False)
    """
    w = _square_any(w)
    sums = np.asarray(w.sum(axis=1)).ravel()
    return bool(np.all(np.abs(sums - 1.0) <= tol) and np.all(_stored(w) >= -tol))


def is_column_stochastic(w, tol=DEFAULT_TOL):
    """True if every column sums to 1 (within ``tol``) and no weight is negative (dense or
    sparse ``w``)."""
    w = _square_any(w)
    return is_row_stochastic(w.T, tol)


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
    mats = t.sparse_matrices()   # sums and comparisons over the stored weights only
    return {"row_stochastic": all(is_row_stochastic(w, tol) for w in mats),
            "column_stochastic": all(is_column_stochastic(w, tol) for w in mats),
            "symmetric": all(_max_abs(w - w.T) <= tol for w in mats),
            "nonnegative": all(bool(np.all(w.data >= -tol)) for w in mats)}


def _max_abs(w):
    """``max |w_ij|`` of a sparse matrix (0 when it stores nothing)."""
    return float(np.abs(w.data).max()) if w.nnz else 0.0


def _check_method(method):
    if method not in ("auto", "dense", "sparse"):
        raise SpecError(f"method must be 'auto', 'dense' or 'sparse', got {method!r}")
    return method


def _dense_rho(w):
    value = float(np.linalg.norm(w - 1.0 / w.shape[0], 2))
    return 0.0 if value < EXACT_TOL else value


def rho(w, *, method="auto"):
    """``||W - 11^T/n||_2``: the worst-case contraction of the distance to the mean.

    Parameters
    ----------
    w : array_like or scipy sparse matrix, shape (n, n)
    method : {"auto", "dense", "sparse"}
        ``"dense"``: the exact 2-norm of the dense ``W - 11^T/n`` (LAPACK SVD, ``O(n^3)``, ``n^2``
        floats). ``"sparse"``: the largest singular value of ``A = W - 11^T/n`` applied as
        matrix-vector products (``11^T/n x`` is the mean of ``x``; nothing ``n x n`` is formed),
        see :func:`period_rho`. ``"auto"``: dense for a dense ``w`` and for ``n <=``
        :data:`DENSE_MAX`, sparse otherwise.

    Returns
    -------
    float
        Values below :data:`EXACT_TOL` are reported as ``0.0``.

    Examples
    --------
    >>> rho(np.full((4, 4), 0.25))
    0.0
    >>> import scipy.sparse as sp
    >>> half = sp.csr_array(np.kron(np.eye(1000), np.full((2, 2), 0.5)))   # 1000 pairs
    >>> round(rho(half), 12)
    1.0
    """
    _check_method(method)
    if sp.issparse(w):
        w = _square_any(w)
        if method == "dense" or (method == "auto" and w.shape[0] <= DENSE_MAX):
            return _dense_rho(w.toarray())
        return _sparse_rho([w], "the matrix")
    w = _square(w)
    if method == "sparse":
        return _sparse_rho([sp.csr_array(w)], "the matrix")
    return _dense_rho(w)


def period_rho(topology, start=0, *, method="auto"):
    """``rho`` of the period product (equal to ``rho(W)`` for a static topology).

    Parameters
    ----------
    topology : GossipTopology
    start : int
        First iteration of the period.
    method : {"auto", "dense", "sparse"}
        ``"dense"``: form ``P`` densely and take the exact 2-norm of ``P - 11^T/n``.
        ``"sparse"``: never form ``P``. Lanczos (ARPACK ``eigsh``, tolerance
        :data:`SPARSE_TOL`) finds the top eigenpair ``(lambda, v)`` of ``A^T A`` with
        ``A = P - 11^T/n`` applied through the sparse factors (:func:`period_operator`) and the
        mean; ``rho = ||A v||``. When Lanczos has not converged after
        :data:`LANCZOS_PRODUCTS` products (eigenvalues clustered just below 1: a ring of
        thousands of ranks has ``1 - rho ~ 5e-8``) and every ``W_k`` is doubly stochastic,
        shift-invert takes over: ``P`` and ``P^T P`` are formed in CSR (at most
        :data:`PRODUCT_FILL` weights per rank), ``P^T P - (1 + SHIFT) I`` is factorized
        (SuperLU) and ARPACK iterates on its inverse, which separates the top eigenvalues.
        Either way the result is numerical: agreement with the dense path is about
        ``1e-10`` (tests check ``1e-8``), values below :data:`EXACT_TOL` are reported as 0.
        ``"auto"``: dense up to :data:`DENSE_MAX` ranks, sparse above.

    Raises
    ------
    UnsupportedError
        The sparse path neither converged nor could shift-invert (not doubly stochastic, or
        the product too dense) and the dense path does not fit under the memory limit.

    Examples
    --------
    >>> from topocoll.gossip import gossip_topology
    >>> t = gossip_topology("ring", 64)
    >>> abs(period_rho(t, method="sparse") - period_rho(t, method="dense")) < 1e-10
    True
    """
    t = _topo(topology)
    _check_method(method)
    if method == "dense" or (method == "auto" and t.size <= DENSE_MAX):
        return rho(period_product(t, start))
    return _sparse_rho(_factors(t, start), f"{t.name} on {t.size} ranks",
                       lambda: rho(period_product(t, start)))


class _Exhausted(Exception):
    """The Lanczos stage spent its products (internal: caught by :func:`_sparse_rho`)."""


def _sparse_rho(factors, what, dense=None):
    """``||P - 11^T/n||_2`` of ``P = factors[-1] ... factors[0]`` from products only."""
    n = factors[0].shape[0]
    if n == 1:
        return 0.0

    def a(x):
        return _apply(factors, x) - x.mean(axis=0)

    def at(y):
        return _apply_t(factors, y) - y.mean(axis=0)

    if n <= _TINY:   # n products with the unit vectors give A exactly
        return _dense_rho(_apply(factors, np.eye(n)))
    count = [0]

    def normal(x):
        count[0] += 1
        if count[0] > LANCZOS_PRODUCTS:
            raise _Exhausted
        return at(a(np.asarray(x, dtype=np.float64).reshape(n)))

    op = sla.LinearOperator((n, n), matvec=normal, dtype=np.float64)
    rng = np.random.default_rng(0)
    probe = rng.standard_normal((n, 2))
    if np.linalg.norm(a(probe)) <= EXACT_TOL * np.linalg.norm(probe):
        # A maps random Gaussian vectors to 0, which a non-zero A does with probability 0
        # (and ARPACK cannot start from B v0 = 0): P is the exact mean.
        return 0.0
    v0 = rng.standard_normal(n)
    try:
        _, vec = sla.eigsh(op, k=1, which="LA", tol=SPARSE_TOL, ncv=min(n, _NCV), v0=v0,
                           maxiter=10 * LANCZOS_PRODUCTS)
        return _rho_of_vector(a, vec[:, 0])
    except (_Exhausted, sla.ArpackNoConvergence, sla.ArpackError):
        pass
    vec = _shift_invert(factors, n, v0)
    if vec is not None:
        return _rho_of_vector(a, vec)
    if dense is not None:
        try:
            return dense()
        except ResourceLimitError:
            pass
    raise UnsupportedError(f"rho of {what}: Lanczos did not converge within "
                           f"{LANCZOS_PRODUCTS} products, and shift-invert needs doubly "
                           f"stochastic mixing matrices whose period product has at most "
                           f"{PRODUCT_FILL} weights per rank")


def _rho_of_vector(a, v):
    """``||A v|| / ||v||``: the singular value belonging to the top right singular vector ``v``
    (a Rayleigh quotient: its error is quadratic in the vector's)."""
    value = float(np.linalg.norm(a(v)) / np.linalg.norm(v))
    return 0.0 if value < EXACT_TOL else value


def _sparse_product(factors, limit):
    """``factors[-1] ... factors[0]`` in CSR, or ``None`` once it would store over ``limit``."""
    p = factors[0]
    for w in factors[1:]:
        widest = int(np.diff(w.indptr).max()) if w.nnz else 0
        if p.nnz * max(widest, 1) > limit:
            return None
        p = (w @ p).tocsr()
    return p if p.nnz <= limit else None


def _shift_invert(factors, n, v0):
    """Top eigenvector of ``P^T P`` on the complement of the all-ones vector by shift-invert,
    or ``None`` where that does not apply (see :func:`period_rho`)."""
    if not all(is_doubly_stochastic(w) for w in factors):
        return None
    limit = PRODUCT_FILL * n
    p = _sparse_product(factors, limit)
    if p is None:
        return None
    pt = p.T.tocsr()
    if p.nnz * (int(np.diff(pt.indptr).max()) if pt.nnz else 1) > 4 * limit:
        return None
    sigma = 1.0 + SHIFT
    # P doubly stochastic: P^T P 1 = 1, so M = P^T P - sigma I maps 1 to (1 - sigma) 1 and the
    # operator B - sigma I (B = P^T P - 11^T/n) acts on the mean as -sigma.
    m = (pt @ p - sigma * sp.eye_array(n, format="csr")).tocsr()
    # Reverse Cuthill-McKee puts the weights into a band of half-width b; LU in that order with
    # row pivoting stays inside half-widths b (L) and 2b (U), which bounds its memory up front.
    order = reverse_cuthill_mckee(m, symmetric_mode=True)
    m = m[order][:, order].tocoo()
    band = int(np.abs(m.row - m.col).max())
    try:
        require_memory(12 * n * (3 * band + 1), f"shift-invert of rho for {n} ranks")
    except ResourceLimitError:
        return None
    lu = sla.splu(m.tocsc(), permc_spec="NATURAL")
    where = np.empty(n, dtype=np.int64)
    where[order] = np.arange(n)

    def b(x):
        x = np.asarray(x, dtype=np.float64).reshape(n)
        x = x - x.mean()
        y = _apply_t(factors, _apply(factors, x))
        return y - y.mean()

    def inv(y):
        y = np.asarray(y, dtype=np.float64).reshape(n)
        mean = y.mean()
        return lu.solve((y - mean)[order])[where] - mean / sigma

    op = sla.LinearOperator((n, n), matvec=b, dtype=np.float64)
    opinv = sla.LinearOperator((n, n), matvec=inv, dtype=np.float64)
    try:
        _, vec = sla.eigsh(op, k=1, sigma=sigma, which="LM", OPinv=opinv, tol=SPARSE_TOL,
                           ncv=min(n, _NCV), v0=v0)
    except (sla.ArpackNoConvergence, sla.ArpackError):
        return None
    return vec[:, 0]


def exact_average_after(topology, max_iterations=None, progress=None, *, seed=0):
    """The number of iterations after which every start is exactly at the mean, or ``None``.

    Applies ``W_0, W_1, ...`` and stops at the first ``t`` with ``W_{t-1} ... W_0 = 11^T/n``.
    The product is tested on eight random start vectors (``seed``), which detects ``P != J``
    with probability 1 (a non-zero matrix maps a random Gaussian vector to 0 with probability
    0) at ``O(nnz(W_k))`` per iteration with the sparse matrices, never forming the product,
    at every size (the dense and sparse paths are the same test). The test is numerical: in
    floating point "exactly" means the largest deviation from the mean, relative to the
    start's, drops below :data:`EXACT_TOL` in one iteration from above ``1e-6`` (finite-time
    averaging collapses the error; geometric convergence shrinks it by about ``rho`` per
    iteration and is reported as ``None``).

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
    limit = max(64, 4 * t.period) if max_iterations is None else \
        _iterations(max_iterations, "max_iterations")
    if t.size == 1:
        return 0
    mats = t.sparse_matrices()
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
    mats = t.sparse_matrices()   # O(nnz) per iteration, no n x n array
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
    t = _topo(topology)
    _check_method(method)
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
    return all(_max_abs(a.sparse_matrix(k) - b.sparse_matrix(k)) <= tol for k in range(span))


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


def _rho_label(r):
    """``rho`` in three digits, or ``1-d`` when three digits would round it to 1.

    >>> _rho_label(0.62421), _rho_label(0.9999999506)
    ('0.624', '1-4.94e-08')
    """
    return f"1-{1 - r:.3g}" if 0.9995 <= r < 1 else f"{r:.3g}"


def plot_consensus(topologies, path, iterations=50, *, seed=0, title=None):
    """Draw the relative consensus error against iterations (log scale), one line per topology,
    and write it to ``path`` (``.png``, ``.svg``, ``.pdf``). Every topology starts from the same
    random values (``seed``); errors below ``1e-16`` are drawn at ``1e-16``.
    """
    from ..plotting import check_plot_target, new_axes, save_figure, wrap_title

    check_plot_target(path)
    topologies = [_topo(t) for t in topologies]
    if not topologies:
        raise SpecError("plot_consensus needs at least one topology")
    fig, ax = new_axes((7, 4.5))
    steps = np.arange(_iterations(iterations, "iterations") + 1)
    floored = False
    for t in topologies:
        x0 = np.random.default_rng(seed).standard_normal(t.size)
        err = np.maximum(consensus_errors(t, iterations, x0), 1e-16)
        over = "" if t.is_static else f" over {t.period} iterations"
        ax.plot(steps, err, linewidth=1.6,
                label=f"{t.name} (n={t.size}, rho={_rho_label(period_rho(t))}{over})")
        floored = floored or bool(np.any(err <= 1e-16))
    if floored:
        ax.axhline(1e-16, color="gray", linestyle=":", linewidth=1.0,
                   label="1e-16: exact average reached (errors below drawn here)")
    ax.set_yscale("log")
    ax.set_xlabel("iteration (gossip rounds)")
    ax.set_ylabel("relative consensus error (log scale)\n"
                  r"$\Vert x_k - \bar{x} \Vert \,/\, \Vert x_0 - \bar{x} \Vert$")
    ax.set_title(wrap_title(title or "consensus error of gossip averaging from the same random "
                            "start (lower is better)", 6.0, 11), fontsize=11)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, title="topology (n: nodes; rho: worst-case error factor per period)",
              title_fontsize=8)
    save_figure(fig, path)
