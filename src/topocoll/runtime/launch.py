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
import os
import queue as _queue
import re
import secrets
import shutil
import tempfile
import time
import traceback

from ..errors import InputTypeError, ProcessGroupError, TorchUnavailableError
from ..units import whole_number
from .shm import remove_run_files, set_run_tag

__all__ = ["group_info", "single_process_group", "run_local", "report_iteration",
           "require_torch", "missing_ranks", "gather_integers"]


def require_torch():
    """Import torch or raise :class:`~topocoll.errors.TorchUnavailableError` with the line
    that installs it (``make run`` installs topocoll without it)."""
    try:
        import torch  # noqa: F401
        import torch.distributed  # noqa: F401
    except ImportError:
        raise TorchUnavailableError(
            "running schedules needs PyTorch, which is not installed; pip install "
            "'topocoll[torch]' (torch==2.13.0, a CPU build)") from None

#: Seconds run_local keeps listening after the first failure, so that the rank that failed
#: first (not a neighbour that lost its connection to it) is the one named.
_GRACE = 2.0
#: Words of a traceback that mean "a peer went away", the consequence of a failure elsewhere.
_PEER_LOST = ("Connection reset by peer", "Connection closed by peer", "Broken pipe",
              "DistNetworkError", "Socket closed", "Timed out waiting")

# Set in each process that run_local starts: (shared array, this rank). The array holds, per
# rank, the iteration whose exchange it entered last and the one it finished last. It is
# process-local by construction (a child of run_local) and only report_iteration writes it.
_progress = None


def report_iteration(iteration, *, entering=False):
    """Record that this rank entered (``entering=True``) or finished the exchange of iteration
    ``iteration``; a no-op outside :func:`run_local`.

    :func:`~topocoll.runtime.neighbor_allreduce` and
    :class:`~topocoll.runtime.DecentralizedDataParallel` call it, so that when a run times out
    :func:`run_local` can say which ranks did not finish, which of them wait inside an exchange
    and which hang outside one (in their own code).
    """
    if _progress is not None:
        array, rank = _progress
        array[2 * rank + (0 if entering else 1)] = int(iteration)


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


def missing_ranks(work, timeout):
    """Wait for a collective ``work`` (within ``timeout`` seconds): None when every rank joined
    it, else what to add to the error that says who did not (``" within T s (why)"``)."""
    try:
        done = work.wait() if timeout is None else work.wait(datetime.timedelta(seconds=timeout))
    except RuntimeError as exc:
        done = str(exc).splitlines()[0][:120] if str(exc) else False
    if done is True:
        return None
    return ("" if timeout is None else f" within {timeout:g} s") + \
        (f" ({done})" if isinstance(done, str) else "")



def gather_integers(values, group, timeout, failure):
    """Every rank's list ``values`` of integers (as many on every rank), by an all_gather
    bounded by ``timeout`` seconds; a rank that does not join raises
    :class:`~topocoll.errors.ProcessGroupError` with ``failure(missing)`` (``missing`` as
    :func:`missing_ranks` says it)."""
    import torch
    import torch.distributed as dist

    mine = torch.tensor(values, dtype=torch.int64)
    rows = [torch.empty_like(mine) for _ in range(dist.get_world_size(group))]
    missing = missing_ranks(dist.all_gather(rows, mine, group=group, async_op=True), timeout)
    if missing is not None:
        raise ProcessGroupError(failure(missing)) from None
    return [row.tolist() for row in rows]


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


