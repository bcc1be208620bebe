"""A model's gradients in the order backpropagation makes them ready: :class:`Profile`.

Each gradient has its size in bytes and its *ready time*: the forward time plus the backward
time up to and including its layer. :func:`topocoll.studies.training.simulate_iteration`
overlaps these ready times with allreduces; :func:`topocoll.studies.workloads.from_profile`
turns a profile into a training workload. The checks of a number, a size and a time here are
the ones every training input goes through.
"""

from dataclasses import dataclass

from ..errors import InputTypeError, UnsupportedError
from ..units import parse_size, parse_time, real_number

__all__ = ["ProfileLayer", "Profile", "check_bytes", "check_seconds"]


@dataclass(frozen=True)
class ProfileLayer:
    """One gradient: its layer ``name``, ``bytes`` and ``ready`` time (seconds from the start of
    the iteration)."""

    name: str
    bytes: float
    ready: float

    def to_dict(self):
        return {"name": self.name, "bytes": self.bytes, "ready": self.ready}


@dataclass(frozen=True)
class Profile:
    """A model's gradients in backward (ready) order and its compute time.

    Attributes
    ----------
    name : str
        The model.
    layers : tuple of ProfileLayer
        Gradients with bytes > 0, sorted by ready time (backward order for ties).
    compute_time : float
        Forward plus backward time of one iteration (seconds); at least the last ready time.
    forward_time : float
        The forward pass alone (seconds; 0 when unknown).
    description : str
        One line saying where the numbers come from.

    Examples
    --------
    >>> p = Profile.from_layers("toy", [("fc", 8, 2.0), ("conv", 4, 3.0)], compute_time=3.5)
    >>> p.total_bytes, p.compute_time, p.forward_order_bytes()
    (12.0, 3.5, [4.0, 8.0])
    """

    name: str
    layers: tuple
    compute_time: float
    forward_time: float = 0.0
    description: str = ""

    def __post_init__(self):
        if not self.layers:
            raise UnsupportedError(f"profile {self.name!r} has no gradient bytes (no layer with "
                                   "parameters)")
        last = max(layer.ready for layer in self.layers)
        if self.compute_time < last:
            raise UnsupportedError(f"profile {self.name!r}: compute time {self.compute_time!r} "
                                   f"ends before the last gradient is ready ({last!r})")
        if self.forward_time > self.compute_time:
            raise UnsupportedError(f"profile {self.name!r}: the forward pass "
                                   f"({self.forward_time!r} s) cannot take longer than the whole "
                                   f"compute ({self.compute_time!r} s), which includes it")

    @classmethod
    def from_layers(cls, name, layers, *, compute_time=None, forward_time=0.0, description=""):
        """A profile from ``(name, bytes, ready)`` triples (or :class:`ProfileLayer`) in any
        order: layers of 0 bytes are dropped, the rest sorted by ready time (stable, so ties keep
        the given order). ``bytes`` may be a size string (``"1MiB"``), ``ready`` a time string
        (``"3ms"``). ``compute_time`` defaults to the last ready time."""
        if isinstance(layers, (str, bytes)) or not hasattr(layers, "__iter__"):
            raise InputTypeError(f"profile layers must be a list, got {layers!r}")
        items = []
        for i, layer in enumerate(layers):
            if isinstance(layer, ProfileLayer):
                layer = (layer.name, layer.bytes, layer.ready)
            if not isinstance(layer, (tuple, list)) or len(layer) != 3:
                raise UnsupportedError(f"profile layer {i}: expected (name, bytes, ready), got "
                                       f"{layer!r}")
            lname, size, ready = layer
            size = check_bytes(size, f"layer {i} bytes")
            ready = check_seconds(ready, f"layer {i} ready time")
            if size > 0:
                items.append(ProfileLayer(str(lname), size, ready))
        items.sort(key=lambda x: x.ready)
        if compute_time is None:
            compute_time = max((x.ready for x in items), default=0.0)
        compute_time = check_seconds(compute_time, "compute time")
        forward_time = check_seconds(forward_time, "forward time")
        return cls(str(name), tuple(items), compute_time, forward_time, description)

    @property
    def total_bytes(self):
        """Gradient bytes of one iteration."""
        return float(sum(x.bytes for x in self.layers))

    def forward_order_bytes(self):
        """Gradient sizes in forward order (the reverse of ready order), as
        :meth:`topocoll.finder.Workload.from_layers` takes them."""
        return [x.bytes for x in reversed(self.layers)]

    def to_dict(self):
        return {"name": self.name, "compute_time": self.compute_time,
                "forward_time": self.forward_time, "total_bytes": self.total_bytes,
                "description": self.description,
                "layers": [x.to_dict() for x in self.layers]}


def check_bytes(value, what):
    """``value`` (a number >= 0 or a size string such as ``"1MiB"``) as a whole number of
    bytes."""
    value = float(parse_size(value, what=what)) if isinstance(value, str) else \
        real_number(value, what, least=0)
    if value != int(value):
        raise UnsupportedError(f"{what} must be a whole number of bytes, got {value!r}")
    return value


def check_seconds(value, what):
    """``value`` (a number or a time string such as ``"3ms"``) as non-negative seconds."""
    if isinstance(value, str):
        return float(parse_time(value, what=what))
    return real_number(value, what, least=0)

