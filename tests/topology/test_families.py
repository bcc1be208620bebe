"""The family generators: sizes, degrees, diameters against closed forms, node numbering,
isomorphisms with known graphs, self-loop handling."""

import itertools

import networkx as nx
import numpy as np
import pytest

from topocoll.errors import InputTypeError, SpecError
from topocoll.topology import (circulant_graph, complete_bipartite_graph, complete_graph,
                               de_bruijn_graph, degree_summary, diameter,
                               generalized_kautz_graph, hamming_graph, hypercube_graph,
                               is_strongly_connected, kautz_graph, mesh_graph, ring_graph,
                               topology, torus_graph, uniring_graph)


def digraph(t):
    """Simple DiGraph of the distinct links (for isomorphism checks)."""
    g = nx.DiGraph()
    g.add_nodes_from(range(t.num_nodes))
    g.add_edges_from(zip(t.src.tolist(), t.dst.tolist()))
    return g


def both_ways(graph):
    """The DiGraph with both directions of every edge of an undirected networkx graph."""
    g = nx.DiGraph(nx.convert_node_labels_to_integers(graph))
    g.remove_edges_from(list(nx.selfloop_edges(g)))   # networkx's periodic size-1 dims have them
    return g


def link_multiset(t):
    return sorted(zip(t.src.tolist(), t.dst.tolist()))


# ------------------------------------------------------------------ closed forms
# (topology, nodes, links, regular degree or None, diameter)
CASES = [
    (lambda: torus_graph([4, 6, 3]), 72, 432, 6, 2 + 3 + 1),
    (lambda: torus_graph([5, 7]), 35, 140, 4, 2 + 3),
    (lambda: torus_graph([3]), 3, 6, 2, 1),
    (lambda: torus_graph([2, 4]), 8, 24, 3, 1 + 2),
    (lambda: torus_graph([2, 2, 2]), 8, 24, 3, 3),
    (lambda: torus_graph([1, 5]), 5, 10, 2, 2),
    (lambda: mesh_graph([5, 5]), 25, 80, None, 8),
    (lambda: mesh_graph([2, 3, 4]), 24, 2 * (12 * 1 + 8 * 2 + 6 * 3), None, 1 + 2 + 3),
    (lambda: mesh_graph([6]), 6, 10, None, 5),
    (lambda: ring_graph(8), 8, 16, 2, 4),
    (lambda: ring_graph(9), 9, 18, 2, 4),
    (lambda: ring_graph(2), 2, 2, 1, 1),
    (lambda: uniring_graph(7), 7, 7, 1, 6),
    (lambda: uniring_graph(2), 2, 2, 1, 1),
    (lambda: hypercube_graph(1), 2, 2, 1, 1),
    (lambda: hypercube_graph(6), 64, 384, 6, 6),
    (lambda: complete_graph(8), 8, 56, 7, 1),
    (lambda: complete_graph(2), 2, 2, 1, 1),
    (lambda: complete_bipartite_graph(4), 8, 32, 4, 2),
    (lambda: complete_bipartite_graph(1), 2, 2, 1, 1),
    (lambda: circulant_graph(16, [1, 4]), 16, 64, 4, 3),
    (lambda: circulant_graph(5, [1, 2]), 5, 20, 4, 1),
    (lambda: circulant_graph(13, [2, 3]), 13, 52, 4, 2),   # n = 2a^2+2a+1, a = 2
    (lambda: circulant_graph(25, [3, 4]), 25, 100, 4, 3),  # n = 2a^2+2a+1, a = 3
    (lambda: circulant_graph(8, [1, 4]), 8, 24, 3, 2),
    (lambda: hamming_graph(3, 4), 64, 64 * 9, 9, 3),
    (lambda: hamming_graph(1, 5), 5, 20, 4, 1),
    (lambda: hamming_graph(4, 2), 16, 64, 4, 4),
    (lambda: kautz_graph(2, 3), 12, 24, 2, 3),
    (lambda: kautz_graph(3, 2), 12, 36, 3, 2),
    (lambda: kautz_graph(2, 1), 3, 6, 2, 1),
    (lambda: kautz_graph(4, 3), 80, 320, 4, 3),
    (lambda: de_bruijn_graph(2, 5), 32, 64 - 2, None, 5),
    (lambda: de_bruijn_graph(3, 3), 27, 81 - 3, None, 3),
    (lambda: de_bruijn_graph(2, 1), 2, 2, 1, 1),
]


