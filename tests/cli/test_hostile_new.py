"""Hostile inputs against the newest commands and options, on the harness of
``tests/cli/test_hostile.py`` (the same forked runs and the same checks: exit status, one
``error: ...`` line naming the rule, no traceback, nothing left behind, bounded work, and no
process started by ``run``, ``gossip run`` or ``emulate``):

- ``sweep``: ranges of --nodes and --degree, --workers, a Dask --scheduler's address, --chunk,
  the two time limits, its output folder;
- ``train-sim`` over several sizes on --workers or --scheduler;
- ``find --optimize`` on --workers or --scheduler (and ``compare``'s);
- ``emulate``, ``run --emulate`` and ``gossip run`` on an emulated network: every value here is
  refused before a namespace is made or a rank starts (the guard turns any start into a
  failure), so no case leaves anything in the kernel; many are refused after the check for
  privileges, and are skipped where this machine cannot emulate (no root, no user namespace,
  no pyroute2);
- the routed baselines (swing, bine, pat, rd, rankring): their options, and a routed schedule
  where a command cannot take one, broken, or on an emulated network.

Only one case reaches for a scheduler that does not answer, within a one-second --time-limit:
an unreachable one otherwise holds the command for the client's 30 s connect timeout.
``benchmarks/hostile_inputs.py`` runs this table after the first one.
"""

import contextlib
import dataclasses
import io
import json
from pathlib import Path

import pytest

from tests.cli.test_hostile import (
    D5000, _case, _folders, _words, make_big_schedule, make_inputs, problems, run_case, warm_up)

SWEEP = ["sweep", "-n", "16", "-d", "2", "--no-cache", "--no-evaluate", "--workers", "1"]
TRAIN = ["train-sim", "--workload", "resnet50", "--no-cache", "-n", "8,16"]
OPTIMIZE = ["find", "-n", "16", "-d", "4", "--no-cache", "--optimize", "--max-evaluations", "2"]
EMULATE = ["emulate", "ring:3", "--no-capacity-check"]
RUN_ON_NET = ["run", "@ROUTED", "--emulate", "--no-capacity-check", "--size", "64KiB"]
GOSSIP_ON_NET = ["gossip", "run", "ring", "--network", "ring:4", "--no-capacity-check",
                 "--size", "64KiB"]

#: scheduler addresses that are no address: each refused before any work or any connection
ADDRESSES = ["", " ", "nosuch", "127.0.0.1:8786", "tcp://", "tcp://:8786", "tcp://127.0.0.1",
             "tcp://127.0.0.1:", "tcp://127.0.0.1:abc", "tcp://127.0.0.1:0",
             "tcp://127.0.0.1:99999", "tcp://127.0.0.1:-1", "tcp://127.0.0.1:1/x",
             "tcp://[::1", "tcp://::1:8786", "inproc://x", "ucx://127.0.0.1:1", "nosuch://x:1",
             "TCP://127.0.0.1:1", "tcp://\x00:1", "tcp://127.0.0.1:8786\n", "tcp://a b:1",
             D5000, f"tcp://{D5000}:1", "tls://127.0.0.1:1"]
ADDRESS_NEEDLES = ("--scheduler", "scheduler", "address", "tls")
#: --nodes and --degree ranges that are no range, or name a size no network has
RANGES = ["", " ", ",", "16..", "..16", "16..8", "16..32:0", "16..32:-4", "16..32:x", "x..y",
          "16,,32", "nan", "inf", "1e3", "0x10", "16.5", "16..32..64", "16:2", "1048577",
          "16..1048577", D5000, f"16..{D5000}", f"16..32:{D5000}", "\x00", "8;16", "8 16"]
WORKERS_NEEDLES = ("workers", "worker processes", "memory limit")
RANGE_NEEDLES = ("expected sizes", "at most", "at least", ">= ", "nodes", "degree", "digits",
                 "NUL")


def _with(base, *pairs):
    """``base`` with each (option, value) set: an option already there is replaced."""
    args = list(base)
    for opt, value in pairs:
        if opt in args:
            i = args.index(opt)
            del args[i:i + 2]
        args += [opt, value]
    return args


def _shown(value):
    return value if len(value) < 40 else value[:12] + f"...({len(value)})"


