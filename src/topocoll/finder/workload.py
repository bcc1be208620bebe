"""Workloads: what the allreduces of a job look like, and what they cost on a candidate.

A :class:`Workload` is a list of allreduce sizes (bytes) with weights (how often each runs).
Three ways to make one:

* :meth:`Workload.single`: one buffer size M;
* :meth:`Workload.weighted`: sizes with weights (a histogram of the job's allreduces);
* :meth:`Workload.from_layers`: a model's layer (gradient) sizes, fused into buckets as data-
  parallel training does (Zhao et al. (NSDI 2025), section 8.4: "the distribution of allreduce
  sizes, which could be the layer sizes or a fixed value like the bucket size in PyTorch DDP").
  Gradients become ready in reverse layer order during backpropagation; consecutive ready gradients
  are fused into one bucket until it holds at least ``bucket_size`` bytes, and every bucket is one
  allreduce (PyTorch DDP's rule, whose default bucket is 25 MiB). Without a bucket size every layer
  is its own allreduce (the paper's testbed runs).

The cost of one allreduce of M bytes on a candidate whose reduce-scatter and allgather phases take
``steps`` steps and ``T_B`` (in units of M/B) each is ``2 * (steps * alpha + T_B * M / B)``
(docs/math.md sections 1 and 4); a workload costs the weighted sum. No allreduce on N nodes of
degree d made of a reduce-scatter followed by an allgather (the finder's candidates all are)
beats ``2 * (moore_depth(N, d) * alpha + (N-1)/N * M / B)``, the *two-phase bound*; allreduces
of other shapes may, and none beats ``moore_depth(N, d) * alpha + 2 (N-1)/N * M / B``.

>>> w = Workload.from_layers([4, 4, 4, 12], bucket_size=8)
>>> w.sizes, w.weights
((12.0, 8.0, 4.0), (1.0, 1.0, 1.0))
>>> round(Workload.single("1MiB").time(5, 1.0, alpha=1e-5, bandwidth=12.5e9) * 1e6, 3)
267.772
"""

import math
import os
from dataclasses import dataclass

from ..errors import InputTypeError, ScheduleFormatError, UnsupportedError
from ..fileio import parse_json, read_text
from ..topology.metrics import moore_depth
from ..units import format_size, parse_size, real_number

__all__ = ["Workload", "bucket_layers", "load_workload", "allreduce_time",
           "allreduce_lower_bound", "any_allreduce_lower_bound"]


def allreduce_time(steps, t_b, size, *, alpha, bandwidth):
    """Time of one allreduce of ``size`` bytes: ``2 * (steps * alpha + t_b * size / bandwidth)``
    (``steps`` and ``t_b`` per phase, ``t_b`` in units of M/B)."""
    return 2.0 * (steps * alpha + t_b * size / bandwidth)


def allreduce_lower_bound(nodes, degree, size, *, alpha, bandwidth):
    """The two-phase bound ``2 * (moore_depth(N, d) * alpha + (N-1)/N * M / B)``: no allreduce
    on N nodes of degree d (node egress and ingress B) made of a reduce-scatter followed by an
    allgather beats it. Each phase takes Moore-depth steps (every shard gathers from, or
    spreads to, every node); in the reduce-scatter every node sends the (N-1)/N of its buffer
    that belongs to other shards, in the allgather it receives the (N-1)/N it lacks. One-phase
    allreduces may beat it (a complete graph allreduces in one step):
    :func:`any_allreduce_lower_bound` bounds every schedule.

    >>> round(allreduce_lower_bound(1024, 4, 2**20, alpha=1e-5, bandwidth=12.5e9) * 1e6, 1)
    267.6
    """
    spread = (nodes - 1) / nodes
    return 2.0 * (moore_depth(nodes, degree) * alpha + spread * size / bandwidth)


def any_allreduce_lower_bound(nodes, degree, size, *, alpha, bandwidth):
    """``moore_depth(N, d) * alpha + 2 (N-1)/N * M / B``: no allreduce on N nodes of degree d
    and node egress B beats it, whatever its shape (docs/math.md section 1, Theorems 2 and 5:
    the Moore depth, and 2 (N-1) M bytes over the total egress N B).

    >>> round(any_allreduce_lower_bound(1024, 4, 2**20, alpha=1e-5, bandwidth=12.5e9) * 1e6, 1)
    217.6
    """
    spread = (nodes - 1) / nodes
    return moore_depth(nodes, degree) * alpha + 2.0 * spread * size / bandwidth


