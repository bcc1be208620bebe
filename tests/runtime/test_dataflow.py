"""The dataflow engine on the in-memory network (:mod:`topocoll.runtime.loopback`): random
topologies, every collective, every generator, random packet sizes, windows and data-move
timings give exactly the collective's definition and never deadlock; programs broken on
purpose give wrong results or deadlocks (so the checks can fail), and a deadlock is reported
within the timeout instead of hanging."""

import random
import time
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from topocoll.errors import ProcessGroupError
from topocoll.runtime.loopback import simulate_dataflow
from topocoll.runtime.plan import simulate_plans
from topocoll.schedule import verify
from topocoll.synth import generate
from topocoll.synth.ten import synthesize
from topocoll.throughput import alltoall_schedule, path_throughput
from topocoll.topology import topology

from tests.runtime.test_plan import ROOTED, expected, numel_for
from tests.runtime.test_program import (ALL, FIXED, HAND_MADE, MAKERS, chain_allreduce,
                                        exchange_allreduce, programs, schedules,
                                        stale_send_allreduce,
                                        wasted_write_allreduce)


def integer_inputs(n, numel, seed):
    """Integer-valued float64 inputs: every order of summation gives the same bits."""
    rng = np.random.default_rng(seed)
    return [rng.integers(-50, 51, size=numel).astype(np.float64) for _ in range(n)]


def assert_exact(schedule, inputs, got):
    want = expected(schedule.collective.name, inputs, schedule.root)
    for r, (g, e) in enumerate(zip(got, want)):
        if e is not None:
            assert g.dtype == np.float64
            assert np.array_equal(g, e), (schedule.algorithm, schedule.collective.name, r, g, e)


# ------------------------------------------------------------------ a driver with hooks
class _Jitter:
    """Links that sleep a little before some waits: slow ranks, drawn by seed."""

    def __init__(self, links, rng):
        self.links, self.rng = links, rng

    def isend(self, *args):
        return self.links.isend(*args)

    def irecv(self, *args):
        return self.links.irecv(*args)

    def test(self, request):
        return self.links.test(request)

    def wait(self, request, op):
        pause = self.rng.choice((0, 0, 0, 0.0005, 0.002))
        if pause:
            time.sleep(pause)
        return self.links.wait(request, op)


def _add(target, piece):
    target += piece


def run_programs(schedule, inputs, *, slice_numel, window=2, seed=0, timeout=5.0, mutate=None,
                 jitter=False, in_place_numel=None):
    """:func:`simulate_dataflow` with ``mutate(prog)`` changing each rank's compiled program
    before it runs, and ``jitter`` making waits sleep at random (by ``seed``) so that ranks
    run at different speeds."""
    def jittered(links, r):
        return _Jitter(links, random.Random(seed * 1000 + r))

    return simulate_dataflow(schedule, inputs, slice_numel=slice_numel, window=window,
                             seed=seed, timeout=timeout, program_hook=mutate,
                             links_hook=jittered if jitter else None,
                             in_place_numel=in_place_numel)


def outcome(schedule, inputs, **kwargs):
    """``"right"``, ``"wrong"`` or ``"deadlock"``."""
    try:
        got = run_programs(schedule, inputs, **kwargs)
    except ProcessGroupError as exc:
        assert "deadlock" in str(exc), exc
        return "deadlock"
    want = expected(schedule.collective.name, inputs, schedule.root)
    right = all(e is None or np.array_equal(g, e) for g, e in zip(got, want))
    return "right" if right else "wrong"


# ------------------------------------------------------------------ right and deadlock-free
@pytest.mark.parametrize("maker, name", MAKERS)
@settings(max_examples=6, deadline=None)
@given(data=st.data(), unit=st.integers(1, 17), slice_numel=st.integers(1, 50),
       window=st.integers(1, 4), seed=st.integers(0, 2**16),
       in_place=st.one_of(st.none(), st.integers(1, 20)))
def test_random_schedules_compute_their_collective_exactly(maker, name, data, unit,
                                                           slice_numel, window, seed, in_place):
    schedule = data.draw(schedules(maker, name, max_nodes=7))
    assert verify(schedule).valid
    n = schedule.topology.num_nodes
    inputs = integer_inputs(n, numel_for(name, n, unit), seed)
    got = simulate_dataflow(schedule, inputs, slice_numel=slice_numel, window=window,
                            seed=seed, timeout=20, in_place_numel=in_place)
    assert_exact(schedule, inputs, got)
    lock_step = simulate_plans(schedule, inputs)
    for r, (g, p) in enumerate(zip(got, lock_step)):
        if expected(name, inputs, schedule.root)[r] is not None:
            assert np.array_equal(g, p)


