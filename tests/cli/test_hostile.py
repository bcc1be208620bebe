"""Hostile inputs against every command: malformed specs and files, absurd, huge, negative, zero
and non-finite numbers, broken XML, bad environment variables, unwritable outputs, decompression
bombs. Each case is one test id and must end the way a script can rely on:

- exit status 2 (1 for a readable schedule, program or list entry that is invalid; a few
  absurd-but-legal values may also succeed, see ``Case.codes``);
- on an error, exactly one line on stderr, ``error: ...``, naming the rule (one of the case's
  ``needles``), and no traceback anywhere;
- no output file left behind by a run that failed (the case runs in an empty folder that must
  stay empty);
- with ``--json`` and success, one JSON document on stdout (and nothing on stdout on exit 2);
- an answer within a bounded count of work: at most ``WORK_LIMIT`` Python function calls
  (counted by a profile hook, no clock involved), no more address space than ``HEADROOM``
  above what the test process uses, and for the ``GUARDED`` commands no process started. The
  watchdog is only a safety net that turns a hang inside C code into a failure; nothing
  asserts a time.

Each case runs :func:`topocoll.cli.main.main` in a forked copy of the test process: its imports
are already done (no second of start-up per case), its descriptors 0, 1 and 2 are /dev/null and
two files as under a shell, and a hang inside C code, a crash or a memory runaway ends that copy
only (killed after ``WATCHDOG`` seconds, a safety net; reported as a failure).

``python benchmarks/hostile_inputs.py --cases-only`` runs the same table and prints the outcome
counts per command (``--quick``: only the cases run without ``-m slow``).
"""

import contextlib
import dataclasses
import gzip
import io
import json
import os
import re
import resource
import signal
import subprocess
import sys
import zlib
from pathlib import Path

import click
import pytest

from tests.cli.conftest import leaf_commands

DATA = Path(__file__).resolve().parent.parent / "data"
VALID = DATA / "valid-allgather-bfb-circulant6.json"
INVALID = DATA / "invalid-causality.json"
XML_GOOD = DATA / "msccl" / "ring3-reducescatter.xml"

WORK_LIMIT = 40_000_000   # Python function calls one case may make (imports included)
WATCHDOG = 60             # seconds: a safety net against a hang in C code, not a timing check
HEADROOM = 3 << 30        # bytes of address space a case may add to the test process
D5000 = "9" * 5000        # a 5000-digit number
GIB = 1 << 30


# --------------------------------------------------------------------------------- the cases

@dataclasses.dataclass(frozen=True)
class Case:
    """One hostile command line.

    ``args`` may name input files as ``@NAME`` (made by :func:`make_inputs`); outputs are
    relative names inside the case's own empty folder. ``codes``: the exit statuses allowed;
    ``needles``: on an error, the stderr line must contain one of them (case-insensitive).
    ``env``: extra environment variables."""

    id: str
    args: tuple
    codes: frozenset = frozenset({2})
    needles: tuple = ()
    env: tuple = ()
    slow: bool = False

    @property
    def command(self):
        return "gossip " + self.args[1] if self.args[0] == "gossip" and len(self.args) > 1 \
            else self.args[0]


def _case(cid, args, codes=(2,), needles=(), env=None, slow=False):
    return Case(cid, tuple(str(a) for a in args), frozenset(codes), tuple(needles),
                tuple(sorted((env or {}).items())), slow)


def _words(opt):
    """Ways an error line can name option ``opt``: ``--max-hops``, ``max-hops``, ``max hops``,
    ``hops``."""
    bare = opt.lstrip("-")
    return (opt, bare, bare.replace("-", " "), bare.replace("-", "_"), bare.split("-")[-1])


# ---- the base command line of every command: cheap, valid, so that the hostile value is the
# only problem; {OPT} is where an option goes
BASES = {
    "topologies": ["topologies"],
    "info": ["info", "ring:4"],
    "schedule": ["schedule", "ring:4", "-c", "allreduce"],
    "verify": ["verify", "@S"],
    "evaluate": ["evaluate", "@S"],
    "compare": ["compare", "ring:4"],
    "survey": ["survey", "-n", "8", "--topology", "ring:8"],
    "find": ["find", "-n", "16", "-d", "4", "--no-cache", "--no-evaluate"],
    "sweep": ["sweep", "-n", "16", "-d", "2", "--no-cache", "--no-evaluate", "--workers", "1"],
    "synth": ["synth", "ring:4", "-c", "allgather"],
    "simulate": ["simulate", "@S"],
    "alltoall": ["alltoall", "ring:4"],
    "rewire": ["rewire", "ring:6", "--max-swaps", "2"],
    "alltoall-steps": ["alltoall-steps", "ring:4"],
    "alltoall-design": ["alltoall-design", "-n", "4", "-d", "2"],
    "fabric": ["fabric", "--jobs", "8,8", "-d", "2", "--no-cache"],
    "fit-model": ["fit-model", "@R"],
    "gossip info": ["gossip", "info", "ring", "-n", "8"],
    "gossip cost": ["gossip", "cost", "ring", "--topology", "ring:8"],
    "gossip list": ["gossip", "list"],
    "export": ["export", "@S", "-o", "o.xml"],
    "convert": ["convert", "@S", "-o", "o.json", "--form", "explicit"],
    "import": ["import", "@X", "-o", "o.json"],
    "lint": ["lint", "@X"],
    "train-sim": ["train-sim", "--workload", "resnet50", "-n", "8", "--no-cache"],
    "run": ["run", "@S", "--nproc", "6", "--size", "6MiB"],
    # both would start ranks; emulate would build a network (every value here is refused first)
    "gossip run": ["gossip", "run", "ring", "-n", "4", "--size", "64KiB"],
    "emulate": ["emulate", "ring:3", "--no-capacity-check"],
}
#: commands whose runs start processes of their own: none may start in a case
STARTS_RANKS = ("run", "gossip run")
#: guarded as well: emulate's namespaces are made by forked helpers (as root, for real)
GUARDED = STARTS_RANKS + ("emulate",)

# ---- hostile values by the kind of thing an option takes (all of them must be refused)
SIZES = ["nan", "inf", "-inf", "-1MiB", "-1", "1e400", "abc", "", D5000, "NaNMiB", "1 parsec",
         "1e", "MiB", "0x10", "1MiB1", "\x00"]
DURATIONS = ["nan", "-inf", "-1", "-1us", "abc", "", D5000, "1e400", "5 parsecs", "us",
             "1e400min", "nanms", "\x00"]
LIMITS = ["nan", "-1", "-1s", "abc", "", "1e400", "x5min", "nanmin", "-inf"]   # time limits
BANDWIDTHS = ["nan", "inf", "0", "-1GB/s", "abc", "", D5000, "1e400", "10us", "0GB/s", "GB/s",
              "1e-400GB/s", "nanGbps"]
SPECS = ["", " ", "ring", "ring:", "ring:0", "ring:1", "ring:-3", "ring:nan", "ring:inf",
         "ring:1e3", f"ring:{D5000}", "ring:1000000000", "torus:0x3", "torus:100000x100000",
         "torus:3x3x3x3x3x3x3x3x3x3x3x3x3x3x3x3x3x3x3x3", "hypercube:64", "hypercube:-1",
         "nosuch:3", "genkautz:1000000000,4", "circulant:1000000000:1", "kautz:1000,1000",
         "debruijn:1000,1000", "randomregular:1000000000,3", "ring:4\x00",
         "mesh:0x0", "@MISSING", "@EMPTY", "@GARBAGE", "@TOPO_NODES1E9", "@TOPO_NAN",
         "@TOPO_DEEP", "."]
#: option names -> their kind; everything else is classified by its click type
KINDS = {"size": "size", "sizes": "size", "bucket_size": "size", "bucket": "size",
         "slice_bytes": "size", "min_bytes": "size", "max_bytes": "size",
         "alpha": "duration", "time_step": "duration", "cycle_time": "duration",
         "time_limit": "limit", "budget": "limit", "warmup": "limit", "timeout": "limit",
         "link_bandwidth": "bandwidth", "node_bandwidth": "bandwidth",
         "dim_bandwidth": "bandwidth", "topo": "spec", "network": "spec", "spec": "spec",
         "specs": "spec", "topology": "spec", "entries": "spec"}
#: integers where a huge value means huge work: it must be refused or stay bounded
WORKLOAD_INTS = {"chunks", "iterations", "iters", "nodes", "degree", "restarts",
                 "max_evaluations", "max_hops", "capacity", "batch", "window", "node_limit",
                 "max_solves", "ranks_per_node", "unwind_degree", "workers", "nproc", "root",
                 "max_swaps", "channels"}
#: (command, option name) pairs whose generated values are not all hostile there
SKIP = {("rewire", "max_swaps"), ("survey", "nodes"), ("find", "nodes"), ("find", "degree"),
        ("train-sim", "nodes"), ("gossip info", "nodes"), ("export", "output"),
        ("import", "output"), ("run", "nproc")}


def _leaves():
    return ((" ".join(path), command) for path, command in leaf_commands())


