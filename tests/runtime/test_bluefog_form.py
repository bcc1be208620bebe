"""Bluefog's call form of neighbor_allreduce (topocoll.runtime.bluefog) on gloo groups of 4 and 8
forked processes: Bluefog's two documented snippets run with the import and the set-up lines
adapted, and give what the explicit matrix products give (one-peer exponential gossip: the
exact mean after log2 n iterations, not before); a send without its receive, and bad arguments
on one rank, end every rank at once with a one-line error; the one-peer schedule's lists are
those of topocoll's own topologies.

Bluefog's snippets, and what changed in them:

* ``import bluefog.torch as bf`` -> ``import topocoll.runtime as bf``; ``bf.init()`` -> the
  group run_local makes; ``bf.rank()`` / ``bf.size()`` -> the worker's ``rank`` / ``size``;
* dynamic: ``topology_util.GetDynamicOnePeerSendRecvRanks(bf.load_topology(), bf.rank())`` ->
  ``bf.one_peer_exp_send_recv(size, rank)`` (the same lists on Bluefog's default graph);
* static: ``bf.set_topology(topology_util.RingGraph(bf.size()))`` and ``bf.neighbor_allreduce(x)``
  -> the ring's weights for this rank, passed as ``self_weight=`` / ``neighbor_weights=``
  (topocoll has no global topology; the send lists are learned from the other ranks).
"""

import math
import time

import numpy as np
import pytest
import torch
import torch.distributed as dist

from tests.helpers import mix_in_order
from topocoll.errors import InputTypeError, TopologyError
from topocoll.gossip import gossip_topology
from topocoll.runtime import (neighbor_allreduce, one_peer_exp_send_recv, run_local,
                              single_process_group)
from topocoll.runtime.bluefog import bluefog_plan

STATIC_ITERS = 100      # Bluefog's static snippet: range(100)


# -- Bluefog's snippets, as every rank runs them ----------------------------------------------

def dynamic_snippet(rank, size, n_iters):
    import topocoll.runtime as bf

    dynamic_neighbors_gen = bf.one_peer_exp_send_recv(size, rank)
    x = torch.Tensor([rank])
    trajectory, lists = [x.item()], []
    for ite in range(n_iters):
        send_neighbors, recv_neighbors = next(dynamic_neighbors_gen)
        neighbor_weights = {r: 1 / (len(recv_neighbors) + 1) for r in recv_neighbors}
        self_weight = 1 / (len(recv_neighbors) + 1)
        x = bf.neighbor_allreduce(x, self_weight=self_weight, neighbor_weights=neighbor_weights,
                                  send_neighbors=send_neighbors, name='x')
        trajectory.append(x.item())
        lists.append((send_neighbors, recv_neighbors))
    return trajectory, lists


def static_snippet(rank, size):
    import topocoll.runtime as bf

    self_weight, neighbor_weights = gossip_topology("ring-graph", size).in_neighbors(0, rank)
    x = torch.Tensor([rank])
    for _ in range(STATIC_ITERS):
        x = bf.neighbor_allreduce(x, self_weight=self_weight, neighbor_weights=neighbor_weights)
    return x.item()


def _count_gathers(fn):
    """``fn()``'s result and how many all_gathers it made (this process only)."""
    real, calls = dist.all_gather, []

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)
    dist.all_gather = counting
    try:
        return fn(), len(calls)
    finally:
        dist.all_gather = real


def _timed_error(call):
    """``(class name, message, seconds)`` of what ``call()`` raised (None if nothing)."""
    start = time.monotonic()
    try:
        call()
    except Exception as exc:
        return type(exc).__name__, str(exc), time.monotonic() - start
    return None


def _one_peer_args(rank, size, k):
    """Bluefog's one-peer exponential arguments of iteration ``k`` for ``rank``."""
    shift = 1 << (k % (size - 1).bit_length())
    return dict(self_weight=0.5, neighbor_weights={(rank - shift) % size: 0.5},
                send_neighbors=[(rank + shift) % size])


def _variants(rank, size):
    """The same averaging called other ways: explicit send lists, no check (and its alias),
    the network path, async; with the all_gathers each made."""
    x = torch.tensor([float(rank), 2.0 * rank + 1], dtype=torch.float64)
    out = {}
    for label, extra in (("checked", {}), ("check_off", {"check": False}),
                         ("alias_off", {"enable_topo_check": False}),
                         ("network", {"transport": "network"})):
        out[label] = _count_gathers(
            lambda extra=extra: neighbor_allreduce(x, **_one_peer_args(rank, size, 1),
                                                   **extra).numpy())
    out["async"] = neighbor_allreduce(x, **_one_peer_args(rank, size, 1), async_op=True,
                                      tag=7).wait().numpy()
    # the static ring with its send lists spelt out, as Bluefog's dynamic form would
    self_weight, weights = gossip_topology("ring-graph", size).in_neighbors(0, rank)
    out["explicit_sends"] = neighbor_allreduce(x, self_weight=self_weight,
                                               neighbor_weights=weights,
                                               send_neighbors=sorted(weights)).numpy()
    out["inferred_sends"] = neighbor_allreduce(x, self_weight=self_weight,
                                               neighbor_weights=weights).numpy()
    out["matrix"] = neighbor_allreduce(x, gossip_topology("ring-graph", size)).numpy()
    return out