def bucket_layers(layers, bucket_size=None):
    """Allreduce sizes of a model's gradients fused into buckets.

    ``layers`` are the layer sizes in bytes in forward order; backpropagation makes them ready
    last layer first. Ready gradients join the open bucket, which is sent (one allreduce) as soon
    as it holds at least ``bucket_size`` bytes; what is left at the end is the last bucket. A
    layer larger than the bucket size fills a bucket by itself. ``bucket_size`` of None or 0:
    one allreduce per layer. Zero-size layers (no parameters) are skipped.

    Returns the bucket sizes in the order they are sent.

    >>> bucket_layers([1, 2, 3, 10, 1], bucket_size=4)
    [11.0, 5.0, 1.0]
    >>> bucket_layers([1, 2, 3])
    [3.0, 2.0, 1.0]
    """
    if isinstance(layers, (str, bytes, int, float)) or not hasattr(layers, "__iter__"):
        raise InputTypeError(f"layer sizes must be a list, got {layers!r}")
    sizes = [_size(v, f"layer {i}", allow_zero=True) for i, v in enumerate(layers)]
    cap = 0.0 if not bucket_size else _size(bucket_size, "bucket size")
    buckets, open_ = [], 0.0
    for size in reversed(sizes):
        if size == 0:
            continue
        open_ += size
        if open_ >= cap:
            buckets.append(open_)
            open_ = 0.0
    if open_ > 0:
        buckets.append(open_)
    return buckets


def _size(value, what, allow_zero=False):
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise InputTypeError(f"{what} must be a size in bytes, got {value!r}")
    if allow_zero and isinstance(value, (int, float)) and value == 0:
        return 0.0
    size = float(parse_size(value, what=what))
    if not math.isfinite(size):
        raise UnsupportedError(f"{what} must be finite, got {value!r}")
    return size


@dataclass(frozen=True)
class Workload:
    """Allreduce sizes (bytes) and how many times each runs.

    Attributes
    ----------
    sizes : tuple of float
        Buffer size of each kind of allreduce, bytes (all positive).
    weights : tuple of float
        How many times each runs (positive).
    description : str
        One line saying where the sizes came from.
    """

    sizes: tuple
    weights: tuple
    description: str = ""

    def __post_init__(self):
        if len(self.sizes) != len(self.weights):
            raise UnsupportedError("a workload needs one weight per size")
        if not self.sizes:
            raise UnsupportedError("a workload needs at least one allreduce size")
        for m in self.sizes:
            if not (m > 0 and math.isfinite(m)):
                raise UnsupportedError(f"allreduce sizes must be positive, got {m!r}")
        for w in self.weights:
            if not (w > 0 and math.isfinite(w)):
                raise UnsupportedError(f"workload weights must be positive, got {w!r}")

    # ------------------------------------------------------------------ constructors
    @classmethod
    def single(cls, size):
        """One allreduce of ``size`` bytes (``"1MiB"`` or a number)."""
        m = _size(size, "size")
        return cls((m,), (1.0,), f"one allreduce of {format_size(m)}")

    @classmethod
    def weighted(cls, items):
        """Sizes with weights: ``[(size, weight), ...]`` or ``{size: weight}``; a bare size
        counts once."""
        if isinstance(items, dict):
            items = list(items.items())
        sizes, weights = [], []
        for i, item in enumerate(items):
            if isinstance(item, (list, tuple)):
                if len(item) != 2:
                    raise UnsupportedError(f"workload entry {i}: expected [size, weight], got "
                                           f"{item!r}")
                size, weight = item
            elif isinstance(item, dict):
                if "size" not in item:
                    raise UnsupportedError(f"workload entry {i}: missing 'size'")
                size, weight = item["size"], item.get("weight", 1)
            else:
                size, weight = item, 1
            sizes.append(_size(size, f"workload entry {i} size"))
            weights.append(real_number(weight, f"workload entry {i}: weight"))
        total = sum(weights)
        return cls(tuple(sizes), tuple(weights),
                   f"{len(sizes)} allreduce size(s), {total:g} allreduces")

    @classmethod
    def from_layers(cls, layers, bucket_size=None):
        """A model's layer sizes (bytes, forward order) fused by :func:`bucket_layers`; every
        bucket is one allreduce."""
        buckets = bucket_layers(layers, bucket_size)
        if not buckets:
            raise UnsupportedError("the model has no gradient bytes (every layer is empty)")
        how = (f"buckets of {format_size(_size(bucket_size, 'bucket size'))}"
               if bucket_size else "one allreduce per layer")
        return cls(tuple(buckets), (1.0,) * len(buckets),
                   f"{len(layers)} layers, {format_size(sum(buckets))} of gradients, {how}: "
                   f"{len(buckets)} allreduces")

    # ------------------------------------------------------------------ costs
    @property
    def count(self):
        """Total number of allreduces (sum of the weights)."""
        return float(sum(self.weights))

    def time(self, steps, t_b, *, alpha, bandwidth):
        """Total allreduce time on a candidate with ``steps`` steps and ``t_b`` (units of M/B)
        per phase, at latency ``alpha`` (s) and node bandwidth ``bandwidth`` (bytes/s)."""
        return sum(w * allreduce_time(steps, t_b, m, alpha=alpha, bandwidth=bandwidth)
                   for m, w in zip(self.sizes, self.weights))

    def lower_bound(self, nodes, degree, *, alpha, bandwidth):
        """Sum of :func:`allreduce_lower_bound` over the workload."""
        return sum(w * allreduce_lower_bound(nodes, degree, m, alpha=alpha, bandwidth=bandwidth)
                   for m, w in zip(self.sizes, self.weights))

    def to_dict(self):
        return {"sizes": list(self.sizes), "weights": list(self.weights),
                "description": self.description}


