"""The finder over a grid: for every N and every d, which topology, how far from the bound,
and what came second, on this machine's cores or a Dask cluster.

:func:`sweep` answers :func:`~topocoll.finder.find` for every cell ``(N, d)`` of
``nodes x degrees`` at one buffer size: the Pareto frontier, the pick (the fastest predicted
candidate, with its allreduce built, verified and evaluated unless ``evaluate=False``), its
allreduce's steps, ``T_L`` and ``T_B``, the ratio to the two-phase bound and the runner-up.
Cells of one degree travel in chunks of consecutive sizes, so that a worker's search reuses
the bases it has measured (:func:`~topocoll.finder.find_range` does the same); the chunks run
on a :class:`~topocoll.batch.Pool` (local processes by default, a Dask cluster with
``scheduler``) and each cell's answer is written to the results cache as soon as its chunk
ends, under everything that decides it, so a killed sweep resumes where it stopped and two
sweeps share the cells they have in common. A cell that fails (no candidate builds and
verifies, a worker that dies, the time limit) is kept with its reason; the others go on.

The atlas does not depend on where it was computed: cells are sorted by ``(d, N)`` and carry
nothing of time or place, so one process, several and a cluster write the same bytes.

>>> r = sweep([16, 17], [2], evaluate=False, cache=False, workers=1)
>>> [(c["nodes"], c["pick"]) for c in r.cells]
[(16, 'line(dcirculant:8:1,3)'), (17, 'dcirculant:17:1,4')]
>>> r.computed, r.reused, r.failed
(2, 0, 0)
"""

import json
import time
from dataclasses import dataclass, field

from ..batch import Failure, TimeUp, open_pool, run_tasks
from ..batch.pools import CONNECT_TIMEOUT
from ..batch import time_limit as limited    # sweep's own time_limit is the whole run's
from ..errors import InputTypeError, TopocollError
from ..results import Result, Status, as_progress
from ..units import real_number, whole_number
from .cache import Cache
from .core import MAX_NODES, find, resolve_method
from .evaluation import (check_algorithms, cluster_settings, frontier, open_cache,
                         rank_by_time)
from .search import Search

__all__ = ["sweep", "SweepResult", "sweep_chunk", "family", "CSV_COLUMNS"]

#: Columns of the atlas CSV, in order.
CSV_COLUMNS = ("degree", "nodes", "status", "pick", "family", "kind", "steps", "T_L", "T_B",
               "time", "lower_bound", "ratio", "verified", "runner_up", "runner_up_family",
               "runner_up_ratio", "frontier_size", "error")


def family(name):
    """The family a candidate's name belongs to, for the atlas's map: ``line graph`` for an
    expansion (whatever it expands), ``product`` for a product of graphs (tori among them),
    else the generator's name.

    >>> family("line(line(optcirculant:16))"), family("torus:4x4"), family("genkautz:100,3")
    ('line graph', 'product', 'genkautz')
    """
    if name.startswith("line("):
        return "line graph"
    head = name.split(":", 1)[0].split("(", 1)[0]
    if head in ("product", "torus", "twistedtorus", "mesh"):
        return "product"
    return head


def _entry(candidate, time_, lower):
    return {"name": candidate.name, "family": family(candidate.name), "kind": candidate.kind,
            "steps": candidate.allreduce_steps, "time": time_, "ratio": time_ / lower}


