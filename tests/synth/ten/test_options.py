"""TEN synthesis has one option table: ``synthesize``, ``generate(..., "ten")`` and the
registry read it, and a mistake in an option raises the same error from every door."""

import inspect

import pytest

import topocoll as tc
from topocoll.errors import InputTypeError, UnsupportedError
from topocoll.synth import ALGORITHMS, generate
from topocoll.synth.options import Option
from topocoll.synth.ten import synthesize
from topocoll.synth.ten.options import GREEDY_ONLY, ILP_ONLY, TEN_OPTIONS, ten_options


def test_the_registry_and_synthesize_read_the_one_table():
    assert ALGORITHMS["ten"].options is TEN_OPTIONS
    params = inspect.signature(synthesize).parameters
    for name, option in TEN_OPTIONS.items():
        assert isinstance(option, Option) and option.doc and "\n" not in option.doc, name
        assert params[name].kind is inspect.Parameter.KEYWORD_ONLY, name
        assert params[name].default == option.default, name
    # what synthesize takes beyond the table is generate's own: root, form, progress
    assert set(params) - set(TEN_OPTIONS) == {"topology", "collective", "root", "form",
                                              "progress"}
    assert set(ILP_ONLY) | set(GREEDY_ONLY) <= set(TEN_OPTIONS)


@pytest.mark.parametrize("name,value,match", [
    ("seed", -1, "option seed must be >= 0, got -1"),
    ("seed", 1.5, "option seed must be an integer, got 1.5"),
    ("seed", True, "option seed must be an integer, got True"),
    ("seed", None, "option seed must be an integer, got None"),
    ("restarts", 0, "option restarts must be >= 1, got 0"),
    ("restarts", 1.5, "option restarts must be an integer, got 1.5"),
    ("workers", 0, "option workers must be >= 1, got 0"),
    ("chunks", 0, "option chunks must be >= 1, got 0"),
    ("chunks", "two", "option chunks must be an integer"),
    ("method", "magic", "option method must be one of greedy, ilp, got 'magic'"),
    ("repair", "maybe", "option repair must be true or false, got 'maybe'"),
    ("unwind_degree", 0, "option unwind_degree must be >= 1, got 0"),
])
def test_one_error_per_mistake_from_every_door(name, value, match):
    # seed once raised InputTypeError where restarts raised UnsupportedError: one class now
    errors = []
    for call in (lambda: synthesize("ring:4", "allgather", **{name: value}),
                 lambda: generate("ring:4", "allgather", "ten", **{name: value}),
                 lambda: ten_options(**{name: value})):
        with pytest.raises(UnsupportedError, match=f"^algorithm ten: {match}") as info:
            call()
        assert not isinstance(info.value, InputTypeError)
        errors.append(str(info.value))
    assert len(set(errors)) == 1


def test_values_are_read_alike_from_python_and_the_command_line():
    assert ten_options(seed="3", chunks="2", size="1MiB", repair="no") == \
        {"seed": 3, "chunks": 2, "size": 2.0**20, "repair": False}
    a = synthesize("ring:5", "allgather", seed="3", chunks="2")
    b = synthesize("ring:5", "allgather", seed=3, chunks=2)
    assert a.meta["seed"] == b.meta["seed"] == 3 and a.meta["chunks"] == 2
    assert (a.transfers == b.transfers).all()
    # None where the default is None is "not given", from generate too
    c = generate("ring:5", "allgather", "ten", seed=3, chunks=2, restarts=None, window=None)
    assert (c.transfers == b.transfers).all()


@pytest.mark.parametrize("method,given,match", [
    ("greedy", {"window": 4}, "^window applies to method='ilp' only$"),
    ("greedy", {"time_limit": 1, "node_limit": 5},
     "^time_limit, node_limit apply to method='ilp' only$"),
    ("ilp", {"symmetric": True}, "^symmetric applies to method='greedy' only$"),
    ("ilp", {"repair": False, "symmetric": True},
     "^repair, symmetric apply to method='greedy' only$"),
])
def test_options_of_the_other_method_are_refused(method, given, match):
    with pytest.raises(UnsupportedError, match=match):
        ten_options(method=method, **given)
    with pytest.raises(UnsupportedError, match=match):
        tc.generate("ring:4", "allgather", "ten", method=method, **given)


def test_unknown_keywords_are_named_with_the_known_ones():
    with pytest.raises(UnsupportedError, match="algorithm ten has no option shift .*seed"):
        ten_options(shift=2)
