"""A link of an emulated network taken down in the middle of a collective: the ranks whose
messages cross it give up within their timeout, and the run's error names the link by its
two nodes (read from the kernel, so it does not matter who took the link down)."""

import os
import re
import threading
import time

import pytest

from topocoll.emulate.network import EmulatedNetwork
from topocoll.errors import ProcessGroupError
from tests.emulate.conftest import needs_root

pytestmark = needs_root

RATE = "200Mbps"     # fast: each call takes milliseconds


def _calls_until_they_fail(rank, world_size, folder):
    """Allreduce until a call fails (rank 0 leaves a file once the first call went through)."""
    import torch

    from topocoll.runtime import ScheduleCollective
    from topocoll.synth import generate

    allreduce = ScheduleCollective(generate("ring:4", "allreduce"), timeout=3,
                                   slice_bytes=1 << 20, transport="network")
    x = torch.ones(1024)
    for call in range(100000):
        allreduce(x)
        if rank == 0 and call == 0:
            open(os.path.join(folder, "running"), "w").close()
    return "finished"


def _set_down(net, node, peer):
    """Set ``node``'s end of its cable to ``peer`` down, from inside ``node``'s namespace."""
    from pyroute2 import IPRoute

    from topocoll.emulate.system import in_namespace

    def down():
        with IPRoute() as ipr:
            index = ipr.link_lookup(ifname=net.plan.interface(node, peer))[0]
            ipr.link("set", index=index, state="down")

    in_namespace(net.namespace(node), down)


def _when_running(folder, action):
    """Run ``action()`` on a thread once the ranks' first call went through."""
    def body():
        deadline = time.monotonic() + 120
        while not os.path.exists(os.path.join(folder, "running")):
            if time.monotonic() > deadline:
                return
            time.sleep(0.02)
        action()

    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    return thread


def test_a_link_taken_down_mid_collective_is_named(tmp_path):
    from topocoll.runtime import run_local

    with EmulatedNetwork("ring:4", link_bandwidth=RATE, check_capacity=False) as net:
        assert net.links_down() == []
        thread = _when_running(str(tmp_path), lambda: _set_down(net, 2, 1))
        with pytest.raises(ProcessGroupError) as err:
            # the run's own limit is far off: the ranks' 3 s must end it
            run_local(_calls_until_they_fail, 4, (str(tmp_path),), network=net,
                      start_method="fork", timeout=120)
        thread.join()
        assert net.links_down() == [(1, 2)]
    text = str(err.value)
    assert text.splitlines()[0] == ("link 1-2 of the emulated network is down (messages "
                                    "across it are lost)"), text
    assert "timed out after" not in text, text      # the ranks gave up, not run_local
    # the ends of the cable wait for each other's messages (ring:4 goes both ways)
    assert re.search(r"rank ([12]) \(node \1\) did not exchange its message within 3 s",
                     text), text


def test_links_down_reads_the_kernel():
    with EmulatedNetwork("ring:3", link_bandwidth=RATE, check_capacity=False) as net:
        assert net.links_down() == []
        _set_down(net, 0, 2)            # one end down: the cable carries nothing
        assert net.links_down() == [(0, 2)]
