"""What a generator accepts: option parsers and the checks generators share.

Every generator declares its options in the registry (:mod:`topocoll.synth.generators`) as
``name -> Option`` (a parser, the default and a one-line doc); :func:`take_options` applies
them, so that a value typed on the command line (``-O shift=3``) and one given from Python
(``shift=3``) arrive the same, and an option a generator does not know is refused by name.
Every mistake in an option's value is an ``UnsupportedError`` naming the algorithm and the
option, whatever its kind (a wrong type or a value out of range).

>>> take_options("shiftedring", {"shift": "3"}, {"shift": int_option(1)})
{'shift': 3}
>>> take_options("rhd", {"bogus": 1}, {})
Traceback (most recent call last):
...
topocoll.errors.UnsupportedError: algorithm rhd has no option bogus
"""

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..collectives import collective as _collective
from ..errors import InputTypeError, TopocollError, UnsupportedError
from ..units import MAX_DIGITS, parse_size, parse_time, whole_number

__all__ = ["Option", "take_options", "int_option", "bool_option", "size_option", "time_option",
           "choice_option", "any_option", "dims_option", "require_links",
           "require_collective", "node_root"]


@dataclass(frozen=True)
class Option:
    """One option of a generator: how its value is read, its default, what it means.

    Called as a parser, ``option(algorithm, name, value)``; ``None`` given to an option whose
    default is ``None`` stays ``None`` (not given: the generator decides), so a caller may
    pass every keyword it has.

    Attributes
    ----------
    parse : callable
        ``parse(algorithm, name, value)`` -> the value to pass on (the parsers below).
    default : object
        The value the generator uses when the option is not given (``None``: it decides).
    doc : str
        One line saying what the option does.
    """

    parse: Callable
    default: object = None
    doc: str = ""

    def __call__(self, algorithm, name, value):
        if value is None and self.default is None:
            return None
        return self.parse(algorithm, name, value)


def take_options(algorithm, options, parsers):
    """Parse keyword ``options`` of ``algorithm`` with ``parsers`` (name -> parser or
    :class:`Option`).

    A parser is called as ``parser(algorithm, name, value)`` and returns the value to pass on.
    An option it does not know raises ``UnsupportedError("algorithm X has no option Y")``.
    """
    for name in options:
        if name not in parsers:
            known = f" (it takes: {', '.join(sorted(parsers))})" if parsers else ""
            raise UnsupportedError(f"algorithm {algorithm} has no option {name}{known}")
    return {name: parsers[name](algorithm, name, value) for name, value in options.items()}


def int_option(minimum):
    """A parser for an integer option ``>= minimum`` (digit strings are accepted, as from a CLI)."""
    def parse(algorithm, name, value):
        if isinstance(value, str) and value.strip().lstrip("+").isdigit():
            if len(value.strip()) > MAX_DIGITS:
                raise UnsupportedError(f"algorithm {algorithm}: option {name} has "
                                       f"{len(value.strip())} digits; no count is that long")
            value = int(value)
        try:
            return whole_number(value, f"algorithm {algorithm}: option {name}", minimum)
        except TopocollError as exc:        # every option error is an UnsupportedError
            raise UnsupportedError(str(exc)) from None
    return parse


def fraction_option(algorithm, name, value):
    """A parser for a number strictly between 0 and 1 (strings are accepted, as from a CLI)."""
    try:
        number = float(value) if not isinstance(value, bool) else None
    except (TypeError, ValueError):
        number = None
    if number is None or not 0.0 < number < 1.0:
        raise UnsupportedError(f"algorithm {algorithm}: option {name} must be a number between "
                               f"0 and 1, got {value!r}")
    return number


def bool_option(algorithm, name, value):
    """A parser for a yes/no option (``True``/``False`` or ``"true"``, ``"no"``, ``"1"``, ...)."""
    if isinstance(value, str):
        key = value.strip().lower()
        if key in ("1", "true", "yes", "on"):
            return True
        if key in ("0", "false", "no", "off"):
            return False
    elif isinstance(value, (bool, np.bool_)) or value in (0, 1):
        return bool(value)
    raise UnsupportedError(f"algorithm {algorithm}: option {name} must be true or false, "
                           f"got {value!r}")


def _unit_option(parser):
    def parse(algorithm, name, value):
        try:
            return parser(value, what=f"algorithm {algorithm}: option {name}")
        except TopocollError as exc:
            raise UnsupportedError(str(exc)) from None
    return parse


#: A parser for a size option (``"4MiB"`` or bytes).
size_option = _unit_option(parse_size)
#: A parser for a time option (``"10us"`` or seconds).
time_option = _unit_option(parse_time)


def choice_option(*choices):
    """A parser for an option that is one of ``choices`` (strings)."""
    def parse(algorithm, name, value):
        if value not in choices:
            raise UnsupportedError(f"algorithm {algorithm}: option {name} must be one of "
                                   f"{', '.join(choices)}, got {value!r}")
        return value
    return parse


def any_option(algorithm, name, value):
    """A parser that passes the value on: the generator checks it itself."""
    return value


def dims_option(algorithm, name, value):
    """A parser for dimension sizes: ``"4x6"`` or ``[4, 6]``."""
    try:
        if isinstance(value, str):
            dims = tuple(int(part) for part in value.lower().split("x"))
        else:
            dims = tuple(int(v) for v in value)
    except (TypeError, ValueError):
        raise UnsupportedError(f"algorithm {algorithm}: option {name} must be dimension sizes "
                               f"like 4x6 or [4, 6], got {value!r}") from None
    if not dims or min(dims) < 1:
        raise UnsupportedError(f"algorithm {algorithm}: option {name} must be sizes >= 1, "
                               f"got {value!r}")
    return dims


def require_links(topology, src, dst, algorithm, rule):
    """Raise ``UnsupportedError`` naming ``rule`` and the first missing link ``src -> dst``."""
    src = np.asarray(src, dtype=np.int64).ravel()
    dst = np.asarray(dst, dtype=np.int64).ravel()
    missing = np.flatnonzero(topology.pair_index(src, dst) < 0)
    if missing.size:
        i = int(missing[0])
        raise UnsupportedError(f"{algorithm} needs {rule}; {topology.name} has no link "
                               f"{int(src[i])}->{int(dst[i])}")


def node_root(root, n, algorithm):
    """``root`` (default 0) as a node number of ``n`` nodes, checked for ``algorithm``."""
    root = 0 if root is None else root
    if isinstance(root, bool) or not isinstance(root, (int, np.integer)):
        raise InputTypeError(f"{algorithm}: root must be a node number, got {root!r}")
    if not 0 <= root < n:
        raise UnsupportedError(f"{algorithm}: root must be a node 0..{n - 1}, got {root}")
    return int(root)


def require_collective(collective, makes, algorithm):
    """The :class:`~topocoll.collectives.Collective` if ``algorithm`` makes it, else raise."""
    coll = _collective(collective)
    if coll.name not in makes:
        raise UnsupportedError(f"algorithm {algorithm} makes {', '.join(makes)}; not {coll.name}")
    return coll
