"""The finder's results cache: one embedded SQLite file in the user's cache directory.

Where: ``$TOPOCOLL_CACHE_DIR`` if set, else ``$XDG_CACHE_HOME/topocoll``, else
``~/.cache/topocoll``; the file is ``finder.sqlite`` there. Each entry is a JSON document under
``(kind, key, version)``: the key holds everything that determines the answer (for example
nodes, degree and search options) and the version is ``topocoll.__version__`` plus the finder's
:data:`ALGORITHM_VERSION`, so an upgrade never reads stale answers (entries of other versions
are deleted when the file is opened).

Kinds: ``"base"`` (a base topology's verified BFB costs), ``"cost"`` (BFB costs of a
generative topology computed without a schedule), ``"frontier"`` (the Pareto frontier of one
search) and ``"evaluation"`` (the measured allreduce of a built, verified candidate).

The cache never makes the finder fail: a file that is not a database (or is damaged) is deleted
and rebuilt; a file locked by another process, or a folder that cannot be written, is bypassed
for the rest of the run. Either way a one-line note is added to :attr:`Cache.warnings`. Within
one run every entry also lives in memory, so a bypassed cache still avoids repeated work.

>>> c = Cache(enabled=False)
>>> c.put("frontier", "n=8", {"x": 1})
>>> c.get("frontier", "n=8")
{'x': 1}
"""

import json
import os
import sqlite3
from pathlib import Path

from . import tables

__all__ = ["Cache", "cache_dir", "cache_version", "ALGORITHM_VERSION", "SCHEMA_VERSION",
           "ENV_VAR", "FILE_NAME"]

#: Bump when the search, the predictions or the stored documents change meaning.
ALGORITHM_VERSION = "finder-3"
#: Layout of the SQLite file; another layout is dropped and rebuilt.
SCHEMA_VERSION = 1
#: Environment variable that chooses the cache folder.
ENV_VAR = "TOPOCOLL_CACHE_DIR"
#: Name of the database file in the cache folder.
FILE_NAME = "finder.sqlite"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS entries (
    kind TEXT NOT NULL, key TEXT NOT NULL, version TEXT NOT NULL, data TEXT NOT NULL,
    PRIMARY KEY (kind, key, version));
