"""Spanning-tree packing (algorithm ``trees``): the exact cut optimum against closed forms and
brute force over every subset, and schedules that verify, match BFB where BFB is optimal and
come within 1% of the optimum where it is not."""

import itertools
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers import strongly_connected_digraphs
from topocoll.errors import NotStronglyConnectedError, UnsupportedError
from topocoll.schedule.cost import evaluate
from topocoll.schedule.model import Schedule
from topocoll.schedule.verify import verify
from topocoll.synth import generate
from topocoll.synth.packing import tree_packing_bound, trees_schedule
from topocoll.topology import topology
from topocoll.topology.families.lattice import with_dimension_bandwidth
from topocoll.topology.model import Topology

M = 2**30


def brute_force_ratio(t):
    """``max_S |S| / c_out(S)`` over every nonempty proper subset, in exact fractions."""
    n = t.num_nodes
    best = Fraction(0)
    bw = [Fraction(b).limit_denominator(10**6) for b in t.bandwidth.tolist()]
    for size in range(1, n):
        for subset in itertools.combinations(range(n), size):
            inside = np.zeros(n, dtype=bool)
            inside[list(subset)] = True
            out = sum((b for b, u, v in zip(bw, t.src.tolist(), t.dst.tolist())
                       if inside[u] and not inside[v]), Fraction(0))
            best = max(best, Fraction(size) / out)
    return best


@pytest.mark.parametrize("spec", ["ring:8", "torus:3x4", "torus:4x4", "hypercube:4",
                                  "complete:6", "uniring:5"])
def test_optimum_is_the_node_bandwidth_bound_on_symmetric_graphs(spec):
    # every node's egress is B = degree (unit links); the tight set is all nodes but one:
    # (N - 1) / B per shard, T* = (N - 1) / N * M / B
    t = topology(spec, bandwidth=1.0)
    n = t.num_nodes
    degree = int(np.bincount(t.src, minlength=n)[0])
    b = tree_packing_bound(t, "allgather")
    assert b.exact
    assert b.factor == Fraction(n - 1, n * degree)
    assert tree_packing_bound(t, "allreduce").factor == 2 * b.factor


def test_a_bottleneck_cut_beats_the_node_bound():
    # two K4 joined by one cable: the 4 nodes on one side must push 4 shards over one link
    src, dst = [], []
    for base in (0, 4):
        for u, v in itertools.permutations(range(base, base + 4), 2):
            src.append(u)
            dst.append(v)
    src += [0, 4]
    dst += [4, 0]
    t = Topology(8, src, dst, 1.0, 1e-6)
    b = tree_packing_bound(t, "allgather")
    assert b.ratio == Fraction(4, 1)
    assert sorted(np.flatnonzero(b.critical).tolist()) in ([0, 1, 2, 3], [4, 5, 6, 7])
    s = trees_schedule(t, "allgather")
    assert verify(s).valid
    assert evaluate(s, M).T_B <= 1.01 * b.time(M)


@settings(max_examples=25, deadline=None)
@given(strongly_connected_digraphs(min_nodes=2, max_nodes=7))
def test_optimum_matches_brute_force(t):
    assert tree_packing_bound(t, "allgather").ratio == brute_force_ratio(t)
    assert tree_packing_bound(t, "reduce_scatter").ratio == brute_force_ratio(t.transpose())


@settings(max_examples=12, deadline=None)
@given(strongly_connected_digraphs(min_nodes=2, max_nodes=7))
def test_schedules_verify_and_never_beat_the_optimum(t):
    for coll in ("allgather", "reduce_scatter", "allreduce"):
        s = trees_schedule(t, coll, chunks=2)
        assert verify(s).valid
        opt = tree_packing_bound(t, coll).time(M)
        assert evaluate(s, M, check=False).T_B >= opt * (1 - 1e-9)


@pytest.mark.parametrize("spec", ["torus:4x4", "hypercube:4", "circulant:16:1,4", "ring:6"])
@pytest.mark.parametrize("coll", ["allgather", "allreduce"])
def test_equals_bfb_where_bfb_is_optimal(spec, coll):
    t = topology(spec)
    s = generate(t, coll, "trees")
    assert verify(s).valid
    ours = evaluate(s, M, check=False).T_B
    bfb = evaluate(generate(t, coll, "bfb"), M, check=False).T_B
    assert ours == pytest.approx(bfb, rel=1e-9)
    assert ours == pytest.approx(tree_packing_bound(t, coll).time(M), rel=1e-9)


@pytest.mark.parametrize("spec", ["kautz:2,3", "genkautz:20,2", "genkautz:50,3",
                                  "randomdigraph:16,2", "debruijn:2,4"])
@pytest.mark.parametrize("coll", ["allgather", "reduce_scatter", "allreduce"])
def test_within_one_percent_where_bfb_is_not_optimal(spec, coll):
    # the default K is the smallest power of two within 1% of the optimum (at most 256)
    t = topology(spec)
    s = trees_schedule(t, coll)
    assert verify(s).valid
    ours = evaluate(s, M, check=False).T_B
    opt = tree_packing_bound(t, coll).time(M)
    assert opt * (1 - 1e-9) <= ours <= 1.01 * opt
    assert ours <= evaluate(generate(t, coll, "bfb"), M, check=False).T_B * (1 + 1e-9)


