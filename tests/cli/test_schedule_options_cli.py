"""``topocoll schedule`` options for BFB at scale and for other algorithms, through the real
entry point."""

import json

import numpy as np

from tests.cli.conftest import run_cli


def run(tmp_path, *args):
    return run_cli(args, tmp_path, timeout=300)


def test_chunks_are_whole_and_reported(tmp_path):
    r = run(tmp_path, "schedule", "hypercube:4", "-c", "allreduce", "--chunks", "3", "-o", "c.json")
    assert r.returncode == 0, r.stderr
    assert "3 chunks per shard cost" in r.stdout and "bound" in r.stdout
    doc = json.loads((tmp_path / "c.json").read_text())
    k = np.array([[t["lo"] * 3, t["hi"] * 3] for t in doc["transfers"]])
    assert np.array_equal(k, np.round(k))
    assert run(tmp_path, "verify", "c.json").returncode == 0


def test_size_workers_and_no_symmetry(tmp_path):
    r = run(tmp_path, "schedule", "torus:3x4", "-c", "allgather", "--size", "64KiB",
            "--workers", "2", "--no-symmetry", "-o", "s.json")
    assert r.returncode == 0, r.stderr
    doc = json.loads((tmp_path / "s.json").read_text())
    assert doc["meta"]["symmetry"] is None and doc["meta"]["size"] == 65536


def test_algorithm_options(tmp_path):
    r = run(tmp_path, "schedule", "circulant:8:1,3", "-c", "allgather", "-a", "shiftedring",
            "-O", "shift=3")
    assert r.returncode == 0, r.stderr
    for bad, needle in ((["-O", "bogus=1"], "no option bogus"), (["-O", "nonsense"], "KEY=VALUE"),
                        (["--chunks", "0"], "--chunks")):
        r = run(tmp_path, "schedule", "ring:8", "-c", "allgather", *bad)
        assert r.returncode == 2
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error:") and needle in lines[0]


def test_show_options_prints_the_table_the_library_reads(tmp_path):
    from topocoll.synth import ALGORITHMS, show_options

    r = run(tmp_path, "schedule", "--show-options", "shiftedring")   # no TOPO needed
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == show_options("shiftedring").strip()
    assert "shift = " in r.stdout
    r = run(tmp_path, "schedule", "--show-options", "all")
    assert r.returncode == 0 and all(f"{name}: " in r.stdout for name in ALGORITHMS)
    r = run(tmp_path, "schedule", "--show-options", "bogus")
    assert r.returncode == 2 and "'bogus' is not a generator" in r.stderr
    assert "Traceback" not in r.stderr and r.stdout == ""
