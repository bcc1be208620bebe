"""Every lower bound that `evaluate` prints is a theorem (docs/math.md section 1): on random
irregular digraphs with random link speeds, for every collective, it stays below the step-model
``T_B`` and the link-model time of every schedule topocoll generates, below the exact optima
where a solver exists, and each of its cut, partition and hop families holds exhaustively (every
node set, every partition) against those schedules."""

from itertools import product

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import maximum_flow

import topocoll as tc
from topocoll.collectives import COLLECTIVES, COPY, REDUCE
from topocoll.errors import UnsupportedError
from topocoll.schedule import Schedule, transfer_array
from topocoll.schedule.bounds import (bandwidth_bound_terms, bandwidth_lower_bound,
                                      degree_lower_bound, moore_steps_lower_bound,
                                      steps_lower_bound)
from topocoll.schedule.linkmodel import simulate
from topocoll.synth import generate
from topocoll.synth.packing.bound import tree_packing_bound
from topocoll.throughput import throughput
from topocoll.topology import Topology, topology
from topocoll.topology.metrics import distance_matrix

from ..helpers import strongly_connected_digraphs

M = 1e6
TOL = 1e-9
ALGORITHMS = ("bfb", "trees", "ten", "lp")


# ------------------------------------------------------------------ independent references
def _demand(coll, n, members, root):
    """Bytes per byte of M that must enter the node set ``members`` (a boolean row per set),
    counted from the collective's pre- and postconditions alone: a shard that some member must
    end with, and that no member holds at the start (copies) or that has a contributor outside
    the set (reductions)."""
    c = COLLECTIVES[coll]
    shards = c.num_shards(n)
    target = c.end_target(n, root)
    if target is None:                               # every node, so some member, needs it
        needs = np.ones((members.shape[0], shards), dtype=bool)
    else:
        needs = members[:, target]
    if c.combining:                                  # every node contributes: S is proper
        held = np.zeros_like(needs)
    else:
        held = members[:, c.start_owner(n, root)]
    return (needs & ~held).sum(axis=1) * c.shard_fraction(n)


def _all_sets(n):
    codes = np.arange(1, 2**n - 1)
    return (codes[:, None] >> np.arange(n)) & 1 == 1


def exhaustive_cut_bound(t, coll, root):
    """max over every nonempty proper S of demand(S) / bandwidth into S (per byte of M)."""
    members = _all_sets(t.num_nodes)
    into = (members[:, t.dst] & ~members[:, t.src]) @ t.bandwidth
    need = _demand(coll, t.num_nodes, members, root)
    assert np.all(into[need > 0] > 0)
    return float((need / np.where(into > 0, into, 1.0)).max())


def _partitions(items):
    if not items:
        yield []
        return
    first, rest = items[0], items[1:]
    for p in _partitions(rest):
        for i in range(len(p)):
            yield p[:i] + [[first] + p[i]] + p[i + 1:]
        yield [[first]] + p


def exhaustive_partition_bound(t):
    """Allreduce: max over every partition into k >= 2 parts of 2(k-1) / bandwidth between
    parts (per byte of M)."""
    best = 0.0
    for parts in _partitions(list(range(t.num_nodes))):
        if len(parts) < 2:
            continue
        label = np.empty(t.num_nodes, dtype=np.int64)
        for i, p in enumerate(parts):
            label[p] = i
        between = t.bandwidth[label[t.src] != label[t.dst]].sum()
        best = max(best, 2 * (len(parts) - 1) / between)
    return best


def hop_bound(t, coll, root):
    """Hops every byte must make, over the total capacity (per byte of M)."""
    d = distance_matrix(t).astype(float)
    n = t.num_nodes
    hops = {"scatter": d[root].sum() / n, "gather": d[:, root].sum() / n,
            "alltoall": d.sum() / n}.get(coll, 0.0)
    return hops / t.bandwidth.sum()


def _schedules(t, coll, root):
    out = []
    for algorithm in ALGORITHMS:
        try:
            out.append(generate(t, coll, algorithm, root=root))
        except UnsupportedError:
            continue
    assert out, f"no generator made {coll}"
    return out


