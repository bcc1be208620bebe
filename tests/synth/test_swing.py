"""Swing (De Sensi et al., NSDI 2024): peers, block sets, verified schedules on rings, tori and
meshes (folded where the node count is not a power of two), step and byte counts, broken
schedules refused, and the generator through ``generate`` and the CLI.

The schedules are routed (``routing="shortest"``): the verifier checks them as they are when it
accepts routed transfers (probed below with a hand-made routed schedule); otherwise the same
transfers are checked on the complete graph of as many nodes, which has every link.
"""

import math

import numpy as np
import pytest

import topocoll as tc
from tests.cli.conftest import run_cli
from topocoll.collectives import COPY, REDUCE
from topocoll.errors import UnsupportedError
from topocoll.schedule.model import Schedule, transfer_array
from topocoll.synth import ALGORITHMS
from topocoll.synth.swing import responsibility, swing_peers, swing_rho, swing_schedule
from topocoll.topology import topology


def _routed_verify_works():
    """Whether ``verify`` checks routed transfers: a valid allgather on ring:4 whose first step
    crosses the ring (0 <-> 2, 1 <-> 3, not links) must verify."""
    t = transfer_array([1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2],
                       [0, 2, 1, 3, 0, 0, 1, 1, 2, 2, 3, 3],
                       [2, 0, 3, 1, 1, 1, 0, 0, 3, 3, 2, 2],
                       [0, 2, 1, 3, 0, 2, 1, 3, 2, 0, 3, 1], 0.0, 1.0)
    return tc.verify(Schedule(topology("ring:4"), "allgather", t, routing="shortest")).valid


ROUTED_VERIFY = _routed_verify_works()


def _checked(schedule):
    """The verifier's report on ``schedule``: itself where routed transfers are verified, else
    its transfers on the complete graph."""
    if ROUTED_VERIFY or schedule.routing is None:
        return tc.verify(schedule)
    flat = topology(f"complete:{schedule.num_nodes}")
    return tc.verify(Schedule(flat, schedule.collective, schedule.transfers,
                              algorithm=schedule.algorithm))


def _rows(schedule, step):
    t = schedule.transfers
    return t[t["step"] == step]


# ------------------------------------------------------------------------------ peers by hand
def test_rho():
    assert [swing_rho(s) for s in range(5)] == [1, -1, 3, -5, 11]


def test_peers_p8_by_hand():
    # rho = 1, -1, 3: even ranks add, odd ranks subtract, modulo 8
    assert swing_peers(8, 0) == [1, 0, 3, 2, 5, 4, 7, 6]        # +1 / -1
    assert swing_peers(8, 1) == [7, 2, 1, 4, 3, 6, 5, 0]        # -1 / +1
    assert swing_peers(8, 2) == [3, 6, 5, 0, 7, 2, 1, 4]        # +3 / -3


def test_peers_p16_by_hand():
    # rho = 1, -1, 3, -5: even ranks add, odd ranks subtract, modulo 16
    assert swing_peers(16, 0) == [1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14]
    assert swing_peers(16, 1) == [15, 2, 1, 4, 3, 6, 5, 8, 7, 10, 9, 12, 11, 14, 13, 0]
    assert swing_peers(16, 2) == [3, 14, 5, 0, 7, 2, 9, 4, 11, 6, 13, 8, 15, 10, 1, 12]
    assert swing_peers(16, 3) == [11, 6, 13, 8, 15, 10, 1, 12, 3, 14, 5, 0, 7, 2, 9, 4]


def test_the_schedule_uses_those_peers():
    s = swing_schedule(topology("ring:16"), "allreduce", variant="latency")
    for s_, step in zip(range(4), range(1, 5)):
        rows = _rows(s, step)
        pairs = set(zip(rows["src"].tolist(), rows["dst"].tolist()))
        assert pairs == set(enumerate(swing_peers(16, s_)))


