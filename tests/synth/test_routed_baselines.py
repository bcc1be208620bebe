"""The rank-order baselines (rankring, rd, pat): peers and blocks worked by hand, verified
schedules on rings, tori, meshes, hypercubes and random strongly connected digraphs (sizes that
are not powers of two among them), step and byte counts read from the transfers, the equalities
with ``ring`` and ``rhd`` where the rank order is the topology's, broken schedules refused, and
the generators through ``generate`` and the CLI."""

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

import topocoll as tc
from tests.cli.conftest import run_cli
from tests.helpers import strongly_connected_digraphs
from topocoll.collectives import COPY, REDUCE
from topocoll.errors import InputTypeError, NotStronglyConnectedError, UnsupportedError
from topocoll.synth import ALGORITHMS
from topocoll.synth.baselines import ring_schedule
from topocoll.synth.classic import rhd_schedule
from topocoll.synth.routed_baselines import (
    PAT_COLLECTIVES,
    RANKRING_COLLECTIVES,
    RD_COLLECTIVES,
    pat_offsets,
    pat_schedule,
    rankring_schedule,
    rd_peers,
    rd_schedule,
)
from topocoll.topology import Topology, topology

# (algorithm, collective, options): every schedule the three generators make
KINDS = ([("rankring", c, {}) for c in RANKRING_COLLECTIVES]
         + [("rd", c, {"variant": "bandwidth"}) for c in RD_COLLECTIVES]
         + [("rd", "allreduce", {"variant": "latency"})]
         + [("pat", c, {}) for c in PAT_COLLECTIVES])
MAKERS = {"rankring": rankring_schedule, "rd": rd_schedule, "pat": pat_schedule}
# 22 named shapes; sizes 2..64, most of them not powers of two
SHAPES = ["ring:2", "ring:3", "ring:5", "ring:6", "ring:7", "ring:8", "ring:12", "ring:17",
          "uniring:5", "uniring:8", "torus:4x4", "torus:3x5", "torus:2x3x2", "torus:4x4x4",
          "mesh:3x4", "mesh:2x5", "mesh:4x4", "hypercube:3", "hypercube:4", "complete:7",
          "dcirculant:9:1,3", "kautz:2,2"]


def _make(kind, topo):
    algorithm, collective, options = kind
    return MAKERS[algorithm](topo, collective, **options)


def _rows(schedule, step, src=None):
    t = schedule.transfers
    rows = t[t["step"] == step]
    return rows if src is None else rows[rows["src"] == src]


def _sent_per_rank(schedule, steps=None):
    """Fractions of the vector each rank sends (in ``steps``, a range, if given)."""
    t = schedule.transfers
    if steps is not None:
        t = t[(t["step"] >= steps[0]) & (t["step"] <= steps[-1])]
    p = schedule.num_nodes
    return np.bincount(t["src"], weights=(t["hi"] - t["lo"]) / p, minlength=p)


def _table(schedule, step, src):
    """``(peers, shards)`` that ``src`` sends to in ``step``."""
    rows = _rows(schedule, step, src)
    return set(rows["dst"].tolist()), set(rows["shard"].tolist())


# ------------------------------------------------------------------------------ by hand
def test_rankring_by_hand_n4():
    # the ring rule: reduce-scatter step t, rank r reduces shard r - t into r + 1; allgather
    # step t (after the N-1 reduce-scatter steps), rank r copies shard r - t + 1 to r + 1
    s = rankring_schedule(topology("torus:2x2"), "allreduce")
    for t in (1, 2, 3):
        for r in range(4):
            assert _table(s, t, r) == ({(r + 1) % 4}, {(r - t) % 4})
            assert (_rows(s, t, r)["op"] == REDUCE).all()
            assert _table(s, 3 + t, r) == ({(r + 1) % 4}, {(r - t + 1) % 4})
            assert (_rows(s, 3 + t, r)["op"] == COPY).all()


