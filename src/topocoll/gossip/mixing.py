"""Gossip topologies: a periodic sequence of mixing matrices, seen two ways.

An iteration of decentralized averaging applies a mixing matrix ``W``: ``x_i <- sum_j W[i, j] x_j``
(row ``i`` holds the weights rank ``i`` applies; docs/math.md section 7). A topology repeats
``period`` matrices ``W_0 .. W_{period-1}``; iteration ``k`` uses ``W_{k mod period}``.

* :class:`GroupTopology` is decent_dp's model: every iteration splits the ranks into disjoint
  groups ``R`` with a weight ``w``; each member keeps ``w`` of its own value and takes
  ``(1 - w) / (|R| - 1)`` of every other member's. A group of one rank sits the iteration out
  (its weight is irrelevant and stored as 1).
* :class:`GraphTopology` is Bluefog's model: a weighted digraph per iteration, i.e. a self
  weight plus in-neighbour weights for every rank, static (period 1) or dynamic.

Both answer the same questions (``matrix``, ``sparse_matrix``, ``in_neighbors``,
``out_neighbors``); ``groups`` returns ``None`` for a graph topology. ``matrix(k)`` is a dense
array (refused by the memory guard when ``n x n`` floats do not fit); ``sparse_matrix(k)`` is
the same matrix in CSR form, built without a dense intermediate for group topologies and for
graph topologies given sparse, and is what the analysis and the neighbour queries use.

>>> t = GroupTopology("pairs", 4, [[((0, 1), 0.5), ((2, 3), 0.5)],
...                               [((0, 2), 0.5), ((1, 3), 0.5)]])
>>> t.period, t.matrix(1)[0].tolist()
(2, [0.5, 0.0, 0.5, 0.0])
>>> t.in_neighbors(3, 1)
(0.5, {3: 0.5})
"""

import math

import numpy as np
import scipy.sparse as sp

from ..errors import InputTypeError, TopologyError
from ..limits import require_memory
from ..units import whole_number

__all__ = ["GossipTopology", "GroupTopology", "GraphTopology", "require_dense", "require_sparse"]

#: Bytes one stored entry of a CSR matrix takes while it is built (COO row, column and value,
#: then the CSR copy: 8 + 8 + 8 + 8 + 4).
_SPARSE_ENTRY_BYTES = 36


def _check_size(size):
    return whole_number(size, "the world size")


def _check_rank(rank, size, what="rank"):
    rank = whole_number(rank, what, None)
    # a rank outside the world is a broken topology (its groups or neighbours name it)
    if not 0 <= rank < size:
        raise TopologyError(f"{what} {rank} is outside 0..{size - 1}")
    return rank


def _check_iteration(k):
    return whole_number(k, "the iteration", 0)


def require_dense(name, size, count=1):
    """Check that ``count`` dense ``size x size`` mixing matrices, and the dense analysis' working
    copies of that size, fit under the memory limit before they are made. Only the dense paths
    ask (``matrix(k)``, ``period_product``, the dense ``rho``, up to ``DENSE_MAX`` ranks by
    default); the sparse analysis needs :func:`require_sparse` only. Besides the matrices the
    dense analysis holds the period product, a fresh copy of a matrix, their product,
    ``W - J/n`` and the copy the singular value decomposition works on: five more."""
    require_memory(8 * size * size * (count + 5),
                   f"{name} on {size} ranks ({count} dense {size}x{size} mixing "
                   f"matri{'x' if count == 1 else 'ces'} and the analysis' working copies)")


def require_sparse(name, size, nnz):
    """Check that sparse mixing matrices with ``nnz`` stored weights in all (summed over the
    iterations of the period) fit under the memory limit while they are built (about 36 bytes
    per weight, plus three vectors of ``size`` per iteration for the analysis).

    >>> require_sparse("ring", 20000, 80000)
    """
    require_memory(_SPARSE_ENTRY_BYTES * int(nnz) + 24 * int(size),
                   f"{name} on {size} ranks ({int(nnz):,} non-zero mixing weights, sparse)")


def _as_csr(w):
    """``w`` (dense or sparse) as a float64 CSR array without explicit zeros, sorted indices."""
    w = sp.csr_array(w, dtype=np.float64)
    w.eliminate_zeros()
    w.sort_indices()
    return w


