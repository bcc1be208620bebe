"""Switch unwinding and failures, and synthesis on the transformed networks."""

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from topocoll.errors import NotStronglyConnectedError, TopologyError
from topocoll.schedule import verify
from topocoll.synth.ten import synthesize
from topocoll.topology import Topology, topology
from topocoll.topology.unwind import fail_links, fail_nodes, unwind_switches


def _switched(endpoints, switch_groups, bw=100.0, lat=1e-6):
    """Endpoints 0..E-1; switch s (id E+s) connects the endpoints of group s both ways."""
    src, dst = [], []
    n = endpoints + len(switch_groups)
    for s, group in enumerate(switch_groups):
        sw = endpoints + s
        for e in group:
            src += [e, sw]
            dst += [sw, e]
    return Topology(n, src, dst, bw, lat, switches=range(endpoints, n))


@settings(max_examples=12)
@given(st.integers(3, 8), st.integers(1, 7), st.sampled_from(["allgather", "reduce_scatter",
                                                              "scatter", "alltoall"]))
def test_unwinding_degree_k(m, k, coll):
    topo = _switched(m, [list(range(m))])
    u = unwind_switches(topo, k)
    kk = min(k, m - 1)
    assert u.num_nodes == m and not u.switches
    assert np.all(u.out_degree() == kk) and np.all(u.in_degree() == kk)
    assert np.allclose(u.bandwidth, 100.0 / kk) and np.allclose(u.latency, 2e-6)
    # e_i -> e_{i+j}, j = 1..k
    assert set(((u.dst - u.src) % m).tolist()) == set(range(1, kk + 1))
    s = synthesize(topo, coll, unwind_degree=k, root=0 if coll == "scatter" else None)
    assert verify(s).valid
    assert s.topology.num_nodes == m and s.meta["unwound_switches"] == [m]


def test_two_level_switch_fabric():
    # two leaf switches of 3 endpoints each, joined by a spine switch
    topo = _switched(6, [[0, 1, 2], [3, 4, 5]])
    n = topo.num_nodes
    spine = n
    src = list(topo.src) + [6, spine, 7, spine]
    dst = list(topo.dst) + [spine, 6, spine, 7]
    fabric = Topology(n + 1, src, dst, 100.0, 1e-6, switches=[6, 7, spine])
    s = synthesize(fabric, "allreduce")
    assert verify(s).valid and s.topology.num_nodes == 6


@settings(max_examples=10)
@given(st.integers(0, 10_000))
def test_failed_links_are_never_used(seed):
    rng = np.random.default_rng(seed)
    topo = topology("torus:4x4")
    u = int(rng.integers(16))
    nbrs = topo.dst[topo.src == u]
    v = int(rng.choice(nbrs))
    broken = fail_links(topo, f"{u}-{v}")
    s = synthesize(topo, "allgather", fail_links=f"{u}-{v}", seed=seed)
    assert verify(s).valid
    used = set(zip(s.transfers["src"].tolist(), s.transfers["dst"].tolist()))
    assert (u, v) not in used and (v, u) not in used
    assert broken.num_links == topo.num_links - 2


def test_failed_nodes_renumbered_and_never_used():
    s = synthesize("mesh:4x4", "allreduce", fail_nodes="7,9")
    assert verify(s).valid
    kept = s.meta["nodes_kept"]
    assert s.num_nodes == 14 and 7 not in kept and 9 not in kept
    t = fail_nodes(topology("mesh:4x4"), [7, 9])
    # every link of the result maps back to a link of the original mesh
    orig = topology("mesh:4x4")
    k = np.asarray(kept)
    for a, b in zip(t.src, t.dst):
        assert orig.has_link(k[a], k[b])


def test_failure_errors_name_the_problem():
    with pytest.raises(TopologyError, match="no link 0->5"):
        fail_links(topology("mesh:4x4"), "0-5")
    with pytest.raises(TopologyError, match="failed node 99"):
        fail_nodes(topology("mesh:4x4"), "99")
    with pytest.raises(TopologyError):
        fail_links(topology("ring:4"), "zero-one")
    # cutting both links of a corner disconnects it
    with pytest.raises(NotStronglyConnectedError):
        synthesize("mesh:3x3", "allgather", fail_links="0-1,0-3")
