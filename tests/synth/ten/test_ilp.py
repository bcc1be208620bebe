"""Tests of the TEN ILP core (``topocoll.synth.ten.ilp``) against independent oracles:
the replaying checker and the exhaustive search of ``oracle.py``, and closed-form optima."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topocoll.errors import (InputTypeError, InvalidScheduleError, NotStronglyConnectedError,
                             SpecError, TopologyError, UnsupportedError)
from topocoll.synth.ten.ilp import (EVENT_DTYPE, STATUS_MESSAGES, IlpResult, ilp_events,
                                    lower_bound, shortest_path_events)
from topocoll.topology import topology

from .oracle import brute_force_makespan, check_events


# ------------------------------------------------------------------------------- instances

def ring(n):
    src = np.arange(n)
    return src, (src + 1) % n


def bidirectional_ring(n):
    src = np.arange(n)
    return np.r_[src, src], np.r_[(src + 1) % n, (src - 1) % n]


def complete(n):
    u, v = np.nonzero(~np.eye(n, dtype=bool))
    return u, v


def path(n):
    a = np.arange(n - 1)
    return np.r_[a, a + 1], np.r_[a + 1, a]


def heap_tree(n):
    """Node i -> 2i+1, 2i+2 plus the reverse arcs."""
    child = np.arange(1, n)
    parent = (child - 1) // 2
    return np.r_[parent, child], np.r_[child, parent]


def allgather(n, per=1):
    return np.repeat(np.eye(n, dtype=bool), per, axis=0), np.ones((n * per, n), dtype=bool)


def random_instance(seed):
    """A tiny random instance: a Hamiltonian cycle plus up to 3 arcs, 1-3 slot links, 2-3
    chunks with random holders and random needs."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 5))
    perm = rng.permutation(n)
    src, dst = list(perm), list(np.roll(perm, -1))
    for _ in range(rng.integers(0, 4)):
        u, v = rng.choice(n, 2, replace=False)
        src.append(u)
        dst.append(v)
    src, dst = np.array(src), np.array(dst)
    steps = rng.integers(1, 4, len(src))
    chunks = rng.integers(2, 4)
    pre = rng.random((chunks, n)) < 0.3
    pre[np.arange(chunks), rng.integers(0, n, chunks)] = True
    post = (rng.random((chunks, n)) < 0.7) | pre
    return n, src, dst, steps, pre, post


def run(n, src, dst, steps, pre, post, **kw):
    """ilp_events plus every check that holds for any result."""
    res = ilp_events(n, src, dst, steps, pre, post, **kw)
    assert isinstance(res, IlpResult)
    assert res.events.dtype == EVENT_DTYPE
    assert check_events(n, src, dst, np.asarray(steps), pre, post, res.events,
                        res.makespan) == []
    assert 0 <= res.lower_bound <= res.makespan
    assert res.status in STATUS_MESSAGES and isinstance(res.message, str)
    assert res.optimal == (res.makespan == res.lower_bound)
    if res.optimal:
        assert res.status == 0
    return res


# ------------------------------------------------------------------------ closed-form optima

@pytest.mark.parametrize("n", range(2, 8))
def test_unidirectional_ring_allgather(n):
    src, dst = ring(n)
    res = run(n, src, dst, np.ones(n, int), *allgather(n))
    assert (res.makespan, res.optimal) == (n - 1, True)
    assert len(res.events) == n * (n - 1)


@pytest.mark.parametrize("n", range(3, 9))
def test_bidirectional_ring_allgather(n):
    src, dst = bidirectional_ring(n)
    res = run(n, src, dst, np.ones(2 * n, int), *allgather(n))
    assert (res.makespan, res.optimal) == (math.ceil((n - 1) / 2), True)


@pytest.mark.parametrize("n", range(2, 7))
def test_complete_graph_allgather(n):
    src, dst = complete(n)
    res = run(n, src, dst, np.ones(src.size, int), *allgather(n))
    assert (res.makespan, res.optimal) == (1, True)