def test_rd_peers_by_hand():
    # latency: partner r xor 2^s, near first; bandwidth: r xor N/2^(s+1), far first
    assert rd_peers(8, "latency").tolist() == [[1, 0, 3, 2, 5, 4, 7, 6],
                                               [2, 3, 0, 1, 6, 7, 4, 5],
                                               [4, 5, 6, 7, 0, 1, 2, 3]]
    assert rd_peers(8, "bandwidth").tolist() == rd_peers(8, "latency")[::-1].tolist()


def test_rd_blocks_by_hand_n8():
    # recursive halving: rank 0 hands 4 the half 4 keeps ({4..7}), then 2 the quarter {2, 3},
    # then 1 {1}; recursive doubling sends back what 0 holds reduced: {0}, {0, 1}, {0..3}
    s = rd_schedule(topology("ring:8"), "allreduce")
    expected = {1: ({4}, {4, 5, 6, 7}), 2: ({2}, {2, 3}), 3: ({1}, {1}),
                4: ({1}, {0}), 5: ({2}, {0, 1}), 6: ({4}, {0, 1, 2, 3})}
    for step, table in expected.items():
        assert _table(s, step, 0) == table, step
        assert (_rows(s, step, 0)["op"] == (REDUCE if step <= 3 else COPY)).all()
    # rank 5 in the halving: 5 xor 4 = 1 keeps {0..3}; 5 xor 2 = 7 keeps {6, 7}; 4 keeps {4}
    assert [_table(s, t, 5) for t in (1, 2, 3)] == [({1}, {0, 1, 2, 3}), ({7}, {6, 7}),
                                                     ({4}, {4})]
    lat = rd_schedule(topology("ring:8"), "allreduce", variant="latency")
    for step, peer in ((1, 1), (2, 2), (3, 4)):
        assert _table(lat, step, 0) == ({peer}, set(range(8)))


def test_rd_fold_by_hand_n6():
    # q = 4: ranks 4, 5 reduce everything into 0, 1 first and get the result back last
    s = rd_schedule(topology("ring:6"), "allreduce")
    first, last = _rows(s, 1), _rows(s, s.last_step)
    assert set(zip(first["src"].tolist(), first["dst"].tolist())) == {(4, 0), (5, 1)}
    assert (first["op"] == REDUCE).all() and len(first) == 2 * 6
    assert set(zip(last["src"].tolist(), last["dst"].tolist())) == {(0, 4), (1, 5)}
    assert (last["op"] == COPY).all() and len(last) == 2 * 6
    # rank x < 4 stands for shards x and x + 4 (if < 6). First halving step (distance 2):
    # rank 0 hands 2 what 2 keeps, ranks {2, 3}: shards {2, 3} (6 and 7 are none); rank 2
    # hands 0 ranks {0, 1}: shards {0, 4, 1, 5}
    assert _table(s, 2, 0) == ({2}, {2, 3})
    assert _table(s, 2, 2) == ({0}, {0, 1, 4, 5})


def test_pat_offsets_by_hand():
    # N = 8: d = 4, 2, 1; the held offsets double: {0} -> {0, 4} -> {0, 2, 4, 6} -> all
    assert [(d, x.tolist()) for d, x in pat_offsets(8)] == [(4, [0]), (2, [0, 4]),
                                                             (1, [0, 2, 4, 6])]
    # N = 6: L = 3, d = 4, 2, 1; at d = 2 offset 4 + 2 = 0 is held already, so only 0 goes;
    # then {0, 2, 4} + 1 are all new: 1 + 1 + 3 = 5 = N - 1 shards received
    assert [(d, x.tolist()) for d, x in pat_offsets(6)] == [(4, [0]), (2, [0]), (1, [0, 2, 4])]
    # N = 5: d = 4, 2, 1; {0} -> {0, 4} -> {0, 1, 2, 4} -> 3 is the one left
    assert [(d, x.tolist()) for d, x in pat_offsets(5)] == [(4, [0]), (2, [0, 4]), (1, [2])]


