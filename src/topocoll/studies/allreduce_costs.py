"""Allreduce costs: what one allreduce of M bytes takes on a network, in seconds.

Bandwidth: every pricing function takes ``link_bandwidth`` (every link's speed; the default,
100 Gbps per link, the one default cluster of :mod:`topocoll.defaults`) or ``bandwidth`` (each
node's egress split over its out-links: the NSDI 2025 paper's convention, in which its figures
are quoted), never both; :func:`priced_network` applies either to a topology.

:class:`AllreduceCost` is the affine alpha-beta step model ``latency + per_byte * M``
(docs/math.md section 1) and is callable, so it serves as a ``comm_time`` or a price.
:func:`lower_bound_cost` gives the bound ``2 * (moore_depth(N, d) * alpha + (N-1)/N * M/B)`` of
any two-phase allreduce on N nodes of degree d, :func:`schedule_cost` prices an allreduce
schedule once (the step model is affine in M), :class:`LinkModelCost` times one in the link
model at every size, and :func:`baseline_cost` and :func:`baseline_closed_form` price the NSDI
2025 paper's baselines, ShiftedRing and the double binary tree, on their own topologies.
"""

from dataclasses import dataclass

from ..defaults import bandwidth_convention
from ..errors import UnsupportedError
from ..units import parse_bandwidth, parse_time, real_number, whole_number

__all__ = ["AllreduceCost", "LinkModelCost", "lower_bound_cost", "schedule_cost",
           "baseline_cost", "baseline_closed_form", "baseline_cost_model", "CLOSED_FORM",
           "priced_network", "node_bandwidth_of", "BASELINES"]

#: Baseline allreduces of :func:`baseline_cost`: name -> (topology family, generator).
BASELINES = {"ShiftedRing": ("shiftedring", "shiftedring"), "DBT": ("dbt", "dbt")}


@dataclass(frozen=True)
class AllreduceCost:
    """The alpha-beta step model of one allreduce: ``latency + per_byte * M`` seconds for M
    bytes (docs/math.md section 1: ``T_L = steps * alpha`` and ``T_B`` linear in M). Callable,
    so it is a ``comm_time`` for :func:`~topocoll.studies.training.simulate_iteration`.

    Examples
    --------
    >>> c = AllreduceCost.from_step_model(4, 2.0, alpha="10us", bandwidth="100Gbps")
    >>> round(c(12.5e9) , 6)    # 4 steps of 10 us + 2 * 12.5 GB / 12.5 GB/s
    2.00004
    """

    name: str
    latency: float
    per_byte: float
    steps: int | None = None

    @classmethod
    def from_step_model(cls, steps, t_b, *, alpha, bandwidth, name=""):
        """``steps`` steps of latency ``alpha`` and ``t_b`` in units of M/B at node bandwidth
        ``bandwidth``: ``steps * alpha + t_b * M / bandwidth``."""
        alpha = float(parse_time(alpha, what="alpha"))
        bandwidth = float(parse_bandwidth(bandwidth, what="bandwidth"))
        return cls(name, steps * alpha, real_number(t_b, "T_B", least=0) / bandwidth, int(steps))

    def __call__(self, size):
        return self.latency + self.per_byte * size

    def to_dict(self):
        return {"name": self.name, "steps": self.steps, "latency": self.latency,
                "per_byte": self.per_byte}


def priced_network(topology, *, alpha, bandwidth=None, link_bandwidth=None):
    """``topology`` with latency ``alpha`` on every link and the bandwidth convention of
    :func:`~topocoll.defaults.bandwidth_convention`: every link ``link_bandwidth`` (default
    100 Gbps) or each node's
    egress ``bandwidth`` split evenly over its out-links.

    >>> from topocoll.topology import topology
    >>> t = priced_network(topology("dbt:8"), alpha="1us")
    >>> t.describe_bandwidth()
    '100Gbps per link'
    """
    node, link = bandwidth_convention(bandwidth, link_bandwidth)
    topo = topology.with_links(latency=float(parse_time(alpha, what="alpha")), bandwidth=link)
    return topo if node is None else topo.with_node_bandwidth(node)


