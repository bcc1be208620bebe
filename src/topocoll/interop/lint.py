"""Say, before anyone runs it, whether the MSCCL runtime accepts a program and whether it is right.

Two kinds of findings, each naming the element and its line:

* **runtime rules** (docs/interop.md lists them): what msccl-executor-nccl's parser refuses or
  what makes its kernel hang: the first element must be ``<algo>`` with all ten attributes, plain
  decimal integers, ranks ``0..ngpus-1`` once each, thread block ids contiguous from 0 with peers
  other than the rank itself and at most one block per channel and peer in each direction, steps
  with all ten attributes numbered ``0, 1, 2, ...``, types from ``s r rcs rrs rrc rrcs cpy re
  nop``, at most 64 steps per block, ``cnt < 72``, offsets inside the buffers, a dependency that
  names an existing step marked ``hasdep="1"``, ``nop`` steps that carry a dependency and are
  followed by a step with one, and sends and receives of each channel and pair of ranks that
  match in number and size; every number within the integer the runtime stores it in
  (:data:`~topocoll.interop.export.WIDTHS`: ``depid`` is 8 bits), and no tab character in the
  markup (the runtime's reader takes only spaces and newlines). ``<copy>`` elements, which the
  runtime skips, are a warning (``warnings``);
* **correctness**: the program is run symbolically (:mod:`~topocoll.interop.replay`): a
  program that cannot finish hangs; then the output buffers must hold what the collective
  promises, and the schedule read off it must pass :func:`~topocoll.schedule.verify`. The run
  is the runtime's: step hints (``tcstep``) are ignored and each transfer's step comes from the
  thread blocks' order and dependencies (:func:`~.lint_steps.runtime_steps`); hints only refine
  the steps of the schedule returned.

>>> from topocoll.topology import topology
>>> from topocoll.synth import generate
>>> from topocoll.interop.export import export_msccl
>>> report = lint_msccl(export_msccl(generate(topology("ring:4"), "allgather", "bfb")).program)
>>> report.valid, report.errors
(True, [])
"""

from dataclasses import dataclass, field

from ..errors import TopocollError
from ..results import Result, Status
from ..schedule.verify import verify
from ..units import whole_number
from .buffers import buffer_capacity
from .chunk_memory import program_cells, require_chunk_memory
from .export_limits import CAPACITY
from .lint_rules import Finding, Findings, lexical_rules, source_text, static_rules
from .lint_steps import has_hints, runtime_steps, with_steps
from .mscclxml import STEP_TYPES, parse_msccl
from .replay import program_modes, replay

__all__ = ["lint_msccl", "LintReport", "Finding", "STEP_TYPES", "buffer_capacity"]


@dataclass(kw_only=True)
class LintReport(Result):
    """Findings on one program.

    Attributes
    ----------
    errors : list of Finding
        Runtime rules broken (the runtime refuses the file or hangs on it).
    warnings : list of Finding
        What the runtime accepts but does not do as written (``<copy>`` elements it skips).
    correct : bool or None
        Whether the program performs its collective (None if it could not be run).
    problems : list of str
        What is wrong with what it computes (hangs, double counts, wrong outputs, and the
        verifier's violations of the schedule read off it).
    schedule : Schedule or None
        The schedule read off the program.
    min_capacity : int or None
        The fewest units (a step of ``cnt`` chunks is ``cnt``) a connection (sender, receiver,
        channel) must hold for the program to complete (docs/interop.md, "Bounded buffers");
        ``None`` if it hangs even with unbounded buffers or could not be run.
    capacity : int or None
        The capacity it was checked against (the protocol's, :data:`~topocoll.interop.export.
        CAPACITY`, unless ``lint_msccl(capacity=...)`` gave one).
    """

    errors: list = field(default_factory=list)
    warnings: list = field(default_factory=list)
    correct: bool | None = None
    problems: list = field(default_factory=list)
    schedule: object = field(default=None, repr=False)
    collective: str = ""
    ngpus: int = 0
    min_capacity: int | None = None
    capacity: int | None = None

    @property
    def valid(self):
        """The runtime accepts it and it is a correct collective."""
        return not self.errors and bool(self.correct)

    def to_dict(self):
        d = super().to_dict()
        d.update({"valid": self.valid, "runtime_errors": [f.to_dict() for f in self.errors],
                  "warnings": [f.to_dict() for f in self.warnings],
                  "correct": self.correct, "problems": list(self.problems),
                  "collective": self.collective, "ngpus": self.ngpus,
                  "min_capacity": self.min_capacity, "capacity": self.capacity})
        if self.schedule is not None:
            d["steps"] = self.schedule.num_steps
            d["transfers"] = self.schedule.num_transfers
        return d



