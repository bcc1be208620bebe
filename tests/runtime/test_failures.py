"""What run_local says when ranks die, hang or cannot start; handles and wrappers dropped
without close(); frozen parameters; buffer reuse. Each check runs a few forked processes."""

import os
import time

import numpy as np
import pytest
import torch

from topocoll.errors import InputTypeError, ProcessGroupError
from topocoll.runtime import DecentralizedDataParallel, neighbor_allreduce, run_local

RING4 = np.array([[0.5, 0.25, 0, 0.25], [0.25, 0.5, 0.25, 0], [0, 0.25, 0.5, 0.25],
                  [0.25, 0, 0.25, 0.5]])


# -- a rank that dies ------------------------------------------------------------------------------

TRANSPORTS = ("network", "shared_memory")


def _rank_two_exits(rank, world_size, transport):
    x = torch.full((8,), float(rank))
    for k in range(3):
        if rank == 2 and k == 1:
            os._exit(3)
        x = neighbor_allreduce(x, RING4, k, transport=transport)
    return x.tolist()


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_rank_that_exits_is_named_not_its_neighbours(transport):
    with pytest.raises(ProcessGroupError) as err:
        run_local(_rank_two_exits, 4, (transport,), start_method="fork", timeout=60)
    headline = str(err.value).splitlines()[0]
    assert "rank 2" in headline and "exit code 3" in headline, str(err.value)
    assert "reset" not in headline.lower()


def _rank_three_raises(rank, world_size):
    x = torch.full((8,), float(rank))
    x = neighbor_allreduce(x, RING4, 0)
    if rank == 3:
        raise KeyError("rank three lost its key")
    return neighbor_allreduce(x, RING4, 1).tolist()


def test_a_rank_that_raises_is_the_headline():
    with pytest.raises(ProcessGroupError) as err:
        run_local(_rank_three_raises, 4, start_method="fork", timeout=60)
    text = str(err.value)
    assert text.splitlines()[0].startswith("rank 3 raised"), text
    assert "rank three lost its key" in text


# -- a rank that hangs -----------------------------------------------------------------------------

def _rank_one_hangs(rank, world_size, transport):
    x = torch.full((8,), float(rank))
    for k in range(8):
        if rank == 1 and k == 5:
            while True:            # hangs for good: only the timeout ends it
                time.sleep(0.5)
        x = neighbor_allreduce(x, RING4, k, transport=transport)
    return x.tolist()


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_rank_that_hangs_is_named_with_its_iteration(transport):
    with pytest.raises(ProcessGroupError) as err:
        run_local(_rank_one_hangs, 4, (transport,), start_method="fork", timeout=20)
    text = str(err.value)
    assert "timed out" in text
    assert "rank 1" in text and "iteration 4" in text, text   # its last finished call: k = 4


# -- a function that cannot be pickled ------------------------------------------------------------

def test_an_unpicklable_function_is_refused_up_front():
    with pytest.raises(InputTypeError, match="(?i)pickle.*module level"):
        run_local(lambda rank, size: rank, 2)

    def local(rank, size):
        return rank

    with pytest.raises(InputTypeError, match="local"):
        run_local(local, 2, start_method="spawn")


# -- dropped handles and wrappers -----------------------------------------------------------------

def _drop_a_handle(rank, world_size, transport):
    x = torch.full((4,), float(rank))
    h = neighbor_allreduce(x, RING4, 0, async_op=True, transport=transport)
    del h                                   # never waited
    y = neighbor_allreduce(x * 10, RING4, 1, transport=transport)
    return y.tolist()


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_dropped_handle_does_not_break_the_next_call(transport):
    out = run_local(_drop_a_handle, 4, (transport,), start_method="fork", timeout=60)
    x = np.arange(4.0)[:, None] * 10 * np.ones((1, 4))
    np.testing.assert_allclose(np.array(out), RING4 @ x)


