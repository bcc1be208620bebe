"""Socket probes inside emulated networks: bytes timed between two namespaces, and every route
tried once.

Each end of a probe is a process of its own (forked, so nothing is imported again) that enters
its node's namespace first; the parent only collects what they report. A probe that gets no
answer in time is killed and named, never left hanging.
"""

import multiprocessing
import socket
import struct
import time

from ..errors import EmulationError
from .system import enter_namespace

__all__ = ["time_transfers", "stream", "reach_all", "PROBE_PORT"]

#: The TCP port the probes listen on, inside the namespaces (nothing else lives there).
PROBE_PORT = 5201
_HEAD = struct.Struct("=QB")       # bytes that follow, and whether to answer
_CHUNK = 1 << 20


def _context():
    return multiprocessing.get_context("fork")


def _recv_exactly(conn, count, buf):
    view = memoryview(buf)
    while count:
        got = conn.recv_into(view[:min(len(buf), count)])
        if not got:
            raise EOFError("the peer closed the connection")
        count -= got


def _listen(path, address, backlog):
    """Enter the namespace at ``path`` and listen at ``address`` on :data:`PROBE_PORT`."""
    enter_namespace(path)
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((address, PROBE_PORT))
    listener.listen(backlog)
    return listener


def _serve(path, address, pipe):
    """The receiving end: read ``(size, answer)`` headers and drain ``size`` bytes, answering
    one byte when asked, until the sender closes."""
    try:
        listener = _listen(path, address, 1)
        pipe.send("ready")
        conn, _ = listener.accept()
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        buf = bytearray(_CHUNK)
        while True:
            head = conn.recv(_HEAD.size, socket.MSG_WAITALL)
            if len(head) < _HEAD.size:
                break
            size, answer = _HEAD.unpack(head)
            _recv_exactly(conn, size, buf)
            if answer:
                conn.sendall(b"k")
        pipe.send("done")
    except BaseException as exc:   # reported to the parent, which names it
        pipe.send(f"error: {exc}")


def _drive(path, address, plan, pipe):
    """The sending end: for each ``(size, repeats)`` of ``plan`` send ``size`` bytes and wait
    for the answer, ``repeats`` times; ``(-seconds, 0)`` streams for that long instead. Reports
    the seconds of each."""
    try:
        enter_namespace(path)
        conn = socket.create_connection((address, PROBE_PORT), timeout=60)
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        payload = bytearray(max([_CHUNK] + [s for s, _ in plan if s > 0]))
        out = []
        for size, repeats in plan:
            if size < 0:      # stream for -size seconds: how many bytes went
                sent, t0 = 0, time.perf_counter()
                while time.perf_counter() - t0 < -size:
                    conn.sendall(_HEAD.pack(_CHUNK, 0))
                    conn.sendall(payload[:_CHUNK])
                    sent += _CHUNK
                conn.sendall(_HEAD.pack(0, 1))
                conn.recv(1)
                out.append((sent, time.perf_counter() - t0))
                continue
            for _ in range(repeats):
                t0 = time.perf_counter()
                conn.sendall(_HEAD.pack(size, 1))
                conn.sendall(memoryview(payload)[:size])
                if conn.recv(1) != b"k":
                    raise EOFError("no answer")
                out.append((size, time.perf_counter() - t0))
        conn.close()
        pipe.send(out)
    except BaseException as exc:
        pipe.send(f"error: {exc}")


def _finish(procs, what, deadline):
    for p in procs:
        p.join(max(0.0, deadline - time.monotonic()))
    stuck = [p for p in procs if p.is_alive()]
    for p in stuck:
        p.kill()
        p.join()
    if stuck:
        raise EmulationError(f"{what} did not finish in time")


