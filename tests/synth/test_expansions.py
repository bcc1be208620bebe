"""Expansions (docs/math.md section 4): topology transforms, the expanded schedules of every kind
and collective verified by the model checker, their evaluated costs against the predictions,
repeated expansions, bandwidth optimality where it is promised, mutations and bad input."""

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings

import topocoll as tc
from topocoll.errors import InputTypeError, TopocollError, TopologyError, UnsupportedError
from topocoll.schedule.model import Schedule
from topocoll.synth.bfb import bfb_allgather, bfb_allreduce, bfb_broadcast, bfb_reduce_scatter
from topocoll.synth.expansions import (bidirectional_expansion, cartesian_power_expansion,
                                       degree_expansion_schedule, expand_schedule, expanded_size,
                                       line_graph_expansion, measure, predict, product_schedule,
                                       reverse_isomorphism)
from topocoll.topology import topology
from topocoll.topology.symmetry import translation_group
from topocoll.topology.transforms import (bidirectional_union, cartesian_power,
                                          cartesian_product, degree_expansion, line_graph)

from tests.helpers import strongly_connected_digraphs

M = 2.0**20
TOL = 1e-9
BASES = ["complete:4", "bipartite:3", "kautz:2,2", "ring:5", "circulant:7:1,2", "hypercube:3"]
COLLECTIVES = ["allgather", "reduce_scatter", "allreduce"]
KINDS = {
    "line": (line_graph_expansion, {}),
    "degree": (degree_expansion_schedule, {"m": 2}),
    "power": (cartesian_power_expansion, {"n": 2}),
}
_BASE_CACHE = {}


def base(spec):
    if spec not in _BASE_CACHE:
        _BASE_CACHE[spec] = bfb_allgather(topology(spec))
    return _BASE_CACHE[spec]


def pairs(t):
    s, d, _, _ = t.pairs
    return set(zip(s.tolist(), d.tolist()))


def costs(schedule):
    """(steps, T_B in units of M/B) from the evaluator (which verifies first)."""
    e = tc.evaluate(schedule, M)
    return e.steps, e.T_B * schedule.topology.egress_bandwidth().min() / M


def base_prediction(kind, schedule, collective, **params):
    """The table's prediction from the base allgather(s), independently of the module's meta."""
    g = schedule.topology
    n = g.num_nodes
    ag = schedule
    ag_t = bfb_allgather(g.transpose())
    p_ag = predict(kind, *measure(ag), n, **params)
    p_rs = predict(kind, *measure(ag_t), n, **params)
    if collective == "allgather":
        return p_ag
    if collective == "reduce_scatter":
        return p_rs
    return p_ag[0] + p_rs[0], p_ag[1] + p_rs[1]


# --------------------------------------------------------------------------- topology transforms
@pytest.mark.parametrize("spec", BASES + ["uniring:4"])
def test_line_graph_structure(spec):
    g = topology(spec)
    lg = line_graph(g)
    assert lg.name == f"line({spec})" and lg.meta["construction"] == "line_graph"
    assert lg.num_nodes == g.num_links
    d = int(g.out_degree().max())
    assert set(lg.out_degree().tolist()) == {d} and set(lg.in_degree().tolist()) == {d}
    expected = {(e, f) for e in range(g.num_links) for f in range(g.num_links)
                if g.dst[e] == g.src[f]}
    assert pairs(lg) == expected and lg.num_links == len(expected)
    assert not np.any(lg.src == lg.dst)
    # each link carries the bandwidth of its second link
    assert np.array_equal(lg.bandwidth, g.bandwidth[lg.dst])


def test_line_graph_of_kautz_is_the_next_kautz_and_parallel_links_stay_apart():
    lg = line_graph(topology("kautz:2,2"))
    k3 = topology("kautz:2,3")
    assert nx.is_isomorphic(nx.DiGraph(lg.to_networkx()), nx.DiGraph(k3.to_networkx()))
    multi = tc.Topology(2, [0, 0, 1], [1, 1, 0], name="double")
    lm = line_graph(multi)
    assert lm.num_nodes == 3 and pairs(lm) == {(0, 2), (1, 2), (2, 0), (2, 1)}


