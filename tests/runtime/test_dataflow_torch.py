"""The dataflow engine on torch.distributed (gloo, local processes): TEN, all-to-all and BFB
schedules on random topologies, cut into packets of a few bytes, every collective, against
torch's own collectives; the lock-step engine gives the same results; bad options are
refused."""

import numpy as np
import pytest
import torch
import torch.distributed as dist

from topocoll.errors import InputTypeError, UnsupportedError
from topocoll.runtime import ScheduleCollective, run_local, run_schedule
from topocoll.synth import generate
from topocoll.synth.bfb import BFB_COLLECTIVES
from topocoll.synth.ten import synthesize
from topocoll.throughput import alltoall_schedule, path_throughput
from topocoll.topology import Topology

from tests.runtime.test_plan import ROOTED, numel_for
from tests.runtime.test_program import ALL, HAND_MADE, exchange_allreduce

#: (slice_bytes, window): packets of one to a few elements.
CONFIGS = ((8, 1), (24, 3))


def random_topology(n, seed):
    """A random strongly connected digraph: a random Hamiltonian cycle and a few more arcs."""
    rng = np.random.default_rng(seed)
    perm = rng.permutation(n)
    src, dst = list(perm), list(np.roll(perm, -1))
    for _ in range(n):
        u, v = rng.choice(n, size=2, replace=False)
        src.append(int(u))
        dst.append(int(v))
    return Topology(n, src, dst, name=f"random:{n}:{seed}")


def cases(n, seed):
    """(label, schedule): TEN for every collective, the LP's alltoall and BFB for its five, on
    one random topology; rooted ones at a random root; and the hand-made allreduces that need
    snapshots, staged copies and waits for sends (three nodes; the exchange on any number)."""
    t = random_topology(n, seed)
    root = int(np.random.default_rng(seed).integers(n))
    out = []
    for name in ALL:
        out.append((f"ten {name}", synthesize(t, name, root=root if name in ROOTED else None,
                                              chunks=2, seed=seed)))
    out.append(("lp alltoall", alltoall_schedule(path_throughput(t), t)))
    for name in BFB_COLLECTIVES:
        out.append((f"bfb {name}", generate(t, name, "bfb",
                                            root=root if name in ROOTED else None)))
    if n == 3:
        out += [(f"hand-made {key}", make()) for key, make in sorted(HAND_MADE.items())]
    else:
        out.append(("hand-made exchange", exchange_allreduce(n)))
    return out


