"""Classic baselines (shiftedring, shiftedbfbring, dbt, rhd, torusrings): every schedule
verifies on its own topology and has the step count and costs of its closed form.

Closed forms (N nodes, buffer M, link bandwidth b, latency alpha per step; allreduce = twice
the allgather's steps and T_B for the ring, hypercube and torus schedules):

* shiftedring    steps N-1,          T_B = (N-1)/N * M/(4b)    (optimal, node bandwidth 4b)
* shiftedbfbring steps floor(N/2),   T_B = (N-1)/N * M/(4b)    (optimal)
* rhd            steps k (N = 2^k),  T_B = (N-1)/N * M/b       (k times the bound)
* torusrings     steps sum(k_i - 1);
                 multiport=False: T_B = M/(N b) * sum_i (k_i - 1) k_1...k_{i-1} / c_i
                 (c_i = 2 links per direction pair, 1 for a size-2 dimension);
                 multiport on k^D: T_B = the bound (N-1)/N * M/(c D b)
* dbt (allreduce only, K chunks; both trees have depth H = ceil(log2 N))
                 steps S = 2H + K - 1,  T_B = S * M/(2 K b)  (N >= 3)
"""

import math

import numpy as np
import pytest

import topocoll as tc
from topocoll.errors import SpecError, TopocollError, UnsupportedError
from topocoll.schedule import verify
from topocoll.synth import ALGORITHMS, classic, generate
from topocoll.synth.classic import bfb_ring_allgather_columns
from topocoll.synth.trees import tree_depths
from topocoll.topology.families import default_shift, shifted_ring_graph
from topocoll.topology.families.trees import btree_parents, dbt_graph, dbt_trees

M = 2.0**20
ALPHA = 1e-6
B = 1e9
RING_COLLECTIVES = [("allgather", 1), ("reduce_scatter", 1), ("allreduce", 2)]


def _cost(schedule):
    report = verify(schedule)
    assert report.valid, report.summary()
    return tc.evaluate(schedule, M, alpha=ALPHA, link_bandwidth=B)


# ------------------------------------------------------------------------------ shifted rings
@pytest.mark.parametrize("n", [5, 7, 8, 10])
@pytest.mark.parametrize("collective,factor", RING_COLLECTIVES)
@pytest.mark.parametrize("algorithm", ["shiftedring", "shiftedbfbring"])
def test_shifted_rings(algorithm, n, collective, factor):
    topo = shifted_ring_graph(n)
    s = generate(topo, collective, algorithm)
    e = _cost(s)
    steps = n - 1 if algorithm == "shiftedring" else n // 2
    assert s.meta["shift"] == default_shift(n)
    assert e.steps == factor * steps
    assert e.T_L == pytest.approx(factor * steps * ALPHA)
    assert e.T_B == pytest.approx(factor * (n - 1) / n * M / (4 * B), rel=1e-12)
    assert e.bw_optimal


def test_default_shift_rule():
    for n in range(5, 60):
        if n == 6:
            continue
        s = default_shift(n)
        assert 2 <= s <= n - 2 and math.gcd(s, n) == 1
        assert all(math.gcd(r, n) != 1 for r in range(2, s))
    for n in (2, 3, 4, 6):
        with pytest.raises(SpecError, match="N = 5 and N >= 7"):
            default_shift(n)
        with pytest.raises(SpecError, match="N = 5 and N >= 7"):
            tc.build_topology(f"shiftedring:{n}")


def test_the_baselines_topologies_are_specs():
    assert tc.build_topology("shiftedring:10").name == "shiftedring:10"
    assert tc.build_topology("shiftedring:10,7").name == "shiftedring:10"     # 7 = -3 mod 10
    assert np.array_equal(tc.build_topology("shiftedring:10").pairs[1],
                          tc.build_topology("circulant:10:1,3").pairs[1])
    with pytest.raises(SpecError, match="gcd"):
        tc.build_topology("shiftedring:10,4")
    t = tc.build_topology("dbt:8")
    assert (t.name, t.num_links) == ("dbt:8", 28)
    assert verify(generate("dbt:8", "allreduce", "dbt")).valid
    assert verify(generate("shiftedring:11", "allreduce", "shiftedring")).valid


