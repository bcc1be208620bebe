"""All-to-all families: Jellyfish, Xpander, Slim Fly (MMS), PolarFly (ER_q), modified de Bruijn.

Structure is checked against independent oracles: plain-Python reference constructions over
Z_q, networkx distances, closed-form vertex counts and degrees, the Moore bound, and the
projective-plane identity ``(A + D)^2 = J + qI`` of polarity graphs."""

import math

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topocoll.errors import InputTypeError, SpecError
from topocoll.topology import (FAMILIES, de_bruijn_graph, diameter, is_strongly_connected,
                               random_regular_graph, topology)
from topocoll.topology.families.alltoall import (jellyfish_graph, modified_de_bruijn_graph,
                                                 polarfly_graph, slimfly_generators,
                                                 slimfly_graph, xpander_graph)

NEW = ["jellyfish", "xpander", "slimfly", "polarfly", "moddebruijn"]


def links(t):
    return sorted(zip(t.src.tolist(), t.dst.tolist()))


def simple(t):
    return len(set(links(t))) == t.num_links and not np.any(t.src == t.dst)


def undirected(t):
    pairs = set(links(t))
    assert all((v, u) in pairs for u, v in pairs), "not bidirectional"
    g = nx.Graph()
    g.add_nodes_from(range(t.num_nodes))
    g.add_edges_from(pairs)
    return g


def degrees(t):
    return sorted(set(np.bincount(t.src, minlength=t.num_nodes).tolist()))


def one_line(call, match, error=SpecError):
    with pytest.raises(error, match=match) as info:
        call()
    assert "\n" not in str(info.value)


def primitive_root(q):
    """Least generator of Z_q^* for a prime q, by brute force."""
    return next(g for g in range(2, q) if len({pow(g, e, q) for e in range(q - 1)}) == q - 1) \
        if q > 2 else 1


# ---------------------------------------------------------------------- Slim Fly
def reference_slimfly(q):
    """MMS graph for a prime q, straight from the definition (Besta-Hoefler, Hafner)."""
    delta = {1: 1, 0: 0, 3: -1}[q % 4]
    w = (q - delta) // 4
    xi = primitive_root(q)
    if delta == 1:
        exps = range(0, q - 2, 2)
    else:
        exps = list(range(0, 2 * w - 1, 2)) + list(range(2 * w - 1, 4 * w - 2, 2))
    x_set = {pow(xi, e, q) for e in exps}
    x_prime = {xi * s % q for s in x_set}
    edges = set()
    for a in range(q):
        for y in range(q):
            for yy in range(q):
                if (y - yy) % q in x_set:
                    edges.add((a * q + y, a * q + yy))
                if (y - yy) % q in x_prime:
                    edges.add((q * q + a * q + y, q * q + a * q + yy))
    for x in range(q):
        for y in range(q):
            for m in range(q):
                c = (y - m * x) % q
                edges.add((x * q + y, q * q + m * q + c))
                edges.add((q * q + m * q + c, x * q + y))
    return sorted(edges)


@pytest.mark.parametrize("q", [3, 5, 7, 11])
def test_slimfly_matches_the_definition_for_prime_q(q):
    assert links(slimfly_graph(q)) == reference_slimfly(q)


@pytest.mark.parametrize("q", [3, 4, 5, 7, 8, 9, 11, 13, 16, 17])
def test_slimfly_size_degree_diameter(q):
    t = slimfly_graph(q)
    delta = {1: 1, 0: 0, 3: -1}[q % 4]
    degree = (3 * q - delta) // 2
    assert t.num_nodes == 2 * q * q
    assert degrees(t) == [degree] and t.meta["degree"] == degree
    assert simple(t) and t.is_bidirectional()
    assert diameter(t) == 2
    # generator sets: symmetric (undirected), sizes (q - delta)/2
    x_set, x_prime, d = slimfly_generators(q)
    assert d == delta and len(x_set) == len(x_prime) == (q - delta) // 2
    assert 0 not in x_set and 0 not in x_prime
    # diameter 2 => N <= d^2 + 1 (Moore); MMS graphs sit close to it
    assert t.num_nodes <= degree**2 + 1
    if q >= 4:
        assert t.num_nodes / (degree**2 + 1) >= 0.8


def test_slimfly_5_is_the_hoffman_singleton_graph():
    # The unique Moore graph of degree 7: strongly regular (50, 7, 0, 1).
    t = slimfly_graph(5)
    a = nx.to_numpy_array(undirected(t), nodelist=range(50), dtype=int)
    ident, ones = np.eye(50, dtype=int), np.ones((50, 50), dtype=int)
    assert np.array_equal(a @ a, 7 * ident + (ones - ident - a))
    assert nx.diameter(undirected(t)) == 2 and nx.girth(undirected(t)) == 5