@pytest.mark.parametrize("spec,m", [("complete:4", 2), ("kautz:2,2", 3), ("ring:5", 1)])
def test_degree_expansion_structure(spec, m):
    g = topology(spec)
    dg = degree_expansion(g, m)
    d = int(g.out_degree().max())
    assert dg.name == f"degree({spec},m={m})" and dg.meta["m"] == m
    assert dg.num_nodes == m * g.num_nodes and dg.num_links == m * m * g.num_links
    assert set(dg.out_degree().tolist()) == {m * d} and set(dg.in_degree().tolist()) == {m * d}
    expected = {(u * m + i, w * m + j) for u, w in pairs(g) for i in range(m) for j in range(m)}
    assert pairs(dg) == expected


def test_products_and_powers():
    p = cartesian_product(topology("ring:4"), topology("ring:5"))
    assert p.name == "product(ring:4,ring:5)" and p.meta["factor_sizes"] == [4, 5]
    assert pairs(p) == pairs(topology("torus:4x5"))
    assert translation_group(p).dims == (4, 5)       # Cayley factors: a Cayley product
    assert pairs(cartesian_power(topology("complete:2"), 3)) == pairs(topology("hypercube:3"))
    q = cartesian_power(topology("complete:3"), 2)
    assert q.name == "power(complete:3,n=2)" and q.meta["factor_sizes"] == [3, 3]
    assert q.num_nodes == 9 and set(q.out_degree().tolist()) == {4}
    k = cartesian_power(topology("kautz:2,2"), 2)
    assert k.num_nodes == 36 and set(k.out_degree().tolist()) == {4}
    assert pairs(cartesian_product([topology("kautz:2,2")] * 2)) == pairs(k)


def test_bidirectional_union():
    g = topology("kautz:2,2")
    b = bidirectional_union(g)
    assert b.name == "bidir(kautz:2,2)" and b.is_bidirectional()
    assert b.num_nodes == 6 and b.num_links == 2 * g.num_links
    assert set(b.out_degree(multi=True).tolist()) == {4}


# --------------------------------------------------------------------------- the expansions
@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("spec", BASES)
def test_expansions_verify_and_meet_predictions(spec, kind):
    make, params = KINDS[kind]
    a = base(spec)
    g = a.topology
    n, d = g.num_nodes, int(g.out_degree().max())
    size, degree = expanded_size(kind, n, d, **params)
    for collective in COLLECTIVES:
        x = make(a, collective=collective, **params)
        assert x.collective.name == collective
        report = tc.verify(x)
        assert report.valid, (spec, kind, collective, report.summary())
        assert x.num_nodes == size and set(x.topology.out_degree().tolist()) == {degree}
        steps, t_b = costs(x)
        assert (steps, t_b) == pytest.approx(measure(x), rel=1e-12)
        predicted = x.meta["predicted"]
        assert (predicted["steps"], predicted["t_b"]) == pytest.approx(
            base_prediction(kind, a, collective, **params), rel=1e-12)
        assert steps <= predicted["steps"] and t_b <= predicted["t_b"] + TOL
        if kind != "line":       # exact for degree and power; the line graph's is a bound
            assert steps == predicted["steps"] and t_b == pytest.approx(predicted["t_b"])


@pytest.mark.parametrize("kind", list(KINDS))
def test_reduce_scatter_input(kind):
    """A reduce-scatter in gives every collective out, on a non-symmetric base too."""
    make, params = KINDS[kind]
    for spec in ("kautz:2,2", "ring:5"):
        rs = bfb_reduce_scatter(topology(spec))
        for collective in COLLECTIVES:
            x = make(rs, collective=collective, **params)
            assert tc.verify(x).valid, (spec, kind, collective)
            assert x.meta["expansion"]["base_collective"] == "reduce_scatter"


