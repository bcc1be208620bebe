"""The certificate through every solver path: for each method of ``throughput`` on closed-form
topologies, the dual bound recomputed here by Floyd-Warshall from the result's lengths is at
least the closed form, which is at least ``lambda``, and ``lambda`` is carried by the returned
flow or routes (checked here, not by the solver)."""

import numpy as np
import pytest

from topocoll.throughput import METHODS, throughput

from tests.throughput.test_colgen import independent_bound
from tests.throughput.test_lp import CLOSED_FORMS, check_link_flows, check_routes, unit

SYMMETRIC = {"ring:6", "ring:5", "uniring:5", "hypercube:4", "torus:4x4", "torus:6x6",
             "complete:5"}
CASES = [(spec, lam, method) for spec, lam in CLOSED_FORMS for method in METHODS
         if method != "symmetric" or spec in SYMMETRIC]


def test_every_method_is_covered():
    assert {m for _, _, m in CASES} == set(METHODS)


@pytest.mark.parametrize(("spec", "expected", "method"), CASES)
def test_dual_bound_closed_form_and_primal(spec, expected, method):
    t = unit(spec)
    res = throughput(t, method=method, bounds=False)
    assert res.method == method and res.status == 0
    bound = independent_bound(t, res.lengths)
    assert bound == pytest.approx(res.dual_bound, rel=1e-7)
    assert bound >= expected * (1 - 1e-9) >= res.lam * (1 - 2e-9)
    assert res.lam == pytest.approx(expected, rel=res.tolerance)
    cap = t.pairs[2]
    if method == "link":
        check_link_flows(t, res)
    elif method in ("path", "colgen", "balance"):
        check_routes(t, res, None)
    else:
        # source 0's flow: one unit to every other node, and translated to every source its
        # orbit loads fit (link_load is recomputed by the orbit sums)
        f = res.flows[0]
        psrc, pdst = t.pairs[0], t.pairs[1]
        net = np.bincount(pdst, weights=f, minlength=t.num_nodes) - \
            np.bincount(psrc, weights=f, minlength=t.num_nodes)
        np.testing.assert_allclose(net[1:], res.lam, rtol=1e-6)
        assert np.all(res.link_load <= cap * (1 + 1e-9))


def test_a_hop_limit_below_a_pairs_distance_is_refused_by_name():
    from topocoll.errors import TopologyError
    from topocoll.throughput import hop_shortest_paths
    from topocoll.topology import topology

    ring = topology("uniring:5")
    lengths = np.ones(ring.num_links)
    ok = hop_shortest_paths(ring, lengths, np.full((5, 5), 4), paths=False)[0]
    assert ok[0, 4] == pytest.approx(4)       # 0 -> 4 takes four links on the one-way ring
    short = np.full((5, 5), 3)
    assert np.isinf(hop_shortest_paths(ring, lengths, short, paths=False)[0][0, 4])
    with pytest.raises(TopologyError, match="no path of at most 3 links from 0 to 4"):
        hop_shortest_paths(ring, lengths, short)         # a path asked for that does not exist
