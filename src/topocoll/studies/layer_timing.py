"""Measure a model's per-layer compute with torch on this machine's CPU.

:func:`measure_module` runs a ``torch.nn.Module`` once with forward hooks on its leaf modules
(modules without children) to record every layer call in execution order and its inputs; then
it times each call in isolation, on a copy of its recorded inputs that requires a gradient:

* **forward**: the layer applied to its inputs (autograd on, as in training);
* **input gradient**: ``torch.autograd.grad(output, inputs, g)`` for a random ``g`` shaped
  like the output;
* **weight gradient**: ``torch.autograd.grad(output, parameters, g)`` over the layer's own
  parameters (0 for layers without any);

each the *minimum* of ``repeats`` timed calls after one untimed call, with ``time.perf_counter``
(CPU work is synchronous; the minimum, as ``timeit`` advises, because on a shared machine a
preempted call only ever takes longer). A layer's gradient is the bytes of its own parameters
(their dtype's width), sent as one allreduce. The whole model is also timed (forward plus
backward through a sum of the outputs, minimum of ``repeats``): the workload's ``source`` gives
both totals, so a reader sees how far the sum of isolated layers is from the real pass
(allocator reuse, cache state, the residual additions and other functions that are not modules,
which no layer holds).

The result is a :class:`~topocoll.studies.workloads.TrainingWorkload` whose
``compute_model`` is ``"measured"``; :meth:`~TrainingWorkload.to_document` is the JSON layer
profile ``train-sim --workload FILE`` reads. torch is optional: without it
:func:`require_torch` raises :class:`~topocoll.errors.TorchUnavailableError`, one line.

Built-in torch models (:data:`TORCH_MODELS`): ``resnet18`` and ``resnet50`` (torchvision's
architectures, written out here so that torchvision is not needed; ReLUs not in place, so
that every layer's input survives to be re-timed) on 224x224 images with 1000 classes, and
``mlp``, a three-layer perceptron on 256 features, small enough for tests.
"""

import os
import platform
import time

from ..errors import TorchUnavailableError, UnsupportedError
from ..units import whole_number
from .workloads import TrainingWorkload, WorkloadLayer

__all__ = ["TORCH_MODELS", "require_torch", "torch_model", "measure_module", "measure_model",
           "MEASURED"]

#: The ``compute_model`` of measured workloads.
MEASURED = "measured"

#: name -> (input shape without the batch, what a sample is)
TORCH_MODELS = {"resnet18": ((3, 224, 224), "224x224 image"),
                "resnet50": ((3, 224, 224), "224x224 image"),
                "mlp": ((256,), "vector of 256 features")}


def require_torch():
    """Import torch or raise :class:`~topocoll.errors.TorchUnavailableError` (one line)."""
    try:
        import torch
    except ImportError:
        raise TorchUnavailableError(
            "measuring a profile needs PyTorch, which is not installed; pip install "
            "'topocoll[torch]' (torch==2.13.0, a CPU build), or give a profile file measured "
            "elsewhere") from None
    return torch


def _resnet(torch, blocks, bottleneck, classes=1000):
    nn = torch.nn

    class Block(nn.Module):
        def __init__(self, cin, width, stride):
            super().__init__()
            out = width * (4 if bottleneck else 1)
            if bottleneck:
                convs = [(cin, width, 1, 1), (width, width, 3, stride), (width, out, 1, 1)]
            else:
                convs = [(cin, width, 3, stride), (width, width, 3, 1)]
            mods = []
            for k, (a, b, size, s) in enumerate(convs):
                mods += [nn.Conv2d(a, b, size, s, size // 2, bias=False), nn.BatchNorm2d(b)]
                if k < len(convs) - 1:
                    mods.append(nn.ReLU())
            self.body = nn.Sequential(*mods)
            self.downsample = None
            if stride != 1 or cin != out:
                self.downsample = nn.Sequential(nn.Conv2d(cin, out, 1, stride, bias=False),
                                                nn.BatchNorm2d(out))
            self.relu = nn.ReLU()

        def forward(self, x):
            skip = x if self.downsample is None else self.downsample(x)
            return self.relu(self.body(x) + skip)

    layers = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
              nn.MaxPool2d(3, 2, 1)]
    cin = 64
    for stage, (count, width) in enumerate(zip(blocks, (64, 128, 256, 512))):
        for b in range(count):
            layers.append(Block(cin, width, 2 if (b == 0 and stage > 0) else 1))
            cin = width * (4 if bottleneck else 1)
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, classes)]
    return nn.Sequential(*layers)


def torch_model(name):
    """A fresh torch module of :data:`TORCH_MODELS` (seeded: the same weights every time)."""
    torch = require_torch()
    if name not in TORCH_MODELS:
        raise UnsupportedError(f"no torch model {name!r} to measure; known: "
                               f"{', '.join(TORCH_MODELS)}")
    torch.manual_seed(0)
    if name == "resnet18":
        return _resnet(torch, (2, 2, 2, 2), False)
    if name == "resnet50":
        return _resnet(torch, (3, 4, 6, 3), True)
    nn = torch.nn
    return nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                         nn.Linear(512, 10))


