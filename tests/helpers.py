"""Shared test helpers: random strongly connected digraphs for hypothesis, the fixture files."""

from pathlib import Path

import numpy as np
from hypothesis import strategies as st

from topocoll.topology import Topology

DATA = Path(__file__).resolve().parent / "data"


def schedule_fixtures():
    """The schedule files in ``tests/data``, sorted; each one's ``meta`` says what it is
    (``note``, ``expect``: ``"valid"`` or ``"invalid"``, and for invalid ones the first ``kind``
    of violation). Raises when there are none, so no loop over them passes vacuously."""
    paths = sorted(DATA.glob("*.json"))
    if not paths:
        raise FileNotFoundError(f"no schedule fixtures in {DATA}")
    return paths


@st.composite
def strongly_connected_digraphs(draw, min_nodes=2, max_nodes=9, heterogeneous=True):
    """A random strongly connected digraph: a random Hamiltonian cycle plus random extra arcs,
    some of them parallel, with random per-link bandwidths and latencies."""
    n = draw(st.integers(min_nodes, max_nodes))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    perm = rng.permutation(n)
    src = list(perm)
    dst = list(np.roll(perm, -1))
    extra = draw(st.integers(0, n * (n - 1)))
    for _ in range(extra):
        u, v = rng.choice(n, size=2, replace=False)
        src.append(int(u))
        dst.append(int(v))
    if heterogeneous and draw(st.booleans()):
        bandwidth = rng.choice([1.0, 2.0, 3.0, 0.5], size=len(src))
        latency = rng.choice([1e-6, 5e-6, 1e-5], size=len(src))
    else:
        bandwidth, latency = 1.0, 1e-6
    if n == 2 and len(src) == 2 and src[0] == src[1]:
        src, dst = [0, 1], [1, 0]
    return Topology(n, src, dst, bandwidth, latency, name=f"random:{n}:{seed}")


def pipe_name(data):
    """The /dev/fd name of a pipe that a thread fills with ``data``: a stream with no suffix,
    like bash's ``<(...)``; ``(name, read descriptor, thread)``. Close the descriptor and join
    the thread when done."""
    import os
    import threading

    read_fd, write_fd = os.pipe()

    def send():
        with os.fdopen(write_fd, "wb") as fh:
            fh.write(data)
    thread = threading.Thread(target=send, daemon=True)
    thread.start()
    return f"/dev/fd/{read_fd}", read_fd, thread


def random_cables(topology, choices, seed):
    """``topology`` with every cable (both directions) at a random one of ``choices`` (bytes
    per second), drawn one per cable in the order of ``(min end, max end)`` as
    ``benchmarks/ten_synthesis.py`` does."""
    n = topology.num_nodes
    key = np.minimum(topology.src, topology.dst) * n + np.maximum(topology.src, topology.dst)
    _, cable = np.unique(key, return_inverse=True)
    speed = np.random.default_rng(seed).choice(np.asarray(choices, dtype=float),
                                               size=cable.max() + 1)
    return topology.with_links(bandwidth=speed[cable.ravel()])


def mix_in_order(w, xs):
    """sum_j W[i, j] x_j in the documented order: self first, then ascending j, each rounded."""
    out = []
    for i in range(len(xs)):
        terms = ([(w[i, i], xs[i])] if w[i, i] != 0 else []) + \
            [(w[i, j], xs[j]) for j in range(len(xs)) if j != i and w[i, j] != 0]
        acc = terms[0][0] * terms[0][1]
        for wj, xj in terms[1:]:
            acc = acc + wj * xj
        out.append(acc)
    return np.stack(out)


def seed_table_rows(text):
    """The rows ``[item, paper, ours, ratio, note]`` of the tables a benchmarks/seeds/ script
    prints (``| item | paper | ours | ours/paper | note |``; header and rule left out)."""
    out = []
    for line in text.splitlines():
        if not line.startswith("| ") or line.startswith(("| item ", "|---")):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        if len(cells) == 5:
            out.append(cells)
    return out


def number_or_none(cell):
    """A table cell as a float, or None where it holds no number."""
    try:
        return float(cell)
    except ValueError:
        return None


def run_seed_script(script, *args, timeout=300):
    """Run a benchmarks/seeds/ script (a path) with ``args`` from the repository root; the
    finished process, output captured as text."""
    import subprocess
    import sys
    from pathlib import Path

    return subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True,
                          timeout=timeout, cwd=Path(__file__).resolve().parents[1])


def checked_ratios(rows, missing):
    """Check that every row's ratio cell is its ours / paper (to the printed rounding) or the
    script's placeholder ``missing`` (``"n/a"`` only where paper or ours is n/a; ``"-"`` where
    the script prints no ratio). How many ratios were checked."""
    checked = 0
    for item, paper, ours, ratio, _note in rows:
        if ratio == missing:
            assert missing != "n/a" or paper == "n/a" or ours == "n/a", item
            continue
        r = number_or_none(ratio)
        assert r is not None and r > 0, (item, ratio)
        assert abs(r - number_or_none(ours) / number_or_none(paper)) <= 1e-3 * max(1.0, r) + 5e-4, item
        checked += 1
    return checked