def test_shift_from_the_circulant_and_as_option():
    s = generate("circulant:11:1,3", "allgather", "shiftedring")
    assert s.meta["shift"] == 3 and verify(s).valid
    # on a complete graph any shift works; the option picks it
    s = generate("complete:9", "allreduce", "shiftedbfbring", shift=4)
    assert s.meta["shift"] == 4
    assert _cost(s).steps == 2 * 4
    used = set(((s.transfers["dst"] - s.transfers["src"]) % 9).tolist())
    assert used == {1, 8, 4, 5}


def test_shifted_rings_use_both_rings_equally():
    s = generate("circulant:10:1,3", "allgather", "shiftedring")
    offset = (s.transfers["dst"] - s.transfers["src"]) % 10
    sizes = s.transfers["hi"] - s.transfers["lo"]
    per_offset = {int(o): float(sizes[offset == o].sum()) for o in np.unique(offset)}
    assert per_offset == pytest.approx({1: 22.5, 9: 22.5, 3: 22.5, 7: 22.5})


@pytest.mark.parametrize("n", [2, 3, 6, 7])
def test_bfb_ring_columns_match_bfb(n):
    """The closed-form BFB ring schedule (appendix E.1) costs what BFB's LP finds on ring:N."""
    ring = tc.build_topology(f"ring:{n}")
    mine = tc.Schedule(ring, "allgather", bfb_ring_allgather_columns(np.arange(n), 0.0, 1.0))
    ours, theirs = _cost(mine), _cost(tc.generate(ring, "allgather", "bfb"))
    assert ours.steps == theirs.steps == n // 2
    assert ours.T_B == pytest.approx(theirs.T_B, rel=1e-12)


# ------------------------------------------------------------------------------ rhd
@pytest.mark.parametrize("k", [1, 2, 3, 4])
@pytest.mark.parametrize("collective,factor", RING_COLLECTIVES)
def test_rhd(k, collective, factor):
    n = 2**k
    s = generate(f"hypercube:{k}", collective, "rhd")
    e = _cost(s)
    assert e.steps == factor * k
    assert e.T_L == pytest.approx(factor * k * ALPHA)
    # one link of bandwidth b per step: optimal for one port, k times the hypercube bound
    assert e.T_B == pytest.approx(factor * (n - 1) / n * M / B, rel=1e-12)
    assert e.bw_ratio == pytest.approx(k)


def test_rhd_one_partner_per_step():
    s = generate("hypercube:3", "allreduce", "rhd")
    t = s.transfers
    for step in range(1, 7):
        sel = t["step"] == step
        assert len(np.unique(t["src"][sel] ^ t["dst"][sel])) == 1
    # halving: distances 4, 2, 1; doubling: 1, 2, 4
    first = [int((t["src"] ^ t["dst"])[t["step"] == step][0]) for step in range(1, 7)]
    assert first == [4, 2, 1, 1, 2, 4]


# ------------------------------------------------------------------------------ torusrings
def _plain_torus_tb(dims):
    """multiport=False: phase i moves blocks of k_1..k_{i-1} shards, k_i - 1 steps."""
    n = math.prod(dims)
    total, block = 0.0, 1
    for k in dims:
        c = 2 if k > 2 else 1
        total += (k - 1) * block / c
        block *= k
    return total * M / (n * B)


TORI = [(3, 3), (4, 4), (2, 2), (3, 3, 3), (5,), (3, 5), (2, 4), (3, 1, 4), (2, 2, 2)]


@pytest.mark.parametrize("dims", TORI, ids=lambda d: "x".join(map(str, d)))
@pytest.mark.parametrize("collective,factor", RING_COLLECTIVES)
@pytest.mark.parametrize("multiport", [True, False])
def test_torus_rings(dims, collective, factor, multiport):
    spec = "torus:" + "x".join(map(str, dims))
    s = generate(spec, collective, "torusrings", multiport=multiport)
    e = _cost(s)
    steps = sum(k - 1 for k in dims)
    assert e.steps == factor * steps
    assert e.T_L == pytest.approx(factor * steps * ALPHA)
    active = [k for k in dims if k > 1]
    if not multiport:
        assert e.T_B == pytest.approx(factor * _plain_torus_tb(dims), rel=1e-12)
    elif len(set(active)) == 1:
        assert e.bw_optimal and e.bw_ratio == pytest.approx(1.0)


