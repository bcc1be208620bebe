"""The generators behind :func:`generate`: one table, one signature.

Every generator is a function

``make(topology, collective, *, root=None, progress=None, **options)``

that returns a :class:`~topocoll.schedule.model.Schedule`. Its options are declared here with a
parser each (:mod:`topocoll.synth.options`), so :func:`generate` checks and converts them the
same way for every generator (``-O chunks=4`` on the command line, ``chunks=4`` from Python).

>>> s = generate("hypercube:3", "allreduce", "bfb")
>>> s.num_steps
6
>>> generate("torus:3x5", "allgather", "torusrings", multiport="no").meta["multiport"]
False
>>> sorted(ALGORITHMS["dbt"].options)
['chunks']
>>> s = generate("ring:4", "alltoall", "lp", rounds=2)
>>> s.algorithm, s.meta["rounds"]
('alltoall-pipelined', 2)
"""

from dataclasses import dataclass, field
from typing import Callable

from ..collectives import COLLECTIVES, collective as _collective
from ..errors import UnsupportedError
from ..limits import require_memory
from ..schedule.model import BUILD_BYTES_PER_TRANSFER
from ..topology import topology as _topology
from . import baselines, bfb, classic, torus_rings, trees
from . import packing
from .options import (any_option, bool_option, choice_option, dims_option, fraction_option,
                      int_option,
                      size_option, take_options, time_option)
from .ten import synthesis as ten

__all__ = ["Generator", "ALGORITHMS", "generate", "lp_alltoall_schedule"]


@dataclass(frozen=True)
class Generator:
    """One schedule generator.

    Attributes
    ----------
    name : str
        The algorithm's name (``generate(..., algorithm=name)``, ``topocoll schedule -a``).
    collectives : tuple of str
        The collectives it makes.
    summary : str
        One line saying what it is.
    make : callable
        ``make(topology, collective, *, root=None, progress=None, **options)``.
    options : dict
        Option name -> parser ``parser(algorithm, name, value)``.
    """

    name: str
    collectives: tuple
    summary: str
    make: Callable = field(repr=False)
    options: dict = field(default_factory=dict, repr=False)


def lp_alltoall_schedule(topology, collective, *, root=None, progress=None, rounds=None,
                         size=None):
    """The ``lp`` generator: the all-to-all path LP's optimal routes
    (:func:`topocoll.throughput.alltoall_routes`), pipelined in ``rounds`` rounds to near the
    LP's time (:func:`topocoll.throughput.schedule.pipelined_alltoall_schedule`).

    ``rounds`` defaults to the fewest that come within 5% of the LP time in the step model;
    with the buffer ``size`` M, also at most as many as keep the links' latencies within 5% of
    the LP time at M (without it, rounds are chosen as if latencies were free). ``topocoll
    schedule -c alltoall`` uses this generator by default, at its ``--size``.
    """
    from ..throughput import alltoall_routes
    from ..throughput.schedule import pipelined_alltoall_schedule

    if _collective(collective).name != "alltoall":
        raise UnsupportedError(f"algorithm lp makes alltoall, not {_collective(collective).name}")
    res = alltoall_routes(topology, progress=progress)
    if not res.success:
        raise UnsupportedError(f"{topology.name}: {res.message}")
    return pipelined_alltoall_schedule(res, topology, rounds=rounds, size=size)


def _table(*generators):
    return {g.name: g for g in generators}


