"""Shared checks and the link-array builder of the family generators and composite specs."""

import numpy as np

from ...errors import InputTypeError, SpecError
from ...units import parse_bandwidth, parse_time, whole_number
from ..model import Topology

#: Generators refuse topologies larger than this many nodes ...
MAX_NODES = 1 << 21
#: ... or this many directed links (each link costs about 32 bytes in four numpy columns).
MAX_LINKS = 1 << 24


def as_int(value, what):
    """``value`` as a Python int; bools, floats and strings are refused with ``InputTypeError``
    (:func:`~topocoll.units.whole_number`; the range is the family's to check, as a
    ``SpecError``)."""
    return whole_number(value, what, None)


def as_int_tuple(values, what):
    """A non-empty sequence of integers (a single integer counts as a sequence of one)."""
    if isinstance(values, (str, bytes)):
        raise InputTypeError(f"{what} must be a sequence of integers, got {values!r}")
    try:
        items = [values] if np.ndim(values) == 0 else list(values)
    except TypeError:
        raise InputTypeError(f"{what} must be a sequence of integers, got {values!r}") from None
    if not items:
        raise SpecError(f"{what} must not be empty")
    return tuple(as_int(v, what) for v in items)


def at_least(value, low, rule):
    """Raise ``SpecError(f"{rule}, got {value}")`` unless ``value >= low``."""
    if value < low:
        raise SpecError(f"{rule}, got {value}")
    return value


def check_size(name, nodes, links):
    """Refuse sizes that would not fit in memory, before allocating anything."""
    if nodes > MAX_NODES:
        raise SpecError(f"{name} would have {nodes} nodes; generators stop at {MAX_NODES} nodes")
    if links > MAX_LINKS:
        raise SpecError(f"{name} would have {links} links; generators stop at {MAX_LINKS} links")


def rows_to_links(dst):
    """Links from an ``(N, S)`` array of out-neighbours (``-1`` marks an unused slot).

    The links come out sorted by source, in slot order within a source.
    """
    dst = np.asarray(dst, dtype=np.int64)
    n, slots = dst.shape
    src = np.repeat(np.arange(n, dtype=np.int64), slots)
    dst = dst.ravel()
    keep = dst >= 0
    if not np.all(keep):
        src, dst = src[keep], dst[keep]
    return src, dst


def make_topology(name, num_nodes, src, dst, bandwidth, latency, meta, *, drop_self_loops=False,
                  switches=()):
    """The :class:`Topology` of a family; unit strings are accepted for bandwidth and latency."""
    if isinstance(bandwidth, str):
        bandwidth = parse_bandwidth(bandwidth)
    if isinstance(latency, str):
        latency = parse_time(latency, what="latency")
    return Topology(num_nodes, src, dst, bandwidth, latency, name=name, meta=meta,
                    drop_self_loops=drop_self_loops, switches=switches)


def mixed_radix_digits(num_nodes, dims):
    """Digits of ``0..N-1`` in the mixed radix ``dims`` (first digit most significant), and the
    place value (stride) of each digit."""
    strides = np.ones(len(dims), dtype=np.int64)
    for i in range(len(dims) - 2, -1, -1):
        strides[i] = strides[i + 1] * dims[i + 1]
    ids = np.arange(num_nodes, dtype=np.int64)
    digits = [(ids // strides[i]) % dims[i] for i in range(len(dims))]
    return ids, digits, strides