@pytest.mark.parametrize("dims", [(3, 5), (2, 4), (3, 1, 4), (4, 6)], ids=str)
def test_torus_rings_worse_than_bfb_on_unequal_sides(dims):
    spec = "torus:" + "x".join(map(str, dims))
    ours = _cost(generate(spec, "allgather", "torusrings"))
    bfb = _cost(generate(spec, "allgather", "bfb"))
    assert bfb.bw_optimal and not ours.bw_optimal
    assert ours.T_B > 1.2 * bfb.T_B
    assert ours.steps > bfb.steps


def test_torus_rings_3x5_by_hand():
    """Parts: 0 = dim 0 (2 steps, block 1) then dim 1 (4 steps, block 3); 1 = dim 1 (4 steps,
    block 1) then dim 0 (2 steps, block 5). Busiest dimension per step, in blocks:
    1, 1, 4, 4, 5, 5 = 20 blocks of M/(N * 2 parts * 2 ways) over b: M/(3b)."""
    e = _cost(generate("torus:3x5", "allgather", "torusrings"))
    assert e.T_B == pytest.approx(M / (3 * B), rel=1e-12)


def test_torus_rings_equal_sides_matches_bfb_bandwidth():
    ours = _cost(generate("torus:4x4", "allreduce", "torusrings"))
    bfb = _cost(generate("torus:4x4", "allreduce", "bfb"))
    assert ours.T_B == pytest.approx(bfb.T_B, rel=1e-12)
    assert (ours.steps, bfb.steps) == (12, 8)


def test_torus_rings_dims_option_and_other_families():
    s = generate("complete:6", "allreduce", "torusrings", dims="2x3")
    assert s.meta["dims"] == [2, 3] and verify(s).valid
    assert verify(generate("ring:6", "allgather", "torusrings")).valid
    assert verify(generate("hypercube:3", "reduce_scatter", "torusrings")).valid
    s = generate("torus:3x4", "allgather", "torusrings", multiport="no")
    assert s.meta["multiport"] is False


# ------------------------------------------------------------------------------ dbt
@pytest.mark.parametrize("n", [3, 4, 5, 8, 13, 16])
@pytest.mark.parametrize("chunks", [1, 3])
def test_dbt(n, chunks):
    s = generate(dbt_graph(n), "allreduce", "dbt", chunks=chunks)
    e = _cost(s)
    depth = (n - 1).bit_length()              # ceil(log2 N), both trees
    assert s.meta["depths"] == [depth, depth]
    steps = 2 * depth + chunks - 1
    assert e.steps == steps
    assert e.T_L == pytest.approx(steps * ALPHA)
    assert e.T_B == pytest.approx(steps * M / (2 * chunks * B), rel=1e-12)
    assert not e.bw_optimal


def test_dbt_two_nodes():
    """Both trees on the one (doubled) cable: each direction carries M/2 over 2b per step."""
    e = _cost(generate(dbt_graph(2), "allreduce", "dbt"))
    assert e.steps == 2
    assert e.T_B == pytest.approx(2 * M / (4 * B))
    assert e.bw_optimal


def test_dbt_trees_are_nccls():
    # the pictures in NCCL's src/graph/trees.cc
    assert btree_parents(14)[[8, 4, 12, 2, 6, 10, 13, 1, 3]].tolist() == [0, 8, 8, 4, 4, 12, 12,
                                                                         2, 2]
    _, mirror = dbt_trees(12)
    assert mirror[[3, 7, 1, 0, 2]].tolist() == [11, 3, 3, 1, 1] and mirror[11] == -1
    _, shifted = dbt_trees(13)
    assert shifted[[9, 5, 0, 11, 12, 3, 7]].tolist() == [1, 9, 9, 0, 11, 5, 5]
    assert shifted[1] == -1


