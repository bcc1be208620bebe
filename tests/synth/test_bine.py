"""Bine trees (De Sensi et al., SC 2025): negabinary digits and the block layout by hand, the
broadcast tree against the reference code's rule, the butterfly against Swing's, verified
schedules of every collective on rings, tori, meshes, hypercubes and random strongly connected
digraphs (folded where the node count is not a power of two), step and byte counts, broken
schedules refused, and the generator through ``generate`` and the CLI.

The reference code cited below is HLC-Lab/bine-trees: ``src/utils.h`` (``nu``,
``binary_to_negabinary``), ``src/bcast.c`` (``bine_bcast_small``) and ``src/reduce.c``.
"""

import math

import numpy as np
import pytest
from hypothesis import given, settings

import topocoll as tc
from tests.cli.conftest import run_cli
from tests.helpers import strongly_connected_digraphs
from topocoll.collectives import COPY, REDUCE
from topocoll.errors import InputTypeError, UnsupportedError
from topocoll.synth import ALGORITHMS
from topocoll.synth.bine import (
    bine_layout,
    bine_schedule,
    bine_tree_labels,
    bine_tree_steps,
    from_negabinary,
    negabinary,
)
from topocoll.synth.swing import swing_schedule
from topocoll.topology import Topology, topology

TREES = ("broadcast", "reduce")
BUTTERFLIES = ("allreduce", "reduce_scatter", "allgather")


def _rows(schedule, step):
    t = schedule.transfers
    return t[t["step"] == step]


def _pairs(schedule, step):
    rows = _rows(schedule, step)
    return sorted(zip(rows["src"].tolist(), rows["dst"].tolist()))


# ------------------------------------------------------------------------------ by hand
def test_negabinary_by_hand():
    # base -2, three digits: 110 = 4 - 2 = 2, 111 = 4 - 2 + 1 = 3, 011 = -2 + 1 = -1
    digits = [format(negabinary(x, 3), "03b") for x in range(8)]
    assert digits == ["000", "001", "110", "111", "100", "101", "010", "011"]
    # 6 = -2 and 7 = -1 modulo 8: three digits name 8 residues
    assert [from_negabinary(negabinary(x, 3)) % 8 for x in range(8)] == list(range(8))
    # all-ones runs are Swing's distances rho(k) = sum_{i<=k} (-2)^i
    assert [from_negabinary((1 << k) - 1) for k in range(1, 6)] == [1, -1, 3, -5, 11]


def test_layout_p8_by_hand():
    # nu (utils.h): d = negabinary of r (odd r) or of -r (even r), 3 digits; then
    # reverse(d xor (d >> 1)):
    #   r=0: d=000 -> 000 -> 000 = 0     r=1: d=001 -> 001 -> 100 = 4
    #   r=2: -2 -> 010 -> 011 -> 110 = 6  r=3: 111 -> 100 -> 001 = 1
    #   r=4: -4 -> 100 -> 110 -> 011 = 3  r=5: 101 -> 111 -> 111 = 7
    #   r=6: -6=2 -> 110 -> 101 -> 101 = 5  r=7: -1 -> 011 -> 010 -> 010 = 2
    assert bine_layout(8) == [0, 4, 6, 1, 3, 7, 5, 2]
    assert sorted(bine_layout(16)) == list(range(16))


def test_tree_p8_by_hand():
    # bcast.c, root 0: step s flips the k = 3 - s low negabinary digits of the holder, so
    #   step 1: 000 -> 111          0 -> 3   (distance +3 = rho(2))
    #   step 2: 000 -> 011, 111 -> 100   0 -> 7, 3 -> 4   (distance -1, +1)
    #   step 3: flip the last digit   0 -> 1, 7 -> 6, 3 -> 2, 4 -> 5
    s = bine_schedule(topology("ring:8"), "broadcast", root=0)
    assert _pairs(s, 1) == [(0, 3)]
    assert _pairs(s, 2) == [(0, 7), (3, 4)]
    assert _pairs(s, 3) == [(0, 1), (3, 2), (4, 5), (7, 6)]
    assert (s.transfers["op"] == COPY).all() and (s.transfers["shard"] == 0).all()
    # root 5: the same tree moved by 5 (v = r - root)
    s = bine_schedule(topology("ring:8"), "broadcast", root=5)
    assert _pairs(s, 1) == [(5, 0)]
    assert _pairs(s, 2) == [(0, 1), (5, 4)]
    assert _pairs(s, 3) == [(0, 7), (1, 2), (4, 3), (5, 6)]
    # labels t = d xor (d >> 1) make it MPICH's binomial tree: t -> t + 4, then + 2, then + 1
    t = bine_tree_labels(8)
    assert t == [0, 1, 5, 4, 6, 7, 3, 2]
    s = bine_schedule(topology("ring:8"), "broadcast", root=0)
    for step, gap in ((1, 4), (2, 2), (3, 1)):
        rows = _rows(s, step)
        assert all(t[b] == t[a] + gap and t[a] % (2 * gap) == 0
                   for a, b in zip(rows["src"].tolist(), rows["dst"].tolist()))


