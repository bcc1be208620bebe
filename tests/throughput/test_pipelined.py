"""Pipelined all-to-all schedules from the path LP: they verify, their bandwidth time is within
(rounds + L - 1) / rounds of the LP time (the bound the construction proves), and their
link-model time comes within 1.10x of the LP time once latency is small."""

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
    bound = (rounds + longest - 1) / rounds
    assert bound <= 1.05 + 1e-12
    e = evaluate(s, SIZE, check=False)
    assert e.T_B <= bound * lp_time(t, res) * (1 + 1e-9)
    # and the link model, where links do not wait for each other's steps
    assert simulate(s, SIZE).time <= 1.10 * lp_time(t, res)


def test_more_rounds_approach_the_lp():
    t = topology("torus:4x4")
    res = path_throughput(t, bounds=False)
    ratios = [evaluate(pipelined_alltoall_schedule(res, t, rounds=k), SIZE, check=False).T_B
              / lp_time(t, res) for k in (1, 4, 16)]
    assert ratios[0] > ratios[1] > ratios[2] >= 1 - 1e-9
    # one round is the lockstep hop-by-hop schedule of the same routes (exact shares here)
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
    assert "x the LP time (at most 1.05" in res.output
    s = load_schedule(str(out))
    assert s.algorithm == "alltoall-pipelined" and verify(s).valid
    bad = CliRunner().invoke(cli, ["schedule", "torus:4x4", "-c", "allgather", "-a", "lp"])
    assert bad.exit_code == 2 and "makes alltoall" in bad.output
    few = CliRunner().invoke(cli, ["schedule", "torus:4x4", "-c", "alltoall", "-O", "rounds=3",
                                   "-o", str(out)])
    assert few.exit_code == 0 and load_schedule(str(out)).meta["rounds"] == 3
