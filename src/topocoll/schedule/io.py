"""Reading and writing the schedule file (``format: "topocoll.schedule"``, ``version: 1``).

Files are written in one canonical layout: the header keys first, then ``"transfers"`` with one
transfer per line, in the key order of DESIGN.md. Reading such a file takes a vectorised path that
parses the transfer lines with numpy; any other valid JSON layout is read by the general path.
Either way every field is validated and errors name the offending field, e.g.
``transfers[17].lo: lo must be in [0, 1)``.

>>> import io as _io
>>> from topocoll.topology import topology
>>> from topocoll.schedule.model import Schedule, transfer_array
>>> s = Schedule(topology("ring:2"), "allgather",
...              transfer_array([1, 1], [0, 1], [1, 0], [0, 1], 0.0, 1.0), algorithm="hand")
>>> text = dumps_schedule(s)
>>> loads_schedule(text).transfers.tolist() == s.transfers.tolist()
True
"""

import json
import math
import os
import tempfile
import warnings

import numpy as np

from ..collectives import COLLECTIVES, COPY, REDUCE
from ..errors import ScheduleFormatError, TopocollError
from .model import TRANSFER_DTYPE, Schedule, transfer_problems

__all__ = ["load_schedule", "save_schedule", "loads_schedule", "dumps_schedule",
           "schedule_from_dict"]

FORMAT = "topocoll.schedule"
VERSION = 1
_MARKER = b'"transfers": [\n'
_END = b"\n]\n}"
_ROW_PIECES = (b'{"step": ', b', "src": ', b', "dst": ', b', "shard": ', b', "lo": ', b', "hi": ')
_CHUNK = 1 << 20


# ---------------------------------------------------------------------------------- writing
def _text_table(values):
    """Distinct values as a (k, width) byte matrix of their JSON text, space-padded, and the
    index of each value in it."""
    if values.dtype.kind in "iu" and values.size and 0 <= values.min() and values.max() < 1 << 22:
        uniq = np.arange(int(values.max()) + 1)
        index = values
    else:
        uniq, index = np.unique(values, return_inverse=True)
    text = uniq.astype("S")
    width = max(1, int(np.char.str_len(text).max())) if text.size else 1
    table = np.frombuffer(text.astype(f"S{width}").tobytes(), dtype=np.uint8)
    table = table.reshape(uniq.size, width).copy()
    table[table == 0] = ord(" ")  # JSON allows blanks before the comma
    return table, index


def _rows(t):
    """The transfer lines of ``t`` as bytes: fixed-width records assembled with numpy, so that
    millions of transfers format in seconds. Fields are padded with blanks, which JSON allows."""
    if t.size == 0:
        return b""
    pieces = list(_ROW_PIECES)
    parts = []
    for start in range(0, t.size, _CHUNK):
        c = t[start:start + _CHUNK]
        columns = [_text_table(np.ascontiguousarray(c[name]))
                   for name in ("step", "src", "dst", "shard", "lo", "hi")]
        op_table = np.frombuffer(b'"copy"}  ,\n"reduce"},\n', dtype=np.uint8).reshape(2, 11)
        widths = [len(p) for p in pieces] + [tab.shape[1] for tab, _ in columns]
        width = sum(widths) + len(b', "op": ') + 11
        out = np.empty((c.size, width), dtype=np.uint8)
        at = 0
        for piece, (table, index) in zip(pieces, columns):
            out[:, at:at + len(piece)] = np.frombuffer(piece, dtype=np.uint8)
            at += len(piece)
            out[:, at:at + table.shape[1]] = table[index]
            at += table.shape[1]
        tail = np.frombuffer(b', "op": ', dtype=np.uint8)
        out[:, at:at + tail.size] = tail
        at += tail.size
        out[:, at:] = op_table[(c["op"] == REDUCE).astype(np.intp)]
        parts.append(out.tobytes())
    data = b"".join(parts)
    return data[:-2]  # no comma after the last transfer


