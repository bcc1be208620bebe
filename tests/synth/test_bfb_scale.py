"""BFB at scale: translation symmetry (verified, never trusted), parallel batches, the latency-
aware LP, and discrete chunks."""

import importlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import topocoll as tc
from topocoll.errors import UnsupportedError
from topocoll.schedule import step_costs, verify
from topocoll.synth import bfb_allgather, bfb_allreduce, bfb_reduce_scatter
from topocoll.topology import Topology, topology
from topocoll.topology.symmetry import TranslationGroup, translation_group

from tests.helpers import strongly_connected_digraphs

bfb_lp = importlib.import_module("topocoll.synth.bfb_lp")


# --------------------------------------------------------------------------- symmetry
@pytest.mark.parametrize("spec,dims", [
    ("torus:4x6", (4, 6)), ("torus:3x4x5", (3, 4, 5)), ("hypercube:4", (2, 2, 2, 2)),
    ("circulant:13:2,3", (13,)), ("ring:7", (7,)), ("uniring:5", (5,)), ("complete:6", (6,)),
    ("hamming:2,4", (4, 4)),
])
def test_translation_groups_of_cayley_families(spec, dims):
    assert translation_group(topology(spec)).dims == dims


@pytest.mark.parametrize("spec", ["mesh:3x4", "kautz:2,3", "genkautz:20,3", "debruijn:2,4"])
def test_no_translation_group(spec):
    assert translation_group(topology(spec)) is None


def test_claimed_symmetry_is_verified():
    t = topology("torus:4x6")
    rng = np.random.default_rng(1)
    perm = rng.permutation(t.num_nodes)  # same graph, ids shuffled: translations break
    shuffled = Topology(t.num_nodes, perm[t.src], perm[t.dst], name="shuffled",
                        meta={"symmetry": {"kind": "mixed_radix", "dims": [4, 6]}, "dims": [4, 6]})
    assert translation_group(shuffled) is None
    slower = t.with_links(bandwidth=np.where(np.arange(t.num_links) == 3, 1.0, 2.0))
    assert translation_group(slower) is None


def test_group_arithmetic():
    g = TranslationGroup((3, 4))
    x = np.arange(12)
    assert np.array_equal(g.subtract(g.add(x, 7), x), np.full(12, 7))
    assert sorted(g.add(x, 5).tolist()) == list(range(12))


@pytest.mark.parametrize("spec", ["torus:4x5", "torus:2x3x4", "hypercube:5", "circulant:25:3,4",
                                  "hamming:2,4", "ring:10", "complete:7", "uniring:6"])
def test_symmetric_solution_equals_the_full_one(spec):
    t = topology(spec)
    sym = bfb_allgather(t)
    full = bfb_allgather(t, symmetry=False)
    assert sym.meta["symmetry"] and full.meta["symmetry"] is None
    assert verify(sym).valid
    assert np.allclose(step_costs(sym)[2], step_costs(full)[2], rtol=1e-12, atol=0)


@st.composite
def circulants(draw):
    n = draw(st.integers(4, 30))
    offsets = draw(st.lists(st.integers(1, n - 1), min_size=1, max_size=3, unique=True))
    src = np.repeat(np.arange(n), len(offsets))
    dst = (src + np.tile(offsets, n)) % n
    return Topology(n, src, dst, bandwidth=1.0, name=f"cdigraph:{n}:{offsets}")


@given(circulants())
@settings(max_examples=25)
def test_symmetry_on_random_circulant_digraphs(t):
    if not tc.is_strongly_connected(t):
        return
    sym = bfb_allgather(t)
    assert sym.meta["symmetry"] == [t.num_nodes]
    assert verify(sym).valid
    full = bfb_allgather(t, symmetry=False)
    assert step_costs(sym)[2].sum() == pytest.approx(step_costs(full)[2].sum(), rel=1e-12)


def test_parallel_batches_equal_serial(monkeypatch):
    monkeypatch.setattr(bfb_lp, "LP_BATCH", 40)  # many small batches, so the pool is used
    t = topology("kautz:2,4").with_links(bandwidth=np.linspace(1.0, 2.0, 48))
    one = bfb_allgather(t, workers=1, symmetry=False)
    two = bfb_allgather(t, workers=2, symmetry=False)
    assert verify(two).valid
    assert np.allclose(step_costs(one)[2], step_costs(two)[2], rtol=1e-12, atol=0)


@pytest.mark.parametrize("workers", [0, -1, 1.5, True])
def test_bad_workers(workers):
    with pytest.raises(UnsupportedError, match="workers"):
        bfb_allgather(topology("kautz:2,2"), workers=workers, symmetry=False)


