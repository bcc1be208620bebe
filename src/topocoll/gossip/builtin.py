"""The built-in gossip topologies: decent_dp's and Bluefog's, for every world size that has one.

decent_dp's (groups; symmetric and doubly stochastic):

* ``complete`` -- one group of all ranks, weight 1/n (exact average every iteration).
* ``ring`` -- one-peer ring: pairs ``(2i, 2i+1)`` then ``(2i+1, 2i+2)``, weight 1/2. decent_dp
  rejects odd n; here odd n >= 3 gets a period-3 schedule (an odd cycle needs three matchings),
  one rank idle per iteration.
* ``one-peer-exp`` (alias ``exp``) -- hypercube pairing ``i <-> i XOR 2^t`` in iteration t,
  period ``ceil(log2 n)``, weight 1/2; exact average after ``log2 n`` iterations when n is a
  power of two (decent_dp's pairing exactly). Other n: a rank whose partner would be ``>= n``
  sits the iteration out; the average is then reached only in the limit (the product's entries
  are multiples of ``2^-t``, never ``1/n``).
* ``alternating-exp-ring`` (``local_size=L``) -- n = L * M ranks on M nodes; each round t pairs
  node ``j`` with ``j XOR 2^t``; one iteration averages inside each node (weight 1/L), the next
  averages the two paired nodes' 2L ranks (weight 1/(2L)). As in decent_dp, alternate node
  pairs are staggered by one iteration (``stagger=False``: every pair intra then inter).
  decent_dp needs M a power of two >= 2 and crashes for L = 1; here any M works (a node whose
  partner would be ``>= M`` averages inside itself in both iterations), L = 1 is a valid
  (if idle-heavy) schedule, and M = 1 is the node's complete average.

Bluefog's (weighted digraphs, weights exactly as Bluefog's ``topology_util`` gives them):

* ``exponential-graph`` (``base=2``) -- receive from ``i - b^k`` for every power ``b^k < n``,
  uniform weights ``1/(1 + #powers)``; circulant, doubly stochastic, directed.
* ``symmetric-exponential-graph`` (``base=4``) -- offsets whose circular distance
  ``min(s, n - s)`` is a power of the base; symmetric, uniform weights.
* ``ring-graph`` (``connect_style=0``) -- 0: both neighbours, weights 1/3 (= Metropolis-Hastings
  on a ring; n = 2: 1/2); 1: from the right neighbour, 2: from the left one, weights 1/2.
* ``mesh-graph`` (``shape=None``) -- 2-D grid (rows <= columns, the closest factor pair by
  default; a line for prime n) with Metropolis-Hastings weights ``1/max(d_i + 1, d_j + 1)``.
* ``star-graph`` (``center=0``) -- Bluefog's star: center row 1/n everywhere, a leaf keeps
  ``1 - 1/n`` and takes 1/n of the center; symmetric and doubly stochastic (slow: rho = 1 - 1/n).
* ``fully-connected-graph`` -- every weight 1/n.
* ``one-peer-exponential-graph`` -- Bluefog's dynamic one-peer schedule
  (``GetDynamicOnePeerSendRecvRanks``) over the exponential graph: in iteration k rank i sends to
  ``i + 2^(k mod m)``, self and received weights 1/2; period ``m = ceil(log2 n)``, exact average
  after m iterations when n is a power of two.
* ``one-peer-graph`` (``base=...``) -- the same one-peer rule over any static registered graph;
  weights ``1/(1 + #received)``: row stochastic, column stochastic only where every rank
  receives the same number (e.g. circulant bases).
* ``inner-outer-ring`` / ``inner-outer-exponential`` (``local_size=L``) -- Bluefog's
  ``GetInnerOuterRingDynamicSendRecvRanks`` / ``GetInnerOuterExpo2DynamicSendRecvRanks``: in
  iteration k local rank ``k mod L`` of every machine sends to its counterpart on the next
  machine (ring) or ``2^j`` machines on (exponential); the others send around the machine's
  ring of remaining ranks (by 1, or by powers of two). Weights 1/2. Bluefog needs L > 2; here
  a rank whose only target is itself sits the iteration out, so every L, M >= 1 works.
* ``metropolis-hastings`` (``network=SPEC``) -- Metropolis-Hastings weights on the undirected
  version of any topology of :mod:`topocoll.topology` with n nodes.
"""

import math

import numpy as np
import scipy.sparse as sp

