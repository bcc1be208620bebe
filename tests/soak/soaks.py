"""The soaks of tests/soak and benchmarks/soak.py: long runs of the runtime and of emulated
networks, measured inside each rank (or the process that builds the networks) after a warm-up
and at the end, and what the run left behind on the host afterwards.

A figure is a :func:`snapshot`: resident memory (``VmRSS``), open file descriptors, Python
threads and the kernel's thread count. The warm-up is the first tenth of the calls: buffers,
channels, compiled programs and thread pools made once are made by then, so that memory still
growing after it is a leak and not a cache filling.
"""

import contextlib
import gc
import os
import shutil
import statistics
import tempfile
import threading
import time

#: ranks of the runtime soaks, and the elements of their tensors (4 KiB of float32)
WORLD = 4
NUMEL = 1024
#: the one-peer exponential gossip of DecentralizedDataParallel (docs/gossip-runtime.md)
GOSSIP = "one-peer-exp"
#: the emulated network of the emulate soak: 8 nodes, 8 cables
NETWORK = "ring:8"


def snapshot():
    """This process now: ``rss_kib``, ``fds``, ``threads`` (Python's), ``os_threads``."""
    gc.collect()      # what is garbage already is not a leak
    status = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "Threads"):
                status[key] = int(value.split()[0])
    open_files = _descriptors()
    return {"rss_kib": status["VmRSS"], "fds": len(open_files), "open": open_files,
            "threads": threading.active_count(), "os_threads": status["Threads"]}


def _descriptors():
    """``{fd: what it is open on}``, for the message of a test that finds one too many: those
    open in two listings 50 ms apart (a monitor thread of the test session's Dask cluster
    reads /proc/diskstats now and then: a file open for microseconds is not a leak)."""
    first = _listing()
    time.sleep(0.05)
    second = _listing()
    return {fd: target for fd, target in second.items() if first.get(fd) == target}


def _listing():
    found = {}
    for fd in os.listdir("/proc/self/fd"):
        try:
            found[int(fd)] = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:     # the listing's own descriptor, closed by now: not counted
            continue
    return found


def growth(start, end):
    """Resident memory growth from ``start`` to ``end`` (snapshots), in percent."""
    return 100.0 * (end["rss_kib"] - start["rss_kib"]) / start["rss_kib"]


