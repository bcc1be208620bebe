"""Does the emulated network fit the host? A short probe of what links carry here.

An emulation whose kernel work keeps the host's cores busy measures the host, not the network:
with 1500-byte frames two cores were fully busy with 16 nodes at 25 Mbit/s (docs/emulate.md).
Before a network is built, :func:`probe_host` pushes bytes for a fraction of a second through
an unshaped veth pair between two scratch namespaces, with the network's MTU, and watches the
machine's CPU time: bytes per CPU-second is what one byte crossing one link costs here (the
sending and receiving socket copies included, so forwarding nodes cost less than this).
:func:`required_cores` prices a network at full load (every direction of every cable busy at
its rate) and :func:`fit_scale` says how far its rates must come down to leave the ranks their
share of the cores.

The same scratch pair tells whether the kernel has the ``netem`` qdisc that per-link latency
needs.
"""

import os
from dataclasses import asdict, dataclass

from ..errors import EmulationError
from .host import HostMonitor
from .netlink import Batch, NamespaceSocket, Templates
from .plan import node_address
from .probe import stream
from .runs import namespace_name, new_run_id, remove_namespace

__all__ = ["HostCapacity", "probe_host", "required_cores", "fit_scale", "CPU_SHARE"]

#: Share of the host's cores the emulated links may take at full load; the rest is the ranks'.
CPU_SHARE = 0.5
_PROBE_SECONDS = 0.3


@dataclass
class HostCapacity:
    """What one link costs the host: ``bytes_per_cpu_second`` through a veth of ``mtu``, the
    probe's own ``throughput`` (bytes/s) and ``cores``; ``netem`` says whether the kernel can
    delay packets."""

    mtu: int
    bytes_per_cpu_second: float
    throughput: float
    cores: int
    netem: bool

    def to_dict(self):
        return asdict(self)


def _scratch_pair(paths, mtu, try_netem):
    """Two namespaces at ``paths`` joined by an unshaped veth; whether netem took."""
    from pyroute2 import netns

    templates = Templates()
    socks = []
    try:
        for path in paths:
            netns.create(path)
        socks = [NamespaceSocket(p, os.path.basename(p)) for p in paths]
        fd = os.open(paths[1], os.O_RDONLY)
        try:
            first = Batch()
            first.add(templates.veth("probe", "probe", fd), "creating the probe's veth")
            socks[0].run(first)
        finally:
            os.close(fd)
        for i, sock in enumerate(socks):
            index = sock.links(templates)["probe"]
            batch = Batch()
            batch.add(templates.loopback_up(), "loopback up")
            batch.add(templates.address(index, node_address(i)), "address")
            batch.add(templates.interface_up(index, mtu), f"MTU {mtu}")
            batch.add(templates.route(node_address(1 - i), node_address(1 - i), index,
                                      node_address(i)), "route")
            sock.run(batch)
        netem = False
        if try_netem:     # on the side that only acknowledges during the stream
            index = socks[1].links(templates)["probe"]
            batch = Batch()
            batch.add(templates.shaper(index, 1e9, 1 << 17, 1 << 22), "tbf")
            batch.add(templates.delay(index, 1e-3, 1000), "netem")
            try:
                socks[1].run(batch)
                netem = True
            except EmulationError:
                netem = False
        return netem
    finally:
        for sock in socks:
            sock.close()
        templates.close()


def probe_host(mtu, netns_dir, *, seconds=_PROBE_SECONDS, try_netem=False):
    """Measure :class:`HostCapacity` with a stream between two scratch namespaces in
    ``netns_dir``, built and removed here under a run id of their own (``topocoll emulate
    --clean`` finds them if this process is killed meanwhile)."""
    run = new_run_id()
    paths = [os.path.join(netns_dir, namespace_name(run, i)) for i in (0, 1)]
    try:
        netem = _scratch_pair(paths, mtu, try_netem)
        with HostMonitor() as load:
            sent, took = stream(paths[0], paths[1], node_address(1), seconds,
                                what="the host probe")
        busy = max(load.busy_cores * load.seconds, 1e-3)
        return HostCapacity(mtu=int(mtu), bytes_per_cpu_second=sent / busy,
                            throughput=sent / took, cores=os.cpu_count() or 1, netem=netem)
    finally:
        for path in paths:
            if os.path.exists(path):
                remove_namespace(path)


def required_cores(plan, capacity):
    """Cores the network's links take when every direction of every cable runs at its rate."""
    return plan.aggregate_rate() / capacity.bytes_per_cpu_second


def fit_scale(plan, capacity, share=CPU_SHARE):
    """The largest factor (at most 1) by which the network's rates may be multiplied so that
    its links at full load take at most ``share`` of the host's cores."""
    need = required_cores(plan, capacity)
    budget = share * capacity.cores
    return 1.0 if need <= budget else budget / need
