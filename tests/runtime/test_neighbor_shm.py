"""Neighbor averaging through shared memory (topocoll.runtime.neighborhood) on real gloo groups
of 2, 3 and 4 forked processes: the same bits as the network path and as the documented sum,
for every form of call; channels opened pair by pair and nothing left in /dev/shm; calls in
the order made; the decentralized wrapper on both transports; what a rank hears when its
peers make other calls, come late, or cannot share memory."""

import os
import subprocess

import numpy as np
import pytest
import torch

from tests.helpers import mix_in_order
from topocoll.errors import ProcessGroupError, UnsupportedError
from topocoll.gossip import gossip_topology
from topocoll.runtime import DecentralizedDataParallel, neighbor_allreduce, run_local
from topocoll.runtime.neighborhood import neighborhood, slice_count
from topocoll.runtime.shm import SHM_DIR, Channel

DTYPES = (torch.float32, torch.float64, torch.bfloat16, torch.complex64)


def random_w(n, k, seed=3):
    """A row-stochastic W_k with a random support (a zero diagonal on some rows, and ranks
    that receive from nobody), not doubly stochastic."""
    rng = np.random.default_rng([seed, n, k])
    w = rng.random((n, n)) * (rng.random((n, n)) < 0.6)
    w[:, 0] *= k % 2            # every other iteration nobody hears rank 0
    np.fill_diagonal(w, rng.random(n) * (rng.random(n) < 0.7))
    w[w.sum(axis=1) == 0, 0] = 1.0
    return w / w.sum(axis=1, keepdims=True)


def topologies(n):
    return {"random": lambda k: random_w(n, k), "one-peer-exp": gossip_topology("one-peer-exp", n),
            "complete": np.full((n, n), 1.0 / n)}


def _tensor(rank, dtype, shape, seed):
    g = torch.Generator().manual_seed(seed * 100 + rank)
    x = torch.randn(shape, generator=g, dtype=torch.float64)
    if dtype.is_complex:
        x = torch.complex(x, torch.randn(shape, generator=g, dtype=torch.float64))
    return x.to(dtype)


def _forms(x, topology, k, transport, slice_bytes):
    """The result of every form of call on a copy of x: plain, into out=x, into a strided out,
    async with x changed before wait, and a strided x."""
    kw = {"transport": transport, "slice_bytes": slice_bytes}
    plain = neighbor_allreduce(x, topology, k, **kw)
    inplace = x.clone()
    neighbor_allreduce(inplace, topology, k, out=inplace, **kw)
    strided = torch.empty(x.shape + (2,), dtype=x.dtype)[..., 0]
    neighbor_allreduce(x, topology, k, out=strided, **kw)
    changing = x.clone()
    handle = neighbor_allreduce(changing, topology, k, async_op=True, **kw)
    changing.fill_(7)            # the snapshot went, not this
    later = handle.wait()
    flipped = neighbor_allreduce(x.t().contiguous().t(), topology, k, **kw) if x.dim() == 2 \
        else plain
    return [plain, inplace, strided, later, flipped]


def _same_bits(rank, n):
    """For every topology, dtype and slicing: each form on each transport; True per case
    where every result equals the network path's plain call bit for bit."""
    out = {}
    for name, topology in topologies(n).items():
        for d, dtype in enumerate(DTYPES):
            for shape, slice_bytes in (((37, 29), None), ((5000,), 256), ((0,), None)):
                x = _tensor(rank, dtype, shape, seed=d)
                for k in range(2):
                    reference = neighbor_allreduce(x, topology, k, transport="network")
                    got = (_forms(x, topology, k, "shared_memory", slice_bytes)
                           + _forms(x, topology, k, "network", slice_bytes))
                    out[(name, str(dtype), shape, k)] = (
                        all(torch.equal(reference, g) for g in got),
                        reference.numpy() if dtype == torch.float64 else None)
    return out


