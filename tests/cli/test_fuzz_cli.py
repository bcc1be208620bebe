"""Fuzzing the whole command line: random bad (and good) specs, units, files and flags for every
sub-command never end in a traceback or a hang, and ``--json`` never prints anything but one
JSON document.

The commands run in this process through :func:`topocoll.cli.main.main` (a subprocess per
example would cost a second of imports each); an exception escaping ``main`` is exactly what
would have been printed as a traceback. A watchdog alarm turns a hang into a failure; it is far
above what any example needs, so the machine's speed does not matter. Every invocation is built
from the command's own click parameters, so a new option is fuzzed without touching this file.

``TOPOCOLL_FUZZ_EXAMPLES=2000 pytest tests/cli/test_fuzz_cli.py`` explores further (with a
random seed instead of the fixed one).
"""

import contextlib
import io
import json
import os
import resource
import shutil
import signal

import click
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tests.cli.conftest import leaf_commands
from topocoll.cli.main import main

from tests.helpers import DATA, schedule_fixtures

EXAMPLES = int(os.environ.get("TOPOCOLL_FUZZ_EXAMPLES", "0"))
WATCHDOG = 300   # seconds; a hang, not slowness: every example needs well under one
HEADROOM = 3 << 30   # bytes of address space an example may add (see _address_space_limit)

#: (good, bad) values of each kind: an example draws a good one four times in five, so that
#: most command lines get past option parsing into the real work
SPECS = (["ring:4", "torus:3x3", "hypercube:3", "mesh:2x2", "uniring:5", "complete:4",
          "genkautz:5,9", "genkautz:12,2", "circulant:8:1,3", "randomregular:8,3:1", "kautz:2,2",
          "dbt:6", "debruijn:2,3", "torus:2x2:double", "TOPOFILE", "SWITCHED"],
         ["", " ", "ring", "ring:", "ring:0", "ring:1", "ring:-3", "ring:1e3", "ring:4:5",
          "ring:3,", "torus:0x3", "torus:3x", "torus:3x3x", "hypercube:100", "hypercube:-1",
          "ring:10000000000", "nosuch:3", "circulant:8:9", "genkautz:1,1", "kautz:0,2",
          "randomregular:7,3", "randomregular:8,3:x", "ring:\uff14", "ring:4\x00", "ring:nan",
          "ONENODE", "SCHEDULE", "GARBAGE", "MISSING", "EMPTY", "."])
FILES = (["SCHEDULE", "SCHEDULE", "INVALID", "ALLREDUCE"],
         ["CORRUPT", "TRUNCATED", "TOPOFILE", "ONENODE", "GARBAGE", "EMPTY", "MISSING",
          "WRONGTYPES", "BIGNODES", ".", ""])
SIZES = (["1MiB", "4KiB", "1", "64", "1GiB"],
         ["0", "-1", "1e-300", "1e300", "inf", "nan", "abc", "", "1 MiB", "1MiBps", "1e", "0x10",
          "\u00b5s", "1GB/s", "10us"])
TIMES = (["10us", "1us", "0", "1.5ms", "1e-6"],
         ["-1", "inf", "nan", "1MiB", "1GB/s", "abc", "", "1e400"])
BANDWIDTHS = (["1GB/s", "100Gbps", "25GB/s", "1e9"],
              ["0", "-1", "inf", "nan", "10us", "1MiB", "", "Gbps"])
INTS = (["0", "1", "2", "3", "4"],
        ["-1", "7", "64", "x", "", "1.5", "1e3", "nan", "99999999999999999999"])
OUTPUTS = (["-", "out.json", "out.json.gz", "out", "out.graphml"],
           ["", "out.txt", "nodir/out.json", ".", "SCHEDULE/x.json"])   # never a system file
OPTIONS = (["shift=3", "chunks=2", "multiport=true"],
           ["x=y", "=", "noequals", "shift=-1", "p=0.5", "chunks=0"])
COLLECTIVES = (["allgather", "reduce_scatter", "allreduce", "broadcast", "reduce", "scatter",
                "gather", "alltoall"], ["nosuch", "", "AllGather"])
ANY = (SPECS[0][:6] + SIZES[0] + INTS[0], ["-", "--json", "-o", "--", "-x"])

