"""The one memory guard: a job estimates the bytes it is about to allocate and asks
:func:`require_memory` first, so that what cannot fit is refused with a clear message instead of
being killed by the kernel halfway.

The limit is 80% of the machine's memory (or of the container's memory limit, if lower), and
no more than the address space ``ulimit -v`` leaves this process, unless the environment
variable ``TOPOCOLL_MEMORY_LIMIT`` gives one (``64GiB``, ``500MB``, a number of bytes, or
``none`` for no limit). A limit below :data:`MIN_LIMIT` (1 MiB: no job's tables fit in less)
is refused as a mistake, like one that is not a size.

>>> import os
>>> os.environ["TOPOCOLL_MEMORY_LIMIT"] = "1GiB"
>>> require_memory(2**20, "a small table")
>>> require_memory(2**31, "the all-pairs distance matrix of ring:23170")
Traceback (most recent call last):
...
topocoll.errors.ResourceLimitError: the all-pairs distance matrix of ring:23170 needs about 2GiB, more than the memory limit of 1GiB (set by TOPOCOLL_MEMORY_LIMIT; TOPOCOLL_MEMORY_LIMIT=4GiB would allow it)
>>> del os.environ["TOPOCOLL_MEMORY_LIMIT"]
"""

import os

from .errors import ResourceLimitError
from .units import format_size, parse_size

__all__ = ["memory_limit", "require_memory", "largest_estimate", "resident_bytes", "ENV",
           "MIN_LIMIT"]

ENV = "TOPOCOLL_MEMORY_LIMIT"
#: The smallest limit ``TOPOCOLL_MEMORY_LIMIT`` may set: 1 MiB.
MIN_LIMIT = 1 << 20
_FRACTION = 0.8


def _machine_bytes():
    total = None
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemTotal:"):
                    total = int(line.split()[1]) * 1024
                    break
    except OSError:
        pass
    if total is None:
        try:
            total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        except (ValueError, OSError, AttributeError):
            return None
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(path) as fh:
                text = fh.read().strip()
        except OSError:
            continue
        if text.isdigit():
            total = min(total, int(text))
    return total


def memory_limit():
    """Bytes a single job may allocate; ``None`` when unlimited (see the module docstring)."""
    return _limit_and_source()[0]


def _limit_and_source():
    text = os.environ.get(ENV, "").strip()
    if text:
        if text.lower() in ("none", "off", "unlimited"):
            return None, None
        try:
            limit = int(parse_size(text, what=ENV))
        except ValueError as exc:
            raise ResourceLimitError(f"{exc} (a size such as 8GiB, or none)") from None
        if limit < MIN_LIMIT:
            raise ResourceLimitError(
                f"{ENV}={text} is below {format_size(MIN_LIMIT)}, too little for any job (a "
                f"size such as 8GiB, or none)")
        return limit, f"set by {ENV}"
    total = _machine_bytes()
    limit = None if total is None else int(total * _FRACTION)
    source = f"{int(_FRACTION * 100)}% of this machine's memory"
    room = _address_space_room()
    if room is not None and (limit is None or room < limit):
        limit, source = room, "what ulimit -v leaves this process"
    return limit, source


def _address_space_room():
    """Bytes this process may still map under ``ulimit -v`` (None when unlimited)."""
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        if soft == resource.RLIM_INFINITY:
            return None
        with open("/proc/self/statm") as fh:
            used = int(fh.read().split()[0]) * resource.getpagesize()
    except (ImportError, OSError, ValueError):
        return None
    return max(0, soft - used)


def resident_bytes():
    """This process's resident memory in bytes (0 where the system does not say)."""
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError, AttributeError):
        return 0


class _Estimates:
    """The largest peak a job of this process has estimated: its resident memory when it
    asked plus what it asked for (what a test measuring peaks compares with)."""

    largest = 0


def largest_estimate():
    """The largest peak (bytes) any :func:`require_memory` call of this process estimated:
    the resident memory its job started from plus the bytes it asked for; 0 before any."""
    return _Estimates.largest


def require_memory(nbytes, what, *, base=None):
    """Raise :class:`~topocoll.errors.ResourceLimitError` if ``what`` (about ``nbytes`` bytes)
    would not fit under :func:`memory_limit`; ``base`` is the resident memory the bytes come
    on top of (default: this process's now), for :func:`largest_estimate`."""
    base = resident_bytes() if base is None else base
    _Estimates.largest = max(_Estimates.largest, int(base + nbytes))
    limit, source = _limit_and_source()
    if limit is None or nbytes <= limit:
        return
    suggestion = format_size(1 << int(nbytes * 1.25).bit_length())
    raise ResourceLimitError(
        f"{what} needs about {format_size(nbytes)}, more than the memory limit of "
        f"{format_size(limit)} ({source}; {ENV}={suggestion} would allow it)")
