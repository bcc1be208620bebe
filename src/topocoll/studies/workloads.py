"""Training workloads layer by layer: compute per phase and the collectives each phase sends.

A :class:`TrainingWorkload` lists a model's layers in forward order. Each
:class:`WorkloadLayer` has three compute times (seconds) -- the forward pass, the input
gradient and the weight gradient -- and up to three collectives, one after each phase, as in
ASTRA-sim's text workloads: the forward-pass and input-gradient collectives of model
parallelism (all-gather, reduce-scatter, all-to-all, allreduce) and the weight-gradient
collective of data parallelism (normally the allreduce of the layer's gradient). ``loop`` is
the training loop that runs them (:data:`LOOPS`; see :mod:`topocoll.studies.loop`).

Where the numbers come from is :attr:`TrainingWorkload.compute_model`: ``"flops"`` (the
built-in models' FLOPs count at a fraction of a GPU's peak), ``"measured"`` (a profile measured
with torch, :mod:`topocoll.studies.layer_timing`), ``"astra-sim"`` (an ASTRA-sim workload file,
cycles), or ``"file"`` (a JSON profile a user wrote).

Three file formats (:func:`load_training_workload`):

ASTRA-sim 1.0 text workload
    Read as ASTRA-sim's ``Workload::initialize_workload`` reads it. Line 1: the parallelism
    (``DATA``, ``HYBRID_TRANSFORMER``, ``HYBRID_DATA_MODEL``, ``HYBRID_MODEL_DATA``,
    ``HYBRID_CUSTOMIZED``, ``MODEL``), then ``key: value`` pairs ASTRA-sim reads from that line
    (``model_parallel_NPU_group: 8``; kept in :attr:`TrainingWorkload.header`). Line 2: the
    number of layers. Then one layer per line, 12 whitespace-separated fields::

        name reserved fwd_compute fwd_comm_type fwd_comm_size ig_compute ig_comm_type
        ig_comm_size wg_compute wg_comm_type wg_comm_size update_time

    and a 13th for ``HYBRID_CUSTOMIZED``: the layer's own parallelism. Compute and update
    times are cycles, sizes bytes. Communication types: ``NONE``, ``ALLREDUCE``, ``ALLGATHER``,
    ``REDUCESCATTER``, ``ALLTOALL``.
JSON layer profile
    ``{"format": "topocoll-training-profile", "name": .., "layers": [{"name", "forward",
    "input_grad", "weight_grad", "bytes"}, ...]}`` in forward order (times in seconds or time
    strings, ``bytes`` the gradient: one allreduce); optional per layer ``"forward_comm"``,
    ``"input_grad_comm"``, ``"weight_grad_comm"`` (``{"type": "allgather", "bytes": ..}``,
    replacing the gradient allreduce for the last) and ``"update"``; optional top level
    ``"loop"`` (``"data"``, default), ``"batch"``, ``"compute_model"`` and ``"source"`` (how it
    was measured). docs/training.md has an example.
JSON ready-time profile
    The older form, ``{"layers": [{"name", "bytes", "ready"}, ...], "compute_time",
    "forward_time"}``: see :func:`from_profile`.

>>> w = parse_astra_workload('''DATA
... 2
... conv -1 100 NONE 0 50 NONE 0 50 NONE 0 10
... fc   -1 200 NONE 0 80 NONE 0 120 ALLREDUCE 4096 10
... ''', cycle_time=1e-6)
>>> [(x.name, round(x.forward * 1e6), x.weight_grad_comm) for x in w.layers]
[('conv', 100, None), ('fc', 200, ('allreduce', 4096.0))]
>>> w.loop, round(w.compute_time * 1e6)     # layer 0's input gradient is not computed
('data', 550)
"""

import math
import os
from dataclasses import dataclass, field

from .. import defaults
from ..errors import InputTypeError, ScheduleFormatError, UnsupportedError
from ..fileio import parse_json, read_text
from ..units import format_size, format_time, real_number
from .gradient_profile import Profile, ProfileLayer, check_bytes, check_seconds

