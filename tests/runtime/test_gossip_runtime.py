"""The gossip runtime on real gloo process groups of 1, 2, 3, 4 and 8 local processes.

Each world size starts ONE process group (module-scoped fixture, forked processes) and runs all
its checks inside it; the processes return raw trajectories, and the tests compare them here
against oracles computed independently with numpy: ``W x`` summed in the documented order (bit
for bit), the recursion ``X^{k+1} = W_k X^k - lr C`` by hand, the exact mean of one-peer
exponential gossip, torch's DistributedDataParallel on the same data.
"""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
import torch
import torch.distributed as dist
import torch.nn.parallel  # noqa: F401  (imported before forking: children inherit it)

from topocoll.errors import (InputTypeError, ProcessGroupError, SpecError, TopologyError,
                             UnsupportedError)
from tests.helpers import mix_in_order
from topocoll.gossip import BUILTIN_NAMES, TABLE_PARAMS, gossip_topology
from topocoll.runtime import (DecentralizedDataParallel, as_mixing, neighbor_allreduce,
                              run_local, single_process_group)

# torch.optim imports torch._dynamo on first use (seconds); pay it once here, not per child.
torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1)

WORLD_SIZES = [1, 2, 3, 4, 8]
STEPS = 5          # iterations of each trajectory
LR = 0.1
DIM = 37           # odd length: no accidental alignment


# -- topologies known to both sides -------------------------------------------------------------

def random_w(n, k, seed=7):
    """A sparse random row-stochastic W_k (diagonal kept, arbitrary off-diagonal support)."""
    rng = np.random.default_rng([seed, n, k])
    w = rng.random((n, n)) * (rng.random((n, n)) < 0.5)
    np.fill_diagonal(w, rng.random(n) + 0.1)
    return w / w.sum(axis=1, keepdims=True)


def builtin_topologies(n):
    """Every built-in gossip topology that exists for n ranks (2 ranks per node where asked)."""
    out = {}
    for name in BUILTIN_NAMES:
        params = {"local_size": 2} if "local_size" in TABLE_PARAMS.get(name, {}) else {}
        if name == "metropolis-hastings":
            params = {"network": f"ring:{n}"}
        try:
            out[name] = gossip_topology(name, n, **params)
        except SpecError:  # no such topology for this n (e.g. odd n with 2 ranks per node)
            continue
    return out


def start_vector(rank, n, dim=DIM, dtype=np.float64):
    return np.random.default_rng([11, n, rank]).standard_normal(dim).astype(dtype)


def regression_data(rank, n):
    """Rank r's shard of a linear regression: inputs and true weights differ by rank."""
    rng = np.random.default_rng([5, rank])
    x = rng.standard_normal((32, 4)) * (1 + 0.5 * rank) + 0.5 * rank
    w_true = np.array([1.0, -2.0, 0.5, 3.0]) + 0.7 * rank * np.array([1.0, 1.0, -1.0, 0.0])
    y = x @ w_true + 0.3 * rng.standard_normal(32) + rank
    return x, y[:, None]


# -- what every rank runs -------------------------------------------------------------------------

