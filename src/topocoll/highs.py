"""The one place that makes HiGHS solver objects (``highspy``) for the whole package.

Two things about HiGHS are process-wide, and both are handled here so that no result depends
on what ran before it in the same process:

* **the thread scheduler.** HiGHS starts one global task scheduler the first time a model runs,
  with the ``threads`` option of that model; a later model that asks for another thread count
  fails ("the scheduler has already been initialized") and returns no solution. Every solver
  made here sets ``threads`` explicitly, and the scheduler is restarted whenever the count
  differs from the one it was started with (:data:`DEFAULT_THREADS` unless a caller asks).
* **the banner.** highspy prints a licence banner on standard output when the first ``Highs``
  object of a process is made, before any option can be set; it would corrupt ``--json``
  output and schedule files written to stdout. The first construction runs with file
  descriptor 1 pointed at ``/dev/null``.

Output of the solvers themselves is off unless ``verbose=True`` (then it goes to stderr).

:func:`status_of` is the one map from HiGHS model statuses to the package's result statuses
(:mod:`topocoll.results`): optimal is 0, a time, iteration, node or solution limit is 1, a
proven infeasible model is 4 and everything else (errors, unbounded, unknown) is 5.

>>> h = solver(time_limit=5)
>>> h.getOptionValue("threads")[1], h.getOptionValue("output_flag")[1]
(1, False)
"""

import os
import sys
import threading

from .results import Status

__all__ = ["solver", "column_model", "status_of", "DEFAULT_THREADS"]

#: Threads of every HiGHS solver unless the caller asks for more: the interior point, PDLP and
#: the MIP search that topocoll uses are serial, and the machines it runs on are shared.
DEFAULT_THREADS = 1

_lock = threading.Lock()
_state = {"constructed": False, "threads": None}   # mirrors HiGHS' own process-wide state


def _flush_c_stdout():
    try:
        import ctypes

        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError):  # no C library to flush: nothing was buffered there
        pass


def _construct():
    import highspy

    if _state["constructed"]:
        return highspy.Highs()
    sys.stdout.flush()
    saved = os.dup(1)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
        h = highspy.Highs()
        _flush_c_stdout()       # the banner sits in C's stdio buffer until flushed: drop it
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(devnull)
    _state["constructed"] = True
    return h


def solver(*, threads=None, time_limit=None, seed=None, verbose=False, **options):
    """A fresh ``highspy.Highs`` with output off, the thread count set and the options given.

    Parameters
    ----------
    threads : int, optional
        HiGHS threads (default :data:`DEFAULT_THREADS`). HiGHS' global scheduler is restarted
        when this differs from the count it runs with.
    time_limit : float, optional
        Seconds (HiGHS option ``time_limit``).
    seed : int, optional
        HiGHS option ``random_seed``.
    verbose : bool
        Let HiGHS log its progress (to stderr: standard output is reserved for results).
    **options
        Further HiGHS options by name (``solver="ipm"``, ``mip_max_nodes=100``, ...).
    """
    threads = DEFAULT_THREADS if threads is None else int(threads)
    with _lock:
        h = _construct()
        if _state["threads"] != threads:
            import highspy

            highspy.Highs.resetGlobalScheduler(True)
            _state["threads"] = threads
    h.setOptionValue("output_flag", bool(verbose))
    if verbose:   # HiGHS logs to the console (stdout); send its lines to stderr instead
        h.setOptionValue("log_to_console", False)
        h.cbLogging.subscribe(lambda event: sys.stderr.write(event.message))
    h.setOptionValue("threads", threads)
    if time_limit is not None:
        h.setOptionValue("time_limit", float(time_limit))
    if seed is not None:
        h.setOptionValue("random_seed", int(seed) % (2**31 - 1))
    for name, value in options.items():
        h.setOptionValue(name, value)
    return h


def column_model(cost, columns, row_lower, row_upper, *, col_upper=None, maximize=False):
    """A ``highspy.HighsLp``: optimise ``cost @ x`` subject to ``row_lower <= A @ x <=
    row_upper`` and ``0 <= x <= col_upper`` (no upper bound where None or infinite; infinite
    row bounds are open), with ``A`` given column-wise as ``(start, row index, value)``.

    >>> import numpy as np
    >>> lp = column_model(np.ones(2), ([0, 1, 2], [0, 0], [1.0, 2.0]), [-np.inf], [3.0])
    >>> lp.num_col_, lp.num_row_
    (2, 1)
    """
    import highspy
    import numpy as np

    start, index, value = columns
    cost = np.asarray(cost, dtype=np.float64)
    row_lower = np.asarray(row_lower, dtype=np.float64)
    row_upper = np.asarray(row_upper, dtype=np.float64)
    num_cols, num_rows = cost.size, row_lower.size
    inf = highspy.kHighsInf
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = num_cols, num_rows
    lp.col_cost_ = cost
    lp.col_lower_ = np.zeros(num_cols)
    upper = np.full(num_cols, inf) if col_upper is None else np.asarray(col_upper, np.float64)
    lp.col_upper_ = np.where(np.isfinite(upper), upper, inf)
    lp.row_lower_ = np.where(np.isfinite(row_lower), row_lower, -inf)
    lp.row_upper_ = np.where(np.isfinite(row_upper), row_upper, inf)
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = num_cols, num_rows
    lp.a_matrix_.start_ = np.asarray(start, dtype=np.int32)
    lp.a_matrix_.index_ = np.asarray(index, dtype=np.int32)
    lp.a_matrix_.value_ = np.asarray(value, dtype=np.float64)
    lp.sense_ = highspy.ObjSense.kMaximize if maximize else highspy.ObjSense.kMinimize
    return lp


#: HiGHS model status name -> result status code (see :mod:`topocoll.results`); any status not
#: named here (load, presolve, solve and postsolve errors, unbounded, unknown, not set) is 5.
_STATUS_BY_NAME = {
    "kOptimal": 0, "kModelEmpty": 0,
    "kTimeLimit": 1, "kIterationLimit": 1, "kSolutionLimit": 1, "kInterrupt": 1,
    "kHighsInterrupt": 1, "kObjectiveBound": 1, "kObjectiveTarget": 1, "kMemoryLimit": 1,
    "kInfeasible": 4,
}


def status_of(model_status):
    """The result status (a :class:`topocoll.results.Status`) of a HiGHS model status.

    >>> import highspy
    >>> status_of(highspy.HighsModelStatus.kTimeLimit).name
    'LIMIT'
    >>> status_of(highspy.HighsModelStatus.kSolveError).name
    'FAILED'
    """
    return Status(_STATUS_BY_NAME.get(model_status.name, 5))
