"""decent_dp's edges: reading W_k as all_reduce groups, and averaging with one all_reduce per
edge on a real gloo group of 4 local processes, against the matrix product, against
neighbor_allreduce and, through DecentralizedDataParallel, against the recursion by hand."""

import numpy as np
import pytest
import torch

from topocoll.errors import InputTypeError, TopologyError, UnsupportedError
from topocoll.gossip import gossip_topology
from topocoll.runtime import (DecentralizedDataParallel, Edge, as_mixing, edge_allreduce, mixing_edges,
                              neighbor_allreduce, run_local, single_process_group)
from topocoll.runtime.edges import edge_group, kept_edge_groups

N = 4
STEPS = 4
LR = 0.1


def uneven():
    """Edges whose weights are not uniform: (0, 1, 3) keeping 0.4 each, rank 2 alone at 1."""
    w = np.zeros((N, N))
    for i in (0, 1, 3):
        for j in (0, 1, 3):
            w[i, j] = 0.4 if i == j else 0.3
    w[2, 2] = 1.0
    return w


def start(rank, dim=9):
    return np.random.default_rng([3, rank]).standard_normal(dim)


def const_grad(rank, dim=5):
    return np.random.default_rng([8, rank]).standard_normal(dim)


class Linear(torch.nn.Module):
    """loss = p . c: the gradient is the constant c of this rank."""

    def __init__(self, x0, c):
        super().__init__()
        self.p = torch.nn.Parameter(torch.from_numpy(x0.copy()))
        self.c = torch.from_numpy(c)

    def forward(self):
        return (self.p * self.c).sum()


def _ddp(rank, n, gossip):
    model = Linear(start(rank, 5), const_grad(rank))
    ddp = DecentralizedDataParallel(model, gossip_topology("one-peer-exp", n), lr=LR,
                                    broadcast_parameters=False, gossip=gossip)
    traj = [model.p.detach().numpy().copy()]
    for _ in range(STEPS):
        ddp().backward()
        ddp.step()
        traj.append(model.p.detach().numpy().copy())
    ddp.close()
    return np.stack(traj)


def _trajectories(rank, n, topo, steps, **kwargs):
    x = y = torch.from_numpy(start(rank))
    ours, theirs = [x.numpy().copy()], [x.numpy().copy()]
    for k in range(steps):
        x = edge_allreduce(x, topo, k, **kwargs)
        y = neighbor_allreduce(y, topo, k)
        ours.append(x.numpy().copy())
        theirs.append(y.numpy().copy())
    return np.stack(ours), np.stack(theirs)


def _errors(n):
    errors = {}
    for label, call in [
            ("not_edges", lambda: edge_allreduce(torch.ones(2),
                                                 gossip_topology("exponential-graph", n))),
            ("name", lambda: edge_allreduce(torch.ones(2), "one-peer-exp")),
            ("ddp_not_edges", lambda: DecentralizedDataParallel(
                torch.nn.Linear(1, 1), "exponential-graph", lr=0.1, gossip="allreduce")),
            ("ddp_hierarchical", lambda: DecentralizedDataParallel(
                torch.nn.Linear(1, 1), np.eye(2), lr=0.1, gossip="allreduce",
                hierarchical=True, local_size=2)),
            ("ddp_bad", lambda: DecentralizedDataParallel(torch.nn.Linear(1, 1), np.eye(n),
                                                          lr=0.1, gossip="ring"))]:
        try:
            call()
            errors[label] = None
        except Exception as exc:     # noqa: BLE001 -- the type is what is checked
            errors[label] = (type(exc).__name__, str(exc))
    return errors