def test_pat_schedule_by_hand_n8():
    # rank r sends to r - d_s the shards r + offsets: rank 0 -> 4 {0}, -> 6 {0, 4},
    # -> 7 {0, 2, 4, 6}; rank 3 -> 7 {3}, -> 1 {3, 7}, -> 2 {3, 5, 7, 1}
    s = pat_schedule(topology("ring:8"), "allgather")
    assert [_table(s, t, 0) for t in (1, 2, 3)] == [({4}, {0}), ({6}, {0, 4}),
                                                     ({7}, {0, 2, 4, 6})]
    assert [_table(s, t, 3) for t in (1, 2, 3)] == [({7}, {3}), ({1}, {3, 7}),
                                                     ({2}, {1, 3, 5, 7})]
    # reduce-scatter: the same transfers backwards, near first, reducing
    rs = pat_schedule(topology("ring:8"), "reduce_scatter")
    assert [_table(rs, t, 0) for t in (1, 2, 3)] == [({1}, {1, 3, 5, 7}), ({2}, {2, 6}),
                                                      ({4}, {4})]
    assert (rs.transfers["op"] == REDUCE).all()


def test_pat_partners_far_first():
    # on a ring the route of step s is min(d_s, N - d_s) hops: the far steps come first
    for n in (8, 16, 32):
        s = pat_schedule(topology(f"ring:{n}"), "allgather")
        hops = [min((r - d) % n, (d - r) % n) for r, d in
                ((int(_rows(s, t)["src"][0]), int(_rows(s, t)["dst"][0]))
                 for t in range(1, s.last_step + 1))]
        assert hops == sorted(hops, reverse=True) and hops[-1] == 1


# ------------------------------------------------------------------------------ verification
@pytest.mark.parametrize("kind", KINDS, ids=lambda k: f"{k[0]}-{k[1]}-{k[2].get('variant', '')}")
@pytest.mark.parametrize("spec", SHAPES)
def test_verifies(spec, kind):
    s = _make(kind, topology(spec))
    report = tc.verify(s)
    assert report.valid, report.summary()
    assert s.algorithm == kind[0]


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(strongly_connected_digraphs(min_nodes=2, max_nodes=11))
def test_verifies_on_random_strongly_connected_digraphs(topo):
    for kind in KINDS:
        report = tc.verify(_make(kind, topo))
        assert report.valid, (kind, topo.name, report.summary())


def test_routed_only_where_a_transfer_leaves_the_links():
    assert rankring_schedule(topology("ring:8"), "allreduce").routing is None
    assert rd_schedule(topology("hypercube:4"), "allreduce").routing is None
    assert pat_schedule(topology("complete:6"), "allgather").routing is None
    s = rankring_schedule(topology("torus:4x4"), "allgather")
    assert s.routing == "shortest"
    # 3 -> 4 is no torus link: without routes the verifier refuses it
    assert not tc.verify(s.replace(routing=None)).valid
    assert not tc.verify(pat_schedule(topology("ring:8"), "allgather")
                         .replace(routing=None)).valid


def test_no_path_is_refused_by_name():
    line = Topology(3, [0, 1], [1, 2], 1.0, 1e-6, name="line3")
    with pytest.raises(NotStronglyConnectedError, match="line3 has no path 2 -> 0") as err:
        rankring_schedule(line, "allgather")
    assert err.value.pair == (2, 0)
    with pytest.raises(NotStronglyConnectedError, match="strongly connected"):
        pat_schedule(line, "allgather")


# ------------------------------------------------------------------------------ the equalities
@pytest.mark.parametrize("collective", RANKRING_COLLECTIVES)
@pytest.mark.parametrize("n", [2, 3, 4, 5, 7, 8, 12])
def test_rankring_is_ring_on_uniring(n, collective):
    topo = topology(f"uniring:{n}")
    ours, theirs = rankring_schedule(topo, collective), ring_schedule(topo, collective)
    assert ours.routing is None
    assert ours.transfers.dtype == theirs.transfers.dtype
    assert (ours.transfers == theirs.transfers).all()


@pytest.mark.parametrize("collective", RD_COLLECTIVES)
@pytest.mark.parametrize("k", [1, 2, 3, 4, 5])
def test_rd_is_rhd_on_the_hypercube(k, collective):
    topo = topology(f"hypercube:{k}")
    ours, theirs = rd_schedule(topo, collective), rhd_schedule(topo, collective)
    assert ours.routing is None and ours.num_steps == theirs.num_steps
    for step in range(1, ours.last_step + 1):
        assert _sent_per_rank(ours, [step]) == pytest.approx(_sent_per_rank(theirs, [step]))
    assert (ours.sorted().transfers == theirs.sorted().transfers).all()