def node_bandwidth_of(topology, *, bandwidth=None, link_bandwidth=None):
    """The egress B per node that prices a ring or a bound in units of M/B on ``topology``:
    ``bandwidth`` itself under the per-node convention, else the least node's out-links times
    the link bandwidth (every node's, on a regular topology).

    >>> from topocoll.topology import topology
    >>> node_bandwidth_of(topology("torus:4x4"), link_bandwidth=1.0)
    4.0
    """
    node, link = bandwidth_convention(bandwidth, link_bandwidth)
    if node is not None:
        return node
    return float(topology.out_degree(multi=True).min()) * link


def lower_bound_cost(nodes, degree, *, alpha, bandwidth=None, link_bandwidth=None):
    """The two-phase bound: no allreduce on N nodes of degree d made of a reduce-scatter
    followed by an allgather beats ``2 * (moore_depth(N, d) * alpha + (N-1)/N * M / B)``
    (Moore-depth steps in each phase; every node sends, then receives, (N-1)/N of the buffer).
    Allreduces of other shapes may (see
    :func:`topocoll.finder.workload.any_allreduce_lower_bound`). Per link (the default), ``B =
    d * link_bandwidth``.

    >>> c = lower_bound_cost(1024, 4, alpha="10us", bandwidth="100Gbps")
    >>> c.steps, round(c(2**20) * 1e6, 1)
    (10, 267.6)
    >>> round(lower_bound_cost(1024, 4, alpha="10us")(2**20) * 1e6, 1)    # 4 links of 100Gbps
    141.9
    """
    from ..topology.metrics import moore_depth

    nodes, degree = whole_number(nodes, "nodes", 2), whole_number(degree, "degree", 1)
    node, link = bandwidth_convention(bandwidth, link_bandwidth)
    bandwidth = node if node is not None else degree * link
    return AllreduceCost.from_step_model(2 * moore_depth(nodes, degree),
                                         2.0 * (nodes - 1) / nodes, alpha=alpha,
                                         bandwidth=bandwidth, name="two-phase bound")


def schedule_cost(schedule, *, alpha, bandwidth=None, link_bandwidth=None, name=None):
    """Price an allreduce schedule once: its topology gets latency ``alpha`` on every link and
    the bandwidth of :func:`priced_network` (every link ``link_bandwidth``, default 100 Gbps,
    or egress ``bandwidth`` per node split over its out-links); the step model gives ``T_L`` and
    ``T_B`` per byte, and the result is affine in M. The schedule is not verified here (do it
    first, as the CLI does).

    >>> from topocoll.synth import generate
    >>> c = schedule_cost(generate("ring:4", "allreduce", "ring"), alpha="1us",
    ...                   bandwidth="1GB/s")
    >>> c.steps, round(c(1e9), 9)    # 6 steps; 2 * 3/4 * M over 1/2 GB/s per direction
    (6, 3.000006)
    """
    from ..schedule.cost import step_costs

    if getattr(schedule, "collective", None) is None or schedule.collective.name != "allreduce":
        got = getattr(getattr(schedule, "collective", None), "name", type(schedule).__name__)
        raise UnsupportedError(f"train-sim needs an allreduce schedule, got {got}")
    topo = priced_network(schedule.topology, alpha=alpha, bandwidth=bandwidth,
                          link_bandwidth=link_bandwidth)
    steps, alpha_t, beta_t = step_costs(schedule.replace(topology=topo))
    return AllreduceCost(name or schedule.algorithm or "schedule", float(alpha_t.sum()),
                         float(beta_t.sum()), int(steps.size))


