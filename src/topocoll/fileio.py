"""Reading and writing files the same way everywhere: ``-`` for standard input and output,
compressed files, symlinks, FIFOs and devices, atomic replacement, and a read limit.

Writing (:func:`open_output`):

* ``-`` is standard output;
* a name that resolves (through any symlinks) to a FIFO, a character device or any other
  non-regular file, or that goes through an open file descriptor (``/dev/stdout``,
  ``/dev/fd/N``: bash's ``>(...)``), is written straight into it, never replaced;
* a regular file, new or existing, is written to a temporary file beside it and moved into place
  when complete, so a failure never leaves half a file or loses the old one; a symlink stays a
  symlink and its target gets the new content; a full disk is said as such, with the fact
  that the old file was kept;
* the files of one output (a command's ``-o FOLDER``) are written as one in an
  :func:`output_set`: all of them are moved into place, or none;
* a name ending in ``.gz`` is written gzip-compressed.

:func:`check_output` makes the checks that need no work done first (an empty name, a directory,
a missing parent folder, a suffix the writer does not know), so that commands fail before
their work rather than after it.

Reading (:func:`read_input`): ``-`` is standard input; gzip data is recognised by its magic
bytes, whatever the name; input larger than :func:`max_file_bytes` (4 GiB unless the environment
variable ``TOPOCOLL_MAX_FILE_BYTES`` says otherwise) is refused, and so is input whose first
non-blank byte cannot start the expected format (``verify /dev/zero`` fails at once).

A file that cannot be read or written at all raises :class:`~topocoll.errors.FileAccessError`;
content that is not what it should be raises its parent
:class:`~topocoll.errors.ScheduleFormatError`.

>>> import os, tempfile
>>> folder = tempfile.mkdtemp()
>>> with open_output(os.path.join(folder, "x.json.gz")) as fh:
...     _ = fh.write(b'{"a": 1}')
>>> read_input(os.path.join(folder, "x.json.gz"), starts=b"{")
b'{"a": 1}'
>>> check_output("")
Traceback (most recent call last):
...
topocoll.errors.FileAccessError: output file name is empty
"""

import contextlib
import contextvars
import errno
import json
import os
import re
import stat
import sys
import zlib

from .errors import FileAccessError, ScheduleFormatError
from .limits import memory_limit, require_memory, resident_bytes
from .readcost import ReadCost
from .units import format_size

__all__ = ["check_output", "open_output", "output_set", "read_input", "read_text", "parse_json",
           "max_file_bytes",
           "is_gzip_name",
           "is_special",
           "GZIP_MAGIC", "DEFAULT_MAX_FILE_BYTES"]

GZIP_MAGIC = b"\x1f\x8b"
DEFAULT_MAX_FILE_BYTES = 4 << 30
_ENV = "TOPOCOLL_MAX_FILE_BYTES"
_BLANKS = b" \t\r\n"
_PIECE = 1 << 20
#: How deep arrays and objects may nest in a JSON file topocoll reads: well beyond any file it
#: writes, well below the depth at which Python's reader and writer recurse out of stack.
MAX_JSON_DEPTH = 64
#: Bytes held while a file is read and parsed, per byte of content (the pieces, their join,
#: the decoded text and what is parsed from it).
_READ_FACTOR = 4


def max_file_bytes():
    """The read limit in bytes: ``TOPOCOLL_MAX_FILE_BYTES`` if set, else 4 GiB."""
    text = os.environ.get(_ENV)
    if text is None or not text.strip():
        return DEFAULT_MAX_FILE_BYTES
    try:
        value = int(float(text))
    except (ValueError, OverflowError):
        raise FileAccessError(f"{_ENV} must be a number of bytes, got {text!r}") from None
    if value < 1:
        raise FileAccessError(f"{_ENV} must be at least 1, got {text!r}")
    return value


