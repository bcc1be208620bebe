"""The multi-tenant ILP (TACOS Table V's ILP column): every tenant's schedule verifies, the
tenants together put at most one chunk on a link per slot, the horizon is never above the
greedy's, and a small case is solved to its closed-form optimum."""

import numpy as np
import pytest

from topocoll.schedule import verify
from topocoll.synth.ten import ilp_tenants, synthesize_tenants
from topocoll.synth.ten.ilp import ilp_events
from topocoll.synth.ten.problem import chunk_conditions
from topocoll.topology import topology


def _one_chunk_per_link_and_slot(res):
    """Uniform links (one slot per chunk): every (step, src, dst) of every tenant is one
    chunk, so none may repeat across the tenants."""
    t = np.concatenate([s.transfers for s in res.schedules])
    keys = np.stack([t["step"], t["src"], t["dst"]], axis=1)
    return len(np.unique(keys, axis=0)) == len(keys)


def _check(res):
    assert all(verify(s).valid for s in res.schedules)
    assert _one_chunk_per_link_and_slot(res)
    m = res.meta
    assert m["lower_bound_slots"] <= m["horizon_slots"] <= m["greedy_horizon_slots"]
    assert m["ilp_optimal"] == (m["lower_bound_slots"] == m["horizon_slots"])
    # every tenant's transfers lie inside the horizon, and its finish is its last slot
    for s, finish in zip(res.schedules, res.finish_slots):
        assert s.transfers["step"].max() <= finish <= m["horizon_slots"]


def test_broadcast_and_reduce_on_a_unidirectional_ring_closed_form():
    # uniring:3 (0 -> 1 -> 2 -> 0), broadcast from 0 and reduce to 0, 3 chunks each: node 2
    # gets the broadcast's 3 chunks and sends node 1's 3 contributions on only 1 -> 2, six
    # chunks on one link; slot 0 can carry no broadcast chunk (not yet at 1) and the last
    # slot no reduce chunk (it still needs 2 -> 0): exactly 6 slots
    res = ilp_tenants("uniring:3", ["broadcast:0", "reduce:0"], time_limit=60)
    _check(res)
    assert res.meta["horizon_slots"] == 6 and res.meta["ilp_optimal"]
    assert res.meta["source"] == "ilp" and res.meta["greedy_horizon_slots"] > 6
    assert res.schedules[0].algorithm == "ten-ilp-tenants"


@pytest.mark.parametrize("spec,tenants", [
    ("ring:5", ["reduce:1", "reduce_scatter", "allgather"]),
    ("ring:4", ["gather:1", "scatter:2", "reduce:3"]),
    ("mesh:2x3", ["broadcast:5", "allgather"]),              # forward tenants only
    ("mesh:2x3", ["reduce:0", "reduce_scatter"]),            # reversed tenants only
])
def test_tenants_verify_share_no_slot_and_beat_or_equal_the_greedy(spec, tenants):
    res = ilp_tenants(spec, tenants, time_limit=20)
    _check(res)
    greedy = synthesize_tenants(spec, tenants)
    assert res.meta["greedy_horizon_slots"] == greedy.meta["horizon_slots"]
    assert [s.collective.name for s in res.schedules] == [s.collective.name
                                                          for s in greedy.schedules]


def test_one_tenant_is_the_plain_ilp():
    # one forward tenant: the joint model is the chunk ILP's, so the optimal horizons agree
    t = topology("ring:5")
    pre, post = chunk_conditions("allgather", 5, 2, None)
    alone = ilp_events(5, t.src, t.dst, np.ones(t.num_links, np.int64), pre, post)
    res = ilp_tenants(t, ["allgather"], chunks=2, time_limit=20)
    _check(res)
    assert alone.optimal and res.meta["ilp_optimal"]
    assert res.meta["horizon_slots"] == min(alone.makespan, res.meta["greedy_horizon_slots"])


def test_a_time_limit_still_gives_valid_tenants():
    # whatever the limit leaves (an ILP horizon or the greedy's), the tenants are sound
    res = ilp_tenants("mesh:3x3", ["broadcast:2", "reduce:7", "allgather"], time_limit=1)
    _check(res)
    assert res.meta["source"] in ("ilp", "greedy") and res.meta["solves"] >= 1
