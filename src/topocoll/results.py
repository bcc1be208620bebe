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

Every ``--json`` document of the command line is an object that starts with the same four keys
(:data:`STATUS_KEYS`); :func:`document` builds one:

>>> list(document(Status.SUCCESS, "2 sizes priced", sizes=[1, 2]))
['success', 'status', 'status_name', 'message', 'sizes']
"""

from dataclasses import dataclass
from enum import IntEnum

__all__ = ["Status", "STATUS", "Result", "STATUS_KEYS", "document", "as_progress"]


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

#: The keys every ``--json`` document starts with, in this order.
STATUS_KEYS = ("success", "status", "status_name", "message")

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


def document(status, message, fields=(), /, **more):
    """One ``--json`` document: the :data:`STATUS_KEYS` of ``status`` and ``message`` first, then
    the items of ``fields`` (a dict, e.g. a :meth:`Result.to_dict`) and ``more``, in order.

    ``fields`` may hold the four status keys already (a result's own ``to_dict()``): they are
    dropped there and taken from ``status`` and ``message``. Pass ``status=None`` to keep the
    ones in ``fields``, which must then be there. Any other use of a status key is an error, so
    no command can put, say, ``"status": "verified"`` where the status code belongs.
    """
    fields = dict(fields)
    core = {key: fields.pop(key) for key in STATUS_KEYS if key in fields}
    if status is not None:
        core = Result(status=status, message=str(message)).to_dict()
    elif len(core) != len(STATUS_KEYS):
        raise ValueError("document(None, ...) needs fields that hold the four status keys")
    clash = [key for key in more if key in STATUS_KEYS]
    if clash:
        raise ValueError(f"{', '.join(clash)}: a status key, set by document() itself")
    return {**core, **fields, **more}


def as_progress(callback):
    """``callback`` as the one progress shape, ``progress(done, total, stage=None)`` (or None).

    A long job reports ``done`` of ``total`` units of work (``total`` None when unknown); a job
    made of stages (the finder) also names the one under way, ``stage``. The callback may be
    ``callback(done, total)`` (called without the stage), take ``stage`` as a keyword or
    ``**kwargs`` (called with it), or be the older staged form ``callback(stage, done, total)``
    of exactly three required parameters (called in that order). One that takes ``(done,
    total, *more)`` is called the older way too: ``(done, total)``, or ``(stage, done, total)``
    when there is a stage. Wrapping twice changes nothing.

    >>> seen = []
    >>> as_progress(lambda done, total: seen.append((done, total)))(1, 4, "measuring")
    >>> as_progress(lambda stage, done, total: seen.append((stage, done)))(2, 4, "measuring")
    >>> seen
    [(1, 4), ('measuring', 2)]
    """
    if callback is None or getattr(callback, "_one_progress_shape", False):
        return callback
    import inspect

    try:
        params = list(inspect.signature(callback).parameters.values())
    except (TypeError, ValueError):          # a builtin without a signature: (done, total)
        params = []
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    required = [p for p in positional if p.default is p.empty]
    if len(required) == 3 and not any(p.kind == p.VAR_POSITIONAL for p in params):
        def progress(done, total, stage=None):
            callback(stage, done, total)
    elif any(p.kind == p.VAR_KEYWORD or (p.name == "stage" and p.kind != p.POSITIONAL_ONLY)
             for p in params):
        def progress(done, total, stage=None):
            callback(done, total, stage=stage)
    elif any(p.kind == p.VAR_POSITIONAL for p in params):
        def progress(done, total, stage=None):
            if stage is None:
                callback(done, total)
            else:
                callback(stage, done, total)
    else:
        def progress(done, total, stage=None):
            callback(done, total)
    progress._one_progress_shape = True
    return progress
