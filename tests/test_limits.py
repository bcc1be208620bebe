"""The memory guard: the limit, its override, and the jobs that ask it before allocating."""

import pytest

from topocoll.errors import ResourceLimitError
from topocoll.gossip import analyze, gossip_topology
from topocoll.limits import ENV, memory_limit, require_memory


def test_the_default_limit_is_most_of_the_machine(monkeypatch):
    monkeypatch.delenv(ENV, raising=False)
    limit = memory_limit()
    with open("/proc/meminfo") as fh:
        total = int(next(line for line in fh if line.startswith("MemTotal:")).split()[1]) * 1024
    assert 0 < limit <= 0.8 * total + 1


@pytest.mark.parametrize("text, expected", [("1GiB", 1 << 30), ("500MB", 500 * 10**6),
                                            ("1234567", 1234567), ("none", None), ("off", None)])
def test_the_override_takes_sizes_with_units(monkeypatch, text, expected):
    monkeypatch.setenv(ENV, text)
    assert memory_limit() == expected


@pytest.mark.parametrize("text", ["lots", "-1GiB", "0", "1KiB", "nan", "1e400"])
def test_a_bad_override_is_an_error_naming_the_variable(monkeypatch, text):
    monkeypatch.setenv(ENV, text)
    with pytest.raises(ResourceLimitError, match=ENV):
        memory_limit()


@pytest.mark.parametrize("env, text", [(ENV, "abc"), (ENV, "1KiB"),
                                       ("TOPOCOLL_MAX_FILE_BYTES", "inf")])
def test_every_command_refuses_a_bad_limit_before_its_work(monkeypatch, env, text):
    from click.testing import CliRunner

    from topocoll.cli.main import cli

    monkeypatch.setenv(env, text)
    result = CliRunner().invoke(cli, ["info", "ring:4"])
    assert result.exit_code == 2 and env in result.output and "nodes" not in result.output


def test_the_refusal_says_the_estimate_the_limit_and_the_override(monkeypatch):
    monkeypatch.setenv(ENV, "1MiB")
    require_memory(1 << 20, "exactly the limit")                 # fits
    with pytest.raises(ResourceLimitError) as err:
        require_memory(3 << 20, "the thing")
    message = str(err.value)
    assert "the thing needs about 3MiB" in message and "limit of 1MiB" in message
    assert f"set by {ENV}" in message and f"{ENV}=4MiB would allow it" in message
    monkeypatch.setenv(ENV, "none")
    require_memory(1 << 60, "anything")                          # no limit


@pytest.mark.parametrize("name", ["exponential-graph", "ring-graph", "star-graph",
                                  "one-peer-exponential-graph"])
def test_dense_gossip_matrices_are_refused_before_they_are_made(monkeypatch, name):
    monkeypatch.setenv(ENV, "8MiB")                 # 1000 ranks: 8 MB per dense matrix
    with pytest.raises(ResourceLimitError, match=r"graph on 1000 ranks .*dense 1000x1000"):
        gossip_topology(name, 1000)
    assert gossip_topology(name, 64).size == 64


@pytest.mark.parametrize("name", ["ring", "one-peer-exp", "complete"])
def test_group_topologies_are_built_and_refused_only_when_analysed(monkeypatch, name):
    monkeypatch.setenv(ENV, "8MiB")
    t = gossip_topology(name, 1000)                 # groups only: no matrix yet
    assert t.groups(0)
    with pytest.raises(ResourceLimitError, match=f"{name} on 1000 ranks"):
        analyze(t)


@pytest.mark.parametrize("name", ["ring", "one-peer-exp", "complete"])
def test_group_topologies_too_large_to_list_are_refused_before_building(name):
    with pytest.raises(ResourceLimitError, match=f"{name} on {10**12} ranks .*iterations of "
                                                 "groups"):
        gossip_topology(name, 10**12)


def test_every_dense_analysis_asks_before_allocating(monkeypatch):
    from topocoll.gossip.analysis import consensus_errors, exact_average_after, period_product

    t = gossip_topology("one-peer-exp", 1000)
    monkeypatch.setenv(ENV, "8MiB")
    for job in (period_product, exact_average_after, analyze):
        with pytest.raises(ResourceLimitError, match="one-peer-exp on 1000 ranks"):
            job(t)
    with pytest.raises(ResourceLimitError):
        consensus_errors(t, 3)


def test_the_limit_never_exceeds_what_ulimit_leaves(monkeypatch):
    import subprocess
    import sys

    monkeypatch.delenv(ENV, raising=False)
    code = ("import resource\n"
            "resource.setrlimit(resource.RLIMIT_AS, (3 << 30, resource.RLIM_INFINITY))\n"
            "from topocoll.limits import memory_limit\n"
            "print(memory_limit())\n")
    env = {**__import__("os").environ, "OPENBLAS_NUM_THREADS": "1"}
    env.pop(ENV, None)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env=env, timeout=120)
    assert 0 < int(out.stdout) < 3 << 30