@pytest.fixture(scope="module", params=[2, 3, 4], ids=lambda n: f"world{n}")
def bits(request):
    n = request.param
    return n, run_local(_same_bits, n, start_method="fork", timeout=300)


def test_every_form_gives_the_bits_of_the_network_path(bits):
    n, res = bits
    failing = [case for case in res[0] for r in range(n) if not res[r][case][0]]
    assert failing == []


def test_the_result_is_the_documented_sum(bits):
    """The network path (the reference above) against W x summed in the documented order, in
    float64 (where numpy's rounding is torch's)."""
    n, res = bits
    for name, topology in topologies(n).items():
        for k in range(2):
            w = random_w(n, k) if name == "random" else (
                topology.matrix(k) if hasattr(topology, "matrix") else topology)
            xs = [_tensor(r, torch.float64, (37, 29), seed=1).numpy() for r in range(n)]
            want = mix_in_order(np.asarray(w), xs)
            for r in range(n):
                got = res[r][(name, str(torch.float64), (37, 29), k)][1]
                np.testing.assert_array_equal(got, want[r])


# -- channels -------------------------------------------------------------------------------------

def _channels(rank, n):
    topo = gossip_topology("one-peer-exp", n)
    x = torch.full((3000,), float(rank))
    seen = []
    for k in range(2 * topo.period):
        x = neighbor_allreduce(x, topo, k, slice_bytes=1024)
        seen.append(neighborhood().channels)
        ours = [f for f in os.listdir(SHM_DIR) if f.startswith("topocoll-")]
    return seen, ours, x.tolist()


def test_channels_open_pair_by_pair_and_nothing_is_left():
    n = 4
    out = run_local(_channels, n, start_method="fork", timeout=120)
    topo = gossip_topology("one-peer-exp", n)
    for rank, (seen, left, x) in enumerate(out):
        for k, (sent_to, got_from) in enumerate(seen):
            pairs = [topo.matrix(j) for j in range(min(k + 1, topo.period))]
            assert sent_to == sorted({i for w in pairs for i in np.flatnonzero(w[:, rank])
                                      if i != rank})
            assert got_from == sorted({j for w in pairs for j in np.flatnonzero(w[rank])
                                       if j != rank})
        assert left == []
        assert x == pytest.approx([1.5] * 3000)      # the exact mean after a whole period


def test_slices_cover_the_tensor():
    assert [slice_count(n, 4) for n in (0, 1, 4, 5, 8, 9)] == [1, 1, 1, 2, 2, 3]


# -- order ------------------------------------------------------------------------------------

def _interleaved(rank, n):
    topo = gossip_topology("one-peer-exp", n)
    x = torch.arange(6000.0) + rank
    handles = [neighbor_allreduce(x * (j + 1), topo, j, async_op=True, slice_bytes=512)
               for j in range(3)]
    middle = neighbor_allreduce(x, topo, 5, slice_bytes=4096)       # behind the three
    last = neighbor_allreduce(x, topo, 1, async_op=True)
    results = [h.wait() for h in handles] + [middle, last.wait()]
    reference = [neighbor_allreduce(x * (j + 1), topo, j, transport="network") for j in range(3)]
    reference += [neighbor_allreduce(x, topo, 5, transport="network"),
                  neighbor_allreduce(x, topo, 1, transport="network")]
    return [bool(torch.equal(a, b)) for a, b in zip(results, reference)]


def test_calls_run_in_the_order_they_were_made():
    for flags in run_local(_interleaved, 4, start_method="fork", timeout=120):
        assert flags == [True] * 5


# -- the wrapper ------------------------------------------------------------------------------

