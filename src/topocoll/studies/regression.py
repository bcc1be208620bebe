"""The cost model's constants fitted to measured runs (Zhao et al., NSDI 2025, appendix H).

A run that takes ``seconds`` is modelled as

    seconds = overhead + alpha x steps + (1/beta) x bw_bytes + gamma x reduced_bytes

``steps`` its comm steps, ``bw_bytes = T_B x B`` the bytes per node of its bandwidth term
(``T_B`` times the node bandwidth ``B``: ``2 (N-1) M / N`` for a bandwidth-optimal allreduce),
``reduced_bytes = T_gamma / gamma`` (docs/math.md, "The reduction cost gamma"). ``overhead``
is the fixed cost of a call (kernel launches, the runtime: the paper's alpha_0), fitted by
default; ``gamma`` is fitted on request. :func:`fit_cost_model` solves for the constants by
least squares on the relative errors with every constant non-negative and reports the average
and largest relative error of the fit (the paper: 1.71% / 6.21% for latency, 0.47% / 1.32%
for bandwidth on its testbed).

A constant the runs cannot tell apart from the others is refused, with the rule: runs that all
take the same number of steps cannot separate alpha from the overhead, and in bandwidth-optimal
allreduces ``reduced_bytes = bw_bytes / 2`` always (corollary 8.1), so they cannot separate gamma
from 1/beta: fold gamma into beta instead (``B' = B / (1 + gamma B / 2)``).

>>> rows = [(s, b, 0.0, 5e-6 + 2e-6 * s + 1e-9 * b) for s in (2, 4, 8) for b in (1e3, 1e6)]
>>> fit = fit_cost_model(rows)
>>> round(fit.alpha * 1e6, 9), round(fit.inverse_beta * 1e9, 9), round(fit.overhead * 1e6, 9)
(2.0, 1.0, 5.0)
>>> fit.max_relative_error < 1e-12
True
"""

import os
from dataclasses import dataclass

import numpy as np

from ..errors import FitError, InputTypeError, NotIdentifiableError
from ..fileio import parse_json, read_text
from ..schedule.cost import evaluate
from ..schedule.io import load_schedule
from ..schedule.reduction import node_in_bandwidth, reduction_step_loads

__all__ = ["CostModelFit", "fit_cost_model", "schedule_row", "run_rows", "load_runs",
           "ROW_FIELDS"]

#: The fields of a row, in order.
ROW_FIELDS = ("steps", "bw_bytes", "reduced_bytes", "seconds")


@dataclass(frozen=True)
class CostModelFit:
    """Fitted constants (seconds per step, per byte at a node, per byte reduced, per call;
    ``gamma`` / ``overhead`` None where not fitted), the runs' measured and fitted seconds and
    the relative errors ``|fitted - measured| / measured`` (mean and largest)."""

    alpha: float
    inverse_beta: float
    gamma: object
    overhead: object
    measured: tuple
    fitted: tuple
    mean_relative_error: float
    max_relative_error: float

    @property
    def beta(self):
        """The fitted node bandwidth (bytes/s): ``1 / inverse_beta``."""
        return 1.0 / self.inverse_beta if self.inverse_beta > 0 else float("inf")

    def predict(self, steps, bw_bytes, reduced_bytes=0.0):
        """Seconds the fitted model gives a run."""
        return ((self.overhead or 0.0) + self.alpha * steps + self.inverse_beta * bw_bytes
                + (self.gamma or 0.0) * reduced_bytes)

    def to_dict(self):
        return {"alpha": self.alpha, "inverse_beta": self.inverse_beta, "beta": self.beta,
                "gamma": self.gamma, "overhead": self.overhead, "runs": len(self.measured),
                "mean_relative_error": self.mean_relative_error,
                "max_relative_error": self.max_relative_error,
                "measured": list(self.measured), "fitted": list(self.fitted)}


