"""The schedule file: exact round trips (canonical and any other JSON layout) and validation
that names the offending field."""

import json
import os

import numpy as np
import pytest

import topocoll as tc
from topocoll.errors import FileAccessError, ScheduleFormatError, TopocollError
from topocoll.schedule import dumps_schedule, load_schedule, loads_schedule, save_schedule

from tests.helpers import pipe_name, schedule_fixtures


@pytest.fixture(scope="module")
def allreduce():
    return tc.generate("torus:3x4", "allreduce")


def same(a, b):
    assert a.collective == b.collective and a.root == b.root and a.algorithm == b.algorithm
    assert a.topology.num_nodes == b.topology.num_nodes
    for col in ("src", "dst", "bandwidth", "latency"):
        assert np.array_equal(getattr(a.topology, col), getattr(b.topology, col))
    assert a.transfers.tobytes() == b.transfers.tobytes()


def test_round_trip_canonical(tmp_path, allreduce):
    path = tmp_path / "s.json"
    save_schedule(allreduce, path)
    same(allreduce, load_schedule(path))
    doc = json.loads(path.read_text())   # the file is plain JSON in the contract's shape
    assert doc["format"] == "topocoll.schedule" and doc["version"] == 1
    assert set(doc["transfers"][0]) == {"step", "src", "dst", "shard", "lo", "hi", "op"}
    assert "root" not in doc


def test_round_trip_other_layouts(allreduce):
    doc = json.loads(dumps_schedule(allreduce))
    for text in (json.dumps(doc, indent=1), json.dumps(doc, separators=(",", ":")),
                 json.dumps(dict(reversed(list(doc.items()))))):
        same(allreduce, loads_schedule(text))


def test_round_trip_rooted_and_file_object(tmp_path):
    s = tc.generate("hypercube:3", "reduce", root=5)
    path = tmp_path / "r.json"
    with open(path, "wb") as fh:
        save_schedule(s, fh)
    back = load_schedule(path)
    same(s, back)
    assert back.root == 5


def test_fixtures_load_and_round_trip():
    for path in schedule_fixtures():
        doc = json.loads(path.read_text())
        s = load_schedule(path)
        assert s.num_transfers == len(doc["transfers"])
        assert s.topology.num_links == len(doc["topology"]["links"])
        same(s, loads_schedule(dumps_schedule(s)))


def test_empty_schedule_round_trip():
    t = tc.build_topology("ring:3")
    s = tc.Schedule(t, "allgather", np.zeros(0, tc.schedule.TRANSFER_DTYPE))
    assert loads_schedule(dumps_schedule(s)).num_transfers == 0


def _doc(s):
    return json.loads(dumps_schedule(s))


@pytest.mark.parametrize("mutate,field", [
    (lambda d: d.pop("format"), "format: missing"),
    (lambda d: d.update(format="msccl"), "format:"),
    (lambda d: d.update(version=2), "version:"),
    (lambda d: d.update(collective="allscatter"), "collective:"),
    (lambda d: d.update(root=0), "root:"),
    (lambda d: d.update(transfers={}), "transfers: must be a list"),
    (lambda d: d.update(colour="red"), "colour: unknown field"),
    (lambda d: d["transfers"][3].pop("lo"), "transfers[3].lo: missing"),
    (lambda d: d["transfers"][2].update(step="1"), "transfers[2].step: must be an integer"),
    (lambda d: d["transfers"][2].update(step=True), "transfers[2].step: must be an integer"),
    (lambda d: d["transfers"][4].update(op="add"), "transfers[4].op:"),
    (lambda d: d["transfers"][5].update(hi=d["transfers"][5]["lo"]), "transfers[5].hi:"),
    (lambda d: d["transfers"][6].update(src=99), "transfers[6].src:"),
    (lambda d: d["transfers"][7].update(step=0), "transfers[7].step:"),
    (lambda d: d["transfers"][1].update(shard=-1), "transfers[1].shard:"),
    (lambda d: d["topology"]["links"][0].update(bandwidth=-1), "topology.links[0].bandwidth"),
    (lambda d: d["topology"].pop("nodes"), "topology.nodes"),
])
def test_bad_fields_are_named(allreduce, mutate, field):
    doc = _doc(allreduce)
    mutate(doc)
    with pytest.raises(TopocollError) as info:
        loads_schedule(json.dumps(doc))
    assert field in str(info.value)
    assert "\n" not in str(info.value)


def test_rooted_without_root():
    doc = _doc(tc.generate("ring:4", "broadcast", root=1))
    doc.pop("root")
    with pytest.raises(ScheduleFormatError, match="root: missing"):
        loads_schedule(json.dumps(doc))


@pytest.mark.parametrize("text", ["", "not json", '{"format": "topocoll.schedule"', "[1, 2]"])
def test_unreadable_text(text):
    with pytest.raises(ScheduleFormatError):
        loads_schedule(text)


