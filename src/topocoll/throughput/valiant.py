"""All-to-all throughput under oblivious routings: shortest paths split evenly (ECMP) and
Valiant's two-phase routing.

*Shortest-path (ECMP) routing* sends the traffic of every ordered pair ``(s, t)`` over all
shortest ``s -> t`` paths (hop count), each carrying the same share: a link ``u -> v`` gets
``sigma(s, u) sigma(v, t) / sigma(s, t)`` of it when it lies on one, ``sigma`` counting
shortest paths. Summed over all pairs at one unit each this is the directed edge betweenness
``B(e)`` of the link (Brandes' dependency accumulation, here vectorized over the sources), and
uniform all-to-all at rate ``lambda`` per pair fits iff ``lambda B(e) <= c_e`` on every link:
``lambda_SP = min_e c_e / B(e)``.

*Valiant routing* (Valiant and Brebner, STOC 1981) sends each packet of ``s -> t`` first to an
intermediate ``m`` drawn uniformly from all ``N`` ranks, then on to ``t``, each phase by the
same shortest-path split. Under uniform all-to-all at rate ``lambda`` the first phase carries
``lambda (N-1)/N`` from every ``s`` to every ``m != s`` (the ``N - 1`` destinations each send
``1/N`` of their traffic via ``m``; ``m = s`` costs nothing), and the second phase the same
from every ``m`` to every ``t != m``: both phases are uniform all-to-all at rate
``lambda (N-1)/N``. Hence, exactly and on every topology,

    ``lambda_Valiant = N / (2 (N - 1)) * lambda_SP``,

e.g. ``c N / (2 (N - 1))`` on the complete graph ``K_N`` (against the optimum ``c``) and
``c / (N - 1)`` on the hypercube (against ``2c/N``). Both are throughputs of concrete routings,
hence lower bounds on the optimal throughput of the LPs in :mod:`topocoll.throughput`.

On topologies with switches (forwarding-only nodes) the ranks alone send, receive and serve as
intermediates; ``N`` is their number.

>>> res = valiant_throughput("hypercube:3", bandwidth=1.0)
>>> round(res.lam, 6), round(res.lam_shortest, 6)      # 1/(N-1) and 2/N
(0.142857, 0.25)
"""

from dataclasses import dataclass

import numpy as np

from ..errors import NotStronglyConnectedError, TopologyError
from ..limits import require_memory
from ..topology import Topology, topology as _topology
from ..topology.metrics import distance_matrix
from ..units import parse_size

__all__ = ["ValiantResult", "valiant_throughput", "shortest_path_loads", "ROUTINGS"]

#: The oblivious routings :func:`valiant_throughput` evaluates.
ROUTINGS = ("shortest", "valiant")


@dataclass
class ValiantResult:
    """All-to-all throughput of ECMP shortest-path routing and of Valiant routing.

    Attributes
    ----------
    lam : float
        Valiant throughput: bytes/s every ordered pair of ranks sustains at once.
    lam_shortest : float
        The same under ECMP shortest-path routing; ``lam = N / (2(N-1)) lam_shortest``.
    num_nodes : int
        Ranks ``N`` (switches excluded).
    topology : str
        The topology's name.
    betweenness : numpy.ndarray
        Per link: pairs' traffic it carries under ECMP at one unit per ordered pair.
    utilization : numpy.ndarray
        Per link: fraction of its bandwidth used by Valiant routing at rate ``lam``.
    """

    lam: float
    lam_shortest: float
    num_nodes: int
    topology: str
    betweenness: np.ndarray
    utilization: np.ndarray

    def time(self, size):
        """All-to-all time ``(M / N) / lam`` for a per-node buffer of ``size`` bytes."""
        return (parse_size(size) / self.num_nodes) / self.lam

    def to_dict(self, size=None):
        """A JSON-ready summary; with ``size``, also the times of both routings."""
        out = {"routing": "valiant", "lambda": self.lam, "lambda_shortest": self.lam_shortest,
               "nodes": self.num_nodes, "utilization_max": float(self.utilization.max()),
               "utilization_mean": float(self.utilization.mean())}
        if size is not None:
            m = parse_size(size)
            out["time"] = self.time(m)
            out["time_shortest"] = (m / self.num_nodes) / self.lam_shortest
        return out


