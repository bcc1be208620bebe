"""The step-indexed all-to-all LP (Basu et al., "All-to-All Linear Program"): a schedule of S
communication steps, each commodity's flow per step, and each step's duration.

Every ordered pair ``(s, d)`` is a commodity of one unit (one byte). The variables are the
amount ``x[c, e, k] >= 0`` of commodity ``c`` sent on link ``e`` in step ``k = 1..S`` and the
duration ``t_k >= 0`` of step ``k``; the LP minimises ``T = sum_k t_k`` subject to

1. bandwidth-time: ``sum_c x[c, e, k] <= b_e t_k`` for every link and step;
2. causality: by the end of step ``k - 1`` node ``i != s`` has received at least as much of
   ``c`` as it sends in steps ``1..k`` (the difference waits for a later step);
3. relays keep nothing: every node other than ``s`` and ``d`` receives as much as it sends;
4. the source sends and the destination receives the whole unit.

It is solved as a flow of one unit from ``(s, 0)`` to ``(d, S)`` in the time-expanded network
(nodes ``(i, k)``, a link ``u -> v`` becomes arcs ``(u, k-1) -> (v, k)``, and "hold" arcs
``(i, k-1) -> (i, k)`` carry what waits): the flow on the hold arcs is exactly the slack of the
causality constraint, so the two LPs have the same optimum. An arc that no flow can use is left
out (``x[c, u -> v, k] = 0`` unless ``dist(s, u) <= k - 1`` and ``dist(v, d) <= S - k``): the
network is acyclic, so every unit travels on a time-respecting path and this loses nothing.

``T`` is the bandwidth time of one byte per pair; a per-node buffer of M bytes (M/N per pair)
takes ``(M/N) T + S alpha``. Averaging the steps' flows gives a multicommodity flow of rate
``1/T`` per pair, so ``T >= 1/lambda`` for the throughput LP's ``lambda`` (docs/math.md); with
fewer steps than the diameter the LP is infeasible.

>>> from topocoll.topology import topology
>>> r = step_lp(topology("ring:6", bandwidth=1.0), 3)
>>> r.status_name, round(r.unit_time, 6), r.flows.shape    # T = N^2/8; (S, pairs, links)
('SUCCESS', 4.5, (3, 30, 12))
>>> step_lp(topology("ring:6", bandwidth=1.0), 2).status_name
'INFEASIBLE'
"""

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from ..errors import InputTypeError, ResourceLimitError
from ..limits import require_memory
from ..results import Result, Status
from ..topology.metrics import distance_matrix
from ..topology.model import Topology
from ..units import whole_number
from .lp import solve_lp

__all__ = ["step_lp", "StepLpResult", "MAX_STEP_COLUMNS", "MAX_STEP_CELLS"]

#: Most flow columns the step LP is built with (commodities x links x steps after pruning);
#: beyond it :func:`step_lp` raises :class:`~topocoll.errors.ResourceLimitError`.
MAX_STEP_COLUMNS = 3_000_000
#: Most (commodity, link, step) triples examined for pruning (one byte of memory each).
MAX_STEP_CELLS = 50_000_000


