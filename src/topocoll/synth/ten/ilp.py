"""ILP synthesis of chunk schedules on a time-expanded network (docs/math.md section 5,
TACOS-ILP).

The network is given as ``L`` directed links; link ``l`` carries one chunk at a time and a chunk
sent on it at slot ``t`` arrives at ``t + link_steps[l]``. A collective is a precondition
``pre[c, n]`` (node ``n`` holds chunk ``c`` at slot 0) and a postcondition ``post[c, n]``.
:func:`ilp_events` returns a schedule of sends ``(chunk, link, start)`` that meets the
postcondition with the smallest makespan (the last arrival slot) it can prove or find.

Formulation (one model per horizon ``T``, solved with HiGHS through ``highspy``):

* binary ``sent[c, l, t]`` (a send of ``c`` on ``l`` starting at ``t``) and ``hold[c, n, t]``
  in ``[0, 1]``. ``hold`` needs no integrality: ``hold[c, n, t] <= hold[c, n, t-1] + arrivals``
  caps it by an integer count, and ``sent <= hold[c, src, t]`` then only lets a binary send
  leave a node whose ``hold`` is 1, so integral sends force exact holds;
* at most one chunk in flight per link: the sends of ``l`` starting in ``(t - k_l, t]`` sum to
  at most 1;
* TACOS's objective, "maximise chunks delivered by t_f" (the needed ``(c, n)`` held at
  ``T``), is used where partial progress matters (early termination, time clustering). To
  decide whether ``T`` is feasible the needed holds at ``T`` are instead fixed to 1 with no
  objective: HiGHS answers that feasibility question 10-50 times faster, and an infeasible
  answer proves the makespan exceeds ``T``.

Variables are pruned exactly: ``sent[c, l, t]`` exists only if the sender can hold ``c`` at ``t``
(``t >= dist(holders of c, src)``), the receiver does not hold ``c`` already, and the arrival can
still reach some node needing ``c`` by ``T`` (``t + k_l + dist(dst, m) <= T``).

Why increasing horizons and not one makespan-objective model: every horizon model is as small as it
can be (a makespan objective needs the horizon of the upper bound and a makespan variable tied to
every send), an infeasible horizon is a proof that the makespan is larger (the reported
``lower_bound``), and a partial incumbent of the horizon being solved at the time limit is exactly
what TACOS's early termination completes. The search starts at a combinatorial lower bound
(distances and in-link capacities) and stops below an upper bound from earliest-arrival list
scheduling (several seeded routing orders), so it solves at most ``upper - lower`` models; often
none.

Early termination: when the time limit hits, the delivery-maximising model of the current
horizon (warm-started from the list schedule) runs in the last tenth of the limit, kept in
reserve; its incumbent's sends are kept and every missing delivery is routed along an
earliest-arrival path that respects link occupancy.
Time clustering (``window=w``): windows of ``w`` slots are solved in sequence, each maximising
weighted progress (deliveries first, then moving chunks closer to nodes needing them, earlier
is better) from the previous window's end state (holdings, chunks in flight, busy links).

The work is split by job: :mod:`.ilp_inputs` checks the inputs, :mod:`.ilp_bounds` computes
earliest arrivals and the lower bound, :mod:`.listsched` the list schedules (upper bound and
completion), :mod:`.ilp_model` builds and solves one model and :mod:`.ilp_search` runs the
horizon search and time clustering; this module is the public entry.

>>> import numpy as np
>>> n = 4                                    # unidirectional ring 0 -> 1 -> 2 -> 3 -> 0
>>> src = np.arange(n); dst = (src + 1) % n; steps = np.ones(n, dtype=np.int64)
>>> pre = np.eye(n, dtype=bool); post = np.ones((n, n), dtype=bool)   # allgather
>>> res = ilp_events(n, src, dst, steps, pre, post)
>>> res.makespan, res.status_name, res.optimal, len(res.events)
(3, 'SUCCESS', True, 12)
>>> res.events[:2].tolist()
[(0, 0, 0), (1, 1, 0)]
"""

import math
import time
from dataclasses import dataclass, field

import numpy as np

from ...results import Result, Status
from .greedy import EVENT_DTYPE  # one TEN send record, shared with the greedy
from .ilp_bounds import INF, check_reachable, distances, earliest, slot_lower_bound
from .ilp_inputs import check_partial, count, optional_count, validate_problem
from .ilp_search import MAX_WINDOWS, SearchContext, horizon_search, time_clusters
from .listsched import TRIALS, as_events, list_schedule, makespan, out_links

__all__ = ["ilp_events", "IlpResult", "EVENT_DTYPE", "STATUS_MESSAGES", "lower_bound",
           "shortest_path_events"]