@pytest.mark.parametrize("q", [2, 6, 10, 12, 15, 1, 0, -3])
def test_slimfly_rejects_bad_q(q):
    one_line(lambda: slimfly_graph(q), r"slimfly: q must be a prime power with q = 4w \+ delta")


# ---------------------------------------------------------------------- PolarFly
def reference_polarfly(q):
    """ER_q for a prime q: normalized vectors over Z_q, adjacent iff orthogonal."""
    pts = sorted(v for v in ((a, b, c) for a in range(q) for b in range(q) for c in range(q))
                 if any(v) and v[next(i for i in range(3) if v[i])] == 1)
    edges = [(i, j) for i, x in enumerate(pts) for j, y in enumerate(pts)
             if i != j and sum(s * t for s, t in zip(x, y)) % q == 0]
    absolute = [i for i, x in enumerate(pts) if sum(s * s for s in x) % q == 0]
    return sorted(edges), absolute


@pytest.mark.parametrize("q", [2, 3, 5, 7])
def test_polarfly_matches_the_definition_for_prime_q(q):
    t = polarfly_graph(q)
    edges, absolute = reference_polarfly(q)
    assert links(t) == edges and t.meta["absolute_points"] == absolute


@pytest.mark.parametrize("q", [2, 3, 4, 5, 7, 8, 9, 11, 13, 16])
def test_polarfly_size_degrees_diameter_and_moore_bound(q):
    t = polarfly_graph(q)
    n, d = q * q + q + 1, q + 1
    assert t.num_nodes == n and simple(t) and t.is_bidirectional()
    deg = np.bincount(t.src, minlength=n)
    absolute = t.meta["absolute_points"]
    assert len(absolute) == q + 1 == t.meta["dropped_self_loops"]
    assert set(deg[absolute].tolist()) == {q}
    assert set(np.delete(deg, absolute).tolist()) == {q + 1}
    assert diameter(t) == 2
    # Moore bound for degree q+1, diameter 2 is d^2 + 1; ER_q reaches more than q/(q+1) of it
    assert q / (q + 1) < n / (d * d + 1) <= 1


@pytest.mark.parametrize("q", [3, 4, 9])
def test_polarfly_is_a_polarity_of_the_projective_plane(q):
    # With the dropped loops put back, A is a symmetric point-line incidence matrix of
    # PG(2, q): any two points lie on exactly one line, so A^2 = J + qI.
    t = polarfly_graph(q)
    n = t.num_nodes
    a = np.zeros((n, n), dtype=int)
    a[t.src, t.dst] = 1
    a[t.meta["absolute_points"], t.meta["absolute_points"]] = 1
    assert np.array_equal(a @ a, np.ones((n, n), dtype=int) + q * np.eye(n, dtype=int))


@pytest.mark.parametrize("q", [6, 10, 12, 1, 0])
def test_polarfly_rejects_non_prime_powers(q):
    one_line(lambda: polarfly_graph(q), r"polarfly: q must be a prime power")


# ---------------------------------------------------------------------- Jellyfish
def test_jellyfish_is_randomregular_under_another_name():
    t = jellyfish_graph(64, 4, seed=5)
    ref = random_regular_graph(64, 4, seed=5)
    assert links(t) == links(ref) and t.name == "jellyfish:64,4,5"
    assert t.meta["family"] == "jellyfish" and t.meta["seed"] == 5
    assert links(topology("jellyfish:64,4,5")) == links(topology("jellyfish:64,4:5")) == links(t)
    assert topology("jellyfish:64,4").name == "jellyfish:64,4"


def test_jellyfish_seeds():
    a, b = topology("jellyfish:32,3,1"), topology("jellyfish:32,3,2")
    assert links(a) == links(topology("jellyfish:32,3,1")) and links(a) != links(b)
    one_line(lambda: topology("jellyfish:5,3"), r"n \* d even")
    one_line(lambda: topology("jellyfish:16,3,1:2"), r"seed is given twice")


# ---------------------------------------------------------------------- Xpander
@pytest.mark.parametrize(("n", "d", "seed"), [(20, 4, 1), (64, 7, 0), (64, 3, 2), (36, 5, 9),
                                              (6, 5, 0)])
def test_xpander_is_a_lift_of_the_complete_graph(n, d, seed):
    t = xpander_graph(n, d, seed)
    k = n // (d + 1)
    assert t.num_nodes == n and t.meta["lift"] == k
    assert degrees(t) == [d] and simple(t) and t.is_bidirectional() and is_strongly_connected(t)
    # every node has exactly one neighbour in each other fiber and none in its own
    fiber = np.arange(n) // k
    counts = np.zeros((n, d + 1), dtype=int)
    np.add.at(counts, (t.src, fiber[t.dst]), 1)
    expected = np.ones((n, d + 1), dtype=int)
    expected[np.arange(n), fiber] = 0
    assert np.array_equal(counts, expected)


