"""Checks of the inputs of the TEN ILP and its list scheduling (:mod:`.ilp`): links, pre- and
postconditions, limits, and a partial schedule to complete.

Every check raises one of :class:`~topocoll.errors.SpecError`,
:class:`~topocoll.errors.InputTypeError`, :class:`~topocoll.errors.TopologyError` or
:class:`~topocoll.errors.InvalidScheduleError` naming the offending input.

>>> import numpy as np
>>> n, src, dst, steps, pre, post, limit, window = validate_problem(
...     2, [0, 1], [1, 0], [1, 1], np.eye(2, dtype=bool), np.ones((2, 2), bool), 5, None)
>>> n, src.tolist(), limit, window
(2, [0, 1], 5.0, None)
>>> count("trials", 3, 1)
3
"""

import numpy as np

from ...units import real_number, whole_number
from ...errors import InputTypeError, InvalidScheduleError, SpecError, TopologyError
from .ilp_bounds import INF

__all__ = ["validate_problem", "count", "optional_count", "check_partial"]


def _int_array(name, value):
    arr = np.asarray(value)
    if arr.ndim != 1:
        raise SpecError(f"{name} must be one-dimensional, got shape {arr.shape}")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise InputTypeError(f"{name} must hold integers, got dtype {arr.dtype}")
    return arr.astype(np.int64)


def _bool_matrix(name, value, num_nodes):
    arr = np.asarray(value)
    if arr.dtype != np.bool_:
        raise InputTypeError(f"{name} must be a bool array, got dtype {arr.dtype}")
    if arr.ndim != 2 or arr.shape[1] != num_nodes:
        raise SpecError(f"{name} must have shape (num_chunks, {num_nodes}), got {arr.shape}")
    return arr


def validate_problem(num_nodes, link_src, link_dst, link_steps, pre, post, time_limit, window):
    """The TEN problem and its limits, checked and normalized: ``(num_nodes, src, dst, steps,
    pre, post, time_limit, window)`` with int64 link arrays, ``time_limit`` a float (or None)
    and ``window`` an int (or None)."""
    num_nodes = count("num_nodes", num_nodes, 1)
    src = _int_array("link_src", link_src)
    dst = _int_array("link_dst", link_dst)
    steps = _int_array("link_steps", link_steps)
    if not src.size == dst.size == steps.size:
        raise SpecError(f"link_src, link_dst and link_steps must have one length, got "
                        f"{src.size}, {dst.size}, {steps.size}")
    for name, arr in (("link_src", src), ("link_dst", dst)):
        bad = np.flatnonzero((arr < 0) | (arr >= num_nodes))
        if bad.size:
            raise TopologyError(f"{name}[{bad[0]}] = {arr[bad[0]]} is not a node in "
                                f"0..{num_nodes - 1}")
    loops = np.flatnonzero(src == dst)
    if loops.size:
        raise TopologyError(f"link {loops[0]} is a self-loop at node {src[loops[0]]}")
    short = np.flatnonzero(steps < 1)
    if short.size:
        raise TopologyError(f"link_steps must be >= 1, link {short[0]} has {steps[short[0]]}")
    pre = _bool_matrix("pre", pre, num_nodes)
    post = _bool_matrix("post", post, num_nodes)
    if pre.shape != post.shape:
        raise SpecError(f"pre and post must have one shape, got {pre.shape} and {post.shape}")
    orphan = np.flatnonzero(~pre.any(axis=1))
    if orphan.size:
        raise SpecError(f"every chunk must be held by some node at slot 0; chunk {orphan[0]} "
                        f"is held by none")
    if time_limit is not None:
        time_limit = real_number(time_limit, "time_limit (seconds)", above=0)
    if window is not None:
        window = whole_number(window, "window (slots)")
    return num_nodes, src, dst, steps, pre, post, time_limit, window


def optional_count(name, value, least):
    """``value`` as an int >= ``least``, or None."""
    return None if value is None else count(name, value, least)


def count(name, value, least):
    """``value`` as an int >= ``least``: :func:`topocoll.units.whole_number`, naming ``name``."""
    return whole_number(value, name, least)


def check_partial(events, pre, src, dst, steps):
    """A partial schedule (structured array with fields ``chunk``, ``link``, ``start``) as a
    list of ``(chunk, link, start)`` tuples in start order, after checking it is valid so far
    (every sender holds its chunk, no link carries two chunks at once)."""
    arr = np.asarray(events)
    if arr.dtype.names is None or not {"chunk", "link", "start"} <= set(arr.dtype.names):
        raise InputTypeError("events must be a structured array with fields chunk, link, start")
    out = sorted(zip(arr["start"].tolist(), arr["link"].tolist(), arr["chunk"].tolist()))
    have = np.where(pre, 0, INF)
    busy = {}
    for s, l, c in out:
        if not (0 <= c < pre.shape[0] and 0 <= l < src.size and s >= 0):
            raise InvalidScheduleError(f"event (chunk {c}, link {l}, start {s}) is out of range")
        if have[c, src[l]] > s:
            raise InvalidScheduleError(f"event (chunk {c}, link {l}, start {s}): node "
                                       f"{src[l]} does not hold chunk {c} at slot {s}")
        if busy.get(l, -INF) > s:
            raise InvalidScheduleError(f"event (chunk {c}, link {l}, start {s}): link {l} is "
                                       f"busy until slot {busy[l]}")
        busy[l] = s + int(steps[l])
        have[c, dst[l]] = min(have[c, dst[l]], s + int(steps[l]))
    return [(c, l, s) for s, l, c in out]
