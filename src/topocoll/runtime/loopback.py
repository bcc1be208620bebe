"""An in-memory network for the dataflow engine: one thread per rank, numpy arrays, and
adversarial timing, to check that programs are correct and cannot deadlock without torch.

The links are as strict as any real transport may be:

- **Rendezvous.** A send completes only after its receive has been posted and the data has
  moved (no send is buffered), so a program that needs buffered sends deadlocks here.
- **Matching** by ``(sender, receiver, tag)``; a tag reused on a link while a packet with
  that tag is pending is an error.
- **When the data moves** is chosen by a seeded random draw per packet: at the moment both
  sides have posted (as early as a transport may write into a receive buffer), or at the first
  ``wait``/``test`` of either side (as late as a transport may read a send buffer). A program
  that changes a buffer still being sent, or receives into a range it still reads, gets wrong
  results under one of the two.

A rank that waits longer than ``timeout`` seconds raises
:class:`~topocoll.errors.ProcessGroupError`: how a deadlock shows.

>>> import numpy as np
>>> from topocoll.synth import generate
>>> out = simulate_dataflow(generate("ring:3", "allreduce"), [np.arange(4.0)] * 3,
...                         slice_numel=1)
>>> out[0].tolist()
[0.0, 3.0, 6.0, 9.0]
"""

import random
import threading

import numpy as np

from ..errors import ProcessGroupError
from .engine import allocate, execute
from .plan import finish, initial_state, simulation_inputs
from .program import DEFAULT_WINDOW, compile_program

__all__ = ["LoopbackNetwork", "simulate_dataflow"]


class _Request:
    __slots__ = ("done", "partner", "buf", "is_send")

    def __init__(self, buf, is_send):
        self.done = False
        self.partner = None
        self.buf = buf
        self.is_send = is_send


class LoopbackNetwork:
    """Links between ``n`` ranks in one process (see the module text)."""

    def __init__(self, n, *, seed=0, timeout=20.0):
        self.n = n
        self.timeout = timeout
        self._cv = threading.Condition()
        self._sends = {}
        self._recvs = {}
        self._rng = random.Random(seed)
        self.failure = None

    def links(self, rank):
        """The links object of ``rank`` for :func:`~topocoll.runtime.engine.execute`."""
        return _Links(self, rank)

    def _post(self, key, req, mine, theirs):
        with self._cv:
            if key in mine:
                raise ProcessGroupError(f"tag {key[2]} reused on link {key[0]} -> {key[1]} while "
                                        "a packet with it is pending")
            other = theirs.pop(key, None)
            if other is None:
                mine[key] = req
                return req
            req.partner, other.partner = other, req
            if self._rng.random() < 0.5:    # early; else at the first wait or test
                self._move(req)
            self._cv.notify_all()
            return req

    def _move(self, req):
        """Move the data of a matched pair (once) and complete both."""
        if req.done:
            return
        send, recv = (req, req.partner) if req.is_send else (req.partner, req)
        if send.buf.size != recv.buf.size:
            raise ProcessGroupError(f"a packet of {send.buf.size} elements met a receive of "
                                    f"{recv.buf.size}")
        recv.buf[...] = send.buf
        send.done = recv.done = True
        self._cv.notify_all()

    def _complete(self, req, block, what):
        with self._cv:
            while True:
                if self.failure is not None:
                    raise ProcessGroupError(f"another rank failed: {self.failure}")
                if req.done:
                    return True
                if req.partner is not None:
                    self._move(req)
                    return True
                if not block:
                    return False
                if not self._cv.wait(self.timeout):
                    raise ProcessGroupError(f"step {what.step}: no progress on the packet with "
                                            f"node {what.peer} (tag {what.tag}) for "
                                            f"{self.timeout:g} s: deadlock")


class _Links:
    def __init__(self, net, rank):
        self.net, self.rank = net, rank

    def isend(self, buf, peer, tag, op):
        return self.net._post((self.rank, peer, tag), _Request(buf, True), self.net._sends,
                              self.net._recvs)

    def irecv(self, buf, peer, tag, op):
        return self.net._post((peer, self.rank, tag), _Request(buf, False), self.net._recvs,
                              self.net._sends)

    def wait(self, req, op):
        self.net._complete(req, True, op)

    def test(self, req):
        return self.net._complete(req, False, None)


def _add(target, piece):
    target += piece


def simulate_dataflow(schedule, inputs, *, slice_numel, window=DEFAULT_WINDOW, seed=0,
                      timeout=20.0, combine=_add, program_hook=None, links_hook=None,
                      in_place_numel=None):
    """Run ``schedule`` with the dataflow engine on in-memory ranks (one thread each).

    ``inputs[i]`` is rank i's flat input; returns each rank's result (its output, or its
    input updated in place), as :func:`~topocoll.runtime.plan.simulate_plans` does for the
    lock-step plans. ``seed`` draws when each packet's data moves (see the module text).
    ``program_hook(program)`` may replace each rank's compiled program and
    ``links_hook(links, rank)`` its links (what the tests use to break rules on purpose and to
    slow ranks down); ``in_place_numel`` goes to
    :func:`~topocoll.runtime.program.compile_program`.
    """
    n, inputs, lay, ranges = simulation_inputs(schedule, inputs)
    numel = inputs[0].size
    dtype = inputs[0].dtype
    progs = [compile_program(schedule, r, numel, slice_numel=slice_numel, window=window,
                             in_place_numel=in_place_numel, element_ranges=ranges)
             for r in range(n)]
    if program_hook is not None:
        progs = [program_hook(p) for p in progs]
    net = LoopbackNetwork(n, seed=seed, timeout=timeout)
    results, errors = [None] * n, [None] * n

    def rank_main(r):
        try:
            zeros = lambda k: np.zeros(k, dtype=dtype)   # noqa: E731
            out = (inputs[r].copy() if lay.in_place
                   else np.zeros(max(lay.output_numel, 1), dtype=dtype))
            state = initial_state(progs[r], inputs[r], zeros)
            links = net.links(r) if links_hook is None else links_hook(net.links(r), r)
            execute(progs[r], state, links, combine, allocate(progs[r], zeros))
            results[r] = finish(progs[r], state, out, out)
        except BaseException as exc:   # handed to the caller below
            errors[r] = exc
            with net._cv:
                net.failure = net.failure or f"rank {r}: {exc}"
                net._cv.notify_all()

    threads = [threading.Thread(target=rank_main, args=(r,), daemon=True) for r in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout + 30)
        if t.is_alive():   # a rank that neither finishes nor waits on the network
            raise ProcessGroupError(f"a rank ran past the network's timeout ({timeout:g} s) "
                                    "without waiting on it")
    first = [e for e in errors if e is not None and "another rank failed" not in str(e)]
    if first or any(errors):
        raise (first or [e for e in errors if e is not None])[0]
    return results
