"""Batch work on this machine's cores or a Dask cluster: one layer for every job of many
independent tasks (:func:`topocoll.finder.sweep` among them).

- :func:`open_pool` -- this process, local processes, or a ``dask.distributed`` cluster;
- :func:`run_tasks` -- run tasks on it, hearing of each as it ends; failures are outcomes;
- :func:`time_limit` -- a time limit on one piece of a task, enforced in the worker.
"""

from ..lazy import lazy_attributes

# Public names -> the module that defines them, imported on first use (PEP 562).
_LAZY = {
    ".pools": ("Pool", "open_pool", "local_cores"),
    ".tasks": ("Failure", "run_tasks"),
    ".clock": ("TimeUp", "time_limit"),
}

__all__ = ["Pool", "open_pool", "local_cores", "Failure", "run_tasks", "TimeUp", "time_limit"]

__getattr__, __dir__ = lazy_attributes(__name__, _LAZY, __all__)
