"""The lint: every runtime rule, broken one at a time in a valid program, is reported with the
element and its line; hangs, double counts and wrong outputs are found by running the program;
hand-written files of both dialects import and verify."""

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers import DATA
from topocoll.errors import ScheduleFormatError
from topocoll.interop import export_msccl, import_msccl, lint_msccl, parse_msccl
from topocoll.schedule.cost import evaluate
from topocoll.schedule.verify import verify
from topocoll.synth import generate
from topocoll.topology import topology

MSCCL = DATA / "msccl"


@pytest.fixture(scope="module")
def allreduce_text():
    return export_msccl(generate(topology("ring:3"), "allreduce", "bfb")).text


def lines_of(text, needle):
    return [i + 1 for i, line in enumerate(text.splitlines()) if needle in line]


def rules(report):
    return {f.rule for f in report.errors}


def test_a_valid_export_has_no_findings(allreduce_text):
    report = lint_msccl(allreduce_text)
    assert report.valid and report.status == 0 and report.errors == [] and report.correct


def replace_once(text, old, new, nth=0):
    pos = -1
    for _ in range(nth + 1):
        pos = text.index(old, pos + 1)
    return text[:pos] + new + text[pos + len(old):]


@pytest.mark.parametrize("old, new, rule, needle", [
    ('<algo ', '<?xml version="1.0"?>\n<algo ', "first-element", "must start with <algo>"),
    (' outofplace="1"', '', "attributes", "outofplace"),
    ('proto="Simple"', 'proto="simple"', "proto", "proto='simple'"),
    ('coll="allreduce"', 'coll="all_reduce"', "coll", "spells it 'allreduce'"),
    ('nchannels="1"', 'nchannels="01"', "integer", "plain decimal"),
    ('<tb id="1"', '<tb id="7"', "tb-id", "without gaps"),
    ('send="2" recv="-1"', 'send="0" recv="-1"', "peer", "equals the rank itself"),
    ('<step s="1"', '<step s="5"', "step-number", "s must count"),
    ('type="rrc"', 'type="rrcc"', "type", "is not one of"),
    ('cnt="1"', 'cnt="72"', "count", "cnt=72"),
    ('srcoff="0"', 'srcoff="9"', "offset", "leaves the buffer"),
    ('hasdep="1"', 'hasdep="0"', "hasdep", "not marked hasdep"),
    ('depid="-1" deps="-1"', 'depid="9" deps="0"', "dependency", "names no thread block"),
    ('chan="0"', 'chan="3"', "channel", "chan=3"),
    ('<gpu id="2"', '<gpu id="1"', "gpu-id", "appears twice"),
    ('srcbuf="i"', "srcbuf='i'", "text", "double quotes"),
    (' type="s"', '\n type="s"', "text", "single spaces"),
])
def test_each_runtime_rule_is_reported_with_its_line(allreduce_text, old, new, rule, needle):
    text = replace_once(allreduce_text, old, new)
    report = lint_msccl(parse_msccl(text))
    assert not report.valid and report.status == 3
    found = [f for f in report.errors if f.rule == rule]
    assert found, report.errors
    assert any(needle in f.message or needle in str(f) for f in found), found
    changed = lines_of(text, new.strip().split("\n")[-1])[0]
    lines = {f.line for f in found}
    # a tag's findings name the line the tag starts on
    assert changed in lines or changed - 1 in lines or rule in ("gpu-id", "tb-id"), \
        (found, changed)


def test_a_second_block_for_one_channel_and_peer_is_reported(allreduce_text):
    # rank 0's send block to rank 2 now sends to rank 1, which block 1 already does
    text = replace_once(allreduce_text, 'send="2" recv="-1"', 'send="1" recv="-1"')
    assert "one-block" in rules(lint_msccl(text))


def test_nop_rules():
    # a step with two dependencies exports as a nop then the step; break both nop rules
    text = export_msccl(generate(topology("torus:3x3"), "allreduce", "bfb")).text
    assert 'type="nop"' in text
    nop = re.search(r'<step s="\d+" type="nop"[^>]*depid="(\d+)" deps="(\d+)"', text)
    no_dep = text.replace(nop.group(0), nop.group(0).replace(
        f'depid="{nop.group(1)}" deps="{nop.group(2)}"', 'depid="-1" deps="-1"'), 1)
    assert "must carry a dependency" in " ".join(f.message for f in lint_msccl(no_dep).errors)