from ..errors import InputTypeError, SpecError
from ..limits import require_memory
from .mixing import GraphTopology, GroupTopology, require_dense, require_sparse
from .registry import gossip_topology, register_gossip_topology

__all__ = ["metropolis_hastings", "metropolis_hastings_topology", "one_peer_dynamic",
           "circulant_topology", "BUILTIN_NAMES", "MAX_DYNAMIC_PERIOD"]

#: A dynamic one-peer schedule whose period would exceed this is refused (it never repeats in
#: any run that matters, and its matrices would not fit in memory for large n).
MAX_DYNAMIC_PERIOD = 4096


#: Bytes one rank takes in one iteration of a group topology (Python tuples of ranks).
_GROUP_BYTES = 400


def _need(name, size, minimum=2, dense=0, groups=0, nnz=0):
    """Check the rank count, and that what is built at once fits: ``dense`` matrices of
    ``size x size``, sparse matrices of ``nnz`` weights in all (Bluefog's topologies), or
    ``groups`` iterations of groups (decent_dp's)."""
    if size < minimum:
        raise SpecError(f"{name} needs n >= {minimum} ranks, got {size}")
    if dense:
        require_dense(name, size, dense)
    if nnz:
        require_sparse(name, size, nnz)
    if groups:
        require_memory(_GROUP_BYTES * size * groups,
                       f"{name} on {size} ranks ({groups} iterations of groups)")


def _int_param(name, key, value, minimum):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise SpecError(f"{name}: {key} must be an integer, got {value!r}")
    if value < minimum:
        raise SpecError(f"{name}: {key} must be >= {minimum}, got {value}")
    return int(value)


def _ceil_log2(n):
    return (n - 1).bit_length()


# --------------------------------------------------------------------------- decent_dp groups

@register_gossip_topology("complete")
def complete(size):
    """decent_dp: all ranks average in one group every iteration (weight 1/n)."""
    _need("complete", size, 1, dense=0, groups=1)
    return GroupTopology("complete", size, [[(range(size), 1.0 / size)]])


@register_gossip_topology("ring")
def ring(size):
    """decent_dp: one-peer ring, pairs with the right then the left neighbour (weight 1/2)."""
    _need("ring", size, dense=0, groups=3)
    n = size
    if n % 2 == 0:
        first = [((i, i + 1), 0.5) for i in range(0, n, 2)]
        second = [((i, (i - 1) % n), 0.5) for i in range(0, n, 2)]
        return GroupTopology("ring", n, [first, second])
    # An odd cycle has no perfect matching and needs three matchings to cover its edges.
    half = (n - 1) // 2
    a = [((2 * j, 2 * j + 1), 0.5) for j in range(half)] + [((n - 1,), 1.0)]
    b = [((2 * j + 1, 2 * j + 2), 0.5) for j in range(half)] + [((0,), 1.0)]
    c = ([((n - 1, 0), 0.5)] + [((2 * j + 1, 2 * j + 2), 0.5) for j in range(half - 1)]
         + [((n - 2,), 1.0)])
    return GroupTopology("ring", n, [a, b, c])


def _hypercube_round(count, bit):
    """Pairs ``(j, j ^ 2^bit)`` with both ends ``< count``, and the ranks left alone."""
    j = np.arange(count)
    partner = j ^ (1 << bit)
    pairs = [(int(a), int(b)) for a, b in zip(j, partner) if a < b < count]
    alone = [int(a) for a, b in zip(j, partner) if b >= count]
    return pairs, alone


@register_gossip_topology("one-peer-exp", aliases=("exp",))
def one_peer_exp(size):
    """decent_dp: pair i with i XOR 2^t in iteration t (weight 1/2), period ceil(log2 n)."""
    _need("one-peer-exp", size, dense=0, groups=_ceil_log2(size))
    iterations = []
    for t in range(_ceil_log2(size)):
        pairs, alone = _hypercube_round(size, t)
        iterations.append([(p, 0.5) for p in pairs] + [((r,), 1.0) for r in alone])
    return GroupTopology("one-peer-exp", size, iterations)