def is_special(path):
    """Whether ``path`` is written into and read as a stream, whatever its name: it resolves
    to an existing file that is not a regular file or folder (a FIFO, a device, a socket), or
    it goes through an open file descriptor (``/dev/stdout``, ``/dev/fd/N``, ``/proc/PID/fd/N``:
    bash's ``<(...)`` and ``>(...)``), whatever that descriptor is open on."""
    try:
        path = os.fspath(path)
        if _through_descriptor(path):
            return True
        mode = os.stat(path).st_mode
    except (OSError, TypeError, ValueError):
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


_FD_LINK = re.compile(r"/proc/[^/]+/fd/\d+")


def _through_descriptor(path):
    """Whether following ``path``'s symlinks passes through a ``/proc/PID/fd/N`` entry. Such an
    entry is a link to an open descriptor whose text (``pipe:[123]``, or a file name that
    another process opened) is no path to replace a file at: it is opened, never replaced."""
    current = os.path.abspath(path)
    for _ in range(40):        # the kernel's own limit on a chain of symlinks
        current = os.path.join(os.path.realpath(os.path.dirname(current)),
                               os.path.basename(current))
        if _FD_LINK.fullmatch(current):
            return True
        if not os.path.islink(current):
            return False
        current = os.path.join(os.path.dirname(current), os.readlink(current))
    return False


def is_gzip_name(path):
    """Whether ``path`` names a gzip file (ends in ``.gz``)."""
    return os.fspath(path).lower().endswith(".gz")


def _name(path):
    try:
        path = os.fspath(path)
    except TypeError:
        raise FileAccessError(f"a file name must be a string or path, got "
                                  f"{type(path).__name__}") from None
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    if "\x00" in path:
        raise FileAccessError(f"{path!r}: a file name cannot contain a NUL character")
    return path


def check_output(path, *, suffixes=None, what="output file"):
    """Check an output name before any work; return it (``None`` stays ``None``).

    Parameters
    ----------
    path : str or path or None
        ``-`` for standard output.
    suffixes : sequence of str, optional
        The suffixes the writer understands (``".json"``...); ``.gz`` may follow any of them.
    what : str
        How errors name the file.
    """
    if path is None:
        return None
    path = _name(path)
    if not path:
        raise FileAccessError(f"{what} name is empty")
    if path == "-":
        return path
    if path.endswith(("/", os.sep)) and not os.path.isdir(path):
        # realpath would drop the slash and write a file the user named as a folder
        raise FileAccessError(f"{path}: names a folder (it ends with '/'), which does not "
                              "exist; give a file name")
    real = os.path.realpath(path)
    stream = is_special(path)
    try:
        info = os.stat(path)
    except FileNotFoundError:
        info = None
    except OSError as exc:
        raise FileAccessError(f"{path}: cannot write: {exc.strerror}") from None
    if info is not None and stat.S_ISDIR(info.st_mode):
        raise FileAccessError(f"{path}: is a directory")
    if info is None and stream:
        raise FileAccessError(f"{path}: cannot write: no such open file descriptor")
    if suffixes and not stream:   # a FIFO, a device, a descriptor: any name
        plain = path[:-3] if is_gzip_name(path) else path
        if not plain.lower().endswith(tuple(suffixes)):
            raise ScheduleFormatError(f"{path}: unknown file type; use "
                                      f"{' or '.join(suffixes)} (optionally + .gz)")
    if info is None:
        parent = os.path.dirname(real)
        if not os.path.isdir(parent):
            raise FileAccessError(f"{path}: folder {os.path.dirname(path) or '.'} does "
                                  "not exist")
        if not os.access(parent, os.W_OK):
            raise FileAccessError(f"{path}: cannot write: folder {parent} is not writable")
        return path
    if not os.access(path, os.W_OK):
        raise FileAccessError(f"{path}: cannot write: permission denied")
    return path