#: What each result status (:mod:`topocoll.results`) means for the ILP.
STATUS_MESSAGES = {
    Status.SUCCESS: "optimal: makespan proven minimal",
    Status.LIMIT: "a time, node or model limit was reached: best schedule found returned, "
                  "minimality not proven",
    Status.NOT_PROVEN: "feasible schedule from time clustering, minimality not proven",
    Status.FAILED: "solver failed: best schedule found so far returned, minimality not proven",
}


@dataclass
class IlpResult(Result):
    """Outcome of :func:`ilp_events`: a :class:`~topocoll.results.Result` whose ``status`` is
    0 (``SUCCESS``: the makespan is proven minimal), 1 (``LIMIT``: a time, node or model limit
    stopped the search), 2 (``NOT_PROVEN``: time clustering) or 5 (``FAILED``: HiGHS failed);
    in every case ``events`` is a valid schedule (:data:`STATUS_MESSAGES`).

    Attributes
    ----------
    events : numpy.ndarray
        Structured array (:data:`EVENT_DTYPE`: ``chunk``, ``link``, ``start``) sorted by start.
    makespan : int
        Largest arrival slot (``start + link_steps[link]``); 0 when ``pre`` already meets
        ``post``.
    optimal : bool
        The makespan is proven minimal (``makespan == lower_bound``).
    lower_bound : int
        A proven lower bound on the makespan of any valid schedule.
    solves : int
        Number of ILP models solved.
    source : str
        Where the schedule came from: ``"pre"``, ``"ilp"``, ``"ilp+shortest-paths"``,
        ``"windows"``, ``"windows+shortest-paths"`` or ``"list-scheduling"``.
    """

    events: np.ndarray
    makespan: int
    optimal: bool
    lower_bound: int
    solves: int = 0
    source: str = field(default="ilp")


def lower_bound(num_nodes, link_src, link_dst, link_steps, pre, post):
    """A proven lower bound on the makespan, from distances and in-link capacities.

    The largest, over needed ``(c, n)``, of the distance in slots from the holders of ``c`` to
    ``n``; and for every node ``n`` the first horizon ``T`` at which its in-links can deliver
    all chunks it misses: link ``l`` delivers at most ``(T - s_l) // k_l`` of them, ``s_l`` the
    earliest slot its sender can hold one of them.

    >>> import numpy as np
    >>> src, dst = np.array([0, 1, 2]), np.array([1, 2, 0])       # ring of 3
    >>> lower_bound(3, src, dst, np.ones(3, int), np.eye(3, dtype=bool), np.ones((3, 3), bool))
    2
    """
    num_nodes, src, dst, steps, pre, post, _, _ = validate_problem(
        num_nodes, link_src, link_dst, link_steps, pre, post, 1.0, None)
    need = post & ~pre
    first = earliest(np.where(pre, 0, INF), src, dst, steps)
    check_reachable(first, need)
    return slot_lower_bound(first, need, src, dst, steps)


def shortest_path_events(num_nodes, link_src, link_dst, link_steps, pre, post, *, events=None,
                         seed=0, trials=TRIALS):
    """A valid schedule by earliest-arrival list scheduling, no ILP: the upper bound that
    :func:`ilp_events` starts from, and its early-termination completion when ``events`` (a
    valid partial schedule, :data:`EVENT_DTYPE`) is given. Returns ``(events, makespan)``;
    sends of the partial schedule that no needed delivery depends on are dropped.

    >>> import numpy as np
    >>> src, dst = np.array([0, 1, 1, 2]), np.array([1, 0, 2, 1])   # path 0 - 1 - 2
    >>> pre, post = np.eye(3, dtype=bool), np.ones((3, 3), bool)
    >>> ev, span = shortest_path_events(3, src, dst, np.ones(4, int), pre, post)
    >>> span, len(ev)
    (2, 6)
    >>> ev2, span2 = shortest_path_events(3, src, dst, np.ones(4, int), pre, post,
    ...                                   events=ev[:3])
    >>> span2, len(ev2)
    (2, 6)
    """
    num_nodes, src, dst, steps, pre, post, _, _ = validate_problem(
        num_nodes, link_src, link_dst, link_steps, pre, post, 1.0, None)
    trials = count("trials", trials, 1)
    need = post & ~pre
    first = earliest(np.where(pre, 0, INF), src, dst, steps)
    check_reachable(first, need)
    start = [] if events is None else check_partial(events, pre, src, dst, steps)
    best, best_span = list_schedule(pre, post, need, first, src=src, dst=dst, steps=steps,
                                    links_out=out_links(num_nodes, src),
                                    rng=np.random.default_rng(seed), trials=trials,
                                    start=start)
    return as_events(best), best_span