def test_reduce_p8_by_hand():
    # the broadcast reversed in time: the last broadcast step first, every arrow turned round
    s = bine_schedule(topology("ring:8"), "reduce", root=0)
    assert _pairs(s, 1) == [(1, 0), (2, 3), (5, 4), (6, 7)]
    assert _pairs(s, 2) == [(4, 3), (7, 0)]
    assert _pairs(s, 3) == [(3, 0)]
    assert (s.transfers["op"] == REDUCE).all() and s.root == 0


def test_torus_tree_by_hand():
    # torus:4x4, dimensions in turn and each dimension's Swing steps reversed: columns at
    # distance -1, rows -1, columns +1, rows +1 (even coordinates add, odd subtract): every
    # partner a neighbour, so nothing is routed
    s = bine_schedule(topology("torus:4x4"), "broadcast", root=0)
    assert s.routing is None and s.meta["dims"] == [4, 4]
    assert _pairs(s, 1) == [(0, 3)]
    assert _pairs(s, 2) == [(0, 12), (3, 15)]
    assert _pairs(s, 3) == [(0, 1), (3, 2), (12, 13), (15, 14)]
    assert _pairs(s, 4) == [(0, 4), (1, 5), (2, 6), (3, 7), (12, 8), (13, 9), (14, 10),
                            (15, 11)]


def test_butterfly_blocks_p8_by_hand():
    # rank 0's reduce-scatter (the peers 1, 7, 3 of Swing): it hands 1 the shards {1, 2, 5, 6},
    # 7 {4, 7}, 3 {3}; under nu they are the blocks 4..7, 2..3 and 1: one run each, sharing
    # the 1, 2, 3 highest bits with nu(peer) (reduce.c: nu(partner) & block_first_mask)
    s = bine_schedule(topology("ring:8"), "allreduce")
    nu = bine_layout(8)
    for step, peer, shards, blocks in ((1, 1, {1, 2, 5, 6}, {4, 5, 6, 7}),
                                       (2, 7, {4, 7}, {2, 3}), (3, 3, {3}, {1})):
        rows = _rows(s, step)
        mine = rows[rows["src"] == 0]
        assert set(mine["dst"].tolist()) == {peer}
        assert set(mine["shard"].tolist()) == shards
        assert {nu[x] for x in shards} == blocks
        assert (mine["op"] == REDUCE).all()


# ------------------------------------------------------------------------------ the rules
def _reference_tree(p, root):
    """bine_bcast_small (bcast.c) run rank by rank: at mask = 2^(L-1-s), a rank that has the
    data sends it to nb^-1(nb(v) xor (2 mask - 1)) + root, and a rank receives in the step in
    which the low bits of nb(v) under that mask are all 0 or all 1 (v = rank - root)."""
    bits = p.bit_length() - 1
    steps = []
    has = {root}
    for s in range(bits):
        ones = (1 << (bits - s)) - 1
        nb = {rank: negabinary(rank - root, bits) for rank in range(p)}
        sent = sorted((rank, (from_negabinary(nb[rank] ^ ones) + root) % p) for rank in has)
        receives = {rank for rank in set(range(p)) - has if nb[rank] & ones in (0, ones)}
        assert receives == {b for _, b in sent}
        has |= receives
        steps.append(sent)
    return steps