__all__ = ["WorkloadLayer", "TrainingWorkload", "parse_astra_workload", "workload_from_document",
           "profile_from_document",
           "load_training_workload", "workload_from_text", "from_profile", "describe", "LOOPS",
           "COLLECTIVES", "ASTRA_TYPES", "ASTRA_PARALLELISM", "PROFILE_FORMAT", "PHASES"]

#: Training loops: ``"data"`` (ASTRA-sim's DATA loop: weight gradients only, layer 0's input
#: gradient skipped), ``"transformer"`` (HYBRID_TRANSFORMER: forward and input-gradient
#: collectives block), ``"hybrid"`` (HYBRID_DATA_MODEL, HYBRID_MODEL_DATA, HYBRID_CUSTOMIZED,
#: MODEL: the forward collective blocks, the input-gradient one is waited for after the weight
#: gradient and layer 0 sends none).
LOOPS = ("data", "transformer", "hybrid")

#: Collectives a layer may send (our names).
COLLECTIVES = ("allreduce", "allgather", "reducescatter", "alltoall")

#: ASTRA-sim's communication types -> ours (``NONE`` -> no collective).
ASTRA_TYPES = {"NONE": None, "ALLREDUCE": "allreduce", "ALLGATHER": "allgather",
               "REDUCESCATTER": "reducescatter", "ALLTOALL": "alltoall"}

#: ASTRA-sim's parallelism words -> our loop.
ASTRA_PARALLELISM = {"DATA": "data", "HYBRID_TRANSFORMER": "transformer",
                     "HYBRID_DATA_MODEL": "hybrid", "HYBRID_MODEL_DATA": "hybrid",
                     "HYBRID_CUSTOMIZED": "hybrid", "MODEL": "hybrid"}

#: ASTRA-sim loops we do not run, with why.
_NOT_RUN = {"HYBRID_DLRM": "DLRM's loop (an all-to-all of layer 0 waited for at the last "
                           "bottom layer)",
            "HYBRID_DLRM_ENHANCED": "DLRM's loop",
            "HYBRID_TRANSFORMER_FWD_IN_BCKWD": "activation checkpointing (forward passes "
                                               "recomputed inside the backward)",
            "MICRO": "a micro-benchmark, not a training loop",
            "DISTRIBUTED_INFERENCE": "inference, not training"}

#: The ``format`` value of a JSON layer profile.
PROFILE_FORMAT = "topocoll-training-profile"

#: The three phases of a layer, in the names the JSON profile uses.
PHASES = ("forward", "input_grad", "weight_grad")


@dataclass(frozen=True)
class WorkloadLayer:
    """One layer: compute seconds per phase, the collective ``(type, bytes)`` (or None) sent
    after each phase, and ``update``, the seconds after its weight-gradient collective before
    its next forward may start (ASTRA-sim's update time: the optimizer step)."""

    name: str
    forward: float
    input_grad: float
    weight_grad: float
    forward_comm: tuple | None = None
    input_grad_comm: tuple | None = None
    weight_grad_comm: tuple | None = None
    update: float = 0.0

    @property
    def gradient_bytes(self):
        """Bytes of the weight-gradient collective (0 without one)."""
        return self.weight_grad_comm[1] if self.weight_grad_comm else 0.0

    def to_dict(self):
        doc = {"name": self.name, "forward": self.forward, "input_grad": self.input_grad,
               "weight_grad": self.weight_grad, "bytes": self.gradient_bytes}
        for phase in PHASES:
            comm = getattr(self, f"{phase}_comm")
            if comm is not None and not (phase == "weight_grad" and comm[0] == "allreduce"):
                doc[f"{phase}_comm"] = {"type": comm[0], "bytes": comm[1]}
        if self.update:
            doc["update"] = self.update
        return doc


