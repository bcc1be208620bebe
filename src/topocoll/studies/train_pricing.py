"""What every collective of a training run costs, for :func:`~topocoll.studies.trainsim.train_sim`:
our allreduce (a schedule, BFB on a topology, or the finder's choice), the two-phase bound,
the NSDI 2025 paper's baselines (cached), and the other collectives a hybrid workload sends.

Bandwidth here is a convention dict, ``{"bandwidth": B}`` (per node) or ``{"link_bandwidth":
L}`` (per link), the keywords of the pricing functions of :mod:`.allreduce_costs`.
"""

import os
from dataclasses import dataclass

from ..errors import UnsupportedError
from ..results import as_progress
from ..schedule.io import load_schedule
from ..schedule.model import Schedule
from ..schedule.verify import verify
from ..topology.specs import topology as make_topology
from .allreduce_costs import (CLOSED_FORM, AllreduceCost, LinkModelCost, baseline_closed_form,
                              baseline_cost, node_bandwidth_of, priced_network, schedule_cost)
from .prices import (alltoall_distance_cost, bound_prices, phase_prices, ring_prices,
                     schedule_prices)

__all__ = ["OurAllreduce", "scheduled_allreduce", "found_allreduce", "cached_baseline",
           "collective_prices", "finder_degree", "VERIFIED_EXPLICIT", "GENERATED"]

#: How a verified explicit schedule was priced: the finder's own word for it
#: (``topocoll.finder.evaluation.EXPLICIT``; the finder sits beside the studies, not below).
VERIFIED_EXPLICIT = "verified explicit"

#: How a baseline's cost was obtained with ``verify_full`` (its schedule generated and priced).
GENERATED = "generated explicit"


@dataclass
class OurAllreduce:
    """Our allreduce: its ``cost`` (callable size -> seconds, with a ``name``), the ``nodes``
    and ``degree`` it runs on, ``how`` it was priced (``{"method": .., "exact": ..}``, and
    ``"base"`` for an expanded topology), and the ``topology`` of a schedule or a spec (None
    for the finder's choice, ``found``)."""

    cost: object
    nodes: int
    degree: int
    how: dict
    topology: object = None
    found: object = None


def _silent(*args):
    """A progress callback that reports nothing."""


def scheduled_allreduce(schedule=None, spec=None, *, nodes=None, degree=None, alpha, bandwidth,
                        comm_model="step", progress=None):
    """Our allreduce from a ``schedule`` (a :class:`~topocoll.schedule.model.Schedule` or a
    file's path) or BFB on the topology ``spec``, verified, priced by the step model or timed
    by the link model (``comm_model="link"``) at every size.

    Raises
    ------
    UnsupportedError
        Not an allreduce, or ``nodes``/``degree`` that the schedule's topology contradicts.
    InvalidScheduleError
        The schedule fails verification.
    """
    say = as_progress(progress) or _silent
    if schedule is not None:
        label = schedule if isinstance(schedule, (str, os.PathLike)) else "(given)"
        schedule = schedule if isinstance(schedule, Schedule) else load_schedule(schedule)
        name = f"{schedule.topology.name} {schedule.algorithm}"
    else:
        from ..synth import generate  # the generators load only for a topology given

        topo = priced_network(make_topology(spec), alpha=alpha, **bandwidth)
        say(0, None, f"BFB allreduce on {spec}")
        schedule = generate(topo, "allreduce", "bfb")
        label, name = None, f"{spec} bfb"
    if schedule.collective.name != "allreduce":
        raise UnsupportedError(f"--schedule {label}: train-sim needs an allreduce schedule, "
                               f"got {schedule.collective.name}")
    n = schedule.topology.num_nodes
    if nodes is not None and nodes != n:
        raise UnsupportedError(f"--nodes {nodes} but the "
                               f"{'schedule' if label else 'topology'} has {n} nodes")
    actual = int(schedule.topology.out_degree().max())
    if degree is not None and degree < actual:
        raise UnsupportedError(f"--degree {degree} but {schedule.topology.name} has nodes of "
                               f"degree {actual}: the bound for degree {degree} does not hold "
                               "for it (leave --degree out)")
    say(0, None, f"verifying {schedule.num_transfers} transfers")
    verify(schedule).raise_if_invalid()
    price = LinkModelCost if comm_model == "link" else schedule_cost
    cost = price(schedule, alpha=alpha, name=name, **bandwidth)
    return OurAllreduce(cost, n, degree if degree is not None else actual,
                        {"method": VERIFIED_EXPLICIT, "exact": True}, schedule.topology)


def finder_degree(nodes, degree=None):
    """The degree the finder searches: ``degree``, or 4 (at most N - 1: complete:N is the most
    there is)."""
    return min(4, nodes - 1) if degree is None else degree