@pytest.mark.parametrize("maker, name", MAKERS)
@settings(max_examples=2, deadline=None)
@given(data=st.data(), unit=st.integers(1, 9), slice_numel=st.integers(1, 6),
       window=st.integers(1, 3), seed=st.integers(0, 2**16))
def test_random_schedules_with_ranks_at_random_speeds(maker, name, data, unit, slice_numel,
                                                     window, seed):
    schedule = data.draw(schedules(maker, name, max_nodes=5))
    n = schedule.topology.num_nodes
    inputs = integer_inputs(n, numel_for(name, n, unit), seed)
    got = run_programs(schedule, inputs, slice_numel=slice_numel, window=window, seed=seed,
                       timeout=20, jitter=True, in_place_numel=1 if seed % 2 else None)
    assert_exact(schedule, inputs, got)


@pytest.mark.parametrize("name", ALL)
@pytest.mark.parametrize("spec", ["ring:5", "torus:3x3", "hypercube:3", "genkautz:10,2"])
def test_ten_schedules(spec, name):
    t = topology(spec)
    n = t.num_nodes
    root = n - 1 if name in ROOTED else None
    schedule = synthesize(t, name, root=root, chunks=3)
    for unit, slice_numel, window, seed in ((1, 1, 1, 0), (7, 3, 2, 1), (13, 50, 4, 2)):
        inputs = integer_inputs(n, numel_for(name, n, unit), seed)
        got = simulate_dataflow(schedule, inputs, slice_numel=slice_numel, window=window,
                                seed=seed, timeout=20)
        assert_exact(schedule, inputs, got)


@pytest.mark.parametrize("spec", ["torus:3x3", "hypercube:3", "circulant:7:1,3", "ring:4"])
def test_alltoall_schedules_from_the_lp(spec):
    t = topology(spec, bandwidth=1.0)
    schedule = alltoall_schedule(path_throughput(t), t)
    n = t.num_nodes
    for unit, slice_numel, window, seed in ((1, 1, 1, 0), (11, 4, 3, 1), (5, 50, 2, 2)):
        inputs = integer_inputs(n, n * unit, seed)
        got = simulate_dataflow(schedule, inputs, slice_numel=slice_numel, window=window,
                                seed=seed, timeout=20)
        assert_exact(schedule, inputs, got)


@pytest.mark.parametrize("algorithm, spec, name", FIXED)
def test_baselines(algorithm, spec, name):
    schedule = generate(spec, name, algorithm)
    n = schedule.topology.num_nodes
    for unit, slice_numel, window, seed in ((1, 1, 1, 0), (9, 2, 3, 1)):
        inputs = integer_inputs(n, numel_for(name, n, unit), seed)
        got = simulate_dataflow(schedule, inputs, slice_numel=slice_numel, window=window,
                                seed=seed, timeout=20)
        assert_exact(schedule, inputs, got)


def test_sends_that_read_what_their_own_step_changes():
    """The one-step exchange: every send needs its snapshot."""
    schedule = exchange_allreduce(4)
    assert verify(schedule).valid
    for seed in range(6):
        inputs = integer_inputs(4, 10, seed)
        assert_exact(schedule, inputs, simulate_dataflow(schedule, inputs, slice_numel=3,
                                                         window=1, seed=seed, timeout=20))


def test_other_dtypes_and_the_same_bits_on_every_run():
    schedule = generate("torus:3x3", "allreduce")
    rng = np.random.default_rng(5)
    inputs = [rng.standard_normal(50) for _ in range(9)]
    runs = [simulate_dataflow(schedule, inputs, slice_numel=4, window=2, seed=seed)
            for seed in range(3)]
    for other in runs[1:]:
        assert all(np.array_equal(a, b) for a, b in zip(runs[0], other))
    np.testing.assert_allclose(runs[0][0], sum(inputs), rtol=1e-12, atol=1e-12)
    ints = [x.astype(np.int32) for x in integer_inputs(9, 50, 1)]
    got = simulate_dataflow(schedule, ints, slice_numel=4, window=2, seed=1)
    assert got[3].dtype == np.int32 and np.array_equal(got[3], sum(ints))


