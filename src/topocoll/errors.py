"""One exception hierarchy for everything topocoll rejects.

Every error names the rule that was broken, in one line, so that the CLI can print it as is.
All of them derive from :class:`TopocollError` and from ``ValueError`` (bad values) or
``TypeError`` (wrong kinds of input), so callers may catch either family.
"""

__all__ = [
    "TopocollError",
    "UnitError",
    "SpecError",
    "TopologyError",
    "NotStronglyConnectedError",
    "ScheduleFormatError",
    "FileAccessError",
    "ResourceLimitError",
    "ClusterError",
    "InvalidScheduleError",
    "UnsupportedError",
    "InputTypeError",
    "ProcessGroupError",
    "PlotUnavailableError",
    "TorchUnavailableError",
    "EmulationUnavailableError",
    "EmulationError",
    "FitError",
    "NotIdentifiableError",
]


class TopocollError(Exception):
    """Base class of every error raised by topocoll on bad input."""


class UnitError(TopocollError, ValueError):
    """A quantity such as ``"10us"`` or ``"100Gbps"`` could not be read."""


class SpecError(TopocollError, ValueError):
    """A topology spec string such as ``"torus:4x4"`` is malformed or out of range."""


class TopologyError(TopocollError, ValueError):
    """A topology breaks a rule of the model (bad link, self-loop, switch, ...)."""


class ResourceLimitError(TopocollError, ValueError):
    """A job would need more memory (or other resources) than the configured limit allows; the
    message says the estimate, the limit and how to change it."""


class NotStronglyConnectedError(TopologyError):
    """Some node cannot reach another one; ``pair`` holds one such (source, target)."""

    def __init__(self, message, pair=None):
        super().__init__(message)
        self.pair = pair


class ScheduleFormatError(TopocollError, ValueError):
    """A schedule or topology file does not follow the file contract; names the field."""


class FileAccessError(TopocollError, ValueError):
    """A file cannot be read or written at all (missing, a directory, over the read limit, no
    space left): not a fault of its content, so not a :class:`ScheduleFormatError`."""


class InvalidScheduleError(TopocollError, ValueError):
    """A schedule failed verification; ``report`` holds the full verification report."""

    def __init__(self, message, report=None):
        super().__init__(message)
        self.report = report


class UnsupportedError(TopocollError, ValueError):
    """A valid request that this algorithm or tool does not handle (says what does)."""


class InputTypeError(TopocollError, TypeError):
    """An argument has the wrong type."""


class ProcessGroupError(TopocollError, RuntimeError):
    """torch.distributed is not in the state an operation needs (no process group, wrong size)."""


class ClusterError(TopocollError, ValueError):
    """A Dask scheduler that cannot be reached, or has no workers (the message names the
    address and what to start)."""


class PlotUnavailableError(UnsupportedError, ImportError):
    """Plotting needs matplotlib, which is not installed."""


class TorchUnavailableError(UnsupportedError, ImportError):
    """Running schedules needs PyTorch, which is not installed."""


class EmulationUnavailableError(UnsupportedError):
    """This machine cannot emulate the network asked for: a missing privilege, kernel feature
    (a qdisc, user namespaces) or library; the message names what is missing."""


class EmulationError(TopocollError, RuntimeError):
    """The kernel refused an operation while an emulated network was built, used or taken
    down (the message names the node and the operation); nothing of the network is left."""


class FitError(TopocollError, ValueError):
    """Measured runs that a fit of the cost model cannot use (a value out of range)."""


class NotIdentifiableError(FitError):
    """The runs do not determine one of the fitted constants (the message names the rule)."""
