"""Netlink requests to one namespace at a time, batched.

pyroute2 compiles every request (:class:`pyroute2.IPBatch`), and a plain ``NETLINK_ROUTE``
socket opened inside the namespace sends a namespace's whole batch at once and reads the
kernel's acknowledgements, one per request, naming the first that failed. Compiling is what
costs (about a millisecond a request in pyroute2), and a network of N nodes needs N^2 host
routes, so requests that differ only in an interface index or a destination address are
compiled once and copied with that field replaced: the fields sit at fixed offsets of the
kernel's request structures (``ifinfomsg``, ``ifaddrmsg``, ``tcmsg``) or in one attribute
(``RTA_DST``), both stable kernel ABI.
"""

import errno
import os
import socket
import struct

from ..errors import EmulationError
from .system import in_namespace

__all__ = ["Batch", "NamespaceSocket", "Templates"]

_HEADER = struct.Struct("=IHHII")     # nlmsghdr: length, type, flags, sequence, port
_NLMSG_ERROR, _NLMSG_DONE = 2, 3
_INDEX_OFFSET = 20                   # ifi_index / ifa_index / tcm_ifindex after the header
_RTMSG_END = 16 + 12                 # routes: attributes start after nlmsghdr and rtmsg
_RTA_DST = 1
#: Set up, and its carrier on: read at once, where the operational state (IFF_RUNNING) follows
#: the carrier only after the kernel's link watch (up to a second).
_IFF_UP_WITH_CARRIER = 0x1 | 0x10000


def _attribute_offset(message, start, kind):
    """Offset of the value of the first attribute of type ``kind`` at or after ``start``."""
    off = start
    while off + 4 <= len(message):
        length, t = struct.unpack_from("=HH", message, off)
        if t & 0x3FFF == kind:
            return off + 4
        off += (length + 3) & ~3
    raise ValueError(f"attribute {kind} not in the compiled request")


class Templates:
    """Compiled requests, kept by their content, and copies with one field replaced.
    :meth:`close` releases pyroute2's compiler."""

    def __init__(self):
        from pyroute2 import IPBatch

        self._cache = {}
        self._batch = IPBatch()

    def close(self):
        self._batch.close()

    def _compile(self, call):
        """The bytes of one request, compiled by pyroute2 (``call(batch)`` issues it)."""
        self._batch.reset()
        call(self._batch)
        return bytes(self._batch.batch)

    def _get(self, key, call):
        if key not in self._cache:
            self._cache[key] = self._compile(call)
        return self._cache[key]

    def interface_up(self, index, mtu):
        """Set the MTU of interface ``index`` and bring it up."""
        raw = self._get(("up", mtu), lambda b: b.link("set", index=1, mtu=mtu, state="up"))
        return _with_index(raw, index)

    def loopback_up(self):
        return self._get(("lo",), lambda b: b.link("set", index=1, state="up"))

    def address(self, index, address):
        raw = self._get(("addr", address),
                        lambda b: b.addr("add", index=1, address=address, prefixlen=32))
        return _with_index(raw, index)

    def shaper(self, index, rate, burst, limit):
        """A ``tbf`` root qdisc on interface ``index``: ``rate`` bytes/s, ``burst`` and
        ``limit`` bytes."""
        raw = self._get(("tbf", rate, burst, limit),
                        lambda b: b.tc("add", "tbf", index=1, handle="1:", rate=rate,
                                       burst=burst, limit=limit))
        return _with_index(raw, index)

    def delay(self, index, seconds, limit):
        """A ``netem`` delay qdisc under the shaper of interface ``index``."""
        raw = self._get(("netem", seconds, limit),
                        lambda b: b.tc("add", "netem", index=1, parent="1:1", handle="10:",
                                       delay=int(round(seconds * 1e6)), limit=limit))
        return _with_index(raw, index)

    def route(self, destination, gateway, oif, source):
        """A host route to ``destination`` through the neighbour ``gateway`` on interface
        ``oif`` (on-link), with ``source`` as the source address, acknowledging every segment
        at once (``quickack``: a delayed acknowledgement of a 64 KB frame stalls a sender
        whose window holds a few)."""
        raw = self._get(("route", gateway, oif, source),
                        lambda b: b.route("add", dst="255.255.255.255", dst_len=32,
                                          gateway=gateway, oif=oif, flags=4, prefsrc=source,
                                          metrics={"quickack": 1}))
        off = _attribute_offset(raw, _RTMSG_END, _RTA_DST)
        return raw[:off] + socket.inet_aton(destination) + raw[off + 4:]

    def veth(self, name, peer_name, peer_namespace_fd):
        """A veth pair: ``name`` here, ``peer_name`` in the namespace of the open file
        ``peer_namespace_fd``."""
        return self._compile(lambda b: b.link("add", ifname=name, kind="veth",
                                              peer={"ifname": peer_name,
                                                    "net_ns_fd": peer_namespace_fd}))

    def delete_link(self, index):
        return _with_index(self._get(("del",), lambda b: b.link("del", index=1)), index)

    def link_dump(self):
        return self._get(("dump",), lambda b: b.link("dump"))


