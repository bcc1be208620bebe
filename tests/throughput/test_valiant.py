"""Valiant and ECMP shortest-path routing: loads against brute-force path enumeration, the
throughputs against closed forms, and the theorem that no routing beats the optimal LP."""

import json

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.cli.conftest import run_cli
from topocoll.errors import NotStronglyConnectedError
from topocoll.throughput import shortest_path_loads, throughput, valiant_throughput
from topocoll.topology import Topology, topology


def brute_pair_loads(t):
    """``loads[(s, d)]``: per link, the share of one unit s -> d under an even split over all
    shortest link-paths, by enumerating them with networkx."""
    g = nx.MultiDiGraph()
    g.add_nodes_from(range(t.num_nodes))
    for i, (a, b) in enumerate(zip(t.src.tolist(), t.dst.tolist())):
        g.add_edge(a, b, key=i)
    ranks = [v for v in range(t.num_nodes) if v not in set(t.switches)]
    out = {}
    for s in ranks:
        for d in ranks:
            if s == d:
                continue
            hops = nx.shortest_path_length(g, s, d)
            paths = [p for p in nx.all_simple_edge_paths(g, s, d, cutoff=hops) if len(p) == hops]
            load = np.zeros(t.num_links)
            for p in paths:
                for _, _, k in p:
                    load[k] += 1 / len(paths)
            out[s, d] = load
    return out, ranks


SMALL = ["complete:5", "ring:7", "ring:8", "hypercube:3", "torus:2x4:double", "borelcayley:7,3",
         "dragonfly:3,1", "dragonfly:2,1,3,1", "zigzag(complete:5,ring:4)", "kautz:2,3",
         "randomregular:12,3:5", "circulant:9:1,3", "metacyclic:8,2,7:1.0,3.1,0.1,6.0",
         "switch:3"]


@pytest.mark.parametrize("spec", SMALL)
def test_loads_and_valiant_against_brute_force(spec):
    t = topology(spec, bandwidth=1.0)
    pair, ranks = brute_pair_loads(t)
    assert np.allclose(shortest_path_loads(t), sum(pair.values()))
    # Valiant, summed literally: s -> m -> d with m uniform over the N ranks
    n = len(ranks)
    valiant = np.zeros(t.num_links)
    for s in ranks:
        for d in ranks:
            if s != d:
                for m in ranks:
                    valiant += (pair.get((s, m), 0) + pair.get((m, d), 0)) / n
    res = valiant_throughput(t)
    used = valiant > 0
    assert res.lam == pytest.approx(float(np.min(1.0 / valiant[used])), rel=1e-12)
    assert res.lam == pytest.approx(res.lam_shortest * n / (2 * (n - 1)), rel=1e-12)
    assert res.utilization.max() == pytest.approx(1.0)


@pytest.mark.parametrize("n", [3, 4, 7, 10])
def test_complete_graph_closed_form(n):
    res = valiant_throughput(f"complete:{n}", bandwidth=2.0)
    assert res.lam_shortest == pytest.approx(2.0)
    assert res.lam == pytest.approx(2.0 * n / (2 * (n - 1)))


@pytest.mark.parametrize("n", [5, 6, 9, 12])
def test_ring_closed_form(n):
    # odd N = 2m+1: a link carries 1 + 2 + ... + m pairs; even N = 2m: m(m-1)/2 + m/2
    sp = 8 / (n * n - 1) if n % 2 else 8 / (n * n)
    res = valiant_throughput(f"ring:{n}", bandwidth=1.0)
    assert res.lam_shortest == pytest.approx(sp)
    assert res.lam == pytest.approx(sp * n / (2 * (n - 1)))


@pytest.mark.parametrize("k", [2, 3, 5, 7])
def test_hypercube_closed_form(k):
    n = 2 ** k
    res = valiant_throughput(f"hypercube:{k}", bandwidth=1.0)
    assert res.lam_shortest == pytest.approx(2 / n) and res.lam == pytest.approx(1 / (n - 1))


@pytest.mark.parametrize("spec,method", [("lps:5,3", None), ("bundlefly:3,5", "colgen"),
                                         ("dragonfly:4,2", None), ("borelcayley:13,4", None),
                                         ("kautz:2,3", None), ("zigzag(complete:5,ring:4)", None)])
def test_no_routing_beats_the_optimal_lp(spec, method):
    t = topology(spec, bandwidth=1.0)
    res, opt = valiant_throughput(t), throughput(t, method=method)
    assert opt.status_name == "SUCCESS"
    assert res.lam < res.lam_shortest <= opt.lam * (1 + 1e-6)
    assert res.lam_shortest <= opt.dual_bound * (1 + 1e-9)


@settings(max_examples=12)
@given(n=st.integers(6, 14), d=st.integers(2, 4), seed=st.integers(0, 50))
def test_random_regular_valiant_below_optimum(n, d, seed):
    if n * d % 2:
        n += 1
    t = topology(f"randomregular:{n},{d}:{seed}", bandwidth=1.0)
    res, opt = valiant_throughput(t), throughput(t, method="link")
    assert res.lam == pytest.approx(res.lam_shortest * n / (2 * (n - 1)))
    assert res.lam_shortest <= opt.dual_bound * (1 + 1e-9)


def test_disconnected_is_refused():
    with pytest.raises(NotStronglyConnectedError, match="no path"):
        valiant_throughput(Topology(4, np.array([0, 1]), np.array([1, 0]), 1.0, 1e-6))


def test_cli_routing_valiant(tmp_path):
    out = run_cli(["alltoall", "hypercube:3", "--routing", "valiant", "--link-bandwidth",
                   "1B/s", "--size", "8B", "--json"], tmp_path)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)["routing"]
    assert doc["name"] == "valiant" and doc["lambda"] == pytest.approx(1 / 7)
    assert doc["fraction_of_optimum"] == pytest.approx(4 / 7, rel=1e-6)
    assert doc["time"] == pytest.approx(7.0)               # (8 B / 8) / (1/7 B/s)
    out = run_cli(["alltoall", "ring:5", "--routing", "shortest", "--link-bandwidth", "1B/s"],
                  tmp_path)
    assert out.returncode == 0 and "shortest routing: lambda 0.333333 B/s" in out.stderr + \
        out.stdout
