"""The runtime on an emulated network, as ``testbeds.py`` and ``testbed_extra.py`` price it.

Two things set a collective's time when topocoll's runtime runs it on this host's emulated
networks: the links (the calibrated link model, ``topocoll.emulate.prediction``) and the
host's cores, which every rank's Python and gloo work shares. The host part is a model of its
own, calibrated apart from every measured case:

``host seconds = per_call + per_message x messages + per_byte x bytes``

where ``messages`` counts the sends and receives of every rank's runtime program together
(:func:`program_messages`; the ranks share the cores, so their work adds up) and ``bytes`` the
bytes they send and receive (:func:`program_bytes`: the copies, reductions and socket work that
grow with the data). ``per_call`` and ``per_message`` are fitted by least squares from tiny
collectives (64 bytes a rank, where the links carry almost nothing) on the emulated
:data:`CALIBRATION_NETWORKS`, rings that are none of the measured networks
(:func:`runtime_calibration`); ``per_byte`` from large collectives on the same rings with links
:data:`FAST_RATE` fast, so that the cores, not the links, set their time
(:func:`byte_calibration`). The runtime model of a case is the larger of the link model and the
host model (a roofline: the runtime is bound by the links or by the cores).

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
#: Links of the byte calibration: fast enough that the cores set the time (a 4 MiB allreduce
#: on ``ring:16`` puts about 4 MiB on a link: 17 ms at this rate, seconds of host work).
FAST_RATE = "2Gbps"
#: The byte calibration's allreduces (algorithm, bytes).
BYTE_CASES = [("bfb", 4 << 20), ("ring", 4 << 20), ("bfb", 16 << 20)]


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


def _programs(schedule, nbytes, slice_numel):
    """Every rank's runtime program for ``nbytes`` bytes of float32."""
    from topocoll.runtime.program import compile_program

    numel = max(1, int(nbytes) // 4)
    return [compile_program(schedule, r, numel, slice_numel=slice_numel)
            for r in range(schedule.topology.num_nodes)]


def program_messages(schedule, nbytes):
    """Messages (sends and receives) of ``schedule``'s runtime programs over all ranks for a
    buffer of ``nbytes`` bytes of float32, each message counted once however many packets
    carry it."""
    from topocoll.runtime.program import WHOLE_MESSAGES, slice_elements

    programs = _programs(schedule, nbytes, slice_elements(WHOLE_MESSAGES, 4))
    return sum(len(p.sends) + len(p.recvs) for p in programs)


def program_bytes(schedule, nbytes, packet_bytes):
    """Bytes sent and received by ``schedule``'s runtime programs over all ranks for a buffer
    of ``nbytes`` bytes of float32 in packets of ``packet_bytes``."""
    programs = _programs(schedule, nbytes, max(1, int(packet_bytes) // 4))
    return 4 * sum(sum(op.numel for op in p.sends) + sum(op.numel for op in p.recvs)
                   for p in programs)


def byte_calibration(args, per_call, per_message):
    """``(per_byte, rows)``: the host's seconds per byte sent or received, from the allreduces
    :data:`BYTE_CASES` on the emulated :data:`CALIBRATION_NETWORKS` at :data:`FAST_RATE`, less
    what ``per_call`` and ``per_message`` already charge (least squares through the origin);
    ``rows`` are ``(label, bytes, seconds)``. Needs root and torch."""
    from emulate import _slowest_median, _worker    # benchmarks/ on the path: testbeds.py
    from topocoll.emulate import EmulatedNetwork
    from topocoll.runtime import run_local
    from topocoll.synth import generate

    rows, rest = [], []
    for spec in CALIBRATION_NETWORKS:
        n = topology(spec).num_nodes
        # the links must not bind here: their load on the cores is part of what is measured
        with EmulatedNetwork(spec, link_bandwidth=FAST_RATE, check_capacity=False) as net:
            for algorithm, nbytes in BYTE_CASES:
                schedule = generate(spec, "allreduce", algorithm)
                label = f"{spec} {algorithm} allreduce {nbytes >> 20} MiB"
                per_rank = run_local(_worker, n, ([(label, "allreduce", schedule)], nbytes,
                                                  args.repeats, 1, args.packet),
                                     network=net, start_method="fork", timeout=3600)
                seconds = _slowest_median(per_rank, label)
                moved = program_bytes(schedule, nbytes, args.packet)
                rows.append((label, moved, seconds))
                rest.append(seconds - per_call
                            - per_message * program_messages(schedule, nbytes))
    moved = np.array([r[1] for r in rows], dtype=float)
    per_byte = float(moved @ np.array(rest) / (moved @ moved))
    return max(per_byte, 0.0), rows


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
