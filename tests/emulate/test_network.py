"""Emulated networks built in the kernel: every route reaches its node, a shaped link carries
its rate, teardown leaves nothing (after an exception, a signal, a killed rank), refusals are
one line."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from topocoll.emulate.network import EmulatedNetwork
from topocoll.emulate.runs import STATE_DIR, clean_leftovers, leftover_runs
from topocoll.errors import EmulationError, EmulationUnavailableError, ResourceLimitError
from tests.emulate.conftest import needs_root, our_namespaces

pytestmark = needs_root


def _read_routes():
    from pyroute2 import IPRoute

    with IPRoute() as ipr:          # made on this thread: inside its namespace
        names = {link["index"]: link.get_attr("IFLA_IFNAME") for link in ipr.get_links()}
        out = {}
        for route in ipr.get_routes(family=2, table=254):
            dst = route.get_attr("RTA_DST")
            if dst is not None and route["dst_len"] == 32:
                out[dst] = (route.get_attr("RTA_GATEWAY"), names[route.get_attr("RTA_OIF")])
    return out


def _installed_routes(net, node):
    """``{destination: (gateway, interface)}`` read back from the kernel."""
    from topocoll.emulate.system import in_namespace

    return in_namespace(net.namespace(node), _read_routes)


def test_a_torus_is_built_routed_and_taken_down():
    net = EmulatedNetwork("torus:4x4", link_bandwidth="25Mbps")
    t0 = time.monotonic()
    with net:
        built = time.monotonic() - t0
        assert net.check() == []                      # every node reaches every other
        plan = net.plan
        for node in (0, 5, 15):                       # the kernel holds the plan's routes
            routes = _installed_routes(net, node)
            for other in range(16):
                if other != node:
                    hop, via = plan.route(node, other)
                    assert routes[plan.address(other)] == (via, plan.interface(node, hop))
        run = net.run
        assert os.path.exists(os.path.join(STATE_DIR, f"{run}.json"))
        assert len([n for n in our_namespaces() if run in n]) == 16
    assert not [n for n in our_namespaces() if run in n]
    assert not os.path.exists(os.path.join(STATE_DIR, f"{run}.json"))
    print(f"built in {built:.2f} s")


def test_a_shaped_link_carries_its_rate():
    with EmulatedNetwork("ring:3", link_bandwidth="40Mbps") as net:
        measured = net.probe_link(0, 1, seconds=0.45)
        assert measured == pytest.approx(40e6 / 8, rel=0.10)


def test_heterogeneous_links_each_carry_their_own_rate():
    from topocoll.topology import Topology

    t = Topology(3, [0, 1, 1, 2], [1, 0, 2, 1], bandwidth=[4.0, 4.0, 1.0, 1.0])
    with EmulatedNetwork(t, link_bandwidth="48Mbps") as net:
        assert net.probe_link(0, 1, seconds=0.3) == pytest.approx(6e6, rel=0.10)
        assert net.probe_link(1, 2, seconds=0.3) == pytest.approx(1.5e6, rel=0.10)


def test_one_way_links_and_switches_route_every_pair():
    with EmulatedNetwork("kautz:2,2", link_bandwidth="20Mbps") as net:   # a digraph
        assert net.plan.directed
        assert net.check() == []
    with EmulatedNetwork("switch:6,2", link_bandwidth="20Mbps") as net:
        assert net.check() == []
        assert [e.node for e in net.endpoints()] == list(range(6))


def test_the_calibration_measures_what_the_links_do():
    with EmulatedNetwork("ring:4", link_bandwidth="40Mbps") as net:
        cal = net.calibration()
        assert cal is net.calibration()               # measured once
        assert cal.goodput_ratio == pytest.approx(1.0, abs=0.1)
        assert 0 < cal.alpha < 0.01
        assert cal.hop_delay_measured and cal.pairs == [(0, 1, 1), (0, 2, 2)]


def test_a_failure_while_building_leaves_nothing(monkeypatch):
    from topocoll.emulate import netlink

    real = netlink.NamespaceSocket.run
    calls = []

    def failing(self, batch):
        calls.append(1)
        if len(calls) == 6:
            raise EmulationError("node 5: injected failure")
        return real(self, batch)
    monkeypatch.setattr(netlink.NamespaceSocket, "run", failing)
    net = EmulatedNetwork("torus:3x3", link_bandwidth="20Mbps", check_capacity=False)
    with pytest.raises(EmulationError, match="injected"):
        net.build()
    assert net.describe()["state"] == "closed"      # and the autouse check: nothing left


def test_an_exception_inside_the_block_takes_the_network_down():
    with pytest.raises(KeyError):
        with EmulatedNetwork("ring:4", link_bandwidth="20Mbps", check_capacity=False):
            raise KeyError("boom")


# The signals as a terminal delivers them: a parent started under nohup or in a background job
# hands its children SIGHUP and SIGINT ignored, which no handler of ours may override.
_HOLDER = """
import signal, sys, time
signal.signal(signal.SIGINT, signal.default_int_handler)
signal.signal(signal.SIGHUP, signal.SIG_DFL)
from topocoll.emulate.network import EmulatedNetwork
with EmulatedNetwork("ring:4", link_bandwidth="20Mbps", check_capacity=False) as net:
    print(net.run, flush=True)
    time.sleep(60)
