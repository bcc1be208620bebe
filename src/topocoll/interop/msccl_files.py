"""MSCCL XML files in and out: read a program, write one, import one as our schedule (linted on
the way)."""

import os

from ..fileio import open_output, read_input
from .lint import lint_msccl
from .mscclxml import Program, format_msccl, parse_msccl

__all__ = ["read_msccl", "write_msccl", "import_msccl", "ImportedProgram"]


def read_msccl(path):
    """Parse an MSCCL XML file (``-`` for standard input) into a :class:`Program`."""
    data = read_input(path, starts=b"<", what="MSCCL XML file")
    return parse_msccl(data, source="<stdin>" if path == "-" else os.fspath(path))


def write_msccl(program, target):
    """Write a :class:`Program` (or an :class:`ExportResult`) as XML to a path or ``-``."""
    program = getattr(program, "program", program)
    text = format_msccl(program).encode()
    if hasattr(target, "write"):
        target.write(text)
        return
    with open_output(target) as fh:
        fh.write(text)


def import_msccl(source, *, topology=None):
    """Read an MSCCL program (a path, or XML text containing ``<``) into our schedule.

    The program is linted on the way (:func:`lint_msccl`): the result's ``lint`` says whether
    the runtime would accept it and whether it is correct; ``schedule`` is what it performs.
    """
    if isinstance(source, Program):
        program = source
    elif isinstance(source, (bytes, str)) and ("<" in (source if isinstance(source, str)
                                                       else source.decode("latin-1"))):
        program = parse_msccl(source)
    else:
        program = read_msccl(source)
    report = lint_msccl(program, topology=topology)
    return ImportedProgram(report.schedule, report, program)


class ImportedProgram:
    """What :func:`import_msccl` returns: ``schedule``, ``lint`` and ``program``."""

    __slots__ = ("schedule", "lint", "program")

    def __init__(self, schedule, lint, program):
        self.schedule, self.lint, self.program = schedule, lint, program