def warm_up(calls):
    return max(1, calls // 10)


#: the most resident memory may grow after the warm-up, in percent
MOST_GROWTH = 5.0


def problems(figures, what):
    """Why the figures of one rank (or process), ``{"start", "end", ...}`` from
    :func:`snapshot`, are not flat: memory grown by :data:`MOST_GROWTH` percent or more,
    more descriptors open at the end than after the warm-up (fewer is fine: some of gloo's
    loopback connections between the ranks close late), more or fewer threads."""
    start, end = figures["start"], figures["end"]
    found = []
    grown = growth(start, end)
    if grown >= MOST_GROWTH:
        found.append(f"{what}: resident memory grew {grown:.1f}% after the warm-up "
                     f"({start['rss_kib']} KiB -> {end['rss_kib']} KiB over "
                     f"{figures['calls'] - warm_up(figures['calls'])} calls)")
    opened = {fd: target for fd, target in end["open"].items()
              if start["open"].get(fd) != target}
    if end["fds"] > start["fds"]:
        found.append(f"{what}: more descriptors open at the end than after the warm-up "
                     f"({start['fds']} -> {end['fds']}), new: {sorted(opened.items())[:8]}")
    for key, said in (("threads", "Python threads"), ("os_threads", "threads (kernel)")):
        if end[key] != start[key]:
            found.append(f"{what}: {said} {start[key]} after the warm-up, {end[key]} at the end")
    return found


def leftovers(left):
    """One line per kind of thing a soak left on the host (``left`` as the soaks return it)."""
    return [f"left behind: {kind}: {items[:8]}" for kind, items in left.items() if items]


def mapped_channels():
    """The shared-memory channel files of topocoll this process maps (by name, whether they
    are unlinked already or not)."""
    from topocoll.runtime.shm import SHM_DIR

    found = set()
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split(None, 5)
            if len(parts) == 6 and parts[5].startswith(f"{SHM_DIR}/topocoll-"):
                found.add(parts[5].strip().removesuffix(" (deleted)"))
    return sorted(found)


def children():
    """Process ids of this process's children (zombies too: one not reaped is left over)."""
    me, found = str(os.getpid()), set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rpartition(")")[2].split()
        except OSError:
            continue
        if fields[1] == me:
            found.add(int(entry))
    return found


@contextlib.contextmanager
def private_tempdir():
    """A temporary folder of the soak's own as every process's tempdir (forked ranks inherit
    it), so that whatever is left in it afterwards was left by the soak: other runs on the
    same host keep theirs elsewhere."""
    folder = tempfile.mkdtemp(prefix="soak-tmp-")
    saved = os.environ.get("TMPDIR"), tempfile.tempdir
    os.environ["TMPDIR"] = tempfile.tempdir = folder
    try:
        yield folder
    finally:
        if saved[0] is None:
            os.environ.pop("TMPDIR", None)
        else:
            os.environ["TMPDIR"] = saved[0]
        tempfile.tempdir = saved[1]
        shutil.rmtree(folder, ignore_errors=True)


# -- the runtime soaks: one function per rank --------------------------------------------------

def schedule_rank(rank, world_size, calls, numel, transport):
    """``calls`` BFB allreduces of ``numel`` float32 through one ScheduleCollective."""
    import torch

    from topocoll.runtime import ScheduleCollective
    from topocoll.synth import generate

    collective = ScheduleCollective(generate(f"ring:{world_size}", "allreduce", "bfb"),
                                    transport=transport)
    want = float(sum(range(1, world_size + 1)))
    warm, wrong, start, seconds = warm_up(calls), 0, None, [0.0] * calls
    for i in range(calls):
        if i == warm:
            start = snapshot()
        x = torch.full((numel,), float(rank + 1))     # a new tensor a call, as training makes
        began = time.perf_counter()
        if not bool((collective(x) == want).all()):
            wrong += 1
        seconds[i] = time.perf_counter() - began
    return {"start": start, "end": snapshot(), "calls": calls, "wrong": wrong,
            "transport": collective.transport, "channels": mapped_channels(),
            "median_s": statistics.median(seconds[warm:])}


def ddp_rank(rank, world_size, iterations, transport):
    """``iterations`` steps of a tiny model under DecentralizedDataParallel with one-peer
    exponential gossip; the end snapshot is taken, as the start one, with a gossip in flight."""
    import torch

    from topocoll.runtime import DecentralizedDataParallel

    torch.manual_seed(rank)
    model = torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.Tanh(), torch.nn.Linear(8, 1))
    x, y = torch.randn(8, 16), torch.randn(8, 1)
    ddp = DecentralizedDataParallel(model, GOSSIP, lr=0.01, transport=transport)
    warm, start, finite, seconds = warm_up(iterations), None, True, [0.0] * iterations
    for k in range(iterations):
        if k == warm:
            start = snapshot()
        began = time.perf_counter()
        loss = ((ddp(x) - y) ** 2).mean()
        finite = finite and bool(torch.isfinite(loss))
        loss.backward()
        ddp.step()
        seconds[k] = time.perf_counter() - began
    end = snapshot()
    ddp.global_avg()
    replica = torch.cat([p.detach().reshape(-1) for p in model.parameters()]).tolist()
    iteration = ddp.iteration
    ddp.close()
    return {"start": start, "end": end, "calls": iterations, "iteration": iteration,
            "finite": finite, "replica": replica, "channels": mapped_channels(),
            "median_s": statistics.median(seconds[warm:])}


def run_ranks(fn, args, *, timeout=240.0):
    """``fn`` on :data:`WORLD` forked ranks; ``(each rank's figures, what was left)``."""
    from topocoll.runtime import run_local

    before = children()
    with private_tempdir() as folder:
        ranks = run_local(fn, WORLD, args, start_method="fork", timeout=timeout)
        temp = sorted(os.listdir(folder))
    channels = sorted({c for r in ranks for c in r["channels"]})
    left = {"children": sorted(children() - before),
            "channel files": [c for c in channels if os.path.exists(c)],
            "temporary files": temp}
    return ranks, left


