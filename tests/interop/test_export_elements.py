"""The export's element-count pre-check (topocoll.interop.export_precheck.precheck_elements): a
lower bound on a rank's elements, refusing before the translation only where the translation
refuses too (the runtime's parser holds ``LIMITS["nodes"] - 1`` elements per rank).

Small schedules are far below the runtime's limit, so the tests take the real programs' element
counts and put the limit just above or at them (and shrink the steps per thread block, so that
links continue on several channels).
"""

import random
import re

import numpy as np
import pytest

import topocoll.interop.export as export_module
from topocoll.errors import UnsupportedError
from topocoll.interop import export_msccl
from topocoll.interop.export import LIMITS, exact_chunks, quantize
from topocoll.interop.export_precheck import element_bound, element_bounds, precheck_elements
from topocoll.schedule.io import save_schedule
from topocoll.schedule.transforms import merge_pieces
from topocoll.synth import generate
from topocoll.topology import topology

CASES = [("ring:6", "ring"), ("ring:5", "bfb"), ("torus:3x3", "bfb"), ("torus:3x3", "ten"),
         ("torus:3x3", "trees"), ("torus:2x4", "torusrings"), ("hypercube:3", "rhd"),
         ("hypercube:3", "bfb"), ("complete:5", "bfb"), ("circulant:8:1,2", "bfb"),
         ("mesh:3x3", "ten"), ("dbt:7", "dbt"), ("ring:6", "biring")]


def _real(program):
    """Per rank: elements (1 <algo>, every <gpu>, its <tb> and <step>), thread blocks, sends and
    receives (a fused step is two) and fused steps."""
    n = len(program.gpus)
    rows = []
    for g in program.gpus:
        kinds = [st.attrs["type"] for tb in g.blocks for st in tb.steps]
        fused = sum(k in ("rcs", "rrcs") for k in kinds)
        plain = sum(k in ("s", "r", "rrc") for k in kinds)
        rows.append((1 + n + len(g.blocks) + len(kinds), len(g.blocks), plain + 2 * fused, fused))
    return np.array(rows, dtype=np.int64).T


def _lowered(s, chunks):
    """The schedule and chunks per shard the export lowers (as export_msccl does)."""
    exact = exact_chunks(s)
    k = chunks or exact
    if chunks is not None and (exact is None or k % exact):
        s = quantize(s, k)[0]
    return merge_pieces(s), k


def _cases(count, seed):
    rng = random.Random(seed)
    for _ in range(count):
        spec, alg = rng.choice(CASES)
        yield (spec, alg, rng.choice([None, 2, 3]), rng.randint(1, 3), rng.choice([False, True]),
               rng.choice(["Simple", "LL"]), rng.choice([4, 8, 64]))


def test_bound_never_exceeds_the_translation(monkeypatch):
    """For 40 random small allreduce exports: per rank the pre-check's sends and receives are
    the program's, its blocks and element count are at most the program's and its fused pairs
    at least; with the parser's limit just above the largest rank it never refuses, and at or
    below that rank's count every refusal is one the translation makes too."""
    checked = 0
    for spec, alg, chunks, channels, unfused, proto, steps in _cases(40, seed=7):
        monkeypatch.setitem(LIMITS, "steps", steps)
        s = generate(topology(spec), "allreduce", alg)
        try:
            res = export_msccl(s, chunks=chunks, channels=channels, unfused=unfused, proto=proto,
                               check=False)
        except UnsupportedError:
            continue                       # refused for another rule: nothing to compare
        elements, blocks, ops, fused = _real(res.program)
        ms, k = _lowered(s, chunks)
        least, least_blocks, my_ops, my_fused = element_bounds(ms, k, channels, not unfused)
        where = (spec, alg, chunks, channels, unfused, proto, steps)
        assert np.array_equal(my_ops, ops), where
        assert np.all(least_blocks <= blocks) and np.all(my_fused >= fused), where
        assert np.all(least <= elements), where
        top = int(elements.max())
        monkeypatch.setitem(LIMITS, "nodes", top + 1)
        assert precheck_elements(ms, k, channels, fuse=not unfused) is None, where
        assert export_msccl(s, chunks=chunks, channels=channels, unfused=unfused,
                            proto=proto).success, where
        for limit in (top, int(least.max()), 1 + len(elements) + 1):
            monkeypatch.setitem(LIMITS, "nodes", limit)
            bound = element_bound(ms, k, channels, not unfused)
            assert bound.least <= elements[bound.rank], where
            if bound.least >= limit:       # it refuses: so does the translation (limit <= top)
                assert limit <= top, where
                with pytest.raises(UnsupportedError, match="parser holds"):
                    precheck_elements(ms, k, channels, fuse=not unfused)
        monkeypatch.setitem(LIMITS, "nodes", 4096)
        checked += 1
    assert checked >= 25


