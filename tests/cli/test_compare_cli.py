"""``topocoll compare`` end to end, through the entry point (see ``run_cli`` in conftest)."""

import os
import subprocess
import sys

import pytest

import topocoll as tc

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _one_line_error(result, *needles, code=2):
    assert result.returncode == code, result
    assert "Traceback" not in result.stdout + result.stderr, result
    assert len(result.stderr_lines) == 1, result
    line = result.stderr_lines[0]
    assert line.startswith("error: "), result
    for needle in needles:
        assert needle.lower() in line.lower(), (needle, result)
    return line


def _table_rows(result):
    """The body rows of the rich table: lists of cell texts."""
    return [[c.strip() for c in line.strip("│").split("│")] for line in result.stdout_lines
            if line.startswith("│")]


@pytest.fixture
def ring8_allgather(tmp_path):
    """A BFB allgather schedule on ring:8 written with the API as tmp_path / 's.json'."""
    path = tmp_path / "s.json"
    tc.save_schedule(tc.generate("ring:8", "allgather", "bfb"), path)
    return path


@pytest.fixture
def broken(tmp_path):
    """A ring:8 BFB allgather without its last step (fails verification), as 'broken.json'."""
    s = tc.generate("ring:8", "allgather", "bfb")
    t = s.transfers
    path = tmp_path / "broken.json"
    tc.save_schedule(s.replace(transfers=t[t["step"] < t["step"].max()]), path)
    return path


def test_table_fastest_and_plot(run, tmp_path):
    r = run("compare", "ring:8", "hypercube:3", "--size", "1KiB", "--size", "1MiB",
            "--plot", "out.png")
    assert r.returncode == 0, r
    header = next(line for line in r.stdout_lines if line.startswith("┃"))
    for col in ("entry", "verified", "steps", "T_L", "T_B@1KiB", "time@1KiB", "x bound",
                "time@1MiB"):
        assert col in header, (col, r)
    rows = {cells[0]: cells for cells in _table_rows(r)}
    assert set(rows) == {"ring:8 bfb", "hypercube:3 bfb"}, r
    assert rows["ring:8 bfb"][1:5] == ["8", "2", "yes", "8"], r
    assert rows["hypercube:3 bfb"][1:5] == ["8", "3", "yes", "6"], r
    assert "alpha 10us, 100Gbps per link" in r.stdout        # the default cluster
    assert any(line.startswith("fastest at 1KiB: hypercube:3 bfb") for line in r.stdout_lines), r
    assert any(line.startswith("fastest at 1MiB: ") for line in r.stdout_lines), r
    assert "plot written to out.png" in r.stdout
    assert (tmp_path / "out.png").read_bytes()[:8] == PNG_SIGNATURE


def test_json_mix_of_schedule_file_and_spec(run, ring8_allgather):
    r = run("compare", "s.json", "ring:8", "uniring:8", "-c", "allgather", "-a", "bfb",
            "-a", "ring", "--size", "1MiB", "--alpha", "2us", "--link-bandwidth", "1GB/s",
            "--json")
    assert r.returncode == 0, r
    out = r.json()
    assert list(out)[:4] == ["success", "status", "status_name", "message"]
    assert out["success"] is True and out["status"] == 0 and out["sizes"] == [2**20]
    assert (out["alpha"], out["link_bandwidth"], out["node_bandwidth"]) == (2e-6, 1e9, None)
    got = [(row["name"], row["verdict"]) for row in out["rows"]]
    assert got == [("ring:8 bfb [s.json]", "ok"), ("ring:8 bfb", "ok"),
                   ("ring:8 ring", "ok"), ("uniring:8 bfb", "ok"), ("uniring:8 ring", "ok")]
    from_file = out["rows"][0]
    assert from_file["source"] == "s.json" and from_file["collective"] == "allgather"
    fair = tc.load_schedule(ring8_allgather)
    expected = tc.evaluate(fair, "1MiB", alpha="2us", link_bandwidth="1GB/s")
    assert from_file["sizes"][0]["time"] == expected.time
    assert from_file["sizes"][0]["ratio"] >= 1 - 1e-9
    winner = out["fastest"][0]["name"]
    assert [row["name"] for row in out["rows"] if row["sizes"][0]["fastest"]] == [winner]


def test_invalid_schedule_json_has_status_3(run, broken):
    r = run("compare", "broken.json", "ring:8", "-c", "allgather", "--size", "1MiB", "--json")
    assert r.returncode == 1, r
    out = r.json()
    assert (out["success"], out["status"], out["status_name"]) == (False, 3, "INVALID")
    assert "broken.json" in out["message"]
    assert [row["verdict"] for row in out["rows"]] == ["invalid", "ok"]


def test_invalid_schedule_is_listed_and_exit_is_1(run, broken):
    r = run("compare", "broken.json", "ring:8", "-c", "allgather", "--size", "1MiB")
    assert r.returncode == 1, r
    rows = {cells[0]: cells for cells in _table_rows(r)}
    assert rows["ring:8 bfb [broken.json]"][3] == "NO", r
    assert "invalid" in rows["ring:8 bfb [broken.json]"], r
    assert rows["ring:8 bfb"][3] == "yes", r
    assert any(line.startswith("invalid: ring:8 bfb [broken.json]: invalid")
               for line in r.stdout_lines), r
    assert "fastest at 1MiB: ring:8 bfb," in r.stdout


