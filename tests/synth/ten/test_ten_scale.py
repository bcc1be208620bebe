"""TEN synthesis at scale: the symmetric form (rows into node 0) of the translated all-gather,
the bounds from node 0 and its pairs, the lean greedy's bookkeeping (bitset pair demands,
streamed sends, blocked passes) against plain references."""

import json

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings, strategies as st

from topocoll.cli.main import cli
from topocoll.errors import UnsupportedError
from topocoll.schedule import evaluate, simulate, symmetric_schedule, verify
from topocoll.synth.ten import chunk_lower_bound, events_to_schedule, synthesize, ten_problem
from topocoll.synth.ten.cayley import symmetric_events
from topocoll.synth.ten.cutbound import _demands
from topocoll.synth.ten.greedy import _first_bits, _pick_draws, greedy_events
from topocoll.synth.ten.synthesis import GREEDY_DISCRETIZATION, _bounds
from topocoll.topology import Topology, topology
from topocoll.topology.families.lattice import with_dimension_bandwidth

from tests.helpers import strongly_connected_digraphs

GIB = 2**30


def _rows(transfers):
    return sorted(map(tuple, transfers[["step", "src", "dst", "shard", "lo", "hi"]].tolist()))


@pytest.mark.parametrize("spec,coll,chunks", [
    ("torus:4x4", "allgather", 2), ("torus:3x5", "reduce_scatter", 1),
    ("hypercube:4", "allreduce", 1), ("ring:6", "allgather", 3)])
def test_symmetric_form_expands_to_a_valid_schedule_priced_alike(spec, coll, chunks):
    s = synthesize(spec, coll, chunks=chunks, size=GIB, form="symmetric")
    assert s.form == "symmetric" and np.all(s.transfers["dst"] == 0)
    n = s.num_nodes
    assert s.num_representatives * n == s.num_transfers
    full = s.expand()
    report = verify(full)
    assert report.valid, report.summary()
    assert verify(s).valid
    assert evaluate(s, GIB).time == pytest.approx(evaluate(full, GIB).time, rel=1e-12)
    assert simulate(s, GIB).time == pytest.approx(simulate(full, GIB).time, rel=1e-12)
    # one transfer per chunk and node that lacks it (twice for the all-reduce)
    assert s.num_transfers == chunks * n * (n - 1) * (2 if coll == "allreduce" else 1)


def test_symmetric_rows_are_the_translated_schedule_into_node_0():
    # the representatives are exactly the rows into node 0 of the explicit translated events
    topo = with_dimension_bandwidth(topology("torus:4x6", latency="10us"), [50 * GIB, 25 * GIB])
    s = synthesize(topo, "allgather", chunks=2, size=GIB, seed=3, form="symmetric")
    p = ten_problem(topo, "allgather", chunks=2, size=GIB, discretization=GREEDY_DISCRETIZATION)
    r = symmetric_events(topo, p.link_cost, p.link_steps, 2, chunk_lower_bound(p), seed=3)
    explicit = events_to_schedule(p, r.events)
    assert _rows(symmetric_schedule(explicit).transfers) == _rows(s.transfers)
    assert s.meta["makespan_slots"] == r.makespan
    assert s.meta["chunk_lower_bound"] == chunk_lower_bound(p)


@pytest.mark.parametrize("spec,speeds", [("torus:8x8", None), ("torus:5x5", None),
                                         ("hypercube:5", None), ("torus:6x6", (100, 25)),
                                         ("torus:2x3x4", (25, 50, 100))])
@pytest.mark.parametrize("chunks", [1, 3])
def test_node_0_bounds_equal_the_full_bounds(spec, speeds, chunks):
    topo = topology(spec, latency="10us")
    if speeds:
        topo = with_dimension_bandwidth(topo, [g * GIB for g in speeds])
    p = ten_problem(topo, "allgather", chunks=chunks, size=GIB)
    assert _bounds(p, symmetric=True) == _bounds(p)


def test_form_choices_and_refusals():
    assert synthesize("torus:4x4", "allgather").form == "explicit"          # auto, small
    assert synthesize("torus:4x4", "allgather", form="explicit").form == "explicit"
    with pytest.raises(UnsupportedError, match="translation symmetry"):
        synthesize("mesh:4x4", "allgather", form="symmetric")
    with pytest.raises(UnsupportedError, match="not broadcast"):
        synthesize("torus:4x4", "broadcast", form="symmetric")
    with pytest.raises(UnsupportedError, match="made by method=.greedy. only"):
        synthesize("torus:4x4", "allgather", method="ilp", form="symmetric")
    with pytest.raises(UnsupportedError, match="contradicts"):
        synthesize("torus:4x4", "allgather", symmetric=False, form="symmetric")
    with pytest.raises(UnsupportedError, match="unknown form"):
        synthesize("torus:4x4", "allgather", form="implicit")


