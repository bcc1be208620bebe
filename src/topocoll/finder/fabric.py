"""Per-job subclusters of one optical fabric: a patch panel (or optical circuit switch) of N
nodes with d ports each is cut into disjoint node ranges, one per job, and each job gets the
topology and allreduce schedule the finder picks for its own size (Zhao et al., NSDI 2025,
section 1: a reconfigurable fabric gives every job a direct-connect topology of its own).

:func:`partition_fabric` runs :func:`~topocoll.finder.core.find` once per job size (a size
asked for twice is searched once), lays the jobs out on consecutive node ranges (job 0 on
nodes ``0 .. n0-1``, job 1 next, ...; nodes left over stay idle), and returns a
:class:`FabricResult`: each job's pick, predicted and evaluated allreduce time, and the union
topology on all the fabric's nodes, whose components are the picks. The union is checked: no
node has more than d distinct out- or in-neighbours, the jobs' node sets are disjoint and no
link leaves a job's range.

>>> r = partition_fabric([8, 4, 4], 3, cache=False, evaluate=False)
>>> [j.pick for j in r.jobs], r.topology.num_nodes, r.checks["within_degree"]
(['dcirculant:8:1,2,5', 'genkautz:4,3', 'genkautz:4,3'], 16, True)
>>> [(j.first, j.last) for j in r.jobs]
[(0, 7), (8, 11), (12, 15)]
"""

from dataclasses import dataclass, field

import numpy as np

from ..errors import InputTypeError, UnsupportedError
from ..results import Result, Status
from ..topology.model import Topology
from ..units import format_time, parse_time, whole_number
from .build import recipe_topology
from .core import find
from .evaluation import open_cache

__all__ = ["partition_fabric", "FabricResult", "FabricJob", "parse_job_sizes"]


def parse_job_sizes(jobs):
    """Job sizes from a list of integers or a comma-separated string (``"64,32,32"``).

    >>> parse_job_sizes("64, 32,32")
    [64, 32, 32]
    """
    if isinstance(jobs, str):
        parts = [p.strip() for p in jobs.split(",")]
        if not all(parts):
            raise UnsupportedError(f"job sizes are comma-separated integers, got {jobs!r}")
        jobs = parts
    if isinstance(jobs, (int, np.integer)) or not hasattr(jobs, "__iter__"):
        raise InputTypeError(f"job sizes must be a list of integers, got {jobs!r}")
    sizes = []
    for i, n in enumerate(jobs):
        if isinstance(n, str) and n.isdigit():
            n = int(n)
        sizes.append(whole_number(n, f"job {i}: size", 2))
    if not sizes:
        raise UnsupportedError("give at least one job size")
    return sizes


@dataclass
class FabricJob:
    """One job's share of the fabric: nodes ``first .. last`` and the finder's answer.

    ``degree`` is the degree searched at: the fabric's d, or ``nodes - 1`` for a job too small
    to use every port. ``result`` is the :class:`~topocoll.finder.core.FindResult`.
    """

    job: int
    nodes: int
    first: int
    degree: int
    result: object = field(repr=False)

    @property
    def last(self):
        return self.first + self.nodes - 1

    @property
    def pick(self):
        return self.result.best.name if self.result.best is not None else None

    def to_dict(self):
        r = self.result
        best = r.best
        return {"job": self.job, "nodes": self.nodes, "first_node": self.first,
                "last_node": self.last, "degree": self.degree, "pick": self.pick,
                "steps": None if best is None else best.allreduce_steps,
                "T_B": None if best is None else 2 * best.t_b,
                "predicted_time": r.predicted_time, "evaluated_time": r.evaluated_time,
                "lower_bound": r.lower_bound, "ratio": r.ratio,
                "verified": bool(r.evaluation and r.evaluation.get("verified")),
                "status_name": r.status_name, "bidirectional_checked": r.bidirectional_checked}


@dataclass
class FabricResult(Result):
    """What :func:`partition_fabric` found: a :class:`~topocoll.results.Result` with the
    fields below. ``status`` is the worst of the jobs' (``FAILED`` also when a check of the
    union fails).

    Attributes
    ----------
    fabric_nodes, degree : int
        The fabric's size N and its ports per node d.
    jobs : list of FabricJob
        One per job, in the order given, on consecutive node ranges.
    topology : Topology
        The union on all N nodes (idle nodes without links), links priced as the finder
        priced each job (latency alpha, the node's egress B split over its links).
    checks : dict
        ``max_out_degree``, ``max_in_degree`` (distinct neighbours), ``within_degree``,
        ``disjoint`` (the jobs' node ranges) and ``links_within_jobs``.
    """

    fabric_nodes: int = 0
    degree: int = 0
    jobs: list = field(default_factory=list)
    topology: Topology = field(default=None, repr=False)
    checks: dict = field(default_factory=dict)

    @property
    def idle_nodes(self):
        return self.fabric_nodes - sum(j.nodes for j in self.jobs)

    def component(self, job):
        """Job ``job``'s topology cut out of the union, its nodes numbered from 0 (the
        digraph its schedule runs on)."""
        j = self.jobs[job]
        t = self.topology
        keep = (t.src >= j.first) & (t.src <= j.last)
        return Topology(j.nodes, t.src[keep] - j.first, t.dst[keep] - j.first,
                        t.bandwidth[keep], t.latency[keep], name=j.pick)

    def to_dict(self):
        return {**super().to_dict(), "fabric_nodes": self.fabric_nodes, "degree": self.degree,
                "idle_nodes": self.idle_nodes, "jobs": [j.to_dict() for j in self.jobs],
                "topology": {"name": self.topology.name, "nodes": self.topology.num_nodes,
                             "links": self.topology.num_links},
                "checks": dict(self.checks)}