def test_dbt_topology_degree_and_complementary_leaves():
    for n in range(2, 65):
        p1, p2 = dbt_trees(n)
        for p in (p1, p2):
            assert (p < 0).sum() == 1
            assert tree_depths(p).max() == (n - 1).bit_length()
            assert np.bincount(p[p >= 0], minlength=n).max() <= 2
        assert int(dbt_graph(n).out_degree(multi=True).max()) <= 4
        if n % 2 == 0:   # mirror: leaves of tree 1 (odd ranks) are inner nodes of tree 2
            inner1 = np.bincount(p1[p1 >= 0], minlength=n) > 0
            inner2 = np.bincount(p2[p2 >= 0], minlength=n) > 0
            assert not np.any(inner1 & inner2)


def test_dbt_on_a_complete_graph():
    assert verify(generate("complete:7", "allreduce", "dbt")).valid


# ------------------------------------------------------------------------------ registry, options
def test_registry():
    for name, collectives in [("shiftedring", {"allgather", "reduce_scatter", "allreduce"}),
                              ("shiftedbfbring", {"allgather", "reduce_scatter", "allreduce"}),
                              ("dbt", {"allreduce"}),
                              ("rhd", {"allgather", "reduce_scatter", "allreduce"}),
                              ("torusrings", {"allgather", "reduce_scatter", "allreduce"})]:
        g = ALGORITHMS[name]
        assert g.name == name and set(g.collectives) == collectives
        assert g.summary and "\n" not in g.summary and callable(g.make)


def test_every_generator_takes_the_one_signature():
    """make(topology, collective, *, root=None, progress=None, **declared options): every
    declared option is a keyword of the function, and nothing else is needed."""
    import inspect

    for g in ALGORITHMS.values():
        params = inspect.signature(g.make).parameters
        names = list(params)
        assert names[:2] == ["topology", "collective"], g.name
        for name in ("root", "progress", *g.options):
            assert name in params and params[name].kind is inspect.Parameter.KEYWORD_ONLY, \
                (g.name, name)
        for p in list(params.values())[2:]:
            assert p.default is not inspect.Parameter.empty, (g.name, p.name)


@pytest.mark.parametrize("algorithm,spec", [
    ("shiftedring", "circulant:7:1,2"), ("shiftedbfbring", "circulant:7:1,2"),
    ("rhd", "hypercube:2"), ("torusrings", "torus:3x3"), ("ring", "uniring:4"),
    ("biring", "ring:4"), ("bfb", "ring:4")])
def test_unknown_option_is_named(algorithm, spec):
    with pytest.raises(UnsupportedError, match=f"^algorithm {algorithm} has no option bogus"):
        generate(spec, "allreduce", algorithm, bogus=1)
    with pytest.raises(UnsupportedError, match="algorithm dbt has no option bogus"):
        generate(dbt_graph(4), "allreduce", "dbt", bogus=1)


def test_options_are_parsed_and_forwarded(monkeypatch):
    seen = {}

    made = generate("ring:4", "broadcast", "bfb", root=2)

    def fake(topology, collective, *, root=None, progress=None, chunks=None, **rest):
        seen.update(chunks=chunks, root=root, **rest)
        return made

    from topocoll.synth import generators as registry

    monkeypatch.setitem(registry.ALGORITHMS, "bfb",
                        registry.Generator("bfb", ("broadcast",), "fake", fake,
                                           ALGORITHMS["bfb"].options))
    assert generate("ring:4", "broadcast", "bfb", root=2, chunks="4", symmetry="no") is made
    assert seen == {"chunks": 4, "root": 2, "symmetry": False}
    with pytest.raises(UnsupportedError, match="algorithm bfb has no option bogus"):
        generate("ring:4", "broadcast", "bfb", bogus=3)


