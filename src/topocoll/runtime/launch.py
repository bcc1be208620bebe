"""Process groups for the gossip runtime: checks, a one-process group, local multi-process runs.

:func:`run_local` starts ``world_size`` processes on this machine, joins them in one gloo
process group (a file store in a temporary folder: no port to pick, no port to race for), runs
``fn(rank, world_size, *args)`` in each and returns what each returned, by rank. It is how the
tests, the benchmark and the guide run several ranks on one machine. :func:`single_process_group`
is a world of one, for examples and notebooks.

>>> import torch.distributed as dist
>>> with single_process_group():
...     dist.get_world_size()
1
>>> dist.is_initialized()
False
"""

import contextlib
import datetime
import queue as _queue
import shutil
import tempfile
import time
import traceback

from ..errors import InputTypeError, ProcessGroupError

__all__ = ["group_info", "single_process_group", "run_local"]


def group_info(group=None):
    """``(rank, world_size)`` of this process in ``group`` (default: the world).

    Raises :class:`~topocoll.errors.ProcessGroupError` when torch.distributed has no process
    group, or this process is not a member of ``group``.

    >>> group_info()  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    topocoll.errors.ProcessGroupError: no torch.distributed process group: ...
    """
    import torch.distributed as dist

    if not dist.is_available() or not dist.is_initialized():
        raise ProcessGroupError("no torch.distributed process group: call "
                                "torch.distributed.init_process_group first")
    rank = dist.get_rank(group)
    if rank < 0:
        raise ProcessGroupError("this process is not a member of the given process group")
    return rank, dist.get_world_size(group)


@contextlib.contextmanager
def single_process_group(backend="gloo"):
    """A world-size-1 process group for the ``with`` block (destroyed on exit).

    Raises :class:`~topocoll.errors.ProcessGroupError` if a process group already exists.
    """
    import torch.distributed as dist

    if dist.is_initialized():
        raise ProcessGroupError("a torch.distributed process group already exists")
    folder = tempfile.mkdtemp(prefix="topocoll-pg-")
    try:
        dist.init_process_group(backend, init_method=f"file://{folder}/store", rank=0,
                                world_size=1)
        try:
            yield dist.group.WORLD
        finally:
            dist.destroy_process_group()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _worker(rank, world_size, fn, args, init_method, backend, timeout, num_threads, results):
    import torch
    import torch.distributed as dist

    try:
        if num_threads is not None:
            torch.set_num_threads(num_threads)
        dist.init_process_group(backend, init_method=init_method, rank=rank,
                                world_size=world_size,
                                timeout=datetime.timedelta(seconds=timeout))
        try:
            value = fn(rank, world_size, *args)
        finally:
            dist.destroy_process_group()
    except BaseException:  # every failure goes back to the parent, which raises it
        results.put((rank, False, traceback.format_exc()))
    else:
        results.put((rank, True, value))


def run_local(fn, world_size, args=(), *, start_method="spawn", backend="gloo", timeout=300.0,
              num_threads=1):
    """Run ``fn(rank, world_size, *args)`` in ``world_size`` local processes in one group.

    Each process joins a ``backend`` process group of ``world_size`` ranks before ``fn`` runs
    and leaves it after. ``fn`` and its arguments and results must pickle (with ``"spawn"``,
    ``fn`` must be importable: a module-level function).

    Parameters
    ----------
    fn : callable
        ``fn(rank, world_size, *args)``.
    world_size : int
        Number of processes, >= 1.
    args : tuple
        Extra arguments of ``fn``.
    start_method : {"spawn", "fork", "forkserver"}
        How processes start. ``"fork"`` skips re-importing torch in every child (about a second
        or more each) and is what the tests use; ``"spawn"`` is the safe default.
    backend : str
        torch.distributed backend.
    timeout : float
        Seconds the whole run may take; then the processes are killed.
    num_threads : int or None
        torch intra-op threads per process (``torch.set_num_threads``); 1 by default, as
        torchrun does: processes that share cores and each spin a thread pool slow every
        elementwise op down by orders of magnitude. None leaves torch's default.

    Returns
    -------
    list
        ``fn``'s return value of each rank, by rank.

    Raises
    ------
    RuntimeError
        A rank raised (the message holds its traceback), died, or the run timed out.
    """
    import torch.multiprocessing as mp

    if isinstance(world_size, bool) or not isinstance(world_size, int) or world_size < 1:
        raise InputTypeError(f"world_size must be a positive integer, got {world_size!r}")
    if num_threads is not None and (isinstance(num_threads, bool)
                                    or not isinstance(num_threads, int) or num_threads < 1):
        raise InputTypeError(f"num_threads must be a positive integer or None, got {num_threads!r}")
    if not callable(fn):
        raise InputTypeError(f"fn must be callable, got {type(fn).__name__}")
    ctx = mp.get_context(start_method)
    folder = tempfile.mkdtemp(prefix="topocoll-pg-")
    results = ctx.Queue()
    procs = [ctx.Process(target=_worker, daemon=True,
                         args=(r, world_size, fn, tuple(args), f"file://{folder}/store", backend,
                               timeout, num_threads, results))
             for r in range(world_size)]
    values, failure = {}, None
    deadline = time.monotonic() + timeout
    try:
        for p in procs:
            p.start()
        while len(values) < world_size and failure is None:
            try:
                rank, ok, value = results.get(timeout=0.05)
            except _queue.Empty:
                if time.monotonic() > deadline:
                    failure = f"run_local timed out after {timeout:g} s"
                else:
                    dead = [r for r, p in enumerate(procs)
                            if r not in values and p.exitcode not in (None, 0)]
                    if dead:
                        # A last look: the rank may have reported just before it exited.
                        time.sleep(0.2)
                        if results.empty():
                            failure = (f"rank {dead[0]} died with exit code "
                                       f"{procs[dead[0]].exitcode}")
                continue
            if ok:
                values[rank] = value
            else:
                failure = f"rank {rank} raised:\n{value}"
    finally:
        for p in procs:
            p.join(timeout=5.0 if failure is None else 0.5)
        for p in procs:
            if p.is_alive():
                p.kill()
                p.join()
        results.close()
        shutil.rmtree(folder, ignore_errors=True)
    if failure is not None:
        raise RuntimeError(failure)
    return [values[r] for r in range(world_size)]
