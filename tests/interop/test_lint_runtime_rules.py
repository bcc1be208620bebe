"""Lint's runtime rules are the runtime's: every numeric attribute fits
the integer msccl-executor-nccl stores it in, the lexical rules are its hand-written parser's
(tabs refused, <copy> skipped: a warning), and the verdict judges the program the runtime runs,
whatever step hints it carries."""

import re

import pytest
from tests.cli.conftest import run_cli
from tests.helpers import DATA
from topocoll.errors import UnsupportedError
from topocoll.interop import export_msccl, lint_msccl, parse_msccl, read_msccl
from topocoll.interop.export import HINT, LIMITS, SEND_HINT, WIDTHS
from topocoll.schedule.verify import verify
from topocoll.synth import generate
from topocoll.topology import topology

MSCCL = DATA / "msccl"
GOOD = MSCCL / "lint-good-ring3-allreduce.xml"


def rules(report):
    return {f.rule for f in report.errors}


def test_the_good_file_breaks_no_rule_and_warns_nothing():
    report = lint_msccl(read_msccl(GOOD))
    assert report.valid and report.errors == [] and report.warnings == []


# -- item 4: widths ------------------------------------------------------------------------------

def test_depid_above_127_is_refused_as_a_width():
    report = lint_msccl(read_msccl(MSCCL / "lint-depid-wraps.xml"))
    found = [f for f in report.errors if f.rule == "width"]
    assert len(found) == 1 and not report.valid
    assert found[0].line == 4 and found[0].element == "step"
    assert "depid=191" in found[0].message and "int8_t" in found[0].message
    assert "stored as -65" in found[0].message


def _one_step_attr(text, name, value):
    """``text`` with ``name`` of the first <step>/<tb> that has it set to ``value``."""
    new, n = re.subn(rf'\b{name}="-?\d+"', f'{name}="{value}"', text, count=1)
    assert n == 1
    return new


# an unsigned field's negative values are another rule's: only its upper end here
@pytest.mark.parametrize("name, side", [(name, side) for name in sorted(WIDTHS)
                                        for side in ("hi", "lo")
                                        if side == "hi" or WIDTHS[name][0] != 0])
def test_every_width_fires_just_outside_its_range_and_not_inside(name, side):
    text = GOOD.read_text()
    lo, hi, where = WIDTHS[name]
    bad = _one_step_attr(text, name, hi + 1 if side == "hi" else lo - 1)
    report = lint_msccl(bad)
    found = [f for f in report.errors if f.rule == "width"]
    assert found and f"{name}=" in found[0].message and where in found[0].message, report.errors
    edge = _one_step_attr(text, name, hi if side == "hi" else lo)
    assert "width" not in rules(lint_msccl(edge))


def test_an_export_on_32_channels_stays_within_every_width():
    # 8 ranks x 6 links x 32 channels: 193 thread blocks per rank, ids past int8
    res = export_msccl(generate(topology("hypercube:3"), "allgather", "bfb"), channels=32,
                       unfused=True)
    prog = res.program
    assert max(len(g.blocks) for g in prog.gpus) > 128
    for g in prog.gpus:
        for tb in g.blocks:
            assert int(tb.attrs["id"]) < LIMITS["subs"]
            for el in [tb] + tb.steps:
                for k, v in el.attrs.items():
                    if k in WIDTHS:
                        assert WIDTHS[k][0] <= int(v) <= WIDTHS[k][1], (k, v)
    report = lint_msccl(res.text)
    assert report.valid, (report.errors[:3], report.problems[:3])


def test_an_export_that_cannot_keep_depid_in_8_bits_says_so():
    with pytest.raises(UnsupportedError, match=r"depid.*8 bits.*fewer --channels"):
        export_msccl(generate(topology("torus:3x3"), "allgather", "bfb"), channels=32,
                     unfused=True)


# -- item 8: the parser's lexical rules ----------------------------------------------------------

def test_tab_indentation_is_refused_with_its_lines():
    path = MSCCL / "lint-tab-indent.xml"
    text = path.read_text()
    tab_lines = [i + 1 for i, line in enumerate(text.splitlines()) if "\t" in line]
    for report in (lint_msccl(text), lint_msccl(read_msccl(path))):
        found = [f for f in report.errors if f.rule == "tab"]
        assert found and not report.valid
        assert [f.line for f in found[:5]] == tab_lines[:5]
        assert found[0].element == "step" and "tab" in found[0].message
    # the good file with spaces is not
    assert "tab" not in rules(lint_msccl(GOOD.read_text()))


def test_tab_indentation_through_the_cli(tmp_path):
    res = run_cli(["lint", MSCCL / "lint-tab-indent.xml"], tmp_path)
    assert res.returncode == 1 and "[tab]" in res.stdout and "lint-tab-indent.xml:4" in res.stdout


def test_copy_elements_are_a_warning_not_a_refusal():
    report = lint_msccl(read_msccl(MSCCL / "lint-copy-element.xml"))
    assert report.valid and report.errors == []
    assert [w.rule for w in report.warnings] == ["copy"]
    assert report.warnings[0].line == 3 and "does not run them" in report.warnings[0].message
    assert report.to_dict()["warnings"][0]["rule"] == "copy"