def test_line_graph_tb_is_t_b_plus_one_over_n_on_optimal_bases():
    """BW-optimal base: T_B = (N-1)/N + 1/N = 1 in units of M/B, steps + 1."""
    for spec in ("complete:4", "bipartite:3", "hypercube:3", "circulant:7:1,2"):
        a = base(spec)
        steps, t_b = measure(a)
        assert costs(line_graph_expansion(a)) == pytest.approx((steps + 1, 1.0))


def test_repeated_line_graphs():
    for spec in ("complete:3", "kautz:2,2"):
        x = bfb_allreduce(topology(spec))
        n, d = x.num_nodes, int(x.topology.out_degree().max())
        for level in range(1, 4):
            prev = x
            x = line_graph_expansion(x)
            assert x.collective.name == "allreduce" and x.num_nodes == n * d**level
            assert set(x.topology.out_degree().tolist()) == {d}
            assert tc.verify(x).valid, (spec, level)
            steps, t_b = costs(x)
            p_steps, p_tb = x.meta["predicted"]["steps"], x.meta["predicted"]["t_b"]
            assert steps <= p_steps and t_b <= p_tb + TOL
            assert steps == costs(prev)[0] + 2          # one extra step per phase
        assert x.topology.name == f"line(line(line({spec})))"
        assert x.meta["expansions"] == ["line", "line", "line"]


def test_degree_expansion_of_a_line_graph_and_line_graph_of_a_degree_expansion():
    a = base("kautz:2,2")
    x = degree_expansion_schedule(line_graph_expansion(a), 2, collective="allreduce")
    assert x.topology.name == "degree(line(kautz:2,2),m=2)" and x.num_nodes == 24
    assert tc.verify(x).valid
    steps, t_b = costs(x)
    assert steps <= x.meta["predicted"]["steps"] and t_b <= x.meta["predicted"]["t_b"] + TOL
    y = line_graph_expansion(degree_expansion_schedule(a, 3))
    assert y.num_nodes == 108 and set(y.topology.out_degree().tolist()) == {6}
    assert tc.verify(y).valid
    assert y.meta["expansions"] == ["degree,m=3", "line"]


def test_power_of_a_ring_and_power_of_a_power():
    ring = base("ring:4")
    x = cartesian_power_expansion(ring, 3, collective="allreduce")
    assert x.num_nodes == 64 and set(x.topology.out_degree().tolist()) == {6}
    e = tc.evaluate(x, M)
    assert e.bw_optimal and e.steps == 3 * 2 * ring.num_steps
    y = cartesian_power_expansion(cartesian_power_expansion(ring, 2), 2)
    assert y.num_nodes == 256 and pairs(y.topology) == pairs(cartesian_power(topology("ring:4"),
                                                                             4))
    assert tc.evaluate(y, M).bw_optimal


@pytest.mark.parametrize("spec", ["complete:4", "hypercube:3", "ring:5", "bipartite:3"])
def test_bandwidth_optimality_kept(spec):
    a = base(spec)
    assert tc.evaluate(a, M).bw_optimal
    for x in (degree_expansion_schedule(a, 2), degree_expansion_schedule(a, 3),
              cartesian_power_expansion(a, 2),
              degree_expansion_schedule(a, 2, collective="allreduce"),
              cartesian_power_expansion(a, 2, collective="allreduce")):
        e = tc.evaluate(x, M)
        assert e.bw_optimal, (spec, x.topology.name, e.bw_ratio)


def test_degree_one_is_the_base():
    a = base("kautz:2,2")
    x = degree_expansion_schedule(a, 1)
    assert x.num_nodes == 6 and costs(x) == pytest.approx(measure(a))
    assert x.meta["predicted"]["steps"] == a.num_steps


