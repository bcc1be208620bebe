"""The batch layer (topocoll.batch) on real pools: this process, local processes and a Dask
LocalCluster with worker processes; tasks that raise, workers that die, a deadline."""

import os
import signal
import time

import pytest

from topocoll.batch import Failure, local_cores, open_pool, run_tasks
from topocoll.batch.pools import check_address, check_workers
from topocoll.errors import ClusterError, InputTypeError, ResourceLimitError


def square(x):
    return x * x


def slow_square(x, seconds):
    time.sleep(seconds)
    return x * x


def dies_once(x, folder):
    """Kills its own worker the first time it runs for x (a marker file remembers)."""
    marker = os.path.join(folder, f"died-{x}")
    if not os.path.exists(marker):
        open(marker, "w").close()
        os.kill(os.getpid(), signal.SIGKILL)
    return x * x


def always_dies(x):
    os.kill(os.getpid(), signal.SIGKILL)


def picky(x):
    if x == 3:
        raise ValueError("three is not allowed")
    return x * x


@pytest.mark.parametrize("workers", [1, 2])
def test_every_task_ends_with_its_result_or_its_reason(workers):
    with open_pool(workers=workers) as pool:
        got = dict(run_tasks(picky, [(x, (x,)) for x in range(6)], pool))
    assert got == {0: 0, 1: 1, 2: 4, 3: Failure("ValueError: three is not allowed"), 4: 16, 5: 25}


def test_a_worker_that_dies_is_replaced_and_its_task_runs_again(tmp_path):
    with open_pool(workers=2) as pool:
        got = dict(run_tasks(dies_once, [(x, (x, str(tmp_path))) for x in range(5)], pool,
                             window=2))
    assert got == {x: x * x for x in range(5)}
    assert sorted(os.listdir(tmp_path)) == [f"died-{x}" for x in range(5)]


def test_a_task_that_kills_every_worker_fails_after_its_retries():
    with open_pool(workers=2) as pool:
        got = dict(run_tasks(always_dies, [("bad", (1,))], pool, retries=1))
        after = dict(run_tasks(square, [(x, (x,)) for x in range(3)], pool))
    assert got == {"bad": Failure("its worker died 2 times")}
    assert after == {0: 0, 1: 1, 2: 4}          # the pool works again


def test_the_deadline_ends_what_is_not_done():
    started = time.monotonic()
    with open_pool(workers=2) as pool:
        got = dict(run_tasks(slow_square, [(x, (x, 0.0 if x < 2 else 30.0)) for x in range(6)],
                             pool, deadline=time.monotonic() + 3.0))
    assert time.monotonic() - started < 20          # the 30 s tasks were not waited for
    assert got[0] == 0 and got[1] == 1
    assert all(got[x] == Failure("not finished within the time limit") for x in range(2, 6))


def test_progress_hears_of_every_task_and_counts_failures():
    heard = []
    with open_pool(workers=1) as pool:
        list(run_tasks(picky, [(x, (x,)) for x in range(5)], pool,
                       progress=lambda done, total, stage=None: heard.append((done, total,
                                                                               stage))))
    assert [h[0] for h in heard] == [1, 2, 3, 4, 5] and heard[-1] == (5, 5, "1 failed")


def test_bad_pools_are_refused():
    with pytest.raises(InputTypeError, match="positive integer"):
        open_pool(workers=0)
    with pytest.raises(InputTypeError, match="not both"):
        open_pool(workers=2, scheduler="tcp://127.0.0.1:1")
    with pytest.raises(InputTypeError, match="tcp://HOST"):
        open_pool(scheduler="localhost")
    with pytest.raises(ClusterError, match="no Dask scheduler answered at tcp://127.0.0.1:9"):
        open_pool(scheduler="tcp://127.0.0.1:9", timeout=2)
    assert local_cores() >= 1


@pytest.mark.parametrize("address", ["tcp://", "tcp://127.0.0.1:abc", "tcp://127.0.0.1:0",
                                     "tcp://127.0.0.1:65536", "tcp://[::1", "tcp://::1:8786",
                                     "inproc://x", "ucx://127.0.0.1:1", "tcp://a b:1",
                                     "tcp://127.0.0.1:8786\n", f"tcp://{'9' * 300}:1"])
