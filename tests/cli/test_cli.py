"""End-to-end tests of the ``topocoll`` command through its entry point, ``main`` (in this
process, or a subprocess where a run needs one: see ``run_cli`` in conftest.py).

Fixtures (``run``, ``ring8_schedule``, ...) live in ``conftest.py``; every run also checks that
no traceback reached stdout or stderr.
"""

import json
import re

import pytest

import topocoll

from tests.helpers import schedule_fixtures

FAMILIES = ["ring", "uniring", "torus", "mesh", "hypercube", "complete", "circulant", "kautz",
            "genkautz", "debruijn", "bipartite", "hamming"]
EVALUATE_KEYS = {"collective", "nodes", "steps", "T_L", "T_B", "time", "bw_lower_bound",
                 "bw_optimal", "diameter", "moore_steps"}
MIB = 1 << 20


def assert_one_line_error(result, *needles, code=None):
    """Non-zero exit, no traceback, and a single error line on stderr containing ``needles``.

    Every error, ours or a usage error from click, is exactly one stderr line ``error: ...``.
    """
    assert result.returncode != 0, result
    if code is not None:
        assert result.returncode == code, result
    assert "Traceback" not in result.stdout + result.stderr, result
    lines = result.stderr_lines
    assert len(lines) == 1, result
    line = lines[0]
    assert line.startswith("error:"), result
    assert len(line.split(":", 1)[1].strip()) > 0, result
    for needle in needles:
        assert needle.lower() in line.lower(), (needle, result)
    return line


def _write_json(path, obj):
    path.write_text(json.dumps(obj))
    return path


# --------------------------------------------------------------------------- topologies / info

def test_topologies_table_lists_every_family(run):
    r = run("topologies")
    assert r.returncode == 0, r
    first_cells = {line.strip("│┃ ").split()[0] for line in r.stdout_lines
                   if line.startswith("│") and line.strip("│ ")}
    missing = [f for f in FAMILIES if f not in first_cells]
    assert not missing, (missing, r)


def test_topologies_json(run):
    r = run("topologies", "--json")
    assert r.returncode == 0, r
    doc = r.json()
    assert doc["success"] is True and doc["status"] == 0, doc
    rows = doc["families"]
    assert isinstance(rows, list)
    names = [row["name"] for row in rows]
    assert set(FAMILIES) <= set(names), names
    for row in rows:  # each family's example spec belongs to that family
        assert row["example"].split(":")[0] == row["name"], row


def test_info_torus_json(run):
    r = run("info", "torus:4x6", "--json")
    assert r.returncode == 0, r
    facts = r.json()
    assert facts["success"] is True and facts["status_name"] == "SUCCESS", facts
    assert facts["nodes"] == 24
    assert facts["diameter"] == 5
    assert facts["strongly_connected"] is True
    assert facts["moore_steps"] == 3
    assert facts["out_max"] == facts["in_max"] == 4


def test_info_genkautz_reports_dropped_self_loops(run):
    spec = "genkautz:50,3"
    expected = topocoll.build_topology(spec).meta.get("dropped_self_loops", 0)
    assert expected > 0, "pick an (n, d) whose Imase-Itoh digraph has self-loops"
    r = run("info", spec, "--json")
    assert r.returncode == 0, r
    facts = r.json()
    assert facts["dropped_self_loops"] == expected
    assert facts["nodes"] == 50


# --------------------------------------------------------------------------- schedule / verify / evaluate

def test_schedule_writes_file(ring8_generated):
    r, path = ring8_generated
    assert r.returncode == 0, r
    assert path.is_file()
    doc = json.loads(path.read_text())
    assert doc["format"] == "topocoll.schedule"
    assert doc["collective"] == "allgather"
    assert doc["algorithm"] == "bfb"
    assert max(t["step"] for t in doc["transfers"]) == 4
    assert "s.json" in r.stdout + r.stderr


def test_verify_valid_schedule(run, ring8_schedule):
    r = run("verify", ring8_schedule.name)
    assert r.returncode == 0, r
    assert r.stdout_lines[0].startswith("valid"), r


def test_evaluate_json_default(run, ring8_schedule):
    r = run("evaluate", ring8_schedule.name, "--size", "1MiB", "--json")
    assert r.returncode == 0, r
    doc = r.json()
    assert isinstance(doc, dict) and doc["success"] is True, doc
    assert len(doc["sizes"]) == 1 and doc["file"] == ring8_schedule.name, doc
    e = doc["sizes"][0]
    assert EVALUATE_KEYS <= set(e), EVALUATE_KEYS - set(e)
    assert {k: doc[k] for k in ("collective", "nodes", "steps", "T_L", "diameter")} == \
        {k: e[k] for k in ("collective", "nodes", "steps", "T_L", "diameter")}
    assert e["collective"] == "allgather"
    assert e["nodes"] == 8
    assert e["steps"] == 4
    assert e["diameter"] == 4
    assert e["bw_optimal"] is True
    assert e["time"] == pytest.approx(e["T_L"] + e["T_B"], rel=1e-12)
    assert e["T_B"] == pytest.approx(e["bw_lower_bound"], rel=1e-9)