def _option_values(command, param):
    """(value, allowed codes) of the hostile values for option ``param`` of ``command``."""
    kind = KINDS.get(param.name)
    loose = (0, 2)   # absurd but legal: refuse, or answer within the work bound
    if kind == "size":
        return [(v, (2,)) for v in SIZES]
    if kind == "duration":
        return [(v, (2,)) for v in DURATIONS + ["inf"]]
    if kind == "limit":
        out = [(v, (2,)) for v in LIMITS]
        return out + ([] if command in STARTS_RANKS else [("inf", loose), (D5000, loose)])
    if kind == "bandwidth":
        return [(v, (2,)) for v in BANDWIDTHS]
    if kind == "spec":
        return [(v, (2,)) for v in SPECS]
    ptype = param.type
    if isinstance(ptype, click.Choice):
        return [("nosuch", (2,)), ("", (2,)), (D5000, (2,))]
    if isinstance(ptype, (click.types.IntParamType,)) or isinstance(ptype, click.IntRange):
        out = [(v, (2,)) for v in ("x", "1.5", "", "nan", "1e3", "0x10", "--json")]
        low = getattr(ptype, "min", None)
        if low is not None:
            out += [(str(low - 1), (2,)), (str(low - 1000000000), (2,))]
        high = getattr(ptype, "max", None)
        if high is not None:
            out += [(str(high + 1), (2,)), (D5000, (2,))]
        elif param.name in WORKLOAD_INTS and command not in STARTS_RANKS:   # ranks would start
            out += [("1000000000", loose), (D5000, loose)]
        return out
    if isinstance(ptype, (click.types.FloatParamType, click.FloatRange)):
        return [(v, (2,)) for v in ("nan", "inf", "-inf", "x", "", "1e400", "-1")]
    if param.name == "outdir":   # a folder, created if missing
        return [("/dev/full/x", (2,)), ("", (2,)), ("@S", (2,))]
    if param.name in ("output", "plot"):
        return [("/dev/full" if param.name != "outdir" else "/dev/full/x", (2,)),
                ("nodir/o.json" if param.name != "plot" else "nodir/p.png", (2,)),
                ("o.json/" if param.name != "plot" else "p.png/", (2,)), ("", (2,)),
                (".", (2,))]
    if param.name in ("extra",):
        return [(v, (2,)) for v in ("=", "x", "chunks", "chunks=", "=3", "nosuch=1",
                                    f"chunks={D5000}")]
    if param.name in ("collective", "collectives"):
        return [(v, (2,)) for v in ("nosuch", "", "allgather:", "broadcast:-1",
                                    f"broadcast:{D5000}", "broadcast:99")]
    if param.name in ("fail_links",):
        return [(v, (2,)) for v in ("0-99", "x", "-1", D5000, "0-0", "0>")] + [(",", (0, 2))]
    if param.name in ("fail_nodes",):
        return [(v, (2,)) for v in ("99", "x", "-1", D5000, "0,1,2,3")] + [(",", (0, 2))]
    if param.name in ("model", "workload_model"):
        return [(v, (2,)) for v in ("nosuch", "", "@MISSING", "@EMPTY", "@GARBAGE",
                                    "@WL_NAN", "@WL_NEG", "@WL_DEEP", "@LISTFILE")]
    if param.name in ("sizes_file",):
        return [(v, (2,)) for v in ("@MISSING", "@EMPTY", "@GARBAGE", "@WL_NAN", "@WL_NEG",
                                    "@WL_DEEP", "@WL_HUGE", ".")]
    if param.name in ("schedule_file",):
        return [(v, (1, 2)) for v in ("@MISSING", "@EMPTY", "@GARBAGE", "@DEEP3000",
                                      "@NODES1E9", "@NODE5OF3", "@LISTFILE")]
    if param.name == "name":
        return [("", (2,)), ("\x00", (2,)), (D5000, (0, 2))]
    return [(v, (2,)) for v in ("", D5000, "\x00")]


def _generated():
    """For every option of every command: each hostile value of its kind, on the command's
    base line (every other case with ``--json``, so that both outputs are checked)."""
    cases = []
    for command, cmd in _leaves():
        base = BASES[command]
        for param in cmd.params:
            if not isinstance(param, click.Option) or param.is_flag or param.name == "help":
                continue
            if (command, param.name) in SKIP:
                continue
            opt = max(param.opts, key=len)
            for i, (value, codes) in enumerate(_option_values(command, param)):
                args = list(base)
                # an option already in the base line is replaced, not repeated
                for o in param.opts:
                    if o in args:
                        j = args.index(o)
                        del args[j:j + 2]
                args += [opt, value]
                if i % 2 and command not in ("topologies",):
                    args.append("--json")
                shown = value if len(value) < 40 else value[:12] + f"...({len(value)})"
                if command == "survey" and opt == "--topology" and value.startswith("@") \
                        and value != "@MISSING":
                    codes = tuple(sorted(set(codes) | {1}))   # listed invalid, as compare does
                cases.append(_case(f"{command}/{opt}={shown!r}", args, codes,
                                   _needles_for(value, opt, param.name), slow=True))
    return cases


def _needles_for(value, opt, name=""):
    """What an error about ``value`` given to ``opt`` should name: the option, its last word,
    the value itself, or for a file the rule about files."""
    out = list(_words(opt))
    out.append(out[-1].rstrip("s"))
    if value.startswith("@"):
        out += FILE_NEEDLES.get(value[1:], ())
    elif 2 <= len(value) <= 40 and value.isprintable():
        out.append(value)
    if name in ("output", "outdir", "plot"):
        out += ["-o", "folder", "directory", "empty", "write", "exist"]
    if name in WORKLOAD_INTS:
        out += ["limit", "memory", "at most"]
    if name in ("collective", "collectives"):
        out += ["root"]
    if name == "gpu_flops":
        out += ["gpu", "flop"]
    return tuple(out)


# ---- files: name -> the rule an error about it should name
FILE_NEEDLES = {
    "MISSING": ("no such", "not exist", "not found", "missing", "cannot"),
    "EMPTY": ("empty",),
    "GARBAGE": ("json", "utf", "not a", "binary", "decode", "xml", "format", "parse",
                "malformed", "syntax"),
    "TRUNCATED": ("json", "truncat", "parse", "malformed", "end", "expecting"),
    "DEEP3000": ("nest", "deep", "depth", "recurs"),
    "DEEP_LIST": ("nest", "deep", "depth", "recurs"),
    "NODES1E9": ("node", "1000000000", "memory", "limit"),
    "BIGINT_NODES": ("node", "digit", "number", "integer", "large", "limit"),
    "DUPKEYS": ("duplicate", "twice", "more than once"),
    "NODE5OF3": ("node", "5", "range"),
    "NAN_TRANSFER": ("nan", "finite", "number", "not a"),
    "INF_BANDWIDTH": ("inf", "finite", "bandwidth", "positive"),
    "HUGE_LATENCY": ("latency", "finite", "inf", "1e400", "large"),
    "NEG_STEP": ("step", "negative", "-1", ">= 0", "at least"),
    "GZBOMB": ("limit", "TOPOCOLL_", "memory", "bytes", "large"),
    "NOTGZ": ("gzip", "compress", "not a", "magic", "corrupt"),
    "TRUNCGZ": ("gzip", "compress", "truncat", "end", "corrupt"),
    "LISTFILE": ("list", "object", "not a", "expected", "format"),
    "TOPOFILE": ("topology", "schedule", "format"),
    "XMLFILE": ("json", "xml", "format", "not a", "parse"),
    "UTF16": ("utf", "decode", "json", "encoding", "bom"),
    "BADUTF8": ("utf", "decode", "encoding"),
    "TRANSFERS_OBJ": ("transfers", "list"),
    "WRONG_FORMAT": ("format",),
    "FUTURE_VERSION": ("version",),
    "TOPO_NODES1E9": ("node", "1000000000", "memory", "limit"),
    "TOPO_NAN": ("nan", "finite", "bandwidth", "latency", "not a"),
    "TOPO_DEEP": ("nest", "deep", "depth", "recurs"),
    "WL_NAN": ("nan", "finite", "size", "not a"),
    "WL_NEG": ("negative", "size", "positive", "-1", "> 0"),
    "WL_DEEP": ("nest", "deep", "depth", "recurs"),
    "WL_HUGE": ("size", "large", "limit", "finite", "inf", "1e400"),
    "X_NGPUS1E9": ("ngpus", "1000000000", "gpu", "limit", "rank"),
    "X_NCHUNKS0": ("nchunksperloop", "chunk", "0"),
    "X_TRUNC": ("xml", "parse", "malformed", "truncat", "element", "not well-formed"),
    "X_LAUGHS": ("entity", "entities", "dtd", "doctype", "xml"),
    "X_XXE": ("entity", "entities", "dtd", "doctype", "xml"),
    "X_DEEP": ("nest", "deep", "depth", "element", "xml", "unexpected", "expected"),
    "X_HUGECNT": ("cnt", "count", "large", "digit", "limit", "number"),
    "X_NEGID": ("id", "negative", "-1", "gpu", "range"),
    "X_PEER": ("peer", "send", "recv", "rank", "range", "gpu"),
    "X_DUPGPU": ("gpu", "duplicate", "twice", "more than once"),
    "X_CHANNELS": ("nchannels", "channel", "limit"),
    "X_NOTXML": ("xml", "parse", "malformed", "not well-formed", "syntax"),
    "X_EMPTY_ALGO": ("gpu", "empty", "ngpus", "no "),
    "X_STEP_HUGE": ("step", "s=", "large", "order", "limit", "number"),
}

