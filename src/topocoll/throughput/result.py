"""The answer of an all-to-all throughput LP: :class:`AlltoallResult`."""

from dataclasses import dataclass, field

import numpy as np

from ..results import Result
from ..units import parse_size

__all__ = ["AlltoallResult", "PathSet"]


@dataclass
class PathSet:
    """Routes of the path LP: path ``p`` carries ``share[p]`` of pair ``(src[p], dst[p])``'s
    traffic over the pair-links ``edges[ptr[p]:ptr[p+1]]`` (indices into ``topology.pairs``,
    in order from source to destination). Shares of one pair sum to 1."""

    src: np.ndarray
    dst: np.ndarray
    ptr: np.ndarray
    edges: np.ndarray
    share: np.ndarray

    @property
    def hops(self):
        """Number of links on each path."""
        return np.diff(self.ptr)

    def __len__(self):
        return int(self.src.size)

    def nodes(self, p, topology):
        """The nodes of path ``p``, source first."""
        pdst = topology.pairs[1]
        return [int(self.src[p])] + pdst[self.edges[self.ptr[p]:self.ptr[p + 1]]].tolist()


@dataclass
class AlltoallResult(Result):
    """Uniform all-to-all throughput on a topology: a :class:`~topocoll.results.Result`.

    ``status`` (the one table of :mod:`topocoll.results`): 0 (``SUCCESS``) optimal, certified
    by the dual bound to ``tolerance``; 2 (``NOT_PROVEN``) a valid flow whose gap is larger than
    asked (see ``gap``); 4 (``INFEASIBLE``) the topology is not strongly connected
    (``lam == 0``); 5 (``FAILED``) the solver gave no solution. ``success`` means ``lam`` is a
    valid throughput.

    Attributes
    ----------
    lam : float
        ``lambda``: bytes/s that every ordered pair ``(x, y)``, ``x != y``, sustains at once (the
        primal value; ``0.0`` when the topology is not strongly connected).
    method : str
        ``"link"`` (link-based multicommodity flow) or ``"path"`` (hop-bounded paths).
    max_hops : int or None
        Path LP: each pair may use paths of at most ``dist(x, y) + max_hops`` links
        (``None``: any simple path). ``None`` for the link LP.
    dual_bound : float
        Certified upper bound on ``lambda`` from the dual link lengths ``lengths``:
        ``sum_e c_e l_e / sum_{x != y} dist_l(x, y)`` (hop-bounded distances for the path LP),
        recomputed from the lengths, not taken from the solver.
    utilization : numpy.ndarray
        Per link of the topology (same order as ``topology.src``): fraction of its bandwidth
        used at rate ``lambda``.
    link_load : numpy.ndarray
        Per link: bytes/s it carries.
    bounds : dict
        Topology bounds on ``lambda`` (see :func:`topocoll.topology.cuts.throughput_bounds`).
    flows : numpy.ndarray or None
        Link LP: ``flows[s, e]`` bytes/s of source ``s``'s traffic on pair-link ``e``.
    paths : PathSet or None
        Path LP: the routes and their shares.
    """

    lam: float
    method: str
    max_hops: int | None
    num_nodes: int
    topology: str
    dual_bound: float
    utilization: np.ndarray
    link_load: np.ndarray
    bounds: dict = field(default_factory=dict)
    lengths: np.ndarray | None = None
    flows: np.ndarray | None = None
    paths: PathSet | None = None
    solver: str = "ipm"
    iterations: int = 0
    rounds: int = 1
    build_seconds: float = 0.0
    solve_seconds: float = 0.0
    tolerance: float = 1e-6

    @property
    def gap(self):
        """Relative gap ``dual_bound / lam - 1`` (``inf`` without a positive ``lam``)."""
        if not self.lam > 0:
            return float("inf")
        return max(0.0, self.dual_bound / self.lam - 1.0)

    @property
    def longest_path(self):
        """Path LP: most links on a path that carries traffic; ``None`` for the link LP."""
        if self.paths is None or len(self.paths) == 0:
            return None
        return int(self.paths.hops.max())

    def time(self, size):
        """All-to-all time ``(M / N) / lambda`` in seconds for a per-node buffer of ``size``
        bytes (``"1MiB"`` or a number): each pair moves ``M/N`` bytes at rate ``lambda``."""
        m = parse_size(size)
        if not self.lam > 0:
            return float("inf")
        return (m / self.num_nodes) / self.lam

    def to_dict(self, size=None):
        """A JSON-ready summary (no per-source flows); with ``size``, also the times."""
        util = self.utilization
        out = {**super().to_dict(), "topology": self.topology, "nodes": self.num_nodes,
               "method": self.method, "max_hops": self.max_hops, "lambda": self.lam, "dual_bound": self.dual_bound,
               "gap": self.gap if np.isfinite(self.gap) else None,
               "utilization_max": float(util.max()) if util.size else 0.0,
               "utilization_mean": float(util.mean()) if util.size else 0.0,
               "solver": self.solver, "iterations": self.iterations, "rounds": self.rounds,
               "build_seconds": self.build_seconds, "solve_seconds": self.solve_seconds}
        if self.paths is not None:
            out["paths"] = len(self.paths)
            out["longest_path"] = self.longest_path
        for key, value in self.bounds.items():
            out[f"{key}_bound" if not key.startswith("bisection_") and key != "best"
                else key if key != "best" else "best_bound"] = value
        if size is not None:
            m = parse_size(size)
            out["size"] = m
            out["time"] = self.time(m) if self.lam > 0 else None
            for key in ("distance", "bisection", "agnostic", "injection", "best"):
                if key in self.bounds and self.bounds[key] > 0:
                    out[f"time_lower_bound_{key}"] = (m / self.num_nodes) / self.bounds[key]
        return out
