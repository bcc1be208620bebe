"""``topocoll synth``'s flags are the TEN option table's: every option is a flag, with the
table's default, and its help is the option's doc."""

import pytest

from topocoll import units
from topocoll.cli.synth import synth
from topocoll.synth.ten.options import TEN_OPTIONS

FLAGS = {param.name: param for param in synth.params}


@pytest.mark.parametrize("name", list(TEN_OPTIONS))
def test_every_ten_option_is_a_flag_with_the_tables_default_and_doc(name):
    assert name in FLAGS, f"TEN option {name} is not a flag of topocoll synth"
    flag = FLAGS[name]
    default = flag.default
    if name == "size":   # shown as the user types it, read through the same parser
        default = units.parse_size(default)
    assert default == TEN_OPTIONS[name].default, name
    doc = TEN_OPTIONS[name].doc
    assert flag.help.startswith(doc[0].upper() + doc[1:]), name


def test_the_ilp_only_flags_are_refused_with_the_greedy(run):
    r = run("synth", "ring:4", "-c", "allgather", "--window", "3", "--node-limit", "2")
    assert r.returncode == 2
    assert r.stderr_lines == ["error: --node-limit, --window apply to --method ilp only"]