#: schedule-file inputs: (name, allowed codes where 1 is "readable but invalid")
SCHEDULE_FILES = [
    ("MISSING", (2,)), ("EMPTY", (2,)), ("GARBAGE", (2,)), ("TRUNCATED", (2,)),
    ("DEEP3000", (2,)), ("DEEP_LIST", (2,)), ("NODES1E9", (2,)), ("BIGINT_NODES", (2,)),
    ("DUPKEYS", (2,)), ("NODE5OF3", (1, 2)), ("NAN_TRANSFER", (1, 2)),
    ("INF_BANDWIDTH", (2,)), ("HUGE_LATENCY", (2,)), ("NEG_STEP", (1, 2)),
    ("GZBOMB", (2,)), ("TRUNCGZ", (2,)), ("LISTFILE", (2,)),
    ("TOPOFILE", (2,)), ("XMLFILE", (2,)), ("UTF16", (2,)), ("BADUTF8", (2,)),
    ("TRANSFERS_OBJ", (2,)), ("WRONG_FORMAT", (2,)), ("FUTURE_VERSION", (2,)),
]
XML_FILES = ["MISSING", "EMPTY", "GARBAGE", "X_TRUNC", "X_NGPUS1E9", "X_NCHUNKS0", "X_LAUGHS",
             "X_XXE", "X_DEEP", "X_HUGECNT", "X_NEGID", "X_PEER", "X_DUPGPU", "X_CHANNELS",
             "X_NOTXML", "X_EMPTY_ALGO", "X_STEP_HUGE"]
#: XML inputs that parse: lint (and import) may call them invalid programs (exit 1)
XML_READABLE = {"X_NGPUS1E9", "X_NCHUNKS0", "X_HUGECNT", "X_NEGID", "X_PEER", "X_DUPGPU",
                "X_CHANNELS", "X_EMPTY_ALGO", "X_STEP_HUGE"}
BOMB_LIMITS = {"TOPOCOLL_MEMORY_LIMIT": "64MiB"}


def _file_cases():
    cases = []
    file_commands = {
        "verify": ["verify", "{F}"], "evaluate": ["evaluate", "{F}", "--json"],
        "simulate": ["simulate", "{F}"], "export": ["export", "{F}", "-o", "o.xml"],
        "compare": ["compare", "ring:4", "{F}", "--json"],
        "train-sim": ["train-sim", "--workload", "resnet50", "--schedule", "{F}", "--no-cache"],
        "run": ["run", "{F}"],
        "info": ["info", "{F}"],
        "convert": ["convert", "{F}", "-o", "o.json", "--form", "symmetric"],
    }
    for command, template in file_commands.items():
        for name, codes in SCHEDULE_FILES:
            if command == "info" and name in ("NODE5OF3", "NAN_TRANSFER", "NEG_STEP"):
                continue
            if command in ("info", "compare") and name == "TOPOFILE":   # a topology: fine
                continue
            if command == "run" and name == "XMLFILE":   # run takes MSCCL XML too: it would run
                continue
            args = [f"@{name}" if a == "{F}" else a for a in template]
            codes = set(codes)
            if command == "compare" and name not in ("MISSING", "GZBOMB"):
                codes = {1, 2} if name != "LISTFILE" else {1}   # readable: listed invalid
            if command == "info":
                codes = {2}
            if command == "verify" and name not in ("MISSING", "GZBOMB"):
                codes = {1, 2}   # a file that breaks the format is an invalid schedule
                                 # (docs/format.md); one that cannot be read is bad input
            env = BOMB_LIMITS if name == "GZBOMB" else None
            cases.append(_case(f"{command}/file={name}", args, codes,
                               FILE_NEEDLES[name] + (("invalid",) if 1 in codes else ()),
                               env=env))
    for command, template in {"lint": ["lint", "{F}", "--json"],
                              "import": ["import", "{F}", "-o", "o.json"],
                              "export": ["export", "@S", "-o", "{F}"]}.items():
        for name in XML_FILES:
            if command == "export":
                continue
            args = [f"@{name}" if a == "{F}" else a for a in template]
            codes = {1, 2} if name in XML_READABLE else {2}
            cases.append(_case(f"{command}/xml={name}", args, codes,
                               FILE_NEEDLES[name] + (("invalid", "runtime", "reject")
                                                     if 1 in codes else ())))
    # XML where a schedule is expected, schedules where XML is expected
    for name in ("S", "TOPOFILE", "DEEP3000", "NODES1E9"):
        cases.append(_case(f"lint/json={name}", ["lint", f"@{name}"], (2,),
                           ("xml", "parse", "not well-formed", "syntax", "json")))
    return cases


# ---- environment variables
MEMORY_LIMITS = ["abc", "-1GiB", "0", "1KiB", "nan", "inf", "-inf", D5000, "1e400", "1 parsec",
                 "\x01", "0.5", "1MiB1", "-0", "GiB"]
MAX_FILE_BYTES = ["inf", "abc", "-1", "nan", D5000, "1e400", "-inf", "1KiB1", "GiB", "\x01"]
ENV_COMMANDS = [["topologies"], ["info", "ring:4"], ["verify", "@S"], ["gossip", "list"],
                ["schedule", "ring:4", "-c", "allgather", "-o", "s.json"]]


def _env_cases():
    cases = []
    for value in MEMORY_LIMITS:
        for args in ENV_COMMANDS:
            cases.append(_case(f"{args[0]}/TOPOCOLL_MEMORY_LIMIT={value[:12]!r}", args, (2,),
                               ("TOPOCOLL_MEMORY_LIMIT",),
                               env={"TOPOCOLL_MEMORY_LIMIT": value}))
    for value in MAX_FILE_BYTES:
        for args in ENV_COMMANDS:
            cases.append(_case(f"{args[0]}/TOPOCOLL_MAX_FILE_BYTES={value[:12]!r}", args, (2,),
                               ("TOPOCOLL_MAX_FILE_BYTES",),
                               env={"TOPOCOLL_MAX_FILE_BYTES": value}))
    # a legal but tiny limit must refuse the big jobs, naming the limit
    small = {"TOPOCOLL_MEMORY_LIMIT": "1MiB"}
    for args in (["info", "ring:20000"], ["alltoall", "torus:64x64"],
                 ["gossip", "info", "one-peer-exp", "-n", "1000000"],
                 ["schedule", "ring:3000", "-c", "allgather", "-a", "ring", "-o", "s.json"],
                 ["synth", "torus:16x16", "-c", "allgather", "-o", "s.json"],
                 ["verify", "@NODES1E9"], ["verify", "@GZBOMB"]):
        codes = (2,) if args[0] in ("verify", "schedule", "gossip") else (0, 2)
        cases.append(_case(f"{args[0]}/TOPOCOLL_MEMORY_LIMIT=1MiB/{args[1]}", args, codes,
                           ("TOPOCOLL_MEMORY_LIMIT", "limit", "memory"), env=small))
    tiny_read = {"TOPOCOLL_MAX_FILE_BYTES": "1KiB"}
    for args in (["verify", "@S"], ["evaluate", "@S"], ["lint", "@X"], ["verify", "@GZBOMB"]):
        cases.append(_case(f"{args[0]}/TOPOCOLL_MAX_FILE_BYTES=1KiB/{args[1]}", args, (2,),
                           ("TOPOCOLL_MAX_FILE_BYTES", "limit", "bytes"), env=tiny_read))
    return cases