def time_transfers(sender, receiver, address, plan, *, timeout=120.0, what="a probe"):
    """Time transfers from the namespace ``sender`` to ``address`` in the namespace
    ``receiver`` (paths): ``plan`` is ``[(size, repeats), ...]`` (``(-seconds, 0)`` streams for
    that long); returns ``[(bytes, seconds), ...]`` in order."""
    ctx = _context()
    here_s, there_s = ctx.Pipe()
    here_d, there_d = ctx.Pipe()
    server = ctx.Process(target=_serve, args=(receiver, address, there_s), daemon=True)
    driver = ctx.Process(target=_drive, args=(sender, address, plan, there_d), daemon=True)
    deadline = time.monotonic() + timeout
    try:
        server.start()
        said = here_s.recv() if here_s.poll(timeout) else "error: no word in time"
        if said != "ready":
            raise EmulationError(f"{what}: the receiver did not start ({said[7:]})")
        driver.start()
        if not here_d.poll(max(0.0, deadline - time.monotonic())):
            raise EmulationError(f"{what} got no answer within {timeout:g} s")
        result = here_d.recv()
        if isinstance(result, str):
            raise EmulationError(f"{what} failed: {result[7:]}")
        return result
    finally:
        _finish([driver, server], what, time.monotonic() + 2.0)


def stream(sender, receiver, address, seconds, *, what="a probe"):
    """``(bytes, seconds)`` of a stream of about ``seconds`` from ``sender`` to ``address``."""
    return time_transfers(sender, receiver, address, [(-float(seconds), 0)],
                          timeout=seconds + 60.0, what=what)[0]


def _node_worker(path, address, targets, pipe):
    """Listen at ``address``; once told, connect to every ``(node, address)`` of ``targets``
    and exchange a byte; report the nodes that could not be reached."""
    import threading

    try:
        listener = _listen(path, address, 128)

        def answer():
            while True:
                try:
                    conn, _ = listener.accept()
                except OSError:
                    return
                with conn:
                    if conn.recv(1):
                        conn.sendall(b"k")
        threading.Thread(target=answer, daemon=True).start()
        pipe.send("ready")
        pipe.recv()                      # every node listens: go
        missed = []
        for node, target in targets:
            try:
                with socket.create_connection((target, PROBE_PORT), timeout=5) as conn:
                    conn.sendall(b"p")
                    if conn.recv(1) != b"k":
                        missed.append(node)
            except OSError:
                missed.append(node)
        pipe.send(missed)
        pipe.recv()                      # everyone is done: stop answering
    except BaseException as exc:
        pipe.send(f"error: {exc}")


def reach_all(nodes, *, timeout=120.0):
    """Connect from every node to every other once. ``nodes`` is ``[(node, namespace path,
    address), ...]``; returns ``[(from, to), ...]`` for every pair that could not connect."""
    ctx = _context()
    procs, pipes = [], []
    deadline = time.monotonic() + timeout
    try:
        for node, path, address in nodes:
            targets = [(other, addr) for other, _, addr in nodes if other != node]
            here, there = ctx.Pipe()
            p = ctx.Process(target=_node_worker, args=(path, address, targets, there),
                            daemon=True)
            p.start()
            procs.append(p)
            pipes.append(here)
        for (node, _, _), pipe in zip(nodes, pipes):
            if not pipe.poll(max(0.0, deadline - time.monotonic())) or pipe.recv() != "ready":
                raise EmulationError(f"the route check could not listen on node {node}")
        for pipe in pipes:
            pipe.send("go")
        failed = []
        for (node, _, _), pipe in zip(nodes, pipes):
            if not pipe.poll(max(0.0, deadline - time.monotonic())):
                raise EmulationError(f"the route check from node {node} did not finish in "
                                     f"{timeout:g} s")
            missed = pipe.recv()
            if isinstance(missed, str):
                raise EmulationError(f"the route check on node {node} failed: {missed[7:]}")
            failed += [(node, other) for other in missed]
        for pipe in pipes:
            pipe.send("stop")
        return failed
    finally:
        _finish(procs, "the route check", time.monotonic() + 2.0)