def found_allreduce(found, *, nodes, degree=None, alpha):
    """Our allreduce from the finder's result ``found`` for ``nodes`` and
    :func:`finder_degree`: its BFB allreduce on the chosen topology, by the step model.

    Raises
    ------
    UnsupportedError
        The finder found nothing (``found`` unsuccessful or without an evaluation).
    """
    if not found.success or found.evaluation is None:
        raise UnsupportedError(f"the finder found no topology: {found.message}")
    ev = found.evaluation
    cost = AllreduceCost.from_step_model(ev["steps"], 2.0 * ev["T_B_per_phase"], alpha=alpha,
                                         bandwidth=found.node_bandwidth,
                                         name=f"{found.best.name} bfb")
    how = {"method": ev.get("method", VERIFIED_EXPLICIT), "exact": bool(ev.get("exact", True))}
    if "base" in ev:
        how["base"] = ev["base"]
    return OurAllreduce(cost, nodes, finder_degree(nodes, degree), how, None, found)


def cached_baseline(name, nodes, *, alpha, bandwidth, cache=None, full=False):
    """A baseline's allreduce cost and how it was obtained, through ``cache`` (anything with
    ``get(kind, key)`` and ``put(kind, key, doc)``, such as the finder's; None: none). By
    default from the baseline's structure (closed form, equal to the generated schedule's
    price); ``full``: the schedule generated and priced."""
    method = GENERATED if full else CLOSED_FORM
    # an affine price is latency and per-byte time; a pipelined one (DBT) its loads
    convention = ",".join(f"{k}={v!r}" for k, v in sorted(bandwidth.items()) if v is not None)
    key = f"{name}:{nodes}:{'generated' if full else 'closed'}:{alpha!r}:{convention}"
    doc = None if cache is None else cache.get("baseline", key)
    if doc is None:
        price = baseline_cost if full else baseline_closed_form
        cost = price(name, nodes, alpha=alpha, **bandwidth)
        if isinstance(cost, AllreduceCost):
            doc = {"steps": cost.steps, "latency": cost.latency, "per_byte": cost.per_byte,
                   "method": method}
        else:
            doc = {"pipelined": cost.to_dict(), "method": method}
        if cache is not None:
            cache.put("baseline", key, doc)
    if "pipelined" in doc:
        from ..schedule.cost import PipelinedCost  # the cost models load only when DBT is

        return PipelinedCost.from_dict(doc["pipelined"]), method
    return AllreduceCost(name, doc["latency"], doc["per_byte"], doc["steps"]), method


def collective_prices(kinds, ours, *, alpha, bandwidth, costs):
    """Every row's dict collective -> price for the ``kinds`` the workload sends (``ours``: an
    :class:`OurAllreduce`; ``costs``: the other rows' allreduce costs by name), and how each
    row's other collectives were priced."""
    other = [k for k in kinds if k != "allreduce"]
    rows = {"ours": {"allreduce": ours.cost}}
    rows.update({name: {"allreduce": cost} for name, cost in costs.items()})
    if not other:
        return rows, {}
    how = {"ours": _our_other_prices(rows["ours"], other, ours, alpha=alpha,
                                     bandwidth=bandwidth)}
    rows["two-phase bound"].update(bound_prices(ours.nodes, ours.degree, alpha=alpha,
                                                **bandwidth))
    how["two-phase bound"] = "one-phase bound; all-to-all Moore distance bound"
    for name, family in (("ShiftedRing", "shiftedring"), ("DBT", "dbt")):
        if name not in rows:
            continue
        net = make_topology(f"{family}:{ours.nodes}")
        rows[name].update(ring_prices(ours.nodes, alpha=alpha,
                                      bandwidth=node_bandwidth_of(net, **bandwidth)))
        if "alltoall" in other:
            rows[name]["alltoall"] = alltoall_distance_cost(net, alpha=alpha, **bandwidth)
        how[name] = "ring phases (NCCL's all-gather and reduce-scatter); all-to-all by the " \
                    "distance bound"
    return {k: {t: v for t, v in r.items() if t in kinds} for k, r in rows.items()}, how


def _our_other_prices(row, other, ours, *, alpha, bandwidth):
    """Add our prices of the ``other`` collectives to ``row``; returns how, in words."""
    topo = ours.topology
    if topo is not None:
        row.update(schedule_prices(topo, other, alpha=alpha, label=topo.name, **bandwidth))
        return "BFB schedules on the topology" + (
            "; all-to-all by the distance bound" if "alltoall" in other else "")
    found = ours.found
    ev = found.evaluation
    # the finder's B: d links of L per node (or the given node bandwidth)
    row.update(phase_prices(ev["steps"] / 2, ev["T_B_per_phase"], alpha=alpha,
                            bandwidth=found.node_bandwidth, name=f"{found.best.name} bfb"))
    if "alltoall" in other:
        row["alltoall"] = alltoall_distance_cost(make_topology(found.best.name), alpha=alpha,
                                                 bandwidth=found.node_bandwidth)
    return "one phase of the BFB allreduce; all-to-all by the distance bound"
