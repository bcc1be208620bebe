"""Chunk bitsets of the greedy matcher (:mod:`.greedy`): rows of little-endian ``uint64``
words, bit ``i`` of a row in word ``i // 64``; a seeded pick of one set bit per row, and
scattered sets and clears that keep every bit where a cell repeats.

>>> import numpy as np
>>> rows = pack_columns(np.array([[True, False], [False, False], [True, True]]), 1)
>>> rows.ravel().tolist()
[5, 4]
>>> first_bits(rows, 0, np.zeros(2, dtype=np.uint64), 3).tolist()
[0, 2]
"""

import numpy as np

__all__ = ["pick_bits", "pick_draws", "first_bits", "set_at", "clear_at", "pack_columns", "ONE"]

#: One as a ``uint64`` (shifts and masks stay unsigned).
ONE = np.uint64(1)


def pick_bits(rows, rng, num_bits):
    """Per row of ``uint64`` words: one set bit, found from a random place; -1 if none.

    The search starts at a random word and takes the first non-zero word cyclically; inside it,
    the first set bit after a random rotation. Chunk ids were shuffled once per seed, so this is
    a cheap, seeded stand-in for a uniform random choice.
    """
    start, rot = pick_draws(rng, *rows.shape)
    return first_bits(rows, start, rot, num_bits)


def pick_draws(rng, count, width):
    """The random draws of :func:`pick_bits` for ``count`` rows of ``width`` words: one
    starting word per call (a per-row start costs a 2-D gather; rows still differ by their
    own bit rotation), one rotation per row."""
    start = int(rng.integers(0, width)) if width > 1 else 0
    return start, rng.integers(0, 64, size=count).astype(np.uint64)


def first_bits(rows, start, rot, num_bits):
    """:func:`pick_bits` with its draws given (a block of rows at a time)."""
    ar = np.arange(rows.shape[0])
    nz = rows != 0
    wi = nz[:, start:].argmax(axis=1) + start    # first non-zero word from start on, cyclically
    found = nz[ar, wi]
    if start:
        head = nz[:, :start].argmax(axis=1)
        wi = np.where(found, wi, head)
        found = nz[ar, wi]
    word = rows[ar, wi]
    spun = (word >> rot) | (word << ((np.uint64(64) - rot) & np.uint64(63)))
    spun = np.where(rot == 0, word, spun)
    low = spun & (~spun + ONE)
    bit = np.log2(np.where(found, low, ONE).astype(np.float64)).astype(np.int64)
    bit = (bit + rot.astype(np.int64)) & 63
    out = wi * 64 + bit
    return np.where(found & (out < num_bits), out, -1)


def set_at(words, cell, mask):
    """``words[cell] |= mask`` with every bit kept where a cell repeats (``np.bitwise_or.at``,
    but about twice as fast on large arrays: a plain write, then the bits it lost again)."""
    while cell.size:
        words[cell] |= mask
        lost = (words[cell] & mask) != mask
        if not lost.any():
            return
        cell, mask = cell[lost], mask[lost]


def clear_at(words, cell, mask):
    """``words[cell] &= ~mask`` with every bit cleared where a cell repeats (as
    :func:`set_at`)."""
    while cell.size:
        words[cell] &= ~mask
        lost = (words[cell] & mask) != 0
        if not lost.any():
            return
        cell, mask = cell[lost], mask[lost]


def pack_columns(mask, width):
    """The columns of a boolean ``(bits, rows)`` matrix as rows of ``width`` little-endian
    ``uint64`` words (bit ``i`` of row ``r``: word ``i // 64``, bit ``i % 64``)."""
    packed = np.packbits(mask, axis=0, bitorder="little")
    out = np.zeros((mask.shape[1], width * 8), dtype=np.uint8)
    out[:, :packed.shape[0]] = packed.T
    return out.view("<u8").astype(np.uint64, copy=False)
