"""What a generated schedule's ``meta`` says beyond steps and transfers, read in one place: the
generators write their own meta keys (``chunk_loss`` of ``bfb --chunks``, ``lp_time_per_byte``
and ``rounds`` of ``lp``, ``optimum`` of ``trees``, ``ilp_status`` of ``ten``), and
:func:`generator_summary` turns them into report sentences and JSON fields, so that callers
(``topocoll schedule``) need not know them.

>>> from topocoll.synth import generate
>>> s = generate("ring:4", "allgather", "bfb", chunks=3)
>>> summary = generator_summary(s)
>>> summary.notes[0].startswith("3 chunks per shard cost"), summary.status.name
(True, 'SUCCESS')
>>> summary.text.startswith("; 3 chunks per shard")
True
>>> generator_summary(generate("ring:4", "allgather", "bfb")).text
''
"""

from dataclasses import dataclass, field

from .. import defaults
from ..results import Status
from ..schedule.cost import bandwidth_lower_bound, evaluate
from ..units import format_size, parse_size

__all__ = ["GeneratorSummary", "generator_summary"]


@dataclass(frozen=True)
class GeneratorSummary:
    """The generator-specific part of a schedule's report.

    Attributes
    ----------
    notes : tuple of str
        Sentences for the one-line report, in order (none for most generators).
    facts : dict
        Fields for a JSON report: for ``lp``, the ``size`` it is priced at, ``lp_time``,
        ``T_L``, ``T_B``, ``time`` and the ratios ``T_B_over_lp_time`` (with its bound
        ``T_B_over_lp_time_bound``) and ``time_over_lp_time``.
    status : Status or int
        The generator's own result status (a TEN ILP's ``ilp_status``, as stored), else
        ``SUCCESS``.
    """

    notes: tuple = ()
    facts: dict = field(default_factory=dict)
    status: Status = Status.SUCCESS

    @property
    def text(self):
        """The notes as they end the report line: each after ``"; "``."""
        return "".join(f"; {note}" for note in self.notes)


def generator_summary(schedule, topology=None, *, size=None):
    """The :class:`GeneratorSummary` of a generated ``schedule``.

    ``topology`` (default: the schedule's) is the network the ``trees`` optimum is compared
    on; ``size`` (bytes or a size string; default :data:`topocoll.defaults.SIZE`) the buffer an
    ``lp`` schedule is priced at, the one its rounds were chosen for.
    """
    meta = schedule.meta
    topology = schedule.topology if topology is None else topology
    notes, facts = [], {}
    if "chunk_loss" in meta:
        notes.append(f"{meta['chunks']} chunks per shard cost {100 * meta['chunk_loss']:.2f}% "
                     f"bandwidth time over the fractional optimum (bound "
                     f"{100 * meta['chunk_loss_bound']:.2f}%)")
    if meta.get("lp_time_per_byte"):
        # priced at the one size M the rounds were chosen for: T_B and T_L + T_B against the
        # LP time (M/N)/lambda at M
        m = parse_size(defaults.SIZE if size is None else size, what="size")
        ev = evaluate(schedule, m, check=False)
        lp_time = m * meta["lp_time_per_byte"]
        rounds = meta["rounds"]
        most = (rounds + meta["longest_path"] - 1) / rounds
        facts = {"size": m, "lp_time": lp_time, "T_L": ev.T_L, "T_B": ev.T_B, "time": ev.time,
                 "T_B_over_lp_time": ev.T_B / lp_time, "T_B_over_lp_time_bound": most,
                 "time_over_lp_time": ev.time / lp_time}
        notes.append(f"{rounds} rounds for {format_size(m)}: step-model T_B "
                     f"{ev.T_B / lp_time:.3f} x the LP time (bound {most:.3f}), T_L + T_B "
                     f"{ev.time / lp_time:.3f} x it")
    if schedule.algorithm == "trees" and "optimum" in meta:
        node = bandwidth_lower_bound(schedule.collective, topology, schedule.root) \
            / float(meta["optimum"])
        best = ("the two-phase optimum T* (the best reduce-scatter followed by an allgather)"
                if schedule.collective.name == "allreduce" else "the exact optimum T*")
        notes.append(f"{meta['trees']} trees of depth <= {meta['max_depth']}, "
                     f"{meta['chunks']} chunks: T_B {meta['ratio']:.4f} x {best} (the lower "
                     f"bound is {node:.4f} x T*)")
    if "expand" in meta and "predicted" in meta:
        facts = _expand_facts(schedule, meta)
        notes.append(f"{facts['measured']['steps']} steps and T_B {facts['measured']['T_B']:.6g}"
                     f" M/B against the closed forms' {facts['predicted']['steps']} and "
                     f"{facts['predicted']['T_B']:.6g}")
    return GeneratorSummary(tuple(notes), facts, meta.get("ilp_status", Status.SUCCESS))


def _expand_facts(schedule, meta):
    """The ``expand`` generator's JSON fields: its spec and leaf, the closed forms' steps and
    T_B (units of M/B) and the schedule's own."""
    from .expansions import measure  # only expand's schedules need the expansions

    steps, t_b = measure(schedule)
    return {"spec": meta["expand"]["spec"], "leaf": meta["expand"]["leaf"],
            "predicted": {"steps": meta["predicted"]["steps"], "T_B": meta["predicted"]["t_b"]},
            "measured": {"steps": steps, "T_B": t_b}}
