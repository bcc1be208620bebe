"""Ring baselines verify on their own topologies and have their textbook costs."""

import pytest

import topocoll as tc
from topocoll.errors import UnsupportedError
from topocoll.schedule import verify

M = 2.0**24


@pytest.mark.parametrize("n", [2, 3, 5, 8])
@pytest.mark.parametrize("collective,factor", [("allgather", 1), ("reduce_scatter", 1),
                                               ("allreduce", 2)])
def test_classic_ring(n, collective, factor):
    s = tc.generate(f"uniring:{n}", collective, "ring")
    assert verify(s).valid
    e = tc.evaluate(s, M, alpha=1e-6, link_bandwidth=1e9)
    assert e.steps == factor * (n - 1)
    assert e.T_L == pytest.approx(factor * (n - 1) * 1e-6)
    assert e.T_B == pytest.approx(factor * (n - 1) / n * M / 1e9, rel=1e-12)
    assert e.bw_optimal


@pytest.mark.parametrize("n", [3, 4, 7])
@pytest.mark.parametrize("collective,factor", [("allgather", 1), ("reduce_scatter", 1),
                                               ("allreduce", 2)])
def test_bidirectional_ring(n, collective, factor):
    s = tc.generate(f"ring:{n}", collective, "biring")
    assert verify(s).valid
    e = tc.evaluate(s, M, alpha=1e-6, link_bandwidth=1e9)
    assert e.steps == factor * (n - 1)
    # half a shard per link per step, node bandwidth 2e9
    assert e.T_B == pytest.approx(factor * (n - 1) / n * M / 2e9, rel=1e-12)
    assert e.bw_optimal


def test_ring_on_ring_topology_uses_one_direction():
    s = tc.generate("ring:6", "allgather", "ring")
    assert verify(s).valid
    assert set(((s.transfers["dst"] - s.transfers["src"]) % 6).tolist()) == {1}


def test_biring_needs_both_directions():
    with pytest.raises(UnsupportedError, match="no link"):
        tc.generate("uniring:5", "allgather", "biring")


def test_ring_needs_the_ring_links():
    with pytest.raises(UnsupportedError, match="i -> i\\+1"):
        tc.generate("hypercube:3", "allgather", "ring")


def test_ring_rejects_other_collectives():
    with pytest.raises(UnsupportedError):
        tc.generate("uniring:4", "broadcast", "ring")
