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
from .io import as_schedule
from .reduction import parse_gamma, reduction_time
from .routing import transfer_hops
from .symmetric import SymmetricSchedule
from .traffic import StepTraffic
from .verify import verify

__all__ = ["evaluate", "Evaluation", "step_costs", "bandwidth_lower_bound", "steps_lower_bound",
           "pipelined_step_costs", "best_chunks", "PipelinedCost", "MAX_PIPELINE_CHUNKS",
           "MODEL"]

#: The name of this pricing model, carried by every row it prices (``compare``).
MODEL = "step"

#: The most chunks :func:`best_chunks` considers.
MAX_PIPELINE_CHUNKS = 4096

_REL_TOL = 1e-9


def _step_pair_loads(priced):
    """Per (non-empty step, used pair), sorted by step: ``(step, pair, seconds per byte of M,
    pair latency)``, of a schedule or its :class:`~topocoll.schedule.traffic.StepTraffic`. A
    symmetric schedule gives the pairs into node 0 only: every pair of the same label carries
    the same (docs/math.md section 10, theorem 2)."""
    if isinstance(priced, StepTraffic):
        return _pair_loads(priced.topology, priced.routing, priced.step, priced.src,
                           priced.dst, priced.share)
    schedule = priced.representatives()
    t = schedule.transfers
    frac = schedule.collective.shard_fraction(schedule.num_nodes)
    return _pair_loads(schedule.topology, schedule.routing, t["step"].astype(np.int64),
                       t["src"], t["dst"], (t["hi"] - t["lo"]) * frac)


def _empty(priced):
    """Whether a schedule (or its traffic) sends nothing."""
    return (priced.size if isinstance(priced, StepTraffic) else priced.transfers.size) == 0


def _pair_loads(topo, routing, steps, src, dst, nbytes):
    """:func:`_step_pair_loads` of transfers given as columns (``nbytes``: share of M)."""
    _, _, pair_bw, pair_lat = topo.pairs
    if routing is None:
        pidx = topo.pair_index(src, dst)
        if np.any(pidx < 0):
            i = int(np.flatnonzero(pidx < 0)[0])
            raise TopologyError(f"transfer {i} uses link {src[i]}->{dst[i]}, which "
                                "the topology does not have")
        who = None
    else:                         # every pair of a route carries the transfer's bytes
        who, link, _ = transfer_hops(topo, routing, src, dst)
        pidx = topo.pair_index(topo.src[link], topo.dst[link])
    num_pairs = pair_bw.size
    if who is not None:
        # a route's latency is its hops' sum; a pair is charged the longest route across it
        route_lat = np.bincount(who, weights=pair_lat[pidx], minlength=steps.size)
        steps, nbytes, lat = steps[who], nbytes[who], route_lat[who]
    key = steps * num_pairs + pidx
    ukey, inverse = np.unique(key, return_inverse=True)
    load = np.bincount(inverse, weights=nbytes, minlength=ukey.size)
    pair = ukey % num_pairs
    per_byte = load / pair_bw[pair]
    if who is None:
        return ukey // num_pairs, pair, per_byte, pair_lat[pair]
    charged = np.zeros(ukey.size)
    np.maximum.at(charged, inverse, lat)
    return ukey // num_pairs, pair, per_byte, charged


def step_costs(schedule):
    """Per non-empty step: ``(step, alpha_t, beta_t per byte of M)`` as three arrays.

    Every transfer must use an existing link (verify first). A symmetric schedule is priced
    from its representatives alone (the full schedule's loads, theorem 2 of docs/math.md
    section 10). A :class:`~topocoll.schedule.traffic.StepTraffic` (what a schedule sends per
    step and pair) is priced as the schedule it sums: the same arrays.
    """
    if _empty(schedule):
        empty = np.zeros(0)
        return empty.astype(np.int64), empty, empty
    steps, _, per_byte, lat = _step_pair_loads(schedule)
    starts = np.flatnonzero(np.r_[True, steps[1:] != steps[:-1]])
    beta = np.maximum.reduceat(per_byte, starts)
    alpha = np.maximum.reduceat(lat, starts)
    return steps[starts], alpha, beta


