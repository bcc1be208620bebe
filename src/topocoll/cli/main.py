"""The ``topocoll`` command. This module only assembles the group: each job's sub-commands live
in their own module (``cli/<job>.py``), imported when the sub-command runs, so that
``topocoll --help`` and ``topocoll --version`` load neither numpy nor the solvers.

Bad input ends with a one-line ``error: ...`` on stderr and exit status 2; ``verify`` exits 1
for a schedule that is invalid. Tables go to stdout, progress to stderr, ``--json`` prints JSON.
"""

import importlib
import re
import sys

import click

from .. import __version__
from .common import (Fail, TopocollGroup)

__all__ = ["cli", "main", "COMMANDS"]

#: sub-command -> (module under topocoll.cli, attribute, the one line ``topocoll --help`` shows;
#: a test checks that it is the command's own first docstring line)
COMMANDS = {
    "topologies": ("topology", "topologies", "List the topology families and their spec syntax."),
    "info": ("topology", "info", "Facts about a topology: nodes, links, degrees, diameter, Moore "
             "depth."),
    "schedule": ("schedule", "schedule", "Make a schedule for COLLECTIVE on TOPO (a spec such as "
                 "torus:4x4, or a file)."),
    "verify": ("schedule", "verify", "Check a schedule file; exit 0 iff it is valid, else list "
               "the first violations."),
    "evaluate": ("schedule", "evaluate", "Price a schedule file: T_L, T_B, time, lower bounds "
                 "and optimality flags."),
    "convert": ("convert", "convert", "Convert a schedule FILE between the explicit and the "
                "symmetric form."),
    "compare": ("compare", "compare", "Verify and price schedules side by side on the same "
                "latency and bandwidth."),
    "survey": ("compare", "survey", "BFB allreduce on several topologies of N nodes next to "
               "bounds and the ring allreduce."),
    "find": ("find", "find", "The best topology and allreduce schedule for N nodes of degree d "
             "and a workload."),
    "fabric": ("fabric", "fabric", "Cut one fabric of degree d into per-job subclusters and "
               "pick each job's topology."),
    "sweep": ("sweep", "sweep", "The finder for every N and d of a grid: pick, bound ratio and "
              "runner-up per cell."),
    "synth": ("synth", "synth", "Synthesize a schedule on TOPO through the time-expanded "
              "network (TACOS)."),
    "simulate": ("synth", "simulate", "Time schedule FILES in the link model (TACOS); several "
                 "files share one network."),
    "alltoall": ("alltoall", "alltoall", "Uniform all-to-all throughput of TOPO: lambda, its "
                 "time, a certificate and the bounds."),
    "rewire": ("rewire", "rewire", "Rewire TOPO by degree-preserving edge swaps, keeping a swap "
               "when the objective drops."),
    "alltoall-steps": ("alltoall_steps", "alltoall_steps", "The step-indexed all-to-all LP of "
                       "TOPO: a schedule of S steps and its time."),
    "alltoall-design": ("design", "alltoall_design", "The d-regular topology on N nodes with the "
                        "highest all-to-all throughput (ILP)."),
    "gossip": ("gossip", "gossip", "Decentralized (gossip) averaging: topologies, convergence "
               "and cost."),
    "export": ("interop", "export", "Export schedule FILE as an MSCCL XML program for the GPU "
               "runtimes and simulators."),
    "import": ("interop", "import_", "Import an MSCCL XML FILE (msccl-tools, TACCL, TE-CCL, "
               "TACOS) as a schedule file."),
    "lint": ("interop", "lint", "Check an MSCCL XML FILE: will the runtime accept it, and is it "
             "a correct collective?"),
    "train-sim": ("trainsim", "train_sim", "Simulate data-parallel or hybrid training: compute "
                  "overlapped with collectives."),
    "run": ("run", "run", "Run a schedule FILE on torch.distributed; time it against torch's "
            "own collective."),
    "fit-model": ("fitmodel", "fit_model", "Fit alpha, 1/beta (and gamma) to measured runs by "
                  "least squares."),
    "emulate": ("emulate", "emulate", "Build TOPOLOGY as an emulated network (namespaces, "
                "shaped links, routes); take it down."),
}


