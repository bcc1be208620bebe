"""Generative families: optimal degree-4 circulants and seeded random regular (di)graphs.

They exist for every node count (circulants for ``n >= 5``; random regular graphs whenever a
``d``-regular graph on ``n`` nodes does), which makes them the fillers of a topology search.
"""

import math

import numpy as np

from ...errors import SpecError
from ...defaults import LINK_BANDWIDTH, LINK_LATENCY
from .checks import as_int, at_least, check_size, make_topology, rows_to_links

__all__ = ["optimal_circulant_graph", "random_regular_graph", "random_regular_digraph",
           "MAX_ATTEMPTS", "check_seed", "attempt_rng"]

#: Random generators try this many derived seeds for a connected graph before giving up.
MAX_ATTEMPTS = 64


# ---------------------------------------------------------------------- optimal circulant
def _circulant_diameter(n, offsets):
    """Diameter of the circulant C(n, offsets): its eccentricity at node 0 (vertex-transitive)."""
    from scipy.sparse import coo_matrix   # imported when first needed (start-up time)
    from scipy.sparse.csgraph import shortest_path

    ids = np.arange(n, dtype=np.int64)[:, None]
    steps = np.asarray(list(offsets) + [-a for a in offsets], dtype=np.int64)[None, :]
    adj = coo_matrix((np.ones(n * steps.size, dtype=np.int8),
                      (np.repeat(np.arange(n), steps.size), ((ids + steps) % n).ravel())),
                     shape=(n, n)).tocsr()
    return int(shortest_path(adj, directed=True, unweighted=True, indices=0).max())