class GossipTopology:
    """Base class: ``period`` mixing matrices on ``size`` ranks, used cyclically.

    Subclasses implement ``_build(k)`` for ``0 <= k < period`` (one ``(size, size)`` float64
    array), or ``_build_sparse(k)`` (a scipy sparse matrix, then ``_build`` defaults to its dense
    form); matrices are built once, on first use, and handed out as copies.

    Attributes
    ----------
    name : str
        Registry name (or a label).
    size : int
        Number of ranks ``n``.
    period : int
        Number of distinct iterations; 1 for a static topology.
    params : dict
        Parameters it was built with (for reports).
    """

    model = "graph"

    def __init__(self, name, size, period, params=None):
        self.name = str(name)
        self.size = _check_size(size)
        self.period = whole_number(period, "the period")
        self.params = dict(params or {})
        self._mats = None
        self._sparse = None
        self._columns = {}

    def __repr__(self):
        extra = "".join(f", {k}={v!r}" for k, v in self.params.items())
        return (f"{type(self).__name__}({self.name!r}, size={self.size}, "
                f"period={self.period}{extra})")

    @property
    def is_static(self):
        """True when every iteration uses the same matrix (period 1)."""
        return self.period == 1

    def _build(self, k):
        """Dense ``W_k``; by default the dense form of :meth:`_build_sparse`."""
        if type(self)._build_sparse is GossipTopology._build_sparse:  # pragma: no cover
            raise NotImplementedError(f"{type(self).__name__} defines neither _build nor "
                                      "_build_sparse")
        return self._sparse_all()[k].toarray()

    def _build_sparse(self, k):
        """Sparse ``W_k``; by default from the dense :meth:`_build` (memory-guarded)."""
        return self._all()[k]

    def _sparse_all(self):
        if self._sparse is None:
            mats = []
            for k in range(self.period):
                w = _as_csr(self._build_sparse(k))
                if w.shape != (self.size, self.size):
                    raise TopologyError(f"mixing matrix {k} of {self.name} has shape {w.shape}, "
                                        f"not ({self.size}, {self.size})")
                mats.append(w)
            self._sparse = mats
        return self._sparse

    def _sparse_k(self, k):
        return self._sparse_all()[_check_iteration(k) % self.period]

    def require_dense(self):
        """Raise :class:`~topocoll.errors.ResourceLimitError` unless the dense matrices and the
        analysis' working copies fit in memory (see :func:`require_dense`)."""
        require_dense(self.name, self.size, self.period)

    def _all(self):
        if self._mats is None:
            self.require_dense()
            mats = []
            for k in range(self.period):
                w = np.array(self._build(k), dtype=np.float64)
                w.flags.writeable = False
                mats.append(w)
            self._mats = mats
        return self._mats

    def matrix(self, k=0):
        """The mixing matrix ``W_k`` of iteration ``k`` (taken mod ``period``), a fresh copy.

        Row ``i`` holds the weights rank ``i`` applies: ``x_i <- sum_j W[i, j] x_j``.
        """
        return self._all()[_check_iteration(k) % self.period].copy()

    def matrices(self):
        """The ``period`` mixing matrices, in order (copies)."""
        return [w.copy() for w in self._all()]

    def sparse_matrix(self, k=0):
        """``W_k`` as a ``scipy.sparse.csr_array`` (a copy; no explicit zeros, sorted indices).

        Needs memory for the non-zero weights only, so it works where :meth:`matrix` is
        refused (a one-peer ring on 20000 ranks holds 40000 weights per iteration, not 4e8).

        >>> from topocoll.gossip import gossip_topology
        >>> w = gossip_topology("ring", 20000).sparse_matrix(1)
        >>> w.shape, w.nnz, w[0, 19999]
        ((20000, 20000), 40000, np.float64(0.5))
        """
        return self._sparse_k(k).copy()

    def sparse_matrices(self):
        """The ``period`` mixing matrices as CSR arrays, in order (copies)."""
        return [w.copy() for w in self._sparse_all()]

    def groups(self, k=0):
        """decent_dp's view of iteration ``k``: ``[(ranks, weight), ...]``, or ``None`` when the
        topology is only a weighted digraph."""
        return None

    def in_neighbors(self, k, rank):
        """``(self_weight, {src_rank: weight})``: what ``rank`` mixes in iteration ``k``.

        Only non-zero weights of other ranks are listed (Bluefog's ``neighbor_weights``).
        """
        rank = _check_rank(rank, self.size)
        w = self._sparse_k(k)
        lo, hi = w.indptr[rank], w.indptr[rank + 1]
        cols, vals = w.indices[lo:hi], w.data[lo:hi]
        own = vals[cols == rank]
        return (float(own[0]) if own.size else 0.0,
                {int(j): float(v) for j, v in zip(cols, vals) if j != rank})

    def out_neighbors(self, k, rank):
        """Sorted ranks that use ``rank``'s value in iteration ``k`` (its send list)."""
        rank = _check_rank(rank, self.size)
        k = _check_iteration(k) % self.period
        if k not in self._columns:   # CSC once per iteration: each query is then O(degree)
            self._columns[k] = self._sparse_k(k).tocsc()
            self._columns[k].sort_indices()
        w = self._columns[k]
        rows = w.indices[w.indptr[rank]:w.indptr[rank + 1]]
        return [int(i) for i in rows if i != rank]

    def degrees(self, k=0):
        """``(in_degree, out_degree)`` arrays of iteration ``k``: other ranks each rank receives
        from / sends to (self weights not counted)."""
        w = self._sparse_k(k)
        rows = np.repeat(np.arange(self.size), np.diff(w.indptr))
        off = rows != w.indices
        return (np.bincount(rows[off], minlength=self.size),
                np.bincount(w.indices[off], minlength=self.size))

    def to_networkx(self, k=0):
        """Iteration ``k`` as a ``networkx.DiGraph`` in Bluefog's convention: an edge
        ``src -> dst`` with ``weight`` = the weight ``dst`` gives ``src``'s value; self-loops carry
        the self weights.

        >>> from topocoll.gossip import gossip_topology
        >>> g = gossip_topology("ring-graph", 4).to_networkx()
        >>> round(g[1][2]["weight"], 4), g.number_of_edges()
        (0.3333, 12)
        """
        import networkx as nx

        w = self._sparse_k(k).tocoo()
        g = nx.DiGraph(name=self.name)
        g.add_nodes_from(range(self.size))
        g.add_weighted_edges_from(zip(w.col.tolist(), w.row.tolist(), w.data.tolist()))
        return g