def _sweep_cases():
    c = _case
    cases = []
    for opt in ("--nodes", "--degree"):
        short = "-n" if opt == "--nodes" else "-d"
        for value in RANGES:
            cases.append(c(f"sweep/{opt} {_shown(value)!r}", _with(SWEEP, (short, value)), (2,),
                           RANGE_NEEDLES))
    for value in ("1", "0", "-16", "-5..3", "0..1"):
        cases.append(c(f"sweep/--nodes {value!r}", _with(SWEEP, ("-n", value)), (2,),
                       ("nodes", "at least", ">= 2")))
    for value in ("0", "-1", "0..2", "2..1"):
        cases.append(c(f"sweep/--degree {value!r}", _with(SWEEP, ("-d", value)), (2,),
                       ("degree", "at least", ">= 1", "expected sizes")))
    free = SWEEP[:-2]   # --workers is its last option
    for value in ADDRESSES:
        cases.append(c(f"sweep/--scheduler {_shown(value)!r}",
                       free + ["--scheduler", value], (2,), ADDRESS_NEEDLES))
    for value in ("0", "-1", "x", "", "1.5", D5000):
        cases.append(c(f"sweep/--workers {_shown(value)!r}", _with(SWEEP, ("--workers", value)),
                       (2,), _words("--workers")))
        cases.append(c(f"sweep/--chunk {_shown(value)!r}", SWEEP + ["--chunk", value], (2,),
                       _words("--chunk")))
    for opt in ("--time-limit", "--cell-time-limit"):
        for value in ("0", "0s", "-1s", "nan", "-inf", "", "abc", "1e400min", D5000, "\x00"):
            cases.append(c(f"sweep/{opt} {_shown(value)!r}", SWEEP + [opt, value], (2,),
                           _words(opt) + ("digits", "NUL")))
    for value in ("/dev/full", "/dev/full/x", "", "@S", "/proc/atlas", "/dev/null"):
        cases.append(c(f"sweep/-o {value!r}", SWEEP + ["-o", value], (2,),
                       ("-o", "output", "folder", "directory", "file", "write", "exist",
                        value or "empty")))
    cases += [
        c("sweep/workers+scheduler", SWEEP + ["--scheduler", "tcp://127.0.0.1:8786"], (2,),
          ("not both",)),
        c("sweep/link+node-bandwidth", SWEEP + ["--link-bandwidth", "100Gbps",
                                                "--node-bandwidth", "100Gbps"], (2,),
          ("not both", "bandwidth")),
        c("sweep/algorithm=nosuch", SWEEP + ["-a", "nosuch"], (2,), ("algorithm", "nosuch")),
        # the only unreachable scheduler: the time limit bounds the connect as well
        c("sweep/scheduler-unreachable-time-limit=1s",
          free + ["--scheduler", "tcp://127.0.0.1:1", "--time-limit", "1s"], (2,),
          ("no dask scheduler answered", "tcp://127.0.0.1:1")),
        # the pool forks every worker at its first task: more than memory holds is refused
        c("sweep/workers=1000000000", _with(SWEEP, ("--workers", "1000000000")), (2,),
          WORKERS_NEEDLES),
        # absurd but legal: one chunk of the one cell (a grid of a million cells is legal
        # too, and takes what it takes: no case here)
        c("sweep/chunk=1000000000", SWEEP + ["--chunk", "1000000000"], (0,), (), slow=True),
        # every cell past its limit: exit 1, the failures in the report, one line on stderr
        c("sweep/cell-time-limit=1us-json", SWEEP + ["--cell-time-limit", "1us", "--json"],
          (1,), ("failed", "cell"), slow=True),
        c("sweep/cell-time-limit=1us", SWEEP + ["--cell-time-limit", "1us"], (1,),
          ("failed", "cell"), slow=True),
    ]
    return cases