def pipelined_step_costs(schedule, chunks):
    """Step-model ``(steps, T_L, T_B per byte of M)`` of ``schedule`` run as ``chunks`` = K
    pipelined chunks (docs/math.md section 1, "Pipelined schedules").

    Chunk c (c = 0..K-1) is the schedule itself on the c-th K-th of every shard (``[lo, hi)``
    becomes ``[(c + lo)/K, (c + hi)/K)``), ``c`` steps late: pipelined step u carries, on each
    pair, ``1/K`` of what steps ``u-K+1..u`` of the schedule carry there. Any schedule
    pipelines so (the chunks are disjoint bytes, each following the schedule's own order); the
    result is what :func:`evaluate` gives the pipelined schedule (for ``dbt``,
    :func:`~topocoll.synth.trees.dbt_schedule` with ``chunks=K``, which cuts each tree's half
    instead: the same loads), computed without building it.
    """
    return _pipelined(_pipeline_loads(schedule), chunks)


def _pipeline_loads(schedule):
    """What :func:`_pipelined` needs of a schedule: per used pair and step (all steps from the
    first to the last), seconds per byte and whether used; per pair its latency."""
    if _empty(schedule):
        return None
    return _loads_from(*_step_pair_loads(schedule))


def _loads_from(steps, pair, per_byte, lat):
    steps, pair = np.asarray(steps, dtype=np.int64), np.asarray(pair, dtype=np.int64)
    if steps.size == 0:
        return None
    first = int(steps.min())
    length = int(steps.max()) - first + 1
    upair, col = np.unique(pair, return_inverse=True)
    w = np.zeros((upair.size, length))
    used = np.zeros((upair.size, length))
    np.add.at(w, (col, steps - first), per_byte)
    used[col, steps - first] = 1.0
    lat_of = np.zeros(upair.size)
    np.maximum.at(lat_of, col, lat)
    zero = np.zeros((upair.size, 1))
    return (np.concatenate([zero, np.cumsum(w, axis=1)], axis=1),
            np.concatenate([zero, np.cumsum(used, axis=1)], axis=1), lat_of, length)


def _pipelined(loads, chunks):
    chunks = int(chunks)
    if chunks < 1:
        raise ValueError(f"chunks must be >= 1, got {chunks}")
    if loads is None:
        return 0, 0.0, 0.0
    cw, cu, lat_of, length = loads
    # pipelined step u (0..L+K-2) holds steps max(u-K+1, 0)..min(u, L-1); with K >= L the
    # steps L-1..K-1 all hold the whole schedule, so one of them stands for all K-L+1
    if chunks >= length:
        u = np.r_[np.arange(length), np.arange(chunks, chunks + length - 1)]
        weight = np.ones(u.size)
        weight[length - 1] = chunks - length + 1
    else:
        u = np.arange(length + chunks - 1)
        weight = np.ones(u.size)
    hi, lo = np.minimum(u + 1, length), np.maximum(u - chunks + 1, 0)
    win = (cw[:, hi] - cw[:, lo]) / chunks
    active = (cu[:, hi] - cu[:, lo]) > 0
    t_b = float((win.max(axis=0) * weight).sum())
    alpha = np.where(active, lat_of[:, None], -np.inf).max(axis=0)
    t_l = float((np.where(np.isfinite(alpha), alpha, 0.0) * weight).sum())
    return int((active.any(axis=0) * weight).sum()), t_l, t_b


def _chunk_candidates(loads, size, max_chunks):
    """The chunk counts worth pricing: the closed-form optimum ``K* = sqrt((L-1) T_B M /
    T_L)`` of ``(L+K-1)(alpha + beta/K)`` and its neighbours, within 1..max_chunks."""
    steps, t_l, t_b = _pipelined(loads, 1)
    if steps <= 1 or t_b * size <= 0:
        return [1]
    if t_l <= 0:
        guess = max_chunks
    else:
        guess = (max(steps - 1, 1) * t_b * size / t_l) ** 0.5
    base = {1, max_chunks}
    for f in (0.5, 0.7, 0.85, 1.0, 1.2, 1.4, 2.0):
        k = guess * f
        base.update((int(np.floor(k)), int(np.ceil(k))))
    return sorted(k for k in base if 1 <= k <= max_chunks)