#: the values each parameter draws from, by name; anything else draws from ANY
POOLS = {"topo": SPECS, "topologies": SPECS, "entries": (SPECS[0] + FILES[0], SPECS[1] + FILES[1]),
         "file": FILES, "files": FILES, "sizes_file": FILES, "network": SPECS, "specs": SPECS,
         "output": OUTPUTS, "outdir": OUTPUTS, "plot": (["p.png"], ["p.txt", ""]),
         "collective": COLLECTIVES, "extra": OPTIONS, "root": INTS, "nodes": INTS,
         "degree": INTS, "chunks": INTS, "seed": INTS, "unwind_degree": INTS, "node_limit": INTS,
         "max_solves": INTS, "window": INTS, "max_hops": INTS, "max_errors": INTS,
         "warmup": INTS, "ranks_per_node": INTS,
         "restarts": (["1", "2"], ["0", "-1", "x"]), "workers": (["1"], ["0", "-1", "x"]),
         "fail_links": (["0-1", "0>1"], ["0-1,0-1", "9-9", "x", "", "0-"]),
         "fail_nodes": (["0", "0,1"], ["3,3", "99", "x", ""]),
         "time_limit": (["1", "5"], ["0", "-1", "nan", "inf", "x"]),
         "budget": (["0", "0.2"], ["-1", "nan", "x"]),
         "max_swaps": (["0", "1", "2"], ["-1", "x"]),
         "iterations": (["1", "5"], ["0", "-1", "x"]),
         "bucket_size": SIZES, "size": SIZES, "sizes": SIZES, "time_step": TIMES,
         "alpha": TIMES, "link_bandwidth": BANDWIDTHS, "node_bandwidth": BANDWIDTHS}
GOSSIP = (["complete", "ring", "one-peer-exp", "exp", "exponential-graph", "ring-graph",
           "mesh-graph", "star-graph", "one-peer-exponential-graph",
           "alternating-exp-ring", "metropolis-hastings"], ["nosuch", "", "ring:4", "exp:"])
XML = (["in.xml", "old.xml"], ["trunc.xml", "SCHEDULE", "GARBAGE", "EMPTY", "MISSING", "."])
#: per command, pools that differ from the shared ones
COMMAND_POOLS = {("lint",): {"file": XML}, ("import",): {"file": XML},
                 ("verify",): {"file": (FILES[0] + XML[0], FILES[1] + XML[1])},
                 ("export",): {"output": (["out.xml", "-"], ["", "out.txt", ".", "nodir/o.xml"]),
                               "min_bytes": SIZES, "max_bytes": SIZES, "channels": INTS},
                 ("gossip", "cost"): {"topologies": GOSSIP},
                 ("gossip", "info"): {"topologies": GOSSIP, "nodes": (["4", "8", "6"], ["0", "1",
                                                                     "-3", "x"])}}


COMMANDS = dict(leaf_commands())


def _values(path, param):
    if isinstance(param.type, click.Choice):
        return list(param.type.choices), ["nosuch"]
    return COMMAND_POOLS.get(path, {}).get(param.name) or POOLS.get(param.name, ANY)


@st.composite
def _value(draw, path, param):
    good, bad = _values(path, param)
    return draw(st.sampled_from(bad if draw(st.integers(0, 4)) == 0 else good))


