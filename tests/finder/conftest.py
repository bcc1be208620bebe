"""Finder tests never touch the user's cache: every test gets its own TOPOCOLL_CACHE_DIR."""

import pytest


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TOPOCOLL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    return tmp_path / "cache"