@pytest.mark.parametrize("maker", ["bfb", "ten", "trees", "ring"])
@settings(max_examples=4, deadline=None)
@given(data=st.data(), slice_numel=st.integers(1, 30), seed=st.integers(0, 2**16))
def test_an_allreduce_of_real_numbers_gives_the_same_bits_everywhere(maker, data, slice_numel,
                                                                    seed):
    """Whatever the timing, every rank ends with the same bits, run after run (writes run in
    program order): what data-parallel training needs of an allreduce."""
    schedule = data.draw(schedules(maker, "allreduce", max_nodes=6))
    n = schedule.topology.num_nodes
    rng = np.random.default_rng(seed)
    inputs = [rng.standard_normal(41) for _ in range(n)]
    first = simulate_dataflow(schedule, inputs, slice_numel=slice_numel, window=2, seed=seed)
    again = run_programs(schedule, inputs, slice_numel=slice_numel, window=3, seed=seed + 1,
                         jitter=True)
    for got in (first, again):
        assert all(np.array_equal(first[0], g) for g in got)
    np.testing.assert_allclose(first[0], sum(inputs), rtol=1e-12, atol=1e-12)


# ------------------------------------------------------------------ broken programs fail
def _map(sends=None, recvs=None):
    def mutate(prog):
        if sends is not None:
            prog.sends = [sends(op) for op in prog.sends]
        if recvs is not None:
            prog.recvs = [recvs(op) for op in prog.recvs]
        prog.staging = {}
        for op in prog.recvs:
            if not op.direct:
                prog.staging[op.peer] = max(prog.staging.get(op.peer, 0), op.numel)
        return prog
    return mutate


RING = generate("uniring:4", "allreduce", "ring")

#: what -> (schedule, numel, jitter, mutate, [(slice_numel, window)]): each rule of the
#: module text broken in turn.
BROKEN = {
    # a send leaves before the writes it reads are done
    "sends wait for nothing": (RING, 24, False, _map(sends=lambda op: replace(op, after=0)),
                               [(1, 1), (2, 2)]),
    # a staging buffer is received into again before its packet was applied
    "staging never released": (RING, 24, False,
                               _map(recvs=lambda op: replace(op, release=-1)), [(1, 1), (2, 2)]),
    # a reduced packet received straight into the shard: it overwrites instead of adding
    "reductions received in place": (RING, 24, False, _map(recvs=lambda op: replace(
        op, direct=True, slot=-1, release=-1) if op.pieces[0][3] and len(op.pieces) == 1
        else op), [(1, 1), (2, 2)]),
    # a send reads a region that a write of its own step changes
    "no snapshots": (exchange_allreduce(3), 12, False,
                     _map(sends=lambda op: replace(op, snapshot=False)), [(1, 1), (2, 2)]),
    # a write changes a region an earlier send still reads
    "writes wait for no send": (chain_allreduce(), 6, True,
                                _map(recvs=lambda op: replace(op, wait_sends=())),
                                [(1, 1), (2, 2)]),
    # a copy received in place although a send of its step has still to read the region
    "copies in place despite a same-step send": (
        stale_send_allreduce(), 12, False, _map(recvs=lambda op: replace(
            op, direct=True, slot=-1, release=-1) if not op.direct and len(op.pieces) == 1
            and not op.pieces[0][3] else op), [(4, 2)]),
    # a copy received in place, posted at once, although an earlier write or send touches
    # the region (the compiler stages such copies)
    "copies in place despite earlier writes": (
        wasted_write_allreduce(), 12, True, _map(recvs=lambda op: replace(
            op, direct=True, after=0, wait_sends=(), slot=-1, release=-1)
            if not op.direct and len(op.pieces) == 1 and not op.pieces[0][3] else op),
        [(2, 2), (4, 1)]),
}


@pytest.mark.parametrize("what", sorted(BROKEN))
def test_a_broken_program_gives_a_wrong_result_under_some_timing(what):
    schedule, numel, jitter, mutate, configs = BROKEN[what]
    n = schedule.topology.num_nodes
    inputs = integer_inputs(n, numel, 3)
    seen = set()
    for seed in range(24):
        slice_numel, window = configs[seed % len(configs)]
        kwargs = dict(slice_numel=slice_numel, window=window, seed=seed, timeout=2,
                      jitter=jitter)
        assert outcome(schedule, inputs, **kwargs) == "right"      # the program as compiled
        seen.add(outcome(schedule, inputs, mutate=mutate, **kwargs))
        if seen - {"right"}:
            break
    assert seen - {"right"}, f"{what}: every run was still right"