def _normalize_groups(size, iteration, k):
    out = []
    seen = np.zeros(size, dtype=bool)
    try:
        items = list(iteration)
    except TypeError:
        raise InputTypeError(f"iteration {k}: expected a list of (ranks, weight) groups") from None
    for entry in items:
        try:
            ranks, weight = entry
            ranks = list(ranks)
        except (TypeError, ValueError):
            raise InputTypeError(f"iteration {k}: a group is (ranks, weight), got {entry!r}") \
                from None
        if not ranks:
            raise TopologyError(f"iteration {k}: a group needs at least one rank")
        ranks = [_check_rank(r, size) for r in ranks]
        for r in ranks:
            if seen[r]:
                raise TopologyError(f"iteration {k}: rank {r} is in more than one group; each "
                                    "rank takes part in exactly one group per iteration")
            seen[r] = True
        try:
            weight = float(weight)
        except (TypeError, ValueError):
            raise InputTypeError(f"iteration {k}: group weight must be a number, got {weight!r}") \
                from None
        if not (math.isfinite(weight) and 0.0 <= weight <= 1.0):
            raise TopologyError(f"iteration {k}: group {sorted(ranks)} has weight {weight!r}; a "
                                "group weight (the share each member keeps) must be in [0, 1]")
        out.append((tuple(sorted(ranks)), 1.0 if len(ranks) == 1 else weight))
    if not seen.all():
        missing = np.flatnonzero(~seen)[:8].tolist()
        raise TopologyError(f"iteration {k}: ranks {missing} are in no group; every rank takes "
                            "part in exactly one group per iteration (a group of one sits out)")
    out.sort()
    return tuple(out)


