"""Low-diameter expanders for all-to-all traffic: Jellyfish, Xpander, Slim Fly, PolarFly and a
modified de Bruijn digraph.

All-to-all throughput is bounded by bisection bandwidth and by ``capacity / sum of distances``
(docs/math.md section 6), so good all-to-all topologies are expanders of small diameter:

* ``jellyfish:N,D[,SEED]``: a seeded random ``D``-regular graph (Singla et al., NSDI'12), the
  same graph as ``randomregular:N,D:SEED``;
* ``xpander:N,D[,SEED]``: a random ``K``-lift of the complete graph ``K_{D+1}``,
  ``N = K(D+1)`` (Valadarsky et al., CoNEXT'16);
* ``slimfly:Q``: the McKay-Miller-Siran graph (Besta and Hoefler, SC'14), ``2Q^2`` routers of
  degree ``(3Q - delta)/2``, diameter 2;
* ``polarfly:Q``: the Erdos-Renyi polarity graph ``ER_Q`` (Lakhotia et al., SC'22),
  ``Q^2+Q+1`` routers of degree ``Q+1`` (``Q`` on the ``Q+1`` absolute points), diameter 2;
* ``moddebruijn:N,D``: the generalized de Bruijn digraph ``i -> D*i + j mod N`` with its
  self-loops rewired into a cycle, so that every node has in- and out-degree exactly ``D``.

The undirected families are bidirectional (two links per edge) and simple; ``moddebruijn`` is
directed. Random families retry derived seeds until the graph is connected, like
:func:`~topocoll.topology.families.random_regular_graph`.

>>> from topocoll.topology import diameter
>>> t = slimfly_graph(5)            # the Hoffman-Singleton graph
>>> t.num_nodes, set(t.out_degree().tolist()), diameter(t)
(50, {7}, 2)
"""

import numpy as np

from ...errors import SpecError
from ...defaults import LINK_BANDWIDTH, LINK_LATENCY
from .checks import as_int, at_least, check_size, make_topology, rows_to_links
from .finite_field import GaloisField, prime_power
from .drg import projective_points
from .generative import MAX_ATTEMPTS, attempt_rng, check_seed, random_regular_graph

__all__ = ["jellyfish_graph", "xpander_graph", "slimfly_graph", "polarfly_graph",
           "modified_de_bruijn_graph", "slimfly_generators"]


def _connected(n, src, dst):
    from scipy.sparse import coo_matrix   # imported when first needed (start-up time)
    from scipy.sparse.csgraph import connected_components

    adj = coo_matrix((np.ones(src.size, dtype=np.int8), (src, dst)), shape=(n, n))
    return connected_components(adj, directed=True, connection="strong")[0] == 1


def _seeded_name(family, n, d, seed):
    return f"{family}:{n},{d}" + (f",{seed}" if seed else "")


# ---------------------------------------------------------------------- Jellyfish
def jellyfish_graph(n, d, seed=0, *, bandwidth=LINK_BANDWIDTH, latency=LINK_LATENCY):
    """Jellyfish: a connected random ``d``-regular graph on ``n`` nodes, fixed by ``seed``.

    The links are exactly those of :func:`~topocoll.topology.families.random_regular_graph`
    with the same ``n, d, seed`` (Steger-Wormald pairing through networkx, retried with derived
    seeds until connected); only the name and ``meta["family"]`` differ.

    Parameters
    ----------
    n : int
        Number of nodes (switches), ``>= 2``.
    d : int
        Degree (network ports per switch), ``n * d`` even.
    seed : int
        Non-negative seed, default 0.
    bandwidth, latency : float or str
        Per-link bandwidth (bytes/s) and latency (s).

    Returns
    -------
    Topology
        Named ``"jellyfish:64,4"`` (``",SEED"`` appended for a non-zero seed).

    Examples
    --------
    >>> t = jellyfish_graph(16, 3, seed=7)
    >>> t.name, t.num_links, t.is_bidirectional(), set(t.out_degree().tolist())
    ('jellyfish:16,3,7', 48, True, {3})
    >>> from topocoll.topology import random_regular_graph
    >>> bool((random_regular_graph(16, 3, seed=7).dst == t.dst).all())
    True
    """
    base = random_regular_graph(n, d, seed, bandwidth=bandwidth, latency=latency)
    meta = dict(base.meta, family="jellyfish")
    return make_topology(_seeded_name("jellyfish", base.meta["n"], base.meta["d"],
                                      base.meta["seed"]),
                         base.num_nodes, base.src, base.dst, base.bandwidth, base.latency, meta)


