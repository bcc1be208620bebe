"""Pipelined all-to-all schedules from the path LP: they verify, their bandwidth time is within
(rounds + L - 1) / rounds of the LP time (the bound the construction proves), and their
link-model time comes within 1.10x of the LP time once latency is small."""

import numpy as np
import pytest
from hypothesis import given, settings

from tests.helpers import strongly_connected_digraphs
from topocoll.errors import UnsupportedError
from topocoll.schedule.cost import evaluate
from topocoll.schedule.linkmodel import simulate
from topocoll.schedule.verify import verify
from topocoll.throughput import link_throughput, path_throughput
from topocoll.throughput.schedule import pipelined_alltoall_schedule
from topocoll.topology import topology

SIZE = 2**34          # 16 GiB per node: latency is a small part of the time


def lp_time(t, res, size=SIZE):
    return size / t.num_nodes / res.lam


@pytest.mark.parametrize("spec", ["torus:4x4", "hypercube:4", "randomregular:16,4:1",
                                  "debruijn:2,4", "ring:7", "torus:3x5"])
def test_verifies_and_meets_the_pipelining_bound(spec):
    t = topology(spec)
    res = path_throughput(t, bounds=False)
    s = pipelined_alltoall_schedule(res, t)
    assert verify(s).valid
    rounds, longest = s.meta["rounds"], s.meta["longest_path"]
    assert s.num_steps == rounds + longest - 1
    e = evaluate(s, SIZE, check=False)
    # the construction's bound, and the exact step-model time the builder chose rounds by
    assert e.T_B <= (rounds + longest - 1) / rounds * lp_time(t, res) * (1 + 1e-9)
    assert e.T_B == pytest.approx(s.meta["T_B_over_routes"] * lp_time(t, res), rel=1e-9)
    assert s.meta["T_B_over_routes"] <= 1.05 + 1e-12
    # and the link model, where links do not wait for each other's steps
    assert simulate(s, SIZE).time <= 1.10 * lp_time(t, res)


@pytest.mark.parametrize("spec", ["torus:5x5", "hypercube:5", "randomregular:16,4:1"])
def test_few_balanced_rounds_reach_the_link_model_target(spec):
    t = topology(spec)
    res = path_throughput(t, max_hops=0, bounds=False)
    s = pipelined_alltoall_schedule(res, t, rounds=6)
    assert verify(s).valid
    assert simulate(s, SIZE).time <= 1.10 * lp_time(t, res)


def test_balanced_offsets_cut_the_step_time():
    t = topology("hypercube:5")
    res = path_throughput(t, max_hops=0, bounds=False)
    plain = pipelined_alltoall_schedule(res, t, rounds=1, balance=False)
    even = pipelined_alltoall_schedule(res, t, rounds=1)
    assert verify(even).valid
    # the offsets only move paths in time: same transfers per link, fewer busy-link peaks
    assert even.num_transfers == plain.num_transfers
    assert even.num_steps == plain.num_steps
    tb = [evaluate(x, SIZE, check=False).T_B / lp_time(t, res) for x in (plain, even)]
    assert tb[1] < tb[0] - 0.05
    assert tb[1] == pytest.approx(even.meta["T_B_over_routes"], rel=1e-9)


def test_max_transfers_limits_the_rounds():
    t = topology("torus:4x4")
    res = path_throughput(t, bounds=False)
    links = int(res.paths.hops.sum())
    free = pipelined_alltoall_schedule(res, t, ramp=0.01, max_transfers=None)
    capped = pipelined_alltoall_schedule(res, t, ramp=0.01, max_transfers=3 * links)
    assert free.meta["rounds"] > 3 and free.num_transfers > 3 * links
    assert capped.meta["rounds"] == 3 and capped.num_transfers <= 3 * links
    assert verify(capped).valid


