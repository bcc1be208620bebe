"""Prices of the four collectives a training workload sends, on one cluster.

:func:`simulate_training <topocoll.studies.loop.simulate_training>` takes a dict collective ->
``cost(size_bytes) -> seconds``. The functions here make those dicts, every price in the
alpha-beta step model (``steps * alpha + T_B * M / B``, docs/math.md section 1) with M the
collective's size in the workload (ASTRA-sim's size: the whole buffer):

* :func:`bound_prices`: the bounds on N nodes of degree d. Allreduce: the two-phase bound.
  All-gather and reduce-scatter: one phase of it, ``moore_depth(N, d)`` steps and
  ``(N-1)/N * M/B``. All-to-all: ``moore_depth`` steps and ``S/N * M/B``, where ``S`` is the
  least sum of distances from one node to all others that out-degree d allows (the Moore
  bound: at most ``d^k`` nodes at distance k), since every node sends ``M/N`` to every other
  one over at least that many hops and has egress B.
* :func:`schedule_prices`: a topology's own schedules. Allreduce as given; all-gather and
  reduce-scatter: BFB on the topology, built and priced once (or one phase of a known
  allreduce price, :func:`phase_prices`); all-to-all: :func:`alltoall_distance_cost`.
* :func:`ring_prices`: the ring's phases, ``N-1`` steps and ``(N-1)/N * M/B`` (ShiftedRing, and
  DBT's all-gather and reduce-scatter, which NCCL runs on rings, not trees).

:func:`alltoall_distance_cost` prices an all-to-all on a topology from its distances: diameter
steps and ``T_B = sum of dist(u, v) / N^2 * M/B``, every shard of ``M/N`` carried over a
shortest path with the load spread evenly over the nodes' egress. It is the time of a
balanced shortest-path routing, a lower bound on that topology (a topology that is not
vertex-transitive may need more); it is labelled so wherever it is shown.

Bandwidth: B is a node's egress. The functions that price a topology take ``link_bandwidth``
(default 100 Gbps per link, :mod:`topocoll.defaults`) or ``bandwidth`` (B itself, the NSDI 2025
paper's per-node convention); :func:`bound_prices` per link takes ``B = d * link_bandwidth``;
:func:`ring_prices` and :func:`phase_prices` take B (see
:func:`~topocoll.studies.allreduce_costs.node_bandwidth_of`).

>>> p = bound_prices(64, 4, alpha="10us", bandwidth="100Gbps")
>>> p["allgather"].steps, round(p["allgather"].per_byte * 12.5e9, 6)   # 3 steps, 63/64 M/B
(3, 0.984375)
>>> p["alltoall"].steps, round(p["alltoall"].per_byte * 12.5e9, 4)     # (4 + 32 + 129) / 64
(3, 2.5781)
"""

from ..defaults import bandwidth_convention
from ..topology.cuts import moore_distance_sum
from ..units import parse_bandwidth, parse_time, whole_number
from .allreduce_costs import AllreduceCost, lower_bound_cost, priced_network

__all__ = ["bound_prices", "ring_prices", "phase_prices", "schedule_prices",
           "alltoall_distance_cost", "DISTANCE_BOUND"]

#: How :func:`alltoall_distance_cost` prices, in words.
DISTANCE_BOUND = "all-to-all distance bound (balanced shortest paths)"


def _alpha_bw(alpha, bandwidth):
    return float(parse_time(alpha, what="alpha")), float(parse_bandwidth(bandwidth,
                                                                         what="bandwidth"))