class GroupTopology(GossipTopology):
    """decent_dp's model: per iteration, disjoint groups of ranks with a weight.

    Parameters
    ----------
    name : str
    size : int
        Number of ranks ``n``.
    iterations : sequence of sequences of ``(ranks, weight)``
        One entry per iteration of the period; in every iteration each rank is in exactly one
        group. A member keeps ``weight`` of its value and takes ``(1 - weight) / (|R| - 1)`` of
        each other member's, so ``weight = 1/|R|`` is the exact group average.
    params : dict, optional

    Raises
    ------
    TopologyError
        A rank in two groups or in none, a weight outside ``[0, 1]``, an empty period.

    Examples
    --------
    >>> t = GroupTopology("trio", 3, [[((0, 1, 2), 0.5)]])
    >>> t.matrix()[0].tolist()
    [0.5, 0.25, 0.25]
    >>> GroupTopology("bad", 3, [[((0, 1), 0.5)]])
    Traceback (most recent call last):
    ...
    topocoll.errors.TopologyError: iteration 0: ranks [2] are in no group; every rank takes part \
in exactly one group per iteration (a group of one sits out)
    """

    model = "groups"

    def __init__(self, name, size, iterations, params=None):
        size = _check_size(size)
        try:
            iterations = list(iterations)
        except TypeError:
            raise InputTypeError("iterations must be a list (one list of groups per iteration)") \
                from None
        if not iterations:
            raise TopologyError("a group topology needs at least one iteration")
        super().__init__(name, size, len(iterations), params)
        self._groups = tuple(_normalize_groups(size, it, k) for k, it in enumerate(iterations))

    def groups(self, k=0):
        """The groups of iteration ``k`` (mod ``period``): a list of ``(ranks, weight)`` with
        ``ranks`` a sorted tuple; every rank appears exactly once, singletons included."""
        return list(self._groups[_check_iteration(k) % self.period])

    def _build_sparse(self, k):
        n = self.size
        require_sparse(self.name, n, sum(len(r) ** 2 for r, _ in self._groups[k]))
        rows, cols, vals = [], [], []
        for ranks, weight in self._groups[k]:
            g = len(ranks)
            idx = np.asarray(ranks, dtype=np.int64)
            if g == 1:
                rows.append(idx)
                cols.append(idx)
                vals.append(np.ones(1))
                continue
            # Every (i, j) of the group once: the diagonal keeps ``weight``, the rest shares.
            r = np.repeat(idx, g)
            c = np.tile(idx, g)
            v = np.full(g * g, (1.0 - weight) / (g - 1))
            v[r == c] = weight
            rows.append(r)
            cols.append(c)
            vals.append(v)
        return sp.csr_array((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))),
                            shape=(n, n))


