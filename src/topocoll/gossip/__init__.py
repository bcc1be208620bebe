"""Decentralized (gossip) averaging: topologies, mixing matrices, convergence and cost.

A gossip topology is a periodic sequence of mixing matrices ``W_k`` (``x_i <- sum_j W[i, j]
x_j``), given either as decent_dp-style groups or as Bluefog-style weighted digraphs. The
registry holds both projects' topologies under their own names, for every world size that has
one; :mod:`~topocoll.gossip.analysis` measures convergence (``rho`` in
:mod:`~topocoll.gossip.spectrum`, exact averaging and consensus simulation in
:mod:`~topocoll.gossip.consensus`, the matrices and their checks in
:mod:`~topocoll.gossip.matrices`) and :mod:`~topocoll.gossip.cost` prices one iteration on a physical network.

>>> from topocoll.gossip import gossip_topology, analyze
>>> t = gossip_topology("alternating-exp-ring", 16, local_size=4)
>>> t.period, len(t.groups(0))
(4, 3)
>>> analyze(t).exact_average_after
4
"""

from ..lazy import lazy_attributes
# eager: the built-in topologies register themselves in the registry when their module loads
from . import builtin  # noqa: F401

# Public names -> the submodule that defines them, imported on first use (PEP 562).
_LAZY = {
    ".analysis": ("TABLE_PARAMS", "TABLE_SIZES", "analyze", "rho_table"),
    ".builtin": ("BUILTIN_NAMES", "circulant_topology", "metropolis_hastings",
                 "metropolis_hastings_topology", "one_peer_dynamic"),
    ".consensus": ("consensus_errors", "exact_average_after", "plot_consensus"),
    ".cost": ("GossipCost", "IterationCost", "gossip_cost", "iteration_messages",
              "iterations_to_accuracy"),
    ".hierarchical": ("HierarchicalTopology", "hierarchical_matrix", "hierarchical_topology"),
    ".matrices": ("is_column_stochastic", "is_doubly_stochastic", "is_row_stochastic",
                  "mixing_matrix", "period_operator", "period_product", "same_mixing",
                  "stochasticity"),
    ".mixing": ("GossipTopology", "GraphTopology", "GroupTopology"),
    ".registry": ("GOSSIP_TOPOLOGIES", "GossipFamily", "describe_gossip_topologies",
                  "gossip_topology", "parse_param_value", "register_gossip_topology",
                  "resolve_gossip_name", "unregister_gossip_topology"),
    ".spectrum": ("period_rho", "rho"),
}

__all__ = [
    # model
    "GossipTopology", "GroupTopology", "GraphTopology",
    # registry
    "GOSSIP_TOPOLOGIES", "GossipFamily", "register_gossip_topology", "unregister_gossip_topology",
    "gossip_topology", "describe_gossip_topologies", "resolve_gossip_name", "parse_param_value",
    # built-ins
    "BUILTIN_NAMES", "metropolis_hastings", "metropolis_hastings_topology", "one_peer_dynamic",
    "circulant_topology",
    # analysis
    "mixing_matrix", "period_product", "period_operator", "is_row_stochastic",
    "is_column_stochastic", "is_doubly_stochastic", "stochasticity", "rho", "period_rho",
    "exact_average_after", "consensus_errors", "analyze", "rho_table", "same_mixing", "plot_consensus", "TABLE_SIZES",
    "TABLE_PARAMS",
    # hierarchical averaging over machines
    "HierarchicalTopology", "hierarchical_matrix", "hierarchical_topology",
    # cost
    "gossip_cost", "GossipCost", "IterationCost", "iteration_messages", "iterations_to_accuracy",
]


__getattr__, __dir__ = lazy_attributes(__name__, _LAZY, __all__)
