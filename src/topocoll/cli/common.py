"""Plumbing shared by every ``topocoll`` sub-command: one-line errors, unit options, progress
bars, consoles and JSON output. Sub-commands of a job live in their own module and import these."""

import functools
import json
import re
import threading
import time

import click

from .. import defaults, units
from ..errors import InvalidScheduleError, TopocollError

EXIT_INVALID = 1
EXIT_BAD_INPUT = 2


class _LazyConsole:
    """A rich ``Console(**options)``, made (and rich imported) when first used, so that a job
    that prints no table and no bar does not load rich (start-up time); ``setup(console)`` runs
    once it is made. Every attribute is the console's. ``is_terminal`` answers without making
    it when rich's answer is sure to be False: neither TTY_COMPATIBLE=1 nor FORCE_COLOR is set
    and the stream is not a tty (rich would then say False too)."""

    def __init__(self, setup=None, **options):
        vars(self).update(_options=options, _setup=setup, _console=None)

    def _made(self):
        if self._console is None:
            from rich.console import Console

            vars(self)["_console"] = Console(**self._options)
            if self._setup is not None:
                self._setup(self._console)
        return self._console

    @property
    def is_terminal(self):
        if self._console is None and not self._maybe_terminal():
            return False
        return self._made().is_terminal

    def _maybe_terminal(self):
        import os
        import sys

        if os.environ.get("TTY_COMPATIBLE") == "1" or "FORCE_COLOR" in os.environ:
            return True
        stream = sys.stderr if self._options.get("stderr") else sys.stdout
        isatty = getattr(getattr(stream, "rich_proxied_file", stream), "isatty", None)
        try:
            return bool(isatty is not None and isatty())
        except ValueError:   # a closed stream
            return False

    def __getattr__(self, name):
        return getattr(self._made(), name)

    def __setattr__(self, name, value):
        setattr(self._made(), name, value)

    def __enter__(self):
        return self._made().__enter__()

    def __exit__(self, *exc):
        return self._made().__exit__(*exc)


def _whole_tables(console):
    if not console.is_terminal:  # pipes and files get whole tables, not an 80-column squeeze
        console.width = 220


out_console = _LazyConsole(_whole_tables, highlight=False, soft_wrap=True)
err_console = _LazyConsole(stderr=True, highlight=False, soft_wrap=True)


class Fail(click.ClickException):
    """A one-line error with a chosen exit code, printed without a traceback."""

    def __init__(self, message, code=EXIT_BAD_INPUT):
        super().__init__(message)
        self.exit_code = code

    def show(self, file=None):
        click.echo(f"error: {self.message}", err=True)


