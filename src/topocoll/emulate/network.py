"""A topology as a network of the kernel: namespaces, shaped veth cables and static routes.

:class:`EmulatedNetwork` builds the plan of :mod:`~topocoll.emulate.plan` with netlink
(pyroute2) and takes all of it down again on exit, on an exception, on SIGTERM or SIGHUP (it
turns them into ``SystemExit`` while it stands, where nobody else handles them), and at
interpreter exit. Ranks run inside it through
:func:`topocoll.runtime.run_local` (``network=``), each process entering its node's namespace
(:meth:`Endpoint.enter`) before it opens a socket.

Per namespace it sets (:data:`SYSCTLS`, :data:`TCP_SYSCTLS`): IPv4 forwarding on (messages
between non-neighbours are forwarded by the nodes between), reverse-path filtering off (a
node's one address sits on all its interfaces), ICMP redirects off, and TCP tuned so that a busy link stays busy, as the
model assumes: no slow start after idle (a link that idles between steps keeps its window),
large receive windows (a window of one 64 KB frame would stall a link whose queue holds a few
frames), Reno congestion control (built into every kernel and allowed in every namespace; BBR's
probing phases left links idle for moments: 7% over the model on a 4x4 torus, against 2% with
Reno) and, on every route, no delayed acknowledgements (``quickack``).

Every shaper is a ``tbf`` qdisc whose bucket holds one or two frames (``burst``): larger
buckets let a link that idled send faster than its rate for a while, which the model does not
know.
"""

import atexit
import math
import os
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass

from ..errors import EmulationError, EmulationUnavailableError, ResourceLimitError, SpecError
from ..results import as_progress
from ..units import (format_bandwidth, format_time, parse_bandwidth, parse_time, real_number,
                     whole_number)
from .plan import DEFAULT_MTU, NetworkPlan, frame_bytes
from ..topology import topology as build_topology
from .calibrate import calibrate
from .capacity import CPU_SHARE, fit_scale, probe_host, required_cores
from .netlink import Batch, NamespaceSocket, Templates
from .probe import reach_all, time_transfers
from .runs import (forget_run, namespace_name, new_run_id, processes_in, record_run,
                   remove_namespace)
from .system import (NETNS_DIR, enter_namespace, prepare_process, release_folder,
                     write_sysctls)

__all__ = ["EmulatedNetwork", "Endpoint", "DEFAULT_LINK_BANDWIDTH", "SYSCTLS", "TCP_SYSCTLS"]

#: The emulated rate of the fastest link when neither a rate nor a scale is given (25 Mbit/s).
DEFAULT_LINK_BANDWIDTH = 25e6 / 8
#: What every namespace sets (see the module text).
SYSCTLS = {"net.ipv4.ip_forward": 1,
           "net.ipv4.conf.all.rp_filter": 0, "net.ipv4.conf.default.rp_filter": 0,
           "net.ipv4.conf.all.send_redirects": 0, "net.ipv4.conf.default.send_redirects": 0,
           "net.ipv4.conf.all.accept_redirects": 0,
           "net.ipv4.conf.default.accept_redirects": 0}
#: TCP tuning every namespace asks for (see the module text); a kernel that refuses one of them
#: still gets a working network, and :attr:`EmulatedNetwork.notes` says which.
TCP_SYSCTLS = {"net.ipv4.tcp_slow_start_after_idle": 0,
           "net.ipv4.tcp_congestion_control": "reno",
           "net.ipv4.tcp_rmem": "4096 8388608 33554432",
           "net.ipv4.tcp_wmem": "4096 1048576 16777216"}
#: A tbf queue holds this many seconds of its rate (and at least 64 frames): TCP's own limits
#: (small queues, socket buffers) keep it far from full, and a drop would cost a retransmission
#: timeout that no model charges.
_QUEUE_SECONDS = 1.0
#: The largest packet TCP hands a veth (a GSO packet): a shaper's bucket holds at least one, or
#: it cuts them up (CPU time).
_GSO_BYTES = 65536 + 14


