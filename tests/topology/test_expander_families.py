"""LPS / SpectralFly, Borel-Cayley, zig-zag products, BundleFly and DragonFly.

Structure is checked against plain-Python reference constructions straight from each
definition, closed-form sizes and degrees, spectra (the Ramanujan bound, the zig-zag theorem)
and distance distributions (every node of a Cayley graph sees the same one)."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topocoll.errors import SpecError
from topocoll.topology import diameter, distance_matrix, topology
from topocoll.topology.families import (borel_cayley_graph, bundlefly_graph, dragonfly_graph,
                                        lps_graph, spectralfly_graph, zigzag_product)


def links(t):
    return sorted(zip(t.src.tolist(), t.dst.tolist()))


def simple_and_undirected(t):
    pairs = links(t)
    return (len(set(pairs)) == len(pairs) and all(u != v for u, v in pairs)
            and set(pairs) == {(v, u) for u, v in pairs})


def degrees(t):
    return sorted(set(np.bincount(t.src, minlength=t.num_nodes).tolist()))


def adjacency(t):
    a = np.zeros((t.num_nodes, t.num_nodes))
    np.add.at(a, (t.src, t.dst), 1)
    return a


def same_distances_everywhere(t):
    d = np.sort(distance_matrix(t), axis=1)
    return bool((d == d[0]).all())


# ---------------------------------------------------------------------- LPS / SpectralFly
def squares_mod(q):
    return {x * x % q for x in range(1, q)}


def reference_lps(p, q):
    """X^{p,q} by brute force: PGL(2,q) matrices normalized to first non-zero entry 1, the
    generators from the four-square solutions, the component of the identity by search."""
    sols = [s for s in itertools.product(range(-p, p + 1), repeat=4) if sum(c * c for c in s) == p]
    if p % 4 == 1:
        sols = [s for s in sols if s[0] > 0 and s[0] % 2 == 1]
    else:
        sols = [s for s in sols if s[0] % 2 == 0 and next(c for c in s if c) > 0]
    x, y = next((x, y) for x in range(q) for y in range(q) if (x * x + y * y + 1) % q == 0)
    gens = [(a0 + a1 * x + a3 * y, -a1 * y + a2 + a3 * x, -a1 * y - a2 + a3 * x,
             a0 - a1 * x - a3 * y) for a0, a1, a2, a3 in sols]

    def norm(m):
        m = [c % q for c in m]
        lead = next(c for c in m if c)
        inv = pow(lead, q - 2, q)
        return tuple(c * inv % q for c in m)

    def mul(g, s):
        a, b, c, d = g
        e, f, h, k = s
        return norm((a * e + b * h, a * f + b * k, c * e + d * h, c * f + d * k))

    start = (1, 0, 0, 1)
    seen, frontier = {start}, [start]
    while frontier:
        frontier = [h for g in frontier for h in (mul(g, s) for s in gens) if h not in seen
                    and not seen.add(h)]
    order = sorted(seen)
    index = {g: i for i, g in enumerate(order)}
    return sorted((index[g], index[mul(g, s)]) for g in order for s in gens)


@pytest.mark.parametrize("p,q", [(3, 5), (3, 7), (5, 7), (3, 11), (5, 11), (13, 5)])
def test_lps_size_degree_ramanujan(p, q):
    t = lps_graph(p, q)
    psl = p % q in squares_mod(q)
    assert t.num_nodes == q * (q * q - 1) // (2 if psl else 1)
    assert t.meta["group"] == f"{'PSL' if psl else 'PGL'}(2,{q})"
    assert degrees(t) == [p + 1] and simple_and_undirected(t)
    ev = np.linalg.eigvalsh(adjacency(t))
    trivial = np.isclose(np.abs(ev), p + 1)
    assert trivial.sum() == (1 if psl else 2)            # connected; bipartite iff PGL
    assert np.abs(ev[~trivial]).max() <= 2 * math.sqrt(p) + 1e-9   # Ramanujan
    assert same_distances_everywhere(t)                  # a Cayley graph
    # the diameter bound of LPS: 2 log_p n + 2 log_p 2 + 1
    assert diameter(t) <= 2 * math.log(t.num_nodes, p) + 2 * math.log(2, p) + 1


@pytest.mark.parametrize("p,q", [(3, 5), (5, 7), (3, 13)])
def test_lps_matches_the_definition(p, q):
    assert links(lps_graph(p, q)) == reference_lps(p, q)


def test_spectralfly_is_lps_under_its_own_name():
    s, t = topology("spectralfly:3,7"), topology("lps:3,7")
    assert s.name == "spectralfly:3,7" and s.meta["family"] == "spectralfly"
    assert links(s) == links(t)
    assert spectralfly_graph(3, 7).num_nodes == 336


@pytest.mark.parametrize("spec,rule", [("lps:4,5", "distinct odd primes"),
                                       ("lps:3,3", "distinct odd primes"),
                                       ("lps:2,5", "distinct odd primes"),
                                       ("lps:3", "expected 2 numbers")])
def test_lps_errors_name_the_rule(spec, rule):
    with pytest.raises(SpecError, match=rule):
        topology(spec)


# ---------------------------------------------------------------------- Borel-Cayley
def reference_borel(p, k, gens):
    root = next(r for r in range(1, p) if len({pow(r, e, p) for e in range(p - 1)}) == p - 1)
    alpha = pow(root, (p - 1) // k, p)
    powers = [pow(alpha, t, p) for t in range(k)]
    nodes = [(x, y) for x in powers for y in range(p)]
    index = {g: i for i, g in enumerate(nodes)}
    four = list(gens) + [(pow(a, p - 2, p), -pow(a, p - 2, p) * b % p) for a, b in gens]
    return sorted((index[(x, y)], index[(x * a % p, (x * b + y) % p)])
                  for x, y in nodes for a, b in four)


@pytest.mark.parametrize("p,k", [(7, 3), (13, 4), (13, 6), (31, 5), (61, 10)])
def test_borel_cayley_default(p, k):
    t = borel_cayley_graph(p, k)
    alpha = t.meta["alpha"]
    assert pow(alpha, k, p) == 1 and all(pow(alpha, e, p) != 1 for e in range(1, k))
    assert t.num_nodes == p * k and degrees(t) == [4] and simple_and_undirected(t)
    assert links(t) == reference_borel(p, k, [(alpha, 1), (alpha, 0)])
    assert same_distances_everywhere(t)


def test_borel_cayley_explicit_generators():
    t = topology("borelcayley:13,4:8,1,5,3")
    assert t.name == "borelcayley:13,4:8,1,5,3" and t.num_nodes == 52
    assert links(t) == reference_borel(13, 4, [(8, 1), (5, 3)])
    assert diameter(t) == diameter(borel_cayley_graph(13, 4, ((8, 1), (5, 3))))


@pytest.mark.parametrize("spec,rule", [
    ("borelcayley:7,4", "k dividing p - 1"), ("borelcayley:9,2", "prime p"),
    ("borelcayley:7,3:3,1,2,0", "powers of alpha"),
    ("borelcayley:11,5:3,0,5,0", "generate all"),
    ("borelcayley:7,2", "distinct and not the identity")])
def test_borel_cayley_errors_name_the_rule(spec, rule):
    with pytest.raises(SpecError, match=rule):
        topology(spec)


# ---------------------------------------------------------------------- zig-zag product
def reference_zigzag(g, h):
    """RVW's rotation-map definition, in plain Python (labels: links in increasing head)."""
    def rot(t):
        nbr = {v: sorted(t.dst[t.src == v].tolist()) for v in range(t.num_nodes)}
        return nbr, lambda v, i: (nbr[v][i], nbr[nbr[v][i]].index(v))
    gn, grot = rot(g)
    hn, _ = rot(h)
    big_d, d = len(gn[0]), len(hn[0])
    out = []
    for v in range(g.num_nodes):
        for k in range(big_d):
            for i in range(d):
                w, lp = grot(v, hn[k][i])
                out += [(v * big_d + k, w * big_d + hn[lp][j]) for j in range(d)]
    return sorted(out)


