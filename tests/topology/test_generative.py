"""Generative families: twisted torus and hypercube, optimal circulants, seeded random regular
(di)graphs, distance-regular graphs (the paper's Table 7 and four parametrized families), their
spec strings, and the translation symmetries families claim in ``meta["symmetry"]``.

Every structural fact is checked against an independent computation: networkx distances, a
from-scratch distance-regularity checker, pure-Python reference constructions."""

import itertools
import math

import networkx as nx
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from topocoll.errors import InputTypeError, SpecError
from topocoll.topology import (DISTANCE_REGULAR_GRAPHS, FAMILIES, circulant_graph,
                               complete_bipartite_graph, complete_graph, diameter,
                               distance_regular_graph, doubled_odd_graph, hamming_graph,
                               hypercube_graph, johnson_graph, moore_depth, odd_graph,
                               optimal_circulant_graph, paley_graph, parse_spec,
                               random_regular_digraph, random_regular_graph, ring_graph,
                               topology, torus_graph, twisted_hypercube_graph,
                               twisted_torus_graph, uniring_graph)
from topocoll.topology.families import checks
from topocoll.topology.families import generative as gen


# ---------------------------------------------------------------------- independent checkers
def links(t):
    return sorted(zip(t.src.tolist(), t.dst.tolist()))


def undirected(t):
    """networkx Graph of a bidirectional topology (fails if a link has no partner)."""
    pairs = set(zip(t.src.tolist(), t.dst.tolist()))
    assert all((v, u) in pairs for u, v in pairs), "not bidirectional"
    g = nx.Graph()
    g.add_nodes_from(range(t.num_nodes))
    g.add_edges_from(pairs)
    return g


def nx_distances(g):
    n = g.number_of_nodes()
    dist = np.full((n, n), -1, dtype=np.int64)
    for u, row in nx.all_pairs_shortest_path_length(g):
        for v, d in row.items():
            dist[u, v] = d
    return dist


def intersection_array(g):
    """The intersection array of ``g`` if it is distance-regular, else ``None``.

    For every pair ``(u, v)`` at distance ``i``, count the neighbours of ``v`` at distance
    ``i-1``, ``i`` and ``i+1`` from ``u``; the graph is distance-regular iff the three counts
    depend on ``i`` alone."""
    dist = nx_distances(g)
    if np.any(dist < 0):
        return None
    adj = nx.to_numpy_array(g, nodelist=range(g.number_of_nodes()))   # symmetric 0/1, floats
    diam = int(dist.max())
    b, c = [], []
    for i in range(diam + 1):
        at_i = dist == i
        counts = []
        for j in (i - 1, i, i + 1):
            # ((D == j) @ A)[u, v] = #{w ~ v : d(u, w) = j}
            per_pair = np.rint((dist == j).astype(float) @ adj)[at_i]
            if np.unique(per_pair).size != 1:
                return None
            counts.append(int(per_pair[0]))
        if i > 0:
            c.append(counts[0])
        if i < diam:
            b.append(counts[2])
    return b, c