@pytest.mark.parametrize("algorithm,spec,options,match", [
    ("dbt", None, {"chunks": 0}, "chunks must be >= 1"),
    ("dbt", None, {"chunks": "two"}, "chunks must be an integer"),
    ("torusrings", "torus:3x3", {"multiport": "maybe"}, "multiport must be true or false"),
    ("torusrings", "torus:3x3", {"dims": "3xa"}, "dims must be dimension sizes"),
    ("shiftedring", "circulant:9:1,2", {"shift": 3}, "gcd"),
    ("shiftedring", "circulant:9:1,2", {"shift": 4}, "has no link 0->4"),
])
def test_bad_option_values(algorithm, spec, options, match):
    topo = dbt_graph(5) if spec is None else spec
    with pytest.raises(UnsupportedError, match=match) as info:
        generate(topo, "allreduce", algorithm, **options)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("algorithm,spec,match", [
    ("shiftedring", "ring:8", "has no link 0->3"),
    ("shiftedring", "ring:4", "N = 5 or N >= 7"),
    ("shiftedbfbring", "circulant:6:1,2", "gcd\\(s, N\\) = 1"),
    ("shiftedbfbring", "circulant:16:1,4", "circulant:N:1,s"),
    ("rhd", "torus:3x3", "N = 2\\^k"),
    ("rhd", "ring:8", "x xor 2\\^j; ring:8 has no link 0->2"),
    ("rhd", "uniring:4", "has no link 0->2"),
    ("torusrings", "complete:6", "needs a torus"),
    ("torusrings", "genkautz:12,2", "needs a torus"),
    ("dbt", "ring:8", "double binary tree"),
    ("dbt", "uniring:4", "has no link"),
])
def test_bad_topologies(algorithm, spec, match):
    collective = "allreduce"
    with pytest.raises(UnsupportedError, match=match) as info:
        generate(spec, collective, algorithm)
    assert "\n" not in str(info.value)


def test_torus_dims_that_do_not_fit():
    with pytest.raises(UnsupportedError, match="make 8 nodes, complete:6 has 6"):
        generate("complete:6", "allgather", "torusrings", dims=[2, 4])
    with pytest.raises(UnsupportedError, match="torus links"):
        generate("ring:8", "allgather", "torusrings", dims="2x4")


def test_other_collectives_rejected():
    with pytest.raises(UnsupportedError, match="algorithm dbt makes allreduce; not allgather"):
        generate(dbt_graph(4), "allgather", "dbt")
    with pytest.raises(UnsupportedError, match="makes allgather, reduce_scatter, allreduce"):
        generate("hypercube:2", "broadcast", "rhd")
    with pytest.raises(UnsupportedError):   # directly, bypassing generate
        classic.rhd_schedule(tc.build_topology("hypercube:2"), "broadcast")


def test_schedules_round_trip_through_files():
    for s in (generate("circulant:7:1,2", "allreduce", "shiftedbfbring"),
              generate(dbt_graph(5), "allreduce", "dbt", chunks=2),
              generate("torus:2x3", "allreduce", "torusrings")):
        again = tc.loads_schedule(tc.dumps_schedule(s))
        assert again.meta == s.meta and verify(again).valid
        assert np.array_equal(again.transfers, s.transfers)


# ------------------------------------------------------------------------------ mutation
@pytest.mark.parametrize("make", [
    lambda: generate(dbt_graph(5), "allreduce", "dbt"),
    lambda: generate(dbt_graph(4), "allreduce", "dbt", chunks=2),
    lambda: generate("hypercube:2", "allreduce", "rhd"),
    lambda: generate("hypercube:3", "allgather", "rhd"),
    lambda: generate("hypercube:3", "reduce_scatter", "rhd"),
    lambda: generate("torus:2x3", "allreduce", "torusrings"),
    lambda: generate("torus:3x3", "reduce_scatter", "torusrings", multiport=False),
], ids=["dbt5", "dbt4-chunks2", "rhd-ar", "rhd-ag", "rhd-rs", "torus-ar", "torus-rs"])
def test_dropping_any_transfer_breaks_the_schedule(make):
    s = make()
    assert verify(s).valid
    keep = np.ones(s.num_transfers, dtype=bool)
    for i in range(s.num_transfers):
        keep[i] = False
        assert not verify(s.replace(transfers=s.transfers[keep])).valid, f"transfer {i}"
        keep[i] = True


def test_errors_are_topocoll_errors():
    with pytest.raises(TopocollError):
        generate("ring:5", "allgather", "torusrings", dims="0")
