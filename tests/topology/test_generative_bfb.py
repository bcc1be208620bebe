"""BFB on the generative families where Zhao et al. (NSDI 2025) prove or verify bandwidth
optimality: distance-regular graphs (Appendix E.3), twisted tori (computationally verified),
circulants C(n, {a, a+1}) (proved for degree 4), and the 8-node twisted hypercube (Appendix I).

Every schedule is model-checked, takes exactly diameter steps, and is bandwidth-optimal."""

import pytest

import topocoll as tc
from topocoll.topology import DISTANCE_REGULAR_GRAPHS, diameter

SMALL_DRGS = [f"drg:{name}" for name, facts in DISTANCE_REGULAR_GRAPHS.items()
              if facts["nodes"] <= 130]

SPECS = SMALL_DRGS + [
    "paley:13", "paley:17", "paley:25", "odd:3", "odd:4", "doubledodd:3", "johnson:6,3",
    "johnson:7,2",
    "twistedtorus:4x8", "twistedtorus:4x8:2", "twistedtorus:3x6", "twistedtorus:5x10",
    "twistedtorus:3x3x6", "twistedtorus:4x4x8",
    "optcirculant:5", "optcirculant:6", "optcirculant:13", "optcirculant:25", "optcirculant:30",
    "optcirculant:41", "optcirculant:64", "optcirculant:85", "optcirculant:100",
    "twistedhypercube:3", "twistedhypercube:4",
]


@pytest.mark.parametrize("spec", SPECS)
def test_bfb_allgather_is_bandwidth_optimal(spec):
    topo = tc.build_topology(spec)
    schedule = tc.generate(topo, "allgather", "bfb")
    report = tc.verify(schedule)
    assert report.valid, report.summary()
    cost = tc.evaluate(schedule, 2**20)
    assert cost.bw_optimal, (spec, cost)
    assert cost.steps == diameter(topo)


def test_table7_drgs_are_covered():
    """Every row of Table 7 up to 80 nodes is in the BFB check above."""
    table7 = list(DISTANCE_REGULAR_GRAPHS)[:15]
    covered = [name for name in table7 if f"drg:{name}" in SPECS]
    assert covered == table7[:13]


@pytest.mark.parametrize("spec", ["drg:pg23-incidence", "twistedtorus:4x8", "optcirculant:25"])
def test_bfb_allreduce_is_valid_and_bandwidth_optimal(spec):
    schedule = tc.generate(spec, "allreduce", "bfb")
    assert tc.verify(schedule).valid
    cost = tc.evaluate(schedule, 2**20)
    assert cost.bw_optimal and cost.steps == 2 * diameter(tc.build_topology(spec))
