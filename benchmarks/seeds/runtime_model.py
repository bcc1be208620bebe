"""The runtime on an emulated network, as ``testbeds.py`` and ``testbed_extra.py`` price it.

Two things set a collective's time when topocoll's runtime runs it on this host's emulated
networks: the links (the calibrated link model, ``topocoll.emulate.prediction``) and the
host's cores, which every rank's Python and gloo work shares. The host part is a model of its
own, calibrated apart from every measured case:

``host seconds = per_call + per_message x messages``

where ``messages`` counts the sends and receives of every rank's runtime program together
(:func:`program_messages`; the ranks share the cores, so their work adds up), fitted by least
squares from tiny collectives (64 bytes a rank, where the links carry almost nothing) on the
emulated :data:`CALIBRATION_NETWORKS`, rings that are none of the measured networks
(:func:`runtime_calibration`). The calibration has one packet per message, so the model counts
messages: the further packets of a long message stream while the links are busy and are not in
it. The runtime model of a case is the larger of the two (a roofline: the runtime is bound by
the links or by the cores).

The runtime's packets are sized to the links (:func:`packet_bytes`).
"""

import math

import numpy as np

from topocoll.topology import topology
from topocoll.units import parse_bandwidth

__all__ = ["PACKET_SECONDS", "CALIBRATION_NETWORKS", "CALIBRATION_CASES", "packet_bytes",
           "program_messages", "runtime_calibration"]

#: Seconds of wire time of one runtime packet on the emulated links (see :func:`packet_bytes`).
PACKET_SECONDS = 0.005
#: The runtime calibration's networks and their tiny collectives (none of them a measured
#: case): a small and a large ring, so that the message counts span the measured ones'.
CALIBRATION_NETWORKS = ["ring:6", "ring:16"]
CALIBRATION_CASES = [("bfb", "allgather"), ("bfb", "reduce_scatter"), ("bfb", "allreduce"),
                     ("ring", "allgather"), ("ring", "allreduce")]


def packet_bytes(rate):
    """The runtime's packet (``slice_bytes``) on links of ``rate``: the power of two nearest
    :data:`PACKET_SECONDS` of the link (16 KiB at 25 Mbit/s), at least 1 KiB.

    gloo sends a message once the receiver's notice that its receive is posted has come back,
    and that notice travels the reverse direction behind whatever data its TCP stream holds.
    The runtime's own default on two cores is whole messages, hundreds of KB here, 100 ms and
    more of wire time at 25 Mbit/s ahead of every notice (the testbed's 25 Gbps makes the same
    bytes 0.1 ms); packets of a few ms bound that wait. Measured on K5 at 4 MiB: whole messages
    1.43x the link model, 64 KiB 1.13x, 32 KiB 1.06x, 16 KiB 1.03x."""
    wire = parse_bandwidth(rate) * PACKET_SECONDS
    return int(2 ** round(math.log2(max(wire, 1024.0))))


def program_messages(schedule, nbytes):
    """Messages (sends and receives) of ``schedule``'s runtime programs over all ranks for a
    buffer of ``nbytes`` bytes of float32, each message counted once however many packets
    carry it."""
    from topocoll.runtime.program import WHOLE_MESSAGES, compile_program, slice_elements

    numel = max(1, int(nbytes) // 4)
    whole = slice_elements(WHOLE_MESSAGES, 4)
    programs = (compile_program(schedule, r, numel, slice_numel=whole)
                for r in range(schedule.topology.num_nodes))
    return sum(len(p.sends) + len(p.recvs) for p in programs)


def runtime_calibration(args):
    """``(per_call, per_message, rows)`` of the host model (see the module text), measured with
    ``args.rate``, ``args.repeats`` (at least 15 calls) and ``args.packet``; ``rows`` are
    ``(label, messages, seconds)`` of each calibration case. Needs root and torch."""
    from emulate import _slowest_median, _worker    # benchmarks/ on the path: testbeds.py
    from topocoll.emulate import EmulatedNetwork
    from topocoll.runtime import run_local
    from topocoll.synth import generate

    rows = []
    for spec in CALIBRATION_NETWORKS:
        n = topology(spec).num_nodes
        nbytes = 64 * n
        cases = [(f"{spec} {algorithm} {collective}", collective,
                  generate(spec, collective, algorithm))
                 for algorithm, collective in CALIBRATION_CASES]
        with EmulatedNetwork(spec, link_bandwidth=args.rate) as net:
            per_rank = run_local(_worker, n, (cases, nbytes, max(15, args.repeats), 1,
                                              args.packet),
                                 network=net, start_method="fork", timeout=3600)
        for label, collective, schedule in cases:
            numel = nbytes // 4 // (n if collective == "allgather" else 1)
            rows.append((label, program_messages(schedule, numel * 4),
                         _slowest_median(per_rank, label)))
    messages = np.array([r[1] for r in rows], dtype=float)
    seconds = np.array([r[2] for r in rows])
    design = np.column_stack([np.ones_like(messages), messages])
    (per_call, per_message), *_ = np.linalg.lstsq(design, seconds, rcond=None)
    return max(per_call, 0.0), max(per_message, 0.0), rows
