"""Training profiles from files: ASTRA-sim's text workloads and a plain JSON form.

ASTRA-sim 1.0 text workload (data-parallel ``DATA`` only)
    Line 1: the parallelism type, ``DATA`` (anything after the first word is ignored). Line 2:
    the number of layers. Then one line per layer, in forward order, of 12 whitespace-separated
    fields::

        name reserved fwd_compute fwd_comm_type fwd_comm_size ig_compute ig_comm_type
        ig_comm_size wg_compute wg_comm_type wg_comm_size update_time

    Compute times are in cycles, communication sizes in bytes (ASTRA-sim's units). The
    forward and input-gradient communication must be ``NONE`` (data parallelism sends no
    activations); the weight-gradient communication is ``ALLREDUCE`` (or ``NONE`` with any
    size: no gradient). A cycle lasts ``cycle_time`` seconds (default
    :data:`topocoll.defaults.CYCLE_TIME`, 1 ns, a 1 GHz clock). Timeline, as ASTRA-sim's
    data-parallel loop runs it: the forward pass computes every layer in order; then, from the
    last layer to the first, the weight gradient is computed (the layer's gradient is ready at
    its end) and then the input gradient. ``update_time`` (the optimizer step after the
    allreduce) is not part of the overlap and is ignored.

JSON profile
    ``{"name": "mymodel", "compute_time": 0.012, "forward_time": 0.004, "layers": [{"name":
    "fc", "bytes": 8196000, "ready": 0.0042}, ...]}``: ``bytes`` a number or a size string
    (``"7.8MiB"``), ``ready`` seconds or a time string (``"4.2ms"``), in any order (sorted by
    ready time). ``compute_time`` (default: the last ready time), ``forward_time`` and
    ``name`` (default: the file's name) are optional.

Malformed files raise :class:`~topocoll.errors.ScheduleFormatError` naming the file and, for
the text format, the line.

>>> text = '''DATA
... 2
... conv -1 100 NONE 0 50 NONE 0 50 NONE 0 10
... fc   -1 200 NONE 0 80 NONE 0 120 ALLREDUCE 4096 10
... '''
>>> p = parse_astra(text, cycle_time=1e-6)
>>> [(x.name, x.bytes, round(x.ready * 1e6)) for x in p.layers]
[('fc', 4096.0, 420)]
>>> round(p.compute_time * 1e6)
600
"""

import os

from .. import defaults
from ..errors import InputTypeError, ScheduleFormatError, UnsupportedError
from ..fileio import parse_json, read_text
from .training import Profile, ProfileLayer

__all__ = ["load_profile", "parse_astra", "profile_from_document", "COMM_TYPES"]

#: Communication types of ASTRA-sim's text workloads.
COMM_TYPES = ("NONE", "ALLREDUCE", "ALLGATHER", "ALLTOALL", "REDUCESCATTER")


def _fail(where, text):
    raise ScheduleFormatError(f"{where}: {text}")


def _cycles(field, where, what):
    try:
        value = float(field)
    except ValueError:
        _fail(where, f"{what} {field!r} is not a number of cycles")
    if not (value >= 0 and value != float("inf")):
        _fail(where, f"{what} must be a non-negative number of cycles, got {field!r}")
    return value