@dataclass(kw_only=True)
class StepLpResult(Result):
    """What :func:`step_lp` found.

    Attributes
    ----------
    topology : str
        Name of the topology; ``nodes`` its node count N.
    steps : int
        S, the number of communication steps.
    step_times : ndarray, shape (S,)
        Duration of each step, in seconds per byte of every pair.
    flows : ndarray, shape (S, C, E)
        ``flows[k, c, e]``: bytes of commodity ``commodities[c]`` on link ``links[e]`` in step
        ``k + 1`` (per byte of every pair).
    commodities : ndarray, shape (C, 2)
        The ordered pairs ``(s, d)``.
    links : ndarray, shape (E, 2)
        The distinct links ``(u, v)``; ``capacity`` their bandwidths (bytes/s).
    alpha : float
        Latency charged per step (the largest link latency).
    """

    topology: str = ""
    nodes: int = 0
    steps: int = 0
    step_times: np.ndarray = field(default_factory=lambda: np.zeros(0))
    flows: np.ndarray = field(default_factory=lambda: np.zeros((0, 0, 0)))
    commodities: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), dtype=np.int64))
    links: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), dtype=np.int64))
    capacity: np.ndarray = field(default_factory=lambda: np.zeros(0))
    alpha: float = 0.0
    seconds: float = 0.0

    @property
    def unit_time(self):
        """``T = sum_k t_k``: bandwidth time of one byte per pair (``inf`` without a solution)."""
        return float(self.step_times.sum()) if self.success else float("inf")

    @property
    def lam(self):
        """``1 / T``, the rate per pair the schedule sustains (comparable with ``lambda``)."""
        t = self.unit_time
        return 1.0 / t if 0 < t < float("inf") else 0.0

    def time(self, size, alpha=None):
        """Time of an all-to-all of ``size`` bytes per node: ``(size/N) T + S alpha``."""
        alpha = self.alpha if alpha is None else float(alpha)
        return float(size) / max(self.nodes, 1) * self.unit_time + self.steps * alpha

    def step_loads(self):
        """``loads[k, e]``: bytes per pair-byte on link ``e`` in step ``k + 1``."""
        return self.flows.sum(axis=1)

    def to_dict(self, size=None):
        """JSON-friendly summary (flows as ``[step, s, d, u, v, amount]`` rows above 1e-12)."""
        doc = {**super().to_dict(), "topology": self.topology, "steps": self.steps,
               "step_times": self.step_times.tolist(), "unit_time": self.unit_time,
               "lambda": self.lam, "alpha": self.alpha, "seconds": self.seconds}
        if size is not None:
            doc["size"] = size
            doc["time"] = self.time(size) if self.success else None
        k, c, e = np.nonzero(self.flows > 1e-12)
        doc["flows"] = [[int(k[i]) + 1, *map(int, self.commodities[c[i]]),
                         *map(int, self.links[e[i]]), float(self.flows[k[i], c[i], e[i]])]
                        for i in range(k.size)]
        return doc


def _columns(dist, psrc, pdst, steps):
    """Allowed ``(c, e, k)`` transfer arcs and ``(c, i, k)`` hold arcs, k = 1..S, as flat index
    arrays, plus the commodity table."""
    n = dist.shape[0]
    s, d = np.nonzero(~np.eye(n, dtype=bool))
    k = np.arange(1, steps + 1)
    # transfer (c, e, k): dist(s, u) <= k - 1 and dist(v, d) <= S - k
    reach = dist[s][:, psrc][:, :, None] <= (k - 1)[None, None, :]
    left = dist[:, d].T[:, pdst][:, :, None] <= (steps - k)[None, None, :]
    transfer = np.flatnonzero(reach & left)
    hold_ok = ((dist[s][:, :, None] <= (k - 1)[None, None, :])
               & (dist[:, d].T[:, :, None] <= (steps - k)[None, None, :]))
    hold = np.flatnonzero(hold_ok)
    return np.stack([s, d], axis=1), transfer, hold


def _build(topology, steps):
    """The LP ``(cost, matrix, lower, upper, layout)`` in the time-expanded form."""
    n = topology.num_nodes
    psrc, pdst, cap, _ = topology.pairs
    num_e = psrc.size
    dist = distance_matrix(topology).astype(np.int64)
    dist[dist < 0] = n + steps            # unreachable: never within a step budget
    pairs, transfer, hold = _columns(dist, psrc, pdst, steps)
    if transfer.size > MAX_STEP_COLUMNS:
        raise ResourceLimitError(f"the step LP of {topology.name} with {steps} steps has "
                                 f"{transfer.size} flow columns, over {MAX_STEP_COLUMNS}")
    require_memory(64 * (transfer.size + hold.size), f"the step LP of {topology.name}")
    num_c = pairs.shape[0]
    scale = float(cap.max())
    c_t, rem = np.divmod(transfer, num_e * steps)
    e_t, k_t = np.divmod(rem, steps)
    k_t = k_t + 1
    c_h, rem = np.divmod(hold, n * steps)
    i_h, k_h = np.divmod(rem, steps)
    k_h = k_h + 1
    width = n * (steps + 1)               # node rows (c, i, k), k = 0..S: in - out = b
    num_cap = num_e * steps

    def node_row(c, i, k):
        return num_cap + c * width + i * (steps + 1) + k

    m_t, m_h = transfer.size, hold.size
    col_t = np.arange(m_t)
    col_h = m_t + np.arange(m_h)
    col_s = m_t + m_h + np.arange(steps)
    rows = np.concatenate([e_t * steps + (k_t - 1), node_row(c_t, psrc[e_t], k_t - 1),
                           node_row(c_t, pdst[e_t], k_t), node_row(c_h, i_h, k_h - 1),
                           node_row(c_h, i_h, k_h), np.arange(num_cap)])
    cols = np.concatenate([col_t, col_t, col_t, col_h, col_h,
                           col_s[np.tile(np.arange(steps), num_e)]])
    vals = np.concatenate([np.ones(m_t), -np.ones(m_t), np.ones(m_t), -np.ones(m_h),
                           np.ones(m_h), -np.repeat(cap / scale, steps)])
    num_rows = num_cap + num_c * width
    matrix = sp.csc_matrix((vals, (rows, cols)), shape=(num_rows, m_t + m_h + steps))
    rhs = np.zeros(num_c * width)
    rhs[np.arange(num_c) * width + pairs[:, 0] * (steps + 1)] = -1.0
    rhs[np.arange(num_c) * width + pairs[:, 1] * (steps + 1) + steps] = 1.0
    lower = np.concatenate([np.full(num_cap, -np.inf), rhs])
    upper = np.concatenate([np.zeros(num_cap), rhs])
    cost = np.concatenate([np.zeros(m_t + m_h), np.ones(steps)])
    layout = (pairs, c_t, e_t, k_t, scale, np.stack([psrc, pdst], axis=1), cap)
    return cost, matrix, lower, upper, layout


