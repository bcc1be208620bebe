"""Schedules as per-rank plans, run on in-memory ranks (no torch): every collective, every
generator, uneven and prime sizes, several dtypes, against the collective's definition."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from topocoll.errors import UnsupportedError
from topocoll.runtime.plan import layout, rank_plan, simulate_plans
from topocoll.schedule import verify
from topocoll.synth import generate
from topocoll.synth.ten import synthesize
from topocoll.throughput import alltoall_schedule, path_throughput
from topocoll.topology import topology

from tests.helpers import strongly_connected_digraphs

ROOTED = ("broadcast", "reduce", "scatter", "gather")


def expected(name, inputs, root):
    """What every rank must end with, from the collective's definition."""
    n = len(inputs)
    x = [np.asarray(v) for v in inputs]
    if name == "allgather":
        return [np.concatenate(x)] * n
    if name == "gather":
        return [np.concatenate(x) if r == root else None for r in range(n)]
    if name == "allreduce":
        return [sum(x)] * n
    if name == "reduce":
        return [sum(x) if r == root else None for r in range(n)]
    if name == "broadcast":
        return [x[root]] * n
    s = x[0].size // n
    if name == "reduce_scatter":
        total = sum(x)
        return [total[r * s:(r + 1) * s] for r in range(n)]
    if name == "scatter":
        return [x[root][r * s:(r + 1) * s] for r in range(n)]
    if name == "alltoall":
        return [np.concatenate([x[src][r * s:(r + 1) * s] for src in range(n)])
                for r in range(n)]
    raise AssertionError(name)


def random_inputs(name, n, numel, dtype, seed):
    rng = np.random.default_rng(seed)
    if np.issubdtype(dtype, np.integer):
        return [rng.integers(-1000, 1000, size=numel).astype(dtype) for _ in range(n)]
    return [rng.standard_normal(numel).astype(dtype) for _ in range(n)]


def check(schedule, numel, dtype=np.float64, seed=0):
    assert verify(schedule).valid
    name = schedule.collective.name
    n = schedule.topology.num_nodes
    inputs = random_inputs(name, n, numel, dtype, seed)
    got = simulate_plans(schedule, inputs)
    for r, (g, e) in enumerate(zip(got, expected(name, inputs, schedule.root))):
        if e is None:
            continue
        if np.issubdtype(dtype, np.integer):
            assert np.array_equal(g, e), (name, r)
        else:   # sums in another order: equal to rounding
            np.testing.assert_allclose(g, e, rtol=1e-5 if dtype == np.float32 else 1e-12,
                                       atol=1e-5 if dtype == np.float32 else 1e-12)


def numel_for(name, n, unit):
    return unit * n if name in ("reduce_scatter", "scatter", "alltoall") else unit


@pytest.mark.parametrize("name", ["allgather", "reduce_scatter", "allreduce", "broadcast",
                                  "reduce", "scatter", "gather", "alltoall"])
@pytest.mark.parametrize("spec", ["ring:5", "torus:3x3", "hypercube:3", "genkautz:10,2",
                                  "circulant:7:1,3"])
def test_bfb_and_ten_schedules_compute_their_collective(name, spec):
    t = topology(spec)
    n = t.num_nodes
    root = 2 if name in ROOTED else None
    if name in ("allgather", "reduce_scatter", "allreduce", "broadcast", "reduce"):
        for unit in (1, 7, 13):                           # primes: uneven element ranges
            check(generate(t, name, "bfb", root=root), numel_for(name, n, unit))
    check(synthesize(t, name, root=root, chunks=3), numel_for(name, n, 11), np.int64)


@pytest.mark.parametrize("algorithm, spec, names", [
    ("ring", "uniring:5", ["allgather", "reduce_scatter", "allreduce"]),
    ("shiftedring", "circulant:9:1,2", ["allgather", "allreduce"]),
    ("rhd", "hypercube:3", ["allreduce"]),
    ("dbt", "dbt:8", ["allreduce"]),
    ("torusrings", "torus:3x4", ["allgather", "allreduce"]),
])
def test_baselines_compute_their_collective(algorithm, spec, names):
    for name in names:
        for numel in (1, 5, 97):                          # fewer elements than nodes too
            s = generate(spec, name, algorithm)
            n = s.topology.num_nodes
            check(s, numel_for(name, n, numel) if name != "allreduce" else numel)


def test_alltoall_schedules_from_the_lp():
    t = topology("torus:3x3", bandwidth=1.0)
    s = alltoall_schedule(path_throughput(t), t)
    check(s, 9 * 11)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int64, np.int32])
def test_dtypes(dtype):
    check(generate("torus:3x3", "allreduce"), 101, dtype)
    check(generate("torus:3x3", "allgather"), 7, dtype)


@settings(max_examples=25, deadline=None)
@given(strongly_connected_digraphs(max_nodes=7), st.sampled_from(["allgather", "allreduce",
                                                                   "reduce_scatter", "reduce"]),
       st.integers(1, 23), st.integers(0, 2**16))
def test_bfb_on_random_topologies(t, name, unit, seed):
    root = 0 if name in ROOTED else None
    check(generate(t, name, "bfb", root=root), numel_for(name, t.num_nodes, unit), seed=seed)


def test_every_element_is_moved_once_per_piece_whatever_the_rounding():
    """Fractions cut at thirds of a 7-element shard: adjacent ranges share their boundary."""
    s = synthesize("ring:3", "allgather", chunks=3)
    plan = rank_plan(s, 0, 7)
    pieces = [p for step in plan.steps for peer in step.recvs for p in step.recvs[peer]]
    by_shard = {}
    for shard, a, b, _ in pieces:
        by_shard.setdefault(shard, []).append((a, b))
    for shard, ranges in by_shard.items():
        covered = np.zeros(7, dtype=int)
        for a, b in ranges:
            covered[a:b] += 1
        assert covered.min() >= 1, (shard, ranges)


def test_transfers_of_one_step_between_two_ranks_travel_as_one_message():
    s = generate("torus:3x3", "allreduce")
    plan = rank_plan(s, 4, 90)
    for step in plan.steps:
        assert len(step.sends) == len(set(step.sends))
        t = s.transfers
        mine = (t["step"] == step.step) & (t["src"] == 4)
        assert set(step.sends) == set(t["dst"][mine].tolist())


def test_layouts_that_do_not_divide_are_refused():
    for name in ("reduce_scatter", "scatter", "alltoall"):
        with pytest.raises(UnsupportedError, match="multiple of 4"):
            layout(name, 4, 10)
    assert layout("allreduce", 4, 10).shard_sizes.tolist() == [2, 3, 2, 3]
