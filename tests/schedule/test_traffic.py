"""Step traffic: what a schedule sends per step and pair, priced by the step model as the
schedule itself, and the generators that sum it without holding their rows."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import topocoll as tc
from topocoll.errors import (InputTypeError, NotStronglyConnectedError, ScheduleFormatError,
                             UnsupportedError)
from topocoll.schedule.cost import evaluate, pipelined_step_costs, step_costs
from topocoll.schedule.traffic import RowSink, StepTraffic, TrafficSink, traffic_of
from topocoll.synth import ALGORITHMS, step_traffic
from topocoll.topology import Topology

from ..helpers import strongly_connected_digraphs

SUMMED = [name for name, g in ALGORITHMS.items() if g.summed is not None]


def _same_traffic(a, b):
    assert a.step.tolist() == b.step.tolist()
    assert a.src.tolist() == b.src.tolist()
    assert a.dst.tolist() == b.dst.tolist()
    np.testing.assert_allclose(a.share, b.share, rtol=1e-12, atol=0)
    assert a.routing == b.routing
    assert a.collective.name == b.collective.name


def _same_costs(a, b):
    for x, y in zip(step_costs(a), step_costs(b)):
        np.testing.assert_allclose(x, y, rtol=1e-12, atol=0)


# every generator that sums its rows, against the traffic of the schedule it makes
CASES = [
    (shape, coll, alg, opts)
    for shape in ("ring:2", "ring:3", "ring:6", "ring:8", "ring:13", "uniring:5", "torus:4x4",
                  "torus:8x8", "torus:4x8", "torus:4x4x4", "torus:2x4x6", "mesh:3x5",
                  "mesh:4x4", "hypercube:4", "twistedtorus:4x4x8", "complete:5")
    for alg, colls, variants in (
        ("swing", ("allreduce", "allgather", "reduce_scatter"),
         ({}, {"multiport": True}, {"variant": "latency"})),
        ("bine", ("allreduce", "allgather", "reduce_scatter", "broadcast", "reduce"), ({},)),
        ("rankring", ("allreduce", "allgather", "reduce_scatter"), ({},)),
        ("rd", ("allreduce", "allgather", "reduce_scatter"), ({}, {"variant": "latency"})),
        ("pat", ("allgather", "reduce_scatter"), ({},)),
        ("direct", ("allreduce", "allgather", "reduce_scatter"), ({},)))
    for coll in colls for opts in variants
    if not (opts.get("variant") == "latency" and coll != "allreduce")
]


def test_every_summing_generator_is_covered():
    assert sorted(SUMMED) == ["bine", "direct", "pat", "rankring", "rd", "swing"]
    assert {alg for _, _, alg, _ in CASES} == set(SUMMED)
    assert len(CASES) >= 20 * len(SUMMED)


@pytest.mark.parametrize("shape,coll,alg,opts", CASES,
                         ids=[f"{s}-{c}-{a}-{'-'.join(map(str, o.values()))}"
                              for s, c, a, o in CASES])
def test_summed_traffic_is_the_schedules(shape, coll, alg, opts):
    schedule = tc.generate(shape, coll, alg, form="explicit", **opts)
    assert tc.verify(schedule).valid
    summed = step_traffic(shape, coll, alg, **opts)
    _same_traffic(summed, traffic_of(schedule))
    assert summed.algorithm == schedule.algorithm == alg
    assert summed.num_steps == schedule.num_steps
    _same_costs(summed, schedule)


@pytest.mark.parametrize("shape,coll,alg", [
    ("torus:4x4", "allreduce", "bfb"), ("ring:7", "allgather", "ring"),
    ("torus:4x4", "reduce_scatter", "torusrings"), ("hypercube:3", "allreduce", "rhd"),
    ("complete:6", "broadcast", "bfb"), ("torus:3x3", "alltoall", "lp")])
def test_other_generators_are_summed_from_their_schedule(shape, coll, alg):
    schedule = tc.generate(shape, coll, alg)
    made = step_traffic(shape, coll, alg)
    _same_traffic(made, traffic_of(schedule))
    _same_costs(made, schedule)


def test_traffic_is_priced_as_the_schedule_exactly():
    """Powers of two: every share is exact in binary, so the sums agree to the bit."""
    s = tc.generate("torus:8x8", "allreduce", "swing", variant="bandwidth", multiport=True)
    t = traffic_of(s)
    for x, y in zip(step_costs(t), step_costs(s)):
        assert x.tolist() == y.tolist()
    pipelined = pipelined_step_costs(t, 3), pipelined_step_costs(s, 3)
    for x, y in zip(*pipelined):
        np.testing.assert_allclose(x, y, rtol=1e-12)
    # ... and the price is evaluate's
    e = evaluate(s, "1MiB", alpha="1us", link_bandwidth="1GB/s")
    _, alpha, beta = step_costs(t.replace(
        topology=t.topology.with_links(latency=1e-6, bandwidth=1e9)))
    assert alpha.sum() + beta.sum() * 2 ** 20 == pytest.approx(e.time, rel=1e-12)


def test_symmetric_schedules_are_summed_from_their_representatives():
    explicit = tc.generate("torus:4x4", "allreduce", "bfb", form="explicit")
    symmetric = tc.generate("torus:4x4", "allreduce", "bfb", form="symmetric")
    reps = traffic_of(symmetric)
    assert (reps.dst == 0).all() and reps.size < traffic_of(explicit).size
    _same_costs(reps, explicit)


def test_a_changed_schedule_changes_its_traffic_and_price():
    s = tc.generate("torus:4x4", "allreduce", "swing", variant="bandwidth")
    t = s.transfers.copy()
    t["hi"][0] = t["lo"][0] + (t["hi"][0] - t["lo"][0]) / 2     # half the bytes of one row
    halved = s.replace(transfers=t)
    assert not tc.verify(halved).valid
    a, b = traffic_of(s), traffic_of(halved)
    assert a.share.sum() > b.share.sum()
    # the summed traffic is the unchanged schedule's, not the broken one's
    with pytest.raises(AssertionError):
        _same_traffic(step_traffic("torus:4x4", "allreduce", "swing", variant="bandwidth"), b)


def test_large_schedules_are_priced_without_their_rows():
    """Swing's latency variant on 1024 nodes: 10.5 million transfer rows, summed to 10,240."""
    t = step_traffic("torus:32x32", "allreduce", "swing", variant="latency")
    assert (t.num_steps, t.size, t.routing) == (10, 10 * 1024, "shortest")
    # every rank sends its whole vector every step
    np.testing.assert_allclose(np.bincount(t.step, weights=t.share)[1:], 1024.0)
    _, alpha, beta = step_costs(t.replace(
        topology=t.topology.with_links(latency=1.0, bandwidth=1.0)))
    # routes of 1, 1, 1, 1, 3, 3, 5, 5, 11, 11 hops (Swing's |rho| per dimension, 5 steps each)
    assert alpha.tolist() == [1, 1, 1, 1, 3, 3, 5, 5, 11, 11]
    assert (beta >= 1).all()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(topo=strongly_connected_digraphs(min_nodes=2, max_nodes=12),
       alg=st.sampled_from(["rankring", "rd", "pat", "swing", "bine"]),
       coll=st.sampled_from(["allreduce", "allgather", "reduce_scatter"]))
