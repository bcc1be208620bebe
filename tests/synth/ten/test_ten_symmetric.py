"""Translated all-gathers on networks with a translation symmetry (synth.ten.cayley): the default
reaches the chunk bound on the tori with mixed speeds where the greedy did not, the schedule
is valid and the link model takes at most the search's time, and it is used only where the
network (speeds included) is invariant."""

import json
import math

import numpy as np
import pytest
from click.testing import CliRunner

from topocoll.cli.main import cli
from topocoll.errors import UnsupportedError
from topocoll.schedule import simulate, verify
from topocoll.synth.ten import chunk_lower_bound, events_to_schedule, synthesize, ten_problem
from topocoll.synth.ten.cayley import TRIES, symmetric_events, translation_servers
from topocoll.synth.ten.search import GREEDY_DISCRETIZATION, repaired
from topocoll.topology import topology
from topocoll.topology.families.lattice import with_dimension_bandwidth

GIB = 2**30


def dims(spec, gib_per_s, latency="0.5us"):
    return with_dimension_bandwidth(topology(spec, latency=latency),
                                    [g * GIB for g in gib_per_s])


@pytest.mark.parametrize("latency", ["10us", "0.5us"])
def test_torus_4x4x4_4_1_1_at_the_bound(latency):
    # the greedy with 16 restarts, the ILP repair and both discretizations ended at 3960 us
    # (1.039x the bound) at 10 us; the translated schedule is at the bound, 3810 us
    topo = dims("torus:4x4x4", (100, 25, 25), latency)
    for seed in range(3):
        s = synthesize(topo, "allgather", size=GIB, seed=seed)
        report = verify(s)
        assert report.valid, report.summary()
        bound = s.meta["chunk_lower_bound"]
        assert bound * (1 - 1e-9) <= simulate(s, GIB).time <= 1.01 * bound
        assert s.meta["symmetric"]["kept"] and s.meta["restart_makespans"] == []
    assert round(bound * 1e6, 1) == (3810.0 if latency == "10us" else 3753.0)
    greedy = synthesize(topo, "allgather", size=GIB, symmetric=False)
    if latency == "10us":
        assert simulate(greedy, GIB).time > 1.03 * bound


def hypercube(fast):
    """A 4-cube whose links along the first dimension (label 1) run at ``fast`` GiB/s, the
    others at 25."""
    t = topology("hypercube:4", latency="0.5us")
    return t.with_links(bandwidth=np.where((t.src ^ t.dst) == 1, fast, 25) * GIB)


@pytest.mark.parametrize("spec,speeds,chunks", [
    ("torus:4x4", (100, 25), 1), ("torus:4x6", (50, 25), 2), ("torus:3x4x2", (25, 50, 100), 1),
    ("torus:8", (50,), 3), ("hypercube:4", 100, 2)])
def test_symmetric_events_valid_and_timed(spec, speeds, chunks):
    topo = hypercube(speeds) if spec.startswith("hypercube") else dims(spec, speeds)
    p = ten_problem(topo, "allgather", size=GIB, chunks=chunks)
    bound = chunk_lower_bound(p)
    r = symmetric_events(topo, p.link_cost, p.link_steps, chunks, bound, seed=1)
    s = events_to_schedule(p, r.events)
    report = verify(s)
    assert report.valid, report.summary()
    # one send per chunk and node that lacks it; every link carries its sends one at a time
    assert r.events.size == p.num_chunks * (topo.num_nodes - 1)
    ends = r.events["start"] + p.link_steps[r.events["link"]]
    assert r.makespan == ends.max()
    for link in np.unique(r.events["link"]):
        starts = np.sort(r.events["start"][r.events["link"] == link])
        assert np.all(np.diff(starts) >= p.link_steps[link])
    assert bound * (1 - 1e-9) <= simulate(s, GIB).time <= r.time * (1 + 1e-9)
    again = symmetric_events(topo, p.link_cost, p.link_steps, chunks, bound, seed=1)
    assert np.array_equal(r.events, again.events)


