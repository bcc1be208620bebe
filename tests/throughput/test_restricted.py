"""The link LP's shortest-path-column start: same lambda as the whole LP, feasible flows, a
closed certificate; the fallback when shortest routes do not suffice; PDLP on the same LPs."""

import numpy as np
import pytest
from hypothesis import given

from topocoll.throughput import link_throughput
from topocoll.throughput.linklp import shortest_path_columns
from topocoll.topology import distance_matrix, topology

from tests.helpers import strongly_connected_digraphs
from .test_lp import FEW, check_link_flows


@FEW
@given(strongly_connected_digraphs(max_nodes=8))
def test_restricted_start_equals_the_whole_lp(t):
    whole = link_throughput(t, bounds=False, restrict=False)
    start = link_throughput(t, bounds=False, restrict=True)
    assert whole.status == start.status == 0
    assert start.lam == pytest.approx(whole.lam, rel=1e-6)
    check_link_flows(t, start)
    # the flows of a certified restricted round use shortest-path links only
    if start.rounds == 1:
        allowed = shortest_path_columns(t)
        assert np.all(start.flows[~allowed] <= 1e-9 * start.flows.max())


def test_shortest_path_columns_are_the_hop_dags():
    t = topology("torus:4x4", bandwidth=1.0)
    psrc, pdst, _, _ = t.pairs
    d = distance_matrix(t)
    allowed = shortest_path_columns(t)
    for s in (0, 5):
        for e in range(psrc.size):
            assert allowed[s, e] == (d[s, pdst[e]] == d[s, psrc[e]] + 1)


def test_fallback_when_shortest_routes_lose_throughput():
    # a 4-regular random graph: shortest routes alone lose a few percent, so the restricted
    # round's certificate stays open and the whole LP decides
    t = topology("randomregular:24,4:1", bandwidth=1.0)
    start = link_throughput(t, bounds=False, restrict=True)
    whole = link_throughput(t, bounds=False, restrict=False)
    assert start.rounds == 2 and start.status == 0
    assert start.lam == pytest.approx(whole.lam, rel=1e-6)
    check_link_flows(t, start)


@pytest.mark.parametrize("spec", ["randomregular:32,6:2", "torus:4x4", "hypercube:4"])
def test_pdlp_agrees_with_the_interior_point(spec):
    t = topology(spec, bandwidth=1.0)
    ipm = link_throughput(t, bounds=False, solver="ipm", restrict=True)
    pdlp = link_throughput(t, bounds=False, solver="pdlp", restrict=True)
    assert pdlp.lam == pytest.approx(ipm.lam, rel=1e-5)
    assert pdlp.dual_bound >= ipm.lam * (1 - 1e-6)       # any certificate bounds from above


def test_pricing_rounds_reach_the_whole_lp_optimum():
    # with max_rounds > 1 the columns of negative reduced cost join before any fallback
    t = topology("randomregular:24,4:1", bandwidth=1.0)
    priced = link_throughput(t, bounds=False, restrict=True, max_rounds=4)
    whole = link_throughput(t, bounds=False, restrict=False)
    assert priced.status == 0 and priced.rounds >= 2
    assert priced.lam == pytest.approx(whole.lam, rel=1e-6)
    check_link_flows(t, priced)