# --------------------------------------------------------------------------- heterogeneous
def slow_link_ring():
    t = topology("ring:6", bandwidth=1e9, latency=1e-6)
    slow = (t.src == 5) & (t.dst == 0)
    return t.with_links(latency=np.where(slow, 1e-3, 1e-6))


def into_zero_at_step_3(s):
    t = s.transfers
    m = (t["dst"] == 0) & (t["step"] == 3)
    return {int(src): float(hi - lo) for src, lo, hi in zip(t["src"][m], t["lo"][m], t["hi"][m])}


def test_latency_blind_splits_evenly():
    assert into_zero_at_step_3(bfb_allgather(slow_link_ring())) == {1: 0.5, 5: 0.5}


def test_small_messages_avoid_a_slow_link():
    s = bfb_allgather(slow_link_ring(), size="1KiB")
    assert verify(s).valid
    assert into_zero_at_step_3(s) == {1: 1.0}
    assert s.meta["size"] == 1024


def test_large_messages_use_both_links_almost_evenly():
    shares = into_zero_at_step_3(bfb_allgather(slow_link_ring(), size="1GiB"))
    assert set(shares) == {1, 5}
    assert 0.5 < shares[1] < 0.51   # the fast-latency link carries a little more
    assert sum(shares.values()) == pytest.approx(1.0)


def test_latency_aware_lp_minimises_its_objective():
    """At every (v, t) the chosen split minimises max over used links of alpha + load/b."""
    t = slow_link_ring()
    size = 64 * 1024
    s = bfb_allgather(t, size=size)
    tr = s.transfers
    m = (tr["dst"] == 0) & (tr["step"] == 3)
    x = float(tr["hi"][m & (tr["src"] == 1)][0] - tr["lo"][m & (tr["src"] == 1)][0])
    shard = size / 6

    def cost(share_fast):
        slow = 1e-3 + (1 - share_fast) * shard / 1e9 if share_fast < 1 else 0.0
        return max(1e-6 + share_fast * shard / 1e9, slow)

    grid = np.linspace(0, 1, 2001)
    assert cost(x) <= min(cost(g) for g in grid) + 1e-15


def test_heterogeneous_reduce_scatter_and_allreduce_verify():
    t = slow_link_ring()
    assert verify(bfb_reduce_scatter(t, size="4KiB")).valid
    assert verify(bfb_allreduce(t, size="4KiB")).valid


# --------------------------------------------------------------------------- chunks
def whole_chunks(s, k):
    lo, hi = s.transfers["lo"] * k, s.transfers["hi"] * k
    return np.array_equal(lo, np.round(lo)) and np.array_equal(hi, np.round(hi))


@given(strongly_connected_digraphs(max_nodes=8), st.integers(1, 9))
@settings(max_examples=30)
def test_chunks_on_random_digraphs(t, k):
    s = bfb_allgather(t, chunks=k)
    assert verify(s).valid
    assert whole_chunks(s, k)
    assert s.meta["chunks"] == k
    assert -1e-12 <= s.meta["chunk_loss"] <= s.meta["chunk_loss_bound"] + 1e-12


@pytest.mark.parametrize("spec,k", [("hypercube:4", 3), ("torus:3x5", 2), ("genkautz:30,3", 4),
                                    ("hypercube:5", 16)])
def test_chunks_loss_within_bound(spec, k):
    t = topology(spec)
    s = bfb_allgather(t, chunks=k)
    exact = bfb_allgather(t)
    rounded, fractional = step_costs(s)[2].sum(), step_costs(exact)[2].sum()
    assert whole_chunks(s, k) and verify(s).valid
    assert s.meta["chunk_loss"] == pytest.approx(rounded / fractional - 1, abs=1e-12)
    # per step, each link carries less than one chunk more than the fractional optimum
    per_step = (1 / (t.num_nodes * k)) / t.pairs[2].min()
    assert rounded <= fractional + s.num_steps * per_step * (1 + 1e-12)


def test_enough_chunks_lose_nothing_on_a_hypercube():
    s = bfb_allgather(topology("hypercube:4"), chunks=12)  # every split is a multiple of 1/12
    assert s.meta["chunk_loss"] == pytest.approx(0.0, abs=1e-12)


def test_chunked_allreduce_verifies():
    s = tc.generate("torus:3x4", "allreduce", "bfb", chunks=4)
    assert verify(s).valid and whole_chunks(s, 4)


@pytest.mark.parametrize("chunks", [0, -2, 2.5, True])
def test_bad_chunks(chunks):
    with pytest.raises(UnsupportedError, match="chunks"):
        bfb_allgather(topology("ring:4"), chunks=chunks)
