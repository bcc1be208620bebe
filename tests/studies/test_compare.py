"""topocoll.studies.compare: schedules side by side under one latency and bandwidth, verified,
priced next to their lower bounds, and plotted."""

import json

import numpy as np
import pytest

import topocoll as tc
from topocoll.defaults import ALPHA as DEFAULT_ALPHA, LINK_BANDWIDTH as DEFAULT_LINK_BANDWIDTH
from topocoll.plotting import check_plot_target
from topocoll.studies.compare import ComparisonRow, compare, fastest, plot_comparison
from topocoll.errors import SpecError, UnsupportedError

SIZES = [2**10, 2**20, 2**28]
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def two_rows():
    return compare(["ring:8", "hypercube:3"], sizes=SIZES).rows


def _invalid_schedule_file(tmp_path):
    """A ring:8 BFB allgather without its last step: every node misses a shard."""
    s = tc.generate("ring:8", "allgather", "bfb")
    t = s.transfers
    broken = s.replace(transfers=t[t["step"] < t["step"].max()])
    assert not tc.verify(broken).valid
    path = tmp_path / "broken.json"
    tc.save_schedule(broken, path)
    return path


def test_rows_for_two_topologies(two_rows):
    assert [r.name for r in two_rows] == ["ring:8 bfb", "hypercube:3 bfb"]
    for r in two_rows:
        assert isinstance(r, ComparisonRow)
        assert (r.verdict, r.verified, r.collective, r.algorithm) == ("ok", True, "allreduce",
                                                                      "bfb")
        assert r.nodes == 8
        assert [c.size for c in r.sizes] == SIZES
        assert r.alpha == DEFAULT_ALPHA and r.link_bandwidth == DEFAULT_LINK_BANDWIDTH
        assert r.node_bandwidth is None          # the default cluster: 100Gbps per link
    assert [r.degree for r in two_rows] == [2, 3]
    assert [r.steps for r in two_rows] == [8, 6]
    json.dumps([r.to_dict() for r in two_rows], allow_nan=False)


def test_times_equal_evaluate(two_rows):
    # the default cluster is the spec's own: evaluate on the plain spec gives the same times
    for spec, row in zip(["ring:8", "hypercube:3"], two_rows):
        topo = tc.build_topology(spec)
        assert topo.describe_bandwidth() == "100Gbps per link"
        schedule = tc.generate(topo, "allreduce", "bfb")
        for cost in row.sizes:
            e = tc.evaluate(schedule, cost.size)
            assert row.T_L == e.T_L and row.steps == e.steps
            assert cost.T_B == e.T_B and cost.time == e.time
            assert row.time_at(cost.size) == pytest.approx(e.time, rel=1e-12)


def test_node_bandwidth_is_the_per_node_convention():
    # node_bandwidth asks for the paper's convention: each node's egress split over its links
    rows = compare(["ring:8", "hypercube:3"], sizes=SIZES, node_bandwidth="100Gbps").rows
    for spec, row in zip(["ring:8", "hypercube:3"], rows):
        assert row.node_bandwidth == 12.5e9 and row.link_bandwidth is None
        topo = tc.build_topology(spec).with_node_bandwidth(12.5e9)
        schedule = tc.generate(topo, "allreduce", "bfb")
        for cost in row.sizes:
            assert cost.time == tc.evaluate(schedule, cost.size).time
    with pytest.raises(UnsupportedError, match="not both"):
        compare(["ring:8"], node_bandwidth="100Gbps", link_bandwidth="100Gbps")


def test_ratio_is_time_over_lower_bound_and_at_least_one(two_rows):
    for r in two_rows:
        assert r.steps_lower_bound == r.diameter  # allreduce too: not doubled
        for c in r.sizes:
            bound = r.steps_lower_bound * r.alpha + r.bw_lower_bound_per_byte * c.size
            assert c.time_lower_bound == pytest.approx(bound, rel=1e-12)
            assert r.lower_bound_at(c.size) == pytest.approx(bound, rel=1e-12)
            assert c.ratio == pytest.approx(c.time / c.time_lower_bound, rel=1e-12)
            assert c.ratio >= 1 - 1e-9


def test_one_fastest_per_size(two_rows):
    for i in range(len(SIZES)):
        flagged = [r for r in two_rows if r.sizes[i].fastest]
        assert len(flagged) == 1
        assert flagged[0] is fastest(two_rows, i)
        assert flagged[0].sizes[i].time == min(r.sizes[i].time for r in two_rows)
    assert two_rows[1].sizes[0].fastest  # fewer steps wins small messages


