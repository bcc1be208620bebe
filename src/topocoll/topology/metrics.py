"""Graph metrics of a Topology, computed with scipy.sparse.csgraph.

>>> from topocoll.topology import topology
>>> t = topology("torus:4x6")
>>> diameter(t), moore_depth(24, 4), degree_summary(t)["regular"]
(5, 3, True)
"""

import numpy as np
from scipy.sparse import csgraph

from ..errors import NotStronglyConnectedError, TopologyError

__all__ = ["distance_matrix", "diameter", "is_strongly_connected", "unreachable_pair",
           "require_strongly_connected", "degree_summary", "moore_depth", "eccentricity"]

UNREACHABLE = -1


def distance_matrix(topology):
    """Directed hop distances ``D[u, v]`` as an int32 array, ``-1`` where ``v`` is unreachable.

    Cached on the topology: BFB, the cost model and the verifier's reports all ask for it.
    """
    def compute():
        dist = csgraph.shortest_path(topology.adjacency(), method="D", directed=True,
                                     unweighted=True)
        out = np.full(dist.shape, UNREACHABLE, dtype=np.int32)
        finite = np.isfinite(dist)
        out[finite] = dist[finite].astype(np.int32)
        out.flags.writeable = False
        return out
    return topology._cached("distance_matrix", compute)


def unreachable_pair(topology):
    """One ordered pair ``(u, v)`` such that ``v`` cannot be reached from ``u``, or ``None``."""
    if topology.num_nodes == 1:
        return None
    count, labels = csgraph.connected_components(topology.adjacency(), directed=True,
                                                 connection="strong")
    if count == 1:
        return None
    dist = distance_matrix(topology)
    u, v = np.argwhere(dist == UNREACHABLE)[0]
    return int(u), int(v)


def is_strongly_connected(topology):
    """True if every node can reach every other node."""
    return unreachable_pair(topology) is None


def require_strongly_connected(topology, what="this operation"):
    """Raise :class:`NotStronglyConnectedError` naming an unreachable pair, if there is one."""
    pair = unreachable_pair(topology)
    if pair is not None:
        raise NotStronglyConnectedError(
            f"{what} needs a strongly connected topology, but in {topology.name} node {pair[1]} "
            f"cannot be reached from node {pair[0]}", pair=pair)


def diameter(topology):
    """Largest directed hop distance; raises if the topology is not strongly connected."""
    require_strongly_connected(topology, "the diameter")
    return int(distance_matrix(topology).max())


def eccentricity(topology, node, *, direction="out"):
    """Largest distance from ``node`` (``"out"``) or to ``node`` (``"in"``)."""
    require_strongly_connected(topology, "the eccentricity")
    dist = distance_matrix(topology)
    return int(dist[node].max() if direction == "out" else dist[:, node].max())


def degree_summary(topology):
    """Out- and in-degree ranges (distinct neighbours), and whether the graph is regular."""
    out_deg = topology.out_degree()
    in_deg = topology.in_degree()
    return {
        "out_min": int(out_deg.min()), "out_max": int(out_deg.max()),
        "in_min": int(in_deg.min()), "in_max": int(in_deg.max()),
        "regular": bool(out_deg.min() == out_deg.max() == in_deg.min() == in_deg.max()),
    }


def moore_depth(num_nodes, degree):
    """Smallest ``k`` with ``1 + d + d^2 + ... + d^k >= N``: the Moore bound on steps.

    >>> moore_depth(64, 4), moore_depth(64, 1), moore_depth(1, 3)
    (3, 63, 0)
    """
    num_nodes, degree = int(num_nodes), int(degree)
    if num_nodes < 1:
        raise TopologyError(f"the Moore depth needs N >= 1, got {num_nodes}")
    if degree < 1:
        if num_nodes == 1:
            return 0
        raise TopologyError(f"the Moore depth needs degree >= 1 for N > 1, got {degree}")
    if degree == 1:
        return num_nodes - 1
    reach, layer, depth = 1, 1, 0
    while reach < num_nodes:
        layer *= degree
        reach += layer
        depth += 1
    return depth
