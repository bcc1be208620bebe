"""Peak memory against the memory guard's own estimate: every memory case of the hostile
matrix (a memory limit set, a decompression bomb, a count that means memory) and the large
fixtures (schedules of 1024, 256 and 64 nodes, the MSCCL XML of the last, a GraphML topology
of 2000 nodes) run in a forked
copy of this process whose resident high-water mark is reset at the start; the peak must stay
within 1.25 times the largest peak the command estimated (its resident memory when it asked
plus the bytes asked; at least what it held when it started), and under the memory limit where
a case sets one. A bomb of one 3.2 GB string in 3 MB of gzip is refused within the first
megabytes it inflates."""

import json
import os
import sys
import zlib
from pathlib import Path

import pytest

from tests.cli.test_hostile import all_cases, forked, inputs  # noqa: F401 (a fixture)
from topocoll.units import parse_size

SLACK = 1.25
INTERPRETER = 8 << 20
WATCHDOG = 120        # seconds: a safety net against a hang, not a timing check


def _memory_cases():
    def bomb(case):
        return "bomb" in case.id.lower() or "@GZBOMB" in case.args

    def wanted(case):
        env = dict(case.env)
        return ("TOPOCOLL_MEMORY_LIMIT" in env and env["TOPOCOLL_MEMORY_LIMIT"][:1].isdigit()
                and parse_size_or_none(env["TOPOCOLL_MEMORY_LIMIT"])) or \
            "memory" in case.needles or bomb(case)
    # the bombs are refused within their first megabytes now: no longer slow
    return [case for case in all_cases() if wanted(case) and (bomb(case) or not case.slow)
            and case.command not in ("run", "gossip run", "emulate")]


def parse_size_or_none(text):
    try:
        return parse_size(text) >= 1 << 20
    except ValueError:
        return False


