"""The reduction cost gamma (docs/math.md section 12): the corollary's closed form on evaluated
bandwidth-optimal allreduces, theorem 8 and the lower bound on random digraphs, gamma never
lowering a price, and the option on the command line."""

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from topocoll.errors import TopocollError, UnitError
from topocoll.schedule import evaluate, simulate, step_costs, verify
from topocoll.schedule.reduction import (allreduce_gamma_time, node_in_bandwidth, parse_gamma,
                                         reduction_step_loads, reduction_time)
from topocoll.schedule.io import save_schedule
from topocoll.synth import generate
from topocoll.topology import topology

from ..cli.conftest import run_cli
from ..helpers import strongly_connected_digraphs

M = 3e6
GAMMA = 2.5e-10     # 4 GB/s: reductions cost a visible share of the links' time


# ------------------------------------------------------------------------- the corollary
#: bandwidth-optimal ring and BFB allreduces (checked below, so a regression fails here)
OPTIMAL = [(spec, "bfb", form) for spec in ("uniring:5", "ring:6", "torus:4x4",
                                             "circulant:12:1,5", "hypercube:3")
           for form in ("explicit", "symmetric")] + \
    [("uniring:5", "ring", "explicit"), ("uniring:5", "ring", "symmetric")]


@pytest.mark.parametrize(("spec", "algorithm", "form"), OPTIMAL)
def test_bw_optimal_allreduce_meets_the_closed_form(spec, algorithm, form):
    t = topology(spec)
    s = generate(t, "allreduce", algorithm, form=form)
    e0 = evaluate(s, M)
    assert e0.bw_optimal, (spec, algorithm, e0.bw_ratio)
    e = evaluate(s, M, gamma=GAMMA)
    n, b = t.num_nodes, node_in_bandwidth(t)
    assert e.T_B == e0.T_B and e.T_L == e0.T_L
    assert e.T_gamma == pytest.approx(GAMMA * (n - 1) * M / n, rel=1e-9)
    assert e.T_B + e.T_gamma == pytest.approx(allreduce_gamma_time(n, M, b, GAMMA), rel=1e-9)
    assert e.T_B + e.T_gamma == pytest.approx((1 + GAMMA * b / 2) * e.T_B, rel=1e-9)
    assert e.time == pytest.approx(e.T_L + e.T_B + e.T_gamma, rel=1e-12)


def test_the_corollary_can_fail_off_optimum():
    """A schedule that is not BW-optimal is priced above the closed form (the test can fail)."""
    t = topology("ring:8")
    s = generate(t, "allreduce", "ring")        # one direction of a bidirectional ring
    e = evaluate(s, M, gamma=GAMMA)
    assert not e.bw_optimal
    closed = allreduce_gamma_time(8, M, node_in_bandwidth(t), GAMMA)
    assert e.T_B + e.T_gamma > closed * 1.2


def test_gamma_zero_changes_nothing():
    s = generate(topology("torus:3x3"), "allreduce", "bfb")
    assert evaluate(s, M).to_dict() == evaluate(s, M, gamma=0).to_dict()
    assert evaluate(s, M).T_gamma == 0.0
    assert simulate(s, M).time == simulate(s, M, gamma=0.0).time
    copy = generate(topology("torus:3x3"), "allgather", "bfb")   # nothing is reduced
    assert evaluate(copy, M, gamma=GAMMA).T_gamma == 0.0
    assert simulate(copy, M, gamma=GAMMA).time == simulate(copy, M).time


def test_ring_allreduce_in_the_link_model_is_the_step_model():
    """On a unidirectional ring with no latency every step waits for the previous step's
    reduction: the link model's finish is T_B + T_gamma exactly, as the step model says."""
    t = topology("uniring:5", bandwidth=1e9, latency=0.0)
    s = generate(t, "allreduce", "ring")
    e = evaluate(s, M, gamma=GAMMA)
    assert e.T_gamma > 0
    assert simulate(s, M, gamma=GAMMA).time == pytest.approx(e.T_B + e.T_gamma, rel=1e-12)
    assert simulate(s, M, gamma=GAMMA).time > simulate(s, M).time