def _levels(dist, src, dst):
    """The shortest-path DAG links of every source row: ``(row, link, level of the head)``,
    sorted by level."""
    on = (dist[:, dst] == dist[:, src] + 1) & (dist[:, src] >= 0)
    rows, links = np.nonzero(on)
    level = dist[rows, dst[links]]
    order = np.argsort(level, kind="stable")
    return rows[order], links[order], level[order]


def _block_loads(dist, sources, src, dst, weight):
    """ECMP loads of the links from the sources of ``dist`` (its rows), one unit to every
    target ``t`` weighted ``weight[t]``."""
    b, n = dist.shape
    rows, links, level = _levels(dist, src, dst)
    tail, head = rows * n + src[links], rows * n + dst[links]
    sigma = np.zeros(b * n)
    sigma[np.arange(b) * n + sources] = 1.0
    cuts = np.flatnonzero(np.diff(level)) + 1
    groups = np.split(np.arange(level.size), cuts)
    for g in groups:                      # forward: path counts, level by level
        sigma += np.bincount(head[g], weights=sigma[tail[g]], minlength=b * n)
    delta = np.zeros(b * n)
    load = np.zeros(src.size)
    w = np.tile(weight, b)
    for g in reversed(groups):            # backward: Brandes' dependencies
        c = sigma[tail[g]] / sigma[head[g]] * (w[head[g]] + delta[head[g]])
        load += np.bincount(links[g], weights=c, minlength=src.size)
        delta += np.bincount(tail[g], weights=c, minlength=b * n)
    return load


def shortest_path_loads(topology):
    """Per link: the traffic it carries when every ordered pair of ranks sends one unit split
    evenly over all its shortest paths (directed edge betweenness, rank pairs only).

    Examples
    --------
    >>> from topocoll.topology import topology
    >>> shortest_path_loads(topology("ring:5")).tolist()     # 1 + 2 pairs each way per link
    [3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0]
    """
    n = topology.num_nodes
    ranks = np.ones(n)
    ranks[list(topology.switches)] = 0.0
    dist = distance_matrix(topology)
    src, dst = topology.src.astype(np.int64), topology.dst.astype(np.int64)
    step = max(1, int(2e7 // max(1, 3 * src.size + 4 * n)))   # bytes per block, about 160 MB
    require_memory(8 * min(step, n) * (3 * src.size + 4 * n),
                   f"the shortest-path loads of {topology.name}")
    load = np.zeros(src.size)
    sources = np.flatnonzero(ranks)
    for start in range(0, sources.size, step):
        block = sources[start:start + step]
        load += _block_loads(dist[block], block, src, dst, ranks)
    return load


def valiant_throughput(topology, *, bandwidth=None):
    """Uniform all-to-all throughput under Valiant routing (and under ECMP shortest paths).

    Parameters
    ----------
    topology : Topology or str
        A topology, spec or file; strongly connected, with at least 2 ranks.
    bandwidth : float or str, optional
        Replace every link's bandwidth (``1`` for link units).

    Returns
    -------
    ValiantResult

    Raises
    ------
    NotStronglyConnectedError
        Some rank cannot reach another.

    Examples
    --------
    >>> res = valiant_throughput("complete:4", bandwidth=1.0)
    >>> round(res.lam, 6), res.lam_shortest            # N/(2(N-1)) c and c
    (0.666667, 1.0)
    """
    t = topology if isinstance(topology, Topology) else _topology(topology)
    if bandwidth is not None:
        t = _topology(t, bandwidth=bandwidth)
    ranks = t.num_nodes - len(t.switches)
    if ranks < 2:
        raise TopologyError(f"all-to-all needs at least 2 ranks, got {ranks}")
    dist = distance_matrix(t)
    is_rank = np.ones(t.num_nodes, dtype=bool)
    is_rank[list(t.switches)] = False
    bad = np.argwhere((dist[np.ix_(is_rank, is_rank)] < 0))
    if bad.size:
        ids = np.flatnonzero(is_rank)
        u, v = int(ids[bad[0][0]]), int(ids[bad[0][1]])
        raise NotStronglyConnectedError(f"{t.name} has no path {u} -> {v}", pair=(u, v))
    load = shortest_path_loads(t)
    used = load > 0
    cap = np.asarray(t.bandwidth, dtype=float)
    lam_sp = float(np.min(cap[used] / load[used]))
    lam = lam_sp * ranks / (2 * (ranks - 1))
    util = lam * 2 * (ranks - 1) / ranks * load / cap
    return ValiantResult(lam=lam, lam_shortest=lam_sp, num_nodes=ranks, topology=t.name,
                         betweenness=load, utilization=util)