def _worker(rank, world_size, fn, args, *, init_method, backend, timeout, num_threads, results,
            progress, tag=None, endpoint=None):
    global _progress
    _progress = (progress, rank)
    set_run_tag(tag)
    if endpoint is not None:
        try:   # first: every socket and thread made from here on lives in the node's namespace
            endpoint.enter()
        except BaseException:
            results.put((rank, False, traceback.format_exc()))
            return
    import torch
    import torch.distributed as dist

    # what torchrun sets too: how many ranks share this machine (the runtime's default slice
    # size depends on it)
    os.environ["LOCAL_WORLD_SIZE"] = str(world_size)
    os.environ["LOCAL_RANK"] = str(rank)
    try:
        if num_threads is not None:
            torch.set_num_threads(num_threads)
        dist.init_process_group(backend, init_method=init_method, rank=rank,
                                world_size=world_size,
                                timeout=datetime.timedelta(seconds=timeout))
        if world_size > 1:
            # every rank has finished connecting before any runs fn: a rank that fails at once
            # and leaves would otherwise break a peer's connection set-up ("Connection closed
            # by peer") and be reported second, behind the peer it took down
            dist.barrier()
        try:
            value = fn(rank, world_size, *args)
        except BaseException:
            # reported before leaving the group: leaving may wait for a peer that is stopped
            # or hung, and the parent takes the ranks down once it hears of a failure
            results.put((rank, False, traceback.format_exc()))
            dist.destroy_process_group()
            return
        dist.destroy_process_group()
    except BaseException:  # every failure goes back to the parent, which raises it
        results.put((rank, False, traceback.format_exc()))
    else:
        results.put((rank, True, value))


