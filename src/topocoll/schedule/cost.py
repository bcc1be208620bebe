"""The step-synchronous alpha-beta cost model (docs/math.md section 1).

The lower bounds it prints live in :mod:`topocoll.schedule.bounds` (importable from here too).

Step t costs ``alpha_t + beta_t``: ``alpha_t`` is the largest latency of a link used in step t,
``beta_t`` the largest, over ordered node pairs (u, v), of the bytes sent u -> v in step t divided
by the summed bandwidth of the u -> v links. ``T_L = sum alpha_t``, ``T_B = sum beta_t``.

>>> from topocoll.synth import generate
>>> e = evaluate(generate("ring:8", "allgather", "bfb"), "1MiB", alpha="1us",
...              link_bandwidth="1GB/s")
>>> e.steps, e.bw_optimal, round(e.T_B / e.bw_lower_bound, 12)
(4, True, 1.0)
"""

from dataclasses import asdict, dataclass

import numpy as np

from ..errors import TopologyError
from ..topology.metrics import diameter as _diameter
from ..units import parse_bandwidth, parse_size, parse_time
from .bounds import bandwidth_lower_bound, moore_steps_lower_bound, steps_lower_bound
from .model import as_schedule

__all__ = ["evaluate", "Evaluation", "step_costs", "bandwidth_lower_bound", "steps_lower_bound"]

_REL_TOL = 1e-9


def step_costs(schedule):
    """Per non-empty step: ``(step, alpha_t, beta_t per byte of M)`` as three arrays.

    Every transfer must use an existing link (verify first).
    """
    topo = schedule.topology
    t = schedule.transfers
    if t.size == 0:
        empty = np.zeros(0)
        return empty.astype(np.int64), empty, empty
    _, _, pair_bw, pair_lat = topo.pairs
    pidx = topo.pair_index(t["src"], t["dst"])
    if np.any(pidx < 0):
        i = int(np.flatnonzero(pidx < 0)[0])
        raise TopologyError(f"transfer {i} uses link {t['src'][i]}->{t['dst'][i]}, which the "
                            "topology does not have")
    num_pairs = pair_bw.size
    key = t["step"].astype(np.int64) * num_pairs + pidx
    ukey, inverse = np.unique(key, return_inverse=True)
    frac = schedule.collective.shard_fraction(topo.num_nodes)
    load = np.bincount(inverse, weights=(t["hi"] - t["lo"]) * frac, minlength=ukey.size)
    pair = ukey % num_pairs
    per_byte = load / pair_bw[pair]
    steps = ukey // num_pairs
    starts = np.flatnonzero(np.r_[True, steps[1:] != steps[:-1]])
    beta = np.maximum.reduceat(per_byte, starts)
    alpha = np.maximum.reduceat(pair_lat[pair], starts)
    return steps[starts], alpha, beta


@dataclass
class Evaluation:
    """Cost of a schedule for one buffer size M (times in seconds).

    ``bw_lower_bound`` (seconds at this size) and ``steps_lower_bound`` hold for every valid
    schedule of the collective on this topology, in the step model and the link model alike
    (:mod:`topocoll.schedule.bounds`); ``moore_steps`` holds for every digraph of this size and
    largest degree. ``diameter_optimal`` and ``moore_optimal`` say that ``steps`` meets
    ``steps_lower_bound`` and ``moore_steps`` (neither is doubled for allreduce: a complete
    digraph allreduces in one step).
    """

    collective: str
    algorithm: str
    topology: str
    nodes: int
    degree: int
    size: float
    steps: int
    T_L: float
    T_B: float
    time: float
    bw_lower_bound: float
    bw_optimal: bool
    bw_ratio: float
    diameter: int
    steps_lower_bound: int
    diameter_optimal: bool
    moore_steps: int
    moore_optimal: bool

    def to_dict(self):
        return asdict(self)


def evaluate(schedule, size, *, alpha=None, link_bandwidth=None, check=True):
    """Price a schedule for a buffer of ``size`` bytes (``"1MiB"`` or a number).

    ``alpha`` and ``link_bandwidth``, when given, replace every link's latency and bandwidth.
    With ``check`` (the default) the schedule is verified first and an invalid one raises
    :class:`~topocoll.errors.InvalidScheduleError`: a price for a wrong schedule is no answer.
    ``schedule`` is a :class:`Schedule` or a schedule file's path.
    """
    from .verify import verify

    schedule = as_schedule(schedule)
    size = parse_size(size)
    if alpha is not None or link_bandwidth is not None:
        topo = schedule.topology.with_links(
            latency=None if alpha is None else parse_time(alpha, what="alpha"),
            bandwidth=None if link_bandwidth is None else parse_bandwidth(link_bandwidth))
        schedule = schedule.replace(topology=topo)
    if check:
        verify(schedule).raise_if_invalid()
    topo = schedule.topology
    coll = schedule.collective
    steps, alpha_t, beta_t = step_costs(schedule)
    t_l = float(alpha_t.sum())
    t_b = float(beta_t.sum()) * size
    bound = float(bandwidth_lower_bound(coll, topo, schedule.root)) * size
    degree = int(topo.out_degree().max()) if topo.num_links else 0
    moore = moore_steps_lower_bound(coll, topo)
    lower_steps = steps_lower_bound(coll, topo, schedule.root)
    diam = _diameter(topo)
    return Evaluation(
        collective=coll.name, algorithm=schedule.algorithm, topology=topo.name,
        nodes=topo.num_nodes, degree=degree, size=size, steps=int(steps.size), T_L=t_l, T_B=t_b,
        time=t_l + t_b, bw_lower_bound=bound,
        bw_optimal=bool(t_b <= bound * (1 + _REL_TOL)),
        bw_ratio=t_b / bound if bound > 0 else float("nan"),
        diameter=diam, steps_lower_bound=lower_steps,
        diameter_optimal=bool(steps.size <= lower_steps),
        moore_steps=moore, moore_optimal=bool(steps.size <= moore))
