"""benchmarks/seeds/store_forward.py, the store-and-forward pricings of the TACOS rebuild: equal to
the link model where no message is routed, and the closed form of the Table IV Direct broadcast
(Won et al., TACOS, MICRO 2024) where every message is."""

import importlib.util
from pathlib import Path

import pytest

import topocoll as tc
from topocoll.schedule import simulate

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "seeds" / "store_forward.py"


def _module():
    spec = importlib.util.spec_from_file_location("store_forward", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SF = _module()
PRICERS = [SF.stored_and_forwarded, SF.first_come_first_served]


@pytest.mark.parametrize("price", PRICERS)
@pytest.mark.parametrize("alpha_per", ["message", "transfer"])
@pytest.mark.parametrize("spec,coll,algo", [("complete:5", "allreduce", "direct"),
                                            ("ring:5", "allreduce", "rankring"),
                                            ("complete:4", "allgather", "direct")])
def test_unrouted_schedules_cost_what_the_link_model_says(price, alpha_per, spec, coll, algo):
    t = tc.build_topology(spec, bandwidth="10GB/s", latency="1us")
    s = tc.generate(t, coll, algo)
    assert s.routing is None
    want = simulate(s, "1MB", alpha_per=alpha_per).time
    assert price(s, "1MB", alpha_per) == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("price", PRICERS)
def test_the_table_iv_direct_broadcast_closed_form(price):
    # root 0 (a corner of the 6x6 mesh), 35 distinct messages of 1 MB along xy routes: 30 leave
    # on the root's dimension-0 link, the last of them (to the far corner) 9 hops from home:
    # 39 message times stored and forwarded, 30 and a bit cut-through
    t = tc.build_topology("mesh:6x6", bandwidth="1GB/s", latency=0)
    s = tc.generate(t, "scatter", "direct", routing="xy")
    assert price(s, 36e6) == pytest.approx(39e-3, rel=1e-9)
    assert simulate(s, 36e6).time < 31e-3


def test_partial_shards_are_refused():
    t = tc.build_topology("mesh:3x3", bandwidth="10GB/s", latency="1us")
    s = tc.generate(t, "allgather", "direct", routing="xy")
    half = s.transfers.copy()
    half["hi"] = 0.5
    with pytest.raises(SystemExit):
        SF.stored_and_forwarded(s.replace(transfers=half), "1MB")
