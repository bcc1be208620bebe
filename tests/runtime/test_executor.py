"""Schedules run on torch.distributed (gloo, local processes): every collective, BFB, TEN and
baseline schedules, prime sizes, several dtypes, against the collective's definition and
against torch's own all_reduce; plus the failures a user must see clearly."""

import os
import numpy as np
import pytest
import torch
import torch.distributed as dist

from topocoll.errors import InvalidScheduleError, ProcessGroupError
from topocoll.runtime import ScheduleCollective, run_local, run_schedule
from topocoll.synth import generate
from topocoll.synth.ten import synthesize

from tests.runtime.test_plan import expected, numel_for

DTYPES = {"float32": torch.float32, "float64": torch.float64, "int64": torch.int64,
          "bfloat16": torch.bfloat16}


def _cases(n):
    """(label, schedule) for a world of n ranks, built the same way on every rank."""
    spec = {2: "ring:2", 3: "ring:3", 5: "genkautz:5,2"}[n]
    out = []
    for name in ("allgather", "reduce_scatter", "allreduce", "broadcast", "reduce"):
        root = 1 if name in ("broadcast", "reduce") else None
        out.append((f"bfb {name}", generate(spec, name, "bfb", root=root)))
    for name in ("scatter", "gather", "alltoall", "allreduce"):
        root = n - 1 if name in ("scatter", "gather") else None
        out.append((f"ten {name}", synthesize(spec, name, root=root, chunks=2)))
    return out


def _inputs(n, numel, seed):
    """Every rank's input, integer-valued so that every dtype sums exactly in any order."""
    rng = np.random.default_rng(seed)
    return [rng.integers(-4, 5, size=numel).astype(np.float64) for _ in range(n)]


def _all_checks(rank, world_size):
    failures = []
    for label, schedule in _cases(world_size):
        name = schedule.collective.name
        collective = ScheduleCollective(schedule)
        for dtype_name, dtype in DTYPES.items():
            for unit in (1, 7, 13):
                numel = numel_for(name, world_size, unit)
                inputs = _inputs(world_size, numel, seed=unit)
                want = expected(name, inputs, schedule.root)[rank]
                x = torch.tensor(inputs[rank], dtype=dtype)
                got = collective(x)
                if want is not None and not torch.equal(got.double(),
                                                        torch.tensor(want, dtype=torch.float64)):
                    failures.append((label, dtype_name, numel))
    # against torch's own all_reduce, twice through the same prepared collective (buffers reused)
    allreduce = ScheduleCollective(generate({2: "ring:2", 3: "ring:3", 5: "genkautz:5,2"}
                                            [world_size], "allreduce"))
    for numel in (101, 1009):
        x = torch.arange(numel, dtype=torch.float32) * (rank + 1)
        ours = allreduce(x.clone())
        theirs = x.clone()
        dist.all_reduce(theirs)
        if not torch.equal(ours, theirs):
            failures.append(("vs torch all_reduce", "float32", numel))
    # other reductions and the async form
    x = torch.tensor([float(rank + 1), -float(rank)])
    handle = run_schedule(generate("ring:%d" % world_size, "allreduce"), x.clone(), op="max",
                          async_op=True)
    if handle.wait().tolist() != [float(world_size), 0.0]:
        failures.append(("max async", "float32", 2))
    return failures


@pytest.mark.parametrize("world_size", [2, 3, 5])
def test_every_collective_runs_and_computes_its_definition(world_size):
    results = run_local(_all_checks, world_size, start_method="fork", timeout=300)
    assert results == [[]] * world_size


def _wrong_world(rank, world_size):
    try:
        ScheduleCollective(generate("ring:3", "allgather"))
    except ProcessGroupError as exc:
        return str(exc)
    return "accepted"


def _invalid(rank, world_size, path):
    try:
        run_schedule(path, torch.zeros(4))
    except InvalidScheduleError as exc:
        return str(exc).split(":")[0]
    return "accepted"


def test_a_schedule_for_another_world_size_is_refused():
    out = run_local(_wrong_world, 2, start_method="fork", timeout=120)
    assert all("schedule is for 3 nodes but the group has 2 ranks" in text for text in out)


