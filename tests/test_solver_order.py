"""Every HiGHS solver path gives the same answer whatever ran before it in the process.

HiGHS keeps process-wide state (its task scheduler, started with the first model's thread
count; the banner printed by the first ``Highs()``). The paths below are run in an order in
which every path follows every other path once (an Euler circuit of the complete digraph on
the paths) and each answer is compared with the answer the path gave when it ran first.
"""

import networkx as nx
import pytest

from topocoll.synth.ten import synthesize
from topocoll.throughput import link_throughput, path_throughput
from topocoll.throughput.rewire import rewire
from topocoll.topology import topology

from .test_highs import _tiny_mip


def _link_ipm():
    r = link_throughput(topology("ring:6", bandwidth=1.0), solver="ipm")
    return r.status, round(r.lam, 6)


def _link_pdlp():
    r = link_throughput(topology("hypercube:3", bandwidth=1.0), solver="pdlp")
    return r.status, round(r.lam, 4)


def _path_lp():
    r = path_throughput(topology("torus:3x3", bandwidth=1.0))
    return r.status, round(r.lam, 6)


def _ten_ilp():
    s = synthesize("torus:3x3", "allgather", method="ilp")
    return s.meta["ilp_status"], s.meta["makespan_slots"], s.meta["ilp_optimal"]


def _link_ipm_two_threads():
    r = link_throughput(topology("mesh:2x3", bandwidth=1.0), solver="ipm", threads=2)
    return r.status, round(r.lam, 6)


def _rewire_alltoall():
    r = rewire(topology("randomregular:12,3:1"), objective="alltoall", budget=None,
               max_swaps=3)
    return r.status, r.accepted, round(r.final, 12)


def _mip_two_threads():
    return _tiny_mip(threads=2)


PATHS = {f.__name__.lstrip("_"): f for f in (
    _link_ipm, _link_pdlp, _path_lp, _ten_ilp, _link_ipm_two_threads, _rewire_alltoall,
    _mip_two_threads)}


def _every_path_after_every_other(names):
    circuit = list(nx.eulerian_circuit(nx.complete_graph(names, create_using=nx.DiGraph)))
    return [circuit[0][0]] + [v for _, v in circuit]


def test_the_order_covers_every_ordered_pair():
    order = _every_path_after_every_other(list(PATHS))
    pairs = set(zip(order, order[1:]))
    assert pairs == {(a, b) for a in PATHS for b in PATHS if a != b}


def test_every_solver_path_after_every_other_gives_its_first_answer():
    order = _every_path_after_every_other(list(PATHS))
    first = {}
    for previous, name in zip([None] + order, order):
        answer = PATHS[name]()
        if name not in first:
            first[name] = answer
            continue
        assert answer == first[name], f"{name} after {previous}: {answer} != {first[name]}"
    # the answers are the proven ones, not merely repeatable
    assert first["ten_ilp"] == (0, 2, True)
    assert first["link_ipm"] == (0, pytest.approx(2 / 9, abs=1e-6))
    assert first["mip_two_threads"][1] == 3.0