@pytest.mark.parametrize("which", sorted(HAND_MADE))
def test_hand_made_schedules_that_need_every_rule(which):
    schedule = HAND_MADE[which]()
    for seed in range(16):
        inputs = integer_inputs(3, 12, seed)
        slice_numel, window = [(1, 1), (2, 2), (4, 2), (4, 1), (12, 3)][seed % 5]
        got = (simulate_dataflow(schedule, inputs, slice_numel=slice_numel, window=window,
                                 seed=seed, timeout=20) if seed % 2 else
               run_programs(schedule, inputs, slice_numel=slice_numel, window=window,
                            seed=seed, timeout=20, jitter=True))
        assert_exact(schedule, inputs, got)


def drop_send(prog, i):
    """``prog`` without its send ``i`` (indices of the others renumbered)."""
    prog.sends = prog.sends[:i] + prog.sends[i + 1:]
    prog.recvs = [replace(op, wait_sends=tuple(j - (j > i) for j in op.wait_sends if j != i))
                  for op in prog.recvs]
    prog.send_links = {}
    for j, op in enumerate(prog.sends):
        prog.send_links.setdefault(op.peer, []).append(j)
    for idx in prog.send_links.values():
        idx.sort(key=lambda j: prog.sends[j].tag)
    return prog


@pytest.mark.parametrize("which", ["first", "middle", "last"])
def test_a_receive_never_matched_is_reported_as_a_deadlock_within_the_timeout(which):
    schedule = generate("ring:4", "allreduce")
    inputs = integer_inputs(4, 16, 0)

    def mutate(prog):
        if prog.rank != 2:
            return prog
        i = {"first": 0, "middle": len(prog.sends) // 2, "last": len(prog.sends) - 1}[which]
        return drop_send(prog, i)
    start = time.monotonic()
    with pytest.raises(ProcessGroupError, match=r"step \d+: no progress .* for 2 s: deadlock"):
        run_programs(schedule, inputs, slice_numel=2, window=2, timeout=2, mutate=mutate)
    assert time.monotonic() - start < 10


def test_a_send_that_waits_for_its_own_step_deadlocks():
    """The rule that makes programs deadlock-free, broken: in the one-step exchange each send
    waits for a write that needs the other ranks' sends."""
    schedule = exchange_allreduce(3)
    inputs = integer_inputs(3, 9, 0)
    assert outcome(schedule, inputs, slice_numel=2, timeout=2) == "right"
    start = time.monotonic()
    assert outcome(schedule, inputs, slice_numel=2, timeout=2,
                   mutate=_map(sends=lambda op: replace(op, after=1))) == "deadlock"
    assert time.monotonic() - start < 10


def test_simulate_dataflow_reports_a_deadlock_too(monkeypatch):
    """Through the public function: a compiled program missing one send on rank 1."""
    import topocoll.runtime.loopback as loopback

    real = loopback.compile_program

    def compile_without_a_send(schedule, rank, numel, **kwargs):
        prog = real(schedule, rank, numel, **kwargs)
        return drop_send(prog, 1) if rank == 1 else prog
    monkeypatch.setattr(loopback, "compile_program", compile_without_a_send)
    start = time.monotonic()
    with pytest.raises(ProcessGroupError, match="deadlock"):
        simulate_dataflow(generate("ring:3", "allgather"), integer_inputs(3, 4, 0),
                          slice_numel=1, timeout=2)
    assert time.monotonic() - start < 10


def _direct_after_earlier_work(prog):
    """Staged single-range copies made direct, posted only once every earlier write is done
    and the earlier sends of the range have completed: what the engine must honour for any
    program (the compiler only makes direct receives that wait for nothing)."""
    prog.recvs = [replace(op, direct=True, after=index, slot=-1, release=-1)
                  if not op.direct and len(op.pieces) == 1 and not op.pieces[0][3] else op
                  for index, op in enumerate(prog.recvs)]
    return _map()(prog)


@pytest.mark.parametrize("which", ["ring", "wasted_write", "chain"])
def test_direct_receives_that_wait_are_honoured(which):
    schedule, numel = {"ring": (RING, 24), "wasted_write": (wasted_write_allreduce(), 12),
                       "chain": (chain_allreduce(), 6)}[which]
    n = schedule.topology.num_nodes
    changed = [_direct_after_earlier_work(p) for p in programs(schedule, numel, 2, 2)]
    assert any(op.direct and (op.after or op.wait_sends) for p in changed for op in p.recvs)
    for seed in range(8):
        inputs = integer_inputs(n, numel, seed)
        assert outcome(schedule, inputs, slice_numel=1 + seed % 3, window=1 + seed % 2,
                       seed=seed, timeout=5, jitter=bool(seed % 2),
                       mutate=_direct_after_earlier_work) == "right"
