"""One name per idea: every option of every command (the gossip sub-commands too) is in the
table of docs/cli.md, every old spelling is listed next to its new name and hidden from --help,
old spellings still work, durations take units, and help text keeps its layout."""

import json
import re
from pathlib import Path

import click
import pytest

from tests.cli.conftest import leaf_commands
from topocoll.cli import common
from topocoll.cli.common import RenamedChoice, RenamedOption, parse_duration
from topocoll.errors import TopocollError

from tests.cli.conftest import run_cli
from tests.cli.test_cli import assert_one_line_error

ROOT = Path(__file__).resolve().parents[2]
CLI_MD = ROOT / "docs" / "cli.md"
TICKED = re.compile(r"`([^`]+)`")


# --- reading the commands and the table ------------------------------------------------------

def commands():
    """``{"gossip cost": command, ...}``: every command, sub-groups walked."""
    return {" ".join(path): command for path, command in leaf_commands()}


def _section(text, heading):
    start = text.index(heading)
    rest = text[start + len(heading):]
    following = re.search(r"^## ", rest, re.M)
    return rest[:following.start()] if following else rest


def _rows(section):
    """The rows of the first markdown table of ``section``, as lists of cells."""
    rows = []
    for line in section.splitlines():
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not set("".join(cells)) <= set("-: "):
                rows.append(cells)
        elif rows:
            break
    return rows[1:]   # without the header


def _names(cell):
    """Option names in a cell: every ticked word that starts with '-', '--a/--b' split."""
    return {name for ticked in TICKED.findall(cell) for word in ticked.split()
            for name in word.split("/") if name.startswith("-")}


def read_table(text):
    """The vocabulary of docs/cli.md: one dict per row (idea, names, commands, old)."""
    table = []
    for cells in _rows(_section(text, "## The table")):
        assert len(cells) == 6, cells
        idea, option, _type, _default, where, old = cells
        table.append({"idea": idea, "names": _names(option),
                      "commands": {c.strip() for c in where.split(",")},
                      "old": set(TICKED.findall(old))})
    return table


def read_per_command(text):
    """``{"gossip cost": {"--topology", ...}}`` from the per-command list of docs/cli.md."""
    found = {}
    for command, options in _rows(_section(text, "## Per command")):
        words = TICKED.findall(command)[0].split()
        name = " ".join(w for w in words if w.islower())
        found[name] = _names(options)
    return found


def visible(option):
    return [*option.opts, *option.secondary_opts]


def problems(cmds, table):
    """What breaks the rule: a visible name outside the table, a command missing from its row,
    an old spelling (of an option or of a value) not listed next to its new name, a row or an
    old spelling that no command has."""
    bad = []
    every = set().union(*(row["names"] for row in table)) if table else set()
    used = {id(row): set() for row in table}
    old_seen = set()
    for where, command in sorted(cmds.items()):
        for param in command.params:
            if not isinstance(param, click.Option):
                continue
            names = visible(param)
            if param.hidden and not isinstance(param, RenamedOption):
                bad.append(f"{where}: {names} is hidden but not an old spelling of an option")
                continue
            rows = [row for row in table if set(names) & row["names"]]
            for name in names:
                if name not in every:
                    bad.append(f"{where}: {name} is not in the table of docs/cli.md")
            mine = [row for row in rows if where in row["commands"] or
                    "every command" in row["commands"]]
            if names and not mine and set(names) <= every:
                bad.append(f"{where}: {'/'.join(names)}: the table's row does not list {where}")
            for row in mine:
                used[id(row)].add(where)
            old = list(getattr(param, "old", ()))
            if isinstance(param.type, RenamedChoice):
                old += list(param.type.old)
            for spelling in old:
                old_seen.add((where, spelling))
                if not any(spelling in row["old"] for row in mine):
                    bad.append(f"{where}: old spelling {spelling} of {'/'.join(names)} is not "
                               "listed in its row of docs/cli.md")
    for row in table:
        listed = {c for c in row["commands"] if c != "every command"}
        if listed - used[id(row)]:
            bad.append(f"row {row['idea']!r}: {sorted(listed - used[id(row)])} have none of "
                       f"{sorted(row['names'])}")
        for spelling in row["old"]:
            if not any(s == spelling for _, s in old_seen):
                bad.append(f"row {row['idea']!r}: old spelling {spelling} is not in the code")
    return bad


@pytest.fixture(scope="module")
def text():
    return CLI_MD.read_text()


@pytest.fixture(scope="module")
def cmds():
    return commands()


# --- the rule --------------------------------------------------------------------------------

def test_every_command_is_walked(cmds):
    from topocoll.cli.main import COMMANDS

    assert {"gossip cost", "gossip info", "gossip list", "run", "train-sim"} <= set(cmds)
    assert {c.split()[0] for c in cmds} == set(COMMANDS)