def _train(rank, n, transport):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(40, 30), torch.nn.Tanh(), torch.nn.Linear(30, 1))
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.1 * rank)
    ddp = DecentralizedDataParallel(model, lambda k: random_w(n, k), bucket_size_mb=0.002,
                                    broadcast_parameters=False, slice_bytes=1024,
                                    optimizer=lambda ps: torch.optim.SGD(ps, lr=0.05,
                                                                         momentum=0.9),
                                    transport=transport)
    g = torch.Generator().manual_seed(rank)
    for _ in range(6):
        ddp(torch.randn(8, 40, generator=g)).pow(2).mean().backward()
        ddp.step()
    ddp(torch.randn(8, 40, generator=g)).pow(2).mean().backward()  # gossip of x^6 in flight
    before = [p.detach().clone() for p in model.parameters()]
    ddp.global_avg()          # drops the gossip in flight: the mean of x^6, not of W x^6
    after = [p.detach().clone() for p in model.parameters()]
    ddp.close()
    return [t.numpy() for t in before], [t.numpy() for t in after], len(ddp.buckets)


def test_the_wrapper_trains_to_the_same_bits_on_both_transports():
    n = 3
    net = run_local(_train, n, ("network",), start_method="fork", timeout=120)
    shm = run_local(_train, n, ("shared_memory",), start_method="fork", timeout=120)
    assert net[0][2] == 2                    # two buckets, the first of five slices
    for (b1, a1, _), (b2, a2, _) in zip(net, shm):
        for x, y in zip(b1 + a1, b2 + a2):
            np.testing.assert_array_equal(x, y)
    for i, _ in enumerate(net[0][0]):        # global_avg: the mean of the replicas x^6
        mean = np.mean([net[r][0][i] for r in range(n)], axis=0)
        np.testing.assert_allclose(shm[0][1][i], mean, rtol=1e-6, atol=1e-7)


# -- what a rank hears ------------------------------------------------------------------------

def _other_calls(rank, n):
    x = torch.ones(10 + 2 * rank)                                   # different shapes
    return neighbor_allreduce(x, np.full((n, n), 0.5), 0, transport="shared_memory").tolist()


def test_ranks_that_make_other_calls_are_told():
    with pytest.raises(ProcessGroupError, match="made different calls"):
        run_local(_other_calls, 2, start_method="fork", timeout=60)


def _late(rank, n):
    import time

    w = np.full((n, n), 0.5)
    neighbor_allreduce(torch.ones(4), w, 0)              # together: the transport is agreed
    if rank == 1:
        time.sleep(3)
    try:
        neighbor_allreduce(torch.ones(4), w, 1, timeout=0.5)
    except ProcessGroupError as exc:
        return str(exc)
    return None


def test_a_late_peer_is_named_with_the_iteration():
    said = run_local(_late, 2, start_method="fork", timeout=60)[0]
    assert said is not None and "iteration 1" in said and "rank 1" in said and "0.5 s" in said


def _apart(rank, n):
    import topocoll.runtime.shm as shm

    real = shm.host_identity
    if rank == 1:        # rank 1 plays a rank of another host
        shm.host_identity = lambda: {**real(), "host": "elsewhere"}
    x = torch.full((5,), float(rank))
    auto = neighbor_allreduce(x, np.full((n, n), 0.5), 0).tolist()
    try:
        neighbor_allreduce(x, np.full((n, n), 0.5), 0, transport="shared_memory")
    except UnsupportedError as exc:
        return auto, str(exc), neighborhood() is None
    return auto, None, None


def test_ranks_of_other_hosts_keep_the_network():
    for auto, refusal, network in run_local(_apart, 2, start_method="fork", timeout=60):
        assert auto == [0.5] * 5 and network
        assert refusal is not None and "rank 1 does not share the host" in refusal


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a small tmpfs needs root")
def test_a_full_dev_shm_is_said_not_crashed(tmp_path):
    mount = tmp_path / "small"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount)],
                      capture_output=True).returncode != 0:
        pytest.skip("this machine refuses a tmpfs mount (a container without the capability)")
    try:
        with pytest.raises(ProcessGroupError, match="no room for a channel"):
            Channel(str(mount / "channel"), 4, 1 << 20, create=True)
        assert list(mount.iterdir()) == []                 # the file did not stay
        small = Channel(str(mount / "fits"), 2, 4096, create=True)
        assert small.slots == 2
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)
