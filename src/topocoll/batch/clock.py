"""A time limit on one piece of a task (a sweep's cell), enforced inside the worker.

:func:`time_limit` raises :class:`TimeUp` in the code it wraps once ``seconds`` have passed:

* by a ``SIGALRM`` timer where the code runs in its process's main thread (this process, and
  the local processes of :func:`~topocoll.batch.open_pool`): Python code is interrupted at
  once, a long call into a compiled library when it returns;
* everywhere (a Dask worker runs tasks in threads, where no signal reaches them) by the
  callable it gives, called as a progress callback by the wrapped work: the limit is then
  checked as often as the work reports progress.

:class:`TimeUp` derives from :class:`BaseException`, not :class:`Exception`, so that no
``except Exception`` on the way out of the library turns it into another failure.

>>> import time
>>> try:
...     with time_limit(0.05) as check:
...         while True:
...             check()
... except TimeUp as exc:
...     print(exc)
not finished within its time limit of 0.05 s
"""

import signal
import threading
import time
from contextlib import contextmanager

__all__ = ["TimeUp", "time_limit"]


class TimeUp(BaseException):
    """The time limit of :func:`time_limit` passed (see the module)."""


def _nothing(*_args, **_kwargs):
    return None


@contextmanager
def time_limit(seconds):
    """Raise :class:`TimeUp` in the ``with`` block after ``seconds`` (None: no limit); gives
    a ``check(*ignored)`` that raises it once the time is up (a progress callback)."""
    if seconds is None:
        yield _nothing
        return
    deadline = time.monotonic() + seconds
    message = f"not finished within its time limit of {seconds:g} s"

    def check(*_args, **_kwargs):
        if time.monotonic() >= deadline:
            raise TimeUp(message)

    alarm = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    if not alarm:
        yield check
        return

    def ring(_signum, _frame):
        raise TimeUp(message)

    before = signal.signal(signal.SIGALRM, ring)
    try:
        signal.setitimer(signal.ITIMER_REAL, max(seconds, 1e-6))
        yield check
    finally:
        while True:
            try:
                signal.setitimer(signal.ITIMER_REAL, 0)
                signal.signal(signal.SIGALRM, before)
                break
            except TimeUp:      # rang on the way out, after the block had ended
                continue
