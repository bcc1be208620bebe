"""Hierarchical neighbor averaging on real gloo groups of 4 and 8 forked processes.

Each world size starts ONE process group (module-scoped fixture) and runs every check inside
it, for 2 x 2, 4 x 2 and 2 x 4 machines x ranks per machine; the ranks return raw results and
the tests compare them here with the oracle computed independently with numpy: ``X' = (W_k
kron (1/L) 1 1^T) X`` on machine-major ranks, iteration after iteration.
"""

import gc
import os

import numpy as np
import pytest
import torch
import torch.distributed as dist

from topocoll.gossip import gossip_topology
from topocoll.runtime import (DecentralizedDataParallel, hierarchical_neighbor_allreduce,
                              neighbor_allreduce, run_local)
from topocoll.runtime.hierarchical import kept_subgroups

SHAPES = {4: [2], 8: [2, 4]}      # world size -> ranks per machine L (M = n / L machines)
STEPS = 3
LR = 0.1


def random_w(m, k, seed=5):
    """A random row-stochastic M x M machine matrix (dense: every machine hears every one)."""
    w = np.random.default_rng([seed, m, k]).random((m, m)) + 0.05
    return w / w.sum(axis=1, keepdims=True)


def start(rank, numel, seed=0, dtype=np.float64):
    return np.random.default_rng([seed, rank, numel]).standard_normal(numel).astype(dtype)


def effective(w, local_size):
    """The oracle: W kron (1/L) 1 1^T (written here, not taken from topocoll.gossip)."""
    return np.kron(w, np.full((local_size, local_size), 1.0 / local_size))


# -- what every rank runs -------------------------------------------------------------------------

def _static(rank, local_size, m):
    out = {}
    w = random_w(m, 0)
    for numel in (7, 1, 3, 0):            # 7 not divisible by L; 1 and 3 below L = 4
        x = torch.from_numpy(start(rank, numel))
        out[numel] = hierarchical_neighbor_allreduce(x, w, local_size=local_size).numpy()
    y = torch.from_numpy(start(rank, 6)).reshape(2, 3)
    out["2d"] = hierarchical_neighbor_allreduce(y, torch.from_numpy(w),
                                                local_size=local_size).numpy()
    f = torch.from_numpy(start(rank, 9, dtype=np.float32))
    out["float32"] = hierarchical_neighbor_allreduce(f, w, local_size=local_size,
                                                     slice_bytes=8).numpy()
    return out


def _dynamic(rank, local_size, m):
    topo = gossip_topology("one-peer-exp", m)
    trajectories = {}
    for label, topology in [("one-peer-exp", topo), ("callable", lambda k: random_w(m, k))]:
        x = torch.from_numpy(start(rank, 5, seed=1))
        traj = [x.numpy().copy()]
        for k in range(STEPS):
            x = hierarchical_neighbor_allreduce(x, topology, local_size=local_size,
                                                iteration=k)
            traj.append(x.numpy().copy())
        trajectories[label] = np.stack(traj)
    return trajectories


def _async_and_out(rank, local_size, m):
    w = random_w(m, 1)
    x = torch.from_numpy(start(rank, 11, seed=2))
    same = hierarchical_neighbor_allreduce(x, w, local_size=local_size, out=x)
    in_place = (same.data_ptr() == x.data_ptr(), x.numpy().copy())
    v = torch.from_numpy(start(rank, 11, seed=2))
    first = hierarchical_neighbor_allreduce(v, w, local_size=local_size, async_op=True, out=v,
                                            tag=3)
    v.mul_(100.0)                    # after the call: the snapshot is what is averaged
    second = hierarchical_neighbor_allreduce(start_tensor(rank), w, local_size=local_size)
    done = first.wait()
    return {"in_place": in_place, "async": (done.numpy().copy(), done.data_ptr() == v.data_ptr(),
                                            first.is_completed()),
            "after_async": second.numpy()}


def start_tensor(rank):
    return torch.from_numpy(start(rank, 11, seed=3))


