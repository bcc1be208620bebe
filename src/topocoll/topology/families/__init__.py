"""Topology families: generators with networkx-style ``noun_graph`` names.

Every generator takes keyword-only per-link ``bandwidth`` and ``latency`` and returns a
:class:`~topocoll.topology.model.Topology` whose ``name`` is its canonical spec string and whose
``meta`` holds the family name and parameters. Families whose node ids are a group under which
the links are invariant say so in ``meta["symmetry"]``: ``{"kind": "cyclic"}`` (ids are Z_n,
every link is ``i -> i+s mod n``), ``{"kind": "xor"}`` (ids are bit strings, links
``i -> i xor m``) or ``{"kind": "mixed_radix", "dims": [...]}`` (ids are mixed-radix
coordinates, first most significant, links translate them coordinate-wise modulo ``dims``);
:mod:`topocoll.topology.symmetry` verifies a claim before anything relies on it. The
spec-string registry is in :mod:`topocoll.topology.specs`.

>>> from topocoll.topology.families import torus_graph
>>> torus_graph([4, 4]).name
'torus:4x4'
>>> torus_graph([4, 4]).meta["symmetry"]
{'kind': 'mixed_radix', 'dims': [4, 4]}
"""

from ...lazy import lazy_attributes

# Public names -> the submodule that defines them. A submodule is imported when one of its
# names is first used (PEP 562), so a job loads only the modules it needs (start-up time).
_LAZY = {
    ".classic": ("circulant_graph", "complete_bipartite_graph", "complete_graph", "default_shift",
                 "hamming_graph", "shifted_ring_graph"),
    ".borel": ("borel_cayley_graph",),
    ".bundlefly": ("bundlefly_graph",),
    ".diamond": ("DIAMOND_HEADS", "diamond_graph"),
    ".dragonfly": ("dragonfly_graph",),
    ".drg": ("DISTANCE_REGULAR_GRAPHS", "distance_regular_graph", "doubled_odd_graph",
             "johnson_graph", "odd_graph", "paley_graph"),
    ".generative": ("optimal_circulant_graph", "random_regular_digraph", "random_regular_graph"),
    ".hierarchical": ("ringfcswitch_graph", "switchswitch_graph"),
    ".kautz": ("de_bruijn_graph", "generalized_kautz_graph", "kautz_graph"),
    ".lps": ("lps_graph", "spectralfly_graph"),
    ".lattice": ("hypercube_graph", "mesh_graph", "ring_graph", "torus_graph", "uniring_graph"),
    ".switched": ("switch_graph",),
    ".trees": ("dbt_graph",),
    ".twisted": ("twisted_hypercube_graph", "twisted_torus_graph"),
    ".zigzag": ("zigzag_product",),
}

__all__ = [
    "torus_graph", "mesh_graph", "ring_graph", "uniring_graph", "hypercube_graph",
    "complete_graph", "complete_bipartite_graph", "circulant_graph", "hamming_graph",
    "kautz_graph", "generalized_kautz_graph", "de_bruijn_graph",
    "twisted_torus_graph", "twisted_hypercube_graph", "optimal_circulant_graph",
    "random_regular_graph", "random_regular_digraph",
    "distance_regular_graph", "paley_graph", "odd_graph", "doubled_odd_graph", "johnson_graph",
    "DISTANCE_REGULAR_GRAPHS", "shifted_ring_graph", "default_shift", "dbt_graph",
    "switch_graph", "ringfcswitch_graph", "switchswitch_graph",
    "lps_graph", "spectralfly_graph", "borel_cayley_graph", "bundlefly_graph", "dragonfly_graph",
    "zigzag_product", "diamond_graph", "DIAMOND_HEADS",
]


__getattr__, __dir__ = lazy_attributes(__name__, _LAZY, __all__)
