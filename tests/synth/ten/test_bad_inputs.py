"""Inputs to TEN synthesis that once gave a traceback, an empty schedule or a wrong count."""

import numpy as np
import pytest

from topocoll.errors import TopologyError, UnsupportedError
from topocoll.schedule import verify
from topocoll.synth.ten import synthesize
from topocoll.synth.ten.problem import MAX_SLOTS_PER_LINK, discretize
from topocoll.topology import topology
from topocoll.topology.unwind import fail_links, fail_nodes


@pytest.mark.parametrize("nodes", ["0,1,2", [0, 1, 3], "1,2,3"])
def test_failing_all_but_one_node_raises_instead_of_an_empty_schedule(nodes):
    with pytest.raises(TopologyError, match="needs at least 2 nodes"):
        synthesize("mesh:2x2", "allgather", fail_nodes=nodes)


def test_two_survivors_still_make_a_valid_schedule():
    s = synthesize("mesh:2x2", "allgather", fail_nodes="2,3")
    assert s.num_nodes == 2 and verify(s).valid and s.num_transfers == 2


def test_a_time_step_below_the_slot_limit_is_refused_with_the_smallest_allowed():
    cost = np.array([1e-3, 2e-3])
    with pytest.raises(UnsupportedError, match="time step too small") as err:
        discretize(cost, 1e-15)
    smallest = float(str(err.value).rsplit("at least ", 1)[1].split()[0])
    steps, f = discretize(cost, smallest * 1.01)   # just above the limit works
    assert steps.max() <= MAX_SLOTS_PER_LINK


def test_the_finest_allowed_time_step_still_gives_a_valid_schedule():
    t = topology("ring:4", bandwidth=1e9, latency=1e-6)
    chunk_time = 1e-6 + 2**20 / 4 / 1e9
    s = synthesize(t, "allgather", size="1MiB", time_step=chunk_time / (MAX_SLOTS_PER_LINK - 1))
    assert verify(s).valid and s.meta["makespan_slots"] > MAX_SLOTS_PER_LINK


def test_unwind_degree_without_switches_is_refused():
    with pytest.raises(UnsupportedError, match="no switches to unwind"):
        synthesize("torus:3x3", "allgather", unwind_degree=2)


@pytest.mark.parametrize("links", ["0-1,0-1", "0-1,1>0", "0>1,0>1"])
def test_a_failed_link_listed_twice_is_refused(links):
    with pytest.raises(TopologyError, match="listed more than once"):
        fail_links(topology("ring:4"), links)


def test_distinct_failed_links_are_all_counted_once():
    t = fail_links(topology("ring:4"), "0-1,2>3")
    assert t.num_links == 5 and t.meta["failed_links"] == [[0, 1], [1, 0], [2, 3]]
    assert t.name.endswith("links3")


def test_a_failed_node_listed_twice_is_refused():
    with pytest.raises(TopologyError, match="node 3 is listed more than once"):
        fail_nodes(topology("mesh:3x3"), "3,5,3")


@pytest.mark.parametrize("option", ["time_limit", "node_limit", "max_solves", "window"])
def test_ilp_options_with_the_greedy_are_refused_not_ignored(option):
    with pytest.raises(UnsupportedError, match=f"{option} applies to method='ilp' only"):
        synthesize("ring:4", "allgather", **{option: 5})


def test_an_allreduce_shares_one_time_limit_between_its_phases(monkeypatch):
    import topocoll.synth.ten.synthesis as module

    given = []
    real = module.synthesize_one

    def spy(*args, **kwargs):
        given.append(kwargs["limits"]["time_limit"])
        return real(*args, **kwargs)
    clock = iter([100.0, 103.0])                       # the first phase took 3 s
    monkeypatch.setattr(module, "synthesize_one", spy)
    monkeypatch.setattr(module, "clock", lambda: next(clock))
    s = synthesize("ring:4", "allreduce", method="ilp", time_limit=10)
    assert verify(s).valid and given[0] == 5.0 and given[-1] == 7.0   # reduce-scatter, allgather