def test_addresses_dask_cannot_take_are_refused_before_any_connection(address):
    """Dask would raise a bare ValueError or TypeError for each (and its half-made Client
    would then take a minute to close at exit)."""
    with pytest.raises(InputTypeError, match="tcp://HOST:8786"):
        check_address(address)
    with pytest.raises(InputTypeError, match="tcp://HOST:8786"):
        open_pool(scheduler=address)


@pytest.mark.parametrize("address", ["tcp://127.0.0.1:8786", "tcp://[::1]:8786",
                                     "ws://head-node.example:8786", "wss://10.0.0.1:443"])
def test_addresses_of_every_reachable_kind_pass(address):
    assert check_address(address) is None


def test_tls_without_dask_tls_settings_is_refused():
    pytest.importorskip("distributed")
    with pytest.raises(ClusterError, match="TLS settings"):
        check_address("tls://127.0.0.1:8786")


def test_more_workers_than_memory_holds_are_refused_before_one_starts():
    """The pool forks every worker at its first task: a billion would be a fork bomb."""
    with pytest.raises(ResourceLimitError, match="1000000000 local worker processes"):
        open_pool(workers=10 ** 9)
    with pytest.raises(InputTypeError, match="positive integer"):
        check_workers(True)
    assert check_workers(2) is None


# -- a real Dask cluster ----------------------------------------------------------------------



def test_tasks_run_on_the_cluster(cluster):
    with open_pool(scheduler=cluster.scheduler_address) as pool:
        assert pool.kind == "dask" and pool.workers == 2
        got = dict(run_tasks(picky, [(x, (x,)) for x in range(6)], pool))
    assert got[3] == Failure("ValueError: three is not allowed")
    assert {k: v for k, v in got.items() if k != 3} == {x: x * x for x in range(6) if x != 3}


def test_the_cluster_reschedules_the_task_of_a_worker_that_died(cluster, tmp_path):
    with open_pool(scheduler=cluster.scheduler_address) as pool:
        got = dict(run_tasks(dies_once, [(x, (x, str(tmp_path))) for x in range(3)], pool))
    assert got == {0: 0, 1: 1, 4 // 2: 4}
    assert len(os.listdir(tmp_path)) == 3


def test_compare_makes_the_same_rows_on_processes_and_on_the_cluster(cluster):
    from dataclasses import asdict

    from topocoll.studies.compare import compare

    entries, algorithms = ["ring:8", "torus:4x4", "hypercube:4"], ("bfb", "ring")
    here = [asdict(r) for r in compare(entries, algorithms=algorithms).rows]
    assert len(here) == 6 and sum(r["verified"] is True for r in here) >= 4
    for where in ({"workers": 2}, {"scheduler": cluster.scheduler_address}):
        there = compare(entries, algorithms=algorithms, **where)
        assert [asdict(r) for r in there.rows] == here, where


# -- a time limit inside a task ------------------------------------------------------------


def test_a_time_limit_stops_python_code_that_never_checks_in_the_main_thread():
    from topocoll.batch import TimeUp, time_limit

    before = signal.getsignal(signal.SIGALRM)
    spins = 0
    with pytest.raises(TimeUp, match="within its time limit of 0.05 s"):
        with time_limit(0.05):
            while True:         # no check: the alarm ends it
                spins += 1
    assert spins > 0 and signal.getsignal(signal.SIGALRM) is before
    with time_limit(None) as check:
        check()                 # no limit: nothing to raise
    with time_limit(60) as check:
        check()                 # well within it
    assert signal.getsignal(signal.SIGALRM) is before


def test_in_another_thread_the_limit_holds_where_the_work_checks_in():
    import threading

    from topocoll.batch import TimeUp, time_limit

    seen = []

    def work():
        try:
            with time_limit(0.05) as check:
                while True:
                    check(1, 2, "a progress report")
        except TimeUp as exc:
            seen.append(str(exc))

    thread = threading.Thread(target=work)
    thread.start()
    thread.join(30)
    assert seen == ["not finished within its time limit of 0.05 s"]
