"""A training workload from what a user names: a built-in model (its FLOPs model), a torch
model to measure, or a profile file (JSON or an ASTRA-sim text workload).

``topocoll train-sim --workload`` and ``topocoll find --workload`` both read their model here;
the messages name the command-line options, which are also the keywords here (``cycle_time``
is ``--cycle-time``).
"""

import os

from ..errors import UnsupportedError
from .layer_timing import TORCH_MODELS, measure_model
from .models import MODELS, model_profile, model_workload
from .profiles import load_profile
from .workloads import load_training_workload

__all__ = ["resolve_profile", "resolve_workload", "MAX_MEASURE_BATCH"]

#: Largest batch that ``measure`` runs (the inputs and activations live in this machine's
#: memory).
MAX_MEASURE_BATCH = 1024


def resolve_profile(model, *, batch=None, gpu_flops=None, efficiency=None, dtype=None,
                    cycle_time=None):
    """The ready-time :class:`~topocoll.studies.gradient_profile.Profile` of ``model``: a
    built-in model's name or a profile file (JSON or ASTRA-sim text); the model options apply
    to built-in models only, ``cycle_time`` to ASTRA-sim files only.

    Raises
    ------
    UnsupportedError
        ``model`` is neither a built-in model nor a file, or an option does not apply to it.
    """
    if _built_in(model, batch, gpu_flops, efficiency, dtype, cycle_time):
        return model_profile(model, batch=batch, gpu_flops=gpu_flops, efficiency=efficiency,
                             bytes_per_param=dtype)
    return load_profile(model, cycle_time=cycle_time)


def _built_in(model, batch, gpu_flops, efficiency, dtype, cycle_time, known_also=""):
    """True if ``model`` names a built-in model, False if a profile file; refuses the options
    that do not apply to the one it is, and a name that is neither."""
    if model in MODELS:
        if cycle_time is not None:
            raise UnsupportedError("--cycle-time applies to ASTRA-sim workload files, not to "
                                   "built-in models")
        return True
    if model != "-" and not os.path.exists(model):
        raise UnsupportedError(f"--workload {model}: neither a known model ({', '.join(MODELS)}"
                               f"{known_also}) nor a file")
    given = [name for name, v in (("--batch", batch), ("--gpu-flops", gpu_flops),
                                  ("--efficiency", efficiency), ("--dtype", dtype))
             if v is not None]
    if given:
        raise UnsupportedError(f"{given[0]} applies to the built-in models ({', '.join(MODELS)})"
                               ", not to a profile file")
    return False


def resolve_workload(model, *, measure=False, batch=None, gpu_flops=None, efficiency=None,
                     dtype=None, cycle_time=None):
    """The :class:`~topocoll.studies.workloads.TrainingWorkload` of ``model``: measured with
    torch (``measure``: one of :data:`~topocoll.studies.layer_timing.TORCH_MODELS`, ``batch``
    default 8), a built-in model's FLOPs model, or a profile file (JSON or ASTRA-sim text).

    Raises
    ------
    UnsupportedError
        An unknown model, an option that does not apply to it, or a ``measure`` batch outside
        1 to :data:`MAX_MEASURE_BATCH`.
    """
    if measure:
        return _measured(model, batch=batch, gpu_flops=gpu_flops, efficiency=efficiency,
                         dtype=dtype, cycle_time=cycle_time)
    if _built_in(model, batch, gpu_flops, efficiency, dtype, cycle_time,
                 known_also=f"; with --measure: {', '.join(TORCH_MODELS)}"):
        return model_workload(model, batch=batch, gpu_flops=gpu_flops, efficiency=efficiency,
                              bytes_per_param=dtype)
    return load_training_workload(model, cycle_time=cycle_time)


def _measured(model, *, batch, gpu_flops, efficiency, dtype, cycle_time):
    if model not in TORCH_MODELS:
        raise UnsupportedError(f"--measure needs a torch model to run "
                               f"({', '.join(TORCH_MODELS)}), got {model!r}")
    for name, value in (("--gpu-flops", gpu_flops), ("--efficiency", efficiency),
                        ("--dtype", dtype), ("--cycle-time", cycle_time)):
        if value is not None:
            raise UnsupportedError(f"{name} applies to the FLOPs model, not to --measure")
    batch = 8 if batch is None else batch
    if not 1 <= batch <= MAX_MEASURE_BATCH:
        raise UnsupportedError(f"--batch with --measure must be between 1 and "
                               f"{MAX_MEASURE_BATCH}, got {batch}")
    return measure_model(model, batch=batch)