def test_every_option_name_is_in_the_table(text, cmds):
    table = read_table(text)
    assert len(table) > 40
    bad = problems(cmds, table)
    assert not bad, "\n".join(bad)


def test_one_row_per_name_unless_the_commands_differ(text):
    seen = {}
    for row in read_table(text):
        for name in row["names"]:
            for command in row["commands"]:
                assert (name, command) not in seen, (name, command, seen.get((name, command)))
                seen[(name, command)] = row["idea"]


def test_the_per_command_list_is_each_commands_options(text, cmds):
    listed = read_per_command(text)
    assert set(listed) == set(cmds)
    for where, command in cmds.items():
        names = {n for p in command.params if isinstance(p, click.Option) and not p.hidden
                 for n in visible(p)}
        assert listed[where] == names, (where, listed[where] ^ names)


def test_the_check_can_fail(text):
    table = read_table(text)

    @click.command()
    @click.option("--bogus")
    @click.option("--size")
    @click.option("-a", "--algorithm", cls=RenamedOption, old=("--recipe",))
    @click.option("--dtype", type=RenamedChoice(["float32"], old={"single": "float32"}))
    def made_up(bogus, size, algorithm, dtype):
        pass

    bad = "\n".join(problems({"schedule": made_up}, table))
    assert "--bogus is not in the table" in bad
    assert "old spelling --recipe" in bad and "old spelling single" in bad
    # rows that list schedule for names this command lacks
    assert "--collective" in bad
    # a table without --size: the real commands break the rule
    thinner = [row for row in table if "--size" not in row["names"]]
    assert any("--size is not in the table" in b for b in problems(commands(), thinner))


def test_old_spellings_are_hidden_from_help(cmds):
    for where, command in cmds.items():
        old = [s for p in command.params for s in getattr(p, "old", ())]
        if not old:
            continue
        shown = run_cli([*where.split(), "--help"], ROOT).stdout
        for spelling in old:
            for name in spelling.split("/"):
                assert not re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", shown), \
                    (where, name)


# --- old spellings still work ----------------------------------------------------------------

def _untimed(doc, drop):
    """``doc`` without wall-clock measurements (keys naming seconds or elapsed time)."""
    if isinstance(doc, dict):
        return {k: _untimed(v, drop) for k, v in doc.items()
                if k not in drop and "seconds" not in k and "elapsed" not in k}
    if isinstance(doc, list):
        return [_untimed(v, drop) for v in doc]
    return doc


def _same(tmp_path, old, new, drop=()):
    """Run the old spelling and the new one: both succeed and print the same JSON."""
    a, b = run_cli(old, tmp_path), run_cli(new, tmp_path)
    assert a.returncode == 0, a
    assert b.returncode == 0, b
    da, db = _untimed(a.json(), drop), _untimed(b.json(), drop)
    assert da == db
    return db


def test_algorithm_and_time_limit_old_and_new(tmp_path):
    doc = _same(tmp_path, ["alltoall", "ring:8", "--method", "link", "--time-limit", "60",
                           "--json"],
                ["alltoall", "ring:8", "-a", "link", "--time-limit", "1min", "--json"])
    assert doc["method"] == "link"
    _same(tmp_path, ["synth", "ring:4", "-c", "allgather", "--method", "greedy",
                     "--no-symmetric", "--json"],
          ["synth", "ring:4", "-c", "allgather", "--algorithm", "greedy", "--no-symmetry",
           "--json"])


def test_budget_is_time_limit(tmp_path):
    args = ["rewire", "ring:8", "--objective", "distance", "--max-swaps", "20", "--seed", "1",
            "--json"]
    _same(tmp_path, [*args, "--budget", "0"], [*args, "--time-limit", "0"])
    result = run_cli(["find", "-n", "16", "-d", "4", "--budget", "5min"], tmp_path)
    assert_one_line_error(result, "--time-limit", "--optimize")


def test_network_is_topology(tmp_path):
    _same(tmp_path, ["gossip", "cost", "ring", "--network", "ring:4", "--json"],
          ["gossip", "cost", "ring", "--topology", "ring:4", "--json"])


def test_model_is_comm_model_in_simulate(tmp_path, ring8_schedule):
    _same(tmp_path, ["simulate", ring8_schedule, "--model", "both", "--json"],
          ["simulate", ring8_schedule, "--comm-model", "both", "--json"])