def _string_bomb(path, gib=3.2):
    """A schedule whose JSON is one string of ``gib`` GiB, in about 3 MB of gzip: an opening,
    one compressed member of 16 MiB of ``a`` repeated (gzip members concatenate), a close."""
    block = 16 << 20
    member = zlib.compress(b"a" * block, 9, wbits=31)
    with open(path, "wb") as fh:
        fh.write(zlib.compress(b'{"format": "topocoll.schedule", "version": 1, "x": "',
                               wbits=31))
        for _ in range(int(gib * (1 << 30)) // block):
            fh.write(member)
        fh.write(zlib.compress(b'"}', wbits=31))


def _graphml(path, spec):
    import networkx as nx

    from topocoll.topology.specs import topology

    topo = topology(spec)
    graph = nx.DiGraph()
    graph.add_nodes_from(range(topo.num_nodes))
    graph.add_edges_from(zip(topo.src.tolist(), topo.dst.tolist()))
    nx.write_graphml(graph, path)


@pytest.fixture(scope="module")
def files(request, tmp_path_factory):
    """The hostile matrix's inputs and the large fixtures."""
    from topocoll.cli.main import main

    hostile = request.getfixturevalue("inputs")
    where = tmp_path_factory.mktemp("peak-inputs")
    files = dict(hostile)
    files["TORUS256"] = where / "torus256.json"
    files["TORUS64"] = where / "torus64.json"
    files["TORUS64XML"] = where / "torus64.xml"
    files["GRAPHML"] = where / "genkautz.graphml"
    files["CUBE256"] = where / "cube256.json"         # BFB broadcast: 840 chunks per shard
    files["CUBE256XML"] = where / "cube256.xml"
    files["STRINGBOMB"] = where / "string-bomb.json.gz"
    _string_bomb(files["STRINGBOMB"])
    _graphml(files["GRAPHML"], "genkautz:2000,4")
    for args in (["schedule", "torus:16x16", "-c", "allreduce", "-o", files["TORUS256"]],
                 ["schedule", "torus:8x8", "-c", "allreduce", "-o", files["TORUS64"]],
                 ["export", files["TORUS64"], "-o", files["TORUS64XML"]],
                 ["schedule", "hypercube:8", "-c", "broadcast", "-o", files["CUBE256"]],
                 ["export", files["CUBE256"], "-o", files["CUBE256XML"]]):
        try:
            main([str(a) for a in args])
        except SystemExit as exc:
            assert not exc.code, args
    return files


FIXTURE_RUNS = [
    ["verify", "@BIG1024"], ["verify", "@TORUS256"], ["simulate", "@TORUS256"],
    ["convert", "@TORUS256", "--form", "symmetric", "-o", "s.json"],
    ["export", "@TORUS64", "-o", "x.xml"], ["import", "@TORUS64XML", "-o", "t.json"],
    ["lint", "@TORUS64XML"], ["info", "@GRAPHML"], ["verify", "@STRINGBOMB"],
    ["export", "@CUBE256", "-o", "c.xml"], ["lint", "@CUBE256XML"],
    ["schedule", "torus:16x16", "-c", "allreduce", "-a", "swing", "-O", "variant=latency",
     "-o", "sw.json"],
]


def _peak_child(args, cwd, env, report_fd):
    """In the forked child: reset the high-water mark, run ``topocoll ARGS``, report."""
    from topocoll import limits
    from topocoll.cli.main import main

    code = "traceback"
    try:
        os.setpgid(0, 0)
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        sys.stdout = open(1, "w", closefd=False)
        sys.stderr = open(2, "w", closefd=False)
        os.chdir(cwd)
        os.environ.update(env)
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")         # the high-water mark starts again from what is resident
        start = limits.resident_bytes()
        try:
            main(args)
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        except BaseException as exc:   # noqa: B036 - reported, not raised, in the child
            code = f"{type(exc).__name__}: {exc}"[:300]
        hwm = _status_bytes("VmHWM")
        os.write(report_fd, json.dumps({"code": code, "start": start, "peak": hwm,
                                        "estimate": limits.largest_estimate()}).encode())
    finally:
        os._exit(0)


def _status_bytes(field):
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise AssertionError(f"no {field} in /proc/self/status")


def run_measured(args, cwd, env):
    """``topocoll ARGS`` in a forked copy of this process: its report (code, start, peak,
    estimate: bytes)."""
    chunks, hung, _ = forked(lambda fd: _peak_child(args, str(cwd), env, fd), WATCHDOG)
    assert chunks and not hung, f"topocoll {' '.join(args)}: no report (hung or died)"
    return json.loads(b"".join(chunks))


def _check(report, args, env):
    where = f"topocoll {' '.join(args)} {env or ''}"
    assert isinstance(report["code"], int), f"{where}: {report['code']}"
    estimate = max(report["estimate"], report["start"])
    assert report["peak"] <= SLACK * estimate, (
        f"{where}: peak {report['peak'] >> 20} MiB, over {SLACK} x its estimate "
        f"{estimate >> 20} MiB (started at {report['start'] >> 20} MiB)")
    limit = dict(env).get("TOPOCOLL_MEMORY_LIMIT")
    if limit and parse_size_or_none(limit):
        # the limit bounds a job's allocations; the interpreter's own few megabytes (an error
        # formatted, a module's tables) come on top
        grown = report["peak"] - report["start"]
        assert grown <= parse_size(limit) + INTERPRETER, (
            f"{where}: grew {grown >> 20} MiB, over its memory limit {limit}")


def _expand(args, files):
    return [str(files[a[1:]]) if a.startswith("@") and a[1:] in files else a for a in args]


MEMORY_CASES = _memory_cases()


def test_the_matrix_has_memory_cases():
    assert len(MEMORY_CASES) >= 20
    assert any("bomb" in case.id for case in MEMORY_CASES)


@pytest.mark.parametrize("case", MEMORY_CASES, ids=lambda c: c.id)
def test_a_memory_case_peaks_within_its_estimate(case, files, tmp_path):
    env = {"TOPOCOLL_CACHE_DIR": str(tmp_path / "cache"), **dict(case.env)}
    args = _expand(case.args, files)
    _check(run_measured(args, tmp_path, env), args, case.env)


@pytest.mark.parametrize("args", FIXTURE_RUNS, ids=lambda a: " ".join(a))
def test_a_large_fixture_peaks_within_its_estimate(args, files, tmp_path):
    env = {"TOPOCOLL_CACHE_DIR": str(tmp_path / "cache")}
    expanded = _expand(args, files)
    report = run_measured(expanded, tmp_path, env)
    _check(report, expanded, {})
    if "STRINGBOMB" not in " ".join(args):
        assert report["code"] == 0, (args, report)


def test_the_string_bomb_is_refused_early_and_small(files, tmp_path):
    assert Path(files["STRINGBOMB"]).stat().st_size < 8 << 20
    report = run_measured(["verify", str(files["STRINGBOMB"])], tmp_path, {})
    assert report["code"] == 2
    # refused within the first megabytes it inflates: nothing near the 3.2 GB it holds
    assert report["peak"] - report["start"] < 64 << 20


def _own_ask(args, files):
    """The bytes the job of ``args`` asks for itself (chunk cells, transfers), from the
    same public counts the commands use."""
    import numpy as np

    from topocoll.interop.chunk_memory import CELL_BYTES, chunk_cells, program_cells
    from topocoll.interop.layout import Layout
    from topocoll.interop.mscclxml import parse_msccl
    from topocoll.schedule.io import as_schedule
    from topocoll.schedule.model import BUILD_BYTES_PER_TRANSFER
    from topocoll.synth.swing import swing_transfers
    from topocoll.topology import topology

    if args[0] == "lint":
        return program_cells(parse_msccl(Path(args[1]).read_text())) * CELL_BYTES["lint"]
    if args[0] == "export":
        s, k = as_schedule(args[1]), 840          # the chunks the export reports for it
        t = s.transfers
        cells = chunk_cells(s.num_nodes, Layout(s.collective, s.num_nodes, k, s.root).num_chunks,
                            np.rint((t["hi"] - t["lo"]) * k))
        return cells * CELL_BYTES["export"]
    return swing_transfers(topology(args[1]), "allreduce", variant="latency") \
        * BUILD_BYTES_PER_TRANSFER


OWN_ASKS = [["export", "@CUBE256", "-o", "c.xml"], ["lint", "@CUBE256XML"],
            ["schedule", "torus:16x16", "-c", "allreduce", "-a", "swing", "-O",
             "variant=latency", "--no-verify"]]


@pytest.mark.parametrize("args", OWN_ASKS, ids=lambda a: " ".join(a[:2]))
def test_a_job_grows_within_its_own_ask(args, files, tmp_path):
    """The peaks above sit within the whole process's estimate; here each job's growth is
    held to what the job itself asks (export and lint by chunk cells, Swing's latency
    variant by its transfers), so that an ask that is too small fails."""
    expanded = _expand(args, files)
    report = run_measured(expanded, tmp_path, {"TOPOCOLL_CACHE_DIR": str(tmp_path / "cache")})
    assert report["code"] == 0, report
    grown, ask = report["peak"] - report["start"], _own_ask(expanded, files)
    assert grown <= SLACK * ask + INTERPRETER, (
        f"topocoll {' '.join(args)}: grew {grown >> 20} MiB, over {SLACK} x its own ask "
        f"{ask >> 20} MiB")