# --------------------------------------------------------------------------- appendix F
@pytest.mark.parametrize("spec", ["kautz:2,2", "uniring:5", "debruijn:2,3", "ring:5"])
def test_bidirectional_expansion(spec):
    a = base(spec)
    steps, t_b = measure(a)
    for collective in COLLECTIVES:
        x = bidirectional_expansion(a, collective=collective)
        assert x.topology.name == f"bidir({spec})" and x.topology.is_bidirectional()
        assert tc.verify(x).valid, (spec, collective)
        factor = 2 if collective == "allreduce" else 1
        got = costs(x)
        assert got[0] == factor * steps and got[1] == pytest.approx(factor * t_b)
    rs = bidirectional_expansion(bfb_reduce_scatter(topology(spec)), collective="allgather")
    assert tc.verify(rs).valid


def test_reverse_isomorphism_and_given_isomorphism():
    g = topology("kautz:2,2")
    phi = reverse_isomorphism(g)
    gt = g.transpose()
    assert {(int(phi[u]), int(phi[v])) for u, v in pairs(g)} == pairs(gt)
    assert np.array_equal(reverse_isomorphism(topology("ring:6")), np.arange(6))
    x = bidirectional_expansion(base("kautz:2,2"), isomorphism=phi.tolist())
    assert tc.verify(x).valid
    with pytest.raises(TopologyError, match="does not map"):
        bidirectional_expansion(base("kautz:2,2"), isomorphism=list(range(6)))
    with pytest.raises(TopologyError, match="permutation"):
        bidirectional_expansion(base("kautz:2,2"), isomorphism=[0, 0, 1, 2, 3, 4])
    with pytest.raises(UnsupportedError, match="not reverse-symmetric"):
        bidirectional_expansion(bfb_allgather(topology("genkautz:10,2")))
    with pytest.raises(UnsupportedError, match="only up to 4"):
        reverse_isomorphism(g, limit=4)


# --------------------------------------------------------------------------- random multigraphs
@settings(max_examples=8)
@given(strongly_connected_digraphs(max_nodes=5))
def test_random_multigraphs(g):
    """Parallel links, heterogeneous bandwidths: every expansion stays a valid schedule."""
    ar = bfb_allreduce(g)
    for x in (line_graph_expansion(ar), degree_expansion_schedule(ar, 2),
              cartesian_power_expansion(ar, 2),
              line_graph_expansion(line_graph_expansion(ar, collective="allgather"))):
        report = tc.verify(x)
        assert report.valid, (g.name, x.topology.name, report.summary())


# --------------------------------------------------------------------------- mutations
@pytest.mark.parametrize("kind", ["line", "degree", "power", "bidirectional"])
def test_dropping_one_transfer_breaks_the_schedule(kind):
    a = base("kautz:2,2")
    rng = np.random.default_rng(7)
    for collective in ("allgather", "reduce_scatter"):
        x = expand_schedule(kind, a, collective=collective,
                            **({"m": 2} if kind == "degree" else {"n": 2} if kind == "power"
                               else {}))
        assert tc.verify(x).valid
        for i in rng.choice(x.num_transfers, size=3, replace=False):
            broken = x.replace(transfers=np.delete(x.transfers, i))
            assert not tc.verify(broken).valid, (kind, collective, int(i))


# --------------------------------------------------------------------------- API and errors
def test_predict_and_expanded_size():
    assert predict("line", 2, 1.0, 6, 2) == (3, pytest.approx(1 + 1 / 6))
    assert predict("degree", 1, 0.75, 4, 3, m=2) == (2, pytest.approx(0.875))
    assert predict("degree", 1, 0.75, 4, 3, m=1) == (1, 0.75)
    assert predict("cartesian_power", 2, 0.8, 5, 2, n=3) == (6, pytest.approx(124 / 125))
    assert predict("bidirectional", 3, 0.9, 6, 2) == (3, 0.9)
    assert expanded_size("line", 6, 2) == (12, 2)
    assert expanded_size("degree", 4, 3, m=2) == (8, 6)
    assert expanded_size("power", 5, 2, n=3) == (125, 6)
    with pytest.raises(UnsupportedError, match="unknown expansion"):
        predict("twist", 1, 1.0, 4, 2)


