"""Run gossip on torch.distributed: neighbor averaging and decentralized data parallel.

- :func:`neighbor_allreduce` -- ``x_i <- sum_j W_k[i, j] x_j`` with point-to-point messages,
  static or dynamic topology, blocking or async (:class:`NeighborHandle`); also in Bluefog's
  call form (``self_weight=``, ``neighbor_weights=``, ``send_neighbors=``, checked across
  ranks), with :func:`one_peer_exp_send_recv` for Bluefog's dynamic one-peer schedule.
- :func:`hierarchical_neighbor_allreduce` -- Bluefog's averaging over machines: inside each
  machine first (reduce-scatter), then neighbor averaging between machines with an ``M x M``
  machine topology, then an all-gather (:class:`HierarchicalHandle` when async).
- :class:`DecentralizedDataParallel` -- wraps an ``nn.Module``: bucketed parameters, gossip
  overlapped with the next forward/backward, ``x^{k+1} = W_k x^k - lr * grad(x^k)``,
  :meth:`~DecentralizedDataParallel.global_avg`, state dicts.
- :func:`edge_allreduce` -- the same averaging as decent_dp runs it, one ``all_reduce`` per
  edge (:func:`mixing_edges` reads ``W_k`` as its :class:`Edge` groups; :class:`EdgeHandle`).
- :func:`as_mixing` / :class:`Mixing` -- the topology forms accepted (a
  :class:`topocoll.gossip.GossipTopology`, a callable ``k -> W``, a fixed matrix).
- :func:`run_schedule` / :class:`ScheduleCollective` -- run any topocoll schedule or MSCCL
  XML program (every collective) with point-to-point messages, on the dataflow engine
  (:mod:`~topocoll.runtime.program` compiles each rank's part, :mod:`~topocoll.runtime.engine`
  runs it, :mod:`~topocoll.runtime.loopback` runs it in memory for tests);
  :mod:`topocoll.runtime.plan` holds the layouts; :func:`load_runnable` reads either file.
- :func:`run_local`, :func:`single_process_group`, :func:`group_info` -- process groups;
  :func:`report_iteration` -- what a timed-out :func:`run_local` reports of each rank;
  :func:`release_buffers` -- free the receive buffers kept for reuse.

torch is imported only when a function needs it.

>>> import torch
>>> with single_process_group():
...     neighbor_allreduce(torch.tensor([3.0]), [[1.0]]).item()
3.0
"""

from ..lazy import lazy_attributes

# Public names -> the submodule that defines them, imported on first use (PEP 562).
_LAZY = {
    ".bluefog": ("one_peer_exp_send_recv",),
    ".ddp": ("DecentralizedDataParallel",),
    ".edges": ("Edge", "EdgeHandle", "edge_allreduce", "mixing_edges"),
    ".executor": ("ScheduleCollective", "ScheduleHandle", "run_schedule"),
    ".hierarchical": ("HierarchicalHandle", "hierarchical_neighbor_allreduce"),
    ".launch": ("group_info", "report_iteration", "run_local", "single_process_group"),
    ".mixing": ("Mixing", "MixingPlan", "as_mixing"),
    ".neighbor": ("NeighborHandle", "neighbor_allreduce", "release_buffers"),
    ".sources": ("load_runnable",),
}

__all__ = ["neighbor_allreduce", "NeighborHandle", "DecentralizedDataParallel", "Mixing",
           "MixingPlan", "as_mixing", "group_info", "run_local", "single_process_group",
           "report_iteration", "release_buffers", "ScheduleCollective", "ScheduleHandle",
           "run_schedule", "load_runnable", "hierarchical_neighbor_allreduce",
           "HierarchicalHandle", "one_peer_exp_send_recv", "edge_allreduce", "EdgeHandle",
           "Edge", "mixing_edges"]


__getattr__, __dir__ = lazy_attributes(__name__, _LAZY, __all__)