def _errors(rank, size):
    """Planted inconsistencies and bad arguments on one rank: what every rank hears."""
    one = torch.ones(3)
    nxt, prev = (rank + 1) % size, (rank - 1) % size
    ring = dict(self_weight=0.5, neighbor_weights={prev: 0.5})
    cases = {
        # rank 0 also sends to rank 2, which does not expect it
        "extra_send": lambda: neighbor_allreduce(
            one, **ring, send_neighbors=[nxt] + ([2] if rank == 0 else []), name="x"),
        # rank 3 expects rank 1 too, which does not send to it
        "extra_recv": lambda: neighbor_allreduce(
            one, self_weight=0.5, send_neighbors=[nxt],
            neighbor_weights={prev: 0.5, **({1: 0.25} if rank == 3 else {})}),
    }
    bad = {"negative": {-1: 0.5}, "too_large": {size: 0.5}, "self": {rank: 0.5},
           "not_a_dict": [(prev, 0.5)]}
    for label, weights in bad.items():
        cases[label] = lambda weights=weights: neighbor_allreduce(
            one, self_weight=0.5, send_neighbors=[nxt],
            neighbor_weights=weights if rank == 1 else {prev: 0.5})
    cases["self_send"] = lambda: neighbor_allreduce(
        one, **ring, send_neighbors=[nxt, rank] if rank == 1 else [nxt])
    out = {label: _timed_error(call) for label, call in cases.items()}
    # the group still works afterwards: nobody sent a thing
    out["after"] = neighbor_allreduce(one * rank, **ring, send_neighbors=[nxt]).tolist()
    return out


def _all(rank, size):
    steps = int(math.log2(size)) + 2
    return {"dynamic": dynamic_snippet(rank, size, steps), "static": static_snippet(rank, size),
            "variants": _variants(rank, size), "errors": _errors(rank, size)}


@pytest.fixture(scope="module", params=[4, 8], ids=lambda n: f"world{n}")
def world(request):
    n = request.param
    return n, run_local(_all, n, start_method="fork", timeout=120)


# -- the snippets give what the theory says ------------------------------------------------------

def _matrix(n, lists_of_ranks):
    """W of one iteration from every rank's Bluefog lists (weights 1/(1 + #received))."""
    w = np.zeros((n, n))
    for i, (sends, recvs) in enumerate(lists_of_ranks):
        w[i, i] = 1 / (len(recvs) + 1)
        for j in recvs:
            w[i, j] = 1 / (len(recvs) + 1)
    return w


def test_dynamic_one_peer_snippet_reaches_the_exact_mean_after_log2_n(world):
    n, res = world
    steps = int(math.log2(n))
    got = np.array([res[r]["dynamic"][0] for r in range(n)])       # (rank, iteration)
    x = np.arange(n, dtype=np.float64)
    for k in range(steps + 2):
        x = _matrix(n, [res[r]["dynamic"][1][k] for r in range(n)]) @ x
        np.testing.assert_allclose(got[:, k + 1], x, rtol=1e-6)
    mean = (n - 1) / 2
    assert np.all(got[:, steps:] == mean)                           # exact, and it stays
    assert not np.all(got[:, steps - 1] == mean)                    # not one iteration sooner


def test_dynamic_snippet_sends_what_the_matrix_of_one_peer_exponential_graph_says(world):
    n, res = world
    topo = gossip_topology("one-peer-exponential-graph", n)
    for r in range(n):
        for k, (sends, recvs) in enumerate(res[r]["dynamic"][1]):
            assert sends == topo.out_neighbors(k, r)
            assert recvs == sorted(topo.in_neighbors(k, r)[1])


def test_static_snippet_equals_the_ring_matrix_to_the_hundredth_power(world):
    n, res = world
    w = gossip_topology("ring-graph", n).matrix(0)
    got = np.array([res[r]["static"] for r in range(n)])
    # float32, as the snippet's torch.Tensor: the documented sum with float32 weights
    x32 = np.arange(n, dtype=np.float32)
    for _ in range(STATIC_ITERS):
        x32 = mix_in_order(w.astype(np.float32), x32)
    np.testing.assert_allclose(got, x32, rtol=1e-6)
    # and the exact product, but for float32's 1/3 (3 * fl(1/3) = 1 + 3e-8, 100 times over)
    exact = np.linalg.matrix_power(w, STATIC_ITERS) @ np.arange(n, dtype=np.float64)
    np.testing.assert_allclose(got, exact, rtol=1e-5)
    np.testing.assert_allclose(got, (n - 1) / 2, rtol=1e-5)


