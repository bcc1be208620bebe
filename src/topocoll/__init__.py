"""topocoll: network topologies and collective-communication schedules.

Design a topology, generate a schedule for a collective, verify it independently, price it.

>>> import topocoll as tc
>>> schedule = tc.generate("torus:4x4", "allreduce", "bfb")
>>> tc.verify(schedule).valid
True
>>> e = tc.evaluate(schedule, "1MiB")
>>> e.steps, e.bw_optimal
(8, True)

Any network, any collective (TACOS synthesis), timed in the link model; all-to-all throughput;
gossip topologies (the torch runtime is :mod:`topocoll.runtime`):

>>> s = tc.synthesize("mesh:3x3", "allgather")
>>> tc.verify(s).valid, tc.simulate(s, "1MiB").time > 0
(True, True)
>>> round(tc.alltoall_throughput("hypercube:3", bandwidth=1.0).lam, 6)   # 2/N
0.25
>>> tc.analyze_gossip(tc.gossip_topology("one-peer-exp", 8))["exact_average_after"]
3
"""

from . import errors, units
from .collectives import COLLECTIVES, Collective, collective
from .errors import TopocollError
from .schedule import (Evaluation, Schedule, VerifyReport, concatenate, dumps_schedule,
                       evaluate, load_schedule, loads_schedule, relabel, reverse, save_schedule,
                       transfer_array, verify)
from .gossip import analyze as analyze_gossip, gossip_topology
from .schedule.linkmodel import simulate
from .synth import ALGORITHMS, expand_schedule, generate
from .throughput import throughput as alltoall_throughput
from .synth.ten import synthesize
from .topology import (Topology, describe_families, diameter, distance_matrix,
                       is_strongly_connected, load_topology, moore_depth, save_topology, topology)

__version__ = "0.1.0"

__all__ = ["errors", "units", "COLLECTIVES", "Collective", "collective", "TopocollError",
           "Topology", "topology", "describe_families", "load_topology", "save_topology",
           "distance_matrix", "diameter", "is_strongly_connected", "moore_depth", "Schedule",
           "transfer_array", "load_schedule", "save_schedule", "loads_schedule", "dumps_schedule",
           "verify", "VerifyReport", "evaluate", "Evaluation", "reverse", "concatenate", "relabel",
           "generate", "ALGORITHMS", "expand_schedule", "synthesize", "simulate",
           "alltoall_throughput", "gossip_topology", "analyze_gossip", "__version__"]
