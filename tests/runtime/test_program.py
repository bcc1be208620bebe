"""Dataflow programs (:mod:`topocoll.runtime.program`) checked against their rules, recomputed
naively here: how messages are cut into packets, that both ends of every link agree packet by
packet, and that every dependency is the one the module text states."""

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from topocoll.collectives import COLLECTIVES
from topocoll.errors import InputTypeError, UnsupportedError
from topocoll.runtime.plan import rank_plan
from topocoll.runtime.program import compile_program, packets
from topocoll.synth import generate
from topocoll.synth.bfb import BFB_COLLECTIVES
from topocoll.synth.ten import synthesize
from topocoll.throughput import alltoall_schedule, path_throughput

from tests.helpers import strongly_connected_digraphs
from tests.runtime.test_plan import ROOTED, numel_for

ALL = tuple(COLLECTIVES)
assert len(ALL) == 8
RINGS = ("allgather", "reduce_scatter", "allreduce")


# ------------------------------------------------------------------ random schedules (shared)
def makers(name):
    """The generators that can make collective ``name`` on any strongly connected digraph."""
    out = ["ten"]
    if name in BFB_COLLECTIVES:
        out.append("bfb")
    if name in RINGS:
        out += ["trees", "ring"]
    if name == "alltoall":
        out.append("lp")
    return out


#: Every (generator, collective) pair that :func:`schedules` can make.
MAKERS = [(maker, name) for name in ALL for maker in makers(name)]


@st.composite
def schedules(draw, maker, name, max_nodes=6):
    """A random schedule of ``name`` made by ``maker`` (TEN synthesis, BFB, the spanning-tree
    packing, the path LP for alltoall, or a ring baseline on a ring of the same size) on a
    random strongly connected digraph, with a random root."""
    t = draw(strongly_connected_digraphs(max_nodes=max_nodes))
    n = t.num_nodes
    root = draw(st.integers(0, n - 1)) if name in ROOTED else None
    if maker == "ten":
        return synthesize(t, name, root=root, chunks=draw(st.integers(1, 3)),
                          seed=draw(st.integers(0, 3)))
    if maker == "bfb":
        return generate(t, name, "bfb", root=root)
    if maker == "trees":
        return generate(t, name, "trees", chunks=draw(st.integers(1, 2)))
    if maker == "lp":
        return alltoall_schedule(path_throughput(t), t)
    assert maker == "ring", maker
    algorithm = draw(st.sampled_from(["ring", "biring"]))
    return generate(f"{'uniring' if algorithm == 'ring' else 'ring'}:{n}", name, algorithm)


#: Schedules of the baselines that need a topology of their own.
FIXED = [("rhd", "hypercube:3", "allreduce"), ("dbt", "dbt:8", "allreduce"),
         ("torusrings", "torus:3x3", "allgather"), ("shiftedring", "circulant:9:1,2",
                                                     "allreduce"),
         ("biring", "ring:5", "reduce_scatter")]


# ------------------------------------------------------------------ naive helpers
def elements(pieces):
    """Every element a list of pieces names, in order, with what follows ``stop``."""
    return [(p[0], e) + tuple(p[3:]) for p in pieces for e in range(p[1], p[2])]


def runs(pieces):
    """Adjacent pieces of one shard joined, as (first index into elements, length)."""
    out, at = [], 0
    prev = None
    for p in pieces:
        n = p[2] - p[1]
        if prev is not None and prev[0] == p[0] and prev[2] == p[1]:
            out[-1][1] += n
        else:
            out.append([at, n])
        at += n
        prev = p
    return [tuple(r) for r in out]


def overlap(p, q):
    return p[0] == q[0] and p[1] < q[2] and q[1] < p[2]


def touches(a, b):
    return any(overlap(p, q) for p in a for q in b)


def contiguous(pieces):
    return all(q[0] == pieces[0][0] and q[1] == p[2] for p, q in zip(pieces, pieces[1:]))


def programs(schedule, numel, slice_numel, window, in_place_numel=None):
    n = schedule.topology.num_nodes
    return [compile_program(schedule, r, numel, slice_numel=slice_numel, window=window,
                            in_place_numel=in_place_numel)
            for r in range(n)]


