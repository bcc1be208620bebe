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

The loads come from blocks of sources at once: path counts level by level as sparse matrix
products, Brandes' dependencies back the same way, then every link's share (sources that see
more than :data:`DENSE_MAX_DEPTH` levels walk their shortest-path links instead). On a Cayley
graph (LPS/SpectralFly, circulants, tori, hypercubes, ...) one source suffices: once
slot-preserving automorphisms taking node 0 to each of its out-neighbours are verified on the
links, they act transitively and freely, and each link of a slot carries, over all sources,
what source 0 puts on all of that slot's links together (``docs/math.md``).

>>> res = valiant_throughput("hypercube:3", bandwidth=1.0)
>>> round(res.lam, 6), round(res.lam_shortest, 6)      # 1/(N-1) and 2/N
(0.142857, 0.25)
"""

from dataclasses import dataclass

import numpy as np

from ..errors import NotStronglyConnectedError, TopologyError
from ..limits import require_memory
from ..topology import Topology, topology as _topology
from ..topology.metrics import distance_matrix, unreachable_pair
from ..topology.paths import hop_distances
from ..topology.symmetry import translation_group
from ..units import parse_size

__all__ = ["ValiantResult", "valiant_throughput", "shortest_path_loads", "ROUTINGS"]

#: The oblivious routings :func:`valiant_throughput` evaluates.
ROUTINGS = ("shortest", "valiant")
#: Past this hop depth from a block of sources the dense level-by-level products cost more
#: than a walk over each source's shortest-path links, which the block then takes instead.
DENSE_MAX_DEPTH = 24
#: Float64 elements per ``nodes x sources`` array (the blocks of sources follow from it).
BLOCK_ELEMENTS = 1 << 22
#: Float64 elements per ``links x sources`` chunk of the per-link shares (cache-sized).
LINK_CHUNK = 1 << 18
#: Work (``N d^2``) allowed for proving a Cayley graph's slot automorphisms.
SYMMETRY_BUDGET = 1 << 26


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
    symmetric : bool
        True if the loads came from one source on a proven Cayley graph (same numbers).
    """

    lam: float
    lam_shortest: float
    num_nodes: int
    topology: str
    betweenness: np.ndarray
    utilization: np.ndarray
    symmetric: bool = False

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


def _adjacency(n, src, dst):
    """``(A, At)``: CSR matrices with ``A[u, v]`` the number of links ``u -> v``."""
    from scipy.sparse import csr_matrix   # imported when first needed (start-up time)

    a = csr_matrix((np.ones(src.size), (src, dst)), shape=(n, n))
    return a, a.T.tocsr()


def _spread(m, mt, x, flat):
    """``m @ x`` for ``x`` zero outside the flat indices ``flat``; when they lie in less than
    half the rows, through those rows of ``mt`` (``m`` transposed, CSR) alone."""
    rows = flat // x.shape[1]
    rows = rows[np.r_[True, rows[1:] != rows[:-1]]] if rows.size else rows
    if 2 * rows.size > x.shape[0]:
        return m @ x
    return mt[rows].T @ x[rows]


def _forward(a, at, sources, n):
    """Path counts ``sigma`` and hop levels (``n x b``, a column per source; level ``-1``:
    unreached) and each level's flat indices, one sparse product per level; ``None`` past
    :data:`DENSE_MAX_DEPTH` levels."""
    b = sources.size
    sigma = np.zeros((n, b))
    sigma[sources, np.arange(b)] = 1.0
    level = np.full((n, b), -1, dtype=np.int8)
    level[sources, np.arange(b)] = 0
    front = sigma.copy()
    levels = [np.ravel_multi_index((sources, np.arange(b)), (n, b))]
    while True:
        nxt = np.asarray(_spread(at, a, front, levels[-1])).ravel()
        idx = np.flatnonzero((nxt > 0) & (level.ravel() < 0))
        if not idx.size:
            return sigma, level, levels
        if len(levels) > DENSE_MAX_DEPTH:
            return None
        front.ravel()[levels[-1]] = 0.0
        front.ravel()[idx] = sigma.ravel()[idx] = nxt[idx]
        level.ravel()[idx] = len(levels)
        levels.append(idx)