def ilp_events(num_nodes, link_src, link_dst, link_steps, pre, post, *, time_limit=None,
               node_limit=None, max_solves=None, window=None, early_stop=True, seed=0,
               progress=None):
    """Schedule chunk sends on a time-expanded network with an ILP (TACOS-ILP).

    Parameters
    ----------
    num_nodes : int
        Number of nodes.
    link_src, link_dst : array_like of int, shape (L,)
        Directed links (parallel links allowed, no self-loops).
    link_steps : array_like of int, shape (L,)
        Slots (>= 1) a chunk occupies each link; a send starting at ``t`` arrives at
        ``t + link_steps[l]``.
    pre, post : numpy.ndarray of bool, shape (num_chunks, num_nodes)
        Who holds chunk ``c`` at slot 0 / must hold it at the end.
    time_limit : float, optional
        Wall-clock seconds for all ILP solves together (the polynomial list scheduling that
        gives the upper bound is not counted). The first model is always tried. Default: none.
    node_limit : int, optional
        Branch-and-bound nodes per ILP model (HiGHS ``mip_max_nodes``): a limit that does not
        depend on the machine's speed.
    max_solves : int, optional
        ILP models at most (horizons, or windows with ``window``); reaching it stops the search
        with status 1, whatever the machine's speed.
    window : int, optional
        Time clustering: solve windows of this many slots in sequence.
    early_stop : bool
        At a limit, complete the best incumbent along shortest paths; if False, return the best
        *complete* schedule found so far instead.
    seed : int
        Seeds the routing orders of the list-scheduling bound and HiGHS.
    progress : callable, optional
        ``progress(done, total)`` after every solved model.

    Returns
    -------
    IlpResult

    Raises
    ------
    NotStronglyConnectedError
        A needed ``(chunk, node)`` cannot be reached from the chunk's holders (``.pair``).
    TopologyError, SpecError, InputTypeError
        Bad links, shapes or types.

    Examples
    --------
    Broadcast from node 0 over a bidirectional path 0 - 1 - 2 whose links take 2 slots:

    >>> import numpy as np
    >>> src, dst = np.array([0, 1, 1, 2]), np.array([1, 0, 2, 1])
    >>> pre = np.array([[True, False, False]]); post = np.ones((1, 3), dtype=bool)
    >>> res = ilp_events(3, src, dst, np.full(4, 2), pre, post, node_limit=1000)
    >>> res.makespan, res.optimal, res.events.tolist()
    (4, True, [(0, 0, 0), (0, 2, 2)])
    """
    num_nodes, src, dst, steps, pre, post, time_limit, window = validate_problem(
        num_nodes, link_src, link_dst, link_steps, pre, post, time_limit, window)
    node_limit = optional_count("node_limit", node_limit, 0)
    max_solves = optional_count("max_solves", max_solves, 1)
    need = post & ~pre
    first = earliest(np.where(pre, 0, INF), src, dst, steps)
    check_reachable(first, need)
    if not need.any():
        return IlpResult(as_events([]), 0, True, 0, 0, "pre", status=Status.SUCCESS,
                         message=STATUS_MESSAGES[Status.SUCCESS] + " (post holds at slot 0)")
    lb = slot_lower_bound(first, need, src, dst, steps)
    dist = distances(num_nodes, src, dst, steps)
    links_out = out_links(num_nodes, src)
    rng = np.random.default_rng(seed)
    upper, upper_span = list_schedule(pre, post, need, first, src=src, dst=dst, steps=steps,
                                      links_out=links_out, rng=rng, trials=TRIALS)
    # the time limit is for the ILP solves: list scheduling is polynomial and always runs
    deadline = math.inf if time_limit is None else time.monotonic() + time_limit
    ctx = SearchContext(pre=pre, post=post, need=need, src=src, dst=dst, steps=steps, dist=dist,
                        links_out=links_out, rng=rng, seed=seed, deadline=deadline,
                        early_stop=early_stop, progress=progress, time_limit=time_limit,
                        node_limit=node_limit, max_solves=max_solves or MAX_WINDOWS)
    if window is None:
        found = horizon_search(ctx, lb, upper, upper_span)
    else:
        found = time_clusters(ctx, window, lb, upper, upper_span)
    return _result(found, steps)


def _result(found, steps):
    """The :class:`IlpResult` of a search's :class:`~.ilp_search.Found`."""
    span = makespan(found.events, steps)
    lb = found.lower_bound
    optimal = span <= lb
    status = Status.SUCCESS if optimal else found.status
    message = STATUS_MESSAGES[status] + f" ({found.source}, makespan {span}, lower bound {lb}"
    message += f", {found.solves} ILP solves{found.note})"
    return IlpResult(as_events(found.events), span, optimal, min(lb, span), found.solves,
                     found.source, status=status, message=message)
