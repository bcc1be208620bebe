"""Run many independent tasks on a :class:`~topocoll.batch.pools.Pool` and hear of each as it
ends, failures included: one bad task never stops the others.

:func:`run_tasks` yields ``(key, outcome)`` in the order tasks finish; ``outcome`` is the
task's return value or a :class:`Failure` that says why there is none:

* the task raised (the exception's type and first line);
* its worker died: local processes are restarted and the tasks that were running when one
  died are run again, at most ``retries`` times each (a Dask cluster reschedules them
  itself, and says ``KilledWorker`` when it gives up);
* ``deadline`` (a :func:`time.monotonic` instant) passed before it finished.

At most ``window`` tasks are handed to the pool at a time (default: twice its workers), so
that a worker's death touches only the tasks it could have been running and a deadline drops
little queued work.

>>> from topocoll.batch import open_pool
>>> with open_pool(workers=1) as pool:
...     sorted(run_tasks(abs, [("a", (-3,)), ("b", ("x",))], pool))
[('a', 3), ('b', Failure(reason="TypeError: bad operand type for abs(): 'str'"))]
"""

import concurrent.futures as cf
import time
from dataclasses import dataclass

from ..results import as_progress

__all__ = ["Failure", "run_tasks"]


@dataclass(frozen=True, order=True)
class Failure:
    """Why a task has no result (see the module)."""

    reason: str


def _reason(exc):
    text = str(exc).splitlines()[0][:300] if str(exc) else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _broke(exc):
    return type(exc).__name__ in ("BrokenProcessPool", "BrokenExecutor")


def run_tasks(fn, tasks, pool, *, window=None, deadline=None, retries=2, progress=None):
    """``fn(*args)`` for every ``(key, args)`` of ``tasks`` on ``pool``; yields ``(key,
    result or Failure)`` as each ends (see the module). ``progress(done, total, stage)``
    hears of each end; ``stage`` counts the failures so far."""
    tasks = list(tasks)
    progress = as_progress(progress)
    window = window or 2 * pool.workers
    waiting = list(reversed(tasks))          # popped from the end: submitted in order
    running = {}                             # future -> (key, args)
    deaths = {}                              # key -> times its worker died under it
    done = failed = 0

    def report(outcome):
        nonlocal done, failed
        done += 1
        failed += isinstance(outcome, Failure)
        if progress:
            progress(done, len(tasks), f"{failed} failed" if failed else None)

    while waiting or running:
        if deadline is not None and time.monotonic() >= deadline:
            pool.abandon()
            for key, _ in [*running.values(), *reversed(waiting)]:
                outcome = Failure("not finished within the time limit")
                report(outcome)
                yield key, outcome
            return
        while waiting and len(running) < window:
            key, args = waiting.pop()
            running[pool.submit(fn, *args)] = (key, args)
        timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
        finished, _ = cf.wait(running, timeout=timeout, return_when=cf.FIRST_COMPLETED)
        broken = []
        for future in finished:
            key, args = running.pop(future)
            try:
                outcome = future.result()
            except Exception as exc:
                if _broke(exc) and pool.restartable:
                    broken.append((key, args))
                    continue
                outcome = Failure(_reason(exc))
            report(outcome)
            yield key, outcome
        if broken:
            # a dead local worker breaks the whole pool: every task still in it comes back
            broken += [running.pop(f) for f in list(running)]
            pool.restart()
            for key, args in broken:
                deaths[key] = deaths.get(key, 0) + 1
                if deaths[key] > retries:
                    outcome = Failure(f"its worker died {deaths[key]} times")
                    report(outcome)
                    yield key, outcome
                else:
                    waiting.append((key, args))