def partition_fabric(job_sizes, degree, workload="1MiB", *, fabric_nodes=None, alpha="10us",
                     node_bandwidth=None, link_bandwidth=None, evaluate=True,
                     keep_schedules=False, cache=True, bidirectional=False, progress=None):
    """Partition a fabric of ``fabric_nodes`` nodes of degree ``degree`` among jobs and pick
    each job's topology and allreduce with :func:`~topocoll.finder.core.find`.

    Parameters
    ----------
    job_sizes : list of int or str
        Nodes of each job (``[64, 32, 32]`` or ``"64,32,32"``), each at least 2.
    degree : int
        Ports per node d of the fabric; a job of n <= d nodes is searched at degree n - 1.
    workload, alpha, node_bandwidth, link_bandwidth, evaluate, cache, bidirectional, progress
        As :func:`~topocoll.finder.core.find` takes them, for every job.
    fabric_nodes : int, optional
        The fabric's size N (default: the sum of the job sizes); the jobs must fit in it.
    keep_schedules : bool
        Build every job's schedule (each result's ``schedule``) even when cached, to write it.

    Returns
    -------
    FabricResult
    """
    sizes = parse_job_sizes(job_sizes)
    degree = whole_number(degree, "degree", 1)
    total = sum(sizes)
    fabric = total if fabric_nodes is None else whole_number(fabric_nodes, "fabric nodes", 2)
    if total > fabric:
        raise UnsupportedError(f"the jobs need {total} nodes ({'+'.join(map(str, sizes))}); "
                               f"the fabric has {fabric}")
    store = open_cache(cache)
    answers, jobs, first = {}, [], 0
    try:
        for i, n in enumerate(sizes):
            d = min(degree, n - 1)
            if (n, d) not in answers:
                answers[n, d] = find(n, d, workload, alpha=alpha, node_bandwidth=node_bandwidth,
                                     link_bandwidth=link_bandwidth, evaluate=evaluate,
                                     keep_schedule=keep_schedules, cache=store,
                                     bidirectional=bidirectional, progress=progress)
            jobs.append(FabricJob(i, n, first, d, answers[n, d]))
            first += n
    finally:
        if cache is not store:
            store.close()
    return _assemble(jobs, fabric, degree, alpha)


def _job_topology(job, alpha):
    r = job.result
    topo = (r.schedule.topology if r.schedule is not None else
            recipe_topology(r.best.recipe).with_links(latency=alpha)
            .with_node_bandwidth(r.node_bandwidth))
    if topo.num_nodes != job.nodes:
        raise UnsupportedError(f"job {job.job}: {job.pick} has {topo.num_nodes} nodes, not "
                               f"{job.nodes}")
    return topo


def _assemble(jobs, fabric, degree, alpha):
    """The union topology, its checks, and the result's status and message."""
    alpha = parse_time(alpha, what="alpha")
    parts = [(_job_topology(j, alpha), j.first) for j in jobs if j.result.best is not None]
    src = np.concatenate([t.src + f for t, f in parts] or [np.zeros(0, np.int64)])
    dst = np.concatenate([t.dst + f for t, f in parts] or [np.zeros(0, np.int64)])
    bw = np.concatenate([t.bandwidth for t, _ in parts] or [np.zeros(0)])
    lat = np.concatenate([t.latency for t, _ in parts] or [np.zeros(0)])
    name = f"fabric:{fabric}[" + ";".join(f"{j.first}-{j.last}={j.pick}" for j in jobs) + "]"
    union = Topology(fabric, src, dst, bw, lat, name=name)
    checks = _checks(union, jobs, degree)
    status = max((j.result.status for j in jobs), default=Status.SUCCESS)
    ok = checks["within_degree"] and checks["disjoint"] and checks["links_within_jobs"]
    status = Status(status) if ok else Status.FAILED
    used = sum(j.nodes for j in jobs)
    picks = ", ".join(f"job {j.job} ({j.nodes} nodes) {j.pick} "
                      f"{format_time(j.result.evaluated_time or j.result.predicted_time)}"
                      for j in jobs)
    message = (f"{len(jobs)} job(s) on {used} of {fabric} nodes of degree {degree}: {picks}"
               + ("" if ok else f"; the union fails its checks: {checks}"))
    return FabricResult(status=status, message=message, fabric_nodes=fabric, degree=degree,
                        jobs=jobs, topology=union, checks=checks)


def _checks(union, jobs, degree):
    """Distinct out- and in-neighbours per node against d; disjoint ranges; no link that
    leaves its job's range."""
    owner = np.full(union.num_nodes, -1, dtype=np.int64)
    disjoint = True
    for j in jobs:
        span = owner[j.first:j.last + 1]
        disjoint = disjoint and bool(np.all(span == -1)) and j.last < union.num_nodes
        span[:] = j.job
    psrc, pdst, _, _ = union.pairs
    outs = np.bincount(psrc, minlength=union.num_nodes)
    ins = np.bincount(pdst, minlength=union.num_nodes)
    within = bool(np.all(owner[union.src] == owner[union.dst]) and np.all(owner[union.src] >= 0))
    top_out = int(outs.max()) if outs.size else 0
    top_in = int(ins.max()) if ins.size else 0
    return {"max_out_degree": top_out, "max_in_degree": top_in,
            "within_degree": top_out <= degree and top_in <= degree, "disjoint": disjoint,
            "links_within_jobs": within}
