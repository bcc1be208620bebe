"""BFB: validity on random digraphs, steps = diameter, bandwidth optimality on the families where
Zhao et al. (NSDI 2025) prove it, and per-step optimality against an independent Hall-bound
oracle."""

import itertools
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings

import topocoll as tc
from topocoll.errors import NotStronglyConnectedError, UnsupportedError
from topocoll.schedule import step_costs, verify
from topocoll.synth import bfb_allgather, bfb_allreduce, bfb_reduce_scatter
from topocoll.synth.bfb_rounding import bipartite_flow, round_to_bottleneck
from topocoll.topology import Topology, diameter, distance_matrix, topology

from tests.helpers import strongly_connected_digraphs

M = 2.0**20


def node_bandwidth(t):
    egress = t.egress_bandwidth()
    assert np.allclose(egress, egress[0])
    return egress[0]


# --------------------------------------------------------------------------- bandwidth optimality
OPTIMAL = [
    "torus:3x4", "torus:5x4", "torus:3x5", "torus:4x6", "torus:3x4x5", "torus:2x3x4",
    "hypercube:2", "hypercube:3", "hypercube:5",
    "ring:5", "ring:6", "ring:7", "ring:8", "ring:11",
    "circulant:13:2,3", "circulant:16:1,2", "circulant:25:3,4", "circulant:12:2,3",
    "complete:5", "complete:8",
    "bipartite:3", "bipartite:5",
]


@pytest.mark.parametrize("spec", OPTIMAL)
def test_bandwidth_optimal_families(spec):
    t = topology(spec)
    n = t.num_nodes
    b = node_bandwidth(t)
    bound = (n - 1) / n * M / b
    d = diameter(t)
    for make, factor, steps in ((bfb_allgather, 1, d), (bfb_reduce_scatter, 1, d),
                                (bfb_allreduce, 2, 2 * d)):
        s = make(t)
        assert verify(s).valid
        e = tc.evaluate(s, M, check=False)
        assert e.steps == steps
        assert e.T_B == pytest.approx(factor * bound, rel=1e-9, abs=0)
        assert e.bw_optimal


@pytest.mark.parametrize("n", [5, 6, 9, 10])
def test_bidirectional_ring_needs_half_the_steps(n):
    s = bfb_allgather(topology(f"ring:{n}"))
    assert s.num_steps == (n - 1 + 1) // 2 == diameter(topology(f"ring:{n}"))


@pytest.mark.parametrize("spec", ["kautz:2,2", "kautz:2,3", "kautz:3,2", "genkautz:20,3",
                                  "genkautz:40,4"])
def test_kautz_is_valid_but_not_bandwidth_optimal(spec):
    t = topology(spec)
    for make in (bfb_allgather, bfb_reduce_scatter, bfb_allreduce):
        s = make(t)
        assert verify(s).valid
        e = tc.evaluate(s, M, check=False)
        assert e.bw_ratio > 1 + 1e-6
        assert not e.bw_optimal


def test_kautz_is_moore_optimal():
    s = bfb_allgather(topology("kautz:2,3"))
    e = tc.evaluate(s, M)
    assert e.steps == 3 == e.moore_steps and e.moore_optimal and e.diameter_optimal


# --------------------------------------------------------------------------- random digraphs
@given(strongly_connected_digraphs())
@settings(max_examples=40)
def test_bfb_valid_on_random_digraphs(t):
    d = diameter(t)
    ag = bfb_allgather(t)
    assert verify(ag).valid
    assert ag.num_steps == d
    rs = bfb_reduce_scatter(t)
    assert verify(rs).valid
    assert rs.num_steps == d
    ar = bfb_allreduce(t)
    assert verify(ar).valid
    assert ar.num_steps == 2 * d
    e = tc.evaluate(ag, M, check=False)
    assert e.T_B >= e.bw_lower_bound * (1 - 1e-9)


def hall_oracle(t):
    """Optimal BFB T_B per byte, computed independently of the generator: for every (v, t) the
    optimum of the load-balancing problem is max over sender subsets Y of
    (#sources that can only use senders in Y) / (bandwidth of Y -> v), by enumeration."""
    n = t.num_nodes
    dist = distance_matrix(t)
    psrc, pdst, pbw, _ = t.pairs
    bw = {(int(a), int(b)): float(c) for a, b, c in zip(psrc, pdst, pbw)}
    total = 0.0
    for step in range(1, int(dist.max()) + 1):
        worst = 0.0
        for v in range(n):
            sources = [u for u in range(n) if dist[u, v] == step]
            if not sources:
                continue
            senders = sorted(w for w in range(n) if (w, v) in bw)
            options = {u: {w for w in senders if dist[u, w] == step - 1} for u in sources}
            best = 0.0
            for r in range(1, len(senders) + 1):
                for ys in itertools.combinations(senders, r):
                    y = set(ys)
                    count = sum(1 for u in sources if options[u] <= y)
                    best = max(best, count / sum(bw[(w, v)] for w in y))
            worst = max(worst, best)
        total += worst
    return total / n


