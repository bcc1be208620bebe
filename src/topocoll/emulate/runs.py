"""Names of what an emulated network creates, who owns it, and the removal of leftovers.

Every namespace a run creates is named ``topocoll-<run>-n<node>`` (``-s<node>`` for a switch),
``<run>`` six hex digits drawn per run, and nothing else is created outside them: the veths
live inside the namespaces. A run started as root records itself in
``/run/topocoll/<run>.json`` (its process id and start time), so that
:func:`leftover_runs` can tell the namespaces of a live run from those a killed run left behind,
and :func:`clean_leftovers` (``topocoll emulate --clean``) removes only the latter, only under
that prefix. Runs in an unprivileged user namespace leave nothing behind: their namespaces live
in the process's own mount table and die with it.
"""

import json
import os
import secrets
from dataclasses import dataclass, field

from ..errors import EmulationError
from .system import NETNS_DIR
from .netlink import Batch, NamespaceSocket, Templates

__all__ = ["PREFIX", "STATE_DIR", "new_run_id", "namespace_name", "RunRecord", "leftover_runs",
           "clean_leftovers", "remove_namespace", "processes_in", "record_run", "forget_run"]

#: The prefix of every namespace an emulated network creates.
PREFIX = "topocoll-"
#: Where runs started as root record themselves.
STATE_DIR = "/run/topocoll"


def new_run_id():
    """Six hex digits, not used by any namespace that exists now."""
    taken = _runs_present()
    while True:
        run = secrets.token_hex(3)
        if run not in taken:
            return run


def namespace_name(run, node, switch=False):
    """``topocoll-<run>-n<node>`` (``-s<node>`` for a switch)."""
    return f"{PREFIX}{run}-{'s' if switch else 'n'}{int(node)}"


def _parse(name):
    """The run id of a namespace name of ours, or None."""
    if not name.startswith(PREFIX):
        return None
    run, sep, node = name[len(PREFIX):].partition("-")
    if not sep or len(run) != 6 or not node[:1] in ("n", "s") or not node[1:].isdigit():
        return None
    return run


def _listing(folder=NETNS_DIR):
    try:
        return sorted(os.listdir(folder))
    except OSError:
        return []


def _runs_present():
    return {r for r in map(_parse, _listing()) if r is not None}


def _start_time(pid):
    """The start time of process ``pid`` (clock ticks since boot), or None if it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rpartition(")")[2].split()[19])
    except (OSError, ValueError, IndexError):
        return None


@dataclass
class RunRecord:
    """One run's namespaces and whether the process that made them still lives."""

    run: str
    namespaces: list = field(default_factory=list)
    pid: int = None
    alive: bool = False
    topology: str = None
    killed: list = field(default_factory=list)

    def to_dict(self):
        return {"run": self.run, "namespaces": list(self.namespaces), "pid": self.pid,
                "alive": self.alive, "topology": self.topology, "killed": list(self.killed)}


def record_run(run, topology_name):
    """Write ``/run/topocoll/<run>.json`` for this process (root runs)."""
    os.makedirs(STATE_DIR, exist_ok=True)
    with open(os.path.join(STATE_DIR, f"{run}.json"), "w") as f:
        json.dump({"pid": os.getpid(), "start": _start_time(os.getpid()),
                   "topology": topology_name}, f)


def forget_run(run):
    try:
        os.unlink(os.path.join(STATE_DIR, f"{run}.json"))
    except FileNotFoundError:
        pass


def _state(run):
    try:
        with open(os.path.join(STATE_DIR, f"{run}.json")) as f:
            state = json.load(f)
        return state if isinstance(state, dict) else {}
    except (OSError, ValueError):
        return {}


def leftover_runs(*, include_alive=False):
    """The runs whose namespaces exist, by run id: those whose process is gone (and, with
    ``include_alive``, the live ones too)."""
    runs = {}
    for name in _listing():
        run = _parse(name)
        if run is not None:
            runs.setdefault(run, RunRecord(run)).namespaces.append(name)
    for entry in _listing(STATE_DIR):
        run = entry.removesuffix(".json")
        if entry.endswith(".json") and run not in runs:
            runs[run] = RunRecord(run)       # a record whose namespaces are already gone
    out = []
    for run, record in sorted(runs.items()):
        state = _state(run)
        pid = state.get("pid")
        record.pid, record.topology = pid, state.get("topology")
        record.alive = (isinstance(pid, int) and _start_time(pid) is not None
                        and _start_time(pid) == state.get("start"))
        if include_alive or not record.alive:
            out.append(record)
    return out


def processes_in(paths):
    """``{path: [pid, ...]}`` of the processes that live in the network namespaces at
    ``paths`` (those this process may look at)."""
    inodes = {}
    for path in paths:
        try:
            inodes[os.stat(path).st_ino] = path
        except OSError:
            continue
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            inode = os.stat(f"/proc/{entry}/ns/net").st_ino
        except OSError:
            continue
        if inode in inodes:
            found.setdefault(inodes[inode], []).append(int(entry))
    return found


def remove_namespace(path, links=None, *, occupied=True):
    """Remove the namespace at ``path``. Where a process still lives in it (``occupied``),
    its interfaces ``links`` (``{name: index}``, else all but loopback) are deleted first: the
    namespace outlives its name while a process holds it, and its veths (each with its other
    end) would live on with it. An empty namespace goes at once with its name, interfaces and
    all (the kernel frees it), which is much faster than deleting interface by interface."""
    from pyroute2 import netns

    label = os.path.basename(path)
    sock = None
    if occupied:
        try:
            sock = NamespaceSocket(path, label)
        except EmulationError:
            sock = None      # already half gone: remove the name below all the same
    if sock is not None:
        templates = Templates()
        try:
            links = sock.links(templates) if links is None else links
            batch = Batch()
            for name, index in links.items():
                if name != "lo":
                    batch.add(templates.delete_link(index), f"deleting {name}")
            try:
                sock.run(batch)
            except EmulationError:
                pass     # a veth whose other end went first is gone already
        finally:
            templates.close()
            sock.close()
    try:
        netns.remove(path)
    except OSError as exc:
        if os.path.exists(path):
            raise EmulationError(f"cannot remove network namespace {label}: "
                                 f"{exc.strerror}") from None


def clean_leftovers(*, force=False):
    """Remove the namespaces of runs whose process is gone (``force``: of live runs too) and
    their records; processes still inside them (ranks orphaned by a killed run) are killed
    first. Returns the :class:`RunRecord` of each run removed (``killed`` lists those
    processes)."""
    import signal

    removed = []
    for record in leftover_runs(include_alive=force):
        paths = [os.path.join(NETNS_DIR, name) for name in record.namespaces]
        inside = processes_in(paths)
        for pids in inside.values():
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                record.killed.append(pid)
        for path in paths:
            remove_namespace(path, occupied=path in inside)
        forget_run(record.run)
        removed.append(record)
    return removed