@pytest.mark.parametrize("p", [2, 4, 8, 16, 32])
def test_tree_is_the_reference_rule(p):
    topo = topology(f"ring:{p}")
    for root in range(p):
        s = bine_schedule(topo, "broadcast", root=root)
        assert [_pairs(s, k + 1) for k in range(s.num_steps)] == _reference_tree(p, root)


@pytest.mark.parametrize("p", [8, 16, 32, 64])
def test_butterfly_is_swing_and_its_blocks_are_contiguous(p):
    topo = topology(f"ring:{p}")
    bine = bine_schedule(topo, "allreduce")
    swing = swing_schedule(topo, "allreduce", variant="bandwidth")
    assert np.array_equal(bine.transfers, swing.transfers)
    bits = int(math.log2(p))
    nu = np.array(bine_layout(p))
    for step in range(1, bits + 1):         # reduce-scatter: 2^(L-step) aligned blocks
        rows = _rows(bine, step)
        width = 1 << (bits - step)
        for src in range(p):
            mine = rows[rows["src"] == src]
            blocks = np.sort(nu[mine["shard"]])
            peer = int(mine["dst"][0])
            assert blocks[0] == nu[peer] // width * width
            assert np.array_equal(blocks, blocks[0] + np.arange(width))


@pytest.mark.parametrize("dims", [(8,), (4, 4), (2, 8), (4, 4, 4), (2, 2, 2, 2)])
def test_tree_steps_reach_every_rank_once(dims):
    p = int(np.prod(dims))
    for root in (0, p - 1, p // 3):
        steps = bine_tree_steps(dims, root)
        assert len(steps) == int(math.log2(p))
        reached = np.concatenate([r for _, r in steps])
        assert sorted(reached.tolist() + [root]) == list(range(p))
        for k, (senders, _) in enumerate(steps):
            assert senders.size == 2 ** k       # binomial: the holders double every step


# ------------------------------------------------------------------------------ verification
RINGS = [f"ring:{n}" for n in (2, 3, 4, 5, 6, 7, 8, 9, 12, 16, 17, 24, 31, 32, 33)]
SHAPES = RINGS + ["uniring:8", "uniring:6", "torus:4x4", "torus:8x8", "torus:4x4x4",
                  "torus:2x8", "torus:4x8", "torus:3x5", "torus:2x2x2x2", "mesh:4x4",
                  "mesh:2x4", "mesh:3x4", "hypercube:3", "hypercube:4", "complete:8"]


@pytest.mark.parametrize("collective", TREES + BUTTERFLIES)
@pytest.mark.parametrize("spec", SHAPES)
def test_verifies(spec, collective):
    topo = topology(spec)
    p = topo.num_nodes
    roots = sorted({0, p - 1, p // 2}) if collective in TREES else [None]
    for root in roots:
        s = bine_schedule(topo, collective, root=root)
        report = tc.verify(s)
        assert report.valid, (root, report.summary())
        assert s.algorithm == "bine"
        assert s.meta["shape"] == ("tree" if collective in TREES else "butterfly")


@pytest.mark.parametrize("collective", TREES)
@pytest.mark.parametrize("n", [6, 10, 12, 13])
def test_every_root_verifies(n, collective):
    topo = topology(f"ring:{n}")
    for root in range(n):
        report = tc.verify(bine_schedule(topo, collective, root=root))
        assert report.valid, (root, report.summary())


@given(strongly_connected_digraphs(max_nodes=11))
@settings(max_examples=25, deadline=None)
def test_random_digraphs_verify(topo):
    for collective in TREES + BUTTERFLIES:
        root = topo.num_nodes - 1 if collective in TREES else None
        s = bine_schedule(topo, collective, root=root)
        report = tc.verify(s)
        assert report.valid, (collective, topo.name, report.summary())


def test_routing_only_where_needed():
    ring = bine_schedule(topology("ring:16"), "broadcast", root=0)
    assert ring.routing == "shortest"
    assert not tc.verify(ring.replace(routing=None)).valid     # distance 11, 5, 3 cross no link
    assert bine_schedule(topology("hypercube:3"), "reduce", root=2).routing is None
    assert bine_schedule(topology("hypercube:3"), "allreduce").routing is None


def test_models_price_routed_schedules():
    for collective, root in (("broadcast", 3), ("reduce", 3), ("allreduce", None)):
        s = bine_schedule(topology("ring:16"), collective, root=root)
        assert tc.evaluate(s, 1e6).time > 0
        assert tc.simulate(s, 1e6).time > 0


# ------------------------------------------------------------------------------ counts
def _levels(p):
    return (p.bit_length() - 1), 1 << (p.bit_length() - 1)


@pytest.mark.parametrize("spec", ["ring:2", "ring:8", "ring:16", "ring:5", "ring:12", "ring:33",
                                  "torus:4x4", "torus:4x4x4", "torus:3x5", "mesh:2x4"])
def test_step_counts(spec):
    topo = topology(spec)
    p = topo.num_nodes
    levels, q = _levels(p)
    fold = q != p
    for collective in TREES:
        for root in (0, p - 1):
            s = bine_schedule(topo, collective, root=root)
            # a step to hand the folded ranks the data unless the root is the only one,
            # a step first when the root is folded
            out = bool(set(range(q, p)) - {root})
            assert s.num_steps == levels + out + (root >= q), (collective, root)
            assert s.meta["folded"] == p - q
    assert bine_schedule(topo, "allreduce").num_steps == 2 * levels + 2 * fold
    for collective in ("reduce_scatter", "allgather"):
        assert bine_schedule(topo, collective).num_steps == levels + 2 * fold


@pytest.mark.parametrize("spec", ["ring:8", "ring:16", "ring:6", "ring:13", "torus:4x8",
                                  "mesh:3x4"])
def test_tree_bytes_per_rank(spec):
    # a spanning tree: p - 1 whole-buffer transfers, every rank but the root reached once
    # (broadcast) or sending once (reduce); the root sends log2 q times when it is a working rank
    topo = topology(spec)
    p = topo.num_nodes
    levels, q = _levels(p)
    for root in (0, p - 1):
        down = bine_schedule(topo, "broadcast", root=root).transfers
        up = bine_schedule(topo, "reduce", root=root).transfers
        for t in (down, up):
            assert t.size == p - 1 and ((t["hi"] - t["lo"]) == 1.0).all()
        into = np.bincount(down["dst"], minlength=p)
        out = np.bincount(up["src"], minlength=p)
        expected = np.ones(p, dtype=int)
        expected[root] = 0
        assert (into == expected).all() and (out == expected).all()
        if root < q:        # log2 q tree steps, one more to its folded partner root + q
            assert np.count_nonzero(down["src"] == root) == levels + (root + q < p)


@pytest.mark.parametrize("spec", ["ring:8", "ring:16", "torus:4x4", "torus:4x8", "torus:4x4x4"])
def test_butterfly_bytes_per_rank(spec):
    # each rank sends (p-1)/p of the vector in each phase
    s = bine_schedule(topology(spec), "allreduce")
    p = s.num_nodes
    levels = int(math.log2(p))
    t = s.transfers
    size = (t["hi"] - t["lo"]) / p
    for phase, (first, last) in (("reduce-scatter", (1, levels)),
                                 ("allgather", (levels + 1, 2 * levels))):
        inside = (t["step"] >= first) & (t["step"] <= last)
        sent = np.bincount(t["src"][inside], weights=size[inside], minlength=p)
        assert sent == pytest.approx(np.full(p, (p - 1) / p)), phase


# ------------------------------------------------------------------------------ broken ones
@pytest.mark.parametrize("collective", TREES + BUTTERFLIES)
@pytest.mark.parametrize("spec", ["ring:8", "torus:4x4", "ring:6"])
def test_dropping_a_transfer_fails(spec, collective):
    root = 1 if collective in TREES else None
    s = bine_schedule(topology(spec), collective, root=root)
    assert tc.verify(s).valid
    for i in (0, s.num_transfers // 2, s.num_transfers - 1):
        report = tc.verify(s.replace(transfers=np.delete(s.transfers, i)))
        assert not report.valid, i


def test_sending_before_receiving_fails():
    s = bine_schedule(topology("ring:8"), "broadcast", root=0)
    t = s.transfers.copy()
    late = int(np.flatnonzero((t["step"] == 3) & (t["src"] == 7))[0])
    t["step"][late] = 2                 # 7 forwards in the step it first receives
    assert not tc.verify(s.replace(transfers=t)).valid


# ------------------------------------------------------------------------------ errors, doors
def test_errors_name_the_rule():
    ring = topology("ring:8")
    with pytest.raises(UnsupportedError, match="algorithm bine makes"):
        bine_schedule(ring, "alltoall")
    with pytest.raises(UnsupportedError, match="bine: dims 2x2 make 4 nodes, ring:8 has 8"):
        bine_schedule(ring, "broadcast", dims=(2, 2))
    with pytest.raises(UnsupportedError, match="bine: dims 3x3 make 9 nodes"):
        bine_schedule(ring, "allreduce", dims=(3, 3))
    with pytest.raises(UnsupportedError, match=r"bine: root must be a node 0\.\.7, got 8"):
        bine_schedule(ring, "reduce", root=8)
    with pytest.raises(InputTypeError, match="bine: root must be a node number"):
        bine_schedule(ring, "broadcast", root="3")
    with pytest.raises(UnsupportedError, match="bine: allgather takes no root"):
        bine_schedule(ring, "allgather", root=0)
    with pytest.raises(UnsupportedError, match="needs at least 2 nodes"):
        bine_schedule(Topology(1, [], [], 1.0, 1e-6, name="one"), "broadcast")
    with pytest.raises(UnsupportedError, match="needs a power of two ranks"):
        bine_layout(6)
    with pytest.raises(InputTypeError, match="must be an integer"):
        bine_tree_labels("8")


def test_generate():
    s = tc.generate("torus:4x4", "broadcast", "bine", root=5)
    assert s.algorithm == "bine" and s.root == 5 and s.num_steps == 4 and tc.verify(s).valid
    s = tc.generate("complete:16", "reduce", "bine", dims="4x4")
    assert s.meta == {"shape": "tree", "folded": 0, "dims": [4, 4]} and tc.verify(s).valid
    s = tc.generate("ring:12", "allreduce", "bine")
    assert s.meta == {"shape": "butterfly", "folded": 4, "dims": [8]} and tc.verify(s).valid
    assert ALGORITHMS["bine"].summary == ("Bine trees (SC'25): binomial trees and butterflies "
                                          "on negabinary distances, through routes (option "
                                          "dims)")
    assert set(ALGORITHMS["bine"].collectives) == set(TREES + BUTTERFLIES)
    with pytest.raises(UnsupportedError, match="option dims must be dimension sizes"):
        tc.generate("ring:8", "allreduce", "bine", dims="axb")
    with pytest.raises(UnsupportedError, match="algorithm bine has no option variant"):
        tc.generate("ring:8", "allreduce", "bine", variant="latency")


def test_cli(tmp_path):
    r = run_cli(["schedule", "torus:4x4", "-c", "allreduce", "-a", "bine", "--json"], tmp_path)
    assert r.returncode == 0, r
    doc = r.json()
    assert doc["algorithm"] == "bine" and doc["steps"] == 8 and doc["verified"] is True
    assert doc["meta"]["shape"] == "butterfly"
    r = run_cli(["schedule", "ring:8", "-c", "broadcast", "-a", "bine", "--root", "3",
                 "--json"], tmp_path)
    assert r.returncode == 0, r
    doc = r.json()
    assert doc["steps"] == 3 and doc["root"] == 3 and doc["routing"] == "shortest"
    r = run_cli(["schedule", "ring:12", "-c", "reduce", "-a", "bine", "-O", "dims=3x4",
                 "--json"], tmp_path)
    assert r.returncode == 0, r
    assert r.json()["meta"]["folded"] == 4
    for bad, message in ((["-O", "dims=3x3"], "bine: dims 3x3 make 9 nodes"),
                         (["-O", "dims=axb"], "option dims must be dimension sizes"),
                         (["-c", "alltoall"], "algorithm bine makes")):
        args = ["schedule", "ring:8", "-a", "bine"] + (bad if "-c" in bad else
                                                       ["-c", "allreduce"] + bad)
        r = run_cli(args, tmp_path)
        assert r.returncode != 0
        assert len(r.stderr_lines) == 1, r
        assert message in r.stderr
