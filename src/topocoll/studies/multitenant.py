"""The multi-tenant job of ``topocoll synth -c A -c B ...``: several collectives synthesized
together on one network (:func:`~topocoll.synth.ten.tenants.synthesize_tenants`), each checked
by the independent verifier, timed together in the link model, which takes their shared links
into account (:func:`~topocoll.schedule.linkmodel.simulate_many`), and written one file per
tenant.

It lives here, not beside the synthesizer, because the synthesizer never imports the simulator
that judges it.

>>> run = run_tenants("mesh:3x3", ["allgather", "broadcast:4"])
>>> run.statuses, len(run.finish_times), run.time == max(run.finish_times)
(['verified', 'verified'], 2, True)
>>> sorted(run.to_dict()["tenants"][0])[:3]
['collective', 'finish_slots', 'link_model_time']
"""

import os
from dataclasses import dataclass, field

from .. import defaults
from ..errors import FileAccessError, InvalidScheduleError, UnsupportedError
from ..schedule.io import save_schedule
from ..schedule.linkmodel import simulate_many
from ..schedule.verify import verify as _verify
from ..synth.ten.tenants import TenantsResult, synthesize_tenants

__all__ = ["run_tenants", "TenantsRun", "check_synthesized", "tenant_file"]


@dataclass
class TenantsRun:
    """What :func:`run_tenants` did.

    Attributes
    ----------
    result : TenantsResult
        The schedules, their finish slots and the shared time step.
    statuses : list of str
        Per tenant, ``"verified"`` or ``"not verified"`` (the check was skipped).
    finish_times : list of float
        Per tenant, its finish time in seconds in the link model, all tenants sharing the
        network.
    files : list of str
        The schedule files written, one per tenant (empty without an output folder).
    """

    result: TenantsResult
    statuses: list
    finish_times: list
    files: list = field(default_factory=list)

    @property
    def time(self):
        """When the last tenant finishes (seconds; 0 without tenants)."""
        return max(self.finish_times, default=0.0)

    def to_dict(self):
        """JSON-ready: :meth:`TenantsResult.to_dict` with the finish times (each tenant's
        ``link_model_time`` and their maximum ``time``) and whether each tenant was
        ``verified``."""
        doc = self.result.to_dict(finish_times=self.finish_times)
        for row, status in zip(doc["tenants"], self.statuses):
            row["verified"] = status == "verified"
        return doc


def check_synthesized(schedule, verify=True):
    """``"verified"`` if ``schedule`` passes the independent verifier, ``"not verified"`` when
    ``verify`` is False; a schedule that fails is a synthesizer bug, raised as
    :class:`~topocoll.errors.InvalidScheduleError` rather than handed out."""
    if not verify:
        return "not verified"
    report = _verify(schedule)
    if not report.valid:
        raise InvalidScheduleError(f"synthesized schedule failed verification: "
                                   f"{report.summary()}", report=report)
    return "verified"


def tenant_file(folder, index, schedule):
    """The file of tenant ``index`` in ``folder``: ``tenant<index>-<collective>.json``."""
    return os.path.join(folder, f"tenant{index}-{schedule.collective.name}.json")


def run_tenants(topology, tenants, *, verify=True, output=None, size=defaults.SYNTHESIS_SIZE,
                progress=None, method="greedy", time_limit=None, node_limit=None, **options):
    """Synthesize ``tenants`` together on ``topology``, verify each schedule (unless
    ``verify`` is False), time them together in the link model at buffer ``size`` and, with
    ``output`` (a folder, created if missing), write one schedule file per tenant
    (:func:`tenant_file`).

    ``options`` (``chunks``, ``seed``, ``unwind_degree``, ``fail_links``, ``fail_nodes``,
    ``time_step``) and ``progress`` go to
    :func:`~topocoll.synth.ten.tenants.synthesize_tenants` (``method="greedy"``), or the
    options with ``time_limit`` and ``node_limit`` to
    :func:`~topocoll.synth.ten.tenants_ilp.ilp_tenants` (``method="ilp"``: one ILP over
    every tenant; ``progress`` is not reported).

    Returns
    -------
    TenantsRun

    Raises
    ------
    InvalidScheduleError
        A synthesized schedule failed verification (nothing is written).
    FileAccessError
        The output folder cannot be created.
    """
    if method == "ilp":
        # imported here: the ILP loads scipy, which a greedy synth must not pay for at start-up
        from ..synth.ten.tenants_ilp import ilp_tenants

        res = ilp_tenants(topology, list(tenants), size=size, time_limit=time_limit,
                          node_limit=node_limit, **options)
    elif method == "greedy":
        res = synthesize_tenants(topology, list(tenants), size=size, progress=progress,
                                 **options)
    else:
        raise UnsupportedError(f"several tenants are synthesized by greedy or ilp, not "
                               f"{method!r}")
    statuses = [check_synthesized(s, verify) for s in res.schedules]
    finish = [r.time for r in simulate_many(res.schedules, size)]  # shared links
    files = []
    if output:
        try:
            os.makedirs(output, exist_ok=True)
        except OSError as exc:
            raise FileAccessError(f"cannot create {output}: {exc.strerror}") from None
        for i, s in enumerate(res.schedules):
            path = tenant_file(output, i, s)
            save_schedule(s, path)
            files.append(path)
    return TenantsRun(res, statuses, finish, files)