def test_mismatched_sends_and_receives_are_reported(allreduce_text):
    text = replace_once(allreduce_text, 'type="s"', 'type="nop"')
    report = lint_msccl(text)
    assert "matching" in rules(report)
    assert not report.correct


def test_a_dependency_cycle_is_a_hang(allreduce_text):
    # rank 0's first receive now waits for its own block's last step: it can never start
    text = replace_once(allreduce_text, 'depid="-1" deps="-1" hasdep="1"',
                        'depid="0" deps="1" hasdep="1"')
    report = lint_msccl(text)
    assert report.correct is False
    assert any("waits for" in p for p in report.problems), report.problems


def test_a_double_count_and_a_wrong_output_are_found(allreduce_text):
    # rank 0 reduces its first arrival into o[0] from o[0] instead of its own input
    text = replace_once(allreduce_text, 'type="rrc" srcbuf="i"', 'type="rrc" srcbuf="o"')
    report = lint_msccl(text)
    assert report.errors == [] and report.correct is False
    assert any("holds no data" in p or "twice" in p or "holds" in p for p in report.problems)


def test_wrong_output_chunk_is_named():
    text = (MSCCL / "ring3-reducescatter.xml").read_text()
    text = text.replace('dstbuf="o" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>',
                        'dstbuf="s" dstoff="0" cnt="1" depid="-1" deps="-1" hasdep="0"/>', 1)
    report = lint_msccl(text)
    assert any("rank 0 output chunk 0 holds nothing" in p for p in report.problems), \
        report.problems


def test_hand_written_current_dialect_file_is_valid_and_prices_as_a_ring():
    imported = import_msccl(MSCCL / "ring3-reducescatter.xml", topology=topology("uniring:3"))
    assert imported.lint.valid
    s = imported.schedule
    assert s.collective.name == "reduce_scatter" and s.num_steps == 2 and s.num_transfers == 6
    assert verify(s).valid
    # a ring reduce-scatter: 2 steps, each moving 1/3 of M over every link
    e = evaluate(s, 3e9, alpha=1e-6, link_bandwidth=1e9)
    assert e.T_L == pytest.approx(2e-6) and e.T_B == pytest.approx(2.0)


def test_hand_written_older_dialect_file_imports_and_is_flagged_for_the_runtime():
    imported = import_msccl(MSCCL / "ring3-allgather-old-dialect.xml")
    report = imported.lint
    assert report.correct is True and not report.valid
    assert rules(report) == {"attributes"}
    # the runtime skips <copy> elements: a warning, not a refusal
    assert {f.rule for f in report.warnings} == {"copy"}
    assert any("outofplace, minBytes, maxBytes" in f.message for f in report.errors)
    s = imported.schedule
    assert s.collective.name == "allgather" and s.num_steps == 2 and verify(s).valid
    # without --topology the network is the links the program uses: the ring 0->1->2->0
    assert sorted(zip(s.topology.src.tolist(), s.topology.dst.tolist())) == \
        [(0, 1), (1, 2), (2, 0)]


def test_older_spelling_reduce_scatter_is_read():
    text = (MSCCL / "ring3-reducescatter.xml").read_text()
    old = text.replace('coll="reducescatter"', 'coll="reduce_scatter"')
    report = lint_msccl(old)
    assert report.correct is True
    assert any("spells it 'reducescatter'" in f.message for f in report.errors)


@pytest.mark.parametrize("cut", [200, 900, 1500])
def test_truncated_xml_names_the_line_and_open_element(cut):
    text = (MSCCL / "ring3-reducescatter.xml").read_text()[:cut]
    with pytest.raises(ScheduleFormatError, match=r"<xml>:\d+: not well-formed XML: .*inside <"):
        parse_msccl(text)


def test_unknown_elements_and_a_first_element_other_than_algo_are_errors():
    with pytest.raises(ScheduleFormatError, match="line 1|:1: the first element must be <algo>"):
        parse_msccl('<program ngpus="2"/>')
    with pytest.raises(ScheduleFormatError, match=":3: unexpected element <thread>"):
        parse_msccl('<algo ngpus="1" coll="allgather">\n<gpu id="0">\n<thread/>\n</gpu></algo>')


