"""Per-job subclusters of one fabric (Zhao et al., NSDI 2025, section 1): each job's pick on its
own node range, the union's components are exactly the picks, every job's schedule verifies on
its component, and jobs that do not fit are refused in one line."""

import json

import networkx as nx
import numpy as np
import pytest
from click.testing import CliRunner

import topocoll as tc
from topocoll.cli.main import cli
from topocoll.finder import build_allreduce, find, partition_fabric, priced
from topocoll.finder.build import recipe_topology
from topocoll.schedule.io import load_schedule
from topocoll.topology import load_topology


@pytest.fixture(scope="module")
def fabric():
    return partition_fabric([16, 8, 8, 3], 4, fabric_nodes=40, cache=False)


def test_each_job_gets_the_finders_pick_on_its_own_range(fabric):
    assert fabric.success, fabric.message
    assert [(j.first, j.last) for j in fabric.jobs] == [(0, 15), (16, 23), (24, 31), (32, 34)]
    assert fabric.idle_nodes == 5
    for j in fabric.jobs:
        alone = find(j.nodes, min(4, j.nodes - 1), "1MiB", cache=False)
        assert j.pick == alone.best.name
        assert j.result.evaluated_time == pytest.approx(alone.evaluated_time)
    assert fabric.jobs[3].degree == 2                   # 3 nodes use at most 2 ports


def test_the_unions_components_are_exactly_the_picks(fabric):
    union = fabric.topology
    assert union.num_nodes == 40
    graph = nx.Graph()
    graph.add_nodes_from(range(union.num_nodes))
    graph.add_edges_from(zip(union.src.tolist(), union.dst.tolist()))
    parts = sorted(sorted(c) for c in nx.connected_components(graph))
    ranges = [list(range(j.first, j.last + 1)) for j in fabric.jobs]
    idle = [[v] for v in range(35, 40)]
    assert parts == sorted(ranges + idle)
    for i, j in enumerate(fabric.jobs):
        own = recipe_topology(j.result.best.recipe)
        part = fabric.component(i)
        assert np.array_equal(part.src, own.src) and np.array_equal(part.dst, own.dst)


def test_every_jobs_schedule_verifies_on_its_component(fabric):
    for i, j in enumerate(fabric.jobs):
        r = j.result
        schedule = priced(build_allreduce(r.best), alpha=r.alpha, node_bandwidth=r.node_bandwidth)
        on_part = schedule.replace(topology=fabric.component(i))
        assert tc.verify(on_part).valid, j.pick
        ev = tc.evaluate(on_part, "1MiB")
        assert ev.time == pytest.approx(r.evaluated_time, rel=1e-9)


def test_no_node_above_the_degree_and_the_jobs_are_disjoint(fabric):
    c = fabric.checks
    assert c["within_degree"] and c["disjoint"] and c["links_within_jobs"]
    union = fabric.topology
    psrc, pdst, _, _ = union.pairs
    assert np.bincount(psrc, minlength=40).max() <= 4 == c["max_out_degree"]
    assert np.bincount(pdst, minlength=40).max() <= 4


def test_same_sizes_share_one_search_and_bidirectional_passes_through():
    r = partition_fabric("8,8", 3, cache=False, evaluate=False, bidirectional=True)
    assert r.jobs[0].result is r.jobs[1].result
    assert r.topology.is_bidirectional() and r.jobs[0].result.bidirectional_checked


@pytest.mark.parametrize("jobs, fabric_nodes, words", [
    ([64, 32, 40], 128, "the jobs need 136 nodes"),
    ([1, 4], None, "size must be >= 2"),
    ("4,,4", None, "comma-separated"),
    ([], None, "at least one job"),
])
def test_jobs_that_do_not_fit_are_refused(jobs, fabric_nodes, words):
    with pytest.raises(tc.errors.TopocollError, match=words):
        partition_fabric(jobs, 4, fabric_nodes=fabric_nodes, cache=False)


def test_cli_json_and_files(tmp_path):
    out = tmp_path / "fab"
    res = CliRunner().invoke(cli, ["fabric", "--jobs", "8,4", "-d", "3", "--no-cache",
                                   "--json", "-o", str(out)])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout)
    assert doc["fabric_nodes"] == 12 and [j["nodes"] for j in doc["jobs"]] == [8, 4]
    assert doc["checks"]["within_degree"] and doc["checks"]["disjoint"]
    union = load_topology(doc["files"]["fabric"])
    assert union.num_nodes == 12
    for j in doc["jobs"]:
        s = load_schedule(doc["files"][f"job-{j['job']}"])
        assert tc.verify(s).valid and s.num_nodes == j["nodes"]
        assert j["verified"] and j["evaluated_time"] == pytest.approx(
            tc.evaluate(s, "1MiB").time, rel=1e-9)


def test_cli_too_big_is_one_line():
    res = CliRunner().invoke(cli, ["fabric", "--jobs", "64,32,40", "-d", "4",
                                   "--fabric-nodes", "128"])
    assert res.exit_code != 0
    err = res.stderr.strip()
    assert err.startswith("error:") and len(err.splitlines()) == 1 and "136" in err
