"""Hand schedules to the runtimes and simulators people use: MSCCL XML out and in, and a lint
that says whether the runtime accepts a file and whether it is correct (docs/interop.md).

>>> from topocoll.topology import topology
>>> from topocoll.synth import generate
>>> res = export_msccl(generate(topology("torus:2x3"), "allreduce", "bfb"))
>>> back = import_msccl(res.text, topology=topology("torus:2x3"))
>>> back.lint.valid, back.schedule.num_steps
(True, 4)
"""

from ..lazy import lazy_attributes
# eager: ``replay`` names a function and its submodule; importing the submodule binds it here
# first, so that a later ``import topocoll.interop.replay`` cannot shadow the function
from .replay import Replay, replay

# Public names -> the submodule that defines them, imported on first use (PEP 562).
_LAZY = {
    ".export": ("ExportResult", "export_msccl"),
    ".lint": ("Finding", "LintReport", "lint_msccl"),
    ".msccl_files": ("ImportedProgram", "import_msccl", "read_msccl", "write_msccl"),
    ".mscclxml": ("Program", "format_msccl", "parse_msccl"),
}

__all__ = ["export_msccl", "ExportResult", "import_msccl", "ImportedProgram", "lint_msccl",
           "LintReport", "Finding", "read_msccl", "write_msccl", "parse_msccl", "format_msccl",
           "Program", "replay", "Replay"]


__getattr__, __dir__ = lazy_attributes(__name__, _LAZY, __all__)
