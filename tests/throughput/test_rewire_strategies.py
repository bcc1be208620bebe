"""Best-swap and annealed rewiring (``rewire(strategy="best" | "anneal")``), checked against
brute force over every legal swap and with every objective recomputed independently
(networkx distances, the link LP)."""

import networkx as nx
import numpy as np
import pytest

from topocoll.errors import SpecError
from topocoll.throughput import rewire, throughput
from topocoll.throughput.rewire import alltoall_objective
from topocoll.topology import Topology, topology


def arcs(t):
    return sorted(zip(t.src.tolist(), t.dst.tolist()))


def distance_sum(n, links):
    g = nx.DiGraph(links)
    g.add_nodes_from(range(n))
    if not nx.is_strongly_connected(g):
        return float("inf")
    return float(sum(sum(d.values()) for _, d in nx.all_pairs_shortest_path_length(g)))


def every_swap(n, links, directed):
    """Arc lists of every legal swap (simple; connectivity left to the caller)."""
    have = set(links)
    if directed:
        units = links
    else:
        units = [(u, v) for u, v in links if u < v]
    for a in range(len(units)):
        for b in range(a + 1, len(units)):
            (p, q), (r, s) = units[a], units[b]
            options = [((p, s), (r, q))] if directed else [((p, r), (q, s)), ((p, s), (q, r))]
            for e, f in options:
                new = {e, f} if directed else {e, f, e[::-1], f[::-1]}
                old = {units[a], units[b]} if directed else {units[a], units[b], units[a][::-1],
                                                            units[b][::-1]}
                if any(x == y for x, y in new) or len(new) < len(old) or (have - old) & new:
                    continue
                yield sorted((have - old) | new)


def best_single_swap(t, directed):
    return min(distance_sum(t.num_nodes, s) for s in every_swap(t.num_nodes, arcs(t), directed))


def check_degrees(before, after):
    assert (after.out_degree() == before.out_degree()).all()
    assert (after.in_degree() == before.in_degree()).all()
    assert len(set(arcs(after))) == after.num_links and not np.any(after.src == after.dst)


STARTS = [("jellyfish:10,3,2", False), ("jellyfish:12,3,5", False), ("moddebruijn:8,2", True),
          ("kautz:2,3", True)]


@pytest.mark.parametrize("spec, directed", STARTS)
def test_best_swap_is_the_best_single_swap_and_never_worse_than_first(spec, directed):
    t = topology(spec)
    best = rewire(t, objective="distance", strategy="best", budget=None, warmup=0)
    first = rewire(t, objective="distance", strategy="first", budget=None, warmup=0, seed=3)
    assert best.strategy == "best" and best.directed == directed
    brute = best_single_swap(t, directed)
    start = distance_sum(t.num_nodes, arcs(t))
    if brute < start:
        assert best.history[0].value == brute
        assert first.history and best.history[0].value <= first.history[0].value
    else:
        assert not best.history and best.final == start
    # converged: a local minimum, no single swap improves; the value is the true one
    assert best.converged and best.status_name == "SUCCESS"
    final = distance_sum(t.num_nodes, arcs(best.topology))
    assert best.final == final and best_single_swap(best.topology, directed) >= final
    check_degrees(t, best.topology)


def test_best_stops_at_max_swaps():
    t = topology("jellyfish:12,3,5")
    res = rewire(t, objective="distance", strategy="best", budget=None, max_swaps=10, warmup=0)
    assert res.stopped == "max_swaps" and res.tried == 10 and not res.converged
    assert res.status_name == "LIMIT" and res.final <= res.initial


@pytest.mark.parametrize("spec", ["jellyfish:10,3,2", "moddebruijn:8,2"])
def test_anneal_is_reproducible_and_ends_no_worse(spec):
    t = topology(spec)
    runs = [rewire(t, objective="distance", strategy="anneal", budget=None, max_swaps=150,
                   seed=7, warmup=0) for _ in range(2)]
    a, b = runs
    assert arcs(a.topology) == arcs(b.topology) and a.final == b.final
    assert [(s.value, s.removed, s.added) for s in a.history] == \
           [(s.value, s.removed, s.added) for s in b.history]
    assert a.final <= a.initial and a.tried == 150 and a.strategy == "anneal"
    assert a.final == distance_sum(t.num_nodes, arcs(a.topology))
    assert a.status_name == "LIMIT" and not a.converged
    check_degrees(t, a.topology)
    other = rewire(t, objective="distance", strategy="anneal", budget=None, max_swaps=150,
                   seed=8, warmup=0)
    assert [s.removed for s in other.history] != [s.removed for s in a.history]


def test_anneal_accepts_uphill_moves_when_hot():
    t = topology("jellyfish:10,3,2")
    hot = rewire(t, objective="distance", strategy="anneal", budget=None, max_swaps=100,
                 seed=1, warmup=0, temperature=(10.0, 5.0))
    values = [hot.initial] + [s.value for s in hot.history]
    assert any(b > a for a, b in zip(values, values[1:]))      # it went uphill
    assert hot.final == min(values) <= hot.initial             # and kept the best seen


def test_anneal_on_the_alltoall_time_recomputed_by_the_link_lp():
    t = topology("moddebruijn:8,2")
    res = rewire(t, objective=alltoall_objective("1MiB"), strategy="anneal", budget=None,
                 max_swaps=60, seed=1, warmup=0)
    lam = throughput(res.topology, method="link", bounds=False).lam
    assert res.final == pytest.approx((1 << 20) / 8 / lam, rel=1e-5)
    assert res.final <= res.initial
    check_degrees(t, res.topology)


def test_bad_strategy_and_temperature():
    t = topology("ring:6")
    with pytest.raises(SpecError, match="unknown rewire strategy"):
        rewire(t, objective="distance", strategy="greedy")
    for bad in [(0.1,), (1e-4, 0.1), (0.0, 0.0)]:
        with pytest.raises((SpecError, ValueError)):
            rewire(t, objective="distance", strategy="anneal", temperature=bad, max_swaps=5)


def test_strategies_on_a_two_link_topology():
    t = Topology(2, [0, 1], [1, 0])          # nothing to swap
    for strategy in ("best", "anneal"):
        res = rewire(t, objective="distance", strategy=strategy, budget=None)
        assert res.final == res.initial == 2.0 and res.accepted == 0