@pytest.mark.parametrize("n", [3, 4, 5])
@pytest.mark.parametrize("k", [1, 2, 3])
def test_path_allgather_scales_with_link_steps(n, k):
    # an end node has one in-link and misses n-1 chunks: k(n-1) slots, and pipelining meets it
    src, dst = path(n)
    res = run(n, src, dst, np.full(src.size, k), *allgather(n))
    assert (res.makespan, res.optimal) == (k * (n - 1), True)


@pytest.mark.parametrize("n, m", [(7, 1), (7, 3), (10, 2), (15, 2)])
def test_tree_broadcast_pipelines(n, m):
    # m chunks from the root of a heap-shaped tree: the deepest leaf has one useful in-link,
    # so depth + m - 1 slots, met by pipelining
    src, dst = heap_tree(n)
    pre = np.zeros((m, n), dtype=bool)
    pre[:, 0] = True
    depth = int(np.floor(np.log2(n)))
    res = run(n, src, dst, np.ones(src.size, int), pre, np.ones((m, n), dtype=bool))
    assert (res.makespan, res.optimal) == (depth + m - 1, True)


def test_torus_allgather_matches_diameter_bound():
    t = topology("torus:3x3")
    src, dst = np.asarray(t.src), np.asarray(t.dst)
    res = run(9, src, dst, np.ones(src.size, int), *allgather(9))
    assert (res.makespan, res.optimal) == (2, True)


def test_post_already_met():
    src, dst = ring(3)
    pre = np.eye(3, dtype=bool)
    res = run(3, src, dst, np.ones(3, int), pre, pre.copy())
    assert (res.makespan, len(res.events), res.status, res.optimal) == (0, 0, 0, True)


# --------------------------------------------------------------------- against brute force

@st.composite
def tiny_instances(draw):
    n = draw(st.integers(3, 4))
    perm = draw(st.permutations(range(n)))
    arcs = list(zip(perm, perm[1:] + perm[:1]))
    arcs += draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1))
                          .filter(lambda a: a[0] != a[1]), max_size=3))
    src, dst = (np.array(x) for x in zip(*arcs))
    steps = np.array(draw(st.lists(st.integers(1, 3), min_size=len(arcs), max_size=len(arcs))))
    chunks = draw(st.integers(2, 3))
    cell = st.tuples(st.integers(0, chunks - 1), st.integers(0, n - 1))
    owner = draw(st.lists(st.integers(0, n - 1), min_size=chunks, max_size=chunks))
    pre = np.zeros((chunks, n), dtype=bool)
    pre[np.arange(chunks), owner] = True
    for c, v in draw(st.lists(cell, max_size=2)):          # a few extra holders
        pre[c, v] = True
    post = pre.copy()
    post[0, (owner[0] + draw(st.integers(1, n - 1))) % n] = True   # never trivial
    for c, v in draw(st.lists(cell, min_size=1, max_size=2 * n)):
        post[c, v] = True
    return n, src, dst, steps, pre, post


@settings(max_examples=30)
@given(tiny_instances())
def test_optimal_makespan_matches_exhaustive_search(inst):
    best = brute_force_makespan(*inst)
    res = run(*inst)
    assert res.optimal and res.makespan == best
    # every result's last arrival is needed: dropping it breaks the schedule
    if len(res.events):
        last = np.argmax(res.events["start"] + inst[3][res.events["link"]])
        assert check_events(*inst, np.delete(res.events, last), res.makespan) != []
    # time clustering and the list-scheduling bound are valid and never beat the optimum
    for window in (1, 2):
        assert run(*inst, window=window).makespan >= best
    ev, span = shortest_path_events(*inst)
    assert check_events(*inst, ev, span) == [] and span >= best


@pytest.mark.parametrize("seed", [0, 4, 42, 93])
def test_ilp_beats_combinatorial_bounds(seed):
    # instances where list scheduling or the distance/capacity bound is not tight, so the ILP
    # has to find a better schedule or prove horizons infeasible
    inst = random_instance(seed)
    lb = lower_bound(*inst)
    _, upper = shortest_path_events(*inst)
    assert lb < upper
    res = run(*inst)
    assert res.solves >= 1
    assert res.optimal and res.makespan == brute_force_makespan(*inst)
    assert lb <= res.makespan <= upper