def _header(schedule):
    head = {"format": FORMAT, "version": VERSION, "collective": schedule.collective.name}
    if schedule.root is not None:
        head["root"] = schedule.root
    head["algorithm"] = schedule.algorithm
    head["topology"] = schedule.topology.to_dict()
    head["meta"] = schedule.meta
    return head


def dumps_schedule(schedule):
    """The schedule as file text (str)."""
    return _dump_bytes(schedule).decode("ascii")


def _dump_bytes(schedule):
    head = _header(schedule)
    parts = [b"{\n"]
    for key, value in head.items():
        parts.append(f"{json.dumps(key)}: {json.dumps(value, allow_nan=False)},\n".encode())
    parts.append(_MARKER)
    parts.append(_rows(schedule.transfers))
    parts.append(_END + b"\n")
    return b"".join(parts)


def save_schedule(schedule, target):
    """Write a schedule to a path (atomically: a crash never leaves half a file) or a binary or
    text file object."""
    data = _dump_bytes(schedule)
    if hasattr(target, "write"):
        try:
            target.write(data)
        except TypeError:
            target.write(data.decode("ascii"))
        return
    path = os.fspath(target)
    directory = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=".topocoll-", dir=directory)
    except OSError as exc:
        raise ScheduleFormatError(f"{path}: cannot write: {exc.strerror}") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except OSError as exc:
        os.unlink(tmp)
        raise ScheduleFormatError(f"{path}: cannot write: {exc.strerror}") from None


# ---------------------------------------------------------------------------------- reading
def load_schedule(path):
    """Read and validate a schedule file."""
    path = os.fspath(path)
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise ScheduleFormatError(f"{path}: cannot read: {exc.strerror}") from None
    return _loads(data, path)


def loads_schedule(text):
    """Read and validate a schedule from file text (str or bytes)."""
    data = text.encode() if isinstance(text, str) else bytes(text)
    return _loads(data, "<schedule>")


def _loads(data, where):
    try:
        fast = _fast_parse(data)
        if fast is not None:
            head, transfers = fast
            return schedule_from_dict(head, transfers=transfers)
        try:
            doc = json.loads(data)
        except (UnicodeDecodeError, ValueError) as exc:
            raise ScheduleFormatError(f"not valid JSON ({exc})") from None
        return schedule_from_dict(doc)
    except TopocollError as exc:
        raise type(exc)(f"{where}: {exc}") from None


def _fast_parse(data):
    """Parse a file in the canonical layout with numpy; ``None`` if the layout differs."""
    at = data.rfind(_MARKER)
    stripped = data.rstrip()
    if at < 0 or not stripped.endswith(_END):
        return None
    body = stripped[at + len(_MARKER): len(stripped) - len(_END)]
    try:
        head = json.loads(data[:at] + b'"transfers": []}')
    except (UnicodeDecodeError, ValueError):
        return None
    if not isinstance(head, dict):
        return None
    rows = body.count(b"{")
    if rows == 0:
        return (head, np.zeros(0, dtype=TRANSFER_DTYPE)) if not body.strip() else None
    text = body
    for piece in _ROW_PIECES:
        text = text.replace(piece, b"," if piece != _ROW_PIECES[0] else b"")
    text = text.replace(b', "op": "copy"}', b",0").replace(b', "op": "reduce"}', b",1")
    if text.translate(None, b"0123456789.-+eE,\n "):
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a partial parse is caught by the count below
        try:
            values = np.fromstring(text, dtype=np.float64, sep=",")
        except ValueError:
            return None
    if values.size != 7 * rows:
        return None
    table = values.reshape(rows, 7)
    ints = table[:, :4]
    if np.any(ints != np.floor(ints)) or np.any(np.abs(ints) > 2**31 - 1):
        return None
    out = np.empty(rows, dtype=TRANSFER_DTYPE)
    for k, name in enumerate(TRANSFER_DTYPE.names):
        out[name] = table[:, k]
    return head, out