@pytest.mark.parametrize("make, nodes, links, degree, diam", CASES)
def test_closed_forms(make, nodes, links, degree, diam):
    t = make()
    assert t.num_nodes == nodes
    assert t.num_links == links
    summary = degree_summary(t)
    if degree is None:
        assert not summary["regular"]
    else:
        assert summary["regular"] and summary["out_min"] == degree
    assert diameter(t) == diam
    assert not np.any(t.src == t.dst)


def test_torus_diameter_formula_on_many_shapes():
    for dims in [(3, 4), (2, 5, 3), (6, 6), (7,), (4, 4, 4), (2, 9)]:
        assert diameter(torus_graph(dims)) == sum(k // 2 for k in dims)
        assert diameter(mesh_graph(dims)) == sum(k - 1 for k in dims)


@pytest.mark.parametrize("n", [2, 3, 4, 7, 10])
def test_ring_and_uniring_diameters(n):
    assert diameter(ring_graph(n)) == n // 2
    assert diameter(uniring_graph(n)) == n - 1


# ------------------------------------------------------------------ numbering and structure
def test_torus_node_ids_are_mixed_radix_first_dimension_most_significant():
    t = torus_graph([4, 6, 3])
    node = 1 * 18 + 2 * 3 + 0                     # (1, 2, 0)
    expected = {2 * 18 + 6, 0 * 18 + 6,           # (2,2,0), (0,2,0)
                18 + 3 * 3, 18 + 1 * 3,           # (1,3,0), (1,1,0)
                18 + 6 + 1, 18 + 6 + 2}           # (1,2,1), (1,2,2) (wrap)
    assert set(t.dst[t.src == node].tolist()) == expected


@pytest.mark.parametrize("dims", [(3, 4), (2, 5, 3), (4,), (2, 2), (1, 3, 1)])
def test_torus_and_mesh_match_networkx_grids(dims):
    torus = nx.grid_graph(dim=list(dims), periodic=True)
    mesh = nx.grid_graph(dim=list(dims))
    assert nx.is_isomorphic(digraph(torus_graph(dims)), both_ways(torus))
    assert nx.is_isomorphic(digraph(mesh_graph(dims)), both_ways(mesh))


def test_size2_torus_dimension_has_one_link_each_way_unless_doubled():
    single = torus_graph([2, 4])
    assert set(single.out_degree(multi=True).tolist()) == {3}
    assert single.name == "torus:2x4"
    assert link_multiset(single).count((0, 4)) == 1
    double = torus_graph([2, 4], double_size2=True)
    assert double.name == "torus:2x4:double"
    assert double.num_links == 32
    assert set(double.out_degree(multi=True).tolist()) == {4}
    assert set(double.out_degree().tolist()) == {3}      # still 3 distinct neighbours
    assert link_multiset(double).count((0, 4)) == 2
    assert link_multiset(double).count((4, 0)) == 2
    assert double.meta == {"family": "torus", "dims": [2, 4], "double_size2": True,
                           "symmetry": {"kind": "mixed_radix", "dims": [2, 4]}}
    # the option changes nothing when there is no size-2 dimension, and the name says so
    assert torus_graph([3, 4], double_size2=True).name == "torus:3x4"
    assert torus_graph([3, 4], double_size2=True).num_links == 48


def test_ring_of_two_and_torus_with_size_one_dims():
    assert link_multiset(ring_graph(2)) == [(0, 1), (1, 0)]
    assert nx.is_isomorphic(digraph(torus_graph([1, 6, 1])), digraph(ring_graph(6)))
    assert torus_graph([1, 6, 1]).name == "torus:1x6x1"


def test_uniring_is_one_way():
    t = uniring_graph(5)
    assert link_multiset(t) == [(0, 1), (1, 2), (2, 3), (3, 4), (4, 0)]
    assert not t.is_bidirectional()


def test_hypercube_neighbours_are_single_bit_flips():
    t = hypercube_graph(5)
    xor = t.src ^ t.dst
    assert np.all((xor & (xor - 1)) == 0) and np.all(xor > 0)
    assert nx.is_isomorphic(digraph(t), both_ways(nx.hypercube_graph(5)))


def test_complete_and_bipartite_match_networkx():
    assert nx.is_isomorphic(digraph(complete_graph(6)), both_ways(nx.complete_graph(6)))
    t = complete_bipartite_graph(4)
    assert nx.is_isomorphic(digraph(t), both_ways(nx.complete_bipartite_graph(4, 4)))
    side = t.src < 4
    assert np.all(t.dst[side] >= 4) and np.all(t.dst[~side] < 4)


@pytest.mark.parametrize("n, offsets", [(16, [1, 4]), (13, [2, 3]), (12, [1, 6]),
                                        (10, [2, 5]), (9, [3])])
def test_circulant_matches_networkx(n, offsets):
    t = circulant_graph(n, offsets)
    assert nx.is_isomorphic(digraph(t), both_ways(nx.circulant_graph(n, offsets)))
    assert len(link_multiset(t)) == len(set(link_multiset(t)))   # no doubled links


def test_circulant_half_offset_gets_one_link_each_way():
    t = circulant_graph(8, [4])
    assert t.num_links == 8
    assert link_multiset(t).count((0, 4)) == 1
    assert link_multiset(t).count((4, 0)) == 1


def test_circulant_offsets_are_normalized():
    t = circulant_graph(16, [15, 4])
    assert t.name == "circulant:16:1,4"
    assert t.meta["offsets"] == [1, 4]
    assert link_multiset(t) == link_multiset(circulant_graph(16, [1, 4]))
    assert circulant_graph(16, [12]).name == "circulant:16:4"


@pytest.mark.parametrize("offsets, message", [
    ([0], r"circulant offsets must be in 1\.\.n-1 = 1\.\.9, got 0"),
    ([10], r"must be in 1\.\.n-1 = 1\.\.9, got 10"),
    ([-3], r"got -3"),
    ([3, 7], r"offsets 3 and 7 are the same links for n=10"),
    ([2, 2], r"offset 2 is given twice"),
    ([], r"must not be empty"),
])
def test_circulant_rejects_bad_offsets(offsets, message):
    with pytest.raises(SpecError, match=message):
        circulant_graph(10, offsets)


def test_hamming_adjacency_is_one_differing_position():
    d, q = 3, 3
    t = hamming_graph(d, q)
    words = list(itertools.product(range(q), repeat=d))   # id order: first position first
    expected = sorted((i, j) for i, a in enumerate(words) for j, b in enumerate(words)
                      if sum(x != y for x, y in zip(a, b)) == 1)
    assert link_multiset(t) == expected
    assert nx.is_isomorphic(digraph(hamming_graph(3, 2)), digraph(hypercube_graph(3)))


def _kautz_label(node, d, k):
    """Decode the documented Kautz numbering back to the string s1..sk."""
    place = d ** (k - 1)
    letters = [node // place]
    rest = node % place
    for i in range(k - 1):
        digit = (rest // d ** (k - 2 - i)) % d
        letters.append((letters[-1] + digit + 1) % (d + 1))
    return tuple(letters)


@pytest.mark.parametrize("d, k", [(2, 1), (2, 2), (2, 3), (3, 3), (4, 2)])
def test_kautz_arcs_follow_the_string_shift_rule(d, k):
    t = kautz_graph(d, k)
    labels = [_kautz_label(v, d, k) for v in range(t.num_nodes)]
    assert len(set(labels)) == t.num_nodes                        # a bijection ...
    assert all(all(a != b for a, b in zip(s, s[1:])) for s in labels)   # ... onto Kautz strings
    expected = sorted((labels.index(s), labels.index(s[1:] + (x,)))
                      for s in labels for x in range(d + 1) if x != s[-1])
    assert link_multiset(t) == expected


@pytest.mark.parametrize("d, k", [(2, 2), (2, 3), (3, 2), (2, 4), (3, 3)])
def test_generalized_kautz_on_kautz_sizes_is_kautz(d, k):
    gk = generalized_kautz_graph(d**k + d ** (k - 1), d)
    assert gk.meta["dropped_self_loops"] == 0
    assert nx.is_isomorphic(digraph(gk), digraph(kautz_graph(d, k)))


def test_generalized_kautz_is_not_kautz_off_the_kautz_sizes():
    # same node count as K(2,3) is 12; 13 nodes is not a Kautz size and degree ranges differ
    gk = generalized_kautz_graph(13, 2)
    assert gk.num_nodes == 13
    assert not nx.is_isomorphic(digraph(gk), digraph(kautz_graph(2, 3)))


@pytest.mark.parametrize("n, d", [(50, 3), (10, 2), (7, 3), (20, 4), (5, 1)])
def test_generalized_kautz_drops_self_loops_and_reports_degrees(n, d):
    loops = sum(1 for i in range(n) for j in range(1, d + 1) if (-d * i - j) % n == i)
    t = generalized_kautz_graph(n, d)
    assert t.meta["dropped_self_loops"] == loops
    assert t.num_links == n * d - loops
    assert not np.any(t.src == t.dst)
    out_deg = t.out_degree(multi=True)
    assert (t.meta["out_degree_min"], t.meta["out_degree_max"]) == (out_deg.min(), out_deg.max())
    if loops:
        assert t.meta["out_degree_min"] == d - 1
    assert t.meta["family"] == "genkautz" and (t.meta["n"], t.meta["d"]) == (n, d)
    arcs = sorted((i, (-d * i - j) % n) for i in range(n) for j in range(1, d + 1)
                  if (-d * i - j) % n != i)
    assert link_multiset(t) == arcs


def test_generalized_kautz_50_3_has_loops_and_is_strongly_connected():
    t = generalized_kautz_graph(50, 3)
    assert t.meta["dropped_self_loops"] > 0
    assert is_strongly_connected(t)


def test_generalized_kautz_keeps_parallel_arcs_when_degree_reaches_n():
    t = generalized_kautz_graph(3, 4)   # j = 1 and j = 4 give the same target
    multi = link_multiset(t)
    assert len(multi) > len(set(multi))
    assert t.out_degree(multi=True).max() > t.out_degree().max()


@pytest.mark.parametrize("d, k", [(2, 3), (3, 2), (2, 5)])
def test_de_bruijn_arcs_and_dropped_loops(d, k):
    n = d**k
    t = de_bruijn_graph(d, k)
    assert t.meta["dropped_self_loops"] == d          # the constant strings
    expected = sorted((i, (d * i + j) % n) for i in range(n) for j in range(d)
                      if (d * i + j) % n != i)
    assert link_multiset(t) == expected
    assert is_strongly_connected(t)


# ------------------------------------------------------------------ common contract
ALL = [lambda: torus_graph([3, 2, 4]), lambda: torus_graph([2, 3], double_size2=True),
       lambda: mesh_graph([3, 4]), lambda: ring_graph(5), lambda: uniring_graph(5),
       lambda: hypercube_graph(4), lambda: complete_graph(5), lambda: complete_bipartite_graph(3),
       lambda: circulant_graph(12, [1, 5, 6]), lambda: hamming_graph(2, 4),
       lambda: kautz_graph(3, 2), lambda: generalized_kautz_graph(30, 4),
       lambda: generalized_kautz_graph(4, 6), lambda: de_bruijn_graph(3, 2),
       lambda: de_bruijn_graph(2, 1)]


@pytest.mark.parametrize("make", ALL)
def test_contract_no_self_loops_name_is_spec_and_meta_has_family(make):
    t = make()
    assert not np.any(t.src == t.dst)
    assert t.meta["family"] == t.name.split(":")[0]
    again = topology(t.name)          # the name is a spec that rebuilds the same topology
    assert link_multiset(again) == link_multiset(t)
    assert again.num_nodes == t.num_nodes


@pytest.mark.parametrize("make", ALL)
def test_links_are_sorted_by_source(make):
    t = make()
    assert np.all(np.diff(t.src) >= 0)


def test_bandwidth_and_latency_apply_to_every_link():
    t = torus_graph([3, 3], bandwidth=2e9, latency=5e-6)
    assert np.all(t.bandwidth == 2e9) and np.all(t.latency == 5e-6)
    u = kautz_graph(2, 2, bandwidth="100Gbps", latency="3us")
    assert np.all(u.bandwidth == 12.5e9) and np.allclose(u.latency, 3e-6)
    default = ring_graph(4)
    assert np.all(default.bandwidth == 12.5e9) and np.all(default.latency == 1e-5)


@pytest.mark.parametrize("call, message", [
    (lambda: torus_graph([0, 4]), r"torus dimensions must be >= 1, got 0"),
    (lambda: torus_graph([1, 1]), r"at least 2 nodes in total, got 1"),
    (lambda: torus_graph([]), r"must not be empty"),
    (lambda: mesh_graph([3, -2]), r"mesh dimensions must be >= 1, got -2"),
    (lambda: ring_graph(1), r"ring needs n >= 2, got 1"),
    (lambda: uniring_graph(0), r"uniring needs n >= 2, got 0"),
    (lambda: hypercube_graph(0), r"hypercube needs dimension k >= 1, got 0"),
    (lambda: complete_graph(1), r"complete needs n >= 2, got 1"),
    (lambda: complete_bipartite_graph(0), r"bipartite needs n >= 1 nodes per side, got 0"),
    (lambda: circulant_graph(1, [1]), r"circulant needs n >= 2, got 1"),
    (lambda: hamming_graph(0, 3), r"hamming needs word length d >= 1, got 0"),
    (lambda: hamming_graph(2, 1), r"hamming needs alphabet size q >= 2, got 1"),
    (lambda: kautz_graph(1, 3), r"kautz needs degree d >= 2, got 1"),
    (lambda: kautz_graph(2, 0), r"kautz needs string length k >= 1, got 0"),
    (lambda: generalized_kautz_graph(1, 2), r"genkautz needs n >= 2 nodes, got 1"),
    (lambda: generalized_kautz_graph(5, 0), r"genkautz needs degree d >= 1, got 0"),
    (lambda: de_bruijn_graph(1, 4), r"debruijn needs alphabet size d >= 2, got 1"),
    (lambda: de_bruijn_graph(2, 0), r"debruijn needs string length k >= 1, got 0"),
    (lambda: hypercube_graph(40), r"hypercube:40 would have 1099511627776 nodes"),
    (lambda: complete_graph(10**5), r"would have 9999900000 links"),
])
def test_out_of_range_parameters_raise_spec_error_naming_the_rule(call, message):
    with pytest.raises(SpecError, match=message):
        call()


@pytest.mark.parametrize("call", [lambda: ring_graph(4.0), lambda: ring_graph("4"),
                                  lambda: torus_graph([2.5, 3]), lambda: torus_graph("4x4"),
                                  lambda: hypercube_graph(True), lambda: circulant_graph(8, None)])
def test_wrong_argument_types_raise_input_type_error(call):
    with pytest.raises(InputTypeError):
        call()


def test_numpy_integers_are_accepted():
    assert torus_graph(np.array([3, 4])).name == "torus:3x4"
    assert ring_graph(np.int64(5)).num_nodes == 5


def test_ten_thousand_nodes():
    """Large members build (vectorised generators; their speed is measured by
    benchmarks/construction.py, not here) with the sizes and degrees their formulas give."""
    cases = [(torus_graph([100, 100]), 10_000, 4), (mesh_graph([100, 100]), 10_000, 4),
             (ring_graph(10_000), 10_000, 2), (hypercube_graph(13), 8192, 13),
             (circulant_graph(10_000, [1, 7, 99]), 10_000, 6), (hamming_graph(4, 10), 10_000, 36),
             (kautz_graph(3, 8), 4 * 3**7, 3), (generalized_kautz_graph(10_000, 4), 10_000, 4),
             (de_bruijn_graph(2, 13), 2**13, 2), (complete_graph(2000), 2000, 1999),
             (complete_bipartite_graph(2000), 4000, 2000)]
    for topo, nodes, degree in cases:
        assert topo.num_nodes == nodes, topo.name
        assert int(topo.out_degree(multi=True).max()) == degree, topo.name


@pytest.mark.parametrize("n, d", [(5, 9), (3, 4), (2, 6), (4, 5), (5, 5), (6, 3)])
def test_generalized_kautz_with_repeated_arcs_says_how_its_two_degrees_differ(n, d):
    t = generalized_kautz_graph(n, d)
    links = t.out_degree(multi=True)
    neighbours = t.out_degree()
    assert (t.meta["out_degree_min"], t.meta["out_degree_max"]) == (links.min(), links.max())
    assert neighbours.max() <= n - 1
    repeats = t.num_links - len(set(zip(t.src.tolist(), t.dst.tolist())))
    assert t.meta.get("parallel_links", 0) == repeats
    assert (repeats > 0) == (d > n)
