"""pytest configuration: keep hypothesis runs bounded and repeatable in CI."""

from hypothesis import HealthCheck, settings

# derandomize: the same examples on every run, so a run cannot draw a case the others never
# met (one draw of the exact-optimum ILP test ran for over ten minutes on one CI-like run)
settings.register_profile("ci", max_examples=40, deadline=None, derandomize=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ci")


import os  # noqa: E402
import shutil  # noqa: E402
import tempfile  # noqa: E402

import pytest  # noqa: E402

# --- running on several workers (`make test`: pytest-xdist, -n 2 --dist loadgroup) ---------------
# Tests check that runs leave no shared-memory channel behind by listing the channel folder, so
# each worker gets a folder of its own (set before topocoll.runtime.shm is first imported: it
# reads TOPOCOLL_SHM_DIR once). Emulated networks are host-wide (namespaces, run records):
# tests/emulate checks that none is left, and two at once disturb each other's probes (a
# capacity probe beside another emulation timed out). So every test that builds or cleans them
# holds one lock of the host while it runs (two workers, or two runs on one machine, never
# overlap), and asks xdist to run them all on one worker (honoured where pytest and xdist agree
# on node ids: xdist 3.8's groups are lost under pytest 9.2, the lock is not).
_WORKER = os.environ.get("PYTEST_XDIST_WORKER")
_CHANNELS = None
if _WORKER and not os.environ.get("TOPOCOLL_SHM_DIR") and os.access("/dev/shm", os.W_OK):
    _CHANNELS = tempfile.mkdtemp(prefix=f"tc-tests-{_WORKER}-", dir="/dev/shm")
    os.environ["TOPOCOLL_SHM_DIR"] = _CHANNELS
#: Paths (under tests/) whose tests build or clean emulated networks; also any test whose name
#: says emulate (the CLI's emulate cases in tests/cli).
ONE_WORKER = ("emulate/", "soak/test_emulate_soak.py", "test_readme.py")
#: The host's lock for them (a file in the temporary folder, held with flock).
EMULATION_LOCK = os.path.join(tempfile.gettempdir(), "topocoll-tests-emulation.lock")
ONE_WORKER_GROUP = "emulated-networks"


def pytest_configure(config):
    """The whole run, the commands it starts included, keeps the finder's results cache in a
    folder of its own: tests that change shipped tables or prices must never leave entries in
    the user's cache (tests/finder gives each test its own folder on top of this)."""
    folder = tempfile.mkdtemp(prefix="topocoll-test-cache-")
    config._topocoll_cache = folder
    os.environ["TOPOCOLL_CACHE_DIR"] = folder


def pytest_unconfigure(config):
    for folder in (getattr(config, "_topocoll_cache", None), _CHANNELS):
        if folder:
            shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(autouse=True)
def _one_emulation_at_a_time(request):
    """Hold :data:`EMULATION_LOCK` through the tests of :data:`ONE_WORKER` (set up before the
    fixtures of tests/emulate, whose check of namespaces left behind it must enclose)."""
    if not any(m.args[:1] == (ONE_WORKER_GROUP,)
               for m in request.node.iter_markers("xdist_group")):
        yield
        return
    import fcntl

    with open(EMULATION_LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)     # released when the file closes
        yield


@pytest.fixture(autouse=True)
def _never_replace_a_device(monkeypatch):
    """Some tests write into /dev/null and /dev/full to check that devices are streamed into.
    Should that ever regress, the atomic writer would replace the device itself (as root):
    refuse any replacement under /dev in this process, so a regression fails a test instead."""
    real = os.replace

    def guarded(src, dst, *args, **kwargs):
        if os.path.realpath(os.fspath(dst)).startswith("/dev/"):
            raise AssertionError(f"a test tried to replace the device {dst}")
        return real(src, dst, *args, **kwargs)
    monkeypatch.setattr(os, "replace", guarded)


# --- the slow tests: `make test-quick` (pytest -m "not slow") leaves them out ---------------
# Chosen by measurement (pytest --durations, 2 shared cores): the tests of 3 s or more, mostly
# torch.distributed runs that start processes, hypothesis sweeps, and large finder, LP, ILP and
# synthesis runs; together about two thirds of the suite's time. A module name marks the whole
# module, module::function every case of that function, module::function[id] one case.
# `make test` (and CI) still runs everything. tests/cli/test_vocabulary.py fails on a name here that no longer exists.
import re  # noqa: E402
from pathlib import Path  # noqa: E402

_TESTS = Path(__file__).resolve().parent

SLOW = (
    # torch.distributed: every test starts ranks (processes re-importing torch)
    "cli/test_run_cli.py",
    "cli/test_run_xml.py",
    "cli/test_files.py::test_run_reads_a_schedule_on_standard_input",
    "runtime/test_failures.py::test_a_rank_that_hangs_is_named_with_its_iteration",
    "runtime/test_gossip_runtime.py::test_run_local_spawns_by_default",
    "runtime/test_executor.py::test_a_peer_that_never_sends_is_named_with_the_step",
    "runtime/test_executor.py::test_a_rank_that_never_builds_the_collective_is_reported",
    "runtime/test_faults.py",
    # soaks: thousands of calls on 4 ranks, fifty emulated networks (tests/soak)
    "soak/test_runtime_soak.py::test_two_thousand_schedule_calls_stay_flat",
    "soak/test_runtime_soak.py::test_a_thousand_gossip_steps_stay_flat",
    "soak/test_emulate_soak.py",
    # emulated networks with torch ranks inside
    "emulate/test_emulate_cli.py::test_run_emulate_measures_and_models",
    "emulate/test_emulate_cli.py::test_gossip_run_on_a_network",
    "emulate/test_emulate_cli.py::test_run_emulate_in_a_user_namespace",
    "emulate/test_emulate_cli.py::test_gossip_run_on_loopback_has_no_model",
    "emulate/test_runs_on_network.py::test_a_run_on_the_network_reports_the_model_beside_it",
    "emulate/test_runs_on_network.py::test_gossip_on_a_switch_reports_both_and_their_models",
    "emulate/test_link_down.py::test_a_link_taken_down_mid_collective_is_named",
    "emulate/test_testbed_extra.py::test_fig15_part_on_one_small_size",
    "emulate/test_testbed_extra.py::test_fig8a_part_on_one_dnn_cut_to_two_calls",
    "test_readme.py::test_cli_examples[emulate.md]",
    # the `$ topocoll` lines of the README and the guides that run torch or big LPs
    "test_readme.py::test_cli_examples[README.md]",
    "test_readme.py::test_cli_examples[runtime.md]",
    "test_readme.py::test_cli_examples[interop.md]",
    "test_readme.py::test_cli_examples[alltoall.md]",
    # hypothesis sweeps and exact optima
    "schedule/test_bound_theorems.py::test_bounds_below_the_ten_ilp_optimum",
    "schedule/test_bound_theorems.py::test_bounds_hold_for_every_generated_schedule",
    "schedule/test_linkmodel.py::test_rules_hold_for_synthesized_schedules",
    "synth/ten/test_synthesis.py::test_every_collective_verifies_on_random_networks",
    "synth/ten/test_ten_hetero.py::test_chunk_bound_is_a_bound_on_random_speeds",
    "interop/test_bounded_buffers.py::test_random_exports_complete_under_capacity",
    # large finder and LP runs
    "finder/test_search.py::test_products_are_bandwidth_optimal_and_named_as_tori",
    "finder/test_seed_bases.py::test_every_moddebruijn_variant_costs_what_its_verified_bfb_measures",
    "finder/test_bidirectional.py::test_restricted_pick_is_never_predicted_faster",
    "throughput/test_balance.py::test_the_probe_rules_out_graphs_below_the_bound",
    "throughput/test_balance.py::test_throughput_tries_the_balance_first_and_falls_back",
    "throughput/test_certificates.py::test_dual_bound_closed_form_and_primal"
    "[torus:4x4x4-0.03125-path]",
    # every 2-regular digraph on 6 nodes (7570, 23 up to isomorphism) against the topology ILP
    "throughput/test_topology_ilp.py::test_ilp_matches_brute_force_directed[6-2]",
)


def _slow_entries(strict=False):
    """:data:`SLOW` as (path, function or ''); ``strict``: raise on a name that does not exist
    (a test does; collection does not, so that a renamed test costs its mark, not the run)."""
    entries = []
    for entry in SLOW:
        path, _, name = entry.partition("::")
        source = _TESTS / path
        function = name.partition("[")[0]
        if strict and (not source.is_file() or (name and not re.search(
                rf"^def {re.escape(function)}\(", source.read_text(), re.M))):
            raise pytest.UsageError(f"tests/conftest.py: SLOW names {entry}, which does not "
                                    "exist")
        entries.append((path, name))
    return entries


@pytest.hookimpl(tryfirst=True)   # before xdist's own, which reads the groups
def pytest_collection_modifyitems(config, items):
    """Mark the tests :data:`SLOW` names ``slow`` (registered in pyproject.toml), and those of
    :data:`ONE_WORKER` to run on one xdist worker."""
    entries = _slow_entries()
    for item in items:
        try:
            path = item.path.resolve().relative_to(_TESTS).as_posix()
        except ValueError:   # a doctest under src/
            continue
        function = getattr(item, "originalname", None) or item.name
        if any(path == p and n in ("", function, item.name) for p, n in entries):
            item.add_marker(pytest.mark.slow)
        if path.startswith(ONE_WORKER) or "emulate" in item.name:
            item.add_marker(pytest.mark.xdist_group(ONE_WORKER_GROUP))


@pytest.fixture(scope="session")
def dask_cluster():
    """A real ``dask.distributed.LocalCluster`` of two worker processes (one thread each), one
    for the whole run (a test may kill a worker: its nanny starts another)."""
    distributed = pytest.importorskip("distributed", reason="dask.distributed is in the test "
                                                            "extra")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as cluster:   # a free port: no clash
        yield cluster


@pytest.fixture
def cluster(dask_cluster):
    """:func:`dask_cluster` with both its workers up (after a test killed one)."""
    import distributed

    with distributed.Client(dask_cluster.scheduler_address) as client:
        client.wait_for_workers(2, timeout=120)
    return dask_cluster
