"""Reading and writing the schedule file (``format: "topocoll.schedule"``, ``version: 1``).

Files are written in one canonical layout: the header keys first, then ``"transfers"`` with one
transfer per line, in the key order of docs/format.md. Reading such a file takes a vectorised path
that parses the transfer lines with numpy; any other valid JSON layout is read by the general path.
Either way every field is validated and errors name the offending field, e.g. ``transfers[17].lo:
lo must be in [0, 1)``.

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
import re

import numpy as np

from ..collectives import COLLECTIVES, COPY, REDUCE
from ..errors import InputTypeError, ScheduleFormatError, TopocollError
from ..fileio import open_output, parse_json, read_input
from .model import TRANSFER_DTYPE, Schedule, TransferRows, transfer_problems
from .symmetric import SymmetricSchedule
from ..topology.routes import ROUTINGS

__all__ = ["load_schedule", "save_schedule", "loads_schedule", "dumps_schedule",
           "schedule_from_dict", "as_schedule"]

FORMAT = "topocoll.schedule"
VERSION = 1
_MARKER = b'"transfers": [\n'
_END = b"\n]\n}"
_ROW_PIECES = (b'{"step": ', b', "src": ', b', "dst": ', b', "shard": ', b', "lo": ', b', "hi": ')
WRITE_CHUNK = 1 << 20
#: The forms a schedule file may say, each with the fields of its own (the compact form is
#: written as the explicit one: its rows are every transfer).
_FILE_FORMS = {"explicit": (), "symmetric": ("symmetry",)}


# ---------------------------------------------------------------------------------- writing
def _text_table(values):
    """Distinct values as blank-padded JSON text of one width (an ``S{w}`` array) and the index
    of each value in it."""
    if values.dtype.kind in "iu" and values.size and 0 <= values.min() and values.max() < 1 << 22:
        uniq = np.arange(int(values.max()) + 1)
        index = values
    else:  # few distinct values in practice: hash them, then locate each in the small table
        uniq = np.unique(values)
        index = np.searchsorted(uniq, values)
    text = uniq.astype("S")
    width = max(1, int(np.char.str_len(text).max())) if text.size else 1
    return np.char.ljust(text, width), index  # JSON allows the blanks before the comma


_OP_TEXT = np.array([b'"copy"}  ,\n', b'"reduce"},\n'])


def _row_chunks(t, last=True):
    """The transfer lines of ``t`` as byte chunks. Each chunk is one numpy record array whose
    fields are the keys and the blank-padded values, so millions of transfers format in about
    a second; chunks are yielded one by one so that a large file never sits in memory twice.
    ``last``: ``t`` ends the list (no comma after its last line)."""
    keys = list(_ROW_PIECES) + [b', "op": ']
    for start in range(0, t.size, WRITE_CHUNK):
        c = t[start:start + WRITE_CHUNK]
        columns = [_text_table(np.ascontiguousarray(c[name]))
                   for name in ("step", "src", "dst", "shard", "lo", "hi")]
        fields = []
        for i, (key, (table, _)) in enumerate(zip(keys, columns)):
            fields += [(f"k{i}", f"S{len(key)}"), (f"v{i}", table.dtype.str)]
        fields += [("k6", f"S{len(keys[6])}"), ("op", _OP_TEXT.dtype.str)]
        template = np.zeros(1, dtype=np.dtype(fields))
        for i, key in enumerate(keys):
            template[f"k{i}"] = key
        rows = np.repeat(template, c.size)  # every key in place with one copy per record
        for i, (table, index) in enumerate(columns):
            rows[f"v{i}"] = table[index]
        rows["op"] = _OP_TEXT[(c["op"] == REDUCE).astype(np.intp)]
        data = memoryview(rows).cast("B")
        yield data if start + WRITE_CHUNK < t.size or not last else data[:-2]  # none after the last


def _header(schedule):
    own = schedule.file_fields()       # the form's fields: "form" up top, the rest after
    head = {"format": FORMAT, "version": VERSION}
    if "form" in own:
        head["form"] = own.pop("form")
    head["collective"] = schedule.collective.name
    if schedule.root is not None:
        head["root"] = schedule.root
    head["algorithm"] = schedule.algorithm
    head.update(own)
    head["topology"] = schedule.topology.to_dict()
    head["meta"] = schedule.meta
    return head


def dumps_schedule(schedule):
    """The schedule as file text (str)."""
    return _dump_bytes(schedule).decode("ascii")


def json_parts(schedule):
    """The schedule file's bytes in pieces, in order (what a writer streams out)."""
    head = _header(schedule)
    yield b"{\n"
    for key, value in head.items():
        yield f"{json.dumps(key)}: {json.dumps(value, allow_nan=False)},\n".encode()
    yield _MARKER
    held = None                        # one block behind, to know which block is the last
    for _, block in schedule.blocks(WRITE_CHUNK):
        if held is not None:
            yield from _row_chunks(held, last=False)
        held = block
    if held is not None:
        yield from _row_chunks(held)
    yield _END + b"\n"


