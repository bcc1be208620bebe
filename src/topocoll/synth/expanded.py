"""The ``expand`` generator: the schedule of a composite spec, built the way the finder builds
its candidates (Zhao et al., NSDI 2025, sections 3-5): the leaf's schedule (BFB by default)
taken through the spec's operators by :mod:`topocoll.synth.expansions`, nothing solved again.

======================  ===============================================================
operator                what the schedule of ``op(X)`` is
======================  ===============================================================
``line(X)``             :func:`~.expansions.line_graph_expansion` of X's schedule
``degree(X,m=M)``       :func:`~.expansions.degree_expansion_schedule` with ``m = M``
``power(X,n=P)``        :func:`~.expansions.cartesian_power_expansion` with ``n = P``
``bidir(X)``            :func:`~.expansions.bidirectional_expansion` (X reverse-symmetric)
``product(X,Y,...)``    BFB on the product (:func:`~.expansions.product_schedule`)
======================  ===============================================================

The spec is the topology's name (``topocoll schedule 'line(line(kautz:2,2))' -c allreduce -a
expand``) or the option ``spec``; the expanded schedule must run on exactly the digraph of the
topology given (same nodes, same links in the same order), else the request is refused.
``meta["predicted"]`` holds the closed forms of docs/math.md section 4 (the finder's
predictions): steps exactly, T_B exactly or, with a line graph, as an upper bound.

>>> from topocoll.schedule.verify import verify
>>> from topocoll.synth.expansions import measure
>>> s = expand_schedule_of("line(line(kautz:2,2))", "allreduce")
>>> s.num_nodes, verify(s).valid, s.algorithm
(24, True, 'line(line(bfb))')
>>> measure(s)[0] == s.meta["predicted"]["steps"]
True
"""

import numpy as np

from ..errors import UnsupportedError
from ..topology.composite import format_spec, parse_composite, shown_spec
from ..topology.specs import topology as build_topology
from . import expansions

__all__ = ["expand_schedule_of", "EXPAND_COLLECTIVES"]

#: The collectives the expansions make.
EXPAND_COLLECTIVES = ("allgather", "reduce_scatter", "allreduce")


def expand_schedule_of(topology, collective, *, root=None, progress=None, leaf="bfb",
                       spec=None):
    """The schedule of ``collective`` on a composite spec by expansion of its leaf's schedule.

    Parameters
    ----------
    topology : Topology or str
        The topology (its name is the composite spec unless ``spec`` is given) or the spec.
    collective : str
        ``"allgather"``, ``"reduce_scatter"`` or ``"allreduce"``.
    root, progress
        As every generator takes them (no root: these collectives are not rooted).
    leaf : str
        The generator of the innermost specs' schedules (default ``"bfb"``); products are
        always scheduled by BFB.
    spec : str, optional
        The composite spec, when the topology's name is not it (a topology file).

    Raises
    ------
    UnsupportedError
        The spec is no composite, or it builds another digraph than ``topology``.
    """
    topo = build_topology(topology) if isinstance(topology, str) else topology
    text = spec if spec is not None else topo.name
    node = parse_composite(text)
    if isinstance(node, str):
        raise UnsupportedError(f"expand needs a composite spec such as line(kautz:2,2) (the "
                               f"topology's name or -O spec=...), got {shown_spec(text)}")
    made = _schedule(node, collective, leaf, progress)
    got = made.topology
    if (got.num_nodes != topo.num_nodes or not np.array_equal(got.src, topo.src)
            or not np.array_equal(got.dst, topo.dst)):
        raise UnsupportedError(f"{shown_spec(format_spec(node))} builds another digraph than "
                               f"the topology {shown_spec(topo.name)} ({got.num_nodes} nodes, "
                               f"{got.num_links} links vs {topo.num_nodes}, {topo.num_links})")
    meta = dict(made.meta, expand={"spec": format_spec(node), "leaf": leaf})
    return made.replace(topology=topo, meta=meta)


def _schedule(node, collective, leaf, progress):
    """The schedule of a parsed spec: leaves by ``leaf``, operators by the expansions."""
    if isinstance(node, str):
        from .generators import generate  # deferred: generators imports this module

        if leaf == "expand":
            raise UnsupportedError("the leaf generator cannot be expand itself")
        return generate(build_topology(node), collective, leaf, progress=progress,
                        form="explicit")
    params = dict(node.params)
    if node.op == "product":
        factors = [build_topology(format_spec(s)) for s in node.specs]
        return expansions.product_schedule(factors, collective)
    inner = _schedule(node.specs[0], collective, leaf, progress)
    kind = "bidirectional" if node.op == "bidir" else node.op
    return expansions.expand_schedule(kind, inner, **params)
