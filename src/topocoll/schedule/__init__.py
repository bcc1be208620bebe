"""Schedules: the model, the file format, the verifier, transforms, and pricing: the alpha-beta
step model (:mod:`.cost`) and the link model (:mod:`.linkmodel`)."""

from ..lazy import lazy_attributes
# eager: ``verify`` names a function and its submodule; importing the submodule binds it here
# first, so that a later ``import topocoll.schedule.verify`` cannot shadow the function
from .verify import VerifyReport, Violation, verify

# Public names -> the submodule that defines them. A submodule is imported when one of its
# names is first used (PEP 562), so a job loads only the modules it needs (start-up time).
_LAZY = {
    ".compact": ("CompactSchedule", "compact_schedule"),
    ".cost": ("Evaluation", "bandwidth_lower_bound", "evaluate", "step_costs",
              "steps_lower_bound"),
    ".io": ("dumps_schedule", "load_schedule", "loads_schedule", "save_schedule",
            "schedule_from_dict"),
    ".linkmodel": ("LinkModelResult", "simulate", "simulate_many"),
    ".model": ("TRANSFER_DTYPE", "Schedule", "transfer_array", "transfer_problems"),
    ".reduction": ("allreduce_gamma_time", "parse_gamma", "reduction_step_loads",
                   "reduction_time"),
    ".symmetric": ("EXPLICIT_TRANSFER_LIMIT", "SYMMETRIC_COLLECTIVES", "SymmetricSchedule",
                   "normalize", "symmetric_schedule"),
    ".traffic": ("RowSink", "StepTraffic", "TrafficSink", "traffic_of"),
    ".transforms": ("concatenate", "concatenate_symmetric", "relabel", "reverse",
                    "reverse_symmetric"),
}

__all__ = ["Schedule", "TRANSFER_DTYPE", "transfer_array", "transfer_problems", "load_schedule",
           "save_schedule", "loads_schedule", "dumps_schedule", "schedule_from_dict", "verify",
           "VerifyReport", "Violation", "evaluate", "Evaluation", "step_costs",
           "bandwidth_lower_bound", "steps_lower_bound", "reverse", "concatenate", "relabel",
           "simulate", "simulate_many", "LinkModelResult", "SymmetricSchedule",
           "symmetric_schedule", "normalize", "reverse_symmetric", "concatenate_symmetric",
           "EXPLICIT_TRANSFER_LIMIT", "SYMMETRIC_COLLECTIVES", "CompactSchedule",
           "compact_schedule", "StepTraffic", "traffic_of", "RowSink", "TrafficSink",
           "allreduce_gamma_time", "parse_gamma", "reduction_step_loads", "reduction_time"]


__getattr__, __dir__ = lazy_attributes(__name__, _LAZY, __all__)