def _all_checks(rank, n):
    out = {"one_peer_exp": _trajectories(rank, n, gossip_topology("one-peer-exp", n), 5),
           "alternating": _trajectories(rank, n, gossip_topology("alternating-exp-ring", n,
                                                                  local_size=2), 4),
           "uneven": _trajectories(rank, n, uneven(), 2)}
    x = torch.from_numpy(start(rank)).float().reshape(3, 3)
    h = edge_allreduce(x, gossip_topology("one-peer-exp", n), 1, out=x, async_op=True)
    z = h.wait()
    out["async"] = (z.numpy().copy(), z.data_ptr() == x.data_ptr())
    out["kept"] = kept_edge_groups()
    g = torch.distributed.new_group(list(range(n)))    # a group of its own, of every process
    out["subgroup"] = [edge_allreduce(torch.tensor([float(rank)]), w, k, group=g).item()
                       for k, w in enumerate([uneven(), gossip_topology("one-peer-exp", n)
                                              .matrix(1), np.eye(n)])]
    small = torch.distributed.new_group([0, 1])
    if rank < 2:
        try:
            edge_allreduce(torch.ones(1), np.array([[0.5, 0.5], [0.5, 0.5]]), group=small)
        except UnsupportedError as exc:
            out["small_group"] = str(exc)
    out["ddp"] = {g: _ddp(rank, n, g) for g in ("allreduce", "point-to-point")}
    out["errors"] = _errors(n)
    return out


@pytest.fixture(scope="module")
def world():
    return run_local(_all_checks, N, start_method="fork", timeout=120)


# -- reading W_k as edges ------------------------------------------------------------------

@pytest.mark.parametrize("name, n, options", [
    ("one-peer-exp", 8, {}), ("one-peer-exp", 4, {}), ("ring", 6, {}), ("complete", 5, {}),
    ("alternating-exp-ring", 8, {"local_size": 2}), ("ring-graph", 3, {})])
def test_decent_dp_topologies_read_as_a_partition(name, n, options):
    topo = gossip_topology(name, n, **options)
    for k in range(topo.period):
        edges = mixing_edges(topo, k)
        assert sorted(r for e in edges for r in e.ranks) == list(range(n))
        w = np.zeros((n, n))       # rebuilt from the edges: the same matrix
        for e in edges:
            for i in e.ranks:
                for j in e.ranks:
                    w[i, j] = e.weight if i == j else e.neighbor_weight
        np.testing.assert_allclose(w, topo.matrix(k), rtol=0, atol=1e-15)


def test_edges_of_the_exponential_ring_and_of_an_uneven_matrix():
    topo = gossip_topology("alternating-exp-ring", 8, local_size=2)
    assert mixing_edges(topo, 0) == (Edge((0, 1), 0.5), Edge((2, 3), 0.5),
                                     Edge((4, 5, 6, 7), 0.25))
    assert mixing_edges(uneven()) == (Edge((0, 1, 3), 0.4), Edge((2,), 1.0))
    assert Edge((2,), 1.0).neighbor_weight == 0.0
    mixing = as_mixing(topo)
    assert mixing_edges(mixing, 1) is mixing_edges(mixing, 5)     # read once per matrix


@pytest.mark.parametrize("w, message", [
    ([[0.5, 0.25, 0.25], [0.25, 0.5, 0.25], [0.25, 0.5, 0.25]],
     "rank 2 weighs ranks 0 and 1 differently (0.25 and 0.5)"),
    ([[0.5, 0.5, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]],
     "rank 0 weighs rank 1 but rank 1 does not weigh rank 0"),
    ([[0.5, 0.5, 0.0], [0.5, 0.25, 0.0], [0.0, 0.0, 1.0]], "rank 1's weights sum to 0.75, not 1"),
    ([[0.5, 0.5, 0.0], [0.25, 0.5, 0.25], [0.0, 0.5, 0.5]],
     "rank 1 weighs rank 2 but rank 0 does not, though ranks 0 and 1 weigh each other")])
def test_matrices_that_are_not_edges_are_refused_in_one_line(w, message):
    with pytest.raises(TopologyError) as info:
        mixing_edges(w)
    assert message in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("name, n", [("exponential-graph", 8), ("ring-graph", 8),
                                     ("exponential-graph", 4)])
def test_topologies_that_are_not_edges(name, n):
    with pytest.raises(TopologyError, match=f"in {name} W_0: .*not one all_reduce group"):
        mixing_edges(gossip_topology(name, n))