def _neighbor_checks(rank, n):
    out = {}
    x = torch.from_numpy(start_vector(rank, n))
    traj = [x.numpy().copy()]
    for k in range(STEPS):  # dynamic topology as a callable k -> W
        x = neighbor_allreduce(x, lambda k: random_w(n, k), k)
        traj.append(x.numpy().copy())
    out["dynamic"] = np.stack(traj)
    # the same trajectory in slices of 3 elements (13 slices of a 37-element vector): a new
    # result, in place (each slice written only once it has left), and async in place
    sliced = {}
    for label in ("new", "in_place", "async"):
        v = torch.from_numpy(start_vector(rank, n))
        traj = [v.numpy().copy()]
        for k in range(STEPS):
            w = (lambda k: random_w(n, k))
            if label == "new":
                v = neighbor_allreduce(v, w, k, slice_bytes=24)
            elif label == "in_place":
                neighbor_allreduce(v, w, k, out=v, slice_bytes=24)
            else:
                v = neighbor_allreduce(v, w, k, out=v, slice_bytes=24, async_op=True,
                                       tag=5).wait()
            traj.append(v.numpy().copy())
        sliced[label] = np.stack(traj)
    out["sliced"] = sliced
    # async, float32, fixed matrix, result written in place; work overlaps the transfer
    y = torch.from_numpy(start_vector(rank, n, dtype=np.float32))
    h = neighbor_allreduce(y, random_w(n, 99), async_op=True, out=y, tag=3)
    busy = torch.ones(64, 64).matmul(torch.ones(64, 64)).sum().item()
    z = h.wait()
    out["async"] = (z.numpy().copy(), z.data_ptr() == y.data_ptr(), h.is_completed(), busy)
    # 2-D tensor, complete averaging: every rank must end with the exact same mean
    m = torch.from_numpy(start_vector(rank, n, dim=6)).reshape(2, 3)
    out["complete"] = neighbor_allreduce(m, np.full((n, n), 1.0 / n)).numpy()
    if n & (n - 1) == 0:
        v = torch.from_numpy(start_vector(rank, n))
        topo = gossip_topology("one-peer-exp" if n > 1 else "complete", n)
        traj = [v.numpy().copy()]
        for k in range(max(1, int(math.log2(n)))):
            v = neighbor_allreduce(v, topo, k)
            traj.append(v.numpy().copy())
        out["one_peer_exp"] = np.stack(traj)
    builtins = {}
    for name, topo in builtin_topologies(n).items():
        v = torch.from_numpy(start_vector(rank, n, dim=7))
        traj = [v.numpy().copy()]
        for k in range(topo.period + 1):  # a full period and the wrap-around
            v = neighbor_allreduce(v, topo, k)
            traj.append(v.numpy().copy())
        builtins[name] = np.stack(traj)
    out["builtins"] = builtins
    errors = {}
    for label, call in [
            ("size", lambda: neighbor_allreduce(torch.ones(2), np.eye(n + 1))),
            ("dtype", lambda: neighbor_allreduce(torch.ones(2, dtype=torch.int64), np.eye(n))),
            ("nan", lambda: neighbor_allreduce(torch.ones(2), np.full((n, n), np.nan))),
            ("ddp_size", lambda: DecentralizedDataParallel(torch.nn.Linear(1, 1), np.eye(n + 1),
                                                           lr=0.1)),
            ("ddp_lr", lambda: DecentralizedDataParallel(torch.nn.Linear(1, 1), np.eye(n))),
            ("tag", lambda: neighbor_allreduce(torch.ones(2), np.eye(n), tag=1 << 18)),
            ("slice", lambda: neighbor_allreduce(torch.ones(2), np.eye(n), slice_bytes=0)),
            ("ddp_slice", lambda: DecentralizedDataParallel(torch.nn.Linear(1, 1), np.eye(n),
                                                            lr=0.1, slice_bytes=-1))]:
        try:
            call()
        except Exception as exc:  # the parent checks the class
            errors[label] = type(exc).__name__
    out["errors"] = errors
    return out


class ConstantGrad(torch.nn.Module):
    """loss = sum(c1 * a) + sum(c2 * b): the gradient is (c1, c2) wherever the model is."""

    def __init__(self, a, b):
        super().__init__()
        self.a = torch.nn.Parameter(torch.from_numpy(a))
        self.b = torch.nn.Parameter(torch.from_numpy(b).reshape(3, 4))

    def forward(self, c1, c2):
        return (c1 * self.a).sum() + (c2 * self.b).sum()


def constant_grad_setup(rank, n):
    rng = np.random.default_rng([23, n, rank])
    return rng.standard_normal(5), rng.standard_normal(12), rng.standard_normal(5), \
        rng.standard_normal(12)


def named_topology(n):
    """A topology by name for the wrapper: several ranks per node where n allows it."""
    if n % 2 == 0:
        return "alternating-exp-ring", {"local_size": 2}
    return ("ring", {}) if n > 1 else ("complete", {})