"""


def cache_dir():
    """The cache folder: ``$TOPOCOLL_CACHE_DIR``, ``$XDG_CACHE_HOME/topocoll`` or
    ``~/.cache/topocoll``."""
    chosen = os.environ.get(ENV_VAR)
    if chosen:
        return Path(chosen).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "topocoll"


def cache_version():
    """``"<topocoll version>/<ALGORITHM_VERSION>/<digest>"``, the digest that of the shipped
    optimized bases (a frontier depends on them): entries of any other version are stale."""
    import hashlib

    from .. import __version__

    digest = hashlib.sha256(tables.shipped_text(tables.OPTIMIZED_BASES_FILE).encode()).hexdigest()[:8]
    return f"{__version__}/{ALGORITHM_VERSION}/{digest}"


def _locked(exc):
    text = str(exc).lower()
    return "locked" in text or "busy" in text


class Cache:
    """Get and put JSON documents by ``(kind, key)`` for the current code version.

    Parameters
    ----------
    path : str or Path, optional
        The database file (default: :data:`FILE_NAME` in :func:`cache_dir`).
    enabled : bool
        False: never touch the file (``--no-cache``); entries live in memory for this run only.
    version : str, optional
        Overrides :func:`cache_version` (tests use it to simulate an upgrade).
    timeout : float
        Seconds to wait for another process's lock before bypassing the file.
    """

    def __init__(self, path=None, *, enabled=True, version=None, timeout=1.0):
        self.path = Path(path) if path is not None else cache_dir() / FILE_NAME
        self.enabled = bool(enabled)
        self.version = version or cache_version()
        self.timeout = float(timeout)
        self.warnings = []
        self.hits = 0
        self.misses = 0
        self._memory = {}
        self._conn = None
        self._opened = False
        self._batch = 0

    # ------------------------------------------------------------------ connection
    def _bypass(self, why):
        self.warnings.append(f"results cache {self.path} {why}; continuing without it")
        self._close()
        self.enabled = False

    def _close(self):
        if self._conn is not None:
            try:
                self._conn.close()
            except sqlite3.Error:
                pass
        self._conn = None

    def _connect_once(self):
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, timeout=self.timeout)
        try:
            conn.executescript(_SCHEMA)
            row = conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
            if row is None or row[0] != str(SCHEMA_VERSION):
                with conn:
                    conn.execute("DROP TABLE IF EXISTS entries")
                    conn.executescript(_SCHEMA)
                    conn.execute("INSERT OR REPLACE INTO meta VALUES ('schema', ?)",
                                 (str(SCHEMA_VERSION),))
            with conn:
                conn.execute("DELETE FROM entries WHERE version != ?", (self.version,))
        except BaseException:
            conn.close()
            raise
        return conn

    def _connection(self):
        """The open connection, or None when the file is bypassed."""
        if not self.enabled:
            return None
        if self._opened:
            return self._conn
        self._opened = True
        try:
            self._conn = self._connect_once()
        except sqlite3.OperationalError as exc:
            if _locked(exc):
                self._bypass("is locked by another process")
            elif "not a database" in str(exc).lower() or "malformed" in str(exc).lower():
                self._rebuild(exc)
            else:
                self._bypass(f"cannot be opened ({exc})")
        except sqlite3.DatabaseError as exc:      # not a database, malformed, ...
            self._rebuild(exc)
        except OSError as exc:
            self._bypass(f"cannot be created ({exc.strerror or exc})")
        return self._conn

    def _rebuild(self, exc):
        """Delete a damaged file and start a new one (bypass if even that fails)."""
        self._close()
        try:
            for suffix in ("", "-journal", "-wal", "-shm"):
                candidate = Path(str(self.path) + suffix)
                if candidate.exists():
                    candidate.unlink()
            self._conn = self._connect_once()
            self.warnings.append(f"results cache {self.path} was damaged ({exc}); rebuilt it")
        except (sqlite3.Error, OSError) as again:
            self._bypass(f"is damaged and could not be rebuilt ({again})")

    def _failed(self, exc):
        """An error while reading or writing an open database."""
        if isinstance(exc, sqlite3.OperationalError) and _locked(exc):
            self._bypass("is locked by another process")
        elif isinstance(exc, sqlite3.DatabaseError):
            self._rebuild(exc)
        else:
            self._bypass(f"failed ({exc})")

    # ------------------------------------------------------------------ entries
    def get(self, kind, key):
        """The document stored under ``(kind, key)``, or None."""
        key = str(key)
        if (kind, key) in self._memory:
            self.hits += 1
            return self._memory[(kind, key)]
        conn = self._connection()
        row = None
        if conn is not None:
            try:
                row = conn.execute("SELECT data FROM entries WHERE kind = ? AND key = ? AND "
                                   "version = ?", (kind, key, self.version)).fetchone()
            except sqlite3.Error as exc:
                self._failed(exc)
        if row is None:
            self.misses += 1
            return None
        try:
            doc = json.loads(row[0])
        except ValueError:
            self.misses += 1
            return None
        self._memory[(kind, key)] = doc
        self.hits += 1
        return doc

    def put(self, kind, key, document):
        """Store a JSON-serialisable document under ``(kind, key)``."""
        key = str(key)
        text = json.dumps(document, allow_nan=False, separators=(",", ":"))
        self._memory[(kind, key)] = json.loads(text)
        conn = self._connection()
        if conn is None:
            return
        try:
            conn.execute("INSERT OR REPLACE INTO entries VALUES (?, ?, ?, ?)",
                         (kind, key, self.version, text))
            if not self._batch:
                conn.commit()
        except sqlite3.Error as exc:
            self._failed(exc)

    def batch(self):
        """A context in which puts are committed together at the end (one disk sync)."""
        return _Batch(self)

    def _commit(self):
        conn = self._conn if self.enabled else None
        if conn is not None:
            try:
                conn.commit()
            except sqlite3.Error as exc:
                self._failed(exc)

    def clear(self):
        """Forget every entry (memory and file)."""
        self._memory.clear()
        conn = self._connection()
        if conn is not None:
            try:
                with conn:
                    conn.execute("DELETE FROM entries")
            except sqlite3.Error as exc:
                self._failed(exc)

    def close(self):
        self._commit()
        self._close()
        self._opened = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __repr__(self):
        state = "enabled" if self.enabled else "memory only"
        return f"Cache({str(self.path)!r}, {state}, version={self.version!r})"


class _Batch:
    def __init__(self, cache):
        self.cache = cache

    def __enter__(self):
        self.cache._batch += 1
        return self.cache

    def __exit__(self, *exc):
        self.cache._batch -= 1
        if not self.cache._batch:
            self.cache._commit()
        return False
