"""The host under an emulated network: what it is, and how busy it was during a measurement.

An emulation measures the network only while the host has cores to spare: when the kernel's
shaping and forwarding, or the ranks themselves, keep every core busy, times grow with the
host's load rather than with the links. :class:`HostMonitor` reads the machine's CPU counters
(``/proc/stat``) around a measurement and reports the idle share, so every result says how
much room there was.

>>> with HostMonitor() as load:
...     pass
>>> 0.0 <= load.idle <= 1.0
True
"""

import os
import platform
import time

__all__ = ["cpu_times", "HostMonitor", "describe_host"]


def cpu_times():
    """``(busy, total)`` seconds of all the machine's CPUs since boot (``/proc/stat``)."""
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    try:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return 0.0, 0.0
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)   # idle + iowait
    total = sum(fields[:8])   # guest time is already inside user time
    return (total - idle) / tick, total / tick


class HostMonitor:
    """CPU use of the whole machine between ``__enter__`` and ``__exit__``.

    Attributes
    ----------
    idle : float
        Share of the machine's CPU time that was idle (0..1).
    busy_cores : float
        Cores busy on average.
    seconds : float
        Wall time watched.
    """

    def __init__(self):
        self.idle = self.busy_cores = self.seconds = None
        self._start = None

    def __enter__(self):
        self._start = (time.monotonic(), *cpu_times())
        return self

    def __exit__(self, *exc):
        t0, busy0, total0 = self._start
        busy1, total1 = cpu_times()
        self.seconds = time.monotonic() - t0
        total = total1 - total0
        # clamped: iowait in /proc/stat may run backwards between two reads
        self.idle = min(1.0, max(0.0, 1.0 - (busy1 - busy0) / total)) if total > 0 else 1.0
        self.busy_cores = max(0.0, busy1 - busy0) / self.seconds if self.seconds > 0 else 0.0
        return False

    def to_dict(self):
        return {"idle": self.idle, "busy_cores": self.busy_cores, "seconds": self.seconds}


def describe_host():
    """The machine and kernel: ``{"cpus", "kernel", "processor", "machine"}``."""
    model = None
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {"cpus": os.cpu_count() or 1, "kernel": platform.release(),
            "processor": model or platform.processor() or platform.machine(),
            "machine": platform.machine()}
