"""The one thread-block interpreter (topocoll.interop.threadblocks) with and without bounded
connections: the bounded-buffer run of docs/interop.md ("Bounded buffers") is the same run with
a capacity, so what each receive gets does not depend on the bound once the program completes."""

from pathlib import Path

import pytest

from topocoll.interop import export_msccl, read_msccl
from topocoll.interop.buffers import buffer_capacity
from topocoll.interop.threadblocks import read_blocks, run_blocks
from topocoll.synth import generate
from topocoll.topology import topology

NEEDS_2 = Path(__file__).resolve().parents[1] / "data" / "msccl" / "cap-pair2-allgather-needs2.xml"


def _nothing(block, op, incoming):
    return None


def test_a_capacity_short_of_the_need_stops_both_senders():
    blocks = read_blocks(read_msccl(NEEDS_2), copies=False)
    stuck = run_blocks(blocks, _nothing, capacity=1)
    assert not stuck.done
    # each rank sent once and waits for room for its second send (step 2)
    assert stuck.pcs == [2, 2]
    assert stuck.held == {(0, 1, 0): 1, (1, 0, 0): 1}
    for capacity in (2, None):
        run = run_blocks(blocks, _nothing, capacity=capacity)
        assert run.done and set(run.held.values()) == {0}


@pytest.mark.parametrize("proto", ["Simple", "LL"])
def test_receives_get_the_same_sends_whatever_the_bound(proto):
    program = export_msccl(generate(topology("torus:2x3"), "allreduce", "bfb"), proto=proto,
                           channels=2).program
    blocks = read_blocks(program)
    need, _ = buffer_capacity(program)

    def received(capacity):
        got = []

        def on_step(block, op, incoming):
            if incoming is not None:
                got.append((block.rank, block.bid, op.s, incoming))
            return (block.rank, block.bid, op.s)

        assert run_blocks(blocks, on_step, capacity=capacity).done
        return sorted(got)

    assert received(need) == received(need + 3) == received(None)