@given(strongly_connected_digraphs(max_nodes=7))
@settings(max_examples=30)
def test_bfb_allgather_matches_the_optimum_of_every_step(t):
    s = bfb_allgather(t)
    _, _, beta = step_costs(s)
    assert beta.sum() == pytest.approx(hall_oracle(t), rel=1e-9)


# --------------------------------------------------------------------------- heterogeneous, errors
def test_heterogeneous_links_weight_the_loads():
    # ring:4 where 0 <-> 1 links are 3x faster: node 1 should take more of shard 3 via 0
    t = topology("ring:4")
    fast = ((t.src == 0) & (t.dst == 1)) | ((t.src == 1) & (t.dst == 0))
    het = t.with_links(bandwidth=np.where(fast, 3.0, 1.0))
    s = bfb_allgather(het)
    assert verify(s).valid
    assert step_costs(s)[2].sum() == pytest.approx(hall_oracle(het), rel=1e-9)


def test_not_strongly_connected_names_a_pair():
    t = Topology(3, [0, 1], [1, 2], name="path")
    with pytest.raises(NotStronglyConnectedError, match="cannot be reached") as info:
        bfb_allgather(t)
    u, v = info.value.pair
    assert distance_matrix(t)[u, v] == -1


def test_generate_rejects_unsupported_collective():
    with pytest.raises(UnsupportedError, match="bfb makes"):
        tc.generate("ring:4", "scatter", "bfb")


def test_self_loops_never_enter_a_schedule():
    t = topology("genkautz:50,3")
    assert t.meta.get("dropped_self_loops", 0) > 0
    s = bfb_allreduce(t)
    assert not np.any(s.transfers["src"] == s.transfers["dst"])
    assert verify(s).valid


@pytest.mark.parametrize("root", [0, 3])
def test_broadcast_and_reduce(root):
    t = topology("torus:3x4")
    for c in ("broadcast", "reduce"):
        s = tc.generate(t, c, "bfb", root=root)
        assert s.root == root
        assert verify(s).valid
        assert s.num_steps == tc.schedule.steps_lower_bound(s.collective, t, root)


# --------------------------------------------------------------------------- HiGHS, whole shards
def test_whole_shards_within_the_bottleneck():
    # unit 1 has only link 0 (a whole shard), unit 0 splits over links 0 and 1: link 0 already
    # carries the bottleneck (1.5 fractional -> at most 1 whole), so unit 0 must take link 1
    unit, link = np.array([0, 0, 1]), np.array([10, 11, 10])
    share = np.array([0.5, 0.5, 1.0])
    got = round_to_bottleneck(unit, link, share, step=np.ones(3, int), bandwidth=np.ones(3))
    assert got.tolist() == [0, 1, 1]


def test_whole_shards_that_do_not_fit_are_left_short():
    # three units split over two links: 1.5 shards each fractionally, at most 1 whole each
    unit, link = np.repeat([0, 1, 2], 2), np.tile([10, 11], 3)
    got = round_to_bottleneck(unit, link, np.full(6, 0.5), step=np.ones(6, int),
                              bandwidth=np.ones(6))
    assert sorted(np.bincount(unit, weights=got).tolist()) == [0, 1, 1]
    assert np.bincount(link - 10, weights=got).max() == 1


def test_bfb_is_the_same_whatever_highs_ran_before():
    from topocoll.highs import solver

    t = topology("mesh:3x3")
    before = bfb_allreduce(t)
    solver(threads=2)     # HiGHS' global scheduler restarted with another thread count
    after = bfb_allreduce(t)
    assert np.array_equal(before.transfers, after.transfers)


def test_bfb_without_chunks_loads_no_scipy():
    """The load-balancing LPs and the whole-shard flow go to highspy directly: a BFB schedule
    (which verifies itself in ``schedule``) pays no scipy import."""
    code = ("import sys\nfrom topocoll.synth import generate\nfrom topocoll.schedule import "
            "verify\ns = generate('torus:8x8', 'allreduce', 'bfb')\nassert verify(s).valid\n"
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'scipy'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, timeout=120)
    assert out.stdout.strip() == "[]"


@pytest.mark.parametrize("seed", range(4))
def test_both_flow_methods_find_a_maximum_flow(seed):
    """HiGHS (small flows) and scipy's Dinic (large ones) may pick different flows, never
    different values, and both keep every capacity."""
    rng = np.random.default_rng(seed)
    num_left, num_right = 30, 12
    pairs = np.unique(np.c_[rng.integers(0, num_left, 150), rng.integers(0, num_right, 150)],
                      axis=0)
    left, right = pairs[:, 0], num_left + pairs[:, 1]
    keep = np.isin(np.arange(num_left), left)       # every left node has an edge
    left = np.searchsorted(np.flatnonzero(keep), left)
    right = right - num_left + keep.sum()
    capacity = rng.integers(0, 4, keep.sum() + num_right)
    flows = [bipartite_flow(left, right, capacity, method=m) for m in ("lp", "dinic")]
    assert flows[0].sum() == flows[1].sum() > 0
    for f in flows:
        assert set(np.unique(f)) <= {0, 1}
        node_flow = np.bincount(left, weights=f, minlength=capacity.size) + np.bincount(
            right, weights=f, minlength=capacity.size)
        assert np.all(node_flow <= capacity)