def test_block_sets_p8_by_hand():
    # rank 0 talks to 1, 7, 3 (steps 1, 2, 3). At step 1 it hands 1 what 1 covers from then on:
    # 1, its later peers 2 (step 2) and 6 (step 3), and 2's step-3 peer 5 -> {1, 2, 5, 6};
    # at step 2 it hands 7 {7, 4} (7's step-3 peer); at step 3 it hands 3 {3}.
    s = swing_schedule(topology("ring:8"), "allreduce", variant="bandwidth")
    expected = {1: (1, {1, 2, 5, 6}), 2: (7, {4, 7}), 3: (3, {3})}
    for step, (peer, shards) in expected.items():
        rows = _rows(s, step)
        mine = rows[rows["src"] == 0]
        assert set(mine["dst"].tolist()) == {peer}
        assert set(mine["shard"].tolist()) == shards
        assert (mine["op"] == REDUCE).all()
    # the allgather sends back what rank 0 holds reduced: {0}, {0, 3}, {0, 3, 4, 7}
    back = {4: (3, {0}), 5: (7, {0, 3}), 6: (1, {0, 3, 4, 7})}
    for step, (peer, shards) in back.items():
        rows = _rows(s, step)
        mine = rows[rows["src"] == 0]
        assert set(mine["dst"].tolist()) == {peer}
        assert set(mine["shard"].tolist()) == shards
        assert (mine["op"] == COPY).all()


def test_responsibility_refuses_a_non_butterfly():
    twice = np.array([swing_peers(4, 0), swing_peers(4, 0)])     # the same peers twice
    with pytest.raises(UnsupportedError, match="butterfly"):
        responsibility(twice)


# ------------------------------------------------------------------------------ verification
RINGS = [f"ring:{n}" for n in (2, 3, 4, 5, 6, 7, 8, 9, 12, 16, 17, 24, 31, 32, 33, 40)]
SHAPES = RINGS + ["uniring:8", "uniring:6", "torus:4x4", "torus:8x8", "torus:4x4x4",
                  "torus:2x8", "torus:4x8", "torus:16x4", "torus:3x5", "torus:2x2x2x2",
                  "mesh:4x4", "mesh:2x4", "mesh:3x4", "hypercube:4", "complete:8"]


@pytest.mark.parametrize("variant", ["bandwidth", "latency"])
@pytest.mark.parametrize("spec", SHAPES)
def test_allreduce_verifies(spec, variant):
    s = swing_schedule(topology(spec), "allreduce", variant=variant)
    report = _checked(s)
    assert report.valid, report.summary()
    assert s.algorithm == "swing" and s.meta["variant"] == variant


@pytest.mark.parametrize("n", range(2, 41))
def test_every_ring_from_2_to_40_verifies(n):
    for variant in ("bandwidth", "latency"):
        s = swing_schedule(topology(f"ring:{n}"), "allreduce", variant=variant)
        report = _checked(s)
        assert report.valid, (variant, report.summary())


@pytest.mark.parametrize("collective", ["reduce_scatter", "allgather"])
@pytest.mark.parametrize("spec", ["ring:8", "ring:6", "torus:4x8", "torus:3x5", "mesh:4x4"])
def test_the_halves_verify(spec, collective):
    report = _checked(swing_schedule(topology(spec), collective))
    assert report.valid, report.summary()


def test_peers_that_are_not_neighbours_are_routed():
    s = swing_schedule(topology("ring:8"), "allreduce", variant="bandwidth")
    assert s.routing == "shortest"
    # without routes the step-3 exchanges (distance 3) cross no link
    assert not tc.verify(s.replace(routing=None)).valid
    # on the hypercube every Swing peer is a neighbour (each dimension has size 2)
    assert swing_schedule(topology("hypercube:3"), "allreduce").routing is None