def _ddp_recursion(rank, n, momentum, named=False, slice_bytes=None):
    a, b, c1, c2 = constant_grad_setup(rank, n)
    model = ConstantGrad(a, b)
    if named:
        name, options = named_topology(n)
        ddp = DecentralizedDataParallel(model, name, topology_options=options, lr=LR,
                                        bucket_size_mb=1e-5, broadcast_parameters=False)
    elif momentum:
        ddp = DecentralizedDataParallel(
            model, lambda k: random_w(n, k),
            optimizer=lambda p: torch.optim.SGD(p, lr=LR, momentum=momentum),
            bucket_size_mb=1e-5, broadcast_parameters=False)
    else:
        ddp = DecentralizedDataParallel(model, lambda k: random_w(n, k), lr=LR,
                                        bucket_size_mb=1e-5, broadcast_parameters=False,
                                        slice_bytes=slice_bytes)
    c1, c2 = torch.from_numpy(c1), torch.from_numpy(c2).reshape(3, 4)
    traj = [np.concatenate([model.a.detach().numpy(), model.b.detach().numpy().ravel()])]
    for _ in range(STEPS):
        ddp(c1, c2).backward()
        ddp.step()
        traj.append(np.concatenate([model.a.detach().numpy(), model.b.detach().numpy().ravel()]))
    buckets = ddp.buckets
    ddp.global_avg()
    avg = np.concatenate([model.a.detach().numpy(), model.b.detach().numpy().ravel()])
    ddp.close()
    return np.stack(traj), avg, buckets, ddp.iteration


def _train_regression(rank, n, topology, steps, lr):
    x, y = regression_data(rank, n)
    x, y = torch.from_numpy(x), torch.from_numpy(y)
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1).double()
    if isinstance(topology, str) and topology == "torch-ddp":
        ddp = torch.nn.parallel.DistributedDataParallel(model)
        opt = torch.optim.SGD(ddp.parameters(), lr=lr)
        for _ in range(steps):
            opt.zero_grad()
            torch.nn.functional.mse_loss(ddp(x), y).backward()
            opt.step()
    else:
        ddp = DecentralizedDataParallel(model, topology, lr=lr)  # a name or a matrix
        for _ in range(steps):
            torch.nn.functional.mse_loss(ddp(x), y).backward()
            ddp.step()
        ddp.global_avg()
        ddp.close()
    with torch.no_grad():
        loss = torch.nn.functional.mse_loss(model(x), y).reshape(1)
    dist.all_reduce(loss)
    return loss.item() / n


def _state_dict_roundtrip(rank, n):
    def make(seed):
        torch.manual_seed(seed)
        model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Tanh(), torch.nn.Linear(4, 1))
        ddp = DecentralizedDataParallel(
            model.double(), lambda k: random_w(n, k % 3),
            optimizer=lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9), bucket_size_mb=1e-4)
        return model, ddp

    g = torch.Generator().manual_seed(rank)
    data = torch.randn(8, 3, generator=g, dtype=torch.float64)

    def train(ddp, steps):
        for _ in range(steps):
            ddp(data).pow(2).mean().backward()
            ddp.step()

    model, ddp = make(0)
    train(ddp, 3)
    saved = ddp.state_dict()
    train(ddp, 3)
    first = torch.cat([p.detach().ravel() for p in model.parameters()]).numpy().copy()
    ddp.close()
    model2, ddp2 = make(1)  # another start: everything must come from the state dict
    ddp2.load_state_dict(saved)
    resumed_at = ddp2.iteration
    train(ddp2, 3)
    second = torch.cat([p.detach().ravel() for p in model2.parameters()]).numpy().copy()
    ddp2.close()
    return first, second, resumed_at, ddp2.iteration


def _all_checks(rank, n):
    out = {"neighbor": _neighbor_checks(rank, n),
           "recursion": _ddp_recursion(rank, n, momentum=0.0),
           "recursion_momentum": _ddp_recursion(rank, n, momentum=0.5),
           "recursion_named": _ddp_recursion(rank, n, momentum=0.0, named=True),
           "recursion_sliced": _ddp_recursion(rank, n, momentum=0.0, slice_bytes=16),
           "state_dict": _state_dict_roundtrip(rank, n)}
    if n == 4:
        out["regression"] = {name: _train_regression(rank, n, topo, steps=100, lr=0.02)
                             for name, topo in [("torch-ddp", "torch-ddp"),
                                                ("one-peer-exp", "one-peer-exp"),
                                                ("isolated", np.eye(n))]}
    return out


