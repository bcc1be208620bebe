"""Emulated networks: a topology as kernel namespaces, shaped links and routes, to run ranks on.

- :class:`EmulatedNetwork` -- build a topology (spec, file, heterogeneous, one-way links,
  switches) as network namespaces joined by shaped veth cables with shortest-path routes; a
  context manager that takes all of it down again.
- :class:`Endpoint` -- where one rank runs (``topocoll.runtime.run_local(..., network=net)``).
- :func:`calibrate` / :class:`Calibration` -- the network's goodput and latencies, measured.
- :func:`schedule_model_time`, :func:`torch_model_time`, :func:`flows_model_time` -- what the
  model predicts on the same links, rates and routes.
- :func:`probe_host` -- what one link costs this host; :func:`leftover_runs` and
  :func:`clean_leftovers` -- namespaces killed runs left behind.

Building needs root, or unprivileged user namespaces, and pyroute2 (``pip install
'topocoll[emulate]'``); planning and pricing need neither. Without root, a program calls
:func:`prepare_process` first thing, before it imports numpy (whose thread pool would keep the
process from entering a user namespace); the ``topocoll`` commands do so themselves.
"""

from ..lazy import lazy_attributes

_LAZY = {
    ".calibrate": ("Calibration", "calibrate"),
    ".capacity": ("HostCapacity", "probe_host"),
    ".host": ("HostMonitor", "describe_host"),
    ".prediction": ("schedule_model_time", "torch_model_time", "flows_model_time",
               "gossip_model_time"),
    ".network": ("EmulatedNetwork", "Endpoint", "DEFAULT_LINK_BANDWIDTH"),
    ".plan": ("NetworkPlan", "DEFAULT_MTU"),
    ".runs": ("leftover_runs", "clean_leftovers"),
    ".system": ("prepare_process",),
}

__all__ = ["EmulatedNetwork", "Endpoint", "DEFAULT_LINK_BANDWIDTH", "DEFAULT_MTU",
           "NetworkPlan", "Calibration", "calibrate", "HostCapacity", "probe_host",
           "HostMonitor", "describe_host", "schedule_model_time", "torch_model_time",
           "flows_model_time", "gossip_model_time", "leftover_runs", "clean_leftovers",
           "prepare_process"]


__getattr__, __dir__ = lazy_attributes(__name__, _LAZY, __all__)