def _with_index(raw, index):
    return raw[:_INDEX_OFFSET] + struct.pack("=i", index) + raw[_INDEX_OFFSET + 4:]


class Batch:
    """Requests for one namespace, with what each does (for the error message)."""

    def __init__(self):
        self.requests = []

    def add(self, message, what):
        self.requests.append((message, what))

    def __len__(self):
        return len(self.requests)


def _open():
    sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW | socket.SOCK_CLOEXEC,
                         socket.NETLINK_ROUTE)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
    sock.bind((0, 0))
    return sock


class NamespaceSocket:
    """A ``NETLINK_ROUTE`` socket that lives in the network namespace at ``path``."""

    def __init__(self, path, label):
        self.path, self.label = path, label
        try:
            self.sock = in_namespace(path, _open)
        except OSError as exc:
            raise EmulationError(f"{label}: cannot open a netlink socket: {exc.strerror}") \
                from None
        self._seq = 0

    def close(self):
        self.sock.close()

    def _next(self):
        self._seq += 1
        return self._seq

    def run(self, batch):
        """Send every request of ``batch``; raise :class:`EmulationError` naming the first
        the kernel refused (the rest of the batch is still read, so the socket stays in
        step)."""
        if not len(batch):
            return
        pending = {}
        out = bytearray()
        for message, what in batch.requests:
            seq = self._next()
            pending[seq] = what
            out += message[:8] + struct.pack("=II", seq, 0) + message[16:]
        view = memoryview(out)
        # netlink takes whole messages: send in pieces that end on message boundaries
        start = 0
        while start < len(out):
            end = start
            while end < len(out) and end - start < 60000:
                end += _HEADER.unpack_from(out, end)[0]
            self.sock.send(view[start:end])
            start = end
        failed = None
        while pending:
            data = self.sock.recv(1 << 20)
            off = 0
            while off + _HEADER.size <= len(data):
                length, kind, _, seq, _ = _HEADER.unpack_from(data, off)
                if kind == _NLMSG_ERROR and seq in pending:
                    code = struct.unpack_from("=i", data, off + 16)[0]
                    what = pending.pop(seq)
                    if code < 0 and failed is None:
                        failed = (what, -code)
                off += (length + 3) & ~3 if length else len(data)
        if failed is not None:
            what, code = failed
            reason = os.strerror(code) if code != errno.EOPNOTSUPP else "not supported"
            raise EmulationError(f"{self.label}: {what}: {reason}")

    def links(self, templates):
        """``{name: index}`` of the interfaces in this namespace."""
        return self._dump(templates, lambda msg: msg["index"])

    def up(self, templates):
        """``{name: whether it is up}`` for the interfaces in this namespace: set up, with its
        carrier on (a veth whose other end was set down has none)."""
        return self._dump(templates, lambda msg: msg["flags"] & _IFF_UP_WITH_CARRIER ==
                          _IFF_UP_WITH_CARRIER)

    def _dump(self, templates, value):
        """``{name: value(message)}`` over a dump of the interfaces in this namespace."""
        from pyroute2.netlink.rtnl.marshal import MarshalRtnl

        message = templates.link_dump()
        seq = self._next()
        self.sock.send(message[:8] + struct.pack("=II", seq, 0) + message[16:])
        out, marshal = {}, MarshalRtnl()
        while True:
            data = self.sock.recv(1 << 20)
            done = False
            for msg in marshal.parse(data):
                if msg["header"]["type"] == _NLMSG_DONE:
                    done = True
                elif msg["header"]["type"] == _NLMSG_ERROR and msg["header"].get("error"):
                    raise EmulationError(f"{self.label}: listing interfaces failed")
                else:
                    out[msg.get_attr("IFLA_IFNAME")] = value(msg)
            if done:
                return out
