"""The eight collectives as pre- and postconditions on shards.

A collective says how many shards there are, where each shard starts, whether transfers copy or
reduce, and which nodes must hold which shards at the end. The verifier reads only this module
and the schedule, never the generators.

>>> c = collective("allgather")
>>> c.num_shards(4), c.combining, c.rooted
(4, False, False)
>>> c.start_owner(4, None).tolist(), c.end_target(4, None)
([0, 1, 2, 3], None)
>>> collective("reduce_scatter").end_target(3, None).tolist()
[0, 1, 2]
"""

from dataclasses import dataclass

import numpy as np

from .errors import InputTypeError, UnsupportedError

__all__ = ["Collective", "collective", "COLLECTIVES", "COPY", "REDUCE", "OP_NAMES"]

#: Transfer ops, as stored in schedule arrays.
COPY = 0
REDUCE = 1
OP_NAMES = ("copy", "reduce")


@dataclass(frozen=True)
class Collective:
    """A collective: shards, start state and end state (docs/format.md, "Collectives").

    Attributes
    ----------
    name : str
    rooted : bool
        Whether a ``root`` node is part of the collective (broadcast, reduce, scatter, gather).
    combining : bool
        Whether contributions are reduced (reduce_scatter, allreduce, reduce). Combining
        collectives start with every node holding its own contribution to every shard.
    """

    name: str
    rooted: bool
    combining: bool
    summary: str

    def num_shards(self, n):
        """Number of shards for ``n`` nodes."""
        if self.name == "alltoall":
            return n * n
        if self.name in ("broadcast", "reduce"):
            return 1
        return n

    def shard_fraction(self, n):
        """Size of one shard as a fraction of the buffer size M."""
        return 1.0 if self.name in ("broadcast", "reduce") else 1.0 / n

    def start_owner(self, n, root):
        """For non-combining collectives: the node holding each shard at the start."""
        if self.combining:
            raise UnsupportedError(f"{self.name} starts with every node holding a contribution")
        shards = np.arange(self.num_shards(n), dtype=np.int64)
        if self.name in ("allgather", "gather"):
            return shards
        if self.name in ("broadcast", "scatter"):
            return np.full(shards.size, root, dtype=np.int64)
        return shards // n  # alltoall: shard x*N+y starts at x

    def end_target(self, n, root):
        """The node that must hold each shard at the end, or ``None`` for "every node"."""
        if self.name in ("allgather", "allreduce", "broadcast"):
            return None
        shards = np.arange(self.num_shards(n), dtype=np.int64)
        if self.name in ("reduce_scatter", "scatter"):
            return shards
        if self.name in ("reduce", "gather"):
            return np.full(shards.size, root, dtype=np.int64)
        return shards % n  # alltoall: shard x*N+y ends at y


COLLECTIVES = {c.name: c for c in (
    Collective("allgather", False, False, "every node ends with every node's shard"),
    Collective("reduce_scatter", False, True, "node x ends with shard x reduced over all nodes"),
    Collective("allreduce", False, True, "every node ends with every shard reduced over all nodes"),
    Collective("broadcast", True, False, "the root's buffer reaches every node"),
    Collective("reduce", True, True, "the root ends with the buffer reduced over all nodes"),
    Collective("scatter", True, False, "shard x of the root reaches node x"),
    Collective("gather", True, False, "the root ends with every node's shard"),
    Collective("alltoall", False, False, "shard x*N+y travels from node x to node y"),
)}


def collective(name):
    """Look up a collective by name (``"allgather"``, ..., ``"alltoall"``; ``-`` may stand for ``_``)."""
    if isinstance(name, Collective):
        return name
    if not isinstance(name, str):
        raise InputTypeError(f"collective must be a name, got {name!r}")
    key = name.strip().lower().replace("-", "_")
    if key not in COLLECTIVES:
        raise UnsupportedError(f"unknown collective {name!r}; choose one of "
                               f"{', '.join(COLLECTIVES)}")
    return COLLECTIVES[key]