"""


def _holder():
    proc = subprocess.Popen([sys.executable, "-c", _HOLDER], stdout=subprocess.PIPE, text=True)
    run = proc.stdout.readline().strip()
    assert run and any(run in n for n in our_namespaces())
    return proc, run


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_a_signal_takes_the_network_down(sig):
    proc, run = _holder()
    proc.send_signal(sig)
    proc.wait(timeout=30)
    assert not any(run in n for n in our_namespaces())


def test_a_killed_run_is_cleaned_up_by_its_prefix_only():
    proc, run = _holder()
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert any(run in n for n in our_namespaces())            # SIGKILL: nothing could run
    assert run in [r.run for r in leftover_runs()]
    # a namespace of someone else's, with a name like ours but not ours, stays
    subprocess.run(["ip", "netns", "add", "topocollx-keep"], check=False)
    try:
        removed = clean_leftovers()
        assert run in [r.run for r in removed]
        assert not any(run in n for n in our_namespaces())
        if os.path.exists("/run/netns/topocollx-keep"):
            assert "topocollx-keep" in os.listdir("/run/netns")
    finally:
        subprocess.run(["ip", "netns", "del", "topocollx-keep"], check=False)


def test_a_live_run_is_not_cleaned_without_force():
    proc, run = _holder()
    try:
        assert run not in [r.run for r in clean_leftovers()]
        assert any(run in n for n in our_namespaces())
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_latency_without_netem_is_refused_in_one_line():
    from topocoll.emulate.capacity import probe_host
    from topocoll.emulate.system import NETNS_DIR

    if probe_host(65000, NETNS_DIR, seconds=0.05, try_netem=True).netem:
        with EmulatedNetwork("ring:3", link_bandwidth="20Mbps", latency="2ms") as net:
            assert net.check() == []
        return
    with pytest.raises(EmulationUnavailableError) as info:
        EmulatedNetwork("ring:3", link_bandwidth="20Mbps", latency="2ms").build()
    assert "netem" in str(info.value) and "\n" not in str(info.value)


def test_rates_the_host_cannot_carry_are_refused_or_scaled():
    # a share of the cores so small that any rate asked for is too much
    with pytest.raises(ResourceLimitError, match="use a link rate of at most"):
        EmulatedNetwork("torus:4x4", link_bandwidth="2Gbps", cpu_share=1e-4).build()
    net = EmulatedNetwork("torus:4x4", cpu_share=1e-3)          # the default rate: scaled
    with net:
        assert net.notes and "instead" in net.notes[0]
        assert max(c.rate_ab for c in net.plan.cables) < 25e6 / 8


_UNPRIVILEGED = """
import json
from topocoll.emulate import prepare_process    # before numpy: it starts threads
from topocoll.errors import TopocollError
try:
    prepare_process()
    from topocoll.emulate.network import EmulatedNetwork
    with EmulatedNetwork("ring:3", link_bandwidth="20Mbps") as net:
        print(json.dumps({"mode": net.mode, "failed": net.check(), "ranks": net.num_ranks}))
except TopocollError as exc:
    print(json.dumps({"error": str(exc)}))
"""


def test_without_the_capabilities_a_user_namespace_or_one_line_naming_what_is_missing():
    """A process without CAP_SYS_ADMIN and CAP_NET_ADMIN (root with every capability dropped
    but CAP_SETFCAP, which mapping uid 0 into a user namespace asks for, as an ordinary user
    mapping its own uid does not)."""
    import shutil

    if shutil.which("setpriv") is None:
        pytest.skip("emulation: setpriv (util-linux) is needed to drop capabilities")
    proc = subprocess.run(["setpriv", "--bounding-set=-all,+setfcap", "--inh-caps=-all",
                           sys.executable, "-c", _UNPRIVILEGED], capture_output=True,
                          text=True, timeout=120)
    assert "Traceback" not in proc.stderr, proc.stderr
    out = json.loads(proc.stdout)
    if "error" in out:
        assert "root" in out["error"] and "\n" not in out["error"]
    else:
        assert out == {"mode": "user namespace", "failed": [], "ranks": 3}


_THREADED = """
import json, numpy
from topocoll.emulate.system import enter_user_namespace
from topocoll.errors import TopocollError
try:
    enter_user_namespace()
    print(json.dumps({"entered": True}))
except TopocollError as exc:
    print(json.dumps({"error": str(exc)}))
"""


def test_a_process_with_threads_is_told_to_prepare_first():
    import shutil

    if shutil.which("setpriv") is None:
        pytest.skip("emulation: setpriv (util-linux) is needed to drop capabilities")
    proc = subprocess.run(["setpriv", "--bounding-set=-all,+setfcap", "--inh-caps=-all",
                           sys.executable, "-c", _THREADED], capture_output=True, text=True,
                          timeout=60, env=dict(os.environ, OPENBLAS_NUM_THREADS="2"))
    out = json.loads(proc.stdout)
    assert out.get("entered") or "prepare_process()" in out["error"]
