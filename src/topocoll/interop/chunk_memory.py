"""What exporting and linting an MSCCL program hold in memory, asked of the memory guard
(:func:`topocoll.limits.require_memory`) before the work starts.

Both passes follow every chunk: the export's dependency pass keeps, per rank and chunk of its
buffers, where the chunk lives and which operation last wrote and read it, and an operation per
run of chunks moved; the lint's replay keeps the same per rank and chunk while it runs the
program. Their peaks grow with the *chunk cells* ``ranks x chunks per rank + chunks moved``
(the export of a broadcast on ``hypercube:9`` cut into 2,520 chunks per shard: 2.6 million
cells, 670 MB; the lint of its program, whose GPUs declare input and output chunks apart:
5.2 million cells, 690 MB). :data:`CELL_BYTES` holds the bytes a cell costs each pass,
measured on BFB broadcasts of 128 to 512 ranks with the resident high-water mark (export
about 250, lint about 120) and rounded up.

>>> f"{chunk_cells(4, 12, [3, 3]):,}"
'54'
"""

from ..limits import require_memory

__all__ = ["CELL_BYTES", "chunk_cells", "require_chunk_memory", "program_cells"]

#: bytes per chunk cell of each pass (measured, rounded up)
CELL_BYTES = {"export": 320, "lint": 160}


def chunk_cells(ranks, chunks_per_rank, moved):
    """``ranks x chunks_per_rank`` cells of state plus the chunks ``moved`` (an iterable of
    counts, one per transfer or step)."""
    return int(ranks) * int(chunks_per_rank) + int(sum(int(c) for c in moved))


def program_cells(program):
    """The chunk cells of a parsed MSCCL program: its GPUs' declared chunks (input, output,
    scratch) and every step's ``cnt`` (a malformed count counts as one: lint reports it)."""
    cells = 0
    for gpu in program.gpus:
        for key in ("i_chunks", "o_chunks", "s_chunks"):
            cells += _count(gpu.attrs.get(key))
        for block in gpu.blocks:
            cells += sum(_count(step.get("cnt")) for step in block.steps)
    return cells


def _count(text):
    try:
        return max(1, int(text))
    except (TypeError, ValueError):
        return 1


def require_chunk_memory(cells, job, what):
    """Ask the guard for ``cells`` chunk cells of ``job`` (``"export"`` or ``"lint"``);
    ``what`` is a phrase naming it."""
    require_memory(int(cells) * CELL_BYTES[job], f"{what} ({int(cells):,} chunk cells: ranks x "
                   "chunks per rank, plus the chunks moved)")
