"""Greedy degree-preserving rewiring (``topocoll.throughput.rewire``) and ``topocoll rewire``.

Objectives are recomputed independently (networkx distances) on the returned topology; degrees,
simplicity and connectivity are checked link by link; local minima are confirmed by brute
force over every legal swap."""

import itertools
import json

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topocoll.errors import (InputTypeError, NotStronglyConnectedError, SpecError, TopologyError,
                             UnsupportedError)
from topocoll.topology import Topology, load_topology, topology
from topocoll.throughput.rewire import (RewireResult, alltoall_objective, distance_objective,
                                      rewire)


def links(t):
    return sorted(zip(t.src.tolist(), t.dst.tolist()))


def nx_distance_sum(t):
    g = nx.DiGraph(links(t))
    g.add_nodes_from(range(t.num_nodes))
    total = 0
    for _, row in nx.all_pairs_shortest_path_length(g):
        if len(row) < t.num_nodes:
            return float("inf")
        total += sum(row.values())
    return float(total)


def check_invariants(before, after, *, bidirectional):
    assert after.num_nodes == before.num_nodes and after.num_links == before.num_links
    n = before.num_nodes
    assert np.array_equal(np.bincount(after.src, minlength=n), np.bincount(before.src, minlength=n))
    assert np.array_equal(np.bincount(after.dst, minlength=n), np.bincount(before.dst, minlength=n))
    assert len(set(links(after))) == after.num_links and not np.any(after.src == after.dst)
    assert nx.is_strongly_connected(nx.DiGraph(links(after)))
    assert after.is_bidirectional() == bidirectional or not bidirectional
    if bidirectional:
        assert after.is_bidirectional()


def legal_swaps(t, directed):
    """Every topology one legal swap away (simple, strongly connected), by brute force."""
    arcs = set(links(t))
    if directed:
        items = sorted(arcs)
        for (a, b), (c, d) in itertools.combinations(items, 2):
            new = (arcs - {(a, b), (c, d)}) | {(a, d), (c, b)}
            if a != d and c != b and len(new) == len(arcs):
                yield new
    else:
        edges = sorted((u, v) for u, v in arcs if u < v)
        for (a, b), (c, d) in itertools.combinations(edges, 2):
            for (p, q), (r, s) in (((a, c), (b, d)), ((a, d), (b, c))):
                new_edges = (set(edges) - {(a, b), (c, d)}) | {tuple(sorted((p, q))),
                                                                tuple(sorted((r, s)))}
                if p != q and r != s and len(new_edges) == len(edges):
                    yield {(u, v) for u, v in new_edges} | {(v, u) for u, v in new_edges}


def graph_distance_sum(arcs, n):
    g = nx.DiGraph(sorted(arcs))
    g.add_nodes_from(range(n))
    if not nx.is_strongly_connected(g):
        return None
    return sum(sum(row.values()) for _, row in nx.all_pairs_shortest_path_length(g))


# ---------------------------------------------------------------------- core properties
@pytest.mark.parametrize("spec", ["jellyfish:16,3", "xpander:20,4", "polarfly:3"])
def test_undirected_swaps_keep_degrees_and_never_worsen(spec):
    t = topology(spec)
    res = rewire(t, objective="distance", budget=None, max_swaps=400, seed=3)
    check_invariants(t, res.topology, bidirectional=True)
    assert not res.directed
    assert res.final <= res.initial == nx_distance_sum(t)
    assert res.final == nx_distance_sum(res.topology)
    values = [res.initial] + [step.value for step in res.history]
    assert all(a > b for a, b in zip(values, values[1:]))
    assert len(res.history) == res.accepted and res.tried <= 400


@pytest.mark.parametrize("spec", ["moddebruijn:16,2", "genkautz:20,3", "randomdigraph:16,2"])
def test_directed_head_swaps_keep_in_and_out_degrees(spec):
    t = topology(spec)
    res = rewire(t, objective="distance", budget=None, max_swaps=400, seed=1)
    assert res.directed
    check_invariants(t, res.topology, bidirectional=False)
    assert res.final <= res.initial and res.final == nx_distance_sum(res.topology)


def test_a_converged_run_is_a_local_minimum():
    for spec, directed in (("jellyfish:10,3", False), ("moddebruijn:8,2", True)):
        t = topology(spec)
        res = rewire(t, objective="distance", budget=None, seed=0)
        assert res.converged and res.stopped == "converged" and res.status == 0
        best = min(v for v in (graph_distance_sum(arcs, t.num_nodes)
                               for arcs in legal_swaps(res.topology, directed)) if v is not None)
        assert best >= res.final
        # and the greedy run did improve on the start where a better neighbour existed
        start_best = min(v for v in (graph_distance_sum(arcs, t.num_nodes)
                                     for arcs in legal_swaps(t, directed)) if v is not None)
        assert (res.final < res.initial) == (start_best < res.initial)


