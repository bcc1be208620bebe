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


@pytest.mark.parametrize("name", ["ring", "one-peer-exp", "complete"])
def test_group_topologies_too_large_to_list_are_refused_before_building(name):
    with pytest.raises(ResourceLimitError, match=f"{name} on {10**12} ranks .*iterations of "
                                                 "groups"):
        gossip_topology(name, 10**12)


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


def _huge_schedule_file(tmp_path, nodes):
    import json

    from topocoll import generate
    from topocoll.schedule.io import dumps_schedule

    doc = json.loads(dumps_schedule(generate("ring:4", "allgather")))
    doc["topology"]["nodes"] = nodes
    path = tmp_path / "huge.json"
    path.write_text(json.dumps(doc))
    return path


@pytest.mark.parametrize("command", ["verify", "evaluate", "simulate", "compare", "export"])
def test_a_file_declaring_a_billion_nodes_is_refused_with_the_estimate(tmp_path, command):
    from click.testing import CliRunner

    from topocoll.cli.main import cli

    path = _huge_schedule_file(tmp_path, 10**9)
    extra = ["-o", str(tmp_path / "x.xml")] if command == "export" else []
    result = CliRunner().invoke(cli, [command, str(path)] + extra)
    assert result.exit_code == 2, result.output
    assert "a topology of 1000000000 nodes needs about" in result.output and ENV in result.output
    assert not (tmp_path / "x.xml").exists()


def test_isolated_nodes_are_counted_without_a_table_per_node(monkeypatch, tmp_path):
    from topocoll import verify

    monkeypatch.setenv(ENV, "none")
    report = verify(str(_huge_schedule_file(tmp_path, 10**9)), max_errors=3)
    assert not report.valid
    assert report.counts["isolated"] == 10**9 - 4
    assert [v.node for v in report.errors] == [4, 5, 6]


@pytest.mark.parametrize("present, n", [([], 3), ([0, 1, 2], 3), ([1, 2, 5], 8), ([0, 7], 8),
                                        ([3], 10**12)])
def test_first_missing_matches_the_set_difference(present, n):
    import numpy as np

    from topocoll.schedule.verify import first_missing

    got = first_missing(np.array(present, dtype=np.int64), n, 4).tolist()
    want = [i for i in range(min(n, 20)) if i not in present][:4]
    assert got == want


def test_reading_asks_the_memory_guard_before_the_parse(monkeypatch, tmp_path):
    import gzip

    from topocoll.fileio import read_input

    path = tmp_path / "bomb.json.gz"
    content = b'{"meta": [' + b"1," * (4 << 20) + b'1]}'
    with gzip.open(path, "wb") as fh:        # 8 MiB of content in a few KB
        fh.write(content)
    monkeypatch.setenv(ENV, "64MiB")         # four million values parsed do not fit
    with pytest.raises(ResourceLimitError, match=r"reading and parsing .*bomb.json.gz"):
        read_input(path, starts=b"{")
    monkeypatch.setenv(ENV, "1GiB")
    assert read_input(path, starts=b"{") == content
    # one string of more than 1 MiB: no file topocoll reads holds one
    with gzip.open(path, "wb") as fh:
        fh.write(b'{"meta": "' + b"x" * (2 << 20) + b'"}')
    with pytest.raises(ResourceLimitError, match=r"a string longer than the limit of 1MiB"):
        read_input(path, starts=b"{")


@pytest.mark.parametrize("name", ["exponential-graph", "ring-graph", "star-graph",
                                  "one-peer-exponential-graph", "mesh-graph"])
def test_sparse_gossip_graphs_need_no_dense_matrix(monkeypatch, name):
    monkeypatch.setenv(ENV, "8MiB")                 # 1000 ranks: 8 MB per dense matrix
    t = gossip_topology(name, 1000)                 # built sparse
    with pytest.raises(ResourceLimitError, match=r"graph on 1000 ranks .*dense 1000x1000"):
        t.matrix(0)                                 # the dense form still asks first
    assert analyze(t).success                       # the analysis does not need it


def test_dense_gossip_matrices_are_refused_before_they_are_made(monkeypatch):
    monkeypatch.setenv(ENV, "8MiB")
    with pytest.raises(ResourceLimitError,
                       match=r"fully-connected-graph on 1000 ranks .*dense 1000x1000"):
        gossip_topology("fully-connected-graph", 1000)
    assert gossip_topology("fully-connected-graph", 64).size == 64


@pytest.mark.parametrize("name", ["ring", "one-peer-exp", "complete"])
def test_group_topologies_are_built_and_analysed_sparse(monkeypatch, name):
    monkeypatch.setenv(ENV, "8MiB")
    t = gossip_topology(name, 1000)                 # groups only: no matrix yet
    assert t.groups(0)
    if name == "complete":                          # one group of n ranks: n^2 weights
        with pytest.raises(ResourceLimitError, match="complete on 1000 ranks .*non-zero"):
            analyze(t)
    else:
        assert analyze(t).success


def test_every_dense_analysis_asks_before_allocating(monkeypatch):
    from topocoll.gossip.analysis import (consensus_errors, exact_average_after,
                                          period_product, period_rho)

    t = gossip_topology("one-peer-exp", 1000)
    monkeypatch.setenv(ENV, "8MiB")
    for job in (period_product, lambda t: period_rho(t, method="dense"),
                lambda t: analyze(t, method="dense"), lambda t: t.matrix(0)):
        with pytest.raises(ResourceLimitError, match="one-peer-exp on 1000 ranks"):
            job(t)
    assert exact_average_after(t) is None           # sparse products: they fit
    assert consensus_errors(t, 3).shape == (4,)