def test_a_copy_the_program_needs_is_named_in_the_warning():
    report = lint_msccl(read_msccl(MSCCL / "ring3-allgather-old-dialect.xml"))
    assert "copy" not in rules(report) and "element" not in rules(report)
    assert "without them the program is not a correct allgather" in report.warnings[0].message


# -- item 6: the verdict does not depend on step hints -------------------------------------------

@pytest.fixture(scope="module")
def ten_allreduce():
    return generate(topology("mesh:3x3"), "allreduce", "ten")


def test_ten_allreduce_lints_correct_with_and_without_step_hints(ten_allreduce):
    hinted = export_msccl(ten_allreduce)
    bare = export_msccl(ten_allreduce, step_hints=False)
    assert HINT in hinted.text and HINT not in bare.text
    for res in (hinted, bare):
        report = lint_msccl(res.text)
        assert report.valid and report.correct, report.problems
        assert verify(report.schedule).valid
    # with hints the imported schedule keeps the schedule's steps
    assert lint_msccl(hinted.text).schedule.num_steps == ten_allreduce.num_steps


def _rehint(text, value):
    text = re.sub(rf'{HINT}="\d+"', f'{HINT}="{value}"', text)
    return re.sub(rf'{SEND_HINT}="\d+"', f'{SEND_HINT}="{value}"', text)


@pytest.mark.parametrize("value", [0, 1, 5])
def test_wrong_step_hints_do_not_change_the_verdict(ten_allreduce, value):
    text = _rehint(export_msccl(ten_allreduce).text, value)
    report = lint_msccl(parse_msccl(text))
    assert report.valid, report.problems
    assert verify(report.schedule).valid


def test_a_broken_program_is_broken_with_or_without_hints():
    # drop the dependency of every send that waits for a receive: a step reads what has not
    # arrived (or the wrong partial sum) whatever the hints say
    for hints in (True, False):
        text = export_msccl(generate(topology("ring:3"), "allreduce", "bfb"),
                            step_hints=hints).text
        text = text.replace('hasdep="1"', 'hasdep="0"')
        report = lint_msccl(text)
        assert not report.valid and "hasdep" in rules(report)


def _good_with(old, new):
    text = (MSCCL / "lint-good-ring3-allreduce.xml").read_text()
    assert old in text
    return parse_msccl(text.replace(old, new, 1))


@pytest.mark.parametrize("loop", ["0", "-3"])
def test_nchunksperloop_below_one_is_a_sizes_rule(loop):
    report = lint_msccl(_good_with('nchunksperloop="3"', f'nchunksperloop="{loop}"'))
    assert rules(report) == {"sizes"}
    assert f"nchunksperloop={loop} must be at least 1" in report.errors[0].message
    assert rules(lint_msccl(_good_with('nchunksperloop="3"', 'nchunksperloop="1"'))) == set()


def test_a_billion_ranks_are_named_without_a_table_of_them():
    report = lint_msccl(_good_with('ngpus="3"', 'ngpus="1000000000"'))
    gpu = [f for f in report.errors if f.rule == "gpu-id"]
    assert len(gpu) == 1 and "rank(s) 3, 4, 5, 6, 7, 8, 9, 10 ..." in gpu[0].message
    assert not report.correct


def test_max_bytes_zero_means_no_upper_limit():
    text = 'minBytes="0" maxBytes="9223372036854775807"'
    assert rules(lint_msccl(_good_with(text, 'minBytes="1024" maxBytes="0"'))) == set()
    assert rules(lint_msccl(_good_with(text, 'minBytes="1024" maxBytes="512"'))) == {"sizes"}


@pytest.mark.parametrize("length, broken", [(254, False), (255, True)])
def test_attribute_names_stop_one_short_of_the_parsers_buffer(length, broken):
    name = "x" * length
    report = lint_msccl(_good_with('<algo name=', f'<algo {name}="1" name='))
    assert ("length" in rules(report)) is broken


@pytest.mark.parametrize("extra, broken", [(0, False), (1, True)])
def test_a_ranks_elements_stop_one_short_of_max_nodes(extra, broken):
    """4095 elements parse; the 4096th fills the table and the parser stops."""
    program = read_msccl(GOOD)
    gpu = program.gpus[0]
    used = 1 + len(program.gpus) + len(gpu.blocks) + sum(len(tb.steps) for tb in gpu.blocks)
    nops = LIMITS["nodes"] - 1 - used + extra
    text = GOOD.read_text()
    first_tb_end = text.index("</tb>")
    count = text[:first_tb_end].count("<step ")
    pad = "".join(f'      <step s="{count + i}" type="nop" srcbuf="i" srcoff="-1" '
                  f'dstbuf="i" dstoff="-1" cnt="0" depid="-1" deps="-1" hasdep="0"/>\n'
                  for i in range(nops))
    report = lint_msccl(parse_msccl(text[:first_tb_end] + pad + text[first_tb_end:]))
    assert ("size" in rules(report)) is broken
