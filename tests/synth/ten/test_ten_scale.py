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
from topocoll.synth.ten.cutbound import pair_demands
from topocoll.synth.ten.bitsets import first_bits, pick_draws
from topocoll.synth.ten.greedy import greedy_events
from topocoll.synth.ten.bounds import bounds_of
from topocoll.synth.ten.search import GREEDY_DISCRETIZATION
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
    assert bounds_of(p, symmetric=True) == bounds_of(p)


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
    with pytest.raises(UnsupportedError, match="form must be one of"):
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
    recv, send = pair_demands(pu, pv, pre, post)
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
    start, rot = pick_draws(rng, count, width)
    got = first_bits(rows, start, rot, k)
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


def _recount(flood, active):
    """Plain reference for the greedy's tiers: per receiver, how many distinct
    in-neighbours hold each chunk, from the held bitsets."""
    k = flood.k
    held = np.unpackbits(flood.held[:-1].view(np.uint8), axis=1, bitorder="little")[:, :k]
    out = flood.out_nbrs
    count = np.zeros((held.shape[0], k), dtype=np.int64)
    for u in range(out.shape[0]):
        for w in out[u][out[u] >= 0]:
            count[w] += held[u]
    return count[active]


@settings(max_examples=15, deadline=None)
@given(strongly_connected_digraphs(max_nodes=8), st.sampled_from(["allgather", "broadcast"]),
       st.integers(1, 3), st.integers(0, 1000))
def test_greedy_tiers_kept_by_arrivals_match_a_recount(topo, coll, chunks, seed):
    """The holder counts the greedy keeps up as chunks arrive give, at every slot, the tiers
    a recount from scratch gives (fewer than two in-neighbours hold a chunk / exactly two)."""
    from topocoll.synth.ten.greedy_flood import Flood

    seen = []
    original = Flood.tiers

    def checked(self, active):
        below, two, nodes = original(self, active)
        if nodes is None:                            # rows are node ids: check them all
            nodes = np.arange(self.held.shape[0] - 1)
        count = _recount(self, nodes)
        bits = lambda m: np.unpackbits(m.view(np.uint8), axis=1, bitorder="little")[:, :self.k]
        assert np.array_equal(bits(below[nodes]), (count < 2).astype(np.uint8))
        assert np.array_equal(bits(two[nodes]), (count == 2).astype(np.uint8))
        seen.append(nodes.size)
        return original(self, active)

    steps = np.random.default_rng(seed).integers(1, 3, topo.num_links)
    p = ten_problem(topo, coll, chunks=chunks, size=64.0, root=0 if coll == "broadcast" else None)
    Flood.tiers = checked
    try:
        greedy_events(topo.num_nodes, topo.src, topo.dst, steps, p.pre, p.post, seed=seed)
    finally:
        Flood.tiers = original
    assert seen


@pytest.mark.parametrize("spec", ["mesh:8x8", "torus:5x6", "hypercube:5"])
def test_greedy_schedule_does_not_depend_on_threads(spec, monkeypatch):
    import topocoll.synth.ten.greedy_flood as greedy_flood

    p = ten_problem(spec, "allgather")
    one = greedy_events(*p.arrays(), seed=4, threads=1)
    monkeypatch.setattr(greedy_flood, "BLOCK_WORDS", 64)        # many blocks a pass
    monkeypatch.setattr(greedy_flood, "MIN_BLOCK_ROWS", 4)
    three = greedy_events(*p.arrays(), seed=4, threads=3)
    blocks = list(three.event_blocks(100))
    assert all(b.size <= 100 for b in blocks)
    assert np.array_equal(np.concatenate(blocks), one.events)
    with pytest.raises(UnsupportedError, match="handed over"):
        next(three.event_blocks(100))
    with pytest.raises(Exception, match="threads must be"):
        greedy_events(*p.arrays(), threads=0)


def test_greedy_sends_are_held_narrow():
    from topocoll.synth.ten.greedy_sends import Sends

    assert Sends(256, 256).chunk_type == np.uint8
    assert Sends(16384, 65024).link_type == np.uint16
    assert Sends(70000, 10).chunk_type == np.uint32


def test_auto_form_is_compact_without_a_symmetry(monkeypatch):
    import topocoll.schedule.symmetric as symmetric

    monkeypatch.setattr(symmetric, "EXPLICIT_TRANSFER_LIMIT", 100)
    assert synthesize("mesh:4x4", "allgather").form == "compact"
    assert synthesize("torus:4x4", "allgather").form == "symmetric"
    assert synthesize("mesh:4x4", "allreduce").form == "explicit"     # combines
    assert synthesize("mesh:12x12", "broadcast").form == "compact"    # 143 transfers
    assert synthesize("mesh:8x8", "broadcast").form == "explicit"     # 63
    for coll in ("reduce_scatter", "allreduce", "reduce"):
        with pytest.raises(UnsupportedError, match="only copy"):
            synthesize("mesh:3x3", coll, form="compact")


def test_cli_compact_form(tmp_path, monkeypatch):
    out = tmp_path / "s.json"
    res = CliRunner().invoke(cli, ["synth", "mesh:5x5", "-c", "allgather", "--form",
                                   "compact", "-o", str(out), "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["form"] == "compact" and doc["verified"] and doc["transfers"] == 25 * 24
    assert doc["link_model_time"] == pytest.approx(doc["ten_time"])
    again = CliRunner().invoke(cli, ["verify", str(out), "--json"])
    assert again.exit_code == 0 and json.loads(again.stdout)["valid"]
    # the link model needs the explicit form: over the memory limit it is said, not run
    monkeypatch.setenv("TOPOCOLL_MEMORY_LIMIT", "2MiB")
    res = CliRunner().invoke(cli, ["synth", "mesh:16x16", "-c", "allgather", "--json",
                                   "--form", "compact"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["form"] == "compact" and doc["verified"] and doc["link_model_time"] is None
    res = CliRunner().invoke(cli, ["synth", "mesh:16x16", "-c", "allgather", "--form",
                                   "compact"])
    assert res.exit_code == 0 and "link model not run" in res.output


def test_cli_compact_form_skips_the_link_model_above_the_explicit_limit(monkeypatch):
    import topocoll.schedule.symmetric as symmetric

    monkeypatch.setattr(symmetric, "EXPLICIT_TRANSFER_LIMIT", 100)
    res = CliRunner().invoke(cli, ["synth", "mesh:4x4", "-c", "allgather", "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["form"] == "compact" and doc["verified"] and doc["link_model_time"] is None
    assert doc["lower_bound_ratio"] is None and doc["ten_time"] > 0