def test_truncated_file(tmp_path, allreduce):
    path = tmp_path / "t.json"
    data = dumps_schedule(allreduce)
    path.write_text(data[: len(data) // 2])
    with pytest.raises(ScheduleFormatError, match="t.json"):
        load_schedule(path)


def test_canonical_layout_with_a_damaged_row_is_rejected(allreduce):
    text = dumps_schedule(allreduce).replace('"lo": 0.0', '"lo": 0.0.0', 1)
    with pytest.raises(ScheduleFormatError, match="not valid JSON"):
        loads_schedule(text)


def test_missing_file(tmp_path):
    with pytest.raises(FileAccessError, match="cannot read"):
        load_schedule(tmp_path / "nope.json")


def test_write_is_atomic(tmp_path, allreduce):
    with pytest.raises(FileAccessError, match="folder .* does not exist"):
        save_schedule(allreduce, tmp_path / "no" / "such" / "dir.json")
    path = tmp_path / "s.json"
    path.write_text("old")
    save_schedule(allreduce, path)
    assert load_schedule(path).num_transfers == allreduce.num_transfers
    assert [p.name for p in tmp_path.iterdir()] == ["s.json"]
    mask = os.umask(0)
    os.umask(mask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~mask  # not mkstemp's private 0600


# ------------------------------------------------------------------ files of every kind
def test_a_failure_while_writing_keeps_the_old_file(tmp_path, allreduce, monkeypatch):
    import topocoll.schedule.io as module

    path = tmp_path / "s.json"
    path.write_text("old content")
    real = module.json_parts

    def half_then_fail(schedule):
        yield next(iter(real(schedule)))
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(module, "json_parts", half_then_fail)
    with pytest.raises(FileAccessError, match="No space left on device"):
        save_schedule(allreduce, path)
    assert path.read_text() == "old content"
    assert [p.name for p in tmp_path.iterdir()] == ["s.json"]      # no temporary left


def test_gzip_is_written_by_name_through_a_symlink_and_read_by_content(tmp_path, allreduce):
    (tmp_path / "link.json.gz").symlink_to("target.bin")
    save_schedule(allreduce, tmp_path / "link.json.gz")
    raw = (tmp_path / "target.bin").read_bytes()
    assert raw[:2] == b"\x1f\x8b" and (tmp_path / "link.json.gz").is_symlink()
    same(load_schedule(tmp_path / "target.bin"), allreduce)         # no .gz in the name


def test_devices_are_written_into_not_replaced(allreduce):
    import stat

    save_schedule(allreduce, "/dev/null")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    with pytest.raises(FileAccessError, match="/dev/full: cannot write: No space left"):
        save_schedule(allreduce, "/dev/full")
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


def test_a_pipe_is_read_whatever_its_name_and_compressed_or_not(allreduce):
    import gzip

    text = dumps_schedule(allreduce).encode()
    for data in (text, gzip.compress(text)):
        name, read_fd, thread = pipe_name(data)
        try:
            same(load_schedule(name), allreduce)
        finally:
            os.close(read_fd)
            thread.join(60)


def test_a_stream_that_cannot_be_json_is_refused_at_its_first_byte(monkeypatch):
    # under a 64 MiB limit reading /dev/zero to the end would fail on the limit instead
    monkeypatch.setenv("TOPOCOLL_MAX_FILE_BYTES", str(64 << 20))
    with pytest.raises(ScheduleFormatError, match=r"/dev/zero: not a JSON schedule file"):
        load_schedule("/dev/zero")


def test_the_read_limit_names_its_variable(tmp_path, allreduce, monkeypatch):
    from topocoll.errors import FileAccessError

    save_schedule(allreduce, tmp_path / "s.json")
    monkeypatch.setenv("TOPOCOLL_MAX_FILE_BYTES", "1000")
    with pytest.raises(FileAccessError, match="read limit of 1000 bytes .*TOPOCOLL_MAX_FILE_BYTES"):
        load_schedule(tmp_path / "s.json")


def test_steps_are_the_distinct_step_numbers_that_carry_transfers(tmp_path):
    """Steps numbered 5 and 10 are two steps for the model, verify and evaluate alike: the
    cost model charges one latency per step that carries transfers (docs/format.md)."""
    doc = json.loads(dumps_schedule(tc.generate("ring:4", "allgather", "ring")))
    assert sorted({t["step"] for t in doc["transfers"]}) == [1, 2, 3]
    renumber = {1: 5, 2: 10, 3: 11}
    for t in doc["transfers"]:
        t["step"] = renumber[t["step"]]
    (tmp_path / "gaps.json").write_text(json.dumps(doc))
    s = load_schedule(tmp_path / "gaps.json")
    report = tc.verify(s)
    assert report.valid and s.num_steps == report.steps == tc.evaluate(s, "1MiB").steps == 3
    assert s.last_step == 11