def test_ring_cannot_be_improved_and_converges():
    res = rewire(topology("ring:8"), objective="distance", budget=None)
    assert res.converged and res.accepted == 0 and res.topology is not None
    assert links(res.topology) == links(topology("ring:8"))


def test_deterministic_for_a_seed_and_seeds_differ():
    t = topology("jellyfish:24,3")
    a = rewire(t, objective="distance", budget=None, max_swaps=150, seed=7)
    b = rewire(t, objective="distance", budget=None, max_swaps=150, seed=7)
    def steps(res):
        return [(s.tried, s.value, s.removed, s.added) for s in res.history]

    assert links(a.topology) == links(b.topology) and steps(a) == steps(b) and a.accepted > 0
    others = [rewire(t, objective="distance", budget=None, max_swaps=150, seed=s)
              for s in (8, 9, 10)]
    assert any(links(o.topology) != links(a.topology) for o in others)


def test_max_swaps_and_budget_are_respected():
    t = topology("jellyfish:32,3")
    assert rewire(t, objective="distance", budget=None, max_swaps=0).tried == 0
    res = rewire(t, objective="distance", budget=None, max_swaps=25)
    assert res.tried == 25 and res.stopped == "max_swaps"

    assert res.status == 1 and res.success and "max_swaps" in res.message


def test_time_budget_on_a_clock_that_only_objective_calls_advance(monkeypatch):
    """The budget is checked before each candidate: with a clock that moves 0.1 s per
    objective call, a 0.35 s budget allows exactly four calls, whatever the machine's speed."""
    import importlib
    import types

    module = importlib.import_module("topocoll.throughput.rewire")  # the name is also a function
    clock = {"now": 0.0}
    monkeypatch.setattr(module, "time", types.SimpleNamespace(monotonic=lambda: clock["now"]))

    def ticking(topo):
        clock["now"] += 0.1
        return nx_distance_sum(topo)

    res = rewire(topology("jellyfish:32,3"), objective=ticking, budget=0.35, seed=2)
    assert res.stopped == "budget" and res.status == 1 and "time budget" in res.message
    assert res.evaluated == 4 and res.seconds == pytest.approx(0.4)
    assert res.final == nx_distance_sum(res.topology)


def test_a_lower_bound_prunes_without_changing_the_trajectory():
    calls = []

    class Exact:
        """An objective whose lower bound is exact: only improving swaps get evaluated."""

        def __call__(self, topo):
            calls.append(1)
            return nx_distance_sum(topo)

        def lower_bound(self, topo):
            return nx_distance_sum(topo)

    t = topology("jellyfish:16,3")
    plain = rewire(t, objective=lambda topo: nx_distance_sum(topo), budget=None,
                   max_swaps=200, seed=4)
    pruned = rewire(t, objective=Exact(), budget=None, max_swaps=200, seed=4)
    assert links(pruned.topology) == links(plain.topology) and pruned.final == plain.final
    assert pruned.evaluated == pruned.accepted + 1 == len(calls)
    assert pruned.pruned > 0


def test_prescreen_only_evaluates_swaps_that_do_not_lengthen_paths():
    seen = {"best": None, "best_dsum": None, "violations": 0, "calls": 0}

    def unrelated(topo):
        """Minimize the summed endpoint products: unrelated to distances."""
        value = float((topo.src * topo.dst).sum())
        dsum = nx_distance_sum(topo)
        seen["calls"] += 1
        if seen["best"] is not None and dsum > seen["best_dsum"]:
            seen["violations"] += 1
        if seen["best"] is None or value < seen["best"]:
            seen["best"], seen["best_dsum"] = value, dsum
        return value

    t = topology("jellyfish:16,3")
    res = rewire(t, objective=unrelated, budget=None, max_swaps=300, seed=5, prescreen=True)
    assert seen["violations"] == 0 and res.pruned > 0 and res.accepted > 0
    assert nx_distance_sum(res.topology) <= nx_distance_sum(t)
    plain = rewire(t, objective=unrelated, budget=None, max_swaps=300, seed=5)
    assert plain.pruned == 0 and plain.evaluated > res.evaluated


