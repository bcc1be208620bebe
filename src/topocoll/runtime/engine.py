"""The dataflow engine: run one rank's :class:`~topocoll.runtime.program.Program` over links.

The engine is independent of torch: it moves arrays through a *links* object and combines
them with a function it is given, so the same code runs on torch.distributed (gloo) in
:mod:`topocoll.runtime.executor` and on the in-memory network of
:mod:`topocoll.runtime.loopback` that the tests drive with adversarial timing.

One call of :func:`execute` does, in one thread, until every write is done::

    post every send whose data is final and whose link order allows it
    post every receive whose buffer is free and whose link order allows it
    wait for the next write's packet (program order); copy or reduce it into place

and then waits for its sends. Transfers run in the background (gloo's I/O thread) while the
thread reduces the packets that have arrived: the reduction of one slice overlaps the transfer
of the next, and a packet of step ``s + 1`` leaves as soon as the writes it reads are done,
not when step ``s`` is over.

A *links* object has ``isend(buf, peer, tag, op)``, ``irecv(buf, peer, tag, op)`` (both
return a request), ``wait(request, op)`` (blocks; raises
:class:`~topocoll.errors.ProcessGroupError` naming the peer and the step on failure) and
``test(request)`` (True once complete). Arrays need slicing, ``__setitem__`` and
``combine(target, piece)`` (an in-place reduction).
"""

__all__ = ["Buffers", "allocate", "execute"]


class Buffers:
    """What a program needs besides the shard buffers, kept between calls.

    Attributes
    ----------
    staging : dict
        ``peer -> [buffers]``: ``window`` staging buffers per peer.
    send_copy : array or None
        One flat buffer holding every packed send packet, at :attr:`offsets`.
    offsets : dict
        ``send index -> offset`` into :attr:`send_copy`.
    """

    __slots__ = ("staging", "send_copy", "offsets")

    def __init__(self, staging, send_copy, offsets):
        self.staging, self.send_copy, self.offsets = staging, send_copy, offsets


def allocate(program, empty):
    """:class:`Buffers` for ``program``; ``empty(k)`` makes an array of ``k`` elements."""
    counts = {}
    for op in program.recvs:
        if not op.direct:
            counts[op.peer] = counts.get(op.peer, 0) + 1
    staging = {peer: [empty(size) for _ in range(min(program.window, counts[peer]))]
               for peer, size in program.staging.items()}
    offsets, total = {}, 0
    for i, op in enumerate(program.sends):
        if op.copied:
            offsets[i] = total
            total += op.numel
    return Buffers(staging, empty(total) if total else None, offsets)


def _view(state, pieces):
    s, a = pieces[0][0], pieces[0][1]
    return state[s][a:pieces[-1][2]]


class _Run:
    """The state of one call of :func:`execute` (see the module text)."""

    def __init__(self, program, state, links, combine, buffers, report):
        self.p, self.state, self.links = program, state, links
        self.combine, self.buffers, self.report = combine, buffers, report
        self.send_req = [None] * len(program.sends)
        self.send_ok = [False] * len(program.sends)
        self.recv_req = [None] * len(program.recvs)
        self.send_head = dict.fromkeys(program.send_links, 0)
        self.recv_head = dict.fromkeys(program.recv_links, 0)
        self.done = 0          # writes done, in program order
        self._next_send = self._least_after()

    # -- sends -----------------------------------------------------------------------------
    def _least_after(self):
        sends, links = self.p.sends, self.p.send_links
        heads = [sends[idx[h]].after for peer, idx in links.items()
                 if (h := self.send_head[peer]) < len(idx)]
        return min(heads) if heads else None

    def post_sends(self):
        if self._next_send is None or self._next_send > self.done:
            return
        sends = self.p.sends
        for peer, idx in self.p.send_links.items():
            h = self.send_head[peer]
            while h < len(idx) and sends[idx[h]].after <= self.done:
                i = idx[h]
                self.send_req[i] = self.links.isend(self._outgoing(i), peer, sends[i].tag,
                                                    sends[i])
                h += 1
            self.send_head[peer] = h
        self._next_send = self._least_after()

    def _outgoing(self, i):
        op = self.p.sends[i]
        if not op.copied:
            return _view(self.state, op.pieces)
        offset = self.buffers.offsets[i]
        out = self.buffers.send_copy[offset:offset + op.numel]
        at = 0
        for s, a, b in op.pieces:
            out[at:at + b - a] = self.state[s][a:b]
            at += b - a
        return out

    def sent(self, i, block):
        """Whether send ``i`` has completed (waiting for it with ``block``)."""
        if self.send_ok[i]:
            return True
        req = self.send_req[i]
        if req is None:
            if not block:
                return False
            self.post_sends()
            req = self.send_req[i]
        if block:
            self.links.wait(req, self.p.sends[i])
        elif not self.links.test(req):
            return False
        self.send_ok[i] = True
        return True

    # -- receives --------------------------------------------------------------------------
    def post_recvs(self):
        recvs, done = self.p.recvs, self.done
        for peer, idx in self.p.recv_links.items():
            h = self.recv_head[peer]
            while h < len(idx):
                i = idx[h]
                op = recvs[i]
                if op.direct:
                    if op.after > done or not all(self.sent(j, False) for j in op.wait_sends):
                        break
                    buf = _view(self.state, op.pieces)
                else:
                    if op.release >= done:
                        break
                    buf = self.buffers.staging[peer][op.slot][:op.numel]
                self.recv_req[i] = self.links.irecv(buf, peer, op.tag, op)
                h += 1
            self.recv_head[peer] = h

    def apply(self, op):
        stage = self.buffers.staging[op.peer][op.slot]
        at = 0
        for s, a, b, reduce in op.pieces:
            piece = stage[at:at + b - a]
            if reduce:
                self.combine(self.state[s][a:b], piece)
            else:
                self.state[s][a:b] = piece
            at += b - a

    # -- the call --------------------------------------------------------------------------
    def run(self):
        recvs = self.p.recvs
        step = None
        for w, op in enumerate(recvs):
            if op.step != step:
                if step is not None:
                    self.report(step)
                step = op.step
                self.report(step, entering=True)
            self.post_sends()
            self.post_recvs()
            if self.recv_req[w] is None:
                # the head of its link, held back by sends of earlier steps that still read
                # its range: they complete whatever this rank does next
                for j in op.wait_sends:
                    self.sent(j, True)
                self.post_recvs()
            self.links.wait(self.recv_req[w], op)
            if not op.direct:
                for j in op.wait_sends:
                    self.sent(j, True)
                self.apply(op)
            self.recv_req[w] = None
            self.done += 1
        if step is not None:
            self.report(step)
        self.post_sends()
        for i in range(len(self.p.sends)):
            self.sent(i, True)


def _no_report(step, *, entering=False):
    return None


def execute(program, state, links, combine, buffers, report=_no_report):
    """Run ``program`` once: ``state`` maps shard -> 1-D array (updated in place).

    ``buffers`` come from :func:`allocate` (reused between calls); ``report(step, entering=...)``
    is told when the writes of each step begin (``entering=True``) and end.
    """
    _Run(program, state, links, combine, buffers, report).run()
    return state