# ---------------------------------------------------------------------- Xpander
def xpander_graph(n, d, seed=0, *, bandwidth=LINK_BANDWIDTH, latency=LINK_LATENCY):
    """Xpander: a random ``k``-lift of the complete graph ``K_{d+1}``, ``n = k(d+1)`` nodes.

    Node ``u*k + i`` is copy ``i`` of base node ``u``. Every base edge ``u < v`` becomes the
    perfect matching ``u*k + i -- v*k + pi_uv(i)`` for a uniformly random permutation
    ``pi_uv`` of ``0..k-1``, so the lift is ``d``-regular and simple (no self-loops, no
    parallel links). Attempt ``a`` draws from ``seed`` (``a = 0``) or ``(seed, a)``; the first
    connected lift is kept (``meta["attempt"]``). ``k = 1`` gives ``K_{d+1}`` itself.

    Parameters
    ----------
    n : int
        Number of nodes, a multiple of ``d + 1``.
    d : int
        Degree, ``>= 2``.
    seed : int
        Non-negative seed, default 0.
    bandwidth, latency : float or str
        Per-link bandwidth (bytes/s) and latency (s).

    Returns
    -------
    Topology
        Named ``"xpander:64,7"`` (``",SEED"`` appended for a non-zero seed); ``meta`` has
        ``n``, ``d``, ``lift`` (``k``), ``seed`` and ``attempt``.

    Raises
    ------
    SpecError
        ``n`` not a multiple of ``d + 1``, ``d < 2``, or no connected lift in
        :data:`~topocoll.topology.families.generative.MAX_ATTEMPTS` attempts.

    Examples
    --------
    >>> t = xpander_graph(20, 4, seed=1)
    >>> t.name, t.meta["lift"], t.num_links, set(t.out_degree().tolist())
    ('xpander:20,4,1', 4, 80, {4})
    >>> xpander_graph(21, 4)
    Traceback (most recent call last):
    ...
    topocoll.errors.SpecError: xpander: n must be a multiple of d+1 (n = k(d+1) for a k-lift of K_(d+1)), got n = 21, d = 4
    """
    n = at_least(as_int(n, "xpander size n"), 3, "xpander needs n >= 3 nodes")
    d = at_least(as_int(d, "xpander degree d"), 2, "xpander needs degree d >= 2")
    seed = check_seed(seed, "xpander")
    if n % (d + 1):
        raise SpecError(f"xpander: n must be a multiple of d+1 (n = k(d+1) for a k-lift of "
                        f"K_(d+1)), got n = {n}, d = {d}")
    k = n // (d + 1)
    name = _seeded_name("xpander", n, d, seed)
    check_size(name, n, n * d)
    base_u, base_v = np.triu_indices(d + 1, 1)
    copies = np.arange(k, dtype=np.int64)
    for attempt in range(MAX_ATTEMPTS):
        rng = attempt_rng(seed, attempt)
        perms = rng.permuted(np.tile(copies, (base_u.size, 1)), axis=1)   # pi_uv per base edge
        u = (base_u[:, None] * k + copies[None, :]).ravel()
        v = (base_v[:, None] * k + perms).ravel()
        src, dst = np.concatenate([u, v]), np.concatenate([v, u])
        if _connected(n, src, dst):
            order = np.lexsort((dst, src))
            meta = {"family": "xpander", "n": n, "d": d, "lift": k, "seed": seed,
                    "attempt": attempt}
            return make_topology(name, n, src[order], dst[order], bandwidth, latency, meta)
    raise SpecError(f"xpander drew no connected {k}-lift of K_{d + 1} in {MAX_ATTEMPTS} attempts "
                    f"from seed {seed}; try another seed")