def test_warmup_is_kept_only_when_the_objective_agrees():
    t = topology("jellyfish:24,3")
    same = rewire(t, objective=lambda topo: nx_distance_sum(topo), budget=0.6, warmup=0.3,
                  seed=1)
    assert same.warmup_swaps > 0 and same.history[0].value < same.initial
    assert same.final == nx_distance_sum(same.topology) <= same.history[0].value
    # an objective that wants long paths rejects the distance warm-up as a whole
    longer = rewire(t, objective=lambda topo: -nx_distance_sum(topo), budget=0.6, warmup=0.3,
                    seed=1)
    assert longer.warmup_swaps == 0
    assert longer.final == -nx_distance_sum(longer.topology) <= longer.initial
    check_invariants(t, longer.topology, bidirectional=True)
    with pytest.raises(UnsupportedError, match=r"warmup \(seconds\) must be >= 0"):
        rewire(t, objective="distance", warmup=-1)
    with pytest.raises(InputTypeError, match="warmup .* must be a number"):
        rewire(t, objective="distance", warmup=True)


def test_link_attributes_travel_with_the_links():
    base = topology("jellyfish:16,3")
    rng = np.random.default_rng(0)
    # give each cable one bandwidth (both directions), random latencies
    pair_bw = {}
    bw = []
    for u, v in zip(base.src.tolist(), base.dst.tolist()):
        bw.append(pair_bw.setdefault((min(u, v), max(u, v)), float(rng.choice([1e9, 2e9, 4e9]))))
    t = Topology(16, base.src, base.dst, bw, 1e-6, name="hetero")
    res = rewire(t, objective="distance", budget=None, max_swaps=300, seed=0)
    assert res.accepted > 0
    assert sorted(res.topology.bandwidth.tolist()) == sorted(t.bandwidth.tolist())
    assert np.allclose(res.topology.latency, 1e-6)


def test_alltoall_objective_matches_the_ring_closed_form_and_its_bound():
    # bidirectional ring, unit links: lambda = 8/N^2, so an 8-byte buffer (1 byte per pair)
    # takes 1 / (8/64) = 8 s; the ring is arc-transitive, so the distance bound is exact:
    # (M/N) * sum of distances / capacity = 1 * 128 / 16 = 8.
    obj = alltoall_objective(8)
    ring = topology("ring:8", bandwidth=1.0)
    assert obj(ring) == pytest.approx(8.0, rel=1e-6)
    assert obj.lower_bound(ring) == pytest.approx(8.0) and distance_objective()(ring) == 128.0


@pytest.mark.parametrize("spec", ["jellyfish:12,3", "moddebruijn:16,2", "torus:3x4",
                                  "polarfly:3", "genkautz:12,3"])
def test_alltoall_lower_bound_never_exceeds_the_lp_time(spec):
    from topocoll.throughput import throughput

    obj = alltoall_objective("1MiB")
    t = topology(spec)
    value = obj(t)
    assert value == pytest.approx(throughput(t).time("1MiB"), rel=1e-6)
    assert obj.lower_bound(t) <= value * (1 + 1e-6)


def test_rewire_lowers_the_lp_time_of_a_graph_with_a_bridge():
    from topocoll.throughput import throughput

    t = topology("jellyfish:12,3", bandwidth=1.0)
    g = nx.Graph(links(t))
    assert nx.edge_connectivity(g) == 1      # this draw has a bridge: lambda = 1/(5*7)
    res = rewire(t, budget=None, max_swaps=30, seed=0)       # default objective: the LP
    check_invariants(t, res.topology, bidirectional=True)
    size = 2**20
    assert res.initial == pytest.approx(size / 12 * 35, rel=1e-5)
    assert res.accepted > 0 and res.final < res.initial
    assert res.final == pytest.approx(throughput(res.topology).time(size), rel=1e-5)
    values = [res.initial] + [step.value for step in res.history]
    assert all(b < a * (1 - 1e-6) for a, b in zip(values, values[1:]))
    # with a budget, half of it goes to the distance warm-up, kept only if the LP agrees
    warm = rewire(t, budget=1.0, seed=0)
    assert warm.final <= warm.initial and warm.stopped in ("budget", "converged")
    assert warm.final == pytest.approx(throughput(warm.topology).time(size), rel=1e-5)
    check_invariants(t, warm.topology, bidirectional=True)


# ---------------------------------------------------------------------- errors
def test_errors_are_one_line_and_name_the_rule():
    ring = topology("ring:6")
    cases = [
        (lambda: rewire(ring, objective="nope"), SpecError, "unknown rewire objective"),
        (lambda: rewire(ring, budget=-1), UnsupportedError, r"budget \(seconds\) must be > 0"),
        (lambda: rewire(ring, budget="1s"), InputTypeError, "budget .* must be a number"),
        (lambda: rewire(ring, max_swaps=-2), UnsupportedError, "max_swaps must be >= 0"),
        (lambda: rewire(ring, seed=-1), UnsupportedError, "seed must be >= 0"),
        (lambda: rewire(ring, seed=1.0), InputTypeError, "seed must be an integer"),
        (lambda: rewire(ring, objective=3), InputTypeError, "objective must be"),
        (lambda: rewire("ring:6"), InputTypeError, "needs a Topology"),
        (lambda: rewire(Topology(3, [0, 0, 1, 2], [1, 1, 2, 0])), TopologyError,
         "parallel links"),
        (lambda: rewire(Topology(4, [0, 1, 2, 3], [1, 0, 3, 2])), NotStronglyConnectedError,
         "strongly connected"),
        (lambda: rewire(topology("uniring:5"), directed=False), TopologyError,
         "bidirectional"),
    ]
    for call, error, text in cases:
        with pytest.raises(error, match=text) as info:
            call()
        assert "\n" not in str(info.value)