@pytest.mark.parametrize("coll", ["allgather", "allreduce"])
def test_heterogeneous_mesh_reaches_the_optimum(coll):
    t = with_dimension_bandwidth(topology("mesh:4x4"), ["25GiB/s", "50GiB/s"])
    s = generate(t, coll, "trees")
    assert verify(s).valid
    opt = tree_packing_bound(t, coll).time(M)
    assert opt * (1 - 1e-9) <= evaluate(s, M, check=False).T_B <= 1.01 * opt


def test_more_chunks_approach_the_optimum():
    t = topology("kautz:2,3")
    opt = tree_packing_bound(t, "allgather").time(M)
    ratios = [evaluate(trees_schedule(t, "allgather", chunks=k), M, check=False).T_B / opt
              for k in (1, 4, 64)]
    assert ratios[0] > ratios[2]
    assert ratios[2] <= 1.01
    assert all(r >= 1 - 1e-9 for r in ratios)


def test_dropping_a_transfer_breaks_the_schedule():
    s = trees_schedule(topology("kautz:2,3"), "allreduce", chunks=2)
    assert verify(s).valid
    broken = Schedule(s.topology, s.collective, s.transfers[1:], algorithm="trees")
    assert not verify(broken).valid


def test_errors_name_the_rule():
    with pytest.raises(UnsupportedError, match="trees"):
        generate("ring:4", "broadcast", "trees")
    with pytest.raises(UnsupportedError, match="chunks"):
        generate("ring:4", "allgather", "trees", chunks=0)
    t = Topology(3, [0, 1], [1, 2], 1.0, 1e-6)
    with pytest.raises(NotStronglyConnectedError):
        tree_packing_bound(t, "allgather")


@pytest.mark.parametrize("size", [2**16, 2**24, 2**30])
def test_size_picks_the_chunks_for_the_buffer(size):
    # small buffers want few steps, large ones many chunks: the size-aware K is never slower at
    # its size than the K chosen for T_B alone, and within 5% of the best of a few fixed K
    t = topology("kautz:2,3", bandwidth="12.5GB/s", latency="10us")
    sized = trees_schedule(t, "allgather", size=size)
    plain = trees_schedule(t, "allgather")
    assert verify(sized).valid
    assert sized.meta["chunks"] <= plain.meta["chunks"]
    assert evaluate(sized, size).time <= evaluate(plain, size).time * (1 + 1e-9)
    for k in (1, 4, 16, 64):
        fixed = evaluate(trees_schedule(t, "allgather", chunks=k), size, check=False).time
        assert evaluate(sized, size).time <= fixed * 1.05


def test_cli_reports_the_optimum_and_the_finder_takes_trees(tmp_path):
    from tests.cli.conftest import run_cli

    r = run_cli(["schedule", "kautz:2,3", "-c", "allgather", "-a", "trees", "-o", "t.json"],
                tmp_path)
    assert r.returncode == 0, r
    assert "x the exact optimum T*" in r.stdout
    r = run_cli(["verify", "t.json"], tmp_path)
    assert r.returncode == 0, r
    r = run_cli(["find", "-n", "12", "-d", "2", "-a", "bfb", "-a", "trees", "--no-cache",
                 "--json"], tmp_path)
    assert r.returncode == 0, r
    import json

    assert json.loads(r.stdout)["best"]["evaluation"]["algorithm"] in ("bfb", "trees")


def _intervals_by_enumeration(depth, chunks):
    """Every step of the pipeline, one by one: the definition the closed form must match."""
    seen = {}
    for s in range(depth + chunks - 1):
        key = (max(0, s - chunks + 1), min(depth - 1, s))
        seen[key] = seen.get(key, 0) + 1
    return [(lo, hi, m) for (lo, hi), m in sorted(seen.items())]


@given(st.integers(1, 40), st.integers(1, 60))
@settings(max_examples=200, deadline=None)
def test_step_intervals_closed_form_matches_the_steps(depth, chunks):
    from topocoll.synth.packing.master import step_intervals

    assert step_intervals(depth, chunks) == _intervals_by_enumeration(depth, chunks)


def test_step_intervals_take_no_time_in_the_chunk_count():
    from topocoll.synth.packing.master import step_intervals

    got = step_intervals(4, 10**12)          # a loop over the chunks would never end
    assert got[3] == (0, 3, 10**12 - 3) and sum(m for *_, m in got) == 10**12 + 3


def test_trees_with_absurd_chunks_are_refused_before_the_work(monkeypatch):
    from topocoll.errors import ResourceLimitError
    from topocoll.limits import ENV

    monkeypatch.setenv(ENV, "1GiB")
    with pytest.raises(ResourceLimitError, match=r"trees schedule of \d+ transfers"):
        generate("ring:4", "allreduce", "trees", chunks=10**7)