def _train_sim_cases():
    c = _case
    cases = []
    for value in RANGES + ["8,", "0", "1", "-8", "0..4", "8,1048577"]:
        cases.append(c(f"train-sim/sizes --nodes {_shown(value)!r}", _with(TRAIN, ("-n", value)),
                       (2,), RANGE_NEEDLES))
    for value in ADDRESSES:
        cases.append(c(f"train-sim/sizes --scheduler {_shown(value)!r}",
                       TRAIN + ["--scheduler", value], (2,), ADDRESS_NEEDLES))
    for value in ("0", "-1", "x", "", D5000):
        cases.append(c(f"train-sim/sizes --workers {_shown(value)!r}", TRAIN + ["--workers", value],
                       (2,), _words("--workers")))
    one = _with(TRAIN, ("-n", "8"))
    cases += [
        c("train-sim/workers+scheduler", TRAIN + ["--workers", "2", "--scheduler",
                                                  "tcp://127.0.0.1:8786"], (2,), ("not both",)),
        c("train-sim/one-size-workers", one + ["--workers", "2"], (2,), ("several --nodes",)),
        c("train-sim/one-size-scheduler", one + ["--scheduler", "tcp://127.0.0.1:8786"], (2,),
          ("several --nodes",)),
        c("train-sim/sizes+topology", TRAIN + ["--topology", "ring:8"], (2,),
          ("--topology", "one cluster")),
        c("train-sim/sizes+schedule", TRAIN + ["--schedule", "@S"], (2,),
          ("--schedule", "one cluster")),
        c("train-sim/sizes+plot", TRAIN + ["--plot", "p.png"], (2,), ("--plot", "one --nodes")),
        c("train-sim/sizes-degree=0", TRAIN + ["-d", "0"], (2,), ("degree",)),
        c("train-sim/sizes-iterations=0", TRAIN + ["--iterations", "0"], (2,),
          ("iterations",)),
        c("train-sim/sizes-o=/dev/full", TRAIN + ["-o", "/dev/full"], (2,),
          ("/dev/full", "space", "write")),
        c("train-sim/sizes-workload=@WL_NAN", _with(TRAIN, ("--workload", "@WL_NAN")), (2,),
          ("nan", "finite", "size", "not a")),
        c("train-sim/sizes-workload=''", _with(TRAIN, ("--workload", "")), (2,),
          ("workload", "empty")),
        c("train-sim/sizes-workers=1000000000", TRAIN + ["--workers", "1000000000"], (2,),
          WORKERS_NEEDLES),
        c("train-sim/nodes=3..1048576", _with(TRAIN, ("-n", "3..1048576")), (2,),
          ("nodes", "sizes", "at most")),
        c("train-sim/sizes-degree=1000000000", TRAIN + ["-d", "1000000000"], (0, 1, 2),
          ("degree", "at most", "limit"), slow=True),
    ]
    return cases


def _optimize_cases():
    c = _case
    plain = OPTIMIZE[:6]   # no --optimize
    cases = [c(f"find/optimize --scheduler {_shown(v)!r}", OPTIMIZE + ["--scheduler", v], (2,),
               ADDRESS_NEEDLES) for v in ADDRESSES]
    for value in ("0", "-1", "x", "", D5000):
        cases.append(c(f"find/optimize --workers {_shown(value)!r}",
                       OPTIMIZE + ["--workers", value], (2,), _words("--workers")))
    cases += [
        c("find/workers-without-optimize", plain + ["--workers", "2"], (2,), ("--optimize",)),
        c("find/scheduler-without-optimize", plain + ["--scheduler", "tcp://127.0.0.1:8786"],
          (2,), ("--optimize",)),
        c("find/optimize-workers+scheduler", OPTIMIZE + ["--workers", "2", "--scheduler",
                                                         "tcp://127.0.0.1:8786"], (2,),
          ("not both",)),
        c("find/optimize-no-evaluate-workers", OPTIMIZE + ["--no-evaluate", "--workers", "2"],
          (2,), ("--no-evaluate",)),
        c("find/optimize-workers=1000000000", OPTIMIZE + ["--workers", "1000000000"], (2,),
          WORKERS_NEEDLES),
        c("find/optimize-workers=100000", OPTIMIZE + ["--workers", "100000"], (2,),
          WORKERS_NEEDLES),
        c("compare/workers=1000000000", ["compare", "ring:4", "--workers", "1000000000"], (2,),
          WORKERS_NEEDLES),
        c("synth/restarts-workers=1000000000", ["synth", "ring:4", "-c", "allgather",
                                                "--restarts", "4", "--workers", "1000000000"],
          (2,), WORKERS_NEEDLES),
        c("schedule/bfb-workers=1000000000", ["schedule", "ring:8", "-c", "allgather",
                                              "--workers", "1000000000"], (2,),
          WORKERS_NEEDLES),
        c("compare/scheduler=tcp://127.0.0.1:abc", ["compare", "ring:4", "--scheduler",
                                                    "tcp://127.0.0.1:abc"], (2,),
          ADDRESS_NEEDLES),
        c("compare/scheduler=inproc", ["compare", "ring:4", "--scheduler", "inproc://x"], (2,),
          ADDRESS_NEEDLES),
        c("compare/workers+scheduler", ["compare", "ring:4", "--workers", "2", "--scheduler",
                                        "tcp://127.0.0.1:8786"], (2,), ("not both",)),
    ]
    return cases