def _need(doc, key, kind, where, *, optional=False, default=None):
    if key not in doc:
        if optional:
            return default
        raise ScheduleFormatError(f"{where}{key}: missing")
    value = doc[key]
    if kind is int and (isinstance(value, bool) or not isinstance(value, int)):
        raise ScheduleFormatError(f"{where}{key}: must be an integer, got {value!r}")
    if kind is not int and not isinstance(value, kind):
        name = {str: "a string", dict: "an object", list: "a list"}[kind]
        raise ScheduleFormatError(f"{where}{key}: must be {name}, got {type(value).__name__}")
    return value


def _transfers_from_list(items):
    out = np.empty(len(items), dtype=TRANSFER_DTYPE)
    for i, item in enumerate(items):
        where = f"transfers[{i}]."
        if not isinstance(item, dict):
            raise ScheduleFormatError(f"transfers[{i}]: must be an object")
        for name in ("step", "src", "dst", "shard"):
            value = _need(item, name, int, where)
            if not -2**31 < value < 2**31:
                raise ScheduleFormatError(f"{where}{name}: {value} is out of range")
            out[i][name] = value
        for name in ("lo", "hi"):
            if name not in item:
                raise ScheduleFormatError(f"{where}{name}: missing")
            value = item[name]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ScheduleFormatError(f"{where}{name}: must be a number, got {value!r}")
            out[i][name] = value
        op = _need(item, "op", str, where)
        if op not in ("copy", "reduce"):
            raise ScheduleFormatError(f"{where}op: must be \"copy\" or \"reduce\", got {op!r}")
        out[i]["op"] = COPY if op == "copy" else REDUCE
        extra = set(item) - {"step", "src", "dst", "shard", "lo", "hi", "op"}
        if extra:
            raise ScheduleFormatError(f"{where}{sorted(extra)[0]}: unknown field")
    return out


def schedule_from_dict(doc, *, transfers=None):
    """Build a :class:`Schedule` from the parsed file object, validating every field.

    ``transfers``, if given, replaces ``doc["transfers"]`` (already parsed into an array).
    """
    from ..topology.io import topology_from_dict

    if not isinstance(doc, dict):
        raise ScheduleFormatError("the file must hold one JSON object")
    fmt = _need(doc, "format", str, "")
    if fmt != FORMAT:
        raise ScheduleFormatError(f"format: must be {FORMAT!r}, got {fmt!r}")
    version = _need(doc, "version", int, "")
    if version != VERSION:
        raise ScheduleFormatError(f"version: this reader knows version {VERSION}, got {version}")
    name = _need(doc, "collective", str, "")
    if name not in COLLECTIVES:
        raise ScheduleFormatError(f"collective: must be one of {', '.join(COLLECTIVES)}, "
                                  f"got {name!r}")
    coll = COLLECTIVES[name]
    root = _need(doc, "root", int, "", optional=True)
    if coll.rooted and root is None:
        raise ScheduleFormatError(f"root: missing (a {name} schedule needs a root)")
    if not coll.rooted and root is not None:
        raise ScheduleFormatError(f"root: {name} takes no root")
    algorithm = _need(doc, "algorithm", str, "", optional=True, default="unknown")
    topo = topology_from_dict(_need(doc, "topology", dict, ""), where="topology")
    meta = _need(doc, "meta", dict, "", optional=True, default={})
    if transfers is None:
        transfers = _transfers_from_list(_need(doc, "transfers", list, ""))
    known = {"format", "version", "collective", "root", "algorithm", "topology", "transfers",
             "meta"}
    extra = set(doc) - known
    if extra:
        raise ScheduleFormatError(f"{sorted(extra)[0]}: unknown field")
    problems = transfer_problems(transfers, topo.num_nodes, coll.num_shards(topo.num_nodes),
                                 coll.combining, limit=1)
    if problems:
        index, field, message = problems[0]
        raise ScheduleFormatError(f"transfers[{index}].{field}: {message}")
    return Schedule(topo, coll, transfers, root=root, algorithm=algorithm, meta=meta)
