"""What the schedule functions accept: a Schedule or its file's path; numbers that fit."""

import json

import numpy as np
import pytest

import topocoll as tc
from topocoll.errors import InputTypeError, ScheduleFormatError, TopocollError
from topocoll.schedule import Schedule, transfer_array
from topocoll.topology import topology

from tests.helpers import schedule_fixtures


@pytest.mark.parametrize("path", schedule_fixtures(), ids=lambda p: p.name)
def test_verify_takes_a_path_and_agrees_with_the_loaded_schedule(path):
    by_path = tc.verify(path)
    by_str = tc.verify(str(path))
    loaded = tc.verify(tc.load_schedule(path))
    assert by_path.valid == by_str.valid == loaded.valid
    assert by_path.errors == loaded.errors


def test_evaluate_and_simulate_take_a_path(tmp_path):
    s = tc.generate("ring:6", "allgather")
    path = tmp_path / "s.json"
    tc.save_schedule(s, path)
    assert tc.evaluate(str(path), "1MiB").time == tc.evaluate(s, "1MiB").time
    assert tc.simulate(path, "1MiB").time == tc.simulate(s, "1MiB").time


@pytest.mark.parametrize("thing", [3, None, b"{}", ["s.json"]])
def test_other_things_are_a_type_error_naming_what_is_accepted(thing):
    with pytest.raises(InputTypeError, match="a Schedule or a schedule file's path"):
        tc.verify(thing)
    with pytest.raises(TypeError):
        tc.evaluate(thing, "1MiB")


@pytest.mark.parametrize("field, value", [("step", 2**31), ("src", 2**31), ("dst", -2**31 - 1),
                                          ("step", np.int64(2**40))])
def test_numbers_that_do_not_fit_a_field_are_refused_not_wrapped(field, value):
    columns = dict(step=1, src=0, dst=1, shard=0, lo=0.0, hi=1.0)
    columns[field] = value
    with pytest.raises(ScheduleFormatError, match=f"{field} .* does not fit a 32-bit integer"):
        transfer_array(**columns)


def test_a_structured_array_with_wide_fields_is_refused_not_wrapped():
    wide = np.zeros(2, dtype=[("step", "<i8"), ("src", "<i8"), ("dst", "<i8"), ("shard", "<i8"),
                              ("lo", "<f8"), ("hi", "<f8"), ("op", "i1")])
    wide["step"] = [1, 2**32 + 1]     # wraps to 1 in 32 bits: a silently different schedule
    wide["dst"], wide["hi"] = 1, 1.0
    with pytest.raises(TopocollError, match="step 4294967297 does not fit"):
        Schedule(topology("ring:2"), "allgather", wide)


def test_steps_are_the_distinct_step_numbers_everywhere(tmp_path):
    t = transfer_array([5, 5, 10, 10], [0, 1, 1, 0], [1, 0, 0, 1], [0, 1, 0, 1], 0.0, 1.0)
    # ring:2 allgather: step 5 swaps the shards, step 10 repeats the swap (harmless copies)
    s = Schedule(topology("ring:2"), "allgather", t)
    assert (s.num_steps, s.last_step) == (2, 10)
    report = tc.verify(s)
    assert report.valid and report.steps == 2
    assert any("8 of steps 1..10 carry no transfer" in w for w in report.warnings)
    assert tc.evaluate(s, "1MiB").steps == 2
    from tests.cli.test_fuzz_cli import run_in_process
    tc.save_schedule(s, tmp_path / "gaps.json")
    code, out, _ = run_in_process(["verify", "gaps.json", "--json"], tmp_path)
    assert code == 0 and json.loads(out)["steps"] == 2
    code, out, _ = run_in_process(["evaluate", "gaps.json", "--json"], tmp_path)
    assert code == 0 and json.loads(out)["steps"] == 2
    assert json.loads(out)["sizes"][0]["steps"] == 2


def test_reverse_and_concatenate_use_the_last_step_not_the_count():
    t = transfer_array([1, 3], [0, 1], [1, 0], [0, 1], 0.0, 1.0)
    ag = Schedule(topology("ring:2"), "allgather", t)          # two steps, numbered 1 and 3
    assert (ag.num_steps, ag.last_step) == (2, 3)
    both = tc.concatenate(ag, ag, "allgather")
    assert both.transfers["step"].tolist() == [1, 3, 4, 6]     # the second starts after step 3
    rev = tc.reverse(ag, "reduce_scatter")
    assert sorted(rev.transfers["step"].tolist()) == [1, 3]
    assert tc.verify(rev).valid


def test_a_file_declaring_far_more_nodes_than_its_links_touch_fails_fast(tmp_path):
    """The file of a 6-node schedule edited to claim 100000 nodes: reported as isolated nodes
    without simulating, inside a 1.5 GB address space (the simulation would need ~8 GB)."""
    import subprocess
    import sys

    doc = json.loads([p for p in schedule_fixtures()
                      if p.name.startswith("valid-allgather")][0].read_text())
    doc["topology"]["nodes"] = 100_000
    path = tmp_path / "big.json"
    path.write_text(json.dumps(doc))
    code = ("import resource, json, topocoll as tc\n"
            "resource.setrlimit(resource.RLIMIT_AS, (1_500_000_000, resource.RLIM_INFINITY))\n"
            f"r = tc.verify({str(path)!r})\n"
            "print(json.dumps(r.to_dict()))\n")
    env = {**__import__("os").environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, env=env)   # one BLAS thread: its stacks count too
    assert out.returncode == 0, out.stderr[-2000:]
    report = json.loads(out.stdout)
    assert not report["valid"] and report["counts"] == {"isolated": 100_000 - 6}
    assert report["errors"][0]["node"] == 6 and "links touch 6" in report["errors"][0]["message"]


@pytest.mark.parametrize("collective", ["allgather", "allreduce", "gather", "broadcast"])
def test_incomplete_pieces_are_all_counted_though_only_a_sample_is_kept(collective):
    n = 60                                   # an empty schedule: nothing arrives anywhere
    coll = tc.collective(collective)
    s = Schedule(topology(f"ring:{n}"), collective, transfer_array([], [], [], [], [], []),
                 root=0 if coll.rooted else None)
    report = tc.verify(s, max_errors=5)
    expected = {"allgather": n * (n - 1), "allreduce": n * n, "gather": n - 1,
                "broadcast": n - 1}[collective]
    assert report.counts == {"incomplete": expected} and len(report.errors) == 5