# ---------------------------------------------------------------------- finite-field helpers
def _field_tables(q):
    """GF(q), its addition, negation and multiplication tables, and a primitive element."""
    field = GaloisField(q)
    x = np.arange(q, dtype=np.int64)
    add = field.add(x[:, None], x[None, :])
    mul = field.mul(x[:, None], x[None, :])
    neg = field.neg(x)
    for g in range(2, q) if q > 2 else [1]:
        power, seen = 1, 1
        while True:
            power = int(mul[power, g])
            if power == 1:
                break
            seen += 1
        if seen == q - 1:
            return field, add, neg, mul, g
    return field, add, neg, mul, 1  # q = 2: the only non-zero element generates GF(2)*


def _prime_power_q(q, family, rule):
    q = as_int(q, f"{family} field size q")
    if q < 2 or prime_power(q) is None:
        raise SpecError(f"{rule}, got {q}")
    return q


# ---------------------------------------------------------------------- Slim Fly
def slimfly_generators(q):
    """The generator sets ``X`` and ``X'`` of the MMS graph over GF(q), and ``delta``.

    With ``q = 4w + delta`` (``delta`` in ``{-1, 0, 1}``) and ``xi`` the least primitive element
    of GF(q) (numbered as in :mod:`.finite_field`): ``delta = 1``: ``X`` = the even powers
    ``xi^0, xi^2, ..., xi^(q-3)``; ``delta = 0``: ``X = {xi^0, xi^2, ..., xi^(q-2)}``;
    ``delta = -1``: ``X = {xi^0, xi^2, ..., xi^(2w-2)} + {xi^(2w-1), xi^(2w+1), ..., xi^(4w-3)}``.
    In every case ``X' = xi X``, ``|X| = |X'| = (q - delta)/2`` and ``X = -X`` (so the graph is
    undirected).

    Parameters
    ----------
    q : int
        A prime power with ``q mod 4`` in ``{0, 1, 3}``.

    Returns
    -------
    X, Xprime : list of int
        Sorted element numbers.
    delta : int

    Examples
    --------
    >>> slimfly_generators(5)
    ([1, 4], [2, 3], 1)
    >>> slimfly_generators(7)
    ([1, 2, 5, 6], [1, 3, 4, 6], -1)
    """
    q = _prime_power_q(q, "slimfly", "slimfly: q must be a prime power with q = 4w + delta, "
                                     "delta in {-1, 0, 1}")
    delta = {1: 1, 0: 0, 3: -1}.get(q % 4)
    if delta is None or q < 3:
        raise SpecError(f"slimfly: q must be a prime power with q = 4w + delta, delta in "
                        f"{{-1, 0, 1}} (q = 2 mod 4 is not), got {q}")
    _, _, _, mul, xi = _field_tables(q)
    w = (q - delta) // 4
    if delta == 1:
        exponents = list(range(0, q - 2, 2))
    elif delta == 0:
        exponents = list(range(0, q - 1, 2))
    else:
        exponents = list(range(0, 2 * w - 1, 2)) + list(range(2 * w - 1, 4 * w - 2, 2))
    powers = [1]
    for _ in range(q - 2):
        powers.append(int(mul[powers[-1], xi]))
    x_set = sorted({powers[e % (q - 1)] for e in exponents})
    x_prime = sorted({int(mul[xi, s]) for s in x_set})
    return x_set, x_prime, delta