def test_one_rank_alone_communicates_not():
    with single_process_group():
        assert edge_group((Edge((0,), 1.0),), 0, 1) is None      # the group itself: none made
        x = torch.tensor([2.0, -4.0])
        assert edge_allreduce(x, [[0.5]]).tolist() == [1.0, -2.0]
        assert edge_allreduce(x, [[1.0]], out=x) is x
        with pytest.raises(InputTypeError):
            edge_allreduce(torch.ones(2, dtype=torch.int64), [[1.0]])


# -- on 4 ranks ----------------------------------------------------------------------------

@pytest.mark.parametrize("key, topo", [
    ("one_peer_exp", gossip_topology("one-peer-exp", N)),
    ("alternating", gossip_topology("alternating-exp-ring", N, local_size=2)),
    ("uneven", uneven())])
def test_edge_allreduce_equals_the_matrix_product(world, key, topo):
    mixing = topo.matrix if hasattr(topo, "matrix") else (lambda k: topo)
    ours = np.stack([world[r][key][0] for r in range(N)], axis=1)        # k, rank, dim
    theirs = np.stack([world[r][key][1] for r in range(N)], axis=1)
    x = ours[0]
    for k in range(len(ours) - 1):
        x = mixing(k) @ x
        np.testing.assert_allclose(ours[k + 1], x, rtol=1e-6, atol=1e-12)
    np.testing.assert_allclose(ours, theirs, rtol=1e-6, atol=1e-12)
    if key == "one_peer_exp":   # two ranks of weight 1/2: 0.5 (a + b) is 0.5 a + 0.5 b exactly
        assert np.array_equal(ours, theirs)
        np.testing.assert_allclose(ours[2], np.tile(ours[0].mean(axis=0), (N, 1)), rtol=1e-12)


def test_async_in_place_and_groups_made_once(world):
    x = np.stack([start(r).astype(np.float32) for r in range(N)])
    w = gossip_topology("one-peer-exp", N).matrix(1)
    for r in range(N):
        got, in_place = world[r]["async"]
        assert in_place
        np.testing.assert_allclose(got.reshape(-1), (w @ x)[r], rtol=1e-6)
        # one-peer-exp (2 edges twice) and the 2-rank edges of the exponential ring, the 3-rank
        # edge of the uneven matrix: each made once; the world and rank 2 alone need none
        assert world[r]["kept"] == 5


def test_edges_of_a_group_of_its_own(world):
    for r in range(N):   # (0, 1, 3) and 2 alone; (0, 2) and (1, 3); every rank alone
        expected = [2.0 if r == 2 else 0.4 * r + 0.3 * (4 - r), 1.0 if r % 2 == 0 else 2.0, r]
        assert world[r]["subgroup"] == pytest.approx(expected, rel=1e-6)


def test_ddp_allreduce_gossip_follows_the_recursion(world):
    topo = gossip_topology("one-peer-exp", N)
    x = np.stack([start(r, 5) for r in range(N)])
    c = np.stack([const_grad(r) for r in range(N)])
    expected = [x]
    for k in range(STEPS):
        x = topo.matrix(k) @ x - LR * c
        expected.append(x)
    got = np.stack([world[r]["ddp"]["allreduce"] for r in range(N)], axis=1)
    np.testing.assert_allclose(got, np.stack(expected), rtol=1e-12, atol=1e-13)
    p2p = np.stack([world[r]["ddp"]["point-to-point"] for r in range(N)], axis=1)
    assert np.array_equal(got, p2p)


def test_errors_for_what_is_not_edges(world):
    for r in range(N):
        errors = world[r]["errors"]
        assert errors["not_edges"][0] == "TopologyError"
        assert "not one all_reduce group" in errors["not_edges"][1]
        assert errors["ddp_not_edges"][0] == "TopologyError"
        assert errors["name"][0] == InputTypeError.__name__
        assert errors["ddp_hierarchical"][0] == UnsupportedError.__name__
        assert errors["ddp_bad"][0] == InputTypeError.__name__
    for r in range(2):       # edge groups inside a group of some processes only: refused
        assert "on a group of 2 of the 4 processes" in world[r]["small_group"]