def test_torus_peers_move_along_one_dimension():
    s = swing_schedule(topology("torus:4x8"), "allreduce", variant="latency")
    assert s.meta["dims"] == [4, 8]
    src, dst, step = s.transfers["src"], s.transfers["dst"], s.transfers["step"]
    row_moves = (src // 8) != (dst // 8)
    col_moves = (src % 8) != (dst % 8)
    assert not (row_moves & col_moves).any()
    # dimensions in turn: 0, 1, 0, 1, then dimension 1 alone (its third step)
    along = [("row" if row_moves[step == k].all() else "col") for k in range(1, 6)]
    assert along == ["row", "col", "row", "col", "col"]


# ------------------------------------------------------------------------------ counts
@pytest.mark.parametrize("spec", ["ring:2", "ring:8", "ring:16", "ring:32", "torus:4x4",
                                  "torus:2x8", "torus:4x4x4", "mesh:4x4",
                                  "ring:5", "ring:12", "ring:40", "torus:3x5"])
def test_step_counts(spec):
    topo = topology(spec)
    p = topo.num_nodes
    q = 1 << (p.bit_length() - 1)
    levels = int(math.log2(q))
    fold = 2 if q != p else 0
    bw = swing_schedule(topo, "allreduce", variant="bandwidth")
    lat = swing_schedule(topo, "allreduce", variant="latency")
    assert bw.num_steps == 2 * levels + fold
    assert lat.num_steps == levels + fold
    assert bw.meta["folded"] == lat.meta["folded"] == p - q


@pytest.mark.parametrize("spec", ["ring:8", "ring:16", "torus:4x4", "torus:4x8", "torus:4x4x4"])
def test_bandwidth_bytes_per_rank(spec):
    # the paper's count: each rank sends (p-1)/p of the vector in each phase
    s = swing_schedule(topology(spec), "allreduce", variant="bandwidth")
    p = s.num_nodes
    levels = int(math.log2(p))
    t = s.transfers
    size = (t["hi"] - t["lo"]) / p
    for phase, steps in (("reduce-scatter", (1, levels)), ("allgather", (levels + 1, 2 * levels))):
        inside = (t["step"] >= steps[0]) & (t["step"] <= steps[1])
        sent = np.bincount(t["src"][inside], weights=size[inside], minlength=p)
        assert sent == pytest.approx(np.full(p, (p - 1) / p)), phase


def test_latency_sends_whole_vectors():
    s = swing_schedule(topology("ring:16"), "allreduce", variant="latency")
    sent = np.bincount(s.transfers["src"], minlength=16)
    assert (sent == 4 * 16).all()           # 4 steps, every shard each
    assert (s.transfers["op"] == REDUCE).all()


# ------------------------------------------------------------------------------ broken ones
def _broken(schedule, transfers):
    return _checked(schedule.replace(transfers=transfers))


@pytest.mark.parametrize("variant", ["bandwidth", "latency"])
@pytest.mark.parametrize("spec", ["ring:8", "torus:4x4", "ring:6"])
def test_dropping_a_transfer_fails(spec, variant):
    s = swing_schedule(topology(spec), "allreduce", variant=variant)
    assert _checked(s).valid
    for i in (0, s.num_transfers // 2, s.num_transfers - 1):
        report = _broken(s, np.delete(s.transfers, i))
        assert not report.valid, i


def test_sending_a_block_before_it_is_reduced_fails():
    s = swing_schedule(topology("ring:8"), "allreduce", variant="bandwidth")
    t = s.transfers.copy()
    # rank 0's first allgather send (step 4: its own shard 0 to 3) moved into the last
    # reduce-scatter step, before rank 3's contribution to shard 0 has arrived
    i = int(np.flatnonzero((t["step"] == 4) & (t["src"] == 0))[0])
    assert t["shard"][i] == 0
    t["step"][i] = 3
    report = _broken(s, t)
    assert not report.valid


def test_reducing_twice_fails():
    s = swing_schedule(topology("ring:8"), "allreduce", variant="latency")
    t = s.transfers.copy()
    last = np.flatnonzero(t["step"] == 3)[0]
    again = t[last:last + 1].copy()
    again["step"] = 4                        # the same contribution added once more
    report = _broken(s, np.concatenate([t, again]))
    assert not report.valid


# ------------------------------------------------------------------------------ choices, errors
def test_variant_by_size():
    topo = topology("ring:8")
    assert swing_schedule(topo, "allreduce").meta["variant"] == "bandwidth"
    assert swing_schedule(topo, "allreduce", size=1024).meta["variant"] == "latency"
    assert swing_schedule(topo, "allreduce", size=64 * 1024).meta["variant"] == "bandwidth"
    assert swing_schedule(topo, "allgather", size=1024).meta["variant"] == "bandwidth"


def test_errors_name_the_rule():
    topo = topology("ring:8")
    with pytest.raises(UnsupportedError, match="variant must be one of bandwidth, latency"):
        swing_schedule(topo, "allreduce", variant="fast")
    with pytest.raises(UnsupportedError, match="latency variant makes allreduce only"):
        swing_schedule(topo, "allgather", variant="latency")
    with pytest.raises(UnsupportedError, match="dims 2x2 make 4 nodes"):
        swing_schedule(topo, "allreduce", dims=(2, 2))
    with pytest.raises(UnsupportedError, match="swing makes"):
        swing_schedule(topo, "broadcast", root=0)


def test_generate():
    s = tc.generate("torus:4x4", "allreduce", "swing", variant="latency")
    assert s.algorithm == "swing" and s.meta["variant"] == "latency" and s.num_steps == 4
    assert _checked(s).valid
    s = tc.generate("complete:16", "allreduce", "swing", dims="4x4", size="4KiB")
    assert s.meta == {"variant": "latency", "folded": 0, "dims": [4, 4], "multiport": False}
    assert "swing" in ALGORITHMS
    assert ALGORITHMS["swing"].summary.startswith("Swing (NSDI'24): peers at distance 1, -1")
    with pytest.raises(UnsupportedError, match="option variant must be one of"):
        tc.generate("ring:8", "allreduce", "swing", variant="fast")


def test_cli(tmp_path):
    r = run_cli(["schedule", "torus:4x4", "-c", "allreduce", "-a", "swing", "-O",
                 "variant=bandwidth", "--json"], tmp_path)
    assert r.returncode == 0, r
    doc = r.json()
    assert doc["algorithm"] == "swing" and doc["steps"] == 8 and doc["verified"] is True
    assert doc["meta"]["variant"] == "bandwidth"
    r = run_cli(["schedule", "ring:8", "-c", "allreduce", "-a", "swing", "--json"], tmp_path)
    assert r.returncode == 0, r
    assert r.json()["steps"] == 6
    r = run_cli(["schedule", "torus:4x4", "-c", "allreduce", "-a", "swing", "-O",
                 "variant=fast"], tmp_path)
    assert r.returncode != 0
    assert len(r.stderr_lines) == 1, r
    assert "variant must be one of bandwidth, latency" in r.stderr


def test_fold_partner_is_r_minus_q():
    s = swing_schedule(topology("ring:6"), "allreduce", variant="bandwidth")
    first, last = _rows(s, 1), _rows(s, s.last_step)
    assert set(zip(first["src"].tolist(), first["dst"].tolist())) == {(4, 0), (5, 1)}
    assert (first["op"] == REDUCE).all() and len(first) == 2 * 6
    assert set(zip(last["src"].tolist(), last["dst"].tolist())) == {(0, 4), (1, 5)}
    assert (last["op"] == COPY).all() and len(last) == 2 * 6


# ------------------------------------------------------------------------------ multiport
@pytest.mark.parametrize("collective,variant", [("allreduce", "bandwidth"),
                                                ("allreduce", "latency"),
                                                ("reduce_scatter", "bandwidth"),
                                                ("allgather", "bandwidth")])
@pytest.mark.parametrize("spec", ["ring:8", "ring:6", "torus:4x4", "torus:4x8", "torus:8x8",
                                  "torus:4x4x4", "torus:3x5", "mesh:4x4", "ring:2"])
def test_multiport_verifies(spec, collective, variant):
    s = swing_schedule(topology(spec), collective, variant=variant, multiport=True)
    report = _checked(s)
    assert report.valid, report.summary()
    plain = swing_schedule(topology(spec), collective, variant=variant)
    assert s.num_steps == plain.num_steps and s.meta["multiport"]


def test_multiport_parts():
    # torus:4x8: 2D = 4 parts of a quarter each; part 0 starts with dimension 0 (rows), part 1
    # with dimension 1 (columns), parts 2 and 3 the same mirrored
    s = swing_schedule(topology("torus:4x8"), "allreduce", variant="latency", multiport=True)
    t = _rows(s, 1)
    for part, (row_move, mirrored) in enumerate([(True, False), (False, False),
                                                 (True, True), (False, True)]):
        mine = t[t["lo"] == part / 4]
        assert (mine["hi"] == (part + 1) / 4).all()
        assert (((mine["src"] // 8) != (mine["dst"] // 8)) == row_move).all()
        size = 4 if row_move else 8
        stride = 8 if row_move else 1
        coord = (mine["src"] // stride) % size
        moved = (mine["dst"] // stride) % size
        sign = -1 if mirrored else 1
        assert (moved == np.where(coord % 2 == 0, coord + sign, coord - sign) % size).all()
    # every part keeps the per-rank byte count: (p-1)/p of the vector in each phase, in all
    b = swing_schedule(topology("torus:4x8"), "allreduce", variant="bandwidth", multiport=True)
    rs = b.transfers[b.transfers["step"] <= 5]
    sent = np.bincount(rs["src"], weights=(rs["hi"] - rs["lo"]) / 32, minlength=32)
    assert sent == pytest.approx(np.full(32, 31 / 32))


def test_multiport_option_through_generate():
    s = tc.generate("torus:4x4", "allreduce", "swing", multiport="yes")
    assert s.meta["multiport"] is True and _checked(s).valid


@pytest.mark.parametrize("spec", ["ring:6", "ring:13", "uniring:10"])
def test_a_folded_allgather_never_sends_a_rank_its_own_shard(spec):
    s = tc.generate(spec, "allgather", "swing")
    assert s.meta["folded"] > 0 and tc.verify(s).valid
    t = s.transfers
    assert not np.any(t["shard"] == t["dst"])