#: values that shape an emulated network, each refused (where and why)
SHAPING = [
    (("--link-bandwidth", "1bps"), ("rate", "bandwidth", "1bps")),
    (("--link-bandwidth", "1e12Gbps"), ("rate", "bandwidth")),
    (("--link-bandwidth", "10us"), ("bandwidth", "10us")),
    (("--link-bandwidth", "nan"), ("bandwidth", "nan")),
    (("--link-bandwidth", "0"), ("bandwidth", "positive", "0")),
    (("--scale", "1e-300"), ("rate", "scale")),
    (("--scale", "1e300"), ("rate", "scale")),
    (("--scale", "inf"), ("scale", "inf", "finite", "positive")),
    (("--scale", "nan"), ("scale", "nan", "finite", "positive")),
    (("--scale", "0"), ("scale", "0")),
    (("--latency", "11s"), ("latency", "0..10")),
    (("--latency", "1e9s"), ("latency", "0..10")),
    (("--latency", "nan"), ("latency", "nan")),
    (("--latency", "inf"), ("latency", "inf", "finite", "0..10")),
    (("--latency", "-1ms"), ("latency", "-1ms", "negative")),
    (("--latency", "1e400s"), ("latency", "1e400", "finite")),
    (("--latency", "1 parsec"), ("latency", "parsec")),
    (("--latency", ""), ("latency", "empty")),
    (("--mtu", "100"), ("mtu", "100", "1280")),
    (("--mtu", "70000"), ("mtu", "70000", "65535")),
]
#: networks that cannot be emulated (or that no host could hold)
NETWORKS = [("ring:1", ("2 nodes", "at least", "ring")), ("switch:1", ("endpoints", "switch")),
            ("", ("topolog", "spec", "empty")), ("nosuch:3", ("nosuch", "family", "topolog")),
            ("@MISSING", ("no such", "not exist", "missing")), ("@EMPTY", ("empty",)),
            ("@GARBAGE", ("json", "utf", "not a", "binary", "decode")),
            ("@TOPO_NAN", ("nan", "finite", "bandwidth")),
            ("ring:100000", ("memory", "limit", "node", "at most", "namespaces")),
            ("torus:100000x100000", ("memory", "limit", "node", "at most"))]


def _network_cases():
    c = _case
    cases = []
    for (opt, value), needles in SHAPING:
        for name, base in (("emulate", EMULATE), ("run-emulate", RUN_ON_NET),
                           ("gossip run-network", GOSSIP_ON_NET)):
            cases.append(c(f"{name}/{opt} {_shown(value)!r}", _with(base, (opt, value)), (2,),
                           needles + (opt,)))
    for spec, needles in NETWORKS:
        cases.append(c(f"emulate/network {_shown(spec)!r}", ["emulate", spec,
                                                             "--no-capacity-check"], (2,),
                       needles))
        cases.append(c(f"gossip run/network {_shown(spec)!r}",
                       _with(GOSSIP_ON_NET, ("--network", spec)), (2,), needles))
    cases += [
        c("emulate/no-topology", ["emulate"], (2,), ("TOPOLOGY",)),
        c("emulate/no-topology-json", ["emulate", "--json"], (2,), ("TOPOLOGY",)),
        c("emulate/force-without-clean", EMULATE + ["--force"], (2,), ("--force", "--clean")),
        c("emulate/shell+hold", EMULATE + ["--shell", "--hold"], (2,), ("not both",)),
        c("emulate/clean+topology", ["emulate", "ring:3", "--clean"], (2,), ("--clean",)),
        c("emulate/clean+check", ["emulate", "--clean", "--check"], (2,), ("--clean",)),
        c("emulate/clean+hold-force", ["emulate", "--clean", "--hold", "--force"], (2,),
          ("--clean",)),
        c("emulate/link-bandwidth+scale", EMULATE + ["--link-bandwidth", "1Gbps", "--scale",
                                                     "2"], (2,), ("not both",)),
        c("emulate/shell-node=3-of-3", EMULATE + ["--shell", "--node", "3"], (2,),
          ("--node", "0..2")),
        c("emulate/shell-node=1000000000", EMULATE + ["--shell", "--node", "1000000000"], (2,),
          ("--node", "0..2")),
        c("emulate/shell-node=5000digits", EMULATE + ["--shell", "--node", D5000], (2,),
          ("--node", "digits", "integer")),
        c("emulate/node=-1", EMULATE + ["--node", "-1"], (2,), ("--node", "-1")),
    ]
    return cases