def test_evaluate_alpha_and_link_bandwidth(run, ring8_schedule):
    r = run("evaluate", ring8_schedule.name, "--size", "1MiB", "--alpha", "10us",
            "--link-bandwidth", "100Gbps", "--json")
    assert r.returncode == 0, r
    e = r.json()["sizes"][0]
    assert e["T_L"] == pytest.approx(e["steps"] * 1e-5, rel=1e-9)
    assert e["T_B"] == pytest.approx((7 / 8) * MIB / (2 * 12.5e9), rel=1e-9)
    assert e["time"] == pytest.approx(e["T_L"] + e["T_B"], rel=1e-9)


def test_evaluate_multiple_sizes_gives_one_entry_each(run, ring8_schedule):
    # non-default alpha and bandwidth, so flags that were silently ignored would show
    r = run("evaluate", ring8_schedule.name, "--size", "1MiB", "--size", "4MiB",
            "--alpha", "3us", "--link-bandwidth", "25Gbps", "--json")
    assert r.returncode == 0, r
    doc = r.json()
    assert isinstance(doc, dict) and doc["status"] == 0, doc
    results = doc["sizes"]
    assert isinstance(results, list) and len(results) == 2, results
    for e, m in zip(results, (MIB, 4 * MIB)):
        assert EVALUATE_KEYS <= set(e), EVALUATE_KEYS - set(e)
        assert e["size"] == m
        assert e["T_L"] == pytest.approx(4 * 3e-6, rel=1e-9)
        assert e["T_B"] == pytest.approx((7 / 8) * m / (2 * 3.125e9), rel=1e-9)
        assert e["time"] == pytest.approx(e["T_L"] + e["T_B"], rel=1e-9)


def test_schedule_to_stdout(run):
    r = run("schedule", "torus:4x4", "-c", "allreduce", "-o", "-")
    assert r.returncode == 0, r
    doc = json.loads(r.stdout)  # stdout holds the schedule and nothing else
    assert doc["format"] == "topocoll.schedule"
    assert doc["version"] == 1
    assert doc["collective"] == "allreduce"
    assert doc["topology"]["nodes"] == 16
    assert doc["transfers"] and all(t["step"] >= 1 for t in doc["transfers"])
    assert "verified" in r.stderr, r  # the summary goes to stderr, out of the JSON's way


def test_uniring_ring_allreduce(run):
    r = run("schedule", "uniring:5", "-c", "allreduce", "-a", "ring", "-o", "r.json")
    assert r.returncode == 0, r
    v = run("verify", "r.json")
    assert v.returncode == 0, v
    assert v.stdout_lines[0].startswith("valid"), v


def test_biring_on_uniring_fails(run, tmp_path):
    r = run("schedule", "uniring:5", "-c", "allreduce", "-a", "biring", "-o", "b.json")
    line = assert_one_line_error(r, code=2)
    assert "link" in line.lower(), r
    assert re.search(r"\d+\s*->\s*\d+", line), r  # names the link that is missing
    assert not (tmp_path / "b.json").exists()


# --------------------------------------------------------------------------- fixture files

_PHRASES = {"causality": "does not hold", "double_count": "second time",
            "incomplete": "lacks"}


@pytest.mark.parametrize("path", schedule_fixtures(), ids=lambda p: p.stem)
def test_verify_fixture(run, path):
    meta = json.loads(path.read_text())["meta"]
    r = run("verify", path)
    if meta["expect"] == "valid":
        assert r.returncode == 0, r
        assert r.stdout_lines[0].startswith("valid"), r
    else:
        assert r.returncode == 1, r
        assert r.stdout_lines[0].startswith("invalid"), r
        assert _PHRASES[meta["kind"]] in r.stdout, r
        assert f"[{meta['kind']}]" in r.stdout, r


def test_verify_json_on_invalid_example(run, examples_dir):
    r = run("verify", "--json", examples_dir / "invalid-causality.json")
    assert r.returncode == 1, r
    report = r.json()
    assert report["valid"] is False
    assert report["success"] is False and report["status_name"] == "INVALID", report
    assert isinstance(report["error_count"], int) and report["error_count"] > 0
    assert report["counts"].get("causality", 0) >= 1, report
    assert any(e["kind"] == "causality" for e in report["errors"]), report


# --------------------------------------------------------------------------- bad input

