"""Schedules: the model, the file format, the verifier, transforms, and pricing: the alpha-beta
step model (:mod:`.cost`) and the link model (:mod:`.linkmodel`)."""

from .cost import Evaluation, bandwidth_lower_bound, evaluate, step_costs, steps_lower_bound
from .io import dumps_schedule, load_schedule, loads_schedule, save_schedule, schedule_from_dict
from .linkmodel import LinkModelResult, simulate, simulate_many
from .model import TRANSFER_DTYPE, Schedule, transfer_array, transfer_problems
from .transforms import concatenate, relabel, reverse
from .verify import VerifyReport, Violation, verify

__all__ = ["Schedule", "TRANSFER_DTYPE", "transfer_array", "transfer_problems", "load_schedule",
           "save_schedule", "loads_schedule", "dumps_schedule", "schedule_from_dict", "verify",
           "VerifyReport", "Violation", "evaluate", "Evaluation", "step_costs",
           "bandwidth_lower_bound", "steps_lower_bound", "reverse", "concatenate", "relabel",
           "simulate", "simulate_many", "LinkModelResult"]
