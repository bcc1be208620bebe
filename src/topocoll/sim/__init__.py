"""Simulators that time schedules.

* :mod:`~topocoll.sim.linkmodel` -- the TACOS link model: one transfer at a time per link,
  busy for ``latency + bytes / bandwidth``, causal through the schedule's own data flow.

>>> from topocoll.synth import generate
>>> simulate(generate("ring:4", "allgather", "bfb"), "1MiB").time > 0
True
"""

from .linkmodel import LinkModelResult, simulate, simulate_many

__all__ = ["simulate", "simulate_many", "LinkModelResult"]
