"""The sends of a greedy run (:mod:`.greedy`), held compactly until the end, and the one TEN
send record (:data:`EVENT_DTYPE`) they are handed over in, which the ILP shares."""

import numpy as np

__all__ = ["Sends", "EVENT_DTYPE"]

#: One matched TEN link-chunk pair: ``chunk`` sent on ``link`` starting at slot ``start``.
EVENT_DTYPE = np.dtype([("chunk", "<i8"), ("link", "<i8"), ("start", "<i8")])


class Sends:
    """The sends of a greedy run in the order made, held compactly until the end: chunk and
    link ids in the smallest unsigned type that holds them (16 bits up to 65,536 chunks and
    links), one start slot per batch that shares it (4 bytes a send on a 128x128 mesh where
    :data:`EVENT_DTYPE` takes 24)."""

    def __init__(self, num_chunks, num_links):
        self.chunk_type = np.min_scalar_type(max(0, num_chunks - 1))
        self.link_type = np.min_scalar_type(max(0, num_links - 1))
        self.parts = []
        self.size = 0
        self.makespan = 0
        self.ordered = True             # every batch starts no earlier than the one before
        self._last_start = 0

    def add(self, chunk, link, start, arrive):
        if not chunk.size:
            return
        first = int(start[0])
        shared = bool((start == first).all())
        low = first if shared else int(start.min())
        if low < self._last_start:
            self.ordered = False
        self._last_start = max(self._last_start, first if shared else int(start.max()))
        self.parts.append((chunk.astype(self.chunk_type), link.astype(self.link_type),
                           first if shared else start.astype(np.int64)))
        self.size += int(chunk.size)
        self.makespan = max(self.makespan, int(arrive.max()))

    def events(self):
        """The sends as :data:`EVENT_DTYPE` (the batches are let go)."""
        events = np.empty(self.size, dtype=EVENT_DTYPE)
        at = 0
        for block in self.blocks(max(1, self.size)):
            events[at:at + block.size] = block
            at += block.size
        return events

    def blocks(self, rows):
        """The sends as :data:`EVENT_DTYPE` blocks of at most ``rows``, in the order made (each
        batch let go once copied)."""
        parts, self.parts = self.parts, []
        parts.reverse()                           # popped from the end: first made, first out
        block = np.empty(min(rows, self.size), dtype=EVENT_DTYPE)
        at = 0
        while parts:
            chunk, link, start = parts.pop()
            lo = 0
            while lo < chunk.size:
                take = min(chunk.size - lo, block.size - at)
                part = block[at:at + take]
                part["chunk"], part["link"] = chunk[lo:lo + take], link[lo:lo + take]
                part["start"] = start if isinstance(start, int) else start[lo:lo + take]
                at += take
                lo += take
                if at == block.size:
                    yield block
                    block = np.empty(block.size, dtype=EVENT_DTYPE)
                    at = 0
        if at:
            yield block[:at]
