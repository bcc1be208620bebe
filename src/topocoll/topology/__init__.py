"""Topologies: the model, the families, the spec-string registry, files and metrics.

>>> from topocoll.topology import topology, diameter
>>> t = topology("hypercube:4")
>>> t.num_nodes, diameter(t)
(16, 4)

``topology(spec)`` is the builder (a :class:`Topology` from a spec string, a file, a networkx
graph or a Topology); at the top level it is ``topocoll.build_topology``, because there
``topocoll.topology`` is this subpackage:

>>> import topocoll
>>> import topocoll.topology as tt
>>> tt.Topology is topocoll.topology.Topology, tt.topology is topocoll.build_topology
(True, True)
"""

from ..lazy import lazy_attributes

# Public names -> the submodule that defines them. A submodule is imported when one of its
# names is first used (PEP 562), so a job loads only the modules it needs (start-up time).
_LAZY = {
    ".families": ("DISTANCE_REGULAR_GRAPHS", "circulant_graph", "complete_bipartite_graph",
                  "complete_graph", "de_bruijn_graph", "distance_regular_graph",
                  "doubled_odd_graph", "generalized_kautz_graph", "hamming_graph",
                  "hypercube_graph", "johnson_graph", "kautz_graph", "mesh_graph", "odd_graph",
                  "optimal_circulant_graph", "paley_graph", "random_regular_digraph",
                  "random_regular_graph", "ring_graph", "torus_graph", "twisted_hypercube_graph",
                  "twisted_torus_graph", "uniring_graph"),
    ".io": ("load_topology", "save_topology", "topology_from_dict"),
    ".metrics": ("degree_summary", "diameter", "distance_matrix", "eccentricity",
                 "is_strongly_connected", "moore_depth", "require_strongly_connected",
                 "unreachable_pair"),
    ".model": ("Topology",),
    ".specs": ("FAMILIES", "Family", "describe_families", "parse_spec", "topology"),
}

__all__ = [
    # model
    "Topology",
    # families
    "torus_graph", "mesh_graph", "ring_graph", "uniring_graph", "hypercube_graph",
    "complete_graph", "complete_bipartite_graph", "circulant_graph", "hamming_graph",
    "kautz_graph", "generalized_kautz_graph", "de_bruijn_graph",
    "twisted_torus_graph", "twisted_hypercube_graph", "optimal_circulant_graph",
    "random_regular_graph", "random_regular_digraph",
    "distance_regular_graph", "paley_graph", "odd_graph", "doubled_odd_graph", "johnson_graph",
    "DISTANCE_REGULAR_GRAPHS",
    # registry
    "topology", "describe_families", "parse_spec", "FAMILIES", "Family",
    # files
    "load_topology", "save_topology", "topology_from_dict",
    # metrics
    "distance_matrix", "diameter", "is_strongly_connected", "unreachable_pair",
    "require_strongly_connected", "degree_summary", "moore_depth", "eccentricity",
]


__getattr__, __dir__ = lazy_attributes(__name__, _LAZY, __all__)