def parse_astra(text, *, cycle_time=None, name="astra-sim workload", source="<text>"):
    """A :class:`~topocoll.studies.training.Profile` from the text of an ASTRA-sim ``DATA``
    workload (see the module docstring); ``source`` names it in errors."""
    cycle = defaults.CYCLE_TIME if cycle_time is None else cycle_time
    if isinstance(cycle, bool) or not isinstance(cycle, (int, float)) or not 0 < cycle < 1:
        raise UnsupportedError(f"cycle time must be a positive number of seconds below 1, got "
                               f"{cycle_time!r}")
    lines = [(i, line.split()) for i, line in enumerate(text.splitlines(), 1) if line.strip()]
    if not lines:
        _fail(source, "empty workload file")
    number, fields = lines[0]
    if fields[0] != "DATA":
        _fail(f"{source}: line {number}", f"parallelism {fields[0]!r} is not supported; only "
              "DATA (data-parallel) workloads")
    if len(lines) < 2:
        _fail(f"{source}: line {number}", "missing the number of layers on the next line")
    number, fields = lines[1]
    if len(fields) != 1 or not fields[0].isdigit() or int(fields[0]) < 1:
        _fail(f"{source}: line {number}", f"expected the number of layers (a whole number >= 1), "
              f"got {' '.join(fields)!r}")
    count = int(fields[0])
    rows = lines[2:]
    if len(rows) != count:
        where = f"{source}: line {rows[count][0]}" if len(rows) > count else source
        _fail(where, f"the file declares {count} layers but has {len(rows)} layer lines")
    parsed = []
    for number, fields in rows:
        where = f"{source}: line {number}"
        if len(fields) != 12:
            _fail(where, f"expected 12 fields (name, reserved, then compute time, comm type and "
                  f"comm size for forward, input gradient and weight gradient, then update "
                  f"time), got {len(fields)}")
        lname = fields[0]
        fwd = _cycles(fields[2], where, "forward compute time")
        ig = _cycles(fields[5], where, "input-gradient compute time")
        wg = _cycles(fields[8], where, "weight-gradient compute time")
        _cycles(fields[11], where, "update time")
        for kind, size, what in ((fields[3], fields[4], "forward-pass"),
                                 (fields[6], fields[7], "input-gradient"),
                                 (fields[9], fields[10], "weight-gradient")):
            if kind not in COMM_TYPES:
                _fail(where, f"unknown {what} communication type {kind!r}; expected one of "
                      f"{', '.join(COMM_TYPES)}")
            _cycles(size, where, f"{what} communication size (bytes)")
        if fields[3] != "NONE" or fields[6] != "NONE":
            _fail(where, "a DATA workload communicates weight gradients only; forward-pass and "
                  "input-gradient communication must be NONE")
        if fields[9] not in ("ALLREDUCE", "NONE"):
            _fail(where, f"weight-gradient communication must be ALLREDUCE (or NONE), got "
                  f"{fields[9]!r}")
        size = float(fields[10]) if fields[9] == "ALLREDUCE" else 0.0
        parsed.append((lname, fwd, ig, wg, size))
    forward = sum(p[1] for p in parsed) * cycle
    t = forward
    layers = []
    for lname, _, ig, wg, size in reversed(parsed):
        t += wg * cycle
        if size > 0:
            layers.append(ProfileLayer(lname, size, t))
        t += ig * cycle
    if not layers:
        _fail(source, "no layer allreduces a weight gradient (every size is 0 or NONE)")
    return Profile(name, tuple(layers), t, forward,
                   f"ASTRA-sim DATA workload {name}: {count} layers, cycles of {cycle:g} s")


def profile_from_document(doc, *, name="profile"):
    """A profile from a JSON document ``{"name", "compute_time", "forward_time", "layers":
    [{"name", "bytes", "ready"}, ...]}`` (see the module docstring).

    >>> p = profile_from_document({"layers": [{"name": "a", "bytes": "1KiB", "ready": "2ms"}]})
    >>> p.layers[0].bytes, p.compute_time
    (1024.0, 0.002)
    """
    if not isinstance(doc, dict):
        raise UnsupportedError("a JSON profile is an object with a 'layers' list")
    layers = doc.get("layers")
    if not isinstance(layers, list) or not layers:
        raise UnsupportedError("a JSON profile needs a non-empty 'layers' list")
    items = []
    for i, layer in enumerate(layers):
        if not isinstance(layer, dict):
            raise UnsupportedError(f"layer {i}: expected an object with bytes and ready, got "
                                   f"{layer!r}")
        for key in ("bytes", "ready"):
            if key not in layer:
                raise UnsupportedError(f"layer {i}: missing {key!r}")
        items.append((layer.get("name", f"layer{i}"), layer["bytes"], layer["ready"]))
    return Profile.from_layers(str(doc.get("name", name)), items,
                               compute_time=doc.get("compute_time"),
                               forward_time=doc.get("forward_time", 0.0),
                               description=f"JSON profile {doc.get('name', name)}")


def load_profile(path, *, cycle_time=None):
    """Read a profile file: JSON (it starts with ``{``) or an ASTRA-sim text workload. ``path``
    may be ``-`` (standard input) or gzip-compressed.

    Raises
    ------
    ScheduleFormatError
        Naming the file (and the line, for ASTRA-sim text) when the content is malformed; its
        subclass :class:`~topocoll.errors.FileAccessError` when the file cannot be read.
    """
    path = os.fspath(path)
    text = read_text(path, what="profile file")
    base = os.path.basename(path)
    name = base.split(".")[0] or base or "profile"
    if text.lstrip().startswith("{"):
        doc = parse_json(text, what=path)
        try:
            return profile_from_document(doc, name=name)
        except (UnsupportedError, InputTypeError) as exc:
            raise ScheduleFormatError(f"{path}: {exc}") from None
    return parse_astra(text, cycle_time=cycle_time, name=name, source=path)
