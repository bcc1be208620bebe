"""Every ``--json`` document: one object on stdout, the four status keys first, and one shape
whatever the input (one size or several, one file or several, one tenant or several).

The commands are found by walking the ``topocoll`` group, so a new command with ``--json`` and
no entry in :data:`CASES` fails :func:`test_every_json_command_has_a_case`; one without
``--json`` fails :func:`test_every_command_has_json`. Options are looked up by their parameter
name (:func:`flag`), so that renaming a flag does not break this test.
"""

import json

import click
import pytest
from click.testing import CliRunner

from topocoll import defaults
from topocoll.cli.main import cli
from topocoll.results import STATUS_KEYS, Status
from topocoll.schedule.io import load_schedule, save_schedule
from topocoll.synth import ALGORITHMS, generate
from topocoll.topology import topology
from topocoll.schedule.verify import verify

from tests.cli.conftest import leaf_commands, run_subprocess

# Commands that print no JSON because they compute nothing: none so far.
NO_JSON = set()


commands = leaf_commands


def command(path):
    return dict(commands())[tuple(path.split())]


def flag(path, name):
    """The command-line flag of parameter ``name`` of command ``path`` (its longest spelling)."""
    for param in command(path).params:
        if param.name == name and isinstance(param, click.Option):
            return max(param.opts, key=len)
    raise AssertionError(f"{path} has no parameter {name!r}")


def has_json(cmd):
    return any("--json" in p.opts for p in cmd.params)