@dataclass(frozen=True)
class TrainingWorkload:
    """A model's layers in forward order and the loop that trains it.

    Attributes
    ----------
    name : str
    layers : tuple of WorkloadLayer
    loop : str
        One of :data:`LOOPS`.
    compute_model : str
        ``"flops"``, ``"measured"``, ``"astra-sim"`` or ``"file"``.
    description : str
        One line: where the numbers come from.
    parallelism : str
        ASTRA-sim's word for the loop (``"DATA"``, ``"HYBRID_TRANSFORMER"``, ...).
    header : dict
        ``key: value`` pairs of an ASTRA-sim header line (``model_parallel_NPU_group``).
    source : dict
        How a measured profile was measured (machine, torch version, batch, repeats).
    """

    name: str
    layers: tuple
    loop: str = "data"
    compute_model: str = "file"
    description: str = ""
    parallelism: str = "DATA"
    header: dict = field(default_factory=dict)
    source: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.loop not in LOOPS:
            raise UnsupportedError(f"unknown training loop {self.loop!r}; use one of "
                                   f"{', '.join(LOOPS)}")
        if not self.layers:
            raise UnsupportedError(f"workload {self.name!r} has no layers")
        if not any(self.collectives_of(x) for x in self.layers):
            raise UnsupportedError(f"workload {self.name!r} sends no collective (every "
                                   "communication is NONE or of 0 bytes)")

    def collectives_of(self, layer):
        """The ``(phase, type, bytes)`` the loop actually sends for ``layer`` (the DATA loop
        sends weight gradients only, as ASTRA-sim's does)."""
        phases = ("weight_grad",) if self.loop == "data" else PHASES
        return [(p, *getattr(layer, f"{p}_comm")) for p in phases
                if getattr(layer, f"{p}_comm") is not None]

    @property
    def compute_time(self):
        """Compute of one iteration: every phase of every layer but layer 0's input gradient
        in the DATA loop (ASTRA-sim's rule: nothing needs the gradient of the input data)."""
        total = sum(x.forward + x.input_grad + x.weight_grad for x in self.layers)
        return total - (self.layers[0].input_grad if self.loop == "data" else 0.0)

    @property
    def forward_time(self):
        return sum(x.forward for x in self.layers)

    @property
    def gradient_bytes(self):
        """Bytes of every weight-gradient collective of one iteration."""
        return float(sum(x.gradient_bytes for x in self.layers))

    def collective_types(self):
        """The collective types the loop sends, sorted."""
        return sorted({c[1] for x in self.layers for c in self.collectives_of(x)})

    def to_document(self):
        """The JSON layer profile of this workload (:data:`PROFILE_FORMAT`)."""
        return {"format": PROFILE_FORMAT, "name": self.name, "loop": self.loop,
                "compute_model": self.compute_model, "description": self.description,
                "source": dict(self.source), "layers": [x.to_dict() for x in self.layers]}

    def summary(self):
        return {"name": self.name, "loop": self.loop, "parallelism": self.parallelism,
                "compute_model": self.compute_model, "description": self.description,
                "layers": len(self.layers), "compute_time": self.compute_time,
                "forward_time": self.forward_time, "gradient_bytes": self.gradient_bytes,
                "collective_types": self.collective_types(), "header": dict(self.header),
                "source": dict(self.source)}

    def to_profile(self):
        """The gradient allreduces' ready times under the DATA loop, as a
        :class:`~topocoll.studies.gradient_profile.Profile` (what ``find --workload`` sizes
        from)."""
        if not any(x.weight_grad_comm and x.weight_grad_comm[0] == "allreduce"
                   for x in self.layers):
            raise UnsupportedError(f"{self.name}: no layer allreduces a weight gradient")
        t = self.forward_time
        ready = []
        for i in range(len(self.layers) - 1, -1, -1):
            layer = self.layers[i]
            t += layer.weight_grad
            comm = layer.weight_grad_comm
            if comm is not None and comm[0] == "allreduce":
                ready.append(ProfileLayer(layer.name, comm[1], t))
            if i > 0:
                t += layer.input_grad
        return Profile(self.name, tuple(ready), t, self.forward_time, self.description)