def _cell(n, degree, store, settings, check):
    """One cell from :func:`find` (its frontier already in ``store``); ``check`` hears its
    progress (the cell's time limit)."""
    r = find(n, degree, settings["workload"], alpha=settings["alpha"],
             node_bandwidth=settings["node_bandwidth"],
             link_bandwidth=settings["link_bandwidth"], evaluate=settings["evaluate"],
             cache=store, products=settings["products"], algorithms=settings["algorithms"],
             method=settings["method"], progress=check,
             bidirectional=settings.get("bidirectional", False))
    lower = r.lower_bound
    _, order = rank_by_time(r.frontier, r.workload, r.alpha, r.node_bandwidth)
    if r.status == Status.FAILED:
        return {"nodes": n, "degree": degree, "status": "failed", "error": r.message,
                "lower_bound": lower}
    best = r.best
    cell = {"nodes": n, "degree": degree, "status": r.status_name.lower(), "pick": best.name,
            **{k: v for k, v in _entry(best, r.predicted_time, lower).items() if k != "name"},
            "lower_bound": lower, "predicted_time": r.predicted_time,
            "predicted_ratio": r.predicted_ratio, "verified": None}
    size = r.workload.sizes[0]
    t_l = 2 * best.steps * settings["alpha"]
    cell.update(T_L=t_l, T_B=r.predicted_time - t_l, size=size)
    if r.evaluation is not None:
        first = r.evaluation["sizes"][0]
        cell.update(steps=r.evaluation["steps"], T_L=first["T_L"], T_B=first["T_B"],
                    time=r.evaluated_time, ratio=r.ratio, verified=r.evaluation["verified"],
                    method=r.evaluation["method"], exact=r.evaluation["exact"])
    others = [i for i in order if r.frontier[i].name != best.name]
    cell["runner_up"] = (_entry(r.frontier[others[0]], r.times[others[0]], lower)
                         if others else None)
    cell["frontier"] = [{"name": r.frontier[i].name, "steps": r.frontier[i].allreduce_steps,
                         "time": r.times[i]} for i in order]
    return cell


def sweep_chunk(degree, sizes, settings, cell_limit=None):
    """The cells ``(N, degree)`` for ``N`` in ``sizes`` (one worker's task): ``[(N, cell)]``;
    a cell that raises a topocoll error, or takes more than ``cell_limit`` seconds
    (:func:`topocoll.batch.time_limit`), becomes ``{"status": "failed", "error": ...}``."""
    store = open_cache(settings["cache"])
    try:
        two_way = settings.get("bidirectional", False)
        search = Search(degree, store, products=settings["products"], bidirectional=two_way)
        out = []
        for n in sizes:
            try:
                with limited(cell_limit) as check:
                    frontier(n, degree, cache=store, products=settings["products"],
                             search=search, progress=check, bidirectional=two_way)
                    out.append((n, _cell(n, degree, store, settings, check)))
            except (TopocollError, MemoryError, TimeUp) as exc:
                out.append((n, {"nodes": n, "degree": degree, "status": "failed",
                                "error": f"{type(exc).__name__}: {exc}"}))
        return out
    finally:
        store.close()


@dataclass
class SweepResult(Result):
    """What :func:`sweep` found: ``cells`` (one dict per ``(N, d)``, sorted by ``(d, N)``;
    see :data:`CSV_COLUMNS`), ``computed`` and ``reused`` (cells computed in this call and
    taken from the results cache), ``failed`` (cells without an answer, each with its
    ``error``), ``settings`` and ``seconds``. ``status``: 0 every cell answered, 5 some failed.
    """

    cells: list = field(default_factory=list)
    computed: int = 0
    reused: int = 0
    failed: int = 0
    settings: dict = field(default_factory=dict)
    pool: str = ""
    seconds: float = 0.0

    def to_dict(self):
        return {**super().to_dict(), "settings": dict(self.settings), "cells": self.cells,
                "computed": self.computed, "reused": self.reused, "failed": self.failed,
                "pool": self.pool, "seconds": self.seconds}

    def atlas(self):
        """The cells and settings alone, as sorted JSON text: the same bytes wherever and
        however they were computed (no times, no counts of cache hits)."""
        return json.dumps({"settings": self.settings, "cells": self.cells}, indent=1,
                          sort_keys=True) + "\n"

    def csv_rows(self):
        """One row per cell, the columns of :data:`CSV_COLUMNS`."""
        for c in self.cells:
            up = c.get("runner_up") or {}
            row = {**{k: c.get(k) for k in CSV_COLUMNS}, "runner_up": up.get("name"),
                   "runner_up_family": up.get("family"), "runner_up_ratio": up.get("ratio"),
                   "frontier_size": len(c.get("frontier", ()))}
            yield [row[k] for k in CSV_COLUMNS]


