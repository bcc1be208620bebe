"""A rank stopped with SIGSTOP in the middle of a run: the ranks that wait for it give up
within their timeout naming it and the step (a schedule) or the iteration (neighbor
averaging), the run's error names it as stopped, and nothing is left behind: no process (a
stopped one ignores SIGTERM until continued) and no shared-memory file."""

import glob
import os
import re
import signal

import numpy as np
import pytest
import torch

from topocoll.errors import ProcessGroupError
from topocoll.runtime import ScheduleCollective, neighbor_allreduce, run_local
from topocoll.runtime.shm import SHM_DIR
from topocoll.synth import generate

RING4 = np.array([[0.5, 0.25, 0, 0.25], [0.25, 0.5, 0.25, 0], [0, 0.25, 0.5, 0.25],
                  [0.25, 0, 0.25, 0.5]])
TRANSPORTS = ("network", "shared_memory")
#: Seconds a rank waits for one packet or slice: short, so that each test takes seconds.
PATIENCE = 3
#: The call before which rank 1 stops itself (the calls before it went through).
STOP_AT = 3


def children():
    """Process ids of this process's live children (not zombies: those are reaped ones)."""
    found = set()
    for path in glob.glob(f"/proc/{os.getpid()}/task/*/children"):
        with open(path) as f:
            found.update(int(p) for p in f.read().split())
    return {p for p in found if _state(p) not in (None, "Z")}


def _state(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0]
    except OSError:
        return None


def our_shm_files():
    return {n for n in os.listdir(SHM_DIR) if n.startswith("topocoll-")}


def _stop_here(folder):
    """Leave this process's id in ``folder``, then stop the whole process as SIGSTOP does."""
    with open(os.path.join(folder, "stopped"), "w") as f:
        f.write(str(os.getpid()))
    os.kill(os.getpid(), signal.SIGSTOP)


def _schedule_calls(rank, world_size, folder, transport):
    allreduce = ScheduleCollective(generate("ring:4", "allreduce"), timeout=PATIENCE,
                                   slice_bytes=1 << 20, transport=transport)
    x = torch.full((4096,), float(rank))
    for call in range(2 * STOP_AT):
        if rank == 1 and call == STOP_AT:
            _stop_here(folder)
        allreduce(x)
    return x[:2].tolist()


def _neighbor_calls(rank, world_size, folder, transport):
    x = torch.full((4096,), float(rank))
    for k in range(2 * STOP_AT):
        if rank == 1 and k == STOP_AT:
            _stop_here(folder)
        x = neighbor_allreduce(x, RING4, k, transport=transport, timeout=PATIENCE)
    return x[:2].tolist()


def _run_with_a_stopped_rank(fn, folder, transport):
    """The run's error; checks that nothing of the run is left behind."""
    before, files = children(), our_shm_files()
    with pytest.raises(ProcessGroupError) as err:
        # the run's own limit is far off: the ranks' patience must end it, not this
        run_local(fn, 4, (str(folder), transport), start_method="fork", timeout=120)
    text = str(err.value)
    with open(os.path.join(folder, "stopped")) as f:
        pid = int(f.read())
    assert _state(pid) is None, f"the stopped rank (process {pid}) is still there"
    assert children() <= before, "a rank was left behind"
    assert our_shm_files() <= files, "a shared-memory channel was left in " + SHM_DIR
    assert "timed out after" not in text, text        # the ranks gave up, not run_local
    headline = text.splitlines()[0]
    assert headline.startswith(f"rank 1 (process {pid}) is stopped"), text
    return text


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_stopped_rank_is_named_with_the_step_of_the_schedule(tmp_path, transport):
    text = _run_with_a_stopped_rank(_schedule_calls, tmp_path, transport)
    # ranks 0 and 2 wait for rank 1 in the second step of the call (ring:4 goes both ways)
    for line in ("step 1: rank 1 (node 1) did not exchange its message within 3 s",):
        assert text.count(line) >= 1, text
    assert "rank 0 raised" in text and "rank 2 raised" in text, text


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_stopped_rank_is_named_with_the_iteration_of_neighbor_averaging(tmp_path, transport):
    text = _run_with_a_stopped_rank(_neighbor_calls, tmp_path, transport)
    # ranks 0 and 2 average with rank 1: both wait for its slice of iteration 3
    waits = [line for line in text.splitlines()
             if line.startswith(f"topocoll.errors.ProcessGroupError: neighbor averaging, "
                                f"iteration {STOP_AT}, slice 0: rank 1 did not exchange its "
                                f"slice within {PATIENCE} s")]
    assert len(waits) >= 2, text
    assert "rank 0 raised" in text and "rank 2 raised" in text, text


