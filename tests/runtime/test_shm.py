"""The shared-memory transport: every collective computes its definition through it, its
channels wrap around and stay in step over many calls, and what cannot share memory is
refused with the reason."""

import os
import platform

import numpy as np
import pytest
import torch
import torch.distributed as dist

from topocoll.errors import ProcessGroupError, UnsupportedError
from topocoll.runtime import ScheduleCollective, run_local
from topocoll.runtime.shm import (SHM_DIR, decode_identity, encode_identity, host_identity,
                                  shared_memory_refusal)
from topocoll.synth import generate
from topocoll.synth.ten import synthesize

from tests.runtime.test_plan import expected, numel_for

pytestmark = pytest.mark.skipif(
    platform.machine() not in ("x86_64", "AMD64") or not os.access(SHM_DIR, os.W_OK),
    reason=f"the shared-memory transport needs x86-64 and a writable {SHM_DIR}")

DTYPES = {"float32": torch.float32, "int64": torch.int64, "bfloat16": torch.bfloat16}


def _cases(n):
    spec = {2: "ring:2", 3: "ring:3", 4: "torus:2x2"}[n]
    out = []
    for name in ("allgather", "reduce_scatter", "allreduce", "broadcast", "reduce"):
        root = 1 if name in ("broadcast", "reduce") else None
        out.append((f"bfb {name}", generate(spec, name, "bfb", root=root)))
    for name in ("scatter", "gather", "alltoall"):
        root = n - 1 if name in ("scatter", "gather") else None
        out.append((f"ten {name}", synthesize(spec, name, root=root, chunks=2)))
    out.append(("swing allreduce", generate(spec, "allreduce", "swing", multiport=True)))
    return out


def _inputs(n, numel, seed):
    rng = np.random.default_rng(seed)
    return [rng.integers(-4, 5, size=numel).astype(np.float64) for _ in range(n)]


def _every_collective(rank, world_size, slice_bytes, window):
    failures, transports = [], set()
    for label, schedule in _cases(world_size):
        name = schedule.collective.name
        collective = ScheduleCollective(schedule, transport="shared_memory",
                                        slice_bytes=slice_bytes, window=window)
        transports.add(collective.transport)
        for dtype_name, dtype in DTYPES.items():
            for unit in (1, 13, 7, 13):           # a size again: its channels reused
                numel = numel_for(name, world_size, unit)
                inputs = _inputs(world_size, numel, seed=unit + len(label))
                want = expected(name, inputs, schedule.root)[rank]
                got = collective(torch.tensor(inputs[rank], dtype=dtype))
                if want is not None and not torch.equal(got.double(),
                                                        torch.tensor(want, dtype=torch.float64)):
                    failures.append((label, dtype_name, numel))
    return failures, sorted(transports)


@pytest.mark.parametrize("world_size,slice_bytes,window", [
    (2, None, None), (3, None, None), (4, None, None),
    (3, 16, 1),        # packets of 2-4 elements, one slot a link: every channel wraps
    (4, 24, 2)])
def test_every_collective_computes_its_definition(world_size, slice_bytes, window):
    out = run_local(_every_collective, world_size, (slice_bytes, window), start_method="fork",
                    timeout=300)
    assert out == [([], ["shared_memory"])] * world_size


def _many_calls(rank, world_size):
    """Calls of two sizes interleaved, the same tensor reused, against torch's all_reduce;
    the async form; and both transports on one group."""
    schedule = generate("ring:%d" % world_size, "allreduce")
    shared = ScheduleCollective(schedule, transport="shared_memory", slice_bytes=4096,
                                window=2)
    network = ScheduleCollective(schedule, transport="network", slice_bytes=4096)
    x = torch.empty(5000)
    ok = []
    for i in range(12):
        numel = 5000 if i % 3 else 777
        base = torch.arange(numel, dtype=torch.float32) % 11 * (rank + i)
        want = base.clone()
        dist.all_reduce(want)
        view = x[:numel]
        view.copy_(base)
        got = (shared if i % 2 else network)(view, async_op=i % 4 == 1)
        got = got.wait() if i % 4 == 1 else got
        ok.append(bool(torch.equal(got, want)))
    return ok