# ---------------------------------------------------------------------- ASTRA-sim text
def _fail(where, text):
    raise ScheduleFormatError(f"{where}: {text}")


def _count(field_, where, what):
    try:
        value = float(field_)
    except ValueError:
        _fail(where, f"{what} {field_!r} is not a number")
    if not (value >= 0 and math.isfinite(value)):
        _fail(where, f"{what} must be a non-negative number, got {field_!r}")
    return value


def _astra_header(fields, where):
    word = fields[0]
    if word in _NOT_RUN:
        _fail(where, f"parallelism {word} ({_NOT_RUN[word]}) is not run by train-sim; it runs "
              f"{', '.join(ASTRA_PARALLELISM)}")
    if word not in ASTRA_PARALLELISM:
        _fail(where, f"unknown parallelism {word!r}; ASTRA-sim's training loops train-sim runs: "
              f"{', '.join(ASTRA_PARALLELISM)}")
    header = {}
    rest = fields[1:]
    for i, token in enumerate(rest):
        if token.endswith(":") and i + 1 < len(rest):
            header[token[:-1]] = rest[i + 1]
    return word, header


def _astra_layer(fields, where, cycle, customized):
    want = 13 if customized else 12
    if len(fields) != want:
        _fail(where, f"expected {want} fields (name, reserved, then compute time, comm type and "
              f"comm size for forward, input gradient and weight gradient, then update time"
              f"{', then the layer parallelism' if customized else ''}), got {len(fields)}")
    try:
        int(fields[1])
    except ValueError:
        _fail(where, f"the reserved field (2nd) must be a whole number (ASTRA-sim reads an int; "
              f"-1 in its examples), got {fields[1]!r}")
    if customized and fields[12] not in ASTRA_PARALLELISM:
        _fail(where, f"layer parallelism {fields[12]!r} is not one of "
              f"{', '.join(ASTRA_PARALLELISM)}")
    comms = []
    for kind, size, what in ((fields[3], fields[4], "forward-pass"),
                             (fields[6], fields[7], "input-gradient"),
                             (fields[9], fields[10], "weight-gradient")):
        if kind not in ASTRA_TYPES:
            _fail(where, f"unknown {what} communication type {kind!r}; expected one of "
                  f"{', '.join(ASTRA_TYPES)}")
        nbytes = _count(size, where, f"{what} communication size (bytes)")
        comms.append((ASTRA_TYPES[kind], nbytes) if ASTRA_TYPES[kind] and nbytes > 0 else None)
    times = [_count(fields[k], where, what) * cycle for k, what in
             ((2, "forward compute time"), (5, "input-gradient compute time"),
              (8, "weight-gradient compute time"), (11, "update time"))]
    return WorkloadLayer(fields[0], times[0], times[1], times[2], *comms, update=times[3])


def parse_astra_workload(text, *, cycle_time=None, name="astra-sim workload", source="<text>"):
    """A :class:`TrainingWorkload` from the text of an ASTRA-sim 1.0 workload (see the module
    docstring); ``source`` names it in errors (with the line)."""
    cycle = defaults.CYCLE_TIME if cycle_time is None else cycle_time
    real_number(cycle, "cycle time (seconds)", above=0, below=1)
    lines = [(i, line.split()) for i, line in enumerate(text.splitlines(), 1) if line.strip()]
    if not lines:
        _fail(source, "empty workload file")
    word, header = _astra_header(lines[0][1], f"{source}: line {lines[0][0]}")
    if len(lines) < 2:
        _fail(f"{source}: line {lines[0][0]}", "missing the number of layers on the next line")
    number, fields = lines[1]
    if len(fields) != 1 or not fields[0].isdigit() or int(fields[0]) < 1:
        _fail(f"{source}: line {number}", f"expected the number of layers (a whole number >= 1), "
              f"got {' '.join(fields)!r}")
    count = int(fields[0])
    rows = lines[2:]
    if len(rows) != count:
        where = f"{source}: line {rows[count][0]}" if len(rows) > count else source
        _fail(where, f"the file declares {count} layers but has {len(rows)} layer lines")
    layers = tuple(_astra_layer(f, f"{source}: line {n}", cycle, word == "HYBRID_CUSTOMIZED")
                   for n, f in rows)
    loop = ASTRA_PARALLELISM[word]
    extra = "".join(f", {k} {v}" for k, v in header.items())
    try:
        return TrainingWorkload(name, layers, loop, "astra-sim",
                                f"ASTRA-sim {word} workload {name}: {count} layers, cycles of "
                                f"{cycle:g} s{extra}", word, header)
    except UnsupportedError as exc:
        _fail(source, str(exc))