def test_heterogeneous_torus_ilp_improves_list_scheduling():
    t = topology("torus:3x3")
    src, dst = np.asarray(t.src), np.asarray(t.dst)
    steps = np.random.default_rng(1).integers(1, 3, src.size)
    pre, post = allgather(9)
    _, upper = shortest_path_events(9, src, dst, steps, pre, post)
    res = run(9, src, dst, steps, pre, post)
    assert res.optimal and res.solves >= 1 and res.makespan < upper


# ------------------------------------------------------- time clustering and early stopping

@pytest.mark.parametrize("window", [1, 2, 3, 5])
@pytest.mark.parametrize("seed", [0, 3, 10])
def test_time_clustering_is_valid(window, seed):
    inst = random_instance(seed)
    best = run(*inst).makespan
    for early_stop in (True, False):
        res = run(*inst, window=window, early_stop=early_stop, seed=seed)
        assert res.makespan >= best
        assert res.source.startswith("windows") and res.solves >= 1


def test_time_clustering_on_torus_with_two_chunks_per_node():
    t = topology("torus:3x3")
    src, dst = np.asarray(t.src), np.asarray(t.dst)
    steps = np.random.default_rng(2).integers(1, 3, src.size)
    res = run(9, src, dst, steps, *allgather(9, per=2), window=2)
    assert res.makespan >= lower_bound(9, src, dst, steps, *allgather(9, per=2))


def _needs_two_horizons():
    """A random instance whose first horizon (the lower bound) is proven infeasible, so the
    ILP needs a second model to finish."""
    for seed in range(200):
        inst = random_instance(seed)
        full = run(*inst)
        if full.makespan > lower_bound(*inst) and full.solves >= 2:
            return inst, full
    raise AssertionError("no random instance needs two horizons")


@pytest.mark.parametrize("early_stop", [True, False])
def test_model_limit_stops_the_horizon_search(early_stop):
    inst, full = _needs_two_horizons()
    res = run(*inst, max_solves=1, early_stop=early_stop)
    assert res.status == 1 and res.success and not res.optimal and res.solves == 1
    assert res.status_name == "LIMIT" and "limit" in res.message
    assert res.makespan >= full.makespan and res.lower_bound < full.makespan


@pytest.mark.parametrize("early_stop", [True, False])
def test_model_limit_stops_time_clustering(early_stop):
    t = topology("torus:4x4")
    src, dst = np.asarray(t.src), np.asarray(t.dst)
    steps = np.random.default_rng(1).integers(1, 3, src.size)
    res = run(16, src, dst, steps, *allgather(16), max_solves=1, early_stop=early_stop,
              window=2)
    assert res.solves == 1 and (res.status == 1 or res.optimal)
    assert res.source in ("windows", "windows+shortest-paths", "list-scheduling")


@pytest.mark.parametrize("node_limit", [0, 1, 50])
def test_node_limit_still_returns_a_valid_schedule(node_limit):
    inst = random_instance(93)
    res = run(*inst, node_limit=node_limit)       # run() checks the schedule
    assert res.status in (0, 1, 5) and res.solves >= 1


def test_completion_of_partial_schedule():
    n = 5
    src, dst = ring(n)
    steps = np.ones(n, int)
    pre, post = allgather(n)
    full = run(n, src, dst, steps, pre, post)
    for keep in (0, 3, 7, len(full.events)):
        ev, span = shortest_path_events(n, src, dst, steps, pre, post, events=full.events[:keep])
        assert check_events(n, src, dst, steps, pre, post, ev, span) == []
        assert span == n - 1          # a prefix of a ring schedule leaves no room to lose
    bad = full.events[1:].copy()      # chunk forwarded before it arrived
    bad = bad[bad["start"] > 0]
    with pytest.raises(InvalidScheduleError):
        shortest_path_events(n, src, dst, steps, pre, post, events=bad)


# ----------------------------------------------------------------- the checker can fail