def test_breaking_the_schedule_fails_the_verifier():
    t = topology("torus:4x4")
    res = path_throughput(t, bounds=False)
    s = pipelined_alltoall_schedule(res, t, rounds=3)
    tr = s.transfers
    assert verify(s).valid
    later = np.flatnonzero(tr["step"] > 1)
    # a piece sent one step earlier than it arrived: the sender does not hold it yet
    i = later[np.argmax(tr["src"][later] != tr["shard"][later] // 16)]
    early = tr.copy()
    early["step"][i] -= 1
    assert verify(s.replace(transfers=early)).counts.get("causality", 0) >= 1
    # a piece dropped: its destination never gets it (or a later hop sends what never came)
    gone = verify(s.replace(transfers=np.delete(tr, later[0])))
    assert not gone.valid
    # a piece cut short: the end state lacks the rest of the range
    short = tr.copy()
    last = np.flatnonzero(tr["dst"] == tr["shard"] % 16)[0]
    short["hi"][last] = (short["lo"][last] + short["hi"][last]) / 2
    assert verify(s.replace(transfers=short)).counts.get("incomplete", 0) >= 1


def test_more_rounds_approach_the_lp():
    t = topology("torus:4x4")
    res = path_throughput(t, bounds=False)
    ratios = [evaluate(pipelined_alltoall_schedule(res, t, rounds=k, balance=False), SIZE,
                       check=False).T_B / lp_time(t, res) for k in (1, 4, 16)]
    assert ratios[0] > ratios[1] > ratios[2] >= 1 - 1e-9
    # one unbalanced round is the lockstep hop-by-hop schedule of the same routes (exact
    # shares here)
    from topocoll.throughput import alltoall_schedule

    lockstep = evaluate(alltoall_schedule(res, t), SIZE, check=False).T_B / lp_time(t, res)
    assert ratios[0] == pytest.approx(lockstep, rel=1e-9) and lockstep > 1.5


@settings(max_examples=10, deadline=None)
@given(strongly_connected_digraphs(max_nodes=7))
def test_random_networks(t):
    res = path_throughput(t, bounds=False)
    s = pipelined_alltoall_schedule(res, t, rounds=6)
    assert verify(s).valid
    bound = (6 + s.meta["longest_path"] - 1) / 6
    assert evaluate(s, SIZE, check=False).T_B <= bound * lp_time(t, res) * (1 + 1e-6)


def test_needs_routes():
    t = topology("ring:5")
    with pytest.raises(UnsupportedError, match="routes"):
        pipelined_alltoall_schedule(link_throughput(t), t)


def test_schedule_command_makes_it_by_default(tmp_path):
    from click.testing import CliRunner

    from topocoll.cli.main import cli
    from topocoll.schedule.io import load_schedule

    out = tmp_path / "a.json"
    res = CliRunner().invoke(cli, ["schedule", "torus:4x4", "-c", "alltoall", "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert "x the LP time (bound" in res.output
    s = load_schedule(str(out))
    assert s.algorithm == "alltoall-pipelined" and verify(s).valid
    bad = CliRunner().invoke(cli, ["schedule", "torus:4x4", "-c", "allgather", "-a", "lp"])
    assert bad.exit_code == 2 and "makes alltoall" in bad.output
    few = CliRunner().invoke(cli, ["schedule", "torus:4x4", "-c", "alltoall", "-O", "rounds=3",
                                   "-o", str(out)])
    assert few.exit_code == 0 and load_schedule(str(out)).meta["rounds"] == 3


@pytest.mark.parametrize("size", [2**24, 2**30, 2**34])
def test_size_caps_the_rounds_by_link_latency(size):
    # every link pays one latency per piece it carries: with the size given, the pieces on the
    # busiest link cost at most ramp of the LP time, and one more round would cost more
    t = topology("torus:4x4", latency=1e-5)
    res = path_throughput(t, bounds=False)
    free = pipelined_alltoall_schedule(res, t, ramp=0.01)
    s = pipelined_alltoall_schedule(res, t, ramp=0.01, size=size)
    assert verify(s).valid
    tr = s.transfers
    per_link = np.bincount(tr["src"].astype(np.int64) * 16 + tr["dst"], minlength=256)
    budget = 0.01 * lp_time(t, res, size)
    hops = np.zeros(256)
    for p in range(len(res.paths)):
        nodes = [int(res.paths.src[p])] + [int(t.pairs[1][e]) for e in
                                           res.paths.edges[res.paths.ptr[p]:res.paths.ptr[p + 1]]]
        for u, v in zip(nodes, nodes[1:]):
            hops[u * 16 + v] += 1
    r = s.meta["rounds"]
    assert per_link.max() * 1e-5 <= budget or r == 1
    assert r == min(free.meta["rounds"], max(1, int(budget / (hops.max() * 1e-5))))
    assert s.meta["latency_rounds"] == max(1, int(budget / (hops.max() * 1e-5)))