JUNK = ["", "x", "-5", "999", "1.5", "01", "-1", "0", "1", "2", "s", "rrcs", "nop", "70000"]


@settings(max_examples=60)
@given(st.data())
def test_any_attribute_set_to_junk_gives_a_report_not_a_crash(data):
    text = export_msccl(generate(topology("ring:3"), "allreduce", "bfb")).text
    attrs = list(re.finditer(r'(\w+)="([^"]*)"', text))
    for _ in range(data.draw(st.integers(1, 3))):
        m = data.draw(st.sampled_from(attrs))
        junk = data.draw(st.sampled_from(JUNK))
        text = text[:m.start(2)] + junk + text[m.end(2):]
        attrs = list(re.finditer(r'(\w+)="([^"]*)"', text))
    try:
        report = lint_msccl(text)
    except ScheduleFormatError:
        return
    assert report.status in (0, 3)
    if report.valid:
        assert report.errors == [] and report.correct
    else:
        assert report.errors or report.problems


@settings(max_examples=30)
@given(st.data())
def test_any_element_removed_gives_a_report_not_a_crash(data):
    text = export_msccl(generate(topology("ring:3"), "allgather", "bfb")).text
    lines = text.splitlines()
    steps = [i for i, line in enumerate(lines) if "<step" in line]
    drop = data.draw(st.sampled_from(steps))
    report = lint_msccl("\n".join(lines[:drop] + lines[drop + 1:]))
    assert not report.valid and (report.errors or report.problems)


@pytest.mark.parametrize("coll, root", [("allgather", None), ("reduce_scatter", None),
                                        ("allreduce", None), ("broadcast", 1), ("reduce", 2),
                                        ("scatter", 0), ("gather", 3), ("alltoall", None)])
def test_layout_lists_agree_with_the_per_chunk_maps(coll, root):
    from topocoll.interop.layout import Layout

    lay = Layout(coll, 4, 2, root)
    for r in range(4):
        ins = {(g, lay.input_of(r, g)) for g in range(lay.num_chunks)
               if lay.input_of(r, g) is not None}
        outs = {(g, lay.output_of(r, g)) for g in range(lay.num_chunks)
                if lay.output_of(r, g) is not None}
        assert set(lay.inputs(r)) == ins and set(lay.outputs(r)) == outs


def test_hand_written_fused_ring_allreduce_in_one_block_per_rank():
    # rrs (reduce and pass on without storing), rrcs, rcs and r in one block per rank
    imported = import_msccl(MSCCL / "ring3-allreduce-fused.xml", topology=topology("uniring:3"))
    assert imported.lint.valid, (imported.lint.errors, imported.lint.problems)
    kinds = {st.attrs["type"] for g in imported.program.gpus for tb in g.blocks
             for st in tb.steps}
    assert {"rrs", "rrcs", "rcs"} <= kinds
    # the ring allreduce: 2(N-1) = 4 steps, each moving a third of M over every link
    e = evaluate(imported.schedule, 3e9, alpha=1e-6, link_bandwidth=1e9)
    assert (e.steps, e.T_L, e.T_B) == (4, pytest.approx(4e-6), pytest.approx(4.0))


def test_hand_written_allpairs_allreduce_with_scratch_and_local_reduces():
    # receives into scratch are plain r steps, summed later by re: the transfers are reduces
    imported = import_msccl(MSCCL / "allpairs3-allreduce.xml", topology=topology("complete:3"))
    assert imported.lint.valid, (imported.lint.errors, imported.lint.problems)
    s = imported.schedule
    assert s.num_steps == 1 and set(s.op_names()) == {"reduce"}
    # one step: every rank sends all of M to each peer
    e = evaluate(s, 3e9, alpha=1e-6, link_bandwidth=1e9)
    assert e.T_B == pytest.approx(3.0)
    # forgetting one of the local sums leaves the output short: caught on the buffers
    broken = (MSCCL / "allpairs3-allreduce.xml").read_text().replace(
        '<step s="2" type="re"', '<step s="2" type="nop"', 1)
    report = lint_msccl(broken)
    assert any("rank 0 output chunk 0 holds chunk 0 summed over 2 of 3 ranks" in p
               for p in report.problems), report.problems