@pytest.mark.parametrize("content, reason", [
    ("[1, 2]", "not a schedule or topology file"),
    ('{"format": "topocoll.schedule", "version": 1}', "collective"),
    ('{"a": 1, "a": 2}', "appears twice"),
])
def test_a_readable_file_that_is_no_schedule_is_listed_invalid_exit_1(run, tmp_path, content,
                                                                       reason):
    (tmp_path / "odd.json").write_text(content)
    r = run("compare", "odd.json", "ring:8", "--size", "1MiB", "--json")
    assert r.returncode == 1, r
    doc = r.json()
    rows = {row["name"]: row for row in doc["rows"]}
    assert doc["status_name"] == "INVALID" and rows["odd.json"]["verdict"] == "invalid"
    assert reason in rows["odd.json"]["reason"] and rows["ring:8 bfb"]["verdict"] == "ok"


def test_a_file_that_cannot_be_read_is_still_an_error(run):
    _one_line_error(run("compare", "missing.json", "ring:8"), "missing.json")


@pytest.mark.parametrize("args, needles", [
    (["ring:8", "ring:x"], ["ring:x"]),
    (["ring:8", "--plot", "x.nope"], ["plot", "format"]),
])
def test_bad_input_is_one_line_exit_2(run, tmp_path, args, needles):
    r = run("compare", *args)
    _one_line_error(r, *needles)
    assert r.stdout == "" and not (tmp_path / "x.nope").exists(), r


def test_plot_without_matplotlib_says_how_to_install(tmp_path):
    code = ("import runpy, sys; sys.modules['matplotlib'] = None; "
            "sys.argv = ['topocoll', 'compare', 'ring:8', '--plot', 'x.png']; "
            "runpy.run_module('topocoll.cli.main', run_name='__main__')")
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, env=env)
    assert proc.returncode == 2, proc
    assert proc.stdout == "" and "Traceback" not in proc.stderr, proc
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), proc
    assert "pip install 'topocoll[plot]'" in lines[0], proc
    assert not (tmp_path / "x.png").exists()


def test_survey_json_is_compares_result(run):
    r = run("survey", "--nodes", "16", "--topology", "torus:4x4", "--size", "1MiB", "--json")
    assert r.returncode == 0, r
    out = r.json()
    assert list(out)[:4] == ["success", "status", "status_name", "message"]
    assert out["status"] == 0 and out["collective"] == "allreduce" and out["sizes"] == [2**20]
    assert [(row["topology"], row["algorithm"], row["verdict"]) for row in out["rows"]] == [
        ("torus:4x4", "bfb", "ok"), ("ring:16", "biring", "ok"), ("uniring:16", "ring", "ok")]
    assert all(row["sizes"][0]["degree_ratio"] >= 1 - 1e-9 for row in out["rows"])
    assert out["bandwidth"] == "100Gbps per link" and out["link_bandwidth"] == 12.5e9


# ---------------------------------------------------------------------- one default cluster
def _evaluated(run, spec, size, *extra):
    """The time ``topocoll schedule SPEC`` then ``topocoll evaluate`` print (JSON)."""
    name = spec.replace(":", "_") + ".json"
    made = run("schedule", spec, "-c", "allreduce", "-o", name, "--json", *extra)
    assert made.returncode == 0, made
    doc = run("evaluate", name, "--size", size, "--json")
    assert doc.returncode == 0, doc
    return doc.json()["sizes"][0]["time"]


@pytest.mark.parametrize("spec", ["torus:4x4", "genkautz:12,3"])
def test_compare_prices_as_schedule_and_evaluate_do(run, spec):
    # one default cluster: compare's time is evaluate's time for a spec's schedule
    r = run("compare", spec, "--size", "1MiB", "--json")
    assert r.returncode == 0, r
    doc = r.json()
    assert doc["bandwidth"] == "100Gbps per link" and doc["node_bandwidth"] is None
    assert doc["rows"][0]["sizes"][0]["time"] == _evaluated(run, spec, "1MiB")


def test_node_bandwidth_gives_the_per_node_numbers(run):
    # --node-bandwidth: the paper's convention, each node's 100Gbps split over its links (on
    # torus:4x4's four links, a quarter of the default's bandwidth term)
    r = run("compare", "torus:4x4", "--size", "1MiB", "--node-bandwidth", "100Gbps", "--json")
    assert r.returncode == 0, r
    doc = r.json()
    assert doc["bandwidth"] == "100Gbps per node" and doc["link_bandwidth"] is None
    per_node = doc["rows"][0]["sizes"][0]
    assert per_node["time"] == _evaluated(run, "torus:4x4", "1MiB", "--node-bandwidth", "100Gbps")
    default = run("compare", "torus:4x4", "--size", "1MiB", "--json").json()["rows"][0]
    assert per_node["T_B"] == pytest.approx(4 * default["sizes"][0]["T_B"], rel=1e-12)
    assert per_node["time"] - per_node["T_B"] == pytest.approx(default["T_L"], rel=1e-12)
    survey = run("survey", "--nodes", "16", "--topology", "torus:4x4", "--size", "1MiB",
                 "--node-bandwidth", "100Gbps", "--json").json()
    assert survey["bandwidth"] == "100Gbps per node"
    assert survey["rows"][0]["sizes"][0]["time"] == per_node["time"]


@pytest.mark.parametrize("command", [["compare", "ring:8"], ["survey", "-n", "8"],
                                     ["find", "-n", "8", "-d", "2"],
                                     ["train-sim", "--workload", "resnet50", "-n", "8"]])
def test_link_and_node_bandwidth_exclude_each_other(run, command):
    r = run(*command, "--link-bandwidth", "100Gbps", "--node-bandwidth", "100Gbps")
    _one_line_error(r, "--node-bandwidth", "--link-bandwidth", "not both")