@register_gossip_topology("alternating-exp-ring")
def alternating_exp_ring(size, local_size, stagger=True):
    """decent_dp: intra-node averages alternate with averages of node pairs j, j XOR 2^t."""
    name = "alternating-exp-ring"
    _need(name, size, dense=0, groups=2 * _ceil_log2(size))
    local = _int_param(name, "local_size", local_size, 1)
    if size % local:
        raise SpecError(f"{name}: local_size must divide n, got n={size}, local_size={local}")
    if not isinstance(stagger, (bool, np.bool_)):
        raise SpecError(f"{name}: stagger must be true or false, got {stagger!r}")
    nodes = size // local
    params = {"local_size": local, "stagger": bool(stagger)}

    def node(j):
        return tuple(range(j * local, (j + 1) * local))

    if nodes == 1:
        return GroupTopology(name, size, [[(node(0), 1.0 / local)]], params)
    iterations = []
    count = 0
    for t in range(_ceil_log2(nodes)):
        first, second = [], []
        pairs, alone = _hypercube_round(nodes, t)
        for j in alone:
            first.append((node(j), 1.0 / local))
            second.append((node(j), 1.0 / local))
        for j, p in pairs:
            inner = [(node(j), 1.0 / local), (node(p), 1.0 / local)]
            outer = [(node(j) + node(p), 0.5 / local)]
            # decent_dp staggers alternate node pairs so that half of them cross nodes at a time.
            if count % 2 == 0 or not stagger:
                first += inner
                second += outer
            else:
                first += outer
                second += inner
            count += 1
        iterations += [first, second]
    return GroupTopology(name, size, iterations, params)


# --------------------------------------------------------------------------- Bluefog graphs

def circulant_topology(name, weights, params=None):
    """A static circulant topology: rank i takes ``weights[s]`` of rank ``(i - s) mod n``.

    This is Bluefog's ``np.roll`` construction (its row ``x`` is ``weights``) transposed into
    topocoll's convention, built sparse: ``n`` weights per non-zero offset, never ``n x n``.

    >>> circulant_topology("right", [0.5, 0.5, 0.0]).matrix().tolist()[1]
    [0.5, 0.5, 0.0]
    """
    x = np.asarray(weights, dtype=np.float64)
    n = x.size
    offsets = np.flatnonzero(x)
    require_sparse(name, n, n * offsets.size)
    rows = np.tile(np.arange(n), offsets.size)
    shift = np.repeat(offsets, n)
    w = sp.csr_array((x[shift], (rows, (rows - shift) % n)), shape=(n, n))
    return GraphTopology(name, w, params)


def _is_power(value, base):
    """True if ``value`` is ``base**k`` for some ``k >= 0`` (integer arithmetic: Bluefog's
    floating ``math.log`` test misses e.g. ``3**5``)."""
    while value % base == 0 and value > 1:
        value //= base
    return value == 1


@register_gossip_topology("exponential-graph")
def exponential_graph(size, base=2):
    """Bluefog ExponentialGraph: receive from i - base^k, uniform weights 1/(1 + #powers)."""
    name = "exponential-graph"
    _need(name, size)  # the weights are checked (sparse) by circulant_topology
    base = _int_param(name, "base", base, 2)
    x = np.array([1.0] + [1.0 if _is_power(s, base) else 0.0 for s in range(1, size)])
    return circulant_topology(name, x / x.sum(), {"base": base})


@register_gossip_topology("symmetric-exponential-graph")
def symmetric_exponential_graph(size, base=4):
    """Bluefog SymmetricExponentialGraph: offsets +-base^k, uniform weights."""
    name = "symmetric-exponential-graph"
    _need(name, size)  # the weights are checked (sparse) by circulant_topology
    base = _int_param(name, "base", base, 2)
    x = [1.0]
    for s in range(1, size):
        index = s if s <= size // 2 else size - s
        x.append(1.0 if _is_power(index, base) else 0.0)
    x = np.array(x)
    return circulant_topology(name, x / x.sum(), {"base": base})


@register_gossip_topology("ring-graph")
def ring_graph(size, connect_style=0):
    """Bluefog RingGraph: both neighbours with weights 1/3 (style 0), or one side 1/2 (1, 2)."""
    name = "ring-graph"
    _need(name, size)  # the weights are checked (sparse) by circulant_topology
    if connect_style not in (0, 1, 2) or isinstance(connect_style, bool):
        raise SpecError(f"{name}: connect_style must be 0 (both sides), 1 (left) or 2 (right), "
                        f"got {connect_style!r}")
    x = np.zeros(size)
    if size == 2:
        x[:] = 0.5
    elif connect_style == 0:
        x[0] = x[1] = x[-1] = 1.0 / 3.0
    else:
        # Bluefog's row x is what rank 0 sends to: style 1 sends left (rank i takes i+1's value).
        x[0] = 0.5
        x[-1 if connect_style == 1 else 1] = 0.5
    return circulant_topology(name, x, {"connect_style": int(connect_style)})