def _times(schedule):
    """Step-model T_B and link-model time at size M, the schedule verified first."""
    e = tc.evaluate(schedule, M)
    return e, simulate(schedule, M).time


@st.composite
def cases(draw, max_nodes=7):
    t = draw(strongly_connected_digraphs(max_nodes=max_nodes))
    coll = draw(st.sampled_from(sorted(COLLECTIVES)))
    root = draw(st.integers(0, t.num_nodes - 1)) if COLLECTIVES[coll].rooted else None
    return t, coll, root


# ------------------------------------------------------------------ the bounds are theorems
@given(cases())
@settings(max_examples=60)
def test_bounds_hold_for_every_generated_schedule(case):
    t, coll, root = case
    bound = bandwidth_lower_bound(COLLECTIVES[coll], t, root)
    steps = steps_lower_bound(COLLECTIVES[coll], t, root)
    moore = moore_steps_lower_bound(COLLECTIVES[coll], t)
    assert bound > 0 and steps >= 1 and 1 <= moore <= steps
    # the topology-agnostic bound of this N, largest out-degree and largest egress
    agnostic_steps, agnostic = degree_lower_bound(coll, t.num_nodes, int(t.out_degree().max()),
                                                  t.egress_bandwidth().max())
    assert 1 <= agnostic_steps <= steps
    for s in _schedules(t, coll, root):
        e, link_time = _times(s)
        assert agnostic * M <= min(e.T_B, link_time) * (1 + TOL), (s.algorithm, agnostic)
        assert e.bw_lower_bound == pytest.approx(bound * M, rel=1e-12)
        assert e.bw_lower_bound <= e.T_B * (1 + TOL), (s.algorithm, e.bw_lower_bound, e.T_B)
        assert e.bw_lower_bound <= link_time * (1 + TOL), (s.algorithm, link_time)
        assert e.steps_lower_bound == steps <= e.steps
        assert e.moore_steps == moore <= e.steps


@given(cases(max_nodes=6))
@settings(max_examples=40)
def test_every_cut_partition_and_hop_bound_holds(case):
    """The theorems themselves, over every node set (and every partition for allreduce), not
    only the few sets the library tries; the library's terms are real instances of them."""
    t, coll, root = case
    terms = bandwidth_bound_terms(coll, t, root)
    cut = exhaustive_cut_bound(t, coll, root)
    assert max(terms["node"], terms["cut"]) <= cut * (1 + TOL)
    families = [cut, hop_bound(t, coll, root)]
    assert terms["hops"] == pytest.approx(families[1], rel=1e-12)
    if coll == "allreduce":
        families.append(exhaustive_partition_bound(t))
        assert terms["partition"] <= families[2] * (1 + TOL)
    for s in _schedules(t, coll, root):
        e, link_time = _times(s)
        for value in families:
            assert value * M <= e.T_B * (1 + TOL), (s.algorithm, families, e.T_B)
            assert value * M <= link_time * (1 + TOL), (s.algorithm, families, link_time)


def _integer(t):
    """The topology's pair capacities as integers (the random speeds are multiples of 1/2)."""
    psrc, pdst, pbw, _ = t.pairs
    cap = np.rint(2 * pbw).astype(np.int32)
    assert np.allclose(cap, 2 * pbw)
    return csr_matrix((cap, (psrc, pdst)), shape=(t.num_nodes, t.num_nodes)), 2.0


@given(strongly_connected_digraphs(max_nodes=8), st.data())
@settings(max_examples=40)
def test_bounds_below_the_exact_optima(t, data):
    """Exact optima that need no schedule: allgather and reduce-scatter by spanning-tree packing
    (Edmonds), broadcast and reduce by the smallest root cut (Edmonds), alltoall by the
    multicommodity-flow LP. The cut family over every set meets the first two exactly."""
    n = t.num_nodes
    for coll in ("allgather", "reduce_scatter"):
        optimum = float(tree_packing_bound(t, coll).factor)
        assert bandwidth_lower_bound(COLLECTIVES[coll], t) <= optimum * (1 + TOL)
        assert exhaustive_cut_bound(t, coll, None) == pytest.approx(optimum, rel=1e-9)
    root = data.draw(st.integers(0, n - 1))
    for coll, graph in (("broadcast", t), ("reduce", t.transpose())):
        cap, scale = _integer(graph)
        flow = min(maximum_flow(cap, root, v).flow_value for v in range(n) if v != root)
        optimum = scale / flow                       # M / smallest root cut, per byte of M
        assert bandwidth_lower_bound(COLLECTIVES[coll], t, root) <= optimum * (1 + TOL)
        assert exhaustive_cut_bound(t, coll, root) == pytest.approx(optimum, rel=1e-9)
    lam = throughput(t).lam                          # bytes/s every pair sustains at once
    assert bandwidth_lower_bound(COLLECTIVES["alltoall"], t) <= (1 / n) / lam * (1 + 1e-6)