def test_random_digraphs(topo, alg, coll):
    """Heterogeneous links, parallel links, routes: summed traffic is priced as the rows."""
    if alg == "pat" and coll == "allreduce":
        coll = "allgather"
    schedule = tc.generate(topo, coll, alg, form="explicit")
    _same_traffic(step_traffic(topo, coll, alg), traffic_of(schedule))
    _same_costs(step_traffic(topo, coll, alg), schedule)


def test_a_pair_without_a_path_is_refused_when_priced():
    topo = Topology(3, [0, 1], [1, 2], name="path")      # no way back to 0
    t = step_traffic(topo, "allgather", "pat")
    assert t.routing == "shortest"
    with pytest.raises(NotStronglyConnectedError):
        step_costs(t)


@pytest.mark.parametrize("call,error,words", [
    (lambda: step_traffic("torus:4x4", "allreduce", "swing", colour=1), UnsupportedError,
     "colour"),
    (lambda: step_traffic("torus:4x4", "allreduce", "nope"), UnsupportedError, "nope"),
    (lambda: step_traffic("torus:4x4", "broadcast", "pat"), UnsupportedError, "not broadcast"),
    (lambda: step_traffic("torus:4x4", "allgather", "pat", root=1), UnsupportedError, "root"),
    (lambda: step_traffic("torus:4x4", "allgather", "swing", variant="latency"),
     UnsupportedError, "latency"),
    (lambda: step_traffic("torus:4x4", "allreduce", "rd", variant="x"), UnsupportedError,
     "variant"),
])
def test_requests_are_checked_as_generate_checks_them(call, error, words):
    with pytest.raises(error, match=words):
        call()


def test_step_traffic_rules():
    topo = tc.build_topology("ring:4")
    with pytest.raises(InputTypeError, match="Topology"):
        StepTraffic("ring:4", "allgather", [1], [0], [1], [0.25])
    with pytest.raises(ScheduleFormatError, match="one length"):
        StepTraffic(topo, "allgather", [1, 2], [0], [1], [0.25])
    with pytest.raises(ScheduleFormatError, match="dst must be a node 0..3"):
        StepTraffic(topo, "allgather", [1], [0], [4], [0.25])
    with pytest.raises(ScheduleFormatError, match="share must be > 0"):
        StepTraffic(topo, "allgather", [1], [0], [1], [0.0])
    with pytest.raises(ScheduleFormatError, match="routing"):
        StepTraffic(topo, "allgather", [1], [0], [1], [0.25], routing="adaptive")
    empty = StepTraffic(topo, "allgather", [], [], [], [])
    assert empty.size == 0 and [c.size for c in step_costs(empty)] == [0, 0, 0]
    assert "StepTraffic('allgather'" in repr(empty)
    with pytest.raises(InputTypeError, match="no field 'colour'"):
        empty.replace(colour=1)
    rooted = traffic_of(tc.generate("ring:4", "broadcast", "bine", root=2))
    assert rooted.root == 2 and rooted.replace(algorithm="x").root == 2


def test_the_two_sinks_take_the_same_rows():
    rows, sums = RowSink(), TrafficSink(4, 0.25)
    for sink in (rows, sums):
        sink.add(1, [0, 0, 1], [1, 1, 2], [0, 1, 1], 0.0, [0.5, 1.0, 1.0])
        sink.add([2, 3], 2, 3, 3)
        sink.add(4, [], [], [])
    t = rows.transfers()
    assert t.size == 5 and t["step"].tolist() == [1, 1, 1, 2, 3]
    made = sums.traffic(tc.build_topology("ring:4"), "allgather")
    assert list(zip(made.step.tolist(), made.src.tolist(), made.dst.tolist(),
                    made.share.tolist())) == [(1, 0, 1, 0.375), (1, 1, 2, 0.25),
                                              (2, 2, 3, 0.25), (3, 2, 3, 0.25)]
    assert made.routing is None
    assert RowSink().transfers().size == 0
