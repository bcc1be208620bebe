"""Export to MSCCL XML, import back: the schedule verifies and prices the same (T_L, T_B and the
link model), for every collective and for BFB, TEN, the baselines and all-to-all schedules; the
exported file breaks none of the runtime's rules."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers import strongly_connected_digraphs
from topocoll.errors import InvalidScheduleError, UnsupportedError
from topocoll.interop import export_msccl, import_msccl, lint_msccl, parse_msccl
from topocoll.interop.export import LIMITS, exact_chunks
from topocoll.schedule.cost import evaluate
from topocoll.schedule.linkmodel import simulate
from topocoll.schedule.model import Schedule, transfer_array
from topocoll.schedule.verify import verify
from topocoll.synth import generate
from topocoll.topology import topology

CASES = [
    ("ring:4", "allgather", "bfb", None, {}),
    ("torus:3x3", "reduce_scatter", "bfb", None, {}),
    ("torus:2x3", "allreduce", "bfb", None, {}),
    ("circulant:8:1,3", "allreduce", "bfb", None, {}),
    ("ring:5", "broadcast", "bfb", 0, {}),
    ("ring:5", "reduce", "bfb", 2, {}),
    ("ring:5", "gather", "ten", 1, {}),
    ("ring:5", "scatter", "ten", 3, {}),
    ("torus:2x3", "alltoall", "ten", None, {}),
    ("mesh:3x3", "allgather", "ten", None, {"chunks": 2}),
    ("torus:3x3", "allreduce", "ten", None, {}),
    ("uniring:6", "allreduce", "ring", None, {}),
    ("dbt:7", "allreduce", "dbt", None, {}),
    ("shiftedring:8", "allreduce", "shiftedring", None, {}),
    ("hypercube:3", "allreduce", "rhd", None, {}),
]


def assert_same_price(original, imported):
    a, b = evaluate(original, "1MiB"), evaluate(imported, "1MiB")
    assert b.steps == a.steps
    assert b.T_L == pytest.approx(a.T_L, rel=1e-12)
    assert b.T_B == pytest.approx(a.T_B, rel=1e-12)
    assert simulate(imported, "1MiB").time == pytest.approx(simulate(original, "1MiB").time,
                                                           rel=1e-12)


def assert_within_runtime_limits(program):
    for gpu in program.gpus:
        assert [int(tb.attrs["id"]) for tb in gpu.blocks] == list(range(len(gpu.blocks)))
        for tb in gpu.blocks:
            assert len(tb.steps) <= LIMITS["steps"]
            assert int(tb.attrs["chan"]) < LIMITS["channels"]
            assert gpu.attrs["id"] not in (tb.attrs["send"], tb.attrs["recv"])
            for i, step in enumerate(tb.steps):
                assert int(step.attrs["s"]) == i
                assert int(step.attrs["cnt"]) < LIMITS["count"]


@pytest.mark.parametrize("spec, coll, algorithm, root, options", CASES,
                         ids=[f"{c[2]}-{c[1]}-{c[0]}" for c in CASES])
@pytest.mark.parametrize("channels", [1, 2])
def test_export_then_import_prices_the_same(spec, coll, algorithm, root, options, channels):
    topo = topology(spec)
    s = generate(topo, coll, algorithm, root=root, **options)
    res = export_msccl(s, channels=channels)
    assert res.status == 0 and res.instances == channels
    assert_within_runtime_limits(res.program)
    back = import_msccl(res.text, topology=topo)
    assert back.lint.errors == [] and back.lint.problems == [] and back.lint.valid
    assert back.schedule.collective.name == coll and back.schedule.root == s.root
    assert verify(back.schedule).valid
    assert_same_price(s, back.schedule)


def test_alltoall_lp_schedule_round_trips():
    from topocoll.throughput import alltoall_schedule, path_throughput

    topo = topology("torus:3x3")
    s = alltoall_schedule(path_throughput(topo), topo)
    back = import_msccl(export_msccl(s).text, topology=topo)
    assert back.lint.valid
    assert_same_price(s, back.schedule)


def test_heterogeneous_ten_schedule_round_trips_with_its_waits():
    # TEN on mixed link speeds waits for busy links: steps are not the earliest the data
    # allows, and only the tcstep hints give them back exactly
    topo = topology("mesh:3x3").with_links(bandwidth=np.where(
        np.arange(topology("mesh:3x3").num_links) % 2 == 0, 50e9, 25e9))
    s = generate(topo, "allgather", "ten")
    back = import_msccl(export_msccl(s).text, topology=topo)
    assert back.lint.valid
    assert_same_price(s, back.schedule)
    eager = import_msccl(export_msccl(s, step_hints=False).text, topology=topo)
    assert eager.lint.valid
    assert eager.schedule.num_steps <= s.num_steps


def test_astra_form_uses_only_the_converters_steps():
    s = generate(topology("torus:3x3"), "allgather", "bfb")
    full = {st.attrs["type"] for g in export_msccl(s).program.gpus for tb in g.blocks
            for st in tb.steps}
    astra = export_msccl(s, astra=True)
    kinds = {st.attrs["type"] for g in astra.program.gpus for tb in g.blocks for st in tb.steps}
    assert "cpy" in full and kinds <= {"s", "r", "rrc", "nop"}
    assert astra.to_dict()["format"] == "msccl-xml-astra"
    # the in-place form needs no local copies: each rank's own shard is already in place
    report = lint_msccl(astra.program)
    assert report.errors == []
    # and the schedule verifies and prices the same
    assert verify(report.schedule).valid
    assert_same_price(s, import_msccl(astra.text, topology=topology("torus:3x3")).schedule)


def step_types(program):
    return [st.attrs["type"] for g in program.gpus for tb in g.blocks for st in tb.steps]


@pytest.mark.parametrize("spec, coll, fused", [("uniring:5", "allgather", "rcs"),
                                               ("uniring:5", "allreduce", "rrcs")])
def test_receives_that_forward_at_once_are_fused(spec, coll, fused):
    s = generate(topology(spec), coll, "ring")
    res = export_msccl(s)
    plain = export_msccl(s, unfused=True)
    assert fused in step_types(res.program) and fused not in step_types(plain.program)
    assert res.steps < plain.steps and res.blocks < plain.blocks
    # a ring: every rank's one block receives from its predecessor and sends to its successor
    if coll == "allgather":
        for gpu in res.program.gpus:
            rank = int(gpu.attrs["id"])
            peers = {(tb.attrs["recv"], tb.attrs["send"]) for tb in gpu.blocks}
            assert (str((rank - 1) % 5), str((rank + 1) % 5)) in peers
    for r in (res, plain):
        back = import_msccl(r.text, topology=s.topology)
        assert back.lint.valid
        assert_same_price(s, back.schedule)


def _long_link_schedule(pieces):
    """allgather on uniring:2 where each shard crosses its link in ``pieces`` separate steps."""
    k = np.arange(pieces)
    step = np.r_[k + 1, k + 1]
    src = np.r_[np.zeros(pieces), np.ones(pieces)]
    t = transfer_array(step, src, 1 - src, src, np.r_[k, k] / pieces, np.r_[k + 1, k + 1] / pieces)
    return Schedule(topology("uniring:2"), "allgather", t, algorithm="hand")


def test_a_link_longer_than_64_steps_continues_on_further_channels():
    s = _long_link_schedule(100)
    res = export_msccl(s)
    assert res.channels == 2 and res.max_block_steps <= 64
    assert_within_runtime_limits(res.program)
    back = import_msccl(res.text, topology=s.topology)
    assert back.lint.valid
    assert_same_price(s, back.schedule)


def test_too_long_for_32_channels_is_refused_with_the_reason():
    s = _long_link_schedule(100)    # 100 transfers per link: 2 channels of 64 steps per copy
    assert export_msccl(s, channels=16).channels == 32
    with pytest.raises(UnsupportedError, match="does not fit the runtime"):
        export_msccl(s, channels=17)


def test_runs_of_72_chunks_or_more_are_split():
    t = transfer_array([1, 1], [0, 1], [1, 0], [0, 1], [0.0, 0.0], [0.99, 0.99])
    t2 = transfer_array([2, 2], [0, 1], [1, 0], [0, 1], [0.99, 0.99], [1.0, 1.0])
    s = Schedule(topology("ring:2"), "allgather", np.r_[t, t2])
    res = export_msccl(s)
    assert res.chunks == 100
    cnts = [int(st.attrs["cnt"]) for g in res.program.gpus for tb in g.blocks
            for st in tb.steps if st.attrs["type"] == "s"]
    assert max(cnts) < 72 and sorted(cnts) == [1, 1, 28, 28, 71, 71]
    assert import_msccl(res.text, topology=s.topology).lint.valid


def test_fractional_schedule_is_rounded_to_whole_chunks_with_the_loss_reported():
    t = transfer_array([1, 2, 1, 2], [0, 0, 1, 1], [1, 1, 0, 0], [0, 0, 1, 1],
                       [0, 1 / 3, 0, 1 / 3], [1 / 3, 1, 1 / 3, 1])
    s = Schedule(topology("ring:2"), "allgather", t)
    assert exact_chunks(s) == 3
    res = export_msccl(s, chunks=2)
    assert res.status == 2 and res.chunks == 2
    # 1/3 -> 1/2 moves each boundary by 1/6 on both sides: 4 boundaries of 4/3 of moved bytes
    assert res.quantization_loss == pytest.approx((4 / 6) / 2)
    assert "rounding" in res.message
    assert import_msccl(res.text, topology=s.topology).lint.valid
    assert export_msccl(s).quantization_loss == 0 and export_msccl(s).chunks == 3


def test_invalid_schedules_and_options_are_refused():
    good = generate(topology("ring:3"), "allgather", "bfb")
    bad = good.replace(transfers=good.transfers[1:])
    with pytest.raises(InvalidScheduleError):
        export_msccl(bad)
    for kwargs, needle in (({"channels": 0}, "channels must be 1..32"),
                           ({"channels": 33}, "channels must be 1..32"),
                           ({"proto": "LL64"}, "proto must be one of"),
                           ({"chunks": 0}, "chunks must be >= 1"),
                           ({"min_bytes": 10, "max_bytes": 5}, "must not exceed")):
        with pytest.raises(UnsupportedError, match=needle):
            export_msccl(good, **kwargs)


def test_exported_text_is_what_the_runtime_parser_reads():
    text = export_msccl(generate(topology("ring:3"), "allreduce", "bfb"), proto="LL",
                        min_bytes=1024, max_bytes=2**20).text
    assert text.startswith("<algo ") and "<?xml" not in text and "'" not in text
    head = parse_msccl(text).attrs
    assert list(head)[:10] == ["name", "proto", "nchannels", "nchunksperloop", "ngpus", "coll",
                               "inplace", "outofplace", "minBytes", "maxBytes"]
    assert (head["proto"], head["minBytes"], head["maxBytes"]) == ("LL", "1024", "1048576")
    for line in text.splitlines():
        if "<step" in line:
            assert line.count('="') >= 10 and "\t" not in line


@settings(max_examples=15)
@given(strongly_connected_digraphs(max_nodes=6),
       st.sampled_from(["allgather", "reduce_scatter", "allreduce", "broadcast"]))
def test_random_networks_round_trip(topo, coll):
    s = generate(topo, coll, "ten", root=0 if coll == "broadcast" else None)
    back = import_msccl(export_msccl(s).text, topology=topo)
    assert back.lint.valid, (back.lint.errors[:3], back.lint.problems[:3])
    a, b = evaluate(s, "1MiB"), evaluate(back.schedule, "1MiB")
    assert (b.steps, b.T_L) == (a.steps, a.T_L) and b.T_B == pytest.approx(a.T_B, rel=1e-12)


def test_more_than_32_peers_is_refused_with_the_reason():
    s = generate(topology("complete:34"), "allgather", "bfb")     # 33 peers per rank
    with pytest.raises(UnsupportedError, match="sends to 33 peers; the runtime allows 32"):
        export_msccl(s)


def test_a_routed_schedule_exports_as_direct_sends_and_says_how_many():
    n = 6
    src, dst = np.nonzero(~np.eye(n, dtype=bool))
    ring = topology("ring:6")
    s = Schedule(ring, "allgather", transfer_array(1, src, dst, src, 0.0, 1.0),
                 algorithm="direct", routing="shortest")
    out = export_msccl(s)
    far = int(np.count_nonzero(np.abs(src - dst) % (n - 1) > 1))   # not next to each other
    assert out.routed == far == 18 and f"{far} of 30 transfers go to nodes" in out.message
    assert out.to_dict()["routed"] == far and lint_msccl(out.text).valid
    assert "routed" not in export_msccl(generate("ring:6", "allgather", "biring")).to_dict()