#: Every generator, by name.
ALGORITHMS = _table(
    Generator("bfb", bfb.BFB_COLLECTIVES,
              "breadth-first broadcast, per-(node, step) load balancing", bfb.bfb_schedule,
              {"symmetry": bool_option, "workers": int_option(1), "size": size_option,
               "chunks": int_option(1)}),
    Generator("ring", baselines.RING_COLLECTIVES,
              "classic unidirectional ring (links i -> i+1)", baselines.ring_schedule),
    Generator("biring", baselines.RING_COLLECTIVES,
              "bidirectional ring, half of each shard each way", baselines.biring_schedule),
    Generator("shiftedring", classic.SHIFTED_RING_COLLECTIVES,
              "TopoOpt ShiftedRing: rings i->i+1 and i->i+s on shiftedring:N, half of each "
              "shard per bidirectional ring (option shift)", classic.shifted_ring_schedule,
              {"shift": int_option(1)}),
    Generator("shiftedbfbring", classic.SHIFTED_RING_COLLECTIVES,
              "ShiftedRing topology with the BFB ring schedule on each ring (half the steps; "
              "option shift)", classic.shifted_bfb_ring_schedule, {"shift": int_option(1)}),
    Generator("dbt", trees.DBT_COLLECTIVES,
              "NCCL double binary tree on dbt:N, half of each shard per tree (option chunks)",
              trees.dbt_schedule, {"chunks": int_option(1)}),
    Generator("trees", packing.TREES_COLLECTIVES,
              "spanning-tree packing at the exact cut optimum, any topology and link speeds, "
              "pipelined in K chunks (options chunks, size, tolerance, max_chunks)",
              packing.trees_schedule,
              {"chunks": int_option(1), "tolerance": fraction_option,
               "max_chunks": int_option(1), "depth_slack": int_option(0),
               "size": size_option}),
    Generator("rhd", classic.RHD_COLLECTIVES,
              "recursive halving-doubling on hypercube:k, one link per step",
              classic.rhd_schedule),
    Generator("ten", tuple(COLLECTIVES),
              "time-expanded-network synthesis (TACOS greedy; options method=ilp, chunks, "
              "seed, restarts, size ...); also `topocoll synth`", ten.synthesize,
              {"method": choice_option(*ten.METHODS), "chunks": int_option(1),
               "size": size_option, "seed": int_option(0), "restarts": int_option(1),
               "workers": int_option(1), "unwind_degree": int_option(1),
               "fail_links": any_option, "fail_nodes": any_option, "time_step": time_option,
               "time_limit": time_option, "node_limit": int_option(0),
               "max_solves": int_option(1), "window": int_option(1)}),
    Generator("torusrings", torus_rings.TORUS_RINGS_COLLECTIVES,
              "traditional torus schedule: ring collectives dimension after dimension "
              "(options multiport, dims)", torus_rings.torus_rings_schedule,
              {"multiport": bool_option, "dims": dims_option}),
    Generator("lp", ("alltoall",),
              "the all-to-all path LP's optimal routes, pipelined to near the LP's time "
              "(options rounds, size)", lp_alltoall_schedule,
              {"rounds": int_option(1), "size": size_option}),
)


def generate(topology, collective, algorithm="bfb", *, root=None, progress=None, **options):
    """Make a schedule.

    Parameters
    ----------
    topology : Topology or str
        A topology or a spec string (``"torus:4x4"``) or topology file path.
    collective : str
        One of the eight collectives.
    algorithm : str
        A key of :data:`ALGORITHMS`.
    root : int, optional
        Root node of rooted collectives (default 0).
    progress : callable, optional
        Called as ``progress(done, total)`` during long work.
    **options
        Options of the algorithm (e.g. ``shift`` for shiftedring, ``chunks`` for dbt,
        ``multiport`` for torusrings; see ``ALGORITHMS[name].options``); one it does not know
        raises ``UnsupportedError`` naming it.
    """
    topo = _topology(topology)
    topo.require_no_switches("schedule generation")
    topo.require_nodes(2, "a collective schedule")
    coll = _collective(collective)
    generator = ALGORITHMS.get(algorithm)
    if generator is None:
        raise UnsupportedError(f"unknown algorithm {algorithm!r}; choose one of "
                               f"{', '.join(ALGORITHMS)}")
    if coll.name not in generator.collectives:
        raise UnsupportedError(f"algorithm {algorithm} makes {', '.join(generator.collectives)}; "
                               f"not {coll.name}")
    if coll.rooted:
        root = 0 if root is None else root
        if not 0 <= int(root) < topo.num_nodes:
            raise UnsupportedError(f"root must be a node 0..{topo.num_nodes - 1}, got {root}")
    elif root is not None:
        raise UnsupportedError(f"{coll.name} takes no root")
    parsed = take_options(algorithm, options, generator.options)
    fewest = least_transfers(coll.name, topo.num_nodes)
    require_memory(fewest * BUILD_BYTES_PER_TRANSFER, f"the {coll.name} schedule on {topo.num_nodes} "
                   f"nodes (at least {fewest:,} transfers)")
    return generator.make(topo, coll, root=root, progress=progress, **parsed)


def least_transfers(collective, n):
    """The fewest transfers of any schedule of ``collective`` on ``n`` nodes (a transfer
    carries a piece of one shard): in an allgather each node receives each of the ``n - 1``
    shards it lacks at least once, in a reduce-scatter or allreduce each node's contribution to
    each of the other ``n - 1`` shards leaves it in at least one transfer of that shard, in an all-to-all every pair's shard moves,
    and a rooted collective moves at least one transfer per non-root node.

    >>> least_transfers("allgather", 4), least_transfers("allreduce", 4), least_transfers("reduce", 4)
    (12, 12, 3)
    """
    pairs = n * (n - 1)
    return {"allgather": pairs, "reduce_scatter": pairs, "allreduce": pairs,
            "alltoall": pairs}.get(collective, n - 1)
