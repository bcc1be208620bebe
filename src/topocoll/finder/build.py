"""Build a candidate: its topology and its allreduce schedule, from the recipe.

Specs get BFB (:func:`topocoll.synth.bfb.bfb_allreduce`); expansions take the base's allreduce
through :mod:`topocoll.synth.expansions` (nothing is solved again); products of different
graphs get BFB on the product (:func:`~topocoll.topology.transforms.cartesian_product`, as
:func:`~topocoll.synth.expansions.product_schedule` does). The result's nodes have egress
bandwidth 1 split evenly over their links: :func:`priced` gives it the cluster's latency and
bandwidth.

>>> from topocoll.finder.search import Candidate
>>> c = Candidate("line(complete:3)", 6, 2, 2, 1.0, ("line", ("spec", "complete:3")))
>>> s = build_allreduce(c)
>>> s.topology.name, s.collective.name, s.num_nodes
('line(complete:3)', 'allreduce', 6)
"""

from ..errors import UnsupportedError

__all__ = ["build_allreduce", "priced"]


def _build(recipe, options):
    from ..synth import expansions
    from ..synth.bfb import bfb_allreduce
    from ..topology.registry import topology
    from ..topology.transforms import cartesian_product

    kind = recipe[0]
    # BFB balances the links as they will be priced: each node's bandwidth split evenly over
    # its links (it matters where nodes have fewer links, as in generalized Kautz digraphs)
    if kind == "spec":
        return bfb_allreduce(topology(recipe[1]).with_node_bandwidth(1.0), **options)
    if kind == "product":
        factors = []
        for factor in recipe[1]:
            if factor[0] != "spec":
                raise UnsupportedError(f"product factors must be specs, got {factor!r}")
            factors.append(topology(factor[1]))
        product = cartesian_product(*factors).with_node_bandwidth(1.0)
        return bfb_allreduce(product, **options)
    base = _build(recipe[1], options)
    if kind == "line":
        return expansions.line_graph_expansion(base)
    if kind == "degree":
        return expansions.degree_expansion_schedule(base, recipe[2])
    if kind == "power":
        return expansions.cartesian_power_expansion(base, recipe[2])
    raise UnsupportedError(f"unknown recipe {kind!r}")


def build_allreduce(candidate, *, progress=None, workers=None):
    """The allreduce schedule of a :class:`~topocoll.finder.search.Candidate` (or a recipe
    tuple), on its topology with default links. Not verified here (see :func:`priced`)."""
    recipe = getattr(candidate, "recipe", candidate)
    options = {}
    if progress is not None:
        options["progress"] = progress
    if workers is not None:
        options["workers"] = workers
    schedule = _build(recipe, options)
    name = getattr(candidate, "name", None)
    if name is not None and schedule.topology.name != name:
        schedule = schedule.replace(topology=schedule.topology.with_links(name=name))
    return schedule


def priced(schedule, *, alpha, node_bandwidth):
    """The same schedule on its topology with every link's latency ``alpha`` and every node's
    egress bandwidth ``node_bandwidth`` split evenly over its out-links."""
    topo = schedule.topology.with_links(latency=alpha).with_node_bandwidth(node_bandwidth)
    return schedule.replace(topology=topo)
