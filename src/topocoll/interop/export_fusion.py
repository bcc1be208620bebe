"""The fusion pass of the MSCCL export (:mod:`.export`; msccl-tools' ``rcs``/``rrcs``): per
rank and channel, a receive block and a send block merge where a receive can forward what it
stored at once, as long as the bounded connection buffers keep room (docs/interop.md, "Bounded
buffers").
"""

import numpy as np

__all__ = ["fusable", "held_ok", "fuse"]


def fusable(send):
    """The receive a send can be fused into (it sends exactly what that receive stored, and
    waits for nothing else), or ``None``."""
    if len(send.deps) != 1:
        return None
    (recv,) = send.deps
    if recv.kind not in ("r", "rrc") or recv.rank != send.rank or recv.chan != send.chan or \
            (recv.dstbuf, recv.dstoff, recv.cnt) != (send.srcbuf, send.srcoff, send.cnt):
        return None
    return recv


def held_ok(out, room):
    """Whether every send of a merged block finds room when it runs, once everything before it
    in the global order has run (docs/interop.md, "Bounded buffers"): a send runs at its place
    in the block (a fused one at its receive's), and what its connection still holds then is
    the earlier sends whose receives come later in the order."""
    sent = []
    for op in out:
        send = op.fused if op.kind in ("r", "rrc") else (op if op.kind == "s" else None)
        if send is None:
            continue
        key = op.index
        held = sum(o.cnt for o in sent if o.pair.index > key)
        if held + send.cnt > room:
            return False
        sent.append(send)
    return True


def fuse(keyed, builder, room=None):
    """Merge, per rank and channel, the receive block of one peer with the send block of another
    where receives can forward at once (``rcs``, ``rrcs``), as msccl-tools does. ``keyed``
    maps ``(rank, chan, send peer, receive peer)`` (-1: none) to a block's operations and is
    updated in place; ``builder`` is the :class:`~.export_deps.OpBuilder`; ``room``: the
    connection capacity to respect (None: unbounded).

    Each in-peer pairs with at most one out-peer (one block per channel and peer); the pairs
    are a maximum matching on the number of fusable receive-send couples. A send is fused only
    if it is the next send on its link at the receive's place in the merged order, so both
    sides of every connection still see the same sequence."""
    from scipy.optimize import linear_sum_assignment

    counts = {}
    for op in builder.ops:
        if op.kind == "s":
            recv = fusable(op)
            if recv is not None:
                key = (op.rank, op.chan)
                counts.setdefault(key, {}).setdefault((recv.peer, op.peer), 0)
                counts[key][(recv.peer, op.peer)] += 1
    for (rank, chan), pairs in counts.items():
        ins = sorted({q for q, _ in pairs})
        outs = sorted({p for _, p in pairs})
        weight = np.zeros((len(ins), len(outs)))
        for (q, p), c in pairs.items():
            weight[ins.index(q), outs.index(p)] = c
        rows, cols = linear_sum_assignment(-weight)
        for i, j in zip(rows, cols):
            if weight[i, j] <= 0:
                continue
            q, p = ins[i], outs[j]
            recvs = keyed.pop((rank, chan, -1, q))
            sends = keyed.pop((rank, chan, p, -1))
            merged = sorted(recvs + sends, key=lambda o: o.index)
            pending = [o for o in merged if o.kind == "s"]
            nxt = 0          # index into pending: the next send on the link r->p
            out = []
            for op in merged:
                if op.kind == "s":
                    if op.via is None:
                        out.append(op)
                        nxt += 1
                    continue
                out.append(op)
                while nxt < len(pending) and pending[nxt].via is not None:
                    nxt += 1
                if nxt < len(pending):
                    cand = pending[nxt]
                    if fusable(cand) is op and all(o.index < op.index or o is cand for o in
                                                     pending[:nxt]):
                        op.fused, cand.via = cand, op
                        if room is not None and not held_ok(out, room):
                            op.fused = cand.via = None    # it could wait on a later receive
                        else:
                            nxt += 1
            if room is not None and not held_ok(out, room):
                # a plain send here could block the receives behind it: keep the blocks apart
                for op in out:
                    if op.fused is not None:
                        op.fused.via = None
                        op.fused = None
                keyed[(rank, chan, -1, q)] = recvs
                keyed[(rank, chan, p, -1)] = sends
                continue
            keyed[(rank, chan, p, q)] = out
