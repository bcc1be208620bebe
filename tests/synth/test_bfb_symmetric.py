"""BFB in symmetric form: the orbit representatives expand to exactly the explicit BFB schedule
(allgather, reduce-scatter, allreduce; with and without a buffer size and chunks), node 0's
problems never ask for the all-pairs distance matrix, and the form is refused where it cannot
exist."""

import importlib

import numpy as np
import pytest

from topocoll.errors import UnsupportedError
from topocoll.schedule import SymmetricSchedule
from topocoll.synth import bfb_allgather, bfb_allreduce, bfb_reduce_scatter, generate
from topocoll.synth.bfb_candidates import origin_distances
from topocoll.topology import Topology, topology

bfb = importlib.import_module("topocoll.synth.bfb")

MAKERS = {"allgather": bfb_allgather, "reduce_scatter": bfb_reduce_scatter,
          "allreduce": bfb_allreduce}


def sorted_rows(transfers):
    return np.sort(transfers, order=["step", "src", "dst", "shard", "lo", "hi", "op"])


def one_way_circulant():
    """Links i -> i+1 and i -> i+3 on 10 nodes: not bidirectional, so the allreduce's allgather
    is solved on its own instead of being the reduce-scatter reversed."""
    src = np.repeat(np.arange(10), 2)
    return Topology(10, src, (src + np.tile([1, 3], 10)) % 10, name="cdigraph:10:1,3")


def assert_expands_to_explicit(t, collective, **options):
    sym = MAKERS[collective](t, symmetric=True, **options)
    explicit = MAKERS[collective](t, **options)
    assert isinstance(sym, SymmetricSchedule) and sym.form == "symmetric"
    assert np.all(sym.transfers["dst"] == 0)
    assert sym.collective.name == explicit.collective.name == collective
    assert sym.algorithm == explicit.algorithm == "bfb"
    assert sym.meta == explicit.meta
    assert sym.num_transfers == explicit.num_transfers
    full = sym.expand().transfers
    assert np.array_equal(sorted_rows(full), sorted_rows(explicit.transfers))


@pytest.mark.parametrize("collective", sorted(MAKERS))
@pytest.mark.parametrize("spec", ["torus:4x5", "torus:2x3x4", "hypercube:4", "circulant:13:2,3",
                                  "hamming:2,3", "uniring:6"])
def test_symmetric_expands_to_explicit(spec, collective):
    assert_expands_to_explicit(topology(spec), collective)


@pytest.mark.parametrize("collective", sorted(MAKERS))
def test_symmetric_expands_to_explicit_one_way_links(collective):
    assert_expands_to_explicit(one_way_circulant(), collective)


@pytest.mark.parametrize("options", [{"size": "1KiB"}, {"size": "1GiB"}, {"chunks": 3},
                                     {"chunks": 4, "size": "64KiB"}])
@pytest.mark.parametrize("spec,collective", [("torus:3x4", "allreduce"),
                                             ("hypercube:3", "reduce_scatter"),
                                             ("circulant:9:1,2", "allgather")])
def test_symmetric_expands_to_explicit_with_options(spec, collective, options):
    assert_expands_to_explicit(topology(spec), collective, **options)


def test_allgather_expansion_keeps_the_explicit_order():
    t = topology("torus:3x5")
    sym = bfb_allgather(t, symmetric=True).expand().transfers
    assert np.array_equal(sym, bfb_allgather(t).transfers)


def test_node_zero_needs_no_all_pairs_distances(monkeypatch):
    """Under symmetry nothing computes all-pairs distances (N^2 memory: 1 GiB at 16,384
    nodes); without it BFB does."""
    def refuse(topology):
        raise AssertionError("all-pairs distances were computed")
    metrics = importlib.import_module("topocoll.topology.metrics")
    monkeypatch.setattr(metrics, "row_blocks", refuse)
    for collective in MAKERS:
        assert MAKERS[collective](topology("torus:6x7"), symmetric=True).num_representatives
    assert bfb_allgather(topology("hypercube:5")).num_transfers >= 32 * 31
    with pytest.raises(AssertionError, match="all-pairs"):
        bfb_allgather(topology("torus:6x7"), symmetry=False)


def test_only_needed_distances_match_the_matrix():
    """The distances from every origin to node 0 and its in-neighbours, found by searches
    towards them, are the columns of the all-pairs matrix."""
    from topocoll.topology import distance_matrix

    t = topology("circulant:17:2,5")
    psrc, pdst, _, _ = t.pairs
    into = np.flatnonzero(pdst == 0)
    dist, column = origin_distances(t, np.arange(17), psrc[into], pdst[into])
    assert column.tolist() == sorted({0, *psrc[into].tolist()})
    assert np.array_equal(dist, distance_matrix(t)[:, column])


def test_no_translation_group_no_symmetric_form():
    with pytest.raises(UnsupportedError, match="no translation group"):
        bfb_allgather(topology("kautz:2,3"), symmetric=True)


def test_symmetric_form_needs_symmetry():
    with pytest.raises(UnsupportedError, match="needs symmetry"):
        bfb_reduce_scatter(topology("torus:3x3"), symmetric=True, symmetry=False)


def test_rooted_collectives_have_no_symmetric_form():
    with pytest.raises(UnsupportedError, match="one root"):
        bfb.bfb_schedule(topology("torus:3x3"), "broadcast", root=0, symmetric=True)


@pytest.mark.parametrize("value", ["symmetric", 1, None])
def test_bad_symmetric(value):
    with pytest.raises(UnsupportedError, match="symmetric must be"):
        bfb_allgather(topology("ring:4"), symmetric=value)


@pytest.mark.parametrize("collective", sorted(MAKERS))
def test_generate_symmetric_form_is_bfb_own(collective):
    """``generate(..., form="symmetric")`` takes BFB's representatives as they are."""
    t = topology("torus:3x4")
    made = generate(t, collective, "bfb", form="symmetric")
    assert isinstance(made, SymmetricSchedule)
    assert np.array_equal(made.transfers, MAKERS[collective](t, symmetric=True).transfers)