def test_invalid_schedule_is_marked_not_priced(tmp_path):
    path = _invalid_schedule_file(tmp_path)
    result = compare([str(path), "ring:8"], sizes=[2**20], collective="allgather")
    assert result.status == 3 and not result.success and "1 of 2" in result.message
    rows = result.rows
    bad, good = rows
    assert bad.name == "ring:8 bfb [broken.json]" and bad.source == str(path)
    assert (bad.verdict, bad.verified, bad.priced) == ("invalid", False, False)
    assert bad.reason.startswith("invalid") and bad.sizes == [] and bad.T_L is None
    assert good.verdict == "ok" and good.sizes[0].fastest


def test_schedule_files_keep_their_own_collective_and_get_the_same_network(tmp_path):
    s = tc.generate("uniring:5", "allreduce", "ring")  # default 1 link bandwidth, no alpha
    tc.save_schedule(s, tmp_path / "ring5.json")
    tc.save_topology(tc.build_topology("ring:5"), tmp_path / "topo5.json")
    rows = compare([tmp_path / "ring5.json", str(tmp_path / "topo5.json")], sizes=[2**20],
                   collective="allgather", alpha="2us", link_bandwidth="1GB/s").rows
    from_file, from_topology = rows
    assert (from_file.collective, from_file.algorithm) == ("allreduce", "ring")
    assert (from_topology.collective, from_topology.algorithm) == ("allgather", "bfb")
    assert from_topology.name == "ring:5 bfb [topo5.json]"
    fair = s.replace(topology=s.topology.with_links(latency=2e-6, bandwidth=1e9))
    assert from_file.sizes[0].time == tc.evaluate(fair, 2**20).time
    assert from_file.T_L == pytest.approx(from_file.steps * 2e-6)
    assert from_file.link_bandwidth == 1e9 and from_file.node_bandwidth is None


def test_schedule_file_in_any_json_layout_is_told_apart_by_its_format(tmp_path):
    doc = json.loads(tc.dumps_schedule(tc.generate("ring:4", "allgather", "bfb")))
    path = tmp_path / "pretty.json"
    path.write_text(json.dumps({k: doc[k] for k in reversed(list(doc))}, indent=1))
    (row,) = compare([str(path)], sizes=[2**20]).rows
    assert (row.name, row.collective, row.verdict) == ("ring:4 bfb [pretty.json]", "allgather",
                                                      "ok")


def test_several_algorithms_and_unsupported_pairs():
    result = compare(["torus:2x4", "ring:8"], sizes=[2**20], algorithms=["bfb", "biring", "bfb"])
    assert result.status == 0 and "1 unsupported" in result.message
    rows = result.rows
    assert [(r.name, r.verdict) for r in rows] == [
        ("torus:2x4 bfb", "ok"), ("torus:2x4 biring", "unsupported"),
        ("ring:8 bfb", "ok"), ("ring:8 biring", "ok")]
    assert "biring" in rows[1].reason and rows[1].verified is None
    with pytest.raises(UnsupportedError, match="nothing to compare"):
        compare(["torus:2x4"], sizes=[2**20], algorithms="ring")


def test_bad_input_raises():
    with pytest.raises(SpecError, match="ring:x"):
        compare(["ring:8", "ring:x"])
    with pytest.raises(UnsupportedError, match="not both"):
        compare(["ring:8"], node_bandwidth="1Gbps", link_bandwidth="1Gbps")
    with pytest.raises(UnsupportedError):
        compare([])
    with pytest.raises(tc.errors.TopocollError):
        compare(["ring:8"], sizes=[])


def test_plot_writes_a_png(two_rows, tmp_path):
    target = tmp_path / "cmp.png"
    check_plot_target(target)
    assert plot_comparison(two_rows, target) == target
    data = target.read_bytes()
    assert data[:8] == PNG_SIGNATURE
    assert len(data) < 200_000


def test_plot_refuses_nothing_and_bad_targets(tmp_path):
    invalid = compare([str(_invalid_schedule_file(tmp_path)), "ring:8"], sizes=[2**20],
                      collective="allgather").rows
    with pytest.raises(UnsupportedError, match="nothing to plot"):
        plot_comparison(invalid[:1], tmp_path / "x.png")
    with pytest.raises(UnsupportedError, match="format"):
        check_plot_target(tmp_path / "x.nope")
    with pytest.raises(UnsupportedError, match="folder"):
        check_plot_target(tmp_path / "missing" / "x.png")


def test_cost_and_bound_are_linear_in_size():
    (row,) = compare(["genkautz:12,3"], sizes=[1.0, 2**30]).rows
    grid = np.array([1.0, 2.0**30])
    assert np.allclose([row.lower_bound_at(m) for m in grid],
                       [c.time_lower_bound for c in row.sizes], rtol=1e-12)