def slimfly_graph(q, *, bandwidth=LINK_BANDWIDTH, latency=LINK_LATENCY):
    """Slim Fly: the McKay-Miller-Siran graph over GF(q), ``2q^2`` nodes, diameter 2.

    Nodes are ``(0, x, y)`` (id ``x*q + y``) and ``(1, m, c)`` (id ``q^2 + m*q + c``) for
    ``x, y, m, c`` in GF(q). Links: ``(0, x, y) -- (0, x, y')`` iff ``y - y'`` is in ``X``;
    ``(1, m, c) -- (1, m, c')`` iff ``c - c'`` is in ``X'``; ``(0, x, y) -- (1, m, c)`` iff
    ``y = m x + c`` (see :func:`slimfly_generators`). The degree is ``(3q - delta)/2`` for
    ``q = 4w + delta``; the graph is bidirectional, simple and has diameter 2. ``slimfly:5``
    is the Hoffman-Singleton graph.

    Parameters
    ----------
    q : int
        A prime power with ``q = 4w + delta``, ``delta`` in ``{-1, 0, 1}``: 3, 4, 5, 7, 8, 9,
        11, 13, 16, 17, 19, 23, 25, 27, ...
    bandwidth, latency : float or str
        Per-link bandwidth (bytes/s) and latency (s).

    Returns
    -------
    Topology
        Named ``"slimfly:5"``; ``meta`` has ``q``, ``delta``, ``degree``, ``X`` and ``Xprime``.

    Examples
    --------
    >>> t = slimfly_graph(7)
    >>> t.name, t.num_nodes, t.meta["degree"], set(t.out_degree().tolist())
    ('slimfly:7', 98, 11, {11})
    >>> slimfly_graph(6)
    Traceback (most recent call last):
    ...
    topocoll.errors.SpecError: slimfly: q must be a prime power with q = 4w + delta, delta in {-1, 0, 1}, got 6
    """
    x_set, x_prime, delta = slimfly_generators(q)
    name = f"slimfly:{q}"
    degree = (3 * q - delta) // 2
    check_size(name, 2 * q * q, 2 * q * q * degree)
    _, add, neg, mul, _ = _field_tables(q)
    f = np.arange(q, dtype=np.int64)
    a, b = np.divmod(np.arange(q * q, dtype=np.int64), q)      # (x, y) or (m, c) of each node
    in0 = a[:, None] * q + add[b][:, x_set]                    # (0,x,y) -> (0,x,y+s)
    in1 = q * q + a[:, None] * q + add[b][:, x_prime]          # (1,m,c) -> (1,m,c+s)
    # (0,x,y) -> (1,m,y-mx) for every m; (1,m,c) -> (0,x,mx+c) for every x
    cross0 = q * q + f[None, :] * q + add[b[:, None], neg[mul[f[None, :], a[:, None]]]]
    cross1 = f[None, :] * q + add[mul[a[:, None], f[None, :]], b[:, None]]
    rows = np.concatenate([np.concatenate([in0, cross0], axis=1),
                           np.concatenate([in1, cross1], axis=1)])
    src, dst = rows_to_links(np.sort(rows, axis=1))
    meta = {"family": "slimfly", "q": q, "delta": delta, "degree": degree, "X": x_set,
            "Xprime": x_prime}
    return make_topology(name, 2 * q * q, src, dst, bandwidth, latency, meta)