@given(strongly_connected_digraphs(max_nodes=4), st.sampled_from(sorted(COLLECTIVES)),
       st.data())
@settings(max_examples=8)
def test_bounds_below_the_ten_ilp_optimum(t, coll, data):
    root = data.draw(st.integers(0, t.num_nodes - 1)) if COLLECTIVES[coll].rooted else None
    s = generate(t, coll, "ten", method="ilp", root=root, node_limit=2000)
    e, link_time = _times(s)
    assert e.bw_lower_bound <= min(e.T_B, link_time) * (1 + TOL)


# ------------------------------------------------------------------ the reported cases
@pytest.mark.parametrize("n, link_time", [(16, 0.0620), (31, 0.0558)])
def test_dbt_allreduce_bound_is_below_its_link_model_time(tmp_path, n, link_time):
    """dbt:N allreduce with the dbt algorithm at 1 GiB: the old bound (2 (N-1)/N M over the
    smallest ingress, 0.0805 s and 0.0831 s) exceeded the link-model time of this very schedule."""
    s = generate(f"dbt:{n}", "allreduce", "dbt")
    size = 2**30
    e = tc.evaluate(s, size)
    r = simulate(s, size, alpha_per="transfer")   # the times as reported: alpha per transfer
    assert r.time == pytest.approx(link_time, abs=5e-5)
    assert e.bw_lower_bound <= r.time and e.bw_lower_bound <= e.T_B
    # dbt:N at 100 Gbps per link: the smallest ingress is two links, 25 GB/s; on dbt:16 the
    # partition bound (30 M over 60 links) is the same 1/(25 GB/s)
    t = s.topology
    assert t.ingress_bandwidth().min() == 2 * 12.5e9
    assert e.bw_lower_bound == pytest.approx(size / 25e9, rel=1e-12)
    assert e.steps <= 2 * e.diameter and e.steps_lower_bound == e.diameter <= e.steps


def test_complete_digraph_allreduces_in_one_step():
    """Why the step bound of allreduce is the diameter, not twice it: every node reduces its
    whole buffer into every other node at once."""
    t = topology("complete:4", bandwidth=1.0, latency=1.0)
    pairs = [(u, v) for u, v in product(range(4), repeat=2) if u != v]
    rows = transfer_array(step=1, src=[u for u, v in pairs for _ in range(4)],
                          dst=[v for u, v in pairs for _ in range(4)],
                          shard=[k for _ in pairs for k in range(4)], lo=0.0, hi=1.0, op=REDUCE)
    s = Schedule(t, "allreduce", rows)
    assert tc.verify(s).valid
    e = tc.evaluate(s, 4.0)
    assert e.steps == 1 and e.steps_lower_bound == 1 and e.moore_steps == 1
    assert e.diameter_optimal and e.moore_optimal
    assert degree_lower_bound("allreduce", 4, 3, 3.0) == (1, pytest.approx(2 * 3 / 4 / 3))
    assert e.T_B == pytest.approx(4.0) and e.bw_lower_bound <= e.T_B


@pytest.mark.parametrize("spec, coll, factor", [
    ("torus:4x4", "allgather", 15 / 16 / 4), ("torus:4x4", "allreduce", 2 * 15 / 16 / 4),
    ("ring:8", "allreduce", 2 * 7 / 8 / 2), ("hypercube:3", "reduce_scatter", 7 / 8 / 3)])
