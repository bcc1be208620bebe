"""A thin layer over HiGHS (``highspy``): one sparse LP in, primal values and row duals out.

The all-to-all LPs are large and sparse (N x |E| columns), so they go to HiGHS as one CSC matrix
through ``passModel`` rather than through ``scipy.optimize.linprog``'s dense-friendly checks.
Interior point (``ipm``) or PDLP is the default: the dual simplex that HiGHS picks on its own is
far slower on these highly degenerate multicommodity-flow problems.
"""

import time
from dataclasses import dataclass

import numpy as np

from ..errors import UnsupportedError
from ..highs import column_model, solver as new_solver

__all__ = ["LpSolution", "solve_lp", "SOLVERS"]

#: Solvers accepted by :func:`solve_lp` (HiGHS option ``solver``; ``auto`` picks one by size).
#: The clock of every time limit in the all-to-all solvers (tests replace it with a fake one).
clock = time.monotonic

SOLVERS = ("auto", "ipm", "pdlp", "simplex", "choose")
#: ``auto`` uses the interior point below this many columns and PDLP from there on: on these
#: flow LPs HiGHS' interior point (IPX) grows much faster than PDLP (128-node degree-8 random
#: regular graph, 37k columns: 8.5 s against 3.6 s), while on small LPs it is quicker and exact.
AUTO_PDLP_COLUMNS = 30_000
#: PDLP's feasibility/optimality tolerance under ``auto`` (the certificate reports the true gap).
AUTO_PDLP_TOLERANCE = 1e-7


@dataclass
class LpSolution:
    """What HiGHS returned: ``x`` (primal), ``row_dual`` (one per row, HiGHS' sign convention),
    ``ok`` (an optimal or feasible primal), the model ``status`` text and statistics."""

    x: np.ndarray
    row_dual: np.ndarray
    ok: bool
    status: str
    objective: float
    iterations: int
    seconds: float
    solver: str = ""


def solve_lp(cost, matrix, row_lower, row_upper, *, col_upper=None, maximize=True, solver="ipm",
             crossover=False, time_limit=None, threads=None, tolerance=None, verbose=False):
    """Solve ``max/min cost @ x`` s.t. ``row_lower <= matrix @ x <= row_upper``, ``0 <= x``.

    Parameters
    ----------
    cost : array of float
    matrix : scipy.sparse matrix
        Converted to CSC.
    row_lower, row_upper : arrays of float (``-inf``/``inf`` allowed)
    col_upper : array of float, optional
        Upper bounds of the columns (default: none).
    solver : {"auto", "ipm", "pdlp", "simplex", "choose"}
    crossover : bool
        Run crossover after the interior point (a vertex solution; slower).

    Examples
    --------
    >>> import scipy.sparse as sp
    >>> sol = solve_lp(np.array([1.0, 1.0]), sp.csc_matrix(np.array([[1.0, 2.0]])),
    ...                np.array([-np.inf]), np.array([3.0]))
    >>> sol.ok, round(sol.objective, 6)
    (True, 3.0)
    """
    if solver not in SOLVERS:
        raise UnsupportedError(f"unknown LP solver {solver!r}; choose one of {', '.join(SOLVERS)}")
    a = matrix.tocsc()
    a.sort_indices()
    num_rows, num_cols = a.shape
    if solver == "auto":
        solver = "ipm" if num_cols < AUTO_PDLP_COLUMNS else "pdlp"
        if solver == "pdlp" and tolerance is None:
            tolerance = AUTO_PDLP_TOLERANCE
    lp = column_model(cost, (a.indptr, a.indices, a.data), row_lower, row_upper,
                      col_upper=col_upper, maximize=maximize)
    h = new_solver(threads=threads, time_limit=time_limit, verbose=verbose, solver=solver)
    if solver in ("ipm", "choose"):
        h.setOptionValue("run_crossover", "on" if crossover else "off")
    if tolerance is not None:
        for name in ("primal_feasibility_tolerance", "dual_feasibility_tolerance"):
            h.setOptionValue(name, float(tolerance))
        h.setOptionValue("ipm_optimality_tolerance", float(tolerance))
    h.passModel(lp)
    start = time.perf_counter()
    h.run()
    seconds = time.perf_counter() - start
    status = h.modelStatusToString(h.getModelStatus())
    info = h.getInfo()
    sol = h.getSolution()
    # An interior point without crossover may end "Unknown" with a good primal; accept a primal
    # that HiGHS calls feasible (2) and let the caller's certificate measure how good it is.
    ok = status == "Optimal" or (info.primal_solution_status == 2 and sol.value_valid)
    x = np.asarray(sol.col_value, dtype=np.float64) if sol.value_valid else np.zeros(num_cols)
    dual = np.asarray(sol.row_dual, dtype=np.float64) if sol.dual_valid else np.zeros(num_rows)
    iterations = int(info.ipm_iteration_count + info.simplex_iteration_count
                     + info.pdlp_iteration_count)
    return LpSolution(x=x, row_dual=dual, ok=bool(ok), status=status,
                      objective=float(info.objective_function_value), iterations=iterations,
                      seconds=seconds, solver=solver)