def _cell_key(n, degree, settings):
    keep = {k: v for k, v in settings.items() if k != "cache"}
    return f"nodes={n};degree={degree};" + json.dumps(keep, sort_keys=True)


def _settings(size, alpha, node_bandwidth, link_bandwidth, evaluate, products, algorithms,
              method, cache, bidirectional=False):
    _, _, alpha, bandwidth, workload, link = cluster_settings(
        16, 2, alpha, node_bandwidth, size, link_bandwidth=link_bandwidth)
    if len(workload.sizes) != 1:
        raise InputTypeError("a sweep takes one buffer size (size='1MiB'), got "
                             f"{len(workload.sizes)}")
    if method not in ("auto", "explicit", "construction"):
        resolve_method(method, 16)        # raises the one error for an unknown method
    # per-node egress as given (or None): every cell prices with its own degree
    out = {"workload": workload.sizes[0], "alpha": alpha,
           "node_bandwidth": bandwidth if link is None else None,
           "link_bandwidth": link, "evaluate": bool(evaluate), "products": bool(products),
           "algorithms": list(check_algorithms(algorithms)), "method": method,
           "cache": cache if isinstance(cache, bool) else str(cache)}
    if bidirectional:   # in the cells' cache keys; unrestricted keys (and atlases) as they were
        out["bidirectional"] = True
    return out


def _grid(nodes, degrees):
    sizes = sorted({whole_number(n, "nodes", 2, most=MAX_NODES) for n in nodes})
    degs = sorted({whole_number(d, "degree", 1) for d in degrees})
    if not sizes or not degs:
        raise InputTypeError("a sweep needs at least one size and one degree")
    return sizes, degs


def _chunks(missing, chunk):
    """``(degree, [N, ...])`` tasks of at most ``chunk`` consecutive missing sizes."""
    by_degree = {}
    for n, d in missing:
        by_degree.setdefault(d, []).append(n)
    out = []
    for d, sizes in by_degree.items():
        out += [(d, sizes[i:i + chunk]) for i in range(0, len(sizes), chunk)]
    return out


def _answer(missing, chunk, settings, pool, limits, store, cells, total, progress):
    """Run the chunks of the ``missing`` cells on ``pool``, putting each answer into ``cells``
    and the cache as its chunk ends (a failed chunk: each of its cells failed, not cached);
    ``limits`` is the sweep's deadline and each cell's seconds."""
    deadline, cell_limit = limits
    tasks = [((d, tuple(sizes)), (d, sizes, settings, cell_limit))
             for d, sizes in _chunks(missing, chunk)]
    failed = 0
    for (d, sizes), outcome in run_tasks(sweep_chunk, tasks, pool, deadline=deadline,
                                         window=pool.workers + 1):
        if isinstance(outcome, Failure):
            outcome = [(n, {"nodes": n, "degree": d, "status": "failed",
                            "error": outcome.reason}) for n in sizes]
        with store.batch():
            for n, cell in outcome:
                cells[(d, n)] = cell
                if cell["status"] == "failed":
                    failed += 1
                else:
                    store.put("sweep", _cell_key(n, d, settings), cell)
        if progress:
            progress(len(cells), total, f"{failed} failed" if failed else None)


