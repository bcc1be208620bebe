"""The forms a schedule is made in, one list for every maker and the command line.

``"explicit"``
    Every transfer (:class:`~topocoll.schedule.model.Schedule`).
``"symmetric"``
    One transfer per orbit of a translation group
    (:class:`~topocoll.schedule.symmetric.SymmetricSchedule`).
``"compact"``
    Whole-chunk copies in narrow columns (:class:`~topocoll.schedule.compact.CompactSchedule`).
``"auto"``
    The maker decides: explicit unless that would be too large to build.

>>> check_form("compact")
'compact'
>>> check_form("dense")
Traceback (most recent call last):
...
topocoll.errors.UnsupportedError: form must be one of auto, explicit, symmetric, compact, got 'dense'
"""

from ..errors import UnsupportedError

__all__ = ["FORMS", "check_form"]

FORMS = ("auto", "explicit", "symmetric", "compact")


def check_form(form):
    """``form`` if it is one of :data:`FORMS`, else an ``UnsupportedError`` naming them."""
    if form not in FORMS:
        raise UnsupportedError(f"form must be one of {', '.join(FORMS)}, got {form!r}")
    return form
