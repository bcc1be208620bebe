"""The emulation's commands: ``topocoll emulate``, ``run --emulate``, ``gossip run``: one JSON
document, one-line refusals, nothing left behind."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from tests.cli.conftest import run_cli, run_subprocess
from tests.emulate.conftest import needs_root


@pytest.mark.parametrize("args, rule", [
    (["emulate"], "give a TOPOLOGY"),
    (["emulate", "ring:4", "--force"], "--force goes with --clean"),
    (["emulate", "ring:4", "--shell", "--hold"], "not both"),
    (["emulate", "ring:4", "--link-bandwidth", "25Mbps", "--scale", "0.5"], "not both"),
    (["emulate", "ring:4", "--mtu", "100"], "1280<=x<=65535"),
    (["emulate", "nosuch:4"], "unknown topology family"),
    (["gossip", "run", "one-peer-exp"], "give --nodes"),
    (["gossip", "run", "one-peer-exp", "--nodes", "4", "--link-bandwidth", "1Mbps"],
     "add --network"),
])
def test_refusals_are_one_line(tmp_path, args, rule):
    r = run_cli(args, tmp_path)
    assert r.returncode == 2, r
    assert len(r.stderr_lines) == 1 and rule in r.stderr, r


def test_run_refuses_shaping_without_emulate(tmp_path):
    from topocoll.schedule.io import save_schedule
    from topocoll.synth import generate

    save_schedule(generate("ring:4", "allreduce", "bfb"), tmp_path / "s.json")
    r = run_subprocess(["run", "s.json", "--link-bandwidth", "1Mbps"], tmp_path)
    assert r.returncode == 2 and "add --emulate" in r.stderr and len(r.stderr_lines) == 1, r
    r = run_subprocess(["run", "s.json", "--emulate", "--backend", "nccl"], tmp_path)
    assert r.returncode == 2 and "--backend gloo" in r.stderr, r


@needs_root
def test_emulate_prints_one_json_document(tmp_path):
    r = run_cli(["emulate", "torus:3x3", "--check", "--link-bandwidth", "40Mbps", "--json"],
                tmp_path)
    assert r.returncode == 0, r
    doc = r.json()
    assert doc["status"] == 0 and doc["nodes"] == 9 and doc["cables"] == 18
    assert doc["check"]["failed"] == [] and doc["check"]["pairs"] == 72
    assert doc["check"]["measured_over_rate"] == pytest.approx(1.0, abs=0.1)
    assert doc["build_seconds"] > 0 and doc["teardown_seconds"] >= 0
    assert doc["state"] == "closed" and doc["mode"] == "root"


@needs_root
def test_emulate_calibrates_and_clean_finds_nothing_to_do(tmp_path):
    r = run_cli(["emulate", "ring:4", "--calibrate", "--link-bandwidth", "40Mbps"], tmp_path)
    assert r.returncode == 0, r
    assert "goodput" in r.stdout and "alpha" in r.stdout
    r = run_cli(["emulate", "--clean", "--json"], tmp_path)
    assert r.returncode == 0 and isinstance(r.json()["removed"], list), r


@needs_root
def test_emulate_shell_runs_inside_a_node(tmp_path):
    env = dict(os.environ, SHELL="/bin/sh")
    proc = subprocess.run([sys.executable, "-m", "topocoll.cli.main", "emulate", "ring:3",
                           "--shell", "--node", "2", "--link-bandwidth", "40Mbps"],
                          input="cat /proc/net/fib_trie | grep -c '10.0.0.3' > "
                                f"{tmp_path}/seen; exit 3\n", text=True, capture_output=True,
                          timeout=120, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert int((tmp_path / "seen").read_text()) >= 1      # node 2's own address is there


@needs_root
def test_run_emulate_measures_and_models(tmp_path):
    pytest.importorskip("torch")
    from topocoll.schedule.io import save_schedule
    from topocoll.synth import generate

    save_schedule(generate("ring:4", "allreduce", "bfb"), tmp_path / "s.json")
    r = run_subprocess(["run", "s.json", "--emulate", "--link-bandwidth", "100Mbps", "--size",
                        "1MiB", "--iterations", "2", "--check", "--json"], tmp_path, timeout=300)
    assert r.returncode == 0, r
    doc = r.json()
    for key in ("time", "baseline_time", "model_time", "measured_over_model",
                "baseline_model_time", "calibration", "network", "host"):
        assert doc[key] is not None, key
    assert doc["correct"] is True and doc["network"]["ranks"] == 4


@needs_root
def test_gossip_run_on_a_network(tmp_path):
    pytest.importorskip("torch")
    r = run_subprocess(["gossip", "run", "one-peer-exp", "--nodes", "4", "--network",
                        "switch:4", "--link-bandwidth", "100Mbps", "--size", "1MiB",
                        "--iterations", "2", "--json"], tmp_path, timeout=300)
    assert r.returncode == 0, r
    doc = r.json()
    # M against 2 (n-1)/n M; the latencies (calibrated: more under load) only lower the ratio
    assert 0 < doc["model_ratio"] <= 4 / 6 + 1e-9
    # at least M over one link at the calibrated goodput (measured: may sit a little above the
    # shaper's nominal rate)
    assert doc["model_time"] >= (1 << 20) / doc["calibration"]["goodput"] * (1 - 1e-9)
    assert doc["time"] > 0 and doc["baseline_time"] > 0 and doc["model_time"] > 0
    r = run_subprocess(["gossip", "run", "one-peer-exp", "--nodes", "3", "--network",
                        "switch:4"], tmp_path)
    assert r.returncode == 2 and "has 4 endpoints" in r.stderr, r


@needs_root
def test_run_emulate_in_a_user_namespace(tmp_path):
    """Without the network capabilities (see test_network), the command moves itself into a
    user namespace and runs there."""
    pytest.importorskip("torch")
    if shutil.which("setpriv") is None:
        pytest.skip("emulation: setpriv (util-linux) is needed to drop capabilities")
    from topocoll.schedule.io import save_schedule
    from topocoll.synth import generate

    save_schedule(generate("ring:3", "allreduce", "bfb"), tmp_path / "s.json")
    proc = subprocess.run(["setpriv", "--bounding-set=-all,+setfcap", "--inh-caps=-all",
                           sys.executable, "-m", "topocoll.cli.main", "run", "s.json",
                           "--emulate", "--link-bandwidth", "100Mbps", "--size", "256KiB",
                           "--iterations", "1", "--check", "--json"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert "Traceback" not in proc.stderr, proc.stderr
    if proc.returncode == 2 and "user namespace" in proc.stderr:
        pytest.skip(f"emulation: {proc.stderr.strip()}")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["correct"] is True and doc["network"]["mode"] == "user namespace"


def test_gossip_run_on_loopback_has_no_model(tmp_path):
    pytest.importorskip("torch")
    r = run_subprocess(["gossip", "run", "exponential-graph", "--nodes", "4", "--size", "64KiB",
                        "--iterations", "2", "--json"], tmp_path, timeout=300)
    assert r.returncode == 0, r
    doc = r.json()
    assert doc["model_time"] is None and doc["model_ratio"] is None and "network" not in doc
    assert doc["ratio"] == pytest.approx(doc["time"] / doc["baseline_time"])