# ---- the tracker's list, word for word where an option kept its name
def _explicit_cases():
    c = _case
    return [
        c("fit-model/garbage", ["fit-model", "@GARBAGE"], (2,), ("json", "runs")),
        c("fit-model/empty", ["fit-model", "@EMPTY", "--json"], (2,), ("json", "runs")),
        c("fit-model/missing", ["fit-model", "@MISSING"], (2,), ("missing", "read", "exist")),
        c("fit-model/deep", ["fit-model", "@DEEP3000"], (2,), ("deep", "nest", "runs", "list")),
        c("fit-model/one-step-count", ["fit-model", "@R_ONESTEP"], (2,), ("steps", "alpha")),
        c("info/ring:5000digits", ["info", f"ring:{D5000}"], (2,), ("ring", "node", "large",
                                                                     "limit", "digit")),
        c("verify/nodes=1000000000", ["verify", "@NODES1E9"], (2,), FILE_NEEDLES["NODES1E9"]),
        c("verify/gzip-bomb-low-limit", ["verify", "@GZBOMB"], (2,), FILE_NEEDLES["GZBOMB"],
          env=BOMB_LIMITS),
        c("verify/gzip-bomb-read-limit", ["verify", "@GZBOMB"], (2,), FILE_NEEDLES["GZBOMB"],
          env={"TOPOCOLL_MAX_FILE_BYTES": "100MB"}),
        c("lint/ngpus=1000000000", ["lint", "@X_NGPUS1E9"], (1, 2), FILE_NEEDLES["X_NGPUS1E9"]),
        c("import/ngpus=1000000000", ["import", "@X_NGPUS1E9", "-o", "o.json"], (1, 2),
          FILE_NEEDLES["X_NGPUS1E9"]),
        c("lint/nchunksperloop=0", ["lint", "@X_NCHUNKS0"], (1, 2), FILE_NEEDLES["X_NCHUNKS0"]),
        c("import/nchunksperloop=0", ["import", "@X_NCHUNKS0", "-o", "o.json"], (1, 2),
          FILE_NEEDLES["X_NCHUNKS0"]),
        c("schedule/trees-chunks=10000000",
          ["schedule", "ring:4", "-c", "allreduce", "-a", "trees", "-O", "chunks=10000000"],
          (2,), ("chunks", "limit", "memory", "at most")),
        c("schedule/trees-chunks=10000000-o",
          ["schedule", "ring:4", "-c", "allreduce", "-a", "trees", "-O", "chunks=10000000",
           "-o", "s.json", "--json"], (2,), ("chunks", "limit", "memory", "at most")),
        c("schedule/trees-chunks-novalue",
          ["schedule", "uniring:4", "-c", "allreduce", "-a", "trees", "-O", "chunks"], (2,),
          ("chunks", "KEY=VALUE", "=")),
        c("schedule/trees-chunks=nan",
          ["schedule", "ring:4", "-c", "allreduce", "-a", "trees", "-O", "chunks=nan"], (2,),
          ("chunks",)),
        c("schedule/trees-chunks=0",
          ["schedule", "ring:4", "-c", "allreduce", "-a", "trees", "-O", "chunks=0"], (2,),
          ("chunks",)),
        c("schedule/trees-chunks=-1",
          ["schedule", "ring:4", "-c", "allreduce", "-a", "trees", "-O", "chunks=-1"], (2,),
          ("chunks",)),
        c("schedule/trees-chunks=5000digits",
          ["schedule", "ring:4", "-c", "allreduce", "-a", "trees", "-O", f"chunks={D5000}"],
          (2,), ("chunks",)),
        c("schedule/bfb-chunks=1000000000",
          ["schedule", "ring:4", "-c", "allgather", "--chunks", "1000000000", "-o", "s.json"],
          (0, 2), ("chunks", "limit", "memory")),
        c("schedule/shiftedring-shift=1000000000",
          ["schedule", "ring:4", "-c", "allgather", "-a", "shiftedring", "-O",
           "shift=1000000000"], (0, 2), ("shift",)),
        c("schedule/lp-rounds=1000000000",
          ["schedule", "ring:4", "-c", "alltoall", "-a", "lp", "-O", "rounds=1000000000"],
          (0, 2), ("rounds", "limit", "memory")),
        c("schedule/ten-option-nan",
          ["schedule", "ring:4", "-c", "allgather", "-a", "ten", "-O", "chunks=nan"], (2,),
          ("chunks",)),
        c("synth/chunks=100000000",
          ["synth", "ring:4", "-c", "allgather", "--chunks", "100000000"], (2,),
          ("chunks", "limit", "memory", "at most")),
        c("synth/chunks=100000000-o",
          ["synth", "ring:4", "-c", "allgather", "--chunks", "100000000", "-o", "s.json"],
          (2,), ("chunks", "limit", "memory", "at most")),
        c("synth/ilp-chunks=100000",
          ["synth", "ring:4", "-c", "allgather", "-a", "ilp", "--chunks", "100000"], (2,),
          ("chunks", "limit", "memory", "at most")),
        c("synth/restarts=1000000000",
          ["synth", "ring:4", "-c", "allgather", "--restarts", "1000000000"], (0, 2),
          ("restarts", "limit", "at most")),
        c("synth/time-limit=nan",
          ["synth", "ring:4", "-c", "allgather", "-a", "ilp", "--time-limit", "nan"], (2,),
          _words("--time-limit")),
        c("synth/time-step=1e-300",
          ["synth", "ring:4", "-c", "allgather", "--time-step", "1e-300"], (2,),
          ("time step", "small", "slots", "limit")),
        c("synth/time-step=1e300",
          ["synth", "ring:4", "-c", "allgather", "--time-step", "1e300"], (0, 2),
          ("time step", "large")),
        c("synth/size=1e-300",
          ["synth", "ring:4", "-c", "allgather", "--size", "1e-300"], (0, 2),
          ("size", "small", "byte")),
        c("gossip info/iterations=1000000000",
          ["gossip", "info", "ring", "--nodes", "16", "--iterations", "1000000000"], (0, 2),
          ("iterations", "plot", "limit", "at most")),
        c("gossip info/iterations=1000000000-plot",
          ["gossip", "info", "ring", "--nodes", "16", "--iterations", "1000000000",
           "--plot", "p.png"], (2,), ("iterations", "limit", "at most", "memory")),
        c("gossip info/nodes=1000000000",
          ["gossip", "info", "ring", "--nodes", "1000000000"], (2,),
          ("nodes", "limit", "memory", "at most")),
        c("gossip info/nodes=5000digits",
          ["gossip", "info", "ring", "--nodes", D5000], (2,),
          ("nodes", "limit", "memory", "at most", "range")),
        c("gossip info/hierarchical-local-size=3",
          ["gossip", "info", "ring", "--nodes", "8", "--hierarchical-local-size", "3"], (2,),
          ("must divide",)),
        c("gossip info/hierarchical-local-size=1000000000",
          ["gossip", "info", "ring", "--nodes", "8", "--hierarchical-local-size",
           "1000000000"], (2,), ("must divide",)),
        c("gossip info/hierarchical-nodes=1000000000",
          ["gossip", "info", "ring", "--nodes", "1000000000", "--hierarchical-local-size",
           "1000", "--json"], (2,), ("limit", "memory")),
        c("gossip cost/nodes=1000000000",
          ["gossip", "cost", "ring", "--topology", "ring:8", "--nodes", "1000000000"], (2,),
          ("nodes", "limit", "memory", "at most", "multiple")),
        c("gossip cost/ranks-per-node=1000000000",
          ["gossip", "cost", "ring", "--topology", "ring:8", "--ranks-per-node",
           "1000000000"], (2,), ("ranks", "limit", "memory", "at most")),
        c("find/d=1000000000", ["find", "-n", "16", "-d", "1000000000", "--no-cache"], (0, 2),
          ("degree", "at most", "limit")),
        c("find/d=10000", ["find", "-n", "16", "-d", "10000", "--no-cache"], (0, 2),
          ("degree", "at most", "limit")),
        c("find/n=1000000000", ["find", "-n", "1000000000", "-d", "4", "--no-cache"], (2,),
          ("nodes", "limit", "memory", "at most")),
        c("find/n=5000digits", ["find", "-n", D5000, "-d", "4", "--no-cache"], (2,),
          ("nodes", "limit", "memory", "at most", "range", "large")),
        c("find/d=5000digits", ["find", "-n", "16", "-d", D5000, "--no-cache"], (2,),
          ("degree", "limit", "at most", "range", "large")),
        c("find/n=0", ["find", "-n", "0", "-d", "4", "--no-cache"], (2,), ("nodes", "2")),
        c("find/n=-16", ["find", "-n", "-16", "-d", "4", "--no-cache"], (2,), ("nodes", "2")),
        c("find/d=0", ["find", "-n", "16", "-d", "0", "--no-cache"], (2,), ("degree", "1")),
        c("find/d=-1", ["find", "-n", "16", "-d", "-1", "--no-cache"], (2,), ("degree", "1")),
        c("find/optimize-budget=0s",
          ["find", "-n", "16", "-d", "4", "--optimize", "--budget", "0s", "--no-cache"],
          (0, 2), ("budget", "time limit", "time-limit", "0")),
        c("find/optimize-time-limit=0s",
          ["find", "-n", "16", "-d", "4", "--optimize", "--time-limit", "0s", "--no-cache",
           "--json"], (0, 2), ("time limit", "time-limit", "0")),
        c("find/optimize-time-limit=nan",
          ["find", "-n", "16", "-d", "4", "--optimize", "--time-limit", "nan", "--no-cache"],
          (2,), _words("--time-limit")),
        c("find/optimize-max-evaluations=0",
          ["find", "-n", "16", "-d", "4", "--optimize", "--max-evaluations", "0",
           "--no-cache"], (0, 2), _words("--max-evaluations")),
        c("find/optimize-max-evaluations=-1",
          ["find", "-n", "16", "-d", "4", "--optimize", "--max-evaluations", "-1",
           "--no-cache"], (2,), _words("--max-evaluations")),
        c("find/output=/dev/full",
          ["find", "-n", "16", "-d", "4", "--no-cache", "-o", "/dev/full"], (2,),
          ("/dev/full", "folder", "directory", "output")),
        c("find/output=file",
          ["find", "-n", "16", "-d", "4", "--no-cache", "-o", "@S"], (2,),
          ("folder", "directory", "exists", "output")),
        c("alltoall/tolerance=nan", ["alltoall", "ring:4", "--tolerance", "nan"], (2,),
          _words("--tolerance")),
        c("alltoall/tolerance=inf", ["alltoall", "ring:4", "--tolerance", "inf"], (2,),
          _words("--tolerance")),
        c("alltoall/time-limit=nan", ["alltoall", "ring:4", "--time-limit", "nan"], (2,),
          _words("--time-limit")),
        c("alltoall/max-hops=1000000000", ["alltoall", "ring:4", "--max-hops", "1000000000"],
          (0, 2), ("hops", "limit", "at most")),
        c("alltoall/max-hops=1000000000-big",
          ["alltoall", "torus:8x8", "--max-hops", "1000000000", "--json"], (0, 2),
          ("hops", "limit", "at most", "memory")),
        # the LP's shares are whole at a few chunks: a billion only scales the chunk ids,
        # the schedule stays 16 transfers (bounded work is the rule, not a refusal)
        c("alltoall/chunks=1000000000-o",
          ["alltoall", "ring:4", "--chunks", "1000000000", "-o", "s.json"], (0, 2),
          ("chunks", "limit", "memory", "at most")),
        c("rewire/time-limit=nan", ["rewire", "ring:6", "--time-limit", "nan"], (2,),
          _words("--time-limit")),
        c("rewire/max-swaps=1000000000-bounded",
          ["rewire", "ring:6", "--max-swaps", "1000000000", "--time-limit", "0.5s",
           "--objective", "distance", "--json"], (0, 2), ("swaps",)),
        c("export/name=''", ["export", "@S", "-o", "o.xml", "--name", ""], (2,), ("name",)),
        c("export/name=quote", ["export", "@S", "-o", "o.xml", "--name", 'a"<b>&'], (0, 2),
          ("name",)),
        c("export/name=newline", ["export", "@S", "-o", "o.xml", "--name", "a\nb"], (2,),
          ("name",)),
        c("export/name=long", ["export", "@S", "-o", "o.xml", "--name", "n" * 100000], (0, 2),
          ("name", "characters", "long")),
        c("export/min>max", ["export", "@S", "-o", "o.xml", "--min-bytes", "1MiB",
                             "--max-bytes", "1KiB"], (2,), ("min", "max")),
        c("export/chunks=1000000000", ["export", "@S", "-o", "o.xml", "--chunks",
                                       "1000000000"], (2,), ("chunks", "limit", "at most",
                                                              "memory", "4095", "elements")),
        c("export/invalid", ["export", "@INVALID", "-o", "o.xml"], (1,), ("invalid",)),
        c("verify/invalid", ["verify", "@INVALID", "--json"], (1,), ("invalid",)),
        # without --nproc a 6-rank world on fewer cores is asked about first; with it, the size
        c("run/size=3B", ["run", "@S", "--size", "3B"], (2,), ("size", "element", "multiple",
                                                                "bytes", "--nproc")),
        c("run/size=3B-nproc6", ["run", "@S", "--size", "3B", "--nproc", "6"], (2,),
          ("size", "element", "bytes")),
        c("run/size=1PiB", ["run", "@S", "--size", "1PiB"], (2,),
          ("memory", "limit", "size", "TOPOCOLL_MEMORY_LIMIT", "--nproc")),
        c("run/size=1PiB-nproc6", ["run", "@S", "--size", "1PiB", "--nproc", "6"], (2,),
          ("memory", "limit", "size", "TOPOCOLL_MEMORY_LIMIT")),
        c("run/size=0", ["run", "@S", "--size", "0"], (2,), ("size",)),
        c("run/1024-nodes-no-nproc", ["run", "@BIG1024"], (2,),
          ("nproc", "cores", "processes", "memory", "limit")),
        c("run/1024-nodes-no-nproc-json", ["run", "@BIG1024", "--json"], (2,),
          ("nproc", "cores", "processes", "memory", "limit")),
        c("run/nproc=1000000000", ["run", "@S", "--nproc", "1000000000"], (2,),
          ("nproc", "processes", "cores", "limit", "memory")),
        c("run/invalid", ["run", "@INVALID"], (1,), ("invalid",)),
        c("run/iterations=1000000000", ["run", "@S", "--nproc", "6", "--iterations",
                                        "1000000000", "--size", "1PiB"], (2,),
          ("memory", "limit", "size")),
        c("compare/listfile", ["compare", "@LISTFILE"], (1,), ("invalid", "list")),
        c("compare/listfile-json", ["compare", "@LISTFILE", "--json"], (1,),
          ("invalid", "list")),
        c("compare/listfile-and-ring", ["compare", "ring:4", "@LISTFILE"], (1,),
          ("invalid", "list")),
        c("compare/plot=/dev/full", ["compare", "ring:4", "--plot", "/dev/full"], (2,),
          ("/dev/full", "plot", "space", "write", "suffix", "png")),
        c("train-sim/plot=/dev/full",
          ["train-sim", "--workload", "resnet50", "-n", "8", "--no-cache", "--plot",
           "/dev/full"], (2,), ("/dev/full", "plot", "space", "write", "suffix", "png")),
        c("gossip info/plot=/dev/full",
          ["gossip", "info", "ring", "-n", "8", "--plot", "/dev/full"], (2,),
          ("/dev/full", "plot", "space", "write", "suffix", "png")),
        c("simulate/plot=/dev/full", ["simulate", "@S", "--plot", "/dev/full"], (2,),
          ("/dev/full", "plot", "space", "write", "suffix", "png")),
        c("schedule/o=/dev/full", ["schedule", "ring:4", "-c", "allgather", "-o", "/dev/full"],
          (2,), ("/dev/full", "space", "write")),
        c("synth/o=/dev/full", ["synth", "ring:4", "-c", "allgather", "-o", "/dev/full"],
          (2,), ("/dev/full", "space", "write")),
        c("export/o=/dev/full", ["export", "@S", "-o", "/dev/full"], (2,),
          ("/dev/full", "space", "write")),
        c("import/o=/dev/full", ["import", "@X", "-o", "/dev/full"], (2,),
          ("/dev/full", "space", "write")),
        c("rewire/o=/dev/full", ["rewire", "ring:6", "--max-swaps", "1", "-o", "/dev/full"],
          (2,), ("/dev/full", "space", "write")),
        c("alltoall/o=/dev/full", ["alltoall", "ring:4", "-o", "/dev/full"], (2,),
          ("/dev/full", "space", "write")),
        c("schedule/o=missing-folder",
          ["schedule", "ring:4", "-c", "allgather", "-o", "nodir/s.json"], (2,),
          ("nodir", "folder", "directory")),
        c("schedule/o=slash", ["schedule", "ring:4", "-c", "allgather", "-o", "s.json/"], (2,),
          ("s.json/", "folder", "directory")),
        c("export/o=slash", ["export", "@S", "-o", "o.xml/"], (2,),
          ("o.xml/", "folder", "directory")),
        c("import/o=slash", ["import", "@X", "-o", "o.json/"], (2,),
          ("o.json/", "folder", "directory")),
        c("synth/o=missing-folder-tenants",
          ["synth", "ring:4", "-c", "allgather", "-c", "broadcast:1", "-o", "/dev/full/x"],
          (2,), ("folder", "directory", "/dev/full")),
        c("survey/n=1000000000", ["survey", "-n", "1000000000"], (2,),
          ("nodes", "limit", "memory", "at most")),
        c("survey/n=5000digits", ["survey", "-n", D5000], (2,),
          ("nodes", "limit", "memory", "at most", "range")),
        c("info/torus-huge", ["info", "torus:100000x100000"], (2,),
          ("limit", "memory", "node", "at most")),
        c("info/hypercube:40", ["info", "hypercube:40"], (2,),
          ("limit", "memory", "node", "at most")),
        c("schedule/root=1000000000", ["schedule", "ring:4", "-c", "broadcast", "--root",
                                       "1000000000"], (2,), ("root",)),
        c("schedule/root=-1", ["schedule", "ring:4", "-c", "broadcast", "--root", "-1"], (2,),
          ("root",)),
        c("synth/root=5000digits", ["synth", "ring:4", "-c", "broadcast", "--root", D5000],
          (2,), ("root",)),
        c("train-sim/nodes=1000000000", ["train-sim", "--workload", "resnet50", "-n",
                                         "1000000000", "--no-cache"], (0, 2),
          ("nodes", "limit", "memory", "at most")),
        c("train-sim/degree=1000000000", ["train-sim", "--workload", "resnet50", "-n", "8",
                                          "-d", "1000000000", "--no-cache"], (0, 2),
          ("degree", "at most", "limit")),
        c("train-sim/nodes=0", ["train-sim", "--workload", "resnet50", "-n", "0",
                                "--no-cache"], (2,), ("nodes",)),
        c("train-sim/batch=0", ["train-sim", "--workload", "resnet50", "-n", "8", "--batch",
                                "0", "--no-cache"], (2,), ("batch",)),
        c("train-sim/efficiency=0", ["train-sim", "--workload", "resnet50", "-n", "8",
                                     "--efficiency", "0", "--no-cache"], (2,),
          ("efficiency",)),
        c("train-sim/efficiency=2", ["train-sim", "--workload", "resnet50", "-n", "8",
                                     "--efficiency", "2", "--no-cache"], (2,),
          ("efficiency",)),
        c("train-sim/gpu-flops=0", ["train-sim", "--workload", "resnet50", "-n", "8",
                                    "--gpu-flops", "0", "--no-cache"], (2,),
          ("gpu-flops", "gpu", "flop")),
        c("evaluate/size=1e300", ["evaluate", "@S", "--size", "1e300", "--json"], (0, 2),
          ("size", "large", "finite")),
        c("evaluate/size=0", ["evaluate", "@S", "--size", "0"], (2,), ("size",)),
        c("simulate/size=0", ["simulate", "@S", "--size", "0"], (2,), ("size",)),
        c("lint/capacity=1000000000", ["lint", "@X", "--capacity", "1000000000", "--json"],
          (0, 1, 2), ("capacity",)),
        c("stray/--json-twice", ["info", "ring:4", "--json", "--json"], (0, 2), ("json",)),
        c("stray/unknown-command", ["nosuch"], (2,), ("nosuch", "command")),
        c("stray/gossip-unknown", ["gossip", "nosuch"], (2,), ("nosuch", "command")),
        c("stray/gossip-nothing-json", ["gossip", "info"], (2,), ("topolog", "missing",
                                                                  "nodes")),
        c("stray/option-without-value", ["schedule", "ring:4", "-c"], (2,),
          ("-c", "collective", "argument", "value")),
        c("stray/extra-argument", ["info", "ring:4", "ring:5"], (2,), ("ring:5", "argument")),
        c("stray/nul-in-arg", ["verify", "s\x00.json"], (2,), ("null", "nul", "\\x00",
                                                               "embedded", "file")),
    ]


