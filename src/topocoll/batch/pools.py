"""Where batch work runs: this process, local processes, or the workers of a Dask cluster.

:func:`open_pool` gives a :class:`Pool` with one ``submit(fn, *args)`` that returns a
:class:`concurrent.futures.Future` whatever runs it:

* ``workers=1``: every task runs here, at once, in the order submitted (nothing to start; a
  traceback points into your code);
* ``workers=k``: ``k`` local processes (forked where the system can, as the rest of topocoll's
  process pools are: no re-import, and a script read from stdin works too); nothing to
  install or start;
* ``scheduler="tcp://HOST:8786"``: the workers of a running ``dask.distributed`` cluster,
  through its ``Client``'s concurrent.futures executor (no scheduler of our own). Start one
  with ``dask scheduler`` on one machine and ``dask worker tcp://HOST:8786`` on each of the
  others; every worker needs topocoll installed (``pip install 'topocoll[dask]'``).

Tasks must be module-level functions with picklable arguments and results.

>>> with open_pool(workers=1) as pool:
...     pool.submit(pow, 2, 10).result(), pool.description
(1024, 'this process')
"""

import concurrent.futures as cf
import multiprocessing as mp
import os
import re
import signal

from ..errors import ClusterError, InputTypeError, UnsupportedError

__all__ = ["Pool", "open_pool", "local_cores", "check_address", "check_workers"]

#: Seconds a Dask scheduler has to answer (Client's own default).
CONNECT_TIMEOUT = 30.0
#: The least a forked worker process is counted as holding (a Python with numpy imported).
_WORKER_BYTES = 64 << 20

#: Schemes of a scheduler a Client reaches with Dask's settings alone (tls also needs
#: certificates there); ucx needs a library of its own, inproc is another process's memory.
SCHEMES = ("tcp", "tls", "ws", "wss")
_ADDRESS = re.compile(r"(?P<scheme>[a-z]+)://(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+)"
                      r":(?P<port>[0-9]{1,5})")


def local_cores():
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:          # not on Linux
        return os.cpu_count() or 1


class _Here(cf.Executor):
    """Runs each task when it is submitted, in this process."""

    def submit(self, fn, /, *args, **kwargs):
        future = cf.Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except Exception as exc:
            future.set_exception(exc)
        return future


