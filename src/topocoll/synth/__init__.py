"""Schedule generators, behind one entry point :func:`generate`.

>>> s = generate("hypercube:3", "allreduce", "bfb")
>>> s.num_steps
6
"""

from ..collectives import collective as _collective
from ..errors import UnsupportedError
from ..topology import topology as _topology
from . import baselines, bfb
from .baselines import (bidirectional_ring_allgather, bidirectional_ring_allreduce,
                        bidirectional_ring_reduce_scatter, ring_allgather, ring_allreduce,
                        ring_reduce_scatter)
from .bfb import (bfb_allgather, bfb_allreduce, bfb_broadcast, bfb_reduce, bfb_reduce_scatter,
                  bfb_schedule)

__all__ = ["generate", "ALGORITHMS", "bfb_allgather", "bfb_reduce_scatter", "bfb_allreduce",
           "bfb_broadcast", "bfb_reduce", "bfb_schedule", "ring_allgather",
           "ring_reduce_scatter", "ring_allreduce", "bidirectional_ring_allgather",
           "bidirectional_ring_reduce_scatter", "bidirectional_ring_allreduce"]


def _ring(makers):
    def make(topology, coll, root, progress):
        if coll.name not in makers:
            raise UnsupportedError(f"the ring baselines make {', '.join(makers)}; not {coll.name}")
        return makers[coll.name](topology)
    return make


#: algorithm name -> (collectives it makes, summary, maker(topology, collective, root, progress))
ALGORITHMS = {
    "bfb": (bfb.BFB_COLLECTIVES, "breadth-first broadcast, per-(node, step) load balancing",
            lambda t, c, r, p: bfb_schedule(t, c, root=r, progress=p)),
    "ring": (baselines.RING_COLLECTIVES, "classic unidirectional ring (links i -> i+1)",
             _ring({"allgather": ring_allgather, "reduce_scatter": ring_reduce_scatter,
                    "allreduce": ring_allreduce})),
    "biring": (baselines.RING_COLLECTIVES, "bidirectional ring, half of each shard each way",
               _ring({"allgather": bidirectional_ring_allgather,
                      "reduce_scatter": bidirectional_ring_reduce_scatter,
                      "allreduce": bidirectional_ring_allreduce})),
}


def generate(topology, collective, algorithm="bfb", *, root=None, progress=None):
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
    return maker(topo, coll, root, progress)
