"""TACOS's Direct baseline for the rooted collectives (broadcast, reduce, scatter, gather): one
step, the root straight to every node or every node straight to the root, routed."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import topocoll as tc
from tests.helpers import strongly_connected_digraphs
from topocoll.collectives import COPY, REDUCE
from topocoll.errors import InputTypeError, UnsupportedError
from topocoll.schedule import simulate, traffic_of
from topocoll.synth.direct import direct_schedule, direct_traffic, direct_transfers
from topocoll.topology import topology

M = 6e6
B = 1e9
ROOTED = ("broadcast", "reduce", "scatter", "gather")


def _shape_holds(s, coll, root):
    """The closed form of the schedule's rows: N - 1 of them, all in step 1, out of the root
    (broadcast, scatter) or into it (gather, reduce), each a whole shard."""
    n, t = s.num_nodes, s.transfers
    others = sorted(set(range(n)) - {root})
    assert s.root == root and s.num_steps == 1 and s.num_transfers == n - 1
    assert np.all(t["step"] == 1) and np.all(t["lo"] == 0) and np.all(t["hi"] == 1)
    out = coll in ("broadcast", "scatter")
    assert np.all((t["src"] if out else t["dst"]) == root)
    assert sorted((t["dst"] if out else t["src"]).tolist()) == others
    if coll in ("broadcast", "reduce"):     # one shard: the whole buffer
        assert np.all(t["shard"] == 0)
    else:                                   # shard y to y, shard x from x
        assert np.array_equal(t["shard"], t["dst"] if out else t["src"])
    assert np.all(t["op"] == (REDUCE if coll == "reduce" else COPY))
    assert direct_transfers(s.topology, coll, root=root) == n - 1


@pytest.mark.parametrize("spec", ["mesh:6x6", "mesh:3x4", "ring:5", "ring:6", "torus:3x3",
                                  "torus:2x2x2", "complete:5", "hypercube:3", "kautz:2,2"])
@pytest.mark.parametrize("coll", ROOTED)
def test_rooted_direct_verifies_from_several_roots(spec, coll):
    t = topology(spec)
    routing = "xy" if spec.split(":")[0] in ("mesh", "ring", "torus") else "shortest"
    for root in sorted({0, 1, t.num_nodes // 2, t.num_nodes - 1}):
        s = direct_schedule(t, coll, root=root, routing=routing)
        assert tc.verify(s).valid, (spec, coll, root)
        _shape_holds(s, coll, root)
        assert s.routing == (None if spec.startswith("complete") else routing)


@settings(max_examples=30, deadline=None)
@given(strongly_connected_digraphs(max_nodes=8), st.sampled_from(ROOTED), st.data())
def test_rooted_direct_verifies_on_random_strongly_connected_digraphs(t, coll, data):
    root = data.draw(st.integers(0, t.num_nodes - 1))
    s = direct_schedule(t, coll, root=root)
    assert tc.verify(s).valid
    _shape_holds(s, coll, root)
    # the traffic the step model reads is the schedule's, summed
    a, b = direct_traffic(t, coll, root=root), traffic_of(s)
    assert a.root == b.root == root and a.routing == b.routing
    assert np.array_equal(a.src, b.src) and np.allclose(a.share, b.share)


@pytest.mark.parametrize("n", [3, 5, 7, 9])
def test_rooted_direct_on_an_odd_ring_closed_forms(n):
    # each of the root's two links carries the (n - 1)/2 messages to (or from) its side:
    # whole buffers for broadcast and reduce, shards of M/n for scatter and gather
    t = topology(f"ring:{n}")
    half = (n - 1) / 2
    want = {"broadcast": half * M / B, "reduce": half * M / B,
            "scatter": half * M / n / B, "gather": half * M / n / B}
    for coll, time in want.items():
        s = direct_schedule(t, coll, root=n // 2)
        assert tc.evaluate(s, M, alpha=0, link_bandwidth=B).time == pytest.approx(time)
        assert simulate(s, M, alpha=0, link_bandwidth=B).time == pytest.approx(time)


@pytest.mark.parametrize("k", [3, 6])
def test_rooted_direct_from_a_mesh_corner_with_xy_closed_forms(k):
    # xy from corner 0: the first dimension's link out of it carries the k(k - 1) nodes off its
    # row, the other the k - 1 on it; into the corner the same counts, mirrored
    t = topology(f"mesh:{k}x{k}")
    want = {"broadcast": k * (k - 1) * M / B, "reduce": k * (k - 1) * M / B,
            "scatter": (k - 1) / k * M / B, "gather": (k - 1) / k * M / B}
    for coll, time in want.items():
        s = direct_schedule(t, coll, root=0, routing="xy")
        assert tc.evaluate(s, M, alpha=0, link_bandwidth=B).time == pytest.approx(time), coll


def test_rooted_direct_on_a_complete_graph_is_one_message_per_link():
    t = topology("complete:6")
    for coll, time in (("broadcast", M / B), ("gather", M / 6 / B)):
        s = direct_schedule(t, coll, root=3)
        assert s.routing is None
        assert tc.evaluate(s, M, alpha=0, link_bandwidth=B).time == pytest.approx(time)


def _drop(t):
    return t[1:]


def _misroute(t):
    t["dst"][0] = t["dst"][1] if t["src"][0] == t["src"][1] else t["src"][0]
    return t


def _wrong_shard(t):
    t["shard"][0] = 1 if t["shard"][0] != 1 else 2
    return t


def _half(t):
    t["hi"][0] = 0.5
    return t


def _reverse(t):
    t["src"][0], t["dst"][0] = t["dst"][0], t["src"][0]
    return t


def _twice(t):
    return np.concatenate([t, t[:1]])


# every mutation of one row, on every collective it applies to: a one-shard collective has no
# other shard to swap in; a copy sent twice is waste, not an error (a contribution reduced
# twice is)
BREAKINGS = [(coll, b) for coll in ROOTED
             for b in (_drop, _misroute, _wrong_shard, _half, _reverse, _twice)
             if not (b is _wrong_shard and coll in ("broadcast", "reduce"))
             and not (b is _twice and coll != "reduce")]


@pytest.mark.parametrize("coll, breaking", BREAKINGS)
def test_breaking_one_transfer_fails_verify(coll, breaking):
    s = direct_schedule(topology("mesh:3x3"), coll, root=4, routing="xy")
    assert tc.verify(s).valid
    assert not tc.verify(s.replace(transfers=breaking(s.transfers.copy()))).valid


def test_reduce_sent_as_a_copy_fails_verify():
    s = direct_schedule(topology("ring:5"), "reduce", root=2)
    t = s.transfers.copy()
    t["op"][0] = COPY
    assert not tc.verify(s.replace(transfers=t)).valid


def test_generate_step_traffic_and_root_checks():
    s = tc.generate("mesh:6x6", "broadcast", "direct", root=2, routing="xy")
    assert s.algorithm == "direct" and s.routing == "xy" and s.root == 2
    assert tc.verify(s).valid
    assert tc.generate("ring:4", "gather", "direct").root == 0      # the default root
    traffic = tc.step_traffic("mesh:6x6", "reduce", "direct", root=17, routing="xy")
    assert traffic.root == 17 and traffic.size == 35 and np.all(traffic.dst == 17)
    with pytest.raises(UnsupportedError, match="root must be a node"):
        direct_schedule(topology("ring:4"), "broadcast", root=4)
    with pytest.raises(UnsupportedError, match="root must be a node"):
        tc.generate("ring:4", "scatter", "direct", root=-1)
    with pytest.raises(InputTypeError, match="root must be a node number"):
        direct_schedule(topology("ring:4"), "gather", root=True)