def metropolis_hastings(adjacency, *, sparse=False):
    """Metropolis-Hastings weights of an undirected graph (Bluefog's "Hastings rule").

    ``W[i, j] = 1 / max(d_i + 1, d_j + 1)`` for every edge ``{i, j}`` (``d`` = degree without
    self), ``W[i, i] = 1 - sum_j W[i, j]``. Symmetric and doubly stochastic for every graph.

    Parameters
    ----------
    adjacency : array_like or scipy sparse matrix, shape (n, n)
        Non-zero ``A[i, j]`` or ``A[j, i]`` means an edge; the diagonal is ignored.
    sparse : bool
        Return a ``scipy.sparse.csr_array`` computed from the edges only (no ``n x n`` array;
        a sparse ``adjacency`` stays sparse throughout) instead of a dense array.

    Examples
    --------
    >>> metropolis_hastings([[0, 1, 0], [1, 0, 1], [0, 1, 0]]).round(4).tolist()
    [[0.6667, 0.3333, 0.0], [0.3333, 0.3333, 0.3333], [0.0, 0.3333, 0.6667]]
    >>> metropolis_hastings([[0, 1, 0], [1, 0, 1], [0, 1, 0]], sparse=True).nnz
    7
    """
    if sparse:
        return _sparse_metropolis_hastings(adjacency)
    a = adjacency.toarray() if sp.issparse(adjacency) else np.asarray(adjacency)
    if a.ndim != 2 or a.shape[0] != a.shape[1]:
        raise InputTypeError(f"adjacency must be a square matrix, got shape {a.shape}")
    edge = (a != 0) | (a.T != 0)
    np.fill_diagonal(edge, False)
    deg = edge.sum(axis=1)
    w = np.where(edge, 1.0 / np.maximum.outer(deg + 1, deg + 1), 0.0)
    w[np.diag_indices_from(w)] = 1.0 - w.sum(axis=1)
    return w


def _sparse_metropolis_hastings(adjacency):
    a = sp.coo_array(adjacency)
    if a.ndim != 2 or a.shape[0] != a.shape[1]:
        raise InputTypeError(f"adjacency must be a square matrix, got shape {a.shape}")
    n = a.shape[0]
    keep = (a.data != 0) & (a.row != a.col)
    r = np.concatenate([a.row[keep], a.col[keep]])
    c = np.concatenate([a.col[keep], a.row[keep]])
    edge = sp.csr_array((np.ones(r.size), (r, c)), shape=(n, n))
    edge.data[:] = 1.0   # duplicates summed: back to one per edge
    deg = np.diff(edge.indptr)
    e = edge.tocoo()
    weight = 1.0 / np.maximum(deg[e.row] + 1, deg[e.col] + 1)
    off = sp.csr_array((weight, (e.row, e.col)), shape=(n, n))
    diag = 1.0 - np.asarray(off.sum(axis=1)).ravel()
    return (off + sp.diags_array(diag, format="csr")).tocsr()


def _mesh_shape(name, size, shape):
    if shape is None:
        rows = math.isqrt(size)
        while size % rows:
            rows -= 1
        return rows, size // rows
    if isinstance(shape, str):
        parts = shape.lower().replace(",", "x").split("x")
        try:
            shape = tuple(int(p) for p in parts)
        except ValueError:
            raise SpecError(f"{name}: shape is ROWSxCOLS, got {shape!r}") from None
    try:
        rows, cols = (int(v) for v in shape)
    except (TypeError, ValueError):
        raise SpecError(f"{name}: shape is (rows, cols), got {shape!r}") from None
    if rows < 1 or cols < 1 or rows * cols != size:
        raise SpecError(f"{name}: shape {rows}x{cols} must multiply to n={size}")
    return rows, cols


