"""Units: one parser for the CLI and the API."""

import pytest

from topocoll.errors import UnitError
from topocoll.units import (format_bandwidth, format_size, format_time, parse_bandwidth,
                            parse_size, parse_time)


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
