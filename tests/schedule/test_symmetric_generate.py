"""``generate(..., form=...)``: the symmetric form through a generator's hook or by
conversion, and ``"auto"`` choosing it only above the explicit limit."""

import numpy as np
import pytest

import topocoll as tc
from topocoll.errors import UnsupportedError
from topocoll.synth import generators as registry


def _rows(schedule):
    t = schedule.transfers
    return t[np.lexsort((t["op"], t["hi"], t["lo"], t["shard"], t["dst"], t["src"], t["step"]))]


@pytest.mark.parametrize("spec, coll", [("torus:3x4", "allgather"), ("hypercube:3", "allreduce"),
                                        ("circulant:10:1,3", "reduce_scatter")])
def test_the_symmetric_form_expands_to_the_explicit_schedule(spec, coll):
    s = tc.generate(spec, coll, "bfb", form="symmetric")
    e = tc.generate(spec, coll, "bfb", form="explicit")
    assert s.form == "symmetric" and e.form == "explicit"
    assert tc.verify(s).valid
    assert np.array_equal(_rows(s.expand()), _rows(e))


def test_a_generator_without_a_hook_is_converted():
    assert registry.symmetric_hook(registry.ALGORITHMS["ring"]) is None
    assert registry.symmetric_hook(registry.ALGORITHMS["bfb"]) == "symmetric"
    s = tc.generate("uniring:6", "allgather", "ring", form="symmetric")
    assert s.form == "symmetric" and s.num_representatives == 5 and tc.verify(s).valid
    with pytest.raises(UnsupportedError, match="no translation group"):
        tc.generate("genkautz:12,2", "allgather", "bfb", form="symmetric")


def test_auto_is_explicit_below_the_limit_and_symmetric_above(monkeypatch):
    assert tc.generate("torus:4x4", "allgather", "bfb").form == "explicit"
    monkeypatch.setattr(registry, "EXPLICIT_TRANSFER_LIMIT", 100)
    assert tc.generate("torus:4x4", "allgather", "bfb").form == "symmetric"
    assert tc.generate("torus:4x4", "allgather", "bfb", form="explicit").form == "explicit"
    assert tc.generate("genkautz:12,2", "allgather", "bfb").form == "explicit"
    assert tc.generate("torus:4x4", "broadcast", "bfb").form == "explicit"
    with pytest.raises(UnsupportedError, match="form must be one of"):
        tc.generate("torus:4x4", "allgather", "bfb", form="folded")


def test_one_list_of_forms_for_every_maker():
    from topocoll.cli.schedule import FORMS as command_forms
    from topocoll.schedule.forms import FORMS
    from topocoll.synth.ten.synthesis import FORMS as ten_forms

    assert registry.FORMS is FORMS and ten_forms is FORMS and command_forms is FORMS
    assert "compact" in FORMS
    for make in (lambda: tc.generate("ring:4", "allgather", "ring", form="folded"),
                 lambda: tc.synthesize("ring:4", "allgather", form="folded")):
        with pytest.raises(UnsupportedError, match="form must be one of auto, explicit, "
                           "symmetric, compact, got 'folded'"):
            make()


def test_generate_makes_the_compact_form_that_synth_makes():
    s = tc.generate("mesh:4x4", "allgather", "ten", form="compact")
    direct = tc.synthesize("mesh:4x4", "allgather", form="compact")
    assert s.form == "compact" and tc.verify(s).valid
    assert np.array_equal(_rows(s.expand()), _rows(direct.expand()))


def test_a_generator_without_the_compact_form_is_converted():
    s = tc.generate("ring:5", "allgather", "ring", form="compact")
    e = tc.generate("ring:5", "allgather", "ring", form="explicit")
    assert s.form == "compact" and tc.verify(s).valid
    assert np.array_equal(_rows(s.expand()), _rows(e))
    with pytest.raises(UnsupportedError, match="copies only; allreduce combines"):
        tc.generate("ring:4", "allreduce", "bfb", form="compact")


def test_auto_is_compact_above_the_limit_where_the_generator_makes_it(monkeypatch):
    import topocoll.schedule.symmetric as symmetric

    assert tc.generate("mesh:4x4", "allgather", "ten").form == "explicit"
    monkeypatch.setattr(registry, "EXPLICIT_TRANSFER_LIMIT", 100)
    monkeypatch.setattr(symmetric, "EXPLICIT_TRANSFER_LIMIT", 100)
    assert tc.generate("mesh:4x4", "allgather", "ten").form == "compact"
    assert tc.generate("mesh:4x4", "allreduce", "ten").form == "explicit"     # combines
    assert tc.generate("mesh:4x4", "allgather", "bfb").form == "explicit"