# ------------------------------------------------------------------ packets()
@st.composite
def piece_lists(draw):
    """Pieces ``(shard, start, stop, flag)``: runs of adjacent pieces, random gaps and shards."""
    out = []
    for _ in range(draw(st.integers(1, 12))):
        shard = draw(st.integers(0, 2))
        length = draw(st.integers(1, 30))
        if out and draw(st.booleans()):               # continue the previous piece's run
            shard, start = out[-1][0], out[-1][2]
        else:
            start = draw(st.integers(0, 100))
        out.append((shard, start, start + length, draw(st.booleans())))
    return out


def check_packets(pieces, slice_numel, cut):
    """Every rule of the module text about cutting one message, for the packets ``cut``."""
    assert cut, "no packets"
    flat = elements(pieces)
    # concatenated, the packets are exactly the message
    assert elements([p for pkt in cut for p in pkt]) == flat
    sizes = [sum(p[2] - p[1] for p in pkt) for pkt in cut]
    assert all(1 <= k <= slice_numel for k in sizes), sizes
    # each packet's pieces are non-empty parts of one piece each
    for pkt in cut:
        for p in pkt:
            assert p[1] < p[2]
            assert any(q[0] == p[0] and q[1] <= p[1] and p[2] <= q[2] and q[3:] == p[3:]
                       for q in pieces), p
    bounds = np.cumsum([0] + sizes)           # packet j holds elements [bounds[j], bounds[j+1])
    small_packets = set(range(len(cut)))
    for first, length in runs(pieces):
        inside = [j for j in range(len(cut)) if bounds[j] < first + length
                  and first < bounds[j + 1]]
        if length >= slice_numel:             # cut into near-equal slices of its own
            assert bounds[inside[0]] == first and bounds[inside[-1] + 1] == first + length
            assert len(inside) == -(-length // slice_numel)
            mine = [sizes[j] for j in inside]
            assert max(mine) - min(mine) <= 1, mine
            small_packets -= set(inside)
        else:                                 # never split
            assert len(inside) == 1, (first, length, inside)
    # short runs are packed in order, greedily: a packet of them is closed only when the
    # next run does not fit (or a long run follows)
    run_starts = {first: length for first, length in runs(pieces)}
    for j in sorted(small_packets):
        if j + 1 in small_packets:
            assert sizes[j] + run_starts[int(bounds[j + 1])] > slice_numel, (j, sizes)


@settings(max_examples=300, deadline=None)
@given(piece_lists(), st.integers(1, 40))
def test_packets_cut_a_message_as_the_rules_say(pieces, slice_numel):
    check_packets(pieces, slice_numel, packets(pieces, slice_numel))


@settings(max_examples=100, deadline=None)
@given(piece_lists(), st.integers(1, 40))
def test_packets_keep_pieces_without_extra_fields(pieces, slice_numel):
    bare = [p[:3] for p in pieces]
    cut = packets(bare, slice_numel)
    assert [[p[:3] for p in pkt] for pkt in packets(pieces, slice_numel)] == cut
    assert all(len(p) == 3 for pkt in cut for p in pkt)


def test_the_packet_checker_fails_on_wrong_cuts():
    pieces = [(0, 0, 10, False), (0, 10, 12, True), (1, 0, 2, False), (2, 0, 3, False)]
    right = packets(pieces, 5)
    check_packets(pieces, 5, right)
    wrong = [
        right[:-1],                                                  # an element lost
        [[(0, 0, 5, False)], [(0, 5, 10, False), (0, 10, 12, True)]] + right[3:],  # > slice
        [[(0, 0, 3, False)], [(0, 3, 8, False)]] + right[2:],        # unequal slices
        right[:3] + [[(1, 0, 2, False)], [(2, 0, 3, False)]],        # not packed greedily
        right[:3] + [[(1, 0, 1, False)], [(1, 1, 2, False), (2, 0, 3, False)]],  # run split
        [[(p[0], p[1], p[2], not p[3]) for p in pkt] for pkt in right],  # flags lost
    ]
    for cut in wrong:
        with pytest.raises(AssertionError):
            check_packets(pieces, 5, cut)


def test_packets_examples():
    assert packets([(0, 0, 7)], 7) == [[(0, 0, 7)]]
    assert packets([(0, 0, 8)], 7) == [[(0, 0, 4)], [(0, 4, 8)]]
    assert packets([(0, 0, 3), (0, 3, 6), (1, 0, 1)], 7) == [[(0, 0, 3), (0, 3, 6), (1, 0, 1)]]
    # a long run in the middle flushes the short ones before it
    assert packets([(1, 0, 2), (0, 0, 9), (2, 0, 1)], 4) == [
        [(1, 0, 2)], [(0, 0, 3)], [(0, 3, 6)], [(0, 6, 9)], [(2, 0, 1)]]
    assert packets([(0, 0, 5)], 1) == [[(0, e, e + 1)] for e in range(5)]


# ------------------------------------------------------------------ both ends of every link
def check_links(schedule, progs, numel, slice_numel):
    n = schedule.topology.num_nodes
    plans = [rank_plan(schedule, r, numel) for r in range(n)]
    by_step = [{step.step: step for step in plan.steps} for plan in plans]
    for a in range(n):
        for b in range(n):
            if a == b:
                continue
            out = sorted((op for op in progs[a].sends if op.peer == b), key=lambda op: op.tag)
            inn = sorted((op for op in progs[b].recvs if op.peer == a), key=lambda op: op.tag)
            assert [op.tag for op in out] == list(range(len(out))), (a, b)
            assert [op.tag for op in inn] == list(range(len(inn))), (a, b)
            assert len(out) == len(inn), (a, b)
            for s, r in zip(out, inn):
                assert (s.tag, s.step, s.numel) == (r.tag, r.step, r.numel), (a, b, s, r)
                assert s.pieces == tuple(p[:3] for p in r.pieces), (a, b, s, r)
            # link order is (step, packet) order: steps never go back
            assert [op.step for op in out] == sorted(op.step for op in out)
            # the links lists hold the same operations, in tag order
            assert [progs[a].sends[i] for i in progs[a].send_links.get(b, [])] == out
            assert [progs[b].recvs[i] for i in progs[b].recv_links.get(a, [])] == inn
            # the packets of each step are the plan's message, cut by packets()
            for step in plans[a].steps:
                if b not in step.sends:
                    continue
                mine = [op for op in out if op.step == step.step]
                assert [list(op.pieces) for op in mine] == packets(step.sends[b], slice_numel)
                theirs = [op for op in inn if op.step == step.step]
                assert elements([p for op in theirs for p in op.pieces]) == \
                    elements(by_step[b][step.step].recvs[a])
            assert sum(op.numel for op in out) == sum(
                step.send_numel(b) for step in plans[a].steps if b in step.sends)
    for p in progs:
        for op in p.sends:
            assert op.numel == sum(c - a for _, a, c in op.pieces) <= slice_numel
        for op in p.recvs:
            assert op.numel == sum(c - a for _, a, c, _ in op.pieces) <= slice_numel


@pytest.mark.parametrize("maker, name", MAKERS)
@settings(max_examples=4, deadline=None)
@given(data=st.data(), unit=st.integers(1, 15), slice_numel=st.integers(1, 20),
       window=st.integers(1, 4))
def test_both_ends_of_every_link_agree_packet_by_packet(maker, name, data, unit, slice_numel,
                                                        window):
    schedule = data.draw(schedules(maker, name))
    numel = numel_for(schedule.collective.name, schedule.topology.num_nodes, unit)
    progs = programs(schedule, numel, slice_numel, window)
    check_links(schedule, progs, numel, slice_numel)


@pytest.mark.parametrize("algorithm, spec, name", FIXED)
def test_both_ends_agree_for_the_baselines(algorithm, spec, name):
    schedule = generate(spec, name, algorithm)
    for unit, slice_numel, window in ((1, 1, 1), (7, 2, 3), (13, 5, 2)):
        numel = numel_for(name, schedule.topology.num_nodes, unit)
        check_links(schedule, programs(schedule, numel, slice_numel, window), numel,
                    slice_numel)


def test_the_link_checker_fails_on_a_mismatch():
    schedule = generate("ring:4", "allreduce")
    progs = programs(schedule, 16, 2, 2)
    check_links(schedule, progs, 16, 2)
    for tamper in (lambda op: replace(op, tag=op.tag + 1), lambda op: replace(op, step=9),
                   lambda op: replace(op, numel=op.numel + 1)):
        broken = programs(schedule, 16, 2, 2)
        broken[1].sends[3] = tamper(broken[1].sends[3])
        with pytest.raises(AssertionError):
            check_links(schedule, broken, 16, 2)
    broken = programs(schedule, 16, 2, 2)
    del broken[2].recvs[-1]
    with pytest.raises(AssertionError):
        check_links(schedule, broken, 16, 2)


# ------------------------------------------------------------------ dependencies
def check_dependencies(prog):
    sends, recvs, window = prog.sends, prog.recvs, prog.window
    # writes run in program order: (step, packet of its message, peer)
    first_tag = {}
    keys = []
    for op in recvs:
        first_tag.setdefault((op.step, op.peer), op.tag)
        keys.append((op.step, op.tag - first_tag[(op.step, op.peer)], op.peer))
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    for op in sends:
        earlier = [i for i, w in enumerate(recvs)
                   if w.step < op.step and touches(op.pieces, [p[:3] for p in w.pieces])]
        assert op.after == (max(earlier) + 1 if earlier else 0), op
        assert op.after <= len(recvs)
        # never waits for a write of its own step or a later one
        assert all(w.step < op.step for w in recvs[:op.after])
        same = any(w.step == op.step and touches(op.pieces, [p[:3] for p in w.pieces])
                   for w in recvs)
        assert op.snapshot == same, op
        assert op.contiguous == contiguous(op.pieces)
    staged_by_peer = {}
    staging = {}
    for index, op in enumerate(recvs):
        region = [p[:3] for p in op.pieces]
        readers = [j for j, s in enumerate(sends) if s.step < op.step
                   and touches(s.pieces, region)]
        # (an index may repeat when one send overlaps several pieces: harmless)
        assert sorted(set(op.wait_sends)) == readers, (index, op)
        assert list(op.wait_sends) == sorted(op.wait_sends)
        clash = any(s.step == op.step and touches(s.pieces, region) for s in sends) or any(
            w.step == op.step and j != index and touches([p[:3] for p in w.pieces], region)
            for j, w in enumerate(recvs))
        earlier = [j for j in range(index) if touches([p[:3] for p in recvs[j].pieces], region)]
        # straight into place where nothing earlier (nor in the same step) touches it, or
        # where it is large and nothing of its own step does
        large = prog.in_place_numel is not None and op.numel >= prog.in_place_numel
        can = (contiguous(op.pieces) and not any(p[3] for p in op.pieces) and not clash
               and (large or (not readers and not earlier)))
        assert op.direct == can, (index, op)
        if op.direct:
            # a contiguous copy straight into the shard, after every earlier overlapping write
            s0, a0, b0 = op.pieces[0][0], op.pieces[0][1], op.pieces[-1][2]
            assert op.numel == b0 - a0 and all(p[0] == s0 for p in op.pieces)
            assert op.after == (max(earlier) + 1 if earlier else 0), (index, op)
            assert (op.slot, op.release) == (-1, -1)
        else:
            mine = staged_by_peer.setdefault(op.peer, [])
            assert op.slot == len(mine) % window
            assert op.release == (mine[-window] if len(mine) >= window else -1)
            assert op.release < index
            if op.release >= 0:
                assert recvs[op.release].peer == op.peer
                assert recvs[op.release].slot == op.slot
            mine.append(index)
            staging[op.peer] = max(staging.get(op.peer, 0), op.numel)
    assert prog.staging == staging
    assert all(len(v) == len(set(v)) for v in prog.send_links.values())


@pytest.mark.parametrize("maker, name", MAKERS)
@settings(max_examples=3, deadline=None)
@given(data=st.data(), unit=st.integers(1, 9), slice_numel=st.integers(1, 12),
       window=st.integers(1, 4), in_place=st.one_of(st.none(), st.integers(1, 12)))
def test_every_dependency_is_the_one_the_rules_give(maker, name, data, unit, slice_numel,
                                                    window, in_place):
    schedule = data.draw(schedules(maker, name, max_nodes=5))
    numel = numel_for(schedule.collective.name, schedule.topology.num_nodes, unit)
    for prog in programs(schedule, numel, slice_numel, window, in_place):
        assert prog.window == window and prog.slice_numel == slice_numel
        assert prog.in_place_numel == in_place
        check_dependencies(prog)


@pytest.mark.parametrize("algorithm, spec, name", FIXED[:3])
def test_dependencies_of_the_baselines(algorithm, spec, name):
    schedule = generate(spec, name, algorithm)
    numel = numel_for(name, schedule.topology.num_nodes, 5)
    for prog in programs(schedule, numel, 2, 2):
        check_dependencies(prog)


def _hand_made(name, rows, n=3):
    """An allreduce on the complete digraph of ``n`` nodes from rows
    ``(step, src, dst, lo, hi, reduce)``, the same for every shard."""
    from topocoll.schedule import verify
    from topocoll.schedule.model import Schedule, transfer_array
    from topocoll.topology import Topology

    rows = [(s, u, v, x, lo, hi, op) for x in range(n) for s, u, v, lo, hi, op in rows]
    step, src, dst, shard, lo, hi, op = zip(*rows)
    pairs = [(u, v) for u in range(n) for v in range(n) if u != v]
    t = Topology(n, [u for u, _ in pairs], [v for _, v in pairs])
    schedule = Schedule(t, "allreduce", transfer_array(step, src, dst, shard, lo, hi, op),
                        algorithm=name)
    assert verify(schedule).valid, name
    return schedule


def exchange_allreduce(n=3):
    """Allreduce in one step: every node adds every other's whole buffer; every send reads
    what a write of its own step changes (snapshots)."""
    return _hand_made("exchange", [(1, u, v, 0.0, 1.0, 1) for u in range(n) for v in range(n)
                                   if u != v], n)


def stale_send_allreduce():
    """Node 1 sends the first half of each shard to node 2 in step 3 (its own data, to be
    added) while node 0 copies the total into it in the same step; the send also carries the
    second half, which node 1 completes in step 2. The copy must wait (be staged) until the
    send has taken its snapshot, however early it arrives."""
    return _hand_made("stale-send", [
        (1, 1, 0, 0.0, 0.5, 1), (1, 2, 0, 0.0, 0.5, 1), (1, 0, 2, 0.0, 0.5, 1),
        (1, 2, 0, 0.5, 1.0, 1), (2, 0, 1, 0.5, 1.0, 1),
        (3, 1, 2, 0.0, 0.5, 1), (3, 1, 2, 0.5, 1.0, 0), (3, 1, 0, 0.5, 1.0, 0),
        (3, 0, 1, 0.0, 0.5, 0)])


def wasted_write_allreduce():
    """Node 2 adds node 1's data in step 1, then the total arrives from node 0 in step 2 and
    replaces it: the copy must not land before the earlier addition is done."""
    return _hand_made("wasted-write", [
        (1, 1, 0, 0.0, 1.0, 1), (1, 2, 0, 0.0, 1.0, 1), (1, 1, 2, 0.0, 1.0, 1),
        (2, 0, 1, 0.0, 1.0, 0), (2, 0, 2, 0.0, 1.0, 0)])


def chain_allreduce():
    """Node 0 sends its data to node 1 in step 1 and adds node 2's in step 2, while nothing
    makes node 1 receive first: only waiting for that send keeps node 0's data right."""
    return _hand_made("chain", [(1, 0, 1, 0.0, 1.0, 1), (2, 2, 0, 0.0, 1.0, 1),
                                (2, 1, 2, 0.0, 1.0, 1), (3, 2, 0, 0.0, 1.0, 0),
                                (3, 2, 1, 0.0, 1.0, 0)])


HAND_MADE = {"exchange": exchange_allreduce, "stale-send": stale_send_allreduce,
             "wasted-write": wasted_write_allreduce, "chain": chain_allreduce}


@pytest.mark.parametrize("which", sorted(HAND_MADE))
def test_dependencies_of_hand_made_schedules(which):
    schedule = HAND_MADE[which]()
    for numel, slice_numel, window in ((3, 1, 1), (12, 4, 2), (12, 2, 3), (30, 50, 1)):
        progs = programs(schedule, numel, slice_numel, window)
        check_links(schedule, progs, numel, slice_numel)
        for prog in progs:
            check_dependencies(prog)


def test_every_kind_of_dependency_occurs_somewhere():
    """So that the checks above are not vacuous: snapshots, staged and direct packets,
    released staging buffers, waits on sends and on writes, and copies that may not be
    received in place all occur."""
    seen = dict.fromkeys(["snapshot", "direct", "staged", "release", "wait_sends",
                          "send after", "direct after", "packed", "staged copy"], False)
    for schedule, numel, slice_numel, in_place in (
            (exchange_allreduce(), 12, 2, None), (exchange_allreduce(), 12, 12, None),
            (stale_send_allreduce(), 12, 4, None), (generate("ring:4", "allreduce"), 40, 2, None),
            (generate("ring:4", "allreduce"), 40, 2, 1),
            (synthesize("torus:3x3", "allgather", chunks=3), 10, 8, None)):
        for prog in programs(schedule, numel, slice_numel, 2, in_place):
            check_dependencies(prog)
            seen["snapshot"] |= any(op.snapshot for op in prog.sends)
            seen["packed"] |= any(not op.contiguous for op in prog.sends)
            seen["send after"] |= any(op.after for op in prog.sends)
            seen["direct"] |= any(op.direct for op in prog.recvs)
            seen["direct after"] |= any(op.direct and (op.after or op.wait_sends)
                                        for op in prog.recvs)
            seen["staged"] |= any(not op.direct for op in prog.recvs)
            seen["release"] |= any(op.release >= 0 for op in prog.recvs)
            seen["wait_sends"] |= any(op.wait_sends for op in prog.recvs)
            # one contiguous copied range, staged because something else touches it
            seen["staged copy"] |= any(not op.direct and contiguous(op.pieces)
                                       and not any(p[3] for p in op.pieces)
                                       for op in prog.recvs)
    assert all(seen.values()), seen


def test_the_dependency_checker_fails_on_a_wrong_dependency():
    prog = programs(generate("ring:4", "allreduce"), 40, 2, 2)[1]
    check_dependencies(prog)
    s = next(i for i, op in enumerate(prog.sends) if op.after)
    r = next(i for i, op in enumerate(prog.recvs) if op.release >= 0)
    w = next(i for i, op in enumerate(prog.recvs) if op.wait_sends)
    gather = programs(generate("ring:4", "allgather"), 40, 2, 2)[1]
    check_dependencies(gather)
    d = next(i for i, op in enumerate(gather.recvs) if op.direct)
    broken = programs(generate("ring:4", "allgather"), 40, 2, 2)[1]
    broken.recvs[d] = replace(broken.recvs[d], direct=False)
    with pytest.raises(AssertionError):
        check_dependencies(broken)
    for kind, i, change in (("sends", s, dict(after=prog.sends[s].after - 1)),
                            ("sends", s, dict(snapshot=True)),
                            ("recvs", r, dict(release=-1)),
                            ("recvs", r, dict(slot=(prog.recvs[r].slot + 1) % 2)),
                            ("recvs", w, dict(wait_sends=prog.recvs[w].wait_sends[1:]))):
        broken = programs(generate("ring:4", "allreduce"), 40, 2, 2)[1]
        ops = getattr(broken, kind)
        ops[i] = replace(ops[i], **change)
        with pytest.raises(AssertionError):
            check_dependencies(broken)


def test_bad_slice_and_window_are_refused():
    schedule = generate("ring:3", "allreduce")
    for bad, error in ((0, UnsupportedError), (-1, UnsupportedError), (True, InputTypeError),
                       (1.5, InputTypeError), ("4", InputTypeError), (None, InputTypeError)):
        with pytest.raises(error, match="slice_numel"):
            compile_program(schedule, 0, 9, slice_numel=bad)
        with pytest.raises(error, match="window"):
            compile_program(schedule, 0, 9, slice_numel=2, window=bad)
    assert compile_program(schedule, 0, 9, slice_numel=np.int64(2),
                           window=np.int32(1)).window == 1
