"""The SQLite results cache: hits do no work and are equal, --no-cache, damaged and locked files,
version changes."""

import os
import sqlite3

import pytest

import topocoll
from topocoll.finder import Cache, cache_dir, find
from topocoll.finder.cache import FILE_NAME, cache_version

N, D = 36, 4


def run(cache, **kw):
    return find(N, D, "1MiB", cache=cache, **kw)


def same(a, b):
    assert [c.to_dict() for c in a.frontier] == [c.to_dict() for c in b.frontier]
    assert a.times == b.times and a.best == b.best
    assert a.evaluated_time == pytest.approx(b.evaluated_time, rel=1e-12)


def test_cache_dir_follows_the_environment(tmp_path, monkeypatch):
    assert cache_dir() == tmp_path / "cache"                      # the autouse fixture
    monkeypatch.delenv("TOPOCOLL_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "topocoll"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert cache_dir() == cache_dir().home() / ".cache" / "topocoll"
    assert cache_version().startswith(topocoll.__version__ + "/")


def test_other_shipped_bases_make_another_version(monkeypatch):
    # a frontier depends on the optimizer's shipped bases: entries made with others are stale
    from topocoll.finder import tables

    before = cache_version()
    real = tables.shipped_text
    monkeypatch.setattr(tables, "shipped_text",
                        lambda name: real(name) + ("x" if name == tables.OPTIMIZED_BASES_FILE
                                                   else ""))
    assert cache_version() != before
    monkeypatch.setattr(tables, "shipped_text", real)
    assert cache_version() == before


def test_second_run_is_a_hit_and_equal(tmp_path, monkeypatch):
    import topocoll.finder.evaluation as evaluation

    builds = []
    real_build = evaluation.build_allreduce
    monkeypatch.setattr(evaluation, "build_allreduce",
                        lambda c, **kw: builds.append(c) or real_build(c, **kw))
    first = run(True)
    assert (tmp_path / "cache" / FILE_NAME).exists()
    assert first.status == 0 and not first.from_cache["frontier"]
    assert not first.from_cache["evaluation"] and first.evaluation["source"] == "fresh"
    assert len(builds) == 1
    second = run(True)
    assert second.from_cache == {"frontier": True, "evaluation": True}
    assert second.evaluation["source"] == "cache" and second.schedule is None
    assert len(builds) == 1          # the hit built nothing (its speed: benchmarks/finder.py)
    same(first, second)


def test_no_cache_neither_reads_nor_writes(tmp_path):
    r = run(False)
    assert not (tmp_path / "cache").exists()
    assert not r.from_cache["frontier"] and r.evaluation["source"] == "fresh"
    run(True)
    again = run(False)
    assert not again.from_cache["frontier"]
    same(r, again)


def test_damaged_file_is_rebuilt(tmp_path):
    path = tmp_path / "cache" / FILE_NAME
    path.parent.mkdir(parents=True)
    path.write_bytes(b"this is not an SQLite database, just garbage\x00\xff" * 100)
    r = run(True)
    assert r.success and any("damaged" in w and "rebuilt" in w for w in r.warnings)
    assert run(True).from_cache["frontier"]                       # the rebuilt file works
    with sqlite3.connect(path) as con:
        assert con.execute("SELECT COUNT(*) FROM entries").fetchone()[0] > 0


def test_truncated_database_is_rebuilt(tmp_path):
    run(True)
    path = tmp_path / "cache" / FILE_NAME
    data = path.read_bytes()
    path.write_bytes(data[:100] + b"\x00" * 50 + data[150:len(data) // 2])
    r = run(True)
    assert r.success
    assert run(True).from_cache["frontier"]


def test_locked_file_is_bypassed_not_waited_for(tmp_path):
    run(True)
    path = tmp_path / "cache" / FILE_NAME
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    try:
        r = run(Cache(path, timeout=0.2))     # a lock held forever: bypassed, not waited for
        assert r.success and any("locked" in w for w in r.warnings)
        assert not r.from_cache["frontier"]
        ref = run(False)
        same(r, ref)
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert run(True).from_cache["frontier"]


def test_unwritable_folder_is_bypassed(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    r = run(Cache(blocker / "sub" / FILE_NAME))
    assert r.success and any("cannot be created" in w for w in r.warnings)


def test_version_change_invalidates(tmp_path):
    path = tmp_path / "cache" / FILE_NAME
    run(Cache(path))
    assert run(Cache(path)).from_cache["frontier"]
    upgraded = run(Cache(path, version="9.9.9/finder-x"))
    assert not upgraded.from_cache["frontier"]
    with sqlite3.connect(path) as con:                            # old entries were dropped
        versions = {v for (v,) in con.execute("SELECT DISTINCT version FROM entries")}
    assert versions == {"9.9.9/finder-x"}


def test_keys_hold_nodes_and_degree(tmp_path):
    c = Cache(tmp_path / "c.sqlite")
    a = find(36, 4, cache=c, evaluate=False)
    b = find(36, 3, cache=c, evaluate=False)
    e = find(37, 4, cache=c, evaluate=False)
    assert not b.from_cache["frontier"] and not e.from_cache["frontier"]
    assert {x.degree for x in b.frontier} <= {1, 2, 3}
    assert a.frontier != b.frontier
    assert find(36, 3, cache=c, evaluate=False).from_cache["frontier"]
    c.close()


def test_memory_cache_api():
    c = Cache(enabled=False)
    assert c.get("x", 1) is None
    c.put("x", 1, {"a": [1, 2]})
    assert c.get("x", "1") == {"a": [1, 2]} and c.hits == 1 and c.misses == 1
    c.clear()
    assert c.get("x", 1) is None
    with pytest.raises(ValueError):
        c.put("x", 2, {"bad": float("nan")})
    assert not os.path.exists(c.path)