class _LazyGroup(TopocollGroup):
    """A group whose sub-commands are imported when one of them is used."""

    def list_commands(self, ctx):
        return list(COMMANDS)

    def get_command(self, ctx, name):
        entry = COMMANDS.get(name)
        if entry is None:
            return None
        module = importlib.import_module(f"{__package__}.{entry[0]}")
        return getattr(module, entry[1])

    def format_commands(self, ctx, formatter):
        with formatter.section("Commands"):
            formatter.write_dl([(name, short) for name, (_, _, short) in COMMANDS.items()])


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="topocoll")
def cli():
    """Design network topologies and collective schedules; verify and price them.

    \b
    topocoll topologies                                   families and their parameters
    topocoll info TOPO                                    size, degree, diameter, Moore depth
    topocoll schedule TOPO -c allreduce -a bfb -o s.json  make a schedule
    topocoll verify s.json                                exit 0 iff valid; says why not
    topocoll evaluate s.json --size 1MiB                  T_L, T_B, time, bounds, flags
    topocoll convert s.json -o r.json --form symmetric    one transfer per orbit (tori, ...)
    topocoll survey --nodes 64                            BFB on the main topologies of N nodes
    topocoll compare torus:8x8 ring:64 s.json             schedules side by side, same network
    topocoll find --nodes 1024 --degree 4 -o out         best topology + schedule for a cluster
    topocoll fabric --jobs 64,32,32 -d 4                  one fabric, a topology per job
    topocoll train-sim --model resnet50 --nodes 64        a training iteration, compute + allreduce
    topocoll synth TOPO -c allgather -o s.json            TEN (TACOS) synthesis, any network
    topocoll simulate s.json --size 1GiB                  link-model (TACOS) timing
    topocoll alltoall TOPO --json                         all-to-all throughput LP and bounds
    topocoll rewire TOPO -o t.json                        degree-keeping swaps for all-to-all
    topocoll gossip info one-peer-exp --nodes 16          gossip topologies, rho, cost
    topocoll run s.json --nproc 4 --check                 run it on torch.distributed
    topocoll emulate torus:4x4 --check                    the topology as a real network
    topocoll run s.json --emulate --check                 run it on that network, vs the model
    topocoll fit-model runs.json                          alpha, beta (gamma) fitted to runs
    topocoll export s.json -o s.xml                       MSCCL XML for the GPU runtimes
    topocoll lint s.xml                                   will the runtime accept it? correct?
    topocoll import s.xml -o s.json                       any MSCCL program as a schedule
    """
    _check_environment()


def _check_environment():
    """Refuse a bad limit in the environment before any work, whatever the command (a command
    that never reaches a guarded allocation would otherwise ignore it)."""
    from ..errors import TopocollError
    from ..fileio import max_file_bytes
    from ..limits import memory_limit

    try:
        memory_limit()
        max_file_bytes()
    except TopocollError as exc:
        raise Fail(str(exc)) from None


def main(argv=None):
    """Entry point of the ``topocoll`` console script: errors are one line, never a traceback."""
    try:
        code = cli.main(args=argv, prog_name="topocoll", standalone_mode=False)
    except click.exceptions.Exit as exc:
        code = exc.exit_code
    except click.ClickException as exc:  # usage errors and ours: one line, no usage banner
        message = exc.format_message() if not isinstance(exc, Fail) else exc.message
        # click lists a choice's values on lines of their own: one line, always
        click.echo(f"error: {' '.join(message.split())}", err=True)
        code = exc.exit_code
    except click.exceptions.Abort:
        click.echo("error: aborted", err=True)
        code = 130
    except KeyboardInterrupt:
        click.echo("error: interrupted", err=True)
        code = 130
    except ValueError as exc:   # two refusals of Python's own, wherever a value meets them
        rule = _python_refusal(exc, sys.argv[1:] if argv is None else list(argv))
        if rule is None:
            raise
        click.echo(f"error: {rule}", err=True)
        code = 2
    sys.exit(code or 0)


def _python_refusal(exc, args):
    """The rule behind a ValueError that Python raises on hostile input in any parser (an
    option's type, a spec, an XML attribute), or None for any other error; it names the
    option that carried the value where the command line shows it."""
    text = str(exc)
    if "Exceeds the limit" in text and "integer string conversion" in text:
        limit = sys.get_int_max_str_digits()
        where = ""
        for i, arg in enumerate(args):
            if re.search(r"\d{%d}" % (limit + 1), str(arg)):
                name = str(arg).split("=", 1)[0] if str(arg).startswith("-") else \
                    (args[i - 1] if i and str(args[i - 1]).startswith("-") else "")
                where = f"{name}: " if name else ""
                break
        return (f"{where}a number has more than {limit} digits; no count or size topocoll "
                "takes is that long")
    if "embedded null byte" in text:
        return "a file name or value cannot contain a NUL character"
    return None


if __name__ == "__main__":
    main()