def test_symmetric_link_model_matches_the_expansion():
    s = generate(topology("torus:4x4", latency=0.0), "allreduce", "bfb", form="symmetric")
    sym = simulate(s, M, gamma=GAMMA).time
    assert sym == pytest.approx(simulate(s.unfolded(), M, gamma=GAMMA).time, rel=1e-12)
    assert sym > simulate(s, M).time


def test_hand_counted_reduction_loads():
    """uniring:4 ring reduce-scatter: 3 steps, each node reduces one M/4 chunk per step."""
    s = generate(topology("uniring:4"), "reduce_scatter", "ring")
    steps, per_byte = reduction_step_loads(s)
    assert steps.tolist() == [1, 2, 3] and per_byte.tolist() == [0.25, 0.25, 0.25]
    assert reduction_time(s, 4e9, 1e-9) == pytest.approx(3.0)


# ------------------------------------------------------------------ theorem 8 and the bound
@st.composite
def reducing_cases(draw):
    t = draw(strongly_connected_digraphs(max_nodes=7))
    coll = draw(st.sampled_from(["reduce_scatter", "allreduce"]))
    algorithm = draw(st.sampled_from(["bfb", "trees"]))
    return t, coll, algorithm


@given(reducing_cases(), st.floats(1e-12, 1e-8))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_theorem_8_and_the_lower_bound_on_random_digraphs(case, gamma):
    t, coll, algorithm = case
    try:
        s = generate(t, coll, algorithm)
    except TopocollError:
        assume(False)
    assert verify(s).valid
    e0, e = evaluate(s, M), evaluate(s, M, gamma=gamma)
    n = t.num_nodes
    # gamma never lowers a price, in either model
    assert e.time >= e0.time and e.T_gamma >= 0
    assert simulate(s, M, gamma=gamma).time >= simulate(s, M).time * (1 - 1e-12)
    # lower bound: (N-1) M bytes are reduced in all, some node reduces 1/N of them
    assert e.T_gamma >= gamma * (n - 1) * M / n * (1 - 1e-9)
    # theorem 8: T_gamma <= gamma B T_B over the reducing steps
    steps, _, beta = step_costs(s)
    red_steps = reduction_step_loads(s)[0]
    t_b_red = float(beta[np.isin(steps, red_steps)].sum()) * M
    assert e.T_gamma <= gamma * node_in_bandwidth(t) * t_b_red * (1 + 1e-9)
    if coll == "reduce_scatter":
        assert e.T_gamma <= gamma * node_in_bandwidth(t) * e.T_B * (1 + 1e-9)


# ------------------------------------------------------------------------- parsing, CLI
def test_parse_gamma_forms():
    assert parse_gamma("100GB/s") == pytest.approx(1e-11)
    assert parse_gamma("800Gbps") == pytest.approx(1e-11)
    assert parse_gamma("2e-11") == 2e-11 and parse_gamma(0) == 0.0 and parse_gamma(None) == 0.0
    for bad in (-1.0, "fast", float("nan"), True, [1]):
        with pytest.raises(UnitError):
            parse_gamma(bad)


def test_cli_prices_gamma(tmp_path):
    s = generate(topology("uniring:4", bandwidth=1e9, latency=0.0), "allreduce", "ring")
    save_schedule(s, tmp_path / "r.json")
    done = run_cli(["evaluate", "r.json", "--size", "4GB", "--gamma", "10GB/s", "--json"],
                   tmp_path)
    assert done.returncode == 0, done.stderr
    entry = json.loads(done.stdout)["sizes"][0]
    assert entry["T_gamma"] == pytest.approx(0.3) and entry["gamma"] == pytest.approx(1e-10)
    assert entry["time"] == pytest.approx(6.3) and entry["link_model_time"] == pytest.approx(6.3)
    done = run_cli(["simulate", "r.json", "--size", "4GB", "--gamma", "1e-10",
                    "--comm-model", "both", "--json"], tmp_path)
    doc = json.loads(done.stdout)
    assert doc["gamma"] == 1e-10 and doc["time"] == pytest.approx(6.3)
    assert doc["schedules"][0]["step_model"]["T_gamma"] == pytest.approx(0.3)
    bad = run_cli(["evaluate", "r.json", "--gamma", "-1"], tmp_path)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
    assert bad.stderr.strip().count("\n") == 0 and "--gamma" in bad.stderr