class LinkModelCost:
    """An allreduce schedule timed by the link model (docs/math.md section 5) at each size it is
    asked for, remembered per size: not affine in M, so every distinct allreduce size is one
    simulation. Callable, so it is a ``comm_time`` for
    :func:`~topocoll.studies.training.simulate_iteration`.

    >>> from topocoll.synth import generate
    >>> c = LinkModelCost(generate("uniring:4", "allreduce", "ring"), alpha="1us",
    ...                   bandwidth="1GB/s")
    >>> round(c(4e9), 6)     # 6 steps, each 1 GB over one 1 GB/s link plus 1 us
    6.000006
    """

    def __init__(self, schedule, *, alpha, bandwidth=None, link_bandwidth=None, name=None):
        if getattr(schedule, "collective", None) is None or \
                schedule.collective.name != "allreduce":
            raise UnsupportedError("train-sim needs an allreduce schedule")
        topo = priced_network(schedule.topology, alpha=alpha, bandwidth=bandwidth,
                              link_bandwidth=link_bandwidth)
        self.schedule = schedule.replace(topology=topo)
        self.name = name or schedule.algorithm or "schedule"
        self.steps = schedule.num_steps
        self._times = {}

    def __call__(self, size):
        from ..schedule.linkmodel import simulate

        key = float(size)
        if key not in self._times:
            self._times[key] = simulate(self.schedule, key).time
        return self._times[key]

    def to_dict(self):
        return {"name": self.name, "steps": self.steps, "model": "link",
                "sizes_simulated": len(self._times)}


def baseline_cost(baseline, nodes, *, alpha, bandwidth=None, link_bandwidth=None):
    """The allreduce of a baseline of the NSDI 2025 paper on its own topology of ``nodes``
    nodes (degree 4): ``"ShiftedRing"`` (TopoOpt's two superposed rings on ``shiftedring:N``)
    or ``"DBT"`` (NCCL's double binary tree on ``dbt:N``), generated and priced once.

    DBT is priced as NCCL runs it, pipelined: a
    :class:`~topocoll.schedule.cost.PipelinedCost` whose chunk count K minimizes the step-model
    time of each size (docs/math.md section 1, "Pipelined schedules"); its ``steps``,
    ``latency`` and ``per_byte`` are those of the unpipelined schedule (K = 1).

    >>> c = baseline_cost("ShiftedRing", 8, alpha="10us", bandwidth="100Gbps")
    >>> c.steps, round(c.per_byte * 12.5e9, 6)     # 2(N-1) steps, T_B = 2 (N-1)/N M/B
    (14, 1.75)
    >>> d = baseline_cost("DBT", 16, alpha="10us", bandwidth="100Gbps")
    >>> d.best(2**26)[0], d(2**26) < d.latency + d.per_byte * 2**26   # 64 MiB: K chunks
    (91, True)
    """
    from ..synth import generate
    from ..topology.specs import topology

    if baseline not in BASELINES:
        raise UnsupportedError(f"unknown baseline {baseline!r}; use one of "
                               f"{', '.join(BASELINES)}")
    nodes = whole_number(nodes, "nodes", 3)
    family, algorithm = BASELINES[baseline]
    schedule = generate(topology(f"{family}:{nodes}"), "allreduce", algorithm)
    if baseline == "DBT":       # NCCL pipelines chunks along the trees
        from ..schedule.cost import PipelinedCost

        topo = priced_network(schedule.topology, alpha=alpha, bandwidth=bandwidth,
                              link_bandwidth=link_bandwidth)
        return PipelinedCost.of(schedule.replace(topology=topo), name=baseline)
    return schedule_cost(schedule, alpha=alpha, bandwidth=bandwidth,
                         link_bandwidth=link_bandwidth, name=baseline)


#: How :func:`baseline_closed_form` prices: the step model from the baseline's structure.
CLOSED_FORM = "closed form"