def _run_on_network_cases():
    c = _case
    return [
        c("run-emulate/nproc=3", RUN_ON_NET + ["--nproc", "3"], (2,), ("--nproc", "one rank")),
        c("run-emulate/backend=nccl", RUN_ON_NET + ["--backend", "nccl"], (2,),
          ("--emulate", "gloo")),
        c("run-emulate/link-bandwidth+scale", RUN_ON_NET + ["--link-bandwidth", "1Gbps",
                                                            "--scale", "2"], (2,),
          ("not both",)),
        c("run-emulate/size=0", _with(RUN_ON_NET, ("--size", "0")), (2,), ("size",)),
        c("run-emulate/size=3B", _with(RUN_ON_NET, ("--size", "3B")), (2,),
          ("size", "element", "bytes")),
        c("run-emulate/size=1PiB", _with(RUN_ON_NET, ("--size", "1PiB")), (2,),
          ("memory", "limit", "size")),
        c("run-emulate/1024-nodes", ["run", "@BIG1024"] + RUN_ON_NET[2:], (2,),
          ("memory", "limit", "processes", "nodes")),
        c("run-emulate/time-limit=0s", RUN_ON_NET + ["--time-limit", "0s"], (2,),
          _words("--time-limit")),
        c("run-emulate/invalid", ["run", "@INVALID", "--emulate", "--no-capacity-check"], (1,),
          ("invalid",)),
        c("run-emulate/routing=nosuch", ["run", "@ROUTED_NOSUCH", "--emulate",
                                         "--no-capacity-check"], (1, 2), ("routing", "nosuch")),
        c("run-emulate/routed-split", ["run", "@ROUTED_SPLIT", "--emulate",
                                       "--no-capacity-check"], (1, 2),
          ("path", "route", "connected", "reach", "invalid")),
        c("run/link-bandwidth-without-emulate", ["run", "@ROUTED", "--link-bandwidth", "1Gbps"],
          (2,), ("--emulate",)),
        c("run/latency-without-emulate", ["run", "@ROUTED", "--latency", "1ms"], (2,),
          ("--emulate",)),
        c("run/scale-without-emulate", ["run", "@ROUTED", "--scale", "2"], (2,),
          ("--emulate",)),
        c("gossip run/no-nodes-no-network", ["gossip", "run", "ring"], (2,),
          ("--nodes", "--network")),
        c("gossip run/nodes-not-the-network's", GOSSIP_ON_NET + ["-n", "5"], (2,),
          ("--nodes", "endpoints")),
        c("gossip run/link-bandwidth-without-network", ["gossip", "run", "ring", "-n", "4",
                                                        "--link-bandwidth", "1Gbps"], (2,),
          ("--network",)),
        c("gossip run/link-bandwidth+scale", GOSSIP_ON_NET + ["--link-bandwidth", "1Gbps",
                                                              "--scale", "2"], (2,),
          ("not both",)),
        c("gossip run/network-shared-memory", GOSSIP_ON_NET + ["--transport", "shared_memory"],
          (2,), ("shared", "transport", "network")),
        c("gossip run/unknown-topology", ["gossip", "run", "nosuch", "-n", "4"], (2,),
          ("nosuch", "topolog")),
        c("gossip run/network-option=nosuch", GOSSIP_ON_NET + ["-O", "nosuch=1"], (2,),
          ("nosuch", "option", "parameter")),
        c("gossip run/network-size=1PiB", _with(GOSSIP_ON_NET, ("--size", "1PiB")), (2,),
          ("memory", "limit", "size")),
        c("gossip run/network-size=0", _with(GOSSIP_ON_NET, ("--size", "0")), (2,),
          ("size",)),
        c("gossip run/network-slice-size=0", GOSSIP_ON_NET + ["--slice-size", "0"], (2,),
          ("slice",)),
        c("gossip run/network-time-limit=0s", GOSSIP_ON_NET + ["--time-limit", "0s"], (2,),
          _words("--time-limit")),
        c("gossip run/nodes=1000000000", ["gossip", "run", "ring", "-n", "1000000000",
                                          "--size", "64KiB"], (2,),
          ("nodes", "memory", "limit", "cores", "processes", "at most")),
        c("gossip run/nodes=5000digits", ["gossip", "run", "ring", "-n", D5000], (2,),
          ("nodes", "digits", "integer", "range")),
        c("gossip run/size=1PiB", ["gossip", "run", "ring", "-n", "4", "--size", "1PiB"], (2,),
          ("memory", "limit", "size")),
    ]


