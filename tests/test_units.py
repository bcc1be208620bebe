"""Units: one parser for the CLI and the API."""

from fractions import Fraction

import numpy as np
import pytest

from topocoll.errors import InputTypeError, UnitError, UnsupportedError
from topocoll.units import (format_bandwidth, format_size, format_time, parse_bandwidth,
                            parse_size, parse_time, real_number, whole_number)


@pytest.mark.parametrize("text,value", [("10us", 1e-5), ("1.5ms", 1.5e-3), ("2s", 2.0),
                                        ("3ns", 3e-9), (1e-6, 1e-6), ("0", 0.0)])
def test_time(text, value):
    assert parse_time(text) == value


@pytest.mark.parametrize("text,value", [("100Gbps", 12.5e9), ("25GB/s", 25e9), ("1e9", 1e9),
                                        ("8Mbps", 1e6), ("1GiB/s", 2**30), ("400Gbit/s", 50e9)])
def test_bandwidth(text, value):
    assert parse_bandwidth(text) == pytest.approx(value, rel=1e-15)


@pytest.mark.parametrize("text,value", [("4MiB", 4 * 2**20), ("1MB", 1e6), ("512KiB", 2**19),
                                        ("1e6", 1e6), (1024, 1024.0), ("3B", 3.0)])
def test_size(text, value):
    assert parse_size(text) == value


@pytest.mark.parametrize("parser,text", [(parse_time, "10 parsecs"), (parse_time, "-3us"),
                                         (parse_bandwidth, "0Gbps"), (parse_bandwidth, "fast"),
                                         (parse_size, "12XB"), (parse_size, "nan"),
                                         (parse_size, True), (parse_time, "inf")])
def test_rejects(parser, text):
    with pytest.raises(UnitError):
        parser(text)


def test_format():
    assert format_time(1.5e-5) == "15us"
    assert format_size(2**20) == "1MiB"
    assert format_bandwidth(12.5e9) == "100Gbps"


# ------------------------------------------------------------------ the two number checks

@pytest.mark.parametrize("value", [True, np.bool_(False), 2.0, "3", None, [1], 1 + 0j])
def test_whole_number_refuses_other_kinds_as_type_errors(value):
    with pytest.raises(InputTypeError, match=r"^n must be an integer, got "):
        whole_number(value, "n", None)


def test_whole_number_bounds_are_unsupported_values():
    assert whole_number(np.int64(5), "n") == 5 and type(whole_number(np.int8(5), "n")) is int
    assert whole_number(-7, "n", None) == -7 and whole_number(3, "n", 0, most=3) == 3
    with pytest.raises(UnsupportedError, match=r"^n must be >= 0, got -1$"):
        whole_number(-1, "n", 0)
    with pytest.raises(UnsupportedError, match=r"^n must be <= 3, got 4$"):
        whole_number(4, "n", None, most=3)


@pytest.mark.parametrize("value", [True, np.bool_(True), "1.5", "1ms", None, [1.0], 1j])
def test_real_number_refuses_other_kinds_as_type_errors(value):
    with pytest.raises(InputTypeError, match=r"^x must be a number, got "):
        real_number(value, "x")


@pytest.mark.parametrize("value, expected", [(3, 3.0), (np.float32(0.5), 0.5),
                                             (np.int64(-2), -2.0), (Fraction(1, 4), 0.25)])
def test_real_number_takes_every_real_kind_as_a_float(value, expected):
    got = real_number(value, "x")
    assert got == expected and type(got) is float


@pytest.mark.parametrize("kwargs, value, message", [
    ({"least": 0}, -0.5, "x must be >= 0, got -0.5"),
    ({"above": 0}, 0, "x must be > 0, got 0"),
    ({"most": 1}, 1.5, "x must be <= 1, got 1.5"),
    ({"below": 1}, 1, "x must be < 1, got 1"),
    ({}, float("nan"), "x must be a finite number, got nan"),
    ({}, float("inf"), "x must be a finite number, got inf"),
    ({"finite": False}, float("nan"), "x must be a finite number, got nan"),
    ({"finite": False, "most": 5}, float("inf"), "x must be <= 5, got inf"),
])
def test_real_number_out_of_range_is_unsupported(kwargs, value, message):
    with pytest.raises(UnsupportedError) as info:
        real_number(value, "x", **kwargs)
    assert str(info.value) == message


def test_real_number_bounds_hold_at_the_edges():
    assert real_number(0, "x", least=0) == 0.0 and real_number(1, "x", most=1) == 1.0
    assert real_number(float("inf"), "x", above=0, finite=False) == float("inf")
