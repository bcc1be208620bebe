"""What the verifier finds: one :class:`Violation` per broken rule, and the
:class:`VerifyReport` on a whole schedule (:func:`~topocoll.schedule.verify.verify`)."""

from dataclasses import dataclass, field

from ..errors import InvalidScheduleError

__all__ = ["Violation", "VerifyReport"]


@dataclass(frozen=True)
class Violation:
    """One broken rule, located as precisely as the rule allows."""

    kind: str
    message: str
    step: int | None = None
    src: int | None = None
    dst: int | None = None
    shard: int | None = None
    lo: float | None = None
    hi: float | None = None
    node: int | None = None
    transfer: int | None = None

    def to_dict(self):
        return {k: v for k, v in self.__dict__.items() if v is not None}


@dataclass
class VerifyReport:
    """The verdict on a schedule: ``valid``, a count of violations per kind, and the first few.

    ``error_count`` counts offending transfers (malformed, missing link, causality, double
    count, conflict) plus (node, shard) pairs left incomplete at the end. For a symmetric
    schedule these are the full schedule's counts, ``representatives`` says how many rows
    were checked, and ``not_invariant`` says the group is no symmetry of the topology.
    """

    valid: bool
    collective: str
    nodes: int
    steps: int
    transfers: int
    error_count: int
    counts: dict
    errors: list
    warnings: list = field(default_factory=list)
    representatives: int | None = None

    def summary(self):
        """One line: ``valid`` or the first violation and the count."""
        head = (f"{self.collective} on {self.nodes} nodes, {self.steps} steps, "
                f"{self.transfers} transfers")
        if self.representatives is not None:
            head += f" (symmetric: {self.representatives} representatives)"
        if self.valid:
            return f"valid: {head}"
        first = self.errors[0].message if self.errors else "invalid"
        more = f" (and {self.error_count - 1} more)" if self.error_count > 1 else ""
        return f"invalid: {first}{more}"

    def raise_if_invalid(self):
        """Raise :class:`InvalidScheduleError` with :meth:`summary` unless the schedule is valid."""
        if not self.valid:
            raise InvalidScheduleError(self.summary(), report=self)
        return self

    def to_dict(self):
        return {"valid": self.valid, "collective": self.collective, "nodes": self.nodes,
                "steps": self.steps, "transfers": self.transfers,
                "error_count": self.error_count, "counts": dict(self.counts),
                "errors": [e.to_dict() for e in self.errors], "warnings": list(self.warnings),
                **({} if self.representatives is None else
                   {"form": "symmetric", "representatives": self.representatives})}
