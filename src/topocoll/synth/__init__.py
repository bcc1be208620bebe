"""Schedule generators, behind one entry point :func:`generate` (see :mod:`.registry`).

>>> s = generate("hypercube:3", "allreduce", "bfb")
>>> s.num_steps
6
"""

from .baselines import (bidirectional_ring_allgather, bidirectional_ring_allreduce,
                        bidirectional_ring_reduce_scatter, biring_schedule, ring_allgather,
                        ring_allreduce, ring_reduce_scatter, ring_schedule)
from .bfb import (bfb_allgather, bfb_allreduce, bfb_broadcast, bfb_reduce, bfb_reduce_scatter,
                  bfb_schedule)
from .classic import rhd_schedule, shifted_bfb_ring_schedule, shifted_ring_schedule
from .expansions import (bidirectional_expansion, cartesian_power_expansion,
                         degree_expansion_schedule, expand_schedule, line_graph_expansion,
                         product_schedule)
from .registry import ALGORITHMS, Generator, generate
from .torus_rings import torus_rings_schedule
from .trees import dbt_schedule

__all__ = ["generate", "ALGORITHMS", "Generator", "bfb_allgather", "bfb_reduce_scatter",
           "bfb_allreduce", "bfb_broadcast", "bfb_reduce", "bfb_schedule", "ring_schedule",
           "biring_schedule", "ring_allgather", "ring_reduce_scatter", "ring_allreduce",
           "bidirectional_ring_allgather", "bidirectional_ring_reduce_scatter",
           "bidirectional_ring_allreduce", "shifted_ring_schedule", "shifted_bfb_ring_schedule",
           "rhd_schedule", "torus_rings_schedule", "dbt_schedule", "line_graph_expansion",
           "degree_expansion_schedule", "cartesian_power_expansion", "bidirectional_expansion",
           "product_schedule", "expand_schedule"]
