"""Fifty builds and teardowns of an emulated 8-node network in one process stay flat, and
leave no namespace, run record, veth, process or temporary file behind (root only: skipped
elsewhere with the reason, as every test of emulated networks)."""

from tests.emulate.conftest import needs_root
from tests.soak.soaks import emulate_soak, leftovers, problems

pytestmark = needs_root


def test_fifty_builds_of_an_eight_node_network_stay_flat():
    figures, left = emulate_soak(builds=50)
    assert figures["networks"] == 50
    assert figures["unreached"] == [], "a built network did not route every pair"
    found = problems(figures, "the building process") + leftovers(left)
    assert not found, "\n".join(found)