def _spec_cases():
    """Every hostile spec on every command that takes a topology."""
    cases = []
    takers = {"info": ["info", "{T}", "--json"],
              "schedule": ["schedule", "{T}", "-c", "allgather", "-o", "s.json"],
              "compare": ["compare", "{T}", "--json"],
              "synth": ["synth", "{T}", "-c", "allgather"],
              "alltoall": ["alltoall", "{T}", "--json"],
              "rewire": ["rewire", "{T}", "--max-swaps", "1", "-o", "t.json"],
              "gossip cost": ["gossip", "cost", "ring", "--topology", "{T}"],
              "train-sim": ["train-sim", "--workload", "resnet50", "--topology", "{T}",
                            "--no-cache"],
              "lint": ["lint", "@X", "--topology", "{T}"],
              "import": ["import", "@X", "-o", "o.json", "--topology", "{T}"],
              "survey": ["survey", "-n", "8", "--topology", "{T}"]}
    for command, template in takers.items():
        for spec in SPECS:
            args = [spec if a == "{T}" else a for a in template]
            shown = spec if len(spec) < 40 else spec[:12] + f"...({len(spec)})"
            needles = ("topolog", "spec", "node", "family", "limit", "memory", "at least",
                       "at most", "parameter", "json", "empty", "exist", "not a")
            codes = (2,)
            if spec.startswith("@"):
                needles = FILE_NEEDLES[spec[1:]]
                if command in ("compare", "survey") and spec != "@MISSING":
                    codes = (1, 2)   # a readable file without a topology: listed invalid
            cases.append(_case(f"{command}/spec={shown!r}", args, codes, needles, slow=True))
    return cases