class GraphTopology(GossipTopology):
    """Bluefog's model: a weighted digraph per iteration, given by its mixing matrices.

    Parameters
    ----------
    name : str
    matrices : array, sparse matrix, or sequence of them
        One ``(n, n)`` matrix (static) or one per iteration of the period (dynamic), in
        topocoll's convention: ``W[i, j]`` is the weight rank ``i`` gives rank ``j``'s value.
        (A Bluefog ``networkx`` graph stores the transpose; use :meth:`from_networkx`.)
        A scipy sparse matrix is kept sparse: the analysis then never needs ``n x n`` floats.
    params : dict, optional

    Examples
    --------
    >>> t = GraphTopology("halves", [[0.5, 0.5], [0.5, 0.5]])
    >>> t.is_static, t.in_neighbors(0, 1)
    (True, (0.5, {0: 0.5}))
    >>> import scipy.sparse as sp
    >>> GraphTopology("id", sp.eye_array(3)).sparse_matrix().nnz
    3
    """

    def __init__(self, name, matrices, params=None):
        if sp.issparse(matrices) or (isinstance(matrices, np.ndarray) and matrices.ndim == 2):
            matrices = [matrices]
        else:
            matrices = list(matrices)
            if matrices and not sp.issparse(matrices[0]) and np.ndim(matrices[0]) == 1:
                matrices = [matrices]  # one matrix given as a list of rows
        arr = [_as_csr(m) if sp.issparse(m) else np.asarray(m, dtype=np.float64)
               for m in matrices]
        if not arr:
            raise TopologyError("a graph topology needs at least one mixing matrix")
        n = arr[0].shape[0] if arr[0].ndim == 2 else 0
        for k, m in enumerate(arr):
            if m.ndim != 2 or m.shape != (n, n) or n < 1:
                raise TopologyError(f"mixing matrix {k} has shape {m.shape}; every matrix must "
                                    f"be square and of the same size ({n})")
            if not np.all(np.isfinite(m.data if sp.issparse(m) else m)):
                raise TopologyError(f"mixing matrix {k} holds a non-finite weight")
        super().__init__(name, n, len(arr), params)
        self._given = arr

    def _build(self, k):
        w = self._given[k]
        return w.toarray() if sp.issparse(w) else w

    def _build_sparse(self, k):
        return self._given[k]

    @classmethod
    def from_neighbors(cls, name, size, iterations, params=None):
        """Build from Bluefog-style receive lists.

        ``iterations[k][rank] = (self_weight, {src_rank: weight})`` for every rank (a dict or a
        list indexed by rank); one entry per iteration of the period.

        >>> t = GraphTopology.from_neighbors("swap", 2, [[(0.5, {1: 0.5}), (0.5, {0: 0.5})]])
        >>> t.matrix().tolist()
        [[0.5, 0.5], [0.5, 0.5]]
        """
        size = _check_size(size)
        mats = []
        for k, it in enumerate(iterations):
            w = np.zeros((size, size))
            entries = it.items() if isinstance(it, dict) else enumerate(it)
            count = 0
            for rank, entry in entries:
                rank = _check_rank(rank, size)
                try:
                    self_weight, nbrs = entry
                    w[rank, rank] = float(self_weight)
                    for src, weight in dict(nbrs).items():
                        src = _check_rank(src, size, "source rank")
                        if src == rank:
                            raise TopologyError(f"iteration {k}: rank {rank} lists itself as a "
                                                "neighbour; give its weight as the self weight")
                        w[rank, src] = float(weight)
                except (TypeError, ValueError) as exc:
                    if isinstance(exc, TopologyError):
                        raise
                    raise InputTypeError(f"iteration {k}, rank {rank}: expected (self_weight, "
                                         f"{{src: weight}}), got {entry!r}") from None
                count += 1
            if count != size:
                raise TopologyError(f"iteration {k}: weights given for {count} ranks, need all "
                                    f"{size}")
            mats.append(w)
        return cls(name, mats, params)

    @classmethod
    def from_networkx(cls, graphs, name=None, params=None):
        """Build from Bluefog-style ``networkx`` digraph(s) on nodes ``0..n-1``: an edge
        ``u -> v`` with ``weight`` w means ``v`` takes w of ``u``'s value; self-loops are self
        weights. Give one graph (static) or a list (dynamic).

        >>> import networkx as nx
        >>> g = nx.DiGraph([(0, 0, {"weight": 0.5}), (0, 1, {"weight": 0.5}),
        ...                 (1, 1, {"weight": 0.5}), (1, 0, {"weight": 0.5})])
        >>> GraphTopology.from_networkx(g).matrix().tolist()
        [[0.5, 0.5], [0.5, 0.5]]
        """
        import networkx as nx

        single = isinstance(graphs, nx.Graph)
        graphs = [graphs] if single else list(graphs)
        mats = []
        for k, g in enumerate(graphs):
            if not isinstance(g, nx.DiGraph):
                raise InputTypeError(f"graph {k}: expected a networkx DiGraph, got "
                                     f"{type(g).__name__}")
            n = g.number_of_nodes()
            if sorted(g.nodes) != list(range(n)):
                raise TopologyError(f"graph {k}: nodes must be the ranks 0..{n - 1}")
            # Bluefog's adjacency is A[src, dst]; topocoll's W is its transpose.
            a = nx.to_numpy_array(g, nodelist=range(n), weight="weight")
            mats.append(a.T)
        label = name if name is not None else (graphs[0].graph.get("name") or "networkx")
        return cls(label, mats, params)
