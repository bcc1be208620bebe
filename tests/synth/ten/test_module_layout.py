"""The TEN ILP and the MSCCL export are split by job; what their parts share is public, and the
entry modules keep their public names."""

import ast
import inspect
from pathlib import Path

import pytest

import topocoll.interop.export as export
import topocoll.synth.bfb as bfb
import topocoll.synth.ten.greedy as greedy
import topocoll.synth.ten.ilp as ilp
from topocoll.synth.ten import search, synthesis

SRC = Path(__file__).resolve().parents[3] / "src" / "topocoll"

PARTS = ["synth/ten/ilp.py", "synth/ten/ilp_inputs.py", "synth/ten/ilp_bounds.py",
         "synth/ten/listsched.py", "synth/ten/ilp_model.py", "synth/ten/ilp_search.py",
         "synth/ten/repair.py", "synth/ten/tenants.py", "synth/ten/problem.py",
         "synth/ten/bounds.py", "synth/ten/search.py", "synth/ten/synthesis.py",
         "synth/ten/greedy.py", "synth/ten/greedy_flood.py", "synth/ten/greedy_routed.py",
         "synth/ten/greedy_sends.py", "synth/ten/bitsets.py", "synth/ten/cayley.py",
         "synth/bfb.py", "synth/bfb_candidates.py", "synth/bfb_lp.py", "synth/bfb_rounding.py",
         "synth/expansions.py", "synth/packing/forest.py", "interop/export.py",
         "interop/export_deps.py", "interop/export_fusion.py", "interop/export_blocks.py",
         "interop/export_writer.py", "interop/export_limits.py"]


@pytest.mark.parametrize("part", PARTS)
def test_parts_import_no_private_names_of_each_other(part):
    tree = ast.parse((SRC / part).read_text())
    private = [f"{node.module}.{alias.name}" for node in ast.walk(tree)
               if isinstance(node, ast.ImportFrom) and node.level
               for alias in node.names if alias.name.startswith("_")]
    assert private == []


def test_entry_modules_keep_their_public_names():
    assert set(ilp.__all__) == {"ilp_events", "IlpResult", "EVENT_DTYPE", "STATUS_MESSAGES",
                                "lower_bound", "shortest_path_events"}
    for name in ("export_msccl", "ExportResult", "exact_chunks", "quantize", "astra_command",
                 "ASTRA_COLLECTIVES", "HINT", "SEND_HINT", "PROTOCOLS", "LIMITS", "WIDTHS",
                 "CAPACITY"):
        assert name in export.__all__ and hasattr(export, name)


@pytest.mark.parametrize("function", [search.greedy_search, search.greedy_runs])
def test_greedy_search_takes_a_request_not_thirteen_positionals(function):
    params = inspect.signature(function).parameters.values()
    positional = [p for p in params if p.kind is p.POSITIONAL_OR_KEYWORD]
    assert len(positional) <= 3


def test_synthesis_front_door_holds_one_job():
    # the TEN model, its bounds and the greedy/ILP search live in their own modules
    assert synthesis.__all__ == ["synthesize", "FORMS"]
    for part in ("synthesis", "problem", "bounds", "search"):
        assert len((SRC / "synth" / "ten" / f"{part}.py").read_text().splitlines()) <= 700, part


def test_bfb_and_the_greedy_are_split_by_job_and_keep_their_public_names():
    # BFB's candidates, LPs and roundings, and the greedy's flooding and routed chunks, bitsets
    # and sends live in their own modules; the entry modules keep every public name
    assert set(bfb.__all__) == {"bfb_allgather", "bfb_reduce_scatter", "bfb_allreduce",
                                "bfb_broadcast", "bfb_reduce", "bfb_schedule", "BFB_COLLECTIVES"}
    assert set(greedy.__all__) == {"greedy_events", "GreedyResult", "EVENT_DTYPE",
                                   "check_ten_problem", "RULES"}
    assert all(hasattr(bfb, name) for name in bfb.__all__)
    assert all(hasattr(greedy, name) for name in greedy.__all__)
    for part in ("bfb", "bfb_candidates", "bfb_lp", "bfb_rounding", "ten/greedy",
                 "ten/greedy_flood", "ten/greedy_routed", "ten/greedy_sends", "ten/bitsets"):
        assert len((SRC / "synth" / f"{part}.py").read_text().splitlines()) <= 700, part