# ------------------------------------------------------------------------------ counts
@pytest.mark.parametrize("n", [2, 3, 5, 8, 12, 17])
def test_rankring_counts(n):
    s = rankring_schedule(topology(f"ring:{n}"), "allreduce")
    assert s.num_steps == 2 * (n - 1)
    for phase in (range(1, n), range(n, 2 * n - 1)):
        assert _sent_per_rank(s, phase) == pytest.approx(np.full(n, (n - 1) / n))
        assert all(len(_rows(s, t)) == n for t in phase)       # one shard per rank per step


@pytest.mark.parametrize("n", [2, 3, 5, 6, 8, 12, 16, 17, 31, 32])
def test_rd_counts(n):
    topo = topology(f"ring:{n}")
    q = 1 << (n.bit_length() - 1)
    levels, fold = int(math.log2(q)), (2 if q != n else 0)
    bw = rd_schedule(topo, "allreduce")
    lat = rd_schedule(topo, "allreduce", variant="latency")
    assert bw.num_steps == 2 * levels + fold and lat.num_steps == levels + fold
    assert rd_schedule(topo, "reduce_scatter").num_steps == levels + fold
    assert bw.meta == {"variant": "bandwidth", "folded": n - q}
    if q == n:      # each phase: (N-1)/N of the vector per rank; latency: whole vectors
        for phase in (range(1, levels + 1), range(levels + 1, 2 * levels + 1)):
            assert _sent_per_rank(bw, phase) == pytest.approx(np.full(n, (n - 1) / n))
        assert _sent_per_rank(lat) == pytest.approx(np.full(n, levels))
        assert (lat.transfers["op"] == REDUCE).all()