@pytest.mark.parametrize("spec_g,spec_h", [("complete:5", "ring:4"),
                                           ("hypercube:4", "complete:4"),
                                           ("paley:13", "ring:6"),
                                           ("lps:3,5", "complete:4")])
def test_zigzag_structure_and_expansion(spec_g, spec_h):
    g, h = topology(spec_g), topology(spec_h)
    t = topology(f"zigzag({spec_g},{spec_h})")
    d = np.bincount(h.src)[0]
    assert t.name == f"zigzag({spec_g},{spec_h})"
    assert t.num_nodes == g.num_nodes * h.num_nodes and degrees(t) == [d * d]
    assert simple_and_undirected(t) and links(t) == reference_zigzag(g, h)
    if not np.isclose(np.linalg.eigvalsh(adjacency(h))[0], -d):  # H not bipartite
        # RVW Theorem 4.3: lambda(G z H) <= lambda_G + lambda_H + lambda_H^2 (normalized)
        def lam(x, deg):
            ev = np.sort(np.abs(np.linalg.eigvalsh(adjacency(x))))
            return ev[-2] / deg
        lg, lh = lam(g, h.num_nodes), lam(h, d)
        assert lam(t, d * d) <= lg + lh + lh * lh + 1e-9


def test_zigzag_errors_name_the_rule():
    with pytest.raises(SpecError, match="needs H on d_G nodes"):
        topology("zigzag(complete:5,ring:5)")
    with pytest.raises(SpecError, match="regular"):
        topology("zigzag(mesh:3x3,ring:4)")
    with pytest.raises(SpecError, match="bidirectional"):
        zigzag_product(topology("dcirculant:5:1,2"), topology("complete:2"))
    with pytest.raises(SpecError, match="takes 2 spec"):
        topology("zigzag(complete:5,ring:4,ring:4)")