def _routed_cases():
    c = _case
    make = ["schedule", "ring:8", "-c", "allreduce"]
    cases = []
    for algo, option, needles in [
            ("swing", "variant=nosuch", ("variant", "nosuch")),
            ("swing", "variant=", ("variant",)),
            ("swing", "multiport=maybe", ("multiport", "maybe")),
            ("swing", "multiport=", ("multiport",)),
            ("swing", "nosuch=1", ("nosuch",)),
            ("swing", "=", ("=", "KEY=VALUE", "option")),
            ("bine", "variant=latency", ("variant",)),
            ("bine", f"dims={D5000}", ("dims", "digits")),
            ("rd", "variant=nan", ("variant", "nan")),
            ("pat", "variant=latency", ("variant",)),
            ("rankring", "nosuch=1", ("nosuch",))]:
        made = make if algo != "pat" else make[:3] + ["allgather"]   # pat has no allreduce
        cases.append(c(f"schedule/{algo}-O-{_shown(option)}", made + ["-a", algo, "-O", option],
                       (2,), needles))
    for algo, collective in (("pat", "allreduce"), ("rankring", "broadcast"),
                             ("swing", "broadcast"), ("rd", "alltoall"), ("bine", "alltoall")):
        cases.append(c(f"schedule/{algo}-c-{collective}", ["schedule", "ring:8", "-c",
                                                           collective, "-a", algo], (2,),
                       (algo, collective)))
    cases += [
        c("schedule/swing-ring:1", ["schedule", "ring:1", "-c", "allreduce", "-a", "swing"],
          (2,), ("ring", "node", "at least")),
        c("schedule/rankring-ring:100000", ["schedule", "ring:100000", "-c", "allreduce",
                                            "-a", "rankring", "-o", "s.json"], (0, 2),
          ("memory", "limit", "transfers", "node"), slow=True),
        c("convert/routed", ["convert", "@ROUTED", "-o", "o.json", "--form", "symmetric"],
          (2,), ("routed",)),
        c("verify/routing=nosuch", ["verify", "@ROUTED_NOSUCH"], (1, 2),
          ("routing", "nosuch", "invalid")),
        c("evaluate/routing=nosuch", ["evaluate", "@ROUTED_NOSUCH", "--json"], (1, 2),
          ("routing", "nosuch", "invalid")),
        c("simulate/routing=nosuch", ["simulate", "@ROUTED_NOSUCH"], (1, 2),
          ("routing", "nosuch", "invalid")),
        c("export/routing=nosuch", ["export", "@ROUTED_NOSUCH", "-o", "o.xml"], (1, 2),
          ("routing", "nosuch", "invalid")),
        c("verify/routed-split", ["verify", "@ROUTED_SPLIT"], (1, 2),
          ("path", "route", "connected", "reach", "invalid")),
        c("evaluate/routed-split", ["evaluate", "@ROUTED_SPLIT"], (1, 2),
          ("path", "route", "connected", "reach", "invalid")),
        c("train-sim/schedule=routing-nosuch", ["train-sim", "--workload", "resnet50",
                                                "--schedule", "@ROUTED_NOSUCH", "--no-cache"],
          (1, 2), ("routing", "nosuch", "invalid")),
        c("compare/pat-allreduce", ["compare", "ring:8", "-a", "pat", "--json"], (0, 1, 2),
          ("pat", "allreduce", "invalid")),
    ]
    return cases


#: run --emulate imports torch (about 5 s a case) before its refusals: the others are slow
QUICK_ON_NETWORK = ("run-emulate/nproc=3", "run-emulate/--latency '11s'")


def all_cases():
    """This table, its ids unique."""
    cases = (_sweep_cases() + _train_sim_cases() + _optimize_cases() + _network_cases()
             + _run_on_network_cases() + _routed_cases())
    seen, out = set(), []
    for case in cases:
        if case.id not in seen:
            seen.add(case.id)
            heavy = case.id.startswith("run-emulate/") and case.id not in QUICK_ON_NETWORK
            out.append(dataclasses.replace(case, slow=True) if heavy else case)
    return out