def best_chunks(schedule, size, *, max_chunks=MAX_PIPELINE_CHUNKS):
    """The chunk count K (1..max_chunks) that minimizes the step-model time of ``schedule`` run
    as K pipelined chunks (:func:`pipelined_step_costs`) for a buffer of ``size`` bytes; ties go
    to the fewer chunks. Returns ``(K, steps, T_L, T_B per byte)``.

    Searched around the closed form of a schedule whose L steps cost ``alpha + beta`` each:
    ``(L+K-1)(alpha + beta/K)`` is least at ``K* = sqrt((L-1) beta / alpha)``; with alpha = 0
    more chunks are always better and ``max_chunks`` is taken.
    """
    return _best_chunks(_pipeline_loads(schedule), parse_size(size), int(max_chunks))


def _best_chunks(loads, size, max_chunks):
    best = None
    for k in _chunk_candidates(loads, size, max_chunks):
        steps, t_l, t_b = _pipelined(loads, k)
        total = t_l + t_b * size
        if best is None or total < best[0] * (1 - 1e-12):
            best = (total, k, steps, t_l, t_b)
    return best[1:]


@dataclass(frozen=True)
class PipelinedCost:
    """A schedule run as pipelined chunks, the chunk count chosen per size: callable as
    ``cost(M)`` = the least of ``T_L(K) + T_B(K) * M`` over the priced counts K (each affine
    piece a row of ``pieces``: ``(K, steps, T_L, T_B per byte)``), so it is a ``comm_time``
    for :func:`topocoll.studies.training.simulate_iteration`. ``steps``, ``latency`` and
    ``per_byte`` describe the schedule unpipelined (K = 1)."""

    name: str
    pieces: tuple

    @classmethod
    def of(cls, schedule, sizes=(), *, name=None, max_chunks=MAX_PIPELINE_CHUNKS):
        """The pieces for K = 1, the counts ``round(2^(j/4))`` up to ``max_chunks`` (any size
        is then priced within a few per mille of its best K), and the best K of each of
        ``sizes`` (exact there)."""
        return cls._from(_pipeline_loads(schedule), name or schedule.algorithm or "schedule",
                         sizes, max_chunks)

    @classmethod
    def _from(cls, loads, name, sizes, max_chunks):
        top = int(max_chunks)
        ks = {1, top} | {int(round(2 ** (j / 4))) for j in range(4 * int(np.log2(top)) + 1)}
        ks.update(_best_chunks(loads, parse_size(m), top)[0] for m in sizes)
        pieces = tuple((k, *_pipelined(loads, k)) for k in sorted(k for k in ks if k <= top))
        return cls(name, pieces)

    @classmethod
    def from_loads(cls, name, steps, pairs, per_byte, latency, sizes=(), *,
                   max_chunks=MAX_PIPELINE_CHUNKS):
        """As :meth:`of`, from the unpipelined schedule's step model per (step, node pair):
        four equal-length arrays ``steps``, ``pairs`` (any pair ids), ``per_byte`` (the pair's
        load in that step over its bandwidth, seconds per byte of M) and ``latency`` (the
        pair's). For closed forms that never build the schedule."""
        return cls._from(_loads_from(steps, pairs, np.asarray(per_byte, dtype=float),
                                     np.asarray(latency, dtype=float)), name, sizes, max_chunks)

    @classmethod
    def from_dict(cls, doc):
        """The inverse of :meth:`to_dict`."""
        return cls(doc["name"], tuple((int(p["chunks"]), int(p["steps"]), float(p["T_L"]),
                                       float(p["T_B_per_byte"])) for p in doc["pieces"]))

    def best(self, size):
        """The piece ``(K, steps, T_L, T_B per byte)`` that is cheapest at ``size`` bytes."""
        size = float(size)
        return min(self.pieces, key=lambda p: (p[2] + p[3] * size, p[0]))

    def __call__(self, size):
        k, _, t_l, t_b = self.best(size)
        return t_l + t_b * float(size)

    @property
    def steps(self):
        return self.pieces[0][1]

    @property
    def latency(self):
        return self.pieces[0][2]

    @property
    def per_byte(self):
        return self.pieces[0][3]

    def to_dict(self):
        return {"name": self.name, "model": MODEL, "pipelined": True,
                "pieces": [{"chunks": k, "steps": st, "T_L": t_l, "T_B_per_byte": t_b}
                           for k, st, t_l, t_b in self.pieces]}