@register_gossip_topology("mesh-graph")
def mesh_graph(size, shape=None):
    """Bluefog MeshGrid2DGraph: 2-D grid with Metropolis-Hastings weights."""
    name = "mesh-graph"
    _need(name, size, nnz=5 * size)
    rows, cols = _mesh_shape(name, size, shape)
    i = np.arange(size)
    right = i[(i + 1) % cols != 0]
    right = right[right + 1 < size]
    down = i[i + cols < size]
    src = np.concatenate([right, down])
    dst = np.concatenate([right + 1, down + cols])
    a = sp.csr_array((np.ones(src.size), (src, dst)), shape=(size, size))
    return GraphTopology(name, metropolis_hastings(a, sparse=True), {"shape": f"{rows}x{cols}"})


@register_gossip_topology("star-graph")
def star_graph(size, center=0):
    """Bluefog StarGraph: every rank exchanges with the center; weights 1/n, leaves keep 1-1/n."""
    name = "star-graph"
    _need(name, size, nnz=3 * size)
    center = _int_param(name, "center", center, 0)
    if center >= size:
        raise SpecError(f"{name}: center must be a rank 0..{size - 1}, got {center}")
    leaves = np.delete(np.arange(size), center)
    hub = np.full(size, center)
    rows = np.concatenate([hub, leaves, leaves])
    cols = np.concatenate([np.arange(size), hub[:-1], leaves])
    vals = np.concatenate([np.full(2 * size - 1, 1.0 / size), np.full(size - 1, 1.0 - 1.0 / size)])
    w = sp.csr_array((vals, (rows, cols)), shape=(size, size))
    return GraphTopology(name, w, {"center": center})


@register_gossip_topology("fully-connected-graph")
def fully_connected_graph(size):
    """Bluefog FullyConnectedGraph: every weight 1/n."""
    _need("fully-connected-graph", size, 1, dense=1)   # n^2 weights: dense is smaller
    return GraphTopology("fully-connected-graph", np.full((size, size), 1.0 / size))


@register_gossip_topology("metropolis-hastings")
def metropolis_hastings_builder(size, network):
    """Metropolis-Hastings weights on a topocoll topology (network=SPEC) of n nodes."""
    return metropolis_hastings_topology(network, size=size)


def metropolis_hastings_topology(network, *, size=None):
    """A static gossip topology with Metropolis-Hastings weights on the undirected version of
    ``network`` (a :mod:`topocoll.topology` spec, file, Topology or networkx graph).

    >>> t = metropolis_hastings_topology("torus:4x4")
    >>> t.size, round(t.in_neighbors(0, 0)[0], 4)
    (16, 0.2)
    """
    from ..topology import topology

    net = topology(network)
    net.require_no_switches("a metropolis-hastings gossip topology")
    if size is not None and net.num_nodes != size:
        raise SpecError(f"metropolis-hastings: network {net.name} has {net.num_nodes} nodes, "
                        f"not n={size}")
    return GraphTopology("metropolis-hastings", metropolis_hastings(net.adjacency(), sparse=True),
                         {"network": net.name})


# --------------------------------------------------------------------------- dynamic one-peer

def _from_sends(name, size, sends, params=None):
    """Weights ``1/(1 + #received)`` (Bluefog's ``avg_weight``) from per-iteration send targets;
    a rank whose target is itself sends nothing."""
    sends = list(sends)
    require_sparse(name, size, 2 * size * len(sends))
    mats = []
    ranks = np.arange(size)
    for target in sends:
        target = np.asarray(target)
        moving = target != ranks
        received = np.bincount(target[moving], minlength=size)
        share = 1.0 / (1.0 + received)
        rows = np.concatenate([ranks, target[moving]])
        cols = np.concatenate([ranks, ranks[moving]])
        vals = np.concatenate([share, share[target[moving]]])
        mats.append(sp.csr_array((vals, (rows, cols)), shape=(size, size)))
    return GraphTopology(name, mats, params)


