"""Hop-by-hop all-to-all schedules: the verifier accepts them and rejects mutations; chunk
quantization and its loss; the step-model time against lambda; the CLI."""

import json

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings

from topocoll.cli.main import cli
from topocoll.schedule.cost import evaluate
from topocoll.schedule.io import load_schedule
from topocoll.schedule.verify import verify
from topocoll.throughput import alltoall_schedule, path_throughput, quantize_paths
from topocoll.topology import topology

from tests.helpers import strongly_connected_digraphs

FEW = settings(max_examples=10, deadline=None,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def make(spec, max_hops=0, chunks=None):
    t = topology(spec, bandwidth=1.0)
    r = path_throughput(t, max_hops=max_hops)
    return t, r, alltoall_schedule(r, t, chunks=chunks)


@pytest.mark.parametrize("spec", ["ring:8", "ring:7", "torus:4x4", "hypercube:3",
                                  "bipartite:3", "genkautz:20,2"])
def test_schedule_verifies_and_is_rational_on_symmetric_graphs(spec):
    t, r, s = make(spec, max_hops=1)
    assert s.collective.name == "alltoall" and s.num_shards == t.num_nodes ** 2
    assert verify(s).valid
    q = quantize_paths(r, t)
    assert q.rational and q.loss == 0.0 and q.lam_quantized == pytest.approx(r.lam, rel=1e-6)
    # every shard x*N+y ends at y only: each transfer moves shard x*N+y along a real link
    tr = s.transfers
    assert np.all(t.pair_index(tr["src"], tr["dst"]) >= 0)
    assert s.num_steps == r.longest_path


def test_step_model_time_equals_lp_time_on_the_ring():
    # odd ring, unique shortest paths: every step loads all links of a direction equally
    t, r, s = make("ring:7", max_hops=0)
    size = 7.0
    ev = evaluate(s, size)
    assert ev.T_B == pytest.approx(r.time(size), rel=1e-6)


@FEW
@given(strongly_connected_digraphs(max_nodes=7))
def test_random_schedules_verify_and_step_time_bounds(t):
    r = path_throughput(t, max_hops=1, bounds=False)
    for chunks in (None, 1, 3):
        s = alltoall_schedule(r, t, chunks=chunks)
        assert verify(s).valid
        q = quantize_paths(r, t, chunks)
        assert 0.0 <= q.loss < 1.0
        assert q.lam_quantized <= r.lam * (1 + 1e-6)
        # the step model serialises steps: never faster than the quantized routing's rate
        ev = evaluate(s, t.num_nodes, check=False)
        assert ev.T_B >= 1.0 / q.lam_quantized * (1 - 1e-9)
        assert s.meta["quantization_loss"] == q.loss


def test_quantization_loss_when_shares_do_not_fit():
    t = topology("bipartite:3", bandwidth=1.0)
    r = path_throughput(t, max_hops=0)   # 3 two-hop paths per same-side pair: thirds
    q1 = quantize_paths(r, t, chunks=1)
    q3 = quantize_paths(r, t, chunks=3)
    assert q3.loss == 0.0 and q1.loss > 0.1
    # independent recomputation of the quantized rate from the counts
    psrc, pdst, cap, _ = t.pairs
    load = np.zeros(cap.size)
    p = r.paths
    for i in range(len(p)):
        load[p.edges[p.ptr[i]:p.ptr[i + 1]]] += q1.counts[i] / q1.chunks
    assert q1.lam_quantized == pytest.approx(np.min(cap[load > 0] / load[load > 0]))


def test_mutated_schedules_are_rejected():
    t, r, s = make("torus:4x4", max_hops=0)
    tr = s.transfers
    first_hop = np.flatnonzero(tr["step"] == 1)
    multi = np.flatnonzero(tr["step"] == 2)
    dropped = s.replace(transfers=np.delete(tr, first_hop[0]))
    assert not verify(dropped).valid
    early = tr.copy()
    early["step"][multi[0]] = 1          # forwards before it holds the chunk
    assert not verify(s.replace(transfers=early)).valid
    wrong = tr.copy()
    wrong["shard"][first_hop[0]] = (wrong["shard"][first_hop[0]] + 1) % (16 * 16)
    assert not verify(s.replace(transfers=wrong)).valid


def test_cli_json_and_schedule(tmp_path):
    runner = CliRunner()
    out = tmp_path / "a2a.json"
    res = runner.invoke(cli, ["alltoall", "torus:4x4", "--max-hops", "0", "--link-bandwidth",
                              "1", "--json", "-o", str(out), "--size", "16"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert list(doc)[:4] == ["success", "status", "status_name", "message"]
    assert doc["success"] and doc["status"] == 0
    for key in ("lambda", "time", "distance_bound", "bisection_bound", "max_hops",
                "agnostic_bound", "dual_bound"):
        assert key in doc
    assert doc["lambda"] == pytest.approx(0.125, rel=1e-6)
    assert doc["time"] == pytest.approx((16 / 16) / 0.125, rel=1e-6)
    assert doc["max_hops"] == 0 and doc["schedule"]["verified"]
    assert verify(load_schedule(str(out))).valid
    check = runner.invoke(cli, ["verify", str(out)])
    assert check.exit_code == 0 and "valid" in check.output


def test_cli_link_default_and_errors():
    runner = CliRunner()
    res = runner.invoke(cli, ["alltoall", "hypercube:3", "--link-bandwidth", "1", "--json"])
    doc = json.loads(res.output)
    # hypercubes are Cayley graphs: the default is the symmetric LP
    assert doc["method"] == "symmetric" and doc["max_hops"] is None
    assert doc["lambda"] == pytest.approx(0.25, rel=1e-6)
    link = json.loads(runner.invoke(cli, ["alltoall", "hypercube:3", "--link-bandwidth", "1",
                                          "--method", "link", "--json"]).output)
    assert link["method"] == "link" and link["lambda"] == pytest.approx(0.25, rel=1e-6)
    bad = runner.invoke(cli, ["alltoall", "ring:4", "--method", "link", "--max-hops", "1"])
    assert bad.exit_code == 2
    text = runner.invoke(cli, ["alltoall", "ring:6", "--frontier", "--link-bandwidth", "1"])
    assert text.exit_code == 0 and "Pareto" in text.output