def _as_rows(rows):
    """Rows as a float array of shape (k, 4), each checked."""
    table = []
    for i, row in enumerate(rows):
        if isinstance(row, dict):
            missing = [f for f in ROW_FIELDS if f not in row and f != "reduced_bytes"]
            if missing:
                raise InputTypeError(f"run {i}: missing {', '.join(missing)} (a row has "
                                     f"{', '.join(ROW_FIELDS)})")
            row = [row.get(f, 0.0) for f in ROW_FIELDS]
        try:
            values = [float(v) for v in row]
        except (TypeError, ValueError):
            raise InputTypeError(f"run {i}: a row is four numbers ({', '.join(ROW_FIELDS)}), "
                                 f"got {row!r}") from None
        if len(values) != 4:
            raise InputTypeError(f"run {i}: a row is four numbers ({', '.join(ROW_FIELDS)})")
        if not all(np.isfinite(values)) or min(values) < 0 or values[3] <= 0:
            raise FitError(f"run {i}: steps and bytes must be finite and non-negative, "
                                 f"seconds positive, got {values}")
        table.append(values)
    return np.array(table, dtype=float).reshape(-1, 4)


def _check_identifiable(a, names, data):
    """Refuse a design whose columns the runs cannot tell apart, naming the rule."""
    k, p = a.shape
    if k < p:
        raise NotIdentifiableError(f"{p} constants ({', '.join(names)}) need at least {p} "
                                   f"runs, got {k}")
    steps = data[:, 0]
    if "alpha" in names and "overhead" in names and np.ptp(steps) == 0:
        raise NotIdentifiableError("alpha is not identifiable: every run takes the same number "
                                   f"of steps ({steps[0]:g}); runs of at least two step counts "
                                   "are needed (or fit without the overhead)")
    column = dict(zip(("alpha", "1/beta", "gamma"), ("steps", "bw_bytes", "reduced_bytes")))
    for j, name in enumerate(names):
        if name != "overhead" and not np.any(a[:, j]):
            raise NotIdentifiableError(f"{name} is not identifiable: every run has "
                                       f"{column[name]} 0")
    scaled = a / np.maximum(np.linalg.norm(a, axis=0), 1e-300)
    rank = np.linalg.matrix_rank(scaled)
    if rank == p:
        return
    for j in reversed(range(p)):   # gamma first: the usual culprit
        if np.linalg.matrix_rank(np.delete(scaled, j, axis=1)) == rank:
            rule = {"gamma": "reduced bytes are a fixed multiple of the bandwidth bytes in every "
                             "run (as in bandwidth-optimal allreduces, corollary 8.1): fold "
                             "gamma into beta or add runs that reduce differently",
                    "alpha": "the step counts are a combination of the other columns",
                    "1/beta": "the bandwidth bytes are a combination of the other columns "
                              "(runs of at least two sizes are needed)",
                    "overhead": "the other columns already contain a constant"}[names[j]]
            raise NotIdentifiableError(f"{names[j]} is not identifiable: {rule}")


