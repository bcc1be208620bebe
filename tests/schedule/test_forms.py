"""Schedule forms as classes: every form answers the same operations (explicit, unfolded,
representatives, timed rows, rows, blocks, file fields, facts, note), and the modules above
dispatch on the class, so a form nobody taught them is read through its explicit form."""

import numpy as np
import pytest

import topocoll as tc
from topocoll.schedule.compact import CompactSchedule, compact_schedule
from topocoll.schedule.io import as_schedule, dumps_schedule, loads_schedule
from topocoll.schedule.model import Schedule, TransferRows
from topocoll.schedule.symmetric import SymmetricSchedule, symmetric_schedule
from topocoll.schedule.transforms import concatenate, reverse


def _sorted_rows(t):
    return t[np.lexsort((t["op"], t["hi"], t["lo"], t["shard"], t["dst"], t["src"], t["step"]))]


@pytest.fixture(scope="module")
def forms():
    explicit = tc.generate("torus:3x3", "allgather", "bfb", form="explicit")
    return {"explicit": explicit, "symmetric": symmetric_schedule(explicit),
            "compact": compact_schedule(explicit)}


@pytest.mark.parametrize("name", ["explicit", "symmetric", "compact"])
def test_every_form_has_the_same_explicit_schedule(forms, name):
    s = forms[name]
    assert isinstance(s, TransferRows) and s.form == name
    e = s.explicit()
    assert type(e) is Schedule
    assert np.array_equal(_sorted_rows(e.transfers), _sorted_rows(forms["explicit"].transfers))
    unfolded = s.unfolded()              # every transfer a row; only the symmetric form unfolds
    assert unfolded.num_transfers == e.num_transfers
    assert (unfolded is s) == (name != "symmetric")


@pytest.mark.parametrize("name", ["explicit", "symmetric", "compact"])
def test_rows_and_blocks_read_what_the_form_holds(forms, name):
    s = forms[name]
    held = np.concatenate([block for _, block in s.blocks(7)])
    starts = [lo for lo, _ in s.blocks(7)]
    assert starts[0] == 0 and starts == sorted(starts)
    expect = s.representatives().transfers if name == "symmetric" else s.explicit().transfers
    assert np.array_equal(held, expect)
    assert s.rows([2])[0].tolist() == held[2].tolist()


def test_representatives_and_timed_rows(forms):
    sym, exp = forms["symmetric"], forms["explicit"]
    assert exp.representatives() is exp and exp.timed_rows() is exp and exp.group is None
    reps = sym.representatives()
    assert reps.num_transfers == sym.num_representatives == exp.num_transfers // 9
    assert np.all(reps.transfers["dst"] == 0)
    history = sym.timed_rows()
    assert np.all(history.transfers["shard"] == 0) and history.num_transfers == reps.num_transfers
    # the step model prices a symmetric schedule from its representatives: same answer
    assert tc.evaluate(sym, "1MiB").time == pytest.approx(tc.evaluate(exp, "1MiB").time)


def test_file_fields_facts_and_notes(forms):
    sym, exp, com = forms["symmetric"], forms["explicit"], forms["compact"]
    assert exp.file_fields() == {} and com.file_fields() == {}
    assert sym.file_fields() == {"form": "symmetric",
                                 "symmetry": {"kind": "translation", "dims": [3, 3]}}
    assert exp.form_facts() == {"form": "explicit"} and exp.form_note() == ""
    assert sym.form_facts() == {"form": "symmetric", "representatives": sym.num_representatives,
                                "symmetry": [3, 3]}
    assert sym.form_note() == f" (symmetric: {sym.num_representatives} representatives)"
    assert com.form_facts() == {"form": "compact"}
    assert com.form_note().startswith(" (compact: ") and com.form_note().endswith(" bytes each)")
    # a compact schedule is written as the explicit one; the symmetric form keeps its group
    assert dumps_schedule(com) == dumps_schedule(exp)
    back = loads_schedule(dumps_schedule(sym))
    assert isinstance(back, SymmetricSchedule) and list(back.group.dims) == [3, 3]


def test_as_schedule_keeps_only_the_forms_the_caller_accepts(forms):
    sym, com = forms["symmetric"], forms["compact"]
    assert as_schedule(sym, accept=(SymmetricSchedule,)) is sym
    assert type(as_schedule(sym)) is Schedule
    assert as_schedule(com, accept=(CompactSchedule,)) is com
    assert type(as_schedule(com, accept=(SymmetricSchedule,))) is Schedule


def test_the_transforms_dispatch_on_the_class(forms):
    sym, exp = forms["symmetric"], forms["explicit"]
    rs = reverse(sym, "reduce_scatter")
    assert isinstance(rs, SymmetricSchedule) and tc.verify(rs).valid
    assert type(reverse(exp, "reduce_scatter")) is Schedule
    both = concatenate(rs, sym, "allreduce")
    assert isinstance(both, SymmetricSchedule) and tc.verify(both).valid
    mixed = concatenate(rs, exp, "allreduce")            # beside another form: unfolded
    assert type(mixed) is Schedule and tc.verify(mixed).valid
    assert mixed.num_transfers == both.num_transfers


class _Folded(TransferRows):
    """A form no module above knows: its rows are every transfer, but it has its own class."""

    __slots__ = ("topology", "collective", "transfers", "root", "algorithm", "meta")
    form = "folded"

    def __init__(self, s):
        for name in self.__slots__:
            setattr(self, name, getattr(s, name))

    def explicit(self):
        return Schedule(self.topology, self.collective, self.transfers, root=self.root,
                        algorithm=self.algorithm, meta=self.meta)


def test_a_form_the_modules_above_were_not_taught_is_read_through_its_explicit_form(forms):
    folded = _Folded(forms["explicit"])
    assert tc.verify(folded).valid
    assert tc.evaluate(folded, "1MiB").time == pytest.approx(
        tc.evaluate(forms["explicit"], "1MiB").time)
    broken = _Folded(forms["explicit"].replace(transfers=forms["explicit"].transfers[1:]))
    assert not tc.verify(broken).valid