def load_workload(path, *, bucket_size=None):
    """Read a workload file.

    * JSON list (``[4194304, "1MiB", ...]``): a model's layer sizes, bucketed with
      ``bucket_size`` (:meth:`Workload.from_layers`);
    * JSON object ``{"layers": [...], "bucket_size": "25MiB"}``: the same with its own bucket
      size (``bucket_size`` given here wins);
    * JSON object ``{"sizes": [[size, weight], ...]}`` (or ``{"size": .., "weight": ..}``
      items, or ``{"1MiB": 3, ...}``): weighted sizes;
    * any other text: one allreduce per line, ``SIZE [WEIGHT]``, ``#`` starts a comment.

    ``path`` may be ``-`` (standard input) or gzip-compressed. Raises
    :class:`~topocoll.errors.ScheduleFormatError` naming the file for malformed content (its
    subclass :class:`~topocoll.errors.FileAccessError` if it cannot be read).
    """
    path = os.fspath(path)
    text = read_text(path, what="workload file")
    stripped = text.lstrip()
    try:
        if stripped.startswith(("[", "{")):
            doc = parse_json(text, what=path)
            return _from_document(doc, bucket_size)
        return _from_lines(text)
    except ScheduleFormatError:
        raise
    except (UnsupportedError, InputTypeError, ValueError) as exc:
        raise ScheduleFormatError(f"{path}: {exc}") from None


def _from_document(doc, bucket_size):
    if isinstance(doc, list):
        return Workload.from_layers(doc, bucket_size)
    if not isinstance(doc, dict):
        raise UnsupportedError("expected a list of layer sizes or an object")
    if "layers" in doc:
        layers = doc["layers"]
        if not isinstance(layers, list):
            raise UnsupportedError("'layers' must be a list of sizes")
        return Workload.from_layers(layers, bucket_size if bucket_size is not None
                                    else doc.get("bucket_size"))
    if "sizes" in doc:
        sizes = doc["sizes"]
        if not isinstance(sizes, (list, dict)):
            raise UnsupportedError("'sizes' must be a list or an object")
        return Workload.weighted(sizes)
    return Workload.weighted(doc)


def _from_lines(text):
    items = []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        fields = line.split()
        if len(fields) > 2:
            raise UnsupportedError(f"line {number}: expected SIZE [WEIGHT], got {line!r}")
        weight = 1.0
        if len(fields) == 2:
            try:
                weight = float(fields[1])
            except ValueError:
                raise UnsupportedError(f"line {number}: weight {fields[1]!r} is not a "
                                       "number") from None
        items.append((fields[0], weight))
    if not items:
        raise UnsupportedError("no sizes in the file")
    return Workload.weighted(items)