@dataclass
class Evaluation:
    """Cost of a schedule for one buffer size M (times in seconds).

    ``bw_lower_bound`` (seconds at this size) and ``steps_lower_bound`` hold for every valid
    schedule of the collective on this topology, in the step model and the link model alike
    (:mod:`topocoll.schedule.bounds`); ``moore_steps`` holds for every digraph of this size and
    largest degree. ``diameter_optimal`` and ``moore_optimal`` say that ``steps`` meets
    ``steps_lower_bound`` and ``moore_steps`` (neither is doubled for allreduce: a complete
    digraph allreduces in one step). A routed schedule (``routing``) may reach any node in a
    step, so its step bounds are the complete digraph's (1); the bandwidth bound holds as it
    is, since a route crosses every cut its ends are on either side of (docs/math.md).
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
    gamma: float = 0.0
    T_gamma: float = 0.0

    def to_dict(self):
        return asdict(self)


def evaluate(schedule, size, *, alpha=None, link_bandwidth=None, gamma=None, check=True):
    """Price a schedule for a buffer of ``size`` bytes (``"1MiB"`` or a number).

    ``alpha`` and ``link_bandwidth``, when given, replace every link's latency and bandwidth.
    ``gamma`` (seconds per byte, or a reduction throughput such as ``"100GB/s"``; default 0)
    prices reductions: ``T_gamma`` is gamma times the sum over steps of the most bytes a node
    reduces in the step, and ``time = T_L + T_B + T_gamma``
    (:mod:`topocoll.schedule.reduction`).
    With ``check`` (the default) the schedule is verified first and an invalid one raises
    :class:`~topocoll.errors.InvalidScheduleError`: a price for a wrong schedule is no answer.
    ``schedule`` is a :class:`Schedule`, a symmetric schedule (priced from its
    representatives) or a schedule file's path.
    """
    schedule = as_schedule(schedule, accept=(SymmetricSchedule,))
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
    gamma = parse_gamma(gamma)
    t_g = reduction_time(schedule, size, gamma)
    bound = float(bandwidth_lower_bound(coll, topo, schedule.root)) * size
    degree = int(topo.out_degree().max()) if topo.num_links else 0
    if schedule.routing is None:
        moore = moore_steps_lower_bound(coll, topo)
        lower_steps = steps_lower_bound(coll, topo, schedule.root)
    else:   # a routed transfer reaches any node in one step: the complete digraph's bounds
        moore = lower_steps = min(1, topo.num_nodes - 1)
    diam = _diameter(topo)
    return Evaluation(
        collective=coll.name, algorithm=schedule.algorithm, topology=topo.name,
        nodes=topo.num_nodes, degree=degree, size=size, steps=int(steps.size), T_L=t_l, T_B=t_b,
        time=t_l + t_b + t_g, bw_lower_bound=bound,
        bw_optimal=bool(t_b <= bound * (1 + _REL_TOL)),
        bw_ratio=t_b / bound if bound > 0 else float("nan"),
        diameter=diam, steps_lower_bound=lower_steps,
        diameter_optimal=bool(steps.size <= lower_steps),
        moore_steps=moore, moore_optimal=bool(steps.size <= moore), gamma=gamma, T_gamma=t_g)
