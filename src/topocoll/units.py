"""Quantities with units: ``"10us"``, ``"100Gbps"``, ``"25GB/s"``, ``"4MiB"`` to SI floats;
and the two checks of a number argument: :func:`whole_number` for an integer, :func:`real_number`
for a real number.

One parser for the CLI and the API. Plain numbers are already SI: seconds, bytes/s, bytes.

>>> parse_time("10us")
1e-05
>>> parse_bandwidth("100Gbps")
12500000000.0
>>> parse_bandwidth("25GB/s")
25000000000.0
>>> parse_size("4MiB")
4194304.0
>>> parse_size(1e6)
1000000.0
>>> whole_number(3, "m")
3
>>> whole_number(0, "m")
Traceback (most recent call last):
...
topocoll.errors.UnsupportedError: m must be >= 1, got 0
>>> whole_number(2.5, "m")
Traceback (most recent call last):
...
topocoll.errors.InputTypeError: m must be an integer, got 2.5
>>> real_number(3, "alpha")
3.0
>>> real_number(0, "alpha", above=0)
Traceback (most recent call last):
...
topocoll.errors.UnsupportedError: alpha must be > 0, got 0
>>> real_number("3", "alpha")
Traceback (most recent call last):
...
topocoll.errors.InputTypeError: alpha must be a number, got '3'
"""

import math
import numbers
import operator
import re

from .errors import InputTypeError, UnitError, UnsupportedError

__all__ = ["parse_time", "parse_bandwidth", "parse_size", "format_time", "format_size",
           "format_bandwidth", "whole_number", "real_number", "MAX_DIGITS"]

#: Digits a whole number typed by a user (a spec's parameter, an option's value) may have: any
#: count or size topocoll takes has far fewer, and int() refuses thousands with a traceback.
MAX_DIGITS = 30

_NUMBER = r"([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)"
_PATTERN = re.compile(r"^\s*" + _NUMBER + r"\s*([A-Za-z/]*)\s*$")