def run_local(fn, world_size, args=(), *, start_method="spawn", backend="gloo", timeout=300.0,
              num_threads=1, network=None):
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
    network : EmulatedNetwork, optional
        A built :class:`topocoll.emulate.EmulatedNetwork` of ``world_size`` ranks: rank ``r``
        runs inside the namespace of the network's ``r``-th endpoint and its messages cross
        the emulated links (gloo binds to the node's interface; the rendezvous is a file).

    Returns
    -------
    list
        ``fn``'s return value of each rank, by rank.

    Raises
    ------
    ProcessGroupError
        A rank raised or died (the message names it first, then the ranks that failed because
        they lost it, with tracebacks), or the run timed out (the message names the ranks that
        did not finish and the last iteration each reported, see :func:`report_iteration`).
        A rank whose process is stopped (SIGSTOP, a debugger) is named first, with its process
        id, and on a ``network`` the links that are down come first of all. Every process is
        gone when it is raised (a stopped one is killed too), and with it every
        shared-memory file of the run.
    InputTypeError
        Arguments of the wrong kind, or ``fn`` or ``args`` cannot be pickled for a ``"spawn"``
        or ``"forkserver"`` start.
    UnsupportedError
        ``world_size`` or ``num_threads`` below 1.
    """
    require_torch()
    import torch.multiprocessing as mp

    _check_run_args(fn, world_size, args, start_method, num_threads)
    endpoints = _endpoints(network, world_size)
    ctx = mp.get_context(start_method)
    folder = tempfile.mkdtemp(prefix="topocoll-pg-")
    results = ctx.Queue()
    progress = ctx.Array("q", [-1] * (2 * world_size), lock=False)
    setup = dict(init_method=f"file://{folder}/store", backend=backend, timeout=timeout,
                 num_threads=num_threads, results=results, progress=progress,
                 tag=f"run{secrets.token_hex(6)}")
    procs = [ctx.Process(target=_worker, daemon=True, args=(r, world_size, fn, tuple(args)),
                         kwargs=dict(setup, endpoint=endpoints[r]))
             for r in range(world_size)]
    values, failures, dead = {}, {}, {}
    deadline = time.monotonic() + timeout
    timed_out = False
    finished = False         # False on the way out of an interrupt (Ctrl-C) or an error
    try:
        for p in procs:
            p.start()
        timed_out = _listen(procs, results, deadline, values, failures, dead)
        # before _stop kills them: afterwards a stopped rank cannot be told from the others
        stopped = _stopped(procs, values, failures, dead)
        finished = True
    finally:
        _stop(procs, calm=finished and not (failures or dead or timed_out))
        remove_run_files(setup["tag"])
        results.close()
        shutil.rmtree(folder, ignore_errors=True)
    if failures or dead:
        raise ProcessGroupError(_links_down(network) + _failure_report(failures, dead, stopped))
    if timed_out:
        raise ProcessGroupError(_links_down(network) + _timeout_report(
            timeout, world_size, values, progress, stopped))
    return [values[r] for r in range(world_size)]


def _check_run_args(fn, world_size, args, start_method, num_threads):
    whole_number(world_size, "world_size")
    if num_threads is not None:
        whole_number(num_threads, "num_threads")
    if not callable(fn):
        raise InputTypeError(f"fn must be callable, got {type(fn).__name__}")
    if start_method != "fork":
        _check_picklable(fn, args, start_method)


def _listen(procs, results, deadline, values, failures, dead):
    """Collect each rank's value (``values``), exception (``failures``) or exit code when it
    died silently (``dead``) until every rank is accounted for, a short grace after the first
    failure, or ``deadline``; True when the deadline ended it."""
    settle = None            # when to stop listening once something failed
    while len(values) + len(failures) + len(dead) < len(procs):
        now = time.monotonic()
        if settle is not None and now > settle:
            break
        if now > deadline:
            return True
        try:
            rank, ok, value = results.get(timeout=0.05)
        except _queue.Empty:
            for r, p in enumerate(procs):
                if r not in values and r not in failures and r not in dead \
                        and p.exitcode is not None:   # gone, even with status 0
                    p.join(0.5)               # its last words may still be in the pipe
                    time.sleep(0.2)          # it may have reported just before it exited
                    _drain_queue(results, values, failures)
                    if r not in values and r not in failures:
                        dead[r] = p.exitcode
            if (failures or dead) and settle is None:
                settle = time.monotonic() + _GRACE
            continue
        if ok:
            values[rank] = value
        else:
            failures[rank] = value
            if settle is None:
                settle = time.monotonic() + _GRACE
    return False


def _stopped(procs, values, failures, dead):
    """``rank -> process id`` of the ranks that did not finish because their process is
    stopped (SIGSTOP, a debugger): alive, silent, and the cause of every wait for them."""
    out = {}
    for r, p in enumerate(procs):
        if r in values or r in failures or r in dead or p.pid is None:
            continue
        try:
            with open(f"/proc/{p.pid}/stat") as f:
                state = f.read().rpartition(")")[2].split()[0]
        except (OSError, IndexError):   # no /proc here, or gone meanwhile
            continue
        if state in ("T", "t"):
            out[r] = p.pid
    return out


def _stop(procs, *, calm):
    """Wait for the processes (5 s when all went well, else 0.5 s), then kill what is left
    (SIGKILL, which a stopped process cannot hold off as it holds off SIGTERM)."""
    # one wait for all the processes, not one per process: after Ctrl-C (or any failure)
    # 16 ranks must not take 16 x 5 s to go
    until = time.monotonic() + (5.0 if calm else 0.5)
    for p in procs:
        p.join(timeout=max(0.0, until - time.monotonic()))
    for p in procs:
        if p.is_alive():
            p.kill()
            p.join()


def _links_down(network):
    """A first line naming the links of the emulated ``network`` that are down ("" if none, or
    no network): the ranks whose messages cross one time out, and who waited for whom says
    less than which cable failed."""
    if network is None:
        return ""
    from ..errors import TopocollError

    try:
        down = network.links_down()
    except (TopocollError, OSError):   # a diagnosis only: the run's failure is still raised
        return ""
    if not down:
        return ""
    names = ", ".join(f"{a}-{b}" for a, b in down)
    return (f"link{'s' if len(down) > 1 else ''} {names} of the emulated network "
            f"{'are' if len(down) > 1 else 'is'} down (messages across it are lost)\n")


def _endpoints(network, world_size):
    """Where each rank runs: the network's endpoints, or None for every rank (this host)."""
    if network is None:
        return [None] * world_size
    if not hasattr(network, "endpoints"):
        raise InputTypeError(f"network must be a built topocoll.emulate.EmulatedNetwork, got "
                             f"{type(network).__name__}")
    if network.num_ranks != world_size:
        raise InputTypeError(f"the emulated network {network.topology.name} has "
                             f"{network.num_ranks} ranks, not {world_size}")
    return network.endpoints()


def _check_picklable(fn, args, start_method):
    """Fail now, naming ``fn``, if a spawned process could not receive it."""
    import pickle
    from multiprocessing.reduction import ForkingPickler

    name = getattr(fn, "__qualname__", repr(fn))
    try:
        ForkingPickler.dumps(fn)
    except (pickle.PicklingError, AttributeError, TypeError) as exc:
        raise InputTypeError(
            f"run_local: fn {name} cannot be pickled, and start_method={start_method!r} must "
            f"send it to new processes: define it at module level in an importable module "
            f"(not a lambda or a local function), or use start_method='fork' ({exc})") from None
    try:
        ForkingPickler.dumps(tuple(args))
    except (pickle.PicklingError, AttributeError, TypeError) as exc:
        raise InputTypeError(f"run_local: the args of {name} cannot be pickled for "
                             f"start_method={start_method!r} ({exc})") from None


def _drain_queue(results, values, failures):
    while True:
        try:
            rank, ok, value = results.get_nowait()
        except _queue.Empty:
            return
        (values if ok else failures)[rank] = value


def _secondary(text):
    """True if a traceback says only that a peer went away."""
    return any(word in text for word in _PEER_LOST)


def _failure_report(failures, dead, stopped=None):
    """The first line names the rank that failed first: one that is stopped (its peers gave
    up waiting for it), else one that died without a word, else one that raised for a reason of
    its own, else the first to report; the rest follow."""
    waited = _first_wait(failures)
    lines = [f"rank {rank} (process {pid}) is stopped (SIGSTOP or a debugger) and did not "
             f"finish; the ranks waiting for it gave up{waited}" for rank, pid in
             sorted((stopped or {}).items())]
    for rank, code in sorted(dead.items()):
        lines.append(f"rank {rank} exited (status 0) without returning" if code == 0 else
                     f"rank {rank} died with exit code {code}")
    own = sorted(r for r, text in failures.items() if not _secondary(text))
    lost = sorted(r for r in failures if r not in own)
    for rank in own + lost:
        tail = " (after losing a peer)" if rank in lost and (dead or own or stopped) else ""
        lines.append(f"rank {rank} raised{tail}:\n{failures[rank].rstrip()}")
    return "\n".join(lines)


def _first_wait(failures):
    """``" (rank R: what it waited for)"``: the exception line of the lowest rank that gave up
    (the step or iteration it was in), or "" when no rank said why."""
    for rank in sorted(failures):
        last = next((line.strip() for line in reversed(failures[rank].splitlines())
                     if line.strip()), "")
        said = re.sub(r"^[\w.]+(Error|Exception|Timeout)\w*: ", "", last)
        if said:
            return f" (rank {rank}: {said})"
    return ""


def _timeout_report(timeout, world_size, values, progress, stopped=None):
    """Stopped ranks first, then ranks outside any exchange (they hang in their own code: the
    likely culprits), then the ranks waiting inside an exchange for them."""
    stopped = stopped or {}
    outside = [f"rank {r} (process {pid}) is stopped (SIGSTOP or a debugger)"
               for r, pid in sorted(stopped.items())]
    inside = []
    for r in range(world_size):
        if r in values or r in stopped:
            continue
        entered, finished = progress[2 * r], progress[2 * r + 1]
        if entered > finished:
            inside.append(f"rank {r} waits inside the exchange of iteration {entered}")
        elif finished < 0:
            outside.append(f"rank {r} never reached an exchange")
        else:
            outside.append(f"rank {r} is outside any exchange after finishing iteration "
                           f"{finished}")
    stuck = len(outside) + len(inside)
    done = sorted(values)
    finished = f"; ranks {', '.join(map(str, done))} finished" if done else ""
    return (f"run_local timed out after {timeout:g} s: {stuck} of {world_size} ranks did not "
            f"finish: {'; '.join(outside + inside)}{finished}")
