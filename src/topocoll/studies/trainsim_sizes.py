"""Training simulated at several cluster sizes at once: :func:`train_sim` for every N, each a
task on :mod:`topocoll.batch` (this process, local processes or a Dask cluster).

Each size runs the finder for its N (its answer cached as :func:`~topocoll.finder.find` keeps
it), our allreduce and the baselines priced as for one size; a size that fails is recorded
with its reason and the others go on.

>>> from topocoll.studies.resolve import resolve_workload
>>> r = train_sim_sizes(resolve_workload("resnet50"), [8, 12], cache=False, workers=1)
>>> [row["nodes"] for row in r.sizes], r.success
([8, 12], True)
"""

import os
from dataclasses import dataclass, field

from ..errors import InputTypeError, UnsupportedError
from ..results import Result, Status
from .trainsim import check_options, train_sim
from .workloads import TrainingWorkload

__all__ = ["TrainSimSizesResult", "train_sim_sizes", "MAX_SIZES"]

#: Most cluster sizes one call simulates.
MAX_SIZES = 4096

#: Options of :func:`train_sim` that fix the cluster, so that they cannot go with several sizes.
_ONE_CLUSTER = ("schedule", "topology", "found")


@dataclass
class TrainSimSizesResult(Result):
    """What :func:`train_sim_sizes` found: ``sizes``, one document per N in increasing N (a
    :meth:`TrainSimResult.to_dict`, or for a size that failed ``{"nodes": N, "error": why}``),
    ``failed`` the sizes without an answer, ``where`` where the tasks ran, in words."""

    sizes: list = field(default_factory=list)
    failed: list = field(default_factory=list)
    where: str = ""

    def to_dict(self):
        return {**super().to_dict(), "sizes": self.sizes, "failed": self.failed,
                "where": self.where}


def _size_task(workload, nodes, options, cache):
    """One size: :func:`train_sim` with its own handle on the results cache (a task runs in
    another process, maybe another machine), its JSON document returned."""
    from ..finder.evaluation import open_cache

    store = open_cache(cache)
    with store:
        return train_sim(workload, nodes=nodes, cache=store, **options).to_dict()


def _check_sizes(nodes):
    if isinstance(nodes, (int, str)) or not hasattr(nodes, "__iter__"):
        raise InputTypeError(f"nodes must be a sequence of cluster sizes, got {nodes!r}")
    sizes = []
    for n in nodes:
        if isinstance(n, bool) or not isinstance(n, int):
            raise InputTypeError(f"every size must be an integer, got {n!r}")
        sizes.append(n)
    if not sizes:
        raise UnsupportedError("give at least one cluster size")
    if len(set(sizes)) > MAX_SIZES:
        raise UnsupportedError(f"at most {MAX_SIZES} sizes at once, got {len(set(sizes))}")
    return sorted(set(sizes))


def train_sim_sizes(workload, nodes, *, workers=None, scheduler=None, cache=True,
                    progress=None, **options):
    """:func:`~topocoll.studies.trainsim.train_sim` at every N of ``nodes``.

    Parameters
    ----------
    workload : TrainingWorkload
        The model trained, as for :func:`train_sim`.
    nodes : sequence of int
        The cluster sizes (each at least 3; repeats dropped).
    workers, scheduler : optional
        Where the sizes run (:func:`topocoll.batch.open_pool`): ``workers`` local processes
        (default: one per core; 1: this process) or the Dask cluster at ``scheduler``.
    cache : bool or path
        The results cache each size's finder reads and fills (default: the user's).
    progress : callable, optional
        ``progress(done, total, stage)`` as sizes end.
    **options
        :func:`train_sim`'s other options (``degree``, ``alpha``, ``policy``, ...), the same
        for every size; not ``schedule``, ``topology`` or ``found``, which fix the cluster.

    Returns
    -------
    TrainSimSizesResult
        Status SUCCESS when every size has its answer, else FAILED, its message naming the
        sizes that failed.
    """
    from ..batch import Failure, open_pool, run_tasks

    if not isinstance(workload, TrainingWorkload):
        raise InputTypeError(f"workload must be a TrainingWorkload, got "
                             f"{type(workload).__name__}")
    fixed = [name for name in _ONE_CLUSTER if options.get(name) is not None]
    if fixed:
        raise UnsupportedError(f"{fixed[0]} gives one cluster; several sizes take the "
                               "finder's topology for each N")
    sizes = _check_sizes(nodes)
    for n in (sizes[0], sizes[-1]):     # bad options refused before any task starts
        check_options(n, options.get("degree"), **{k: v for k, v in options.items()
                                                    if k in ("comm_model", "policy",
                                                             "bucket_size", "iterations")})
    if isinstance(cache, os.PathLike):
        cache = os.fspath(cache)
    if not isinstance(cache, (bool, str)):
        raise InputTypeError("cache must be True, False or a path (each task opens its own)")
    docs, failed = {}, []
    with open_pool(workers, scheduler) as pool:
        tasks = [(n, (workload, n, options, cache)) for n in sizes]
        for n, outcome in run_tasks(_size_task, tasks, pool, progress=progress):
            if isinstance(outcome, Failure):
                docs[n] = {"nodes": n, "error": outcome.reason}
                failed.append(n)
            else:
                docs[n] = outcome
        where = pool.description
    failed.sort()
    if failed:
        status, message = Status.FAILED, (f"{len(failed)} of {len(sizes)} sizes failed: "
                                          + ", ".join(f"{n} ({docs[n]['error']})"
                                                      for n in failed[:3]))
    else:
        status, message = Status.SUCCESS, f"{len(sizes)} sizes simulated on {where}"
    return TrainSimSizesResult(status=status, message=message,
                               sizes=[docs[n] for n in sizes], failed=failed, where=where)