def _dense_block_loads(a, at, sources, src, dst, weight):
    """ECMP loads of the links from ``sources`` (one unit to every target ``t`` weighted
    ``weight[t]``): path counts forward and Brandes' dependencies ``delta`` backward, a
    sparse product per level, then on every link ``u -> v`` one level down its share
    ``sigma(s, u) (w(v) + delta(s, v)) / sigma(s, v)``; ``None`` if too deep."""
    fwd = _forward(a, at, sources, a.shape[0])
    if fwd is None:
        return None
    sigma, level, levels = fwd
    b = sources.size
    share = np.zeros_like(sigma)          # (w(v) + delta(s, v)) / sigma(s, v), levels >= 1
    flat, sig = share.ravel(), sigma.ravel()
    delta = np.zeros(sig.size)
    for k in range(len(levels) - 1, 0, -1):
        idx, above = levels[k], levels[k - 1]
        flat[idx] = (weight[idx // b] + delta[idx]) / sig[idx]
        only = np.zeros_like(sigma)
        only.ravel()[idx] = flat[idx]
        delta[above] = sig[above] * np.asarray(_spread(a, at, only, idx)).ravel()[above]
    load, below = np.empty(src.size), level + 1
    step = max(1, LINK_CHUNK // b)
    for i in range(0, src.size, step):
        u, v = src[i:i + step], dst[i:i + step]
        part = sigma[u]
        part *= level[v] == below[u]
        part *= share[v]
        load[i:i + step] = part.sum(axis=1)
    return load


def _deep_block_loads(topology, block, src, dst, weight):
    """:func:`_block_loads` of ``block`` from its rows of hop distances."""
    dist = hop_distances(topology, block)
    rows = np.where(np.isfinite(dist), dist, -1).astype(np.int64)
    return _block_loads(rows, block, src, dst, weight)


def _general_loads(topology, src, dst, ranks):
    """ECMP loads from every rank, in blocks of sources."""
    n = topology.num_nodes
    b = max(1, min(256, BLOCK_ELEMENTS // (2 * max(n, 1))))
    require_memory(8 * 10 * min(b, n) * n, f"the shortest-path loads of {topology.name}")
    a, at = _adjacency(n, src, dst)
    load = np.zeros(src.size)
    sources = np.flatnonzero(ranks)
    for start in range(0, sources.size, b):
        block = sources[start:start + b]
        part = _dense_block_loads(a, at, block, src, dst, ranks)
        load += part if part is not None else _deep_block_loads(topology, block, src, dst,
                                                                ranks)
    return load


def _slot_table(src, n):
    """Link ids ``(N, d)``: row ``x`` the links out of ``x`` in link order (slot = column),
    or ``None`` unless every node has ``d >= 1`` of them."""
    counts = np.bincount(src, minlength=n)
    if counts.size != n or counts.min() != counts.max() or counts[0] == 0:
        return None
    return np.argsort(src, kind="stable").reshape(n, counts[0])


def _bfs_tree(nbr):
    """Levels ``(nodes, parents, slots)`` of a breadth-first tree from node 0 over the
    ``(N, d)`` table of heads; ``None`` if some node is not reached."""
    n, d = nbr.shape
    seen = np.zeros(n, dtype=bool)
    seen[0] = True
    front, tree = np.array([0]), []
    while front.size:
        cand = nbr[front].ravel()
        idx = np.flatnonzero(~seen[cand])
        nodes, first = np.unique(cand[idx], return_index=True)
        idx = idx[first]
        seen[nodes] = True
        tree.append((nodes, front[idx // d], idx % d))
        front = nodes
    return tree if seen.all() else None


def _slots_transitive(nbr):
    """True if, for every slot ``a``, the map ``phi`` with ``phi(0) = nbr[0, a]`` and
    ``phi(nbr[x, b]) = nbr[phi(x), b]`` is well defined and a permutation: a slot-preserving
    automorphism taking 0 to each out-neighbour of 0. The group these generate is then
    transitive (its orbit of 0 holds every word of slots applied to 0: every node)."""
    n = nbr.shape[0]
    tree = _bfs_tree(nbr)
    if tree is None:
        return False
    for a in np.unique(nbr[0]):
        phi = np.empty(n, dtype=np.int64)
        phi[0] = a
        for nodes, parents, slots in tree:
            phi[nodes] = nbr[phi[parents], slots]
        if not (np.array_equal(phi[nbr], nbr[phi])
                and np.all(np.bincount(phi, minlength=n) == 1)):
            return False
    return True


def _translation_slots(topology, src, n):
    """Link ids ``(N, d)`` by source, then translation label ``dst - src`` (link order among
    parallel links), if a translation group is found and every row has the same labels: then
    every translation maps slot to slot (heads ``x + l`` to ``x + v + l``)."""
    group = translation_group(topology)
    if group is None:
        return None
    labels = group.subtract(topology.dst, src)
    table = np.lexsort((labels, src)).reshape(n, -1)
    return table if np.all(labels[table] == labels[table[0]]) else None


def _cayley_slots(topology, src, dst):
    """Link ids ``(N, d)`` whose columns are orbits of a group of automorphisms acting
    transitively and freely on the nodes (a Cayley graph, the column a generator), or
    ``None`` if none is proven; on topologies with switches, always ``None``."""
    n = topology.num_nodes
    if topology.switches or n < 2:
        return None
    table = _slot_table(src, n)
    if table is None:
        return None
    if table.size * table.shape[1] <= SYMMETRY_BUDGET and _slots_transitive(dst[table]):
        return table
    return _translation_slots(topology, src, n)


def _symmetric_loads(topology, src, dst, table):
    """ECMP loads of a Cayley graph from one source: the links of one column carry, together,
    the loads of every source on any one of them."""
    ones, root = np.ones(topology.num_nodes), np.array([0])
    a, at = _adjacency(topology.num_nodes, src, dst)
    one = _dense_block_loads(a, at, root, src, dst, ones)
    if one is None:
        one = _deep_block_loads(topology, root, src, dst, ones)
    load = np.empty(src.size)
    load[table] = one[table].sum(axis=0)
    return load


def shortest_path_loads(topology, *, symmetry=True):
    """Per link: the traffic it carries when every ordered pair of ranks sends one unit split
    evenly over all its shortest paths (directed edge betweenness, rank pairs only).

    With ``symmetry`` (the default), a Cayley graph (vertex-transitive through a group of
    automorphisms acting freely, proven on the links first) needs the loads from one source
    only; otherwise every rank is a source, in blocks.

    Examples
    --------
    >>> from topocoll.topology import topology
    >>> shortest_path_loads(topology("ring:5")).tolist()     # 1 + 2 pairs each way per link
    [3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0]
    >>> t = topology("lps:3,5")
    >>> bool(np.allclose(shortest_path_loads(t), shortest_path_loads(t, symmetry=False)))
    True
    """
    return _loads(topology, symmetry)[0]


def _loads(topology, symmetry):
    """``(loads, True if from one source on a Cayley graph)``."""
    n = topology.num_nodes
    ranks = np.ones(n)
    ranks[list(topology.switches)] = 0.0
    src, dst = topology.src.astype(np.int64), topology.dst.astype(np.int64)
    table = _cayley_slots(topology, src, dst) if symmetry else None
    if table is not None:
        return _symmetric_loads(topology, src, dst, table), True
    return _general_loads(topology, src, dst, ranks), False


def _require_ranks_connected(t):
    """Raise :class:`NotStronglyConnectedError` naming the first ``(u, v)`` (row-major) of
    ranks with no path; two searches when every node reaches every other."""
    if unreachable_pair(t) is None:
        return
    dist = distance_matrix(t)
    is_rank = np.ones(t.num_nodes, dtype=bool)
    is_rank[list(t.switches)] = False
    bad = np.argwhere((dist[np.ix_(is_rank, is_rank)] < 0))
    if bad.size:
        ids = np.flatnonzero(is_rank)
        u, v = int(ids[bad[0][0]]), int(ids[bad[0][1]])
        raise NotStronglyConnectedError(f"{t.name} has no path {u} -> {v}", pair=(u, v))


def valiant_throughput(topology, *, bandwidth=None, symmetry=True):
    """Uniform all-to-all throughput under Valiant routing (and under ECMP shortest paths).

    Parameters
    ----------
    topology : Topology or str
        A topology, spec or file; strongly connected, with at least 2 ranks.
    bandwidth : float or str, optional
        Replace every link's bandwidth (``1`` for link units).
    symmetry : bool, optional
        Use one source's loads on a proven Cayley graph (:func:`shortest_path_loads`); the
        result is the same either way, up to rounding.

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
    _require_ranks_connected(t)
    load, symmetric = _loads(t, symmetry)
    used = load > 0
    cap = np.asarray(t.bandwidth, dtype=float)
    lam_sp = float(np.min(cap[used] / load[used]))
    lam = lam_sp * ranks / (2 * (ranks - 1))
    util = lam * 2 * (ranks - 1) / ranks * load / cap
    return ValiantResult(lam=lam, lam_shortest=lam_sp, num_nodes=ranks, topology=t.name,
                         betweenness=load, utilization=util, symmetric=symmetric)