@pytest.fixture(scope="module", params=WORLD_SIZES, ids=lambda n: f"world{n}")
def world(request):
    n = request.param
    return n, run_local(_all_checks, n, start_method="fork", timeout=120)


# -- tests ------------------------------------------------------------------------------------

def test_neighbor_averaging_equals_w_x_exactly(world):
    n, res = world
    x = np.stack([start_vector(r, n) for r in range(n)])
    for k in range(STEPS):
        got = np.stack([res[r]["neighbor"]["dynamic"][k + 1] for r in range(n)])
        w = random_w(n, k)
        assert np.array_equal(got, mix_in_order(w, x))          # bit for bit
        np.testing.assert_allclose(got, w @ x, rtol=1e-12, atol=1e-14)
        x = got
    if n > 1:  # the check can fail: a different W_k or the pre-mix x is not accepted
        assert not np.allclose(x, random_w(n, STEPS) @ x)


def test_sliced_averaging_gives_the_same_bits(world):
    n, res = world
    whole = np.stack([res[r]["neighbor"]["dynamic"] for r in range(n)])
    for label in ("new", "in_place", "async"):
        got = np.stack([res[r]["neighbor"]["sliced"][label] for r in range(n)])
        assert np.array_equal(got, whole), label


def test_sliced_ddp_follows_the_same_recursion(world):
    n, res = world
    for r in range(n):
        assert np.array_equal(res[r]["recursion_sliced"][0], res[r]["recursion"][0])
        assert np.array_equal(res[r]["recursion_sliced"][1], res[r]["recursion"][1])


def test_slices_cover_the_tensor_in_near_equal_parts():
    from topocoll.runtime.neighbor import MAX_SLICES, slice_bounds

    assert slice_bounds(37, 8, 24) == [0, 2, 5, 8, 11, 14, 17, 19, 22, 25, 28, 31, 34, 37]
    assert slice_bounds(5, 4, 1 << 20) == [0, 5]
    bounds = slice_bounds(10 ** 6, 1, 1)
    assert len(bounds) == MAX_SLICES + 1 and bounds[-1] == 10 ** 6
    assert max(np.diff(bounds)) - min(np.diff(bounds)) <= 1


def test_builtin_topologies_average_exactly(world):
    n, res = world
    topos = builtin_topologies(n)
    if n in (4, 8):
        assert set(topos) == set(BUILTIN_NAMES)  # every built-in runs here
    assert set(res[0]["neighbor"]["builtins"]) == set(topos)
    for name, topo in topos.items():
        x = np.stack([start_vector(r, n, dim=7) for r in range(n)])
        got = np.stack([res[r]["neighbor"]["builtins"][name] for r in range(n)], axis=1)
        for k in range(topo.period + 1):
            x = mix_in_order(topo.matrix(k), x)
            assert np.array_equal(got[k + 1], x), (name, k)


def test_async_in_place_float32(world):
    n, res = world
    x = np.stack([start_vector(r, n, dtype=np.float32) for r in range(n)])
    expected = random_w(n, 99) @ x.astype(np.float64)
    for r in range(n):
        got, in_place, done, _ = res[r]["neighbor"]["async"]
        assert got.dtype == np.float32 and in_place and done
        np.testing.assert_allclose(got, expected[r], rtol=2e-6, atol=2e-6)


def test_complete_averaging_gives_the_mean(world):
    n, res = world
    mean = np.mean([start_vector(r, n, dim=6) for r in range(n)], axis=0).reshape(2, 3)
    for r in range(n):
        np.testing.assert_allclose(res[r]["neighbor"]["complete"], mean, rtol=1e-13, atol=1e-15)