#: explicit cases that may do real work before they answer (or hang today): marked slow
HEAVY = ("synth/ilp-chunks", "synth/restarts", "synth/chunks", "find/d=", "find/optimize",
         "train-sim/degree", "train-sim/nodes=1000000000", "alltoall/max-hops",
         "rewire/max-swaps", "=1MiB/", "schedule/bfb-chunks", "schedule/lp-rounds",
         "gossip info/iterations", "GZBOMB", "gzip-bomb", "evaluate/size=1e300")


def all_cases():
    """The whole table, ids unique."""
    cases = _explicit_cases() + _env_cases() + _file_cases()
    cases = [dataclasses.replace(case, slow=True) if any(h in case.id for h in HEAVY) else case
             for case in cases] + _spec_cases()
    cases += [case for case in _generated()
              if not (case.command in ("compare", "survey") and "spec=" in case.id)]
    seen, out = set(), []
    for case in cases:
        if case.id in seen:
            continue
        seen.add(case.id)
        out.append(case)
    return out


# --------------------------------------------------------------------------------- the inputs

def _schedule_doc():
    return json.loads(VALID.read_text())


def _nest(depth, leaf=0):
    return "[" * depth + str(leaf) + "]" * depth


def _gzip_bomb(path, gib=5):
    """A gzip file that expands to ``gib`` GiB: a schedule's opening, then one member of
    64 MiB of spaces repeated (gzip members concatenate), written without ever holding the
    expansion (about 64 KiB per member)."""
    head = gzip.compress(b'{"format": "topocoll.schedule", "version": 1, "meta": {"note": "')
    block = 64 << 20
    comp = zlib.compressobj(9, zlib.DEFLATED, 31)
    member = comp.compress(b" " * block) + comp.flush()
    with open(path, "wb") as fh:
        fh.write(head)
        for _ in range(gib * (GIB // block)):
            fh.write(member)


def make_inputs(where):
    """Every ``@NAME`` input, in folder ``where``; name -> path."""
    where = Path(where)
    files = {}

    def put(name, data, suffix=".json"):
        path = where / (name + suffix)
        if isinstance(data, str):
            data = data.encode("utf-8")
        path.write_bytes(data)
        files[name] = path
        return path

    text = VALID.read_text()
    files["S"] = VALID
    files["INVALID"] = INVALID
    files["X"] = XML_GOOD
    files["MISSING"] = where / "missing.json"
    put("EMPTY", b"")
    put("R", json.dumps([{"steps": s, "bw_bytes": b, "reduced_bytes": 0.0,
                          "seconds": 1e-5 + 2e-6 * s + 1e-9 * b}
                         for s in (2, 4, 8) for b in (1e3, 1e6)]))
    put("R_ONESTEP", json.dumps([{"steps": 4, "bw_bytes": b, "seconds": 1e-3 + b * 1e-9}
                                 for b in (1e3, 1e4, 1e5, 1e6)]))
    put("GARBAGE", bytes(range(256)) * 16)
    put("TRUNCATED", text[: len(text) // 2])
    doc = _schedule_doc()
    doc["meta"] = {"deep": "@@"}
    put("DEEP3000", json.dumps(doc).replace('"@@"', _nest(3000)))
    put("DEEP_LIST", json.dumps(doc).replace('"@@"', _nest(200000)))
    doc = _schedule_doc()
    doc["topology"]["nodes"] = 1_000_000_000
    put("NODES1E9", json.dumps(doc))
    put("BIGINT_NODES", json.dumps(_schedule_doc()).replace('"nodes": 6', f'"nodes": {D5000}'))
    put("DUPKEYS", text.replace('"collective": "allgather",',
                                '"collective": "allgather", "collective": "reduce_scatter",'))
    doc = _schedule_doc()
    doc["topology"] = {"format": "topocoll.topology", "version": 1, "name": "tri", "nodes": 3,
                       "links": [{"src": a, "dst": b} for a in range(3) for b in range(3)
                                 if a != b]}
    doc["transfers"] = [{"step": 1, "src": 0, "dst": 5, "shard": 0, "lo": 0.0, "hi": 1.0,
                         "op": "copy"}]
    put("NODE5OF3", json.dumps(doc))
    doc = _schedule_doc()
    doc["transfers"][0]["hi"] = "@@"
    put("NAN_TRANSFER", json.dumps(doc).replace('"@@"', "NaN"))
    doc = _schedule_doc()
    doc["topology"]["links"][0]["bandwidth"] = "@@"
    put("INF_BANDWIDTH", json.dumps(doc).replace('"@@"', "Infinity"))
    doc = _schedule_doc()
    doc["topology"]["links"][0]["latency"] = "@@"
    put("HUGE_LATENCY", json.dumps(doc).replace('"@@"', "1e400"))
    doc = _schedule_doc()
    doc["transfers"][0]["step"] = -1
    put("NEG_STEP", json.dumps(doc))
    bomb = where / "BOMB.json.gz"
    _gzip_bomb(bomb)
    files["GZBOMB"] = bomb
    put("NOTGZ", text, suffix=".json.gz")
    put("TRUNCGZ", gzip.compress(text.encode())[:300], suffix=".json.gz")
    put("LISTFILE", json.dumps([_schedule_doc(), 1, "x"]))
    files["TOPOFILE"] = put("TOPOFILE", json.dumps(_schedule_doc()["topology"]))
    put("XMLFILE", XML_GOOD.read_text())
    put("UTF16", text.encode("utf-16"))
    put("BADUTF8", text.replace('"note": "', '"note": "\udcff', 1).encode("utf-8",
                                                                       "surrogateescape"))
    doc = _schedule_doc()
    doc["transfers"] = {"step": 1}
    put("TRANSFERS_OBJ", json.dumps(doc))
    doc = _schedule_doc()
    doc["format"] = "nosuch.format"
    put("WRONG_FORMAT", json.dumps(doc))
    doc = _schedule_doc()
    doc["version"] = 10 ** 30
    put("FUTURE_VERSION", json.dumps(doc))
    topo = _schedule_doc()["topology"]
    put("TOPO_NODES1E9", json.dumps({**topo, "nodes": 1_000_000_000}))
    bad = json.loads(json.dumps(topo))
    bad["links"][0]["bandwidth"] = "@@"
    put("TOPO_NAN", json.dumps(bad).replace('"@@"', "NaN"))
    put("TOPO_DEEP", json.dumps({**topo, "name": "@@"}).replace('"@@"', _nest(200000)))
    # workloads (find --size-file, train-sim --workload FILE)
    put("WL_NAN", "[1024, NaN, 4096]")
    put("WL_NEG", "[1024, -1, 4096]")
    put("WL_DEEP", _nest(3000, 1024))
    put("WL_HUGE", "[1024, 1e400]")
    # MSCCL XML
    xml = XML_GOOD.read_text()
    put("X_TRUNC", xml[: len(xml) // 2], ".xml")
    put("X_NGPUS1E9", xml.replace('ngpus="3"', 'ngpus="1000000000"'), ".xml")
    put("X_NCHUNKS0", xml.replace('nchunksperloop="3"', 'nchunksperloop="0"'), ".xml")
    put("X_LAUGHS", '<?xml version="1.0"?>\n<!DOCTYPE lolz [<!ENTITY lol "lol">'
        + "".join(f'<!ENTITY lol{i} "{("&lol%s;" % (i - 1 if i > 1 else "")) * 10}">'
                  for i in range(1, 10))
        + ']>\n<algo name="&lol9;" ngpus="3"/>', ".xml")
    put("X_XXE", '<?xml version="1.0"?>\n<!DOCTYPE algo [<!ENTITY x SYSTEM '
        '"file:///etc/passwd">]>\n<algo name="&x;" ngpus="3"/>', ".xml")
    put("X_DEEP", "<algo>" + "<gpu>" * 200000 + "</gpu>" * 200000 + "</algo>", ".xml")
    put("X_HUGECNT", xml.replace('cnt="1"', f'cnt="{D5000}"', 1), ".xml")
    put("X_NEGID", xml.replace('<gpu id="1"', '<gpu id="-1"'), ".xml")
    put("X_PEER", xml.replace('send="1"', 'send="99"', 1), ".xml")
    put("X_DUPGPU", xml.replace('<gpu id="1"', '<gpu id="0"'), ".xml")
    put("X_CHANNELS", xml.replace('nchannels="1"', 'nchannels="1000000000"'), ".xml")
    put("X_NOTXML", "{not xml at all", ".xml")
    put("X_EMPTY_ALGO", '<algo name="e" proto="Simple" nchannels="1" nchunksperloop="3" '
        'ngpus="3" coll="allgather" inplace="0" outofplace="1" minBytes="0" maxBytes="0">'
        "</algo>", ".xml")
    put("X_STEP_HUGE", xml.replace('<step s="1"', '<step s="1000000000"', 1), ".xml")
    return files


def make_big_schedule(where):
    """A valid 1024-node schedule (BFB broadcast on hypercube:10, 5120 transfers)."""
    from topocoll.cli.main import main

    path = Path(where) / "big1024.json"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            main(["schedule", "hypercube:10", "-c", "broadcast", "-o", str(path)])
        except SystemExit as exc:
            assert not exc.code, "could not make the 1024-node schedule"
    return path


# --------------------------------------------------------------------------------- running

class _TooMuchWork(BaseException):
    """More Python calls than WORK_LIMIT (a BaseException: the CLI must not swallow it)."""


class _ProcessStarted(BaseException):
    """A hostile ``run`` started a process."""


@dataclasses.dataclass
class Outcome:
    code: object          # exit status, or the name of what stopped the run
    stdout: str
    stderr: str
    calls: int            # Python calls made, or -1 when the run died
    left: list            # files left in the case's folder
    escaped: str = ""     # an exception that escaped main, as "Type: message"


def _expand(args, inputs):
    return [str(inputs[a[1:]]) if a.startswith("@") and a[1:] in inputs else a for a in args]


#: set in the child when a guarded run tried to start a process (whatever it then raised)
_STARTED = []


@contextlib.contextmanager
def _no_processes():
    """Starting a process (multiprocessing, subprocess, fork) raises :class:`_ProcessStarted`."""
    import multiprocessing.process

    def refuse(*args, **kwargs):
        _STARTED.append(True)
        raise _ProcessStarted("a process was started")
    saved = [(multiprocessing.process.BaseProcess, "start"), (subprocess.Popen, "__init__"),
             (os, "fork"), (os, "posix_spawn"), (os, "posix_spawnp")]
    old = [(obj, name, getattr(obj, name)) for obj, name in saved if hasattr(obj, name)]
    for obj, name, _ in old:
        setattr(obj, name, refuse)
    try:
        yield
    finally:
        for obj, name, value in old:
            setattr(obj, name, value)


def _child(args, cwd, env, guard_processes, out_path, err_path, report_fd):
    """In the forked child: run ``topocoll ARGS`` with descriptors 0, 1 and 2 on /dev/null and
    two files, as a shell would, and write (code, calls, escaped) as JSON to ``report_fd``."""
    from topocoll.cli.main import main

    calls = [0]

    def count(frame, event, arg):
        if event == "call":
            calls[0] += 1
            if calls[0] > WORK_LIMIT:
                raise _TooMuchWork(f"more than {WORK_LIMIT} Python calls")
    code, escaped = "traceback", "the child ended early"
    try:
        import faulthandler
        faulthandler.disable()   # pytest's would print a crash's stack on the test's stderr
        os.setpgid(0, 0)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        for fd, path in ((1, out_path), (2, err_path)):
            target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(target, fd)
            os.close(target)
        sys.stdin = open(0, encoding="utf-8", closefd=False)
        sys.stdout = open(1, "w", encoding="utf-8", closefd=False)
        sys.stderr = open(2, "w", encoding="utf-8", closefd=False)
        sys.__stdout__, sys.__stderr__ = sys.stdout, sys.stderr
        os.chdir(cwd)
        os.environ.pop("COLUMNS", None)
        os.environ.update(env)
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        with open("/proc/self/statm") as fh:
            used = int(fh.read().split()[0]) * resource.getpagesize()
        cap = used + HEADROOM if hard == resource.RLIM_INFINITY else min(hard, used + HEADROOM)
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
        guard = _no_processes() if guard_processes else contextlib.nullcontext()
        with guard:
            sys.setprofile(count)
            try:
                main(args)
                code, escaped = 0, ""
            except SystemExit as exc:
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
                escaped = ""
            except _TooMuchWork as exc:
                code, escaped = "work", f"{type(exc).__name__}: {exc}"
            except _ProcessStarted as exc:
                code, escaped = "process", f"{type(exc).__name__}: {exc}"
            except BaseException as exc:   # noqa: B036 - what would be a traceback
                code, escaped = "traceback", f"{type(exc).__name__}: {str(exc)[:300]}"
            finally:
                sys.setprofile(None)
            if _STARTED:
                code, escaped = "process", f"a process was started (then {escaped or code})"
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException as exc:   # noqa: B036 - the harness itself failed in the child
        code, escaped = "traceback", f"harness: {type(exc).__name__}: {exc}"
    finally:
        try:
            os.write(report_fd, json.dumps({"code": code, "calls": calls[0],
                                            "escaped": escaped}).encode())
        finally:
            os._exit(0)


def forked(child, watchdog=None):
    """Run ``child(report_fd)`` in a forked copy of this process (it must end with
    ``os._exit``) and read what it writes to ``report_fd``: ``(chunks, hung, wait status)``;
    a child silent for ``watchdog`` seconds (default: :data:`WATCHDOG` as it is now, which a
    test may lower) is killed with its process group."""
    import select

    watchdog = WATCHDOG if watchdog is None else watchdog

    read_fd, write_fd = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:   # the child never returns
        os.close(read_fd)
        child(write_fd)
    os.close(write_fd)
    chunks, hung = [], False
    try:
        while True:
            ready, _, _ = select.select([read_fd], [], [], watchdog)
            if not ready:
                hung = True
                break
            chunk = os.read(read_fd, 65536)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(read_fd)
        if hung:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)   # anything the run left running in its group
    return chunks, hung, status


def _run_forked(args, cwd, env, guard_processes, scratch):
    """Run ``topocoll ARGS`` in a forked copy of this process (its imports already done, so a
    case costs no start-up), which a hang, a crash or a memory runaway cannot take down with
    it: (code, stdout, stderr, calls, escaped)."""
    out_path, err_path = Path(scratch) / "stdout", Path(scratch) / "stderr"
    chunks, hung, status = forked(
        lambda fd: _child(args, str(cwd), env, guard_processes, out_path, err_path, fd))
    stdout = out_path.read_bytes().decode("utf-8", "replace") if out_path.exists() else ""
    stderr = err_path.read_bytes().decode("utf-8", "replace") if err_path.exists() else ""
    if hung:
        return "hang", stdout, stderr, -1, f"no answer after {WATCHDOG} s"
    if not chunks:
        how = (f"signal {os.WTERMSIG(status)}" if os.WIFSIGNALED(status)
               else f"status {os.waitstatus_to_exitcode(status)}")
        return "crash", stdout, stderr, -1, f"the run died ({how})"
    report = json.loads(b"".join(chunks))
    return report["code"], stdout, stderr, report["calls"], report["escaped"]


def run_case(case, inputs, cwd, scratch, cache_dir):
    """Run ``case`` in the empty folder ``cwd`` (``scratch``: another folder, for the captured
    output); its :class:`Outcome`."""
    cwd = Path(cwd)
    args = _expand(case.args, inputs)
    env = {"TOPOCOLL_CACHE_DIR": str(cache_dir), **dict(case.env)}
    code, stdout, stderr, calls, escaped = _run_forked(args, cwd, env,
                                                       case.command in GUARDED, scratch)
    left = sorted(str(p.relative_to(cwd)) for p in cwd.rglob("*"))
    return Outcome(code, stdout, stderr, calls, left, escaped)


def _progress_line(case, line):
    """A line of the command's progress report (``LABEL: STAGE ...`` or ``LABEL: STAGE
    DONE/TOTAL``, printed after two quiet seconds: on a loaded machine the work before an
    error that only writing can find, such as a plot to /dev/full, takes that long)."""
    return line.startswith(case.args[0]) and ": " in line and \
        bool(re.search(r"( \.\.\.|\d+/\d+)$", line)) and not line.startswith("error")


def problems(case, outcome):
    """What is wrong with ``outcome`` (an empty list when the case ended as it must)."""
    found = []
    text = outcome.stdout + outcome.stderr
    if outcome.escaped or "Traceback" in text:
        found.append(("traceback" if outcome.code == "traceback" or "Traceback" in text
                      else str(outcome.code), outcome.escaped or "a traceback was printed"))
        return found
    if not isinstance(outcome.code, int):
        return [(str(outcome.code), f"ended by {outcome.code}")]
    if outcome.code not in case.codes:
        found.append(("exit", f"exit {outcome.code}, expected {sorted(case.codes)}"))
    lines = [line for line in outcome.stderr.splitlines() if line.strip()]
    if outcome.code == 1 and not lines:   # a report on stdout (verify, lint, compare's table)
        if not any(n.lower() in outcome.stdout.lower() for n in ("invalid",) + case.needles):
            found.append(("rule", "exit 1 with a report that says neither invalid nor why"))
    elif outcome.code != 0:
        said = [line for line in lines[:-1] if not _progress_line(case, line)] + lines[-1:]
        if len(said) != 1:
            found.append(("stderr", f"{len(said)} stderr lines besides progress, expected 1"))
        if lines and not (lines[-1].startswith("error:") or (outcome.code == 1 and
                                                             lines[-1].startswith("invalid"))):
            found.append(("stderr", "the last stderr line is not 'error: ...'"))
        if lines and case.needles and not any(n.lower() in lines[-1].lower()
                                              for n in case.needles):
            found.append(("rule", f"the error names none of {list(case.needles)[:8]}"))
    # import writes the schedule of a program it can run even where the runtime would refuse
    # the file (documented: the schedule is what the user came for) and says so with exit 1
    written_anyway = list(case.args[:1]) == ["import"] and outcome.code == 1
    if outcome.code != 0 and outcome.left and not written_anyway:
        found.append(("output", f"left behind: {outcome.left[:5]}"))
    if "--json" in case.args:
        if outcome.code == 2 and outcome.stdout.strip():
            found.append(("json", "output on stdout with exit 2"))
        if outcome.code == 0 or outcome.stdout.strip():
            try:
                json.loads(outcome.stdout)
            except ValueError as exc:
                found.append(("json", f"stdout is not one JSON document: {exc}"))
    return found


CASES = all_cases()
#: What the suite runs: every explicit case (the tracker's list and the files and environment
#: variables), and one in ``SAMPLE`` of the option-by-option and spec-by-spec matrix, chosen
#: by a hash of its id so the choice is the same on every machine; the whole table (about
#: eight minutes) is ``python benchmarks/hostile_inputs.py``.
SAMPLE = 12
TESTED = [case for case in CASES
          if not case.slow or any(h in case.id for h in HEAVY)
          or zlib.crc32(case.id.encode()) % SAMPLE == 0]


# --------------------------------------------------------------------------------- the tests

#: modules every case would otherwise import again in its forked child
WARM = ["numpy", "scipy.sparse", "scipy.sparse.csgraph", "scipy.optimize", "highspy",
        "networkx", "matplotlib", "rich.table", "xml.etree.ElementTree", "distributed"]


def warm_up():
    """Import, once in this process, what the children would each import: every command's
    module and the heavy libraries they use (a missing optional one is skipped)."""
    import importlib
    import pkgutil

    import topocoll

    for name in WARM:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)
    with contextlib.suppress(ImportError):
        import matplotlib
        matplotlib.use("Agg")
    for info in pkgutil.walk_packages(topocoll.__path__, "topocoll."):
        with contextlib.suppress(Exception):
            importlib.import_module(info.name)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    warm_up()
    where = tmp_path_factory.mktemp("hostile-inputs")
    files = make_inputs(where)
    files["BIG1024"] = make_big_schedule(where)
    return files


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("hostile-cache")


def _folders(tmp_path):
    cwd, scratch = tmp_path / "cwd", tmp_path / "scratch"
    cwd.mkdir()
    scratch.mkdir()
    return cwd, scratch


def test_the_table_is_large_and_reaches_every_command():
    assert len(CASES) >= 500
    assert len({case.id for case in CASES}) == len(CASES)
    commands = {name for name, _ in _leaves()}
    assert commands <= {case.command for case in CASES}, commands - {c.command for c in CASES}


def test_the_checks_can_fail(inputs, tmp_path, cache_dir):
    """A success where an error is expected, two stderr lines, an error naming no rule and a
    file left behind are each reported."""
    good = _case("probe/good", ["info", "ring:4", "--json"], (2,), ("x",))
    found = problems(good, run_case(good, inputs, *_folders(tmp_path), cache_dir))
    assert [kind for kind, _ in found] == ["exit"]
    fake = Outcome(2, "", "progress\nerror: bad size\n", 10, ["s.json"])
    kinds = {kind for kind, _ in problems(_case("probe/x", ["info"], (2,), ("nosuch",)), fake)}
    assert kinds == {"stderr", "rule", "output"}
    # the command's own progress lines before its error are not a second error line; a line
    # that only looks like one (another label, or not a stage) still is
    info = _case("probe/y", ["info"], (2,), ("size",))
    for stderr, ok in (("info: reading ...\ninfo: pricing 3/4\nerror: bad size\n", True),
                       ("simulate: reading ...\nerror: bad size\n", False),
                       ("info: reading\nerror: bad size\n", False)):
        kinds = [kind for kind, _ in problems(info, Outcome(2, "", stderr, 10, []))]
        assert (kinds == []) is ok, (stderr, kinds)


@pytest.mark.parametrize("planted, code", [("work", "work"), ("hang", "hang"),
                                           ("crash", "crash"), ("raise", "traceback"),
                                           ("fork", "process")])
def test_runaways_are_stopped_and_reported(inputs, tmp_path, cache_dir, monkeypatch, planted,
                                          code):
    """Planted in the command: endless Python calls, a sleep past the watchdog, a crash, an
    exception escaping main, a started process: each ends as that outcome, in the child."""
    import time

    import topocoll.cli.topology as module

    def planted_run(*args, **kwargs):
        if planted == "work":
            def deep():
                return None
            while True:
                deep()
        if planted == "hang":
            time.sleep(60)
        if planted == "crash":
            os.abort()
        if planted == "raise":
            raise IndexError("planted")
        if planted == "fork":
            subprocess.Popen(["true"])
    monkeypatch.setattr(module, "load_topology_arg", planted_run)
    if planted == "hang":
        monkeypatch.setattr(sys.modules[__name__], "WATCHDOG", 2)
    if planted == "work":
        monkeypatch.setattr(sys.modules[__name__], "WORK_LIMIT", 10_000)
    case = _case(f"probe/{planted}", ["info", "ring:4"])
    if planted == "fork":   # the guard is on for run: plant the start where run checks memory
        import topocoll.cli.run as run_module
        monkeypatch.setattr(run_module, "require_memory", planted_run)
        case = _case(f"probe/{planted}", ["run", "@S", "--nproc", "1"])
    outcome = run_case(case, inputs, *_folders(tmp_path), cache_dir)
    if planted == "fork" and outcome.code != "process":
        pytest.skip(f"could not plant a process start in run: {outcome.code} {outcome.stderr}")
    assert outcome.code == code, outcome
    assert problems(case, outcome)


@pytest.mark.parametrize("case", [pytest.param(case, id=case.id, marks=[pytest.mark.slow]
                                               if case.slow else []) for case in TESTED])
def test_hostile_input(case, inputs, tmp_path, cache_dir):
    outcome = run_case(case, inputs, *_folders(tmp_path), cache_dir)
    found = problems(case, outcome)
    shown = (f"topocoll {' '.join(repr(a)[:60] for a in case.args)} "
             f"[env {dict(case.env)}] -> {outcome.code} ({outcome.calls} calls)\n"
             f"--- stdout ---\n{outcome.stdout[:1500]}\n--- stderr ---\n{outcome.stderr[-1500:]}")
    assert not found, f"{found}\n{shown}"
