"""What the schedule functions accept: a Schedule or its file's path; numbers that fit."""

import numpy as np
import pytest

import topocoll as tc
from topocoll.errors import InputTypeError, ScheduleFormatError, TopocollError
from topocoll.schedule import Schedule, transfer_array
from topocoll.topology import topology

from tests.helpers import schedule_fixtures


@pytest.mark.parametrize("path", schedule_fixtures(), ids=lambda p: p.name)
def test_verify_takes_a_path_and_agrees_with_the_loaded_schedule(path):
    by_path = tc.verify(path)
    by_str = tc.verify(str(path))
    loaded = tc.verify(tc.load_schedule(path))
    assert by_path.valid == by_str.valid == loaded.valid
    assert by_path.errors == loaded.errors


def test_evaluate_and_simulate_take_a_path(tmp_path):
    s = tc.generate("ring:6", "allgather")
    path = tmp_path / "s.json"
    tc.save_schedule(s, path)
    assert tc.evaluate(str(path), "1MiB").time == tc.evaluate(s, "1MiB").time
    assert tc.simulate(path, "1MiB").time == tc.simulate(s, "1MiB").time


@pytest.mark.parametrize("thing", [3, None, b"{}", ["s.json"]])
def test_other_things_are_a_type_error_naming_what_is_accepted(thing):
    with pytest.raises(InputTypeError, match="a Schedule or a schedule file's path"):
        tc.verify(thing)
    with pytest.raises(TypeError):
        tc.evaluate(thing, "1MiB")


@pytest.mark.parametrize("field, value", [("step", 2**31), ("src", 2**31), ("dst", -2**31 - 1),
                                          ("step", np.int64(2**40))])
def test_numbers_that_do_not_fit_a_field_are_refused_not_wrapped(field, value):
    columns = dict(step=1, src=0, dst=1, shard=0, lo=0.0, hi=1.0)
    columns[field] = value
    with pytest.raises(ScheduleFormatError, match=f"{field} .* does not fit a 32-bit integer"):
        transfer_array(**columns)


def test_a_structured_array_with_wide_fields_is_refused_not_wrapped():
    wide = np.zeros(2, dtype=[("step", "<i8"), ("src", "<i8"), ("dst", "<i8"), ("shard", "<i8"),
                              ("lo", "<f8"), ("hi", "<f8"), ("op", "i1")])
    wide["step"] = [1, 2**32 + 1]     # wraps to 1 in 32 bits: a silently different schedule
    wide["dst"], wide["hi"] = 1, 1.0
    with pytest.raises(TopocollError, match="step 4294967297 does not fit"):
        Schedule(topology("ring:2"), "allgather", wide)