@pytest.mark.parametrize("args, needles", [
    (["schedule", "torus:0x4", "-c", "allgather"], ["torus:0x4"]),
    (["schedule", "ring:1", "-c", "allgather"], ["ring:1"]),
    (["schedule", "circulant:10:0", "-c", "allgather"], ["circulant:10:0"]),
    (["schedule", "nosuchfamily:3", "-c", "allgather"], ["nosuchfamily"]),
    (["schedule", "ring:8", "-c", "nosuchcollective"], ["nosuchcollective"]),
    (["schedule", "ring:8", "-c", "scatter", "-a", "bfb"], ["scatter"]),
    (["verify", "missing.json"], ["missing.json"]),
], ids=["torus0", "ring1", "circulant0", "family", "collective", "unsupported", "missing-file"])
def test_bad_input_one_line(run, args, needles):
    assert_one_line_error(run(*args), *needles, code=2)


def assert_format_invalid(run, name, *needles):
    """A file that breaks the format is an invalid schedule: exit 1 with the rule broken, in
    the human report and as one JSON report."""
    human = run("verify", name)
    assert human.returncode == 1 and human.stderr == "", human
    assert human.stdout.startswith("invalid: "), human
    for needle in needles:
        assert re.search(needle, human.stdout), human
    doc = run("verify", name, "--json")
    assert doc.returncode == 1, doc
    report = doc.json()
    assert report["valid"] is False and report["counts"] == {"format": 1}
    assert report["status_name"] == "INVALID" and report["message"].startswith("invalid: ")
    assert report["errors"][0]["kind"] == "format"
    for needle in needles:
        assert re.search(needle, report["errors"][0]["message"]), doc
    return human.stdout


def test_verify_garbage_file(run, tmp_path):
    (tmp_path / "g.json").write_text("this is { not a schedule\n")
    assert_format_invalid(run, "g.json", "g.json", "not a JSON schedule file")


def test_verify_truncated_file(run, ring8_schedule):
    text = ring8_schedule.read_text()
    ring8_schedule.write_text(text[: len(text) // 2])
    assert_format_invalid(run, ring8_schedule.name, "s.json", "not valid JSON")


def test_verify_transfer_missing_field(run, ring8_schedule):
    doc = json.loads(ring8_schedule.read_text())
    del doc["transfers"][5]["lo"]
    _write_json(ring8_schedule, doc)
    assert_format_invalid(run, ring8_schedule.name, r"transfers\[5\]\.lo")


def test_verify_unreadable_input_is_bad_input_not_invalid(run, tmp_path):
    assert_one_line_error(run("verify", "missing.json", "--json"), "missing.json",
                          "cannot read", code=2)
    (tmp_path / "folder.json").mkdir()
    assert_one_line_error(run("verify", "folder.json"), "folder.json", code=2)


def test_schedule_with_missing_link(run, ring8_schedule):
    doc = json.loads(ring8_schedule.read_text())
    t = doc["transfers"][0]
    links = {(link["src"], link["dst"]) for link in doc["topology"]["links"]}
    t["dst"] = (t["src"] + 4) % 8  # the opposite node of ring:8, not a neighbour
    assert (t["src"], t["dst"]) not in links
    _write_json(ring8_schedule, doc)
    link = f"{t['src']}->{t['dst']}"

    v = run("verify", ring8_schedule.name)
    assert v.returncode == 1, v
    assert v.stdout_lines[0].startswith("invalid"), v
    assert "missing_link" in v.stdout and link in v.stdout, v

    e = run("evaluate", ring8_schedule.name, "--json")
    assert_one_line_error(e, link)
    assert not e.stdout.strip(), e  # no half-priced result


@pytest.mark.parametrize("option, value", [("--size", "12parsecs"), ("--alpha", "-3us")])
def test_evaluate_bad_units(run, ring8_schedule, option, value):
    r = run("evaluate", ring8_schedule.name, option, value)
    assert_one_line_error(r, option, value, code=2)


def test_schedule_on_not_strongly_connected_topology(run, tmp_path):
    link = {"bandwidth": 12.5e9, "latency": 1e-5}
    _write_json(tmp_path / "path.json", {
        "format": "topocoll.topology", "version": 1, "name": "path3", "nodes": 3,
        "links": [{"src": 0, "dst": 1, **link}, {"src": 1, "dst": 2, **link}]})
    r = run("schedule", "path.json", "-c", "allgather", "-o", "p.json")
    line = assert_one_line_error(r, "cannot be reached", code=2)
    assert re.search(r"node \d+ cannot be reached from node \d+", line), line
    assert not (tmp_path / "p.json").exists()


# --------------------------------------------------------------------------- mutation

def test_mutated_hypercube_allreduce_is_rejected(run, tmp_path):
    r = run("schedule", "hypercube:3", "-c", "allreduce", "-o", "h.json")
    assert r.returncode == 0, r
    assert "verified" in r.stdout + r.stderr, r
    doc = json.loads((tmp_path / "h.json").read_text())
    last = max(t["step"] for t in doc["transfers"])
    assert last > 1
    victim = next(t for t in doc["transfers"] if t["step"] == last)
    victim["step"] = 1
    _write_json(tmp_path / "m.json", doc)
    v = run("verify", "m.json")
    assert v.returncode == 1, v
    assert v.stdout_lines[0].startswith("invalid"), v