def _drop_a_wrapper(rank, world_size, transport):
    torch.manual_seed(rank)
    model = torch.nn.Linear(3, 1)
    ddp = DecentralizedDataParallel(model, RING4, lr=0.1, transport=transport)
    ddp(torch.ones(1, 3)).sum().backward()
    ddp.step()
    del ddp                                 # gossip of x^1 in flight, never closed
    x = torch.full((2,), float(rank))
    return neighbor_allreduce(x, RING4, 0, transport=transport).tolist()


@pytest.mark.parametrize("transport", TRANSPORTS)
def test_a_dropped_wrapper_does_not_break_the_next_call(transport):
    out = run_local(_drop_a_wrapper, 4, (transport,), start_method="fork", timeout=60)
    np.testing.assert_allclose(np.array(out), RING4 @ (np.arange(4.0)[:, None] * np.ones((1, 2))))


# -- frozen parameters and buffers ----------------------------------------------------------------

class _Frozen(torch.nn.Module):
    def __init__(self, rank):
        super().__init__()
        self.train_me = torch.nn.Parameter(torch.full((3,), float(rank)))
        self.frozen = torch.nn.Parameter(torch.full((2,), float(rank) + 1), requires_grad=False)
        self.register_buffer("stat", torch.full((2,), 10.0 * rank))


def _frozen(rank, world_size):
    m = _Frozen(rank)
    ddp = DecentralizedDataParallel(m, RING4, lr=0.1)
    start = (m.frozen.tolist(), m.stat.tolist())
    with torch.no_grad():
        m.frozen.fill_(float(rank))            # diverge, then average
    ddp.global_avg()
    end = m.frozen.tolist()
    ddp.close()
    return start, end


def test_frozen_parameters_and_buffers_are_broadcast_and_averaged():
    out = run_local(_frozen, 4, start_method="fork", timeout=60)
    for (frozen, stat), averaged in out:
        assert frozen == [1.0, 1.0] and stat == [0.0, 0.0]     # rank 0's, like torch's DDP
        assert averaged == [1.5, 1.5]                          # mean of 0, 1, 2, 3


# -- receive buffers are reused -------------------------------------------------------------------

def _buffers(rank, world_size):
    from topocoll.runtime.neighbor import BUFFER_POOL

    x = torch.full((16,), float(rank))
    first = neighbor_allreduce(x, RING4, 0, transport="network")   # shared memory has none
    pooled = {t.data_ptr() for t in BUFFER_POOL.held()}
    second = neighbor_allreduce(x, RING4, 1, transport="network")
    again = {t.data_ptr() for t in BUFFER_POOL.held()}
    return first.tolist() == second.tolist(), len(pooled), pooled == again


def test_receive_buffers_are_reused_across_calls():
    for same, count, reused in run_local(_buffers, 4, start_method="fork", timeout=60):
        assert same and count == 2 and reused


# -- Ctrl-C in the parent --------------------------------------------------------------------------

def _sleeps(rank, world_size, pid_folder):
    open(os.path.join(pid_folder, str(os.getpid())), "w").close()
    time.sleep(600)


def test_an_interrupt_in_the_parent_leaves_no_rank_behind(tmp_path):
    """Ctrl-C reaches the parent while every rank is busy: run_local raises it at once and
    kills every rank (it used to wait 5 s per rank first)."""
    import signal
    import threading

    def interrupt():
        while len(os.listdir(tmp_path)) < 4:
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGINT)

    # Ctrl-C as a terminal delivers it (a parent started in a background job or under nohup
    # hands SIGINT down ignored)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    threading.Thread(target=interrupt, daemon=True).start()
    try:
        with pytest.raises(KeyboardInterrupt):
            run_local(_sleeps, 4, (str(tmp_path),), start_method="fork", timeout=300)
    finally:
        signal.signal(signal.SIGINT, previous)
    for name in os.listdir(tmp_path):
        with pytest.raises(ProcessLookupError):   # every rank is gone, none orphaned
            os.kill(int(name), 0)