# ---------------------------------------------------------------------- BundleFly
@pytest.mark.parametrize("q,r", [(3, 5), (4, 5), (3, 9), (5, 5)])
def test_bundlefly_is_the_star_product(q, r):
    t = bundlefly_graph(q, r)
    star, node = topology(f"slimfly:{q}"), topology(f"paley:{r}")
    d_star = np.bincount(star.src)[0]
    assert t.num_nodes == 2 * q * q * r and degrees(t) == [d_star + (r - 1) // 2]
    assert simple_and_undirected(t)
    u, x = np.divmod(t.src, r)
    v, y = np.divmod(t.dst, r)
    inside = u == v
    # inside a supernode: the Paley graph
    assert sorted(set(zip(x[inside].tolist(), y[inside].tolist()))) == links(node)
    # between supernodes: exactly the structure edges, each a perfect matching y = xi x
    assert sorted(set(zip(u[~inside].tolist(), v[~inside].tolist()))) == links(star)
    xi = t.meta["xi"]
    fwd = ~inside & (u < v)
    assert len(set(zip(u[fwd].tolist(), v[fwd].tolist(), x[fwd].tolist()))) == fwd.sum()
    if r == 5:                                   # GF(5): multiplication is mod 5
        assert np.all(y[fwd] == (xi * x[fwd]) % 5)
    assert diameter(t) == 3                      # <= diam G* + diam G' = 4 always


def test_bundlefly_errors_name_the_rule():
    with pytest.raises(SpecError, match="q = 1 mod 4"):
        topology("bundlefly:3,7")
    with pytest.raises(SpecError, match="prime power with q = 4w"):
        topology("bundlefly:6,5")


# ---------------------------------------------------------------------- DragonFly
@pytest.mark.parametrize("a,h,g", [(4, 2, None), (2, 1, None), (6, 3, None), (3, 2, 5),
                                   (4, 2, 2)])
@pytest.mark.parametrize("arrangement", ["palmtree", "consecutive"])
def test_dragonfly_structure(a, h, g, arrangement):
    t = dragonfly_graph(a, h, g, arrangement=arrangement)
    groups = a * h + 1 if g is None else g
    assert t.num_nodes == groups * a and simple_and_undirected(t)
    grp_u, grp_v = t.src // a, t.dst // a
    local = grp_u == grp_v
    # complete graph inside every group
    assert local.sum() == groups * a * (a - 1)
    # exactly one global cable (a link each way) per pair of groups
    pairs = sorted(zip(grp_u[~local].tolist(), grp_v[~local].tolist()))
    assert pairs == sorted((i, j) for i in range(groups) for j in range(groups) if i != j)
    glob = np.bincount(t.src[~local], minlength=t.num_nodes)
    assert glob.max() <= h
    if g is None:                                # every global port used: (a-1)+h-regular
        assert degrees(t) == [a - 1 + h]
    assert diameter(t) <= 3 and t.meta["arrangement"] == arrangement


def test_dragonfly_palmtree_rule():
    t = dragonfly_graph(4, 2)                    # 9 groups, ports k = 0..7, router k // 2
    g, a, h = 9, 4, 2
    for i in range(g):
        for k in range(a * h):
            j = (i + k + 1) % g
            r = i * a + k // h
            assert j in (t.dst[t.src == r] // a).tolist()


def test_dragonfly_balanced_with_endpoints():
    t = topology("dragonfly:2,1,3,1")            # a = 2p = 2h, g = a h + 1 = 3
    assert t.num_nodes == 12 and t.switches == tuple(range(6, 12))
    assert degrees(t) == [1, 3]                  # endpoints: one cable; routers: p + a-1 + h
    assert np.all(np.bincount(t.src)[:6] == 1) and diameter(t) == 5


@pytest.mark.parametrize("spec,rule", [("dragonfly:2,1,4", "g <= a\\*h \\+ 1"),
                                       ("dragonfly:0,1", "a >= 1"),
                                       ("dragonfly:2,0", "h >= 1"),
                                       ("dragonfly:2,1,3,-1", "p >= 0"),
                                       ("dragonfly:2", "expected A,H")])
def test_dragonfly_errors_name_the_rule(spec, rule):
    with pytest.raises(SpecError, match=rule):
        topology(spec)


# ---------------------------------------------------------------------- specs and CLI
@pytest.mark.parametrize("spec", ["lps:3,5", "spectralfly:5,7", "borelcayley:7,3",
                                  "bundlefly:3,5", "dragonfly:4,2", "dragonfly:4,2:consecutive",
                                  "zigzag(complete:5,ring:4)"])
def test_specs_round_trip_their_names(spec):
    assert topology(spec).name == spec


@settings(max_examples=25)
@given(a=st.integers(1, 6), h=st.integers(1, 3), drop=st.integers(0, 6), p=st.integers(0, 2),
       consecutive=st.booleans())
def test_dragonfly_any_parameters(a, h, drop, p, consecutive):
    g = max(2, a * h + 1 - drop)
    t = dragonfly_graph(a, h, g, p, arrangement="consecutive" if consecutive else "palmtree")
    routers = g * a
    assert t.num_nodes == routers * (1 + p) and simple_and_undirected(t)
    r_src, r_dst = t.src[t.src >= g * a * p], t.dst[t.src >= g * a * p]
    glob = (r_src - g * a * p) // a != (r_dst - g * a * p) // a
    glob &= r_dst >= g * a * p
    assert glob.sum() == g * (g - 1)             # one cable (two links) per group pair
    assert np.bincount(r_src[glob], minlength=t.num_nodes).max() <= h
    assert diameter(t) <= (3 if p == 0 else 5)


@settings(max_examples=20)
@given(p=st.sampled_from([5, 7, 11, 13, 17, 19, 23, 29, 31]), pick=st.integers(0, 10))
def test_borel_cayley_any_order(p, pick):
    ks = [k for k in range(3, p) if (p - 1) % k == 0]
    k = ks[pick % len(ks)]
    t = borel_cayley_graph(p, k)
    assert t.num_nodes == p * k and degrees(t) == [4] and simple_and_undirected(t)
    assert same_distances_everywhere(t)