def test_train_sim_workload_bucket_size_and_dtype(tmp_path, monkeypatch):
    monkeypatch.setenv("TOPOCOLL_CACHE_DIR", str(tmp_path / "cache"))
    schedule = tmp_path / "r.json"
    assert run_cli(["schedule", "ring:8", "-c", "allreduce", "-o", schedule],
                   tmp_path).returncode == 0
    doc = _same(tmp_path, ["train-sim", "--model", "resnet50", "--schedule", schedule,
                           "--dtype", "fp16", "--bucket", "8MiB", "--json"],
                ["train-sim", "--workload", "resnet50", "--schedule", schedule, "--dtype",
                 "float16", "--bucket-size", "8MiB", "--json"])
    assert "2 bytes per gradient value" in json.dumps(doc)
    assert_one_line_error(run_cli(["train-sim", "--workload", "resnet50", "--nodes", "8",
                                   "--dtype", "fp64"], tmp_path), "--dtype", "fp64")


def test_errors_name_the_spelling_typed(tmp_path):
    result = run_cli(["synth", "ring:4", "-c", "allgather", "--method", "nope"], tmp_path)
    assert_one_line_error(result, "'--method' (now", "--algorithm", code=2)
    result = run_cli(["synth", "ring:4", "-c", "allgather", "--algorithm", "nope"], tmp_path)
    assert_one_line_error(result, "--algorithm", code=2)
    assert "now" not in result.stderr


def test_a_note_on_a_terminal_only(tmp_path, monkeypatch):
    args = ["alltoall", "ring:8", "--method", "link", "--json"]
    quiet = run_cli(args, tmp_path)
    assert quiet.returncode == 0 and "note:" not in quiet.stderr, quiet
    monkeypatch.setattr(common, "notes_wanted", lambda: True)
    noted = run_cli(args, tmp_path)
    assert noted.returncode == 0, noted
    assert "note: --method is now --algorithm" in noted.stderr, noted
    assert noted.json()["method"] == "link"
    new = run_cli(["alltoall", "ring:8", "-a", "link", "--json"], tmp_path)
    assert "note:" not in new.stderr, new


# --- durations -------------------------------------------------------------------------------

@pytest.mark.parametrize("text, seconds", [("10us", 1e-5), ("500ms", 0.5), ("30s", 30.0),
                                           ("5min", 300.0), ("2h", 7200.0), ("1.5 min", 90.0),
                                           ("45", 45.0), (12, 12.0)])
def test_durations_take_units(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["5 minutes", "min", "10x", "-1s", "h"])
def test_bad_durations(text):
    with pytest.raises(TopocollError):
        parse_duration(text)


def test_zero_duration_where_refused(tmp_path):
    result = run_cli(["alltoall", "ring:8", "--time-limit", "0s"], tmp_path)
    assert_one_line_error(result, "--time-limit", code=2)
    result = run_cli(["alltoall", "ring:8", "--time-limit", "2 weeks"], tmp_path)
    assert_one_line_error(result, "--time-limit", "duration", code=2)


# --- help layout -----------------------------------------------------------------------------

def test_run_help_keeps_its_example_lines(tmp_path):
    shown = run_cli(["run", "--help"], tmp_path).stdout
    lines = [line.strip() for line in shown.splitlines()]
    assert "topocoll run s.json --nproc 4 --check      # starts 4 local processes itself" in lines
    assert "torchrun --standalone --nproc-per-node 4 -m topocoll.cli.main run s.json" in lines
    assert not any(line.startswith("\\b") for line in lines)


# --- the quick subset (make test-quick) ------------------------------------------------------

def test_the_slow_list_names_tests_that_exist(monkeypatch):
    from tests import conftest

    assert {path for path, _ in conftest._slow_entries(strict=True)} >= {"cli/test_run_cli.py"}
    monkeypatch.setattr(conftest, "SLOW", (*conftest.SLOW, "cli/test_run_cli.py::test_gone"))
    with pytest.raises(pytest.UsageError, match="test_gone"):
        conftest._slow_entries(strict=True)
    assert conftest._slow_entries()[-1] == ("cli/test_run_cli.py", "test_gone")
    monkeypatch.setattr(conftest, "SLOW", ("cli/test_nowhere.py",))
    with pytest.raises(pytest.UsageError, match="test_nowhere"):
        conftest._slow_entries(strict=True)


def test_make_test_quick_skips_the_slow_marker():
    makefile = (ROOT / "Makefile").read_text()
    quick = re.search(r"^test-quick:.*\n((?:\t.*\n)+)", makefile, re.M)
    assert quick and '-m "not slow"' in quick.group(1)
    full = re.search(r"^test:.*\n((?:\t.*\n)+)", makefile, re.M)
    assert full and "-m" not in full.group(1).replace("-m pytest", "")
    import tomllib
    markers = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"][
        "ini_options"]["markers"]
    assert any(m.startswith("slow:") for m in markers)