class TopocollGroup(click.Group):
    """Turns topocoll's own errors and OS errors into one-line messages."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except InvalidScheduleError as exc:
            raise Fail(str(exc), EXIT_INVALID) from None
        except TopocollError as exc:
            raise Fail(str(exc)) from None
        except OSError as exc:
            raise Fail(f"{exc.filename or ''}: {exc.strerror}".lstrip(": ")) from None
        except MemoryError:
            raise Fail("out of memory") from None


def unit_callback(parser, what):
    def convert(ctx, param, value):
        if value is None:
            return None
        if isinstance(value, tuple):
            return tuple(convert(ctx, param, v) for v in value)
        try:
            return parser(value, what=what)
        except TopocollError as exc:
            raise click.BadParameter(str(exc)) from None
    return convert


def progress_bar(label, *, remaining=False):
    """Progress on stderr: a bar on a terminal, else plain lines (see :class:`ProgressLines`);
    ``(update(done, total), context manager)``. ``remaining`` adds the estimated time left."""
    if not err_console.is_terminal:
        lines = ProgressLines(label)
        return lines.update, lines
    from rich.progress import (BarColumn, Progress, TextColumn, TimeElapsedColumn,
                               TimeRemainingColumn)

    columns = [TextColumn("{task.description}"), BarColumn(),
               TextColumn("{task.completed}/{task.total}"), TimeElapsedColumn()]
    if remaining:
        columns.append(TimeRemainingColumn())
    bar = Progress(*columns, console=err_console, transient=True)
    task = bar.add_task(label, total=None)

    def update(done, total, *more):
        """``update(done, total)``, or ``update(stage, done, total)`` to name a new stage."""
        if more:
            stage, done, total = done, total, more[0]
            bar.update(task, description=f"{label}: {stage}", completed=done, total=total)
        else:
            bar.update(task, completed=done, total=total)
    return update, bar


class ProgressLines:
    """Progress as lines on stderr when it is not a terminal (a log, CI). Nothing is printed
    for the first :data:`QUIET_SECONDS`, so quick jobs and errors found at once stay silent
    (a bad input still gets its one-line error); after that, one line for the phase under way,
    one when a phase (a stage or a new total) begins, one at each quarter of it, and a last
    line with the elapsed time."""

    QUIET_SECONDS = 2.0

    def __init__(self, label):
        self.label = label
        self.start = None
        self.latest = None
        self.phase = None
        self.quarter = 0
        self.awake = False
        self.printed = False
        self._lock = threading.Lock()
        self._timer = None

    def __enter__(self):
        self.start = time.monotonic()
        self._timer = threading.Timer(self.QUIET_SECONDS, self.wake)
        self._timer.daemon = True
        self._timer.start()
        return self

    def __exit__(self, kind, value, tb):
        if self._timer is not None:
            self._timer.cancel()
        with self._lock:
            if self.printed and kind is None:
                self._line(f"done in {time.monotonic() - self.start:.1f} s")
        return False

    def wake(self):
        """End the quiet period: say what is under way (called by a timer)."""
        with self._lock:
            self.awake = True
            if self.latest is None:
                self._line("working ...")
            else:
                self._report(*self.latest)

    def _line(self, text):
        self.printed = True
        click.echo(f"{self.label}: {text}", err=True)

    def update(self, done, total, *more):
        """``update(done, total)``, or ``update(stage, done, total)`` for staged jobs."""
        stage = None
        if more:
            stage, done, total = done, total, more[0]
        with self._lock:
            self.latest = (stage, done, total)
            if self.awake:
                self._report(stage, done, total)

    def _report(self, stage, done, total):
        # a stage that only counts ("3 failed") is no new phase: a line per count would be a
        # line per task in a batch whose tasks fail
        phase = (re.sub(r"\d+", "#", stage) if stage else stage, total)
        what = f"{stage} " if stage else ""
        quarter = min(4, int(4 * done / total)) if total else 0
        if phase != self.phase:
            self.phase, self.quarter = phase, quarter
            self._line(f"{what}{done}/{total}" if total else f"{what}...")
        elif quarter > self.quarter:
            self.quarter = quarter
            self._line(f"{what}{done}/{total}")


def print_json(obj, *, err=False):
    """Print one JSON document: on stdout, or on stderr when stdout carries a file (``-o -``)."""
    click.echo(json.dumps(obj, indent=2, allow_nan=False, default=float), err=err)


def check_output_option(path, suffixes=(".json",)):
    """Check ``-o PATH`` before any work is done (see :func:`topocoll.fileio.check_output`)."""
    from ..fileio import check_output

    return check_output(path, suffixes=suffixes, what="-o")


def on_stdout(path):
    """Whether the output ``path`` is standard output: ``-``, or a name for the file standard
    output is open on (``/dev/stdout``, ``/dev/fd/1``...). Reports then go to stderr, so that
    standard output carries the file alone and nothing overwrites it."""
    import os
    import sys

    if path == "-":
        return True
    if not path:
        return False
    try:
        return os.path.samestat(os.stat(path), os.fstat(sys.stdout.fileno()))
    except (OSError, ValueError, AttributeError):   # no such file, or stdout has no descriptor
        return False


def check_output_folder(path, files=(), *, command):
    """Check ``-o FOLDER`` of a command that writes several files, before any work is done.

    The folder may be missing (the command creates it and its parents), but its nearest
    existing ancestor must be a writable folder; ``-``, an empty name and anything that exists
    and is not a folder (a regular file, a FIFO, a device) are refused. When the folder exists,
    each of ``files`` in it is checked like a single output (not a folder, writable).
    Returns ``path`` (``None`` stays ``None``)."""
    import os

    from ..fileio import check_output

    if path is None:
        return None
    if not path:
        raise Fail("-o name is empty")
    if path == "-":
        raise Fail(f"-o -: {command} writes several files; give a folder, not '-'")
    if os.path.lexists(path) and not os.path.isdir(path):
        raise Fail(f"-o {path}: not a folder ({command} writes several files into it)")
    ancestor = os.path.abspath(path)
    while not os.path.lexists(ancestor):
        ancestor = os.path.dirname(ancestor)
    if not os.path.isdir(ancestor):
        raise Fail(f"-o {path}: cannot create the folder: {ancestor} is not a folder")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise Fail(f"-o {path}: cannot write: folder {ancestor} is not writable")
    if ancestor == os.path.abspath(path):
        for name in files:
            check_output(os.path.join(path, name), what="-o")
    return path


def check_plot(path):
    """Check ``--plot FILE`` before any work is done (``None``: no plot). An empty name is an
    error rather than a silent "no plot"; the rest is
    :func:`topocoll.plotting.check_plot_target`."""
    if path is None:
        return None
    if not path:
        raise Fail("--plot name is empty")
    from ..plotting import check_plot_target

    check_plot_target(path)
    return path


def load_topology_arg(spec, bandwidth=None, latency=None, node_bandwidth=None):
    from ..topology import topology

    topo = topology(spec, bandwidth=bandwidth, latency=latency)
    if node_bandwidth is not None:
        topo = topo.with_node_bandwidth(node_bandwidth)
    return topo


_TOPO_OPTIONS = [
    click.option("--link-bandwidth",
                 callback=unit_callback(units.parse_bandwidth, "--link-bandwidth"),
                 help="Set every link's bandwidth, e.g. 25Gbps or 3.125GB/s."),
    click.option("--node-bandwidth",
                 callback=unit_callback(units.parse_bandwidth, "--node-bandwidth"),
                 help="Split each node's egress bandwidth evenly over its out-links."),
    click.option("--alpha", callback=unit_callback(units.parse_time, "--alpha"),
                 help="Set every link's latency, e.g. 10us."),
]


def _gamma(value, *, what):
    from ..schedule.reduction import parse_gamma   # deferred: the CLI's start-up time
    return parse_gamma(value, what=what)


#: ``--gamma``: the reduction cost of the commands that price schedules (docs/math.md).
gamma_option = click.option(
    "--gamma", callback=unit_callback(_gamma, "--gamma"), metavar="RATE",
    help="Reduction cost: each node's reduction throughput, e.g. 100GB/s (a bare number is "
         "seconds per byte) [default: 0, reductions are free].")


def topo_options(func):
    """The link options; ``--link-bandwidth`` and ``--node-bandwidth`` exclude each other."""
    @functools.wraps(func)
    def checked(*args, **kwargs):
        one_bandwidth(kwargs.get("link_bandwidth"), kwargs.get("node_bandwidth"))
        return func(*args, **kwargs)

    for option in reversed(_TOPO_OPTIONS):
        checked = option(checked)
    return checked


def cluster_bandwidth_options(note="as evaluate"):
    """``--link-bandwidth`` (default: the one default cluster's link speed) and
    ``--node-bandwidth`` (the NSDI 2025 paper's per-node convention) of the jobs that price
    whole clusters; ``note`` ends the first one's default in --help. The command checks that
    only one is given (:func:`one_bandwidth`)."""
    link = click.option(
        "--link-bandwidth", callback=unit_callback(units.parse_bandwidth, "--link-bandwidth"),
        help=f"Bandwidth of every link [default: "
             f"{units.format_bandwidth(defaults.LINK_BANDWIDTH)}, {note}].")
    node = click.option(
        "--node-bandwidth", callback=unit_callback(units.parse_bandwidth, "--node-bandwidth"),
        help="Instead of a link speed: egress bandwidth B of each node, split evenly over its "
             "links (the NSDI 2025 paper's convention, e.g. "
             f"{units.format_bandwidth(defaults.NODE_BANDWIDTH)}).")
    return lambda func: link(node(func))


def one_bandwidth(link_bandwidth, node_bandwidth):
    if link_bandwidth is not None and node_bandwidth is not None:
        raise Fail("give --node-bandwidth or --link-bandwidth, not both")


# --- one name per idea (docs/cli.md) ---------------------------------------------------------
# Every option has one name, listed in docs/cli.md. Names an option had before are kept as
# hidden aliases for one release: they parse as the new name, --help does not show them, errors
# name the spelling typed, and on a terminal using one prints a one-line note on stderr.
# tests/cli/test_vocabulary.py holds the options and docs/cli.md to each other.

def notes_wanted():
    """Whether to print notes on renamed options: on a terminal only, so that the logs and the
    one-line errors that scripts read stay as they were for the release the old names last."""
    return err_console.is_terminal


def _say_renamed(old, new):
    if notes_wanted():
        click.echo(f"note: {old} is now {new}; the old spelling goes away in the next release",
                   err=True)


class RenamedOption(click.Option):
    """An option that still answers to its old spellings (``old=("--method",)``; a boolean
    flag's pair as ``"--symmetric/--no-symmetric"``), hidden from ``--help`` and error hints.

    Use it as ``@click.option("-a", "--algorithm", "method", cls=RenamedOption, old=("--method",))``
    or through :func:`renamed_option`."""

    def __init__(self, param_decls=None, *, old=(), **attrs):
        super().__init__(param_decls, **attrs)
        self.old = tuple(old)
        self.old_opts, self.old_secondary_opts = [], []
        for spelling in self.old:
            first, _, second = spelling.partition("/")
            self.old_opts.append(first.strip())
            if second:
                self.old_secondary_opts.append(second.strip())
        if self.old_secondary_opts and not self.secondary_opts:
            raise TypeError(f"{self.name}: an old '--a/--b' spelling needs a '--a/--b' option")

    def get_error_hint(self, ctx):
        """Errors name the spelling the user typed, and the new one when it was an old one."""
        hint = super().get_error_hint(ctx)
        used = getattr(self, "_used", None)
        return f"'{used}' (now {hint})" if used else hint

    def add_to_parser(self, parser, ctx):
        self._used = None   # one parser per invocation: forget the last one's spelling
        super().add_to_parser(parser, ctx)
        if not self.old:
            return
        new_opts, new_secondary = self.opts, self.secondary_opts
        before = {**getattr(parser, "_long_opt", {}), **getattr(parser, "_short_opt", {})}
        try:   # the same parser entries, under the old names
            self.opts = self.old_opts
            self.secondary_opts = self.old_secondary_opts
            super().add_to_parser(parser, ctx)
        finally:
            self.opts, self.secondary_opts = new_opts, new_secondary
        table = {**getattr(parser, "_long_opt", {}), **getattr(parser, "_short_opt", {})}
        renames = [(o, self.opts[-1]) for o in self.old_opts]
        renames += [(o, self.secondary_opts[-1]) for o in self.old_secondary_opts]
        for old_name, new_name in renames:
            entry = table.get(old_name)
            if entry is not None and entry is not before.get(old_name):
                entry.process = self._noting(entry.process, old_name, new_name)

    def _noting(self, process, old_name, new_name):
        def process_and_note(value, state):
            self._used = old_name
            _say_renamed(old_name, new_name)
            return process(value, state)
        return process_and_note


def renamed_option(*param_decls, old, **attrs):
    """``click.option(*param_decls, **attrs)`` that also accepts the ``old`` spellings
    (hidden; a note on stderr when used)."""
    return click.option(*param_decls, cls=RenamedOption, old=old, **attrs)


class RenamedChoice(click.Choice):
    """A choice that also takes old spellings of its values (``old={"fp32": "float32"}``),
    hidden from ``--help``; using one prints a note on stderr."""

    def __init__(self, choices, *, old=None, **attrs):
        super().__init__(choices, **attrs)
        self.old = dict(old or {})

    def convert(self, value, param, ctx):
        if isinstance(value, str) and value in self.old:
            _say_renamed(value, self.old[value])
            value = self.old[value]
        return super().convert(value, param, ctx)


class LazyChoice(click.Choice):
    """A choice whose values ``load()`` returns when they are first needed (parsing, --help),
    so that defining a command does not import the table they come from (start-up time)."""

    def __init__(self, load, **attrs):
        self._load = load
        super().__init__((), **attrs)

    @property
    def choices(self):
        if self._choices is None:
            self._choices = tuple(self._load())
        return self._choices

    @choices.setter
    def choices(self, values):   # click.Choice.__init__ sets them; () means "load them later"
        self._choices = tuple(values) or None


_DURATION_UNITS = {"min": 60.0, "h": 3600.0}


def parse_duration(value, *, what="duration", allow_zero=True):
    """Seconds from a duration: ``"10us"``, ``"500ms"``, ``"30s"``, ``"5min"``, ``"2h"``, or a
    bare number of seconds. Every option that takes a length of time parses it here.

    >>> [parse_duration(text) for text in ("5min", "1.5h", "10us", "30")]
    [300.0, 5400.0, 1e-05, 30.0]
    """
    text = value.strip() if isinstance(value, str) else value
    scale = 1.0
    for unit, seconds in _DURATION_UNITS.items():
        if isinstance(text, str) and text.endswith(unit) and text[:-len(unit)].strip():
            text, scale = text[:-len(unit)], seconds
            break
    try:
        return units.parse_time(text, what=what, allow_zero=allow_zero) * scale
    except TopocollError as exc:
        if "unit" not in str(exc) and "not a number" not in str(exc):
            raise
        raise type(exc)(f"{what} {value!r} is not a duration: use e.g. 10us, 500ms, 30s, 5min "
                        "or 2h (a bare number is seconds)") from None


def duration_callback(what, *, allow_zero=True):
    """Callback of an option that takes a duration (see :func:`parse_duration`)."""
    return unit_callback(functools.partial(parse_duration, allow_zero=allow_zero), what)


def first_failure(report):
    """One line from a multi-rank failure report: its first line, and where that line only
    introduces a traceback (``rank 0 raised:``), the exception the traceback ends with."""
    lines = report.splitlines()
    head = lines[0] if lines else "a rank failed"
    if head.endswith(":"):
        nxt = next((i for i, line in enumerate(lines[1:], 1) if line.startswith("rank ")),
                   len(lines))
        body = [line.strip() for line in lines[1:nxt] if line.strip()]
        if body:
            head = f"{head} {body[-1]}"
    return head


def parse_range(text, what, most=1 << 20):
    """Integers from ``"16..256"`` (both ends in), ``"16..256:16"`` (a step), ``"2,4,8"`` or a
    mix (``"16..64,128"``), each at most ``most``.

    >>> parse_range("2..4,8,10..14:2", "--degree")
    [2, 3, 4, 8, 10, 12, 14]
    """
    out = []
    for part in str(text).split(","):
        part = part.strip()
        try:
            if ".." in part:
                lo, _, rest = part.partition("..")
                hi, _, step = rest.partition(":")
                lo, hi, step = int(lo), int(hi), int(step or 1)
                if step < 1 or hi < lo:
                    raise ValueError
            else:
                lo = hi = int(part)
                step = 1
        except ValueError:
            raise Fail(f"{what} {text[:40]!r}: expected sizes such as 16..256, 16..256:16 or "
                       "16,32,64 (the first at most the last, a step of at least 1)") from None
        if hi > most:
            raise Fail(f"{what} {text[:40]!r}: every value must be at most {most}")
        out += range(lo, hi + 1, step)
    return sorted(set(out))


def _scheduler_address(value, *, what):
    from ..batch.pools import check_address

    check_address(value)    # click's line names the option already: "scheduler must be ..."
    return value


#: Callback of ``--scheduler``: a malformed address is refused before any work (the cluster is
#: contacted only when the work begins, after a find or a cell may have run for minutes).
scheduler_callback = unit_callback(_scheduler_address, "--scheduler")


def _local_workers(value, *, what):
    from ..batch.pools import check_workers

    check_workers(value)
    return value


#: Callback of ``--workers``: more local processes than memory holds are refused before any
#: work (the pool forks them all at once, maybe after minutes of a find).
workers_callback = unit_callback(_local_workers, "--workers")


def batch_options(workers_help, scheduler_help):
    """``--workers`` (local processes) and ``--scheduler`` (a Dask cluster's address) of a
    command that runs batch work on :mod:`topocoll.batch`, each checked as it is parsed."""
    def decorate(command):
        command = click.option("--scheduler", metavar="ADDRESS",
                               callback=_alone(scheduler_callback, "workers"),
                               help=scheduler_help)(command)
        return click.option("--workers", type=click.IntRange(1),
                            callback=_alone(workers_callback, "scheduler"),
                            help=workers_help)(command)
    return decorate


def _alone(callback, other):
    """``callback``, refusing its option beside ``--OTHER`` (whichever click parses first)."""
    def check(ctx, param, value):
        value = callback(ctx, param, value)
        if value is not None and ctx.params.get(other) is not None:
            raise Fail("give --workers (local processes) or --scheduler (a Dask cluster), "
                       "not both")
        return value
    return check