# command -> (argument lists: a first case and further ones that must give the same shape,
#             the keys every one of its documents has besides the four status keys,
#             whether all cases must have exactly the same keys)
def _cases():
    f = flag
    return {
        "topologies": ([[]], {"families": list}, True),
        "info": ([["ring:4"], ["uniring:5"]], {"name": str, "nodes": int}, True),
        "schedule": ([["ring:4", f("schedule", "collective"), "allgather"],
                      ["ring:4", f("schedule", "collective"), "alltoall"],
                      ["line(kautz:2,2)", f("schedule", "collective"), "allreduce",
                       f("schedule", "algorithm"), "expand"]],
                     {"collective": str, "algorithm": str, "steps": int, "transfers": int,
                      "verified": bool, "meta": dict}, False),
        "verify": ([["s.json"], ["bad.json"]],
                   {"valid": bool, "errors": list, "counts": dict}, True),
        "evaluate": ([["s.json", f("evaluate", "sizes"), "1KiB"],
                      ["s.json", f("evaluate", "sizes"), "1KiB", f("evaluate", "sizes"),
                       "1MiB"]],
                     {"file": str, "steps": int, "T_L": float, "sizes": list}, True),
        "compare": ([["ring:4", f("compare", "sizes"), "1KiB"],
                     ["ring:4", "s.json", f("compare", "sizes"), "1KiB", f("compare", "sizes"),
                      "1MiB"],
                     ["ring:4", f("compare", "sizes"), "1KiB", f("compare", "gamma"), "100GB/s"]],
                    {"sizes": list, "rows": list, "gamma": float}, True),
        "survey": ([[f("survey", "nodes"), "4", f("survey", "specs"), "ring:4",
                     f("survey", "sizes"), "1KiB"],
                    [f("survey", "nodes"), "4", f("survey", "specs"), "ring:4",
                     f("survey", "sizes"), "1KiB", f("survey", "sizes"), "1MiB"],
                    [f("survey", "nodes"), "4", f("survey", "specs"), "ring:4",
                     f("survey", "sizes"), "1KiB", f("survey", "gamma"), "100GB/s"]],
                   {"sizes": list, "rows": list, "gamma": float}, True),
        "find": ([[f("find", "nodes"), "4", f("find", "degree"), "2", f("find", "no_cache"),
                   f("find", "sizes"), "1MiB"],
                  [f("find", "nodes"), "4", f("find", "degree"), "2", f("find", "no_cache"),
                   f("find", "sizes"), "1MiB", f("find", "sizes"), "4MiB"],
                  [f("find", "nodes"), "6", f("find", "degree"), "3", f("find", "no_cache"),
                   f("find", "bidirectional")]],
                 {"frontier": list, "workload": dict, "bidirectional": bool}, True),
        "fabric": ([[f("fabric", "jobs"), "4,4", f("fabric", "degree"), "2",
                     f("fabric", "no_cache")],
                    [f("fabric", "jobs"), "6,4,2", f("fabric", "degree"), "3",
                     f("fabric", "fabric_nodes"), "16", f("fabric", "no_cache"),
                     f("fabric", "sizes"), "1MiB", f("fabric", "sizes"), "4MiB"]],
                   {"fabric_nodes": int, "degree": int, "jobs": list, "checks": dict,
                    "topology": dict, "files": dict}, True),
        "synth": ([["ring:4", f("synth", "collectives"), "allgather"],
                   ["ring:4", f("synth", "collectives"), "allgather", f("synth", "collectives"),
                    "broadcast:1"],
                   ["ring:4", f("synth", "collectives"), "allgather", f("synth", "collectives"),
                    "broadcast:1", f("synth", "method"), "ilp", f("synth", "time_limit"), "10s"]],
                  {"topology": str, "nodes": int, "time_step": float, "time": float,
                   "tenants": list, "files": list}, False),
        "simulate": ([["s.json"], ["s.json", "s.json"]],
                     {"model": str, "size": float, "time": float, "schedules": list}, True),
        "alltoall": ([["ring:4"], ["uniring:5"]], {"lambda": float, "time": float}, True),
        "alltoall-steps": ([["ring:4"], ["uniring:5", f("alltoall-steps", "steps"), "5"]],
                           {"lambda": float, "time": float, "step_times": list,
                            "flows": list}, True),
        "alltoall-design": ([[f("alltoall-design", "nodes"), "4", f("alltoall-design", "degree"),
                              "2"],
                             [f("alltoall-design", "nodes"), "5", f("alltoall-design", "degree"),
                              "2", f("alltoall-design", "method"), "iterative"]],
                            {"lambda": float, "edges": list, "nodes": int}, True),
        "sweep": ([[f("sweep", "nodes"), "16..18", f("sweep", "degree"), "2,3",
                    f("sweep", "no_evaluate"), f("sweep", "workers"), "1"]],
                  {"cells": list, "computed": int, "reused": int, "failed": int,
                   "settings": dict, "files": list}, True),
        "rewire": ([["ring:6", f("rewire", "max_swaps"), "1"]],
                   {"initial": float, "final": float}, True),
        "gossip list": ([[]], {"topologies": list}, True),
        "gossip info": ([["ring", f("gossip info", "nodes"), "4"],
                         ["ring", "exp", f("gossip info", "nodes"), "4"],
                         ["ring", f("gossip info", "nodes"), "8",
                          f("gossip info", "hierarchical_local_size"), "2"]],
                        {"nodes": int, "topologies": list, "hierarchical_local_size": None},
                        True),
        "gossip cost": ([["ring", f("gossip cost", "network"), "ring:4"],
                         ["ring", "exp", f("gossip cost", "network"), "ring:4"]],
                        {"network": str, "topologies": list}, True),
        "convert": ([["s.json", f("convert", "output"), "c.json", f("convert", "form"),
                      "symmetric"],
                     ["s.json", f("convert", "output"), "d.json", f("convert", "form"),
                      "explicit"]], {"form": str, "transfers": int, "output": str}, True),
        "export": ([["s.json", f("export", "output"), "e.xml"]], {"output": str}, True),
        "import": ([["s.xml", f("import", "output"), "t.json"]], {"output": str}, True),
        "lint": ([["s.xml"]], {"valid": bool}, True),
        "train-sim": ([[f("train-sim", "model"), "resnet50", f("train-sim", "nodes"), "4"]],
                      {"iteration_time": float, "baselines": dict}, True),
        # without root or a user namespace emulate refuses; --clean answers anywhere
        "emulate": ([[f("emulate", "clean")]], {"removed": list}, True),
        "fit-model": ([["runs.json"], ["runs.json", f("fit-model", "fit_gamma")]],
                      {"alpha": float, "inverse_beta": float, "runs": int,
                       "mean_relative_error": float, "fitted": list}, True),
        # run and gossip run start torch processes: they run as their own processes
        "gossip run": ([["exponential-graph", f("gossip run", "nodes"), "4",
                         f("gossip run", "size"), "64KiB", f("gossip run", "iterations"), "1"],
                        ["one-peer-exp", f("gossip run", "nodes"), "4",
                         f("gossip run", "hierarchical_local_size"), "2",
                         f("gossip run", "size"), "64KiB", f("gossip run", "iterations"), "1"]],
                       {"time": float, "baseline_time": float, "ratio": float,
                        "hierarchical_local_size": None}, True),
        "run": ([["s.json", f("run", "nproc"), "4", f("run", "iters"), "1", f("run", "no_baseline"),
                  f("run", "size"), "4KiB"]], {"time": float, "busbw": float}, True),
    }


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """s.json (ring:4 allgather), bad.json (an invalid schedule), s.xml (s.json as MSCCL XML)."""
    where = tmp_path_factory.mktemp("shapes")
    s = generate(topology("ring:4"), "allgather", "bfb")
    save_schedule(s, where / "s.json")
    doc = json.loads((where / "s.json").read_text())
    doc["transfers"] = doc["transfers"][:-1]         # one transfer short: incomplete
    (where / "bad.json").write_text(json.dumps(doc))
    (where / "runs.json").write_text(json.dumps(   # rows of the cost model, for fit-model
        [[s, b, b / (1 + s % 3), 1e-5 + 1e-6 * s + 1e-9 * b]
         for s in (1, 2, 3) for b in (1e3, 1e6)]))
    res = CliRunner().invoke(cli, ["export", str(where / "s.json"), "-o", str(where / "s.xml")])
    assert res.exit_code == 0, res.output
    return where


