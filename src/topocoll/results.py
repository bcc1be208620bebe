"""The one result convention, as in ``scipy.optimize``: every solver-like entry point returns a
:class:`Result` with ``success``, an integer ``status`` from :data:`STATUS` and a one-line
``message``, plus fields of its own and ``to_dict()`` for ``--json``.

The status codes mean the same everywhere:

====  ================  ==============================================================
code  name              meaning
====  ================  ==============================================================
0     ``SUCCESS``       done as asked; where an optimum is sought, it is proven
1     ``LIMIT``         a time, iteration, node or swap limit stopped the work; the
                        best result found is returned (valid, not proven best)
2     ``NOT_PROVEN``    a valid result that is not proven optimal for another reason
                        (a gap above the tolerance, a heuristic, a fallback)
3     ``INVALID``       part of the input or of the result failed verification
4     ``INFEASIBLE``    the input admits no answer (e.g. a topology that is not
                        strongly connected, a gossip topology that never averages)
5     ``FAILED``        the solver failed; whatever partial result exists is returned
====  ================  ==============================================================

``success`` is true for 0, 1 and 2: the result can be used.

>>> r = Result(status=Status.LIMIT, message="time limit reached after 3 models")
>>> r.success, r.status == 1, r.status_name
(True, True, 'LIMIT')
>>> r.to_dict()["status"], r.to_dict()["status_name"]
(1, 'LIMIT')
"""

from dataclasses import dataclass
from enum import IntEnum

__all__ = ["Status", "STATUS", "Result"]


class Status(IntEnum):
    """The status codes of every :class:`Result` (see the module docstring)."""

    SUCCESS = 0
    LIMIT = 1
    NOT_PROVEN = 2
    INVALID = 3
    INFEASIBLE = 4
    FAILED = 5


#: The one status table: code -> what it means.
STATUS = {
    Status.SUCCESS: "done as asked; where an optimum is sought, it is proven",
    Status.LIMIT: "a time, iteration, node or swap limit stopped the work; the best result "
                  "found is returned",
    Status.NOT_PROVEN: "a valid result that is not proven optimal (gap above the tolerance, a "
                       "heuristic or a fallback)",
    Status.INVALID: "part of the input or of the result failed verification",
    Status.INFEASIBLE: "the input admits no answer",
    Status.FAILED: "the solver failed; whatever partial result exists is returned",
}

_USABLE = (Status.SUCCESS, Status.LIMIT, Status.NOT_PROVEN)


@dataclass(kw_only=True)
class Result:
    """Base of every result object.

    Attributes
    ----------
    status : int
        A :class:`Status` code.
    message : str
        One line saying what happened.

    Subclasses are dataclasses with fields of their own; they extend :meth:`to_dict` by
    calling it and adding their fields, so that every ``--json`` document starts with the same
    four keys.
    """

    status: int
    message: str

    def __post_init__(self):
        self.status = Status(self.status)

    @property
    def success(self):
        """True if the result can be used: status 0, 1 or 2."""
        return self.status in _USABLE

    @property
    def status_name(self):
        """The status as a word: ``"SUCCESS"``, ``"LIMIT"``, ..."""
        return Status(self.status).name

    def to_dict(self):
        """The core fields, JSON-ready: ``success``, ``status``, ``status_name``, ``message``."""
        return {"success": self.success, "status": int(self.status),
                "status_name": self.status_name, "message": self.message}