def claimed_group_generators(t):
    """The permutations of node ids that generate the translation group ``meta["symmetry"]``
    claims, computed from the claim alone."""
    claim = t.meta["symmetry"]
    n = t.num_nodes
    ids = np.arange(n, dtype=np.int64)
    if claim["kind"] == "cyclic":
        return [(ids + 1) % n]
    if claim["kind"] == "xor":
        k = n.bit_length() - 1
        assert 1 << k == n
        return [ids ^ (1 << j) for j in range(k)]
    assert claim["kind"] == "mixed_radix"
    dims = claim["dims"]
    assert math.prod(dims) == n
    gens = []
    for i, d in enumerate(dims):
        stride = math.prod(dims[i + 1:])
        digit = (ids // stride) % d
        gens.append(ids + ((digit + 1) % d - digit) * stride)
    return gens


def assert_symmetry_claim_holds(t):
    """Every generator of the claimed group maps the link multiset onto itself."""
    original = links(t)
    for perm in claimed_group_generators(t):
        moved = sorted(zip(perm[t.src].tolist(), perm[t.dst].tolist()))
        assert moved == original, (t.name, t.meta["symmetry"])


def assert_regular_simple(t, degree):
    assert set(t.out_degree(multi=True).tolist()) == {degree}
    assert set(t.in_degree(multi=True).tolist()) == {degree}
    assert set(t.out_degree().tolist()) == {degree}      # no parallel links
    assert not np.any(t.src == t.dst)


def one_line_spec_error(call, match):
    with pytest.raises(SpecError, match=match) as info:
        call()
    assert "\n" not in str(info.value)
    return str(info.value)


# ---------------------------------------------------------------------- twisted torus
def reference_twisted_torus(dims, twist):
    """The documented rule, coordinate by coordinate, in plain Python."""
    longest = max(dims)
    coords = list(itertools.product(*[range(k) for k in dims]))
    index = {x: i for i, x in enumerate(coords)}
    out = []
    for x in coords:
        for i, k in enumerate(dims):
            for step in (1, -1):
                y = list(x)
                y[i] = (x[i] + step) % k
                wrapped = (step == 1 and x[i] == k - 1) or (step == -1 and x[i] == 0)
                if wrapped and k < longest:
                    for j, kj in enumerate(dims):
                        if kj == longest:
                            y[j] = (y[j] + step * twist) % longest
                out.append((index[x], index[tuple(y)]))
    return sorted(out)


TWISTED = [((4, 8), None), ((4, 8), 2), ((3, 6), None), ((4, 4, 8), None), ((4, 4, 8), 3),
           ((4, 8, 8), None), ((3, 3, 6), None), ((5, 7), 3), ((3, 4, 5), 1)]


@pytest.mark.parametrize("dims, twist", TWISTED)
def test_twisted_torus_follows_the_documented_rule(dims, twist):
    t = twisted_torus_graph(dims, twist)
    used = max(dims) // 2 if twist is None else twist
    assert t.num_nodes == math.prod(dims)
    assert links(t) == reference_twisted_torus(dims, used)
    assert_regular_simple(t, 2 * len(dims))
    assert t.is_bidirectional()
    assert t.meta["family"] == "twistedtorus" and t.meta["twist"] == used
    assert "symmetry" not in t.meta


@pytest.mark.parametrize("dims, twist", TWISTED)
def test_twisted_torus_is_vertex_transitive(dims, twist):
    """It is the Cayley graph of Z^n / L: the unit steps ``x -> x + e_i`` (the links of one
    direction, read as a map) are automorphisms, and they act transitively."""
    t = twisted_torus_graph(dims, twist)
    n, original = t.num_nodes, links(t)
    slots = t.src.size // n                      # links are sorted by source, 2 per dimension
    rows = t.dst.reshape(n, slots)
    for i in range(len(dims)):
        step = rows[:, 2 * i]                    # the +e_i neighbour of every node
        assert np.array_equal(np.sort(step), np.arange(n))
        assert sorted(zip(step[t.src].tolist(), step[t.dst].tolist())) == original
    dist = nx_distances(undirected(t))           # and every node sees the same distance profile
    assert len({tuple(np.sort(row)) for row in dist}) == 1


@pytest.mark.parametrize("dims, twisted_diam, torus_diam", [
    ((4, 8), 4, 6), ((4, 4, 8), 6, 8), ((4, 8, 8), 6, 10), ((3, 6), 3, 4), ((3, 3, 6), 4, 5),
    ((6, 12), 6, 9)])
def test_twisted_torus_beats_the_plain_torus(dims, twisted_diam, torus_diam):
    t = twisted_torus_graph(dims)
    assert diameter(t) == twisted_diam == nx.diameter(undirected(t))
    assert diameter(torus_graph(dims)) == torus_diam > twisted_diam


def test_twist_zero_is_the_torus_and_names_are_canonical():
    assert links(twisted_torus_graph([4, 8], 0)) == links(torus_graph([4, 8]))
    assert twisted_torus_graph([4, 8], 4).name == "twistedtorus:4x8"
    assert twisted_torus_graph([4, 8], 0).name == "twistedtorus:4x8:0"
    for spec in ("twistedtorus:4x4x8", "twistedtorus:4x8:2", "twistedtorus:3x3x6:0"):
        assert topology(spec).name == spec
    assert topology("twistedtorus:4x8:4").name == "twistedtorus:4x8"
    assert parse_spec("twistedtorus:4x8:3")[1] == {"dims": (4, 8), "twist": 3}


@pytest.mark.parametrize("call, message", [
    (lambda: twisted_torus_graph([8]), r"at least 2 dimensions"),
    (lambda: twisted_torus_graph([2, 8]), r"dimensions must be >= 3, got 2"),
    (lambda: twisted_torus_graph([4, 4]), r"shorter than the longest"),
    (lambda: twisted_torus_graph([4, 8], 8), r"twist must be in 0\.\.7"),
    (lambda: twisted_torus_graph([4, 8], -1), r"twist must be in 0\.\.7"),
    (lambda: topology("twistedtorus:4x8:x"), r"'x' is not a whole number"),
    (lambda: topology("twistedtorus:4x8:1:2"), r"unknown option '2'"),
])
def test_twisted_torus_errors(call, message):
    one_line_spec_error(call, message)


# ---------------------------------------------------------------------- twisted hypercube
@pytest.mark.parametrize("k", range(1, 11))
def test_twisted_hypercube_size_degree_diameter(k):
    t = twisted_hypercube_graph(k)
    assert t.num_nodes == 2**k and t.num_links == k * 2**k
    assert_regular_simple(t, k)
    assert t.is_bidirectional()
    assert diameter(t) == math.ceil((k + 1) / 2)


def test_twisted_hypercube_is_efes_crossed_cube():
    """Efe's recursive definition: two copies of CQ_{k-1}; 0u and 1v are joined iff the top
    bits of u and v agree when k is even, and every lower bit pair is pair-related."""
    related = {(0b00, 0b00), (0b10, 0b10), (0b01, 0b11), (0b11, 0b01)}

    def crossed(k):
        if k == 1:
            return {(0, 1), (1, 0)}
        half = 1 << (k - 1)
        edges = crossed(k - 1)
        edges |= {(u + half, v + half) for u, v in edges}
        for u in range(half):
            for v in range(half):
                if k % 2 == 0 and (u >> (k - 2)) & 1 != (v >> (k - 2)) & 1:
                    continue
                if all(((u >> 2 * i) & 3, (v >> 2 * i) & 3) in related
                       for i in range((k - 1) // 2)):
                    edges |= {(u, v + half), (v + half, u)}
        return edges

    for k in range(1, 8):
        assert links(twisted_hypercube_graph(k)) == sorted(crossed(k))


def test_twisted_hypercube_3_is_the_moebius_ladder_and_hypercube_2_is_the_square():
    assert nx.is_isomorphic(undirected(twisted_hypercube_graph(3)), nx.circulant_graph(8, [1, 4]))
    assert links(twisted_hypercube_graph(2)) == links(hypercube_graph(2))
    one_line_spec_error(lambda: twisted_hypercube_graph(0), r"dimension k >= 1, got 0")


# ---------------------------------------------------------------------- optimal circulant
def least_diameter(n):
    return math.ceil((math.sqrt(2 * n - 1) - 1) / 2)


@pytest.mark.parametrize("n", range(5, 121))
def test_optimal_circulant_reaches_the_formula(n):
    t = optimal_circulant_graph(n)
    a, b = t.meta["offsets"]
    assert b == a + 1 and 2 * b < n
    assert links(t) == links(circulant_graph(n, [a, b]))
    assert_regular_simple(t, 4)
    assert diameter(t) == least_diameter(n) == t.meta["diameter"]
    assert t.name == f"optcirculant:{n}"


def test_no_degree_4_circulant_has_a_smaller_diameter():
    """Theorem 22: the formula is the least diameter over all C(n, {a, b}), checked by brute
    force over every connected pair of distinct offsets. A circulant is vertex-transitive (the
    rotations are automorphisms), so its diameter is the eccentricity of node 0: one BFS per
    graph instead of n."""
    for n in range(5, 41):
        best = min(nx.eccentricity(nx.circulant_graph(n, [a, b]), v=0)
                   for a in range(1, n // 2) for b in range(a + 1, (n + 1) // 2)
                   if math.gcd(math.gcd(a, b), n) == 1)
        assert best == least_diameter(n) == diameter(optimal_circulant_graph(n)), n


def test_optimal_circulant_uses_the_closed_form_on_tight_sizes():
    for a in range(1, 8):
        n = 2 * a * a + 2 * a + 1
        assert optimal_circulant_graph(n).meta["offsets"] == [a, a + 1]
    one_line_spec_error(lambda: optimal_circulant_graph(4), r"needs n >= 5")


# ---------------------------------------------------------------------- random regular graphs
@settings(max_examples=40, deadline=None)
@given(st.integers(2, 40), st.integers(1, 39), st.integers(0, 2**31))
def test_random_regular_graph_is_connected_regular_and_reproducible(n, d, seed):
    assume(d <= n - 1 and n * d % 2 == 0 and (d >= 2 or n == 2))
    t = random_regular_graph(n, d, seed)
    assert t.num_nodes == n
    assert_regular_simple(t, d)
    assert nx.is_connected(undirected(t))
    again = random_regular_graph(n, d, seed)
    assert np.array_equal(again.src, t.src) and np.array_equal(again.dst, t.dst)
    assert t.meta["seed"] == seed and t.meta["family"] == "randomregular"
    assert links(topology(t.name)) == links(t)


@settings(max_examples=40, deadline=None)
@given(st.integers(2, 40), st.integers(1, 39), st.integers(0, 2**31))
def test_random_regular_digraph_is_strongly_connected_regular_and_reproducible(n, d, seed):
    assume(d <= n - 1)
    t = random_regular_digraph(n, d, seed)
    assert t.num_nodes == n
    assert_regular_simple(t, d)
    g = nx.DiGraph(links(t))
    assert g.number_of_nodes() == n and nx.is_strongly_connected(g)
    again = random_regular_digraph(n, d, seed)
    assert np.array_equal(again.src, t.src) and np.array_equal(again.dst, t.dst)
    assert links(topology(t.name)) == links(t)


def test_random_graphs_depend_on_the_seed_and_name_it():
    assert links(random_regular_graph(40, 3, 1)) != links(random_regular_graph(40, 3, 2))
    assert links(random_regular_digraph(40, 3, 1)) != links(random_regular_digraph(40, 3, 2))
    assert random_regular_graph(40, 3).name == "randomregular:40,3"
    assert topology("randomregular:40,3:9").name == "randomregular:40,3:9"
    assert topology("randomdigraph:40,3:0").name == "randomdigraph:40,3"
    assert parse_spec("randomregular:16,3:5")[1] == {"n": 16, "d": 3, "seed": 5}
    assert parse_spec("randomdigraph:16,3")[1] == {"n": 16, "d": 3}


def test_random_digraph_is_mostly_one_way():
    t = random_regular_digraph(64, 3, 0)
    pairs = set(links(t))
    assert sum((v, u) in pairs for u, v in pairs) < len(pairs) // 4


def test_random_regular_degree_two_is_a_hamiltonian_cycle():
    for seed in range(5):
        g = undirected(random_regular_graph(30, 2, seed))
        assert nx.is_connected(g) and set(dict(g.degree()).values()) == {2}


@pytest.mark.parametrize("call, message", [
    (lambda: random_regular_graph(5, 3), r"n \* d even .* got 5 \* 3 = 15"),
    (lambda: random_regular_graph(6, 1), r"d >= 2 for n > 2"),
    (lambda: random_regular_graph(6, 6), r"1 <= d <= n-1 = 5, got 6"),
    (lambda: random_regular_graph(1, 1), r"n >= 2 nodes"),
    (lambda: random_regular_graph(6, 3, -1), r"seed must be >= 0"),
    (lambda: random_regular_digraph(6, 0), r"1 <= d <= n-1 = 5, got 0"),
    (lambda: topology("randomregular:16"), r"expected 2 numbers"),
    (lambda: topology("randomdigraph:16,2:x"), r"'x' is not a whole number"),
])
def test_random_regular_errors(call, message):
    one_line_spec_error(call, message)


def test_random_regular_refuses_non_integers():
    with pytest.raises(InputTypeError):
        random_regular_graph(8, 3, 1.5)


def test_random_regular_gives_up_with_a_one_line_error(monkeypatch):
    monkeypatch.setattr(gen, "strongly_connected_links", lambda n, src, dst: False)
    one_line_spec_error(lambda: random_regular_graph(10, 3), r"no connected 3-regular graph .* "
                        r"in 64 attempts from seed 0")
    one_line_spec_error(lambda: random_regular_digraph(10, 3), r"no strongly connected")


# ---------------------------------------------------------------------- distance-regular graphs
#: The paper's Table 7: name -> (N, diameter), in its order.
TABLE7 = {"octahedron": (6, 2), "paley9": (9, 2), "k55-minus-matching": (10, 3),
          "heawood-distance3": (14, 3), "petersen-line": (15, 3), "4cube": (16, 4),
          "heawood-line": (21, 3), "pg23-incidence": (26, 3),
          "ag24-minus-parallel-class": (32, 4), "odd4": (35, 3), "tutte8cage-line": (45, 4),
          "doubled-odd4": (70, 7), "gq33-incidence": (80, 4), "tutte12cage-line": (189, 6),
          "gh33-incidence": (728, 6)}


@pytest.mark.parametrize("name", list(DISTANCE_REGULAR_GRAPHS))
def test_named_graphs_are_distance_regular_with_the_documented_array(name):
    t = distance_regular_graph(name)
    facts = DISTANCE_REGULAR_GRAPHS[name]
    assert t.name == f"drg:{name}" and topology(t.name).num_links == t.num_links
    assert t.num_nodes == facts["nodes"]
    assert_regular_simple(t, facts["degree"])
    b, c = intersection_array(undirected(t))
    assert (tuple(b), tuple(c)) == facts["intersection_array"]
    assert t.meta["intersection_array"] == [b, c]
    assert diameter(t) == facts["diameter"] == len(b)


def test_table7_rows():
    """Node count, degree 4, diameter and the paper's (directed) Moore column for each row."""
    moore = [2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 4, 5]
    assert list(DISTANCE_REGULAR_GRAPHS)[:15] == list(TABLE7)
    for (name, (nodes, diam)), m in zip(TABLE7.items(), moore):
        facts = DISTANCE_REGULAR_GRAPHS[name]
        assert (facts["nodes"], facts["degree"], facts["diameter"]) == (nodes, 4, diam), name
        assert moore_depth(nodes, 4) == m


def test_named_graphs_are_the_known_graphs():
    def g(name):
        return undirected(distance_regular_graph(name))
    assert nx.is_isomorphic(g("petersen"), nx.petersen_graph())
    assert nx.is_isomorphic(g("heawood"), nx.heawood_graph())
    assert nx.is_isomorphic(g("octahedron"), nx.octahedral_graph())
    assert nx.is_isomorphic(g("petersen-line"), nx.line_graph(nx.petersen_graph()))
    assert nx.is_isomorphic(g("heawood-line"), nx.line_graph(nx.heawood_graph()))
    assert nx.is_isomorphic(g("4cube"), nx.hypercube_graph(4))
    assert nx.is_isomorphic(g("paley9"), nx.cartesian_product(nx.complete_graph(3),
                                                               nx.complete_graph(3)))
    k55 = nx.complete_bipartite_graph(5, 5)
    k55.remove_edges_from((i, 5 + i) for i in range(5))
    assert nx.is_isomorphic(g("k55-minus-matching"), k55)
    heawood = nx.heawood_graph()
    dist3 = nx.Graph((u, v) for u, row in nx.all_pairs_shortest_path_length(heawood)
                     for v, d in row.items() if d == 3)
    assert nx.is_isomorphic(g("heawood-distance3"), dist3)
    tutte8 = nx.LCF_graph(30, [-13, -9, 7, -7, 9, 13], 5)            # Tutte-Coxeter graph
    assert nx.is_isomorphic(g("tutte8cage"), tutte8)
    assert nx.is_isomorphic(g("tutte8cage-line"), nx.line_graph(tutte8))
    for name, girth in (("tutte12cage", 12), ("gh33-incidence", 12), ("gq33-incidence", 8),
                        ("pg23-incidence", 6)):
        assert nx.is_bipartite(g(name)) and nx.girth(g(name)) == girth, name


def test_unknown_drg_names_list_the_known_ones():
    msg = one_line_spec_error(lambda: topology("drg:dodecahedron"),
                              r"unknown distance-regular graph 'dodecahedron'; known: ")
    assert all(name in msg for name in DISTANCE_REGULAR_GRAPHS)
    assert topology("drg:ODD4").name == "drg:odd4"
    one_line_spec_error(lambda: topology("drg:a b"), r"'a b' is not a name")
    one_line_spec_error(lambda: distance_regular_graph(4), r"takes a graph name")


@pytest.mark.parametrize("q", [5, 9, 13, 17, 25, 29, 37, 41, 49, 81])
def test_paley_graphs(q):
    t = paley_graph(q)
    assert t.num_nodes == q
    assert_regular_simple(t, (q - 1) // 2)
    assert intersection_array(undirected(t)) == ([(q - 1) // 2, (q - 1) // 4], [1, (q - 1) // 4])
    assert_symmetry_claim_holds(t)
    if q in (5, 13, 17, 29, 37, 41):      # primes: the same labelling as networkx
        assert links(t) == sorted(nx.paley_graph(q).edges())


@pytest.mark.parametrize("q, message", [(7, r"q = 1 mod 4"), (15, r"prime power"),
                                        (27, r"q = 1 mod 4"), (1, r"q >= 5")])
def test_paley_errors(q, message):
    one_line_spec_error(lambda: topology(f"paley:{q}"), message)


def colex(n, k):
    """The k-subsets of range(n) in colexicographic order (the documented node numbering)."""
    return sorted(itertools.combinations(range(n), k), key=lambda s: s[::-1])


def reference_links(nodes, adjacent):
    return sorted((u, v) for u, a in enumerate(nodes) for v, b in enumerate(nodes)
                  if u != v and adjacent(set(a), set(b)))


@pytest.mark.parametrize("k", [2, 3, 4, 5])
def test_odd_graphs(k):
    t = odd_graph(k)
    assert t.num_nodes == math.comb(2 * k - 1, k - 1)
    assert_regular_simple(t, k)
    b, c = intersection_array(undirected(t))
    assert len(b) == k - 1 and b[0] == k
    assert links(t) == reference_links(colex(2 * k - 1, k - 1), lambda a, b_: not a & b_)


@pytest.mark.parametrize("k", [2, 3, 4])
def test_doubled_odd_graphs(k):
    t = doubled_odd_graph(k)
    assert t.num_nodes == 2 * math.comb(2 * k - 1, k - 1)
    assert_regular_simple(t, k)
    b, _ = intersection_array(undirected(t))
    assert len(b) == 2 * k - 1
    nodes = colex(2 * k - 1, k - 1) + colex(2 * k - 1, k)
    assert links(t) == reference_links(nodes, lambda a, b_: a < b_ or b_ < a)
    if k == 4:
        assert links(t) == links(distance_regular_graph("doubled-odd4"))


@pytest.mark.parametrize("n, k", [(2, 1), (5, 1), (4, 2), (5, 2), (6, 3), (7, 3), (8, 2),
                                  (8, 5), (9, 4)])
def test_johnson_graphs(n, k):
    t = johnson_graph(n, k)
    assert t.num_nodes == math.comb(n, k)
    assert_regular_simple(t, k * (n - k))
    b, _ = intersection_array(undirected(t))
    assert len(b) == min(k, n - k)
    assert links(t) == reference_links(colex(n, k), lambda a, b_: len(a & b_) == k - 1)
    if (n, k) == (4, 2):
        assert nx.is_isomorphic(undirected(t), nx.octahedral_graph())


@pytest.mark.parametrize("spec, message", [
    ("odd:1", r"odd needs k >= 2, got 1"), ("doubledodd:1", r"doubledodd needs k >= 2"),
    ("johnson:5,5", r"1 <= k <= n-1 = 4, got 5"), ("johnson:5,0", r"got 0"),
    ("johnson:1,1", r"n >= 2 points"), ("johnson:5", r"expected 2 numbers"),
])
def test_subset_family_errors(spec, message):
    one_line_spec_error(lambda: topology(spec), message)


def test_giant_members_are_refused_before_they_are_built(monkeypatch):
    monkeypatch.setattr(checks, "MAX_LINKS", 10_000)
    for spec in ("odd:12", "johnson:40,20", "paley:10009", "twistedhypercube:20",
                 "twistedtorus:40x40x80", "optcirculant:100000", "randomregular:100000,3",
                 "randomdigraph:100000,3", "doubledodd:12"):
        one_line_spec_error(lambda spec=spec: topology(spec), r"generators stop at")


# ---------------------------------------------------------------------- registry
NEW_FAMILIES = ["twistedtorus", "twistedhypercube", "optcirculant", "randomregular",
                "randomdigraph", "drg", "paley", "odd", "doubledodd", "johnson"]


@pytest.mark.parametrize("name", NEW_FAMILIES)
def test_new_families_are_registered_with_a_canonical_example(name):
    family = FAMILIES[name]
    assert family.params and family.summary and "\n" not in family.summary
    t = topology(family.example)
    assert t.name == family.example and t.meta["family"] == name
    again = topology(t.name)
    assert links(again) == links(t)
    with pytest.raises(SpecError) as info:
        topology(f"{name}:")
    assert f"use {name}:{family.params}" in str(info.value)


def test_every_registered_family_is_documented_in_the_registry_module():
    from topocoll.topology import specs as registry

    for name, family in FAMILIES.items():
        assert f"``{name}:" in registry.__doc__, name
    assert "de Bruijn" in registry.__doc__ and "Kautz" in registry.__doc__


def test_options_still_work_next_to_optional_fields():
    assert topology("torus:2x4:double").name == "torus:2x4:double"
    one_line_spec_error(lambda: topology("twistedtorus:4x8:double"),
                        r"'double' is not a whole number")


# ---------------------------------------------------------------------- symmetry claims
CLAIMS = [
    lambda: ring_graph(9), lambda: ring_graph(2), lambda: uniring_graph(7),
    lambda: torus_graph([4, 6, 3]), lambda: torus_graph([2, 4]),
    lambda: torus_graph([2, 4], double_size2=True), lambda: torus_graph([1, 5]),
    lambda: torus_graph([2, 2, 2]), lambda: hypercube_graph(1), lambda: hypercube_graph(5),
    lambda: complete_graph(2), lambda: complete_graph(7), lambda: complete_bipartite_graph(1),
    lambda: complete_bipartite_graph(5), lambda: circulant_graph(16, [1, 4]),
    lambda: circulant_graph(8, [1, 4]), lambda: hamming_graph(3, 4), lambda: hamming_graph(1, 5),
    lambda: optimal_circulant_graph(6), lambda: optimal_circulant_graph(41),
    lambda: paley_graph(13), lambda: paley_graph(25), lambda: paley_graph(81),
    lambda: distance_regular_graph("octahedron"), lambda: distance_regular_graph("paley9"),
    lambda: distance_regular_graph("k55-minus-matching"),
    lambda: distance_regular_graph("4cube"),
]


@pytest.mark.parametrize("make", CLAIMS)
def test_claimed_symmetries_hold(make):
    t = make()
    assert t.meta["symmetry"]["kind"] in {"cyclic", "xor", "mixed_radix"}
    assert_symmetry_claim_holds(t)
    assert_symmetry_claim_holds(t.transpose())


def test_claims_are_in_the_exact_form():
    assert ring_graph(5).meta["symmetry"] == {"kind": "cyclic"}
    assert hypercube_graph(3).meta["symmetry"] == {"kind": "xor"}
    assert torus_graph([4, 6]).meta["symmetry"] == {"kind": "mixed_radix", "dims": [4, 6]}
    assert hamming_graph(2, 3).meta["symmetry"] == {"kind": "mixed_radix", "dims": [3, 3]}
    assert complete_bipartite_graph(3).meta["symmetry"] == {"kind": "mixed_radix",
                                                            "dims": [2, 3]}


def test_no_claim_where_the_labelling_is_not_a_translation_group():
    for t in (twisted_torus_graph([4, 8]), twisted_hypercube_graph(4),
              random_regular_graph(12, 3), random_regular_digraph(12, 3),
              distance_regular_graph("petersen"), odd_graph(4), johnson_graph(5, 2),
              topology("mesh:3x3"), topology("kautz:2,3")):
        assert "symmetry" not in t.meta, t.name