def schedule_soak(transport, calls=2000, numel=NUMEL):
    return run_ranks(schedule_rank, (calls, numel, transport))


def ddp_soak(transport="auto", iterations=1000):
    return run_ranks(ddp_rank, (iterations, transport))


def groups_soak(groups=30):
    """``groups`` process groups of one rank made and destroyed one after another in this
    process, each training a step under DecentralizedDataParallel (which chooses its transport
    per group); ``(figures, left)``: what a destroyed group kept must be gone with it."""
    import torch

    from topocoll.runtime import DecentralizedDataParallel, single_process_group

    warm, start, before, seconds = warm_up(groups), None, children(), [0.0] * groups
    with private_tempdir() as folder:
        for i in range(groups):
            if i == warm:
                start = snapshot()
            began = time.perf_counter()
            with single_process_group():
                model = torch.nn.Linear(4, 1)
                with DecentralizedDataParallel(model, [[1.0]], lr=0.1) as ddp:
                    ddp(torch.ones(2, 4)).sum().backward()
                    ddp.step()
                del ddp, model
            seconds[i] = time.perf_counter() - began
        end = snapshot()
        temp = sorted(os.listdir(folder))
    return ({"start": start, "end": end, "calls": groups,
             "median_s": statistics.median(seconds[warm:])},
            {"children": sorted(children() - before), "temporary files": temp})


# -- the emulate soak: builds and teardowns in this process ------------------------------------

def _namespace_holders(inodes):
    """Processes living in, and descriptors of this process open on, the network namespaces
    of ``inodes``: either keeps a namespace (and its veths) alive after its name is gone."""
    held = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}/ns/net").st_ino in inodes:
                    held.append(f"process {entry}")
            except OSError:
                continue
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith("net:[") and int(target[5:-1]) in inodes:
            held.append(f"descriptor {fd}")
    return held


def _root_veths(names):
    """Interfaces of this process's namespace named like the network's cable ends: a cable
    end made in the wrong namespace would stay behind in it."""
    try:
        present = os.listdir("/sys/class/net")
    except OSError:
        return []
    return sorted(set(present) & set(names))


def emulate_soak(builds=50, spec=NETWORK, check_every=None):
    """Build and take down ``spec`` ``builds`` times in this process; ``(figures, left)``.
    Every ``check_every``-th build (the first and last by default) also checks that every node
    reaches every other, so that what is built is a working network."""
    from topocoll.emulate import EmulatedNetwork
    from topocoll.emulate.runs import PREFIX, STATE_DIR
    from topocoll.emulate.system import NETNS_DIR

    warm, start, failed, seconds = warm_up(builds), None, [], []
    runs, inodes, cable_ends = [], set(), set()
    before = children()
    with private_tempdir() as folder:
        for i in range(builds):
            if i == warm:
                start = snapshot()
            with EmulatedNetwork(spec, link_bandwidth="20Mbps", check_capacity=False) as net:
                runs.append(net.run)
                seconds.append(net.build_seconds)
                inodes |= {os.stat(net.namespace(n)).st_ino for n in range(net.num_ranks)}
                cable_ends |= {name for n in range(net.num_ranks)
                               for name, _ in net.plan.interfaces(n)}
                if i in (0, builds - 1) or (check_every and i % check_every == 0):
                    failed += net.check()
        end = snapshot()
        temp = sorted(os.listdir(folder))
    ours = tuple(f"{PREFIX}{run}-" for run in runs)
    left = {"namespaces": [n for n in os.listdir(NETNS_DIR) if n.startswith(ours)]
            if os.path.isdir(NETNS_DIR) else [],
            "run records": [r for r in runs if os.path.exists(f"{STATE_DIR}/{r}.json")],
            "namespace holders": _namespace_holders(inodes),
            "veths": _root_veths(cable_ends),
            "children": sorted(children() - before), "temporary files": temp}
    figures = {"start": start, "end": end, "calls": builds, "unreached": failed,
               "networks": len(set(runs)), "median_s": statistics.median(seconds[warm:])}
    return figures, left
