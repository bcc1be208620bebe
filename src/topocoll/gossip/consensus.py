"""Averaging run forward: when every start is exactly at the mean, the consensus error after
each iteration, and a plot of it.

>>> from topocoll.gossip import gossip_topology
>>> exact_average_after(gossip_topology("one-peer-exp", 8))
3
"""

import numpy as np

from ..errors import InputTypeError, SpecError, UnsupportedError
from ..units import whole_number
from .matrices import as_gossip_topology
from .spectrum import EXACT_TOL, period_rho

__all__ = ["exact_average_after", "consensus_errors", "plot_consensus", "check_iterations",
           "MAX_ITERATIONS"]

#: Most iterations :func:`consensus_errors` runs: a million products with the mixing matrix
#: (the error of any topology that averages is far below rounding long before).
MAX_ITERATIONS = 10**6
#: An error below :data:`EXACT_TOL` is the exact mean provided it fell there in one iteration from above this: geometric convergence at any
#: realistic rate never drops by six orders of magnitude in one iteration.
_EXACT_FROM = 1e-6


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
    t = as_gossip_topology(topology)
    limit = max(64, 4 * t.period) if max_iterations is None else \
        check_iterations(max_iterations, "max_iterations")
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


def check_iterations(value, name):
    """A count of iterations checked up front: whole, >= 0, at most :data:`MAX_ITERATIONS`."""
    value = whole_number(value, name, 0)
    # the cap gets its own message: it is there to bound the work, and says so
    if value > MAX_ITERATIONS:
        raise UnsupportedError(f"{name} must be at most {MAX_ITERATIONS:,} (each is a "
                               f"product with the mixing matrix), got {value:,}")
    return value


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
    t = as_gossip_topology(topology)
    iterations = check_iterations(iterations, "iterations")
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
    topologies = [as_gossip_topology(t) for t in topologies]
    if not topologies:
        raise SpecError("plot_consensus needs at least one topology")
    fig, ax = new_axes((7, 4.5))
    steps = np.arange(check_iterations(iterations, "iterations") + 1)
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