def one_peer_dynamic(static, name=None):
    """Bluefog's dynamic one-peer schedule (``GetDynamicOnePeerSendRecvRanks``) over a static
    graph topology.

    Every rank lists the ranks it sends to in the static graph, clockwise from itself
    (``(dst - rank) mod n`` ascending), and in iteration k sends to entry ``k mod out_degree``
    only. A rank receiving r values gives itself and each of them ``1/(1 + r)``. The period is
    the least common multiple of the out-degrees.

    >>> from topocoll.gossip import gossip_topology
    >>> t = one_peer_dynamic(gossip_topology("ring-graph", 4))
    >>> t.period, t.out_neighbors(0, 0), t.out_neighbors(1, 0)
    (2, [1], [3])
    """
    if not static.is_static:
        raise SpecError(f"a one-peer schedule needs a static base graph; {static.name} has "
                        f"period {static.period}")
    n = static.size
    w = static.sparse_matrix(0).tocsc()   # column r: the ranks that take r's value
    succ = []
    for r in range(n):
        col = w.indices[w.indptr[r]:w.indptr[r + 1]]
        dst = [int(d) for d in col if d != r]
        succ.append(sorted(dst, key=lambda d, r=r: (d - r) % n))
    degrees = [len(s) for s in succ if s]
    period = math.lcm(*degrees) if degrees else 1
    if period > MAX_DYNAMIC_PERIOD:
        raise SpecError(f"the one-peer schedule of {static.name} repeats only after {period} "
                        f"iterations (lcm of its out-degrees), more than {MAX_DYNAMIC_PERIOD}")
    sends = [[s[k % len(s)] if s else r for r, s in enumerate(succ)] for k in range(period)]
    label = name if name is not None else f"one-peer({static.name})"
    return _from_sends(label, n, sends, {"base": static.name, **static.params})


@register_gossip_topology("one-peer-exponential-graph")
def one_peer_exponential_graph(size):
    """Bluefog dynamic Exp-2: send to i + 2^(k mod ceil(log2 n)), weights 1/2."""
    return one_peer_dynamic(exponential_graph(size), name="one-peer-exponential-graph")


@register_gossip_topology("one-peer-graph")
def one_peer_graph(size, base="exponential-graph"):
    """Bluefog's one-peer rule over any static registered graph (base=NAME)."""
    if not isinstance(base, str):
        raise SpecError(f"one-peer-graph: base is a registered topology name, got {base!r}")
    static = gossip_topology(base, size)
    topo = one_peer_dynamic(static, name="one-peer-graph")
    topo.params = {"base": static.name, **static.params}
    return topo


def _machines(name, size, local_size):
    _need(name, size)
    local = _int_param(name, "local_size", local_size, 1)
    if size % local:
        raise SpecError(f"{name}: local_size must divide n, got n={size}, local_size={local}")
    return local, size // local


@register_gossip_topology("inner-outer-ring")
def inner_outer_ring(size, local_size):
    """Bluefog inner-outer ring: one local rank per machine goes to the next machine in turn."""
    name = "inner-outer-ring"
    local, machines = _machines(name, size, local_size)
    sends = []
    for k in range(local):
        out = k % local
        target = []
        for rank in range(size):
            m, l = divmod(rank, local)
            if l == out:
                target.append(((m + 1) % machines) * local + l)
            else:
                t = (l + 1) % local
                if t == out:
                    t = (t + 1) % local
                target.append(m * local + t)
        sends.append(target)
    return _from_sends(name, size, sends, {"local_size": local})


@register_gossip_topology("inner-outer-exponential")
def inner_outer_exponential(size, local_size):
    """Bluefog inner-outer Exp-2: out-going rank jumps 2^j machines, the others 2^j locally."""
    name = "inner-outer-exponential"
    local, machines = _machines(name, size, local_size)
    # Number of powers of two <= machines - 1 (outer jumps) and <= local - 2 (inner jumps,
    # which skip the out-going rank), as Bluefog's exp_2_out_size + 1 and exp_2_in_size + 1.
    outer = (machines - 1).bit_length() if machines > 1 else 1
    inner = (local - 2).bit_length() if local > 2 else 1
    period = math.lcm(local, outer, inner)
    sends = []
    for k in range(period):
        out = k % local
        target = []
        for rank in range(size):
            m, l = divmod(rank, local)
            if l == out:
                target.append(((m + 2 ** (k % outer)) % machines) * local + l)
            else:
                d = 2 ** (k % inner)
                if d >= (out - l) % local:
                    d += 1
                target.append(m * local + (l + d) % local)
        sends.append(target)
    return _from_sends(name, size, sends, {"local_size": local})


#: The names registered by this module, in listing order.
BUILTIN_NAMES = ("complete", "ring", "one-peer-exp", "alternating-exp-ring", "exponential-graph",
                 "symmetric-exponential-graph", "ring-graph", "mesh-graph", "star-graph",
                 "fully-connected-graph", "metropolis-hastings", "one-peer-exponential-graph",
                 "one-peer-graph", "inner-outer-ring", "inner-outer-exponential")