# ---------------------------------------------------------------------- JSON
def _comm(value, what):
    if value is None:
        return None
    if not isinstance(value, dict) or set(value) - {"type", "bytes"} or "type" not in value:
        raise UnsupportedError(f"{what} must be an object {{\"type\": .., \"bytes\": ..}}, got "
                               f"{value!r}")
    kind = value["type"]
    if kind not in COLLECTIVES:
        raise UnsupportedError(f"{what} type {kind!r} is not one of {', '.join(COLLECTIVES)}")
    nbytes = check_bytes(value.get("bytes", 0), f"{what} bytes")
    return (kind, nbytes) if nbytes > 0 else None


_LAYER_KEYS = {"name", "bytes", *PHASES, *(f"{p}_comm" for p in PHASES), "update"}


def _json_layer(i, doc):
    where = f"layer {i}"
    if not isinstance(doc, dict):
        raise UnsupportedError(f"{where}: expected an object, got {doc!r}")
    unknown = sorted(set(doc) - _LAYER_KEYS)
    if unknown:
        raise UnsupportedError(f"{where}: unknown key {unknown[0]!r}; a layer has "
                               f"{', '.join(sorted(_LAYER_KEYS))}")
    missing = [k for k in PHASES if k not in doc]
    if missing:
        raise UnsupportedError(f"{where}: missing {missing[0]!r} (seconds); a layer has "
                               "forward, input_grad and weight_grad times (a layer profile) "
                               "or a ready time (a ready-time profile)")
    times = [check_seconds(doc[k], f"{where} {k}") for k in PHASES]
    grad = _comm(doc.get("weight_grad_comm"), f"{where} weight_grad_comm")
    if "weight_grad_comm" in doc and "bytes" in doc:
        raise UnsupportedError(f"{where}: give 'bytes' (the gradient allreduce) or "
                               "'weight_grad_comm', not both")
    if "bytes" in doc:
        size = check_bytes(doc["bytes"], f"{where} bytes")
        grad = ("allreduce", size) if size > 0 else None
    return WorkloadLayer(str(doc.get("name", f"layer{i}")), *times,
                         _comm(doc.get("forward_comm"), f"{where} forward_comm"),
                         _comm(doc.get("input_grad_comm"), f"{where} input_grad_comm"), grad,
                         check_seconds(doc.get("update", 0.0), f"{where} update"))