@pytest.mark.parametrize("collective", PAT_COLLECTIVES)
@pytest.mark.parametrize("n", [2, 3, 5, 6, 7, 8, 9, 12, 16, 17, 31, 33, 64])
def test_pat_counts(n, collective):
    s = pat_schedule(topology(f"ring:{n}"), collective)
    levels = math.ceil(math.log2(n))
    assert s.num_steps == levels
    assert _sent_per_rank(s) == pytest.approx(np.full(n, (n - 1) / n))
    if n & (n - 1) == 0:       # 2^s shards per rank at allgather step s (reversed for RS)
        per_step = [len(_rows(s, t)) // n for t in range(1, levels + 1)]
        grows = [2 ** j for j in range(levels)]
        assert per_step == (grows if collective == "allgather" else grows[::-1])


# ------------------------------------------------------------------------------ broken ones
@pytest.mark.parametrize("kind", KINDS, ids=lambda k: f"{k[0]}-{k[1]}-{k[2].get('variant', '')}")
@pytest.mark.parametrize("spec", ["ring:5", "ring:8", "mesh:2x3", "torus:3x5"])
def test_dropping_a_transfer_fails(spec, kind):
    # no transfer is redundant: on up to 8 nodes each one dropped in turn, else three of them
    s = _make(kind, topology(spec))
    assert tc.verify(s).valid
    n = s.num_transfers
    for i in (range(n) if s.num_nodes <= 8 else (0, n // 2, n - 1)):
        assert not tc.verify(s.replace(transfers=np.delete(s.transfers, i))).valid, i


def test_forwarding_too_early_fails():
    # rank 0's last PAT step forwards shard 4, which reaches it only in step 1; moved into step 1
    # it sends what it does not hold yet
    s = pat_schedule(topology("ring:8"), "allgather")
    t = s.transfers.copy()
    i = int(np.flatnonzero((t["step"] == 2) & (t["src"] == 0) & (t["shard"] == 4))[0])
    t["step"][i] = 1
    assert not tc.verify(s.replace(transfers=t)).valid


# ------------------------------------------------------------------------------ generate, CLI
def test_registered():
    for name, collectives in (("rankring", RANKRING_COLLECTIVES), ("rd", RD_COLLECTIVES),
                              ("pat", PAT_COLLECTIVES)):
        g = ALGORITHMS[name]
        assert g.name == name and g.collectives == collectives
        assert "rank order" in g.summary and "through routes" in g.summary
    assert list(ALGORITHMS["rd"].options) == ["variant"]
    assert list(ALGORITHMS["rankring"].options) == ["routing"] and not ALGORITHMS["pat"].options


def test_generate():
    s = tc.generate("torus:4x4", "allreduce", "rankring")
    assert s.algorithm == "rankring" and s.num_steps == 30 and tc.verify(s).valid
    s = tc.generate("torus:3x5", "allreduce", "rd", variant="latency")
    assert s.meta == {"variant": "latency", "folded": 7} and s.num_steps == 5
    assert tc.generate("ring:8", "allreduce", "rd").meta["variant"] == "bandwidth"
    s = tc.generate("mesh:3x4", "reduce_scatter", "pat")
    assert s.num_steps == 4 and s.routing == "shortest" and tc.verify(s).valid
    # the step and link models price the routed schedules
    cost = tc.evaluate(s, 1 << 20)
    assert cost.steps == 4 and cost.algorithm == "pat" and cost.time > 0
    assert tc.simulate(s, 1 << 20).time > 0


@pytest.mark.parametrize("algorithm,collective,options,steps", [
    ("rankring", "allgather", [], 15), ("rd", "allreduce", ["-O", "variant=latency"], 4),
    ("rd", "reduce_scatter", [], 4), ("pat", "allgather", [], 4)])
def test_cli(tmp_path, algorithm, collective, options, steps):
    r = run_cli(["schedule", "torus:4x4", "-c", collective, "-a", algorithm, *options,
                 "--json"], tmp_path)
    assert r.returncode == 0, r
    doc = r.json()
    assert doc["algorithm"] == algorithm and doc["steps"] == steps and doc["verified"] is True


@pytest.mark.parametrize("args,message", [
    (["-c", "allreduce", "-a", "rd", "-O", "variant=fast"],
     "option variant must be one of bandwidth, latency"),
    (["-c", "allgather", "-a", "rd", "-O", "variant=latency"],
     "latency variant (recursive doubling of the whole vector) makes allreduce only"),
    (["-c", "allreduce", "-a", "pat"], "pat makes allgather, reduce_scatter; not allreduce"),
    (["-c", "allgather", "-a", "rankring", "-O", "bogus=1"],
     "algorithm rankring has no option bogus")])
def test_cli_errors_are_one_line(tmp_path, args, message):
    r = run_cli(["schedule", "torus:4x4", *args], tmp_path)
    assert r.returncode != 0
    assert len(r.stderr_lines) == 1, r
    assert message in r.stderr


def test_errors_name_the_rule():
    topo = topology("ring:8")
    with pytest.raises(UnsupportedError, match="rd: variant must be one of bandwidth, latency"):
        rd_schedule(topo, "allreduce", variant="fast")
    with pytest.raises(InputTypeError, match="rd: variant must be a string"):
        rd_schedule(topo, "allreduce", variant=3)
    with pytest.raises(UnsupportedError, match="latency variant .* makes allreduce only"):
        rd_schedule(topo, "reduce_scatter", variant="latency")
    with pytest.raises(UnsupportedError, match="algorithm rankring makes"):
        rankring_schedule(topo, "broadcast", root=0)
    with pytest.raises(UnsupportedError, match="algorithm pat makes allgather, reduce_scatter"):
        pat_schedule(topo, "allreduce")
    with pytest.raises(InputTypeError, match="pat: topology must be a Topology"):
        pat_schedule("ring:8", "allgather")
    with pytest.raises(UnsupportedError, match="rd needs at least 2 nodes"):
        rd_schedule(Topology(1, [], [], 1.0, 1e-6, name="one"), "allreduce")
    with pytest.raises(UnsupportedError, match="option variant must be one of"):
        tc.generate("ring:8", "allreduce", "rd", variant="fast")