def _tight_diameter(n):
    """Least ``D`` with ``2D^2 + 2D + 1 >= n``, i.e. ``ceil((sqrt(2n-1) - 1) / 2)``, exactly."""
    d = max(0, (math.isqrt(2 * n - 1) - 1) // 2)
    while 2 * d * d + 2 * d + 1 < n:
        d += 1
    return d


def optimal_circulant_graph(n, *, bandwidth=LINK_BANDWIDTH, latency=LINK_LATENCY):
    """The degree-4 circulant C(n, {a, a+1}) of least diameter, ``ceil((sqrt(2n-1) - 1) / 2)``.

    No 4-regular circulant on ``n`` nodes has a smaller diameter than
    ``D = ceil((sqrt(2n-1) - 1) / 2)`` (``1 + 2D + 2D^2`` nodes are within ``D`` hops of a node),
    and C(n, {D, D+1}) reaches it (Boesch and Wang; the paper's Theorem 22), so ``a = D``:
    for ``n = 2a^2 + 2a + 1`` the graph is the dense "tight" circulant. The one exception is
    ``n = 6``, where ``D + 1 = 3 = n/2`` would merge links; there ``a = 1`` (the octahedron).
    BFB is bandwidth-optimal on it (the paper proves its conjecture for degree 4).

    Parameters
    ----------
    n : int
        Number of nodes, ``>= 5``.
    bandwidth, latency : float or str
        Per-link bandwidth (bytes/s) and latency (s).

    Returns
    -------
    Topology
        Named ``"optcirculant:25"``, links as in ``circulant:N:A,A+1``; ``meta`` has
        ``offsets``, ``diameter`` and ``symmetry = {"kind": "cyclic"}``.

    Examples
    --------
    >>> from topocoll.topology import diameter
    >>> t = optimal_circulant_graph(25)
    >>> t.name, t.meta["offsets"], diameter(t)
    ('optcirculant:25', [3, 4], 3)
    >>> t.dst[t.src == 0].tolist()
    [3, 22, 4, 21]
    >>> optimal_circulant_graph(6).meta["offsets"]
    [1, 2]
    """
    n = at_least(as_int(n, "optcirculant size"), 5,
                 "optcirculant needs n >= 5 (a 4-regular circulant)")
    name = f"optcirculant:{n}"
    check_size(name, n, 4 * n)
    bound = _tight_diameter(n)
    a = bound
    if 2 * a + 2 >= n:      # a+1 >= n/2 would merge links (only n = 6): search instead
        a = min(range(1, (n - 3) // 2 + 1), key=lambda b: _circulant_diameter(n, (b, b + 1)))
    ids = np.arange(n, dtype=np.int64)[:, None]
    steps = np.array([a, -a, a + 1, -(a + 1)], dtype=np.int64)[None, :]
    src, dst = rows_to_links((ids + steps) % n)
    meta = {"family": "optcirculant", "n": n, "offsets": [a, a + 1], "diameter": bound,
            "symmetry": {"kind": "cyclic"}}
    return make_topology(name, n, src, dst, bandwidth, latency, meta)


# ---------------------------------------------------------------------- random regular
def check_seed(seed, what):
    """``seed`` as a non-negative integer (``what`` names the generator in the message)."""
    seed = as_int(seed, f"{what} seed")
    if seed < 0:
        raise SpecError(f"{what} seed must be >= 0, got {seed}")
    return seed


def attempt_rng(seed, attempt):
    """The numpy generator of one attempt: attempt 0 uses ``seed`` itself, later ones derive
    independent streams from ``(seed, attempt)``."""
    return np.random.default_rng(seed if attempt == 0 else [seed, attempt])


def _regular_args(n, d, what):
    n = at_least(as_int(n, f"{what} size n"), 2, f"{what} needs n >= 2 nodes")
    d = as_int(d, f"{what} degree d")
    if not 1 <= d <= n - 1:
        raise SpecError(f"{what} needs degree 1 <= d <= n-1 = {n - 1}, got {d}")
    return n, d


def strongly_connected_links(n, src, dst):
    from scipy.sparse import coo_matrix   # imported when first needed (start-up time)
    from scipy.sparse.csgraph import connected_components

    adj = coo_matrix((np.ones(src.size, dtype=np.int8), (src, dst)), shape=(n, n))
    return connected_components(adj, directed=True, connection="strong")[0] == 1


def _complement_rows(n, src, dst, degree):
    """Out-neighbour rows of the complement (no self-loops) of a simple digraph."""
    full = np.ones((n, n), dtype=bool)
    full[src, dst] = False
    np.fill_diagonal(full, False)
    return np.nonzero(full)[1].reshape(n, degree)


def _edge_links(u, v):
    """Both directions of the undirected edges ``u[i] -- v[i]``, sorted by (src, dst)."""
    src, dst = np.concatenate([u, v]), np.concatenate([v, u])
    order = np.lexsort((dst, src))
    return src[order], dst[order]


def _cycle_rows(rng, n):
    """``i -> next`` along one uniformly random Hamiltonian cycle (a random cyclic order)."""
    order = rng.permutation(n)
    nxt = np.empty(n, dtype=np.int64)
    nxt[order] = np.roll(order, -1)
    return nxt


def random_regular_graph(n, d, seed=0, *, bandwidth=LINK_BANDWIDTH, latency=LINK_LATENCY):
    """A connected random ``d``-regular graph on ``n`` nodes (bidirectional), fixed by ``seed``.

    Attempt ``i`` draws from the seed ``seed`` (``i = 0``) or from ``(seed, i)``; the first
    connected draw is returned, after at most :data:`MAX_ATTEMPTS` attempts. A draw is
    networkx's ``random_regular_graph`` (Steger-Wormald pairing, asymptotically uniform) with
    an integer seed taken from the attempt's numpy generator; for ``d > (n-1)/2`` it is the
    complement of a random ``(n-1-d)``-regular graph (always connected), and for ``d = 2`` a
    uniformly random Hamiltonian cycle (the uniform connected 2-regular graph). The same seed
    gives the same graph for the same numpy and networkx versions.

    Parameters
    ----------
    n : int
        Number of nodes, ``>= 2``.
    d : int
        Degree, ``1 <= d <= n-1``, with ``n * d`` even; ``d >= 2`` unless ``n = 2``.
    seed : int
        Non-negative seed, default 0.
    bandwidth, latency : float or str
        Per-link bandwidth (bytes/s) and latency (s).

    Returns
    -------
    Topology
        Named ``"randomregular:16,3"`` (``":SEED"`` appended for a non-zero seed); ``meta``
        holds ``n``, ``d``, ``seed`` and ``attempt`` (the attempt that was kept).

    Raises
    ------
    SpecError
        Impossible parameters, or no connected draw in :data:`MAX_ATTEMPTS` attempts.

    Examples
    --------
    >>> from topocoll.topology import is_strongly_connected
    >>> t = random_regular_graph(16, 3, seed=7)
    >>> t.name, t.num_links, set(t.out_degree().tolist()), is_strongly_connected(t)
    ('randomregular:16,3:7', 48, {3}, True)
    >>> bool((random_regular_graph(16, 3, seed=7).dst == t.dst).all())
    True
    >>> random_regular_graph(5, 3)
    Traceback (most recent call last):
    ...
    topocoll.errors.SpecError: randomregular needs n * d even (n*d/2 cables), got 5 * 3 = 15
    """
    import networkx as nx

    n, d = _regular_args(n, d, "randomregular")
    seed = check_seed(seed, "randomregular")
    if n * d % 2:
        raise SpecError(f"randomregular needs n * d even (n*d/2 cables), got {n} * {d} = {n * d}")
    if d == 1 and n > 2:
        raise SpecError(f"randomregular needs degree d >= 2 for n > 2 (d = 1 is a matching, "
                        f"never connected), got n = {n}")
    name = f"randomregular:{n},{d}" + (f":{seed}" if seed else "")
    check_size(name, n, n * d)
    flip = d > (n - 1) / 2
    for attempt in range(MAX_ATTEMPTS):
        rng = attempt_rng(seed, attempt)
        if n == 2:
            src, dst = np.array([0, 1]), np.array([1, 0])
        elif d == 2:
            ids = np.arange(n, dtype=np.int64)
            src, dst = _edge_links(ids, _cycle_rows(rng, n))
        else:
            g = nx.random_regular_graph(n - 1 - d if flip else d, n,
                                        seed=int(rng.integers(2**32)))
            edges = np.array(list(g.edges()), dtype=np.int64).reshape(-1, 2)
            src, dst = _edge_links(edges[:, 0], edges[:, 1])
            if flip:
                src, dst = rows_to_links(_complement_rows(n, src, dst, d))
        if strongly_connected_links(n, src, dst):
            meta = {"family": "randomregular", "n": n, "d": d, "seed": seed, "attempt": attempt}
            return make_topology(name, n, src, dst, bandwidth, latency, meta)
    raise SpecError(f"randomregular drew no connected {d}-regular graph on {n} nodes in "
                    f"{MAX_ATTEMPTS} attempts from seed {seed}; try another seed")


def _permutation_layers(rng, n, d, *, rounds=2000):
    """``(n, d)`` out-neighbours: ``d`` random permutations with no fixed points and no two
    agreeing anywhere. Each is drawn at random, then repaired in rounds: every node whose
    target clashes (itself, or a target of an earlier permutation) swaps targets with a random
    clash-free node, where the swap creates no new clash. ``None`` if a repair stalls."""
    rows = np.empty((n, d), dtype=np.int64)
    ids = np.arange(n, dtype=np.int64)
    dense = n <= 8192
    taken = np.eye(n, dtype=bool) if dense else None     # taken[x, v]: x -> v exists or x == v

    def clashes(x, target, used):
        if dense:
            return taken[x, target]
        return (target == x) | np.any(used[x] == target[:, None], axis=1)

    for layer in range(d):
        used = rows[:, :layer]
        perm = rng.permutation(n)
        clash = clashes(ids, perm, used)
        for _ in range(rounds):
            x = np.flatnonzero(clash)
            if x.size == 0:
                break
            y = rng.integers(n, size=x.size)
            y, first = np.unique(y, return_index=True)     # each partner in one swap only
            x = x[first]
            ok = ~clash[y]
            x, y = x[ok], y[ok]
            ok = ~clashes(x, perm[y], used) & ~clashes(y, perm[x], used)
            x, y = x[ok], y[ok]
            perm[x], perm[y] = perm[y], perm[x]
            clash[x] = False
        else:
            return None
        rows[:, layer] = perm
        if dense:
            taken[ids, perm] = True
    return rows


def random_regular_digraph(n, d, seed=0, *, bandwidth=LINK_BANDWIDTH,
                           latency=LINK_LATENCY):
    """A strongly connected random digraph with in- and out-degree ``d``, fixed by ``seed``.

    A draw is the union of ``d`` random permutations of the nodes, each made free of fixed
    points (self-loops) and of agreements with the earlier ones (parallel links) by random
    transpositions; for ``d > (n-1)/2`` it is the complement of such a ``(n-1-d)``-regular
    draw, and for ``d = 1`` one uniformly random Hamiltonian cycle. Attempts and seeds work as
    in :func:`random_regular_graph` (numpy only: the same seed gives the same digraph for the
    same numpy version). Links are usually one-way: a link ``u -> v`` has no partner
    ``v -> u`` unless the draw made one.

    Parameters
    ----------
    n : int
        Number of nodes, ``>= 2``.
    d : int
        In- and out-degree, ``1 <= d <= n-1``.
    seed : int
        Non-negative seed, default 0.
    bandwidth, latency : float or str
        Per-link bandwidth (bytes/s) and latency (s).

    Returns
    -------
    Topology
        Named ``"randomdigraph:16,2"`` (``":SEED"`` appended for a non-zero seed).

    Examples
    --------
    >>> from topocoll.topology import degree_summary, is_strongly_connected
    >>> t = random_regular_digraph(16, 2, seed=3)
    >>> t.name, t.num_links, degree_summary(t)["regular"], is_strongly_connected(t)
    ('randomdigraph:16,2:3', 32, True, True)
    >>> random_regular_digraph(4, 3).num_links    # d = n-1: the complete digraph
    12
    """
    n, d = _regular_args(n, d, "randomdigraph")
    seed = check_seed(seed, "randomdigraph")
    name = f"randomdigraph:{n},{d}" + (f":{seed}" if seed else "")
    check_size(name, n, n * d)
    flip = d > (n - 1) / 2 and d > 1
    for attempt in range(MAX_ATTEMPTS):
        rng = attempt_rng(seed, attempt)
        if d == 1:
            rows = _cycle_rows(rng, n)[:, None]
        else:
            rows = _permutation_layers(rng, n, n - 1 - d if flip else d)
            if rows is None:
                continue
            if flip:
                src, dst = rows_to_links(rows)
                rows = _complement_rows(n, src, dst, d)
        src, dst = rows_to_links(np.sort(rows, axis=1))
        if strongly_connected_links(n, src, dst):
            meta = {"family": "randomdigraph", "n": n, "d": d, "seed": seed, "attempt": attempt}
            return make_topology(name, n, src, dst, bandwidth, latency, meta)
    raise SpecError(f"randomdigraph drew no strongly connected {d}-regular digraph on {n} nodes "
                    f"in {MAX_ATTEMPTS} attempts from seed {seed}; try another seed")
