"""The command group: what ``topocoll --help`` lists is each command's own first docstring line,
and start-up (``import topocoll``, ``topocoll --help`` / ``--version``) loads no numpy."""

import subprocess
import sys

import click
import pytest

from topocoll.cli.main import COMMANDS, cli


@pytest.mark.parametrize("name", list(COMMANDS))
def test_short_help_is_the_commands_first_docstring_line(name):
    command = cli.get_command(click.Context(cli), name)
    assert command is not None and command.name == name
    first = command.help.strip().splitlines()[0].strip()
    assert COMMANDS[name][2] == first


def test_help_lists_every_command_in_order(run):
    r = run("--help")
    assert r.returncode == 0, r
    # a command's line starts with two spaces; its wrapped help is indented further
    listed = [line.split()[0] for line in r.stdout.split("Commands:")[1].splitlines()
              if line.startswith("  ") and not line.startswith("   ")]
    assert listed == list(COMMANDS)


def test_unknown_command_is_one_line(run):
    r = run("nosuchcommand")
    assert r.returncode == 2, r
    assert len(r.stderr_lines) == 1 and "nosuchcommand" in r.stderr, r


_PROBE = """
import sys
{code}
heavy = sorted(m for m in ("numpy", "scipy", "highspy", "networkx", "torch", "matplotlib")
               if m in sys.modules)
print("HEAVY:" + ",".join(heavy))
"""


@pytest.mark.parametrize("code", [
    "import topocoll",
    "import topocoll; topocoll.__version__",
    "from topocoll.cli.main import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass",
    "from topocoll.cli.main import main\ntry:\n    main(['--version'])\nexcept SystemExit:\n"
    "    pass",
], ids=["import", "version-attribute", "help", "version"])
def test_start_up_loads_nothing_heavy(code):
    assert _heavy_modules(code) == ""


def test_the_probe_sees_a_heavy_import():
    assert "numpy" in _heavy_modules("import topocoll; topocoll.build_topology('ring:4')")


def _heavy_modules(code):
    """The heavy libraries loaded after running ``code`` in a fresh interpreter."""
    out = subprocess.run([sys.executable, "-c", _PROBE.format(code=code)], capture_output=True,
                         text=True, check=True)
    return out.stdout.strip().splitlines()[-1].removeprefix("HEAVY:")