def _best_time(fn, repeats):
    fn()                                     # warm-up: allocations, lazy initialisation
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(min(times))


def _record_calls(torch, module, inputs):
    """Every leaf-module call of one forward pass: ``(qualified name, module, inputs)``."""
    calls, handles = [], []
    names = {m: n for n, m in module.named_modules()}

    def hook(mod, args):
        calls.append((names[mod], mod, tuple(a.detach().clone() if torch.is_tensor(a) else a
                                             for a in args)))

    for m in module.modules():
        if not any(True for _ in m.children()):
            handles.append(m.register_forward_pre_hook(hook))
    try:
        with torch.no_grad():
            module(*inputs)
    finally:
        for h in handles:
            h.remove()
    return calls


def _time_call(torch, mod, args, repeats):
    """(forward, input gradient, weight gradient) seconds and gradient bytes of one call."""
    xs = tuple(a.detach().requires_grad_(a.is_floating_point()) if torch.is_tensor(a) else a
               for a in args)
    leaves = [a for a in xs if torch.is_tensor(a) and a.requires_grad]
    params = [p for p in mod.parameters(recurse=False) if p.requires_grad]
    fwd = _best_time(lambda: mod(*xs), repeats)
    out = mod(*xs)
    if not out.requires_grad:
        return fwd, 0.0, 0.0, 0.0
    g = torch.randn_like(out)
    ig = _best_time(lambda: torch.autograd.grad(out, leaves, g, retain_graph=True),
                      repeats) if leaves else 0.0
    wg = _best_time(lambda: torch.autograd.grad(out, params, g, retain_graph=True),
                      repeats) if params else 0.0
    size = float(sum(p.numel() * p.element_size() for p in params))
    return fwd, ig, wg, size


def _whole(torch, module, inputs, repeats):
    def step():
        module.zero_grad(set_to_none=True)
        module(*inputs).sum().backward()

    return _best_time(step, repeats)


def _cpu_name():
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def measure_module(module, inputs, *, name="model", repeats=5, batch=None, note="",
                   threads=None):
    """Measure ``module`` applied to ``inputs`` (a tensor or a tuple of tensors) with
    ``threads`` torch threads (default: torch's); returns a
    :class:`~topocoll.studies.workloads.TrainingWorkload` (see the module docstring)."""
    torch = require_torch()
    if threads is not None:
        torch.set_num_threads(whole_number(threads, "threads"))
    whole_number(repeats, "repeats")
    inputs = inputs if isinstance(inputs, tuple) else (inputs,)
    module.train()
    calls = _record_calls(torch, module, inputs)
    if not calls:
        raise UnsupportedError(f"{name}: no module was called in the forward pass")
    layers = []
    for qual, mod, args in calls:
        fwd, ig, wg, size = _time_call(torch, mod, args, repeats)
        label = f"{qual} ({type(mod).__name__})" if qual else type(mod).__name__
        layers.append(WorkloadLayer(label, fwd, ig, wg, None, None,
                                    ("allreduce", size) if size > 0 else None))
    whole = _whole(torch, module, inputs, repeats)
    total = sum(x.forward + x.input_grad + x.weight_grad for x in layers)
    source = {"method": "torch forward pre-hooks record every leaf-module call; each call "
                        "re-timed in isolation: forward, autograd.grad to its inputs, "
                        "autograd.grad to its parameters",
              "statistic": f"minimum of {repeats} after one warm-up",
              "torch": torch.__version__, "threads": torch.get_num_threads(),
              "cpu": _cpu_name(), "cores": os.cpu_count(), "python": platform.python_version(),
              "batch": batch, "input": [list(t.shape) for t in inputs if torch.is_tensor(t)],
              "dtype": str(next(iter(module.parameters())).dtype).replace("torch.", ""),
              "sum_of_layers_s": total, "whole_forward_backward_s": whole}
    if note:
        source["note"] = note
    text = (f"{name} measured on {source['cpu']} ({source['threads']} torch threads), batch "
            f"{batch}: {len(layers)} layer calls, sum of layers {total * 1e3:.1f} ms, whole "
            f"forward+backward {whole * 1e3:.1f} ms")
    return TrainingWorkload(name, tuple(layers), "data", MEASURED, text, "DATA", {}, source)


def measure_model(name, *, batch=8, repeats=5, threads=1):
    """Measure built-in torch model ``name`` (:data:`TORCH_MODELS`) at ``batch`` samples, with
    one torch thread by default (on a machine other jobs share, more threads wait on each
    other: the mlp's layers took 20 ms each with 2 threads on a busy 2-core machine, 0.1 ms
    with 1)."""
    torch = require_torch()
    batch = whole_number(batch, "batch")
    module = torch_model(name)
    shape, sample = TORCH_MODELS[name]
    torch.manual_seed(1)
    x = torch.randn(batch, *shape)
    return measure_module(module, x, name=name, repeats=repeats, batch=batch,
                          note=f"batch of {batch} random {sample}s", threads=threads)