@dataclass(frozen=True)
class Endpoint:
    """Where rank ``rank`` runs: its ``node``, the ``namespace`` (a path), the ``interface``
    gloo binds to and the node's ``address``. It pickles, so spawned processes receive it."""

    rank: int
    node: int
    namespace: str
    interface: str
    address: str

    def enter(self):
        """Move this process (its calling thread, and every thread and socket it makes
        afterwards) into the node's namespace, and point gloo at its interface."""
        enter_namespace(self.namespace)
        os.environ["GLOO_SOCKET_IFNAME"] = self.interface


def _nice_rate(rate):
    """``rate`` rounded down to 1, 2 or 5 times a power of ten bits per second."""
    bits = rate * 8
    power = 10 ** math.floor(math.log10(bits))
    step = max(m for m in (1, 2, 5) if m * power <= bits)
    return step * power / 8


class EmulatedNetwork:
    """A topology built as kernel namespaces, shaped links and routes (see the module text).

    Parameters
    ----------
    topology : Topology, str or path
        The network: a spec (``"torus:4x4"``, ``"switch:16"``), a topology file or a
        :class:`~topocoll.topology.Topology`; heterogeneous and one-way links and switches
        are emulated as they are.
    link_bandwidth : float or str, optional
        The emulated rate of the topology's fastest link (``"25Mbps"``); every other link keeps
        its ratio to it.
    scale : float, optional
        Emulated rate = topology bandwidth x ``scale`` (instead of ``link_bandwidth``).
        With neither, the fastest link gets :data:`DEFAULT_LINK_BANDWIDTH` (25 Mbit/s), or less
        where the host cannot carry that (then :attr:`notes` says so).
    mtu : int
        MTU of every link (default 65,000: large frames, see docs/emulate.md).
    latency : float or str, optional
        Delay per link (``netem``); refused where the kernel has no netem.
    check_capacity : bool
        Probe the host first and refuse (a rate asked for) or scale down (the default rate) a
        network whose links at full load would take more than ``cpu_share`` of the cores.
    cpu_share : float
        See ``check_capacity``.
    progress : callable, optional
        ``progress(done, total, stage=...)`` while building.

    Examples
    --------
    >>> net = EmulatedNetwork("torus:4x4", link_bandwidth="25Mbps")
    >>> net.plan.num_ranks, len(net.plan.cables), format_bandwidth(net.plan.rate(0, 1))
    (16, 32, '25Mbps')

    ``with net:`` builds it (root or an unprivileged user namespace needed) and takes it down.
    """

    def __init__(self, topology, *, link_bandwidth=None, scale=None, mtu=DEFAULT_MTU,
                 latency=None, check_capacity=True, cpu_share=None, progress=None):
        topo = build_topology(topology)
        if link_bandwidth is not None and scale is not None:
            raise SpecError("give link_bandwidth or scale, not both")
        fastest = float(topo.bandwidth.max()) if topo.num_links else 1.0
        self.explicit_rate = link_bandwidth is not None or scale is not None
        if link_bandwidth is not None:
            scale = parse_bandwidth(link_bandwidth, what="link bandwidth") / fastest
        elif scale is not None:
            scale = real_number(scale, "scale", above=0)
        else:
            scale = DEFAULT_LINK_BANDWIDTH / fastest
        # the MTU's range is veth's, checked by the plan
        mtu = whole_number(mtu, "the MTU (bytes)", None)
        self.plan = NetworkPlan(topo, scale=float(scale), mtu=mtu)
        self.latency = None if latency is None else parse_time(latency, what="latency")
        if self.latency is not None and not 0 <= self.latency <= 10.0:
            raise SpecError(f"the latency per link must be 0..10 s, got {latency!r}")
        self.check_capacity = bool(check_capacity)
        self.cpu_share = CPU_SHARE if cpu_share is None else float(cpu_share)
        if not 0 < self.cpu_share <= 1:
            raise SpecError(f"cpu_share must be in (0, 1], got {cpu_share!r}")
        self.progress = progress
        self.notes = []
        self.run = self.mode = self.capacity = self.build_seconds = None
        self._dir = None
        self._paths = {}
        self._links = {}
        self._state = "new"
        self._signals = {}
        self._calibration = None

    # ----------------------------------------------------------------- facts

    @property
    def progress(self):
        """The progress callback while building (any shape :func:`~topocoll.results.
        as_progress` takes; settable)."""
        return self._progress

    @progress.setter
    def progress(self, callback):
        self._progress = as_progress(callback)

    @property
    def topology(self):
        return self.plan.topology

    @property
    def num_ranks(self):
        return self.plan.num_ranks

    def __repr__(self):
        return (f"EmulatedNetwork({self.topology.name!r}, ranks={self.num_ranks}, "
                f"{self._state})")

    def namespace(self, node):
        """The path of ``node``'s namespace (built networks only)."""
        self._require_built()
        return self._paths[int(node)]

    def endpoint(self, rank):
        """The :class:`Endpoint` of ``rank``."""
        self._require_built()
        node = self.plan.ranks[rank]
        interface = self.plan.interfaces(node)[0][0]
        return Endpoint(rank, node, self._paths[node], interface, self.plan.address(node))

    def endpoints(self):
        return [self.endpoint(r) for r in range(self.num_ranks)]

    def shell_lines(self):
        """One command per node that opens a shell inside it."""
        self._require_built()
        if self.mode == "root":
            return [f"ip netns exec {os.path.basename(p)} bash  # node {node}"
                    + (" (switch)" if node in self.plan.switches else "")
                    for node, p in sorted(self._paths.items())]
        return [f"node {node}: private to process {os.getpid()} (user namespace); use "
                f"'topocoll emulate --shell'" for node in sorted(self._paths)]

    def describe(self):
        """A JSON-ready summary of the network as built (or as planned)."""
        out = self.plan.describe()
        out.update(run=self.run, mode=self.mode, state=self._state,
                   latency=self.latency, build_seconds=self.build_seconds,
                   capacity=None if self.capacity is None else self.capacity.to_dict(),
                   notes=list(self.notes))
        if self._state == "built":
            out["namespaces"] = {str(k): v for k, v in sorted(self._paths.items())}
        return out

    def _require_built(self):
        if self._state != "built":
            raise EmulationError(f"the emulated network is {self._state}, not built: use it "
                                 "inside 'with EmulatedNetwork(...) as net:'")

    # ----------------------------------------------------------------- building

    def __enter__(self):
        if self._state == "new":
            self.build()
        self._require_built()
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def build(self):
        """Create the network; returns ``self``. Raises
        :class:`~topocoll.errors.EmulationUnavailableError` (privileges, kernel, library),
        :class:`~topocoll.errors.ResourceLimitError` (the host cannot carry the rates asked
        for) or :class:`~topocoll.errors.EmulationError` (the kernel refused a step); nothing
        is left behind on any of them."""
        if self._state != "new":
            raise EmulationError(f"this emulated network is {self._state}; make a new one")
        started = time.monotonic()
        self.mode = prepare_process()
        self._dir = (NETNS_DIR if self.mode == "root"
                     else tempfile.mkdtemp(prefix="topocoll-netns-"))
        self._state = "building"
        self._hold_signals()
        try:
            self._fit_host()
            self.run = new_run_id()
            self._create()
        except BaseException:
            self.close()
            raise
        self._state = "built"
        self.build_seconds = time.monotonic() - started
        return self

    def _fit_host(self):
        if not (self.check_capacity or self.latency is not None):
            return
        self._report(0, "probing the host")
        self.capacity = probe_host(self.plan.mtu, self._dir,
                                   try_netem=self.latency is not None)
        if self.latency is not None and not self.capacity.netem:
            raise EmulationUnavailableError(
                "--latency needs the kernel's netem qdisc, which this kernel lacks; without "
                "it the latency of each link is the network stack's own (the calibration "
                "measures it)")
        if not self.check_capacity:
            return
        factor = fit_scale(self.plan, self.capacity, self.cpu_share)
        if factor >= 1:
            return
        need = required_cores(self.plan, self.capacity)
        fastest = max(max(c.rate_ab, c.rate_ba) for c in self.plan.cables)
        fits = _nice_rate(fastest * factor)
        said = (f"{self.plan.num_nodes} nodes' links at {format_bandwidth(fastest)} take about "
                f"{need:.1f} of this host's {self.capacity.cores} cores at full load (the probe "
                f"moved {format_bandwidth(self.capacity.bytes_per_cpu_second)} per busy core "
                f"at MTU {self.plan.mtu}); at most {self.cpu_share:.0%} of the cores may go "
                "to the links")
        if self.explicit_rate:
            raise ResourceLimitError(f"{said}: use a link rate of at most "
                                     f"{format_bandwidth(fits)}, or a larger MTU")
        self.plan = NetworkPlan(self.topology, scale=self.plan.scale * fits / fastest,
                                mtu=self.plan.mtu)
        self.notes.append(f"{said}; the fastest link runs at {format_bandwidth(fits)} "
                          "instead")

    def _report(self, done, stage):
        if self.progress is not None:
            self.progress(done, 4, stage=stage)

    def _create(self):
        from pyroute2 import netns

        plan = self.plan
        if self.mode == "root":
            record_run(self.run, self.topology.name)
        self._report(1, f"creating {plan.num_nodes} namespaces")
        switches = set(plan.switches)
        for node in range(plan.num_nodes):
            path = os.path.join(self._dir, namespace_name(self.run, node, node in switches))
            self._paths[node] = path
            try:
                netns.create(path)
            except OSError as exc:
                raise EmulationError(f"cannot create network namespace for node {node}: "
                                     f"{exc.strerror or exc}") from None
            write_sysctls(path, SYSCTLS)
            self._tune(path)
        templates = Templates()
        socks = {}
        try:
            for node, path in self._paths.items():
                socks[node] = NamespaceSocket(path, f"node {node}")
            self._report(2, f"linking {len(plan.cables)} cables")
            self._cables(socks, templates)
            self._report(3, "shaping links and installing routes")
            for node, sock in socks.items():
                self._links[node] = sock.links(templates)
                sock.run(self._node_batch(node, templates))
        finally:
            for sock in socks.values():
                sock.close()
            templates.close()

    def _tune(self, path):
        for key, value in TCP_SYSCTLS.items():
            try:
                write_sysctls(path, {key: value})
            except EmulationError as exc:
                said = f"TCP tuning not applied: {exc}"
                if not any(note.startswith("TCP tuning not applied: ") and key in note
                           for note in self.notes):
                    self.notes.append(said)

    def _cables(self, socks, templates):
        by_node = {}
        for cable in self.plan.cables:
            by_node.setdefault(cable.a, []).append(cable)
        for a, cables in by_node.items():
            batch, fds = Batch(), []
            try:
                for cable in cables:
                    fd = os.open(self._paths[cable.b], os.O_RDONLY | os.O_CLOEXEC)
                    fds.append(fd)
                    batch.add(templates.veth(self.plan.interface(a, cable.b),
                                             self.plan.interface(cable.b, a), fd),
                              f"creating the cable to node {cable.b}")
                socks[a].run(batch)
            finally:
                for fd in fds:
                    os.close(fd)

    def _node_batch(self, node, templates):
        """Loopback, every interface's MTU, address and shaper, and the routes of ``node``."""
        plan = self.plan
        frame = frame_bytes(plan.mtu)
        links = self._links[node]
        own = plan.address(node)
        batch = Batch()
        batch.add(templates.loopback_up(), "bringing loopback up")
        for name, peer in plan.interfaces(node):
            index = links[name]
            rate = plan.rate(node, peer)
            burst = max(frame, _GSO_BYTES, int(rate * 0.001)) + 2048
            limit = max(64 * frame, int(rate * _QUEUE_SECONDS))
            batch.add(templates.interface_up(index, plan.mtu), f"bringing {name} up")
            batch.add(templates.address(index, own), f"addressing {name}")
            batch.add(templates.shaper(index, rate, burst, limit),
                      f"shaping {name} to {format_bandwidth(rate)}")
            if self.latency:
                batch.add(templates.delay(index, self.latency, 10000),
                          f"delaying {name} by {format_time(self.latency)}")
        for other in range(plan.num_nodes):
            if other == node or plan.routes.hops[node, other] < 0:
                continue
            hop, via = plan.route(node, other)
            batch.add(templates.route(plan.address(other), via,
                                      links[plan.interface(node, hop)], own),
                      f"the route to node {other}")
        return batch

    # ----------------------------------------------------------------- signals

    def _hold_signals(self):
        """Turn SIGTERM and SIGHUP into SystemExit while the network stands, so that the
        ``with`` block (or atexit) takes it down; handlers set by someone else are kept."""
        atexit.register(self.close)
        if threading.current_thread() is not threading.main_thread():
            return
        for sig in (signal.SIGTERM, signal.SIGHUP):
            if signal.getsignal(sig) is signal.SIG_DFL:
                self._signals[sig] = signal.signal(sig, _exit_on_signal)

    def _release_signals(self):
        atexit.unregister(self.close)
        for sig, previous in self._signals.items():
            signal.signal(sig, previous)
        self._signals.clear()

    # ----------------------------------------------------------------- teardown

    def close(self):
        """Take everything down (safe to call twice); raises
        :class:`~topocoll.errors.EmulationError` naming what could not be removed."""
        if self._state in ("new", "closed"):
            return
        self._release_signals()
        self._state = "closing"
        problems = []
        paths = {node: p for node, p in self._paths.items() if os.path.exists(p)}
        occupied = processes_in(paths.values())
        for node, path in sorted(paths.items()):
            try:
                remove_namespace(path, self._links.get(node), occupied=path in occupied)
            except EmulationError as exc:
                problems.append(str(exc))
        if self.run is not None and self.mode == "root":
            forget_run(self.run)
        if self.mode != "root" and self._dir is not None:
            release_folder(self._dir)
        self._state = "closed"
        if problems:
            raise EmulationError(f"{len(problems)} namespaces could not be removed "
                                 f"({problems[0]}); 'topocoll emulate --clean' removes them")

    # ----------------------------------------------------------------- looking inside

    def popen(self, node, args, **kwargs):
        """Start ``args`` (a :class:`subprocess.Popen`) inside ``node``'s namespace."""
        path = self.namespace(node)
        return subprocess.Popen(args, preexec_fn=lambda: enter_namespace(path), **kwargs)

    def check(self, *, timeout=120.0):
        """Connect from every node to every other once (data plane). Returns the pairs that
        failed (empty when every route reaches its node)."""
        self._require_built()
        nodes = [(node, self._paths[node], self.plan.address(node))
                 for node in range(self.plan.num_nodes)]
        return reach_all(nodes, timeout=timeout)

    def links_down(self):
        """The cables ``(a, b)`` (nodes, ``a < b``) that do not carry traffic now: an end set
        down (by anyone: the kernel's state is read, not this object's) or gone. A rank that
        times out waiting for a peer says why with it (:func:`~topocoll.runtime.run_local`)."""
        self._require_built()
        templates = Templates()
        up = {}
        try:
            for node, path in self._paths.items():
                sock = NamespaceSocket(path, f"node {node}")
                try:
                    up[node] = sock.up(templates)
                finally:
                    sock.close()
        finally:
            templates.close()
        interface = self.plan.interface
        return [(c.a, c.b) for c in self.plan.cables
                if not (up[c.a].get(interface(c.a, c.b)) and up[c.b].get(interface(c.b, c.a)))]

    def probe_link(self, u, v, *, seconds=0.6):
        """Bytes per second a bulk TCP transfer gets from ``u`` to ``v``: the difference of
        two transfer sizes over the difference of their times (what the first bytes of a
        transfer gain from the shaper's bucket cancels out)."""
        self._require_built()
        rate = self.plan.rate(u, v) or self.plan.rate(v, u)
        size = int(max(4 * frame_bytes(self.plan.mtu), rate * seconds / 3))
        got = time_transfers(self.namespace(u), self.namespace(v), self.plan.address(v),
                             [(size, 2), (size, 2), (2 * size, 2)],
                             what=f"the link probe {u} -> {v}")
        one = min(t for _, t in got[2:4])
        two = min(t for _, t in got[4:6])
        return size / max(two - one, 1e-9)

    def calibration(self):
        """The :class:`~topocoll.emulate.calibrate.Calibration` of this network, measured on
        first use (a few seconds) and kept."""
        self._require_built()
        if self._calibration is None:
            self._calibration = calibrate(self)
        return self._calibration


def _exit_on_signal(signum, frame):
    raise SystemExit(128 + signum)