def test_expand_schedule_dispatch_and_meta():
    a = base("ring:5")
    x = expand_schedule("degree", a, m=2, collective="allreduce")
    assert x.algorithm == "degree(bfb,m=2)" and x.collective.name == "allreduce"
    assert x.meta["expansion"]["kind"] == "degree" and x.meta["expansion"]["m"] == 2
    assert x.meta["expansion"]["base_topology"] == "ring:5"
    assert set(x.meta["predicted"]) == {"steps", "t_b"}
    p = expand_schedule("product", a, factors=[topology("ring:4")])
    assert p.topology.name == "product(ring:5,ring:4)" and p.collective.name == "allgather"
    assert tc.evaluate(p, M).bw_optimal
    q = product_schedule(["ring:4", "ring:5"], "allreduce")
    assert tc.verify(q).valid and tc.evaluate(q, M).bw_optimal


def test_bad_input_one_line_errors():
    a = base("ring:5")
    loops = nx.DiGraph([(0, 0), (0, 1), (1, 0)])
    cases = [
        (lambda: degree_expansion(loops, 2), TopologyError, "without self-loops"),
        (lambda: degree_expansion(topology("ring:5"), 0), UnsupportedError, "m must be >= 1"),
        (lambda: degree_expansion_schedule(a, 0), UnsupportedError, "m must be >= 1"),
        (lambda: degree_expansion_schedule(a, "2"), InputTypeError, "m must be an integer"),
        (lambda: cartesian_power(topology("ring:5"), 0), UnsupportedError, "n must be >= 1"),
        (lambda: cartesian_power_expansion(a, -1), UnsupportedError, "n must be >= 1"),
        (lambda: line_graph_expansion(bfb_broadcast(topology("ring:5"), 0)), UnsupportedError,
         "not broadcast"),
        (lambda: line_graph_expansion(a, collective="gather"), UnsupportedError, "not gather"),
        (lambda: line_graph(tc.Topology(1, [], [], name="dot")), TopologyError, "no links"),
        (lambda: expand_schedule("spiral", a), UnsupportedError, "unknown expansion"),
        (lambda: line_graph_expansion("ring:5"), InputTypeError, "needs a Schedule"),
        (lambda: line_graph_expansion(bfb_allgather(topology("genkautz:10,2")),
                                      collective="reduce_scatter"),
         UnsupportedError, "not reverse-symmetric"),
    ]
    for call, error, text in cases:
        with pytest.raises(error, match=text) as info:
            call()
        assert isinstance(info.value, TopocollError) and "\n" not in str(info.value)


def test_allreduce_that_is_not_reduce_scatter_then_allgather_is_rejected():
    ar = bfb_allreduce(topology("ring:5"))
    t = ar.transfers.copy()
    t["step"] = 1 + (t["step"] % 2)              # mix the phases
    mixed = Schedule(ar.topology, "allreduce", t)
    with pytest.raises(UnsupportedError, match="reduce-scatter .* followed by an allgather"):
        line_graph_expansion(mixed)


def test_large_expansion_is_consistent():
    """Vectorised paths: L(L(kautz:4,2)) (320 nodes, ~100k transfers) and ring:8^3 (their speed
    is measured by benchmarks/construction.py)."""
    a = bfb_allgather(topology("kautz:4,2"))
    x = line_graph_expansion(line_graph_expansion(a))
    y = cartesian_power_expansion(bfb_allgather(topology("ring:8")), 3)
    assert x.num_nodes == 320 and x.num_transfers > 100_000
    assert y.num_nodes == 512 and y.num_transfers > 800_000
    steps, t_b = measure(x)
    assert steps <= x.meta["predicted"]["steps"] and t_b <= x.meta["predicted"]["t_b"] + TOL
    assert measure(y) == pytest.approx((12, 511 / 512))
    assert tc.verify(x).valid