def invoke(folder, path, args, monkeypatch):
    """Run ``topocoll PATH ARGS --json`` in ``folder``; (exit code, stdout, stderr)."""
    argv = [*path.split(), *args, "--json"]
    if path in ("run", "gossip run"):
        done = run_subprocess(argv, folder)
        return done.returncode, done.stdout, done.stderr
    monkeypatch.chdir(folder)
    monkeypatch.setenv("TOPOCOLL_CACHE_DIR", str(folder / "cache"))
    res = CliRunner().invoke(cli, argv, catch_exceptions=False)
    return res.exit_code, res.stdout, res.stderr


def test_every_command_has_json():
    missing = [" ".join(p) for p, c in commands() if not has_json(c)
               and " ".join(p) not in NO_JSON]
    assert not missing, f"commands without --json: {missing}"


def test_every_json_command_has_a_case():
    listed = {" ".join(p) for p, c in commands() if has_json(c)}
    assert listed == set(_cases()), (listed ^ set(_cases()))


_JSON_TYPES = {float: (int, float), int: (int,), str: (str,), bool: (bool,), list: (list,),
               dict: (dict,)}


@pytest.mark.parametrize("path", sorted(_cases()))
def test_one_document_status_keys_first_one_shape(path, folder, monkeypatch):
    cases, keys, same_keys = _cases()[path]
    docs = []
    for args in cases:
        code, out, err = invoke(folder, path, args, monkeypatch)
        assert code in (0, 1), (path, args, code, out, err)
        assert out.strip(), (path, args, "nothing on stdout", err)
        doc = json.loads(out)          # exactly one document: a second is "Extra data"
        assert isinstance(doc, dict), (path, args, type(doc))
        assert tuple(doc)[:4] == STATUS_KEYS, (path, args, list(doc)[:6])
        assert isinstance(doc["success"], bool) and isinstance(doc["message"], str)
        assert doc["status_name"] == Status(doc["status"]).name, doc
        assert doc["success"] == (doc["status"] in (0, 1, 2)), doc
        assert (code == 0) == doc["success"], (path, args, code, doc["message"])
        for key, kind in keys.items():
            assert key in doc, (path, args, key, list(doc))
            if kind is not None:
                value = doc[key]
                assert isinstance(value, _JSON_TYPES[kind]), (path, args, key, value)
                assert kind is bool or not isinstance(value, bool), (path, args, key, value)
        docs.append(doc)
    if same_keys:
        for doc in docs[1:]:
            assert list(doc) == list(docs[0]), (path, set(doc) ^ set(docs[0]))


