"""Every JSON input is read by one parser that refuses, in one line, what Python's reader would
take silently (a key given twice) or crash on (nesting thousands deep, numbers of thousands of
digits)."""

import json

import pytest
from click.testing import CliRunner

from topocoll import generate
from topocoll.cli.main import cli
from topocoll.errors import ScheduleFormatError
from topocoll.fileio import MAX_JSON_DEPTH, parse_json
from topocoll.schedule.io import dumps_schedule, loads_schedule

DEEP = "[" * 3000 + "]" * 3000


def _nested(depth):
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("depth", [1, 10, MAX_JSON_DEPTH])
def test_depth_up_to_the_limit_is_read(depth):
    assert json.dumps(parse_json(_nested(depth))) == _nested(depth)


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH + 1, 500, 3000, 100_000])
def test_deeper_is_refused_by_name(depth):
    with pytest.raises(ScheduleFormatError, match=f"deeper than {MAX_JSON_DEPTH} levels"):
        parse_json(_nested(depth))


def test_duplicate_keys_are_refused_at_any_depth():
    with pytest.raises(ScheduleFormatError, match="key 'b' appears twice"):
        parse_json('{"a": [{"b": 1, "c": 2, "b": 3}]}')
    assert parse_json('{"a": [{"b": 1}, {"b": 3}]}') == {"a": [{"b": 1}, {"b": 3}]}


def test_numbers_of_thousands_of_digits_are_refused():
    with pytest.raises(ScheduleFormatError, match="more digits than"):
        parse_json('{"nodes": ' + "9" * 5000 + "}")


def test_shallow_keys_are_not_walked():
    doc = '{"transfers": ' + _nested(MAX_JSON_DEPTH + 5) + ', "meta": {}}'
    assert parse_json(doc, shallow=("transfers",))["meta"] == {}
    with pytest.raises(ScheduleFormatError):
        parse_json(doc)


def _schedule_text(meta_value):
    doc = json.loads(dumps_schedule(generate("ring:4", "allgather")))
    doc["meta"] = {"x": None}
    text = json.dumps(doc)
    return text.replace('"x": null', f'"x": {meta_value}')


def test_schedule_with_deep_meta_is_refused_not_crashed():
    with pytest.raises(ScheduleFormatError, match="nest deeper"):
        loads_schedule(_schedule_text(DEEP))
    assert loads_schedule(_schedule_text("[[1]]")).meta["x"] == [[1]]


def test_schedule_with_a_repeated_key_is_refused():
    text = _schedule_text("1").replace('"meta": {', '"algorithm": "mine", "meta": {', 1)
    with pytest.raises(ScheduleFormatError, match="'algorithm' appears twice"):
        loads_schedule(text)


@pytest.mark.parametrize("command", ["verify", "evaluate", "compare", "export", "simulate"])
def test_commands_answer_deep_files_in_one_line(tmp_path, command):
    path = tmp_path / "deep.json"
    path.write_text(_schedule_text(DEEP))
    extra = ["-o", str(tmp_path / "out.xml")] if command == "export" else []
    result = CliRunner().invoke(cli, [command, str(path)] + extra)
    assert not (tmp_path / "out.xml").exists()
    assert result.exit_code in (1, 2), result.output
    assert "Traceback" not in result.output
    assert "nest deeper than" in result.output
    lines = [line for line in result.output.splitlines() if "deeper" in line]
    assert len(lines) == 1


def test_topology_file_with_deep_value_is_refused(tmp_path):
    path = tmp_path / "t.json"
    path.write_text('{"nodes": 2, "links": [[0, 1], [1, 0]], "meta": {"x": ' + DEEP + "}}")
    result = CliRunner().invoke(cli, ["info", str(path)])
    assert result.exit_code == 2
    assert "Traceback" not in result.output and "nest deeper than" in result.output