# -- topocoll run: its ranks are spawned by the command ---------------------------------------

def _ranks_of(pid):
    """Process ids of the ranks that the command ``pid`` spawned (not its resource tracker)."""
    ranks = []
    for path in glob.glob(f"/proc/{pid}/task/*/children"):
        try:
            with open(path) as f:
                kids = [int(p) for p in f.read().split()]
        except OSError:
            continue
        for kid in kids:
            try:
                with open(f"/proc/{kid}/cmdline", "rb") as f:
                    if b"spawn_main" in f.read():
                        ranks.append(kid)
            except OSError:
                pass
    return ranks


def _maps_a_channel(pid):
    """Whether process ``pid`` has mapped a shared-memory channel: it is inside a collective."""
    try:
        with open(f"/proc/{pid}/maps") as f:
            return f"{SHM_DIR}/topocoll-" in f.read()
    except OSError:
        return False


def test_topocoll_run_names_a_rank_stopped_mid_run(tmp_path):
    # more calls than the time limit allows and no per-packet timeout: the limit ends the run
    victim, lines = _stop_a_rank_of_topocoll_run(tmp_path, [])
    assert len(lines) == 1 and "timed out" in lines[0], lines
    assert f"(process {victim}) is stopped" in lines[0], lines


def test_topocoll_run_with_a_peer_timeout_names_the_stopped_rank_and_the_step(tmp_path):
    # the ranks that wait for the stopped one give up after 3 s, long before the time limit
    victim, lines = _stop_a_rank_of_topocoll_run(tmp_path, ["--peer-timeout", "3s"])
    assert len(lines) == 1 and "run_local timed out" not in lines[0], lines
    assert f"(process {victim}) is stopped" in lines[0], lines
    # where the others waited: inside the collective (its step), at the barrier before a
    # timed call, or where the first call makes the channels
    assert re.search(r"\(rank \d: (step \d+: rank \d \(node \d\) did not exchange its message "
                     r"within 3(\.0)? s|timed call \d+: not every rank reached the barrier "
                     r"before it within 3 s|not every rank made the first call for tensors of "
                     r"\d+ elements within 3 s)", lines[0]), lines


def _stop_a_rank_of_topocoll_run(tmp_path, extra):
    """Start ``topocoll run`` of 4 ranks, stop one with SIGSTOP inside the collective, wait
    for the command: ``(the stopped rank's process id, stderr's non-blank lines)``, after
    checking that it failed without a traceback and left no rank and no channel file."""
    import subprocess
    import sys
    import time

    from topocoll.schedule.io import save_schedule

    save_schedule(generate("ring:4", "allreduce"), tmp_path / "s.json")
    files = our_shm_files()
    # the limit leaves room for 4 spawned ranks to import torch on busy shared cores
    limit = 60
    command = subprocess.Popen(
        [sys.executable, "-m", "topocoll.cli.main", "run", "s.json", "--nproc", "4", "--size",
         "4KiB", "--iterations", "1000000", "--no-baseline", "--transport", "shared_memory",
         "--time-limit", f"{limit}s", *extra], cwd=tmp_path, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, start_new_session=True)
    ranks, victim = [], None
    try:
        deadline = time.monotonic() + limit
        while victim is None and command.poll() is None and time.monotonic() < deadline:
            ranks = sorted(set(ranks) | set(_ranks_of(command.pid)))
            victim = next((p for p in ranks if _maps_a_channel(p)), None)
            time.sleep(0.05)
        assert victim is not None, "no rank got as far as the collective"
        os.kill(victim, signal.SIGSTOP)
        _, stderr = command.communicate(timeout=120)
    finally:
        if command.poll() is None:       # (the test failed): take the run down
            os.killpg(command.pid, signal.SIGKILL)
            command.communicate()
    assert command.returncode != 0 and "Traceback" not in stderr, stderr
    assert len(ranks) == 4 and all(_state(p) is None for p in ranks), "a rank was left behind"
    assert our_shm_files() <= files, "a shared-memory channel was left in " + SHM_DIR
    return victim, [line for line in stderr.splitlines() if line.strip()]