def profile_from_document(doc, *, name="profile"):
    """A profile from a JSON document ``{"name", "compute_time", "forward_time", "layers":
    [{"name", "bytes", "ready"}, ...]}`` (see :mod:`topocoll.studies.profiles`).

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


def workload_from_document(doc, *, name="profile"):
    """A workload from a JSON document: a layer profile (layers with ``forward``) or the older
    ready-time profile (layers with ``ready``); see the module docstring.

    >>> w = workload_from_document({"layers": [
    ...     {"name": "a", "forward": "1ms", "input_grad": "1ms", "weight_grad": "2ms",
    ...      "bytes": "1KiB"}]})
    >>> w.layers[0].weight_grad_comm, w.compute_time
    (('allreduce', 1024.0), 0.003)
    """
    if not isinstance(doc, dict):
        raise UnsupportedError("a JSON profile is an object with a 'layers' list")
    layers = doc.get("layers")
    if not isinstance(layers, list) or not layers:
        raise UnsupportedError("a JSON profile needs a non-empty 'layers' list")
    if "format" in doc and doc["format"] != PROFILE_FORMAT:
        raise UnsupportedError(f"'format' is {doc['format']!r}; this reader knows "
                               f"{PROFILE_FORMAT!r}")
    title = str(doc.get("name", name))
    if any(isinstance(x, dict) and "ready" in x for x in layers):
        return from_profile(profile_from_document(doc, name=name))
    loop = doc.get("loop", "data")
    if loop not in LOOPS:
        raise UnsupportedError(f"'loop' must be one of {', '.join(LOOPS)}, got {loop!r}")
    model = doc.get("compute_model", "file")
    source = doc.get("source", {})
    if not isinstance(source, dict):
        raise UnsupportedError("'source' must be an object (how the profile was measured)")
    parsed = tuple(_json_layer(i, x) for i, x in enumerate(layers))
    text = doc.get("description") or f"JSON layer profile {title}: {len(parsed)} layers"
    return TrainingWorkload(title, parsed, loop, str(model), str(text),
                            "DATA" if loop == "data" else "HYBRID", {}, dict(source))


def from_profile(profile):
    """A DATA workload from a ready-time :class:`~topocoll.studies.gradient_profile.Profile`: each
    gradient is one layer whose weight-gradient compute runs from the previous ready time to
    its own (input gradients folded in, 0), and the forward time is shared among the layers in
    proportion to their backward time (the profile does not say more)."""
    prev = profile.forward_time
    rows = []
    for layer in profile.layers:
        rows.append((layer.name, layer.ready - prev, layer.bytes))
        prev = layer.ready
    tail = profile.compute_time - prev          # compute after the last gradient is ready
    rows = list(reversed(rows))                 # forward order
    backward = sum(r[1] for r in rows)
    share = [(r[1] / backward if backward > 0 else 1.0 / len(rows)) for r in rows]
    layers = [WorkloadLayer(n, profile.forward_time * s, 0.0, wg, None, None,
                            ("allreduce", b)) for (n, wg, b), s in zip(rows, share)]
    if tail > 0:
        layers.insert(0, WorkloadLayer("(compute after the last gradient)", 0.0, 0.0, tail))
    return TrainingWorkload(profile.name, tuple(layers), "data", "file",
                            profile.description or f"ready-time profile {profile.name}")


def load_training_workload(path, *, cycle_time=None):
    """Read a workload file: JSON (it starts with ``{``) or an ASTRA-sim text workload.
    ``path`` may be ``-`` (standard input) or gzip-compressed.

    Raises
    ------
    ScheduleFormatError
        Naming the file (and the line, for ASTRA-sim text) when the content is malformed.
    """
    path = os.fspath(path)
    return workload_from_text(read_text(path, what="profile file"), path=path,
                              cycle_time=cycle_time)


def workload_from_text(text, *, path, cycle_time=None):
    """:func:`load_training_workload` on text already read from ``path``."""
    base = os.path.basename(path)
    name = base.split(".")[0] or base or "profile"
    if text.lstrip().startswith("["):
        parse_json(text, what=path)     # malformed JSON says so first
        raise ScheduleFormatError(
            f"{path}: a profile file is a JSON object with \"layers\" or an ASTRA-sim "
            f"workload, not a JSON list (a list of layer sizes is a --size-file)")
    if text.lstrip().startswith("{"):
        doc = parse_json(text, what=path)
        try:
            return workload_from_document(doc, name=name)
        except (UnsupportedError, InputTypeError) as exc:
            raise ScheduleFormatError(f"{path}: {exc}") from None
    return parse_astra_workload(text, cycle_time=cycle_time, name=name, source=path)


def describe(workload):
    """One line: layers, compute, gradients and the collectives the loop sends."""
    return (f"{workload.name}: {len(workload.layers)} layers, {workload.loop} loop, compute "
            f"{format_time(workload.compute_time)} per iteration ({workload.compute_model}), "
            f"{format_size(workload.gradient_bytes)} of gradients; collectives: "
            f"{', '.join(workload.collective_types())}")