def test_one_peer_exponential_reaches_the_exact_mean_in_log2_n(world):
    n, res = world
    if n & (n - 1):
        assert "one_peer_exp" not in res[0]["neighbor"]
        return
    steps = max(1, int(math.log2(n)))
    traj = np.stack([res[r]["neighbor"]["one_peer_exp"] for r in range(n)])  # rank, k, dim
    assert traj.shape[1] == steps + 1
    mean = traj[:, 0].mean(axis=0)
    final = traj[:, -1]
    assert (final == final[0]).all()  # every rank holds the very same bits
    np.testing.assert_allclose(final[0], mean, rtol=1e-14, atol=1e-15)
    if n > 2:  # one iteration fewer is not enough
        assert np.abs(traj[:, -2] - mean).max() > 1e-3


def test_misuse_raises_topocoll_errors(world):
    n, res = world
    errors = res[0]["neighbor"]["errors"]
    assert errors == {"size": ProcessGroupError.__name__, "dtype": InputTypeError.__name__,
                      "nan": TopologyError.__name__, "ddp_size": ProcessGroupError.__name__,
                      "ddp_lr": InputTypeError.__name__, "tag": InputTypeError.__name__,
                      # 0 and -1 bytes are integers out of range
                      "slice": UnsupportedError.__name__, "ddp_slice": UnsupportedError.__name__}


@pytest.mark.parametrize("key", ["recursion", "recursion_momentum", "recursion_named"])
def test_ddp_follows_the_documented_recursion(world, key):
    n, res = world
    momentum = 0.5 if key == "recursion_momentum" else 0.0
    if key == "recursion_named":
        name, options = named_topology(n)
        matrix = gossip_topology(name, n, **options).matrix
    else:
        def matrix(k):
            return random_w(n, k)
    setup = [constant_grad_setup(r, n) for r in range(n)]
    x = np.stack([np.concatenate([a, b]) for a, b, _, _ in setup])
    c = np.stack([np.concatenate([c1, c2]) for _, _, c1, c2 in setup])
    v = np.zeros_like(c)
    expected = [x]
    for k in range(STEPS):  # x^{k+1} = W_k x^k - lr * (momentum buffer of the gradients)
        v = momentum * v + c if k else c
        x = matrix(k) @ x - LR * v
        expected.append(x)
    got = np.stack([res[r][key][0] for r in range(n)], axis=1)  # k, rank, dim
    np.testing.assert_allclose(got, np.stack(expected), rtol=1e-12, atol=1e-13)
    for r in range(n):
        traj, avg, buckets, iteration = res[r][key]
        assert iteration == STEPS
        assert [b[:2] for b in buckets] == [(1, 5), (1, 12)]  # one bucket per parameter here
        np.testing.assert_allclose(avg, x.mean(axis=0), rtol=1e-12, atol=1e-13)
    if n > 1:  # mixing after the gradient step (x^{k+1} = W_k (x^k - lr c)) is rejected
        y = np.stack(expected)[STEPS - 1]
        assert not np.allclose(got[STEPS], matrix(STEPS - 1) @ (y - LR * c))


def test_state_dict_round_trip_resumes_identically(world):
    n, res = world
    for r in range(n):
        first, second, resumed_at, end = res[r]["state_dict"]
        assert resumed_at == 3 and end == 6
        assert np.array_equal(first, second)


def test_trains_to_the_loss_of_torch_ddp(world):
    n, res = world
    if n != 4:
        assert "regression" not in res[0]
        return
    losses = res[0]["regression"]
    assert all(res[r]["regression"] == losses for r in range(n))  # global numbers agree
    # the least-squares optimum of the whole data set, as a floor
    data = [regression_data(r, n) for r in range(n)]
    xs = np.vstack([np.hstack([x, np.ones((len(x), 1))]) for x, _ in data])
    ys = np.vstack([y for _, y in data])
    sol, *_ = np.linalg.lstsq(xs, ys, rcond=None)
    optimum = float(np.mean((xs @ sol - ys) ** 2))
    assert losses["torch-ddp"] >= optimum * (1 - 1e-9)
    assert losses["one-peer-exp"] >= optimum * (1 - 1e-9)
    assert losses["torch-ddp"] < 1.01 * optimum  # it did train
    assert abs(losses["one-peer-exp"] - losses["torch-ddp"]) <= 0.05 * losses["torch-ddp"]
    # gossip on heterogeneous shards is not DDP: equal numbers would mean DDP ran twice
    assert losses["one-peer-exp"] != losses["torch-ddp"]
    # without mixing the replicas drift to their own shards: the same check would fail
    assert abs(losses["isolated"] - losses["torch-ddp"]) > 0.05 * losses["torch-ddp"]


