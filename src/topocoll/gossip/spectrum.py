"""``rho``: how fast averaging contracts, ``||W - 11^T/n||_2`` of a matrix or a period product.

Up to :data:`DENSE_MAX` ranks the analysis works on dense matrices (exact SVD). Above, it works
on the sparse (CSR) mixing matrices and never forms an ``n x n`` array: the period product is a
:class:`scipy.sparse.linalg.LinearOperator` that applies the factors in sequence, ``11^T/n`` is
applied as "subtract the mean", and ``rho`` is the largest singular value of that operator found
by Lanczos (``eigsh`` on ``A^T A``, ``A = P - 11^T/n``), with a shift-invert stage for slowly
mixing topologies (see :func:`rho`). ``method="dense"`` or ``"sparse"`` forces either path.

>>> from topocoll.gossip import gossip_topology
>>> round(rho(gossip_topology("exponential-graph", 16).matrix()), 12)
0.6
"""

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as sla
from scipy.sparse.csgraph import reverse_cuthill_mckee

from ..errors import ResourceLimitError, SpecError, UnsupportedError
from ..limits import require_memory
from .matrices import (apply_factors, apply_factors_transposed, as_gossip_topology, as_square,
                       as_square_matrix, is_doubly_stochastic, period_factors,
                       period_product)

__all__ = ["rho", "period_rho", "check_method", "shift_invert_vector", "EXACT_TOL",
           "DENSE_MAX", "SPARSE_TOL", "LANCZOS_PRODUCTS", "PRODUCT_FILL", "SHIFT"]

#: A ``rho`` or an error below this counts as 0, the exact mean (rounding only).
EXACT_TOL = 1e-12
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


def check_method(method):
    """``method`` of :func:`rho`, checked: ``"auto"``, ``"dense"`` or ``"sparse"``."""
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
    check_method(method)
    if sp.issparse(w):
        w = as_square_matrix(w)
        if method == "dense" or (method == "auto" and w.shape[0] <= DENSE_MAX):
            return _dense_rho(w.toarray())
        return _sparse_rho([w], "the matrix")
    w = as_square(w)
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
    t = as_gossip_topology(topology)
    check_method(method)
    if method == "dense" or (method == "auto" and t.size <= DENSE_MAX):
        return rho(period_product(t, start))
    return _sparse_rho(period_factors(t, start), f"{t.name} on {t.size} ranks",
                       lambda: rho(period_product(t, start)))


class _Exhausted(Exception):
    """The Lanczos stage spent its products (internal: caught by :func:`_sparse_rho`)."""


def _sparse_rho(factors, what, dense=None):
    """``||P - 11^T/n||_2`` of ``P = factors[-1] ... factors[0]`` from products only."""
    n = factors[0].shape[0]
    if n == 1:
        return 0.0

    def a(x):
        return apply_factors(factors, x) - x.mean(axis=0)

    def at(y):
        return apply_factors_transposed(factors, y) - y.mean(axis=0)

    if n <= _TINY:   # n products with the unit vectors give A exactly
        return _dense_rho(apply_factors(factors, np.eye(n)))
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
    vec = shift_invert_vector(factors, n, v0)
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


def shift_invert_vector(factors, n, v0):
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
        y = apply_factors_transposed(factors, apply_factors(factors, x))
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