def test_many_calls_stay_in_step():
    before = {n for n in os.listdir(SHM_DIR) if n.startswith("topocoll-")}
    out = run_local(_many_calls, 3, start_method="fork", timeout=300)
    assert out == [[True] * 12] * 3
    # every channel's file was removed once mapped: nothing left behind
    assert {n for n in os.listdir(SHM_DIR) if n.startswith("topocoll-")} <= before


def _auto(rank, world_size):
    c = ScheduleCollective(generate("ring:2", "allgather"), transport="auto")
    steps = ScheduleCollective(generate("ring:2", "allgather"), transport="auto",
                               engine="steps")
    try:
        ScheduleCollective(generate("ring:2", "allgather"), transport="shared_memory",
                           engine="steps")
        refused = "accepted"
    except UnsupportedError as exc:
        refused = str(exc)
    return c.transport, steps.transport, refused


def test_auto_takes_shared_memory_on_one_host_and_steps_keep_the_network():
    out = run_local(_auto, 2, start_method="fork", timeout=120)
    for transport, steps, refused in out:
        assert transport == "shared_memory" and steps == "network"
        assert "dataflow engine" in refused


def _late_peer(rank, world_size, folder):
    """Both ranks make a first call (which makes the channels); rank 1 never makes the second,
    nor the first of another size: rank 0 must give up after its timeout each time, naming
    rank 1 and the step, or the first call."""
    import time

    c = ScheduleCollective(generate("ring:2", "allreduce"), transport="shared_memory",
                           slice_bytes=1 << 20, timeout=1.0)
    first = c(torch.ones(4))
    if rank == 1:
        deadline = time.monotonic() + 60
        while not os.listdir(folder) and time.monotonic() < deadline:
            time.sleep(0.05)
        return first.tolist()
    said = []
    for numel in (4, 8):
        try:
            c(torch.ones(numel))
            said.append("finished")
        except ProcessGroupError as exc:
            said.append(str(exc))
    open(os.path.join(folder, "done"), "w").close()
    return said


def test_a_peer_that_does_not_come_is_named(tmp_path):
    out = run_local(_late_peer, 2, (str(tmp_path),), start_method="fork", timeout=120)
    assert out[1] == [2.0] * 4
    step, first = out[0]
    assert "rank 1 (node 1)" in step and "step 1" in step and "1 s" in step, step
    assert "shared memory" in step
    assert "first call for tensors of 8 elements within 1 s" in first, first


def test_only_ranks_that_share_a_host_share_memory():
    me = host_identity()
    coded = decode_identity(encode_identity(me))
    assert shared_memory_refusal([me, dict(me, pid=me["pid"] + 1)]) is None
    assert shared_memory_refusal([coded, decode_identity(encode_identity(me))]) is None
    for key, words in (("netns", "network namespace"), ("host", "host"),
                       ("boot", "host boot"), ("pidns", "process namespace"),
                       ("shm", SHM_DIR)):
        other = dict(me, **{key: "elsewhere"})
        for ranks in ([me, me, other], [coded, coded, decode_identity(encode_identity(other))]):
            why = shared_memory_refusal(ranks)
            assert words in why and "rank 2" in why, why
    arm = dict(me, usable="the shared-memory transport needs x86-64; this is aarch64")
    assert "x86-64" in shared_memory_refusal([me, arm])
    assert "rank 1 cannot use shared memory" in shared_memory_refusal(
        [coded, decode_identity(encode_identity(arm))])
    assert shared_memory_refusal([me, me], mine="not here") == "not here"


def _bad_transport(rank, world_size):
    try:
        ScheduleCollective(generate("ring:2", "allgather"), transport="carrier pigeon")
    except UnsupportedError as exc:
        return str(exc)
    return "accepted"


def test_an_unknown_transport_is_refused():
    out = run_local(_bad_transport, 2, start_method="fork", timeout=120)
    assert all("transport must be one of auto, network, shared_memory" in t for t in out)


def _peer_exits(rank, world_size, folder):
    """Rank 1 makes the first call, then exits without a word; rank 0's second call (no
    timeout) must notice and name it."""
    c = ScheduleCollective(generate("ring:2", "allreduce"), transport="shared_memory",
                           slice_bytes=1 << 20)
    c(torch.ones(4))
    if rank == 1:
        os._exit(0)
    try:
        c(torch.ones(4))
        text = "finished"
    except ProcessGroupError as exc:
        text = str(exc)
    with open(os.path.join(folder, "said"), "w") as f:
        f.write(text)
    return text