@contextlib.contextmanager
def open_output(path, *, compress=None):
    """A binary file object that writes ``path`` (see the module docstring for the rules).

    ``compress`` forces gzip on (``True``) or off (``False``); by default names ending in
    ``.gz`` are compressed. OS errors become :class:`ScheduleFormatError` naming the file.
    """
    path = check_output(path)
    if compress is None:
        compress = path != "-" and is_gzip_name(path)
    if path == "-":
        sys.stdout.flush()
        with _wrap(sys.stdout.buffer, compress) as fh:
            yield fh
        sys.stdout.buffer.flush()
        return
    if is_special(path):   # a FIFO, a device, a socket, a descriptor: stream into it
        try:
            with open(path, "wb") as raw, _wrap(raw, compress) as fh:
                yield fh
        except OSError as exc:
            raise FileAccessError(f"{path}: cannot write: {exc.strerror}") from None
        return
    real = os.path.realpath(path)
    try:
        mode = os.stat(real).st_mode
    except FileNotFoundError:
        mode = None
    except OSError as exc:
        raise FileAccessError(f"{path}: cannot write: {exc.strerror}") from None
    folder = os.path.dirname(real)
    import tempfile   # imported here, by the jobs that write (start-up time)

    try:
        fd, tmp = tempfile.mkstemp(prefix=".topocoll-", dir=folder)
    except OSError as exc:
        raise FileAccessError(_cannot_write(path, exc, mode is not None)) from None
    try:
        with os.fdopen(fd, "wb") as raw, _wrap(raw, compress) as fh:
            yield fh
        os.chmod(tmp, stat.S_IMODE(mode) if mode is not None else 0o666 & ~_umask())
        staged = _STAGED.get()
        if staged is None:
            os.replace(tmp, real)
        else:
            staged.append((tmp, real))
    except OSError as exc:
        _remove(tmp)
        raise FileAccessError(_cannot_write(path, exc, mode is not None)) from None
    except BaseException:
        _remove(tmp)
        raise


#: The files of the :func:`output_set` being written, as (temporary, final) paths.
_STAGED = contextvars.ContextVar("topocoll_output_set", default=None)


@contextlib.contextmanager
def output_set():
    """Write the files of one output (a command's ``-o FOLDER``) as one: each regular file that
    :func:`open_output` writes in the ``with`` block keeps its new content under its temporary
    name until the block ends, and then all of them are moved into place. A block that fails
    moves none: every old file stays, and no new file of the set appears."""
    staged = []
    token = _STAGED.set(staged)
    try:
        yield
    except BaseException as exc:
        for tmp, _ in staged:
            _remove(tmp)
        if staged and isinstance(exc, FileAccessError):
            raise FileAccessError(f"{exc}; no other file of this output was changed "
                                  "either") from None
        raise
    finally:
        _STAGED.reset(token)
    for i, (tmp, real) in enumerate(staged):
        try:
            os.replace(tmp, real)
        except OSError as exc:   # (a rename needs no room: this is not a full disk)
            for rest, _ in staged[i:]:
                _remove(rest)
            raise FileAccessError(f"{real}: cannot write: {exc.strerror}") from None


def _cannot_write(path, exc, existed):
    """The one line for an OS error while ``path`` was written (its old file, if ``existed``,
    is untouched: only a complete new file replaces it)."""
    said = f"{path}: cannot write: {exc.strerror or exc}"
    if exc.errno == errno.ENOSPC:
        said += " (the disk is full)"
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        said += "; the old file was kept" if existed else "; no partial file was left"
    return said


@contextlib.contextmanager
def _wrap(raw, compress):
    if not compress:
        yield raw
        return
    import gzip   # imported here, by the jobs that write compressed files (start-up time)

    with gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, compresslevel=6) as fh:
        yield fh


def _remove(tmp):
    with contextlib.suppress(OSError):
        os.unlink(tmp)


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def read_text(path, *, what="file"):
    """:func:`read_input` decoded as UTF-8; a file that is not text is a
    :class:`~topocoll.errors.ScheduleFormatError` naming it."""
    raw = read_input(path, what=what)
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ScheduleFormatError(f"{os.fspath(path)}: not a text file") from None


