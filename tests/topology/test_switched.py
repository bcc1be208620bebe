"""The switched families: switch:N and switch:N,G."""

import numpy as np
import pytest

from topocoll.errors import SpecError
from topocoll.topology import topology


def test_one_switch():
    t = topology("switch:16")
    assert t.num_nodes == 17 and t.switches == (16,)
    assert sorted(zip(t.src.tolist(), t.dst.tolist())) == sorted(
        [(i, 16) for i in range(16)] + [(16, i) for i in range(16)])
    assert t.is_bidirectional()


def test_leaves_and_a_spine():
    t = topology("switch:8,2")
    assert t.switches == (8, 9, 10)
    pairs = set(zip(t.src.tolist(), t.dst.tolist()))
    assert {(i, 8 + i // 4) for i in range(8)} <= pairs
    assert {(8, 10), (9, 10), (10, 8), (10, 9)} <= pairs
    assert t.num_links == 2 * (8 + 2)
    assert np.all(t.bandwidth == t.bandwidth[0])


@pytest.mark.parametrize("spec, rule", [
    ("switch:1", "at least 2 endpoints"), ("switch:6,4", "G to divide N"),
    ("switch:8,0", "at least 1 group"), ("switch:8,2,1,1", "expected N, N,G or N,G,S"),
    ("switch:8,2,0", "S >= 1"), ("switch:8,1,4", "G >= 2 leaves")])
def test_bad_specs_name_the_rule(spec, rule):
    with pytest.raises(SpecError, match=rule):
        topology(spec)


def test_two_level_uplinks_are_slower_and_reach_the_emulated_rates():
    from topocoll.emulate.plan import NetworkPlan

    t = topology("switch:16,4,4")
    assert t.name == "switch:16,4,4" and t.switches == (16, 17, 18, 19, 20)
    fast = float(t.bandwidth.max())
    up = {(int(a), int(b)) for a, b, bw in zip(t.src, t.dst, t.bandwidth) if bw < fast}
    assert up == {(leaf, 20) for leaf in range(16, 20)} | {(20, leaf) for leaf in range(16, 20)}
    assert np.allclose(t.bandwidth[t.bandwidth < fast], fast / 4)
    plan = NetworkPlan(t, scale=1e6 / fast)
    assert plan.rate(0, 16) == pytest.approx(1e6) and plan.rate(16, 20) == pytest.approx(2.5e5)
    assert plan.rate(20, 17) == pytest.approx(2.5e5)
    assert topology("switch:8,2,1").name == "switch:8,2"


def test_schedule_tools_refuse_switches_until_unwound():
    from topocoll.errors import TopologyError
    from topocoll.synth import generate

    with pytest.raises(TopologyError, match="switch"):
        generate("switch:4", "allreduce", "bfb")
