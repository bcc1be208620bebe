"""benchmarks/seeds/testbed_extra.py's two parts of the emulated testbeds (Fig. 15 and
Fig. 8(a) of Zhao et al., NSDI 2025), each run once on its smallest input: every schedule that
ran is valid, every time is positive, and every model column is the link model's time of that
schedule on that network (recomputed here from the calibration the part used)."""

import argparse
import importlib.util
import math
import subprocess
import sys
from pathlib import Path

import pytest

from tests.emulate.conftest import needs_root

ROOT = Path(__file__).resolve().parents[2]
SEEDS = ROOT / "benchmarks" / "seeds"


def _load(name):
    if str(SEEDS) not in sys.path:     # the scripts import their sibling modules
        sys.path.insert(0, str(SEEDS))
    spec = importlib.util.spec_from_file_location(name, SEEDS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def recorded(monkeypatch):
    """Every link-model pricing the parts make: ``{topology name: (plan, calibration)}``."""
    from topocoll.emulate import prediction

    seen = {}
    original = prediction.schedule_model_time

    def record(schedule, plan, calibration, size):
        seen[schedule.topology.name] = (plan, calibration)
        return original(schedule, plan, calibration, size)

    monkeypatch.setattr(prediction, "schedule_model_time", record)
    return seen, original


def _schedule(spec, generator):
    from topocoll import verify
    from topocoll.synth import generate

    schedule = generate(spec, "allreduce", generator)
    assert verify(schedule).valid
    return schedule


@needs_root
def test_fig15_part_on_one_small_size(recorded):
    pytest.importorskip("torch")
    seen, model_time = recorded
    testbeds, extra = _load("testbeds"), _load("testbed_extra")
    args = argparse.Namespace(sizes=["4KiB"], repeats=1, rate="25Mbps",
                              packet=testbeds.packet_bytes("25Mbps"))
    rows = extra.fig15_part(args, testbeds.measure, testbeds._cases)
    assert [r["topology"] for r in rows] == ["hypercube:3"] * 4 + ["twistedhypercube:3"] * 4
    for spec in extra.FIG15_SPECS:
        generators = dict(extra._fig15_generators(spec))
        mine = {r["case"]: r for r in rows if r["topology"] == spec}
        assert set(mine) == set(generators) | {"torch all_reduce"}
        plan, calibration = seen[spec]
        for case, r in mine.items():
            assert r["size"] == 4096 and r["time"] > 0 and r["model"] > 0
            if case == "torch all_reduce":
                assert "verified" not in r
                continue
            assert r["verified"] is True
            schedule = _schedule(spec, generators[case])
            assert math.isclose(r["model"], model_time(schedule, plan, calibration, 4096))
    # the rhd of the hypercube, rd on the twisted hypercube (no links x <-> x xor 2^j)
    assert "RH&D (rhd)" in {r["case"] for r in rows[:4]}
    assert "RH&D routed (rd)" in {r["case"] for r in rows[4:]}
    lines = extra.fig15_summary(rows)
    assert len(lines) == 5 and all("fastest: " in line for line in lines[2::2])


@needs_root
def test_fig8a_part_on_one_dnn_cut_to_two_calls(recorded):
    pytest.importorskip("torch")
    seen, model_time = recorded
    testbeds, extra = _load("testbeds"), _load("testbed_extra")
    args = argparse.Namespace(rate="25Mbps", repeats=1, dnns=["resnet50"], max_calls=2,
                              fig8a_nodes=5, packet=testbeds.packet_bytes("25Mbps"),
                              runtime=(0.002, 1e-5))   # a host model of the runtime
    rows = extra.fig8a_part(args, testbeds.measure, testbeds._cases)
    assert [r["label"] for r in rows] == ["ours", "ShiftedRing", "ShiftedBFBRing", "DBT"]
    for r in rows:
        assert r["verified"] is True and r["dnn"] == "resnet50"
        schedule = _schedule(r["topology"], r["generator"])
        plan, calibration = seen[r["topology"]]
        assert 1 <= len(r["calls"]) <= 2 and 1 <= len(r["model_calls"]) <= 2
        for c in r["calls"] + r["model_calls"]:
            assert c["time"] > 0 and c["bytes"] % 4 == 0
            assert math.isclose(c["model"], model_time(schedule, plan, calibration, c["bytes"]))
        for c in r["calls"]:
            assert c["cpu_model"] > 0.002 and c["runtime_model"] == max(c["model"],
                                                                        c["cpu_model"])
        assert r["stable"] or r["passes"] == extra.MAX_PASSES
        assert math.isclose(r["time"], sum(c["time"] for c in r["calls"]))
        assert math.isclose(r["model"], sum(c["model"] for c in r["model_calls"]))
        # calls run one at a time, none before its gradients are ready, after the compute
        assert r["minibatch"] >= max(r["time"], r["compute"])
        assert r["minibatch"] >= r["calls"][-1]["ready"] + r["calls"][-1]["time"]
    lines = extra.fig8a_summary(rows)
    assert sum(line.startswith("ours over ") for line in lines) == 3


def test_the_parts_are_choices_of_the_testbeds_script():
    out = subprocess.run([sys.executable, str(SEEDS / "testbeds.py"), "--help"],
                         capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    assert "fig15" in out.stdout and "fig8a" in out.stdout and "--dnns" in out.stdout


def test_replay_starts_each_call_when_the_last_ends_and_its_gradients_are_ready():
    extra = _load("testbed_extra")
    calls = [{"ready": 1.0}, {"ready": 2.0}, {"ready": 5.0}]
    assert extra.replay(calls, [1.5, 0.5, 1.0], 4.0) == 6.0      # 1-2.5, 2.5-3, 5-6
    assert extra.replay(calls, [1.5, 0.5, 1.0], 7.0) == 7.0      # the compute ends last
    assert extra.price_fit([{"bytes": 8, "time": 2.0}]) == (2.0, 0.0)


def test_small_sizes_get_more_calls_within_bounds():
    testbeds = _load("testbeds")
    args = argparse.Namespace(repeats=5, min_seconds=1.0)
    assert testbeds.calls_for(args, [0.6, 2.0]) == 5            # long calls: --repeats
    assert testbeds.calls_for(args, [0.02, 0.04]) == 25         # about a second of the slowest
    assert testbeds.calls_for(args, [1e-4]) == testbeds.MAX_CALLS
    assert testbeds.calls_for(argparse.Namespace(repeats=3), [1e-4]) == 3   # not asked: as is


def test_slowest_quartiles_take_each_call_at_its_slowest_rank():
    testbeds = _load("testbeds")
    per_rank = [{"x": [1.0, 5.0, 2.0, 9.0, 3.0]}, {"x": [4.0, 1.0, 2.5, 1.0, 3.0]}]
    # per call the slowest rank: 4, 5, 2.5, 9, 3 -> sorted 2.5, 3, 4, 5, 9
    assert testbeds.slowest_quartiles(per_rank, "x") == (3.0, 4.0, 5.0)