def test_every_way_of_calling_gives_the_same_bits_and_check_off_gathers_nothing(world):
    n, res = world
    for r in range(n):
        v = res[r]["variants"]
        checked, gathers = v["checked"]
        assert gathers == 1                        # the check: one all_gather
        assert v["check_off"][1] == v["alias_off"][1] == 0
        for label in ("check_off", "alias_off", "network"):
            assert np.array_equal(v[label][0], checked), label
        assert np.array_equal(v["async"], checked)
        assert np.array_equal(v["explicit_sends"], v["matrix"])
        assert np.array_equal(v["inferred_sends"], v["matrix"])
    x = np.stack([[float(r), 2.0 * r + 1] for r in range(n)])
    w = np.zeros((n, n))
    for r in range(n):
        a = _one_peer_args(r, n, 1)
        w[r, r] = 0.5
        w[r, next(iter(a["neighbor_weights"]))] = 0.5
    assert np.array_equal(np.stack([res[r]["variants"]["checked"][0] for r in range(n)]),
                          mix_in_order(w, x))


# -- a send without its receive, and bad arguments: every rank stops at once ---------------------

def test_a_send_nobody_receives_stops_every_rank_naming_the_pair(world):
    n, res = world
    for r in range(n):
        kind, message, seconds = res[r]["errors"]["extra_send"]
        assert kind == "ProcessGroupError" and "\n" not in message and seconds < 5
        assert "rank 0 sends to rank 2, but rank 2's neighbor_weights has no rank 0" in message
        assert message.startswith("neighbor_allreduce 'x': ")
        kind, message, seconds = res[r]["errors"]["extra_recv"]
        assert kind == "ProcessGroupError" and "\n" not in message and seconds < 5
        assert "rank 3's neighbor_weights has rank 1, but rank 1's send_neighbors leaves out " \
               "rank 3" in message


def test_bad_arguments_on_one_rank_stop_every_rank(world):
    n, res = world
    own = {"negative": ("TopologyError", "names rank -1, outside the group's 0.."),
           "too_large": ("TopologyError", f"names rank {n}, outside the group's 0..{n - 1}"),
           "self": ("TopologyError", "names this rank (1) itself"),
           "self_send": ("TopologyError", "send_neighbors names this rank (1) itself"),
           "not_a_dict": ("InputTypeError", "neighbor_weights must be a dict")}
    for label, (kind, words) in own.items():
        for r in range(n):
            got_kind, message, seconds = res[r]["errors"][label]
            assert "\n" not in message and seconds < 5, (label, r)
            if r == 1:
                assert (got_kind, words in message) == (kind, True), (label, message)
            else:
                assert got_kind == "ProcessGroupError", (label, r)
                assert "rank 1 gave bad arguments" in message
    for r in range(n):
        assert res[r]["errors"]["after"] == [float((r - 1) % n + r) / 2] * 3


# -- one rank, no exchange: the argument rules ---------------------------------------------------

BAD_CALLS = [
    ("both forms", dict(topology=[[1.0]], self_weight=1.0, neighbor_weights={}),
     InputTypeError, "not both"),
    ("no form", dict(), InputTypeError, "needs a topology"),
    ("weights without self", dict(neighbor_weights={}), InputTypeError, "self_weight is missing"),
    ("self without weights", dict(self_weight=1.0), InputTypeError,
     "neighbor_weights is missing"),
    ("sends without weights", dict(send_neighbors=[]), InputTypeError, "go together"),
    ("not a dict", dict(self_weight=1.0, neighbor_weights=[0.5]), InputTypeError, "a dict"),
    ("negative", dict(self_weight=1.0, neighbor_weights={-1: 0.5}), TopologyError,
     "rank -1, outside"),
    ("out of range", dict(self_weight=1.0, neighbor_weights={1: 0.5}), TopologyError,
     "rank 1, outside the group's 0..0"),
    ("self send", dict(self_weight=1.0, neighbor_weights={}, send_neighbors=[0]), TopologyError,
     "names this rank (0) itself"),
    ("not a rank", dict(self_weight=1.0, neighbor_weights={"1": 0.5}), InputTypeError,
     "not a rank"),
    ("sends not a list", dict(self_weight=1.0, neighbor_weights={}, send_neighbors=3),
     InputTypeError, "a list of ranks"),
    ("nan weight", dict(self_weight=float("nan"), neighbor_weights={}), TopologyError,
     "must be finite"),
    ("text weight", dict(self_weight="0.5", neighbor_weights={}), InputTypeError,
     "must be a number"),
    ("alias disagrees", dict(self_weight=1.0, neighbor_weights={}, check=True,
                             enable_topo_check=False), InputTypeError, "disagree"),
    ("unchecked, no sends", dict(self_weight=1.0, neighbor_weights={}, check=False),
     InputTypeError, "send_neighbors is needed with check=False"),
    ("positional weight", dict(topology=0.5), InputTypeError, "keyword arguments"),
]


