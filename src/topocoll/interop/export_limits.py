"""The MSCCL runtime's limits that an exported program must honour (msccl-executor-nccl;
docs/interop.md): the protocols, the bounded connection buffers, the size limits and the
integer width of every attribute. :mod:`.export` and :mod:`.lint` check against the same
tables.

>>> CAPACITY["Simple"], LIMITS["steps"], WIDTHS["depid"][:2]
(2, 64, (-128, 127))
"""

from ..errors import UnsupportedError

__all__ = ["PROTOCOLS", "CAPACITY", "LIMITS", "WIDTHS", "next_block_cap"]

#: The NCCL protocols a program may name.
PROTOCOLS = ("Simple", "LL", "LL128")

#: units a connection (sender, receiver, channel) holds before the sender blocks, where a send
#: step of ``cnt`` chunks takes ``cnt`` units (docs/interop.md, "Bounded buffers"): NCCL_STEPS =
#: 8 slots, a Simple call takes MSCCL_CHUNKSTEPS = 4 of them, an LL or LL128 call one.
CAPACITY = {"Simple": 2, "LL": 8, "LL128": 8}

#: the runtime's limits (msccl-executor-nccl): steps per block, channels, blocks per channel and
#: direction, largest cnt + 1, largest buffer offset + 1, children of one element, elements a
#: rank's parse may hold
LIMITS = {"steps": 64, "channels": 32, "blocks_per_channel": 32, "count": 72,
          "offset": 2**15, "subs": 1024, "nodes": 4096}

#: the integer width the runtime stores each attribute in (msccl-executor-nccl's
#: ``src/include/msccl/msccl_struct.h``): attribute -> (smallest, largest, where it is stored).
#: The parser (``src/misc/msccl/msccl_parser.cc``) checks a few of them (docs/interop.md lists
#: which) and stores the rest as read, so a larger value wraps (``depid="191"`` waits for block
#: -65).
WIDTHS = {
    "depid": (-2**7, 2**7 - 1, "int8_t mscclThreadBlock::dependentBid[]"),
    "deps": (-2**15, 2**15 - 1, "int16_t mscclThreadBlock::dependentStep[]"),
    "srcoff": (-2**15, 2**15 - 1, "int16_t mscclTransmission::srcOffset"),
    "dstoff": (-2**15, 2**15 - 1, "int16_t mscclTransmission::dstOffset"),
    "cnt": (0, 2**8 - 1, "uint8_t mscclTransmission::count"),
    "hasdep": (-2**7, 2**7 - 1, "int8_t mscclTransmission::hasDependence"),
    "send": (-2**15, 2**15 - 1, "int16_t mscclThreadBlock::sendPeer"),
    "recv": (-2**15, 2**15 - 1, "int16_t mscclThreadBlock::recvPeer"),
    "chan": (-2**15, 2**15 - 1, "int16_t mscclThreadBlock::channelId"),
}


def next_block_cap(longest, used, channels, cap):
    """One round of the block pass's search for a cap on transfers per link and thread block:
    ``None`` when blocks of at most ``longest`` steps on ``used`` channels fit the runtime, else
    the next, smaller cap to try; :class:`~topocoll.errors.UnsupportedError` when no cap can
    fit (the channels run out first)."""
    if longest <= LIMITS["steps"] and used <= LIMITS["channels"]:
        return None
    if used > LIMITS["channels"] or cap <= 1:
        raise UnsupportedError(
            f"the schedule does not fit the runtime: a link carries more transfers than "
            f"{LIMITS['channels']} channels x {LIMITS['steps']} steps per thread block hold "
            f"(with {channels} channel copies, {used} channels would be needed); use fewer "
            "--channels, fewer --chunks, or a schedule with fewer transfers per link")
    return max(1, cap * 3 // 4)