def _dump_bytes(schedule):
    return b"".join(bytes(part) for part in json_parts(schedule))


def save_schedule(schedule, target):
    """Write a schedule to a path, ``-`` (standard output) or a binary or text file object.

    A :class:`~topocoll.schedule.symmetric.SymmetricSchedule` is written in the symmetric form
    (``"form": "symmetric"``, its group in ``"symmetry"``, its representatives as
    ``"transfers"``; docs/format.md, "Symmetric schedules"). A
    :class:`~topocoll.schedule.compact.CompactSchedule` is written as the explicit file it
    stands for, a block at a time.

    A path is written as :func:`topocoll.fileio.open_output` describes: atomically (a crash
    never leaves half a file), through symlinks, straight into FIFOs and devices, and
    gzip-compressed when the name ends in ``.gz``.
    """
    if hasattr(target, "write"):
        for part in json_parts(schedule):
            try:
                target.write(part)
            except TypeError:
                target.write(bytes(part).decode("ascii"))
        return
    with open_output(target) as fh:
        for part in json_parts(schedule):
            fh.write(part)


# ---------------------------------------------------------------------------------- reading
def load_schedule(path):
    """Read and validate a schedule file (gzip-compressed or not; ``-`` for standard input).

    A file in the symmetric form gives a
    :class:`~topocoll.schedule.symmetric.SymmetricSchedule`, any other a :class:`Schedule`."""
    data = read_input(path, starts=b"{", what="JSON schedule file")
    return _loads(data, "<stdin>" if path == "-" else os.fspath(path))


def loads_schedule(text, *, source="<schedule>"):
    """Read and validate a schedule from file text (str or bytes); errors begin with
    ``source``, the name of where the text came from."""
    data = text.encode() if isinstance(text, str) else bytes(text)
    return _loads(data, source)


def _loads(data, where):
    try:
        fast = _fast_parse(data)
        if fast is not None:
            head, transfers = fast
            return schedule_from_dict(head, transfers=transfers)
        return schedule_from_dict(parse_json(data, what="",
                                             shallow=("transfers",)))
    except TopocollError as exc:
        raise type(exc)(f"{where}: {exc}") from None


def _fast_parse(data):
    """Parse a file in the canonical layout with numpy; ``None`` if the layout differs."""
    at = data.find(_MARKER)  # a raw newline cannot occur inside a JSON string before it
    end = len(data)
    while end and data[end - 1] in b" \t\r\n":
        end -= 1
    if at < 0 or data[end - len(_END):end] != _END:
        return None
    try:
        head = parse_json(data[:at] + b'"transfers": []}')
    except ScheduleFormatError:
        return None  # the full parse names what is wrong
    if not isinstance(head, dict):
        return None
    start, stop = at + len(_MARKER), end - len(_END)
    if start >= stop:
        return head, np.zeros(0, dtype=TRANSFER_DTYPE)
    buf = np.frombuffer(data, dtype=np.uint8, count=stop - start, offset=start)
    transfers = _fixed_width_rows(buf)
    return None if transfers is None else (head, transfers)


_KEYS = (b'{"step": ', b', "src": ', b', "dst": ', b', "shard": ', b', "lo": ', b', "hi": ',
         b', "op": ')
