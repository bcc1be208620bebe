"""What the runtime keeps per process group for the group's life (neighbor averaging's transport,
hierarchical averaging's sub-groups, decent_dp's edge groups).

A :class:`GroupTable` holds each group weakly: a strong reference kept every group made in the
process alive after it was destroyed, gloo's threads and sockets with it. When a group is
collected its entry goes, and with it what was kept for it (a finalizer of the value runs).

>>> class Group:
...     pass
>>> table, g = GroupTable(), Group()
>>> table.get(g, lambda: "made once"), table.get(g, lambda: "not again"), len(table)
('made once', 'made once', 1)
>>> del g
>>> len(table)
0
"""

import weakref

__all__ = ["GroupTable"]


class GroupTable:
    """Values by process group, each made on first use and kept while the group lives."""

    def __init__(self):
        self._entries = {}      # id of a group -> (a weak reference to it, its value)

    def get(self, group, make):
        """The value of ``group``; ``make()`` makes it the first time (collective where
        ``make`` is)."""
        key = id(group)
        known = self._entries.get(key)
        if known is None or known[0]() is not group:
            known = (weakref.ref(group, lambda ref: self._forget(key, ref)), make())
            self._entries[key] = known
        return known[1]

    def _forget(self, key, ref):
        if self._entries.get(key, (None,))[0] is ref:
            del self._entries[key]

    def values(self):
        """The values of the groups alive."""
        return [value for ref, value in self._entries.values() if ref() is not None]

    def __len__(self):
        """Groups alive that have a value here."""
        return len(self.values())