def test_checker_rejects_mutations():
    n = 5
    src, dst = ring(n)
    steps = np.ones(n, int)
    pre, post = allgather(n)
    res = run(n, src, dst, steps, pre, post)
    ev = res.events
    # on a ring every link is busy in every slot and every send delivers a needed chunk
    for i in range(len(ev)):
        assert check_events(n, src, dst, steps, pre, post, np.delete(ev, i), res.makespan)
        shifted = ev.copy()
        shifted["start"][i] -= 1
        shifted = shifted[np.argsort(shifted["start"], kind="stable")]
        assert check_events(n, src, dst, steps, pre, post, shifted, res.makespan)
    assert check_events(n, src, dst, steps, pre, post, ev, res.makespan + 1)
    assert check_events(n, src, dst, steps, pre, post, ev[::-1], res.makespan)
    wrong_link = ev.copy()
    wrong_link["link"] = (wrong_link["link"] + 1) % n
    assert check_events(n, src, dst, steps, pre, post, wrong_link, res.makespan)


# ------------------------------------------------------------------- progress, determinism

def test_progress_and_seed_determinism():
    inst = random_instance(93)
    calls = []
    a = run(*inst, seed=5, progress=lambda done, total: calls.append((done, total)))
    b = run(*inst, seed=5)
    assert calls and calls[-1][0] == calls[-1][1]
    assert all(0 <= d <= t for d, t in calls)
    assert np.array_equal(a.events, b.events)
    wa = run(*inst, seed=5, window=2)
    wb = run(*inst, seed=5, window=2)
    assert np.array_equal(wa.events, wb.events)


# ----------------------------------------------------------------------------- bad inputs

def _base():
    src, dst = ring(3)
    pre, post = allgather(3)
    return dict(num_nodes=3, link_src=src, link_dst=dst, link_steps=np.ones(3, int), pre=pre,
                post=post)


@pytest.mark.parametrize("change, error", [
    (dict(num_nodes="3"), InputTypeError),
    (dict(num_nodes=0), UnsupportedError),
    (dict(link_src=np.zeros((3, 1), int)), SpecError),
    (dict(link_src=np.array([0.0, 1.0, 2.0])), InputTypeError),
    (dict(link_dst=np.array([1, 2])), SpecError),
    (dict(link_dst=np.array([1, 2, 3])), TopologyError),
    (dict(link_src=np.array([-1, 1, 2])), TopologyError),
    (dict(link_dst=np.array([0, 2, 0])), TopologyError),          # self-loop 0 -> 0
    (dict(link_steps=np.array([1, 0, 1])), TopologyError),
    (dict(pre=np.eye(3, dtype=int)), InputTypeError),
    (dict(pre=np.eye(3, 4, dtype=bool)), SpecError),
    (dict(post=np.ones((2, 3), dtype=bool)), SpecError),
    (dict(pre=np.array([[1, 0, 0], [0, 0, 0], [0, 0, 1]], dtype=bool)), SpecError),
    (dict(time_limit=0), UnsupportedError),
    (dict(time_limit="10s"), InputTypeError),
    (dict(node_limit=-1), UnsupportedError),
    (dict(node_limit=1.5), InputTypeError),
    (dict(max_solves=0), UnsupportedError),
    (dict(max_solves=True), InputTypeError),
    (dict(window=0), UnsupportedError),
    (dict(window=1.5), InputTypeError),
])
def test_bad_inputs(change, error):
    kw = {**_base(), **change}
    args = [kw.pop(k) for k in ("num_nodes", "link_src", "link_dst", "link_steps", "pre",
                                "post")]
    with pytest.raises(error):
        ilp_events(*args, **kw)


def test_unreachable_post_names_chunk_and_node():
    # 0 -> 1 -> 2 only: chunk 1 (at node 1) can never reach node 0
    src, dst = np.array([0, 1]), np.array([1, 2])
    pre, post = allgather(3)
    with pytest.raises(NotStronglyConnectedError) as err:
        ilp_events(3, src, dst, np.ones(2, int), pre, post)
    assert err.value.pair in {(1, 0), (2, 0), (2, 1)}
    assert isinstance(err.value, TopologyError)
