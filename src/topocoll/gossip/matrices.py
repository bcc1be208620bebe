"""Mixing matrices of a gossip topology: the period product (dense, or as a sparse operator)
and the stochasticity checks that say whether averaging keeps the mean.

>>> from topocoll.gossip import gossip_topology
>>> is_doubly_stochastic(mixing_matrix(gossip_topology("ring", 8)))
True
"""

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg as sla

from ..errors import InputTypeError
from .mixing import GossipTopology

__all__ = ["mixing_matrix", "period_product", "period_operator", "period_factors",
           "apply_factors", "apply_factors_transposed", "is_row_stochastic",
           "is_column_stochastic", "is_doubly_stochastic", "stochasticity", "same_mixing",
           "as_gossip_topology", "as_square", "as_square_matrix", "DEFAULT_TOL"]

#: Tolerance of the stochasticity checks (row and column sums equal to 1).
DEFAULT_TOL = 1e-9


def as_gossip_topology(topology):
    """``topology`` itself, checked to be a :class:`GossipTopology`."""
    if not isinstance(topology, GossipTopology):
        raise InputTypeError(f"expected a GossipTopology, got {type(topology).__name__}")
    return topology


def as_square(w):
    """``w`` as a square dense float array, checked."""
    w = np.asarray(w, dtype=np.float64)
    if w.ndim != 2 or w.shape[0] != w.shape[1]:
        raise InputTypeError(f"expected a square matrix, got shape {w.shape}")
    return w


def mixing_matrix(topology, k=0):
    """The mixing matrix of iteration ``k`` (same as ``topology.matrix(k)``)."""
    return as_gossip_topology(topology).matrix(k)


def period_product(topology, start=0):
    """``P = W_{start+p-1} ... W_{start+1} W_start``: one period applied from iteration ``start``,
    as a dense array (memory-guarded: it needs ``n x n`` floats; the analysis itself uses
    :func:`period_operator` above :data:`DENSE_MAX` ranks).

    >>> from topocoll.gossip import gossip_topology
    >>> period_product(gossip_topology("one-peer-exp", 4)).tolist()[0]
    [0.25, 0.25, 0.25, 0.25]
    """
    t = as_gossip_topology(topology)
    t.require_dense()
    p = np.eye(t.size)
    for k in range(start, start + t.period):
        p = t.matrix(k) @ p
    return p


def period_factors(topology, start=0):
    """The sparse ``W_start, ..., W_{start+p-1}``, in the order they are applied."""
    t = as_gossip_topology(topology)
    return [t.sparse_matrix(k) for k in range(start, start + t.period)]


def apply_factors(factors, x):
    for w in factors:
        x = w @ x
    return x


def apply_factors_transposed(factors, y):
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
    t = as_gossip_topology(topology)
    factors = period_factors(t, start)
    n = t.size
    return sla.LinearOperator((n, n), matvec=lambda x: apply_factors(factors, x),
                              rmatvec=lambda y: apply_factors_transposed(factors, y),
                              matmat=lambda x: apply_factors(factors, x),
                              rmatmat=lambda y: apply_factors_transposed(factors, y), dtype=np.float64)


def as_square_matrix(w):
    """A square dense array, or a square scipy sparse matrix as CSR."""
    if sp.issparse(w):
        if w.ndim != 2 or w.shape[0] != w.shape[1]:
            raise InputTypeError(f"expected a square matrix, got shape {w.shape}")
        return sp.csr_array(w, dtype=np.float64)
    return as_square(w)


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
    w = as_square_matrix(w)
    sums = np.asarray(w.sum(axis=1)).ravel()
    return bool(np.all(np.abs(sums - 1.0) <= tol) and np.all(_stored(w) >= -tol))


def is_column_stochastic(w, tol=DEFAULT_TOL):
    """True if every column sums to 1 (within ``tol``) and no weight is negative (dense or
    sparse ``w``)."""
    w = as_square_matrix(w)
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
    t = as_gossip_topology(topology)
    mats = t.sparse_matrices()   # sums and comparisons over the stored weights only
    return {"row_stochastic": all(is_row_stochastic(w, tol) for w in mats),
            "column_stochastic": all(is_column_stochastic(w, tol) for w in mats),
            "symmetric": all(_max_abs(w - w.T) <= tol for w in mats),
            "nonnegative": all(bool(np.all(w.data >= -tol)) for w in mats)}


def _max_abs(w):
    """``max |w_ij|`` of a sparse matrix (0 when it stores nothing)."""
    return float(np.abs(w.data).max()) if w.nnz else 0.0


def same_mixing(a, b, tol=1e-12):
    """True if two topologies apply the same matrices in every iteration (periods may differ;
    compared over their least common multiple). Unlike Bluefog's ``IsTopologyEquivalent`` it
    needs no networkx matrix API.

    >>> from topocoll.gossip import gossip_topology
    >>> same_mixing(gossip_topology("complete", 5), gossip_topology("fully-connected-graph", 5))
    True
    """
    a, b = as_gossip_topology(a), as_gossip_topology(b)
    if a.size != b.size:
        return False
    span = np.lcm(a.period, b.period)
    return all(_max_abs(a.sparse_matrix(k) - b.sparse_matrix(k)) <= tol for k in range(span))