@pytest.mark.parametrize("label, kwargs, error, words", BAD_CALLS,
                         ids=[c[0] for c in BAD_CALLS])
def test_bad_arguments_are_one_line_errors(label, kwargs, error, words):
    with single_process_group():
        with pytest.raises(error) as caught:
            neighbor_allreduce(torch.ones(2), name="p", **kwargs)
    message = str(caught.value)
    assert words in message and "\n" not in message, message
    assert message.startswith("neighbor_allreduce 'p': "), message


def test_a_repeated_send_is_refused():
    with pytest.raises(TopologyError, match="send_neighbors names rank 2 twice"):
        bluefog_plan(0, 3, 0.5, {1: 0.5}, [2, 1, 2], check=False)


def test_a_world_of_one_in_bluefogs_form():
    with single_process_group():
        x = torch.tensor([4.0, 6.0])
        assert neighbor_allreduce(x, self_weight=0.5, neighbor_weights={}).tolist() == [2.0, 3.0]
        gen = one_peer_exp_send_recv(1, 0)
        send, recv = next(gen)
        assert (send, recv) == ([], [])
        y = neighbor_allreduce(x, self_weight=1 / (len(recv) + 1), neighbor_weights={},
                               send_neighbors=send, enable_topo_check=False)
        assert y.tolist() == [4.0, 6.0]


def test_the_plan_is_the_one_a_matrix_gives():
    from topocoll.runtime import as_mixing

    w = np.array([[0.5, 0.25, 0.25], [0.0, 1.0, 0.0], [0.5, 0.0, 0.5]])
    for rank in range(3):
        weights = {j: w[rank, j] for j in range(3) if j != rank and w[rank, j]}
        sends = [j for j in range(3) if j != rank and w[j, rank]]
        plan = bluefog_plan(rank, 3, w[rank, rank], weights, sends, check=False)
        assert plan == as_mixing(w).plan(0, rank)
    # Bluefog exchanges a message listed with weight 0 (a matrix would not)
    assert bluefog_plan(0, 2, 1.0, {1: 0.0}, [], check=False).sources == (1,)


# -- the one-peer exponential schedule ---------------------------------------------------------

@pytest.mark.parametrize("n", [2, 3, 4, 5, 6, 7, 8, 12, 16, 17])
def test_one_peer_lists_are_those_of_one_peer_exponential_graph(n):
    topo = gossip_topology("one-peer-exponential-graph", n)
    period = (n - 1).bit_length()
    assert topo.period == period
    for r in range(n):
        gen = one_peer_exp_send_recv(n, r)
        for k in range(2 * period + 1):
            sends, recvs = next(gen)
            assert sends == topo.out_neighbors(k, r)
            self_weight, weights = topo.in_neighbors(k, r)
            assert recvs == sorted(weights)
            assert self_weight == 1 / (len(recvs) + 1)
            assert all(v == 1 / (len(recvs) + 1) for v in weights.values())


@pytest.mark.parametrize("n", [2, 4, 8, 16])
def test_one_peer_lists_against_decent_dps_one_peer_exp(n):
    """The hypercube pairs ``i <-> i XOR 2^t`` of topocoll's ``one-peer-exp`` and Bluefog's
    shifts ``i -> i + 2^t`` agree only at the offset ``n/2`` (where ``i + n/2 = i XOR n/2``
    mod n); both average exactly over one period at a power of two."""
    ours = gossip_topology("one-peer-exp", n)
    period = ours.period
    gens = [one_peer_exp_send_recv(n, r) for r in range(n)]
    product = np.eye(n)
    for t in range(period):
        w = _matrix(n, [next(g) for g in gens])
        product = w @ product
        same = np.array_equal(w, ours.matrix(t))
        assert same == (1 << t == n // 2), t
    np.testing.assert_allclose(product, np.full((n, n), 1 / n), atol=1e-15)


@pytest.mark.parametrize("size, rank", [(0, 0), (4, 4), (4, -1), (2.0, 0)])
def test_one_peer_schedule_refuses_bad_ranks(size, rank):
    with pytest.raises((InputTypeError, ValueError)):
        one_peer_exp_send_recv(size, rank)