def test_only_on_invariant_networks():
    mesh = with_dimension_bandwidth(topology("mesh:4x4"), [50 * GIB, 25 * GIB])
    assert translation_servers(mesh, ten_problem(mesh, "allgather").link_cost) is None
    torus = dims("torus:4x4", (50, 25))
    bw = torus.bandwidth.copy()
    bw[0] *= 2                                          # one link faster: no longer invariant
    odd = torus.with_links(bandwidth=bw)
    assert translation_servers(odd, ten_problem(odd, "allgather").link_cost) is None
    group, label, cost, link_of = translation_servers(torus,
                                                      ten_problem(torus, "allgather").link_cost)
    assert group.dims == (4, 4) and label.size == 4 and np.all(link_of >= 0)
    assert sorted(np.round(cost / cost.min(), 2).tolist()) == [1.0, 1.0, 2.0, 2.0]   # latency
    # the default tries it on mixed speeds only, and not for other collectives
    assert synthesize("torus:4x4", "allgather").meta["symmetric"] is None
    assert synthesize(mesh, "allgather").meta["symmetric"] is None
    assert synthesize(torus, "broadcast").meta["symmetric"] is None
    forced = synthesize("torus:4x4", "allgather", symmetric=True)
    assert forced.meta["symmetric"]["tries"] >= 1 and verify(forced).valid


def test_combining_collectives_and_choice_by_replay():
    topo = dims("torus:4x4x4", (100, 25, 25), "10us")
    for coll in ("reduce_scatter", "allreduce"):
        s = synthesize(topo, coll, size=GIB)
        assert verify(s).valid
        assert simulate(s, GIB).time <= 1.01 * (s.meta["chunk_lower_bound"]
                                                * (2 if coll == "allreduce" else 1))
    # not at the bound: the greedy is run too and the faster of the two kept (two chunks a
    # shard on a 2x3 torus: both end at 8335.3 us, the ILP's optimum, 1.11x the bound)
    s = synthesize(dims("torus:2x3", (100, 25)), "allgather", size=GIB, chunks=2)
    sym = s.meta["symmetric"]
    assert sym["tries"] == TRIES and not sym["kept"] and s.meta["restart_makespans"]
    assert verify(s).valid
    assert simulate(s, GIB).time <= sym["time"] * (1 + 1e-9)


@pytest.mark.parametrize("spec,speeds", [("torus:8x8", (50, 25)), ("torus:6x6", (100, 25))])
def test_translated_schedules_at_10us(spec, speeds):
    # 10 us latency: the greedy with its restarts and repairs ended at 1.009x (8x8) and 1.007x
    # (6x6, 3 slow-link and 4 fast-link times); the translated schedule reaches the bound
    topo = dims(spec, speeds, "10us")
    s = synthesize(topo, "allgather", size=GIB)
    bound = s.meta["chunk_lower_bound"]
    assert s.meta["symmetric"]["kept"] and verify(s).valid
    assert simulate(s, GIB).time == pytest.approx(bound, rel=1e-9)
    if spec == "torus:6x6":
        greedy = synthesize(topo, "allgather", size=GIB, symmetric=False)
        assert simulate(greedy, GIB).time > 1.005 * bound


def test_deadline_windows_bring_a_translated_schedule_to_the_bound():
    # the first try on the 8x8 torus 2:1 at 10 us ends at 22 fast-link times (7095 us,
    # 1.016x), at the slot bound: the per-link deadline windows bring it to 11 slow-link times
    topo = dims("torus:8x8", (50, 25), "10us")
    p = ten_problem(topo, "allgather", size=GIB, discretization=GREEDY_DISCRETIZATION)
    bound = chunk_lower_bound(p)
    first = symmetric_events(topo, p.link_cost, p.link_steps, 1, 0.0, tries=1)
    slots = math.ceil(bound / p.time_step - 1e-9)
    assert round(first.time * 1e6, 1) == 7095.0 and first.makespan == slots
    ends, events, makespan, solves = repaired(p, first.events, first.makespan, bound, 0)
    assert ends == pytest.approx(bound, rel=1e-9) and solves >= 1 and makespan == slots
    s = events_to_schedule(p, events)
    assert verify(s).valid and simulate(s, GIB).time == pytest.approx(bound, rel=1e-9)


def test_symmetric_option_errors_and_cli():
    with pytest.raises(UnsupportedError, match="symmetric applies to method='greedy'"):
        synthesize("torus:3x3", "allgather", method="ilp", symmetric=True)
    with pytest.raises(UnsupportedError, match="symmetric must be"):
        synthesize("torus:3x3", "allgather", symmetric="maybe")   # "yes" is true, as for -O
    run = CliRunner().invoke
    base = ["synth", "torus:4x4x4", "-c", "allgather", "--dim-bandwidth",
            "100GiB/s,25GiB/s,25GiB/s", "--alpha", "10us", "--json"]
    res = run(cli, base)
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["verified"] is True and doc["lower_bound_ratio"] <= 1.01
    res = run(cli, ["synth", "torus:3x3", "-c", "allgather", "--method", "ilp",
                    "--no-symmetric"])
    assert res.exit_code != 0 and "--no-symmetric applies" in res.output