@st.composite
def invocations(draw):
    """A command line: a sub-command, its arguments, a random subset of its options."""
    path = draw(st.sampled_from(sorted(COMMANDS)))
    command = COMMANDS[path]
    args = list(path)
    for param in command.params:
        if isinstance(param, click.Argument):
            count = 1 if param.nargs == 1 else draw(st.integers(0 if not param.required else 1, 3))
            if not draw(st.integers(0, 15)) and not param.required:
                count = 0
            args += [draw(_value(path, param)) for _ in range(count)]
        elif draw(st.integers(0, 3)) == 0 or (param.required and draw(st.integers(0, 7))):
            if param.is_flag:
                args.append(param.opts[-1])
            else:
                for _ in range(draw(st.integers(1, 2)) if param.multiple else 1):
                    args += [param.opts[-1], draw(_value(path, param))]
    if path == ("rewire",) and "--budget" not in args and "--max-swaps" not in args:
        args += ["--max-swaps", "2"]      # the default budget is 10 s of honest work
    if path == ("find",):
        args += ["--no-cache"]            # the results cache lives in the user's home
    if path == ("run",):                  # starting N processes per example is for its own tests
        args += ["--nproc", "1"]
    if draw(st.integers(0, 5)) == 0:      # a stray token anywhere
        stray = ANY[1] + [f for f in FILES[1] if not f.startswith("/dev/")]   # could land after -o
        args.insert(draw(st.integers(1, len(args))), draw(st.sampled_from(stray)))
    return args


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """A folder with a file for every placeholder of the pools."""
    where = tmp_path_factory.mktemp("fuzz")
    valid = [p for p in schedule_fixtures() if p.name.startswith("valid-allgather")][0]
    shutil.copyfile([p for p in schedule_fixtures() if p.name.startswith("valid-allreduce")][0],
                    where / "ALLREDUCE")
    invalid = [p for p in schedule_fixtures() if p.name.startswith("invalid")][0]
    shutil.copyfile(valid, where / "SCHEDULE")
    shutil.copyfile(invalid, where / "INVALID")
    text = valid.read_text()
    (where / "TRUNCATED").write_text(text[: len(text) // 2])
    doc = json.loads(text)
    doc["topology"]["nodes"] = "six"
    (where / "WRONGTYPES").write_text(json.dumps(doc))
    doc = json.loads(text)
    doc["transfers"] = [[1, 0, 1, 0, 0.0, 1.0, "copy"]] * 3 + [{"step": None}]
    (where / "CORRUPT").write_text(json.dumps(doc))
    (where / "TOPOFILE").write_text(json.dumps(
        {"format": "topocoll.topology", "version": 1, "name": "tri", "nodes": 3,
         "links": [{"src": a, "dst": b} for a in range(3) for b in range(3) if a != b]}))
    doc = json.loads(text)
    doc["topology"]["nodes"] = 100_000
    (where / "BIGNODES").write_text(json.dumps(doc))
    (where / "SWITCHED").write_text(json.dumps(
        {"format": "topocoll.topology", "version": 1, "name": "star", "nodes": 4, "switches": [3],
         "links": [{"src": a, "dst": b} for a in range(3) for b in (3,)]
         + [{"src": 3, "dst": b} for b in range(3)]}))
    (where / "ONENODE").write_text(json.dumps(
        {"format": "topocoll.topology", "version": 1, "name": "one", "nodes": 1, "links": []}))
    (where / "GARBAGE").write_bytes(bytes(range(256)) * 4)
    shutil.copyfile(DATA / "msccl" / "ring3-reducescatter.xml", where / "in.xml")
    shutil.copyfile(DATA / "msccl" / "ring3-allgather-old-dialect.xml", where / "old.xml")
    xml = (DATA / "msccl" / "ring3-reducescatter.xml").read_text()
    (where / "trunc.xml").write_text(xml[: len(xml) // 2])
    (where / "EMPTY").write_text("")
    return where


def _alarm(signum, frame):
    raise TimeoutError(f"no answer after {WATCHDOG} s")


@contextlib.contextmanager
def _address_space_limit(extra=HEADROOM):
    """Cap this process's address space at what it uses now plus ``extra`` bytes, so that a
    run that would exhaust the machine fails with MemoryError (which the CLI must turn into a
    one-line error) instead of taking the test process down."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/statm") as fh:
        used = int(fh.read().split()[0]) * resource.getpagesize()
    cap = used + extra if hard == resource.RLIM_INFINITY else min(hard, used + extra)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def run_in_process(args, cwd):
    """(exit code, stdout, stderr) of ``topocoll ARGS`` run in this process."""
    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="utf-8", write_through=True)   # has .buffer, as stdout
    err = io.StringIO()
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(WATCHDOG)
    old = os.getcwd()
    try:
        os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
                _address_space_limit():
            try:
                main(args)
                code = 0
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else 1
    finally:
        os.chdir(old)
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    out.flush()
    return code, raw.getvalue().decode("utf-8", "replace"), err.getvalue()


def check_run(args, cwd):
    code, stdout, stderr = run_in_process(args, cwd)
    shown = f"topocoll {' '.join(map(repr, args))} -> {code}\n{stdout[:2000]}\n{stderr[-2000:]}"
    assert "Traceback" not in stdout + stderr, shown
    assert code in (0, 1, 2), shown
    if code == 2:
        assert stderr.strip().splitlines()[-1].startswith("error: "), shown
    to_stdout = any(a == "-" and b in ("-o", "--output") for a, b in zip(args[1:], args))
    if args[0] == "export" and to_stdout and code == 0:
        assert stdout.startswith("<algo ") and stdout.rstrip().endswith("</algo>"), shown
    elif "--json" in args or to_stdout:
        if code == 2:
            assert stdout == "", shown
        elif stdout.strip():
            json.loads(stdout)   # exactly one document: a second one is "Extra data"
        else:   # nothing on stdout is only for errors, and verify always reports
            assert code != 0 or "--help" in args, shown
            assert args[0] != "verify" or "--help" in args, shown
    return code


def test_the_fuzzer_reaches_every_command_and_builds_real_command_lines():
    paths = {tuple(args[: len(p)]) for p in COMMANDS
             for args in [list(p)]}
    assert paths == set(COMMANDS) and len(COMMANDS) >= 15
    assert all(command.params for command in COMMANDS.values())


def test_a_planted_traceback_is_caught(workdir, monkeypatch):
    """The check can fail: an error that escapes main is reported, not swallowed."""
    import topocoll.cli.topology as module

    def broken(*args, **kwargs):
        raise IndexError("planted")
    monkeypatch.setattr(module, "load_topology_arg", broken)
    with pytest.raises(IndexError, match="planted"):
        check_run(["info", "ring:4"], workdir)


def test_known_good_lines_pass_the_checks(workdir):
    assert check_run(["info", "ring:4", "--json"], workdir) == 0
    assert check_run(["verify", "SCHEDULE", "--json"], workdir) == 0
    assert check_run(["verify", "INVALID", "--json"], workdir) == 1
    assert check_run(["info", "nosuch:3"], workdir) == 2


@settings(max_examples=EXAMPLES or 300, derandomize=not EXAMPLES, deadline=None,
          suppress_health_check=list(HealthCheck), database=None)
@given(invocations())
def test_random_command_lines_end_cleanly(workdir, args):
    check_run(args, workdir)
