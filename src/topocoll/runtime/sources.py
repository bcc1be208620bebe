"""What the runtime runs: a :class:`~topocoll.schedule.model.Schedule`, a topocoll schedule file
or an MSCCL XML program, the two told apart by their content.

A file whose first non-blank byte (after gunzipping, whatever its name) is ``{`` is a topocoll
schedule file; one whose first is ``<`` is MSCCL XML. An MSCCL program (written by msccl-tools,
TACCL, ForestColl, the MSCCL scheduler or ``topocoll export``) goes through the importer
(:func:`~topocoll.interop.import_msccl`) and its lint: only a program the MSCCL runtime would
accept and that performs its collective correctly becomes a schedule, the transfers it performs
step by step between the same ranks.

>>> import os, tempfile
>>> from topocoll.interop import export_msccl, write_msccl
>>> from topocoll.synth import generate
>>> path = os.path.join(tempfile.mkdtemp(), "ring4.xml")
>>> write_msccl(export_msccl(generate("ring:4", "allreduce"), name="ring4"), path)
>>> s = load_runnable(path)
>>> s.collective.name, s.num_nodes, s.algorithm
('allreduce', 4, 'msccl:ring4')
"""

import os

from ..errors import InputTypeError, InvalidScheduleError, ScheduleFormatError, UnsupportedError
from ..fileio import read_input
from ..schedule.io import loads_schedule
from ..schedule.model import Schedule, TransferRows

__all__ = ["load_runnable", "loads_runnable", "read_runnable", "runnable_format", "MSCCL_XML",
           "SCHEDULE_FILE"]

#: What :func:`runnable_format` calls an MSCCL XML program.
MSCCL_XML = "msccl-xml"
#: What :func:`runnable_format` calls a topocoll schedule file.
SCHEDULE_FILE = "topocoll.schedule"

_FIRST = {b"<": MSCCL_XML, b"{": SCHEDULE_FILE}
_WHAT = "schedule file (JSON) or MSCCL XML program"


def read_runnable(path):
    """The content of a schedule file or MSCCL XML file (``-``: standard input), gunzipped.

    Raises :class:`~topocoll.errors.ScheduleFormatError` when its first non-blank byte is
    neither ``{`` nor ``<`` (see :func:`~topocoll.fileio.read_input`).
    """
    return read_input(path, starts=b"".join(_FIRST), what=_WHAT)


def runnable_format(data):
    """:data:`MSCCL_XML` or :data:`SCHEDULE_FILE`: what the file content ``data`` (bytes or
    str, uncompressed) is, by its first non-blank character.

    >>> runnable_format(b'  <algo name="x">'), runnable_format('{"format": ...}')
    ('msccl-xml', 'topocoll.schedule')
    """
    data = data.encode() if isinstance(data, str) else bytes(data)
    head = data.lstrip(b" \t\r\n")[:1]
    if head not in _FIRST:
        found = f"it starts with byte {head!r}" if head else "it is empty"
        raise ScheduleFormatError(f"not a {_WHAT} ({found})")
    return _FIRST[head]


def loads_runnable(data, *, source="<input>", topology=None):
    """The schedule that file content ``data`` (bytes or str, uncompressed) describes.

    Parameters
    ----------
    data : bytes or str
        A topocoll schedule file's text or an MSCCL XML program's.
    source : str
        Where ``data`` came from (a file name, ``<stdin>``): error messages begin with it.
    topology : Topology or str, optional
        The network (a Topology, spec or topology file) to place an MSCCL program on (default:
        the links the program uses). A schedule file carries its own.

    Returns
    -------
    Schedule

    Raises
    ------
    ScheduleFormatError
        ``data`` is neither a schedule file nor well-formed MSCCL XML, or breaks the format.
    InvalidScheduleError
        The lint rejects an MSCCL program: the MSCCL runtime would refuse it, it would hang or
        it is not a correct collective. The message names ``source`` and the first finding.
    UnsupportedError
        ``topology`` was given for a schedule file.
    """
    try:
        kind = runnable_format(data)
    except ScheduleFormatError as exc:
        raise ScheduleFormatError(f"{source}: {exc}") from None
    if kind == SCHEDULE_FILE:
        _no_topology(topology, source)
        schedule = loads_schedule(data, source=source)   # a symmetric file runs expanded
        return schedule.unfolded()
    from ..interop import import_msccl, parse_msccl

    if topology is not None:
        from ..topology import topology as _topology

        topology = _topology(topology)
    imported = import_msccl(parse_msccl(data, source=source), topology=topology)
    if not imported.lint.valid:
        raise InvalidScheduleError(_refusal(source, imported.lint), report=imported.lint)
    return imported.schedule


def load_runnable(source, *, topology=None):
    """The schedule ``source`` is: a :class:`~topocoll.schedule.model.Schedule` (returned as
    is), or the path of a topocoll schedule file or MSCCL XML file, gzip-compressed or not.

    The file is read once, and what it is is decided by its content (:func:`runnable_format`),
    not by its name: a schedule file is read as :func:`~topocoll.schedule.io.load_schedule`
    reads it; an MSCCL program is imported and linted (:func:`loads_runnable`).

    Parameters
    ----------
    source : Schedule, str or os.PathLike
        Not ``-``: to run standard input, read it and call :func:`loads_runnable`.
    topology : Topology or str, optional
        The network to place an MSCCL program on (default: the links it uses).

    Returns
    -------
    Schedule
        An imported program's is named ``msccl:NAME`` after its ``<algo name>``.

    Raises
    ------
    InvalidScheduleError
        An MSCCL program the runtime would refuse or that is not a correct collective.
    ScheduleFormatError
        A file that cannot be read (:class:`~topocoll.errors.FileAccessError`), or that is
        neither kind of file or breaks its format.
    UnsupportedError
        ``-``, or ``topology`` given with a schedule.
    InputTypeError
        ``source`` is not a Schedule or a path.

    Examples
    --------
    >>> load_runnable(42)
    Traceback (most recent call last):
    ...
    topocoll.errors.InputTypeError: expected a Schedule or the path of a schedule file or MSCCL XML file, got int
    """
    if isinstance(source, Schedule):
        _no_topology(topology, "a Schedule")
        return source
    if isinstance(source, TransferRows):   # another form: unfolded under the memory guard
        _no_topology(topology, "a Schedule")
        return source.unfolded()
    if not isinstance(source, (str, os.PathLike)):
        raise InputTypeError("expected a Schedule or the path of a schedule file or MSCCL XML "
                             f"file, got {type(source).__name__}")
    name = os.fspath(source)
    if isinstance(name, bytes):
        name = os.fsdecode(name)
    if name == "-":
        raise UnsupportedError("load_runnable reads files, not standard input ('-'): read it "
                               "and pass its bytes to loads_runnable")
    return loads_runnable(read_runnable(name), source=name, topology=topology)


def _no_topology(topology, source):
    if topology is not None:
        raise UnsupportedError(f"{source}: a schedule carries its own topology; topology= "
                               "places MSCCL XML programs only")


def _refusal(source, report):
    """One line: why the lint rejects the program at ``source``, by its first finding."""
    more = len(report.errors) + len(report.problems) - 1
    if report.errors:
        first = report.errors[0]
        line = (f"{source}: the MSCCL runtime would refuse it: [{first.rule}] line "
                f"{first.line}: <{first.element}>: {first.message}")
    else:
        problem = str(report.problems[0]).splitlines()[0] if report.problems else "unknown"
        line = f"{source}: not a correct {report.collective or 'collective'}: {problem}"
    if more > 0:
        line += f" (and {more} more finding(s): topocoll lint {source} lists them)"
    return line