def test_cli_form(tmp_path):
    out = tmp_path / "s.json"
    res = CliRunner().invoke(cli, ["synth", "torus:4x4", "-c", "allgather", "--form",
                                   "symmetric", "-o", str(out), "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["success"] and doc["form"] == "symmetric" and doc["verified"]
    assert doc["transfers"] == 16 * 15 and doc["lower_bound_ratio"] == pytest.approx(1.0)
    res = CliRunner().invoke(cli, ["synth", "mesh:3x3", "-c", "allgather", "--form",
                                   "symmetric"])
    assert res.exit_code != 0 and "translation symmetry" in res.output


def _naive_demands(pu, pv, pre, post):
    want = post & ~pre
    recv, send = [], []
    for u, v in zip(pu, pv):
        held = pre[:, u] | pre[:, v]
        recv.append(int(((post[:, u] | post[:, v]) & ~held).sum()))
        only = held & ~(pre & ~np.isin(np.arange(pre.shape[1]), [u, v])).any(axis=1)
        out = (want & ~np.isin(np.arange(pre.shape[1]), [u, v])).any(axis=1)
        send.append(int((only & out).sum()))
    return recv, send


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 140), st.integers(2, 9), st.integers(0, 2**32 - 1))
def test_bitset_pair_demands_match_a_plain_count(k, n, seed):
    rng = np.random.default_rng(seed)
    pre = rng.random((k, n)) < 0.2
    post = rng.random((k, n)) < 0.6
    pu, pv = rng.integers(0, n, 6), rng.integers(0, n, 6)
    keep = pu != pv
    pu, pv = pu[keep], pv[keep]
    recv, send = _demands(pu, pv, pre, post)
    assert (recv.tolist(), send.tolist()) == _naive_demands(pu, pv, pre, post)


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 200), st.integers(1, 6), st.integers(0, 2**32 - 1))
def test_first_bits_pick_a_set_bit_of_each_row(k, count, seed):
    rng = np.random.default_rng(seed)
    width = (k + 63) // 64
    bits = rng.random((count, k)) < rng.random()
    packed = np.zeros((count, width * 8), np.uint8)
    packed[:, :(k + 7) // 8] = np.packbits(bits, axis=1, bitorder="little")
    rows = packed.view(np.uint64)
    start, rot = _pick_draws(rng, count, width)
    got = _first_bits(rows, start, rot, k)
    for i in range(count):
        if bits[i].any():
            assert 0 <= got[i] < k and bits[i, got[i]]
        else:
            assert got[i] == -1


@settings(max_examples=10, deadline=None)
@given(strongly_connected_digraphs(max_nodes=7), st.sampled_from(["allgather", "broadcast"]),
       st.integers(1, 3), st.integers(0, 1000))
def test_lean_greedy_valid_on_random_networks_with_mixed_slots(topo, coll, chunks, seed):
    steps = np.random.default_rng(seed).integers(1, 4, topo.num_links)
    p = ten_problem(topo, coll, chunks=chunks, size=64.0, root=0 if coll == "broadcast" else None)
    r = greedy_events(topo.num_nodes, topo.src, topo.dst, steps, p.pre, p.post, seed=seed)
    p.link_steps = steps
    report = verify(events_to_schedule(p, r.events))
    assert report.valid, report.summary()
    ends = r.events["start"] + steps[r.events["link"]]
    assert r.makespan == (int(ends.max()) if ends.size else 0)
    # every (chunk, node) pair is delivered once: no copy is wasted
    recv = r.events["chunk"] * topo.num_nodes + topo.dst[r.events["link"]]
    assert np.unique(recv).size == recv.size == int((p.post & ~p.pre).sum())


def test_events_to_schedule_sorts_events_out_of_order():
    p = ten_problem(Topology(3, [0, 1, 2], [1, 2, 0], 1.0, 0.0), "allgather")
    ev = greedy_events(*p.arrays(), seed=0).events[::-1].copy()
    s = events_to_schedule(p, ev)
    assert np.all(np.diff(s.transfers["step"]) >= 0)
    assert verify(s).valid
