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
>>> tc.analyze_gossip(tc.gossip_topology("one-peer-exp", 8)).exact_average_after
3
"""

import sys
import types

__version__ = "0.1.0"

# Public names -> the module that defines them. Nothing is imported until a name is first used
# (PEP 562), so ``import topocoll`` and the command line start without numpy, scipy or HiGHS.
_MODULES = {
    ".errors": ["TopocollError"],
    ".collectives": ["COLLECTIVES", "Collective", "collective"],
    ".topology": ["Topology", "describe_families", "load_topology", "save_topology",
                  "distance_matrix", "diameter", "is_strongly_connected", "moore_depth"],
    ".schedule": ["Schedule", "transfer_array", "load_schedule", "save_schedule",
                  "loads_schedule", "dumps_schedule", "verify", "VerifyReport", "evaluate",
                  "Evaluation", "reverse", "concatenate", "relabel", "simulate"],
    ".synth": ["generate", "ALGORITHMS", "expand_schedule"],
    ".synth.ten": ["synthesize"],
    ".interop": ["export_msccl", "import_msccl", "lint_msccl"],
    ".schedule.timeline": ["plot_timeline"],
    ".studies.training": ["simulate_iteration"],
    ".studies.models": ["model_profile"],
}
_RENAMED = {"topology": (".topology.registry", "topology"),
            "alltoall_throughput": (".throughput", "throughput"),
            "analyze_gossip": (".gossip", "analyze"),
            "gossip_topology": (".gossip", "gossip_topology")}
_SUBMODULES = ("errors", "units", "defaults", "results")
_EXPORTS = {name: (module, name) for module, names in _MODULES.items() for name in names}
_EXPORTS.update(_RENAMED)
_EXPORTS.update({name: (f".{name}", None) for name in _SUBMODULES})

__all__ = [*_EXPORTS, "__version__"]


def __getattr__(name):
    try:
        module, attr = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'topocoll' has no attribute {name!r}") from None
    import importlib

    value = importlib.import_module(module, __name__)
    if attr is not None:
        value = getattr(value, attr)
    if name != "topology":             # see _Package
        globals()[name] = value        # the next access is a plain attribute
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))


class _Package(types.ModuleType):
    """``topocoll.topology`` names both a subpackage and the function that builds topologies;
    the function wins. Without this the import system would bind the subpackage here the first
    time it is imported, after any binding made by ``__getattr__``."""

    @property
    def topology(self):
        return __getattr__("topology")

    @topology.setter
    def topology(self, value):
        if not isinstance(value, types.ModuleType):
            raise AttributeError("topocoll.topology is the function that builds topologies")


sys.modules[__name__].__class__ = _Package
