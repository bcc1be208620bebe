"""The optimizer's moves on a base's arcs, and those restricted to bidirectional bases.

:func:`head_swap` exchanges the heads of two arcs (any digraph); the rest keep a base
bidirectional (every link with its reverse).

:func:`~topocoll.finder.optimize.optimize` with ``bidirectional=True`` searches bases whose
graph equals its reverse, so that the candidate its skeleton makes of them stays bidirectional
(the skeletons it keeps have only degree expansions and Cartesian powers, which keep a
bidirectional base bidirectional; Zhao et al., NSDI 2025, appendix F):

* **Cayley graphs**: a Cayley digraph ``g -> g * s`` of the group Z_m x|_r Z_k is
  bidirectional exactly when its generator set S is closed under inverses (the reverse of
  ``g -> g * s`` is ``g * s -> (g * s) * s^-1``), so S is drawn as random elements together
  with their inverses (an odd degree takes one involution).
* **Symmetric rewiring**: two undirected links ``{a, b}, {c, e}`` (four arcs) become
  ``{a, e}, {c, b}``: every degree kept, no self-loop or parallel link, still bidirectional.

Every base offered is checked to equal its reverse before it is scored as a find.

>>> inverse(4, 2, 3, (1, 1)), inverse(5, 1, 1, (2, 0))
((1, 1), (3, 0))
>>> rng = np.random.default_rng(0)
>>> gens = inverse_closed(4, 2, 3, 3, rng)
>>> sorted(gens) == sorted(inverse(4, 2, 3, g) for g in gens), len(gens)
(True, 3)
>>> from topocoll.topology.families.cayley import metacyclic_graph
>>> metacyclic_graph(4, 2, 3, gens).is_bidirectional()
True
"""

import numpy as np

__all__ = ["inverse", "inverse_closed", "any_generators", "is_symmetric", "head_swap",
           "symmetric_swap"]


def inverse(m, k, r, element):
    """The inverse of ``(y, j)`` in Z_m x|_r Z_k, where ``(x, i) * (y, j) = (x + r^i y, i + j)``:
    ``(-r^(k-j) y mod m, -j mod k)``."""
    y, j = element
    return (-pow(r, (k - j) % k, m) * y) % m, (-j) % k


def inverse_closed(m, k, r, d, rng):
    """``d`` distinct non-identity elements of Z_m x|_r Z_k closed under inverses, drawn at
    random (a sorted tuple of ``(y, j)``), or None when the draw cannot reach ``d`` (an odd
    ``d`` needs an involution)."""
    chosen = set()
    for g in rng.permutation(m * k - 1) + 1:
        pair = {(int(g) // k, int(g) % k), inverse(m, k, r, (int(g) // k, int(g) % k))}
        if not pair & chosen and len(chosen) + len(pair) <= d:
            chosen |= pair
        if len(chosen) == d:
            return tuple(sorted(chosen))
    return None


def any_generators(m, k, r, d, rng):
    """``d`` distinct non-identity elements of Z_m x|_r Z_k drawn at random (a sorted tuple of
    ``(y, j)``): the generators of a Cayley digraph, bidirectional or not."""
    ids = rng.choice(m * k - 1, size=d, replace=False) + 1
    return tuple(sorted((int(g) // k, int(g) % k) for g in ids))


def is_symmetric(heads):
    """Whether the digraph ``u -> heads[u, s]`` equals its reverse (as sets of arcs)."""
    n, d = heads.shape
    arcs = set(zip(np.repeat(np.arange(n), d).tolist(), heads.ravel().tolist()))
    return all((v, u) in arcs for u, v in arcs)


def symmetric_swap(heads, a, i, c, j):
    """Rewire ``{a, b}, {c, e}`` (``b = heads[a, i]``, ``e = heads[c, j]``) into ``{a, e},
    {c, b}`` in place; the four ``(node, slot, old head)`` changed, or None if illegal."""
    b, e = int(heads[a, i]), int(heads[c, j])
    if len({a, b, c, e}) < 4 or e in heads[a] or b in heads[c]:
        return None
    slot_b, slot_e = int(np.flatnonzero(heads[b] == a)[0]), int(np.flatnonzero(heads[e] == c)[0])
    changes = [(a, i, b), (c, j, e), (b, slot_b, a), (e, slot_e, c)]
    heads[a, i], heads[c, j], heads[b, slot_b], heads[e, slot_e] = e, b, c, a
    return changes


def head_swap(heads, u1, i1, u2, i2):
    """Swap the heads of arcs ``(u1, i1)`` and ``(u2, i2)`` in place where the digraph stays
    simple (no self-loop, no parallel arc); the ``(node, slot, old head)`` changed, or None."""
    a, b = int(heads[u1, i1]), int(heads[u2, i2])
    if u1 == u2 or a == b or a == u2 or b == u1 or b in heads[u1] or a in heads[u2]:
        return None
    heads[u1, i1], heads[u2, i2] = b, a
    return [(u1, i1, a), (u2, i2, b)]