# ---------------------------------------------------------------------- PolarFly
def polarfly_graph(q, *, bandwidth=LINK_BANDWIDTH, latency=LINK_LATENCY):
    """PolarFly: the Erdos-Renyi polarity graph ER_q, ``q^2 + q + 1`` nodes, diameter 2.

    Nodes are the points of the projective plane PG(2, q): vectors over GF(q) whose first
    non-zero coordinate is 1, numbered in increasing base-``q`` code (first coordinate most
    significant). ``x -- y`` iff ``x . y = 0``. The ``q + 1`` *absolute* points (``x . x = 0``)
    would be adjacent to themselves; that self-loop is dropped (``meta["dropped_self_loops"]``,
    ``meta["absolute_points"]``), so they have degree ``q`` and every other node ``q + 1``.
    Bidirectional and simple, with diameter 2: two points ``x, y`` are both orthogonal to
    ``x`` cross ``y`` (the pole of the line through them), a common neighbour unless it is
    ``x`` or ``y`` itself, in which case they are adjacent. With degree ``d = q + 1``,
    ``N = q^2 + q + 1`` is more than ``q/(q+1)`` of the Moore bound ``d^2 + 1``.

    Parameters
    ----------
    q : int
        A prime power: 2, 3, 4, 5, 7, 8, 9, 11, ...
    bandwidth, latency : float or str
        Per-link bandwidth (bytes/s) and latency (s).

    Returns
    -------
    Topology
        Named ``"polarfly:7"``; ``meta`` has ``q`` and ``absolute_points``.

    Examples
    --------
    >>> t = polarfly_graph(7)
    >>> t.num_nodes, sorted(set(t.out_degree().tolist())), len(t.meta["absolute_points"])
    (57, [7, 8], 8)
    >>> polarfly_graph(2).meta["dropped_self_loops"]
    3
    """
    q = _prime_power_q(q, "polarfly", "polarfly: q must be a prime power (2, 3, 4, 5, 7, 8, "
                                      "9, 11, ...)")
    num_nodes = q * q + q + 1
    name = f"polarfly:{q}"
    check_size(name, num_nodes, num_nodes * (q + 1))
    field, add, neg, mul, _ = _field_tables(q)
    points = projective_points(field, 3)
    inv = field.inverse_table()
    place = np.array([q * q, q, 1], dtype=np.int64)
    x0, x1, x2 = points.T
    t = np.arange(q, dtype=np.int64)[None, :]
    # The q+1 points of the polar line x^perp = {y : x . y = 0}, one row per point x:
    # x = (1, x1, x2): y = (-(x1 + x2 t), 1, t) and (-x2, 0, 1);
    # x = (0, 1, x2): y = (1, -x2 t, t) and (0, -x2, 1);  x = (0, 0, 1): y = (1, t, 0), (0, 1, 0).
    one, zero = np.ones_like(x0)[:, None], np.zeros_like(x0)[:, None]
    lead1, lead2 = (x0 == 1)[:, None], ((x0 == 0) & (x1 == 1))[:, None]
    y0 = np.where(lead1, neg[add[x1[:, None], mul[x2[:, None], t]]], one)
    y1 = np.where(lead1, one, np.where(lead2, neg[mul[x2[:, None], t]], t))
    y2 = np.where(lead1 | lead2, np.broadcast_to(t, y0.shape), zero)
    y0 = np.concatenate([y0, np.where(lead1, neg[x2][:, None], zero)], axis=1)
    y1 = np.concatenate([y1, np.where(lead1, zero, np.where(lead2, neg[x2][:, None], one))],
                        axis=1)
    y2 = np.concatenate([y2, np.where(lead1 | lead2, one, zero)], axis=1)
    # normalize: scale each vector by the inverse of its first non-zero coordinate
    lead = np.where(y0 != 0, y0, np.where(y1 != 0, y1, y2))
    scale = inv[lead]
    code = mul[scale, y0] * place[0] + mul[scale, y1] * place[1] + mul[scale, y2] * place[2]
    # index of a normalized point from its code: (0,0,1) first, then (0,1,t), then (1,a,b)
    index = np.where(code >= q * q, code - q * q + q + 1, np.where(code >= q, code - q + 1, 0))
    src, dst = rows_to_links(np.sort(index, axis=1))
    absolute = src[src == dst].tolist()
    meta = {"family": "polarfly", "q": q, "absolute_points": absolute}
    return make_topology(name, num_nodes, src, dst, bandwidth, latency, meta,
                         drop_self_loops=True)


# ---------------------------------------------------------------------- modified de Bruijn
def _repair_loops(n, rows):
    """Replace the self-loops of the ``(n, d)`` out-neighbour table ``rows`` (one loop per node
    at most) by degree-preserving head swaps; returns the new table and the repair used.

    With loop nodes ``v_0 < ... < v_{m-1}``: ``"cycle"``, the loops become the cycle
    ``v_i -> v_{i+1 mod m}`` when none of those arcs exists; else ``"cover"``, they become
    ``v -> sigma(v)`` for a fixed-point-free permutation ``sigma`` of the loop nodes using only
    new arcs (a perfect matching of scipy's ``maximum_bipartite_matching``), a union of
    cycles; else ``"swap"``, each loop ``v -> v`` is exchanged with the first arc ``a -> b``
    (in node order) such that ``a -> v`` and ``v -> b`` are new: they become ``a -> v`` and
    ``v -> b``. Every repair keeps all in- and out-degrees and adds no parallel links.
    """
    from scipy.sparse import csr_matrix
    from scipy.sparse.csgraph import maximum_bipartite_matching

    rows = rows.copy()
    ids = np.arange(n, dtype=np.int64)
    loop_node, loop_slot = np.nonzero(rows == ids[:, None])
    m = loop_node.size
    if m == 0:
        return rows, "none"
    keys = np.unique((ids[:, None] * n + rows).ravel())        # every arc a -> b as a*n + b

    def exists(a, b):
        query = np.asarray(a, dtype=np.int64) * n + np.asarray(b, dtype=np.int64)
        return keys[np.minimum(np.searchsorted(keys, query), keys.size - 1)] == query

    nxt = np.roll(loop_node, -1)
    if m >= 2 and not exists(loop_node, nxt).any():
        rows[loop_node, loop_slot] = nxt
        return rows, "cycle"
    allowed = ~exists(loop_node[:, None], loop_node[None, :])
    np.fill_diagonal(allowed, False)
    match = maximum_bipartite_matching(csr_matrix(allowed.astype(np.int8)), perm_type="column")
    if m >= 2 and np.all(match >= 0):
        rows[loop_node, loop_slot] = loop_node[match]
        return rows, "cover"
    arcs = set(keys.tolist())     # rare fallback: plain Python, updated swap by swap
    for v, slot in zip(loop_node.tolist(), loop_slot.tolist()):
        for a in range(n):
            if a == v or a * n + v in arcs:
                continue
            free = [s for s, b in enumerate(rows[a].tolist())
                    if b not in (a, v) and v * n + b not in arcs]
            if free:
                b = int(rows[a, free[0]])
                rows[a, free[0]], rows[v, slot] = v, b
                arcs -= {a * n + b, v * n + v}
                arcs |= {a * n + v, v * n + b}
                break
        else:
            raise SpecError(f"moddebruijn found no degree-preserving rewiring of the self-loop "
                            f"at node {v}")
    return rows, "swap"