def sweep(nodes, degrees, size="1MiB", *, alpha="10us", node_bandwidth=None,
          link_bandwidth=None, evaluate=True, products=True, algorithms=("bfb",),
          method="auto", cache=True, workers=None, scheduler=None, chunk=None,
          time_limit=None, cell_time_limit=None, progress=None, bidirectional=False):
    """The finder's answer for every ``(N, d)`` in ``nodes x degrees`` (see the module).

    Parameters
    ----------
    nodes, degrees : iterable of int
        The sizes N (>= 2) and port counts d (>= 1) of the grid.
    size : size
        The allreduce buffer size M (one).
    alpha, node_bandwidth, link_bandwidth, evaluate, products, algorithms, method
        As for :func:`~topocoll.finder.find` (100 Gbps links and 10 us by default).
    cache : bool or path
        The results cache (default: the user's), which keeps every answered cell; ``False``:
        none (nothing resumes).
    workers : int, optional
        Local processes (default: one per core; 1: this process).
    scheduler : str, optional
        A Dask scheduler's address (``tcp://HOST:8786``) to run on its cluster instead.
    chunk : int, optional
        Sizes per task (default 16 with ``evaluate=False``, else 4).
    time_limit : float, optional
        Seconds; stop after this long: cells not answered by then fail with that reason (answered
        ones stay cached).
    cell_time_limit : float, optional
        Seconds one cell may take (its frontier, pick and evaluation); a cell past it fails
        with that reason and its chunk goes on (:func:`topocoll.batch.time_limit`: at once on
        local processes, at the finder's next progress report on a Dask cluster).
    progress : callable, optional
        ``progress(done, total, stage)`` per cell; ``stage`` counts the failures.
    bidirectional : bool
        Only bidirectional topologies in every cell (as :func:`~topocoll.finder.find`); it is
        part of the cells' cache keys and of the atlas's settings, so a restricted sweep and
        an unrestricted one never share cells. A cell with no bidirectional topology fails
        with that reason.

    Returns
    -------
    SweepResult
    """
    started = time.perf_counter()
    sizes, degs = _grid(nodes, degrees)
    settings = _settings(size, alpha, node_bandwidth, link_bandwidth, evaluate, products,
                         algorithms, method, cache, bidirectional)
    chunk = whole_number(chunk if chunk is not None else (4 if evaluate else 16), "chunk", 1)
    limit = None if time_limit is None else real_number(time_limit, "time_limit", above=0)
    cell_limit = None if cell_time_limit is None else real_number(cell_time_limit,
                                                                  "cell_time_limit", above=0)
    store = cache if isinstance(cache, Cache) else open_cache(cache)
    try:
        cells = {(d, n): doc for d in degs for n in sizes
                 if (doc := store.get("sweep", _cell_key(n, d, settings))) is not None}
        reused = len(cells)
        missing = [(n, d) for d in degs for n in sizes if (d, n) not in cells]
        described = ""
        if missing:
            deadline = None if limit is None else time.monotonic() + limit
            # the time limit holds for reaching the cluster too, not only for its answers
            reach = CONNECT_TIMEOUT if limit is None else min(CONNECT_TIMEOUT, limit)
            with open_pool(workers, scheduler, timeout=reach) as pool:
                described = pool.description
                _answer(missing, chunk, settings, pool, (deadline, cell_limit), store, cells,
                        len(sizes) * len(degs), as_progress(progress))
    finally:
        if not isinstance(cache, Cache):
            store.close()
    total = len(sizes) * len(degs)
    ordered = [cells[(d, n)] for d in degs for n in sizes]
    failed = sum(c["status"] == "failed" for c in ordered)
    computed = total - reused - failed
    shown = {k: v for k, v in settings.items() if k != "cache"}
    message = (f"{total} cells ({len(degs)} degrees x {len(sizes)} sizes): {computed} computed, "
               f"{reused} from the cache, {failed} failed")
    return SweepResult(status=Status.FAILED if failed else Status.SUCCESS, message=message,
                       cells=ordered, computed=computed, reused=reused, failed=failed,
                       settings=shown, pool=described,
                       seconds=time.perf_counter() - started)
