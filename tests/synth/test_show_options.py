"""Every generator's options are listed with a default and one line of doc, and
``show_options`` prints them as scipy.optimize.show_options does a solver's."""

import inspect

import pytest

import topocoll as tc
from topocoll.errors import UnsupportedError
from topocoll.synth import ALGORITHMS, show_options
from topocoll.synth.options import Option


@pytest.mark.parametrize("name", list(ALGORITHMS))
def test_every_option_has_a_doc_and_the_generators_own_default(name):
    generator = ALGORITHMS[name]
    params = inspect.signature(generator.make).parameters
    for option, spec in generator.options.items():
        assert isinstance(spec, Option), (name, option)
        assert spec.doc and "\n" not in spec.doc, (name, option)
        assert params[option].default == spec.default, (name, option)


@pytest.mark.parametrize("name", list(ALGORITHMS))
def test_show_options_lists_each_option_with_its_default_and_doc(name):
    text = show_options(name)
    lines = text.splitlines()
    assert lines[0] == f"{name}: {ALGORITHMS[name].summary}"
    options = ALGORITHMS[name].options
    shown = [line.split(" = ")[0].strip() for line in lines[1:] if " = " in line]
    assert shown == list(options)
    for option, spec in options.items():
        assert f"      {spec.doc}" in lines
    if not options:
        assert lines[1:] == ["  (no options)"]


def test_show_options_shows_values_as_a_user_types_them():
    text = show_options("ten")
    assert "  size = 1GiB" in text and "  method = 'greedy'" in text
    assert "  restarts = None" in text and "  seed = 0" in text
    assert "\n  tolerance = 0.01\n" in show_options("trees")


def test_show_options_of_every_generator_and_from_the_top():
    every = show_options()
    assert every == "\n\n".join(show_options(name) for name in ALGORITHMS)
    assert tc.show_options is show_options and "show_options" in tc.__all__


def test_an_unknown_algorithm_is_refused_with_the_known_ones():
    with pytest.raises(UnsupportedError, match="unknown algorithm 'magic'; choose one of bfb"):
        show_options("magic")