def modified_de_bruijn_graph(n, d, *, bandwidth=LINK_BANDWIDTH, latency=LINK_LATENCY):
    """Modified de Bruijn digraph: ``i -> d*i + j mod n`` (``j < d``), self-loops rewired so that
    every node has in- and out-degree exactly ``d``.

    The generalized de Bruijn digraph (Imase-Itoh, Reddy-Pradhan-Kuhl) has ``d`` distinct
    out-neighbours per node for ``d < n``, but self-loops where ``(d-1) i + j = 0 mod n``
    (for ``n = d^k``: the ``d`` constant strings). Dropping them, as ``debruijn:D,K`` does,
    leaves those nodes with degree ``d - 1``. Here the loops are instead redirected among the
    loop nodes by degree-preserving head swaps (see ``_repair_loops``): for ``n = d^k`` the
    constant strings ``0...0 -> 1...1 -> ... -> (d-1)...(d-1) -> 0...0`` form a directed
    cycle (for ``d = 2``: ``0...0 <-> 1...1``); otherwise a cycle cover of the loop nodes
    (``"cover"``) or, when none uses only new arcs, a swap with another arc (``"swap"``).
    Loops carry no traffic, so the ``"cycle"`` and ``"cover"`` repairs only add arcs to the
    loop-free de Bruijn digraph: it stays strongly connected and its diameter does not grow
    (``ceil(log_d n)`` for ``n = d^k``). ``meta["repair"]`` says which repair was used.

    Parameters
    ----------
    n : int
        Number of nodes, ``>= 3``.
    d : int
        Degree, ``2 <= d <= n - 1``.
    bandwidth, latency : float or str
        Per-link bandwidth (bytes/s) and latency (s).

    Returns
    -------
    Topology
        Named ``"moddebruijn:16,2"``; ``meta`` has ``n``, ``d``, ``rewired_loops`` and
        ``repair`` (``"none"``, ``"cycle"``, ``"cover"`` or ``"swap"``).

    Examples
    --------
    >>> t = modified_de_bruijn_graph(8, 2)
    >>> t.num_links, t.dst[t.src == 0].tolist(), t.dst[t.src == 7].tolist()
    (16, [1, 7], [0, 6])
    >>> t.meta["rewired_loops"], t.meta["repair"]
    (2, 'cycle')
    """
    n = at_least(as_int(n, "moddebruijn size n"), 3, "moddebruijn needs n >= 3 nodes")
    d = as_int(d, "moddebruijn degree d")
    if not 2 <= d <= n - 1:
        raise SpecError(f"moddebruijn needs degree 2 <= d <= n-1 = {n - 1}, got {d}")
    name = f"moddebruijn:{n},{d}"
    check_size(name, n, n * d)
    ids = np.arange(n, dtype=np.int64)[:, None]
    rows = (d * ids + np.arange(d, dtype=np.int64)[None, :]) % n
    loops = int(np.count_nonzero(rows == ids))
    rows, repair = _repair_loops(n, rows)
    src, dst = rows_to_links(np.sort(rows, axis=1))
    meta = {"family": "moddebruijn", "n": n, "d": d, "rewired_loops": loops, "repair": repair}
    return make_topology(name, n, src, dst, bandwidth, latency, meta)
