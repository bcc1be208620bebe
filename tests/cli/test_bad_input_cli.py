"""Inputs that once ended in a traceback or a silently wrong answer, through the real CLI."""

import json

import pytest

from tests.cli.test_cli import assert_one_line_error

ONE_NODE = {"format": "topocoll.topology", "version": 1, "name": "one", "nodes": 1, "links": []}


@pytest.fixture
def one_node(tmp_path):
    path = tmp_path / "one.json"
    path.write_text(json.dumps(ONE_NODE))
    return path


@pytest.mark.parametrize("command", [["schedule", "-c", "allgather"], ["synth", "-c", "allgather"],
                                     ["compare"]])
def test_a_one_node_topology_is_refused_by_every_schedule_maker(run, one_node, command):
    result = run(command[0], one_node, *command[1:])
    assert_one_line_error(result, "needs at least 2 nodes", "has 1", code=2)


def test_failing_all_but_one_node_is_refused(run):
    result = run("synth", "torus:4x4", "-c", "allgather", "--fail-nodes",
                 ",".join(str(v) for v in range(15)))
    assert_one_line_error(result, "needs at least 2 nodes", code=2)


def test_a_time_step_too_small_is_named_not_reported_as_causality(run):
    result = run("synth", "torus:4x4", "-c", "allgather", "--time-step", "1e-15")
    assert_one_line_error(result, "time step too small", code=2)


@pytest.mark.parametrize("flags, needle", [
    (["--fail-links", "0-1,0-1"], "listed more than once"),
    (["--fail-links", "0-1,1>0"], "listed more than once"),
    (["--fail-nodes", "3,3"], "listed more than once"),
    (["--unwind-degree", "2"], "no switches"),
])
def test_synth_flags_that_would_be_silently_ignored_or_miscounted(run, flags, needle):
    assert_one_line_error(run("synth", "torus:4x4", "-c", "allgather", *flags), needle, code=2)


@pytest.mark.parametrize("command", [
    ["info", "torus:4x4"], ["schedule", "ring:4", "-c", "allgather"],
    ["synth", "ring:4", "-c", "allgather"], ["alltoall", "ring:4"], ["rewire", "ring:6"],
    ["compare", "ring:4"], ["evaluate", "SCHEDULE"]])
def test_link_and_node_bandwidth_together_are_refused_everywhere(run, ring8_schedule, command):
    command = [str(ring8_schedule) if a == "SCHEDULE" else a for a in command]
    result = run(*command, "--link-bandwidth", "1GB/s", "--node-bandwidth", "2GB/s")
    assert_one_line_error(result, "not both", code=2)


def test_gossip_cost_refuses_both_bandwidths(run):
    result = run("gossip", "cost", "ring", "--network", "ring:8", "--link-bandwidth", "1GB/s",
                 "--node-bandwidth", "2GB/s")
    assert_one_line_error(result, "not both", code=2)


@pytest.mark.parametrize("command", [
    ["alltoall", "ring:4", "--json"],
    ["alltoall", "ring:4", "-o", "-"],
    ["synth", "torus:3x3", "-c", "allgather", "--method", "ilp", "--json"],
    ["rewire", "randomregular:8,3:1", "--objective", "alltoall", "--max-swaps", "2", "--json"],
])
def test_stdout_of_every_solver_command_is_one_clean_json_document(run, command):
    """Each in a fresh process, where HiGHS prints its banner on the first solver it makes."""
    result = run(*command)
    assert result.returncode == 0, result
    assert result.stdout.lstrip().startswith("{"), result
    json.loads(result.stdout)