# -- without processes ------------------------------------------------------------------------

def test_needs_a_process_group():
    with pytest.raises(ProcessGroupError, match="init_process_group"):
        neighbor_allreduce(torch.ones(2), [[1.0]])
    with pytest.raises(ProcessGroupError, match="init_process_group"):
        DecentralizedDataParallel(torch.nn.Linear(1, 1), [[1.0]], lr=0.1)


def test_single_process_group_rejects_nesting_and_bad_inputs():
    with single_process_group():
        with pytest.raises(ProcessGroupError, match="already exists"):
            with single_process_group():
                pass
        with pytest.raises(InputTypeError, match="torch.Tensor"):
            neighbor_allreduce(np.ones(2), [[1.0]])
        with pytest.raises(InputTypeError, match="out must match"):
            neighbor_allreduce(torch.ones(2), [[1.0]], out=torch.ones(3))
        with pytest.raises(InputTypeError, match="exactly one of lr"):
            DecentralizedDataParallel(torch.nn.Linear(1, 1), [[1.0]], lr=0.1,
                                      optimizer=lambda p: torch.optim.SGD(p, lr=0.1))
        ddp = DecentralizedDataParallel(torch.nn.Linear(1, 1), [[1.0]], lr=0.1)
        with pytest.raises(InputTypeError, match="state dict"):
            ddp.load_state_dict({"format": "other"})
        bad = {**ddp.state_dict(), "world_size": 2}
        with pytest.raises(ProcessGroupError, match="world of 2"):
            ddp.load_state_dict(bad)
        ddp.close()
        with pytest.raises(ProcessGroupError, match="closed"):
            ddp.step()
    assert not dist.is_initialized()


@given(n=st.integers(1, 12), k=st.integers(0, 1000), seed=st.integers(0, 2**16))
def test_mixing_plans_match_the_matrix(n, k, seed):
    w = random_w(n, k, seed)
    m = as_mixing(lambda k: random_w(n, k, seed), n)
    sends = {}
    for i in range(n):
        plan = m.plan(k, i)
        assert plan.self_weight == w[i, i]
        assert list(plan.sources) == [j for j in range(n) if j != i and w[i, j] != 0]
        assert list(plan.weights) == [w[i, j] for j in plan.sources]
        for j in plan.destinations:
            sends.setdefault(j, []).append(i)
    # every send meets a receive and vice versa
    assert {j: sorted(v) for j, v in sends.items()} == \
        {i: list(m.plan(k, i).sources) for i in range(n) if m.plan(k, i).sources}


def test_mixing_checks_its_input():
    with pytest.raises(TopologyError, match="shape"):
        as_mixing(lambda k: np.eye(3), 4).matrix(0)
    with pytest.raises(TopologyError, match="square"):
        as_mixing(np.ones((2, 3)))
    with pytest.raises(InputTypeError, match="needs the size"):
        as_mixing(lambda k: np.eye(2))


def _fails_on_rank_one(rank, world_size):
    if rank == 1:
        raise ValueError("rank one says no")
    return rank


def test_run_local_reports_a_failing_rank():
    assert run_local(_fails_on_rank_one, 1, start_method="fork") == [0]
    with pytest.raises(RuntimeError, match="(?s)rank 1 raised.*rank one says no"):
        run_local(_fails_on_rank_one, 2, start_method="fork", timeout=60)
    with pytest.raises(UnsupportedError, match="world_size must be >= 1"):
        run_local(_fails_on_rank_one, 0)
    with pytest.raises(InputTypeError, match="world_size must be an integer"):
        run_local(_fails_on_rank_one, 2.0)


def test_run_local_spawns_by_default():
    # One spawned process (each one re-imports torch: seconds); the fixtures cover n > 1.
    from .spawn_target import scale

    assert run_local(scale, 1, (0.25,), timeout=120) == [(0.25, 1, 1)]
