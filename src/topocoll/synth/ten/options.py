"""The options of TEN synthesis: one table that :func:`~topocoll.synth.ten.synthesize`, the
registry's ``ten`` generator (``generate(..., "ten", **options)``, ``topocoll schedule -a ten
-O KEY=VALUE``) and the flags of ``topocoll synth`` all read.

Each option has its parser (:mod:`topocoll.synth.options`), its default and one line of doc;
:func:`ten_options` checks a call's keywords against it, so a mistake raises the same error
from every door.

>>> ten_options(seed="3", chunks=2)
{'seed': 3, 'chunks': 2}
>>> ten_options(seed=-1)
Traceback (most recent call last):
...
topocoll.errors.UnsupportedError: algorithm ten: option seed must be >= 0, got -1
>>> ten_options(window=4)
Traceback (most recent call last):
...
topocoll.errors.UnsupportedError: window applies to method='ilp' only
"""

from ... import defaults
from ...errors import TopologyError, UnsupportedError
from ...topology.unwind import parse_unwind_degree
from ..options import (Option, any_option, bool_option, choice_option, int_option, size_option,
                       take_options, time_option)
from .problem import METHODS

__all__ = ["TEN_OPTIONS", "ILP_ONLY", "GREEDY_ONLY", "ten_options"]


def _unwind_degree_option(algorithm, name, value):
    """The ``unwind_degree`` option: an integer ``>= 1`` as every count option, or ``max`` /
    a per-level mapping (:func:`~topocoll.topology.unwind.parse_unwind_degree`)."""
    if isinstance(value, (dict, list, tuple)) or (
            isinstance(value, str) and (":" in value or value.strip().lower() == "max")):
        try:
            return parse_unwind_degree(value)
        except TopologyError as err:
            raise UnsupportedError(f"algorithm {algorithm}: option {name}: {err}") from None
    return int_option(1)(algorithm, name, value)


#: Every option of TEN synthesis: name -> :class:`~topocoll.synth.options.Option`.
TEN_OPTIONS = {
    "method": Option(choice_option(*METHODS), "greedy",
                     "greedy link-chunk matching, or the ILP (small networks)"),
    "chunks": Option(int_option(1), 1, "chunks per shard"),
    "size": Option(size_option, defaults.SYNTHESIS_SIZE,
                   "buffer size M; sets the chunk times and so the discretization"),
    "seed": Option(int_option(0), 0,
                   "seed of the greedy's tie-breaking (same seed, same schedule)"),
    "restarts": Option(int_option(1), None,
                       "greedy: best of at most this many seeded runs (default: 1 on uniform "
                       "links, up to 16 on mixed link speeds)"),
    "workers": Option(int_option(1), None,
                      "processes for the restarts (default: one per core; one when restarts "
                      "is automatic)"),
    "unwind_degree": Option(_unwind_degree_option, None,
                            "switch unwinding degree k, max, or per switch level as "
                            "LEVEL:K pairs such as 0:max,1:1 (default: every endpoint to every "
                            "other)"),
    "fail_links": Option(any_option, None,
                         "failed cables to remove first, e.g. '0-1,2-3' ('0>1': one direction)"),
    "fail_nodes": Option(any_option, None,
                         "failed nodes to remove first, e.g. '5,7' (survivors are renumbered)"),
    "time_step": Option(time_option, None,
                        "length of one TEN time slot, e.g. 1us (default: automatic)"),
    "time_limit": Option(time_option, None,
                         "ILP: wall-clock limit for the whole synthesis (default: none)"),
    "node_limit": Option(int_option(0), None,
                         "ILP: branch-and-bound nodes per model (a limit independent of speed)"),
    "max_solves": Option(int_option(1), None, "ILP: models (horizons or windows) at most"),
    "window": Option(int_option(1), None, "ILP: time-clustering window (slots)"),
    "repair": Option(bool_option, None,
                     "greedy: repair the last slots with small ILPs when above the chunk bound "
                     "(default: on mixed link speeds)"),
    "symmetric": Option(bool_option, None,
                        "greedy all-gather on a network with a translation symmetry: first try "
                        "one node's schedule translated to every node (default: on mixed link "
                        "speeds)"),
}

#: Options of one method only: given to the other, they are refused, not silently ignored.
ILP_ONLY = ("time_limit", "node_limit", "max_solves", "window")
GREEDY_ONLY = ("repair", "symmetric")


def ten_options(**given):
    """The keywords ``given`` checked and parsed through :data:`TEN_OPTIONS`.

    An unknown name, a bad value (``UnsupportedError`` naming the option, whatever the kind of
    mistake) or an option of the other method raises; ``None`` for an option whose default is
    ``None`` stays ``None``.
    """
    parsed = take_options("ten", given, TEN_OPTIONS)
    method = parsed.get("method", TEN_OPTIONS["method"].default)
    other = GREEDY_ONLY if method == "ilp" else ILP_ONLY
    misplaced = [name for name in other if parsed.get(name) is not None]
    if misplaced:
        verb = "applies" if len(misplaced) == 1 else "apply"
        raise UnsupportedError(f"{', '.join(misplaced)} {verb} to method="
                               f"'{'greedy' if method == 'ilp' else 'ilp'}' only")
    return parsed

