"""The bfb allreduce made three ways (option via): verified, breakable, priced in closed form."""

import numpy as np
import pytest

from topocoll.errors import UnsupportedError
from topocoll.schedule.cost import evaluate
from topocoll.schedule.verify import verify
from topocoll.synth import generate
from topocoll.synth.allreduce_forms import VIAS, allreduce_form_cost
from topocoll.synth.generators import show_options
from topocoll.topology import topology
from topocoll.topology.metrics import distance_matrix

TOPOLOGIES = ["ring:6", "ring:7", "torus:3x4", "hypercube:3", "circulant:8:1,3",
              "genkautz:10,2"]
SIZE = 1 << 20
ALPHA, BANDWIDTH = 1e-6, 1e9        # seconds, bytes per second


def _make(spec, via, root=None):
    return generate(spec, "allreduce", "bfb", via=via, root=root)


@pytest.mark.parametrize("via", VIAS)
@pytest.mark.parametrize("spec", TOPOLOGIES)
def test_every_form_verifies(spec, via):
    s = _make(spec, via)
    report = verify(s)
    assert report.valid, report
    assert s.collective.name == "allreduce"
    if via != "reduce_scatter":
        assert s.meta["via"] == via


@pytest.mark.parametrize("spec", TOPOLOGIES)
def test_reduce_broadcast_steps_are_the_roots_eccentricities(spec):
    topo = topology(spec)
    dist = distance_matrix(topo)
    for root in (0, topo.num_nodes - 1):
        s = _make(spec, "reduce_broadcast", root)
        assert verify(s).valid
        assert s.meta["root"] == root
        assert s.num_steps == dist[:, root].max() + dist[root].max()


@pytest.mark.parametrize("via", ["reduce_broadcast", "alltoall"])
@pytest.mark.parametrize("spec", ["ring:7", "torus:3x4", "genkautz:10,2"])
def test_breaking_one_transfer_fails_verification(spec, via):
    s = _make(spec, via)
    dropped = s.replace(transfers=np.delete(s.transfers, s.num_transfers // 2))
    assert not verify(dropped).valid
    t = s.transfers.copy()
    t["op"][0] = 1 - t["op"][0]                 # a reduce made a copy, or a copy a reduce
    assert not verify(s.replace(transfers=t)).valid


@pytest.mark.parametrize("via", ["reduce_broadcast", "alltoall"])
@pytest.mark.parametrize("spec", TOPOLOGIES)
def test_cost_matches_closed_form(spec, via):
    e = evaluate(_make(spec, via), SIZE, alpha=ALPHA, link_bandwidth=BANDWIDTH)
    topo = topology(spec).with_links(latency=ALPHA, bandwidth=BANDWIDTH)
    t_l, t_b = allreduce_form_cost(topo, via)
    assert e.T_L == pytest.approx(t_l, rel=1e-9)
    assert e.T_B == pytest.approx(t_b * SIZE, rel=1e-9)


def _unit(spec, via):
    """(steps, T_L in alpha, T_B in M/b) of the made schedule."""
    e = evaluate(_make(spec, via), 1.0, alpha=1.0, link_bandwidth=1.0)
    return e.steps, e.T_L, e.T_B


@pytest.mark.parametrize("n", [5, 7, 9])
def test_ring_closed_forms(n):
    # reduce + broadcast: n - 1 layers in all, one parent each; all-to-all: (n^2 - 1) / 8
    # pairs cross each link, the longest route (n - 1) / 2 hops
    assert _unit(f"ring:{n}", "reduce_broadcast") == pytest.approx((n - 1, n - 1, n - 1))
    assert _unit(f"ring:{n}", "alltoall") == pytest.approx((1, (n - 1) / 2, (n * n - 1) / 8))


@pytest.mark.parametrize("k", [2, 3, 4])
def test_hypercube_closed_forms(k):
    # layer t of the reduce and of the broadcast: t parents; dimension-order routes: N/2 pairs
    # on every link
    harmonic = sum(1 / t for t in range(1, k + 1))
    assert _unit(f"hypercube:{k}", "reduce_broadcast") == pytest.approx((2 * k, 2 * k,
                                                                         2 * harmonic))
    assert _unit(f"hypercube:{k}", "alltoall") == pytest.approx((1, k, 2 ** k / 2))


def test_torus_closed_forms():
    # k x k torus, k odd: layers 1..(k-1)/2 hold axis nodes (one parent), the rest two parents
    k = 5
    assert _unit(f"torus:{k}x{k}", "reduce_broadcast") == pytest.approx(
        (2 * (k - 1), 2 * (k - 1), 2 * ((k - 1) / 2 + (k - 1) / 4)))
    assert _unit(f"torus:{k}x{k}", "alltoall") == pytest.approx((1, k - 1, k * (k * k - 1) / 8))


def test_alltoall_is_one_step_and_bandwidth_poor():
    e = {via: evaluate(_make("torus:4x4", via), SIZE) for via in VIAS}
    assert e["alltoall"].steps == 1 < e["reduce_scatter"].steps
    assert e["reduce_scatter"].bw_optimal
    assert e["alltoall"].T_B > e["reduce_broadcast"].T_B > e["reduce_scatter"].T_B


def test_bad_values_are_refused_in_one_line():
    with pytest.raises(UnsupportedError) as info:
        _make("ring:4", "bogus")
    message = str(info.value)
    assert "\n" not in message and all(via in message for via in VIAS)
    with pytest.raises(UnsupportedError, match="builds an allreduce"):
        generate("ring:4", "allgather", "bfb", via="alltoall")
    with pytest.raises(UnsupportedError, match="takes no root"):
        generate("ring:4", "allreduce", "bfb", root=1)
    with pytest.raises(UnsupportedError, match="root must be"):
        _make("ring:4", "reduce_broadcast", 9)
    with pytest.raises(UnsupportedError, match="no symmetric form"):
        generate("ring:4", "allreduce", "bfb", via="alltoall", form="symmetric")
    with pytest.raises(UnsupportedError, match="takes no size"):
        generate("ring:4", "allreduce", "bfb", via="alltoall", chunks=2)


def test_show_options_lists_via():
    text = show_options("bfb")
    assert "via = 'reduce_scatter'" in text and "reduce_broadcast" in text


def test_cli_reaches_both_forms(tmp_path):
    from click.testing import CliRunner

    from topocoll.cli.main import cli

    runner = CliRunner()
    ok = runner.invoke(cli, ["schedule", "ring:6", "-c", "allreduce", "-a", "bfb", "-O",
                             "via=reduce_broadcast", "--root", "3"])
    assert ok.exit_code == 0 and "6 steps" in ok.output and "verified" in ok.output
    ok = runner.invoke(cli, ["schedule", "ring:6", "-c", "allreduce", "-a", "bfb", "-O",
                             "via=alltoall"])
    assert ok.exit_code == 0 and "1 steps" in ok.output
    bad = runner.invoke(cli, ["schedule", "ring:6", "-c", "allreduce", "-a", "bfb", "-O",
                              "via=nope"])
    assert bad.exit_code != 0 and "reduce_broadcast" in bad.output
