"""topocoll: network topologies and collective-communication schedules.

Design a topology, generate a schedule for a collective, verify it independently, price it.

>>> import topocoll as tc
>>> t = tc.build_topology("torus:4x4")            # a spec string; the subpackage is tc.topology
>>> t.num_nodes, isinstance(t, tc.topology.Topology)
(16, True)
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

Searches: :func:`find` (which topology and schedule for N nodes of degree d; :func:`sweep`
over a grid of N and d, on local processes or a Dask cluster),
:func:`compare` (schedules side by side) and :func:`rewire` (swaps that raise all-to-all
throughput) load the finder, the studies and the LPs when first used.
"""

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
                  "Evaluation", "reverse", "concatenate", "relabel", "simulate",
                  "SymmetricSchedule", "symmetric_schedule"],
    ".synth": ["generate", "ALGORITHMS", "expand_schedule", "show_options", "step_traffic"],
    ".synth.ten": ["synthesize"],
    ".interop": ["export_msccl", "import_msccl", "lint_msccl"],
    ".schedule.timeline": ["plot_timeline"],
    ".studies.training": ["simulate_iteration"],
    ".studies.models": ["model_profile"],
    ".studies.compare": ["compare"],
    ".finder.core": ["find"],
    ".finder.sweep": ["sweep"],
    ".throughput.rewire": ["rewire"],
}
# Public names that differ from the name in their module. ``topocoll.topology`` is the
# subpackage (``import topocoll.topology as tt`` gives the module, with ``tt.Topology``); the
# function that builds a topology from a spec is ``build_topology`` here and
# ``topocoll.topology.topology`` there (docs/architecture.md, "The front door").
_RENAMED = {"build_topology": (".topology.specs", "topology"),
            "alltoall_throughput": (".throughput", "throughput"),
            "analyze_gossip": (".gossip", "analyze"),
            "gossip_topology": (".gossip", "gossip_topology")}
_SUBMODULES = ("errors", "units", "defaults", "results", "topology")
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
    globals()[name] = value            # the next access is a plain attribute
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