# ---------------------------------------------------------------------- property tests
@settings(max_examples=25, deadline=None)
@given(st.integers(6, 24), st.integers(3, 5), st.integers(0, 10**6), st.integers(0, 99))
def test_random_regular_graphs(n, d, graph_seed, seed):
    if n * d % 2 or d >= n:
        d = 3 if n % 2 == 0 else 4
    t = topology(f"jellyfish:{n},{d},{graph_seed}")
    res = rewire(t, objective="distance", budget=None, max_swaps=60, seed=seed)
    assert isinstance(res, RewireResult)
    check_invariants(t, res.topology, bidirectional=True)
    assert res.final <= res.initial and res.final == nx_distance_sum(res.topology)
    assert res.tried <= 60


@settings(max_examples=15, deadline=None)
@given(st.integers(5, 20), st.integers(2, 3), st.integers(0, 10**6), st.integers(0, 99))
def test_random_regular_digraphs(n, d, graph_seed, seed):
    t = topology(f"randomdigraph:{n},{d}:{graph_seed}")
    res = rewire(t, objective="distance", budget=None, max_swaps=60, seed=seed)
    check_invariants(t, res.topology, bidirectional=False)
    assert res.final <= res.initial and res.final == nx_distance_sum(res.topology)


# ---------------------------------------------------------------------- CLI
def run(*args, capsys, monkeypatch, cwd):
    """The real entry point, in process (a subprocess costs seconds of imports)."""
    from topocoll.cli.main import main

    monkeypatch.chdir(cwd)
    with pytest.raises(SystemExit) as info:
        main(list(args))
    out = capsys.readouterr()
    assert "Traceback" not in out.out + out.err
    return info.value.code, out.out, out.err


def test_cli_rewire_writes_a_topology_and_json(tmp_path, capsys, monkeypatch):
    code, out, err = run("rewire", "jellyfish:16,3", "--objective", "distance", "--budget", "0",
                         "--seed", "2", "-o", "out.json", "--json", capsys=capsys,
                         monkeypatch=monkeypatch, cwd=tmp_path)
    assert code == 0, err
    doc = json.loads(out)
    assert list(doc)[:4] == ["success", "status", "status_name", "message"]
    assert doc["status"] == 0 and doc["status_name"] == "SUCCESS"
    rewired = load_topology(tmp_path / "out.json")
    check_invariants(topology("jellyfish:16,3"), rewired, bidirectional=True)
    assert doc["final"] == nx_distance_sum(rewired) <= doc["initial"]
    assert doc["converged"] and doc["accepted"] == len(doc["history"]) > 0
    code, out, err = run("rewire", "moddebruijn:8,2", "--objective", "distance",
                         "--max-swaps", "20", "--budget", "0", capsys=capsys,
                         monkeypatch=monkeypatch, cwd=tmp_path)
    assert code == 0 and "swaps accepted" in out


def test_cli_rewire_errors_are_one_line(tmp_path, capsys, monkeypatch):
    for args, needle in ((("jellyfish:16,3", "--budget", "-1s"), "--budget"),
                         (("slimfly:6", "--objective", "distance"),
                          "slimfly: q must be a prime power"),
                         (("uniring:4", "--objective", "nope"), "nope")):
        code, out, err = run("rewire", *args, capsys=capsys, monkeypatch=monkeypatch,
                             cwd=tmp_path)
        assert code == 2 and err.count("\n") == 1 and err.startswith("error:")
        assert needle in err


def test_alltoall_objective_skips_the_balance_once_it_fell_back():
    tight, loose = alltoall_objective("1MiB"), alltoall_objective("1MiB")
    tight(topology("randomregular:128,8:1"))
    assert "method" not in tight.options           # balanced: it keeps trying that first
    loose(topology("randomregular:128,4:1"))
    assert loose.options["method"] == "colgen"
    pinned = alltoall_objective("1MiB", method="link")
    pinned(topology("ring:6"))
    assert pinned.options["method"] == "link"