def _no_translation(*args, **kwargs):
    raise AssertionError("translated although the pre-check should have refused")


def test_refuses_before_translating_with_the_translations_rule(monkeypatch):
    """With the parser's limit at the pre-check's bound, the export refuses before translating,
    naming the rank and saying "at least"; the full translation refuses with the same rule, and
    the rank's real count is at least the bound."""
    s = generate(topology("torus:3x3"), "allreduce", "bfb")
    elements = _real(export_msccl(s).program)[0]
    ms, k = _lowered(s, None)
    limit = int(element_bounds(ms, k, 1)[0].max())
    assert limit <= elements.max()
    monkeypatch.setitem(LIMITS, "nodes", limit)
    real_translate = export_module.translate_schedule
    monkeypatch.setattr(export_module, "translate_schedule", _no_translation)
    with pytest.raises(UnsupportedError) as early:
        export_msccl(s)
    message = str(early.value)
    assert "\n" not in message
    found = re.match(r"rank (\d+)'s part of the program has at least (\d+) elements", message)
    rank, least = int(found[1]), int(found[2])
    assert least >= limit and elements[rank] >= least
    assert f"the runtime's parser holds {limit - 1}" in message
    assert "found before translating" in message
    monkeypatch.setattr(export_module, "translate_schedule", real_translate)
    monkeypatch.setattr(export_module, "precheck_elements", lambda *a, **kw: None)
    with pytest.raises(UnsupportedError, match=f"the runtime's parser holds {limit - 1}"):
        export_msccl(s)


def test_unfused_bound_counts_every_send_and_receive():
    """Unfused, every send and receive is a step: the bound is the blocks and operations, and
    equals the program where no nop and no extra channel is needed (a ring)."""
    s = generate(topology("ring:6"), "allreduce", "ring")
    elements, blocks, ops, fused = _real(export_msccl(s, unfused=True).program)
    least, _, my_ops, my_fused = element_bounds(merge_pieces(s), exact_chunks(s), 1, False)
    assert not my_fused.any() and np.array_equal(my_ops, ops)
    assert np.array_equal(least, elements)


def test_says_nothing_where_the_arrays_do_not_follow_the_export():
    s = generate(topology("torus:3x3"), "allgather", "bfb")
    assert element_bound(merge_pieces(s), exact_chunks(s), 1) is None
    ar = generate(topology("torus:3x3"), "allreduce", "bfb")
    assert precheck_elements(merge_pieces(ar), 1, 1, astra=True) is None


def test_cli_refusal_is_one_line_exit_2_and_writes_nothing(monkeypatch, tmp_path):
    from tests.cli.conftest import run_cli
    from tests.cli.test_cli import assert_one_line_error

    s = generate(topology("torus:3x3"), "allreduce", "bfb")
    save_schedule(s, tmp_path / "s.json")
    monkeypatch.setitem(LIMITS, "nodes", 12)
    monkeypatch.setattr(export_module, "translate_schedule", _no_translation)
    result = run_cli(["export", "s.json", "-o", "s.xml"], tmp_path)
    assert_one_line_error(result, "part of the program has at least", "parser holds 11",
                          code=2)
    assert not (tmp_path / "s.xml").exists()