def fit_cost_model(rows, *, gamma=False, overhead=True):
    """Fit ``alpha``, ``1/beta`` (and ``gamma``, ``overhead``) to measured runs.

    Parameters
    ----------
    rows : iterable
        One per run: ``(steps, bw_bytes, reduced_bytes, seconds)`` or a dict with those keys
        (:data:`ROW_FIELDS`; ``reduced_bytes`` may be left out when gamma is not fitted), e.g.
        from :func:`schedule_row`, :func:`run_rows` or :func:`load_runs`.
    gamma : bool
        Fit the reduction cost gamma too.
    overhead : bool
        Fit a fixed cost per call (default); without it the model has no constant term.

    Returns
    -------
    CostModelFit

    Raises
    ------
    NotIdentifiableError
        When the runs cannot determine a constant (too few runs, one step count with the
        overhead, reduced bytes proportional to bandwidth bytes with gamma, ...).
    """
    data = _as_rows(rows)
    names = ["overhead"] * bool(overhead) + ["alpha", "1/beta"] + ["gamma"] * bool(gamma)
    cols = [np.ones(len(data))] * bool(overhead) + [data[:, 0], data[:, 1]] + \
        [data[:, 2]] * bool(gamma)
    a = np.column_stack(cols) if cols and len(data) else np.zeros((len(data), len(names)))
    _check_identifiable(a, names, data)
    seconds = data[:, 3]
    weighted = a / seconds[:, None]             # least squares on relative errors
    norm = np.linalg.norm(weighted, axis=0)
    x = _nonnegative_lstsq(weighted / norm, np.ones(len(data))) / norm
    fitted = a @ x
    rel = np.abs(fitted - seconds) / seconds
    value = dict(zip(names, (float(v) for v in x)))
    return CostModelFit(alpha=value["alpha"], inverse_beta=value["1/beta"],
                        gamma=value.get("gamma"), overhead=value.get("overhead"),
                        measured=tuple(float(s) for s in seconds),
                        fitted=tuple(float(f) for f in fitted),
                        mean_relative_error=float(rel.mean()),
                        max_relative_error=float(rel.max()))


def _nonnegative_lstsq(a, b):
    """Least squares with x >= 0: the plain solution when it is non-negative (exact on exact
    data), else scipy's bounded solver."""
    x = np.linalg.lstsq(a, b, rcond=None)[0]
    if np.all(x >= 0):
        return x
    from scipy.optimize import lsq_linear   # deferred: scipy only when a bound binds
    return lsq_linear(a, b, bounds=(0.0, np.inf), method="bvls").x


def schedule_row(schedule, size, seconds):
    """The row of one run of ``schedule`` on a buffer of ``size`` bytes that took ``seconds``:
    its steps, ``T_B x B`` (``B``: the largest bandwidth into a node, in the schedule's own
    links) and the bytes a node reduces (summed over steps, the most per step)."""
    e = evaluate(schedule, size)
    reduced = float(reduction_step_loads(schedule)[1].sum()) * e.size
    return {"steps": e.steps, "bw_bytes": e.T_B * node_in_bandwidth(schedule.topology),
            "reduced_bytes": reduced, "seconds": float(seconds)}


def run_rows(records, schedules):
    """Rows of measured run records (``topocoll run --json`` documents, or
    :func:`~topocoll.runtime.measure_on_network` results: ``time`` seconds per call and
    ``bytes``, the buffer M), each with the schedule it ran (a schedule or its file)."""
    rows = []
    for i, (record, schedule) in enumerate(zip(records, schedules)):
        if not isinstance(record, dict) or "time" not in record or \
                ("bytes" not in record and "size" not in record):
            raise InputTypeError(f"run {i}: a run record has time and bytes (topocoll run "
                                 "--json)")
        if isinstance(schedule, (str, os.PathLike)):
            schedule = load_schedule(schedule)
        rows.append(schedule_row(schedule, record.get("bytes", record.get("size")),
                                 record["time"]))
    return rows


def load_runs(path):
    """The rows of a runs file: a JSON list (or ``{"runs": [...]}``) of rows (dicts of
    :data:`ROW_FIELDS`) and run records with a ``schedule`` key (a schedule file, relative to
    the runs file's folder)."""
    doc = parse_json(read_text(path, what="runs file"), what=f"{path}: runs file")
    runs = doc.get("runs") if isinstance(doc, dict) else doc
    if not isinstance(runs, list):
        raise InputTypeError(f"{path}: a runs file is a JSON list of runs (or {{\"runs\": "
                             "[...]}})")
    folder = os.path.dirname(os.path.abspath(path))
    rows = []
    for i, run in enumerate(runs):
        if isinstance(run, dict) and "schedule" in run:
            rows += run_rows([run], [os.path.join(folder, str(run["schedule"]))])
        else:
            rows.append(run)
    return rows