def lint_msccl(program, *, topology=None, max_errors=50, capacity=None):
    """Check an MSCCL program against the runtime's rules and for correctness.

    Parameters
    ----------
    program : Program, str or bytes
        A parsed program or the XML text.
    topology : Topology, optional
        The network the imported schedule is placed on (default: the links it uses).
    capacity : int, optional
        Units a connection holds before its sender blocks (default: the ``proto``'s,
        :data:`~topocoll.interop.export.CAPACITY`); a program that needs more is a ``buffers``
        error naming the blocks that wait on each other.

    Returns
    -------
    LintReport
        ``status`` 0 when the runtime accepts the file and it is a correct collective, else 3.
    """
    text = None
    if not hasattr(program, "gpus"):
        text = program
        program = parse_msccl(program)
    else:
        text = getattr(program, "text", None) or getattr(program, "raw", None)
        if text is None:
            text = source_text(program)
    require_chunk_memory(program_cells(program), "lint", f"running the {len(program.gpus)} ranks' "
                         "program")
    rules = Findings(max_errors)
    if text is not None:
        lexical_rules(text, rules)
    static_rules(program, rules)
    problems, correct, schedule, collective, modes = _correctness(program, topology)
    if capacity is not None:
        whole_number(capacity, "capacity")
    if capacity is None:
        capacity = CAPACITY.get(program.attrs.get("proto", "Simple"), CAPACITY["Simple"])
    min_capacity = None
    if not rules.found:
        min_capacity = _buffer_rule(program, capacity, rules)
    if correct and rules.warnings and any(g.copies for g in program.gpus):
        _copy_warning(program, modes, collective, topology, rules)
    status = Status.SUCCESS if not rules.found and correct else Status.INVALID
    if not rules.found and correct:
        message = "the runtime accepts it and it is a correct " + collective
    else:
        parts = []
        if rules.found:
            parts.append(f"{len(rules.found)} runtime rule(s) broken")
        if correct is False or correct is None:
            parts.append("not a correct " + (collective or "collective"))
        message = "; ".join(parts)
    try:
        ngpus = int(program.attrs.get("ngpus", len(program.gpus)))
    except ValueError:
        ngpus = len(program.gpus)
    return LintReport(status=status, message=message, errors=rules.found,
                      warnings=rules.warnings, correct=correct,
                      problems=problems, schedule=schedule, collective=collective, ngpus=ngpus,
                      min_capacity=min_capacity, capacity=capacity)


def _correctness(program, topology):
    """Run the program as the runtime does: ``(problems, correct, schedule, collective,
    modes)``; ``correct`` is ``None`` (and ``modes`` may be) when it cannot be run."""
    problems = []
    correct = None
    schedule = None
    modes = None
    collective = program.attrs.get("coll", "")
    try:
        modes = program_modes(program)
        hinted = has_hints(program)
        for inplace in modes or [False]:
            # judge what the runtime runs: no hints, steps from the blocks' dependencies
            run = replay(with_steps(program, runtime_steps(program, inplace)),
                         inplace=inplace, topology=topology)
            label = "in-place" if inplace else "out-of-place"
            problems += [f"{label}: {m}" for _, m in run.hang[:10]]
            problems += [f"{label}: {m}" for _, m in run.problems[:10]]
            problems += [f"{label}: {m}" for m in run.wrong_outputs[:10]]
            if schedule is None:
                schedule = run.schedule
                unexpressed = run.unexpressed
        collective = schedule.collective.name
        if not problems:
            report = verify(schedule)
            problems += [f"schedule: {v.message}" for v in report.errors[:10]]
            if not report.valid and unexpressed:
                problems.append(f"schedule: {unexpressed} transfer(s) send less than their "
                                "sender holds in topocoll's model (a partial sum kept apart "
                                "from the rank's running sum), so the imported schedule "
                                "differs from the program there")
        correct = not problems
        if correct and hinted:
            # step hints only refine timing: the schedule keeps them where they are consistent
            run = replay(program, inplace=(modes or [False])[0], topology=topology)
            if run.ok and verify(run.schedule).valid:
                schedule = run.schedule
    except TopocollError as exc:
        problems.append(f"cannot run the program: {exc}")
    return problems, correct, schedule, collective, modes


def _buffer_rule(program, capacity, rules):
    """The least connection capacity the program needs (:func:`buffer_capacity`); a
    ``buffers`` error naming the blocks that wait on each other when ``capacity`` is short."""
    min_capacity, blocked = buffer_capacity(program, capacity=capacity)
    if blocked:
        first, pc, _ = blocked[0]
        cycle = " -> ".join(f"rank {b.rank} block {b.bid} step {p} ({b.ops[p].kind}) {why}"
                            for b, p, why in blocked[:8])
        rules.add("buffers", first.ops[pc].el, "step",
                  f"with connections that hold {capacity} unit(s) (proto="
                  f"{program.attrs.get('proto', 'Simple')}: a step of cnt chunks takes cnt) "
                  f"the program needs {min_capacity}: these thread blocks wait on each "
                  f"other forever: {cycle}")
    return min_capacity


def _copy_warning(program, modes, collective, topology, rules):
    """Add to the ``<copy>`` warning whether the program is still correct without them (what
    the runtime runs)."""
    bare = with_steps(program, None, copies=False)
    try:
        run = replay(bare, inplace=(modes or [False])[-1], topology=topology)
        first = (run.hang + run.problems)[:1]
        why = first[0][1] if first else (run.wrong_outputs[:1] or [None])[0]
    except TopocollError as exc:
        why = str(exc)
    if why:
        w = rules.warnings[0]
        rules.warnings[0] = Finding(w.rule, w.line, w.element, w.message + "; without them "
                                    f"the program is not a correct {collective} ({why})")