def _edges(rank, n):
    """L = 1 is neighbor_allreduce (bit for bit); M = 1 is the plain average."""
    w = random_w(n, 2)
    x = torch.from_numpy(start(rank, 6, seed=4))
    return {"l1": (hierarchical_neighbor_allreduce(x, w, local_size=1).numpy(),
                   neighbor_allreduce(x, w).numpy()),
            "m1": hierarchical_neighbor_allreduce(x, [[1.0]], local_size=n).numpy()}


def _errors(n):
    errors = {}
    env = os.environ.pop("LOCAL_WORLD_SIZE")
    try:
        for label, call in [
                ("missing_env", lambda: hierarchical_neighbor_allreduce(torch.ones(2),
                                                                        np.eye(2))),
                ("not_dividing", lambda: hierarchical_neighbor_allreduce(
                    torch.ones(2), np.eye(1), local_size=3)),
                ("wrong_size", lambda: hierarchical_neighbor_allreduce(
                    torch.ones(2), np.eye(n // 2 + 1), local_size=2)),
                ("ddp_size", lambda: DecentralizedDataParallel(
                    torch.nn.Linear(1, 1), np.eye(n), lr=0.1, hierarchical=True, local_size=2)),
                ("ddp_local_size", lambda: DecentralizedDataParallel(
                    torch.nn.Linear(1, 1), np.eye(n), lr=0.1, local_size=2))]:
            try:
                call()
            except Exception as exc:      # the parent checks the class and the words
                errors[label] = (type(exc).__name__, str(exc))
    finally:
        os.environ["LOCAL_WORLD_SIZE"] = env
    # the launcher's LOCAL_WORLD_SIZE (run_local sets it to the world size): one machine
    errors["env_default"] = hierarchical_neighbor_allreduce(torch.full((2,), float(n)),
                                                            [[1.0]]).tolist()
    return errors


class ConstantGrad(torch.nn.Module):
    """loss = sum(c * a): the gradient is c wherever the model is."""

    def __init__(self, a):
        super().__init__()
        self.a = torch.nn.Parameter(torch.from_numpy(a))

    def forward(self, c):
        return (c * self.a).sum()


def _ddp(rank, local_size, m):
    rng = np.random.default_rng([9, rank])
    model = ConstantGrad(rng.standard_normal(7))
    c = torch.from_numpy(rng.standard_normal(7))
    ddp = DecentralizedDataParallel(model, "one-peer-exp" if m > 1 else "complete", lr=LR,
                                    hierarchical=True, local_size=local_size,
                                    broadcast_parameters=False, bucket_size_mb=1e-5)
    traj = [model.a.detach().numpy().copy()]
    for _ in range(STEPS):
        ddp(c).backward()
        ddp.step()
        traj.append(model.a.detach().numpy().copy())
    ddp.close()
    return np.stack(traj), c.numpy(), ddp.mixing.size


def _other_group(rank, n, local_size):
    """A group of its own (each rank makes only its two sub-groups), kept weakly: once the
    group is destroyed and collected its entry goes."""
    g = dist.new_group(list(range(n)))
    w = random_w(n // local_size, 6)
    x = torch.from_numpy(start(rank, 5, seed=6))
    y = hierarchical_neighbor_allreduce(x, w, local_size=local_size, group=g).numpy()
    before = kept_subgroups()
    dist.destroy_process_group(g)
    del g
    gc.collect()
    return y, before, kept_subgroups()


def _all_checks(rank, n):
    out = {}
    for local_size in SHAPES[n]:
        m = n // local_size
        out[local_size] = {"static": _static(rank, local_size, m),
                           "dynamic": _dynamic(rank, local_size, m),
                           "async": _async_and_out(rank, local_size, m),
                           "ddp": _ddp(rank, local_size, m)}
    return out


def _four_checks(rank, n):
    return {"edges": _edges(rank, n), "errors": _errors(n),
            "other_group": _other_group(rank, n, 2)}


@pytest.fixture(scope="module", params=sorted(SHAPES), ids=lambda n: f"world{n}")
def world(request):
    n = request.param
    return n, run_local(_all_checks, n, start_method="fork", timeout=120)


@pytest.fixture(scope="module")
def four():
    return 4, run_local(_four_checks, 4, start_method="fork", timeout=120)


def _cases(world):
    n, results = world
    for local_size in SHAPES[n]:
        yield local_size, n // local_size, [r[local_size] for r in results]


# -- tests ------------------------------------------------------------------------------------

def close(got, want):
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-12)


def test_static_equals_the_effective_matrix_for_every_length(world):
    n, _ = world
    for local_size, m, ranks in _cases(world):
        w_eff = effective(random_w(m, 0), local_size)
        for numel in (7, 1, 3, 0):
            x = np.stack([start(r, numel) for r in range(n)])
            got = np.stack([res["static"][numel] for res in ranks])
            assert got.shape == (n, numel)
            close(got, w_eff @ x)
        x = np.stack([start(r, 6) for r in range(n)])
        close(np.stack([res["static"]["2d"].ravel() for res in ranks]), w_eff @ x)
        f = np.stack([start(r, 9, dtype=np.float32) for r in range(n)]).astype(np.float64)
        got = np.stack([res["static"]["float32"] for res in ranks])
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, w_eff @ f, rtol=1e-5, atol=1e-6)


def test_ranks_of_a_machine_end_equal_and_machines_differ(world):
    n, _ = world
    for local_size, m, ranks in _cases(world):
        got = np.stack([res["static"][7] for res in ranks]).reshape(m, local_size, 7)
        assert np.all(got == got[:, :1])          # the all-gather: one result per machine
        assert not np.allclose(got[0, 0], got[1, 0])


def test_dynamic_one_peer_exp_and_callable_follow_the_recursion(world):
    n, _ = world
    for local_size, m, ranks in _cases(world):
        topo = gossip_topology("one-peer-exp", m)
        for label, matrix in [("one-peer-exp", topo.matrix), ("callable",
                                                            lambda k: random_w(m, k))]:
            x = np.stack([start(r, 5, seed=1) for r in range(n)])
            got = np.stack([res["dynamic"][label] for res in ranks], axis=1)
            close(got[0], x)
            for k in range(STEPS):
                x = effective(matrix(k), local_size) @ x
                close(got[k + 1], x)
        if m == 4:   # one-peer exponential over 4 machines: the exact mean after 2 steps
            mean = np.stack([start(r, 5, seed=1) for r in range(n)]).mean(axis=0)
            final = np.stack([res["dynamic"]["one-peer-exp"][2] for res in ranks])
            close(final, np.tile(mean, (n, 1)))


def test_async_and_out_give_the_same_result(world):
    n, _ = world
    for local_size, m, ranks in _cases(world):
        w_eff = effective(random_w(m, 1), local_size)
        want = w_eff @ np.stack([start(r, 11, seed=2) for r in range(n)])
        assert all(res["async"]["in_place"][0] for res in ranks)
        close(np.stack([res["async"]["in_place"][1] for res in ranks]), want)
        for res in ranks:
            assert res["async"]["async"][1] and res["async"]["async"][2]
        # the snapshot taken at the call, not the tensor changed before wait()
        close(np.stack([res["async"]["async"][0] for res in ranks]), want)
        close(np.stack([res["async"]["after_async"] for res in ranks]),
              w_eff @ np.stack([start(r, 11, seed=3) for r in range(n)]))


def test_ddp_follows_the_recursion_with_the_effective_matrix(world):
    n, _ = world
    for local_size, m, ranks in _cases(world):
        traj = np.stack([res["ddp"][0] for res in ranks], axis=1)
        c = np.stack([res["ddp"][1] for res in ranks])
        assert {res["ddp"][2] for res in ranks} == {m}     # the mixing is the machines'
        topo = gossip_topology("one-peer-exp", m)
        x = traj[0]
        for k in range(STEPS):
            x = effective(topo.matrix(k), local_size) @ x - LR * c
            close(traj[k + 1], x)
        # the other order, W (x - lr c), differs: the check can tell them apart
        wrong = effective(topo.matrix(0), local_size) @ (traj[0] - LR * c)
        assert not np.allclose(traj[1], wrong)


def test_one_rank_per_machine_is_neighbor_allreduce_and_one_machine_the_mean(four):
    n, results = four
    for r in results:
        ours, theirs = r["edges"]["l1"]
        assert np.array_equal(ours, theirs)                   # bit for bit
    x = np.stack([start(r, 6, seed=4) for r in range(n)])
    close(np.stack([r["edges"]["l1"][0] for r in results]), random_w(n, 2) @ x)
    close(np.stack([r["edges"]["m1"] for r in results]), np.tile(x.mean(axis=0), (n, 1)))


def test_bad_local_size_and_wrong_machine_topology_are_named(four):
    n, results = four
    errors = results[0]["errors"]
    kind, said = errors["missing_env"]
    assert kind == "ProcessGroupError" and "LOCAL_WORLD_SIZE" in said and "local_size" in said
    kind, said = errors["not_dividing"]
    assert kind == "ProcessGroupError" and "local_size 3 must divide" in said and "4 ranks" in said
    kind, said = errors["wrong_size"]
    assert kind == "ProcessGroupError" and "3 nodes" in said and "2 machines" in said
    kind, said = errors["ddp_size"]
    assert kind == "ProcessGroupError" and "4 nodes" in said and "2 machines" in said
    kind, said = errors["ddp_local_size"]
    assert kind == "InputTypeError" and "hierarchical=True" in said
    assert errors["env_default"] == [4.0, 4.0]


def test_another_group_works_and_its_entry_goes_with_it(four):
    n, results = four
    w_eff = effective(random_w(2, 6), 2)
    close(np.stack([r["other_group"][0] for r in results]),
          w_eff @ np.stack([start(r, 5, seed=6) for r in range(n)]))
    for _, before, after in (r["other_group"] for r in results):
        assert (before, after) == (2, 1)        # the world's and g's, then the world's only


def test_local_size_is_checked_before_a_group_is_needed():
    with pytest.raises(Exception, match="no torch.distributed process group"):
        hierarchical_neighbor_allreduce(torch.ones(2), [[1.0]], local_size=1)
    with pytest.raises(TypeError, match="tag"):
        hierarchical_neighbor_allreduce(torch.ones(2), [[1.0]], tag=-1)
    with pytest.raises(TypeError, match="floating-point"):
        hierarchical_neighbor_allreduce(torch.ones(2, dtype=torch.int64), [[1.0]])


def _rank_three_late(rank, n):
    """Rank 3 comes 2 s late to the second call; everyone waits 0.5 s for a message."""
    import time

    w = np.full((2, 2), 0.5)
    hierarchical_neighbor_allreduce(torch.ones(6), w, local_size=2)   # makes the sub-groups
    if rank == 3:
        time.sleep(2.0)
    try:
        hierarchical_neighbor_allreduce(torch.ones(6), w, local_size=2, iteration=4,
                                        timeout=0.5)
    except Exception as exc:
        return type(exc).__name__, str(exc)
    return None


def test_a_late_rank_is_named_with_its_machine_and_step():
    said = run_local(_rank_three_late, 4, start_method="fork", timeout=60)
    kind, text = said[2]       # rank 3's machine mate waits for it inside the machine
    assert kind == "ProcessGroupError"
    assert "iteration 4, reduce-scatter inside machine 1: rank 3 did not exchange" in text
    assert "within 0.5 s" in text
    for rank, part in ((0, 0), (1, 1)):   # machine 0 waits for machine 1 between machines
        kind, text = said[rank]
        assert kind == "ProcessGroupError"
        assert f"between machines, part {part}" in text
        assert f"machine 1 (rank {2 + part}) did not exchange" in text