CASES = all_cases()


# --------------------------------------------------------------------------------- the inputs

def make_routed_inputs(where):
    """A routed schedule (Swing's allreduce on ring:8: some peers three hops away), one whose
    routing names no rule, and one whose topology splits into two rings no route crosses;
    name -> path."""
    from topocoll.cli.main import main

    where = Path(where)
    path = where / "routed8.json"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            main(["schedule", "ring:8", "-c", "allreduce", "-a", "swing", "-o", str(path)])
        except SystemExit as exc:
            assert not exc.code, "could not make the routed schedule"
    doc = json.loads(path.read_text())
    assert doc.get("routing") == "shortest", "Swing on ring:8 is no longer routed"
    files = {"ROUTED": path}
    files["ROUTED_NOSUCH"] = where / "routed-nosuch.json"
    files["ROUTED_NOSUCH"].write_text(json.dumps({**doc, "routing": "nosuch"}))
    split = json.loads(json.dumps(doc))
    split["topology"]["links"] = [link for link in doc["topology"]["links"]
                                  if link["src"] // 4 == link["dst"] // 4]
    files["ROUTED_SPLIT"] = where / "routed-split.json"
    files["ROUTED_SPLIT"].write_text(json.dumps(split))
    return files


def make_all_inputs(where):
    """Every ``@NAME`` input of both tables, in folder ``where``."""
    where = Path(where)
    files = make_inputs(where)
    files["BIG1024"] = make_big_schedule(where)
    files.update(make_routed_inputs(where))
    return files


# --------------------------------------------------------------------------------- the tests

@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    warm_up()
    return make_all_inputs(tmp_path_factory.mktemp("hostile-new-inputs"))


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("hostile-new-cache")


def test_the_table_reaches_the_new_commands_and_options():
    from tests.cli.test_hostile import CASES as FIRST

    assert len(CASES) >= 150
    assert not {case.id for case in CASES} & {case.id for case in FIRST}, "ids shared"
    commands = {case.command for case in CASES}
    assert {"sweep", "train-sim", "find", "emulate", "run", "gossip run", "compare"} <= commands
    words = {arg for case in CASES for arg in case.args}
    for needed in ("--scheduler", "--workers", "--chunk", "--cell-time-limit", "--time-limit",
                   "-o", "--optimize", "--emulate", "--network", "--link-bandwidth", "--scale",
                   "--latency", "--mtu", "--transport", "swing", "bine", "pat", "rd",
                   "rankring", "@ROUTED", "@ROUTED_NOSUCH", "@ROUTED_SPLIT"):
        assert needed in words, needed


def test_a_network_case_that_would_build_is_stopped(inputs, tmp_path, cache_dir):
    """The guard holds for emulate: a network that could be built ends as a started
    process, never as namespaces."""
    case = _case("probe/emulate-builds", ["emulate", "ring:3"], (2,), ("x",))
    outcome = run_case(case, inputs, *_folders(tmp_path), cache_dir)
    assert outcome.code in ("process", 2), outcome
    if outcome.code == 2:   # no privileges here: refused before building, never built
        assert "root" in outcome.stderr or "namespace" in outcome.stderr, outcome
    assert problems(case, outcome)


#: what emulate, run --emulate and gossip run --network say where this machine cannot emulate
UNAVAILABLE = ("emulated networks need", "into a user namespace", "mount table private")


@pytest.mark.parametrize("case", [pytest.param(case, id=case.id, marks=[pytest.mark.slow]
                                               if case.slow else []) for case in CASES])
def test_hostile_input(case, inputs, tmp_path, cache_dir):
    outcome = run_case(case, inputs, *_folders(tmp_path), cache_dir)
    found = problems(case, outcome)
    if found and outcome.code == 2 and any(u in outcome.stderr for u in UNAVAILABLE):
        pytest.skip(f"this machine cannot emulate a network: {outcome.stderr.strip()[:200]}")
    shown = (f"topocoll {' '.join(repr(a)[:60] for a in case.args)} "
             f"[env {dict(case.env)}] -> {outcome.code} ({outcome.calls} calls)\n"
             f"--- stdout ---\n{outcome.stdout[:1500]}\n--- stderr ---\n{outcome.stderr[-1500:]}")
    assert not found, f"{found}\n{shown}"
