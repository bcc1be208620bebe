"""Schedule generators, behind one entry point :func:`generate` (see :mod:`.registry`).

>>> from topocoll.synth import generate
>>> s = generate("hypercube:3", "allreduce", "bfb")
>>> s.num_steps
6
"""

from ..lazy import lazy_attributes

# Public names -> the submodule that defines them. A submodule is imported when one of its
# names is first used (PEP 562), so a job loads only the modules it needs (start-up time).
_LAZY = {
    ".baselines": ("bidirectional_ring_allgather", "bidirectional_ring_allreduce",
                   "bidirectional_ring_reduce_scatter", "biring_schedule", "ring_allgather",
                   "ring_allreduce", "ring_reduce_scatter", "ring_schedule"),
    ".bfb": ("bfb_allgather", "bfb_allreduce", "bfb_broadcast", "bfb_reduce", "bfb_reduce_scatter",
             "bfb_schedule"),
    ".classic": ("rhd_schedule", "shifted_bfb_ring_schedule", "shifted_ring_schedule"),
    ".expansions": ("bidirectional_expansion", "cartesian_power_expansion",
                    "degree_expansion_schedule", "expand_schedule", "line_graph_expansion",
                    "product_schedule"),
    ".generators": ("ALGORITHMS", "Generator", "generate", "show_options", "step_traffic"),
    ".torus_rings": ("torus_rings_schedule",),
    ".trees": ("dbt_schedule",),
}

__all__ = ["generate", "step_traffic", "ALGORITHMS", "Generator", "show_options", "bfb_allgather", "bfb_reduce_scatter",
           "bfb_allreduce", "bfb_broadcast", "bfb_reduce", "bfb_schedule", "ring_schedule",
           "biring_schedule", "ring_allgather", "ring_reduce_scatter", "ring_allreduce",
           "bidirectional_ring_allgather", "bidirectional_ring_reduce_scatter",
           "bidirectional_ring_allreduce", "shifted_ring_schedule", "shifted_bfb_ring_schedule",
           "rhd_schedule", "torus_rings_schedule", "dbt_schedule", "line_graph_expansion",
           "degree_expansion_schedule", "cartesian_power_expansion", "bidirectional_expansion",
           "product_schedule", "expand_schedule"]


__getattr__, __dir__ = lazy_attributes(__name__, _LAZY, __all__)