def test_regular_networks_keep_the_classical_bound(spec, coll, factor):
    """On a network whose nodes all have bandwidth B: (N-1)/N M/B, twice for allreduce; BFB
    meets it on rings and tori."""
    t = topology(spec, bandwidth=1.0)
    assert bandwidth_lower_bound(COLLECTIVES[coll], t) == pytest.approx(factor, rel=1e-12)
    e = tc.evaluate(generate(t, coll, "bfb"), 1.0)
    assert e.bw_optimal or spec == "hypercube:3"


def test_node_terms_on_an_irregular_star():
    """Allgather's node term is (N-1)/N M over the *smallest* ingress (the largest of the
    per-node bounds); allreduce's is M over it, not 2(N-1)/N M."""
    # a star: centre 0 linked both ways to 1..4 (bandwidth 4 each way), leaves 1 <-> 2 (1)
    src = [0, 0, 0, 0, 1, 2, 3, 4, 1, 2]
    dst = [1, 2, 3, 4, 0, 0, 0, 0, 2, 1]
    t = Topology(5, src, dst, [4.0] * 8 + [1.0, 1.0], 0.0)
    ag = bandwidth_bound_terms("allgather", t)
    assert ag["node"] == pytest.approx((4 / 5) / 4)                  # leaves 3 and 4
    ar = bandwidth_bound_terms("allreduce", t)
    assert ar["node"] == pytest.approx(1 / 4)
    for s in _schedules(t, "allreduce", None):
        e, link_time = _times(s)
        assert e.bw_lower_bound <= min(e.T_B, link_time) * (1 + TOL)


def test_rooted_bounds_use_the_root_side():
    t = Topology(4, [0, 1, 2, 3, 0, 1], [1, 2, 3, 0, 2, 0], [2.0, 1.0, 1.0, 1.0, 1.0, 3.0], 0.0)
    # broadcast from 0: node 3 gets everything through one link of speed 1
    assert bandwidth_lower_bound(COLLECTIVES["broadcast"], t, 0) == pytest.approx(1.0)
    # scatter from 0: hops 1 + 1 + 2 (to 1, 2, 3) of M/4 over capacity 9; node 3 needs M/4
    # through ingress 1, the root sends 3M/4 through egress 3
    terms = bandwidth_bound_terms("scatter", t, 0)
    assert terms["hops"] == pytest.approx(1 / 9) and terms["node"] == pytest.approx(1 / 4)


def test_large_topologies_take_linear_work():
    """16k nodes: the bound needs no all-pairs distances (alltoall falls back to the Moore
    distance sum, below the torus's own distance sum: k^3/2 hops per node, 16 per link)."""
    t = topology("torus:128x128", bandwidth=1.0)
    n = t.num_nodes
    ar = bandwidth_lower_bound(COLLECTIVES["allreduce"], t)
    assert ar == pytest.approx(2 * (n - 1) / n / 4, rel=1e-12)
    a2a = bandwidth_bound_terms("alltoall", t)
    assert a2a["node"] < a2a["hops"] <= 128**3 / 2 / (4 * n)
    assert bandwidth_lower_bound(COLLECTIVES["scatter"], t, 0) > 0


def test_gather_into_a_wide_root_in_one_step():
    """The agnostic bound limits out-degree and egress, not the root's ingress: on a star into
    the root (with a chain back out) every node sends its shard straight to the root in one
    step, so gather's agnostic terms are 1 step and M/N through one node's egress."""
    n = 5
    src = [1, 2, 3, 4, 0, 1, 2, 3]
    dst = [0, 0, 0, 0, 1, 2, 3, 4]
    t = Topology(n, src, dst, 1.0, 0.0)
    rows = transfer_array(step=1, src=[1, 2, 3, 4], dst=0, shard=[1, 2, 3, 4], lo=0.0, hi=1.0,
                          op=COPY)
    s = Schedule(t, "gather", rows, root=0)
    e, link_time = _times(s)
    assert e.steps == 1 and e.T_B == pytest.approx(M / n) and link_time == pytest.approx(M / n)
    steps, per_byte = degree_lower_bound("gather", n, int(t.out_degree().max()),
                                         t.egress_bandwidth().max())
    assert steps == 1 and per_byte * M <= e.T_B * (1 + TOL)
    assert e.bw_lower_bound == pytest.approx(M / n) and e.bw_optimal     # the root's ingress