def torch_collective(name, x, root, rank, n):
    """What torch's own collective gives (None where the rank has no defined result)."""
    if name == "allgather":
        out = torch.empty(n * x.numel(), dtype=x.dtype)
        dist.all_gather_into_tensor(out, x)
        return out
    if name == "reduce_scatter":
        out = torch.empty(x.numel() // n, dtype=x.dtype)
        dist.reduce_scatter_tensor(out, x)
        return out
    if name == "allreduce":
        out = x.clone()
        dist.all_reduce(out)
        return out
    if name == "broadcast":
        out = x.clone()
        dist.broadcast(out, src=root)
        return out
    if name == "reduce":
        out = x.clone()
        dist.reduce(out, dst=root)
        return out if rank == root else None
    if name == "scatter":
        out = torch.empty(x.numel() // n, dtype=x.dtype)
        dist.scatter(out, list(x.chunk(n)) if rank == root else None, src=root)
        return out
    if name == "gather":
        parts = [torch.empty_like(x) for _ in range(n)] if rank == root else None
        dist.gather(x, parts, dst=root)
        return torch.cat(parts) if rank == root else None
    if name == "alltoall":
        out = torch.empty_like(x)
        dist.all_to_all_single(out, x)
        return out
    raise AssertionError(name)


def inputs(n, numel, seed, dtype):
    """Every rank's input, integer-valued: every order of summation gives the same bits."""
    rng = np.random.default_rng(seed)
    return [torch.tensor(rng.integers(-20, 21, size=numel), dtype=dtype) for _ in range(n)]


def _against_torch(rank, world_size, all_cases):
    failures, compared = [], 0
    for label, schedule in all_cases:
        name, root = schedule.collective.name, schedule.root
        for slice_bytes, window in CONFIGS:
            ours = ScheduleCollective(schedule, slice_bytes=slice_bytes, window=window,
                                      engine="dataflow", timeout=60)
            steps = ScheduleCollective(schedule, engine="steps", timeout=60)
            for call, (dtype, unit) in enumerate(((torch.float64, 5), (torch.float32, 3),
                                                  (torch.float64, 5))):
                numel = numel_for(name, world_size, unit)
                x = inputs(world_size, numel, 10 * call + slice_bytes, dtype)[rank]
                want = torch_collective(name, x, root, rank, world_size)
                got = ours(x.clone())              # the third call reuses the first's buffers
                lock_step = steps(x.clone())
                if want is None:
                    continue
                compared += 1
                if not torch.equal(got, want):
                    failures.append((label, "vs torch", slice_bytes, window, str(dtype)))
                if not torch.equal(lock_step, got):
                    failures.append((label, "vs steps", slice_bytes, window, str(dtype)))
    return failures, compared


@pytest.mark.parametrize("world_size, seed", [(3, 11), (4, 12), (5, 13)])
def test_random_schedules_in_tiny_packets_match_torchs_collectives(world_size, seed):
    all_cases = cases(world_size, seed)
    assert {s.collective.name for _, s in all_cases} == set(ALL)
    out = run_local(_against_torch, world_size, (all_cases,), start_method="fork",
                    timeout=240)
    for rank, (failures, compared) in enumerate(out):
        assert failures == [], (rank, failures)
        # every case, both configs, three calls (gather and reduce: only the root's result)
        defined = sum(1 for _, s in all_cases
                      if s.collective.name not in ("gather", "reduce") or rank == s.root)
        assert compared == defined * len(CONFIGS) * 3


def _many_packets_in_flight(rank, world_size):
    """A larger buffer in 8-byte packets (about a thousand per rank and call), window 1 and 3,
    sum and max, in the async form."""
    t = random_topology(world_size, 21)
    schedule = generate(t, "allreduce")
    failures = []
    x = torch.arange(700, dtype=torch.float64) * (rank + 1) - 300
    for window, op, reference in ((1, "sum", dist.ReduceOp.SUM), (3, "max", dist.ReduceOp.MAX)):
        want = x.clone()
        dist.all_reduce(want, op=reference)
        handle = run_schedule(schedule, x.clone(), op=op, slice_bytes=8, window=window,
                              engine="dataflow", async_op=True, timeout=60)
        if not torch.equal(handle.wait(), want):
            failures.append((window, op))
    return failures


def test_a_thousand_packets_per_rank_with_small_windows():
    assert run_local(_many_packets_in_flight, 4, start_method="fork", timeout=240) == [[]] * 4


def _engines_on_uneven_sizes(rank, world_size):
    """engine="steps" and engine="dataflow" give the same tensors (every collective, sizes
    that do not divide evenly, several packet sizes), including int64."""
    failures = []
    for label, schedule in cases(world_size, 31):
        name = schedule.collective.name
        for unit in (1, 7):
            numel = numel_for(name, world_size, unit)
            x = inputs(world_size, numel, unit, torch.int64)[rank]
            a = ScheduleCollective(schedule, engine="steps")(x.clone())
            for slice_bytes, window in ((8, 2), (16, 1), (1 << 20, 4)):
                b = ScheduleCollective(schedule, engine="dataflow", slice_bytes=slice_bytes,
                                       window=window)(x.clone())
                if (a is None) != (b is None) or (a is not None and not torch.equal(a, b)):
                    failures.append((label, unit, slice_bytes))
    return failures


def test_the_two_engines_agree():
    assert run_local(_engines_on_uneven_sizes, 3, start_method="fork",
                     timeout=240) == [[]] * 3


# ------------------------------------------------------------------ bad options
@pytest.mark.parametrize("kwargs, what, error", [
    (dict(slice_bytes=0), "slice_bytes must be >= 1", UnsupportedError),
    (dict(slice_bytes=-8), "slice_bytes must be >= 1", UnsupportedError),
    (dict(slice_bytes=True), "slice_bytes", InputTypeError),
    (dict(slice_bytes=8.0), "slice_bytes", InputTypeError),
    (dict(slice_bytes="64"), "slice_bytes", InputTypeError),
    (dict(window=0), "window must be >= 1", UnsupportedError),
    (dict(window=-1), "window must be >= 1", UnsupportedError),
    (dict(window=True), "window", InputTypeError), (dict(window=2.0), "window", InputTypeError),
    (dict(window="3"), "window", InputTypeError),
    (dict(engine="nccl"), "engine", InputTypeError),
    (dict(engine="Dataflow"), "engine", InputTypeError),
    (dict(engine=None), "engine", InputTypeError),
])
def test_bad_slice_bytes_window_or_engine_are_refused(kwargs, what, error):
    schedule = generate("ring:3", "allreduce")
    with pytest.raises(error, match=what):
        ScheduleCollective(schedule, **kwargs)
    with pytest.raises(error, match=what):
        run_schedule(schedule, torch.zeros(6), **kwargs)


def _bad_options_in_a_group(rank, world_size):
    schedule = generate("ring:2", "allreduce")
    out = []
    for kwargs in (dict(slice_bytes=0), dict(window=0), dict(engine="gloo")):
        try:
            ScheduleCollective(schedule, **kwargs)
            out.append("accepted")
        except (InputTypeError, UnsupportedError) as exc:
            out.append(str(exc).split(" ")[0])
    # good options do run
    got = ScheduleCollective(schedule, slice_bytes=1, window=1)(torch.ones(3))
    out.append(got.tolist())
    return out


def test_bad_options_are_refused_in_a_process_group_too():
    out = run_local(_bad_options_in_a_group, 2, start_method="fork", timeout=120)
    assert out == [["slice_bytes", "window", "engine", [2.0, 2.0, 2.0]]] * 2
