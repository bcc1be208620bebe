"""The generators' own transfer counts (what the memory guard of ``generate`` asks for) hold
every transfer the generator makes, and not far more."""

import pytest

from topocoll.errors import ResourceLimitError
from topocoll.synth import generate
from topocoll.synth.generators import ALGORITHMS
from topocoll.topology import topology

CASES = [
    ("swing", "torus:4x4", "allreduce", {"variant": "latency"}),
    ("swing", "torus:8x8", "allreduce", {"variant": "latency", "multiport": True}),
    ("swing", "torus:8x4", "allreduce", {"variant": "bandwidth", "multiport": True}),
    ("swing", "ring:12", "allreduce", {"variant": "latency"}),
    ("swing", "ring:12", "allgather", {"multiport": True}),
    ("swing", "hypercube:5", "reduce_scatter", {}),
    ("rd", "torus:4x4", "allreduce", {"variant": "latency"}),
    ("rd", "ring:12", "allreduce", {"variant": "latency"}),
    ("rd", "ring:10", "allgather", {}),
    ("rd", "torus:4x4", "allreduce", {}),
    ("torusrings", "torus:4x4x4", "allgather", {}),
    ("torusrings", "torus:4x4x4", "allreduce", {"multiport": False}),
    ("torusrings", "torus:3x5", "reduce_scatter", {}),
]


@pytest.mark.parametrize("algorithm, spec, collective, options", CASES,
                         ids=lambda v: str(v))
def test_the_count_holds_every_transfer_and_is_within_a_third_of_it(algorithm, spec,
                                                                     collective, options):
    made = generate(spec, collective, algorithm, form="explicit", **options)
    counted = ALGORITHMS[algorithm].transfers(topology(spec), collective, **options)
    assert made.num_transfers <= counted <= 1.34 * made.num_transfers + 2 * made.num_nodes ** 2


def test_a_build_beyond_the_limit_is_refused_by_its_own_count(monkeypatch):
    # the fewest transfers of an allreduce on 4096 nodes (16.8 million) would fit 3 GiB; the
    # latency variant moves every vector in each of 12 steps: 201 million
    monkeypatch.setenv("TOPOCOLL_MEMORY_LIMIT", "3GiB")
    with pytest.raises(ResourceLimitError, match=r"swing allreduce schedule on 4096 nodes "
                                                 r"\(about 201,326,592 transfers\)"):
        generate("torus:64x64", "allreduce", "swing", variant="latency")


def test_a_generator_without_a_count_is_asked_for_twice_the_fewest_of_an_allreduce(
        monkeypatch):
    monkeypatch.setenv("TOPOCOLL_MEMORY_LIMIT", "1GiB")
    with pytest.raises(ResourceLimitError, match=r"about 33,546,240 transfers"):
        generate("torus:64x64", "allreduce", "rankring")