# divisors, not factors: 10 / 1e6 is exactly the double nearest 1e-05, 10 * 1e-6 is not
_TIME = {"": 1.0, "s": 1.0, "ms": 1e3, "us": 1e6, "µs": 1e6, "ns": 1e9, "ps": 1e12}
_SI = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_BIN = {"Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40, "Pi": 2.0**50}


def _split(value, what):
    if isinstance(value, bool):
        raise UnitError(f"{what} must be a number or a string with a unit, not {value!r}")
    if isinstance(value, (int, float)):
        return float(value), ""
    if not isinstance(value, str):
        raise UnitError(f"{what} must be a number or a string with a unit, not {value!r}")
    match = _PATTERN.match(value.replace("µ", "u"))
    if match is None:
        raise UnitError(f"{what} {value!r} is not a number with an optional unit")
    return float(match.group(1)), match.group(2)


def _positive(number, value, what, allow_zero):
    if not math.isfinite(number) or number < 0 or (number == 0 and not allow_zero):
        bound = "non-negative" if allow_zero else "positive"
        raise UnitError(f"{what} must be finite and {bound}, got {value!r}")
    return number


def _prefix(unit, value, what, allow_binary):
    if unit in _SI:
        return _SI[unit]
    if allow_binary and unit in _BIN:
        return _BIN[unit]
    raise UnitError(f"{what} {value!r}: unknown unit prefix {unit!r}")


def parse_time(value, *, what="time", allow_zero=True):
    """Seconds from ``"10us"``, ``"1.5ms"``, ``"2s"`` or a number of seconds."""
    number, unit = _split(value, what)
    if unit not in _TIME:
        raise UnitError(f"{what} {value!r}: unknown time unit {unit!r} (use s, ms, us, ns)")
    return _positive(number / _TIME[unit], value, what, allow_zero)


def parse_bandwidth(value, *, what="bandwidth"):
    """Bytes per second from ``"100Gbps"``, ``"25GB/s"``, ``"12.5GBps"`` or a number."""
    number, unit = _split(value, what)
    if unit == "":
        scale = 1.0
    elif unit.endswith("bps"):  # bits per second
        scale = _prefix(unit[:-3], value, what, True) / 8.0
    elif unit.endswith("bit/s"):
        scale = _prefix(unit[:-5], value, what, True) / 8.0
    elif unit.endswith("B/s") or unit.endswith("Bps"):
        scale = _prefix(unit[:-3], value, what, True)
    else:
        raise UnitError(f"{what} {value!r}: unknown bandwidth unit {unit!r} "
                        "(use e.g. 100Gbps, 25GB/s)")
    return _positive(number * scale, value, what, allow_zero=False)


def parse_size(value, *, what="size"):
    """Bytes from ``"4MiB"``, ``"1MB"``, ``"512KiB"``, ``"1e6"`` or a number."""
    number, unit = _split(value, what)
    if unit in ("", "B"):
        scale = 1.0
    elif unit.endswith("B"):
        scale = _prefix(unit[:-1], value, what, True)
    else:
        raise UnitError(f"{what} {value!r}: unknown size unit {unit!r} (use B, KiB, MiB, GB, ...)")
    return _positive(number * scale, value, what, allow_zero=False)


def _format(value, table, suffix):
    for name, scale in table:
        if abs(value) >= scale:
            return f"{value / scale:.4g}{name}{suffix}"
    name, scale = table[-1]
    return f"{value / scale:.4g}{name}{suffix}"


def format_time(seconds):
    """``1.5e-05`` -> ``"15us"``."""
    if seconds == 0:
        return "0s"
    return _format(seconds, [("", 1.0), ("m", 1e-3), ("u", 1e-6), ("n", 1e-9)], "s")


def format_size(nbytes):
    """``1048576`` -> ``"1MiB"``."""
    return _format(nbytes, [("Gi", 2.0**30), ("Mi", 2.0**20), ("Ki", 2.0**10), ("", 1.0)], "B")


def format_bandwidth(bytes_per_s):
    """``12.5e9`` -> ``"100Gbps"``."""
    return _format(bytes_per_s * 8, [("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3), ("", 1.0)],
                   "bps")


def _is_bool(value):
    # numpy's bool_ is no int subclass; its name is checked so that units.py needs no numpy
    return isinstance(value, bool) or type(value).__name__ in ("bool_", "bool")


def whole_number(value, what, least=1, *, most=None):
    """``value`` as an ``int`` if it is an integer (``int`` or numpy's, not a bool) of at least
    ``least`` (no lower bound if None) and at most ``most`` (no upper bound if None). Anything
    else raises, naming ``what``: :class:`~topocoll.errors.InputTypeError` (``what must be an
    integer``) for another kind of value, such as ``2.5`` or ``"3"``, and
    :class:`~topocoll.errors.UnsupportedError` (``what must be >= least`` or ``<= most``) for
    one out of range. Option parsers that take digit strings from the command line convert them
    first (:func:`topocoll.synth.options.int_option`).

    >>> whole_number(7, "rank", 0, most=7)
    7
    >>> whole_number(8, "rank", 0, most=7)
    Traceback (most recent call last):
    ...
    topocoll.errors.UnsupportedError: rank must be <= 7, got 8
    >>> whole_number(True, "rank")
    Traceback (most recent call last):
    ...
    topocoll.errors.InputTypeError: rank must be an integer, got True
    """
    if _is_bool(value):
        raise InputTypeError(f"{what} must be an integer, got {value!r}")
    try:
        number = operator.index(value)
    except TypeError:
        raise InputTypeError(f"{what} must be an integer, got {value!r}") from None
    if least is not None and number < least:
        raise UnsupportedError(f"{what} must be >= {least}, got {number}")
    if most is not None and number > most:
        raise UnsupportedError(f"{what} must be <= {most}, got {number}")
    return number


def real_number(value, what, *, least=None, above=None, most=None, below=None, finite=True):
    """``value`` as a ``float`` if it is a real number (``int``, ``float``, a fraction or numpy's
    number, not a bool) within the bounds given: ``>= least``, ``> above``, ``<= most``,
    ``< below`` (None: no bound). Anything else raises, naming ``what``:
    :class:`~topocoll.errors.InputTypeError` (``what must be a number``) for another kind of
    value, a string included (callers that take ``"10us"`` parse it first, with
    :func:`parse_time` and its kin), and :class:`~topocoll.errors.UnsupportedError` for NaN,
    an infinity (unless ``finite`` is False; NaN is refused anyway) or a value out of range
    (``what must be > above, got value``).

    >>> real_number(0.5, "efficiency", above=0, most=1)
    0.5
    >>> real_number(float("nan"), "efficiency")
    Traceback (most recent call last):
    ...
    topocoll.errors.UnsupportedError: efficiency must be a finite number, got nan
    >>> real_number(1.5, "efficiency", above=0, most=1)
    Traceback (most recent call last):
    ...
    topocoll.errors.UnsupportedError: efficiency must be <= 1, got 1.5
    >>> real_number(False, "efficiency")
    Traceback (most recent call last):
    ...
    topocoll.errors.InputTypeError: efficiency must be a number, got False
    """
    if _is_bool(value) or not isinstance(value, numbers.Real):
        raise InputTypeError(f"{what} must be a number, got {value!r}")
    number = float(value)
    if math.isnan(number) or (finite and math.isinf(number)):
        raise UnsupportedError(f"{what} must be a finite number, got {value!r}")
    for bound, holds, sign in ((least, operator.ge, ">="), (above, operator.gt, ">"),
                               (most, operator.le, "<="), (below, operator.lt, "<")):
        if bound is not None and not holds(number, bound):
            raise UnsupportedError(f"{what} must be {sign} {bound}, got {value!r}")
    return number
