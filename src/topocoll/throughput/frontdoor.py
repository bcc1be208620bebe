"""What the all-to-all solvers' front doors share: the input check, the bounds and the early
answer for a topology that is not strongly connected, the clock of their time limits, the tally
of their LP solves, the rounds of a column generation, and the result of a solve that found no
flow.

Each front door (``link_throughput``, ``path_throughput``, ``colgen_throughput``,
``symmetric_throughput``, ``balanced_throughput``) checks its inputs, builds and solves its
model, and assembles an :class:`~topocoll.throughput.result.AlltoallResult`; the steps they
have in common live here, once.
"""

from dataclasses import dataclass

import numpy as np

from ..errors import TopologyError
from ..results import Status
from ..topology.cuts import throughput_bounds
from ..topology.metrics import unreachable_pair
from . import lp as _lp
from .result import AlltoallResult

__all__ = ["require_alltoall_topology", "disconnected_result", "bounds_or_disconnected",
           "failed_result", "result_fields", "deadline_after", "time_left", "out_of_time",
           "SolveLog", "run_rounds"]


def require_alltoall_topology(topology):
    """Refuse a topology with switches or fewer than 2 nodes for the all-to-all LPs."""
    topology.require_no_switches("all-to-all throughput")
    if topology.num_nodes < 2:
        raise TopologyError(f"all-to-all needs at least 2 nodes, got {topology.num_nodes}")


def disconnected_result(topology, method, max_hops, bounds):
    """A zero-throughput result for a topology that is not strongly connected."""
    return _disconnected(topology, unreachable_pair(topology), method, max_hops, bounds)


def _disconnected(topology, pair, method, max_hops, bounds):
    u, v = pair
    zeros = np.zeros(topology.num_links)
    return AlltoallResult(
        lam=0.0, status=Status.INFEASIBLE, method=method, max_hops=max_hops,
        message=f"not strongly connected: node {v} cannot be reached from node {u}",
        num_nodes=topology.num_nodes, topology=topology.name, dual_bound=0.0,
        utilization=zeros, link_load=zeros, bounds=bounds)


def bounds_or_disconnected(topology, method, max_hops, bounds):
    """``(bnd, early)``: the topology bounds if ``bounds`` (else ``{}``) and, when the topology
    is not strongly connected, its zero-throughput result (else ``None``)."""
    bnd = throughput_bounds(topology) if bounds else {}
    pair = unreachable_pair(topology)
    if pair is None:
        return bnd, None
    return bnd, _disconnected(topology, pair, method, max_hops, bnd)


def result_fields(topology, method, max_hops, bnd, **more):
    """The fields every result of one call shares: what was solved, on what, with ``more``."""
    return dict(method=method, max_hops=max_hops, num_nodes=topology.num_nodes,
                topology=topology.name, bounds=bnd, **more)


def failed_result(topology, message, /, *, dual_bound=float("inf"), **fields):
    """The result of a call whose solver found no flow (status ``FAILED``, ``lam == 0``);
    ``fields`` are the rest of the :class:`AlltoallResult`'s fields."""
    zeros = np.zeros(topology.num_links)
    return AlltoallResult(lam=0.0, status=Status.FAILED, message=message, dual_bound=dual_bound,
                          utilization=zeros, link_load=zeros, **fields)


def deadline_after(time_limit):
    """The clock's reading when ``time_limit`` seconds from now have passed (``None``: none).
    The clock is :data:`topocoll.throughput.lp.clock`, read at each call (tests replace it)."""
    return None if time_limit is None else _lp.clock() + float(time_limit)


def time_left(deadline):
    """Seconds left before ``deadline`` (``None`` without one; the clock is read only with
    one)."""
    return None if deadline is None else deadline - _lp.clock()


def out_of_time(deadline):
    """Whether ``deadline`` (if any) has passed."""
    return deadline is not None and _lp.clock() >= deadline


@dataclass
class SolveLog:
    """What the LP solves of one call have cost: rounds, solver iterations, seconds spent
    building and solving, and the last solve's status text."""

    rounds: int = 0
    iterations: int = 0
    build_seconds: float = 0.0
    solve_seconds: float = 0.0
    status: str = ""

    def add(self, sol):
        """Count one solve's :class:`~topocoll.throughput.lp.LpSolution`."""
        self.solve_seconds += sol.seconds
        self.iterations += sol.iterations
        self.status = sol.status


def run_rounds(gen, log, *, deadline, max_rounds):
    """The rounds of a column generation ``gen``, at most ``max_rounds``, counted in ``log``.

    A round gives the master LP the time left (``gen.solve(left)``) and hands a solution to
    ``gen.advance(solution, round)``, which prices it, adds columns and says whether to go
    on. The rounds end there, when the time runs out before a round (``gen.out_of_time``
    set), or when a master is not solved (``gen.out_of_time`` says whether the time ran out).
    """
    for rounds in range(1, max_rounds + 1):
        log.rounds = rounds
        left = time_left(deadline)
        if left is not None and left <= 0:
            gen.out_of_time = True
            return
        sol = gen.solve(left)
        log.add(sol)
        if not sol.ok:
            gen.out_of_time = out_of_time(deadline)
            return
        if not gen.advance(sol, rounds):
            return