def bound_prices(nodes, degree, *, alpha, bandwidth=None, link_bandwidth=None):
    """The bounds for every collective (see the module docstring); per link (the default),
    ``B = degree * link_bandwidth``."""
    from ..topology.metrics import moore_depth

    nodes, degree = whole_number(nodes, "nodes", 2), whole_number(degree, "degree", 1)
    node, link = bandwidth_convention(bandwidth, link_bandwidth)
    a, b = _alpha_bw(alpha, node if node is not None else degree * link)
    depth = moore_depth(nodes, degree)
    phase = AllreduceCost.from_step_model(depth, (nodes - 1) / nodes, alpha=a, bandwidth=b,
                                          name="one-phase bound")
    return {"allreduce": lower_bound_cost(nodes, degree, alpha=a, bandwidth=b),
            "allgather": phase, "reducescatter": phase,
            "alltoall": AllreduceCost.from_step_model(
                depth, moore_distance_sum(nodes, degree) / nodes, alpha=a, bandwidth=b,
                name="all-to-all Moore bound")}


def ring_prices(nodes, *, alpha, bandwidth, name="ring"):
    """All-gather and reduce-scatter on a ring: ``N-1`` steps, ``(N-1)/N * M/B``."""
    nodes = whole_number(nodes, "nodes", 2)
    a, b = _alpha_bw(alpha, bandwidth)
    phase = AllreduceCost.from_step_model(nodes - 1, (nodes - 1) / nodes, alpha=a, bandwidth=b,
                                          name=name)
    return {"allgather": phase, "reducescatter": phase}


def phase_prices(steps, t_b_per_phase, *, alpha, bandwidth, name):
    """All-gather and reduce-scatter as one phase (``steps`` steps, ``T_B`` in M/B) of an
    allreduce made of the two (the finder's BFB candidates are)."""
    a, b = _alpha_bw(alpha, bandwidth)
    phase = AllreduceCost.from_step_model(steps, t_b_per_phase, alpha=a, bandwidth=b, name=name)
    return {"allgather": phase, "reducescatter": phase}


def alltoall_distance_cost(topology, *, alpha, bandwidth=None, link_bandwidth=None, name=None):
    """The all-to-all distance bound on ``topology`` (see the module docstring); per link (the
    default), B is the mean egress of a node (the load is spread over all of them).

    >>> from topocoll.topology import topology
    >>> c = alltoall_distance_cost(topology("ring:4"), alpha="1us", bandwidth="1GB/s")
    >>> c.steps, round(c.per_byte * 1e9, 6)     # distances 1, 1, 2 from each node: 4/4
    (2, 1.0)
    """
    from ..topology.metrics import diameter, distance_sum

    node, link = bandwidth_convention(bandwidth, link_bandwidth)
    n = topology.num_nodes
    a, b = _alpha_bw(alpha, node if node is not None else link * topology.num_links / n)
    return AllreduceCost.from_step_model(diameter(topology), distance_sum(topology) / n / n,
                                         alpha=a, bandwidth=b,
                                         name=name or f"{topology.name} {DISTANCE_BOUND}")


def _step_price(schedule, name):
    """The step-model price of a schedule on its (already priced) topology."""
    from ..schedule.cost import step_costs

    steps, alpha_t, beta_t = step_costs(schedule)
    return AllreduceCost(name, float(alpha_t.sum()), float(beta_t.sum()), int(steps.size))


def schedule_prices(topology, kinds, *, alpha, label, bandwidth=None, link_bandwidth=None):
    """Prices of ``kinds`` (all-gather, reduce-scatter, all-to-all) on ``topology`` (every link
    ``link_bandwidth``, default 100 Gbps, or each node's egress ``bandwidth``): BFB schedules
    generated, verified and priced once; all-to-all by the distance bound."""
    from ..schedule.verify import verify
    from ..synth import generate

    topo = priced_network(topology, alpha=alpha, bandwidth=bandwidth,
                          link_bandwidth=link_bandwidth)
    out = {}
    for kind in kinds:
        if kind == "alltoall":
            out[kind] = alltoall_distance_cost(topo, alpha=alpha, bandwidth=bandwidth,
                                               link_bandwidth=link_bandwidth)
            continue
        schedule = generate(topo, "reduce_scatter" if kind == "reducescatter" else kind, "bfb")
        verify(schedule).raise_if_invalid()
        out[kind] = _step_price(schedule, f"{label} bfb {kind}")
    return out
