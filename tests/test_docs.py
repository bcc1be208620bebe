"""The repository's own format and math docs stay true: the format examples load and verify,
every test that docs/math.md names exists, every section a docstring cites exists, and nothing
in the repository points outside it."""

import json
import re
import subprocess
from pathlib import Path

import pytest

import topocoll as tc
from topocoll.schedule import loads_schedule
from topocoll.topology.io import topology_from_dict

ROOT = Path(__file__).resolve().parents[1]
FORMAT = ROOT / "docs" / "format.md"
MATH = ROOT / "docs" / "math.md"
JSON_BLOCK = re.compile(r"```json\n(.*?)```", re.S)
POINTER = re.compile(r"`(tests/[\w/]+\.py)::(\w+)`")
SECTION = re.compile(r"^## (\d+)\. ", re.M)
CITED = re.compile(r"docs/math\.md,?\s+sections?\s+(\d+)(?:\s+and\s+(\d+))?")


def _format_examples():
    docs = [json.loads(body) for body in JSON_BLOCK.findall(FORMAT.read_text())]
    if not docs:
        raise AssertionError("docs/format.md has no JSON examples")
    return docs


def test_format_examples_load_and_the_schedule_verifies():
    kinds = []
    for doc in _format_examples():
        kinds.append(doc["format"])
        if doc["format"] == "topocoll.schedule":
            s = loads_schedule(json.dumps(doc))
            assert s.num_transfers == len(doc["transfers"])
            assert tc.verify(s).valid
        else:
            t = topology_from_dict(doc)
            assert t.num_nodes == doc["nodes"] and t.num_links == len(doc["links"])
    assert sorted(set(kinds)) == ["topocoll.schedule", "topocoll.topology"]


def test_format_documents_every_verifier_kind_and_transfer_field():
    text = FORMAT.read_text()
    for kind in ("malformed", "missing_link", "causality", "double_count", "conflict",
                 "incomplete"):
        assert f"| `{kind}` |" in text, kind
    for field in tc.schedule.TRANSFER_DTYPE.names:
        assert f"`{field}`" in text, field


def _pointers():
    found = POINTER.findall(MATH.read_text())
    if not found:
        raise AssertionError("docs/math.md names no tests")
    return found


@pytest.mark.parametrize("path, name", _pointers(), ids=lambda x: str(x))
def test_math_names_tests_that_exist(path, name):
    source = ROOT / path
    assert source.is_file(), path
    assert re.search(rf"^def {name}\(", source.read_text(), re.M), f"{path}::{name}"


def test_every_math_section_names_a_test():
    text = MATH.read_text()
    parts = SECTION.split(text)[1:]
    numbers = [int(n) for n in parts[::2]]
    assert numbers == list(range(1, len(numbers) + 1)) and len(numbers) >= 8
    for number, body in zip(numbers, parts[1::2]):
        assert POINTER.search(body), f"section {number} names no test"


def test_cited_sections_exist():
    sections = {int(n) for n in SECTION.findall(MATH.read_text())}
    cited = set()
    for path in (ROOT / "src").rglob("*.py"):
        for match in CITED.finditer(path.read_text()):
            cited.update(int(n) for n in match.groups() if n)
    assert cited, "no docstring cites docs/math.md"
    assert cited <= sections, sorted(cited - sections)


# The patterns are spelt in pieces so that this file does not match them itself.
_SHARED = "shared"
_OUTSIDE = re.compile(rf"\.\./{_SHARED}|{_SHARED}/examples|(?-i:MATH[.]md|DESIGN[.]md)"
                      r"|\bseeds? (?:section \d|0\d\d\b)"
                      r"|\bseeds? (?:theorem|table|figure|appendix|definition|conjecture|lemma)\b"
                      r"|\bissue \d", re.I)


def _tracked_text_files():
    try:
        out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                             check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):   # not a git checkout: walk the tree
        out = [str(p.relative_to(ROOT)) for p in ROOT.rglob("*")
               if p.is_file() and ".venv" not in p.parts and ".git" not in p.parts]
    keep = (".py", ".md", ".toml", ".txt", ".cfg", ".json", "Makefile", ".yml", ".yaml")
    return [ROOT / p for p in out if p.endswith(keep)]


def test_nothing_points_outside_the_repository():
    files = _tracked_text_files()
    assert len(files) > 50
    bad = []
    for path in files:
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if _OUTSIDE.search(line):
                bad.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:80]}")
    assert not bad, "\n".join(bad[:10])


@pytest.mark.parametrize("line", [f"see ../{_SHARED}/DESIGN" + ".md", "as in MATH" + ".md 2",
                                  "from seed " + "002", "seed " + "section 5",
                                  "the product is optimal (seed " + "Theorem 13)",
                                  "issue " + "4, item 7"])
def test_the_outside_check_can_fail(line):
    assert _OUTSIDE.search(line)


@pytest.mark.parametrize("line", ["docs/math.md section 4", "rewire --seed 1 -o t.json"])
def test_the_outside_check_lets_our_own_docs_pass(line):
    assert not _OUTSIDE.search(line)