_OPS = {b'"copy"}': COPY, b'"reduce"}': REDUCE}
_NUMBER_BYTES = np.zeros(256, dtype=bool)
_NUMBER_BYTES[np.frombuffer(b"0123456789.eE+-", dtype=np.uint8)] = True
_JSON_NUMBER = re.compile(rb"^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$")


def _fixed_width_rows(buf):
    """Transfers from lines of one transfer each, as this module writes them: runs of lines of
    equal width are parsed column-wise. ``None`` if any line departs from that layout."""
    newline = np.flatnonzero(buf == 10)
    starts = np.r_[0, newline + 1]
    ends = np.r_[newline, buf.size]
    if newline.size and np.any(buf[newline - 1] != ord(",")):
        return None
    ends[:-1] -= 1  # every line but the last ends with the comma that separates transfers
    width = ends - starts
    cuts = np.flatnonzero(np.r_[True, width[1:] != width[:-1], True])
    out = np.empty(starts.size, dtype=TRANSFER_DTYPE)
    for a, b in zip(cuts[:-1], cuts[1:]):
        w = int(width[a])
        for lo in range(a, b, 1 << 20):
            hi = min(b, lo + (1 << 20))
            rows = np.ascontiguousarray(np.lib.stride_tricks.as_strided(
                buf[starts[lo]:], shape=(hi - lo, w), strides=(w + 2, 1)))
            if not _parse_block(rows, out[lo:hi]):
                return None
    return out


def _parse_block(rows, out):
    """Fill ``out`` from a (lines, width) byte block whose lines share one layout."""
    template = rows[0].tobytes()
    spans, pos = [], 0
    for i, key in enumerate(_KEYS):
        found = template.find(key, pos)
        if found < 0 or (i == 0 and found != 0):
            return False
        if i:
            spans.append((pos, found))  # the value of the previous key, blanks included
        if not np.all(rows[:, found:found + len(key)] == rows[0, found:found + len(key)]):
            return False
        pos = found + len(key)
    spans.append((pos, rows.shape[1]))
    for name, (a, b) in zip(("step", "src", "dst", "shard"), spans[:4]):
        value = _ints(rows[:, a:b])
        if value is None:
            return False
        out[name] = value
    for name, (a, b) in zip(("lo", "hi"), spans[4:6]):
        value = _floats(rows[:, a:b])
        if value is None:
            return False
        out[name] = value
    a, b = spans[6]
    ops = _distinct(rows[:, a:b])
    if ops is None:
        return False
    codes = []
    for text in ops[0]:
        code = _OPS.get(text.rstrip(b" "))
        if code is None:
            return False
        codes.append(code)
    out["op"] = np.asarray(codes, dtype=np.int8)[ops[1]]
    return True


def _ints(block):
    """Non-negative integers written as digits then blanks; ``None`` otherwise."""
    digit = (block >= 48) & (block <= 57)
    blank = block == 32
    if not (np.all(digit | blank) and np.all(digit[:, 0])
            and np.all(digit[:, 1:] <= digit[:, :-1])):
        return None
    if block.shape[1] > 1 and np.any((block[:, 0] == 48) & digit[:, 1]):
        return None  # leading zeros are not JSON
    value = np.zeros(block.shape[0], dtype=np.int64)
    for j in range(block.shape[1]):
        value = np.where(digit[:, j], value * 10 + (block[:, j].astype(np.int64) - 48), value)
    return value