def baseline_closed_form(baseline, nodes, *, alpha, bandwidth=None, link_bandwidth=None):
    """The cost :func:`baseline_cost` gives, without building the schedule (whose ``~N^2``
    transfers take minutes and gigabytes at thousands of nodes):

    * ``"ShiftedRing"``: two rings, each with half of every shard, ring reduce-scatter then
      ring allgather: ``2(N-1)`` steps, every link carrying ``M/(2N)`` per step at ``B/2``
      (each node has two out-links), so ``T_B = 2(N-1)/N * M/B`` (per link, B is the
      egress of a node of ``shiftedring:N``, :func:`node_bandwidth_of`);
    * ``"DBT"``: :func:`topocoll.synth.trees.dbt_schedule` moves, for *every* shard, half a
      shard over each tree edge at the same step (up at ``H - depth + 1``, down at
      ``H + depth``), so a link's load in a step is ``M/2`` times the number of trees using it
      then, whatever N is: the step model of the ``dbt:N`` topology (node bandwidth split over
      each node's links) is priced from the two trees' ``O(N)`` edges, pipelined in chunks as
      :func:`baseline_cost` prices it (:meth:`~topocoll.schedule.cost.PipelinedCost.from_loads`).

    Both agree with the generated schedules (tests/studies/test_training_scale.py checks them
    against :func:`baseline_cost` on small N).

    >>> c = baseline_closed_form("ShiftedRing", 8, alpha="10us", bandwidth="100Gbps")
    >>> c.steps, round(c.per_byte * 12.5e9, 6)
    (14, 1.75)
    """
    import numpy as np

    from ..topology.families.trees import dbt_trees
    from ..topology.specs import topology

    if baseline not in BASELINES:
        raise UnsupportedError(f"unknown baseline {baseline!r}; use one of "
                               f"{', '.join(BASELINES)}")
    nodes = whole_number(nodes, "nodes", 3)
    alpha_s = float(parse_time(alpha, what="alpha"))
    family = BASELINES[baseline][0]
    topo = topology(f"{family}:{nodes}")       # same errors as the generator (no shiftedring:6)
    if baseline == "ShiftedRing":
        steps, t_b = 2 * (nodes - 1), 2.0 * (nodes - 1) / nodes
        bw = node_bandwidth_of(topo, bandwidth=bandwidth, link_bandwidth=link_bandwidth)
        return AllreduceCost.from_step_model(steps, t_b, alpha=alpha_s, bandwidth=bw,
                                             name=baseline)
    topo = priced_network(topo, alpha=alpha_s, bandwidth=bandwidth, link_bandwidth=link_bandwidth)
    src, dst, step = [], [], []
    for parent in dbt_trees(nodes):
        depth = np.zeros(nodes, dtype=np.int64)
        cur = parent.copy()
        while np.any(cur >= 0):
            live = cur >= 0
            depth[live] += 1
            cur[live] = parent[cur[live]]
        height = int(depth.max())
        kids = np.flatnonzero(parent >= 0)
        src += [kids, parent[kids]]
        dst += [parent[kids], kids]
        step += [height - depth[kids] + 1, height + depth[kids]]
    src, dst, step = np.concatenate(src), np.concatenate(dst), np.concatenate(step)
    _, _, pair_bw, pair_lat = topo.pairs
    pidx = topo.pair_index(src, dst)
    key = step * pair_bw.size + pidx
    ukey, inverse = np.unique(key, return_inverse=True)
    load = 0.5 * np.bincount(inverse, minlength=ukey.size)     # half of M per tree
    pair = ukey % pair_bw.size
    per_byte = load / pair_bw[pair]
    steps = ukey // pair_bw.size
    if hasattr(baseline_cost_model(), "from_loads"):    # priced pipelined, as baseline_cost does
        return baseline_cost_model().from_loads(baseline, steps, pair, per_byte, pair_lat[pair])
    starts = np.flatnonzero(np.r_[True, steps[1:] != steps[:-1]])
    latency = float(np.maximum.reduceat(pair_lat[pair], starts).sum())
    return AllreduceCost(baseline, latency, float(np.maximum.reduceat(per_byte, starts).sum()),
                         int(starts.size))


def baseline_cost_model():
    """The class DBT's price is (:class:`topocoll.schedule.cost.PipelinedCost`: NCCL pipelines
    chunks along the trees), or :class:`AllreduceCost` where that is missing."""
    from ..schedule import cost

    return getattr(cost, "PipelinedCost", AllreduceCost)