def test_xpander_seeds_and_one_fold_lift():
    assert links(xpander_graph(40, 4, 3)) == links(topology("xpander:40,4,3"))
    assert links(xpander_graph(40, 4, 3)) == links(topology("xpander:40,4:3"))
    assert links(xpander_graph(40, 4, 3)) != links(xpander_graph(40, 4, 4))
    assert links(xpander_graph(8, 7)) == links(topology("complete:8"))


def test_xpander_errors():
    one_line(lambda: xpander_graph(21, 4), r"xpander: n must be a multiple of d\+1")
    one_line(lambda: xpander_graph(10, 1), r"degree d >= 2")
    one_line(lambda: xpander_graph(10, 4, -1), r"seed must be >= 0")
    with pytest.raises(InputTypeError):
        xpander_graph(10.0, 4)


# ---------------------------------------------------------------------- modified de Bruijn
def reference_modified_de_bruijn(d, k):
    """n = d^k: de Bruijn arcs without loops, plus the cycle 0..0 -> 1..1 -> ... -> 0..0."""
    n = d**k
    arcs = {(i, (d * i + j) % n) for i in range(n) for j in range(d)}
    const = [c * (n - 1) // (d - 1) for c in range(d)]
    arcs -= {(v, v) for v in const}
    arcs |= {(const[c], const[(c + 1) % d]) for c in range(d)}
    return sorted(arcs)


@pytest.mark.parametrize(("d", "k"), [(2, 3), (2, 5), (3, 3), (4, 2), (5, 2)])
def test_moddebruijn_power_case_matches_the_reference(d, k):
    t = modified_de_bruijn_graph(d**k, d)
    assert links(t) == reference_modified_de_bruijn(d, k)
    assert t.meta["repair"] == "cycle" and t.meta["rewired_loops"] == d
    assert diameter(t) == k == diameter(de_bruijn_graph(d, k))


@settings(max_examples=60, deadline=None)
@given(st.integers(3, 90), st.data())
def test_moddebruijn_is_regular_simple_and_no_worse_than_de_bruijn(n, data):
    d = data.draw(st.integers(2, n - 1))
    t = modified_de_bruijn_graph(n, d)
    out_deg = np.bincount(t.src, minlength=n)
    in_deg = np.bincount(t.dst, minlength=n)
    assert set(out_deg.tolist()) == set(in_deg.tolist()) == {d}
    assert simple(t) and is_strongly_connected(t)
    gdb = {(i, (d * i + j) % n) for i in range(n) for j in range(d)}
    loops = {(v, v) for v, _ in gdb if (v, v) in gdb}
    assert t.meta["rewired_loops"] == len(loops)
    if t.meta["repair"] in ("none", "cycle", "cover"):
        # only the loops were replaced: every other de Bruijn arc is kept
        assert gdb - loops <= set(links(t))
        g = nx.DiGraph(sorted(gdb - loops))
        g.add_nodes_from(range(n))
        if nx.is_strongly_connected(g):
            assert diameter(t) <= nx.diameter(g)
    if math.isclose(math.log(n, d), round(math.log(n, d))) and d ** round(math.log(n, d)) == n:
        assert t.meta["repair"] == "cycle"


def test_moddebruijn_errors():
    one_line(lambda: modified_de_bruijn_graph(8, 1), r"degree 2 <= d <= n-1")
    one_line(lambda: modified_de_bruijn_graph(8, 8), r"degree 2 <= d <= n-1")
    one_line(lambda: modified_de_bruijn_graph(2, 1), r"n >= 3")


# ---------------------------------------------------------------------- registry
@pytest.mark.parametrize("name", NEW)
def test_registered_with_a_canonical_example(name):
    family = FAMILIES[name]
    assert family.params and family.summary and "\n" not in family.summary
    t = topology(family.example)
    assert t.name == family.example and t.meta["family"] == name
    assert links(topology(t.name)) == links(t)
    with pytest.raises(SpecError) as info:
        topology(f"{name}:")
    assert f"use {name}:{family.params}" in str(info.value)


@pytest.mark.parametrize(("spec", "nodes"), [("slimfly:7", 98), ("polarfly:7", 57),
                                             ("xpander:64,7", 64), ("jellyfish:64,4", 64),
                                             ("moddebruijn:16,2", 16)])
def test_specs_build_the_documented_sizes(spec, nodes):
    assert topology(spec, bandwidth="25Gbps").num_nodes == nodes
