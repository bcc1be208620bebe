"""``topocoll export``, ``lint``, ``import`` and ``verify`` on .xml files, through the command."""

import json
import shutil

import pytest

from tests.cli.conftest import run_cli
from tests.cli.test_cli import assert_one_line_error
from tests.helpers import DATA


@pytest.fixture(scope="module")
def torus_file(tmp_path_factory):
    where = tmp_path_factory.mktemp("interop")
    result = run_cli(["schedule", "torus:3x3", "-c", "allreduce", "-o", "s.json"], where)
    assert result.returncode == 0, result
    return where / "s.json"


@pytest.fixture
def torus(torus_file, tmp_path):
    """BFB allreduce on torus:3x3, made once per module, as s.json in the test's folder."""
    shutil.copyfile(torus_file, tmp_path / "s.json")
    return tmp_path / "s.json"


def test_export_lint_import_evaluate(run, torus, tmp_path):
    exported = run("export", torus, "-o", "s.xml")
    assert exported.returncode == 0, exported
    assert "thread blocks" in exported.stdout and "-> s.xml" in exported.stdout
    text = (tmp_path / "s.xml").read_text()
    assert text.startswith("<algo ") and 'coll="allreduce"' in text
    linted = run("lint", "s.xml")
    assert linted.returncode == 0 and linted.stdout.startswith("valid:"), linted
    assert run("verify", "s.xml").returncode == 0
    imported = run("import", "s.xml", "-o", "back.json", "--topology", "torus:3x3")
    assert imported.returncode == 0, imported
    a = run("evaluate", torus, "--json").json()["sizes"][0]
    b = run("evaluate", "back.json", "--json").json()["sizes"][0]
    for key in ("steps", "T_L", "T_B", "time", "link_model_time"):
        assert b[key] == pytest.approx(a[key], rel=1e-12), key


def test_export_json_is_one_document_and_xml_can_go_to_stdout(run, torus):
    doc = run("export", torus, "-o", "s.xml", "--json", "--channels", "2", "--proto", "LL")
    assert doc.returncode == 0
    d = doc.json()
    assert d["success"] and d["format"] == "msccl-xml" and d["instances"] == 2
    assert d["proto"] == "LL" and d["ngpus"] == 9 and d["output"] == "s.xml"
    piped = run("export", torus, "-o", "-")
    assert piped.returncode == 0 and piped.stdout.startswith("<algo ")
    assert piped.stdout.rstrip().endswith("</algo>") and "thread blocks" in piped.stderr


def test_astra_export_names_the_next_command(run, torus, tmp_path):
    result = run("export", torus, "--format", "msccl-xml-astra", "-o", "a.xml")
    assert result.returncode == 0
    assert "chakra" in result.stderr.lower()
    assert 'type="cpy"' not in (tmp_path / "a.xml").read_text()


def test_lint_reports_rules_with_lines_and_exits_1(run, torus, tmp_path):
    assert run("export", torus, "-o", "s.xml").returncode == 0
    path = tmp_path / "s.xml"
    path.write_text(path.read_text().replace('hasdep="1"', 'hasdep="0"', 1))
    result = run("lint", "s.xml")
    assert result.returncode == 1 and result.stdout.startswith("invalid:")
    assert "[hasdep] s.xml:" in result.stdout
    doc = run("lint", "s.xml", "--json")
    assert doc.returncode == 1
    d = doc.json()
    assert d["valid"] is False and d["runtime_errors"][0]["rule"] == "hasdep"
    assert isinstance(d["runtime_errors"][0]["line"], int)


def test_truncated_xml_is_one_line_error_naming_the_line(run, torus, tmp_path):
    assert run("export", torus, "-o", "s.xml").returncode == 0
    path = tmp_path / "s.xml"
    path.write_text(path.read_text()[:700])
    for command in ("lint", "import"):
        args = [command, "s.xml"] + (["-o", "x.json"] if command == "import" else [])
        assert_one_line_error(run(*args), "s.xml:", "not well-formed", "inside <", code=2)


def test_import_of_the_older_dialect_writes_the_schedule_and_says_why_it_exits_1(run, tmp_path):
    src = DATA / "msccl" / "ring3-allgather-old-dialect.xml"
    result = run("import", src, "-o", "old.json")
    assert result.returncode == 1, result
    assert "runtime rule [attributes]" in result.stdout
    assert result.stderr.count("\n") == 1 and "[attributes]" in result.stderr
    assert run("verify", "old.json").returncode == 0
    assert json.loads((tmp_path / "old.json").read_text())["collective"] == "allgather"


@pytest.mark.parametrize("args, needles", [
    (["--channels", "0"], ["--channels"]),
    (["--max-bytes", "lots"], ["--max-bytes"]),
    (["--min-bytes", "2KiB", "--max-bytes", "1KiB"], ["must not exceed"]),
    (["--chunks", "0"], ["--chunks"]),
])
def test_bad_export_options_are_one_line_errors(run, torus, args, needles):
    assert_one_line_error(run("export", torus, "-o", "s.xml", *args), *needles, code=2)


def test_export_refuses_an_invalid_schedule(run):
    bad = DATA / "invalid-causality.json"
    result = run("export", bad, "-o", "s.xml")
    assert result.returncode != 0
    assert_one_line_error(result, "invalid")


def test_lint_capacity_names_the_buffers_a_program_needs(run, tmp_path):
    shutil.copy(DATA / "msccl" / "cap-pair2-allgather-needs2.xml", tmp_path / "c.xml")
    fits = run("lint", "c.xml")
    assert fits.returncode == 0, fits
    assert "needs 2 chunk(s) per connection, the protocol holds 2" in fits.stdout
    short = run("lint", "c.xml", "--capacity", "1")
    assert short.returncode == 1 and "[buffers]" in short.stdout, short
    as_json = run("lint", "c.xml", "--capacity", "1", "--json").json()
    assert (as_json["min_capacity"], as_json["capacity"]) == (2, 1)
    assert run("lint", "c.xml", "--capacity", "0").returncode == 2
