"""The runtime's model in benchmarks/seeds/runtime_model.py (used by testbeds.py): the packet
size it gives the runtime on slow emulated links and the messages it counts (the host model's
regressor)."""

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SEEDS = ROOT / "benchmarks" / "seeds"


@pytest.fixture(scope="module")
def model():
    spec = importlib.util.spec_from_file_location("runtime_model", SEEDS / "runtime_model.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("rate, expected", [("25Mbps", 16384), ("100Mbps", 65536),
                                            ("1Gbps", 524288), ("10kbps", 1024)])
def test_packets_are_a_few_milliseconds_of_a_link(model, rate, expected):
    assert model.packet_bytes(rate) == expected


def test_packets_grow_with_the_rate(model):
    sizes = [model.packet_bytes(f"{r}Mbps") for r in (1, 5, 25, 125, 625)]
    assert sizes == sorted(sizes) and len(set(sizes)) == len(sizes)
    assert all(s & (s - 1) == 0 for s in sizes)        # powers of two


@pytest.mark.parametrize("n", [4, 7, 12])
@pytest.mark.parametrize("nbytes", [256, 4 << 20])
def test_ring_allreduce_messages_closed_form(model, n, nbytes):
    """A ring allreduce: 2(n-1) steps, each rank one send and one receive per step, whatever
    the size (a message is counted once however many packets carry it)."""
    from topocoll.synth import generate

    schedule = generate(f"ring:{n}", "allreduce", "ring")
    assert model.program_messages(schedule, nbytes) == n * 2 * (n - 1) * 2


@pytest.mark.parametrize("spec, generator, per_rank_steps", [
    ("torus:4x4", "bfb", 8), ("genkautz:5,4", "bfb", 2), ("hypercube:3", "rhd", 6)])
def test_every_link_every_step(model, spec, generator, per_rank_steps):
    """BFB and halving-doubling: per step each rank sends on its links and receives on them;
    the count is sends + receives over ranks and steps (checked against the schedule)."""
    from topocoll.synth import generate

    schedule = generate(spec, "allreduce", generator)
    t = schedule.transfers
    pairs = {(int(s), int(a), int(b)) for s, a, b in zip(t["step"], t["src"], t["dst"])}
    assert model.program_messages(schedule, 4096) == 2 * len(pairs)
    assert len({p[0] for p in pairs}) == per_rank_steps


def test_fewer_messages_for_fewer_steps(model):
    from topocoll.synth import generate

    bfb = model.program_messages(generate("torus:4x4", "allreduce", "bfb"), 4096)
    rings = model.program_messages(generate("torus:4x4", "allreduce", "torusrings"), 4096)
    assert 0 < bfb < rings


@pytest.mark.parametrize("n", [3, 6])
def test_ring_allreduce_bytes_closed_form(model, n):
    """A ring allreduce of M bytes: every rank sends and receives 2(n-1) pieces of M/n, so
    the ranks together move 4(n-1)M, however many packets carry them."""
    from topocoll.synth import generate

    schedule = generate(f"ring:{n}", "allreduce", "ring")
    nbytes = 4 * n * 1024
    for packet in (256, 1 << 20):
        assert model.program_bytes(schedule, nbytes, packet) == 4 * (n - 1) * nbytes


def test_bfb_moves_what_its_schedule_says(model):
    """BFB on a torus: the programs move each transfer's bytes twice (sent and received),
    a transfer being its fraction ``hi - lo`` of a shard."""
    from topocoll.synth import generate

    schedule = generate("torus:3x3", "allreduce", "bfb")
    nbytes = 4 * 9 * 720                      # shards of 720 elements: every fraction whole
    t = schedule.transfers
    expected = 2 * float((t["hi"] - t["lo"]).sum()) * nbytes / schedule.num_shards
    assert model.program_bytes(schedule, nbytes, 1 << 20) == pytest.approx(expected)
    assert model.program_bytes(schedule, nbytes, 256) == pytest.approx(expected)
