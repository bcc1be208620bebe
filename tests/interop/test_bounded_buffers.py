"""Bounded buffers (docs/interop.md, "Bounded buffers"): a connection of the MSCCL runtime holds
only a few sends before its sender blocks. Lint runs the program with that bound and reports the
smallest capacity it needs; export writes programs that complete under the protocol's."""

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers import strongly_connected_digraphs
from topocoll.interop import export_msccl, lint_msccl
from topocoll.interop.export import CAPACITY, PROTOCOLS
from topocoll.interop.lint import buffer_capacity
from topocoll.synth import generate
from topocoll.topology import topology

MSCCL = Path(__file__).resolve().parents[1] / "data" / "msccl"
NEEDS_2 = MSCCL / "cap-pair2-allgather-needs2.xml"


def _shapes():
    from topocoll.throughput import alltoall_schedule, path_throughput

    torus = topology("torus:4x4")
    return {
        "bfb allreduce torus:4x4": generate(torus, "allreduce", "bfb"),
        "bfb allgather torus:4x4": generate(torus, "allgather", "bfb"),
        "bfb reduce_scatter hypercube:3": generate(topology("hypercube:3"), "reduce_scatter",
                                                   "bfb"),
        "alltoall torus:4x4": alltoall_schedule(path_throughput(torus), torus),
    }


@pytest.fixture(scope="module")
def shapes():
    return _shapes()


def test_capacities_come_from_the_runtime_primitives():
    # NCCL_STEPS = 8 slots; a Simple call takes MSCCL_CHUNKSTEPS = 4, LL and LL128 one
    assert CAPACITY == {"Simple": 2, "LL": 8, "LL128": 8}
    assert set(CAPACITY) == set(PROTOCOLS)


@pytest.mark.parametrize("proto", PROTOCOLS)
@pytest.mark.parametrize("form", [{}, {"unfused": True}, {"astra": True}])
def test_named_shapes_complete_under_the_protocols_capacity(shapes, proto, form):
    for name, s in shapes.items():
        res = export_msccl(s, proto=proto, step_hints=False, **form)
        need, blocked = buffer_capacity(res.program)
        assert need is not None and need <= CAPACITY[proto], (name, need)
        assert not blocked, name


def test_lint_reports_the_smallest_capacity_of_each_named_export(shapes):
    s = shapes["bfb reduce_scatter hypercube:3"]
    for proto in PROTOCOLS:
        report = lint_msccl(export_msccl(s, proto=proto).program)
        assert report.valid, (report.errors[:2], report.problems[:2])
        assert report.capacity == CAPACITY[proto]
        assert 1 <= report.min_capacity <= CAPACITY[proto]
        d = report.to_dict()
        assert d["min_capacity"] == report.min_capacity and d["capacity"] == CAPACITY[proto]
        json.dumps(d)


def test_fixture_needs_two_and_deadlocks_with_one():
    ok = lint_msccl(NEEDS_2.read_text())
    assert ok.valid and ok.min_capacity == 2 and ok.capacity == 2
    bad = lint_msccl(NEEDS_2.read_text(), capacity=1)
    assert bad.correct and not bad.valid and bad.min_capacity == 2
    (finding,) = [f for f in bad.errors if f.rule == "buffers"]
    assert finding.line == 6 and finding.element == "step"
    # the cycle: each rank's second send waits for the other to receive
    assert "rank 0 block 0 step 2 (s) waits for room" in finding.message
    assert "rank 1 block 0 step 2 (s) waits for room" in finding.message
    assert lint_msccl(NEEDS_2.read_text(), capacity=2).valid


def test_ll_connections_hold_what_simple_ones_do_not():
    # the same fixture as LL: 8 units hold both sends; with capacity 1 it hangs
    text = NEEDS_2.read_text().replace('proto="Simple"', 'proto="LL"')
    assert lint_msccl(text).valid
    assert lint_msccl(text, capacity=1).errors[0].rule == "buffers"


def test_streaming_a_send_larger_than_the_connection():
    # rank 0 sends 2 chunks in one step into a connection of 1: the runtime streams it slice by
    # slice while rank 1 stands at its receive, so it completes; had both ranks sent first,
    # neither would ever receive
    def block(rank, first, second):
        return (f'  <gpu id="{rank}" i_chunks="2" o_chunks="4" s_chunks="0">\n'
                f'    <tb id="0" send="{1 - rank}" recv="{1 - rank}" chan="0">\n'
                f'      <step s="0" type="cpy" srcbuf="i" srcoff="0" dstbuf="o" '
                f'dstoff="{2 * rank}" cnt="2" depid="-1" deps="-1" hasdep="0"/>\n'
                + "".join(f'      <step s="{i + 1}" {op} cnt="2" depid="-1" deps="-1" '
                          f'hasdep="0"/>\n' for i, op in enumerate((first, second)))
                + "    </tb>\n  </gpu>\n")

    head = NEEDS_2.read_text().splitlines()[0] + "\n"
    send = lambda r: f'type="s" srcbuf="i" srcoff="0" dstbuf="o" dstoff="{2 * r}"'  # noqa: E731
    recv = lambda r: f'type="r" srcbuf="i" srcoff="0" dstbuf="o" dstoff="{2 - 2 * r}"'  # noqa
    good = head + block(0, send(0), recv(0)) + block(1, recv(1), send(1)) + "</algo>\n"
    report = lint_msccl(good, capacity=1)
    assert report.valid, (report.errors[:2], report.problems[:2])
    assert report.min_capacity == 1
    bad = head + block(0, send(0), recv(0)) + block(1, send(1), recv(1)) + "</algo>\n"
    report = lint_msccl(bad, capacity=1)
    assert report.correct and report.min_capacity == 2
    assert [f.rule for f in report.errors] == ["buffers"]


@settings(max_examples=20, deadline=None)
@given(strongly_connected_digraphs(max_nodes=6),
       st.sampled_from(["allgather", "reduce_scatter", "allreduce", "alltoall"]),
       st.sampled_from(PROTOCOLS))
def test_random_exports_complete_under_capacity(topo, coll, proto):
    s = generate(topo, coll, "ten" if coll == "alltoall" else "bfb")
    res = export_msccl(s, proto=proto)
    need, blocked = buffer_capacity(res.program)
    assert need is not None and need <= CAPACITY[proto] and not blocked
    report = lint_msccl(res.program)
    assert report.valid, (report.errors[:2], report.problems[:2])
    assert report.min_capacity == need
