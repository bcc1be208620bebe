"""Long runs of the runtime stay flat: 2,000 calls of one ScheduleCollective and 1,000 steps of
DecentralizedDataParallel on 4 ranks (each through shared memory and through the network), and
30 process groups one after another in one process. Each rank measures itself after the
first tenth of the calls and at the end; the test checks memory, descriptors and threads, and
that nothing (processes, channel files, temporary files) is left on the host afterwards."""

import pytest

from tests.soak.soaks import (WORLD, ddp_soak, groups_soak, growth, leftovers, problems,
                              schedule_soak, snapshot)


@pytest.mark.parametrize("transport", ["network", "shared_memory"])
def test_two_thousand_schedule_calls_stay_flat(transport):
    ranks, left = schedule_soak(transport, calls=2000)
    assert [r["transport"] for r in ranks] == [transport] * WORLD
    assert [r["wrong"] for r in ranks] == [0] * WORLD, "a call computed a wrong sum"
    found = [p for rank, r in enumerate(ranks) for p in problems(r, f"rank {rank}")]
    found += leftovers(left)
    assert not found, "\n".join(found)
    if transport == "shared_memory":    # the channel check looked at something
        assert all(r["channels"] for r in ranks)


@pytest.mark.parametrize("transport", ["auto", "network"])
def test_a_thousand_gossip_steps_stay_flat(transport):
    ranks, left = ddp_soak(transport, iterations=1000)
    assert [r["iteration"] for r in ranks] == [1000] * WORLD
    assert all(r["finite"] for r in ranks), "the loss went non-finite"
    # global_avg at the end: every replica the same, so the ranks did train together
    assert all(r["replica"] == ranks[0]["replica"] for r in ranks)
    found = [p for rank, r in enumerate(ranks) for p in problems(r, f"rank {rank}")]
    found += leftovers(left)
    assert not found, "\n".join(found)
    if transport == "auto":     # shared memory, the default on one host
        assert all(r["channels"] for r in ranks)


def _grown(factor, start=None, **changes):
    start = start or snapshot()
    end = dict(start, rss_kib=int(start["rss_kib"] * factor), **changes)
    return {"start": start, "end": end, "calls": 100}


def test_the_checks_can_fail():
    assert problems(_grown(1.0), "p") == []
    assert "grew 6.0%" in problems(_grown(1.06), "p")[0]
    start = snapshot()
    more = dict(start["open"])
    more[max(more) + 1] = "socket:[1]"
    assert "more descriptors" in problems(_grown(1.0, start, fds=start["fds"] + 1, open=more),
                                          "p")[0]
    assert "threads" in problems(_grown(1.0, start, threads=start["threads"] + 1), "p")[0]
    assert leftovers({"children": [], "channel files": ["/dev/shm/topocoll-x-0-1"]}) == [
        "left behind: channel files: ['/dev/shm/topocoll-x-0-1']"]
    assert growth({"rss_kib": 100}, {"rss_kib": 103}) == pytest.approx(3.0)


def test_process_groups_made_one_after_another_leave_nothing_alive():
    # the transport chosen per group was once kept in a table that held every group alive
    # after it was destroyed: a thread of ours, three of gloo's and four descriptors a group
    figures, left = groups_soak(groups=30)
    found = problems(figures, "this process") + leftovers(left)
    assert not found, "\n".join(found)
