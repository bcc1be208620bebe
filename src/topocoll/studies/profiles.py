"""Ready-time profiles (gradient sizes and ready times) from files, for ``find --workload``.

The files are read by :mod:`topocoll.studies.workloads` (ASTRA-sim text workloads, JSON layer
profiles, and the JSON ready-time form below); :func:`load_profile` keeps their gradient
allreduces and the time each becomes ready in ASTRA-sim's DATA loop: the forward pass computes
every layer in order; then, from the last layer to the first, the weight gradient is computed
(the layer's gradient is ready at its end) and then the input gradient, except layer 0's.

JSON ready-time profile
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
>>> round(p.compute_time * 1e6)     # conv's input gradient (layer 0) is not computed
550
"""

import os

from ..errors import ScheduleFormatError, UnsupportedError
from ..fileio import parse_json, read_text
from .workloads import parse_astra_workload, profile_from_document, workload_from_text

__all__ = ["load_profile", "parse_astra", "profile_from_document", "COMM_TYPES"]

#: Communication types of ASTRA-sim's text workloads.
COMM_TYPES = ("NONE", "ALLREDUCE", "ALLGATHER", "ALLTOALL", "REDUCESCATTER")


def parse_astra(text, *, cycle_time=None, name="astra-sim workload", source="<text>"):
    """The gradient allreduces of an ASTRA-sim workload as a
    :class:`~topocoll.studies.gradient_profile.Profile` (ready times under the DATA loop; see
    :func:`topocoll.studies.workloads.parse_astra_workload`, which reads the whole file)."""
    workload = parse_astra_workload(text, cycle_time=cycle_time, name=name, source=source)
    try:
        return workload.to_profile()
    except UnsupportedError as exc:
        raise ScheduleFormatError(f"{source}: {exc}") from None


def load_profile(path, *, cycle_time=None):
    """Read a profile file: JSON (it starts with ``{``) or an ASTRA-sim text workload. ``path``
    may be ``-`` (standard input) or gzip-compressed.

    Raises
    ------
    ScheduleFormatError
        Naming the file (and the line, for ASTRA-sim text) when the content is malformed; its
        subclass :class:`~topocoll.errors.FileAccessError` when the file cannot be read.
    """
    text = read_text(os.fspath(path), what="profile file")
    if text.lstrip().startswith("{"):
        doc = parse_json(text, what=os.fspath(path))
        if isinstance(doc, dict) and isinstance(doc.get("layers"), list) and any(
                isinstance(x, dict) and "ready" in x for x in doc["layers"]):
            try:            # a ready-time profile as written
                base = os.path.basename(os.fspath(path))
                return profile_from_document(doc, name=base.split(".")[0] or "profile")
            except (UnsupportedError, TypeError) as exc:
                raise ScheduleFormatError(f"{os.fspath(path)}: {exc}") from None
    workload = workload_from_text(text, path=os.fspath(path), cycle_time=cycle_time)
    try:
        return workload.to_profile()
    except UnsupportedError as exc:
        raise ScheduleFormatError(f"{os.fspath(path)}: {exc}") from None
