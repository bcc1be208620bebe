"""Spanning-tree packing: the exact optimum of allgather, reduce-scatter and allreduce on any
strongly connected topology, and pipelined schedules that approach it (algorithm ``trees``;
docs/math.md section 9).

* :mod:`.bound`: the optimum, ``max_S |S| / c_out(S)``, by Dinkelbach's iteration on max-flows;
* :mod:`.arborescence`: cheapest spanning out-trees of every root (Edmonds' algorithm);
* :mod:`.master`: the linear program over weighted trees, fluid or pipelined in K chunks;
* :mod:`.forest`: the column generations that find the trees;
* :mod:`.generator`: trees to schedules.
"""

from ...lazy import lazy_attributes

# Public names -> the submodule that defines them. A submodule is imported when one of its
# names is first used (PEP 562), so a job loads only the modules it needs (start-up time).
_LAZY = {
    ".arborescence": ("min_arborescences",),
    ".bound": ("PACKING_COLLECTIVES", "PackingBound", "tree_packing_bound"),
    ".forest": ("Forest", "pack_trees"),
    ".generator": ("TREES_COLLECTIVES", "forest_allgather", "trees_schedule"),
}

__all__ = ["tree_packing_bound", "PackingBound", "PACKING_COLLECTIVES", "pack_trees", "Forest",
           "min_arborescences", "trees_schedule", "forest_allgather", "TREES_COLLECTIVES"]


__getattr__, __dir__ = lazy_attributes(__name__, _LAZY, __all__)