def test_evaluate_lists_one_entry_per_size(folder, monkeypatch):
    size = flag("evaluate", "sizes")
    _, one, _ = invoke(folder, "evaluate", ["s.json", size, "1KiB"], monkeypatch)
    _, two, _ = invoke(folder, "evaluate", ["s.json", size, "1KiB", size, "2KiB"], monkeypatch)
    one, two = json.loads(one), json.loads(two)
    assert [e["size"] for e in one["sizes"]] == [1024]
    assert [e["size"] for e in two["sizes"]] == [1024, 2048]
    assert one["sizes"][0] == two["sizes"][0]
    assert all("link_model_time" in e and "T_B" in e for e in two["sizes"])


def test_verify_status_follows_the_verdict(folder, monkeypatch):
    code, out, _ = invoke(folder, "verify", ["bad.json"], monkeypatch)
    doc = json.loads(out)
    assert code == 1 and doc["valid"] is False and doc["status_name"] == "INVALID"
    assert doc["message"].startswith("invalid")
    code, out, _ = invoke(folder, "verify", ["s.json"], monkeypatch)
    assert code == 0 and json.loads(out)["status_name"] == "SUCCESS"


def test_schedule_json_goes_to_stderr_when_the_schedule_goes_to_stdout(folder, monkeypatch):
    code, out, err = invoke(folder, "schedule", ["ring:4", flag("schedule", "collective"),
                                                 "allgather", flag("schedule", "output"), "-"],
                            monkeypatch)
    assert code == 0
    assert json.loads(out)["format"] == "topocoll.schedule"
    doc = json.loads(err)
    assert tuple(doc)[:4] == STATUS_KEYS and doc["output"] == "-"


# ------------------------------------------------------------------------ lp: one door, one size
def test_lp_is_a_generator_of_the_library():
    assert "lp" in ALGORITHMS and ALGORITHMS["lp"].collectives == ("alltoall",)
    s = generate("torus:3x3", "alltoall", "lp", rounds=3)
    assert s.algorithm == "alltoall-pipelined" and s.meta["rounds"] == 3 and verify(s).valid
    with pytest.raises(Exception, match="makes alltoall"):
        generate("torus:3x3", "allgather", "lp")


@pytest.mark.parametrize("size", [None, "64MiB"])
def test_schedule_alltoall_chooses_and_prices_at_one_size(size, folder, monkeypatch):
    args = ["torus:3x3", flag("schedule", "collective"), "alltoall",
            flag("schedule", "output"), "a.json"]
    if size:
        args += [flag("schedule", "size"), size]
    code, out, _ = invoke(folder, "schedule", args, monkeypatch)
    assert code == 0
    doc = json.loads(out)
    m = defaults.SIZE if size is None else 64 * 2**20
    assert doc["size"] == m                                  # the size it is priced at ...
    assert doc["meta"]["latency_rounds"] is not None         # ... is the one rounds were cut for
    library = generate("torus:3x3", "alltoall", "lp", size=m)
    assert load_schedule(folder / "a.json").num_transfers == library.num_transfers
    assert doc["meta"]["rounds"] == library.meta["rounds"]
    assert doc["lp_time"] == pytest.approx(m * doc["meta"]["lp_time_per_byte"])
    assert doc["time_over_lp_time"] == pytest.approx(doc["time"] / doc["lp_time"])
    assert doc["T_B_over_lp_time"] == pytest.approx(doc["T_B"] / doc["lp_time"])
    assert doc["time"] == pytest.approx(doc["T_L"] + doc["T_B"])


# ------------------------------------------------------------------- shortcuts are documented
@pytest.mark.parametrize("path, words", [
    ("evaluate", ["link-model time", "link model", "topocoll simulate"]),
    ("simulate", ["door", "evaluate"]),
    ("schedule", ["shortcut", "topocoll synth", "topocoll alltoall"]),
    ("synth", ["shortcut", "-a ten"]),
])
def test_help_names_the_door_and_its_shortcuts(path, words):
    res = CliRunner().invoke(cli, [*path.split(), "--help"], terminal_width=200)
    assert res.exit_code == 0
    text = " ".join(res.stdout.split())
    for word in words:
        assert word in text, (path, word)