def step_lp(topology, steps, *, solver="ipm", time_limit=None, threads=None):
    """Solve the step-indexed all-to-all LP of ``topology`` with ``steps`` communication steps.

    Parameters
    ----------
    topology : Topology
        Without switches; every ordered pair of nodes is a commodity.
    steps : int
        S >= 1. Fewer steps than the diameter give status ``INFEASIBLE``.

    Raises
    ------
    ResourceLimitError
        More than :data:`MAX_STEP_CELLS` (pair, link, step) triples or
        :data:`MAX_STEP_COLUMNS` flow columns: the LP is for small clusters.
    solver : {"ipm", "simplex", "pdlp", "auto", "choose"}
        HiGHS solver (the interior point runs crossover, so the flows are a vertex).
    time_limit : float, optional
        Seconds for HiGHS; when it stops the solver the status is ``LIMIT`` or ``FAILED``.
    threads : int, optional
        HiGHS threads.

    Returns
    -------
    StepLpResult
        ``unit_time`` (``T``), ``step_times``, ``flows[k, c, e]``; ``time(size)``.

    Examples
    --------
    >>> from topocoll.topology import topology
    >>> r = step_lp(topology("complete:4", bandwidth=2.0), 1)
    >>> r.status_name, round(r.unit_time, 6), round(r.lam, 6)    # every pair direct: 1/b
    ('SUCCESS', 0.5, 2.0)
    """
    if not isinstance(topology, Topology):
        raise InputTypeError(f"step_lp needs a Topology, got {type(topology).__name__}")
    topology.require_no_switches("step_lp")
    steps = whole_number(steps, "steps", 1)
    n = topology.num_nodes
    dist = distance_matrix(topology)
    base = dict(topology=topology.name, nodes=n, steps=steps,
                alpha=float(topology.latency.max()) if topology.num_links else 0.0)
    if n < 2 or np.any(dist < 0) or int(dist.max()) > steps:
        why = ("it has fewer than 2 nodes" if n < 2 else
               "it is not strongly connected" if np.any(dist < 0) else
               f"{steps} steps are fewer than its diameter {int(dist.max())}")
        return StepLpResult(status=Status.INFEASIBLE, message=f"{topology.name}: no schedule "
                            f"of {steps} steps: {why}", **base)
    cells = n * (n - 1) * topology.pairs[0].size * steps
    if cells > MAX_STEP_CELLS:
        raise ResourceLimitError(f"the step LP of {topology.name} with {steps} steps spans "
                                 f"{cells} (pair, link, step) triples, over {MAX_STEP_CELLS}")
    cost, matrix, lower, upper, layout = _build(topology, steps)
    sol = solve_lp(cost, matrix, lower, upper, maximize=False, solver=solver, crossover=True,
                   time_limit=time_limit, threads=threads)
    pairs, c_t, e_t, k_t, scale, links, cap = layout
    flows = np.zeros((steps, pairs.shape[0], links.shape[0]))
    flows[k_t - 1, c_t, e_t] = np.maximum(sol.x[:c_t.size], 0.0)
    step_times = np.maximum(sol.x[-steps:], 0.0) / scale
    if sol.status == "Optimal":
        status, message = Status.SUCCESS, (f"{steps} steps: T = {step_times.sum():.6g} s per "
                                           "byte of every pair")
    elif sol.ok:
        status, message = Status.LIMIT, f"HiGHS stopped ({sol.status}); flows not proven optimal"
    else:
        status, message = Status.FAILED, f"HiGHS: {sol.status}"
    return StepLpResult(status=status, message=message, step_times=step_times, flows=flows,
                        commodities=pairs, links=links, capacity=cap, seconds=sol.seconds,
                        **base)
