"""The writing pass of the MSCCL export (:mod:`.export`): thread blocks become the element tree
of an MSCCL XML program (:mod:`.mscclxml`), with step numbers, dependencies, the schedule's
step hints, and a check that every value fits the integer the runtime stores it in.

>>> HINT, SEND_HINT
('tcstep', 'tcsend')
"""

from ..errors import UnsupportedError
from .export_limits import WIDTHS
from .layout import RUNTIME_NAMES
from .mscclxml import Gpu, Program, Step, ThreadBlock

__all__ = ["HINT", "SEND_HINT", "write_program", "check_widths"]

#: the attribute carrying a send's or receive's step of the schedule (see ``step_hints``), and
#: on a fused step (rcs, rrcs) the step of the send it performs
HINT = "tcstep"
SEND_HINT = "tcsend"


def write_program(builder, blocks, name, proto, hints):
    """The :class:`~.mscclxml.Program` of the blocks of :func:`~.export_blocks.assign_blocks`
    (``hints``: add :data:`HINT` and :data:`SEND_HINT`), and the channels it uses."""
    lay = builder.lay
    s_chunks = [len(x) for x in builder.scratch]
    gpus = []
    max_chan = 0
    # step numbers first (nops count), then dependencies can name them
    for rank_blocks in blocks:
        for send, recv, chan, out in rank_blocks:
            for s, (op, _) in enumerate(out):
                if op != "nop":
                    op.s = s
    for rank, rank_blocks in enumerate(blocks):
        tbs = []
        for bid, (send, recv, chan, out) in enumerate(rank_blocks):
            max_chan = max(max_chan, chan)
            steps = []
            for s, (op, dep) in enumerate(out):
                depid, deps = (-1, -1) if dep is None else (dep.block, dep.s)
                if op == "nop":
                    attrs = {"s": s, "type": "nop", "srcbuf": "i", "srcoff": -1, "dstbuf": "o",
                             "dstoff": -1, "cnt": 0}
                else:
                    kind = op.kind if op.fused is None else {"r": "rcs", "rrc": "rrcs"}[op.kind]
                    attrs = {"s": s, "type": kind, "srcbuf": op.srcbuf, "srcoff": op.srcoff,
                             "dstbuf": op.dstbuf, "dstoff": op.dstoff, "cnt": op.cnt}
                attrs.update({"depid": depid, "deps": deps,
                              "hasdep": int(op != "nop" and op.hasdep)})
                if hints and op != "nop" and op.kind in ("s", "r", "rrc"):
                    attrs[HINT] = op.step
                    if op.fused is not None:
                        attrs[SEND_HINT] = op.fused.step
                steps.append(Step({k: str(v) for k, v in attrs.items()}))
            tbs.append(ThreadBlock({"id": str(bid), "send": str(send), "recv": str(recv),
                                    "chan": str(chan)}, steps))
        gpus.append(Gpu({"id": str(rank), "i_chunks": str(lay.input_chunks),
                         "o_chunks": str(lay.output_chunks), "s_chunks": str(s_chunks[rank])},
                        tbs))
    coll = builder.s.collective.name
    attrs = {"name": name, "proto": proto, "nchannels": str(max_chan + 1),
             "nchunksperloop": str(max(lay.input_chunks, lay.output_chunks)),
             "ngpus": str(builder.n), "coll": RUNTIME_NAMES[coll],
             "inplace": "1" if lay.inplace else "0", "outofplace": "1"}
    if builder.astra:
        # ASTRA-sim's converter spells the collective as ours do (reduce_scatter), and the form
        # is in-place where the collective has an in-place call (docs/interop.md, "ASTRA-sim")
        attrs["coll"] = coll
        attrs["outofplace"] = "0" if lay.inplace else "1"
    return Program(attrs, gpus), max_chan + 1


def check_widths(program):
    """Never write a value the runtime would store wrapped (``WIDTHS``)."""
    for g in program.gpus:
        for tb in g.blocks:
            for el in [tb] + tb.steps:
                for k, v in el.attrs.items():
                    if k in WIDTHS and not WIDTHS[k][0] <= int(v) <= WIDTHS[k][1]:
                        lo, hi, where = WIDTHS[k]
                        raise UnsupportedError(
                            f"rank {g.attrs['id']} block {tb.attrs['id']}: {k}={v} does not fit "
                            f"the runtime's {where} ({lo}..{hi}); use fewer --channels or "
                            "--chunks")
