"""Schedule generators, behind one entry point :func:`generate`.

>>> s = generate("hypercube:3", "allreduce", "bfb")
>>> s.num_steps
6
>>> generate("torus:3x5", "allgather", "torusrings", multiport=False).meta["multiport"]
False
"""

import inspect

from ..collectives import COLLECTIVES, collective as _collective
from ..errors import UnsupportedError
from ..topology import topology as _topology
from . import baselines, bfb, classic, torus_rings, trees
from .baselines import (bidirectional_ring_allgather, bidirectional_ring_allreduce,
                        bidirectional_ring_reduce_scatter, ring_allgather, ring_allreduce,
                        ring_reduce_scatter)
from .bfb import (bfb_allgather, bfb_allreduce, bfb_broadcast, bfb_reduce, bfb_reduce_scatter,
                  bfb_schedule)
from .expansions import (bidirectional_expansion, cartesian_power_expansion,
                         degree_expansion_schedule, expand_schedule, line_graph_expansion,
                         product_schedule)
from .classic import (default_shift, rhd_schedule, shifted_bfb_ring_schedule,
                      shifted_ring_schedule, shifted_ring_topology)
from .torus_rings import torus_rings_schedule
from .trees import dbt_schedule, dbt_topology, dbt_trees

__all__ = ["generate", "ALGORITHMS", "bfb_allgather", "bfb_reduce_scatter", "bfb_allreduce",
           "bfb_broadcast", "bfb_reduce", "bfb_schedule", "ring_allgather",
           "ring_reduce_scatter", "ring_allreduce", "bidirectional_ring_allgather",
           "bidirectional_ring_reduce_scatter", "bidirectional_ring_allreduce",
           "shifted_ring_schedule", "shifted_bfb_ring_schedule", "shifted_ring_topology",
           "default_shift", "rhd_schedule", "torus_rings_schedule", "dbt_schedule",
           "dbt_topology", "dbt_trees", "line_graph_expansion", "degree_expansion_schedule",
           "cartesian_power_expansion", "bidirectional_expansion", "product_schedule",
           "expand_schedule"]

_RESERVED = ("topology", "collective", "root", "progress")


def _bfb(topology, coll, root, progress, **options):
    """BFB, with extra options forwarded to :func:`bfb_schedule` if it takes them."""
    schedule = bfb.bfb_schedule  # looked up at call time: its options may grow
    if options:
        params = inspect.signature(schedule).parameters
        takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
        for name in options:
            if name in _RESERVED or not (takes_any or name in params):
                raise UnsupportedError(f"algorithm bfb has no option {name}")
    return schedule(topology, coll, root=root, progress=progress, **options)


def _ring(algorithm, makers):
    def make(topology, coll, root, progress, **options):
        classic.take_options(algorithm, options, {})
        if coll.name not in makers:
            raise UnsupportedError(f"the ring baselines make {', '.join(makers)}; not {coll.name}")
        return makers[coll.name](topology)
    return make


def _plain(schedule):
    """A maker for a generator ``schedule(topology, collective, **options)`` (no root)."""
    return lambda topology, coll, root, progress, **options: schedule(topology, coll, **options)


def _ten(topology, coll, root, progress, **options):
    """TEN synthesis (TACOS greedy, or ``method=ilp``) with its options."""
    from .ten import synthesize  # imported when used: the TEN code is not needed for BFB

    params = inspect.signature(synthesize).parameters
    for name in options:
        if name in _RESERVED or name not in params:
            raise UnsupportedError(f"algorithm ten has no option {name}")
    return synthesize(topology, coll.name, root=root, progress=progress, **options)


#: algorithm name -> (collectives it makes, summary,
#: maker(topology, collective, root, progress, **options))
ALGORITHMS = {
    "bfb": (bfb.BFB_COLLECTIVES, "breadth-first broadcast, per-(node, step) load balancing",
            _bfb),
    "ring": (baselines.RING_COLLECTIVES, "classic unidirectional ring (links i -> i+1)",
             _ring("ring", {"allgather": ring_allgather, "reduce_scatter": ring_reduce_scatter,
                            "allreduce": ring_allreduce})),
    "biring": (baselines.RING_COLLECTIVES, "bidirectional ring, half of each shard each way",
               _ring("biring", {"allgather": bidirectional_ring_allgather,
                                "reduce_scatter": bidirectional_ring_reduce_scatter,
                                "allreduce": bidirectional_ring_allreduce})),
    "shiftedring": (classic.SHIFTED_RING_COLLECTIVES,
                    "TopoOpt ShiftedRing: rings i->i+1 and i->i+s on circulant:N:1,s, "
                    "half of each shard per bidirectional ring (option shift)",
                    _plain(shifted_ring_schedule)),
    "shiftedbfbring": (classic.SHIFTED_RING_COLLECTIVES,
                       "ShiftedRing topology with the BFB ring schedule on each ring "
                       "(half the steps; option shift)",
                       _plain(shifted_bfb_ring_schedule)),
    "dbt": (trees.DBT_COLLECTIVES,
            "NCCL double binary tree on dbt:N, half of each shard per tree (option chunks)",
            _plain(dbt_schedule)),
    "rhd": (classic.RHD_COLLECTIVES,
            "recursive halving-doubling on hypercube:k, one link per step",
            _plain(rhd_schedule)),
    "ten": (tuple(COLLECTIVES), "time-expanded-network synthesis (TACOS greedy; options "
            "method=ilp, chunks, seed, restarts, size ...); also `topocoll synth`", _ten),
    "torusrings": (torus_rings.TORUS_RINGS_COLLECTIVES,
                   "traditional torus schedule: ring collectives dimension after dimension "
                   "(options multiport, dims)",
                   _plain(torus_rings_schedule)),
}


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
        ``multiport`` for torusrings); one it does not know raises ``UnsupportedError``
        naming it.
    """
    topo = _topology(topology)
    topo.require_no_switches("schedule generation")
    coll = _collective(collective)
    if algorithm not in ALGORITHMS:
        raise UnsupportedError(f"unknown algorithm {algorithm!r}; choose one of "
                               f"{', '.join(ALGORITHMS)}")
    makes, _, maker = ALGORITHMS[algorithm]
    if coll.name not in makes:
        raise UnsupportedError(f"algorithm {algorithm} makes {', '.join(makes)}; not {coll.name}")
    if coll.rooted:
        root = 0 if root is None else root
        if not 0 <= int(root) < topo.num_nodes:
            raise UnsupportedError(f"root must be a node 0..{topo.num_nodes - 1}, got {root}")
    elif root is not None:
        raise UnsupportedError(f"{coll.name} takes no root")
    return maker(topo, coll, root, progress, **options)
