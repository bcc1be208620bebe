"""Topology families: generators with networkx-style ``noun_graph`` names.

Every generator takes keyword-only per-link ``bandwidth`` and ``latency`` and returns a
:class:`~topocoll.topology.model.Topology` whose ``name`` is its canonical spec string and whose
``meta`` holds the family name and parameters. The spec-string registry is in
:mod:`topocoll.topology.registry`.

>>> torus_graph([4, 4]).name
'torus:4x4'
"""

from .classic import circulant_graph, complete_bipartite_graph, complete_graph, hamming_graph
from .kautz import de_bruijn_graph, generalized_kautz_graph, kautz_graph
from .lattice import hypercube_graph, mesh_graph, ring_graph, torus_graph, uniring_graph

__all__ = [
    "torus_graph", "mesh_graph", "ring_graph", "uniring_graph", "hypercube_graph",
    "complete_graph", "complete_bipartite_graph", "circulant_graph", "hamming_graph",
    "kautz_graph", "generalized_kautz_graph", "de_bruijn_graph",
]