def test_a_peer_that_exits_is_noticed(tmp_path):
    with pytest.raises(ProcessGroupError):      # run_local reports the rank that vanished
        run_local(_peer_exits, 2, (str(tmp_path),), start_method="fork", timeout=60)
    said = (tmp_path / "said").read_text()
    assert "rank 1 (node 1) exited" in said and "step 1" in said, said


# -- the links alone, two nodes played by two threads of this process --------------------------
class _Op:
    step, peer = 1, 0


def _two_ends(spec="ring:2", numel=64, slice_numel=8, window=2):
    """Both nodes' programs and their shared-memory links, opened by two threads at once."""
    import secrets
    import threading

    from topocoll.runtime.program import compile_program
    from topocoll.runtime.shm import SharedMemoryLinks, open_channels

    schedule = generate(spec, "allreduce")
    programs = [compile_program(schedule, r, numel, slice_numel=slice_numel, window=window)
                for r in range(2)]
    name = f"test-{secrets.token_hex(4)}"
    barrier = threading.Barrier(2)
    links, errors = [None, None], []

    def open_end(r):
        try:
            out, inc = open_channels(programs[r], 4, r, name, barrier.wait)
            links[r] = SharedMemoryLinks(out, inc, [0, 1], [os.getpid()] * 2, timeout=5)
        except Exception as exc:       # handed to the test
            errors.append(exc)
            barrier.abort()

    threads = [threading.Thread(target=open_end, args=(r,)) for r in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return programs, links, errors, name


def test_the_engine_runs_on_the_links_in_one_process():
    import threading

    from topocoll.runtime.engine import allocate, execute
    from topocoll.runtime.plan import finish, initial_state

    programs, links, errors, name = _two_ends()
    assert errors == [] and not [f for f in os.listdir(SHM_DIR) if name in f]
    inputs = [torch.arange(64, dtype=torch.float32) * (r + 1) for r in range(2)]
    results = [None, None]

    def run(r):
        prog = programs[r]
        got = []
        for _ in range(3):                       # the counters continue from call to call
            flat = inputs[r].clone()
            state = initial_state(prog, flat, lambda k: torch.zeros(k))
            execute(prog, state, links[r], lambda t, p: t.add_(p),
                    allocate(prog, lambda k: torch.empty(k)))
            got.append(finish(prog, state, flat, None, {}))
        results[r] = got

    threads = [threading.Thread(target=run, args=(r,)) for r in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    want = inputs[0] + inputs[1]
    assert all(torch.equal(x, want) for r in range(2) for x in results[r]), results
    assert all(links[r].sent == links[r].taken for r in range(2))


def test_empty_packets_and_packets_out_of_turn():
    _, links, errors, _ = _two_ends()
    assert errors == []
    a, b = links
    sent = a.isend(torch.empty(0), 1, a.sent[1], _Op)
    got = b.irecv(torch.empty(0), 0, b.taken[0], _Op)
    b.wait(got, _Op)
    assert a.test(sent) and got.done
    a.isend(torch.ones(3), 1, 7, _Op)           # b expects another packet
    with pytest.raises(ProcessGroupError, match="different programs"):
        b.wait(b.irecv(torch.empty(3), 0, 8, _Op), _Op)


def test_a_wait_without_a_sender_times_out_naming_the_peer():
    _, links, errors, _ = _two_ends()
    b = links[1]
    b.timeout = 0.05
    with pytest.raises(ProcessGroupError, match=r"rank 0 \(node 0\) did not exchange .* 0.05 s"):
        b.wait(b.irecv(torch.empty(4), 0, 0, _Op), _Op)


def test_ranks_with_other_programs_are_refused_when_the_channels_open():
    """Node 1 cuts the messages into other packets: its channel sizes do not match."""
    import secrets
    import threading

    from topocoll.runtime.program import compile_program
    from topocoll.runtime.shm import open_channels

    schedule = generate("ring:2", "allreduce")
    programs = [compile_program(schedule, 0, 64, slice_numel=8, window=2),
                compile_program(schedule, 1, 64, slice_numel=32, window=2)]
    name = f"test-{secrets.token_hex(4)}"
    barrier = threading.Barrier(2)
    errors = []

    def open_end(r):
        try:
            open_channels(programs[r], 4, r, name, barrier.wait)
        except threading.BrokenBarrierError:
            pass
        except ProcessGroupError as exc:
            errors.append(str(exc))
            barrier.abort()

    threads = [threading.Thread(target=open_end, args=(r,)) for r in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    # the rank that finds the other's channel of the wrong size says so; the other, if it was
    # still opening channels, finds that one's files gone and says that
    assert any("different programs" in e for e in errors)
    assert all("different programs" in e or "stopped while opening" in e for e in errors)
    assert not [f for f in os.listdir(SHM_DIR) if name in f]


def test_a_peer_that_failed_between_the_barriers_is_named_not_a_missing_file():
    """Alone, node 0 finds no channel from node 1 after the first barrier: as if node 1 had
    failed and removed its files; its own channel files are removed too."""
    import secrets

    from topocoll.runtime.program import compile_program
    from topocoll.runtime.shm import open_channels

    program = compile_program(generate("ring:2", "allreduce"), 0, 64, slice_numel=8, window=2)
    name = f"test-{secrets.token_hex(4)}"
    with pytest.raises(ProcessGroupError, match=r"node 1 stopped while opening its channels"):
        open_channels(program, 4, 0, name, lambda: None)
    assert not [f for f in os.listdir(SHM_DIR) if name in f]


def test_the_channel_files_of_a_killed_creator_are_removed_at_the_next_open():
    """As under torchrun, where no launcher of ours removes them: a rank killed after making
    its channel file and before its peer mapped it. The next rank to open channels removes
    it; a file whose creator lives is kept."""
    import secrets

    from topocoll.runtime.shm import Channel, remove_stale_channels

    dead = os.path.join(SHM_DIR, f"topocoll-test-{secrets.token_hex(4)}-0-1")
    alive = os.path.join(SHM_DIR, f"topocoll-test-{secrets.token_hex(4)}-1-0")
    pid = os.fork()
    if pid == 0:                      # the creator: makes its file, then dies without a word
        try:
            Channel(dead, 2, 4096, create=True)
        finally:
            os._exit(0)
    os.waitpid(pid, 0)
    Channel(alive, 2, 4096, create=True)      # this process made it: alive
    try:
        assert os.path.exists(dead)
        removed = remove_stale_channels()
        assert os.path.basename(dead) in removed and not os.path.exists(dead)
        assert os.path.exists(alive) and os.path.basename(alive) not in removed
    finally:
        for path in (dead, alive):
            if os.path.exists(path):
                os.unlink(path)


_IN_A_FOLDER = '''
import torch
from topocoll.runtime import ScheduleCollective, run_local
from topocoll.runtime.shm import SHM_DIR, host_identity
from topocoll.synth import generate


def rank(r, n):
    c = ScheduleCollective(generate("ring:2", "allreduce"), transport="shared_memory")
    x = c(torch.full((4,), float(r + 1)))
    with open("/proc/self/maps") as f:
        fields = [line.split(None, 5) for line in f]
    mapped = sorted({p[5].strip() for p in fields if len(p) == 6 and "/topocoll-" in p[5]})
    return x.tolist(), mapped


if __name__ == "__main__":
    print(repr((SHM_DIR, host_identity()["shm"], run_local(rank, 2, start_method="fork",
                                                           timeout=120))))
'''


def test_the_channels_go_to_the_folder_the_environment_names(tmp_path):
    import ast
    import subprocess
    import sys

    folder = tmp_path / "channels"
    folder.mkdir()
    (tmp_path / "job.py").write_text(_IN_A_FOLDER)
    env = dict(os.environ, TOPOCOLL_SHM_DIR=str(folder))
    done = subprocess.run([sys.executable, "job.py"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    shm_dir, identity, out = ast.literal_eval(done.stdout.strip().splitlines()[-1])
    assert shm_dir == str(folder)
    # the identity names the folder, so ranks given different folders are refused
    assert identity == (folder.stat().st_dev, folder.stat().st_ino) != host_identity()["shm"]
    for values, mapped in out:
        assert values == [3.0] * 4
        assert mapped and all(p.startswith(f"{folder}/topocoll-") for p in mapped), mapped
    assert list(folder.iterdir()) == []