def read_input(path, *, starts=None, what="file"):
    """The bytes of ``path`` (``-``: standard input), gunzipped if they are gzip data.

    Parameters
    ----------
    path : str or path
    starts : bytes, optional
        Bytes one of which must be the first non-blank byte of the (uncompressed) content,
        e.g. ``b"{"`` for JSON; checked on the first megabyte, before reading the rest.
    what : str
        What the content should be, for the error message (``"JSON schedule file"``).

    Raises
    ------
    ScheduleFormatError
        The file cannot be read, exceeds :func:`max_file_bytes`, or does not start right.
    """
    path = _name(path)
    limit = max_file_bytes()
    name = "<stdin>" if path == "-" else path
    room = memory_limit()
    if room is not None and room // _READ_FACTOR < limit:
        limit = _MemoryCap(room // _READ_FACTOR)
    watch = _Watch(name)
    try:
        if path == "-":
            return _read(sys.stdin.buffer, name, limit, starts, what, watch)
        with open(path, "rb") as fh:
            return _read(fh, name, limit, starts, what, watch)
    except IsADirectoryError:
        raise FileAccessError(f"{name}: cannot read: is a directory") from None
    except OSError as exc:
        raise FileAccessError(f"{name}: cannot read: {exc.strerror or exc}") from None


class _Watch:
    """The content's :class:`~topocoll.readcost.ReadCost`, its peak estimate put to
    :func:`~topocoll.limits.require_memory` whenever it has grown by a quarter, and once at
    the end: a file that would not fit is refused before its parse, naming the estimate."""

    def __init__(self, name):
        self.cost = ReadCost(name)
        self.base = resident_bytes()
        self.asked = 0

    def feed(self, piece, final=False):
        self.cost.feed(piece)
        peak = self.cost.peak()
        if peak > 1.25 * self.asked or (final and peak > self.asked):
            self.asked = peak
            require_memory(peak, f"reading and parsing {self.cost.name} "
                                 f"({format_size(self.cost.bytes)} of content)", base=self.base)


def _read(fh, name, limit, starts, what, watch):
    pieces, size, checked = [], 0, starts is None
    while True:
        piece = fh.read(min(_PIECE if not pieces else 16 * _PIECE, limit + 1 - size))
        if not pieces and piece[:2] == GZIP_MAGIC:
            return _gunzip(piece, fh, name, limit, starts, what, watch)
        if not piece:
            break
        pieces.append(piece)
        size += len(piece)
        if size > limit:
            raise _too_large(name, limit)
        if not checked:
            checked = _check_start(piece, name, starts, what)
        watch.feed(piece)
    if not checked:
        raise ScheduleFormatError(f"{name}: empty, not a {what}")
    watch.feed(b"", final=True)
    return b"".join(pieces)


def _gunzip(head, fh, name, limit, starts, what, watch):
    inflate = zlib.decompressobj(wbits=31)
    out, size, checked = [], 0, starts is None
    data = head
    try:
        while data:
            while data:
                # a piece at a time: a bomb is seen before it is inflated
                piece = inflate.decompress(data, min(_PIECE, limit + 1 - size))
                out.append(piece)
                size += len(piece)
                if size > limit:
                    raise _too_large(name, limit, compressed=True)
                if not checked and piece:
                    checked = _check_start(piece, name, starts, what)
                watch.feed(piece)
                data = inflate.unconsumed_tail
                if inflate.eof and inflate.unused_data:   # another gzip member follows
                    data = inflate.unused_data
                    inflate = zlib.decompressobj(wbits=31)
            data = fh.read(_PIECE)
    except zlib.error as exc:
        raise ScheduleFormatError(f"{name}: damaged gzip data ({exc})") from None
    if not inflate.eof:
        raise ScheduleFormatError(f"{name}: damaged gzip data (it ends early)")
    if not checked:
        raise ScheduleFormatError(f"{name}: empty, not a {what}")
    watch.feed(b"", final=True)
    return b"".join(out)


def _check_start(piece, name, starts, what):
    """True if the first non-blank byte of ``piece`` is one of ``starts``; False if ``piece``
    is all blanks (decide on the next piece); raise otherwise."""
    text = piece.lstrip(_BLANKS)
    if not text:
        return False
    if text[:1] not in [starts[i:i + 1] for i in range(len(starts))]:
        raise ScheduleFormatError(f"{name}: not a {what} (it starts with byte {text[:1]!r})")
    return True


class _MemoryCap(int):
    """A read limit that comes from the memory limit, not from ``TOPOCOLL_MAX_FILE_BYTES``."""


def _too_large(name, limit, compressed=False):
    if isinstance(limit, _MemoryCap):
        require_memory(_READ_FACTOR * (int(limit) + 1), f"reading and parsing {name} (more "
                       f"than {format_size(int(limit))} of content)")
    kind = "uncompressed content" if compressed else "file"
    return FileAccessError(f"{name}: {kind} larger than the read limit of {limit} bytes "
                               f"(set {_ENV} to raise it)")


def parse_json(data, *, what="JSON", shallow=()):
    """Parse JSON text (str or bytes) as topocoll reads every JSON input.

    Refused with :class:`~topocoll.errors.ScheduleFormatError`, in one line naming the rule:
    text that is not JSON; an object with a key given twice (JSON leaves the meaning open;
    Python would keep the last value without a word); arrays and objects nested deeper than
    :data:`MAX_JSON_DEPTH` (Python's reader and writer recurse, so a few thousand levels would
    end in a ``RecursionError``); numbers with more digits than Python converts. ``what``
    starts every message (none if empty). ``shallow`` names top-level keys whose values are
    not walked for depth (large, fixed-shape arrays such as a schedule's transfers, checked by
    their own reader).

    >>> parse_json('{"a": [1, {"b": 2}]}')
    {'a': [1, {'b': 2}]}
    >>> parse_json('{"a": 1, "a": 2}', what="schedule")
    Traceback (most recent call last):
    ...
    topocoll.errors.ScheduleFormatError: schedule: key 'a' appears twice in one object
    >>> parse_json("[" * 100 + "]" * 100)
    Traceback (most recent call last):
    ...
    topocoll.errors.ScheduleFormatError: JSON: arrays and objects nest deeper than 64 levels
    """
    prefix = f"{what}: " if what else ""
    try:
        doc = json.loads(data, object_pairs_hook=_unique_keys)
    except _DuplicateKey as exc:
        raise ScheduleFormatError(f"{prefix}key {exc.args[0]!r} appears twice in one object") \
            from None
    except RecursionError:
        raise ScheduleFormatError(f"{prefix}arrays and objects nest deeper than "
                                  f"{MAX_JSON_DEPTH} levels") from None
    except json.JSONDecodeError as err:
        raise ScheduleFormatError(f"{prefix}not valid JSON ({err.msg} at line {err.lineno} "
                                  f"column {err.colno})") from None
    except (UnicodeDecodeError, ValueError) as exc:
        if "digits" in str(exc):  # int() refuses numbers with thousands of digits
            raise ScheduleFormatError(f"{prefix}a number has more digits than "
                                      f"{sys.get_int_max_str_digits()}") from None
        raise ScheduleFormatError(f"{prefix}not valid JSON ({exc})") from None
    _check_depth(doc, prefix, shallow)
    return doc


class _DuplicateKey(Exception):
    pass


def _unique_keys(pairs):
    doc = dict(pairs)
    if len(doc) != len(pairs):
        seen = set()
        for key, _ in pairs:
            if key in seen:
                raise _DuplicateKey(key)
            seen.add(key)
    return doc


def _check_depth(doc, prefix, shallow):
    # iterative: the point is not to recurse on hostile input
    stack = [(doc, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            raise ScheduleFormatError(f"{prefix}arrays and objects nest deeper than "
                                      f"{MAX_JSON_DEPTH} levels")
        if isinstance(value, dict):
            items = value.items() if depth > 1 or not shallow else \
                ((k, v) for k, v in value.items() if k not in shallow)
            stack.extend((v, depth + 1) for _, v in items if isinstance(v, (dict, list)))
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value if isinstance(v, (dict, list)))