class Pool:
    """One place to run tasks (see the module). Attributes: ``kind`` (``"here"``,
    ``"processes"`` or ``"dask"``), ``workers`` (tasks it runs at once) and ``description``
    (in words, for a progress line)."""

    def __init__(self, kind, workers, description, executor, client=None):
        self.kind, self.workers, self.description = kind, workers, description
        self._executor, self._client = executor, client

    def __repr__(self):
        return f"Pool({self.description})"

    def submit(self, fn, *args):
        """Run ``fn(*args)`` somewhere; a :class:`concurrent.futures.Future`."""
        return self._executor.submit(fn, *args)

    @property
    def restartable(self):
        """Whether :meth:`restart` can replace workers that died (local processes)."""
        return self.kind == "processes"

    def restart(self):
        """New local processes after one died (a dead one breaks the whole pool)."""
        if self.kind != "processes":
            raise UnsupportedError(f"a pool of {self.description} does not restart")
        self.abandon()
        self._executor = _processes(self.workers)

    def abandon(self):
        """Stop now: unstarted tasks are dropped and local processes still working killed."""
        if self.kind == "processes":
            # the pool's own process table: shutdown() alone would wait for running tasks
            for process in list(getattr(self._executor, "_processes", {}).values()):
                try:
                    os.kill(process.pid, signal.SIGKILL)
                except (ProcessLookupError, AttributeError):
                    pass
        self._shutdown(wait=False)

    def close(self):
        self._shutdown(wait=True)
        if self._client is not None:
            self._client.close()

    def _shutdown(self, wait):
        if self.kind == "dask":     # its executor cancels what is pending when not waiting
            self._executor.shutdown(wait=wait)
        else:
            self._executor.shutdown(wait=wait, cancel_futures=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if exc[0] is not None:
            self.abandon()
        self.close()


def _processes(workers):
    context = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")
    return cf.ProcessPoolExecutor(max_workers=workers, mp_context=context)


def check_address(address, what="scheduler"):
    """Refuse (:class:`~topocoll.errors.InputTypeError`) a Dask scheduler address that is not
    ``SCHEME://HOST:PORT`` with a scheme of :data:`SCHEMES` and a port 1..65535, and
    (:class:`~topocoll.errors.ClusterError`) tls:// without Dask's TLS settings; nothing is
    contacted. Dask itself would raise a bare ValueError or TypeError for most of these, and
    the half-made Client then spends a minute closing as the process exits."""
    match = _ADDRESS.fullmatch(address) if isinstance(address, str) else None
    if match is None or match["scheme"] not in SCHEMES or not 0 < int(match["port"]) < 65536 \
            or len(match["host"]) > 253:    # the longest name DNS has
        shown = repr(address) if len(str(address)) <= 60 else repr(str(address)[:60]) + "..."
        raise InputTypeError(f"{what} must be an address such as tcp://HOST:8786 (scheme "
                             f"{', '.join(SCHEMES)}; port 1..65535), got {shown}")
    if match["scheme"] == "tls":
        try:
            from distributed.security import Security
        except ImportError:
            return      # open_pool says what to install
        if Security().get_connection_args("client").get("ssl_context") is None:
            raise ClusterError(f"{what} {address}: tls:// needs Dask's TLS settings "
                               "(distributed.comm.tls in its configuration); none are set here")


def _dask(address, timeout):
    check_address(address)
    try:
        from distributed import Client
    except ImportError:
        raise UnsupportedError("--scheduler needs dask.distributed on this machine and on "
                               "every worker: pip install 'topocoll[dask]'") from None
    try:
        client = Client(address, timeout=timeout, set_as_default=False)
    except (OSError, TimeoutError) as exc:
        raise ClusterError(f"no Dask scheduler answered at {address} within {timeout:g} s "
                           f"({str(exc).splitlines()[0][:120] if str(exc) else 'timed out'}); "
                           "start one with 'dask scheduler' and workers with 'dask worker "
                           f"{address}'") from None
    threads = sum(w.get("nthreads", 1) for w in client.scheduler_info()["workers"].values())
    if threads == 0:
        client.close()
        raise ClusterError(f"the Dask scheduler at {address} has no workers: start some with "
                           f"'dask worker {address}'")
    return Pool("dask", threads, f"the Dask cluster at {address} ({threads} worker threads)",
                client.get_executor(pure=False), client)


def open_pool(workers=None, scheduler=None, *, timeout=CONNECT_TIMEOUT):
    """A :class:`Pool`: ``workers`` local processes (default: one per core; 1: this process),
    or the Dask cluster whose scheduler is at ``scheduler`` (``tcp://HOST:PORT``; then
    ``workers`` must be None), reached within ``timeout`` seconds."""
    if scheduler is not None:
        if workers is not None:
            raise InputTypeError("give workers (local processes) or scheduler (a Dask "
                                 "cluster), not both")
        return _dask(scheduler, timeout)
    if workers is None:
        workers = local_cores()
    check_workers(workers)
    if workers == 1:
        return Pool("here", 1, "this process", _Here())
    return Pool("processes", workers, f"{workers} local processes", _processes(workers))


def check_workers(workers):
    """Refuse ``workers`` that is no positive integer (:class:`~topocoll.errors.InputTypeError`)
    or more local processes than the memory limit holds
    (:class:`~topocoll.errors.ResourceLimitError`), before any is started: the pool forks all
    of them at its first task, and each soon holds about what this process holds (Python's
    reference counts copy the pages they share)."""
    from ..limits import require_memory, resident_bytes

    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise InputTypeError(f"workers must be a positive integer, got {workers!r}")
    if workers > 1:
        require_memory(workers * max(resident_bytes(), _WORKER_BYTES),
                       f"{workers} local worker processes")