def _distinct(block):
    """The distinct lines of a byte block and the index of each line among them, by hashing
    8-byte words; every line is compared with its representative, so collisions are caught."""
    width = block.shape[1]
    padded = np.zeros((block.shape[0], -(-width // 8) * 8), dtype=np.uint8)
    padded[:, :width] = block
    words = padded.view(np.uint64)
    mix = np.zeros(block.shape[0], dtype=np.uint64)
    for j in range(words.shape[1]):
        mix = (mix * np.uint64(0x9E3779B97F4A7C15)) ^ words[:, j]
    keys, first, index = np.unique(mix, return_index=True, return_inverse=True)
    if not np.array_equal(words, words[first[index]]):
        return None
    return [block[i].tobytes() for i in first], index


def _floats(block):
    """JSON numbers, blank-padded on the right; ``None`` otherwise."""
    if not np.all(_NUMBER_BYTES[block] | (block == 32)):
        return None
    found = _distinct(block)
    if found is None:
        return None
    texts, index = found
    values = []
    for text in texts:
        text = text.rstrip(b" ")
        if not _JSON_NUMBER.match(text):
            return None
        values.append(float(text))
    return np.asarray(values, dtype=np.float64)[index]


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
    """Build a :class:`Schedule` (a :class:`~topocoll.schedule.symmetric.SymmetricSchedule`
    for ``"form": "symmetric"``) from the parsed file object, validating every field.

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
    form = _need(doc, "form", str, "", optional=True, default="explicit")
    if form not in _FILE_FORMS:
        raise ScheduleFormatError(f"form: must be {' or '.join(map(json.dumps, _FILE_FORMS))}"
                                  f", got {form!r}")
    routing = _need(doc, "routing", str, "", optional=True, default=None)
    if routing is not None and (form != "explicit" or routing not in ROUTINGS):
        raise ScheduleFormatError(f"routing: must be {' or '.join(map(json.dumps, ROUTINGS))} "
                                  f"in an explicit schedule, got {routing!r}")
    known = {"format", "version", "form", "collective", "root", "algorithm", "routing",
             "topology", "transfers", "meta"} | set(_FILE_FORMS[form])
    extra = set(doc) - known
    if extra:
        raise ScheduleFormatError(f"{sorted(extra)[0]}: unknown field")
    problems = transfer_problems(transfers, topo.num_nodes, coll.num_shards(topo.num_nodes),
                                 coll.combining, limit=1)
    if problems:
        index, field, message = problems[0]
        raise ScheduleFormatError(f"transfers[{index}].{field}: {message}")
    if _FILE_FORMS[form]:              # the symmetric form: its group
        dims = _symmetry_dims(_need(doc, "symmetry", dict, ""))
        if math.prod(dims) != topo.num_nodes:
            raise ScheduleFormatError(f"symmetry.dims: {dims} do not multiply to the "
                                      f"{topo.num_nodes} nodes of the topology")
        return SymmetricSchedule(topo, coll, dims, transfers, algorithm=algorithm, meta=meta)
    return Schedule(topo, coll, transfers, root=root, algorithm=algorithm, meta=meta,
                    routing=routing)


def _symmetry_dims(doc):
    """The dims of a ``"symmetry"`` object (``{"kind": "translation", "dims": [...]}``)."""
    kind = _need(doc, "kind", str, "symmetry.")
    if kind != "translation":
        raise ScheduleFormatError(f"symmetry.kind: must be \"translation\", got {kind!r}")
    dims = _need(doc, "dims", list, "symmetry.")
    if not dims or any(isinstance(d, bool) or not isinstance(d, int) or d < 1 for d in dims):
        raise ScheduleFormatError(f"symmetry.dims: must be a list of positive integers, got "
                                  f"{dims!r}")
    extra = set(doc) - {"kind", "dims"}
    if extra:
        raise ScheduleFormatError(f"symmetry.{sorted(extra)[0]}: unknown field")
    return dims


def as_schedule(schedule, *, accept=()):
    """``schedule`` itself if it is a :class:`Schedule`; a schedule file's path loaded.

    The functions that take a schedule (verify, evaluate, simulate) accept either. A schedule
    of another form (:class:`~topocoll.schedule.symmetric.SymmetricSchedule`,
    :class:`~topocoll.schedule.compact.CompactSchedule`, or a file holding one) is returned as
    it is if it is an instance of a class in ``accept`` (the forms the caller works on), else
    as its explicit form (under the memory guard).
    """
    if isinstance(schedule, (str, os.PathLike)):
        schedule = load_schedule(schedule)
    if isinstance(schedule, (Schedule, *accept)):
        return schedule
    if isinstance(schedule, TransferRows):
        return schedule.explicit()
    raise InputTypeError(f"expected a Schedule or a schedule file's path, got "
                         f"{type(schedule).__name__}")
