"""The frontier's schedule times: each hop bound's hop-by-hop schedule, priced independently,
and the fastest marked."""

import json

import pytest
from click.testing import CliRunner

from topocoll.cli.main import cli
from topocoll.schedule.cost import evaluate
from topocoll.throughput import alltoall_schedule, hop_frontier, path_throughput
from topocoll.throughput.schedule import pipelined_alltoall_schedule
from topocoll.topology import topology


@pytest.mark.parametrize("size", [1024, 2**30])
def test_each_bound_gets_its_schedule_time_and_the_fastest_is_marked(size):
    t = topology("genkautz:12,2")
    points = hop_frontier(t, size=size)
    bounded = [p for p in points if p["max_hops"] is not None]
    assert len(bounded) >= 2
    for p in bounded:
        res = path_throughput(t, max_hops=p["max_hops"])
        lock = evaluate(alltoall_schedule(res, t), size)
        pipe = evaluate(pipelined_alltoall_schedule(res, t), size)
        ev = min(lock, pipe, key=lambda e: e.time)
        assert p["schedule"] == ("lockstep" if ev is lock else "pipelined")
        assert p["schedule_time"] == pytest.approx(ev.time, rel=1e-12)
        assert p["schedule_steps"] == ev.steps
        assert p["T_L"] + p["T_B"] == pytest.approx(p["schedule_time"], rel=1e-12)
    best = [p for p in bounded if p["best"]]
    assert len(best) == 1
    assert best[0]["schedule_time"] == min(p["schedule_time"] for p in bounded)
    assert "schedule_time" not in points[-1]          # the unbounded point has no routes
    # small messages take the few-step lockstep schedule, large ones the pipelined one
    assert best[0]["schedule"] == ("lockstep" if size == 1024 else "pipelined")


def test_without_a_size_the_frontier_has_no_schedule_times():
    assert all("schedule_time" not in p for p in hop_frontier(topology("ring:5")))


def test_cli_frontier_reports_schedule_times():
    res = CliRunner().invoke(cli, ["alltoall", "genkautz:12,2", "--frontier", "--size", "1MiB",
                                   "--json"])
    doc = json.loads(res.output)
    bounded = [p for p in doc["frontier"] if p["max_hops"] is not None]
    assert sum(p["best"] for p in bounded) == 1
    assert all(p["schedule_time"] > 0 for p in bounded)