def test_an_invalid_schedule_is_refused_before_running():
    from tests.helpers import DATA
    out = run_local(_invalid, 4, (str(DATA / "invalid-causality.json"),), start_method="fork",
                    timeout=120)
    assert out == ["invalid"] * 4


def _without_rank_two(rank, folder, body):
    """Rank 2 stays away from ``body()`` but alive until both others have given up (they
    leave a file each); the others return what ``body`` raised (or that it finished)."""
    import os
    import time

    if rank == 2:
        deadline = time.monotonic() + 120
        while len(os.listdir(folder)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        return "skipped"
    try:
        body()
        text = "finished"
    except ProcessGroupError as exc:
        text = str(exc)
    open(os.path.join(folder, str(rank)), "w").close()
    return text


def _one_rank_never_comes(rank, world_size, folder, transport):
    """Rank 2 skips the collective, so the others' first step can never complete: they must
    say which rank and which step (slice_bytes given and the network's links: nothing to
    agree on when it is built)."""
    schedule = generate("ring:3", "allgather")
    return _without_rank_two(rank, folder, lambda: ScheduleCollective(
        schedule, timeout=3, slice_bytes=1 << 20, transport=transport)(torch.ones(4)))


def test_a_peer_that_never_sends_is_named_with_the_step(tmp_path):
    out = run_local(_one_rank_never_comes, 3, (str(tmp_path), "network"),
                    start_method="fork", timeout=200)
    assert out[2] == "skipped"
    for text in out[:2]:
        assert text.startswith("step 1: rank 2 (node 2) did not exchange its message within 3 s")


def test_a_rank_that_never_builds_it_is_reported_when_the_transport_is_chosen(tmp_path):
    """With the default transport (auto) building the collective asks every rank."""
    out = run_local(_one_rank_never_comes, 3, (str(tmp_path), "auto"), start_method="fork",
                    timeout=200)
    assert out[2] == "skipped"
    for text in out[:2]:
        assert text.startswith("the ranks did not agree on the transport: not every rank of "
                               "the group built this ScheduleCollective within 3 s"), text


def _one_rank_never_builds(rank, world_size, folder):
    """Rank 2 never builds the collective: the others' default slice size cannot be agreed."""
    return _without_rank_two(rank, folder, lambda: ScheduleCollective(
        generate("ring:3", "allgather"), timeout=3))


def test_a_rank_that_never_builds_the_collective_is_reported(tmp_path):
    out = run_local(_one_rank_never_builds, 3, (str(tmp_path),), start_method="fork",
                    timeout=200)
    assert out[2] == "skipped"
    for text in out[:2]:
        assert text.startswith("the ranks did not agree on the slice size: not every rank of "
                               "the group built this ScheduleCollective within 3 s")


def _dies_at_step_one(rank, world_size):
    import os

    if rank == 1:
        os._exit(3)
    ScheduleCollective(generate("ring:2", "allreduce"))(torch.ones(8))
    return "finished"


def test_a_peer_that_dies_is_named():
    with pytest.raises(ProcessGroupError, match=r"rank 1 .*exit"):
        run_local(_dies_at_step_one, 2, start_method="fork", timeout=60)


def _eight_ranks(rank, world_size):
    """A world of 8: BFB on a hypercube and on a random strongly connected digraph, the ring
    and recursive halving-doubling baselines, and an alltoall from the LP, with a rank map."""
    from topocoll.throughput import alltoall_schedule, path_throughput
    from topocoll.topology import Topology, topology

    rng = np.random.default_rng(7)                     # the same digraph on every rank
    perm = rng.permutation(8)
    src = list(perm) + rng.integers(0, 8, 6).tolist()
    dst = list(np.roll(perm, -1)) + rng.integers(0, 8, 6).tolist()
    keep = [i for i in range(len(src)) if src[i] != dst[i]]
    digraph = Topology(8, [src[i] for i in keep], [dst[i] for i in keep])
    torus = topology("torus:2x4", bandwidth=1.0)
    cases = [generate("hypercube:3", "allreduce"), generate(digraph, "allgather"),
             generate(digraph, "reduce_scatter"), generate("uniring:8", "allreduce", "ring"),
             generate("hypercube:3", "allreduce", "rhd"),
             alltoall_schedule(path_throughput(torus), torus)]
    failures = []
    for schedule in cases:
        name = schedule.collective.name
        numel = numel_for(name, 8, 11)
        inputs = _inputs(8, numel, seed=3)
        want = expected(name, inputs, schedule.root)[rank]
        got = ScheduleCollective(schedule)(torch.tensor(inputs[rank]))
        if not torch.equal(got, torch.tensor(want)):
            failures.append((schedule.algorithm, name))
    # rank_map: node v is played by rank 7 - v
    reversed_map = list(range(7, -1, -1))
    x = torch.tensor(_inputs(8, 5, seed=4)[rank])
    got = ScheduleCollective(generate("ring:8", "allgather"), rank_map=reversed_map)(x)
    inputs = _inputs(8, 5, seed=4)
    want = np.concatenate([inputs[reversed_map[v]] for v in range(8)])
    if not torch.equal(got, torch.tensor(want)):
        failures.append(("rank_map", "allgather"))
    return failures


def test_a_world_of_eight_with_random_topologies_baselines_lp_and_a_rank_map():
    assert run_local(_eight_ranks, 8, start_method="fork", timeout=300) == [[]] * 8


def _peer_leaves(rank, world_size):
    """Rank 1 leaves the group before the collective; rank 0 must name it."""
    import os

    if rank == 1:
        os._exit(0)
    try:
        ScheduleCollective(generate("ring:2", "allreduce"))(torch.ones(8))
    except ProcessGroupError as exc:
        return str(exc)
    return "finished"


def test_in_a_users_program_a_lost_peer_is_named_with_the_step():
    with pytest.raises(ProcessGroupError) as err:
        run_local(_peer_leaves, 2, start_method="fork", timeout=120)
    assert str(err.value).startswith("rank 1 exited (status 0) without returning")


def _defaults_differ(rank, world_size):
    """Rank 0 thinks it has a machine to itself (1 MiB slices), the others that they share
    one (whole messages): they must agree on the least."""
    import os

    from topocoll.runtime.program import DEFAULT_SLICE_BYTES, WHOLE_MESSAGES, default_slice_bytes

    os.environ["LOCAL_WORLD_SIZE"] = "1" if rank == 0 else str(4 * (os.cpu_count() or 1))
    mine = default_slice_bytes(cores=2)
    collective = ScheduleCollective(generate("ring:3", "allreduce"))
    x = torch.arange(6.0) + rank
    collective(x)
    return mine == (DEFAULT_SLICE_BYTES if rank == 0 else WHOLE_MESSAGES), \
        collective.slice_bytes, x.tolist()


def test_ranks_agree_on_the_least_default_slice_size():
    from topocoll.runtime.program import DEFAULT_SLICE_BYTES

    out = run_local(_defaults_differ, 3, start_method="fork", timeout=120)
    for differs, agreed, result in out:
        assert differs and agreed == min(DEFAULT_SLICE_BYTES, agreed)
        assert agreed == DEFAULT_SLICE_BYTES or (os.cpu_count() or 1) < 2
        assert result == [3.0 * v + 3.0 for v in range(6)]


def _engine_choice(rank, world_size):
    """engine="auto": dataflow on gloo; steps where the backend is NCCL (asked of
    torch.distributed, faked here: no machine of the tests has GPUs); both compute alike."""
    schedule = generate("ring:3", "allreduce")
    on_gloo = ScheduleCollective(schedule)
    real = dist.get_backend
    dist.get_backend = lambda group=None: "nccl"
    try:
        on_nccl = ScheduleCollective(schedule)
    finally:
        dist.get_backend = real
    x, y = torch.arange(6.0) + rank, torch.arange(6.0) + rank
    on_gloo(x)
    on_nccl(y)
    return on_gloo.engine, on_nccl.engine, x.tolist() == y.tolist() == [3.0 * v + 3 for v in
                                                                        range(6)]


def test_auto_engine_is_dataflow_on_gloo_and_steps_on_nccl():
    out = run_local(_engine_choice, 3, start_method="fork", timeout=120)
    assert out == [("dataflow", "steps", True)] * 3
